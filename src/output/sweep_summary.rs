//! The lines `hcsim sweep` prints when it is done: for each charted metric,
//! the points where it is lowest and highest with their axis values —
//! named best and worst for the metrics where less is plainly better
//! (errors, timeouts, unfinished requests, latency, detection and
//! recovery delays).

use super::charts::sweep_chart_specs;
use super::sweep::{PointResult, SweepResults};
use crate::error::Error;
use crate::spec::ChartSpec;
use crate::spec::charts::StatName;
use std::path::Path;

/// The summary of the sweep output directory `dir` (from `results.json`).
pub fn sweep_summary(dir: &Path) -> Result<String, Error> {
    let path = dir.join("results.json");
    let results = SweepResults::read(&path)?;
    let specs = sweep_chart_specs(&results, &path)?;
    Ok(summary(&results, &specs))
}

/// Metrics where a lower value is plainly better.
fn lower_is_better(metric: &str) -> bool {
    const WORSE_WHEN_HIGHER: [&str; 5] = [
        ".errors",
        ".timeouts",
        ".unfinished",
        "first_ejection_delay_s",
        "recovery_delay_s",
    ];
    WORSE_WHEN_HIGHER.iter().any(|s| metric.ends_with(s)) || metric.contains(".latency_ms.")
}

/// `0.02982`, `12`, `1235`: four significant digits, no trailing zeros.
fn short_number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return crate::sweep::fmt_f64(x);
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 9) as usize;
    let s = format!("{x:.digits$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" { "0".into() } else { s }
}

/// The charted metrics, each with the statistic of the first chart that shows it.
fn charted(specs: &[ChartSpec]) -> Vec<(&str, StatName)> {
    let mut out: Vec<(&str, StatName)> = vec![];
    for s in specs {
        let (metric, stat) = match s {
            ChartSpec::Heatmap { metric, stat, .. } => (metric.as_str(), *stat),
            ChartSpec::Lines { metric, .. } | ChartSpec::Distribution { metric, .. } => {
                (metric.as_str(), StatName::Median)
            }
            ChartSpec::Timeline { .. } => continue,
        };
        if !out.iter().any(|(m, _)| *m == metric) {
            out.push((metric, stat));
        }
    }
    out
}

/// The summary lines (empty when nothing is charted).
pub fn summary(results: &SweepResults, specs: &[ChartSpec]) -> String {
    let metrics = charted(specs);
    if metrics.is_empty() || results.points.is_empty() {
        return String::new();
    }
    let describe = |p: &PointResult| {
        results
            .axes
            .iter()
            .map(|a| format!("{a}={}", p.value_text(a)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Rows of (metric, label, value, where).
    let mut rows: Vec<[String; 4]> = vec![];
    for (metric, stat) in metrics {
        let values: Vec<(&PointResult, f64)> = results
            .points
            .iter()
            .filter_map(|p| {
                let s = p.stats.get(metric)?;
                let v = match stat {
                    StatName::Median => s.median,
                    StatName::Mean => s.mean,
                    StatName::Min => s.min,
                    StatName::Max => s.max,
                    StatName::P5 => s.p5,
                    StatName::P95 => s.p95,
                }?;
                Some((p, v))
            })
            .collect();
        let mut name = format!("{metric} ({})", stat.key());
        if values.len() < results.points.len() {
            name += &format!(", at {} of {} points", values.len(), results.points.len());
        }
        let Some(lo) = values.iter().map(|(_, v)| *v).min_by(f64::total_cmp) else {
            rows.push([
                name,
                "no value at any point".into(),
                String::new(),
                String::new(),
            ]);
            continue;
        };
        let hi = values
            .iter()
            .map(|(_, v)| *v)
            .max_by(f64::total_cmp)
            .unwrap_or(lo);
        if lo == hi {
            let at = if values.len() == 1 {
                describe(values[0].0)
            } else {
                format!("all {} points", values.len())
            };
            rows.push([name, "same".into(), short_number(lo), at]);
            continue;
        }
        let (low, high) = if lower_is_better(metric) {
            ("best", "worst")
        } else {
            ("lowest", "highest")
        };
        for (i, (label, target)) in [(low, lo), (high, hi)].into_iter().enumerate() {
            let at: Vec<&PointResult> = values
                .iter()
                .filter(|(_, v)| *v == target)
                .map(|(p, _)| *p)
                .collect();
            let mut place = describe(at[0]);
            if at.len() > 1 {
                place += &format!(" (and {} more)", at.len() - 1);
            }
            let first = if i == 0 { name.clone() } else { String::new() };
            rows.push([first, label.into(), short_number(target), place]);
        }
    }
    let width = |c: usize| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    let mut out = format!(
        "{} points × {} reps; the charted metrics at their extremes (the statistic over each point's reps in parentheses):\n",
        results.points.len(),
        results.reps
    );
    for [m, label, v, at] in rows {
        let line = format!("  {m:<w0$}  {label:<w1$}  {v:>w2$}  {at}");
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(short_number(0.029821), "0.02982");
        assert_eq!(short_number(12.0), "12");
        assert_eq!(short_number(0.5), "0.5");
        assert_eq!(short_number(1234.56), "1235");
        assert_eq!(short_number(0.0), "0");
        assert_eq!(short_number(-0.00012346), "-0.0001235");
    }

    #[test]
    fn less_is_better_only_where_it_plainly_is() {
        assert!(lower_is_better("client.errors"));
        assert!(lower_is_better("nodes.A.first_ejection_delay_s"));
        assert!(lower_is_better("client.latency_ms.p99"));
        assert!(!lower_is_better("nodes.A.share"));
        assert!(!lower_is_better("nodes.A.ejected_time_s"));
    }
}
