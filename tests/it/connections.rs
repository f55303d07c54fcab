//! Connections kept for reuse, through the binary: the import of an nginx
//! `keepalive` upstream and a `stop_accepting` fault on it, the outputs
//! that count connections (table, summary.json, sweeps) and the event log's
//! lines for them.

use crate::{hcsim, tmp};
use serde_json::Value;
use std::path::Path;

const UPSTREAM: &str = "worker_processes 1;
events {}
http {
    upstream api {
        server 10.0.0.1:8080 max_fails=1 fail_timeout=10s;
        server 10.0.0.2:8080 max_fails=1 fail_timeout=10s;
        keepalive 16;
    }
    server {
        listen 80;
        location / {
            proxy_pass http://api;
            HTTP_VERSION
            proxy_set_header Connection \"\";
        }
    }
}
";

/// Imports `conf` and runs it with A closing its listening socket from 5 s
/// to 10 s: node A's (ejections, share).
fn stop_accepting(dir: &Path, conf: &str) -> (f64, f64) {
    let file = dir.join("nginx.conf");
    std::fs::write(&file, conf).unwrap();
    let model = dir.join("m.json");
    let o = hcsim(&[
        "import",
        file.to_str().unwrap(),
        "--rps",
        "100",
        "--duration",
        "20s",
        "-o",
        model.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = dir.join("out");
    let fault = r#"faults=[{"kind":"stop_accepting","node":"10.0.0.1:8080","at":"5s","for":"5s"}]"#;
    let o = hcsim(&[
        "run",
        model.to_str().unwrap(),
        "--reps",
        "3",
        "--no-charts",
        "-q",
        "--set",
        fault,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let a = &s["nodes"][0];
    (
        a["ejections"]["max"].as_f64().unwrap(),
        a["share"]["median"].as_f64().unwrap(),
    )
}

#[test]
fn an_imported_keepalive_upstream_keeps_serving_a_node_that_stops_accepting() {
    let dir = tmp("conn-stop-accepting");
    // HTTP/1.1 with the Connection header cleared: the kept connection
    // carries A's share, and nothing is refused.
    let (ejections, share) = stop_accepting(
        &dir,
        &UPSTREAM.replace("HTTP_VERSION", "proxy_http_version 1.1;"),
    );
    assert_eq!(ejections, 0.0);
    assert!((share - 0.5).abs() < 0.01, "{share}");
    // nginx's HTTP/1.0: no reuse, A is disabled as after a crash.
    let (ejections, share) = stop_accepting(&dir, &UPSTREAM.replace("HTTP_VERSION", ""));
    assert_eq!(ejections, 1.0);
    assert!(share < 0.45, "{share}");
}

#[test]
fn connections_are_counted_in_the_table_the_summary_and_sweeps_and_logged() {
    let dir = tmp("conn-outputs");
    let out = dir.join("race");
    let o = hcsim(&[
        "run",
        "models/keepalive-idle-race.json",
        "--reps",
        "3",
        "--no-charts",
        "--events",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("reset on reuse"), "{table}");
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let c = &s["nodes"][0]["connections"];
    assert!(c["reused_share"]["median"].as_f64().unwrap() > 0.9, "{c}");
    // A few races in ten minutes: some replications have one.
    let races: f64 = s["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["connections"]["reset_on_reuse"]["max"].as_f64().unwrap())
        .sum();
    assert!(races >= 1.0, "{}", s["nodes"]);
    let events = std::fs::read_to_string(out.join("events.csv")).unwrap();
    assert!(
        events.contains("upstream prematurely closed connection while reading response header"),
        "{events}"
    );
    // A model without a pool reports no connections.
    let plain = dir.join("plain");
    let o = hcsim(&[
        "run",
        "models/e2-p02-flaky-2pct.json",
        "--reps",
        "1",
        "--no-charts",
        "-q",
        "--out",
        plain.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let s = std::fs::read_to_string(plain.join("summary.json")).unwrap();
    assert!(!s.contains("\"connections\""));
}

#[test]
fn an_envoy_overflow_is_a_503_outlier_detection_never_counts() {
    let dir = tmp("conn-envoy");
    let o = hcsim(&[
        "run",
        "models/envoy-circuit-breaker-overflow.json",
        "--reps",
        "2",
        "--no-charts",
        "-q",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let c = &s["nodes"][2];
    assert!(c["connections"]["overflow"]["median"].as_f64().unwrap() > 100.0);
    assert_eq!(c["ejections"]["max"], 0.0);
    assert!(s["client"]["status"]["503"]["median"].as_f64().unwrap() > 100.0);
}
