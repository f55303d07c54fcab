//! A registry shared by a fleet of gateways (`heartbeat_ttl` with
//! `gateway.replicas` above 1): one registry and one set of heartbeats;
//! each replica is a subscriber with its own caches. Runs the binary on the
//! shipped registry models with `--set gateway.replicas=10`.

use crate::{hcsim, tmp};
use serde_json::Value;
use std::path::{Path, PathBuf};

const REPS: &str = "4";

/// `hcsim run MODEL --reps 4 [--set gateway.replicas=N] EXTRA…` into a
/// fresh directory; returns it.
fn run(model: &str, replicas: u32, extra: &[&str], dir: &str) -> PathBuf {
    let out = tmp(dir);
    let set = format!("gateway.replicas={replicas}");
    let mut args = vec![
        "run",
        model,
        "--reps",
        REPS,
        "--no-charts",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    if replicas > 1 {
        args.extend(["--set", &set]);
    }
    args.extend(extra);
    let o = hcsim(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// Each replication's summary, in order.
fn runs(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let s: Value = serde_json::from_str(&text).unwrap();
    s["runs"].as_array().unwrap().clone()
}

/// Node 0 (`s0`, the crashed one) of a replication: its first and last
/// ejection delays and the share of replicas that ejected it.
fn crashed(run: &Value) -> (f64, f64, f64) {
    let n = &run["nodes"][0];
    assert_eq!(n["name"], "s0");
    let f = |k: &str| n[k].as_f64().unwrap_or_else(|| panic!("{k}: {n}"));
    (
        f("first_ejection_delay_s"),
        f("last_ejection_delay_s"),
        f("replicas_ejected"),
    )
}

/// One gateway's first ejection delay of `s0` in each replication.
fn single(model: &str, dir: &str) -> Vec<f64> {
    runs(&run(model, 1, &[], dir))
        .iter()
        .map(|r| r["nodes"][0]["first_ejection_delay_s"].as_f64().unwrap())
        .collect()
}

#[test]
fn eureka_replicas_eject_at_their_own_caches_phases() {
    let m = "models/registry-eureka-crash.json";
    let one = single(m, "freg-eureka-1");
    let dir = run(m, 10, &["--per-replica"], "freg-eureka-10");
    for (k, r) in runs(&dir).iter().enumerate() {
        let (first, last, share) = crashed(r);
        assert_eq!(share, 1.0, "every replica ejects s0");
        assert!(first < last, "rep {k}: {first} vs {last}");
        // One response cache on the server (30 s, one phase for the
        // fleet), then each replica's own client fetch and Ribbon refresh,
        // 30 s each: the replicas learn of it within 60 s of each other.
        assert!(last - first < 60.0, "rep {k}: {first} .. {last}");
        // The model's range for one gateway: 150–330 s after the crash.
        assert!(first > 150.0 && last < 330.0, "rep {k}: {first} .. {last}");
        // Replica 0 holds the registry: it is the single gateway.
        assert!(first <= one[k] && one[k] <= last, "rep {k}: {}", one[k]);
    }
    // replicas.csv: rep, seed, replica, node, …, first_ejection_delay_s (12th).
    let csv = std::fs::read_to_string(dir.join("replicas.csv")).unwrap();
    let replica0: Vec<f64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c[2] == "0" && c[3] == "s0")
        .map(|c| c[11].parse().unwrap())
        .collect();
    assert_eq!(replica0, one, "replica 0 ejects when one gateway does");
}

#[test]
fn pushed_and_blocking_registries_reach_every_replica_at_once() {
    for (m, name) in [
        ("models/registry-consul-ttl-crash.json", "consul"),
        ("models/registry-nacos1-crash.json", "nacos1"),
    ] {
        let one = single(m, &format!("freg-{name}-1"));
        let fleet = runs(&run(m, 10, &[], &format!("freg-{name}-10")));
        for (k, r) in fleet.iter().enumerate() {
            let (first, last, share) = crashed(r);
            assert_eq!(share, 1.0, "{name} rep {k}");
            // Blocking queries (Consul) and the UDP push (Nacos 1.x) reach
            // every subscriber at the same instant as the one gateway.
            assert_eq!(first, last, "{name} rep {k}");
            assert_eq!(first, one[k], "{name} rep {k}");
        }
    }
}

#[test]
fn the_registry_hears_one_set_of_beats_whatever_the_fleet() {
    // Ten nodes beat every 5 s for 120 s: one set of heartbeats is 240
    // beats, two engine events each (the thread's tick, the beat's
    // arrival), 480 events; a set per replica would add 9 × 480 with ten
    // replicas. The requests are the same in both runs and Consul's
    // blocking queries add no event per replica.
    let m = "models/registry-consul-ttl-crash.json";
    let one = runs(&run(m, 1, &[], "freg-beats-1"));
    let ten = runs(&run(m, 10, &[], "freg-beats-10"));
    for (a, b) in one.iter().zip(&ten) {
        let (a, b) = (a["events"].as_i64().unwrap(), b["events"].as_i64().unwrap());
        assert!(
            (a - b).abs() < 240,
            "{a} events with one gateway, {b} with ten"
        );
    }
}

#[test]
fn fleet_registry_runs_are_deterministic_whatever_the_thread_count() {
    let m = "models/registry-eureka-crash.json";
    let a = run(m, 10, &["--per-replica", "--jobs", "1"], "freg-j1");
    let b = run(m, 10, &["--per-replica", "--jobs", "3"], "freg-j3");
    for f in [
        "summary.json",
        "timeline.csv",
        "ejections.csv",
        "replicas.csv",
    ] {
        let read = |d: &Path| std::fs::read(d.join(f)).unwrap();
        assert_eq!(read(&a), read(&b), "{f}");
    }
}
