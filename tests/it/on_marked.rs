//! HAProxy's server `on-marked-down shutdown-sessions` and `on-marked-up
//! shutdown-backup-sessions` (`nodes[].on_marked_down`, `on_marked_up`):
//! the binary on a model whose checked server with long requests goes DOWN,
//! and the import and export of the keywords.

use crate::{hcsim, tmp};
use hcsim::config::export;
use hcsim::config::import::{self, Options, Workload};
use serde_json::{Value, json};

/// A and B behind HAProxy's HTTP checks (`inter 500ms rise 2 fall 2`); from
/// 2 s to 4 s A's work takes 5 s more: its checks time out and mark it DOWN,
/// while the requests it took in that window run for 5 s.
fn model(a: Value) -> Value {
    let mut a = a;
    a["name"] = json!("A");
    a["service_time"] = json!({"dist": "constant", "value": "10ms"});
    json!({
        "name": "shutdown-sessions", "seed": 1, "duration": "10s",
        "clients": {"kind": "open", "rate_per_s": 20.0, "timeout": "30s"},
        "gateway": {"flavor": "haproxy"},
        "nodes": [a, {"name": "B", "service_time": {"dist": "constant", "value": "10ms"}}],
        "faults": [{"kind": "slow", "node": "A", "at": "2s", "for": "2s", "extra": "5s"}],
        "policies": [{"kind": "active_probe", "flavor": "haproxy", "probe": "http",
                      "inter": "500ms", "rise": 2, "fall": 2}]
    })
}

/// `hcsim run --trace --events` on `doc`: summary.json, the attempts
/// (time, node, result) and the time of the first DOWN line.
fn run(name: &str, doc: Value) -> (Value, Vec<(f64, String, String)>, f64) {
    let (_, out) = crate::run_doc(
        name,
        &doc,
        &[
            "--reps", "1", "--format", "json", "-q", "--trace", "--events",
        ],
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let attempts = std::fs::read_to_string(out.join("attempts.csv")).unwrap();
    let attempts = attempts
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[2].parse().unwrap(), f[5].to_string(), f[6].to_string())
        })
        .collect();
    let events = std::fs::read_to_string(out.join("events.csv")).unwrap();
    let down = events
        .lines()
        .find(|l| l.contains("/A is DOWN"))
        .map(|l| l.split(',').nth(2).unwrap().parse().unwrap())
        .expect("A goes DOWN");
    (summary, attempts, down)
}

/// With `on_marked_down`, A's requests in flight end at the DOWN instant
/// with 502 (what HAProxy 2.6.12 answered, `DH--`, docs/calibration.md),
/// counted in `client.status` and not retried; without it they complete
/// with 200 after their 5 s.
#[test]
fn a_server_marked_down_loses_its_requests_in_flight_with_shutdown_sessions() {
    let (with, attempts, down) = run(
        "on-marked-down",
        model(json!({"on_marked_down": "shutdown_sessions"})),
    );
    let (without, attempts0, down0) = run("on-marked-down-0", model(json!({})));
    assert_eq!(down, down0, "the keyword does not change the checks");
    let killed: Vec<_> = attempts.iter().filter(|a| a.2 == "reset").collect();
    assert!(!killed.is_empty());
    assert!(
        killed.iter().all(|a| a.0 == down && a.1 == "A"),
        "{killed:?} vs {down}"
    );
    let n = |s: &Value, k: &str| s["client"]["status"][k]["mean"].as_f64().unwrap_or(0.0);
    assert_eq!(n(&with, "502"), killed.len() as f64);
    let requests = with["client"]["requests"]["mean"].as_f64().unwrap();
    assert_eq!(
        attempts.len() as f64,
        requests,
        "one attempt per request: none retried"
    );
    assert_eq!(n(&without, "502"), 0.0);
    assert_eq!(n(&without, "200"), requests);
    assert!(attempts0.iter().all(|a| a.2 == "200"));
    let max = |s: &Value| s["client"]["latency_ms"]["max"]["mean"].as_f64().unwrap();
    assert!(max(&without) >= 5000.0, "{}", max(&without));
    assert!(
        max(&with) <= (down - 2.0) * 1000.0 + 1.0,
        "{} vs {down}",
        max(&with)
    );
}

/// A model asking for the keywords without an HAProxy gateway, or without
/// HAProxy's checks to mark a server, is refused at the field.
#[test]
fn on_marked_needs_haproxy_and_its_checks() {
    let dir = tmp("on-marked-invalid");
    for (patch, field) in [
        (
            json!({"gateway": {"flavor": "nginx"}, "policies": []}),
            "nodes[0].on_marked_down",
        ),
        (
            json!({"policies": [{"kind": "none"}]}),
            "nodes[0].on_marked_down",
        ),
    ] {
        let mut doc = model(json!({"on_marked_down": "shutdown_sessions"}));
        for (k, v) in patch.as_object().unwrap() {
            doc[k] = v.clone();
        }
        let m = dir.join("m.json");
        std::fs::write(&m, doc.to_string()).unwrap();
        let o = hcsim(&["check", m.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(field), "{err}");
    }
}

/// `server s1 10.0.0.1:80 check on-marked-down shutdown-sessions` (and
/// `on-marked-up shutdown-backup-sessions`) import without a warning into
/// the node, are written back, and `haproxy -c` takes the export.
#[test]
fn on_marked_keywords_import_and_export() {
    let dir = tmp("on-marked-import");
    let conf = "defaults\n    mode http\n    timeout connect 1s\n    timeout client 30s\n    timeout server 30s\n\nfrontend fe\n    bind :8080\n    default_backend app\n\nbackend app\n    option httpchk GET /health\n    server s1 10.0.0.1:80 check on-marked-down shutdown-sessions\n    server s2 10.0.0.2:80 check on-marked-up shutdown-backup-sessions\n    server s3 10.0.0.3:80 check backup\n";
    let p = dir.join("haproxy.cfg");
    std::fs::write(&p, conf).unwrap();
    let im = import::read(&p, &Options::default(), &Workload::default()).unwrap();
    crate::import::assert_nothing_unmodelled(&im, "on-marked");
    assert_eq!(
        im.doc["nodes"][0]["on_marked_down"],
        json!("shutdown_sessions")
    );
    assert_eq!(
        im.doc["nodes"][1]["on_marked_up"],
        json!("shutdown_backup_sessions")
    );
    assert!(im.doc["nodes"][2].get("on_marked_up").is_none());
    let m = im.model().unwrap();
    let out = export::haproxy::config(&m, &export::Options::of(&m)).unwrap();
    assert!(out.contains(" on-marked-down shutdown-sessions"), "{out}");
    assert!(
        out.contains(" on-marked-up shutdown-backup-sessions"),
        "{out}"
    );
    let exported = dir.join("exported.cfg");
    crate::import::assert_haproxy_accepts(&exported, &out);
    let again = import::read(&exported, &Options::default(), &Workload::default()).unwrap();
    assert_eq!(
        again.doc["nodes"][0]["on_marked_down"],
        json!("shutdown_sessions")
    );
    // Another action is HAProxy's own error.
    std::fs::write(
        &p,
        conf.replace("shutdown-sessions", "shutdown-backup-sessions"),
    )
    .unwrap();
    let e = import::read(&p, &Options::default(), &Workload::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("on-marked-down: expected shutdown-sessions"),
        "{e}"
    );
}
