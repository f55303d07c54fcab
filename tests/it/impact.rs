//! Client impact over every request and overload warnings, through the
//! binary: the two what-if commands that used to mislead.

use crate::{hcsim, tmp};
use serde_json::Value;
use std::path::PathBuf;

/// Runs `hcsim run ARGS` into a fresh directory: summary.json, the table
/// printed, and the directory.
fn run(args: &[&str], name: &str) -> (Value, String, PathBuf) {
    let (doc, table, _, dir) = run_with_stderr(args, name);
    (doc, table, dir)
}

/// Like [`run`], with what the run printed on stderr too.
fn run_with_stderr(args: &[&str], name: &str) -> (Value, String, String, PathBuf) {
    let dir = tmp(name);
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend(["--no-charts", "--out", dir.to_str().unwrap()]);
    let o = hcsim(&all);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8(o.stdout).unwrap();
    let stderr = String::from_utf8(o.stderr).unwrap();
    let doc = serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    (doc, table, stderr, dir)
}

/// A hang with 1 s upstream timeouts at 10k requests/s: the requests that
/// waited for the read timeout reach p99.9, and the timeline shows when.
#[test]
fn hang_at_10k_rps_shows_the_read_timeout_in_p999_and_the_timeline() {
    let (doc, table, dir) = run(
        &[
            "models/hang-max-fails.json",
            "--set",
            "clients.rate_per_s=10000",
        ],
        "impact-hang",
    );
    let l = &doc["client"]["latency_ms"];
    let p999 = l["p999"]["median"].as_f64().unwrap();
    let p99 = l["p99"]["median"].as_f64().unwrap();
    assert!(
        (500.0..=2500.0).contains(&p999),
        "p99.9 {p999} ms is not of the read timeout's order (1 s)"
    );
    assert!(l["max"]["median"].as_f64().unwrap() >= 1000.0);
    assert!(p999 > p99);
    let slow = doc["client"]["slower_than"]["100ms"]["median"]
        .as_f64()
        .unwrap();
    assert!(slow > 0.0, "requests slower than 100 ms: {slow}");
    assert!(table.contains("p99.9 "), "{table}");
    assert!(table.contains("slower than  100ms: "), "{table}");
    // timeline.csv: the slow buckets are those of the hang (10 s to 40 s, and
    // the retries ending up to the read timeout after it)
    let csv = std::fs::read_to_string(dir.join("timeline.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (t, p99c) = (col("t_s"), col("latency_p99_ms"));
    let slow_buckets: Vec<f64> = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r[p99c].parse::<f64>().is_ok_and(|v| v >= 500.0))
        .map(|r| r[t].parse().unwrap())
        .collect();
    assert!(!slow_buckets.is_empty(), "no slow bucket in the timeline");
    assert!(
        slow_buckets.iter().all(|&t| (10.0..=41.0).contains(&t)),
        "slow buckets outside the hang: {slow_buckets:?}"
    );
}

/// E2 at 50k requests/s is far past two nodes of 64 workers × 5 ms: the run
/// says so instead of printing "errors 0 timeouts 0".
#[test]
fn e2_at_50k_rps_warns_of_overload() {
    let (doc, table, stderr, _) = run_with_stderr(
        &[
            "models/e2-p02-flaky-2pct.json",
            "--set",
            "clients.rate_per_s=50000",
        ],
        "impact-e2",
    );
    let warnings = doc["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w["code"] == "overload"),
        "{warnings:?}"
    );
    let messages: Vec<&str> = warnings
        .iter()
        .filter_map(|w| w["message"].as_str())
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("unfinished")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("node B: workers busy")),
        "{messages:?}"
    );
    // A fails 2% of its requests and is ejected; B takes the load and saturates
    let b = &doc["nodes"][1];
    assert_eq!(b["name"], "B");
    let u = b["utilization"]["median"].as_f64().unwrap();
    assert!(u > 0.99, "B: utilization {u}");
    assert!(b["backlog_refused"]["median"].as_f64().unwrap() > 0.0);
    assert!(b["peak_queue"]["median"].as_f64().unwrap() >= 511.0);
    assert!(stderr.contains("warning (overload): "), "{stderr}");
    assert!(!table.contains("warning"), "warnings go to stderr: {table}");
    assert!(table.contains("busy"), "{table}");
}

/// `--quiet` and `--format json` keep the overload warnings on stderr: a
/// script must not report a saturated system's figures without a sign.
#[test]
fn overload_warnings_reach_stderr_with_quiet_and_json() {
    for (mode, name) in [
        ("--quiet", "impact-quiet"),
        ("--format=json", "impact-json"),
    ] {
        let (_, stdout, stderr, _) = run_with_stderr(
            &[
                "models/e2-p02-flaky-2pct.json",
                "--set",
                "clients.rate_per_s=50000",
                "--set",
                "duration=5s",
                mode,
            ],
            name,
        );
        assert!(stderr.contains("warning (overload): "), "{mode}: {stderr}");
        assert!(!stdout.contains("warning ("), "{mode}: {stdout}");
    }
}

/// A model well inside its capacity has no warning, and a light node's
/// utilization is its offered load: 100 requests/s × 5 ms over 2 nodes of
/// 64 workers ≈ 0.4%.
#[test]
fn a_light_run_has_no_warning_and_little_utilization() {
    let (doc, _, _) = run(&["models/e2-p02-flaky-2pct.json"], "impact-light");
    assert_eq!(doc["warnings"], Value::Array(vec![]));
    let total: f64 = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["utilization"]["median"].as_f64().unwrap())
        .sum();
    // 100/s × 5 ms = 0.5 busy workers of 128 (retries add a little)
    assert!(
        (total * 64.0 - 0.5).abs() < 0.05,
        "sum of utilizations {total}"
    );
}
