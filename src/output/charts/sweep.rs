//! A sweep's charts: heatmaps over two axes, lines over one, and
//! distributions over the replications of every point, read from `results.json`.

use super::{Drawn, draw_distribution, metric_title, plot_err};
use crate::error::Error;
use crate::output::sweep::{PointResult, SweepResults};
use crate::plot::{self, DistributionSpec};
use crate::spec::ChartSpec;
use crate::spec::charts::{Band, DistStyle, StatName};
use serde_json::Value;
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

/// `max_fails=3, fail_timeout=5s`: a point by the last part of each axis.
fn point_label(point: &PointResult, axes: &[String]) -> String {
    axes.iter()
        .map(|a| {
            let short = a.rsplit('.').next().unwrap_or(a);
            format!("{short}={}", value_label(point.value(a)))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The charts drawn when a sweep names none: for the first faulty node (or
/// the first node), its share, ejected time and first ejection delay, and the
/// clients' errors — as heatmaps over the first two axes, or lines over one.
pub fn default_sweep_charts(results: &SweepResults) -> Vec<ChartSpec> {
    let axes = &results.axes;
    let node = results.model["faults"][0]["node"]
        .as_str()
        .or_else(|| results.model["nodes"][0]["name"].as_str())
        .unwrap_or("A")
        .to_string();
    let wanted: Vec<String> = [
        format!("nodes.{node}.share"),
        format!("nodes.{node}.ejected_time_s"),
        format!("nodes.{node}.first_ejection_delay_s"),
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
                x: axes[0].clone(),
                series: None,
                band: Band::P5P95,
            })
            .collect(),
        _ => wanted
            .into_iter()
            .map(|metric| ChartSpec::Heatmap {
                metric,
                x: axes[1].clone(),
                y: axes[0].clone(),
                stat: StatName::Median,
            })
            .collect(),
    }
}

/// What every chart of one sweep shares.
struct Sweep<'a> {
    results: &'a SweepResults,
    /// `results.json`, for errors.
    path: PathBuf,
    caption: String,
    charts_dir: PathBuf,
}

impl Sweep<'_> {
    fn bad(&self, field: String, reason: String) -> Error {
        Error::Invalid {
            path: self.path.clone(),
            field,
            reason,
        }
    }

    fn known_axis(&self, a: &str, i: usize, f: &str) -> Result<(), Error> {
        let axes = &self.results.axes;
        if axes.iter().any(|x| x == a) {
            Ok(())
        } else {
            Err(self.bad(
                format!("definition.charts[{i}].{f}"),
                format!("no axis `{a}` (axes are {})", axes.join(", ")),
            ))
        }
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

    fn name(&self) -> &str {
        &self.results.sweep
    }

    /// A metric over two axes; other axes are held at their first value.
    fn heatmap(
        &self,
        i: usize,
        metric: &str,
        x: &str,
        y: &str,
        stat: StatName,
    ) -> Result<Drawn, Error> {
        self.known_axis(x, i, "x")?;
        self.known_axis(y, i, "y")?;
        self.known_metric(metric, i)?;
        let r = self.results;
        let xs = r.axis_values(x);
        let ys = r.axis_values(y);
        let fixed: Vec<(&String, Value)> = r
            .axes
            .iter()
            .filter(|a| *a != x && *a != y)
            .map(|a| {
                (
                    a,
                    r.axis_values(a).into_iter().next().unwrap_or(Value::Null),
                )
            })
            .collect();
        let cell = |xv: &Value, yv: &Value| {
            r.points
                .iter()
                .find(|p| {
                    p.value(x) == xv
                        && p.value(y) == yv
                        && fixed.iter().all(|(a, v)| p.value(a) == v)
                })
                .and_then(|p| p.stats.get(metric)?.get(stat.key()))
        };
        let cells = ys
            .iter()
            .map(|yv| xs.iter().map(|xv| cell(xv, yv)).collect())
            .collect();
        let held = if fixed.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                fixed
                    .iter()
                    .map(|(a, v)| format!("{a}={}", value_label(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let h = plot::HeatmapSpec {
            title: format!("{} of {metric} — {}{held}", stat.key(), self.name()),
            caption: self.caption.clone(),
            x_label: x.to_string(),
            y_label: y.to_string(),
            value_label: metric_title(metric),
            x: xs.iter().map(value_label).collect(),
            y: ys.iter().map(value_label).collect(),
            cells,
            ..Default::default()
        };
        let stem = self
            .charts_dir
            .join(format!("heatmap-{}", metric.replace('.', "-")));
        plot::heatmap(&h, &stem).map_err(plot_err)?;
        Ok(Drawn {
            title: h.title,
            stem,
        })
    }

    /// A metric against one axis, a line per value of `series`, with a band.
    fn lines(
        &self,
        i: usize,
        metric: &str,
        x: &str,
        series: Option<&str>,
        band: Band,
    ) -> Result<Drawn, Error> {
        self.known_axis(x, i, "x")?;
        if let Some(sr) = series {
            self.known_axis(sr, i, "series")?;
        }
        self.known_metric(metric, i)?;
        let r = self.results;
        let xs = r.axis_values(x);
        let numeric = xs.iter().all(|v| value_number(v).is_some());
        let groups: Vec<Option<Value>> = match series {
            Some(sr) => r.axis_values(sr).into_iter().map(Some).collect(),
            None => vec![None],
        };
        let (lo_key, hi_key, band_label) = match band {
            Band::P5P95 => ("p5", "p95", "p5–p95 over replications"),
            Band::MinMax => ("min", "max", "min–max over replications"),
        };
        let point = |p: &PointResult| {
            let st = p.stats.get(metric)?;
            let m = st.median?;
            let xv = p.value(x);
            let xval = if numeric {
                plot::XValue::Num(value_number(xv)?)
            } else {
                plot::XValue::Cat(value_label(xv))
            };
            Some(plot::Point::new(
                xval,
                m,
                st.get(lo_key).unwrap_or(m),
                st.get(hi_key).unwrap_or(m),
            ))
        };
        let series_out = groups
            .iter()
            .map(|g| plot::Series {
                name: match (g, series) {
                    (Some(gv), Some(sr)) => format!(
                        "{}={}",
                        sr.rsplit('.').next().unwrap_or(sr),
                        value_label(gv)
                    ),
                    _ => metric.to_string(),
                },
                points: r
                    .points
                    .iter()
                    .filter(|p| match (g, series) {
                        (Some(gv), Some(sr)) => p.value(sr) == gv,
                        _ => true,
                    })
                    .filter_map(point)
                    .collect(),
            })
            .collect();
        let l = plot::LinesSpec {
            title: format!("{metric} vs {x} — {}", self.name()),
            caption: self.caption.clone(),
            x_label: if numeric && xs.iter().any(Value::is_string) {
                format!("{x} (s)")
            } else {
                x.to_string()
            },
            y_label: metric_title(metric),
            series: series_out,
            y_from_zero: true,
            band_label: band_label.into(),
            size: None,
        };
        let stem = self.charts_dir.join(format!(
            "lines-{}-vs-{}",
            metric.replace('.', "-"),
            x.replace('.', "-")
        ));
        plot::lines(&l, &stem).map_err(plot_err)?;
        Ok(Drawn {
            title: l.title,
            stem,
        })
    }

    /// A metric over the replications of every point.
    fn distribution(&self, i: usize, metric: &str, style: DistStyle) -> Result<Drawn, Error> {
        self.known_metric(metric, i)?;
        let r = self.results;
        // One metric of every run, read from the file (the runs are not held).
        let mut by_point: Vec<Vec<f64>> = vec![vec![]; r.points.len()];
        for (point, value) in SweepResults::run_values(&self.path, metric)? {
            if let (Some(slot), Some(v)) = (by_point.get_mut(point), value) {
                slot.push(v);
            }
        }
        let groups = r
            .points
            .iter()
            .zip(by_point)
            .map(|(p, vals)| (point_label(p, &r.axes), vals))
            .collect();
        let d = DistributionSpec {
            title: format!("{metric} over replications — {}", self.name()),
            caption: self.caption.clone(),
            group_label: "point".into(),
            value_label: metric_title(metric),
            groups,
            size: None,
        };
        draw_distribution(d, style, &self.charts_dir, metric)
    }
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

/// Draws the charts of a sweep output directory (from `results.json`).
pub fn draw_sweep(dir: &Path) -> Result<Vec<Drawn>, Error> {
    let path = dir.join("results.json");
    let results = SweepResults::read(&path)?;
    let specs = sweep_chart_specs(&results, &path)?;
    let sweep = Sweep {
        caption: format!(
            "sweep {} · {} points × {} reps · seed {} ({} seeds) · hcsim {}",
            results.sweep,
            results.points.len(),
            results.reps,
            results.seed,
            results.seeds.name(),
            results.hcsim_version
        ),
        results: &results,
        path,
        charts_dir: dir.join("charts"),
    };
    let mut drawn = vec![];
    for (i, spec) in specs.iter().enumerate() {
        drawn.push(match spec {
            ChartSpec::Heatmap { metric, x, y, stat } => sweep.heatmap(i, metric, x, y, *stat)?,
            ChartSpec::Lines {
                metric,
                x,
                series,
                band,
            } => sweep.lines(i, metric, x, series.as_deref(), *band)?,
            ChartSpec::Distribution { metric, style } => sweep.distribution(i, metric, *style)?,
            ChartSpec::Timeline { .. } => {
                return Err(sweep.bad(
                    format!("definition.charts[{i}]"),
                    "a timeline shows one run: draw it with hcsim run on the model".into(),
                ));
            }
        });
    }
    Ok(drawn)
}
