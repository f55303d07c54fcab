//! Line chart: a metric against one axis, one line per series, median with a shaded lo–hi band.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::{Axis, AxisScale, finite_bounds, fmt_tick, padded_range};
use super::error::DResult;
use super::error::PlotError;
use super::frame::{LegendItem, Swatch, draw_line, draw_marker, frame, no_data};
use super::mesh::{MeshOpts, PlotLayout, XLabels, num_y_area_width, plot};
use super::render::{Chart, render};
use super::theme::{NO_DATA, Theme, palette};

/// An x position: a number (numeric axis) or a category name (categorical axis).
///
/// If any point of any series is `Cat`, the whole chart uses a categorical axis, with
/// categories in order of first appearance (numbers are then shown as their text).
#[derive(Debug, Clone, PartialEq)]
pub enum XValue {
    Num(f64),
    Cat(String),
}

impl From<f64> for XValue {
    fn from(v: f64) -> Self {
        XValue::Num(v)
    }
}

impl From<&str> for XValue {
    fn from(v: &str) -> Self {
        XValue::Cat(v.to_string())
    }
}

impl From<String> for XValue {
    fn from(v: String) -> Self {
        XValue::Cat(v)
    }
}

impl XValue {
    fn label(&self) -> String {
        match self {
            XValue::Num(v) => fmt_tick(*v),
            XValue::Cat(s) => s.clone(),
        }
    }
}

/// One summarised point: the line goes through `median`, the band spans `lo..hi`
/// (e.g. p5–p95 over repetitions). Non-finite values are skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: XValue,
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Point {
    pub fn new(x: impl Into<XValue>, median: f64, lo: f64, hi: f64) -> Self {
        Point {
            x: x.into(),
            median,
            lo,
            hi,
        }
    }
}

/// One line of a [`LinesSpec`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
}

/// Input for [`lines`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinesSpec {
    pub title: String,
    pub caption: String,
    /// Axis titles, with units, e.g. `"check interval (s)"`, `"error rate (%)"`.
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Start the y axis at zero (for counts and rates; not on a log axis).
    pub y_from_zero: bool,
    /// Scales of a numeric x axis and of the y axis (`Auto`: logarithmic when the
    /// values span more than two decades).
    pub x_scale: AxisScale,
    pub y_scale: AxisScale,
    /// The y values are counts: ticks at whole numbers only.
    pub y_integer: bool,
    /// What the shaded band shows, for the legend, e.g. `"p5–p95"`; empty = `"lo–hi range"`.
    pub band_label: String,
    /// Image size in pixels; `None` = [`super::DEFAULT_SIZE`].
    pub size: Option<(u32, u32)>,
}

/// Writes `<stem>.png` and `<stem>.svg`.
pub fn lines(spec: &LinesSpec, stem: impl AsRef<Path>) -> Result<(), PlotError> {
    render(spec, stem.as_ref())
}

/// A point resolved to plot coordinates.
#[derive(Clone, Copy)]
struct Resolved {
    x: f64,
    median: f64,
    band: Option<(f64, f64)>,
}

impl LinesSpec {
    /// Category names if the x axis is categorical.
    fn categories(&self) -> Option<Vec<String>> {
        let points = || self.series.iter().flat_map(|s| &s.points);
        if !points().any(|p| matches!(p.x, XValue::Cat(_))) {
            return None;
        }
        let mut cats: Vec<String> = Vec::new();
        for p in points() {
            let l = p.x.label();
            if !cats.contains(&l) {
                cats.push(l);
            }
        }
        Some(cats)
    }

    fn resolve(&self, series: &Series, cats: Option<&[String]>) -> Vec<Resolved> {
        let mut out: Vec<Resolved> = series
            .points
            .iter()
            .filter_map(|p| {
                let x = match cats {
                    Some(c) => {
                        let l = p.x.label();
                        c.iter().position(|n| *n == l)? as f64
                    }
                    None => match p.x {
                        XValue::Num(v) if v.is_finite() => v,
                        _ => return None,
                    },
                };
                p.median.is_finite().then(|| Resolved {
                    x,
                    median: p.median,
                    band: (p.lo.is_finite() && p.hi.is_finite()).then_some((p.lo, p.hi)),
                })
            })
            .collect();
        out.sort_by(|a, b| a.x.total_cmp(&b.x));
        out
    }

    /// Series by colour and marker, then what the band shows; none for a single series.
    fn legend(&self, has_band: bool) -> Vec<LegendItem> {
        let mut legend = Vec::new();
        if self.series.len() > 1 {
            for (i, s) in self.series.iter().enumerate() {
                legend.push(LegendItem::new(
                    &s.name,
                    Swatch::Dashed(palette(i), i, Some(i)),
                ));
            }
            if has_band {
                let label = if self.band_label.is_empty() {
                    "lo–hi range"
                } else {
                    &self.band_label
                };
                legend.push(LegendItem::new(label, Swatch::Shade(NO_DATA)));
            }
        }
        legend
    }
}

impl Chart for LinesSpec {
    fn size(&self) -> Option<(u32, u32)> {
        self.size
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, theme: &Theme) -> DResult {
        let cats = self.categories();
        let mut resolved: Vec<Vec<Resolved>> = self
            .series
            .iter()
            .map(|s| self.resolve(s, cats.as_deref()))
            .collect();
        let has_band = resolved.iter().flatten().any(|r| r.band.is_some());
        let legend = self.legend(has_band);
        let body = frame(root, theme, &self.title, &self.caption, &legend)?;

        let x_log = cats.is_none() && self.x_scale.is_log(resolved.iter().flatten().map(|r| r.x));
        let y_values = |rs: &[Vec<Resolved>]| -> Vec<f64> {
            rs.iter()
                .flatten()
                .flat_map(|r| {
                    let (lo, hi) = r.band.unwrap_or((r.median, r.median));
                    [r.median, lo, hi]
                })
                .collect()
        };
        let y_log = self.y_scale.is_log(y_values(&resolved));
        for r in resolved.iter_mut().flatten() {
            if x_log {
                r.x = r.x.log10();
            }
            if y_log {
                r.median = r.median.log10();
                r.band = r.band.map(|(lo, hi)| (lo.log10(), hi.log10()));
            }
        }
        let x_axis = match &cats {
            Some(c) => Axis::cat(c),
            None => Axis::linear_or_log(
                padded_range(
                    finite_bounds(resolved.iter().flatten().map(|r| r.x)),
                    false,
                    0.03,
                ),
                x_log,
            ),
        };
        let y_range = padded_range(
            finite_bounds(y_values(&resolved)),
            self.y_from_zero && !y_log,
            0.06,
        );

        let x_labels = cats.as_deref().map_or(XLabels::Ticks, XLabels::Names);
        let y_area = num_y_area_width(&body, theme, &y_range);
        let layout = PlotLayout::single(theme, y_area, x_labels);
        let x_desc = if x_log {
            format!("{} (log scale)", self.x_label)
        } else {
            self.x_label.clone()
        };
        let y_desc = if y_log {
            format!("{} (log scale)", self.y_label)
        } else {
            self.y_label.clone()
        };
        let mesh = MeshOpts {
            x_desc: &x_desc,
            y_desc: &y_desc,
            ..MeshOpts::default()
        };
        let y_axis = if y_log {
            Axis::log10(y_range)
        } else if self.y_integer {
            Axis::int(y_range)
        } else {
            Axis::num(y_range)
        };
        let axes = (x_axis, y_axis);
        let (chart, _) = plot(&body, theme, &layout, axes, mesh)?;

        let area = chart.plotting_area();
        if resolved.iter().all(Vec::is_empty) {
            return no_data(&area.strip_coord_spec(), theme);
        }

        // Bands first so that no band covers another series' line.
        for (i, pts) in resolved.iter().enumerate() {
            let color = palette(i);
            for run in pts.split(|r| r.band.is_none()) {
                match run {
                    [] => {}
                    [single] => {
                        if let Some((lo, hi)) = single.band {
                            area.draw(&PathElement::new(
                                vec![(single.x, lo), (single.x, hi)],
                                color.mix(0.45).stroke_width(theme.upx(6.0)),
                            ))?;
                        }
                    }
                    _ => {
                        let upper = run.iter().filter_map(|r| r.band.map(|b| (r.x, b.1)));
                        let lower = run.iter().rev().filter_map(|r| r.band.map(|b| (r.x, b.0)));
                        let poly: Vec<(f64, f64)> = upper.chain(lower).collect();
                        area.draw(&Polygon::new(poly, color.mix(0.16).filled()))?;
                    }
                }
            }
        }
        for (i, pts) in resolved.iter().enumerate() {
            draw_line(
                area,
                pts.iter().map(|r| (r.x, r.median)).collect::<Vec<_>>(),
                palette(i).stroke_width(theme.upx(3.0)),
                theme,
                i,
            )?;
        }
        for (i, pts) in resolved.iter().enumerate() {
            for r in pts {
                draw_marker(area, (r.x, r.median), i, palette(i), theme.px(6.0))?;
            }
        }
        Ok(())
    }
}
