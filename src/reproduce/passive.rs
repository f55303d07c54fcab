//! E1–E5: nginx passive health checking (seeds 000, 002, 003).

use super::{Row, load, replicate, traced};
use crate::engine::rng::rep_seed;
use crate::error::Error;
use crate::metrics::RunSummary;
use crate::stats::median;
use serde_json::json;
use std::path::Path;

fn fives(s: &RunSummary) -> u64 {
    s.client
        .status
        .iter()
        .filter(|(k, _)| k.starts_with('5'))
        .map(|(_, v)| *v)
        .sum()
}

fn answered_by(s: &RunSummary) -> String {
    let mut parts: Vec<String> = s
        .client
        .status
        .iter()
        .filter(|(k, _)| !k.starts_with('2'))
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    for n in &s.nodes {
        if n.answered > 0 {
            parts.push(format!("{}: {}", n.name, n.answered));
        }
    }
    parts.join(", ")
}

fn e1(models: &Path) -> Result<Vec<Row>, Error> {
    let mut rows = vec![];
    for (case, file, seed_5xx, seed_who, band) in [
        ("(a) A killed", "e1a-refused.json", 0, "B: 150", 0..=0),
        (
            "(b) A 503, default next_upstream",
            "e1b-503-default.json",
            75,
            "503: 75, B: 75",
            70..=80,
        ),
        (
            "(c) A 503, next_upstream http_503",
            "e1c-503-next-upstream.json",
            0,
            "B: 150",
            0..=0,
        ),
    ] {
        let model = load(models, file, &[])?;
        let s = crate::world::run(&model, model.seed);
        let f = fives(&s);
        rows.push(Row::new(
            "E1",
            case,
            "client 5xx in s 1–4 (of 150)",
            seed_5xx.to_string(),
            f.to_string(),
            band.contains(&f),
        ));
        rows.push(Row::info(
            "E1",
            case,
            "who answered",
            seed_who,
            answered_by(&s),
            "info",
        ));
        if case.starts_with("(a)") {
            rows.push(Row::info(
                "E1",
                case,
                "failed connects to A in s 1–4",
                "5 `connect() failed` lines",
                s.nodes[0].failures.to_string(),
                "differs: max_fails=3 ejects A after its 3rd refusal; upstream keepalive, which the seed's nginx 1.31 used, is not modelled",
            ));
        }
    }
    Ok(rows)
}

fn e2(models: &Path) -> Result<Vec<Row>, Error> {
    let mut rows = vec![];
    let table = [
        (0, 0.50, "0.0 s", "0"),
        (2, 0.21, "10.5 s", "2"),
        (10, 0.06, "16.1 s", "3"),
        (30, 0.02, "17.4 s", "3"),
        (70, 0.00, "17.5 s", "1"),
    ];
    for (pct, seed_share, seed_ejected, seed_ejections) in table {
        let file = format!("e2-p{pct:02}-flaky-{pct}pct.json");
        let model = load(models, &file, &[])?;
        let runs = replicate(&model, 21);
        let share =
            median(&runs.iter().map(|r| r.nodes[0].share).collect::<Vec<_>>()).unwrap_or(0.0);
        let max5 = runs.iter().map(fives).max().unwrap_or(0);
        let ejected = median(
            &runs
                .iter()
                .map(|r| r.nodes[0].ejected_time_s)
                .collect::<Vec<_>>(),
        )
        .unwrap_or(0.0);
        let ejections = median(
            &runs
                .iter()
                .map(|r| r.nodes[0].ejections as f64)
                .collect::<Vec<_>>(),
        )
        .unwrap_or(0.0);
        let case = format!("p = {pct}%");
        rows.push(Row::new(
            "E2",
            &case,
            "A's share of answers (median of 21 runs)",
            format!("{:.0}%", seed_share * 100.0),
            format!("{:.1}%", share * 100.0),
            (share - seed_share).abs() <= 0.06,
        ));
        rows.push(Row::new(
            "E2",
            &case,
            "client 5xx (max over runs)",
            "0",
            max5.to_string(),
            max5 == 0,
        ));
        rows.push(Row::info(
            "E2",
            &case,
            "A ejected, total (median)",
            seed_ejected,
            format!("{ejected:.1} s"),
            "info",
        ));
        rows.push(Row::info(
            "E2",
            &case,
            "ejections (median)",
            seed_ejections,
            format!("{ejections:.0}"),
            "info",
        ));
    }
    Ok(rows)
}

/// Failed attempts on A of one run, as times in seconds.
fn failure_times(model: &crate::spec::Model, seed: u64) -> Vec<f64> {
    let (_, lines) = traced(model, seed);
    lines
        .iter()
        .filter(|l| l.node == "A" && l.charge == "failed")
        .map(|l| l.t_s)
        .collect()
}

fn e3(models: &Path) -> Result<Vec<Row>, Error> {
    let mut rows = vec![];
    for (ft, seed_delays, seed_pattern, band) in [
        (2, "2.7 / 2.5 / 2.3 s", "[1.0 1.0 1.1 3.7]", (2.0, 3.2)),
        (5, "2.3 / 3.1 / 2.9 s", "[1.0 1.0 1.1]", (2.0, 3.2)),
        (10, "7.9 / 7.6 / 7.4 s", "[1.0 1.0 1.1]", (7.0, 8.2)),
    ] {
        let file = format!("e3-ft{ft:02}-recovery.json");
        let mut all = vec![];
        let mut per_t0 = vec![];
        let mut pattern_ok = true;
        let mut fourths = 0;
        let mut example = String::new();
        for t0 in ["1s", "1.4s", "1.8s"] {
            let model = load(models, &file, &[("faults[0].at", json!(t0))])?;
            let runs = replicate(&model, 7);
            let d: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.nodes[0].recovery_delay_s)
                .collect();
            per_t0.push(median(&d).unwrap_or(f64::NAN));
            all.extend(d);
            let start = model.faults[0].start.as_secs_f64();
            for r in 0..7 {
                let times = failure_times(&model, rep_seed(model.seed, r));
                // Three failures as the fault starts; with fail_timeout 2s the
                // trial after the first ejection usually falls inside the 3 s
                // fault and fails once more (unless the clock phase puts it
                // just after the fault, as the seed article notes).
                let first3 =
                    times.len() >= 3 && times[..3].iter().all(|&t| t >= start && t < start + 0.2);
                let end = start + 3.0;
                let rest_ok = match times.get(3) {
                    None => true,
                    Some(&t) => ft == 2 && times.len() == 4 && t > start + 2.0 && t < end,
                };
                fourths += usize::from(times.len() == 4);
                pattern_ok &= first3 && rest_ok;
                if t0 == "1s" && r == 0 {
                    let s: Vec<String> = times.iter().map(|t| format!("{t:.1}")).collect();
                    example = format!("[{}]", s.join(" "));
                }
            }
        }
        if ft == 2 {
            pattern_ok &= fourths * 2 > 21;
        }
        let m = median(&all).unwrap_or(f64::NAN);
        let case = format!("fail_timeout {ft}s");
        rows.push(Row::new(
            "E3",
            &case,
            "recovery delay, median of 21 runs (per t0 = 1.0 / 1.4 / 1.8 s)",
            seed_delays,
            format!(
                "{m:.2} s ({:.1} / {:.1} / {:.1})",
                per_t0[0], per_t0[1], per_t0[2]
            ),
            m >= band.0 && m <= band.1,
        ));
        rows.push(Row::new(
            "E3",
            &case,
            "failed attempts on A during the fault (t0 = 1.0 s)",
            seed_pattern,
            format!("{example}; a 4th failure in {fourths}/21 runs"),
            pattern_ok,
        ));
    }
    Ok(rows)
}

fn e4(models: &Path) -> Result<Vec<Row>, Error> {
    let model = load(models, "e4-stopped-backend.json", &[])?;
    let (s, lines) = traced(&model, model.seed);
    let read_timeout = model.gateway.proxy_read_timeout.as_secs_f64();
    let hung = lines
        .iter()
        .filter(|l| l.node == "A" && l.result == "read_timeout")
        .count();
    let max_ms = s.client.latency_ms.max.unwrap_or(0.0);
    let slow_ok = hung > 0 && s.client.errors == 0 && (max_ms / 1000.0 - read_timeout).abs() < 0.1;
    // The pattern: A gets its turn during the first read timeout, none during
    // the fail_timeout after the last of those attempts timed out.
    let starts: Vec<f64> = lines
        .iter()
        .filter(|l| l.node == "A")
        .map(|l| {
            l.t_s
                - if l.result == "read_timeout" {
                    read_timeout
                } else {
                    0.0
                }
        })
        .collect();
    let first_timeout = starts.iter().copied().fold(f64::INFINITY, f64::min) + read_timeout;
    let early: Vec<f64> = starts
        .iter()
        .copied()
        .filter(|&t| t <= first_timeout + 1e-3)
        .collect();
    let last_timeout = early.iter().copied().fold(0.0, f64::max) + read_timeout;
    let fail_timeout = 30.0;
    let quiet = !starts
        .iter()
        .any(|&t| t > first_timeout + 1e-3 && t <= last_timeout + fail_timeout);
    let first_window = early.len();
    Ok(vec![
        Row::new(
            "E4",
            "A stopped, read timeout 60 s",
            "requests to A: hang ≈ proxy_read_timeout, then succeed elsewhere",
            "60 s, client sees success",
            format!(
                "{hung} requests took {:.2} s; client errors {}",
                max_ms / 1000.0,
                s.client.errors
            ),
            slow_ok,
        ),
        Row::new(
            "E4",
            "A stopped, read timeout 60 s",
            "pattern: A still gets its turn during the first read timeout, none in the fail_timeout after",
            "turns in the first 60 s, none for 30 s after",
            format!(
                "{first_window} attempts until the first timeout ({first_timeout:.0} s); {} from then to {:.0} s",
                if quiet { "none" } else { "some" },
                last_timeout + fail_timeout
            ),
            first_window > 0 && quiet,
        ),
    ])
}

fn e5(models: &Path) -> Result<Vec<Row>, Error> {
    let first = load(models, "e5-client-timeout-first.json", &[])?;
    let s = crate::world::run(&first, first.seed);
    let frac = s.client.timeouts as f64 / s.client.requests.max(1) as f64;
    let fixed = load(models, "e5-connect-timeout-shorter.json", &[])?;
    let f = crate::world::run(&fixed, fixed.seed);
    Ok(vec![
        Row::new(
            "E5",
            "client timeout 5 s < upstream 60 s",
            "A ejected? / requests timing out",
            "never; a steady fraction times out",
            format!(
                "ejections {}; {:.0}% of requests timed out",
                s.nodes[0].ejections,
                frac * 100.0
            ),
            s.nodes[0].ejections == 0 && frac > 0.3,
        ),
        Row::new(
            "E5",
            "proxy_connect_timeout 2 s < client 5 s",
            "A ejected? / client timeouts",
            "ejected; timeouts stop",
            format!(
                "ejected after {:.1} s; client timeouts {}",
                f.nodes[0].first_ejection_delay_s.unwrap_or(f64::NAN),
                f.client.timeouts
            ),
            f.nodes[0].ejections > 0 && f.client.timeouts == 0,
        ),
    ])
}

pub(super) fn rows(models: &Path) -> Result<Vec<Row>, Error> {
    let mut rows = e1(models)?;
    rows.extend(e2(models)?);
    rows.extend(e3(models)?);
    rows.extend(e4(models)?);
    rows.extend(e5(models)?);
    Ok(rows)
}
