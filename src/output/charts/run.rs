//! A run's charts: the timeline of one replication and distributions over
//! the replications.

use super::{Drawn, draw_distribution, metric_label, plot_err};
use crate::error::Error;
use crate::output::summary::Summary;
use crate::plot::{self, DistributionSpec, NodeTrack, TimelineSpec};
use crate::spec::ChartSpec;
use crate::spec::charts::DistStyle;
use std::collections::BTreeMap;
use std::path::Path;

/// The charts drawn when a model names none.
pub fn default_charts(summary: &Summary) -> Vec<ChartSpec> {
    let mut v = vec![ChartSpec::Timeline { rep: 0 }];
    if summary.reps >= 2 {
        v.push(ChartSpec::Distribution {
            metric: "share".into(),
            style: DistStyle::Box,
        });
        if summary.nodes.iter().any(|n| n.first_ejection_delay_s.n > 0) {
            v.push(ChartSpec::Distribution {
                metric: "first_ejection_delay_s".into(),
                style: DistStyle::Box,
            });
        }
        if summary.nodes.iter().any(|n| n.recovery_delay_s.n > 0) {
            v.push(ChartSpec::Distribution {
                metric: "recovery_delay_s".into(),
                style: DistStyle::Box,
            });
        }
    }
    v
}

/// Draws the charts of a run output directory; returns what was drawn.
pub fn draw_run(dir: &Path) -> Result<Vec<Drawn>, Error> {
    let summary = Summary::read(&dir.join("summary.json"))?;
    let specs = match &summary.model_spec.charts {
        c if !c.is_empty() => c.clone(),
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
    let mut caption = format!(
        "model {} · seed {} · {} rep{} · hcsim {}",
        summary.model,
        summary.seed,
        summary.reps,
        if summary.reps == 1 { "" } else { "s" },
        summary.hcsim_version,
    );
    if !summary.set.is_empty() {
        caption += &format!(" · what if: --set {}", summary.set.join(" --set "));
    }
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

/// A metric over the replications: one group for the clients' metric
/// (`client.latency_ms.p99`), or one per node for a node metric (`share`).
fn distribution_spec(summary: &Summary, metric: &str, caption: &str) -> DistributionSpec {
    let runs = &summary.runs;
    let groups: Vec<(String, Vec<f64>)> = if let Some(path) = metric.strip_prefix("client.") {
        let vals = runs.iter().filter_map(|r| r.client.metric(path)).collect();
        vec![("clients".to_string(), vals)]
    } else {
        summary
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| {
                let vals = runs
                    .iter()
                    .filter_map(|r| r.nodes.get(i)?.metric(metric))
                    .collect();
                (node.name.clone(), vals)
            })
            .collect()
    };
    DistributionSpec {
        title: format!(
            "{} over {} replications — {}",
            metric,
            runs.len(),
            summary.model
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

fn csv_err(path: &Path) -> impl Fn(csv::Error) -> Error + '_ {
    move |e| Error::Parse {
        path: path.to_path_buf(),
        field: String::new(),
        msg: e.to_string(),
    }
}

/// One replication's buckets from `timeline.csv`.
struct Buckets {
    t: Vec<f64>,
    errors: Vec<u64>,
    timeouts: Vec<u64>,
    /// Latency p50 and p99 (ms) per bucket; `None` where no request ended.
    p50: Vec<Option<f64>>,
    p99: Vec<Option<f64>>,
    /// Per node, per bucket: 2xx answers.
    answered: Vec<Vec<f64>>,
}

fn read_timeline(path: &Path, names: &[String], rep: usize) -> Result<Buckets, Error> {
    let mut rdr = csv::Reader::from_path(path).map_err(csv_err(path))?;
    let headers = rdr.headers().map_err(csv_err(path))?.clone();
    let col = |name: &str| headers.iter().position(|h| h == name);
    let (Some(c_rep), Some(c_t), Some(c_err), Some(c_to)) =
        (col("rep"), col("t_s"), col("errors"), col("timeouts"))
    else {
        return Err(Error::Parse {
            path: path.to_path_buf(),
            field: String::new(),
            msg: "missing columns rep, t_s, errors or timeouts".into(),
        });
    };
    let (c_p50, c_p99) = (col("latency_p50_ms"), col("latency_p99_ms"));
    let answered: Vec<Option<usize>> = names
        .iter()
        .map(|n| col(&format!("{n}.answered")))
        .collect();
    let mut b = Buckets {
        t: vec![],
        errors: vec![],
        timeouts: vec![],
        p50: vec![],
        p99: vec![],
        answered: vec![vec![]; names.len()],
    };
    for rec in rdr.records() {
        let rec = rec.map_err(csv_err(path))?;
        if rec.get(c_rep).and_then(|x| x.parse::<usize>().ok()) != Some(rep) {
            continue;
        }
        let num = |c: usize| {
            rec.get(c)
                .and_then(|x| x.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        b.t.push(num(c_t));
        b.errors.push(num(c_err) as u64);
        b.timeouts.push(num(c_to) as u64);
        let opt = |c: Option<usize>| c.and_then(|c| rec.get(c)?.parse::<f64>().ok());
        b.p50.push(opt(c_p50));
        b.p99.push(opt(c_p99));
        for (i, c) in answered.iter().enumerate() {
            b.answered[i].push(c.map(num).unwrap_or(0.0));
        }
    }
    Ok(b)
}

/// One replication's ejection intervals from `ejections.csv`, by node name
/// (an interval still open at the end runs to infinity).
fn read_ejections(path: &Path, rep: usize) -> Result<BTreeMap<String, Vec<(f64, f64)>>, Error> {
    let mut ejections: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    if !path.exists() {
        return Ok(ejections);
    }
    let mut rdr = csv::Reader::from_path(path).map_err(csv_err(path))?;
    for rec in rdr.records() {
        let rec = rec.map_err(csv_err(path))?;
        if rec.get(0).and_then(|x| x.parse::<usize>().ok()) != Some(rep) {
            continue;
        }
        let num = |i: usize| rec.get(i).and_then(|x| x.parse::<f64>().ok());
        ejections
            .entry(rec.get(2).unwrap_or("").to_string())
            .or_default()
            .push((num(4).unwrap_or(0.0), num(5).unwrap_or(f64::INFINITY)));
    }
    Ok(ejections)
}

fn timeline_spec(
    dir: &Path,
    summary: &Summary,
    rep: usize,
    caption: &str,
) -> Result<TimelineSpec, Error> {
    let names: Vec<String> = summary.nodes.iter().map(|n| n.name.clone()).collect();
    let b = read_timeline(&dir.join("timeline.csv"), &names, rep)?;
    let mut ejections = read_ejections(&dir.join("ejections.csv"), rep)?;
    let totals: Vec<f64> = (0..b.t.len())
        .map(|i| b.answered.iter().map(|c| c[i]).sum())
        .collect();
    let run = summary.runs.get(rep);
    let duration = run.map_or(0.0, |r| r.duration_s);
    let nodes = names
        .iter()
        .enumerate()
        .map(|(i, name)| NodeTrack {
            name: name.clone(),
            share: (0..b.t.len())
                .map(|k| {
                    if totals[k] > 0.0 {
                        b.answered[i][k] / totals[k]
                    } else {
                        0.0
                    }
                })
                .collect(),
            ejections: ejections.remove(name).unwrap_or_default(),
            faults: summary
                .faults
                .iter()
                .filter(|f| f.node == *name)
                .map(|f| (f.start_s, f.end_s.unwrap_or(duration), f.kind.clone()))
                .collect(),
        })
        .collect();
    let seed = run.map_or(0, |r| r.seed);
    Ok(TimelineSpec {
        title: format!("{} — replication {rep} (seed {seed})", summary.model),
        caption: caption.to_string(),
        bucket_s: b.t.get(1).map(|x| x - b.t[0]).unwrap_or(1.0),
        t: b.t,
        nodes,
        errors: b.errors,
        timeouts: b.timeouts,
        latency_p50_ms: b.p50,
        latency_p99_ms: b.p99,
        size: None,
    })
}
