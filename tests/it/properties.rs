//! Invariants over random valid models (proptest). Models are generated as
//! JSON documents, so each case also goes through validation and the schema.
//!
//! 10,000 cases per run by default (`PROPTEST_CASES=N` to change). Each
//! model is tiny: at most 4 nodes, 2 s of virtual time, 400 requests/s.
//! Checked for every case:
//! - the model validates (and passes the JSON Schema);
//! - the run terminates within its event budget;
//! - every request ends exactly once: requests = ok + errors + timeouts +
//!   unfinished, status counts add up, answers by node add up to ok;
//! - shares sum to 1 when any request succeeded;
//! - the same seed gives an identical summary (timeline and ejections too);
//! - a run cut short by an event budget is a prefix of the full run;
//! - no policy, or `max_fails: 0`, never ejects;
//! - per node: answered ≤ attempts, failures ≤ attempts.
//!
//! Two invariants are asserted inside the engine and fail a case by
//! panicking: no event is scheduled in the past (`EventQueue::schedule`),
//! and a node is selected only while every policy finds it routable (a
//! `debug_assert!` in the gateway's `select_peer`; tests build with debug
//! assertions).

use crate::assert_conserved;
use hcsim::metrics::RunSummary;
use hcsim::spec::Model;
use hcsim::world;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::OnceLock;

fn ms(lo: u64, hi: u64) -> impl Strategy<Value = String> {
    (lo..=hi).prop_map(|v| format!("{v}ms"))
}

fn method() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["GET", "GET", "POST", "PUT", "HEAD"])
}

fn optional(s: impl Strategy<Value = String>) -> impl Strategy<Value = Value> {
    prop::option::of(s).prop_map(|o| o.map_or(Value::Null, Value::String))
}

/// Open loop up to 400 requests/s, or up to 4 closed-loop clients that
/// think at least 1 ms (zero think time has its own test below).
fn clients() -> impl Strategy<Value = Value> {
    prop_oneof![
        (1u32..=400, prop::bool::ANY, optional(ms(1, 1500)), method()).prop_map(
            |(rate, poisson, timeout, m)| json!({
                "kind": "open", "rate_per_s": rate as f64,
                "arrivals": if poisson { "poisson" } else { "constant" },
                "timeout": timeout, "method": m
            })
        ),
        (1u32..=4, ms(1, 50), optional(ms(1, 1500)), method()).prop_map(
            |(c, think, timeout, m)| json!({
                "kind": "closed", "concurrency": c, "think_time": think,
                "timeout": timeout, "method": m
            })
        ),
    ]
}

fn gateway() -> impl Strategy<Value = Value> {
    let words = vec![
        "error",
        "timeout",
        "invalid_header",
        "http_500",
        "http_502",
        "http_503",
        "http_504",
        "http_403",
        "http_404",
        "http_429",
        "non_idempotent",
    ];
    (
        (
            prop::sample::select(vec!["round_robin", "least_conn", "random_two"]),
            1u32..=3,
            prop::bool::ANY,
            prop::option::of(0u64..1_000_000),
        ),
        (
            prop_oneof![
                9 => prop::sample::subsequence(words, 1..=6).prop_map(|w| json!(w)),
                1 => Just(json!(["off"])),
            ],
            0u32..=3,
            prop_oneof![Just("0s".to_string()), ms(50, 500)],
            ms(10, 1000),
            ms(10, 1000),
            (0u64..=2000).prop_map(|us| format!("{us}us")),
        ),
    )
        .prop_map(
            |((balancer, workers, zone, phase), (next, tries, nt, ct, rt, rtt))| {
                json!({
                    "balancer": balancer, "workers": workers, "zone": zone,
                    "clock_phase": phase.map(|us| format!("{us}us")),
                    "proxy_next_upstream": next,
                    "proxy_next_upstream_tries": tries,
                    "proxy_next_upstream_timeout": nt,
                    "proxy_connect_timeout": ct, "proxy_read_timeout": rt, "rtt": rtt
                })
            },
        )
        .prop_flat_map(|g| {
            (
                Just(g),
                prop::option::of((
                    0u32..=3,
                    prop_oneof![
                        Just(json!(false)),
                        Just(json!(true)),
                        (-2i32..=2).prop_map(|n| json!(n))
                    ],
                    optional(ms(10, 1000)),
                    optional(ms(10, 1000)),
                )),
                prop_oneof![Just(None), (0u32..=100).prop_map(|p| Some(p as f64))],
            )
        })
        .prop_map(|(mut g, haproxy, panic)| {
            if let Some((retries, redispatch, connect, server)) = haproxy {
                g["flavor"] = json!("haproxy");
                g["workers"] = json!(1);
                g["haproxy"] = json!({
                    "retries": retries, "redispatch": redispatch,
                    "timeout_connect": connect, "timeout_server": server
                });
            }
            if let Some(p) = panic {
                g["healthy_panic_threshold"] = json!(p);
            }
            g
        })
}

fn service_time() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0u64..=20).prop_map(|v| json!({"dist": "constant", "value": format!("{v}ms")})),
        ms(1, 20).prop_map(|m| json!({"dist": "exponential", "mean": m})),
        (ms(1, 20), 0u32..=15).prop_map(|(m, s)| json!({
            "dist": "lognormal", "median": m, "sigma": s as f64 / 10.0
        })),
        (0u64..=10, 0u64..=20).prop_map(|(a, b)| json!({
            "dist": "uniform", "min": format!("{}ms", a.min(b)), "max": format!("{}ms", a.max(b))
        })),
    ]
}

/// Node 0 is always a usable primary; the others may be backup or down.
fn nodes() -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec(
        (
            1u32..=5,
            prop::sample::select(vec!["primary", "primary", "primary", "backup", "down"]),
            prop::sample::select(vec![0u32, 0, 1, 4]),
            1u32..=8,
            prop::sample::select(vec![0u32, 2, 16, 511]),
            service_time(),
        ),
        1..=4,
    )
    .prop_map(|specs| {
        specs
            .into_iter()
            .enumerate()
            .map(|(i, (weight, role, max_conns, workers, backlog, st))| {
                let role = if i == 0 { "primary" } else { role };
                json!({
                    "name": format!("n{i}"), "weight": weight,
                    "backup": role == "backup", "down": role == "down",
                    "max_conns": max_conns, "workers": workers, "backlog": backlog,
                    "service_time": st
                })
            })
            .collect()
    })
}

/// Per node: at most one availability fault, one flaky and one slow, so
/// none overlap; windows start inside the run.
fn faults(n_nodes: usize, duration_ms: u64) -> impl Strategy<Value = Vec<Value>> {
    let window = (0..duration_ms, prop::option::of(1..=duration_ms));
    let one = (
        0..n_nodes,
        prop::sample::select(vec!["crash", "hang", "stop", "partition", "flaky", "slow"]),
        window,
        (
            0u32..=100,
            prop::sample::select(vec![500u16, 502, 503, 504, 404, 429, 403, 200]),
            prop::bool::ANY,
        ),
        (5u32..=100, 0u64..=50),
    )
        .prop_map(
            |(node, kind, (at, for_), (p, status, reset), (factor, extra))| {
                let mut f = json!({
                    "kind": kind, "node": format!("n{node}"), "at": format!("{at}ms"),
                    "for": for_.map(|d| format!("{d}ms"))
                });
                if kind == "flaky" {
                    f["p"] = json!(p as f64 / 100.0);
                    f["status"] = json!(status);
                    f["error"] = json!(if reset { "reset" } else { "status" });
                }
                if kind == "slow" {
                    f["factor"] = json!(factor as f64 / 10.0);
                    f["extra"] = json!(format!("{extra}ms"));
                }
                f
            },
        );
    prop::collection::vec(one, 0..=4).prop_map(|fs| {
        // keep the first fault of each (node, class)
        let class = |k: &str| match k {
            "flaky" | "slow" => k.to_string(),
            _ => "availability".to_string(),
        };
        let mut seen = std::collections::BTreeSet::new();
        fs.into_iter()
            .filter(|f| {
                seen.insert((
                    f["node"].as_str().unwrap().to_string(),
                    class(f["kind"].as_str().unwrap()),
                ))
            })
            .collect()
    })
}

/// Every policy the shipped models use, and a few more: the policy kinds
/// beyond nginx's come from there, so new ones are covered once a model
/// uses them.
fn policy_pool() -> &'static Vec<Value> {
    static POOL: OnceLock<Vec<Value>> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut pool = vec![
            json!({"kind": "active_probe", "flavor": "envoy", "interval": "500ms", "timeout": "200ms",
                   "unhealthy_threshold": 2, "healthy_threshold": 1}),
            json!({"kind": "active_probe", "flavor": "kubernetes", "period": "1s", "timeout": "1s"}),
            json!({"kind": "active_probe", "flavor": "haproxy", "inter": "300ms", "fall": 2, "rise": 1}),
        ];
        for f in crate::shipped_models() {
            let doc: Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
            let listed = doc.get("policies").and_then(Value::as_array).cloned();
            for p in doc.get("policy").cloned().into_iter().chain(listed.into_iter().flatten()) {
                if p["kind"] != "none" && p["kind"] != "max_fails" && !pool.contains(&p) {
                    pool.push(p);
                }
            }
        }
        pool
    })
}

/// A policy from the pool with some of its durations shortened to fit a 2 s
/// run (kept as it was if that makes it invalid).
fn pooled_policy() -> impl Strategy<Value = Value> {
    (0..policy_pool().len(), any::<u64>()).prop_map(|(i, mut bits)| {
        let original = policy_pool()[i].clone();
        let mut p = original.clone();
        if let Some(m) = p.as_object_mut() {
            for v in m.values_mut() {
                bits = bits.rotate_left(7) ^ 0x9E37_79B9;
                if v.as_str()
                    .is_some_and(|s| hcsim::engine::time::parse_duration(s).is_ok())
                    && bits % 2 == 0
                {
                    *v = json!(format!("{}ms", 50 + bits % 950));
                }
            }
        }
        let valid = serde_json::from_value::<hcsim::policy::PolicySpec>(p.clone())
            .is_ok_and(|spec| spec.validate().is_ok());
        if valid { p } else { original }
    })
}

fn policy() -> impl Strategy<Value = Value> {
    let one = prop_oneof![
        1 => Just(json!({"kind": "none"})),
        4 => (0u32..=4, 0u64..=3, prop::bool::ANY).prop_map(|(m, ft, alias)| json!({
            "kind": if alias { "nginx" } else { "max_fails" },
            "max_fails": m, "fail_timeout": format!("{ft}s")
        })),
        4 => pooled_policy(),
    ];
    prop_oneof![
        4 => one.clone().prop_map(|p| json!({"policy": p})),
        1 => prop::collection::vec(one, 1..=2).prop_map(|ps| json!({"policies": ps})),
        1 => Just(json!({})),
    ]
}

/// Kong's or a Linkerd proxy's request path in place of nginx's (one
/// model in ten each): the nginx settings they do not have dropped, their
/// own drawn from `bits`.
fn other_path(doc: &mut Value, path: u8, bits: u64) {
    if path > 1 || doc["gateway"]["flavor"] == "haproxy" {
        return;
    }
    let nodes = doc["nodes"].as_array_mut().unwrap();
    for n in nodes.iter_mut() {
        let n = n.as_object_mut().unwrap();
        n.remove("backup");
        n.remove("max_conns");
        if path == 1 {
            n.remove("weight");
        }
    }
    let g = doc["gateway"].as_object_mut().unwrap();
    for k in [
        "proxy_next_upstream",
        "proxy_next_upstream_tries",
        "proxy_next_upstream_timeout",
        "balancer",
        "healthy_panic_threshold",
    ] {
        g.remove(k);
    }
    if path == 0 {
        g.insert("flavor".into(), json!("kong"));
        g.insert(
            "kong".into(),
            json!({"retries": bits % 6, "health_threshold": (bits >> 8) % 3 * 25}),
        );
    } else {
        let connect = g.remove("proxy_connect_timeout").unwrap_or(json!("1s"));
        let read = g.remove("proxy_read_timeout");
        g.insert("flavor".into(), json!("linkerd"));
        g.insert("workers".into(), json!(1));
        let mut l = json!({
            "connect_timeout": connect,
            "failfast_timeout": format!("{}ms", 1 + (bits >> 4) % 800),
        });
        if bits & 1 == 1 {
            l["response_timeout"] = read.unwrap_or(json!("1s"));
        }
        g.insert("linkerd".into(), l);
    }
}

/// A whole model document.
fn model_doc() -> impl Strategy<Value = Value> {
    (200u64..=2000, nodes())
        .prop_flat_map(|(duration_ms, nodes)| {
            let n = nodes.len();
            (
                (
                    Just(duration_ms),
                    Just(nodes),
                    faults(n, duration_ms),
                    clients(),
                    gateway(),
                    policy(),
                    any::<u64>(),
                    prop::option::of((0..duration_ms / 2, 1..=duration_ms)),
                    prop::sample::select(vec!["100ms", "250ms", "1s"]),
                ),
                (0u8..10, any::<u64>()),
            )
        })
        .prop_map(
            |(
                (duration_ms, nodes, faults, clients, gateway, policy, seed, measure, bucket),
                (path, bits),
            )| {
                let mut doc = json!({
                    "name": "prop", "seed": seed, "duration": format!("{duration_ms}ms"),
                    "timeline_bucket": bucket,
                    "clients": clients, "gateway": gateway, "nodes": nodes, "faults": faults
                });
                other_path(&mut doc, path, bits);
                if let Some((from, len)) = measure {
                    let to = (from + len).min(duration_ms);
                    doc["measure"] = json!({"from": format!("{from}ms"), "to": format!("{to}ms")});
                }
                for (k, v) in policy.as_object().unwrap() {
                    doc[k] = v.clone();
                }
                doc
            },
        )
}

/// Connections on a third of the models: a pool of the gateway's kind
/// (nginx with or without reuse, or Envoy with small circuit breakers;
/// HAProxy's in any reuse mode), the nodes' own keep-alive limits,
/// keep-alive clients and a `stop_accepting` fault on node 0.
fn with_connections() -> impl Strategy<Value = Value> {
    (
        model_doc(),
        prop::option::weighted(
            0.33,
            (
                (0u8..=3, 1u32..=4, prop::bool::ANY),
                (optional(ms(1, 500)), prop::option::of(1u32..=4)),
                (0u32..=3, 1u32..=4, prop::bool::ANY, prop::bool::ANY),
            ),
        ),
    )
        .prop_map(|(mut doc, extras)| {
            let Some(((kind, n, reuse), (node_timeout, node_requests), (cb, cap, keep, stop))) =
                extras
            else {
                return doc;
            };
            // Kept connections are modelled on nginx's and HAProxy's paths only.
            let flavor = doc["gateway"]["flavor"]
                .as_str()
                .unwrap_or("nginx")
                .to_string();
            if !matches!(flavor.as_str(), "nginx" | "haproxy") {
                return doc;
            }
            let haproxy = flavor == "haproxy";
            let modes = ["never", "safe", "aggressive", "always"];
            doc["gateway"]["pool"] = if haproxy {
                json!({"kind": "haproxy", "http_reuse": modes[kind as usize],
                       "option": if reuse { "http_keep_alive" } else { "http_server_close" },
                       "timeout_http_keep_alive": node_timeout, "pool_purge_delay": "300ms"})
            } else if kind < 2 {
                json!({"kind": "nginx", "keepalive": n, "keepalive_timeout": "200ms",
                       "keepalive_requests": cap,
                       "proxy_http_version": if reuse { "1.1" } else { "1.0" },
                       "connection_header": ""})
            } else {
                json!({"kind": "envoy", "max_requests_per_connection": cap,
                       "circuit_breakers": {"max_connections": n, "max_pending_requests": cb,
                                            "max_requests": n + cb, "max_retries": cb}})
            };
            if let Some(nodes) = doc["nodes"].as_array_mut() {
                for node in nodes {
                    node["keepalive_timeout"] = node_timeout.clone();
                    if let Some(r) = node_requests {
                        node["keepalive_requests"] = json!(r);
                    }
                }
            }
            if keep {
                doc["clients"]["connection"] = json!("keepalive");
            }
            let n0_free = doc["faults"].as_array().is_some_and(|fs| {
                !fs.iter().any(|f| {
                    f["node"] == "n0" && !matches!(f["kind"].as_str(), Some("flaky" | "slow"))
                })
            });
            if stop && n0_free {
                let f =
                    json!({"kind": "stop_accepting", "node": "n0", "at": "100ms", "for": "100ms"});
                doc["faults"].as_array_mut().unwrap().push(f);
            }
            doc
        })
}

fn schema() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| jsonschema::validator_for(&hcsim::spec::schema::model()).unwrap())
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Every event budget is generous: a 2 s model sends at most ~8,000 requests.
const BUDGET: u64 = 2_000_000;

/// Checks one model; returns the number of requests it simulated.
fn check_invariants(doc: &Value) -> Result<u64, TestCaseError> {
    let errs: Vec<String> = schema().iter_errors(doc).map(|e| e.to_string()).collect();
    prop_assert!(errs.is_empty(), "schema rejects a valid model: {errs:?}");
    let sc = Model::from_document(doc, Path::new("prop.json"))
        .map_err(|e| TestCaseError::fail(format!("valid model refused: {e}")))?;
    let seed = sc.seed;
    let (s, cut) = world::run_budgeted(&sc, seed, BUDGET, None);
    prop_assert!(cut.is_none(), "did not finish within {BUDGET} events");
    assert_conserved(&s);
    prop_assert!(s.events > 0 || s.client.requests == 0);
    for n in &s.nodes {
        prop_assert!(n.answered <= n.attempts, "{n:?}");
        prop_assert!(n.failures <= n.attempts, "{n:?}");
        prop_assert!(
            n.ejected_time_s <= s.measure_to_s - s.measure_from_s + 1e-6,
            "{n:?}"
        );
    }
    let never_ejects = sc.policies.iter().all(|p| match p {
        hcsim::policy::PolicySpec::None => true,
        hcsim::policy::PolicySpec::MaxFails(m) => m.max_fails == 0,
        _ => false,
    });
    if never_ejects {
        prop_assert!(
            s.nodes.iter().all(|n| n.ejections == 0),
            "ejected without a policy"
        );
    }
    // same seed, same everything
    let again = world::run(&sc, seed);
    prop_assert!(again == s, "same seed gave a different summary");
    // a run cut short is a prefix of the full one
    if s.events >= 2 {
        let (p, cut) = world::run_budgeted(&sc, seed, s.events / 2, None);
        prop_assert!(cut.is_some());
        assert_conserved(&p);
        prop_assert_eq!(p.events, s.events / 2);
        let (a, b) = (&p.client, &s.client);
        prop_assert!(a.requests <= b.requests && a.ok <= b.ok && a.errors <= b.errors);
        prop_assert!(a.timeouts <= b.timeouts);
        prop_assert!(
            p.nodes
                .iter()
                .zip(&s.nodes)
                .all(|(x, y)| x.attempts <= y.attempts
                    && x.failures <= y.failures
                    && x.ejections <= y.ejections)
        );
    }
    Ok(s.client.requests)
}

#[test]
fn invariants_hold_over_random_models() {
    let config = Config {
        cases: cases(10_000),
        failure_persistence: None,
        ..Config::default()
    };
    let want = config.cases as usize;
    let ran = std::sync::atomic::AtomicUsize::new(0);
    let requests = std::sync::atomic::AtomicU64::new(0);
    let mut runner = TestRunner::new(config);
    let result = runner.run(&with_connections(), |doc| {
        ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let r = check_invariants(&doc)?;
        requests.fetch_add(r, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let ran = ran.into_inner();
    eprintln!(
        "invariants held over {ran} random models ({} requests)",
        requests.into_inner()
    );
    assert!(ran >= want, "only {ran} of {want} cases ran");
}

/// Closed-loop clients with no think time against a gateway that answers
/// at once (every node crashed and ejected) used to loop forever at one
/// instant; now each cycle takes at least 1 µs, so runs end.
#[test]
fn zero_think_time_terminates() {
    let config = Config {
        cases: cases(10_000) / 50,
        failure_persistence: None,
        ..Config::default()
    };
    let strategy = (1u32..=3, 1u64..=50, prop::bool::ANY, any::<u64>());
    TestRunner::new(config)
        .run(&strategy, |(concurrency, duration_ms, crash_all, seed)| {
            let faults = if crash_all {
                json!([{"kind": "crash", "node": "a"}, {"kind": "crash", "node": "b"}])
            } else {
                json!([])
            };
            let doc = json!({
                "name": "zeno", "duration": format!("{duration_ms}ms"),
                "clients": {"kind": "closed", "concurrency": concurrency, "think_time": "0s"},
                "gateway": {"rtt": "0s"},
                "nodes": [{"name": "a", "service_time": {"dist": "constant", "value": "0s"}},
                          {"name": "b", "service_time": {"dist": "constant", "value": "0s"}}],
                "faults": faults
            });
            let sc = Model::from_document(&doc, Path::new("zeno.json")).unwrap();
            // at most one request per client per microsecond, ~5 events each
            let bound = concurrency as u64 * duration_ms * 1000 * 6 + 100;
            let (s, cut) = world::run_budgeted(&sc, seed, bound, None);
            prop_assert!(cut.is_none(), "more than {bound} events");
            assert_conserved(&s);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

/// The generator covers what it claims to (guards against a strategy that
/// silently stops producing some feature).
#[test]
fn random_models_cover_the_model_space() {
    let mut runner = TestRunner::deterministic();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..2000 {
        let doc = model_doc().new_tree(&mut runner).unwrap().current();
        let mut mark = |k: String| {
            seen.insert(k);
        };
        mark(format!("clients:{}", doc["clients"]["kind"]));
        mark(format!("balancer:{}", doc["gateway"]["balancer"]));
        for f in doc["faults"].as_array().unwrap() {
            mark(format!("fault:{}", f["kind"]));
        }
        for n in doc["nodes"].as_array().unwrap() {
            mark(format!("dist:{}", n["service_time"]["dist"]));
            if n["backup"] == true {
                mark("backup".into());
            }
        }
        if doc.get("policies").is_some() {
            mark("policies".into());
        }
        if doc["gateway"]["flavor"] == "haproxy" {
            mark("haproxy".into());
        }
        let listed = doc.get("policies").and_then(Value::as_array).cloned();
        for p in doc
            .get("policy")
            .cloned()
            .into_iter()
            .chain(listed.into_iter().flatten())
        {
            mark(format!("policy:{}", p["kind"]));
        }
        let sc = Model::from_document(&doc, Path::new("p.json")).unwrap();
        let s: RunSummary = world::run(&sc, 1);
        if s.nodes.iter().any(|n| n.ejections > 0) {
            mark("ejected".into());
        }
        if s.client.timeouts > 0 {
            mark("client-timeout".into());
        }
    }
    for want in [
        "clients:\"open\"",
        "clients:\"closed\"",
        "balancer:\"least_conn\"",
        "balancer:\"random_two\"",
        "fault:\"crash\"",
        "fault:\"hang\"",
        "fault:\"stop\"",
        "fault:\"partition\"",
        "fault:\"flaky\"",
        "fault:\"slow\"",
        "dist:\"lognormal\"",
        "dist:\"uniform\"",
        "backup",
        "policies",
        "haproxy",
        "policy:\"active_probe\"",
        "policy:\"heartbeat_ttl\"",
        "policy:\"outlier_detection\"",
        "policy:\"failure_accrual\"",
        "ejected",
        "client-timeout",
    ] {
        assert!(seen.contains(want), "never generated: {want}");
    }
}
