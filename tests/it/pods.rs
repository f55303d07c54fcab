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

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
      maxUnavailable: 25%
  template:
    spec:
      terminationGracePeriodSeconds: 45
      containers:
      - name: app
        image: app:1
        lifecycle:
          preStop:
            exec:
              command: [\"/bin/sh\", \"-c\", \"sleep 10\"]
        readinessProbe:
          httpGet: {path: /ready, port: 8080}
          periodSeconds: 5
        livenessProbe:
          httpGet: {path: /live, port: 8080}
          initialDelaySeconds: 15
          failureThreshold: 3
        startupProbe:
          httpGet: {path: /live, port: 8080}
          failureThreshold: 30
          periodSeconds: 2
      - name: sidecar
        image: proxy:1
        lifecycle:
          preStop:
            sleep: {seconds: 5}
";

#[test]
fn a_deployments_pod_lifecycle_imports_with_its_lines() {
    let dir = tmp("pods-import");
    let f = dir.join("web.yaml");
    std::fs::write(&f, DEPLOYMENT).unwrap();
    let m = dir.join("m.json");
    let o = hcsim(&["import", f.to_str().unwrap(), "-o", m.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{err}");
    assert!(
        !err.contains("livenessProbe is not modelled")
            && !err.contains("startupProbe is not modelled"),
        "{err}"
    );
    // The second container's hook is not the pod's: said so, with its line.
    assert!(
        err.contains("web.yaml:36") && err.contains("only the first container's preStop"),
        "{err}"
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
    let pods = &doc["pods"];
    assert_eq!(pods["pre_stop"], "10s");
    assert_eq!(pods["termination_grace_period"], "45s");
    assert_eq!(pods["liveness"]["initial_delay"], "15s");
    assert_eq!(pods["liveness"]["failure_threshold"], 3);
    assert_eq!(pods["startup"]["period"], "2s");
    assert_eq!(
        pods["strategy"],
        json!({"max_surge": 1, "max_unavailable": "25%"})
    );
    let d = doc["description"].as_str().unwrap();
    for at in [
        "pods.pre_stop ← web.yaml:19",
        "pods.liveness ← web.yaml:25",
        "pods.strategy.max_unavailable ← web.yaml:11",
        "pods.termination_grace_period ← web.yaml:14",
    ] {
        assert!(d.contains(at), "{at}: {d}");
    }
    // A rolling update then uses the Deployment's strategy.
    let o = hcsim(&[
        "check",
        m.to_str().unwrap(),
        "--set",
        "faults=[{\"kind\": \"rolling_update\", \"at\": \"20s\"}]",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
