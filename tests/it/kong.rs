//! Kong's request path and health checker end to end (`gateway.flavor:
//! kong`, `policy.kind: kong`), against Kong's sources (`round_robin.lua`,
//! `Kong.balancer`, the log phase) and lua-resty-healthcheck 3.1.2. There
//! is no Kong binary here: these pin what the sources say.

use crate::traced;
use hcsim::spec::Model;
use hcsim::world;
use serde_json::{Value, json};

fn model(nodes: Value, faults: Value, policy: Value, rate: f64) -> Model {
    let doc = json!({
        "name": "kong", "duration": "60s",
        "clients": {"kind": "open", "rate_per_s": rate},
        "gateway": {"flavor": "kong"},
        "nodes": nodes, "faults": faults, "policy": policy
    });
    Model::from_document(&doc, "inline.json".as_ref()).expect("valid model")
}

fn four() -> Value {
    json!([{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}])
}

fn crash_a() -> Value {
    json!([{"kind": "crash", "node": "a", "at": "10s", "for": "30s"}])
}

#[test]
fn passive_checks_alone_never_bring_a_crashed_target_back() {
    // A naive breaker would half-open after a while; nginx's fail_timeout
    // would readmit it after 10 s: Kong keeps it out for good.
    let m = model(
        four(),
        crash_a(),
        json!({"kind": "kong", "passive": {"unhealthy": {"tcp_failures": 2}}}),
        100.0,
    );
    let (r, trace) = traced(&m, 1);
    let a = &r.nodes[0];
    assert_eq!(a.ejections, 1);
    assert_eq!(a.recovery_delay_s, None, "never readmitted");
    let d = a.first_ejection_delay_s.unwrap();
    assert!(d < 0.2, "two refused tries after 10 s: {d}");
    let after = trace
        .iter()
        .filter(|l| l.node == "a" && l.t_s >= 40.0)
        .count();
    assert_eq!(after, 0, "a restarted at 40 s and got no request again");
    assert_eq!(
        r.client.ok,
        r.client.requests - r.client.unfinished,
        "retried on b, c, d"
    );
}

#[test]
fn active_checks_of_unhealthy_targets_bring_it_back() {
    let m = model(
        four(),
        crash_a(),
        json!({"kind": "kong",
               "passive": {"unhealthy": {"tcp_failures": 2}},
               "active": {"unhealthy": {"interval": "1s"}, "healthy": {"successes": 2}}}),
        100.0,
    );
    let r = world::run(&m, 1);
    let a = &r.nodes[0];
    let back = a.recovery_delay_s.unwrap();
    assert!(
        back > 1.0 && back <= 2.2,
        "two successful probes a second apart: {back}"
    );
    assert!(
        a.probes > 25 && a.probes < 40,
        "probed only while unhealthy: {}",
        a.probes
    );
}

#[test]
fn with_no_target_left_kong_answers_503_and_stops_trying() {
    // One target, crashed throughout: try 1 refused; the retry reports it
    // (TCP failure 1), try 2 refused; the next retry reports it (2: unhealthy)
    // and finds no peer: 503. Later requests: 503 with no try at all.
    let m = model(
        json!([{"name": "a"}]),
        json!([{"kind": "crash", "node": "a"}]),
        json!({"kind": "kong", "passive": {"unhealthy": {"tcp_failures": 2}}}),
        1.0,
    );
    let r = world::run(&m, 1);
    assert_eq!(r.client.status.get("503"), Some(&r.client.requests));
    assert_eq!(r.nodes[0].attempts, 2);
}

#[test]
fn kongs_defaults_try_six_times_and_answer_502() {
    let m = model(
        json!([{"name": "a"}, {"name": "b"}]),
        json!([{"kind": "crash", "node": "a"}, {"kind": "crash", "node": "b"}]),
        json!({"kind": "kong"}),
        1.0,
    );
    let r = world::run(&m, 1);
    assert_eq!(r.client.status.get("502"), Some(&r.client.requests));
    let attempts: u64 = r.nodes.iter().map(|n| n.attempts).sum();
    assert_eq!(attempts, 6 * r.client.requests, "retries 5: six tries each");
}

#[test]
fn a_status_is_never_retried() {
    let m = model(
        json!([{"name": "a"}, {"name": "b"}]),
        json!([{"kind": "flaky", "node": "a", "p": 1.0, "status": 503}]),
        json!({"kind": "kong"}),
        100.0,
    );
    let r = world::run(&m, 1);
    let e503 = *r.client.status.get("503").unwrap() as f64;
    let share = e503 / r.client.requests as f64;
    assert!(
        (share - 0.5).abs() < 0.01,
        "every request to a answered 503: {share}"
    );
}

#[test]
fn a_last_try_refused_reaches_the_checker_as_a_502() {
    // retries 0: the only try is the last, reported by the log phase as
    // `upstream_status` 502 — an HTTP status (ignored unless listed), not a
    // TCP failure.
    let doc = |policy: Value| {
        json!({
            "name": "kong", "duration": "20s",
            "clients": {"kind": "open", "rate_per_s": 10.0},
            "gateway": {"flavor": "kong", "kong": {"retries": 0}},
            "nodes": [{"name": "a"}, {"name": "b"}],
            "faults": [{"kind": "crash", "node": "a"}],
            "policy": policy
        })
    };
    let run = |policy: Value| {
        let m = Model::from_document(&doc(policy), "inline.json".as_ref()).unwrap();
        world::run(&m, 1)
    };
    let r = run(json!({"kind": "kong", "passive": {"unhealthy": {"tcp_failures": 1}}}));
    assert_eq!(r.nodes[0].ejections, 0, "never a TCP failure");
    assert!(r.client.status.get("502").copied().unwrap_or(0) > 50);
    let r = run(json!({"kind": "kong", "passive": {"unhealthy": {
        "http_failures": 1, "http_statuses": [429, 500, 502, 503]}}}));
    assert_eq!(r.nodes[0].ejections, 1, "a listed 502 counts");
    assert_eq!(r.client.status.get("502"), Some(&1));
}

#[test]
fn the_wheel_shares_requests_by_weight_exactly() {
    let m = Model::from_document(
        &json!({
            "name": "kong", "duration": "20s",
            "clients": {"kind": "open", "rate_per_s": 100.0, "arrivals": "constant"},
            "gateway": {"flavor": "kong"},
            "nodes": [{"name": "a", "weight": 100}, {"name": "b", "weight": 50},
                      {"name": "c", "weight": 50}]
        }),
        "inline.json".as_ref(),
    )
    .unwrap();
    let r = world::run(&m, 3);
    let (a, b, c) = (
        r.nodes[0].attempts,
        r.nodes[1].attempts,
        r.nodes[2].attempts,
    );
    assert!(a.abs_diff(b + c) <= 2 && b.abs_diff(c) <= 1, "{a} {b} {c}");
}
