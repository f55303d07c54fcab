//! The nginx upstream pipeline pinned against the reference (nginx-haproxy.md
//! Part A and the verification log D1–D8), run through the whole model.

use crate::{assert_conserved, scenario, traced};
use hcsim::world::TraceLine;
use serde_json::{Value, json};

fn model(nodes: Value, faults: Value, policy: Value, extra: Value) -> Value {
    let mut doc = json!({
        "name": "pin", "duration": "3s",
        "clients": {"kind": "open", "rate_per_s": 10.0, "arrivals": "constant"},
        "gateway": {"clock_phase": "0s"},
        "nodes": nodes, "faults": faults, "policy": policy
    });
    if let (Value::Object(d), Value::Object(e)) = (&mut doc, extra) {
        for (k, v) in e {
            if k == "clients" {
                d.insert(k, v);
            } else if let (Some(Value::Object(inner)), Value::Object(vm)) = (d.get_mut(&k), &v) {
                for (k2, v2) in vm {
                    inner.insert(k2.clone(), v2.clone());
                }
            } else {
                d.insert(k, v);
            }
        }
    }
    doc
}

fn mf(max_fails: u32, fail_timeout: &str) -> Value {
    json!({"kind": "max_fails", "max_fails": max_fails, "fail_timeout": fail_timeout})
}

/// The node of each request's first attempt, in request order.
fn first_attempts(lines: &[TraceLine]) -> Vec<String> {
    let mut by_req: std::collections::BTreeMap<u64, (f64, String)> = Default::default();
    for l in lines {
        by_req.entry(l.request).or_insert((l.t_s, l.node.clone()));
    }
    by_req.into_values().map(|(_, n)| n).collect()
}

#[test]
fn single_server_has_no_accounting_and_no_retry() {
    // A.8: one primary, no backup: max_fails ignored, every request tries it.
    let sc = scenario(model(
        json!([{"name": "A"}]),
        json!([{"kind": "crash", "node": "A"}]),
        mf(1, "10s"),
        json!({}),
    ));
    let (s, _) = traced(&sc, 1);
    assert_eq!(s.client.requests, 30);
    assert_eq!(s.client.status.get("502"), Some(&30));
    assert_eq!(s.nodes[0].attempts, 30, "every request connects");
    assert_eq!(s.nodes[0].failures, 0, "free() returns before accounting");
    assert_eq!(s.nodes[0].ejections, 0);
}

#[test]
fn all_peers_down_gives_instant_502_and_a_probe_at_fail_timeout_plus_one() {
    // D6: 2-peer all-dead group, fail_timeout=5: 502 "no live upstreams"
    // without connecting, re-probed at s+6.
    let sc = scenario(model(
        json!([{"name": "A"}, {"name": "B"}]),
        json!([{"kind": "crash", "node": "A"}, {"kind": "crash", "node": "B"}]),
        mf(1, "5s"),
        json!({"duration": "8s"}),
    ));
    let (s, lines) = traced(&sc, 1);
    assert_eq!(s.client.status.get("502"), Some(&80));
    let times: Vec<f64> = lines
        .iter()
        .filter(|l| l.node == "A")
        .map(|l| l.t_s)
        .collect();
    assert_eq!(times.len(), 2, "A tried at 0 s and at 6 s only: {times:?}");
    assert!(times[1] >= 6.0 && times[1] < 6.1, "{times:?}");
}

#[test]
fn nolive_on_a_retry_turns_a_504_into_a_502() {
    // A7: A ejected, B times out -> B's timeout counts, the retry finds no
    // live peer, the client gets 502 (not 504).
    let sc = scenario(model(
        json!([{"name": "A"}, {"name": "B"}]),
        json!([{"kind": "crash", "node": "A"}, {"kind": "hang", "node": "B"}]),
        mf(1, "10s"),
        json!({"gateway": {"proxy_read_timeout": "1s"}, "measure": {"from": "0s", "to": "0.15s"}}),
    ));
    let (s, _) = traced(&sc, 1);
    // Request 1 went to A (refused, retried on B, timed out: no tries left: 504);
    // request 2 started with A ejected: B timed out, the retry hit NOLIVE: 502.
    assert_eq!(
        s.client.status.get("504"),
        Some(&1),
        "{:?}",
        s.client.status
    );
    assert_eq!(
        s.client.status.get("502"),
        Some(&1),
        "{:?}",
        s.client.status
    );
}

#[test]
fn smooth_weighted_round_robin_matches_nginx_sequence() {
    // weights 5,1,1 -> a a b a c a a (ngx_http_upstream_get_peer).
    let sc = scenario(model(
        json!([{"name": "a", "weight": 5}, {"name": "b"}, {"name": "c"}]),
        json!([]),
        mf(1, "10s"),
        json!({"duration": "1.4s"}),
    ));
    let (_, lines) = traced(&sc, 1);
    assert_eq!(
        first_attempts(&lines),
        [
            "a", "a", "b", "a", "c", "a", "a", "a", "a", "b", "a", "c", "a", "a"
        ]
    );
}

#[test]
fn effective_weight_drops_by_integer_division_and_recovers_per_selection() {
    // A (weight 5, max_fails=2) fails once: ew 5 -> 5 - 5/2 = 3, then +1 per
    // selection round; hand-computed from get_peer/free_peer.
    let sc = scenario(model(
        json!([{"name": "A", "weight": 5}, {"name": "B"}]),
        json!([{"kind": "crash", "node": "A", "at": "0s", "for": "50ms"}]),
        mf(2, "10s"),
        json!({"duration": "0.9s"}),
    ));
    let (_, lines) = traced(&sc, 1);
    assert_eq!(
        first_attempts(&lines),
        ["A", "A", "B", "A", "A", "A", "A", "A", "B"]
    );
    // With max_fails=3 the cut is 5/3 = 1: ew 4, and the sequence differs.
    let sc = scenario(model(
        json!([{"name": "A", "weight": 5}, {"name": "B"}]),
        json!([{"kind": "crash", "node": "A", "at": "0s", "for": "50ms"}]),
        mf(3, "10s"),
        json!({"duration": "0.9s"}),
    ));
    let (_, lines) = traced(&sc, 1);
    assert_eq!(
        first_attempts(&lines),
        ["A", "A", "A", "B", "A", "A", "A", "A", "A"]
    );
}

#[test]
fn one_probe_per_window_on_the_whole_second_clock() {
    // D1: refused peer with max_fails=1 fail_timeout=3, 10 req/s for 14 s:
    // tried once per window of 4 s (fail_timeout + 1 on the second clock).
    let sc = scenario(model(
        json!([{"name": "A"}, {"name": "B"}]),
        json!([{"kind": "crash", "node": "A"}]),
        mf(1, "3s"),
        json!({"duration": "14s", "gateway": {"clock_phase": "0.52s"}}),
    ));
    let (s, lines) = traced(&sc, 1);
    let a: Vec<f64> = lines
        .iter()
        .filter(|l| l.node == "A")
        .map(|l| l.t_s)
        .collect();
    assert_eq!(a.len(), 4, "{a:?}");
    for w in a.windows(2) {
        let gap = w[1] - w[0];
        assert!(gap > 3.0 && gap <= 5.0, "gap {gap} in {a:?}");
    }
    assert_eq!(s.client.errors, 0, "refusals are retried on B");
}

#[test]
fn backup_is_used_only_when_no_primary_is_available() {
    let healthy = scenario(model(
        json!([{"name": "A"}, {"name": "B", "backup": true}]),
        json!([]),
        mf(1, "10s"),
        json!({}),
    ));
    let (s, _) = traced(&healthy, 1);
    assert_eq!(s.nodes[1].attempts, 0);
    let dead = scenario(model(
        json!([{"name": "A"}, {"name": "B", "backup": true}]),
        json!([{"kind": "crash", "node": "A"}]),
        mf(1, "10s"),
        json!({}),
    ));
    let (s, _) = traced(&dead, 1);
    assert_eq!(s.client.ok, 30);
    assert_eq!(s.nodes[1].answered, 30);
    assert_eq!(s.nodes[0].attempts, 1, "A ejected after its first refusal");
}

#[test]
fn a_listed_status_on_the_last_try_is_not_a_failure() {
    // D4: A always 502 with http_502 listed: tries=1 -> never ejected;
    // unlimited tries -> ejected after the first 502.
    let base = |tries: u32| {
        model(
            json!([{"name": "A"}, {"name": "B"}]),
            json!([{"kind": "flaky", "node": "A", "p": 1.0, "status": 502}]),
            mf(1, "10s"),
            json!({"gateway": {"proxy_next_upstream": ["error", "timeout", "http_502"], "proxy_next_upstream_tries": tries}}),
        )
    };
    let (s, _) = traced(&scenario(base(1)), 1);
    assert_eq!(s.nodes[0].ejections, 0);
    assert_eq!(
        s.client.status.get("502"),
        Some(&15),
        "half the requests see A's 502"
    );
    let (s, _) = traced(&scenario(base(0)), 1);
    assert_eq!(s.nodes[0].ejections, 1);
    assert_eq!(s.client.errors, 0);
}

#[test]
fn a_403_is_retried_but_never_a_failure() {
    let sc = scenario(model(
        json!([{"name": "A"}, {"name": "B"}]),
        json!([{"kind": "flaky", "node": "A", "p": 1.0, "status": 403}]),
        mf(1, "10s"),
        json!({"gateway": {"proxy_next_upstream": ["error", "timeout", "http_403"]}}),
    ));
    let (s, lines) = traced(&sc, 1);
    assert_eq!(s.client.ok, 30, "every 403 retried on B");
    assert_eq!(s.nodes[0].failures, 0);
    assert_eq!(s.nodes[0].ejections, 0);
    assert!(lines.iter().any(|l| l.node == "A" && l.charge == "next"));
}

#[test]
fn a_post_is_not_retried_after_it_was_sent_unless_non_idempotent() {
    let base = |words: Value| {
        model(
            json!([{"name": "A"}, {"name": "B"}]),
            json!([{"kind": "hang", "node": "A"}]),
            mf(0, "10s"),
            json!({
                "duration": "4s", "measure": {"from": "0s", "to": "0.05s"},
                "clients": {"kind": "open", "rate_per_s": 10.0, "arrivals": "constant", "method": "POST"},
                "gateway": {"proxy_read_timeout": "1s", "proxy_next_upstream": words}
            }),
        )
    };
    let (s, _) = traced(&scenario(base(json!(["error", "timeout"]))), 1);
    assert_eq!(
        s.client.status.get("504"),
        Some(&1),
        "{:?}",
        s.client.status
    );
    let (s, _) = traced(
        &scenario(base(json!(["error", "timeout", "non_idempotent"]))),
        1,
    );
    assert_eq!(s.client.ok, 1, "{:?}", s.client.status);
}

#[test]
fn workers_without_zone_discover_a_dead_peer_independently() {
    // D5: 4 workers, dead peer: 4 "temporarily disabled" without zone, 1 with.
    let run = |zone: bool| {
        let sc = scenario(model(
            json!([{"name": "A"}, {"name": "B"}]),
            json!([{"kind": "crash", "node": "A"}]),
            mf(1, "10s"),
            json!({"clients": {"kind": "open", "rate_per_s": 50.0}, "gateway": {"workers": 4, "zone": zone}}),
        ));
        traced(&sc, 3).0
    };
    let s = run(false);
    assert_eq!(s.nodes[0].ejections, 4);
    assert_eq!(s.nodes[0].failures, 4);
    assert_conserved(&s);
    let s = run(true);
    assert_eq!(s.nodes[0].ejections, 1);
    assert_eq!(s.nodes[0].failures, 1);
}

#[test]
fn a_client_abort_is_not_a_failure_and_may_reset_fails() {
    // A6/A7, D7: the client gives up before proxy_read_timeout: 499, freed
    // as a success, so a hung node is never ejected.
    let sc = scenario(model(
        json!([{"name": "A"}, {"name": "B"}]),
        json!([{"kind": "hang", "node": "A"}]),
        mf(1, "10s"),
        json!({"duration": "20s", "clients": {"kind": "closed", "concurrency": 2, "timeout": "1s"}}),
    ));
    let (s, lines) = traced(&sc, 1);
    assert_eq!(s.nodes[0].ejections, 0);
    assert!(s.client.timeouts > 10);
    assert!(
        lines
            .iter()
            .filter(|l| l.node == "A")
            .all(|l| l.result == "client_abort")
    );
}
