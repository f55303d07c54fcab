//! The people's view of a run on stdout: aligned columns with units.

use super::connections::ConnStats;
use super::pods::PodStats;
use super::summary::{NodeStats, Summary};
use crate::spec::overrides::shown;
use crate::stats::Spread;
use std::fmt::Write as _;

/// `median` or `median [min–max]` when replications differ; `-` when no
/// replication had a value.
pub(super) fn cell(s: &Spread, unit: &str, digits: usize) -> String {
    match (s.median, s.min, s.max) {
        (Some(m), Some(lo), Some(hi)) if (hi - lo).abs() > 1e-9 => {
            format!("{m:.digits$}{unit} [{lo:.digits$}–{hi:.digits$}]")
        }
        (Some(m), _, _) => format!("{m:.digits$}{unit}"),
        _ => "-".into(),
    }
}

/// A share (a fraction) as a percentage cell.
pub(super) fn share_cell(s: &Spread) -> String {
    let pct = |x: Option<f64>| x.map(|x| x * 100.0);
    let percent = Spread {
        median: pct(s.median),
        min: pct(s.min),
        max: pct(s.max),
        ..*s
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
    // Time out of rotation with no ejection: before the node was first
    // routable (a registry's first registration, a probe's first pass).
    let unejected_time = |n: &NodeStats| {
        n.ejections.max.is_some_and(|x| x == 0.0) && n.ejected_time_s.max.is_some_and(|x| x > 0.0)
    };
    if report.nodes.iter().any(unejected_time) {
        out.push_str(
            "(`ejected` includes the time before a node was first routable: a registry's first \
             registration or a probe's first pass; a node with 0 ejections was never taken out \
             after that)\n",
        );
    }
    let conns: Vec<_> = report
        .nodes
        .iter()
        .map(|n| (n.name.clone(), n.connections.as_deref()))
        .collect();
    if let Some(block) = connection_block(&conns) {
        out.push('\n');
        out.push_str(&block);
    }
    if let Some(p) = &report.pods {
        out.push('\n');
        out.push_str(&pods_block(p));
    }
    for (r, nodes) in report.per_replica.iter().enumerate() {
        let _ = writeln!(
            out,
            "\nreplica {r} (its own attempts, answers and ejections)"
        );
        out.push_str(&align(&node_rows(nodes, report.reps, false)));
    }
    // The run's warnings (overload) go to stderr, in every mode: `hcsim run`.
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

/// `rows` as left-aligned columns that fit `width` characters: the widest
/// columns are narrowed first, and a cell longer than its column wraps at
/// spaces (or mid-word when a word is longer than the column) onto the
/// row's next lines.
pub fn wrap_to(rows: &[Vec<String>], width: usize) -> String {
    const GAP: usize = 2;
    const NARROWEST: usize = 6;
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let room = width.saturating_sub(GAP * cols.saturating_sub(1));
    while widths.iter().sum::<usize>() > room {
        let (i, &w) = widths
            .iter()
            .enumerate()
            .max_by_key(|&(i, &w)| (w, std::cmp::Reverse(i)))
            .expect("a table with columns");
        if w <= NARROWEST {
            break;
        }
        widths[i] = w - 1;
    }
    let mut out = String::new();
    for r in rows {
        let cells: Vec<Vec<String>> = r
            .iter()
            .zip(&widths)
            .map(|(s, &w)| wrap_words(s, w))
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for k in 0..height {
            let mut line = String::new();
            for (i, cell) in cells.iter().enumerate() {
                let part = cell.get(k).map_or("", String::as_str);
                if i > 0 {
                    line.push_str(&" ".repeat(GAP));
                }
                line.push_str(part);
                line.push_str(&" ".repeat(widths[i] - part.chars().count()));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

/// `text` after `mark` on its first line, wrapped to `width` with the next
/// lines indented under the text.
pub fn wrap_text(mark: &str, text: &str, width: usize) -> String {
    let indent = mark.chars().count();
    let lines = wrap_words(text, width.saturating_sub(indent).max(10));
    let mut out = String::new();
    for (k, l) in lines.iter().enumerate() {
        if k == 0 {
            out.push_str(mark);
        } else {
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// `s` in lines of at most `width` characters, broken at spaces.
fn wrap_words(s: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = vec![String::new()];
    for word in s.split(' ').filter(|w| !w.is_empty()) {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let line = lines.last_mut().expect("one line at least");
            let used = line.chars().count();
            let need = if used == 0 {
                word.len()
            } else {
                used + 1 + word.len()
            };
            if need <= width {
                if used > 0 {
                    line.push(' ');
                }
                line.extend(word.iter());
                break;
            }
            if used > 0 {
                lines.push(String::new());
                continue;
            }
            // A word longer than the column: cut it.
            line.extend(word.drain(..width));
            lines.push(String::new());
        }
    }
    if lines.len() > 1 && lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// The table's connection block: one row per node, `None` without a pool.
fn connection_block(nodes: &[(String, Option<&ConnStats>)]) -> Option<String> {
    if nodes.iter().all(|(_, c)| c.is_none()) {
        return None;
    }
    let count = |s: &Spread| cell(s, "", 0);
    let mut rows = vec![
        [
            "connections",
            "opened",
            "reused",
            "reused share",
            "refused",
            "reset on reuse",
            "closed before response",
            "timeouts",
            "overflow",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    ];
    for (name, c) in nodes {
        let Some(c) = c else { continue };
        rows.push(vec![
            name.clone(),
            count(&c.opened),
            count(&c.reused),
            share_cell(&c.reused_share),
            count(&c.refused),
            count(&c.reset_on_reuse),
            count(&c.closed_before_response),
            count(&c.timed_out),
            count(&c.overflow),
        ]);
    }
    Some(align(&rows))
}

/// The table's block for pods: restarts by node, and each rolling update.
fn pods_block(p: &PodStats) -> String {
    let mut out = String::new();
    let restarted: Vec<String> = p
        .nodes
        .iter()
        .filter(|n| n.restarts.max.is_some_and(|m| m > 0.0))
        .map(|n| format!("{} {}", n.name, cell(&n.restarts, "", 0)))
        .collect();
    let _ = write!(out, "pods    restarts {}", cell(&p.restarts, "", 0));
    if !restarted.is_empty() {
        let _ = write!(out, " ({})", restarted.join(", "));
    }
    out.push('\n');
    if p.restarts.max.is_some_and(|m| m > 0.0) {
        let r = &p.during_restarts;
        let _ = writeln!(
            out,
            "        while restarting ({}): client errors {}  timeouts {}  requests cut in flight {}",
            cell(&r.window_s, "s", 1),
            cell(&r.client_errors, "", 0),
            cell(&r.client_timeouts, "", 0),
            cell(&r.in_flight_cut, "", 0)
        );
    }
    for (i, d) in p.deploys.iter().enumerate() {
        let statuses: Vec<String> = d
            .status
            .iter()
            .map(|(k, v)| format!("{k}: {}", cell(v, "", 0)))
            .collect();
        let _ = writeln!(
            out,
            "deploy {}  at {}  took {}  client errors {}{}  timeouts {}",
            i + 1,
            cell(&d.start_s, "s", 1),
            cell(&d.duration_s, "s", 2),
            cell(&d.client_errors, "", 0),
            if statuses.is_empty() {
                String::new()
            } else {
                format!(" ({})", statuses.join(", "))
            },
            cell(&d.client_timeouts, "", 0),
        );
        let causes: Vec<String> = d
            .attempts_failed
            .iter()
            .map(|(k, v)| format!("{} {}", k.replace('_', " "), cell(v, "", 0)))
            .collect();
        let _ = writeln!(
            out,
            "        attempts failed: {}; requests cut in flight {}",
            causes.join(", "),
            cell(&d.in_flight_cut, "", 0)
        );
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
