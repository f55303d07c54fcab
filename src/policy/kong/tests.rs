//! Kong's checker driven by scripted outcomes, against
//! lua-resty-healthcheck 3.1.2 (`incr_counter`, `checker_callback`,
//! `run_single_check`) and Kong's reporting (`Kong.balancer`, the log phase).

use super::*;
use crate::engine::SimTime;
use crate::policy::AfterConnect;
use crate::policy::testkit::{Harness, ms};

const OK: AttemptResult = AttemptResult::Status(200);
const E500: AttemptResult = AttemptResult::Status(500);

fn kong(p: KongParams) -> Harness<Kong> {
    Harness::new(Kong::new(&p, 2))
}

fn passive(http_failures: u8, tcp_failures: u8, timeouts: u8, successes: u8) -> KongParams {
    let mut p = KongParams::default();
    p.passive.unhealthy.http_failures = http_failures;
    p.passive.unhealthy.tcp_failures = tcp_failures;
    p.passive.unhealthy.timeouts = timeouts;
    p.passive.healthy.successes = successes;
    p
}

#[test]
fn kongs_defaults_check_nothing() {
    let p = KongParams::default();
    assert_eq!(p.label(), "kong (no checks)");
    let mut h = kong(p);
    for k in 0..50 {
        h.attempt(ms(k), 0, E500);
        h.attempt(ms(k), 0, AttemptResult::Refused);
        h.attempt(ms(k), 0, AttemptResult::ReadTimeout);
    }
    assert!(h.routable(0));
    assert!(h.in_flight().is_empty() && h.pending_timers().is_empty());
}

#[test]
fn a_target_out_by_passive_checks_never_comes_back_by_itself() {
    // The naive model (a breaker that half-opens after a while, nginx's
    // fail_timeout) would let it back: Kong does not, there is no timer.
    let mut h = kong(passive(3, 0, 0, 5));
    h.attempt(ms(0), 0, E500);
    assert_eq!(h.policy.health(NodeId(0)), Health::MostlyHealthy);
    assert!(h.routable(0), "mostly_healthy still takes traffic");
    h.attempt(ms(1), 0, E500);
    h.attempt(ms(2), 0, E500);
    assert_eq!(h.policy.health(NodeId(0)), Health::Unhealthy);
    assert_eq!(h.history(0), vec![(ms(2), true)]);
    assert!(
        h.pending_timers().is_empty(),
        "nothing scheduled to bring it back"
    );
    h.advance_to(ms(3_600_000));
    assert!(!h.routable(0), "an hour later it is still out");
    let now = crate::policy::WallClock::new(SimDuration::ZERO).now(ms(3_600_000));
    assert!(h.policy.readmits_at(0, NodeId(0), now).is_none());
    // A straggler answered after the ejection counts (passive healthy
    // successes 5): mostly_unhealthy, still no traffic.
    h.complete(ms(3_600_001), 0, OK, SimDuration::ZERO);
    assert_eq!(h.policy.health(NodeId(0)), Health::MostlyUnhealthy);
    assert!(!h.routable(0));
    assert_eq!(h.ejections(0), 1);
}

#[test]
fn failure_kinds_count_apart_and_any_success_clears_them() {
    // tcp_failures 2, timeouts 2, http_failures 2: a refused try, a timeout
    // and a 500 leave each counter at 1 — no kind at its limit.
    let mut h = kong(passive(2, 2, 2, 0));
    h.attempt(ms(0), 0, AttemptResult::Refused);
    h.attempt(ms(1), 0, AttemptResult::ConnectTimeout);
    h.attempt(ms(2), 0, E500);
    assert!(h.routable(0));
    // With passive successes 0 a success is not reported at all (a limit
    // of 0 returns before the counter), so the failures stay.
    h.attempt(ms(3), 0, OK);
    h.attempt(ms(4), 0, AttemptResult::ReadTimeout);
    assert!(!h.routable(0), "the second timeout reaches its limit of 2");
    // With successes counted, a success between them clears the failures.
    let mut h = kong(passive(2, 2, 2, 5));
    h.attempt(ms(0), 0, AttemptResult::ConnectTimeout);
    h.attempt(ms(1), 0, OK);
    h.attempt(ms(2), 0, AttemptResult::ReadTimeout);
    assert!(h.routable(0), "the success cleared the first timeout");
}

#[test]
fn a_status_in_neither_list_is_ignored_and_a_last_try_refused_is_a_502() {
    let mut h = kong(passive(1, 0, 0, 0));
    // 502 is not in the default passive list (429, 500, 503): the log
    // phase's report of a last try refused (`upstream_status` 502) is ignored.
    for k in 0..10 {
        h.attempt(ms(k), 0, AttemptResult::Status(502));
        h.attempt(ms(k), 0, AttemptResult::ClientAbort);
    }
    assert!(h.routable(0));
    h.attempt(ms(20), 0, AttemptResult::Status(429));
    assert!(!h.routable(0), "429 is listed");
    let mut p = passive(1, 0, 0, 0);
    p.passive.unhealthy.http_statuses.push(502);
    let mut h = kong(p);
    h.attempt(ms(0), 0, AttemptResult::Status(502));
    assert!(!h.routable(0));
}

fn active(healthy_ms: u64, unhealthy_ms: u64) -> KongParams {
    let mut p = KongParams::default();
    p.active.healthy.interval = SimDuration::from_millis(healthy_ms);
    p.active.unhealthy.interval = SimDuration::from_millis(unhealthy_ms);
    p.active.healthy.successes = 2;
    p.active.unhealthy.tcp_failures = 2;
    p.active.unhealthy.timeouts = 3;
    p.active.unhealthy.http_failures = 3;
    p
}

/// Answers every probe in flight at `t`: node 0 with `r0`, others 200.
fn answer_all(h: &mut Harness<Kong>, t: SimTime, r0: ProbeResult) {
    for p in h.take_in_flight() {
        let o = ProbeOutcome {
            result: if p.node == NodeId(0) {
                r0
            } else {
                ProbeResult::Status(200)
            },
            latency: t.saturating_since(p.sent_at),
            tag: p.req.tag,
        };
        h.call(t, |k, cx| k.on_probe_result(cx, p.node, &o));
    }
}

#[test]
fn active_checks_run_on_the_tick_and_revive_a_target_after_its_successes() {
    let mut h = kong(active(1000, 500));
    let first = h.timer_times();
    assert_eq!(first.len(), 2, "one timer per mode");
    // Rounds of healthy targets every second: the first one interval after start.
    let mut refused = 0;
    let mut t = ms(0);
    while refused < 2 {
        let next = *h.timer_times().iter().min().unwrap();
        h.advance_to(next);
        t = next;
        if !h.in_flight().is_empty() {
            answer_all(
                &mut h,
                t + SimDuration::from_millis(1),
                ProbeResult::Refused,
            );
            refused += 1;
        }
    }
    assert!(t >= ms(2000) && t < ms(2010), "second round at ~2 s: {t}");
    assert_eq!(h.policy.health(NodeId(0)), Health::Unhealthy);
    assert!(h.routable(1));
    // The unhealthy mode probes node 0 every 0.5 s; two 200s bring it back.
    let mut oks = Vec::new();
    while h.policy.health(NodeId(0)) != Health::Healthy {
        let next = *h.timer_times().iter().min().unwrap();
        h.advance_to(next);
        let to_zero = h.in_flight().iter().any(|p| p.node == NodeId(0));
        if to_zero {
            oks.push(next);
        }
        answer_all(
            &mut h,
            next + SimDuration::from_millis(1),
            ProbeResult::Status(200),
        );
    }
    assert_eq!(oks.len(), 2);
    assert_eq!(
        oks[1].saturating_since(oks[0]),
        SimDuration::from_millis(500),
        "on the 0.1 s tick, 0.5 s apart"
    );
    assert!(
        h.policy.health(NodeId(0)) == Health::Healthy && h.routable(0),
        "mostly_unhealthy after the first, healthy after the second"
    );
}

#[test]
fn a_hung_target_stretches_the_rounds_and_counts_timeouts() {
    let mut p = active(1000, 0);
    p.active.timeout = SimDuration::from_millis(2500);
    let mut h = kong(p);
    // Round 1: node 0 never answers; node 1 answers at once.
    let t1 = *h.timer_times().iter().min().unwrap();
    h.advance_to(t1);
    let sent = h.take_in_flight();
    assert_eq!(sent.len(), 2);
    let zero = sent.iter().find(|p| p.node == NodeId(0)).unwrap();
    assert_eq!(
        zero.req.timeout_after_connect,
        Some(AfterConnect::Replace(SimDuration::from_millis(2500)))
    );
    let one = sent.iter().find(|p| p.node == NodeId(1)).unwrap();
    let ok = ProbeOutcome {
        result: ProbeResult::Status(200),
        latency: SimDuration::ZERO,
        tag: one.req.tag,
    };
    h.call(t1, |k, cx| k.on_probe_result(cx, NodeId(1), &ok));
    // The tick at t1 + 1 s and t1 + 2 s are skipped: node 0's check holds the lock.
    h.advance_to(t1 + SimDuration::from_millis(2400));
    assert!(h.in_flight().is_empty());
    let timeout = ProbeOutcome {
        result: ProbeResult::Timeout,
        latency: SimDuration::from_millis(2500),
        tag: zero.req.tag,
    };
    h.call(t1 + SimDuration::from_millis(2500), |k, cx| {
        k.on_probe_result(cx, NodeId(0), &timeout)
    });
    assert_eq!(h.policy.health(NodeId(0)), Health::MostlyHealthy);
    assert_eq!(h.probe_rounds(), vec![SimDuration::from_millis(2500)]);
    h.advance_to(t1 + SimDuration::from_millis(2999));
    assert!(
        h.in_flight().is_empty(),
        "the next round waits for the tick at t1 + 3 s"
    );
    h.advance_to(t1 + SimDuration::from_secs(3));
    assert_eq!(h.in_flight().len(), 2);
}

#[test]
fn active_and_passive_share_one_counter_with_their_own_limits() {
    let mut p = active(1000, 1000);
    p.passive.unhealthy.http_failures = 5;
    let mut h = kong(p);
    // Two passive 500s (limit 5), then one active 500 (limit 3): unhealthy.
    h.attempt(ms(0), 0, E500);
    h.attempt(ms(1), 0, E500);
    let t = *h.timer_times().iter().min().unwrap();
    h.advance_to(t);
    answer_all(&mut h, t, ProbeResult::Status(500));
    assert_eq!(h.policy.health(NodeId(0)), Health::Unhealthy);
}

#[test]
fn thresholds_of_255_are_refused_and_the_warnings_say_what_kong_does() {
    let mut p = passive(255, 0, 0, 0);
    assert_eq!(
        p.validate().unwrap_err().0,
        "passive.unhealthy.http_failures"
    );
    p.passive.unhealthy.http_failures = 3;
    let w: Vec<String> = p.warnings().into_iter().map(|(f, _)| f).collect();
    assert_eq!(
        w,
        vec!["passive.unhealthy"],
        "never re-enabled without active checks"
    );
    let mut p = active(1000, 1000);
    p.active.kind = CheckType::Tcp;
    let w = p.warnings();
    assert!(
        w.iter()
            .any(|(f, m)| f == "active.type" && m.contains("off")),
        "{w:?}"
    );
    assert!(Kong::new(&p, 2).checker.is_none());
}
