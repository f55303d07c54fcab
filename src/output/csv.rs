//! The CSV files of a run: `timeline.csv` (per bucket), `ejections.csv` (per
//! ejection interval) and `attempts.csv` (per upstream attempt, with `--trace`).

use crate::metrics::RunSummary;
use crate::stats::round6;
use crate::world::TraceLine;

/// `timeline.csv`: one row per (replication, bucket).
pub fn timeline_csv(runs: &[RunSummary]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(vec![]);
    let Some(first) = runs.first() else {
        return Ok(vec![]);
    };
    let mut header = vec![
        "rep".to_string(),
        "seed".into(),
        "t_s".into(),
        "requests".into(),
        "ok".into(),
        "errors".into(),
        "timeouts".into(),
        "latency_p50_ms".into(),
        "latency_p99_ms".into(),
    ];
    for n in &first.timeline.node_names {
        for col in ["answered", "attempts", "failures", "ejected"] {
            header.push(format!("{n}.{col}"));
        }
    }
    w.write_record(&header)?;
    for (rep, run) in runs.iter().enumerate() {
        for row in &run.timeline.rows {
            let mut rec = vec![
                rep.to_string(),
                run.seed.to_string(),
                fmt_num(row.t_s),
                row.requests.to_string(),
                row.ok.to_string(),
                row.errors.to_string(),
                row.timeouts.to_string(),
                row.latency_p50_ms.map(fmt_num).unwrap_or_default(),
                row.latency_p99_ms.map(fmt_num).unwrap_or_default(),
            ];
            for i in 0..run.timeline.node_names.len() {
                rec.push(row.answered[i].to_string());
                rec.push(row.attempts[i].to_string());
                rec.push(row.failures[i].to_string());
                rec.push(fmt_num(row.ejected[i]));
            }
            w.write_record(&rec)?;
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// `ejections.csv`: one row per ejection interval.
pub fn ejections_csv(runs: &[RunSummary]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(vec![]);
    w.write_record([
        "rep",
        "seed",
        "node",
        "scope",
        "start_s",
        "end_s",
        "duration_s",
    ])?;
    for (rep, run) in runs.iter().enumerate() {
        for e in &run.ejection_log {
            let end = e.end_s.unwrap_or(run.duration_s);
            w.write_record([
                rep.to_string(),
                run.seed.to_string(),
                e.node.clone(),
                e.scope.to_string(),
                fmt_num(e.start_s),
                e.end_s.map(fmt_num).unwrap_or_default(),
                fmt_num(round6(end - e.start_s)),
            ])?;
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

fn fmt_num(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// `attempts.csv`: every upstream attempt of every replication (an access log).
pub fn trace_csv(runs: &[RunSummary], traces: &[Vec<TraceLine>]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(vec![]);
    w.write_record([
        "rep", "seed", "t_s", "request", "worker", "node", "result", "charge",
    ])?;
    for (rep, (run, lines)) in runs.iter().zip(traces).enumerate() {
        for l in lines {
            w.write_record([
                rep.to_string(),
                run.seed.to_string(),
                format!("{:.6}", l.t_s),
                l.request.to_string(),
                l.scope.to_string(),
                l.node.clone(),
                l.result.clone(),
                l.charge.to_string(),
            ])?;
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}
