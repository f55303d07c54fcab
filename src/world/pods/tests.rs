//! The pod lifecycle against the kubelet's and the Deployment controller's
//! sources (each test names the function it pins), through whole runs.

use crate::metrics::pods::PodEvent;
use crate::spec::Model;
use serde_json::{Value, json};
use std::path::Path;

fn model(pods: Value, faults: Value, duration: &str) -> Model {
    let node = |n: &str| json!({"name": n, "service_time": {"dist": "constant", "value": "20ms"}});
    let doc = json!({
        "name": "t", "duration": duration,
        "clients": {"kind": "open", "rate_per_s": 100.0, "arrivals": "constant"},
        "nodes": [node("A"), node("B"), node("C")],
        "pods": pods,
        "faults": faults
    });
    Model::from_document(&doc, Path::new("t.json")).unwrap()
}

fn events(m: &Model, seed: u64) -> Vec<PodEvent> {
    let s = crate::world::run(m, seed);
    let mut e = s.pods.expect("a pod model reports its pods").events;
    e.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    e
}

/// The times of `what` events of node slot `node`.
fn times(e: &[PodEvent], node: u32, what: &str) -> Vec<f64> {
    e.iter()
        .filter(|x| x.node == node && x.what == what)
        .map(|x| (x.t_s * 1e6).round() / 1e6)
        .collect()
}

/// A hang of A from 5 s; a liveness probe that kills at its first failure.
fn killed_while_hung(shutdown: &str, pre_stop: &str) -> (f64, f64) {
    let m = model(
        json!({"shutdown": shutdown, "pre_stop": pre_stop,
               "liveness": {"period": "1s", "timeout": "500ms", "failure_threshold": 1}}),
        json!([{"kind": "hang", "node": "A", "at": "5s"}]),
        "60s",
    );
    let e = events(&m, 3);
    (times(&e, 0, "killed")[0], times(&e, 0, "exited")[0])
}

#[test]
fn a_kill_runs_pre_stop_then_sigterm_then_sigkill_at_the_grace_period() {
    // kuberuntime_container.go killContainer: the grace period (30 s)
    // counts from the start of preStop; SIGTERM after it; SIGKILL when
    // the rest is over. A hung process ignores nothing: `immediate` exits
    // at SIGTERM; `graceful` cannot finish its requests and is killed.
    let (k, x) = killed_while_hung("immediate", "4s");
    assert!(
        (x - k - 4.0).abs() < 1e-6,
        "SIGTERM 4s after the kill: {k} {x}"
    );
    let (k, x) = killed_while_hung("graceful", "4s");
    assert!(
        (x - k - 30.0).abs() < 1e-6,
        "SIGKILL at the grace period: {k} {x}"
    );
    // executePreStopHook's whole seconds come off the grace period:
    // 4.5 s of preStop leaves 26 s, SIGKILL at 30.5 s.
    let (k, x) = killed_while_hung("graceful", "4500ms");
    assert!((x - k - 30.5).abs() < 1e-6, "{k} {x}");
    // A preStop past the grace period is cut there, and the process gets
    // minimumGracePeriodInSeconds (2 s) after SIGTERM.
    let (k, x) = killed_while_hung("graceful", "40s");
    assert!((x - k - 32.0).abs() < 1e-6, "{k} {x}");
}

#[test]
fn a_hung_node_restarts_once_three_to_four_seconds_into_the_hang() {
    // prober/worker.go: period 1 s, timeout 1 s, failureThreshold 3: the
    // third failure in a row; the phase of the ticker decides where in the
    // fourth second. Restarted, the process listens after start_time; the
    // readiness probe passes at its next tick; the endpoint is listed after
    // the propagation delay.
    let m = model(
        json!({"start_time": "2s",
               "endpoint_propagation": {"dist": "uniform", "min": "1s", "max": "3s"},
               "liveness": {"period": "1s", "timeout": "1s", "failure_threshold": 3},
               "readiness": {"period": "1s", "timeout": "1s", "failure_threshold": 3}}),
        json!([{"kind": "hang", "node": "A", "at": "10s", "for": "20s"}]),
        "40s",
    );
    for seed in 1..=20 {
        let e = events(&m, seed);
        let kills = times(&e, 0, "killed");
        assert_eq!(kills.len(), 1, "seed {seed}: {kills:?}");
        assert!((13.0..14.0).contains(&kills[0]), "seed {seed}: {kills:?}");
        let exit = times(&e, 0, "exited")[0];
        let listed = times(&e, 0, "listed");
        assert_eq!(listed.len(), 1, "seed {seed}");
        // Listening at exit + 2 s; ready at the next tick (≤ 1 s); listed
        // 1–3 s later.
        assert!(
            listed[0] >= exit + 3.0 && listed[0] <= exit + 6.0,
            "seed {seed}: {exit} {listed:?}"
        );
        assert!(times(&e, 1, "killed").is_empty() && times(&e, 2, "killed").is_empty());
        // The restart's window: from the kill until the gateway lists A again.
        let r = crate::world::run(&m, seed).pods.unwrap().during_restarts;
        assert!(
            (r.window_s - (listed[0] - kills[0])).abs() < 1e-5,
            "seed {seed}: {r:?}"
        );
        assert!(r.in_flight_cut > 0, "the hung process held requests: {r:?}");
    }
}

#[test]
fn a_crash_loop_backs_off_as_the_kubelet_does() {
    // doBackOff over flowcontrol.Backoff (10 s doubling to 300 s, from the
    // exit): a container that exits as it starts (2 s) exits at 10, 12
    // (restarted at once), 24 (10 s later + 2), 46, 88, 170, 332 s.
    let m = model(
        json!({"start_time": "2s"}),
        json!([{"kind": "crash", "node": "B", "at": "10s"}]),
        "400s",
    );
    let e = events(&m, 1);
    assert_eq!(
        times(&e, 1, "exited"),
        [10.0, 12.0, 24.0, 46.0, 88.0, 170.0, 332.0]
    );
    let s = crate::world::run(&m, 1);
    assert_eq!(s.pods.unwrap().nodes[1].restarts, 7);
}

#[test]
fn a_rolling_update_with_no_unavailable_replaces_one_pod_at_a_time() {
    // rolling.go: maxSurge 1, maxUnavailable 0 with 3 replicas: one new pod;
    // an old one is deleted only once a new one is ready; the next new pod
    // when the old one no longer counts (FilterActivePods).
    let m = model(
        json!({"start_time": "2s", "readiness": {"period": "1s"}}),
        json!([{"kind": "rolling_update", "at": "5s", "max_surge": 1, "max_unavailable": 0}]),
        "40s",
    );
    let e = events(&m, 1);
    let steps: Vec<&str> = e
        .iter()
        .filter(|x| x.what == "created" || x.what == "deleted")
        .map(|x| x.what)
        .collect();
    assert_eq!(
        steps,
        [
            "created", "deleted", "created", "deleted", "created", "deleted"
        ]
    );
    // The old pods go in slot order; the new ones take fresh slots.
    let deleted: Vec<u32> = e
        .iter()
        .filter(|x| x.what == "deleted")
        .map(|x| x.node)
        .collect();
    assert_eq!(deleted, [0, 1, 2]);
    let created: Vec<u32> = e
        .iter()
        .filter(|x| x.what == "created")
        .map(|x| x.node)
        .collect();
    assert_eq!(created, [3, 4, 5]);
    let d = &crate::world::run(&m, 1).pods.unwrap().deploys[0];
    // Each new pod: 2 s to listen, then its readiness probe's next tick.
    let took = d.duration_s.unwrap();
    assert!((6.0..=9.0).contains(&took), "{took}");
    assert_eq!((d.pods_created, d.pods_deleted), (3, 3));
}

#[test]
fn the_surge_and_unavailable_budgets_bound_the_pods() {
    // maxSurge 2, maxUnavailable 1 of 3: 2 new pods at once, and one old
    // pod deleted at once (3 + 2 active, 2 of 3 must stay available).
    let m = model(
        json!({"start_time": "2s", "readiness": {"period": "1s"}}),
        json!([{"kind": "rolling_update", "at": "5s", "max_surge": 2, "max_unavailable": 1}]),
        "40s",
    );
    let e = events(&m, 1);
    let at_start = |what: &str| e.iter().filter(|x| x.what == what && x.t_s == 5.0).count();
    assert_eq!(
        at_start("created"),
        3,
        "two by surge, one for the deleted pod"
    );
    assert_eq!(at_start("deleted"), 1);
}

#[test]
fn endpoint_changes_reach_each_replica_after_the_propagation_delay() {
    // A deleted pod's endpoint goes `ready: false` at once in the slice
    // (podToEndpoint: terminating); the gateway drops it 1–3 s later.
    let m = model(
        json!({"endpoint_propagation": {"dist": "uniform", "min": "1s", "max": "3s"},
               "pre_stop": "5s", "shutdown": "graceful"}),
        json!([{"kind": "rolling_update", "at": "5s", "max_surge": 1, "max_unavailable": 0}]),
        "30s",
    );
    for seed in 1..=5 {
        let e = events(&m, seed);
        for x in e.iter().filter(|x| x.what == "deleted") {
            let unlisted = times(&e, x.node, "unlisted");
            assert_eq!(unlisted.len(), 1);
            let lag = unlisted[0] - x.t_s;
            assert!((1.0..=3.0).contains(&lag), "seed {seed}: {lag}");
        }
    }
}
