//! Timeline of one run: traffic share, fault windows, ejections and client errors on one time axis.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::axis::{Axis, finite_bounds, fmt_tick};
use super::error::DResult;
use super::error::PlotError;
use super::frame::{LegendItem, Swatch, draw_line, frame, no_data, panel_title, spread_labels};
use super::mesh::{MeshOpts, Plot, PlotLayout, XLabels, plot, x_area_height, y_area_width};
use super::render::{Chart, render};
use super::theme::{MUTED, NO_DATA, TEXT, Theme, palette, text, text_size};

/// One backend node's data for a [`TimelineSpec`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeTrack {
    pub name: String,
    /// Fraction (0–1) of the answers this node served in each bucket, aligned with
    /// `TimelineSpec::t` (the median over replications); `None` where no request was
    /// answered: a gap in the line, not 0%.
    pub share: Vec<Option<f64>>,
    /// The spread of `share` over replications per bucket, `(lo, hi)`; empty: no band.
    pub share_band: Vec<Option<(f64, f64)>>,
    /// `(start_s, end_s)` intervals during which the load balancer had ejected the node
    /// (one replication). An infinite end means "still ejected when the run ended".
    pub ejections: Vec<(f64, f64)>,
    /// Fraction (0–1) of each bucket the node was ejected, the mean over replications;
    /// drawn as shaded bars when `ejections` is empty.
    pub ejected: Vec<f64>,
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
    /// Client-visible errors per bucket, aligned with `t` (the median over replications).
    pub errors: Vec<f64>,
    /// Client timeouts per bucket, aligned with `t` (the median over replications).
    pub timeouts: Vec<f64>,
    /// Median and 99th percentile latency (ms) of the requests that ended in
    /// each bucket, aligned with `t`; `None` where none ended.
    pub latency_p50_ms: Vec<Option<f64>>,
    pub latency_p99_ms: Vec<Option<f64>>,
    /// The spread of the p99 over replications per bucket; empty: no band.
    pub latency_p99_band: Vec<Option<(f64, f64)>>,
    /// The clients' own timeout (ms), drawn as a line on the latency panel.
    pub client_timeout_ms: Option<f64>,
    /// What the bands show, for the legend (e.g. `"min–max of 5 runs"`).
    pub band_label: String,
    /// Said after the latency panel's title (e.g. how merged buckets' p99 was taken).
    pub latency_note: String,
    /// Image size in pixels; `None` = [`super::DEFAULT_SIZE`].
    pub size: Option<(u32, u32)>,
}

/// Four stacked panels sharing the time axis: traffic share per node with fault windows
/// shaded, one ejection lane per node, client latency per bucket (log scale, buckets with
/// client timeouts marked) and errors/timeouts per bucket.
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
/// Nodes named one by one in the legend and beside the share lines; a fleet of
/// hundreds is summarised.
const NAMED_NODES: usize = 12;

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

/// Where the four panels go and what they share: the time axis, the y label area and the
/// right margin (room for the share lines' names), so that the panels line up.
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
    margin_right: u32,
}

impl<DB: DrawingBackend> Panels<'_, DB> {
    fn x_axis(&self) -> Axis {
        Axis::num(self.span.0..self.span.1)
    }

    /// The layout of a panel above the time axis (`XLabels::Hidden`) or on it.
    fn layout(&self, x_labels: XLabels<'static>) -> PlotLayout<'static> {
        PlotLayout {
            margin_top: 0,
            margin_right: self.margin_right,
            y_area: self.y_area,
            x_labels,
        }
    }

    /// The panel heading, indented to the start of the plot.
    fn title(&self, area: &DrawingArea<DB, Shift>, title: &str) -> DResult<DrawingArea<DB, Shift>> {
        panel_title(area, self.theme, self.y_area as i32, title)
    }
}

/// Steps of the ejection shading's key, as fractions of a bucket ejected.
const SHADE_KEY: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];
/// The key's colour: neutral, as the bars take each node's colour.
const SHADE_KEY_COLOR: RGBColor = RGBColor(0x4a, 0x4a, 0x4a);

/// The scale of the ejection shading, right-aligned on the lanes' title row
/// (whose title ends at `title_end` pixels): the fraction of a bucket the
/// node was ejected (mean over the runs), from 0% to 100%, as steps of the
/// shading; the longest wording that fits beside the title.
fn draw_shade_key<DB: DrawingBackend>(p: &Panels<DB>, title_end: i32) -> DResult {
    let theme = p.theme;
    let area = &p.lanes;
    let (w, _) = area.dim_in_pixel();
    let style = text(theme.small, TEXT, HPos::Left, VPos::Center);
    let title_h = text_size(
        area,
        "Ag",
        &text(theme.subtitle, TEXT, HPos::Left, VPos::Top),
    )
    .1;
    let cy = theme.px(12.0) + title_h as i32 / 2;
    let (box_w, half, gap) = (theme.px(18.0), theme.px(6.0), theme.px(5.0));
    let width = |t: &str| text_size(area, t, &style).0 as i32;
    let steps = SHADE_KEY.len() as i32;
    let ramp = gap * 2 + width("0%") + gap + steps * box_w + gap + width("100%");
    let right = w as i32 - p.margin_right as i32;
    let label = [
        "shading: fraction of the bucket ejected, mean over runs",
        "shading: fraction of the bucket ejected",
        "ejected",
    ]
    .into_iter()
    .find(|l| right - width(l) - ramp > title_end + theme.px(16.0))
    .unwrap_or("");
    let mut x = right - width(label) - ramp;
    if !label.is_empty() {
        area.draw_text(label, &style, (x, cy))?;
    }
    x += width(label) + gap * 2;
    area.draw_text("0%", &style, (x, cy))?;
    x += width("0%") + gap;
    for f in SHADE_KEY {
        let color = SHADE_KEY_COLOR.mix(TimelineSpec::shade_alpha(f));
        area.draw(&Rectangle::new(
            [(x, cy - half), (x + box_w, cy + half)],
            color.filled(),
        ))?;
        x += box_w;
    }
    area.draw_text("100%", &style, (x + gap, cy))?;
    Ok(())
}

/// Points of a per-bucket series at bucket centres, `None` where there is no value.
fn centred<T: Copy>(
    t: &[f64],
    values: &[Option<T>],
    bucket: f64,
    y: impl Fn(T) -> Option<f64>,
) -> Vec<Option<(f64, f64)>> {
    t.iter()
        .zip(values)
        .map(|(t, v)| {
            let x = t + bucket / 2.0;
            let y = (*v).and_then(&y)?;
            (x.is_finite() && y.is_finite()).then_some((x, y))
        })
        .collect()
}

/// Draws a series' runs of consecutive values as lines (a lone value as a dot): the
/// gaps stay gaps.
fn draw_runs<DB: DrawingBackend>(
    area: &Plot<DB>,
    pts: &[Option<(f64, f64)>],
    color: RGBColor,
    width: f64,
    theme: &Theme,
    pattern: usize,
) -> DResult {
    let area = area.plotting_area();
    for run in pts.split(Option::is_none) {
        let run: Vec<(f64, f64)> = run.iter().flatten().copied().collect();
        if run.len() == 1 {
            area.draw(&Circle::new(run[0], theme.upx(width), color.filled()))?;
        } else if !run.is_empty() {
            draw_line(
                area,
                run,
                color.stroke_width(theme.upx(width)),
                theme,
                pattern,
            )?;
        }
    }
    Ok(())
}

/// Shades a per-bucket band `(lo, hi)` at bucket centres, run by run.
fn draw_band<DB: DrawingBackend>(
    area: &Plot<DB>,
    t: &[f64],
    band: &[Option<(f64, f64)>],
    bucket: f64,
    color: RGBColor,
    f: impl Fn(f64) -> Option<f64>,
) -> DResult {
    let area = area.plotting_area();
    let pts: Vec<Option<(f64, f64, f64)>> = t
        .iter()
        .zip(band)
        .map(|(t, b)| {
            let (lo, hi) = (*b)?;
            Some((t + bucket / 2.0, f(lo)?, f(hi)?))
        })
        .collect();
    for run in pts.split(Option::is_none) {
        let run: Vec<(f64, f64, f64)> = run.iter().flatten().copied().collect();
        if run.len() < 2 {
            continue;
        }
        let upper = run.iter().map(|p| (p.0, p.2));
        let lower = run.iter().rev().map(|p| (p.0, p.1));
        area.draw(&Polygon::new(
            upper.chain(lower).collect::<Vec<_>>(),
            color.mix(0.16).filled(),
        ))?;
    }
    Ok(())
}

impl TimelineSpec {
    fn has_band(&self) -> bool {
        self.latency_p99_band.iter().any(Option::is_some)
            || self
                .nodes
                .iter()
                .any(|n| n.share_band.iter().any(Option::is_some))
    }

    /// Nodes by colour and dash, then what the shading, bars and marks mean.
    fn legend(&self, empty: bool) -> Vec<LegendItem> {
        let mut legend: Vec<LegendItem> = self
            .nodes
            .iter()
            .take(NAMED_NODES)
            .enumerate()
            .map(|(i, n)| LegendItem::new(&n.name, Swatch::Dashed(palette(i), i, None)))
            .collect();
        if self.nodes.len() > NAMED_NODES {
            legend.push(LegendItem::new(
                format!("and {} more nodes", self.nodes.len() - NAMED_NODES),
                Swatch::Solid(WHITE),
            ));
        }
        if !empty {
            legend.push(LegendItem::new("fault window", Swatch::Shade(NO_DATA)));
            if self.has_band() && !self.band_label.is_empty() {
                legend.push(LegendItem::new(&self.band_label, Swatch::Shade(palette(0))));
            }
            legend.push(LegendItem::new("errors", Swatch::Solid(ERRORS)));
            legend.push(LegendItem::new("client timeouts", Swatch::Solid(TIMEOUTS)));
            legend.push(LegendItem::new("latency p99", Swatch::Line(P99, None)));
            legend.push(LegendItem::new("latency p50", Swatch::Dashed(P50, 1, None)));
        }
        legend
    }

    /// Splits `body` into the four panels: lanes sized by node count, the rest split
    /// between the three charts.
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
            .min(body_h * 30 / 100);
        let avail = (body_h - lane_h - x_area).max(0);
        let share_h = avail * 36 / 100;
        let latency_h = avail * 36 / 100;
        let (share, rest) = body.split_vertically(share_h);
        let (lanes, rest) = rest.split_vertically(lane_h);
        let (latency, counts) = rest.split_vertically(latency_h);
        let latency_log = self.latency_range();

        let max_count = finite_bounds(self.errors.iter().chain(&self.timeouts).copied())
            .map_or(0.0, |(_, hi)| hi);
        let count_top = (max_count * 1.12).max(1.0);
        let mut y_labels: Vec<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        y_labels.extend(["100%".to_string(), fmt_tick(count_top.ceil())]);
        y_labels.push(fmt_tick(10f64.powf(latency_log.end.floor())));
        y_labels.push(fmt_tick(10f64.powf(latency_log.start.ceil())));
        let label_style = text(theme.small, TEXT, HPos::Left, VPos::Center);
        let names_w = self
            .direct_labels()
            .iter()
            .map(|n| text_size(body, &n.name, &label_style).0)
            .max()
            .map_or(0, |w| w + theme.upx(10.0));
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
            margin_right: theme.upx(16.0).max(names_w),
        }
    }

    /// The nodes named at the end of their share line (few enough to read).
    fn direct_labels(&self) -> &[NodeTrack] {
        if self.nodes.len() <= NAMED_NODES && self.nodes.len() > 1 {
            &self.nodes
        } else {
            &[]
        }
    }

    /// The latency axis range in base-10 logarithms of milliseconds: the
    /// percentiles' span (and the client timeout) widened to whole decades
    /// (1 ms to 1 s without data).
    fn latency_range(&self) -> std::ops::Range<f64> {
        let values = self
            .latency_p50_ms
            .iter()
            .chain(&self.latency_p99_ms)
            .copied()
            .chain(self.latency_p99_band.iter().flatten().map(|b| Some(b.1)))
            .chain([self.client_timeout_ms])
            .flatten()
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

    /// (a) Traffic share per node (median line, band over replications), fault
    /// windows shaded and labelled, each line named at its end.
    fn draw_share<DB: DrawingBackend>(&self, p: &Panels<DB>) -> DResult {
        let (theme, span) = (p.theme, p.span);
        let highest = self.nodes.iter().flat_map(|n| {
            n.share
                .iter()
                .flatten()
                .copied()
                .chain(n.share_band.iter().flatten().map(|b| b.1))
        });
        let max_share = finite_bounds(highest).map_or(1.0, |(_, hi)| hi);
        let share_top = ((max_share * 1.1 * 10.0).ceil() / 10.0).clamp(0.1, 1.0);
        let area = p.title(&p.share, "traffic share per node (% of answered requests)")?;
        let mesh = MeshOpts {
            y_desc: "share (%)",
            y_labels: 6,
            ..MeshOpts::default()
        };
        let axes = (p.x_axis(), Axis::percent(0.0..share_top));
        let (chart, _) = plot(&area, theme, &p.layout(XLabels::Hidden), axes, mesh)?;
        let plot_area = chart.plotting_area();
        let label_style = text(theme.small, TEXT, HPos::Left, VPos::Top);
        let line_h = f64::from(text_size(&p.share, "Ag", &label_style).1) * 1.35;
        let (_, plot_h) = plot_area.dim_in_pixel();
        let row_frac = line_h / f64::from(plot_h.max(1)) * share_top;
        for (k, (i, (s, e), node, kind)) in self.faults(span).enumerate() {
            let color = palette(i);
            plot_area.draw(&Rectangle::new(
                [(s, 0.0), (e, share_top)],
                color.mix(0.13).filled(),
            ))?;
            plot_area.draw(&PathElement::new(
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
            plot_area.draw(&Text::new(label, (x, y), label_style.clone()))?;
        }
        for (i, node) in self.nodes.iter().enumerate() {
            draw_band(
                &chart,
                &self.t,
                &node.share_band,
                p.bucket,
                palette(i),
                Some,
            )?;
        }
        for (i, node) in self.nodes.iter().enumerate() {
            let pts = centred(&self.t, &node.share, p.bucket, Some);
            draw_runs(&chart, &pts, palette(i), 2.5, theme, i)?;
        }
        self.draw_names(&chart, p)
    }

    /// Names each share line just right of its last point, spread apart where
    /// lines end at the same share.
    fn draw_names<DB: DrawingBackend>(&self, chart: &Plot<DB>, p: &Panels<DB>) -> DResult {
        let nodes = self.direct_labels();
        let ends: Vec<Option<(f64, f64)>> = nodes
            .iter()
            .map(|n| {
                centred(&self.t, &n.share, p.bucket, Some)
                    .into_iter()
                    .flatten()
                    .last()
            })
            .collect();
        let area = chart.plotting_area();
        let base = area.get_base_pixel();
        let ys: Vec<i32> = ends
            .iter()
            .map(|e| e.map_or(0, |pt| chart.backend_coord(&pt).1 - base.1))
            .collect();
        let style = text(p.theme.small, TEXT, HPos::Left, VPos::Center);
        let gap = text_size(&p.share, "Ag", &style).1 as i32 + p.theme.px(2.0);
        let placed = spread_labels(&ys, gap);
        let flat = area.strip_coord_spec();
        let (w, _) = flat.dim_in_pixel();
        for (i, (node, end)) in nodes.iter().zip(&ends).enumerate() {
            if end.is_some() {
                let style = text(p.theme.small, palette(i), HPos::Left, VPos::Center);
                flat.draw_text(&node.name, &style, (w as i32 + p.theme.px(6.0), placed[i]))?;
            }
        }
        Ok(())
    }

    /// (b) Ejection lanes: faults as pale bands, ejections as solid bars (one
    /// replication) or as bars shaded by the share of the bucket ejected (over
    /// the replications).
    fn draw_lanes<DB: DrawingBackend>(&self, p: &Panels<DB>) -> DResult {
        let names: Vec<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        let exact = self.nodes.iter().any(|n| !n.ejections.is_empty())
            || self.nodes.iter().all(|n| n.ejected.is_empty());
        let title = if exact {
            "ejected by health checks (bars) vs injected faults (pale)"
        } else {
            "ejected by health checks vs injected faults (pale)"
        };
        let area = p.title(&p.lanes, title)?;
        if !exact {
            let style = text(p.theme.subtitle, TEXT, HPos::Left, VPos::Top);
            let title_end = p.y_area as i32 + text_size(&p.lanes, title, &style).0 as i32;
            draw_shade_key(p, title_end)?;
        }
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
            let bars: Vec<((f64, f64), f64)> = if exact {
                node.ejections
                    .iter()
                    .filter_map(|e| clamp_span(e.0, e.1, p.span))
                    .map(|s| (s, 1.0))
                    .collect()
            } else {
                self.t
                    .iter()
                    .zip(&node.ejected)
                    .filter(|(_, f)| **f > 0.0)
                    .filter_map(|(t, f)| Some((clamp_span(*t, t + p.bucket, p.span)?, *f)))
                    .collect()
            };
            for ((s, e), f) in bars {
                area.draw(&Rectangle::new(
                    [(s, y - 0.24), (e, y + 0.24)],
                    palette(i).mix(Self::shade_alpha(f)).filled(),
                ))?;
            }
        }
        Ok(())
    }

    /// The shading's scale: what an ejection bar's intensity means.
    fn shade_alpha(fraction: f64) -> f64 {
        0.2 + 0.8 * fraction.clamp(0.0, 1.0)
    }

    /// (c) Client latency per bucket: p99 and median of the requests that
    /// ended in it, timeouts included, on a log scale; the client timeout as a
    /// line and the buckets with client timeouts marked on top.
    fn draw_latency<DB: DrawingBackend>(&self, p: &Panels<DB>) -> DResult {
        let mut title =
            "client latency per bucket: p99 and median (ms, timeouts included; ▼ = client timeouts)"
                .to_string();
        if !self.latency_note.is_empty() {
            title = format!("{title}; {}", self.latency_note);
        }
        let area = p.title(&p.latency, &title)?;
        let mesh = MeshOpts {
            y_desc: "latency (ms)",
            y_labels: 5,
            ..MeshOpts::default()
        };
        let range = p.latency_log.clone();
        let axes = (p.x_axis(), Axis::log10(range.clone()));
        let (chart, _) = plot(&area, p.theme, &p.layout(XLabels::Hidden), axes, mesh)?;
        let plot_area = chart.plotting_area();
        for (_, (s, e), _, _) in self.faults(p.span) {
            plot_area.draw(&Rectangle::new(
                [(s, range.start), (e, range.end)],
                NO_DATA.mix(0.12).filled(),
            ))?;
        }
        let log = |v: f64| (v > 0.0).then(|| v.log10());
        if let Some(y) = self.client_timeout_ms.and_then(log) {
            draw_line(
                plot_area,
                vec![(p.span.0, y), (p.span.1, y)],
                TIMEOUTS.stroke_width(p.theme.upx(1.5)),
                p.theme,
                2,
            )?;
            let style = text(p.theme.small, MUTED, HPos::Left, VPos::Bottom);
            let label = format!(
                "client timeout {}",
                fmt_duration_ms(self.client_timeout_ms.unwrap_or_default())
            );
            let x = p.span.0 + (p.span.1 - p.span.0) * 0.005;
            plot_area.draw(&Text::new(label, (x, y), style))?;
        }
        draw_band(&chart, &self.t, &self.latency_p99_band, p.bucket, P99, log)?;
        let p50 = centred(&self.t, &self.latency_p50_ms, p.bucket, log);
        let p99 = centred(&self.t, &self.latency_p99_ms, p.bucket, log);
        // The median over the p99: where they coincide, its dashes stay visible.
        draw_runs(&chart, &p99, P99, 2.0, p.theme, 0)?;
        draw_runs(&chart, &p50, P50, 2.0, p.theme, 1)?;
        let r = p.theme.px(6.0);
        for (t, n) in self.t.iter().zip(&self.timeouts) {
            if *n > 0.0 && t.is_finite() {
                let at = (t + p.bucket / 2.0, range.end);
                let tri = vec![(-r, 0), (r, 0), (0, r + r / 2)];
                plot_area.draw(&(EmptyElement::at(at) + Polygon::new(tri, TEXT.filled())))?;
            }
        }
        Ok(())
    }

    /// (d) Client errors and timeouts per bucket, side by side within each bucket.
    fn draw_counts<DB: DrawingBackend>(&self, p: &Panels<DB>) -> DResult {
        let (bucket, count_top) = (p.bucket, p.count_top);
        let area = p.title(&p.counts, "client errors and timeouts per bucket")?;
        let y_desc = format!("requests per {}", fmt_duration_ms(bucket * 1000.0));
        let mesh = MeshOpts {
            x_desc: "time (s)",
            y_desc: &y_desc,
            y_labels: 5,
            ..MeshOpts::default()
        };
        let axes = (p.x_axis(), Axis::int(0.0..count_top));
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
                if let Some(&c) = count.filter(|c| **c > 0.0 && c.is_finite()) {
                    area.draw(&Rectangle::new(
                        [(x0, 0.0), (x0 + bucket / 2.0, c)],
                        color.filled(),
                    ))?;
                }
            }
        }
        Ok(())
    }
}

/// A duration given in ms as people write it: `500 ms`, `1 s`, `2.5 s`, `2 min`.
pub(crate) fn fmt_duration_ms(ms: f64) -> String {
    if ms < 1000.0 {
        format!("{} ms", fmt_tick(ms))
    } else if ms < 120_000.0 {
        format!("{} s", fmt_tick(ms / 1000.0))
    } else {
        format!("{} min", fmt_tick(ms / 60_000.0))
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
