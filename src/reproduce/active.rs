//! Rows of the seed-comparison table for E6–E8 (seed 004): active probing,
//! the heartbeat blind spot and the prober's thread pool. Each row runs the
//! experiment's models from `models/` with the replications the seed used and
//! says whether hcsim lands in the acceptance band.

use super::Row;
use crate::error::Error;
use crate::metrics::RunSummary;
use crate::stats::median;
use std::path::Path;

/// Runs `<models>/<name>.json` `reps` times from its own seed.
fn runs(models: &Path, name: &str, reps: u64) -> Result<Vec<RunSummary>, Error> {
    let model = crate::spec::Model::load(&models.join(format!("{name}.json")))?;
    Ok(super::replicate(&model, reps))
}

/// Node 0's first-ejection delays, for the runs that ejected it.
fn delays(runs: &[RunSummary]) -> Vec<f64> {
    runs.iter()
        .filter_map(|r| r.nodes[0].first_ejection_delay_s)
        .collect()
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

fn verdict(ok: bool) -> String {
    if ok { "within" } else { "outside" }.to_string()
}

fn e6(models: &Path) -> Result<Vec<Row>, Error> {
    // (model, I, K, fault, seed min / median / max)
    let cases = [
        ("e6-i05-k1-crash", 0.5, 1.0, "crash", [0.00, 0.17, 0.48]),
        ("e6-i05-k1-hang", 0.5, 1.0, "hang", [0.40, 0.59, 0.80]),
        ("e6-i05-k3-crash", 0.5, 3.0, "crash", [1.01, 1.25, 1.45]),
        ("e6-i05-k3-hang", 0.5, 3.0, "hang", [1.33, 1.54, 1.75]),
        ("e6-i10-k1-crash", 1.0, 1.0, "crash", [0.01, 0.18, 0.78]),
        ("e6-i10-k1-hang", 1.0, 1.0, "hang", [0.32, 0.84, 1.30]),
        ("e6-i10-k3-crash", 1.0, 3.0, "crash", [2.04, 2.67, 2.95]),
        ("e6-i10-k3-hang", 1.0, 3.0, "hang", [2.48, 2.81, 3.26]),
    ];
    let mut rows = Vec::new();
    for (name, i, k, fault, seed) in cases {
        let rs = runs(models, name, 15)?;
        let d = sorted(&delays(&rs));
        let timeout = if fault == "hang" { 0.3 } else { 0.0 };
        // A refused connect takes one round trip (0.2 ms) to come back.
        let (lo, hi) = ((k - 1.0) * i, k * i + timeout + 0.001);
        let m = median(&d);
        let ok = d.len() == rs.len()
            && d.iter().all(|x| (lo..=hi).contains(x))
            && m.is_some_and(|m| (m - seed[1]).abs() <= 0.3);
        let hcsim = match (d.first(), m, d.last()) {
            (Some(a), Some(m), Some(b)) => format!("{a:.2} / {m:.2} / {b:.2} s"),
            _ => "never ejected".into(),
        };
        rows.push(Row {
            experiment: "E6",
            case: format!("I = {i} s, K = {k}, {fault}"),
            metric: format!(
                "ejection delay min / median / max, 15 runs (band: all in [{lo:.1}, {:.1}] s, median ± 0.3 s)",
                k * i + timeout
            ),
            seed: format!("{:.2} / {:.2} / {:.2} s", seed[0], seed[1], seed[2]),
            hcsim,
            verdict: verdict(ok),
        });
    }
    Ok(rows)
}

fn e7(models: &Path) -> Result<Vec<Row>, Error> {
    let mut rows = Vec::new();
    let ejected = |rs: &[RunSummary]| {
        let d = delays(rs);
        match median(&d) {
            Some(m) => format!("{m:.2} s ({}/{} ejected)", d.len(), rs.len()),
            None => format!("never (0/{} ejected)", rs.len()),
        }
    };
    // Heartbeat + TTL 1.5 s.
    let crash = runs(models, "e7-heartbeat-ttl-crash", 5)?;
    let d = delays(&crash);
    rows.push(Row {
        experiment: "E7",
        case: "heartbeat + TTL 1.5 s, crash".into(),
        metric: "ejection delay, median of 5 (band: 1.0–1.6 s, 5/5 ejected)".into(),
        seed: "1.32 s (5/5 ejected)".into(),
        hcsim: ejected(&crash),
        verdict: verdict(d.len() == 5 && median(&d).is_some_and(|m| (1.0..=1.6).contains(&m))),
    });
    let hang = runs(models, "e7-heartbeat-ttl-hang", 5)?;
    rows.push(Row {
        experiment: "E7",
        case: "heartbeat + TTL 1.5 s, hang".into(),
        metric: "runs ejected (band: 0/5)".into(),
        seed: "never (0/5 ejected)".into(),
        hcsim: ejected(&hang),
        verdict: verdict(delays(&hang).is_empty()),
    });
    // Probe I = 0.5 s, K = 3 on E6's fixed grid, and with a sleep after each round.
    for (fault, seed_median) in [("crash", 1.33), ("hang", 2.24)] {
        for (suffix, how) in [
            ("", "fixed grid, as E6"),
            ("-fixed-delay", "sleep after each round"),
        ] {
            let rs = runs(models, &format!("e7-probe-{fault}{suffix}"), 5)?;
            let d = delays(&rs);
            let close = median(&d).is_some_and(|m| (m - seed_median).abs() <= 0.3);
            // The acceptance is that the probe ejects (5/5); the delay is
            // compared for information: the seed's 2.24 s for a hang fits a
            // prober that sleeps I after each round, not E6's fixed grid.
            let verdict = if d.len() != 5 {
                "outside".to_string()
            } else if close {
                "within".to_string()
            } else {
                "differs: E6's fixed grid ejects a hang after (K−1)·I + timeout; the seed's E7 prober slept I after each round (next row)".to_string()
            };
            rows.push(Row {
                experiment: "E7",
                case: format!("probe I = 0.5 s, K = 3 ({how}), {fault}"),
                metric: "ejection delay, median of 5 (band: 5/5 ejected; median ± 0.3 s shown)"
                    .into(),
                seed: format!("{seed_median:.2} s (5/5 ejected)"),
                hcsim: ejected(&rs),
                verdict,
            });
        }
    }
    for fault in ["crash", "hang"] {
        for policy in ["heartbeat-ttl", "probe"] {
            let rs = runs(models, &format!("e7-{policy}-{fault}"), 5)?;
            let sent: u64 = rs.iter().map(|r| r.nodes[0].fault_attempts).sum();
            let ok: u64 = rs.iter().map(|r| r.nodes[0].fault_attempts_ok).sum();
            rows.push(Row {
                experiment: "E7",
                case: format!(
                    "{}, {fault}",
                    if policy == "probe" {
                        "probe"
                    } else {
                        "heartbeat + TTL"
                    }
                ),
                metric: "requests to it after the fault that succeeded, 5 runs (band: 0)".into(),
                seed: "0 / 50".into(),
                hcsim: format!("{ok} / {sent}"),
                verdict: verdict(ok == 0),
            });
        }
    }
    Ok(rows)
}

fn e8(models: &Path) -> Result<Vec<Row>, Error> {
    let mut rows = Vec::new();
    for (threads, seed, lo, hi) in [
        (10, "2.07 s (2.06–2.07)", 2.0, 2.2),
        (50, "1.08 s (1.06–1.08)", 1.0, 1.2),
        (200, "1.07 s (1.07–1.08)", 1.0, 1.2),
    ] {
        let rs = runs(models, &format!("e8-threads-{threads}"), 1)?;
        let p = &rs[0].probe_rounds;
        let hcsim = match (p.min_s, p.median_s, p.max_s) {
            (Some(a), Some(m), Some(b)) => format!("{m:.2} s ({a:.2}–{b:.2}), {} rounds", p.rounds),
            _ => "no round finished".into(),
        };
        let ok = p.rounds >= 3
            && [p.min_s, p.max_s]
                .iter()
                .all(|x| x.is_some_and(|x| (lo..=hi).contains(&x)));
        rows.push(Row {
            experiment: "E8",
            case: format!("200 nodes, 20 hung, timeout 1 s, {threads} threads"),
            metric: format!("one round, median (range) (band: {lo:.1}–{hi:.1} s)"),
            seed: seed.into(),
            hcsim,
            verdict: verdict(ok),
        });
    }
    Ok(rows)
}

/// The rows for E6, E7 and E8, in that order.
pub(super) fn rows(models: &Path) -> Result<Vec<Row>, Error> {
    let mut rows = e6(models)?;
    rows.extend(e7(models)?);
    rows.extend(e8(models)?);
    Ok(rows)
}
