//! Heatmap chart: one metric over two categorical axes, values printed in cells, colour bar.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::axis::{Axis, AxisScale, ValueFormat, finite_bounds, log_ticks, nice_ticks};
use super::error::DResult;
use super::error::PlotError;
use super::frame::{frame, no_data};
use super::mesh::{MeshOpts, Plot, PlotLayout, XLabels, line_height, plot, y_area_width};
use super::render::{Chart, render};
use super::theme::{NO_DATA, TEXT, Theme, colormap, contrast_text, text, text_size, text_up};

/// Input for [`heatmap`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeatmapSpec {
    pub title: String,
    /// Small print at the bottom, e.g. `"model e2-p02 · seed 7 · 20 reps"`.
    pub caption: String,
    /// Axis titles, with units where they have one.
    pub x_label: String,
    pub y_label: String,
    /// Title of the colour bar, e.g. `"p99 latency (ms)"`.
    pub value_label: String,
    /// Column names, left to right.
    pub x: Vec<String>,
    /// Row names, top to bottom.
    pub y: Vec<String>,
    /// Values indexed `[y][x]`. Missing rows/cells, `None` and non-finite values show as "–".
    pub cells: Vec<Vec<Option<f64>>>,
    /// Fixed colour-scale range `(min, max)`, to compare several heatmaps; `None` = data range.
    pub range: Option<(f64, f64)>,
    /// The colour scale: `Auto` is logarithmic when the values span more than two
    /// decades; a log scale is used only if the scale range is entirely positive.
    pub scale: AxisScale,
    /// How cell values and colour-bar ticks print.
    pub format: ValueFormat,
    /// Image size in pixels; `None` = [`super::DEFAULT_SIZE`].
    pub size: Option<(u32, u32)>,
}

/// Writes `<stem>.png` and `<stem>.svg`.
pub fn heatmap(spec: &HeatmapSpec, stem: impl AsRef<Path>) -> Result<(), PlotError> {
    render(spec, stem.as_ref())
}

/// Fill for cells without a value.
const EMPTY_CELL: RGBColor = RGBColor(0xee, 0xee, 0xee);

impl HeatmapSpec {
    fn value(&self, yi: usize, xi: usize) -> Option<f64> {
        self.cells
            .get(yi)
            .and_then(|row| row.get(xi))
            .copied()
            .flatten()
            .filter(|v| v.is_finite())
    }

    /// Colour-scale bounds: the fixed range if valid, else the finite data range.
    fn bounds(&self) -> Option<(f64, f64)> {
        let fixed = self
            .range
            .filter(|(lo, hi)| lo.is_finite() && hi.is_finite() && hi > lo);
        fixed.or_else(|| {
            let all = (0..self.y.len())
                .flat_map(|yi| (0..self.x.len()).map(move |xi| (yi, xi)))
                .filter_map(|(yi, xi)| self.value(yi, xi));
            finite_bounds(all)
        })
    }
}

/// Maps values to `0..=1` along the colour scale, linearly or logarithmically.
#[derive(Debug, Clone, Copy)]
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Scale {
    fn new((lo, hi): (f64, f64), scale: AxisScale) -> Self {
        Scale {
            lo,
            hi,
            log: scale.is_log([lo, hi]),
        }
    }

    /// Nothing to scale: every value is the same.
    fn is_constant(self) -> bool {
        self.hi <= self.lo
    }

    /// Round values along the scale, each with its position in `0..=1`.
    fn ticks(self) -> Vec<(f64, f64)> {
        let values: Vec<f64> = if self.log {
            log_ticks(self.lo.log10(), self.hi.log10())
                .into_iter()
                .map(|t| 10f64.powf(t))
                .collect()
        } else {
            nice_ticks(self.lo, self.hi, 4)
        };
        let ticks: Vec<(f64, f64)> = values
            .into_iter()
            .map(|v| (self.to_unit(v), v))
            .filter(|(u, _)| (-1e-9..=1.0 + 1e-9).contains(u))
            .collect();
        if ticks.len() >= 2 {
            ticks
        } else {
            vec![(0.0, self.lo), (1.0, self.hi)]
        }
    }

    fn to_unit(self, v: f64) -> f64 {
        let f = |x: f64| if self.log { x.max(self.lo).ln() } else { x };
        let (a, b) = (f(self.lo), f(self.hi));
        if b > a { (f(v) - a) / (b - a) } else { 0.5 }
    }
}

/// The colour bar right of the cells: the bar, its tick labels and the rotated value title,
/// measured before the body is split so the cells get the rest of the width.
struct ColourBar {
    scale: Option<Scale>,
    ticks: Vec<(f64, String)>,
    bar_w: i32,
    /// Width of the widest tick label.
    tick_w: u32,
    /// Height of the rotated title's line.
    desc_h: u32,
}

impl ColourBar {
    fn measure<DB: DrawingBackend>(
        body: &DrawingArea<DB, Shift>,
        theme: &Theme,
        scale: Option<Scale>,
        format: ValueFormat,
    ) -> Self {
        let ticks: Vec<(f64, String)> = match scale {
            Some(sc) if sc.is_constant() => {
                vec![(0.5, format!("all {}", format.format(Some(sc.lo))))]
            }
            Some(sc) => sc
                .ticks()
                .into_iter()
                .map(|(u, v)| (u, format.tick(v)))
                .collect(),
            None => vec![(0.5, "no data".to_string())],
        };
        let tick_w = ticks
            .iter()
            .map(|(_, s)| text_size(body, s, &Self::label_style(theme)).0)
            .max()
            .unwrap_or(0);
        ColourBar {
            scale,
            ticks,
            bar_w: theme.px(24.0),
            tick_w,
            desc_h: line_height(body, theme.axis_desc),
        }
    }

    fn label_style(theme: &Theme) -> TextStyle<'static> {
        text(theme.label, TEXT, HPos::Left, VPos::Center)
    }

    /// Width of the area the bar needs.
    fn width(&self, theme: &Theme) -> u32 {
        self.bar_w as u32 + self.tick_w + self.desc_h + theme.upx(50.0)
    }

    /// Draws the bar in `area`, level with the cells: from `top` down to `x_area` (the height
    /// of the cells' x label area) above the bottom.
    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        theme: &Theme,
        top: i32,
        x_area: u32,
        title: &str,
    ) -> DResult {
        let (_, h) = area.dim_in_pixel();
        let bottom = h as i32 - x_area as i32;
        let x0 = theme.px(16.0);
        let x1 = x0 + self.bar_w;
        let span = (bottom - top).max(1);
        let constant = self.scale.is_some_and(Scale::is_constant);
        if constant {
            area.draw(&Rectangle::new(
                [(x0, top), (x1, bottom)],
                colormap(0.5).filled(),
            ))?;
        } else if self.scale.is_some() && theme.vector {
            // One rectangle the SVG writer turns into a smooth gradient.
            area.draw(&Rectangle::new(
                [(x0, top), (x1, bottom)],
                super::render::GRADIENT_FILL.filled(),
            ))?;
        } else if self.scale.is_some() {
            for py in top..bottom {
                let f = f64::from(bottom - py) / f64::from(span);
                area.draw(&Rectangle::new(
                    [(x0, py), (x1, py + 1)],
                    colormap(f).filled(),
                ))?;
            }
        } else {
            area.draw(&Rectangle::new(
                [(x0, top), (x1, bottom)],
                EMPTY_CELL.filled(),
            ))?;
        }
        area.draw(&Rectangle::new(
            [(x0, top), (x1, bottom)],
            TEXT.stroke_width(1),
        ))?;
        let label_style = Self::label_style(theme);
        let ticks: &[(f64, String)] = if constant { &[] } else { &self.ticks };
        if constant {
            // No scale to read: say that every cell has the same value.
            let note = text_up(theme.label, TEXT, HPos::Center, VPos::Center);
            let label = self.ticks.first().map_or("", |t| t.1.as_str());
            area.draw_text(
                &format!("constant: {}", label.trim_start_matches("all ")),
                &note,
                (
                    x1 + theme.px(9.0) + self.tick_w as i32 / 2,
                    (top + bottom) / 2,
                ),
            )?;
        }
        for (f, label) in ticks {
            let py = bottom - (f * f64::from(span)).round() as i32;
            area.draw(&PathElement::new(
                vec![(x1, py), (x1 + theme.px(5.0), py)],
                TEXT.stroke_width(1),
            ))?;
            area.draw_text(label, &label_style, (x1 + theme.px(9.0), py))?;
        }
        let desc_x = x1 + theme.px(20.0) + self.tick_w as i32 + self.desc_h as i32 / 2;
        area.draw_text(
            title,
            &text_up(theme.axis_desc, TEXT, HPos::Center, VPos::Center),
            (desc_x, (top + bottom) / 2),
        )?;
        Ok(())
    }
}

impl HeatmapSpec {
    /// The printed value of each cell, `[y][x]`.
    fn labels(&self) -> Vec<Vec<String>> {
        (0..self.y.len())
            .map(|yi| {
                (0..self.x.len())
                    .map(|xi| self.format.format(self.value(yi, xi)))
                    .collect()
            })
            .collect()
    }

    /// Fills the cells and prints their values, in a font as large as the cell size allows
    /// (none if that is too small to read).
    fn draw_cells<DB: DrawingBackend>(
        &self,
        chart: &Plot<DB>,
        theme: &Theme,
        scale: Option<Scale>,
    ) -> DResult {
        let (ax, ay) = chart.backend_coord(&(0.0, 0.0));
        let (bx, by) = chart.backend_coord(&(1.0, 1.0));
        let cell_w = f64::from((bx - ax).abs());
        let cell_h = f64::from((by - ay).abs());
        let labels = self.labels();
        let area = chart.plotting_area();
        let probe = text(100.0, TEXT, HPos::Center, VPos::Center);
        let widest = labels
            .iter()
            .flatten()
            .map(|s| text_size(&area.strip_coord_spec(), s, &probe).0)
            .max()
            .unwrap_or(1)
            .max(1);
        let font_px = (cell_h * 0.42)
            .min(cell_w * 0.82 * 100.0 / f64::from(widest))
            .min(theme.label * 1.5);

        for (yi, row) in labels.iter().enumerate() {
            for (xi, label) in row.iter().enumerate() {
                let (x, y) = (xi as f64, yi as f64);
                let corners = [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)];
                let v = self.value(yi, xi);
                let fill = match (v, scale) {
                    (Some(v), Some(sc)) => colormap(sc.to_unit(v)),
                    _ => EMPTY_CELL,
                };
                area.draw(&Rectangle::new(corners, fill.filled()))?;
                area.draw(&Rectangle::new(corners, WHITE.stroke_width(2)))?;
                if font_px >= 8.0 {
                    let color = if v.is_some() {
                        contrast_text(fill)
                    } else {
                        NO_DATA
                    };
                    let style = text(font_px, color, HPos::Center, VPos::Center);
                    area.draw(&Text::new(label.clone(), (x, y), style))?;
                }
            }
        }
        Ok(())
    }
}

impl Chart for HeatmapSpec {
    fn size(&self) -> Option<(u32, u32)> {
        self.size
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, theme: &Theme) -> DResult {
        let body = frame(root, theme, &self.title, &self.caption, &[])?;
        let scale = self.bounds().map(|b| Scale::new(b, self.scale));
        let bar = ColourBar::measure(&body, theme, scale, self.format);
        let (body_w, _) = body.dim_in_pixel();
        let (plot_area, bar_area) =
            body.split_horizontally(body_w.saturating_sub(bar.width(theme)));
        if self.x.is_empty() || self.y.is_empty() {
            return no_data(&plot_area, theme);
        }

        let margin = theme.upx(8.0);
        let layout = PlotLayout {
            margin_top: margin,
            margin_right: margin,
            y_area: y_area_width(&plot_area, theme, &self.y),
            x_labels: XLabels::Names(&self.x),
        };
        let mesh = MeshOpts {
            x_desc: &self.x_label,
            y_desc: &self.y_label,
            y_labels: self.y.len(),
            y_grid: false,
            ..MeshOpts::default()
        };
        let axes = (Axis::cat(&self.x), Axis::cat_top_down(&self.y));
        let (chart, x_area) = plot(&plot_area, theme, &layout, axes, mesh)?;
        self.draw_cells(&chart, theme, scale)?;
        bar.draw(&bar_area, theme, margin as i32, x_area, &self.value_label)
    }
}
