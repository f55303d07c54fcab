//! The breaker driven by scripted requests: admit, then the answer.

use super::*;
use crate::policy::testkit::{Harness, ms};

fn breaker(expr: &str) -> Harness<CircuitBreaker> {
    let p = CircuitBreakerParams {
        expression: expr.into(),
        check_period: SimDuration::from_millis(100),
        fallback_duration: SimDuration::from_secs(10),
        recovery_duration: SimDuration::from_secs(10),
        response_code: 503,
    };
    Harness::part(CircuitBreaker::new(&p).unwrap(), 1)
}

/// One request at `t`: admitted? If so it is answered at once with `status`.
fn request(h: &mut Harness<CircuitBreaker>, t: SimTime, status: u16) -> bool {
    let (ok, _) = h.call(t, |b, cx| b.admit(cx.now()));
    if ok {
        h.call(t, |b, cx| {
            b.record(cx.now(), status, SimDuration::from_millis(5))
        });
    }
    ok
}

/// Requests every 10 ms from `from` for `n` requests, every `k`-th a 502
/// (the `k`-th, `2k`-th, …: a first answer that is an error alone is a
/// ratio of 1).
fn traffic(h: &mut Harness<CircuitBreaker>, from: u64, n: u64, k: u64) -> (u64, u64) {
    let (mut served, mut denied) = (0, 0);
    for i in 0..n {
        let status = if k > 0 && i % k == k - 1 { 502 } else { 200 };
        if request(h, ms(from + 10 * i), status) {
            served += 1;
        } else {
            denied += 1;
        }
    }
    (served, denied)
}

#[test]
fn trips_on_the_condition_and_falls_back_for_fallback_duration() {
    let mut h = breaker("NetworkErrorRatio() > 0.30");
    // 1 in 4 is a 502 (25 %): never trips.
    assert_eq!(traffic(&mut h, 0, 300, 4), (300, 0));
    assert_eq!(h.policy.state(), State::Standby);
    // 1 in 2 (50 %, over the last 10 s with the 25 % before): trips once the
    // ratio of the window passes 30 %.
    let mut t = 3000;
    let mut tripped = None;
    for i in 0..500 {
        let status = if i % 2 == 0 { 502 } else { 200 };
        request(&mut h, ms(t), status);
        if h.policy.state() == State::Tripped {
            tripped = Some(t);
            break;
        }
        t += 10;
    }
    let at = tripped.expect("trips");
    // Every request during the fallback is refused, none recorded.
    let (served, denied) = traffic(&mut h, at + 10, 999, 0);
    assert_eq!(served, 0);
    assert_eq!(denied, 999);
    assert_eq!(h.policy.state(), State::Tripped);
    // The first request at or after the end starts the recovery.
    let (ok, change) = h.call(ms(at + 10_000), |b, cx| b.admit(cx.now()));
    assert!(!ok, "the ramp starts at 0");
    assert_eq!(change, Some(Change::Recovering));
}

#[test]
fn recovery_ramps_the_pass_fraction_linearly_and_ends_in_standby() {
    let mut h = breaker("NetworkErrorRatio() > 0.30");
    for i in 0..10 {
        request(&mut h, ms(i), 502);
    }
    assert_eq!(h.policy.state(), State::Tripped, "the first check trips");
    // Healthy traffic through the recovery, one request per 10 ms: the
    // cumulative allowed share follows 0.5·t/D, so the pass fraction grows
    // from 0 to 1 (first half: a quarter served, second half: three quarters).
    let (first, _) = traffic(&mut h, 10_000, 500, 0);
    let (second, _) = traffic(&mut h, 15_000, 500, 0);
    assert!((115..=135).contains(&first), "first 5 s: {first} of 500");
    assert!((365..=385).contains(&second), "last 5 s: {second} of 500");
    assert_eq!(h.policy.state(), State::Recovering);
    let (ok, change) = h.call(ms(20_001), |b, cx| b.admit(cx.now()));
    assert!(ok);
    assert_eq!(change, Some(Change::Standby));
}

#[test]
fn it_trips_again_while_recovering() {
    let mut h = breaker("NetworkErrorRatio() > 0.30");
    for i in 0..10 {
        request(&mut h, ms(i), 502);
    }
    // Still failing when it recovers: the served requests trip it again.
    let (served, _) = traffic(&mut h, 10_000, 300, 1);
    assert!(served > 0);
    assert_eq!(
        h.policy.state(),
        State::Tripped,
        "re-tripped during recovery"
    );
}

#[test]
fn a_first_answer_that_is_an_error_trips_at_once() {
    // The first record always checks (lastCheck is Go's zero time), and one
    // 502 of one answer is a ratio of 1.
    let mut h = breaker("NetworkErrorRatio() > 0.30");
    request(&mut h, ms(0), 502);
    assert_eq!(h.policy.state(), State::Tripped);
}

#[test]
fn the_condition_is_checked_at_most_once_per_check_period() {
    let mut h = breaker("NetworkErrorRatio() > 0.30");
    // First answer (200) checks at 0 and sets the next check after 100 ms.
    request(&mut h, ms(0), 200);
    for i in 1..10 {
        request(&mut h, ms(i * 10), 502);
    }
    assert_eq!(h.policy.state(), State::Standby, "no check before 100 ms");
    request(&mut h, ms(101), 502);
    assert_eq!(h.policy.state(), State::Tripped);
}

#[test]
fn old_buckets_leave_the_window() {
    let mut h = breaker("ResponseCodeRatio(500, 600, 0, 600) > 0.50 && RequestThreshold() > 5");
    // Errors at 0..1 s, then only successes: 11 s later the ratio is 0.
    request(&mut h, ms(0), 200);
    for i in 0..3 {
        request(&mut h, ms(200 + 200 * i), 500);
    }
    assert_eq!(h.policy.state(), State::Standby, "RequestThreshold() is 4");
    request(&mut h, ms(11_000), 200);
    request(&mut h, ms(11_200), 500);
    assert_eq!(
        h.policy.state(),
        State::Standby,
        "the early errors left the window"
    );
}
