//! A sweep's charts: heatmaps over two axes, lines over one, and
//! distributions over the replications of every point, read from
//! `results.json`. A zipped axis is one axis (its columns vary together);
//! the axes a chart does not show make slices, one chart each, so that no
//! point is left out.

use super::{Drawn, axis_scale, capitalized, draw_distribution, plot_err, runs, slug};
use crate::error::Error;
use crate::metrics::path::node_metric;
use crate::output::sweep::{PointResult, SweepResults};
use crate::output::vocabulary::{self, Unit};
use crate::plot::{self, DistributionSpec};
use crate::spec::ChartSpec;
use crate::spec::charts::{Band, DistStyle, ScaleName, StatName};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Label of one axis value: strings as they are, numbers without trailing zeros.
fn value_label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Null => "–".into(),
        other => other.to_string(),
    }
}

/// A numeric x for line charts: numbers, and durations in seconds.
fn value_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => crate::engine::time::parse_duration(s)
            .ok()
            .map(|d| d.as_secs_f64()),
        _ => None,
    }
}

/// An axis of the grid as a reader sees it: one column, or the columns of a
/// zip, which take their values together.
#[derive(Clone, Debug, PartialEq)]
struct GridAxis {
    columns: Vec<String>,
}

impl GridAxis {
    /// `client timeout`, `proxy_connect_timeout / proxy_read_timeout`.
    fn label(&self) -> String {
        self.columns
            .iter()
            .map(|c| vocabulary::param(c).name)
            .collect::<Vec<_>>()
            .join(" / ")
    }

    fn key(&self, p: &PointResult) -> Vec<Value> {
        self.columns.iter().map(|c| p.value(c).clone()).collect()
    }

    /// A point's value on this axis: `5s`, `500ms / 500ms`.
    fn text(&self, p: &PointResult) -> String {
        self.columns
            .iter()
            .map(|c| value_label(p.value(c)))
            .collect::<Vec<_>>()
            .join(" / ")
    }

    /// The axis's values in the order they first appear: one point of each.
    fn values<'a>(&self, r: &'a SweepResults) -> Vec<&'a PointResult> {
        let mut seen: Vec<Vec<Value>> = vec![];
        let mut out = vec![];
        for p in &r.points {
            let k = self.key(p);
            if !seen.contains(&k) {
                seen.push(k);
                out.push(p);
            }
        }
        out
    }

    /// `fault: hang`.
    fn describe(&self, p: &PointResult) -> String {
        format!("{}: {}", self.label(), self.text(p))
    }
}

/// The grid's axes: consecutive columns whose values determine each other
/// (a zip) are one axis.
fn grid_axes(r: &SweepResults) -> Vec<GridAxis> {
    let mut out: Vec<GridAxis> = vec![];
    for col in &r.axes {
        let zipped = out
            .last()
            .is_some_and(|last| r.points.len() > 1 && determine_each_other(r, last, col));
        match out.last_mut() {
            Some(last) if zipped => last.columns.push(col.clone()),
            _ => out.push(GridAxis {
                columns: vec![col.clone()],
            }),
        }
    }
    out
}

/// Whether the values of `col` and of `axis` determine each other over the points.
fn determine_each_other(r: &SweepResults, axis: &GridAxis, col: &str) -> bool {
    let mut forward: BTreeMap<String, String> = BTreeMap::new();
    let mut backward: BTreeMap<String, String> = BTreeMap::new();
    r.points.iter().all(|p| {
        let a = format!("{:?}", axis.key(p));
        let b = p.value(col).to_string();
        let f = forward.entry(a.clone()).or_insert_with(|| b.clone());
        let g = backward.entry(b.clone()).or_insert_with(|| a.clone());
        *f == b && *g == a
    })
}

/// The charts drawn when a sweep names none: for the first faulty node (or
/// the first node), its share, ejected time and first ejection delay, and the
/// clients' errors — as heatmaps over the first two axes (a slice for each
/// value of the others), or lines over one.
pub fn default_sweep_charts(results: &SweepResults) -> Vec<ChartSpec> {
    let axes = grid_axes(results);
    let node = results.model["faults"][0]["node"]
        .as_str()
        .or_else(|| results.model["nodes"][0]["name"].as_str())
        .unwrap_or("A")
        .to_string();
    let wanted: Vec<String> = [
        node_metric(&node, "share"),
        node_metric(&node, "ejected_time_s"),
        node_metric(&node, "first_ejection_delay_s"),
        "client.errors".to_string(),
        "client.timeouts".to_string(),
    ]
    .into_iter()
    .filter(|m| results.metrics.contains(m))
    // A chart of zeros (no client errors anywhere) says nothing.
    .filter(|m| {
        results.points.iter().any(|p| {
            p.stats
                .get(m)
                .and_then(|s| s.median)
                .is_some_and(|v| v != 0.0)
        })
    })
    .collect();
    match axes.len() {
        0 => vec![],
        1 => wanted
            .into_iter()
            .map(|metric| ChartSpec::Lines {
                metric,
                x: axes[0].columns[0].clone(),
                series: None,
                band: Band::P5P95,
                scale: ScaleName::Auto,
                y_scale: ScaleName::Auto,
            })
            .collect(),
        _ => wanted
            .into_iter()
            .map(|metric| ChartSpec::Heatmap {
                metric,
                x: axes[1].columns[0].clone(),
                y: axes[0].columns[0].clone(),
                stat: StatName::Median,
                scale: ScaleName::Auto,
            })
            .collect(),
    }
}

/// The `--set` overrides of a sweep: its file's `set`, then the command's.
fn overrides(r: &SweepResults) -> Vec<String> {
    let mut out: Vec<String> = r.definition["set"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", value_label(v)))
                .collect()
        })
        .unwrap_or_default();
    let words: Vec<&str> = r.command.split_whitespace().collect();
    for w in words.windows(2) {
        if w[0] == "--set" {
            out.push(w[1].trim_matches('\'').trim_matches('"').to_string());
        }
    }
    out
}

/// What every chart of one sweep shares.
struct Sweep<'a> {
    results: &'a SweepResults,
    axes: Vec<GridAxis>,
    /// `results.json`, for errors.
    path: PathBuf,
    caption: String,
    charts_dir: PathBuf,
}

/// The points of one slice: those with the given values on the axes a chart
/// does not show.
struct Slice<'a> {
    /// `fault: hang, interval: 500ms`; empty when the chart shows every axis.
    label: String,
    points: Vec<&'a PointResult>,
}

impl<'a> Sweep<'a> {
    fn bad(&self, field: String, reason: String) -> Error {
        Error::Invalid {
            path: self.path.clone(),
            field,
            reason,
        }
    }

    fn axis(&self, a: &str, i: usize, f: &str) -> Result<&GridAxis, Error> {
        self.axes
            .iter()
            .find(|g| g.columns.iter().any(|c| c == a))
            .ok_or_else(|| {
                self.bad(
                    format!("definition.charts[{i}].{f}"),
                    format!("no axis `{a}` (axes are {})", self.results.axes.join(", ")),
                )
            })
    }

    fn known_metric(&self, m: &str, i: usize) -> Result<(), Error> {
        if self.results.metrics.iter().any(|x| x == m) {
            Ok(())
        } else {
            Err(self.bad(
                format!("definition.charts[{i}].metric"),
                format!("no metric `{m}` in runs.csv"),
            ))
        }
    }

    /// The slices over the axes not in `shown`, in the order of the points.
    fn slices(&self, shown: &[&GridAxis]) -> Vec<Slice<'a>> {
        let others: Vec<&GridAxis> = self.axes.iter().filter(|g| !shown.contains(g)).collect();
        let mut out: Vec<(Vec<Vec<Value>>, Slice)> = vec![];
        for p in &self.results.points {
            let key: Vec<Vec<Value>> = others.iter().map(|g| g.key(p)).collect();
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some((_, s)) => s.points.push(p),
                None => out.push((
                    key,
                    Slice {
                        label: others
                            .iter()
                            .map(|g| g.describe(p))
                            .collect::<Vec<_>>()
                            .join(", "),
                        points: vec![p],
                    },
                )),
            }
        }
        out.into_iter().map(|(_, s)| s).collect()
    }

    /// The stem of a chart, with its slice when there are several.
    fn stem(&self, base: String, slice: &Slice, slices: usize) -> PathBuf {
        if slices > 1 {
            self.charts_dir
                .join(format!("{base}--{}", slug(&slice.label)))
        } else {
            self.charts_dir.join(base)
        }
    }

    fn caption(&self, slice: &Slice) -> String {
        if slice.label.is_empty() {
            self.caption.clone()
        } else {
            format!("{} · slice {}", self.caption, slice.label)
        }
    }

    /// A metric over two axes, one chart per slice of the others, all on one colour scale.
    fn heatmap(
        &self,
        i: usize,
        metric: &str,
        (x, y): (&str, &str),
        stat: StatName,
        scale: ScaleName,
    ) -> Result<Vec<Drawn>, Error> {
        let gx = self.axis(x, i, "x")?;
        let gy = self.axis(y, i, "y")?;
        self.known_metric(metric, i)?;
        let r = self.results;
        let value = |p: &PointResult| p.stats.get(metric)?.get(stat.key());
        let term = vocabulary::metric(metric);
        let shown = term.unit.shown(r.points.iter().filter_map(value));
        let bounds = crate::plot::finite_bounds_of(r.points.iter().filter_map(value));
        let xs = gx.values(r);
        let ys = gy.values(r);
        let slices = self.slices(&[gx, gy]);
        let mut drawn = vec![];
        for slice in &slices {
            let cell = |px: &PointResult, py: &PointResult| {
                slice
                    .points
                    .iter()
                    .find(|p| gx.key(p) == gx.key(px) && gy.key(p) == gy.key(py))
                    .and_then(|p| value(p))
                    .map(|v| v * shown.factor)
            };
            let mut title = format!(
                "{} — {} of {} per cell",
                term.full(),
                vocabulary::stat(stat.key()),
                runs(r.reps as usize)
            );
            if !slice.label.is_empty() {
                title += &format!(" — {}", slice.label);
            }
            let h = plot::HeatmapSpec {
                title,
                caption: self.caption(slice),
                x_label: gx.label(),
                y_label: gy.label(),
                value_label: term.label(&shown),
                x: xs.iter().map(|p| gx.text(p)).collect(),
                y: ys.iter().map(|p| gy.text(p)).collect(),
                cells: ys
                    .iter()
                    .map(|py| xs.iter().map(|px| cell(px, py)).collect())
                    .collect(),
                range: bounds.map(|(lo, hi)| (lo * shown.factor, hi * shown.factor)),
                scale: axis_scale(scale),
                format: shown.format,
                size: None,
            };
            let stem = self.stem(format!("heatmap-{}", slug(metric)), slice, slices.len());
            plot::heatmap(&h, &stem).map_err(plot_err)?;
            drawn.push(Drawn {
                title: h.title,
                stem,
                metric: Some(metric.to_string()),
            });
        }
        Ok(drawn)
    }

    /// A metric against one axis, a line per value of `series`, with a band;
    /// one chart per slice of the other axes.
    fn lines(&self, i: usize, metric: &str, spec: &LinesChart) -> Result<Vec<Drawn>, Error> {
        let gx = self.axis(spec.x, i, "x")?;
        let gs = match spec.series {
            Some(s) => Some(self.axis(s, i, "series")?),
            None => None,
        };
        self.known_metric(metric, i)?;
        let r = self.results;
        let xs = gx.values(r);
        let first = &gx.columns[0];
        let numeric = xs.iter().all(|p| value_number(p.value(first)).is_some());
        let x_term = vocabulary::param(first);
        let x_unit = if xs.iter().any(|p| p.value(first).is_string()) && numeric {
            Unit::Seconds
        } else {
            x_term.unit
        };
        let x_shown = x_unit.shown(xs.iter().filter_map(|p| value_number(p.value(first))));
        let term = vocabulary::metric(metric);
        let shown = term
            .unit
            .shown(r.points.iter().filter_map(|p| p.stats.get(metric)?.median));
        let (lo_key, hi_key, band_label) = match spec.band {
            Band::P5P95 => ("p5", "p95", "p5–p95 over the runs"),
            Band::MinMax => ("min", "max", "min–max over the runs"),
        };
        let point = |p: &PointResult| {
            let st = p.stats.get(metric)?;
            let m = st.median?;
            let xval = if numeric {
                plot::XValue::Num(value_number(p.value(first))? * x_shown.factor)
            } else {
                plot::XValue::Cat(gx.text(p))
            };
            let f = shown.factor;
            Some(plot::Point::new(
                xval,
                m * f,
                st.get(lo_key).unwrap_or(m) * f,
                st.get(hi_key).unwrap_or(m) * f,
            ))
        };
        let shown_axes: Vec<&GridAxis> = [Some(gx), gs].into_iter().flatten().collect();
        let slices = self.slices(&shown_axes);
        let mut drawn = vec![];
        for slice in &slices {
            let groups: Vec<Option<&PointResult>> = match gs {
                Some(g) => g.values(r).into_iter().map(Some).collect(),
                None => vec![None],
            };
            let series = groups
                .iter()
                .map(|g| plot::Series {
                    name: match (g, gs) {
                        (Some(gv), Some(ga)) if ga.label() == "policy" => ga.text(gv),
                        (Some(gv), Some(ga)) => ga.describe(gv),
                        _ => term.name.clone(),
                    },
                    points: slice
                        .points
                        .iter()
                        .filter(|p| match (g, gs) {
                            (Some(gv), Some(ga)) => ga.key(p) == ga.key(gv),
                            _ => true,
                        })
                        .filter_map(|p| point(p))
                        .collect(),
                })
                .collect();
            let mut title = format!(
                "{} by {} — median of {}",
                term.full(),
                gx.label(),
                runs(r.reps as usize)
            );
            if !slice.label.is_empty() {
                title += &format!(" — {}", slice.label);
            }
            let x_label = if numeric {
                vocabulary::Term {
                    name: gx.label(),
                    ..x_term.clone()
                }
                .label(&x_shown)
            } else {
                gx.label()
            };
            let l = plot::LinesSpec {
                title,
                caption: self.caption(slice),
                x_label,
                y_label: term.label(&shown),
                series,
                y_from_zero: true,
                band_label: band_label.into(),
                x_scale: axis_scale(spec.scale),
                y_scale: axis_scale(spec.y_scale),
                y_integer: term.unit == Unit::Count,
                size: None,
            };
            let base = format!("lines-{}-vs-{}", slug(metric), slug(spec.x));
            let stem = self.stem(base, slice, slices.len());
            plot::lines(&l, &stem).map_err(plot_err)?;
            drawn.push(Drawn {
                title: l.title,
                stem,
                metric: Some(metric.to_string()),
            });
        }
        Ok(drawn)
    }

    /// A metric over the replications of every point: boxes labelled by the
    /// last axis, grouped and coloured by the others.
    fn distribution(
        &self,
        i: usize,
        metric: &str,
        style: DistStyle,
        scale: ScaleName,
    ) -> Result<Drawn, Error> {
        self.known_metric(metric, i)?;
        let r = self.results;
        // One metric of every run, read from the file (the runs are not held).
        let mut by_point: Vec<Vec<f64>> = vec![vec![]; r.points.len()];
        for (point, value) in SweepResults::run_values(&self.path, metric)? {
            if let (Some(slot), Some(v)) = (by_point.get_mut(point), value) {
                slot.push(v);
            }
        }
        let (last, outer) = match self.axes.split_last() {
            Some((l, o)) => (Some(l), o),
            None => (None, &[][..]),
        };
        let mut clusters: Vec<(String, usize)> = vec![];
        let mut groups = vec![];
        for (p, vals) in r.points.iter().zip(by_point) {
            let name = last.map_or_else(|| p.point.to_string(), |g| g.text(p));
            groups.push((name, vals));
            if outer.is_empty() {
                continue;
            }
            let label = outer
                .iter()
                .map(|g| g.describe(p))
                .collect::<Vec<_>>()
                .join(", ");
            match clusters.last_mut() {
                Some((l, n)) if *l == label => *n += 1,
                _ => clusters.push((label, 1)),
            }
        }
        let (value_label, _, groups) = super::shown_groups(metric, groups);
        let term = vocabulary::metric(metric);
        let d = DistributionSpec {
            title: format!(
                "{} — {} per point",
                capitalized(&term.full()),
                runs(r.reps as usize)
            ),
            caption: self.caption.clone(),
            group_label: last.map(GridAxis::label).unwrap_or_default(),
            value_label,
            groups,
            clusters,
            scale: axis_scale(scale),
            ..DistributionSpec::default()
        };
        draw_distribution(d, style, &self.charts_dir, metric)
    }
}

/// The fields of a lines chart.
struct LinesChart<'a> {
    x: &'a str,
    series: Option<&'a str>,
    band: Band,
    scale: ScaleName,
    y_scale: ScaleName,
}

/// The charts of a sweep: those its definition names, or the defaults.
/// `path` is its `results.json`, for errors.
pub fn sweep_chart_specs(results: &SweepResults, path: &Path) -> Result<Vec<ChartSpec>, Error> {
    match results.definition.get("charts") {
        Some(c) if c.as_array().is_some_and(|a| !a.is_empty()) => serde_json::from_value(c.clone())
            .map_err(|e| Error::Parse {
                path: path.to_path_buf(),
                field: "definition.charts".into(),
                msg: e.to_string(),
            }),
        _ => Ok(default_sweep_charts(results)),
    }
}

/// Where a sweep's charts come from, for their footers.
pub fn provenance(results: &SweepResults) -> String {
    let mut parts = vec![
        format!("sweep {}", results.sweep),
        format!(
            "{} points × {} each",
            results.points.len(),
            runs(results.reps as usize)
        ),
        format!("seed {} ({} seeds)", results.seed, results.seeds.name()),
    ];
    let set = overrides(results);
    if !set.is_empty() {
        parts.push(format!("--set {}", set.join(" --set ")));
    }
    parts.push(format!("hcsim {}", results.hcsim_version));
    parts.join(" · ")
}

/// Draws the charts of a sweep output directory (from `results.json`).
pub fn draw_sweep(dir: &Path) -> Result<Vec<Drawn>, Error> {
    let path = dir.join("results.json");
    let results = SweepResults::read(&path)?;
    let specs = sweep_chart_specs(&results, &path)?;
    let sweep = Sweep {
        caption: provenance(&results),
        axes: grid_axes(&results),
        results: &results,
        path,
        charts_dir: dir.join("charts"),
    };
    let mut drawn = vec![];
    for (i, spec) in specs.iter().enumerate() {
        match spec {
            ChartSpec::Heatmap {
                metric,
                x,
                y,
                stat,
                scale,
            } => drawn.extend(sweep.heatmap(i, metric, (x, y), *stat, *scale)?),
            ChartSpec::Lines {
                metric,
                x,
                series,
                band,
                scale,
                y_scale,
            } => {
                let l = LinesChart {
                    x,
                    series: series.as_deref(),
                    band: *band,
                    scale: *scale,
                    y_scale: *y_scale,
                };
                drawn.extend(sweep.lines(i, metric, &l)?);
            }
            ChartSpec::Distribution {
                metric,
                style,
                scale,
            } => drawn.push(sweep.distribution(i, metric, *style, *scale)?),
            ChartSpec::Timeline { .. } => {
                return Err(sweep.bad(
                    format!("definition.charts[{i}]"),
                    "a timeline shows one run: draw it with hcsim run on the model".into(),
                ));
            }
        }
    }
    Ok(drawn)
}
