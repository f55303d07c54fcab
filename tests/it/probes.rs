//! Active probes and heartbeats end to end: the seed experiments E6–E8 and
//! seed 003's four fault classes, run from the models in `models/`.

use hcsim::engine::rng::rep_seed;
use hcsim::metrics::RunSummary;
use hcsim::spec::{self, Model};
use hcsim::world;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn path(model: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models")
        .join(format!("{model}.json"))
}

/// Loads a model, applying `(path, value)` patches to its document.
fn load(model: &str, patches: &[(&str, Value)]) -> Model {
    let p = path(model);
    let mut doc = spec::read_document(&p).expect("model reads");
    for (k, v) in patches {
        spec::set_path(&mut doc, k, v.clone()).expect("patch applies");
    }
    Model::from_document(&doc, &p).expect("model validates")
}

fn runs(sc: &Model, reps: u64) -> Vec<RunSummary> {
    (0..reps)
        .map(|r| world::run(sc, rep_seed(sc.seed, r)))
        .collect()
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// First-ejection delays of node `i`; panics if a run never ejected it.
fn delays(runs: &[RunSummary], i: usize) -> Vec<f64> {
    runs.iter()
        .map(|r| {
            r.nodes[i]
                .first_ejection_delay_s
                .unwrap_or_else(|| panic!("{}: seed {} never ejected", r.model, r.seed))
        })
        .collect()
}

/// A refused connect reaches the prober one round trip (0.2 ms) after it is
/// sent, so a crash probed right after the fault fails that much past K·I.
const RTT_SLACK: f64 = 0.001;

#[test]
fn e6_ejection_delay_lies_between_k_minus_1_and_k_intervals() {
    // (model, I, K, timeout added for a hang, seed median)
    let cases = [
        ("e6-i05-k1-crash", 0.5, 1.0, 0.0, 0.17),
        ("e6-i05-k1-hang", 0.5, 1.0, 0.3, 0.59),
        ("e6-i05-k3-crash", 0.5, 3.0, 0.0, 1.25),
        ("e6-i05-k3-hang", 0.5, 3.0, 0.3, 1.54),
        ("e6-i10-k1-crash", 1.0, 1.0, 0.0, 0.18),
        ("e6-i10-k1-hang", 1.0, 1.0, 0.3, 0.84),
        ("e6-i10-k3-crash", 1.0, 3.0, 0.0, 2.67),
        ("e6-i10-k3-hang", 1.0, 3.0, 0.3, 2.81),
    ];
    for (name, i, k, t, seed_median) in cases {
        let rs = runs(&load(name, &[]), 15);
        let d = delays(&rs, 0);
        let (lo, hi) = ((k - 1.0) * i, k * i + t + RTT_SLACK);
        for x in &d {
            assert!(*x >= lo && *x <= hi, "{name}: {x} outside [{lo}, {hi}]");
        }
        let m = median(&d);
        // The seed's I=1 K=1 crash median (0.18 s) is low for a uniform
        // phase (population median 0.5 s): that cell has the least margin.
        assert!(
            (m - seed_median).abs() <= 0.3,
            "{name}: median {m:.3} vs seed {seed_median}"
        );
        for r in &rs {
            assert_eq!(r.nodes[1].ejections, 0, "{name}: the healthy node stays in");
        }
    }
}

#[test]
fn e7_a_heartbeat_misses_a_hang_that_an_http_probe_catches() {
    let hb_crash = runs(&load("e7-heartbeat-ttl-crash", &[]), 5);
    let m = median(&delays(&hb_crash, 0));
    assert!((1.0..=1.6).contains(&m), "heartbeat vs crash: median {m}");

    let hb_hang = runs(&load("e7-heartbeat-ttl-hang", &[]), 5);
    for r in &hb_hang {
        let a = &r.nodes[0];
        assert_eq!(
            a.ejections, 0,
            "seed {}: the heartbeat thread keeps beating",
            r.seed
        );
        assert!(
            a.fault_attempts >= 30,
            "requests keep going to it: {}",
            a.fault_attempts
        );
        assert_eq!(a.fault_attempts_ok, 0, "none of them succeeds");
    }

    for name in ["e7-probe-crash", "e7-probe-hang"] {
        let rs = runs(&load(name, &[]), 5);
        assert_eq!(delays(&rs, 0).len(), 5, "{name}: ejected in every run");
        for r in &rs {
            assert_eq!(r.nodes[0].fault_attempts_ok, 0, "{name}");
        }
    }
}

#[test]
fn e7_a_self_check_makes_the_heartbeat_see_the_hang() {
    let sc = load(
        "e7-heartbeat-ttl-hang",
        &[("policies[0].self_check", json!({"timeout": "300ms"}))],
    );
    let d = delays(&runs(&sc, 5), 0);
    // The beat before the hang may have gone out just before it.
    assert!(d.iter().all(|x| *x <= 1.5 + 0.5 + 0.1 + RTT_SLACK), "{d:?}");
}

#[test]
fn e8_a_small_prober_pool_stretches_the_round() {
    for (threads, lo, hi) in [(10, 2.0, 2.2), (50, 1.0, 1.2), (200, 1.0, 1.2)] {
        let rs = runs(&load(&format!("e8-threads-{threads}"), &[]), 3);
        let mut rounds = 0;
        for r in &rs {
            let p = &r.probe_rounds;
            rounds += p.rounds;
            for x in [p.min_s, p.max_s].into_iter().flatten() {
                assert!((lo..=hi).contains(&x), "{threads} threads: round {x} s");
            }
        }
        assert!(rounds >= 9, "three rounds per run: {rounds}");
    }
}

#[test]
fn a_tcp_probe_passes_a_hung_node_and_an_http_probe_does_not() {
    let tcp = load("e6-i05-k3-hang", &[("policies[0].probe", json!("tcp"))]);
    for r in runs(&tcp, 5) {
        assert_eq!(r.nodes[0].ejections, 0, "the kernel still accepts");
    }
    let http = load("e6-i05-k3-hang", &[]);
    assert_eq!(delays(&runs(&http, 5), 0).len(), 5);
}

#[test]
fn seed_003_passive_tcp_and_http_checks_cover_the_four_fault_classes() {
    // A crash, B host down, C network cut (both: partition), D stuck, E healthy.
    let ejected = |sc: &Model| -> Vec<bool> {
        let r = world::run(sc, sc.seed);
        r.nodes.iter().map(|n| n.ejections > 0).collect()
    };
    let name = "e5-recommended-passive-tcp-http";
    let passive = load(
        name,
        &[(
            "policies",
            json!([{"kind": "max_fails", "max_fails": 3, "fail_timeout": "30s"}]),
        )],
    );
    assert_eq!(ejected(&passive), [true, false, false, false, false]);
    let full = load(name, &[]);
    let doc = spec::read_document(&path(name)).unwrap();
    let tcp_check = doc["policies"][1].clone();
    let http_check = doc["policies"][2].clone();
    let tcp = load(name, &[("policies", json!([tcp_check]))]);
    assert_eq!(ejected(&tcp), [true, true, true, false, false]);
    let http = load(name, &[("policies", json!([http_check]))]);
    assert_eq!(ejected(&http), [true, true, true, true, false]);
    let r = world::run(&full, full.seed);
    assert_eq!(
        r.nodes.iter().map(|n| n.ejections > 0).collect::<Vec<_>>(),
        [true, true, true, true, false]
    );
    // fall=3 checks, each waiting up to the 5 s timeout, every 3–4.5 s.
    for n in &r.nodes[1..4] {
        let d = n.first_ejection_delay_s.unwrap();
        assert!((15.0..=30.0).contains(&d), "{}: {d}", n.name);
    }
    assert!(r.nodes.iter().all(|n| n.false_ejections == 0));
}

#[test]
fn registry_presets_detect_a_crash_within_their_documented_ranges() {
    for (name, lo, hi) in [
        ("registry-consul-ttl-crash", 5.0, 10.0 + RTT_SLACK),
        // 10–20 s to the scan that finds it, then the push 1 s later.
        ("registry-nacos1-crash", 11.0, 21.0 + RTT_SLACK),
        ("registry-eureka-crash", 150.0, 330.0),
    ] {
        let d = delays(&runs(&load(name, &[]), 8), 0);
        for x in &d {
            assert!(*x > lo && *x <= hi, "{name}: {x}");
        }
    }
}

#[test]
fn probe_load_and_false_ejections_are_counted() {
    let rs = runs(&load("e6-i10-k3-crash", &[]), 1);
    let a = &rs[0].nodes[1];
    // One probe a second for 10 s, minus at most one for the phase.
    assert!((9..=10).contains(&a.probes), "{}", a.probes);
    assert!((a.probe_load_per_s - a.probes as f64 / 10.0).abs() < 1e-9);
    // A TTL shorter than the beat interval ejects healthy nodes.
    let sc = load(
        "e7-heartbeat-ttl-crash",
        &[
            ("policies[0].interval", json!("2s")),
            ("policies[0].ttl", json!("1s")),
        ],
    );
    let r = world::run(&sc, sc.seed);
    assert!(r.nodes[1].false_ejections > 0, "B never faulted");
    assert_eq!(r.nodes[1].false_ejections, r.nodes[1].ejections);
}

#[test]
fn the_new_policies_are_deterministic() {
    for name in [
        "e5-recommended-passive-tcp-http",
        "e8-threads-10",
        "haproxy-check-observe-layer7",
        "registry-eureka-crash",
    ] {
        let sc = load(name, &[]);
        assert_eq!(world::run(&sc, 7), world::run(&sc, 7), "{name}");
    }
}

/// Envoy applies its panic threshold (default 50 %) to every cluster, also
/// one with only active health checking (`recalculatePerPriorityPanic`):
/// with 3 of 4 hosts failing their checks, traffic goes to all four again.
#[test]
fn envoy_active_checks_alone_panic_below_half_healthy() {
    let doc = |panic: Option<f64>| {
        let mut d = serde_json::json!({
            "name": "hc-panic", "duration": "20s",
            "clients": {"kind": "open", "rate_per_s": 100.0, "arrivals": "constant"},
            "gateway": {"proxy_next_upstream": ["off"]},
            "nodes": [{"name": "A"}, {"name": "B"}, {"name": "C"}, {"name": "D"}],
            "faults": [{"kind": "crash", "node": "A", "at": "5s"}, {"kind": "crash", "node": "B", "at": "5s"},
                       {"kind": "crash", "node": "C", "at": "5s"}],
            "policies": [{"kind": "active_probe", "flavor": "envoy", "probe": "http",
                          "interval": "1s", "timeout": "500ms",
                          "unhealthy_threshold": 1, "healthy_threshold": 1,
                          "no_traffic_interval": "1s"}]
        });
        if let Some(p) = panic {
            d["gateway"]["healthy_panic_threshold"] = serde_json::json!(p);
        }
        crate::scenario(d)
    };
    let default = hcsim::world::run(&doc(None), 1);
    let off = hcsim::world::run(&doc(Some(0.0)), 1);
    // After the checks mark A–C down (by ~7 s), panic routing keeps sending
    // them three quarters of the traffic; without it D takes everything.
    assert!(
        default.nodes[0].fault_attempts > 3 * off.nodes[0].fault_attempts + 100,
        "panic: {} attempts to crashed A, threshold 0: {}",
        default.nodes[0].fault_attempts,
        off.nodes[0].fault_attempts
    );
    assert!(default.client.errors > off.client.errors + 500);
}
