//! Shared look and layout: palette, theme sizes, text styles, title/legend/caption frame,
//! markers, and the plot helper that builds a chart's axes, label areas and grid.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::full_palette::{GREY_200, GREY_500, GREY_700, GREY_800};
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontDesc, FontFamily, FontStyle, FontTransform};

use super::axis::{Axis, fmt_tick};
use super::output::DResult;

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

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Swatch {
    /// A line with the marker of the given shape index.
    Line(RGBColor, Option<usize>),
    /// A line in dash pattern `.1` ([`dash`]), with a marker of that shape if `Some`.
    Dashed(RGBColor, usize, Option<usize>),
    /// A solid filled box.
    Solid(RGBColor),
    /// A translucent box with an outline, for shaded spans/bands.
    Shade(RGBColor),
}

#[derive(Debug, Clone)]
pub(crate) struct LegendItem {
    pub label: String,
    pub swatch: Swatch,
}

impl LegendItem {
    pub(crate) fn new(label: impl Into<String>, swatch: Swatch) -> Self {
        LegendItem {
            label: label.into(),
            swatch,
        }
    }
}

/// Splits `s` into lines no wider than `max_w` pixels in `style`: at `sep` first
/// (e.g. `" · "` between the parts of a caption), then at spaces.
pub(crate) fn wrap<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &str,
    style: &TextStyle,
    max_w: i32,
    sep: &str,
) -> Vec<String> {
    let fits = |t: &str| text_size(area, t, style).0 as i32 <= max_w;
    let mut pieces: Vec<String> = vec![];
    for part in s.split(sep) {
        if fits(part) {
            pieces.push(part.to_string());
            continue;
        }
        // A part too wide by itself: its words, joined back greedily below.
        let mut line = String::new();
        for word in part.split(' ') {
            let candidate = if line.is_empty() {
                word.to_string()
            } else {
                format!("{line} {word}")
            };
            if fits(&candidate) || line.is_empty() {
                line = candidate;
            } else {
                pieces.push(std::mem::replace(&mut line, word.to_string()));
            }
        }
        pieces.push(line);
    }
    let mut lines: Vec<String> = vec![];
    for piece in pieces {
        match lines.last_mut() {
            Some(last) if fits(&format!("{last}{sep}{piece}")) => {
                last.push_str(sep);
                last.push_str(&piece);
            }
            _ => lines.push(piece),
        }
    }
    lines
}

/// Draws the common frame — white background, title on top (wrapped when it is
/// wider than the image), optional legend row(s) under it, caption at the bottom
/// (wrapped at its ` · ` separators) — and returns the remaining area for the chart body.
pub(crate) fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    theme: &Theme,
    title: &str,
    caption: &str,
    legend: &[LegendItem],
) -> DResult<DrawingArea<DB, Shift>> {
    root.fill(&WHITE)?;
    let (w, h) = root.dim_in_pixel();
    let pad = theme.pad;
    let max_w = w as i32 - 2 * pad;

    let title_style = text(theme.title, TEXT, HPos::Center, VPos::Top);
    let title_h = text_size(root, "Ag", &title_style).1 as i32;
    let mut top = pad;
    for line in wrap(root, title, &title_style, max_w, " \u{2014} ") {
        root.draw_text(&line, &title_style, (w as i32 / 2, top))?;
        top += title_h + pad / 2;
    }
    top += pad / 2;

    if !legend.is_empty() {
        top += draw_legend(root, theme, legend, top)? + pad / 2;
    }

    let caption_style = text(theme.caption, FOOTER, HPos::Left, VPos::Bottom);
    let caption_h = text_size(root, "Ag", &caption_style).1 as i32 + theme.px(4.0);
    let lines = if caption.is_empty() {
        vec![]
    } else {
        wrap(root, caption, &caption_style, max_w, " \u{b7} ")
    };
    let mut y = h as i32 - pad;
    for line in lines.iter().rev() {
        root.draw_text(line, &caption_style, (pad, y))?;
        y -= caption_h;
    }
    let bottom = if lines.is_empty() {
        pad
    } else {
        pad + caption_h * lines.len() as i32 + pad
    };
    Ok(root.margin(top, bottom, pad, pad))
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

/// Draws a polyline solid or with series `i`'s dash pattern.
pub(crate) fn draw_line<DB, CT>(
    area: &DrawingArea<DB, CT>,
    points: Vec<CT::From>,
    style: ShapeStyle,
    theme: &Theme,
    i: usize,
) -> DResult
where
    DB: DrawingBackend,
    CT: CoordTranslate,
    CT::From: Clone + 'static,
{
    match dash(i) {
        None => area.draw(&PathElement::new(points, style))?,
        Some((d, g)) => area.draw(&plotters::element::DashedPathElement::new(
            points,
            theme.px(d),
            theme.px(g),
            style,
        ))?,
    }
    Ok(())
}

/// Spreads label positions (pixels, any order) so that neighbours are at
/// least `gap` apart, moving each as little as possible; returns them in the
/// input order.
pub(crate) fn spread_labels(ys: &[i32], gap: i32) -> Vec<i32> {
    let mut order: Vec<usize> = (0..ys.len()).collect();
    order.sort_by_key(|&i| ys[i]);
    let mut placed = vec![0; ys.len()];
    let mut prev: Option<i32> = None;
    for &i in &order {
        let y = prev.map_or(ys[i], |p| ys[i].max(p + gap));
        placed[i] = y;
        prev = Some(y);
    }
    // Centre the pushed groups back on their wanted positions.
    let shift = order.iter().map(|&i| placed[i] - ys[i]).max().unwrap_or(0) / 2;
    placed.iter().map(|y| y - shift).collect()
}

/// Lays legend entries out in centred rows starting at `top`; returns the height used.
fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    theme: &Theme,
    items: &[LegendItem],
    top: i32,
) -> DResult<i32> {
    let (w, _) = root.dim_in_pixel();
    let style = text(theme.legend, TEXT, HPos::Left, VPos::Center);
    let swatch_w = theme.px(30.0);
    let gap = theme.px(8.0);
    let spacing = theme.px(28.0);
    let row_h = (text_size(root, "Ag", &style).1 as i32).max(theme.px(18.0)) + theme.px(6.0);
    let max_w = w as i32 - 2 * theme.pad;

    // Greedy row packing.
    let widths: Vec<i32> = items
        .iter()
        .map(|it| swatch_w + gap + text_size(root, &it.label, &style).0 as i32)
        .collect();
    let mut rows: Vec<Vec<usize>> = vec![Vec::new()];
    let mut row_w = 0;
    for (i, iw) in widths.iter().enumerate() {
        let needed = if row_w == 0 {
            *iw
        } else {
            row_w + spacing + iw
        };
        if needed > max_w && row_w > 0 {
            rows.push(vec![i]);
            row_w = *iw;
        } else {
            if let Some(r) = rows.last_mut() {
                r.push(i);
            }
            row_w = needed;
        }
    }

    for (r, row) in rows.iter().enumerate() {
        let total: i32 =
            row.iter().map(|&i| widths[i]).sum::<i32>() + spacing * (row.len() as i32 - 1).max(0);
        let mut x = (w as i32 - total) / 2;
        let cy = top + r as i32 * row_h + row_h / 2;
        for &i in row {
            draw_swatch(root, theme, items[i].swatch, (x, cy), swatch_w)?;
            root.draw_text(&items[i].label, &style, (x + swatch_w + gap, cy))?;
            x += widths[i] + spacing;
        }
    }
    Ok(rows.len() as i32 * row_h)
}

fn draw_swatch<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    theme: &Theme,
    swatch: Swatch,
    (x, cy): (i32, i32),
    width: i32,
) -> DResult {
    let half = theme.px(7.0);
    match swatch {
        Swatch::Line(c, marker) | Swatch::Dashed(c, _, marker) => {
            let i = match swatch {
                Swatch::Dashed(_, pattern, _) => pattern,
                _ => 0,
            };
            draw_line(
                root,
                vec![(x, cy), (x + width, cy)],
                c.stroke_width(theme.upx(3.0)),
                theme,
                i,
            )?;
            if let Some(shape) = marker {
                draw_marker(root, (x + width / 2, cy), shape, c, theme.px(5.0))?;
            }
        }
        Swatch::Solid(c) => {
            root.draw(&Rectangle::new(
                [(x + 2, cy - half), (x + width - 2, cy + half)],
                c.filled(),
            ))?;
        }
        Swatch::Shade(c) => {
            root.draw(&Rectangle::new(
                [(x + 2, cy - half), (x + width - 2, cy + half)],
                c.mix(0.22).filled(),
            ))?;
            root.draw(&Rectangle::new(
                [(x + 2, cy - half), (x + width - 2, cy + half)],
                c.mix(0.6).stroke_width(1),
            ))?;
        }
    }
    Ok(())
}

/// Draws marker `shape` (0 circle, 1 square, 2 triangle, 3 diamond, then repeats) of radius `r`
/// pixels at a point given in the area's own coordinates.
pub(crate) fn draw_marker<DB, CT>(
    area: &DrawingArea<DB, CT>,
    at: CT::From,
    shape: usize,
    color: RGBColor,
    r: i32,
) -> DResult
where
    DB: DrawingBackend,
    CT: CoordTranslate,
    CT::From: Clone + 'static,
{
    let fill = color.filled();
    let edge = WHITE.stroke_width(1);
    match shape % 4 {
        0 => {
            area.draw(&(EmptyElement::at(at.clone()) + Circle::new((0, 0), r, fill)))?;
            area.draw(&(EmptyElement::at(at) + Circle::new((0, 0), r, edge)))?;
        }
        1 => {
            let s = r * 9 / 10;
            area.draw(&(EmptyElement::at(at.clone()) + Rectangle::new([(-s, -s), (s, s)], fill)))?;
            area.draw(&(EmptyElement::at(at) + Rectangle::new([(-s, -s), (s, s)], edge)))?;
        }
        2 => {
            let pts = vec![(0, -r - 1), (r + 1, r - 1), (-r - 1, r - 1)];
            area.draw(&(EmptyElement::at(at) + Polygon::new(pts, fill)))?;
        }
        _ => {
            let s = r + 1;
            let pts = vec![(0, -s), (s, 0), (0, s), (-s, 0)];
            area.draw(&(EmptyElement::at(at) + Polygon::new(pts, fill)))?;
        }
    }
    Ok(())
}

/// Writes a grey "no data" note centred in `area` (pixel coordinates).
pub(crate) fn no_data<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, theme: &Theme) -> DResult {
    let (w, h) = area.dim_in_pixel();
    let style = text(theme.subtitle, NO_DATA, HPos::Center, VPos::Center);
    area.draw_text("no data", &style, (w as i32 / 2, h as i32 / 2))?;
    Ok(())
}

/// Standard mesh styling for a chart whose axes are `Axis` values. How the x axis is
/// labelled (ticks, category names, nothing) is the [`PlotLayout`]'s `x_labels`.
#[derive(Clone, Copy)]
pub(crate) struct MeshOpts<'a> {
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    /// Number of numeric x ticks (a category axis has one per category).
    pub x_labels: usize,
    pub y_labels: usize,
    /// Vertical grid lines on a numeric x axis (a category axis has none).
    pub x_grid: bool,
    pub y_grid: bool,
}

impl Default for MeshOpts<'_> {
    fn default() -> Self {
        MeshOpts {
            x_desc: "",
            y_desc: "",
            x_labels: 10,
            y_labels: 8,
            x_grid: true,
            y_grid: true,
        }
    }
}

/// What the x axis shows under a plot.
#[derive(Debug, Clone, Copy)]
pub(crate) enum XLabels<'a> {
    /// Nothing, and no room is kept for it (a panel stacked above another on the same axis).
    Hidden,
    /// Numeric tick labels and the axis title.
    Ticks,
    /// One name per category, rotated to read bottom-to-top when they do not fit side by side.
    Names(&'a [String]),
}

/// Where a plot sits in its area: the margins around it and the label areas beside it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlotLayout<'a> {
    pub margin_top: u32,
    pub margin_right: u32,
    /// Width of the y label area, see [`y_area_width`].
    pub y_area: u32,
    pub x_labels: XLabels<'a>,
}

impl<'a> PlotLayout<'a> {
    /// The layout of a chart with one plot under its frame: a little room at the top and more
    /// on the right, where the last x tick label overhangs the plot.
    pub(crate) fn single(theme: &Theme, y_area: u32, x_labels: XLabels<'a>) -> Self {
        PlotLayout {
            margin_top: theme.upx(6.0),
            margin_right: theme.upx(14.0),
            y_area,
            x_labels,
        }
    }
}

/// A chart's coordinate system on `f64` axes.
pub(crate) type Plot<'a, DB> = ChartContext<'a, DB, Cartesian2d<Axis, Axis>>;

/// Builds the coordinate system of a plot on `area` as `layout` says, draws its axes, tick
/// labels, axis titles and grid, and returns it with the height of its x label area.
pub(crate) fn plot<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    theme: &Theme,
    layout: &PlotLayout,
    (x, y): (Axis, Axis),
    mesh: MeshOpts,
) -> DResult<(Plot<'a, DB>, u32)> {
    let (names, rotate, x_area) = match layout.x_labels {
        XLabels::Hidden => (None, false, 0),
        XLabels::Ticks => (None, false, x_area_height(area, theme)),
        XLabels::Names(names) => {
            let plot_w =
                area.dim_in_pixel().0 as i32 - layout.y_area as i32 - layout.margin_right as i32;
            let (rotate, x_area) = x_label_layout(area, theme, names, plot_w);
            (Some(names), rotate, x_area)
        }
    };
    let mut chart = ChartBuilder::on(area)
        .margin_top(layout.margin_top)
        .margin_right(layout.margin_right)
        .x_label_area_size(x_area)
        .y_label_area_size(layout.y_area)
        .build_cartesian_2d(x, y)?;
    let show_x_labels = match layout.x_labels {
        XLabels::Hidden => false,
        XLabels::Ticks => true,
        XLabels::Names(_) => !rotate,
    };
    let mesh = MeshOpts {
        x_labels: names.map_or(mesh.x_labels, <[String]>::len),
        x_grid: mesh.x_grid && names.is_none(),
        ..mesh
    };
    draw_mesh(&mut chart, theme, &mesh, show_x_labels)?;
    if let (true, Some(names)) = (rotate, names) {
        draw_rotated_x_labels(&chart, theme, names)?;
    }
    Ok((chart, x_area))
}

/// Draws axes, ticks, tick labels, axis titles and grid with the shared look.
fn draw_mesh<DB: DrawingBackend>(
    chart: &mut Plot<DB>,
    theme: &Theme,
    opts: &MeshOpts,
    show_x_labels: bool,
) -> DResult {
    let x_label = text(theme.label, TEXT, HPos::Center, VPos::Top);
    let y_label = text(theme.label, TEXT, HPos::Right, VPos::Center);
    let desc = text(theme.axis_desc, TEXT, HPos::Center, VPos::Top);
    let no_label = |_: &f64| String::new();

    let mut mesh = chart.configure_mesh();
    mesh.x_labels(opts.x_labels)
        .y_labels(opts.y_labels)
        .x_label_style(x_label)
        .y_label_style(y_label)
        .axis_desc_style(desc)
        .axis_style(AXIS.stroke_width(1))
        .bold_line_style(GRID.stroke_width(1))
        .light_line_style(WHITE.mix(0.0))
        .max_light_lines(0)
        .set_all_tick_mark_size(theme.upx(5.0));
    if !opts.x_desc.is_empty() {
        mesh.x_desc(opts.x_desc);
    }
    if !opts.y_desc.is_empty() {
        mesh.y_desc(opts.y_desc);
    }
    if !show_x_labels {
        mesh.x_label_formatter(&no_label);
    }
    if !opts.x_grid {
        mesh.disable_x_mesh();
    }
    if !opts.y_grid {
        mesh.disable_y_mesh();
    }
    mesh.draw()?;
    Ok(())
}

/// Draws category names under the x axis rotated to read bottom-to-top (for long names),
/// one per category centre, in place of the mesh's x labels.
fn draw_rotated_x_labels<DB: DrawingBackend>(
    chart: &Plot<DB>,
    theme: &Theme,
    names: &[String],
) -> DResult {
    let area = chart.plotting_area();
    let y_min = area.get_y_range().start;
    let (_, h) = area.dim_in_pixel();
    let base = area.get_base_pixel();
    let flat = area.strip_coord_spec();
    let style = text_up(theme.label, TEXT, HPos::Right, VPos::Center);
    // Skip names when there are more categories than rotated lines of text fit.
    let line_h = text_size(&flat, "Ag", &text(theme.label, TEXT, HPos::Left, VPos::Top)).1;
    let slot = area.map_coordinate(&(1.0, y_min)).0 - area.map_coordinate(&(0.0, y_min)).0;
    let step = ((line_h as i32 + 2) / slot.max(1) + 1).max(1) as usize;
    for (i, name) in names.iter().enumerate().step_by(step) {
        let (px, _) = area.map_coordinate(&(i as f64, y_min));
        flat.draw_text(name, &style, (px - base.0, h as i32 + theme.px(10.0)))?;
    }
    Ok(())
}

/// Decides whether category names on the x axis must be rotated to fit `plot_w` pixels and
/// returns `(rotate, label_area_height)` including room for the axis title.
fn x_label_layout<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    theme: &Theme,
    names: &[String],
    plot_w: i32,
) -> (bool, u32) {
    let style = text(theme.label, TEXT, HPos::Center, VPos::Top);
    let line_h = line_height(area, theme.label);
    let desc_h = line_height(area, theme.axis_desc);
    let max_w = names
        .iter()
        .map(|n| text_size(area, n, &style).0)
        .max()
        .unwrap_or(0);
    let slot = plot_w / names.len().max(1) as i32;
    let rotate = max_w as i32 + theme.px(10.0) > slot;
    let labels_h = if rotate { max_w } else { line_h };
    (rotate, labels_h + desc_h + theme.upx(26.0))
}

/// Height in pixels of a line of text of font size `size`.
pub(crate) fn line_height<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, size: f64) -> u32 {
    text_size(area, "Ag", &text(size, TEXT, HPos::Center, VPos::Top)).1
}

/// Height of the x label area for numeric tick labels plus an axis title.
pub(crate) fn x_area_height<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    theme: &Theme,
) -> u32 {
    line_height(area, theme.label) + line_height(area, theme.axis_desc) + theme.upx(26.0)
}

/// Width of the y label area for the widest of `labels` plus a rotated axis title.
pub(crate) fn y_area_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    theme: &Theme,
    labels: &[String],
) -> u32 {
    let style = text(theme.label, TEXT, HPos::Right, VPos::Center);
    let max_w = labels
        .iter()
        .map(|l| text_size(area, l, &style).0)
        .max()
        .unwrap_or(0);
    max_w + line_height(area, theme.axis_desc) + theme.upx(28.0)
}

/// Width of the y label area for a numeric y axis over `range`: room for its end values
/// and for a tick label like `0.000`.
pub(crate) fn num_y_area_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    theme: &Theme,
    range: &Range<f64>,
) -> u32 {
    let labels = [fmt_tick(range.start), fmt_tick(range.end), "0.000".into()];
    y_area_width(area, theme, &labels)
}

/// Draws a small left-aligned panel heading and returns the area below it.
pub(crate) fn panel_title<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    theme: &Theme,
    indent: i32,
    title: &str,
) -> DResult<DrawingArea<DB, Shift>> {
    let style = text(theme.subtitle, TEXT, HPos::Left, VPos::Top);
    let h = text_size(area, "Ag", &style).1 as i32;
    let top = theme.px(12.0);
    area.draw_text(title, &style, (indent, top))?;
    Ok(area.margin(top + h + theme.px(10.0), 0, 0, 0))
}
