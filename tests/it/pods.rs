//! Pods through the binary: the rolling update's acceptance on the shipped
//! models (errors without a preStop, none with one), what a pod model
//! writes, and bad pod input.

use crate::{hcsim, tmp};
use serde_json::{Value, json};

/// Each replication's client errors during the model's first rolling update.
fn deploy_errors(model: &str, reps: &str) -> Vec<u64> {
    let out = tmp(&format!("pods-{model}"));
    let o = hcsim(&[
        "run",
        &format!("models/{model}.json"),
        "--reps",
        reps,
        "--no-charts",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let csv = std::fs::read_to_string(out.join("pods.csv")).unwrap();
    assert!(csv.starts_with("rep,seed,t_s,node,event,detail\n"), "{csv}");
    assert!(
        csv.contains(",deleted,") && csv.contains(",created,"),
        "{csv}"
    );
    s["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["pods"]["deploys"][0]["client_errors"].as_u64().unwrap())
        .collect()
}

#[test]
fn a_deploy_without_a_pre_stop_fails_requests_and_a_pre_stop_fixes_it() {
    // 3 pods, nginx defaults, POST, maxSurge 1 / maxUnavailable 0, endpoint
    // propagation 1–3 s, 200 req/s, 50 ms: SIGTERM at once cuts requests in
    // flight, in every replication; a 4 s preStop with a graceful shutdown
    // fails none, in every replication.
    let without = deploy_errors("deploy-no-prestop", "20");
    assert!(without.iter().all(|&e| e > 0), "{without:?}");
    let with = deploy_errors("deploy-prestop", "20");
    assert!(with.iter().all(|&e| e == 0), "{with:?}");
}

fn check(model: Value) -> std::process::Output {
    let dir = tmp("pods-check");
    let p = dir.join("m.json");
    std::fs::write(&p, model.to_string()).unwrap();
    hcsim(&["check", p.to_str().unwrap()])
}

fn base(pods: Value, faults: Value, nodes: usize) -> Value {
    json!({
        "name": "m", "duration": "60s",
        "clients": {"kind": "open", "rate_per_s": 10.0},
        "nodes": (0..nodes).map(|i| json!({"name": format!("n{i}")})).collect::<Vec<_>>(),
        "pods": pods,
        "faults": faults
    })
}

#[test]
fn bad_pod_input_names_its_json_path() {
    let err = |m: Value, path: &str, says: &str| {
        let o = check(m);
        let e = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(e.contains(path) && e.contains(says), "{path} / {says}: {e}");
    };
    err(
        base(
            json!({}),
            json!([{"kind": "rolling_update", "at": "10s", "max_surge": 0, "max_unavailable": 0}]),
            3,
        ),
        "faults[0].max_unavailable",
        "may not be 0 when max_surge is 0",
    );
    err(
        base(
            json!({}),
            json!([{"kind": "rolling_update", "at": "10s", "max_surge": "0%", "max_unavailable": 0}]),
            1,
        ),
        "faults[0].max_unavailable",
        "may not be 0",
    );
    err(
        base(json!({"pre_stp": "4s"}), json!([]), 3),
        "pods",
        "pre_stp",
    );
    err(
        base(json!({"liveness": {"failure_threshold": 0}}), json!([]), 3),
        "pods.liveness.failure_threshold",
        "at least 1",
    );
    err(
        base(
            json!({}),
            json!([{"kind": "crash", "node": "n0", "at": "1s", "restart_delay": "2s"}]),
            3,
        ),
        "faults[0].restart_delay",
        "is a pod",
    );
    err(
        base(
            json!({}),
            json!([{"kind": "rolling_update", "at": "90s"}]),
            3,
        ),
        "faults[0].at",
        "not before the end of the run",
    );
    let mut no_pods = base(
        json!({}),
        json!([{"kind": "rolling_update", "at": "10s"}]),
        3,
    );
    no_pods.as_object_mut().unwrap().remove("pods");
    err(no_pods, "faults[0]", "no node is one");
}

#[test]
fn suspicious_pod_settings_warn_and_still_run() {
    let warns = |m: Value, path: &str, says: &str| {
        let o = check(m);
        let e = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{e}");
        assert!(
            e.contains("warning") && e.contains(path) && e.contains(says),
            "{path}: {e}"
        );
    };
    // The kubelet allows a preStop longer than the grace period, and cuts it.
    warns(
        base(json!({"pre_stop": "40s"}), json!([]), 3),
        "pods.pre_stop",
        "longer than the termination grace period",
    );
    warns(
        base(
            json!({"liveness": {"period": "1s", "timeout": "2s"}}),
            json!([]),
            3,
        ),
        "pods.liveness.timeout",
        "not shorter than the period",
    );
    // One replica, no surge, 25 % unavailable rounds to 0: the controller
    // takes the only pod down (ResolveFenceposts).
    warns(
        base(
            json!({}),
            json!([{"kind": "rolling_update", "at": "10s", "max_surge": 0, "max_unavailable": "25%"}]),
            1,
        ),
        "faults[0].max_unavailable",
        "no pod until the new one is ready",
    );
}
