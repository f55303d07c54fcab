//! A run's charts: the timeline (the median over the replications, or one
//! replication) and distributions over the replications.

use super::timeline::timeline_chart;
use super::{Drawn, axis_scale, draw_distribution, runs, shown_groups};
use crate::error::Error;
use crate::metrics::path as metric_path;
use crate::output::summary::Summary;
use crate::output::vocabulary;
use crate::plot::DistributionSpec;
use crate::spec::ChartSpec;
use crate::spec::charts::{DistStyle, ScaleName};
use crate::spec::overrides::shown;
use std::path::Path;

/// The charts drawn when a model names none.
pub fn default_charts(summary: &Summary) -> Vec<ChartSpec> {
    let mut v = vec![ChartSpec::Timeline {
        rep: None,
        bucket: None,
    }];
    if summary.reps >= 2 {
        let dist = |metric: &str| ChartSpec::Distribution {
            metric: metric.into(),
            style: DistStyle::Box,
            scale: ScaleName::Auto,
        };
        v.push(dist("share"));
        if summary.nodes.iter().any(|n| n.first_ejection_delay_s.n > 0) {
            v.push(dist("first_ejection_delay_s"));
        }
        if summary.nodes.iter().any(|n| n.recovery_delay_s.n > 0) {
            v.push(dist("recovery_delay_s"));
        }
    }
    v
}

/// Where a run's charts come from, for their footers: model, seed,
/// replications, the `--set` overrides, hcsim's version.
pub fn provenance(summary: &Summary) -> String {
    let mut parts = vec![
        format!("model {}", summary.model),
        format!("seed {}", summary.seed),
        runs(summary.reps),
    ];
    if !summary.set.is_empty() {
        parts.push(format!("what if: {}", shown(&summary.set)));
    }
    parts.push(format!("hcsim {}", summary.hcsim_version));
    parts.join(" · ")
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
    let caption = provenance(&summary);
    let charts_dir = dir.join("charts");
    let mut drawn = vec![];
    for spec in &specs {
        match spec {
            ChartSpec::Timeline { rep, bucket } => {
                drawn.push(timeline_chart(dir, &summary, *rep, *bucket, &caption)?);
            }
            ChartSpec::Heatmap { .. } | ChartSpec::Lines { .. } => {}
            ChartSpec::Distribution {
                metric,
                style,
                scale,
            } => {
                let mut d = distribution_spec(&summary, metric, &caption);
                d.scale = axis_scale(*scale);
                drawn.push(draw_distribution(d, *style, &charts_dir, metric)?);
            }
        }
    }
    Ok(drawn)
}

/// A metric over the replications: one group for the clients' metric
/// (`client.latency_ms.p99`), or one per node for a node metric (`share`).
fn distribution_spec(summary: &Summary, metric: &str, caption: &str) -> DistributionSpec {
    let runs_ = &summary.runs;
    let client = metric.strip_prefix("client.");
    let groups: Vec<(String, Vec<f64>)> = if let Some(path) = client {
        let vals = runs_
            .iter()
            .filter_map(|r| metric_path::value(&serde_json::to_value(&r.client).ok()?, path))
            .collect();
        vec![("clients".to_string(), vals)]
    } else {
        summary
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| {
                let vals = runs_
                    .iter()
                    .filter_map(|r| {
                        metric_path::value(&serde_json::to_value(r.nodes.get(i)?).ok()?, metric)
                    })
                    .collect();
                (node.name.clone(), vals)
            })
            .collect()
    };
    let term = vocabulary::metric(metric);
    let whose = if client.is_some() {
        term.full()
    } else {
        format!("{} per node", super::capitalized(&term.name))
    };
    let (value_label, _, groups) = shown_groups(metric, groups);
    DistributionSpec {
        title: format!("{} — {} of {}", whose, runs(runs_.len()), summary.model),
        caption: caption.to_string(),
        group_label: if client.is_some() {
            String::new()
        } else {
            "node".into()
        },
        value_label,
        groups,
        ..DistributionSpec::default()
    }
}
