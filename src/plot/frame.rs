//! What surrounds a chart's plot: the title, legend and caption frame,
//! legend swatches and markers, wrapped text, the "no data" notice and panel
//! titles; and the label layout that keeps end labels apart.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::error::DResult;

use super::theme::*;

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
    /// A point's marker alone ([`draw_marker`]'s shape index), of the
    /// radius a chart draws it at: the legend shows the very mark.
    Marker(RGBColor, usize, f64),
    /// A marker inside a ring, for a point singled out (`Marker`'s fields,
    /// then the ring's colour and radius).
    Ringed(RGBColor, usize, f64, RGBColor, f64),
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
        Swatch::Marker(c, shape, r) => {
            draw_marker(root, (x + width / 2, cy), shape, c, theme.px(r))?;
        }
        Swatch::Ringed(c, shape, r, ring, ring_r) => {
            let at = (x + width / 2, cy);
            draw_marker(root, at, shape, c, theme.px(r))?;
            let style = ShapeStyle::from(ring).stroke_width(theme.upx(2.0));
            root.draw(&Circle::new(at, theme.px(ring_r), style))?;
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
