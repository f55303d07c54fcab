//! Rendering plumbing: embedded font registration, the `Chart` trait, PNG + SVG output.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use super::error::PlotError;
use super::error::{DResult, DrawErr};
use super::raster::PngBackend;
use super::theme::Theme;
use ab_glyph::FontRef;

/// DejaVu Sans (Bitstream Vera licence, see `assets/fonts/DejaVuSans-LICENSE.txt`),
/// compiled into the binary so rendering never looks at system fonts.
pub(crate) const FONT_BYTES: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// What the SVG says instead of the bare generic family, so browsers pick metrics close to
/// the embedded font the layout was computed with, and fall back to any sans-serif.
const SVG_FONT_FAMILY: &str = "DejaVu Sans, Verdana, Arial, Helvetica, sans-serif";

/// Default image size in pixels.
pub const DEFAULT_SIZE: (u32, u32) = (1200, 800);

/// Largest accepted width or height, to keep a bad argument from allocating gigabytes.
const MAX_SIDE: u32 = 8_192;

/// A chart that can draw itself on any plotters backend.
pub(crate) trait Chart {
    /// The requested image size in pixels; `None` = [`DEFAULT_SIZE`].
    fn size(&self) -> Option<(u32, u32)>;
    /// Draws the whole image on `root`, with fonts and spacing from `theme`.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, theme: &Theme) -> DResult;
}

/// Registers the embedded font as `sans-serif` once per process.
fn ensure_font() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            register_font("sans-serif", FontStyle::Normal, FONT_BYTES)
                .map_err(|_| "dejavu sans could not be parsed".to_string())
        })
        .clone()
}

/// `stem` plus an extension, without replacing anything after a dot already in the stem
/// (`out/p0.5` -> `out/p0.5.png`).
fn with_ext(stem: &Path, ext: &str) -> PathBuf {
    let mut s = stem.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// Writes a chart file atomically: a full disk leaves the previous chart, not half a new one.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), PlotError> {
    crate::atomic::write(path, bytes).map_err(|source| PlotError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The fill that stands for the colour bar's gradient while the SVG is drawn
/// (plotters has no gradients): [`with_gradient`] replaces it.
pub(crate) const GRADIENT_FILL: RGBColor = RGBColor(0x01, 0x02, 0x03);

/// Turns rectangles filled with [`GRADIENT_FILL`] into one smooth vertical
/// gradient of the colour map (bottom = low), defined once in the document.
fn with_gradient(svg: String) -> String {
    let marker = "fill=\"#010203\"";
    if !svg.contains(marker) {
        return svg;
    }
    let id = "hcsim-colour-bar";
    let mut defs =
        format!("<defs><linearGradient id=\"{id}\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">");
    for k in 0..=16 {
        let t = f64::from(k) / 16.0;
        let c = super::theme::colormap(t);
        defs += &format!(
            "<stop offset=\"{t:.4}\" stop-color=\"#{:02X}{:02X}{:02X}\"/>",
            c.0, c.1, c.2
        );
    }
    defs += "</linearGradient></defs>";
    let svg = svg.replace(marker, &format!("fill=\"url(#{id})\""));
    match svg
        .find("<svg")
        .and_then(|i| svg[i..].find('>').map(|j| i + j + 1))
    {
        Some(at) => format!("{}\n{defs}{}", &svg[..at], &svg[at..]),
        None => svg,
    }
}

fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(out)
}

/// Draws `chart` twice, at its size with the theme for that size, and writes `<stem>.png`
/// and `<stem>.svg`.
pub(crate) fn render<C: Chart>(chart: &C, stem: &Path) -> Result<(), PlotError> {
    let png_path = with_ext(stem, "png");
    let svg_path = with_ext(stem, "svg");
    let (w, h) = chart.size().unwrap_or(DEFAULT_SIZE);
    if w == 0 || h == 0 || w > MAX_SIDE || h > MAX_SIDE {
        return Err(PlotError::InvalidSize {
            path: png_path,
            width: w,
            height: h,
        });
    }
    ensure_font().map_err(|cause| PlotError::Font {
        path: png_path.clone(),
        cause,
    })?;

    let theme = Theme::for_size((w, h));

    let draw_err = |path: &Path| {
        let path = path.to_path_buf();
        move |e: DrawErr| PlotError::Draw { path, cause: e.0 }
    };

    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let font = FontRef::try_from_slice(FONT_BYTES).map_err(|e| PlotError::Font {
            path: png_path.clone(),
            cause: e.to_string(),
        })?;
        let root = PngBackend::new(&mut rgb, (w, h), font).into_drawing_area();
        chart.draw(&root, &theme).map_err(draw_err(&png_path))?;
        root.present()
            .map_err(|e| draw_err(&png_path)(DrawErr::from(e)))?;
    }
    let png_bytes = encode_png(&rgb, (w, h)).map_err(|e| PlotError::Encode {
        path: png_path.clone(),
        cause: e.to_string(),
    })?;
    write_file(&png_path, &png_bytes)?;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        let theme = Theme {
            vector: true,
            ..theme
        };
        chart.draw(&root, &theme).map_err(draw_err(&svg_path))?;
        root.present()
            .map_err(|e| draw_err(&svg_path)(DrawErr::from(e)))?;
    }
    let svg = svg.replace(
        "font-family=\"sans-serif\"",
        &format!("font-family=\"{SVG_FONT_FAMILY}\""),
    );
    write_file(&svg_path, with_gradient(svg).as_bytes())
}
