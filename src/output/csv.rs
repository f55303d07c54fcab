//! The CSV files of a run: `timeline.csv` (per bucket), `ejections.csv` (per
//! ejection interval), `attempts.csv` (per upstream attempt, with `--trace`)
//! and `events.csv` (the gateway's log lines, with `--events`).

use crate::metrics::RunSummary;
use crate::stats::round6;
use crate::world::TraceLine;
use crate::world::event_log::EventLog;

/// `timeline.csv`: one row per (replication, bucket).
///
/// Written by hand, as the `csv` crate writes it (`\n` after each record, a
/// field quoted only when it holds `,` `"` `\r` or `\n`): every cell but the
/// node names' is a number, which never needs quotes, and a 5,000-node
/// timeline has 20,000 cells per row.
pub fn timeline_csv(runs: &[RunSummary]) -> Vec<u8> {
    let Some(first) = runs.first() else {
        return vec![];
    };
    let names = &first.timeline.node_names;
    let rows: usize = runs.iter().map(|r| r.timeline.rows.len()).sum();
    let mut out = Vec::with_capacity((rows + 1) * (64 + 12 * names.len()));
    out.extend_from_slice(
        b"rep,seed,t_s,requests,ok,errors,timeouts,latency_p50_ms,latency_p99_ms",
    );
    let mut text = String::new();
    for n in names {
        for col in ["answered", "attempts", "failures", "ejected"] {
            text.clear();
            text.push_str(n);
            text.push('.');
            text.push_str(col);
            out.push(b',');
            csv_field(&mut out, &text);
        }
    }
    out.push(b'\n');
    let mut int = itoa::Buffer::new();
    for (rep, run) in runs.iter().enumerate() {
        for row in &run.timeline.rows {
            out.extend_from_slice(int.format(rep).as_bytes());
            out.push(b',');
            out.extend_from_slice(int.format(run.seed).as_bytes());
            out.push(b',');
            out.extend_from_slice(num(&mut text, row.t_s).as_bytes());
            for v in [row.requests, row.ok, row.errors, row.timeouts] {
                out.push(b',');
                out.extend_from_slice(int.format(v).as_bytes());
            }
            for v in [row.latency_p50_ms, row.latency_p99_ms] {
                out.push(b',');
                out.extend_from_slice(v.map_or("", |x| num(&mut text, x)).as_bytes());
            }
            for i in 0..run.timeline.node_names.len() {
                for v in [row.answered[i], row.attempts[i], row.failures[i]] {
                    out.push(b',');
                    out.extend_from_slice(int.format(v).as_bytes());
                }
                out.push(b',');
                out.extend_from_slice(num(&mut text, row.ejected[i]).as_bytes());
            }
            out.push(b'\n');
        }
    }
    out
}

/// A text field as the `csv` crate's writer writes it by default: in
/// quotes, each `"` doubled, when it holds the delimiter, a quote or a line
/// break (`csv_core::WriterBuilder::build`); as it is otherwise.
fn csv_field(out: &mut Vec<u8>, s: &str) {
    if !s.bytes().any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n')) {
        return out.extend_from_slice(s.as_bytes());
    }
    out.push(b'"');
    for b in s.bytes() {
        if b == b'"' {
            out.push(b'"');
        }
        out.push(b);
    }
    out.push(b'"');
}

/// `fmt_num` into a reused buffer.
fn num(buf: &mut String, x: f64) -> &str {
    buf.clear();
    push_num(buf, x);
    buf
}

/// `events.csv`: one row per line the gateway would log, in time order
/// within each replication; a replication whose log was capped ends with
/// an `hcsim` line saying how many lines were left out.
pub fn events_csv(runs: &[RunSummary], logs: &[EventLog]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(vec![]);
    w.write_record(["rep", "seed", "t_s", "replica", "node", "source", "line"])?;
    for (rep, (run, log)) in runs.iter().zip(logs).enumerate() {
        let (rep, seed) = (rep.to_string(), run.seed.to_string());
        for l in &log.lines {
            w.write_record([
                rep.as_str(),
                seed.as_str(),
                &fmt_num(l.t_s),
                &l.replica.to_string(),
                &l.node,
                l.source,
                &l.line,
            ])?;
        }
        if log.dropped > 0 {
            let last = log.lines.last().map_or(0.0, |l| l.t_s);
            w.write_record([
                rep.as_str(),
                seed.as_str(),
                &fmt_num(last),
                "",
                "",
                "hcsim",
                &format!(
                    "event log capped at {} lines: {} later lines not written",
                    log.cap, log.dropped
                ),
            ])?;
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// `pods.csv`: what happened to each pod, per replication in time order
/// (created, listed and unlisted by the gateway replicas, killed, exited,
/// cut requests, gone).
pub fn pods_csv(runs: &[RunSummary]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(vec![]);
    w.write_record(["rep", "seed", "t_s", "node", "event", "detail"])?;
    let mut t = String::new();
    for (rep, run) in runs.iter().enumerate() {
        let (rep, seed) = (rep.to_string(), run.seed.to_string());
        let Some(p) = &run.pods else {
            continue;
        };
        let mut events: Vec<_> = p.events.iter().collect();
        events.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        for e in events {
            let node = run
                .nodes
                .get(e.node as usize)
                .map_or("", |n| n.name.as_str());
            w.write_record([
                rep.as_str(),
                seed.as_str(),
                num(&mut t, round6(e.t_s)),
                node,
                e.what,
                e.detail.as_str(),
            ])?;
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
    let (mut start, mut end_s, mut dur) = (String::new(), String::new(), String::new());
    let mut scope = itoa::Buffer::new();
    for (rep, run) in runs.iter().enumerate() {
        let (rep, seed) = (rep.to_string(), run.seed.to_string());
        for e in &run.ejection_log {
            let end = e.end_s.unwrap_or(run.duration_s);
            end_s.clear();
            if let Some(t) = e.end_s {
                push_num(&mut end_s, t);
            }
            w.write_record([
                rep.as_str(),
                seed.as_str(),
                e.node.as_str(),
                scope.format(e.scope),
                num(&mut start, e.start_s),
                end_s.as_str(),
                num(&mut dur, round6(end - e.start_s)),
            ])?;
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// `replicas.csv` (`--per-replica`): one row per (replication, gateway
/// replica, node), each replica's own view of the node.
pub fn replicas_csv(runs: &[RunSummary]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(vec![]);
    w.write_record([
        "rep",
        "seed",
        "replica",
        "node",
        "attempts",
        "answered",
        "share",
        "failures",
        "ejections",
        "false_ejections",
        "ejected_time_s",
        "first_ejection_delay_s",
        "recovery_delay_s",
        "fault_attempts",
        "fault_attempts_ok",
    ])?;
    let opt = |x: Option<f64>| x.map(fmt_num).unwrap_or_default();
    for (rep, run) in runs.iter().enumerate() {
        for (r, nodes) in run.replicas.iter().enumerate() {
            for n in nodes {
                w.write_record([
                    rep.to_string(),
                    run.seed.to_string(),
                    r.to_string(),
                    n.name.clone(),
                    n.attempts.to_string(),
                    n.answered.to_string(),
                    fmt_num(n.share),
                    n.failures.to_string(),
                    n.ejections.to_string(),
                    n.false_ejections.to_string(),
                    fmt_num(n.ejected_time_s),
                    opt(n.first_ejection_delay_s),
                    opt(n.recovery_delay_s),
                    n.fault_attempts.to_string(),
                    n.fault_attempts_ok.to_string(),
                ])?;
            }
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

fn fmt_num(x: f64) -> String {
    let mut s = String::new();
    push_num(&mut s, x);
    s
}

/// Appends `x` as `{:.6}` prints it, trailing zeros (and a bare point)
/// trimmed. Most values are whole microseconds (times) or rounded to six
/// places: those print from the integer, without the float formatter
/// (ejections.csv of a fleet has tens of thousands of rows).
fn push_num(buf: &mut String, x: f64) {
    let m = (x * 1e6).round();
    if m.abs() < 1e15 && m / 1e6 == x {
        let m = m.abs() as u64;
        let (int, mut frac) = (m / 1_000_000, m % 1_000_000);
        if x.is_sign_negative() {
            buf.push('-');
        }
        buf.push_str(itoa::Buffer::new().format(int));
        if frac > 0 {
            buf.push('.');
            let mut digits = 6;
            while frac % 10 == 0 {
                frac /= 10;
                digits -= 1;
            }
            let f = itoa::Buffer::new().format(frac).len();
            (f..digits).for_each(|_| buf.push('0'));
            buf.push_str(itoa::Buffer::new().format(frac));
        }
        return;
    }
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        buf.push('0');
    } else {
        buf.push_str(s);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_fields_are_quoted_as_the_csv_crate_quotes_them() {
        for name in [
            "n1",
            "",
            "a,b",
            "say \"hi\"",
            "cr\rlf\n",
            "é.x",
            "#c",
            " sp ",
            "'q'",
        ] {
            let mut w = csv::Writer::from_writer(vec![]);
            w.write_field("x").unwrap();
            w.write_field(name).unwrap();
            w.write_record(None::<&[u8]>).unwrap();
            let theirs = w.into_inner().unwrap();
            let mut ours = b"x,".to_vec();
            csv_field(&mut ours, name);
            ours.push(b'\n');
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(theirs).unwrap()
            );
        }
    }

    #[test]
    fn numbers_print_as_six_places_trimmed() {
        let slow = |x: f64| {
            let s = format!("{x:.6}");
            let s = s.trim_end_matches('0').trim_end_matches('.').to_string();
            if s.is_empty() || s == "-" {
                "0".to_string()
            } else {
                s
            }
        };
        let mut x = 0.000_001f64;
        let mut cases = vec![
            0.0,
            -0.0,
            1.0,
            -1.5,
            0.1,
            59.999_999,
            1e-7,
            123_456.789_012_3,
            2.5e-6,
        ];
        for _ in 0..2000 {
            cases.push(x);
            cases.push(-x);
            cases.push((x * 1e6).round() / 1e6);
            x = x * 1.37 + 0.000_013;
        }
        for us in [1u64, 999_999, 1_000_000, 60_000_001, 12_345_678] {
            cases.push(us as f64 / 1e6);
        }
        for c in cases {
            assert_eq!(fmt_num(c), slow(c), "{c:e}");
        }
    }
    use crate::world::event_log::EventLine;

    #[test]
    fn a_capped_event_log_ends_with_a_note() {
        let doc = serde_json::json!({
            "name": "t", "duration": "1s",
            "clients": {"kind": "open", "rate_per_s": 1.0},
            "nodes": [{"name": "a"}]
        });
        let model = crate::spec::Model::from_document(&doc, "t.json".as_ref()).unwrap();
        let run = crate::world::run(&model, 3);
        let mut log = EventLog::new(1);
        log.lines.push(EventLine {
            t_s: 0.25,
            replica: 0,
            node: "a".into(),
            source: "nginx",
            line: "[error] x, upstream: \"http://a/\"".into(),
        });
        log.dropped = 2;
        let csv = String::from_utf8(events_csv(&[run], &[log]).unwrap()).unwrap();
        assert_eq!(
            csv,
            "rep,seed,t_s,replica,node,source,line\n\
             0,3,0.25,0,a,nginx,\"[error] x, upstream: \"\"http://a/\"\"\"\n\
             0,3,0.25,,,hcsim,event log capped at 1 lines: 2 later lines not written\n"
        );
    }
}
