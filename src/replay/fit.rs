//! How well the replay reproduces the log, figure by figure: what the
//! clients got (requests, answers by status, give-ups, latency), and per
//! node its attempts, 2xx answers and share, its ejection episodes, the
//! first one's time and the time it spent ejected. A figure agrees when
//! the log's value lies within the replications' range widened by the
//! calibration harness's tolerance for it (`tolerance` in
//! calibration/run.py): the log is one draw of what the replications draw.

use super::infer::{Episode, Inference};
use super::scan::Scan;
use crate::metrics::RunSummary;
use crate::stats::Spread;
use serde::Serialize;

/// One figure.
#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    pub figure: String,
    pub log: Option<f64>,
    pub replay: Spread,
    pub tolerance: f64,
    pub verdict: &'static str,
}

/// The whole fit.
#[derive(Clone, Debug, Serialize)]
pub struct Fit {
    pub figures: Vec<Figure>,
    pub agree: usize,
    pub differ: usize,
}

/// The log's value of each figure, in order.
pub fn log_figures(s: &Scan, inf: &Inference) -> Vec<(String, Option<f64>)> {
    let c = &s.client;
    let mut out = vec![];
    let count = |f: &dyn Fn(u16) -> bool| {
        c.status
            .iter()
            .filter(|(k, _)| f(**k))
            .map(|(_, v)| *v as f64)
            .sum::<f64>()
    };
    out.push(("client.requests".into(), Some(c.requests as f64)));
    out.push((
        "client.ok".into(),
        Some(count(&|k| (200..300).contains(&k))),
    ));
    out.push((
        "client.errors".into(),
        Some(count(&|k| !(200..300).contains(&k) && k != 499)),
    ));
    out.push(("client.timeouts".into(), Some(count(&|k| k == 499))));
    for (k, v) in &c.status {
        if *k != 499 {
            out.push((format!("client.status.{k}"), Some(*v as f64)));
        }
    }
    let ms = |q| {
        c.latency
            .quantile_us(q)
            .map(|us| crate::stats::round6(us / 1000.0))
    };
    out.push(("client.latency_ms.p50".into(), ms(0.5)));
    out.push(("client.latency_ms.p99".into(), ms(0.99)));
    let ok_total: u64 = inf.nodes.iter().map(|n| n.answered_2xx).sum();
    for n in &inf.nodes {
        let name = |field: &str| crate::metrics::path::node_metric(&n.name, field);
        let mine: Vec<&Episode> = inf.episodes.iter().filter(|e| e.node == n.name).collect();
        out.push((name("attempts"), Some(n.attempts as f64)));
        out.push((name("answered"), Some(n.answered_2xx as f64)));
        let share = if ok_total > 0 {
            n.answered_2xx as f64 / ok_total as f64
        } else {
            0.0
        };
        out.push((name("share"), Some(crate::stats::round6(share))));
        out.push((name("ejections"), Some(mine.len() as f64)));
        out.push((
            name("first_ejection_s"),
            mine.first().map(|e| crate::stats::round6(e.start_s)),
        ));
        let end = inf.workload.duration_s;
        let ejected: f64 = mine
            .iter()
            .map(|e| e.end_s.unwrap_or(end) - e.start_s)
            .sum();
        out.push((name("ejected_time_s"), Some(crate::stats::round6(ejected))));
    }
    out
}

/// The same figure of one replication.
pub fn run_figure(r: &RunSummary, figure: &str) -> Option<f64> {
    if let Some(rest) = figure.strip_prefix("client.") {
        return match rest {
            "requests" => Some(r.client.requests as f64),
            "ok" => Some(r.client.ok as f64),
            "errors" => Some(r.client.errors as f64),
            "timeouts" => Some(r.client.timeouts as f64),
            "latency_ms.p50" => r.client.latency_ms.p50,
            "latency_ms.p99" => r.client.latency_ms.p99,
            s => s
                .strip_prefix("status.")
                .map(|code| r.client.status.get(code).copied().unwrap_or(0) as f64),
        };
    }
    let (name, metric) = crate::metrics::path::split_node_metric(figure)?;
    let n = r.nodes.iter().find(|n| n.name == name)?;
    match metric.as_str() {
        "attempts" => Some(n.attempts as f64),
        "answered" => Some(n.answered as f64),
        "share" => Some(n.share),
        "ejections" => Some(n.ejections as f64),
        "ejected_time_s" => Some(n.ejected_time_s),
        "first_ejection_s" => r
            .ejection_log
            .iter()
            .filter(|e| e.node == name)
            .map(|e| e.start_s)
            .min_by(f64::total_cmp),
        "first_ejection_delay_s" => n.first_ejection_delay_s,
        "recovery_delay_s" => n.recovery_delay_s,
        _ => None,
    }
}

/// The harness's tolerance for a figure (calibration/run.py, `tolerance`).
pub fn tolerance(figure: &str, log: Option<f64>, rate_per_s: f64, requests: f64) -> f64 {
    if figure.ends_with("_delay_s") || figure.ends_with("first_ejection_s") {
        return 0.05_f64.max(1.0 / rate_per_s.max(1e-9));
    }
    if figure.ends_with("ejected_time_s") {
        return 1.0_f64.max(0.1 * log.unwrap_or(0.0));
    }
    if figure.ends_with(".share") {
        return 0.02;
    }
    if figure.contains("latency_ms.") {
        return 5.0_f64.max(log.unwrap_or(0.0));
    }
    if figure.ends_with(".ejections") {
        return 0.0;
    }
    2.0_f64.max(0.02 * requests)
}

/// The fit of `runs` (the replay with the log's own settings) to the log.
pub fn fit(
    log: &[(String, Option<f64>)],
    runs: &[RunSummary],
    rate_per_s: f64,
    requests: f64,
) -> Fit {
    let mut figures = vec![];
    for (name, value) in log {
        let vals: Vec<Option<f64>> = runs.iter().map(|r| run_figure(r, name)).collect();
        let replay = Spread::of_options(vals.iter().copied());
        let tol = tolerance(name, *value, rate_per_s, requests);
        let verdict = match (value, replay.min, replay.max) {
            (None, None, _) => "agrees",
            (Some(v), Some(lo), Some(hi)) if *v >= lo - tol - 1e-9 && *v <= hi + tol + 1e-9 => {
                "agrees"
            }
            _ => "differs",
        };
        figures.push(Figure {
            figure: name.clone(),
            log: *value,
            replay,
            tolerance: crate::stats::round6(tol),
            verdict,
        });
    }
    let agree = figures.iter().filter(|f| f.verdict == "agrees").count();
    Fit {
        differ: figures.len() - agree,
        agree,
        figures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_are_the_harness_s() {
        assert_eq!(tolerance("nodes.a.share", None, 20.0, 100.0), 0.02);
        assert_eq!(
            tolerance("nodes.a.first_ejection_s", None, 10.0, 100.0),
            0.1
        );
        assert_eq!(tolerance("nodes.a.ejections", None, 10.0, 100.0), 0.0);
        assert_eq!(tolerance("client.status.200", None, 10.0, 1000.0), 20.0);
        assert_eq!(
            tolerance("client.latency_ms.p50", Some(7.0), 10.0, 1000.0),
            7.0
        );
    }
}
