//! A Linkerd proxy's request path and breakers end to end (`gateway.flavor:
//! linkerd`, `policy.kind: linkerd`), against linkerd2-proxy's sources (the
//! P2C pool over peak-EWMA, the balancer queue's failfast, the breakers).
//! There is no Linkerd binary here: these pin what the sources say.

use hcsim::spec::Model;
use hcsim::world;
use serde_json::{Value, json};

fn model(nodes: Value, faults: Value, policy: Value, clients: Value, linkerd: Value) -> Model {
    let doc = json!({
        "name": "linkerd", "duration": "60s",
        "clients": clients,
        "gateway": {"flavor": "linkerd", "linkerd": linkerd},
        "nodes": nodes, "faults": faults, "policy": policy
    });
    Model::from_document(&doc, "inline.json".as_ref()).expect("valid model")
}

fn four() -> Value {
    json!([{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}])
}

fn open(rate: f64) -> Value {
    json!({"kind": "open", "rate_per_s": rate})
}

#[test]
fn peak_ewma_starves_a_slow_endpoint() {
    // a answers in 50 ms instead of 5 ms from 10 s to 40 s: its estimate
    // jumps to the peak and P2C almost never picks it against a 5 ms one.
    let m = model(
        four(),
        json!([{"kind": "slow", "node": "a", "at": "10s", "for": "30s", "factor": 10.0}]),
        json!({"kind": "none"}),
        open(200.0),
        json!({}),
    );
    let r = world::run(&m, 1);
    let a = &r.nodes[0];
    // 30 s × 200 req/s = 6,000 requests in the fault, a quarter would be 1,500.
    assert!(
        a.fault_attempts < 100,
        "{} attempts on the slow endpoint",
        a.fault_attempts
    );
    assert_eq!(r.client.ok, r.client.requests - r.client.unfinished);
}

#[test]
fn seven_failures_shut_a_crashed_endpoint_and_a_probe_brings_it_back() {
    let m = model(
        four(),
        json!([{"kind": "crash", "node": "a", "at": "10s", "for": "30s"}]),
        json!({"kind": "linkerd"}),
        open(100.0),
        json!({}),
    );
    let r = world::run(&m, 1);
    let a = &r.nodes[0];
    let e502 = r.client.status.get("502").copied().unwrap_or(0);
    // Seven failures, then one failed probe per back-off (1, 2, 4–5, 8–9, 16–17 s).
    assert!((11..=14).contains(&e502), "{e502} answers 502 (no retries)");
    assert_eq!(a.failures, e502);
    assert!(
        a.recovery_delay_s.is_some(),
        "a probe after the restart reopens it"
    );
}

#[test]
fn with_every_endpoint_shut_requests_fail_fast_504_then_503() {
    let shut = |linkerd: Value| {
        let m = model(
            json!([{"name": "a"}]),
            json!([{"kind": "crash", "node": "a", "at": "5s", "for": "15s"}]),
            json!({"kind": "linkerd"}),
            open(10.0),
            linkerd,
        );
        world::run(&m, 1)
    };
    let r = shut(json!({}));
    let e504 = r.client.status.get("504").copied().unwrap_or(0);
    let e503 = r.client.status.get("503").copied().unwrap_or(0);
    // Queued when the pool enters failfast: 504; new while in it: 503.
    assert!(e504 >= 20, "{e504} queued requests failed fast");
    assert!(e503 >= 50, "{e503} refused by LoadShed while in failfast");
    let max = r.client.latency_ms.max.unwrap();
    assert!(
        max >= 2_990.0,
        "the first waited the whole 3 s failfast timeout: {max} ms"
    );
    // A shorter failfast timeout fails them sooner.
    let r = shut(json!({"failfast_timeout": "500ms"}));
    let max = r.client.latency_ms.max.unwrap();
    assert!(max < 1_100.0, "{max} ms");
}

#[test]
fn a_hung_endpoint_never_trips_the_breaker_when_clients_give_up_first() {
    // One endpoint, hung from 10 s to 40 s, with room in its accept queue
    // for every request (a full queue would time connects out, which count).
    // No response timeout (Linkerd's default): the client's 1 s timeout
    // cancels the request, which classifies nothing, so the breaker never shuts.
    let one = json!([{"name": "a", "backlog": 10000}]);
    let hang = json!([{"kind": "hang", "node": "a", "at": "10s", "for": "30s"}]);
    let clients = json!({"kind": "open", "rate_per_s": 100.0, "timeout": "1s"});
    let m = model(
        one.clone(),
        hang.clone(),
        json!({"kind": "linkerd"}),
        clients.clone(),
        json!({}),
    );
    let r = world::run(&m, 1);
    assert_eq!(r.nodes[0].ejections, 0);
    assert!(
        r.client.timeouts > 2_000,
        "{} client timeouts",
        r.client.timeouts
    );
    // With a response timeout below the client's, the proxy answers 504
    // itself and the breaker counts it: shut, then failfast.
    let m = model(
        one,
        hang,
        json!({"kind": "linkerd"}),
        clients,
        json!({"response_timeout": "500ms"}),
    );
    let r = world::run(&m, 1);
    assert!(r.nodes[0].ejections >= 1);
    let e504 = r.client.status.get("504").copied().unwrap_or(0);
    assert!(e504 >= 7, "{e504} answered 504 by the proxy");
    // The probe after the first back-off is a request that waited in the
    // queue for about the client's 1 s: its client cancels it, the breaker
    // hears nothing, and the gate's one permit is spent (`Gate::call`
    // forgets it): the endpoint stays in probation, and takes no request
    // again, though the hang ends at 40 s.
    assert_eq!(r.nodes[0].ejections, 1);
    assert_eq!(r.nodes[0].recovery_delay_s, None);
    assert!(r.client.status.get("503").copied().unwrap_or(0) > 4_000);
}

#[test]
fn the_balancer_keeps_requests_off_a_hung_endpoint_among_others() {
    // Among four, the hung endpoint's requests in flight (and, once the
    // clients cancel them, their 1 s round trips) make its load the highest:
    // P2C sends it almost nothing, though the breaker never shuts.
    let hang = json!([{"kind": "hang", "node": "a", "at": "10s", "for": "30s"}]);
    let clients = json!({"kind": "open", "rate_per_s": 100.0, "timeout": "1s"});
    let r = world::run(
        &model(four(), hang, json!({"kind": "linkerd"}), clients, json!({})),
        1,
    );
    assert_eq!(r.nodes[0].ejections, 0);
    assert!(
        r.nodes[0].fault_attempts < 20,
        "{} attempts",
        r.nodes[0].fault_attempts
    );
}

#[test]
fn only_the_unified_breaker_ejects_a_quarter_failing_endpoint() {
    let flaky = json!([{"kind": "flaky", "node": "a", "p": 0.25, "status": 503}]);
    let run = |policy: Value| {
        world::run(
            &model(four(), flaky.clone(), policy, open(200.0), json!({})),
            1,
        )
    };
    let consecutive = run(json!({"kind": "linkerd"}));
    assert_eq!(consecutive.nodes[0].ejections, 0, "never 7 in a row");
    let unified = run(json!({"kind": "linkerd", "failure_accrual": "unified"}));
    assert!(unified.nodes[0].ejections >= 1);
    assert!(unified.nodes[0].share < consecutive.nodes[0].share);
}
