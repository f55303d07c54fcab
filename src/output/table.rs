//! The people's view of a run on stdout: aligned columns with units.

use super::summary::{NodeStats, Summary};
use crate::spec::overrides::shown;
use crate::stats::Spread;
use std::fmt::Write as _;

/// `median` or `median [min–max]` when replications differ; `-` when no
/// replication had a value.
fn cell(s: &Spread, unit: &str, digits: usize) -> String {
    match (s.median, s.min, s.max) {
        (Some(m), Some(lo), Some(hi)) if (hi - lo).abs() > 1e-9 => {
            format!("{m:.digits$}{unit} [{lo:.digits$}–{hi:.digits$}]")
        }
        (Some(m), _, _) => format!("{m:.digits$}{unit}"),
        _ => "-".into(),
    }
}

/// A share (a fraction) as a percentage cell.
fn share_cell(s: &Spread) -> String {
    let pct = |x: Option<f64>| x.map(|x| x * 100.0);
    let percent = Spread {
        median: pct(s.median),
        min: pct(s.min),
        max: pct(s.max),
        ..s.clone()
    };
    cell(&percent, "%", 1)
}

/// A delay that only some replications have says in how many it happened.
fn delay_cell(s: &Spread, reps: usize) -> String {
    let base = cell(s, "s", 2);
    if s.n > 0 && s.n < reps {
        format!("{base} ({}/{reps} runs)", s.n)
    } else {
        base
    }
}

/// The table's render of a whole run.
pub fn table(report: &Summary) -> String {
    let mut out = String::new();
    let c = &report.client;
    let _ = writeln!(
        out,
        "{}  seed {}  reps {}  ({})",
        report.model, report.seed, report.reps, report.file
    );
    if !report.set.is_empty() {
        let _ = writeln!(out, "what if: {}", shown(&report.set));
    }
    if let Some(run) = report.runs.first() {
        let _ = writeln!(
            out,
            "simulated {}s, measured {}s–{}s",
            run.duration_s, run.measure_from_s, run.measure_to_s
        );
    }
    let _ = writeln!(
        out,
        "\nclient  requests {}  ok {}  errors {}  timeouts {}  unfinished {}",
        cell(&c.requests, "", 0),
        cell(&c.ok, "", 0),
        cell(&c.errors, "", 0),
        cell(&c.timeouts, "", 0),
        cell(&c.unfinished, "", 0),
    );
    if !c.status.is_empty() {
        let parts: Vec<String> = c
            .status
            .iter()
            .map(|(k, s)| format!("{k}: {}", cell(s, "", 0)))
            .collect();
        let _ = writeln!(out, "        status  {}", parts.join("  "));
    }
    let l = &c.latency_ms;
    let _ = writeln!(
        out,
        "        latency p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (all ended requests, timeouts included)",
        cell(&l.p50, "ms", 1),
        cell(&l.p90, "ms", 1),
        cell(&l.p99, "ms", 1),
        cell(&l.p999, "ms", 1),
        cell(&l.max, "ms", 1),
    );
    if !c.slower_than.is_empty() {
        let parts: Vec<String> = c
            .slower_than
            .iter()
            .map(|(k, s)| format!("{k}: {}", cell(s, "", 0)))
            .collect();
        let _ = writeln!(out, "        slower than  {}", parts.join("  "));
    }
    let r = &report.probe_rounds;
    if r.rounds.max.is_some_and(|x| x > 0.0) {
        let _ = writeln!(
            out,
            "probe rounds {}  duration min {}  median {}  max {}",
            cell(&r.rounds, "", 0),
            cell(&r.min_s, "s", 3),
            cell(&r.median_s, "s", 3),
            cell(&r.max_s, "s", 3),
        );
    }
    out.push('\n');
    out.push_str(&align(&node_rows(&report.nodes, report.reps, true)));
    for (r, nodes) in report.per_replica.iter().enumerate() {
        let _ = writeln!(
            out,
            "\nreplica {r} (its own attempts, answers and ejections)"
        );
        out.push_str(&align(&node_rows(nodes, report.reps, false)));
    }
    if !report.warnings.is_empty() {
        out.push('\n');
    }
    for w in &report.warnings {
        let _ = writeln!(out, "warning ({}): {}", w.code, w.message);
    }
    out
}

/// The node table: a header row, then one row per node. Columns that only
/// some models need (false ejections, attempts in a fault, probes) appear
/// only when a node has a non-zero value.
/// `busy`: the nodes' own columns (busy workers); a replica's view has none.
fn node_rows(nodes: &[NodeStats], reps: usize, busy: bool) -> Vec<Vec<String>> {
    let any =
        |f: fn(&NodeStats) -> &Spread| nodes.iter().any(|n| f(n).max.is_some_and(|x| x > 0.0));
    let show_false = any(|n| &n.false_ejections);
    let show_fault = any(|n| &n.fault_attempts);
    let show_probes = any(|n| &n.probes);
    let show_queue = any(|n| &n.peak_queue);
    let show_refused = any(|n| &n.backlog_refused);
    let mut headers = vec![
        "node",
        "attempts",
        "answered",
        "share",
        "failures",
        "ejections",
        "ejected",
        "first ejection",
        "recovery",
    ];
    if busy {
        headers.push("busy");
    }
    if show_queue {
        headers.push("peak queue");
    }
    if show_refused {
        headers.push("backlog drops");
    }
    if show_false {
        headers.push("false ejections");
    }
    if show_fault {
        headers.push("in fault (ok)");
    }
    if show_probes {
        headers.extend(["probes/s", "probe share"]);
    }
    let fleet = nodes.iter().any(|n| n.fleet.is_some());
    if fleet {
        headers.extend(["last replica ejects", "replicas ejected"]);
    }
    let mut rows: Vec<Vec<String>> = vec![headers.iter().map(|s| s.to_string()).collect()];
    for n in nodes {
        let mut row = vec![
            n.name.clone(),
            cell(&n.attempts, "", 0),
            cell(&n.answered, "", 0),
            share_cell(&n.share),
            cell(&n.failures, "", 0),
            cell(&n.ejections, "", 0),
            cell(&n.ejected_time_s, "s", 2),
            delay_cell(&n.first_ejection_delay_s, reps),
            delay_cell(&n.recovery_delay_s, reps),
        ];
        if busy {
            row.push(share_cell(&n.utilization));
        }
        if show_queue {
            row.push(cell(&n.peak_queue, "", 0));
        }
        if show_refused {
            row.push(cell(&n.backlog_refused, "", 0));
        }
        if show_false {
            row.push(cell(&n.false_ejections, "", 0));
        }
        if show_fault {
            row.push(format!(
                "{} ({})",
                cell(&n.fault_attempts, "", 0),
                cell(&n.fault_attempts_ok, "", 0)
            ));
        }
        if show_probes {
            row.push(cell(&n.probe_load_per_s, "", 2));
            row.push(n.probe_share.as_ref().map_or("-".into(), share_cell));
        }
        if let Some(f) = &n.fleet {
            row.push(delay_cell(&f.last_ejection_delay_s, reps));
            row.push(share_cell(&f.replicas_ejected));
        } else if fleet {
            row.extend([String::new(), String::new()]);
        }
        rows.push(row);
    }
    rows
}

/// Left-aligns the first column and right-aligns the others.
pub fn align(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, s) in r.iter().enumerate() {
            let pad = widths[i] - s.chars().count();
            if i == 0 {
                line.push_str(s);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(s);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn align_pads_columns() {
        let rows = vec![
            vec!["node".to_string(), "share".into()],
            vec!["a".to_string(), "50.0%".into()],
        ];
        assert_eq!(align(&rows), "node  share\na     50.0%\n");
    }

    #[test]
    fn cells_show_the_range_only_when_replications_differ() {
        assert_eq!(cell(&Spread::of(&[2.0, 2.0]), "s", 1), "2.0s");
        assert_eq!(cell(&Spread::of(&[1.0, 3.0]), "", 0), "2 [1–3]");
        assert_eq!(cell(&Spread::default(), "s", 2), "-");
        assert_eq!(delay_cell(&Spread::of(&[1.0]), 3), "1.00s (1/3 runs)");
    }
}
