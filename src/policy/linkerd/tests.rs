//! Linkerd's breakers driven by scripted outcomes, against linkerd2-proxy's
//! `ConsecutiveFailures::run` and `UnifiedBreaker::run` (and their tests
//! `transitions`, `trips_on_consecutive_failures`).

use super::*;
use crate::policy::testkit::{Harness, ms};

const OK: AttemptResult = AttemptResult::Status(200);
const BAD: AttemptResult = AttemptResult::Status(502);
const LIMITED: AttemptResult = AttemptResult::Status(429);

fn linkerd(p: LinkerdParams) -> Harness<Linkerd> {
    Harness::new(Linkerd::new(&p, 2))
}

fn unified() -> LinkerdParams {
    LinkerdParams {
        failure_accrual: Accrual::Unified,
        ..Default::default()
    }
}

/// Moves time on until `node` is routable; returns how long it took.
fn until_routable(h: &mut Harness<Linkerd>, node: u32) -> SimDuration {
    let from = h.now();
    while !h.routable(node) {
        let t = h.timer_times().into_iter().min().expect("a back-off timer");
        h.advance_to(t);
    }
    h.now().saturating_since(from)
}

#[test]
fn seven_failures_shut_the_gate_then_one_probe_per_back_off() {
    let mut h = linkerd(LinkerdParams::default());
    for k in 0..6 {
        h.attempt(ms(k), 0, BAD);
    }
    h.attempt(ms(6), 0, OK);
    for k in 0..6 {
        h.attempt(ms(10 + k), 0, BAD);
    }
    assert!(h.routable(0), "six in a row after the success");
    h.attempt(ms(16), 0, BAD);
    assert_eq!(h.policy.state_name(NodeId(0)), "shut");
    // The defaults' jitter (0.5) on whole-second bases: 1 s and 2 s exactly.
    assert_eq!(until_routable(&mut h, 0), SimDuration::from_secs(1));
    assert_eq!(h.policy.state_name(NodeId(0)), "probation");
    let t = h.now();
    h.select(t, 0);
    assert!(!h.routable(0), "the one permit is taken");
    h.complete(t + SimDuration::from_millis(5), 0, BAD, SimDuration::ZERO);
    assert_eq!(until_routable(&mut h, 0), SimDuration::from_secs(2));
    let t = h.now();
    h.select(t, 0);
    h.complete(t, 0, BAD, SimDuration::ZERO);
    let d = until_routable(&mut h, 0);
    assert!(
        d == SimDuration::from_secs(4) || d == SimDuration::from_secs(5),
        "{d}"
    );
    // A success reopens; the next trip's stream starts at 1 s again.
    let t = h.now();
    h.attempt(t, 0, OK);
    assert_eq!(h.policy.state_name(NodeId(0)), "open");
    for k in 0..7 {
        h.attempt(t + SimDuration::from_millis(k + 1), 0, BAD);
    }
    assert_eq!(until_routable(&mut h, 0), SimDuration::from_secs(1));
    assert_eq!(h.ejections(0), 4);
}

#[test]
fn responses_while_shut_are_ignored_and_a_straggler_decides_probation() {
    let mut h = linkerd(LinkerdParams::default());
    for k in 0..7 {
        h.attempt(ms(k), 0, BAD);
    }
    h.complete(ms(500), 0, OK, SimDuration::ZERO);
    assert_eq!(h.policy.state_name(NodeId(0)), "shut", "ignored while shut");
    until_routable(&mut h, 0);
    // Before the probe is even sent, a late response of an old request is
    // the first the breaker hears in probation: it decides.
    let t = h.now();
    h.complete(t + SimDuration::from_millis(1), 0, OK, SimDuration::ZERO);
    assert_eq!(h.policy.state_name(NodeId(0)), "open");
}

#[test]
fn a_429_probe_reopens_the_consecutive_breaker_but_not_the_unified_one() {
    for (p, reopened) in [(LinkerdParams::default(), true), (unified(), false)] {
        let mut h = linkerd(p);
        for k in 0..7 {
            h.attempt(ms(k), 0, BAD);
        }
        until_routable(&mut h, 0);
        let t = h.now();
        h.attempt(t, 0, LIMITED);
        assert_eq!(h.policy.state_name(NodeId(0)) == "open", reopened);
    }
}

#[test]
fn a_cancelled_probe_leaves_the_endpoint_in_probation_without_its_permit() {
    let mut h = linkerd(LinkerdParams::default());
    for k in 0..7 {
        h.attempt(ms(k), 0, BAD);
    }
    until_routable(&mut h, 0);
    let t = h.now();
    h.select(t, 0);
    // The client gives up: the response future is dropped and classifies nothing.
    h.complete(
        t + SimDuration::from_secs(1),
        0,
        AttemptResult::ClientAbort,
        SimDuration::ZERO,
    );
    h.advance_to(t + SimDuration::from_secs(600));
    assert_eq!(h.policy.state_name(NodeId(0)), "probing");
    assert!(!h.routable(0), "no permit left, and nothing to free it");
}

#[test]
fn the_unified_breaker_trips_on_a_quarter_failing_and_reopens_cold() {
    let mut h = linkerd(unified());
    // One 503 in four, 10 ms apart: never 7 in a row, ratio 0.75 < 0.8 at
    // the 8th response.
    let mut shut_at = None;
    for k in 0..40u64 {
        let r = if k % 4 == 3 {
            AttemptResult::Status(503)
        } else {
            OK
        };
        h.attempt(ms(k * 10), 0, r);
        if !h.routable(0) {
            shut_at = Some(k);
            break;
        }
    }
    assert_eq!(shut_at, Some(7));
    assert_eq!(h.policy.success_rate(NodeId(0)), Some(0.75));
    assert_eq!(until_routable(&mut h, 0), SimDuration::from_secs(1));
    let t = h.now();
    h.attempt(t, 0, OK);
    assert_eq!(h.policy.state_name(NodeId(0)), "open");
    assert_eq!(
        h.policy.success_rate(NodeId(0)),
        None,
        "the window starts cold"
    );
    // The consecutive breaker never trips on the same pattern.
    let mut h = linkerd(LinkerdParams::default());
    for k in 0..400u64 {
        let r = if k % 4 == 3 {
            AttemptResult::Status(503)
        } else {
            OK
        };
        h.attempt(ms(k * 10), 0, r);
    }
    assert!(h.routable(0));
}

#[test]
fn rate_limited_answers_alone_trip_only_the_unified_breaker() {
    let mut h = linkerd(unified());
    for k in 0..5 {
        h.attempt(ms(k), 0, LIMITED);
    }
    assert!(!h.routable(0), "five 429s: ratio 0 with min_requests 5");
    let mut h = linkerd(LinkerdParams::default());
    for k in 0..100 {
        h.attempt(ms(k), 0, LIMITED);
    }
    assert!(h.routable(0));
}

#[test]
fn settings_are_checked_as_the_policy_controller_does() {
    let bad = |p: LinkerdParams| p.validate().unwrap_err().0;
    let p = LinkerdParams {
        min_penalty: SimDuration::from_secs(90),
        ..Default::default()
    };
    assert_eq!(bad(p), "min_penalty");
    let p = LinkerdParams {
        success_rate_window: Some(SimDuration::from_secs(5)),
        ..Default::default()
    };
    assert_eq!(bad(p), "success_rate_window", "only with unified");
    let p = LinkerdParams {
        success_rate_window: Some(SimDuration::from_millis(5)),
        ..unified()
    };
    assert_eq!(bad(p), "success_rate_window");
    let p = LinkerdParams {
        success_rate_threshold: Some(0.0),
        success_rate_window: Some(SimDuration::from_millis(5)),
        ..unified()
    };
    assert!(
        p.validate().is_ok(),
        "the window floor only with a threshold"
    );
    let p = LinkerdParams {
        jitter_ratio: 150.0,
        ..Default::default()
    };
    assert_eq!(bad(p), "jitter_ratio");
}
