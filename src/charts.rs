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
    /// A metric over the replications: one box (or CDF curve) per node.
    #[serde(deserialize_with = "chart_body::distribution")]
    Distribution {
        /// A node metric (`share`, `first_ejection_delay_s`, `recovery_delay_s`,
        /// `ejected_time_s`, `ejections`, ...) or a client metric path
        /// (`client.latency_ms.p99`, `client.timeouts`).
        metric: String,
        /// `box` (default) or `cdf`.
        #[serde(default)]
        style: DistStyle,
    },
}

/// The bodies of `ChartSpec`'s variants, read with their own path tracker
/// (see [`crate::diagnostics`]) so that errors name the field.
mod chart_body {
    use super::DistStyle;
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
            ChartSpec::Distribution { metric, style } => {
                let d = distribution_spec(&summary, metric, &caption);
                let stem = charts_dir.join(format!("distribution-{}", metric.replace('.', "-")));
                match style {
                    DistStyle::Box => plot::distribution(&d, &stem),
                    DistStyle::Cdf => plot::distribution_cdf(&d, &stem),
                }
                .map_err(plot_err)?;
                drawn.push(Drawn {
                    title: d.title,
                    stem,
                });
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
