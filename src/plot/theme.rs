//! The look every chart shares: the palette, the theme's sizes and colours,
//! text styles, dash patterns, and the sequential colour map of heatmaps.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::full_palette::{GREY_200, GREY_500, GREY_700, GREY_800};
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontDesc, FontFamily, FontStyle, FontTransform};

/// Qualitative palette (Tableau 10, colour-blind friendly); used for series, nodes and groups.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7), // blue
    RGBColor(0xf2, 0x8e, 0x2b), // orange
    RGBColor(0xe1, 0x57, 0x59), // red
    RGBColor(0x76, 0xb7, 0xb2), // teal
    RGBColor(0x59, 0xa1, 0x4f), // green
    RGBColor(0xed, 0xc9, 0x48), // yellow
    RGBColor(0xb0, 0x7a, 0xa1), // purple
    RGBColor(0xff, 0x9d, 0xa7), // pink
    RGBColor(0x9c, 0x75, 0x5f), // brown
    RGBColor(0xba, 0xb0, 0xac), // grey
];

/// The colour of series / node / group number `i` (wraps after 10). Same in every chart.
pub fn palette(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Neutral colours for things that are not a series (text, grid, "no data").
pub(crate) const TEXT: RGBColor = RGBColor(0x20, 0x20, 0x20);

/// Secondary text inside a chart (sample counts, reference-line labels).
pub(crate) const MUTED: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// The footer (provenance) only, so that readers of the SVG can tell it apart.
pub const FOOTER: RGBColor = GREY_700;

pub(crate) const GRID: RGBColor = GREY_200;

pub(crate) const NO_DATA: RGBColor = GREY_500;

pub(crate) const AXIS: RGBColor = GREY_800;

/// Font sizes and spacing, scaled with the image so 1200×800 is the reference.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Theme {
    pub scale: f64,
    pub title: f64,
    pub subtitle: f64,
    pub axis_desc: f64,
    pub label: f64,
    pub legend: f64,
    pub caption: f64,
    pub small: f64,
    pub pad: i32,
    /// Drawing the SVG (true) or the PNG: the colour bar is a gradient in SVG.
    pub vector: bool,
}

impl Theme {
    pub(crate) fn for_size((w, h): (u32, u32)) -> Self {
        let ratio = (f64::from(w) / 1200.0).min(f64::from(h) / 800.0);
        // Shrink text more slowly than the image so small charts stay legible.
        let scale = if ratio < 1.0 { ratio.sqrt() } else { ratio }.clamp(0.6, 3.0);
        Theme {
            scale,
            title: 30.0 * scale,
            subtitle: 19.0 * scale,
            axis_desc: 19.0 * scale,
            label: 17.0 * scale,
            legend: 17.0 * scale,
            caption: 15.0 * scale,
            small: 14.0 * scale,
            pad: (14.0 * scale).round() as i32,
            vector: false,
        }
    }

    /// A length in pixels scaled like the fonts.
    pub(crate) fn px(&self, v: f64) -> i32 {
        (v * self.scale).round() as i32
    }

    /// A length in pixels scaled like the fonts, as `u32` for plotters size arguments.
    pub(crate) fn upx(&self, v: f64) -> u32 {
        self.px(v).max(0) as u32
    }
}

/// A text style in the embedded font.
pub(crate) fn text(size: f64, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle {
        font: FontDesc::new(FontFamily::SansSerif, size, FontStyle::Normal),
        color: color.to_backend_color(),
        pos: Pos::new(h, v),
    }
}

/// Like [`text`], rotated to read bottom-to-top (for vertical axis titles).
pub(crate) fn text_up(size: f64, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    text(size, color, h, v).transform(FontTransform::Rotate270)
}

/// Width and height in pixels of `s` drawn with `style` (0 if the font cannot measure it).
pub(crate) fn text_size<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &str,
    style: &TextStyle,
) -> (u32, u32) {
    area.estimate_text_size(s, style).unwrap_or((0, 0))
}

/// The dash pattern of series `i` as `(dash, gap)` in unscaled pixels: solid for
/// the first, then patterns that stay apart where lines coincide.
pub(crate) fn dash(i: usize) -> Option<(f64, f64)> {
    const DASHES: [Option<(f64, f64)>; 5] = [
        None,
        Some((16.0, 8.0)),
        Some((5.0, 5.0)),
        Some((26.0, 6.0)),
        Some((10.0, 4.0)),
    ];
    DASHES[i % DASHES.len()]
}

/// Viridis, sampled at 9 stops; perceptually uniform and readable in greyscale.
const VIRIDIS: [(u8, u8, u8); 9] = [
    (68, 1, 84),
    (71, 44, 122),
    (59, 81, 139),
    (44, 113, 142),
    (33, 145, 140),
    (39, 173, 129),
    (92, 200, 99),
    (170, 220, 50),
    (253, 231, 37),
];

/// Sequential colour for `t` in `0..=1` (clamped).
pub(crate) fn colormap(t: f64) -> RGBColor {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let pos = t * (VIRIDIS.len() - 1) as f64;
    let i = (pos.floor() as usize).min(VIRIDIS.len() - 2);
    let f = pos - i as f64;
    let lerp = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    RGBColor(lerp(a.0, b.0), lerp(a.1, b.1), lerp(a.2, b.2))
}

/// Black or white, whichever reads better on `bg`.
pub(crate) fn contrast_text(bg: RGBColor) -> RGBColor {
    let lum = 0.2126 * f64::from(bg.0) + 0.7152 * f64::from(bg.1) + 0.0722 * f64::from(bg.2);
    if lum > 140.0 { TEXT } else { WHITE }
}
