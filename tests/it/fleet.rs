//! Fleets of gateways (`gateway.replicas`): each replica keeps its own
//! policy state, probes and balancer, and sees its share of the traffic.

use crate::{hcsim, scenario, tmp};
use hcsim::metrics::RunSummary;
use hcsim::spec::Model;
use hcsim::world;
use serde_json::{Value, json};
use std::path::Path;

fn model_file(name: &str) -> Value {
    let text = std::fs::read_to_string(crate::root().join("models").join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn with_replicas(mut doc: Value, replicas: u32) -> Model {
    doc["gateway"]["replicas"] = json!(replicas);
    scenario(doc)
}

fn run(m: &Model) -> RunSummary {
    world::run(m, 1)
}

#[test]
fn twenty_ingress_replicas_eject_a_crashed_node_last_much_later_than_one_gateway() {
    let doc = model_file("crash-10s-of-3.json");
    let single = run(&scenario(doc.clone())).nodes[0]
        .first_ejection_delay_s
        .expect("one gateway ejects A");
    let fleet = run(&with_replicas(doc, 20));
    let a = &fleet.nodes[0];
    let f = a.fleet.as_ref().expect("fleet metrics with 20 replicas");
    let last = f.last_ejection_delay_s.expect("every replica ejects A");
    assert!(
        last >= 5.0 * single,
        "last replica ejects after {last} s, one gateway after {single} s"
    );
    assert!(a.first_ejection_delay_s.unwrap() <= last);
    assert_eq!(f.replicas_ejected, 1.0);
    // Each replica ejected A once and keeps it out for itself.
    assert_eq!(a.ejections, 20);
    assert!((f.ejected_replica_s - 20.0 * a.ejected_time_s).abs() < 1e-3);
}

#[test]
fn ten_replicas_put_ten_times_the_probe_load_on_every_node() {
    let doc = model_file("e7-probe-crash.json");
    let one = run(&scenario(doc.clone()));
    let ten = run(&with_replicas(doc, 10));
    for (a, b) in one.nodes.iter().zip(&ten.nodes) {
        let ratio = b.probe_load_per_s / a.probe_load_per_s;
        assert!(
            (ratio - 10.0).abs() < 0.2,
            "node {}: {} vs {} probes/s",
            a.name,
            b.probe_load_per_s,
            a.probe_load_per_s
        );
    }
}

#[test]
fn one_replica_is_the_single_gateway_byte_for_byte() {
    for name in [
        "crash-10s-of-3.json",
        "hang-envoy-defaults.json",
        "e7-probe-crash.json",
        "haproxy-check-observe-layer7.json",
    ] {
        let doc = model_file(name);
        let plain = serde_json::to_string(&run(&scenario(doc.clone()))).unwrap();
        let one = serde_json::to_string(&run(&with_replicas(doc, 1))).unwrap();
        assert_eq!(plain, one, "{name}");
        assert!(!plain.contains("last_ejection_delay_s"));
    }
}

#[test]
fn sidecars_pinned_per_client_each_see_their_own_clients() {
    // 4 closed-loop clients, 4 sidecars, per_client: every sidecar carries
    // the same share; a 100% failing node is ejected by every sidecar.
    let doc = json!({
        "name": "pinned", "duration": "20s",
        "clients": {"kind": "closed", "concurrency": 4, "think_time": "100ms"},
        "gateway": {"replicas": 4, "spread": "per_client"},
        "nodes": [{"name": "A"}, {"name": "B"}],
        "faults": [{"kind": "crash", "node": "A", "at": "5s"}],
        "policy": {"kind": "max_fails", "max_fails": 1, "fail_timeout": "10s"}
    });
    let s = run(&scenario(doc));
    let f = s.nodes[0].fleet.as_ref().unwrap();
    assert_eq!(f.replicas_ejected, 1.0);
    assert!(
        f.last_ejection_delay_s.unwrap() < 1.0,
        "each sidecar has traffic every ~100 ms"
    );
}

#[test]
fn fleet_runs_are_deterministic_whatever_the_thread_count() {
    let out1 = tmp("fleet-j1");
    let out2 = tmp("fleet-j2");
    let m = "models/fleet-mesh-flaky.json";
    let args = |o: &Path, j: &'static str| {
        vec![
            "run".to_string(),
            m.into(),
            "--reps".into(),
            "3".into(),
            "--jobs".into(),
            j.into(),
            "--no-charts".into(),
            "--quiet".into(),
            "--out".into(),
            o.display().to_string(),
        ]
    };
    for (o, j) in [(&out1, "1"), (&out2, "3")] {
        let a = args(o, j);
        let out = hcsim(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for f in ["summary.json", "timeline.csv", "ejections.csv"] {
        assert_eq!(
            std::fs::read(out1.join(f)).unwrap(),
            std::fs::read(out2.join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn bad_fleets_exit_2_naming_the_field() {
    let cases = [
        ("gateway.replicas=0", "gateway.replicas", "between 1 and"),
        (
            "gateway.replicas=20000",
            "gateway.replicas",
            "between 1 and 10000",
        ),
        (
            "gateway.replicas=9000",
            "gateway.replicas",
            "copies of peer state",
        ),
    ];
    let nodes: Vec<Value> = (0..200).map(|i| json!({"name": format!("n{i}")})).collect();
    let dir = tmp("fleet-bad");
    let big = dir.join("big.json");
    std::fs::write(
        &big,
        json!({"name": "big", "duration": "1s", "nodes": nodes, "gateway": {"workers": 4},
            "clients": {"kind": "open", "rate_per_s": 10.0}})
        .to_string(),
    )
    .unwrap();
    for (set, field, words) in cases {
        let out = hcsim(&["check", big.to_str().unwrap(), "--set", set]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains(field) && err.contains(words), "{set}: {err}");
    }
    // HAProxy fleets (below) and a registry shared by the fleet
    // (tests/it/fleet_registry.rs) are modelled.
    let reg = hcsim(&[
        "check",
        "models/registry-eureka-crash.json",
        "--set",
        "gateway.replicas=3",
    ]);
    assert!(
        reg.status.success(),
        "{}",
        String::from_utf8_lossy(&reg.stderr)
    );
}

/// `--per-replica`: each replica's node table adds up to the fleet's, and
/// its first ejections span the fleet's first and last.
#[test]
fn per_replica_tables_add_up_to_the_fleet() {
    let m = with_replicas(model_file("crash-10s-of-3.json"), 6);
    let (plain, _) = world::run_with(&m, 3, u64::MAX, None, false);
    let (s, _) = world::run_with(&m, 3, u64::MAX, None, true);
    assert!(plain.replicas.is_empty());
    assert_eq!(
        plain.nodes, s.nodes,
        "tracking replicas changes nothing else"
    );
    assert_eq!(s.replicas.len(), 6);
    for (i, node) in s.nodes.iter().enumerate() {
        let views: Vec<_> = s.replicas.iter().map(|r| &r[i]).collect();
        let sum =
            |f: fn(&hcsim::metrics::NodeSummary) -> u64| views.iter().map(|v| f(v)).sum::<u64>();
        assert_eq!(sum(|n| n.attempts), node.attempts, "{}", node.name);
        assert_eq!(sum(|n| n.answered), node.answered, "{}", node.name);
        assert_eq!(sum(|n| n.failures), node.failures, "{}", node.name);
        assert_eq!(sum(|n| n.ejections), node.ejections, "{}", node.name);
        assert_eq!(
            sum(|n| n.fault_attempts),
            node.fault_attempts,
            "{}",
            node.name
        );
        let ejected: f64 = views.iter().map(|v| v.ejected_time_s).sum();
        let fleet = node.fleet.as_ref().unwrap();
        assert!(
            (ejected - fleet.ejected_replica_s).abs() < 1e-4,
            "{ejected} vs {fleet:?}"
        );
        let firsts: Vec<f64> = views
            .iter()
            .filter_map(|v| v.first_ejection_delay_s)
            .collect();
        if node.name == "A" {
            assert_eq!(firsts.len(), 6, "every replica ejects the crashed node");
            let min = firsts.iter().copied().fold(f64::MAX, f64::min);
            let max = firsts.iter().copied().fold(0.0, f64::max);
            assert_eq!(Some(min), node.first_ejection_delay_s);
            assert_eq!(Some(max), fleet.last_ejection_delay_s);
        } else {
            assert!(firsts.is_empty());
        }
    }
}

#[test]
fn per_replica_flag_writes_a_table_per_replica_and_replicas_csv() {
    let out = tmp("per-replica");
    let o = hcsim(&[
        "run",
        "models/crash-10s-of-3.json",
        "--set",
        "gateway.replicas=3",
        "--per-replica",
        "--reps",
        "2",
        "--no-charts",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    for r in 0..3 {
        assert!(table.contains(&format!("\nreplica {r} (")), "{table}");
    }
    let csv = std::fs::read_to_string(out.join("replicas.csv")).unwrap();
    // a header, then 2 reps × 3 replicas × 3 nodes
    assert_eq!(csv.lines().count(), 1 + 2 * 3 * 3);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["per_replica"].as_array().map(Vec::len), Some(3));
    // Without the flag: neither the tables nor the file.
    let o = hcsim(&[
        "run",
        "models/crash-10s-of-3.json",
        "--set",
        "gateway.replicas=3",
        "--no-charts",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert!(!String::from_utf8_lossy(&o.stdout).contains("\nreplica 0 ("));
    assert!(!Path::new(&out.join("replicas.csv")).exists());
}

/// A fleet of HAProxy gateways: each replica runs its own checks (at its own
/// phase) and its own `roundrobin` rotation.
#[test]
fn haproxy_replicas_check_and_mark_down_on_their_own() {
    let mut doc = model_file("haproxy-check-observe-layer7.json");
    doc["faults"] = json!([{"kind": "crash", "node": "A", "at": "10s", "for": "40s"}]);
    let one = run(&scenario(doc.clone()));
    let ten = run(&with_replicas(doc, 10));
    // B is never down: its checks run every `inter` (2 s) from each replica.
    let ratio = ten.nodes[1].probe_load_per_s / one.nodes[1].probe_load_per_s;
    assert!((ratio - 10.0).abs() < 0.2, "B: {ratio}× the probe load");
    // Every replica marks the crashed A DOWN after `fall` 3 failed checks,
    // at the phase of its own check timer: the last at most one `inter`
    // after the first.
    let a = &ten.nodes[0];
    let f = a.fleet.as_ref().expect("fleet metrics with 10 replicas");
    assert_eq!(f.replicas_ejected, 1.0);
    let (first, last) = (
        a.first_ejection_delay_s.unwrap(),
        f.last_ejection_delay_s.unwrap(),
    );
    assert!(first < last, "first {first} s, last {last} s");
    assert!(last - first <= 2.0 + 0.01, "first {first} s, last {last} s");
    let single = one.nodes[0].first_ejection_delay_s.unwrap();
    assert!(
        first <= single + 2.0 && single <= last + 2.0,
        "{single} vs {first}..{last}"
    );
    // Retries redispatch to B: the clients see no error in either setup.
    assert_eq!(ten.client.errors, one.client.errors);
}
