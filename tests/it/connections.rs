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

/// A random model the property test found: HAProxy keeping connections
/// (`http-reuse safe`), a 0.9 ms round trip, a 10 ms `timeout server` and a
/// node that resets then crashes. A request on a kept connection reaches the
/// node without a connect before it, so its read deadline is closer than a
/// fresh connection's: the queue took it out of order and stopped
/// ("lane 6 is not monotonic"). It runs, every request accounted for.
#[test]
fn a_read_deadline_on_a_kept_connection_may_precede_a_fresh_one_s() {
    let dir = tmp("conn-lane-order");
    std::fs::create_dir_all(&dir).unwrap();
    let model = serde_json::json!({
        "name": "prop", "seed": 1225944092696179997u64, "duration": "1690ms",
        "timeline_bucket": "100ms",
        "clients": {"kind": "open", "rate_per_s": 323.0, "arrivals": "poisson",
                    "connection": "keepalive", "method": "GET"},
        "gateway": {
            "flavor": "haproxy", "balancer": "round_robin", "workers": 1, "zone": false,
            "rtt": "897us", "proxy_connect_timeout": "10ms", "proxy_read_timeout": "10ms",
            "proxy_next_upstream": ["http_429"], "proxy_next_upstream_timeout": "0s",
            "proxy_next_upstream_tries": 0,
            "haproxy": {"redispatch": false, "retries": 0},
            "pool": {"kind": "haproxy", "http_reuse": "safe", "option": "http_keep_alive",
                     "pool_purge_delay": "300ms"}
        },
        "nodes": [{"name": "n0", "backlog": 2, "max_conns": 4, "workers": 1, "weight": 1,
                   "service_time": {"dist": "exponential", "mean": "5ms"}}],
        "faults": [
            {"kind": "crash", "node": "n0", "at": "804ms"},
            {"kind": "flaky", "node": "n0", "at": "486ms", "p": 0.18, "status": 500,
             "error": "reset"}
        ],
        "policy": {"kind": "hystrix"}
    });
    let path = dir.join("model.json");
    std::fs::write(&path, model.to_string()).unwrap();
    let out = dir.join("out");
    crate::robust::ok(hcsim(&[
        "run",
        path.to_str().unwrap(),
        "--no-charts",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]));
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let c = &s["runs"][0]["client"];
    let requests = c["requests"].as_u64().unwrap();
    assert!(requests > 400, "{requests}");
    let statuses: u64 = c["status"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        statuses + c["timeouts"].as_u64().unwrap() + c["unfinished"].as_u64().unwrap(),
        requests,
        "{c}"
    );
}
