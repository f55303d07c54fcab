//! Caddy's checks driven by scripted outcomes. Each test names the
//! behaviour of the source it pins and, where it matters, the naive one it
//! rules out.

use super::*;
use crate::engine::SimTime;
use crate::policy::testkit::{Harness, ms};
use crate::policy::{AttemptResult, ProbeResult};

const A: u32 = 0;
const B: u32 = 1;

fn passive(p: CaddyPassiveParams) -> Caddy {
    Caddy::new(
        &CaddyParams {
            passive: Some(p),
            active: None,
        },
        2,
    )
}

fn secs(s: u64) -> SimDuration {
    SimDuration::from_secs(s)
}

use crate::engine::SimDuration;

#[test]
fn each_failure_expires_on_its_own_after_fail_duration() {
    // countFailure: countFail(1) now, countFail(-1) fail_duration later.
    let mut h = Harness::new(passive(CaddyPassiveParams {
        fail_duration: secs(3),
        max_fails: 3,
        ..Default::default()
    }));
    h.attempt(ms(0), A, AttemptResult::Refused);
    h.attempt(ms(1000), A, AttemptResult::Refused);
    assert!(h.routable(A), "two of three");
    h.attempt(ms(2000), A, AttemptResult::Reset);
    assert!(!h.routable(A), "three failures within 3 s");
    // The first failure (t = 0) is forgotten at 3 s: back with no probe and
    // no "down for fail_duration" (nginx would keep it out to 5 s).
    h.advance_to(ms(2999));
    assert!(!h.routable(A));
    h.advance_to(ms(3000));
    assert!(h.routable(A), "two failures left in the window");
    assert_eq!(h.history(A), [(ms(2000), true), (ms(3000), false)]);
    // A fresh failure brings the count back to three at once.
    h.attempt(ms(3500), A, AttemptResult::ConnectTimeout);
    assert!(!h.routable(A));
    h.advance_to(ms(4000));
    assert!(h.routable(A), "the failure of 1 s expired");
}

#[test]
fn a_status_matching_two_entries_counts_twice() {
    // reverseProxy loops over unhealthy_status without a break.
    let mut h = Harness::new(passive(CaddyPassiveParams {
        fail_duration: secs(10),
        max_fails: 2,
        unhealthy_status: vec![5, 500],
        ..Default::default()
    }));
    h.attempt(ms(0), B, AttemptResult::Status(503));
    assert!(h.routable(B), "503 matches 5xx only: one failure");
    h.attempt(ms(10), A, AttemptResult::Status(500));
    assert!(
        !h.routable(A),
        "one 500 matches `5xx` and `500`: two failures"
    );
    assert_eq!(h.policy.passive.as_ref().unwrap().fails(NodeId(A)), 2);
    h.advance_to(ms(10_010));
    assert!(h.routable(A), "both expire together");
}

#[test]
fn statuses_count_only_when_listed_and_slow_answers_count_once_more() {
    let mut h = Harness::new(passive(CaddyPassiveParams {
        fail_duration: secs(10),
        max_fails: 2,
        unhealthy_latency: Some(SimDuration::from_millis(200)),
        ..Default::default()
    }));
    h.attempt(ms(0), A, AttemptResult::Status(503));
    h.attempt(ms(1), A, AttemptResult::Status(500));
    assert!(h.routable(A), "no unhealthy_status: a 5xx is an answer");
    h.select(ms(2), A);
    h.complete(ms(3002), A, AttemptResult::Status(200), secs(3));
    assert!(h.routable(A), "one slow answer");
    h.select(ms(3003), A);
    h.complete(ms(6003), A, AttemptResult::Status(200), secs(3));
    assert!(
        !h.routable(A),
        "two slow answers (caddy's unhealthy_latency probe)"
    );
}

#[test]
fn a_client_that_gives_up_is_never_counted() {
    // context.Canceled: "not our failure; don't retry or ding the upstream".
    let mut h = Harness::new(passive(CaddyPassiveParams {
        fail_duration: secs(10),
        max_fails: 1,
        unhealthy_latency: Some(SimDuration::from_millis(200)),
        ..Default::default()
    }));
    for i in 0..8 {
        h.select(ms(i * 400), A);
        h.complete(
            ms(i * 400 + 300),
            A,
            AttemptResult::ClientAbort,
            SimDuration::from_millis(300),
        );
    }
    assert!(
        h.routable(A),
        "a hung backend behind impatient clients stays in"
    );
    assert_eq!(h.ejections(A), 0);
}

#[test]
fn fail_duration_zero_counts_nothing() {
    let mut h = Harness::new(passive(CaddyPassiveParams::default()));
    for i in 0..5 {
        h.attempt(ms(i), A, AttemptResult::Refused);
    }
    assert!(h.routable(A));
    let w = CaddyParams {
        passive: Some(CaddyPassiveParams::default()),
        active: None,
    }
    .warnings();
    assert_eq!(w[0].0, "passive.fail_duration");
}

#[test]
fn unhealthy_request_count_makes_a_host_full_while_requests_are_in_flight() {
    let mut h = Harness::new(passive(CaddyPassiveParams {
        unhealthy_request_count: 2,
        ..Default::default()
    }));
    let interests = h.policy.interests();
    assert!(interests.selections && !interests.routes_by_notices);
    h.select(ms(0), A);
    assert!(h.routable(A));
    h.select(ms(1), A);
    assert!(!h.routable(A), "two in flight: Full");
    assert!(h.routable(B));
    h.complete(ms(5), A, AttemptResult::Status(200), SimDuration::ZERO);
    assert!(h.routable(A));
    assert_eq!(h.ejections(A), 0, "Full is not an ejection");
}

fn active(fails: u32, passes: u32) -> Caddy {
    Caddy::new(
        &CaddyParams {
            passive: None,
            active: Some(CaddyActiveParams {
                interval: SimDuration::from_millis(200),
                timeout: SimDuration::from_millis(100),
                fails,
                passes,
                ..Default::default()
            }),
        },
        1,
    )
}

/// Answers one round of checks of node A at `t` with `r`, then fires the
/// next round; returns its time.
fn check(h: &mut Harness<Caddy>, t: SimTime, r: ProbeResult) -> SimTime {
    h.answer(t, A, r);
    h.fire_next(t + SimDuration::from_secs(1))
        .expect("next round")
}

#[test]
fn the_first_round_runs_at_start_and_hosts_start_healthy() {
    let mut h = Harness::new(active(1, 1));
    assert_eq!(
        h.sent_to(A),
        [ms(0)],
        "doActiveHealthCheckForAllHosts at once"
    );
    assert!(h.routable(A), "the zero value is healthy");
    let t = check(&mut h, ms(5), ProbeResult::Status(200));
    assert_eq!(t, ms(200), "then on the ticker");
    h.answer(ms(205), A, ProbeResult::Status(302));
    assert!(!h.routable(A), "redirects are not followed: a 3xx fails");
}

#[test]
fn fails_count_since_the_last_change_of_state_not_in_a_row() {
    // The health endpoint alternates 500/200 with health_fails 3 (the probe
    // run on Caddy 2.11.7 flipped 6 times in 40 checks).
    let mut h = Harness::new(active(3, 1));
    let mut t = ms(0);
    for i in 0..40 {
        let r = if i % 2 == 0 {
            ProbeResult::Status(500)
        } else {
            ProbeResult::Status(200)
        };
        t = check(&mut h, t + SimDuration::from_millis(1), r);
    }
    // Down at checks 5, 11, 17, …: every sixth (fails 1, 2, 3 around passes
    // that reset nothing), up at the pass right after.
    assert_eq!(h.ejections(A), 6, "consecutive counting would never eject");
    let downs: Vec<SimTime> = h
        .history(A)
        .iter()
        .filter(|(_, out)| *out)
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(downs[0], ms(801), "the fifth check (the third 500)");
    assert_eq!(
        h.history(A)[1],
        (ms(1001), false),
        "one pass brings it back"
    );
}

#[test]
fn passes_count_since_the_change_too_and_pile_up_while_healthy() {
    let mut h = Harness::new(active(2, 2));
    let mut t = ms(0);
    // While healthy, passes pile up unused: they do not shorten the next
    // recovery, since going down resets them.
    for _ in 0..3 {
        t = check(&mut h, t + ms(1).since_start(), ProbeResult::Status(200));
    }
    t = check(&mut h, t + ms(1).since_start(), ProbeResult::Timeout);
    t = check(&mut h, t + ms(1).since_start(), ProbeResult::Status(200));
    assert!(h.routable(A), "one failure so far");
    t = check(&mut h, t + ms(1).since_start(), ProbeResult::Refused);
    assert!(!h.routable(A), "the second failure since the last change");
    t = check(&mut h, t + ms(1).since_start(), ProbeResult::Status(200));
    t = check(&mut h, t + ms(1).since_start(), ProbeResult::Status(500));
    assert!(!h.routable(A));
    h.answer(t + ms(1).since_start(), A, ProbeResult::Status(200));
    assert!(
        h.routable(A),
        "two passes since it went down, a failure between"
    );
}

#[test]
fn rounds_do_not_wait_for_checks_still_running() {
    let mut h = Harness::new(active(1, 1));
    // The first check hangs; the ticker starts the next round anyway.
    assert_eq!(h.fire_next(ms(1000)), Some(ms(200)));
    assert_eq!(h.sent_to(A), [ms(0), ms(200)], "two checks in flight");
}

#[test]
fn active_and_passive_both_keep_a_host_out() {
    let mut h = Harness::new(Caddy::new(
        &CaddyParams {
            passive: Some(CaddyPassiveParams {
                fail_duration: secs(5),
                ..Default::default()
            }),
            active: Some(CaddyActiveParams {
                interval: secs(1),
                timeout: SimDuration::from_millis(500),
                ..Default::default()
            }),
        },
        1,
    ));
    h.answer(ms(10), A, ProbeResult::Status(200));
    h.attempt(ms(100), A, AttemptResult::Refused);
    assert!(!h.routable(A), "passive: one failure");
    h.advance_to(ms(1000));
    h.answer(ms(1010), A, ProbeResult::Status(200));
    assert!(
        !h.routable(A),
        "a passing check does not clear passive failures"
    );
    h.advance_to(ms(5100));
    assert!(h.routable(A), "the failure expired");
    assert_eq!(h.ejections(A), 1);
}
