//! Timeline of one run: traffic share, fault windows, ejections and client errors on one time axis.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::axis::{Axis, finite_bounds, fmt_tick};
use super::common::{
    LegendItem, MeshOpts, NO_DATA, PlotLayout, Swatch, TEXT, Theme, XLabels, frame, no_data,
    palette, panel_title, plot, text, text_size, x_area_height, y_area_width,
};
use super::error::PlotError;
use super::output::{Chart, DResult, render};

/// One backend node's data for a [`TimelineSpec`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeTrack {
    pub name: String,
    /// Fraction (0–1) of requests this node served in each bucket, aligned with `TimelineSpec::t`.
    pub share: Vec<f64>,
    /// `(start_s, end_s)` intervals during which the load balancer had ejected the node.
    /// An infinite end means "still ejected when the run ended".
    pub ejections: Vec<(f64, f64)>,
    /// `(start_s, end_s, kind)` injected fault windows, e.g. `(30.0, 90.0, "blackhole")`.
    pub faults: Vec<(f64, f64, String)>,
}

/// Input for [`timeline`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimelineSpec {
    pub title: String,
    pub caption: String,
    /// Bucket width in seconds (if not positive, it is inferred from `t`).
    pub bucket_s: f64,
    /// Start time of each bucket in seconds.
    pub t: Vec<f64>,
    pub nodes: Vec<NodeTrack>,
    /// Client-visible errors per bucket, aligned with `t`.
    pub errors: Vec<u64>,
    /// Client timeouts per bucket, aligned with `t`.
    pub timeouts: Vec<u64>,
    /// Median and 99th percentile latency (ms) of the requests that ended in
    /// each bucket, aligned with `t`; `None` where none ended.
    pub latency_p50_ms: Vec<Option<f64>>,
    pub latency_p99_ms: Vec<Option<f64>>,
    /// Image size in pixels; `None` = [`super::DEFAULT_SIZE`].
    pub size: Option<(u32, u32)>,
}

/// Four stacked panels sharing the time axis: traffic share per node with fault windows
/// shaded, one ejection lane per node, client latency per bucket (log scale) and
/// errors/timeouts per bucket.
/// Writes `<stem>.png` and `<stem>.svg`.
pub fn timeline(spec: &TimelineSpec, stem: impl AsRef<Path>) -> Result<(), PlotError> {
    render(spec, stem.as_ref())
}

/// Colours of the two failure counts: neutral, so they never clash with node colours.
const ERRORS: RGBColor = RGBColor(0x3b, 0x3b, 0x3b);
const TIMEOUTS: RGBColor = RGBColor(0xa6, 0xa6, 0xa6);
/// Colours of the latency percentiles: the p99 dark, the median light.
const P99: RGBColor = RGBColor(0x3b, 0x3b, 0x3b);
const P50: RGBColor = RGBColor(0x8c, 0x8c, 0x8c);

impl TimelineSpec {
    fn bucket(&self) -> f64 {
        if self.bucket_s.is_finite() && self.bucket_s > 0.0 {
            return self.bucket_s;
        }
        let mut diffs: Vec<f64> = self
            .t
            .windows(2)
            .map(|w| w[1] - w[0])
            .filter(|d| d.is_finite() && *d > 0.0)
            .collect();
        diffs.sort_by(f64::total_cmp);
        diffs.get(diffs.len() / 2).copied().unwrap_or(1.0)
    }

    /// Time span covered by buckets, ejections and faults.
    fn time_range(&self, bucket: f64) -> (f64, f64) {
        let starts = self
            .t
            .iter()
            .copied()
            .chain(self.nodes.iter().flat_map(|n| {
                n.ejections
                    .iter()
                    .map(|e| e.0)
                    .chain(n.faults.iter().map(|f| f.0))
            }));
        let ends = self
            .t
            .iter()
            .map(|t| t + bucket)
            .chain(self.nodes.iter().flat_map(|n| {
                n.ejections
                    .iter()
                    .map(|e| e.1)
                    .chain(n.faults.iter().map(|f| f.1))
            }));
        match finite_bounds(starts.chain(ends)) {
            Some((lo, hi)) if hi > lo => (lo, hi),
            Some((lo, _)) => (lo, lo + bucket),
            None => (0.0, 1.0),
        }
    }
}

/// Clamps an interval to the visible range; `None` if it is empty or undefined.
fn clamp_span(start: f64, end: f64, (t0, t1): (f64, f64)) -> Option<(f64, f64)> {
    if start.is_nan() || end.is_nan() {
        return None;
    }
    let (s, e) = (start.max(t0), end.min(t1));
    (e > s).then_some((s, e))
}

/// Where the three panels go and what they share: the time axis, the y label area and the
/// right margin, so that the panels line up.
struct Panels<'a, DB: DrawingBackend> {
    share: DrawingArea<DB, Shift>,
    lanes: DrawingArea<DB, Shift>,
    latency: DrawingArea<DB, Shift>,
    counts: DrawingArea<DB, Shift>,
    theme: &'a Theme,
    bucket: f64,
    span: (f64, f64),
    /// Top of the count axis: the largest count plus head room.
    count_top: f64,
    /// The latency axis: base-10 logarithms of milliseconds.
    latency_log: std::ops::Range<f64>,
    y_area: u32,
}

impl<DB: DrawingBackend> Panels<'_, DB> {
    fn x_axis(&self) -> Axis {
        Axis::num(self.span.0..self.span.1)
    }

    /// The layout of a panel above the time axis (`XLabels::Hidden`) or on it.
    fn layout(&self, x_labels: XLabels<'static>) -> PlotLayout<'static> {
        PlotLayout {
            margin_top: 0,
            margin_right: self.theme.upx(16.0),
            y_area: self.y_area,
            x_labels,
        }
    }

    /// The panel heading, indented to the start of the plot.
    fn title(&self, area: &DrawingArea<DB, Shift>, title: &str) -> DResult<DrawingArea<DB, Shift>> {
        panel_title(area, self.theme, self.y_area as i32, title)
    }
}

impl TimelineSpec {
    /// Nodes by colour, then what the shading and bars mean (when there is anything to draw).
    fn legend(&self, empty: bool) -> Vec<LegendItem> {
        let mut legend: Vec<LegendItem> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| LegendItem::new(&n.name, Swatch::Line(palette(i), None)))
            .collect();
        if !empty {
            legend.push(LegendItem::new("fault window", Swatch::Shade(NO_DATA)));
            legend.push(LegendItem::new("errors", Swatch::Solid(ERRORS)));
            legend.push(LegendItem::new("timeouts", Swatch::Solid(TIMEOUTS)));
            legend.push(LegendItem::new("latency p99", Swatch::Line(P99, None)));
            legend.push(LegendItem::new("latency p50", Swatch::Line(P50, None)));
        }
        legend
    }

    /// Splits `body` into the three panels: lanes sized by node count, the rest split between
    /// the two charts.
    fn panels<'a, DB: DrawingBackend>(
        &self,
        body: &DrawingArea<DB, Shift>,
        theme: &'a Theme,
    ) -> Panels<'a, DB> {
        let bucket = self.bucket();
        let (_, body_h) = body.dim_in_pixel();
        let body_h = body_h as i32;
        let x_area = x_area_height(body, theme) as i32;
        let lane_h = (self.nodes.len().max(1) as i32 * theme.px(34.0) + theme.px(50.0))
            .max(theme.px(100.0))
            .min(body_h * 35 / 100);
        let avail = (body_h - lane_h - x_area).max(0);
        let share_h = avail * 40 / 100;
        let latency_h = avail * 30 / 100;
        let (share, rest) = body.split_vertically(share_h);
        let (lanes, rest) = rest.split_vertically(lane_h);
        let (latency, counts) = rest.split_vertically(latency_h);
        let latency_log = self.latency_range();

        let max_count = self
            .errors
            .iter()
            .chain(&self.timeouts)
            .copied()
            .max()
            .unwrap_or(0);
        let count_top = (max_count as f64 * 1.12).max(1.0);
        let mut y_labels: Vec<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        y_labels.extend(["100%".to_string(), fmt_tick(count_top)]);
        y_labels.push(fmt_tick(10f64.powf(latency_log.end.floor())));
        y_labels.push(fmt_tick(10f64.powf(latency_log.start.ceil())));
        Panels {
            share,
            lanes,
            latency,
            counts,
            latency_log,
            theme,
            bucket,
            span: self.time_range(bucket),
            count_top,
            y_area: y_area_width(body, theme, &y_labels),
        }
    }

    /// The latency axis range in base-10 logarithms of milliseconds: the
    /// percentiles' span widened to whole decades (1 ms to 1 s without data).
    fn latency_range(&self) -> std::ops::Range<f64> {
        let values = self
            .latency_p50_ms
            .iter()
            .chain(&self.latency_p99_ms)
            .flatten()
            .copied()
            .filter(|v| *v > 0.0)
            .map(f64::log10);
        match finite_bounds(values) {
            Some((lo, hi)) => {
                let (lo, hi) = (lo.floor(), hi.ceil());
                lo..if hi > lo { hi } else { lo + 1.0 }
            }
            None => 0.0..3.0,
        }
    }

    /// Fault windows clamped to `span`: `(node index, (start, end), node, kind)`.
    fn faults(
        &self,
        span: (f64, f64),
    ) -> impl Iterator<Item = (usize, (f64, f64), &NodeTrack, &String)> {
        self.nodes.iter().enumerate().flat_map(move |(i, n)| {
            n.faults
                .iter()
                .filter_map(move |f| clamp_span(f.0, f.1, span).map(|s| (i, s, n, &f.2)))
        })
    }

    /// (a) Traffic share per node, fault windows shaded and labelled.
    fn draw_share<DB: DrawingBackend>(&self, p: &Panels<DB>) -> DResult {
        let (theme, span) = (p.theme, p.span);
        let max_share = finite_bounds(self.nodes.iter().flat_map(|n| n.share.iter().copied()))
            .map_or(1.0, |(_, hi)| hi);
        let share_top = ((max_share * 1.1 * 10.0).ceil() / 10.0).clamp(0.1, 1.0);
        let area = p.title(&p.share, "traffic share per node")?;
        let mesh = MeshOpts {
            y_desc: "share (%)",
            y_labels: 6,
            ..MeshOpts::default()
        };
        let axes = (p.x_axis(), Axis::percent(0.0..share_top));
        let (chart, _) = plot(&area, theme, &p.layout(XLabels::Hidden), axes, mesh)?;
        let area = chart.plotting_area();
        let label_style = text(theme.small, TEXT, HPos::Left, VPos::Top);
        let line_h = f64::from(text_size(&p.share, "Ag", &label_style).1) * 1.35;
        let (_, plot_h) = area.dim_in_pixel();
        let row_frac = line_h / f64::from(plot_h.max(1)) * share_top;
        for (k, (i, (s, e), node, kind)) in self.faults(span).enumerate() {
            let color = palette(i);
            area.draw(&Rectangle::new(
                [(s, 0.0), (e, share_top)],
                color.mix(0.13).filled(),
            ))?;
            area.draw(&PathElement::new(
                vec![(s, 0.0), (s, share_top)],
                color.mix(0.7).stroke_width(1),
            ))?;
            let label = if kind.is_empty() {
                format!("fault: {}", node.name)
            } else {
                format!("fault: {} ({kind})", node.name)
            };
            let y = share_top - (0.15 + (k % 3) as f64) * row_frac;
            let x = s + (span.1 - span.0) * 0.004;
            area.draw(&Text::new(label, (x, y), label_style.clone()))?;
        }
        for (i, node) in self.nodes.iter().enumerate() {
            let pts: Vec<Option<(f64, f64)>> = self
                .t
                .iter()
                .zip(&node.share)
                .map(|(t, v)| {
                    let x = t + p.bucket / 2.0;
                    (x.is_finite() && v.is_finite()).then_some((x, *v))
                })
                .collect();
            for run in pts.split(Option::is_none) {
                let run: Vec<(f64, f64)> = run.iter().flatten().copied().collect();
                if !run.is_empty() {
                    area.draw(&PathElement::new(
                        run,
                        palette(i).stroke_width(theme.upx(2.5)),
                    ))?;
                }
            }
        }
        Ok(())
    }

    /// (b) Ejection lanes: faults as pale bands, ejections as solid bars.
    fn draw_lanes<DB: DrawingBackend>(&self, p: &Panels<DB>) -> DResult {
        let names: Vec<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        let area = p.title(
            &p.lanes,
            "ejected by health checks (bars) vs injected faults (pale)",
        )?;
        let mesh = MeshOpts {
            y_desc: "node",
            y_labels: names.len(),
            y_grid: false,
            ..MeshOpts::default()
        };
        let axes = (p.x_axis(), Axis::cat_top_down(&names));
        let (chart, _) = plot(&area, p.theme, &p.layout(XLabels::Hidden), axes, mesh)?;
        let area = chart.plotting_area();
        if names.is_empty() {
            no_data(&area.strip_coord_spec(), p.theme)?;
        }
        for (i, (s, e), _, _) in self.faults(p.span) {
            let y = i as f64;
            area.draw(&Rectangle::new(
                [(s, y - 0.42), (e, y + 0.42)],
                palette(i).mix(0.18).filled(),
            ))?;
        }
        for (i, node) in self.nodes.iter().enumerate() {
            let y = i as f64;
            for (s, e) in node
                .ejections
                .iter()
                .filter_map(|e| clamp_span(e.0, e.1, p.span))
            {
                area.draw(&Rectangle::new(
                    [(s, y - 0.24), (e, y + 0.24)],
                    palette(i).filled(),
                ))?;
            }
        }
        Ok(())
    }

    /// (c) Client latency per bucket: p99 and median of the requests that
    /// ended in it, timeouts included, on a log scale.
    fn draw_latency<DB: DrawingBackend>(&self, p: &Panels<DB>) -> DResult {
        let area = p.title(
            &p.latency,
            "client latency per bucket, p99 and median (timeouts included)",
        )?;
        let mesh = MeshOpts {
            y_desc: "ms (log)",
            y_labels: 5,
            ..MeshOpts::default()
        };
        let axes = (p.x_axis(), Axis::log10(p.latency_log.clone()));
        let (chart, _) = plot(&area, p.theme, &p.layout(XLabels::Hidden), axes, mesh)?;
        let area = chart.plotting_area();
        for (_, (s, e), _, _) in self.faults(p.span) {
            area.draw(&Rectangle::new(
                [(s, p.latency_log.start), (e, p.latency_log.end)],
                NO_DATA.mix(0.12).filled(),
            ))?;
        }
        for (series, color) in [(&self.latency_p50_ms, P50), (&self.latency_p99_ms, P99)] {
            let pts: Vec<Option<(f64, f64)>> = self
                .t
                .iter()
                .zip(series)
                .map(|(t, v)| {
                    let x = t + p.bucket / 2.0;
                    let y = v.filter(|v| *v > 0.0)?.log10();
                    (x.is_finite() && y.is_finite()).then_some((x, y))
                })
                .collect();
            for run in pts.split(Option::is_none) {
                let run: Vec<(f64, f64)> = run.iter().flatten().copied().collect();
                if run.len() == 1 {
                    area.draw(&Circle::new(run[0], p.theme.upx(2.5), color.filled()))?;
                } else if !run.is_empty() {
                    area.draw(&PathElement::new(run, color.stroke_width(p.theme.upx(2.0))))?;
                }
            }
        }
        Ok(())
    }

    /// (d) Client errors and timeouts per bucket, side by side within each bucket.
    fn draw_counts<DB: DrawingBackend>(&self, p: &Panels<DB>) -> DResult {
        let (bucket, count_top) = (p.bucket, p.count_top);
        let area = p.title(&p.counts, "client errors and timeouts per bucket")?;
        let y_desc = format!("requests / {} s", fmt_tick(bucket));
        let mesh = MeshOpts {
            x_desc: "time (s)",
            y_desc: &y_desc,
            y_labels: 5,
            ..MeshOpts::default()
        };
        let axes = (p.x_axis(), Axis::num(0.0..count_top));
        let (chart, _) = plot(&area, p.theme, &p.layout(XLabels::Ticks), axes, mesh)?;
        let area = chart.plotting_area();
        for (_, (s, e), _, _) in self.faults(p.span) {
            area.draw(&Rectangle::new(
                [(s, 0.0), (e, count_top)],
                NO_DATA.mix(0.12).filled(),
            ))?;
        }
        for (k, t) in self.t.iter().enumerate() {
            if !t.is_finite() {
                continue;
            }
            let bars = [
                (self.errors.get(k), *t, ERRORS),
                (self.timeouts.get(k), t + bucket / 2.0, TIMEOUTS),
            ];
            for (count, x0, color) in bars {
                if let Some(&c) = count.filter(|c| **c > 0) {
                    area.draw(&Rectangle::new(
                        [(x0, 0.0), (x0 + bucket / 2.0, c as f64)],
                        color.filled(),
                    ))?;
                }
            }
        }
        Ok(())
    }
}

impl Chart for TimelineSpec {
    fn size(&self) -> Option<(u32, u32)> {
        self.size
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, theme: &Theme) -> DResult {
        let empty = self.t.is_empty() && self.nodes.is_empty();
        let body = frame(root, theme, &self.title, &self.caption, &self.legend(empty))?;
        if empty {
            return no_data(&body, theme);
        }
        let panels = self.panels(&body, theme);
        self.draw_share(&panels)?;
        self.draw_lanes(&panels)?;
        self.draw_latency(&panels)?;
        self.draw_counts(&panels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_is_inferred() {
        let spec = TimelineSpec {
            t: vec![0.0, 2.0, 4.0, 6.0],
            ..TimelineSpec::default()
        };
        assert_eq!(spec.bucket(), 2.0);
        assert_eq!(TimelineSpec::default().bucket(), 1.0);
    }

    #[test]
    fn spans_are_clamped() {
        assert_eq!(
            clamp_span(5.0, f64::INFINITY, (0.0, 10.0)),
            Some((5.0, 10.0))
        );
        assert_eq!(clamp_span(5.0, 4.0, (0.0, 10.0)), None);
        assert_eq!(clamp_span(f64::NAN, 4.0, (0.0, 10.0)), None);
    }
}
