//! Charts of a finished run, drawn from its output files only (`summary.json`,
//! `timeline.csv`, `ejections.csv`), so `hcsim plot DIR` redraws them without
//! re-simulating. The drawing itself lives in [`crate::plot`].

use crate::error::Error;
use crate::plot::{self, DistributionSpec, NodeTrack, TimelineSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A chart a model (or sweep) asks for; `kind` is the tag.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ChartSpec {
    /// One replication over time: share per node, fault windows, ejections, client errors.
    #[serde(deserialize_with = "chart_body::timeline")]
    Timeline {
        /// Which replication (0-based). Default 0.
        #[serde(default)]
        rep: usize,
    },
    /// A metric over the replications: one box (or CDF curve) per node in a
    /// run, per point in a sweep.
    #[serde(deserialize_with = "chart_body::distribution")]
    Distribution {
        /// In a run: a node metric (`share`, `first_ejection_delay_s`,
        /// `recovery_delay_s`, `ejected_time_s`, `ejections`, ...) or a client
        /// metric path (`client.latency_ms.p99`). In a sweep: a column of
        /// `runs.csv` (`nodes.A.first_ejection_delay_s`).
        metric: String,
        /// `box` (default) or `cdf`.
        #[serde(default)]
        style: DistStyle,
    },
    /// Sweeps: a metric over two axes, the value printed in each cell.
    #[serde(deserialize_with = "chart_body::heatmap")]
    Heatmap {
        /// A column of `points.csv` without its statistic (`nodes.A.share`).
        metric: String,
        /// Axis paths (as in the sweep file) for columns and rows.
        x: String,
        y: String,
        /// Which statistic over the replications. Default `median`.
        #[serde(default)]
        stat: StatName,
    },
    /// Sweeps: a metric against one axis, one line per value of another, with
    /// a band over the replications.
    #[serde(deserialize_with = "chart_body::lines")]
    Lines {
        metric: String,
        x: String,
        /// The axis whose values make the lines; omitted: one line.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        series: Option<String>,
        /// `p5_p95` (default) or `min_max`.
        #[serde(default)]
        band: Band,
    },
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatName {
    #[default]
    Median,
    Mean,
    Min,
    Max,
    P5,
    P95,
}

impl StatName {
    fn key(self) -> &'static str {
        match self {
            StatName::Median => "median",
            StatName::Mean => "mean",
            StatName::Min => "min",
            StatName::Max => "max",
            StatName::P5 => "p5",
            StatName::P95 => "p95",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Band {
    #[default]
    P5P95,
    MinMax,
}

/// The bodies of `ChartSpec`'s variants, read with their own path tracker
/// (see [`crate::diagnostics`]) so that errors name the field.
mod chart_body {
    use super::{Band, DistStyle, StatName};
    use crate::diagnostics::tracked;
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Timeline {
        #[serde(default)]
        rep: usize,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Distribution {
        metric: String,
        #[serde(default)]
        style: DistStyle,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Heatmap {
        metric: String,
        x: String,
        y: String,
        #[serde(default)]
        stat: StatName,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Lines {
        metric: String,
        x: String,
        #[serde(default)]
        series: Option<String>,
        #[serde(default)]
        band: Band,
    }

    pub fn heatmap<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<(String, String, String, StatName), D::Error> {
        tracked::<_, Heatmap>(d).map(|b| (b.metric, b.x, b.y, b.stat))
    }
    pub fn lines<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<(String, String, Option<String>, Band), D::Error> {
        tracked::<_, Lines>(d).map(|b| (b.metric, b.x, b.series, b.band))
    }
    pub fn timeline<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
        tracked::<_, Timeline>(d).map(|b| b.rep)
    }
    pub fn distribution<'de, D: Deserializer<'de>>(d: D) -> Result<(String, DistStyle), D::Error> {
        tracked::<_, Distribution>(d).map(|b| (b.metric, b.style))
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DistStyle {
    #[default]
    Box,
    Cdf,
}

/// A chart that was drawn: `<stem>.png` and `<stem>.svg`.
#[derive(Clone, Debug)]
pub struct Drawn {
    pub title: String,
    pub stem: PathBuf,
}

fn plot_err(e: plot::PlotError) -> Error {
    Error::Write {
        path: e.path().to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    }
}

fn read_json(path: &Path) -> Result<Value, Error> {
    crate::scenario::read_document(path)
}

/// Units for axis labels.
fn metric_label(metric: &str) -> String {
    let unit = if metric.ends_with("_s") {
        " (s)"
    } else if metric.contains("latency_ms") {
        " (ms)"
    } else if metric == "share" {
        " (fraction of 2xx answers)"
    } else {
        ""
    };
    format!("{metric}{unit}")
}

/// Draws a box plot or CDF as `<charts_dir>/distribution-<metric>.{png,svg}`.
fn draw_distribution(
    d: DistributionSpec,
    style: DistStyle,
    charts_dir: &Path,
    metric: &str,
) -> Result<Drawn, Error> {
    let stem = charts_dir.join(format!("distribution-{}", metric.replace('.', "-")));
    match style {
        DistStyle::Box => plot::distribution(&d, &stem),
        DistStyle::Cdf => plot::distribution_cdf(&d, &stem),
    }
    .map_err(plot_err)?;
    Ok(Drawn {
        title: d.title,
        stem,
    })
}

/// The strings of a JSON array (e.g. a sweep's `axes`); empty if it is not one.
pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The charts drawn when a model names none.
pub fn default_charts(summary: &Value) -> Vec<ChartSpec> {
    let mut v = vec![ChartSpec::Timeline { rep: 0 }];
    let reps = summary["reps"].as_u64().unwrap_or(1);
    if reps >= 2 {
        v.push(ChartSpec::Distribution {
            metric: "share".into(),
            style: DistStyle::Box,
        });
        for m in ["first_ejection_delay_s", "recovery_delay_s"] {
            let any = summary["nodes"]
                .as_array()
                .is_some_and(|ns| ns.iter().any(|n| n[m]["n"].as_u64().unwrap_or(0) > 0));
            if any {
                v.push(ChartSpec::Distribution {
                    metric: m.into(),
                    style: DistStyle::Box,
                });
            }
        }
    }
    v
}

/// Draws the charts of a run output directory; returns what was drawn.
pub fn draw_run(dir: &Path) -> Result<Vec<Drawn>, Error> {
    let summary = read_json(&dir.join("summary.json"))?;
    let specs: Vec<ChartSpec> = match summary["model_spec"].get("charts") {
        Some(c) if c.as_array().is_some_and(|a| !a.is_empty()) => serde_json::from_value(c.clone())
            .map_err(|e| Error::Parse {
                path: dir.join("summary.json"),
                field: "model_spec.charts".into(),
                msg: e.to_string(),
            })?,
        _ => default_charts(&summary),
    };
    if let Some(bad) = specs
        .iter()
        .find(|c| matches!(c, ChartSpec::Heatmap { .. } | ChartSpec::Lines { .. }))
    {
        return Err(Error::Invalid {
            path: dir.join("summary.json"),
            field: "model_spec.charts".into(),
            reason: format!(
                "{bad:?} needs a sweep (axes); a run can draw timeline and distribution charts"
            ),
        });
    }
    let caption = format!(
        "model {} · seed {} · {} rep{} · hcsim {}",
        summary["model"].as_str().unwrap_or("?"),
        summary["seed"],
        summary["reps"],
        if summary["reps"].as_u64() == Some(1) {
            ""
        } else {
            "s"
        },
        summary["hcsim_version"].as_str().unwrap_or("?"),
    );
    let charts_dir = dir.join("charts");
    let mut drawn = vec![];
    for spec in &specs {
        match spec {
            ChartSpec::Timeline { rep } => {
                let t = timeline_spec(dir, &summary, *rep, &caption)?;
                let stem = charts_dir.join(format!("timeline-rep{rep}"));
                plot::timeline(&t, &stem).map_err(plot_err)?;
                drawn.push(Drawn {
                    title: t.title,
                    stem,
                });
            }
            ChartSpec::Heatmap { .. } | ChartSpec::Lines { .. } => {}
            ChartSpec::Distribution { metric, style } => {
                let d = distribution_spec(&summary, metric, &caption);
                drawn.push(draw_distribution(d, *style, &charts_dir, metric)?);
            }
        }
    }
    Ok(drawn)
}

fn distribution_spec(summary: &Value, metric: &str, caption: &str) -> DistributionSpec {
    let runs = summary["runs"].as_array().cloned().unwrap_or_default();
    let groups: Vec<(String, Vec<f64>)> = if let Some(path) = metric.strip_prefix("client.") {
        let vals = runs
            .iter()
            .filter_map(|r| {
                path.split('.')
                    .try_fold(&r["client"], |v, k| v.get(k))
                    .and_then(Value::as_f64)
            })
            .collect();
        vec![("clients".to_string(), vals)]
    } else {
        let names: Vec<String> = summary["nodes"]
            .as_array()
            .map(|ns| {
                ns.iter()
                    .map(|n| n["name"].as_str().unwrap_or("?").to_string())
                    .collect()
            })
            .unwrap_or_default();
        names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let vals = runs
                    .iter()
                    .filter_map(|r| r["nodes"][i][metric].as_f64())
                    .collect();
                (name.clone(), vals)
            })
            .collect()
    };
    DistributionSpec {
        title: format!(
            "{} over {} replications — {}",
            metric,
            runs.len(),
            summary["model"].as_str().unwrap_or("?")
        ),
        caption: caption.to_string(),
        group_label: if metric.starts_with("client.") {
            String::new()
        } else {
            "node".into()
        },
        value_label: metric_label(metric),
        groups,
        size: None,
    }
}

fn timeline_spec(
    dir: &Path,
    summary: &Value,
    rep: usize,
    caption: &str,
) -> Result<TimelineSpec, Error> {
    let names: Vec<String> = summary["nodes"]
        .as_array()
        .map(|ns| {
            ns.iter()
                .map(|n| n["name"].as_str().unwrap_or("?").to_string())
                .collect()
        })
        .unwrap_or_default();
    let csv_err = |path: PathBuf| {
        move |e: csv::Error| Error::Parse {
            path: path.clone(),
            field: String::new(),
            msg: e.to_string(),
        }
    };
    let tl_path = dir.join("timeline.csv");
    let mut rdr = csv::Reader::from_path(&tl_path).map_err(csv_err(tl_path.clone()))?;
    let headers = rdr.headers().map_err(csv_err(tl_path.clone()))?.clone();
    let col = |name: &str| headers.iter().position(|h| h == name);
    let (Some(c_rep), Some(c_t), Some(c_err), Some(c_to)) =
        (col("rep"), col("t_s"), col("errors"), col("timeouts"))
    else {
        return Err(Error::Parse {
            path: tl_path,
            field: String::new(),
            msg: "missing columns rep, t_s, errors or timeouts".into(),
        });
    };
    let answered: Vec<Option<usize>> = names
        .iter()
        .map(|n| col(&format!("{n}.answered")))
        .collect();
    let mut t = vec![];
    let mut errors = vec![];
    let mut timeouts = vec![];
    let mut counts: Vec<Vec<f64>> = vec![vec![]; names.len()];
    for rec in rdr.records() {
        let rec = rec.map_err(csv_err(tl_path.clone()))?;
        if rec.get(c_rep).and_then(|x| x.parse::<usize>().ok()) != Some(rep) {
            continue;
        }
        let num = |c: usize| {
            rec.get(c)
                .and_then(|x| x.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        t.push(num(c_t));
        errors.push(num(c_err) as u64);
        timeouts.push(num(c_to) as u64);
        for (i, c) in answered.iter().enumerate() {
            counts[i].push(c.map(num).unwrap_or(0.0));
        }
    }
    let totals: Vec<f64> = (0..t.len())
        .map(|b| counts.iter().map(|c| c[b]).sum())
        .collect();
    let mut ejections: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let ej_path = dir.join("ejections.csv");
    if ej_path.exists() {
        let mut rdr = csv::Reader::from_path(&ej_path).map_err(csv_err(ej_path.clone()))?;
        for rec in rdr.records() {
            let rec = rec.map_err(csv_err(ej_path.clone()))?;
            if rec.get(0).and_then(|x| x.parse::<usize>().ok()) != Some(rep) {
                continue;
            }
            let start = rec
                .get(4)
                .and_then(|x| x.parse::<f64>().ok())
                .unwrap_or(0.0);
            let end = rec
                .get(5)
                .and_then(|x| x.parse::<f64>().ok())
                .unwrap_or(f64::INFINITY);
            ejections
                .entry(rec.get(2).unwrap_or("").to_string())
                .or_default()
                .push((start, end));
        }
    }
    let duration = summary["runs"][rep]["duration_s"].as_f64().unwrap_or(0.0);
    let faults = summary["faults"].as_array().cloned().unwrap_or_default();
    let nodes = names
        .iter()
        .enumerate()
        .map(|(i, name)| NodeTrack {
            name: name.clone(),
            share: (0..t.len())
                .map(|b| {
                    if totals[b] > 0.0 {
                        counts[i][b] / totals[b]
                    } else {
                        0.0
                    }
                })
                .collect(),
            ejections: ejections.remove(name).unwrap_or_default(),
            faults: faults
                .iter()
                .filter(|f| f["node"].as_str() == Some(name))
                .map(|f| {
                    (
                        f["start_s"].as_f64().unwrap_or(0.0),
                        f["end_s"].as_f64().unwrap_or(duration),
                        f["kind"].as_str().unwrap_or("fault").to_string(),
                    )
                })
                .collect(),
        })
        .collect();
    let seed = summary["runs"][rep]["seed"].as_u64().unwrap_or(0);
    Ok(TimelineSpec {
        title: format!(
            "{} — replication {rep} (seed {seed})",
            summary["model"].as_str().unwrap_or("?")
        ),
        caption: caption.to_string(),
        bucket_s: t.get(1).map(|x| x - t[0]).unwrap_or(1.0),
        t,
        nodes,
        errors,
        timeouts,
        size: None,
    })
}

// ------------------------------------------------------------------ sweeps

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

/// The axis values in the order they first appear among the points.
fn axis_values(points: &[Value], axis: &str) -> Vec<Value> {
    let mut out: Vec<Value> = vec![];
    for p in points {
        let v = p["values"][axis].clone();
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn point_label(point: &Value, axes: &[String]) -> String {
    axes.iter()
        .map(|a| {
            let short = a.rsplit('.').next().unwrap_or(a);
            format!("{short}={}", value_label(&point["values"][a.as_str()]))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The charts drawn when a sweep names none: for the first faulty node (or
/// the first node), its share, ejected time and first ejection delay, and the
/// clients' errors — as heatmaps over the first two axes, or lines over one.
pub fn default_sweep_charts(results: &Value) -> Vec<ChartSpec> {
    let axes = strings(&results["axes"]);
    let metrics: Vec<&str> = results["metrics"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let node = results["model"]["faults"][0]["node"]
        .as_str()
        .or_else(|| results["model"]["nodes"][0]["name"].as_str())
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
    .filter(|m| metrics.contains(&m.as_str()))
    // A chart of zeros (no client errors anywhere) says nothing.
    .filter(|m| {
        results["points"].as_array().is_some_and(|ps| {
            ps.iter().any(|p| {
                p["stats"][m.as_str()]["median"]
                    .as_f64()
                    .is_some_and(|v| v != 0.0)
            })
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

/// Checks that a sweep's charts name existing axes (their metrics are known
/// only once runs exist); `Err((field, reason))`.
pub fn check_sweep_axes(charts: &[ChartSpec], axes: &[String]) -> Result<(), (String, String)> {
    for (i, c) in charts.iter().enumerate() {
        let named: Vec<(&str, &String)> = match c {
            ChartSpec::Heatmap { x, y, .. } => vec![("x", x), ("y", y)],
            ChartSpec::Lines { x, series, .. } => {
                let mut v = vec![("x", x)];
                if let Some(s) = series {
                    v.push(("series", s));
                }
                v
            }
            ChartSpec::Timeline { .. } => {
                return Err((
                    format!("charts[{i}]"),
                    "a timeline shows one run: name it in a model, not a sweep".into(),
                ));
            }
            ChartSpec::Distribution { .. } => vec![],
        };
        for (field, a) in named {
            if !axes.iter().any(|x| x == a) {
                return Err((
                    format!("charts[{i}].{field}"),
                    format!("no axis `{a}` (axes are {})", axes.join(", ")),
                ));
            }
        }
    }
    Ok(())
}

fn metric_title(metric: &str) -> String {
    metric_label(metric.rsplit('.').next().unwrap_or(metric)).replacen(
        metric.rsplit('.').next().unwrap_or(metric),
        metric,
        1,
    )
}

/// Draws the charts of a sweep output directory (from `results.json`).
pub fn draw_sweep(dir: &Path) -> Result<Vec<Drawn>, Error> {
    let path = dir.join("results.json");
    let results = read_json(&path)?;
    let specs: Vec<ChartSpec> = match results["definition"].get("charts") {
        Some(c) if c.as_array().is_some_and(|a| !a.is_empty()) => serde_json::from_value(c.clone())
            .map_err(|e| Error::Parse {
                path: path.clone(),
                field: "definition.charts".into(),
                msg: e.to_string(),
            })?,
        _ => default_sweep_charts(&results),
    };
    let axes = strings(&results["axes"]);
    let points = results["points"].as_array().cloned().unwrap_or_default();
    let name = results["sweep"].as_str().unwrap_or("?").to_string();
    let caption = format!(
        "sweep {name} · {} points × {} reps · seed {} ({} seeds) · hcsim {}",
        points.len(),
        results["reps"],
        results["seed"],
        results["seeds"].as_str().unwrap_or("common"),
        results["hcsim_version"].as_str().unwrap_or("?")
    );
    let bad = |field: String, reason: String| Error::Invalid {
        path: path.clone(),
        field,
        reason,
    };
    let known_axis = |a: &str, i: usize, f: &str| {
        if axes.iter().any(|x| x == a) {
            Ok(())
        } else {
            Err(bad(
                format!("definition.charts[{i}].{f}"),
                format!("no axis `{a}` (axes are {})", axes.join(", ")),
            ))
        }
    };
    let known_metric = |m: &str, i: usize| {
        let ok = results["metrics"]
            .as_array()
            .is_some_and(|ms| ms.iter().any(|x| x.as_str() == Some(m)));
        if ok {
            Ok(())
        } else {
            Err(bad(
                format!("definition.charts[{i}].metric"),
                format!("no metric `{m}` in runs.csv"),
            ))
        }
    };
    let charts_dir = dir.join("charts");
    let mut drawn = vec![];
    for (i, spec) in specs.iter().enumerate() {
        match spec {
            ChartSpec::Heatmap { metric, x, y, stat } => {
                known_axis(x, i, "x")?;
                known_axis(y, i, "y")?;
                known_metric(metric, i)?;
                let xs = axis_values(&points, x);
                let ys = axis_values(&points, y);
                // Other axes are held at their first value.
                let fixed: Vec<(&String, Value)> = axes
                    .iter()
                    .filter(|a| *a != x && *a != y)
                    .map(|a| {
                        (
                            a,
                            axis_values(&points, a)
                                .into_iter()
                                .next()
                                .unwrap_or(Value::Null),
                        )
                    })
                    .collect();
                let cell = |xv: &Value, yv: &Value| {
                    points
                        .iter()
                        .find(|p| {
                            p["values"][x.as_str()] == *xv
                                && p["values"][y.as_str()] == *yv
                                && fixed.iter().all(|(a, v)| p["values"][a.as_str()] == *v)
                        })
                        .and_then(|p| p["stats"][metric.as_str()][stat.key()].as_f64())
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
                    title: format!("{} of {metric} — {name}{held}", stat.key()),
                    caption: caption.clone(),
                    x_label: x.clone(),
                    y_label: y.clone(),
                    value_label: metric_title(metric),
                    x: xs.iter().map(value_label).collect(),
                    y: ys.iter().map(value_label).collect(),
                    cells,
                    ..Default::default()
                };
                let stem = charts_dir.join(format!("heatmap-{}", metric.replace('.', "-")));
                plot::heatmap(&h, &stem).map_err(plot_err)?;
                drawn.push(Drawn {
                    title: h.title,
                    stem,
                });
            }
            ChartSpec::Lines {
                metric,
                x,
                series,
                band,
            } => {
                known_axis(x, i, "x")?;
                if let Some(sr) = series {
                    known_axis(sr, i, "series")?;
                }
                known_metric(metric, i)?;
                let xs = axis_values(&points, x);
                let numeric = xs.iter().all(|v| value_number(v).is_some());
                let groups: Vec<Option<Value>> = match series {
                    Some(sr) => axis_values(&points, sr).into_iter().map(Some).collect(),
                    None => vec![None],
                };
                let (lo_key, hi_key, band_label) = match band {
                    Band::P5P95 => ("p5", "p95", "p5–p95 over replications"),
                    Band::MinMax => ("min", "max", "min–max over replications"),
                };
                let series_out = groups
                    .iter()
                    .map(|g| {
                        let pts = points
                            .iter()
                            .filter(|p| match (g, series) {
                                (Some(gv), Some(sr)) => p["values"][sr.as_str()] == *gv,
                                _ => true,
                            })
                            .filter_map(|p| {
                                let st = &p["stats"][metric.as_str()];
                                let m = st["median"].as_f64()?;
                                let xv = &p["values"][x.as_str()];
                                let xval = if numeric {
                                    plot::XValue::Num(value_number(xv)?)
                                } else {
                                    plot::XValue::Cat(value_label(xv))
                                };
                                Some(plot::Point::new(
                                    xval,
                                    m,
                                    st[lo_key].as_f64().unwrap_or(m),
                                    st[hi_key].as_f64().unwrap_or(m),
                                ))
                            })
                            .collect();
                        plot::Series {
                            name: match (g, series) {
                                (Some(gv), Some(sr)) => format!(
                                    "{}={}",
                                    sr.rsplit('.').next().unwrap_or(sr),
                                    value_label(gv)
                                ),
                                _ => metric.clone(),
                            },
                            points: pts,
                        }
                    })
                    .collect();
                let l = plot::LinesSpec {
                    title: format!("{metric} vs {x} — {name}"),
                    caption: caption.clone(),
                    x_label: if numeric && xs.iter().any(Value::is_string) {
                        format!("{x} (s)")
                    } else {
                        x.clone()
                    },
                    y_label: metric_title(metric),
                    series: series_out,
                    y_from_zero: true,
                    band_label: band_label.into(),
                    size: None,
                };
                let stem = charts_dir.join(format!(
                    "lines-{}-vs-{}",
                    metric.replace('.', "-"),
                    x.replace('.', "-")
                ));
                plot::lines(&l, &stem).map_err(plot_err)?;
                drawn.push(Drawn {
                    title: l.title,
                    stem,
                });
            }
            ChartSpec::Distribution { metric, style } => {
                known_metric(metric, i)?;
                let runs = results["runs"].as_array().cloned().unwrap_or_default();
                let groups = points
                    .iter()
                    .map(|p| {
                        let idx = p["point"].as_u64();
                        let vals = runs
                            .iter()
                            .filter(|r| r["point"].as_u64() == idx)
                            .filter_map(|r| r["metrics"][metric.as_str()].as_f64())
                            .collect();
                        (point_label(p, &axes), vals)
                    })
                    .collect();
                let d = DistributionSpec {
                    title: format!("{metric} over replications — {name}"),
                    caption: caption.clone(),
                    group_label: "point".into(),
                    value_label: metric_title(metric),
                    groups,
                    size: None,
                };
                drawn.push(draw_distribution(d, *style, &charts_dir, metric)?);
            }
            ChartSpec::Timeline { .. } => {
                return Err(bad(
                    format!("definition.charts[{i}]"),
                    "a timeline shows one run: draw it with hcsim run on the model".into(),
                ));
            }
        }
    }
    Ok(drawn)
}
