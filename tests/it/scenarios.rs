//! Every shipped model runs, and invariants hold over many seeds and variations.

use crate::{assert_conserved, root, scenario};
use hcsim::model;
use hcsim::scenario::{self as sc_mod, Scenario};
use serde_json::json;

fn shipped_models() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(root().join("models"))
        .expect("models/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_shipped_model_validates_runs_and_conserves_requests() {
    let models = shipped_models();
    assert!(models.len() >= 14);
    for path in models {
        let mut doc = sc_mod::read_document(&path).unwrap();
        // Keep CI fast: at most 30 s of virtual time after the last fault
        // starts, at most 2000 rps.
        let secs = |v: &serde_json::Value| {
            v.as_str()
                .and_then(|d| hcsim::engine::time::parse_duration(d).ok())
                .map_or(0.0, |d| d.as_secs_f64())
        };
        let last_fault = doc["faults"].as_array().map_or(0.0, |fs| {
            fs.iter().map(|f| secs(&f["at"])).fold(0.0, f64::max)
        });
        let cap = (last_fault + 30.0).max(30.0);
        if secs(&doc["duration"]) > cap {
            sc_mod::set_path(&mut doc, "duration", json!(format!("{cap}s"))).unwrap();
            doc.as_object_mut().unwrap().remove("measure");
        }
        if let Some(r) = doc["clients"]["rate_per_s"].as_f64()
            && r > 2000.0
        {
            sc_mod::set_path(&mut doc, "clients.rate_per_s", json!(2000.0)).unwrap();
        }
        let sc = Scenario::from_document(&doc, &path).unwrap_or_else(|e| panic!("{e}"));
        for seed in 0..3 {
            let s = model::run(&sc, seed);
            assert_conserved(&s);
            assert_eq!(
                s,
                model::run(&sc, seed),
                "{} not deterministic",
                path.display()
            );
        }
    }
}

/// A family of models drawn from the seed: balancers, workers, zone,
/// weights, backups, max_conns, retries, client timeouts, faults of every kind.
fn varied(seed: u64) -> Scenario {
    let pick = |k: u64, n: u64| (hcsim::engine::rng::derive_seed(seed, &[k]) % n) as usize;
    let balancers = ["round_robin", "least_conn", "random_two"];
    let kinds = ["crash", "hang", "stop", "partition", "flaky", "slow"];
    let n_nodes = 2 + pick(1, 4);
    let nodes: Vec<_> = (0..n_nodes)
        .map(|i| {
            json!({
                "name": format!("n{i}"),
                "weight": 1 + pick(10 + i as u64, 4),
                "backup": i == n_nodes - 1 && pick(20, 3) == 0,
                "max_conns": ([0, 0, 2, 8][pick(30 + i as u64, 4)]),
                "workers": ([1, 4, 64][pick(40 + i as u64, 3)]),
                "backlog": ([1, 16, 511][pick(50 + i as u64, 3)]),
                "service_time": ([
                    json!({"dist": "constant", "value": "5ms"}),
                    json!({"dist": "exponential", "mean": "8ms"}),
                    json!({"dist": "lognormal", "median": "10ms", "sigma": 0.8}),
                    json!({"dist": "uniform", "min": "1ms", "max": "30ms"}),
                ][pick(60 + i as u64, 4)]),
            })
        })
        .collect();
    let faults: Vec<_> = (0..pick(2, 4).min(n_nodes))
        .map(|j| {
            let kind = kinds[pick(70 + j as u64, 6)];
            let mut f = json!({"kind": kind, "node": format!("n{j}"), "at": format!("{}ms", pick(80 + j as u64, 4000)), "for": format!("{}ms", 1 + pick(90 + j as u64, 5000))});
            if kind == "flaky" {
                f["p"] = json!(pick(100 + j as u64, 101) as f64 / 100.0);
                f["status"] = json!([502, 503, 500, 404, 429][pick(110 + j as u64, 5)]);
                f["error"] = json!(["status", "reset"][pick(120 + j as u64, 2)]);
            }
            if kind == "slow" {
                f["factor"] = json!(1.0 + pick(130 + j as u64, 50) as f64);
            }
            f
        })
        .collect();
    let clients = if pick(3, 2) == 0 {
        json!({"kind": "open", "rate_per_s": 20.0 + pick(4, 800) as f64, "arrivals": (["poisson", "constant"][pick(5, 2)]),
               "timeout": ([json!(null), json!("200ms"), json!("2s")][pick(6, 3)]), "method": (["GET", "POST"][pick(7, 2)])})
    } else {
        json!({"kind": "closed", "concurrency": 1 + pick(8, 20), "think_time": format!("{}ms", pick(9, 50)),
               "timeout": ([json!(null), json!("300ms")][pick(11, 2)])})
    };
    let mut doc = json!({
        "name": format!("varied-{seed}"), "duration": "6s",
        "clients": clients,
        "gateway": {
            "balancer": balancers[pick(12, 3)],
            "workers": 1 + pick(13, 4), "zone": pick(14, 2) == 0,
            "proxy_next_upstream": ([json!(["error", "timeout"]), json!(["error", "timeout", "http_503", "http_502", "http_500", "http_404"]), json!(["off"]), json!(["error", "timeout", "non_idempotent", "http_429"])][pick(15, 4)]),
            "proxy_next_upstream_tries": pick(16, 3), "proxy_next_upstream_timeout": (["0s", "500ms"][pick(17, 2)]),
            "proxy_connect_timeout": (["100ms", "1s"][pick(18, 2)]), "proxy_read_timeout": (["150ms", "2s"][pick(19, 2)]),
            "rtt": (["0s", "1ms"][pick(21, 2)])
        },
        "nodes": nodes,
        "faults": faults,
        "policy": {"kind": "max_fails", "max_fails": pick(22, 4), "fail_timeout": format!("{}s", pick(23, 4))}
    });
    if doc["clients"]["timeout"].is_null() {
        doc["clients"].as_object_mut().unwrap().remove("timeout");
    }
    scenario(doc)
}

#[test]
fn invariants_hold_over_varied_models() {
    for seed in 0..200 {
        let sc = varied(seed);
        let s = model::run(&sc, seed);
        assert_conserved(&s);
        assert_eq!(s, model::run(&sc, seed), "varied-{seed} not deterministic");
        assert!(s.client.requests > 0);
    }
}
