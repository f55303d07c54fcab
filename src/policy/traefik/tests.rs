//! Traefik's checks driven by scripted outcomes. Each test names the
//! behaviour of the source it pins and the naive one it rules out.

use super::*;
use crate::engine::SimTime;
use crate::policy::testkit::{Harness, ms};
use crate::policy::{AttemptResult, ProbeResult};

const A: u32 = 0;
const B: u32 = 1;

fn secs(s: u64) -> SimDuration {
    SimDuration::from_secs(s)
}

fn active(interval_ms: u64, unhealthy_ms: Option<u64>, nodes: usize) -> Traefik {
    Traefik::new(
        &TraefikParams {
            health_check: Some(TraefikActiveParams {
                interval: SimDuration::from_millis(interval_ms),
                unhealthy_interval: unhealthy_ms.map(SimDuration::from_millis),
                timeout: SimDuration::from_millis(300),
                ..Default::default()
            }),
            passive_health_check: None,
        },
        nodes,
    )
}

#[test]
fn one_failed_check_sets_a_server_down_and_one_success_up() {
    // No thresholds: SetStatus(up) or SetStatus(down) at every check.
    let mut h = Harness::new(active(1000, None, 1));
    assert!(h.routable(A), "servers start up");
    assert!(
        h.in_flight().is_empty(),
        "the first tick is one interval in"
    );
    assert_eq!(h.fire_next(ms(5000)), Some(ms(1000)));
    h.answer(ms(1005), A, ProbeResult::Status(500));
    assert!(
        !h.routable(A),
        "one failure: down (a thresholded check would wait)"
    );
    // Down: checked by the unhealthy loop, here at the same interval.
    h.advance_to(ms(2000));
    h.answer(ms(2005), A, ProbeResult::Status(302));
    assert!(h.routable(A), "one success in [200, 400): up");
    assert_eq!(h.history(A), [(ms(1005), true), (ms(2005), false)]);
}

#[test]
fn down_servers_are_checked_at_the_unhealthy_interval() {
    let mut h = Harness::new(active(1000, Some(300), 1));
    h.advance_to(ms(1000));
    h.answer(ms(1001), A, ProbeResult::Refused);
    // The unhealthy loop ticks at 300 ms multiples: 1200, 1500, ...
    h.advance_to(ms(1199));
    assert!(h.in_flight().is_empty());
    h.advance_to(ms(1200));
    assert_eq!(h.sent_to(A), [ms(1200)]);
    h.answer(ms(1201), A, ProbeResult::Status(200));
    assert!(h.routable(A));
    // Back in the healthy loop: next check at its tick, 2000.
    h.advance_to(ms(1999));
    assert!(h.in_flight().is_empty());
    h.advance_to(ms(2000));
    assert_eq!(h.sent_to(A), [ms(2000)]);
}

#[test]
fn a_loop_checks_its_servers_one_after_the_other() {
    // A hung server holds its loop for the whole timeout; a tick that comes
    // meanwhile is held, and the next round starts as soon as it is free.
    let mut h = Harness::seeded(active(200, None, 2), 3);
    h.advance_to(ms(200));
    let first = h.in_flight()[0].node;
    let other = if first.0 == A { B } else { A };
    assert_eq!(h.in_flight().len(), 1, "one check at a time");
    h.advance_to(ms(400));
    assert_eq!(h.in_flight().len(), 1, "the tick at 400 is held");
    h.answer(ms(500), first, ProbeResult::Timeout);
    assert_eq!(h.sent_to(other), [ms(500)], "the rest of the round");
    h.answer(ms(505), other, ProbeResult::Status(200));
    // The held tick: a new round at once, of the targets now in the healthy
    // channel (the one that failed went to the unhealthy loop).
    assert_eq!(h.sent_to(other), [ms(505)]);
    assert!(h.sent_to(first).is_empty());
}

fn passive(window_s: u64, max: u32, with_active: bool) -> Traefik {
    Traefik::new(
        &TraefikParams {
            health_check: with_active.then(|| TraefikActiveParams {
                interval: secs(5),
                timeout: SimDuration::from_millis(500),
                ..Default::default()
            }),
            passive_health_check: Some(TraefikPassiveParams {
                failure_window: secs(window_s),
                max_failed_attempts: max,
            }),
        },
        2,
    )
}

#[test]
fn any_success_clears_the_failures() {
    // 500, 500, 200 repeated with maxFailedAttempts 3: never down (the run
    // on Traefik 3.7.15: 18 of 18 reached the backend).
    let mut h = Harness::new(passive(2, 3, false));
    for k in 0..6 {
        let t = 300 * k;
        h.attempt(ms(t), A, AttemptResult::Status(500));
        h.attempt(ms(t + 100), A, AttemptResult::Status(500));
        h.attempt(ms(t + 200), A, AttemptResult::Status(200));
    }
    assert_eq!(h.ejections(A), 0, "a windowed count would reach 3");
}

#[test]
fn down_for_failure_window_then_up_without_a_probe() {
    let mut h = Harness::new(passive(2, 3, false));
    h.attempt(ms(0), A, AttemptResult::Status(500));
    h.attempt(ms(100), A, AttemptResult::Status(502));
    assert!(h.routable(A));
    h.attempt(ms(200), A, AttemptResult::Refused);
    assert!(!h.routable(A), "three failures in a row within 2 s");
    h.advance_to(ms(2199));
    assert!(!h.routable(A));
    h.advance_to(ms(2200));
    assert!(h.routable(A), "failureWindow is also the time down");
    // The old failures are out of the window: three fresh ones are needed.
    h.attempt(ms(2300), A, AttemptResult::Status(500));
    assert!(h.routable(A));
    assert_eq!(h.policy.passive.as_ref().unwrap().failures(NodeId(A)), 1);
}

#[test]
fn failures_outside_the_window_do_not_count() {
    let mut h = Harness::new(passive(2, 2, false));
    h.attempt(ms(0), A, AttemptResult::Status(500));
    h.attempt(ms(2000), A, AttemptResult::Status(500));
    assert!(h.routable(A), "the first is not after now − failureWindow");
    h.attempt(ms(2001), A, AttemptResult::Status(500));
    assert!(!h.routable(A));
}

#[test]
fn with_an_active_check_the_passive_check_never_sets_a_server_up() {
    let mut h = Harness::new(passive(2, 1, true));
    h.attempt(ms(100), A, AttemptResult::Status(503));
    assert!(!h.routable(A));
    h.advance_to(ms(4999));
    assert!(!h.routable(A), "no re-up after failureWindow (2 s)");
    assert!(h.pending_timers().iter().all(|(_, t)| t.tag != TAG_REUP));
    // The active check's next tick (5 s; A is still in its healthy loop)
    // passes and sets it up.
    h.advance_to(ms(5000));
    for k in 1..=2 {
        assert_eq!(h.in_flight().len(), 1, "one check at a time");
        let n = h.in_flight()[0].node;
        h.answer(ms(5000 + k), n, ProbeResult::Status(200));
    }
    assert!(h.routable(A), "the active check brings it back");
    let hist = h.history(A);
    assert_eq!(hist.len(), 2);
    assert_eq!(hist[0], (ms(100), true));
    assert!(!hist[1].1 && hist[1].0 > ms(5000));
}

#[test]
fn a_client_that_gives_up_counts_as_a_success() {
    // ErrorHandler writes 499 for context.Canceled: below 500, so it clears
    // the failures. A hung backend behind impatient clients is never down.
    let mut h = Harness::new(passive(10, 2, false));
    for k in 0..10 {
        h.attempt(ms(k * 300), A, AttemptResult::Status(500));
        h.attempt(ms(k * 300 + 100), A, AttemptResult::ClientAbort);
    }
    assert_eq!(h.ejections(A), 0, "counting 499 as a failure would eject");
    for k in 0..10 {
        h.attempt(ms(5000 + k * 300), B, AttemptResult::ClientAbort);
    }
    assert_eq!(h.ejections(B), 0);
}

#[test]
fn a_down_server_with_a_timer_running_is_not_set_down_again() {
    let mut h = Harness::new(passive(2, 1, false));
    h.attempt(ms(0), A, AttemptResult::Status(500));
    // A request already in flight fails at 1 s: the timer runs, nothing new.
    h.attempt(ms(1000), A, AttemptResult::Status(500));
    h.advance_to(ms(2000));
    assert!(h.routable(A), "up at 2 s, from the first failure's timer");
    assert_eq!(h.ejections(A), 1);
    let _ = SimTime::ZERO;
}
