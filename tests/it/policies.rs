//! Acceptance properties of the ratio policies, on the policy-comparison
//! models (`models/ratio-flaky-*`, `models/quiet-node-*`), shortened where
//! that keeps the property.

use hcsim::metrics::{NodeSummary, RunSummary};
use hcsim::spec::{self, Model};
use serde_json::{Value, json};
use std::path::Path;

/// Loads a model, applies `(path, value)` overrides, and runs it with its seed.
fn run(model: &str, sets: &[(&str, Value)]) -> RunSummary {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(model);
    let mut doc = spec::read_document(&path).expect("model reads");
    for (k, v) in sets {
        spec::set_path(&mut doc, k, v.clone()).expect("path exists");
    }
    let sc = Model::from_document(&doc, &path).expect("model is valid");
    hcsim::world::run(&sc, sc.seed)
}

fn node<'a>(s: &'a RunSummary, name: &str) -> &'a NodeSummary {
    s.nodes
        .iter()
        .find(|n| n.name == name)
        .expect("node exists")
}

#[test]
fn nginx_counting_keeps_a_busy_node_with_rare_errors_out_but_failure_percentage_does_not() {
    // 10k requests/s, node a of four fails 0.1 % (503, retried elsewhere).
    let short = [("duration", json!("20s"))];
    let nginx = run("models/ratio-flaky-10krps-max-fails.json", &short);
    let a = node(&nginx, "a");
    assert!(
        a.ejected_time_s > 10.0,
        "max_fails=3 fail_timeout=5s: a is out most of the 20 s, got {} s",
        a.ejected_time_s
    );
    assert!(a.share < 0.15, "a's share falls from 25 %: {}", a.share);
    assert_eq!(nginx.client.errors, 0, "503s are retried");

    let fp = run("models/ratio-flaky-10krps-failure-percentage.json", &short);
    let a = node(&fp, "a");
    assert_eq!(a.ejections, 0, "0.1 % is far below the 5 % threshold");
    assert!(
        (a.share - 0.25).abs() < 0.01,
        "a keeps its share: {}",
        a.share
    );
}

#[test]
fn failure_percentage_ejects_a_30_percent_node_at_the_first_tick() {
    let s = run(
        "models/ratio-flaky-10krps-failure-percentage.json",
        &[("duration", json!("15s")), ("faults[0].p", json!(0.3))],
    );
    let a = node(&s, "a");
    assert_eq!(a.ejections, 1);
    let delay = a.first_ejection_delay_s.expect("ejected");
    assert!(delay <= 10.0, "within one 10 s interval: {delay}");
}

#[test]
fn the_ratio_ejector_acts_on_the_attempt_not_at_a_tick() {
    let s = run(
        "models/ratio-flaky-10krps-ratio-ejection.json",
        &[("duration", json!("5s")), ("faults[0].p", json!(0.3))],
    );
    let delay = node(&s, "a").first_ejection_delay_s.expect("ejected");
    assert!(delay < 0.5, "100 requests at 2,500/s: {delay}");
}

#[test]
fn a_quiet_failing_node_is_invisible_to_the_ratio_detectors() {
    // q gets about 1 request/s and fails half of them.
    for policy in ["success-rate", "failure-percentage"] {
        let s = run(&format!("models/quiet-node-{policy}.json"), &[]);
        let q = node(&s, "q");
        assert_eq!(
            q.ejections, 0,
            "{policy}: ~10 requests per interval, below the volume"
        );
        assert!(q.failures > 20, "{policy}: q kept failing ({})", q.failures);
    }
    let s = run("models/quiet-node-max-fails.json", &[]);
    let q = node(&s, "q");
    assert!(
        q.ejected_time_s > 30.0,
        "nginx counting does notice it: {} s",
        q.ejected_time_s
    );
}

#[test]
fn panic_threshold_sends_traffic_to_ejected_nodes_again() {
    // Three nodes, two crash at 1 s; consecutive_5xx 1 ejects both at once.
    let doc = |panic: Option<f64>| {
        let mut gateway = json!({});
        if let Some(p) = panic {
            gateway["healthy_panic_threshold"] = json!(p);
        }
        json!({
            "name": "panic", "duration": "5s",
            "clients": {"kind": "open", "rate_per_s": 1000.0},
            "gateway": gateway,
            "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "faults": [
                {"kind": "crash", "node": "b", "at": "1s"},
                {"kind": "crash", "node": "c", "at": "1s"}
            ],
            "policy": {"kind": "outlier_detection", "consecutive_5xx": 1, "max_ejection_percent": 100}
        })
    };
    let attempts_on_crashed = |panic: Option<f64>| {
        let sc = Model::from_document(&doc(panic), Path::new("panic.json")).unwrap();
        let s = hcsim::world::run(&sc, 1);
        assert_eq!(s.client.errors, 0, "refused connects are retried on a");
        node(&s, "b").attempts + node(&s, "c").attempts
    };
    // Before the crash b and c get about 667 attempts; after it, one each ejects them.
    let off = attempts_on_crashed(Some(0.0));
    assert!(off < 700, "panic off: ejected nodes get nothing ({off})");
    // Envoy's default 50 %: 1 of 3 healthy is 33 % < 50 %, so all three get traffic.
    let on = attempts_on_crashed(None);
    assert!(on > 2_000, "panic on: ejected nodes are tried again ({on})");
}

#[test]
fn every_policy_comparison_model_is_valid() {
    let mut n = 0;
    for path in crate::shipped_models() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if ["ratio-flaky-", "quiet-node-", "crash-", "hang-", "slow-"]
            .iter()
            .any(|p| name.starts_with(p))
            // a sweep's base model, not one of the comparison's
            && !name.contains("-of-")
        {
            let doc = spec::read_document(&path).unwrap();
            Model::from_document(&doc, &path).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert_eq!(n, 6 * 21, "six situations under twenty-one policies");
}
