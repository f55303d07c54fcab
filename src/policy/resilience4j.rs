//! Resilience4j's `CircuitBreakerStateMachine`, one breaker per node (a
//! client-side breaker around each upstream), as `CircuitBreakerConfig`,
//! `CircuitBreakerMetrics` and the sliding-window metrics implement it.
//!
//! - CLOSED records each completion (error / slow) in a COUNT_BASED window
//!   (the last N calls) or a TIME_BASED one (N one-second buckets aligned to
//!   wall-clock epoch seconds: the current partial second and the N−1
//!   before). Once the window holds `minimumNumberOfCalls` (clamped to the
//!   window size when COUNT_BASED), a failure rate `≥ failureRateThreshold`
//!   or a slow-call rate `≥ slowCallRateThreshold` opens the breaker.
//! - OPEN rejects every call until `waitDurationInOpenState` (times
//!   `exponential_backoff_multiplier^(attempts−1)` if set) has passed; the
//!   first call strictly after the deadline flips it to HALF_OPEN and is
//!   itself admitted (or a timer does it, with automatic transition).
//! - HALF_OPEN admits `permittedNumberOfCallsInHalfOpenState` calls and
//!   judges a fresh window of that size (`minimumNumberOfCalls` clamped to
//!   it): over the thresholds → OPEN with attempts + 1; below → CLOSED with a
//!   new window.
//! - Completions land in whatever state the breaker is in when they
//!   complete (Resilience4j does not remember the state that admitted a call);
//!   completions while OPEN change nothing.
//!
//! Decisions: failures are [`Outcome::of`]'s (5xx, timeouts, connect errors,
//! resets); a client abort is an ignored exception, which releases its
//! half-open permit; the call duration is the attempt's, from selection to
//! its end. The breaker is shared by all gateway workers.

use super::support::backoff::Exponential;
use super::support::window::{BucketWindow, CountWindow, Outcome, SlidingWindow, Tally};
use super::{
    AttemptReport, HealthPolicy, Now, PolicyCx, PolicyParams, PolicyTimer, Readmit, Scope, ScopeSel,
};
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
pub enum SlidingWindowType {
    #[default]
    #[serde(rename = "COUNT_BASED", alias = "count_based")]
    CountBased,
    #[serde(rename = "TIME_BASED", alias = "time_based")]
    TimeBased,
}

/// `CircuitBreakerConfig`; snake_case names, Spring's camelCase accepted too.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Resilience4jParams {
    /// `COUNT_BASED` (default) or `TIME_BASED`.
    #[serde(alias = "slidingWindowType")]
    pub sliding_window_type: SlidingWindowType,
    /// Calls (COUNT_BASED) or seconds (TIME_BASED). Default 100.
    #[serde(alias = "slidingWindowSize")]
    pub sliding_window_size: u32,
    /// Default 100.
    #[serde(alias = "minimumNumberOfCalls")]
    pub minimum_number_of_calls: u32,
    /// Percent. Default 50.
    #[serde(alias = "failureRateThreshold")]
    pub failure_rate_threshold: f32,
    /// Percent. Default 100.
    #[serde(alias = "slowCallRateThreshold")]
    pub slow_call_rate_threshold: f32,
    /// A call longer than this is slow. Default 60s.
    #[serde(alias = "slowCallDurationThreshold")]
    pub slow_call_duration_threshold: SimDuration,
    /// Default 60s.
    #[serde(alias = "waitDurationInOpenState")]
    pub wait_duration_in_open_state: SimDuration,
    /// `IntervalFunction.ofExponentialBackoff`: each re-opening waits this
    /// many times longer. Default 1 (constant wait).
    #[serde(alias = "exponentialBackoffMultiplier")]
    pub exponential_backoff_multiplier: f64,
    /// Cap of the exponential wait. Default: none.
    #[serde(
        alias = "exponentialMaxWaitDurationInOpenState",
        skip_serializing_if = "Option::is_none"
    )]
    pub exponential_max_wait_duration_in_open_state: Option<SimDuration>,
    /// Default 10.
    #[serde(alias = "permittedNumberOfCallsInHalfOpenState")]
    pub permitted_number_of_calls_in_half_open_state: u32,
    /// A timer moves OPEN to HALF_OPEN at the deadline. Default false (lazy).
    #[serde(alias = "automaticTransitionFromOpenToHalfOpenEnabled")]
    pub automatic_transition_from_open_to_half_open_enabled: bool,
    /// HALF_OPEN longer than this goes back to OPEN; 0s waits for ever. Default 0s.
    #[serde(alias = "maxWaitDurationInHalfOpenState")]
    pub max_wait_duration_in_half_open_state: SimDuration,
}

impl Default for Resilience4jParams {
    fn default() -> Self {
        Resilience4jParams {
            sliding_window_type: SlidingWindowType::CountBased,
            sliding_window_size: 100,
            minimum_number_of_calls: 100,
            failure_rate_threshold: 50.0,
            slow_call_rate_threshold: 100.0,
            slow_call_duration_threshold: SimDuration::from_secs(60),
            wait_duration_in_open_state: SimDuration::from_secs(60),
            exponential_backoff_multiplier: 1.0,
            exponential_max_wait_duration_in_open_state: None,
            permitted_number_of_calls_in_half_open_state: 10,
            automatic_transition_from_open_to_half_open_enabled: false,
            max_wait_duration_in_half_open_state: SimDuration::ZERO,
        }
    }
}

impl PolicyParams for Resilience4jParams {
    fn label(&self) -> String {
        "resilience4j".into()
    }

    fn build(&self, _scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(Resilience4j::new(self, nodes))
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let err = |f: &str, r: &str| Err((f.to_string(), r.to_string()));
        if self.sliding_window_size == 0 {
            return err("sliding_window_size", "must be at least 1");
        }
        if self.minimum_number_of_calls == 0 {
            return err("minimum_number_of_calls", "must be at least 1");
        }
        if self.permitted_number_of_calls_in_half_open_state == 0 {
            return err(
                "permitted_number_of_calls_in_half_open_state",
                "must be at least 1",
            );
        }
        for (f, v) in [
            ("failure_rate_threshold", self.failure_rate_threshold),
            ("slow_call_rate_threshold", self.slow_call_rate_threshold),
        ] {
            if !(v > 0.0 && v <= 100.0) {
                return err(f, "is a percentage in (0, 100]");
            }
        }
        if self.wait_duration_in_open_state < SimDuration::from_millis(1) {
            return err("wait_duration_in_open_state", "must be at least 1ms");
        }
        if !(self.exponential_backoff_multiplier.is_finite()
            && self.exponential_backoff_multiplier >= 1.0)
        {
            return err("exponential_backoff_multiplier", "must be at least 1");
        }
        Ok(())
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    Closed,
    Open { until: SimTime, attempts: u32 },
    HalfOpen { permits: u32, attempts: u32 },
}

/// What `checkIfThresholdsExceeded` says about a window.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Verdict {
    BelowMinimumCalls,
    Below,
    Above,
}

#[derive(Clone, Debug)]
struct Breaker {
    state: State,
    closed: SlidingWindow,
    half: CountWindow,
    generation: u32,
}

const TO_HALF_OPEN: u32 = 1;
const HALF_OPEN_TIMEOUT: u32 = 2;

/// A Resilience4j circuit breaker per node.
pub struct Resilience4j {
    p: Resilience4jParams,
    wait: Exponential,
    min_calls_closed: u32,
    min_calls_half: u32,
    breakers: Vec<Breaker>,
}

impl Resilience4j {
    pub fn new(p: &Resilience4jParams, nodes: usize) -> Self {
        let size = p.sliding_window_size as usize;
        let closed = match p.sliding_window_type {
            SlidingWindowType::CountBased => SlidingWindow::Count(CountWindow::new(size)),
            SlidingWindowType::TimeBased => SlidingWindow::Time(BucketWindow::new(size)),
        };
        let permitted = p.permitted_number_of_calls_in_half_open_state;
        Resilience4j {
            wait: Exponential {
                initial: p.wait_duration_in_open_state,
                multiplier: p.exponential_backoff_multiplier,
                max: p
                    .exponential_max_wait_duration_in_open_state
                    .unwrap_or(SimDuration::MAX),
            },
            min_calls_closed: match p.sliding_window_type {
                SlidingWindowType::CountBased => {
                    p.minimum_number_of_calls.min(p.sliding_window_size)
                }
                SlidingWindowType::TimeBased => p.minimum_number_of_calls,
            },
            min_calls_half: p.minimum_number_of_calls.min(permitted),
            breakers: vec![
                Breaker {
                    state: State::Closed,
                    closed,
                    half: CountWindow::new(permitted as usize),
                    generation: 0,
                };
                nodes
            ],
            p: p.clone(),
        }
    }

    fn verdict(&self, t: Tally, min_calls: u32) -> Verdict {
        if t.calls == 0 || t.calls < min_calls {
            return Verdict::BelowMinimumCalls;
        }
        let failure_rate = t.failures as f32 * 100.0 / t.calls as f32;
        let slow_rate = t.slow as f32 * 100.0 / t.calls as f32;
        if failure_rate >= self.p.failure_rate_threshold
            || slow_rate >= self.p.slow_call_rate_threshold
        {
            Verdict::Above
        } else {
            Verdict::Below
        }
    }

    fn transition_to_open(&mut self, cx: &mut PolicyCx, i: usize, attempts: u32) {
        let now = cx.now().t;
        let until = now + self.wait.delay(attempts);
        let automatic = self.p.automatic_transition_from_open_to_half_open_enabled;
        let b = &mut self.breakers[i];
        b.state = State::Open { until, attempts };
        b.generation = b.generation.wrapping_add(1);
        if automatic {
            let timer = PolicyTimer {
                tag: TO_HALF_OPEN,
                node: i as u32,
                generation: b.generation,
            };
            cx.at(until, timer);
        }
        cx.ejected(ScopeSel::All, NodeId(i as u32));
    }

    /// OPEN → HALF_OPEN; `admitted`: the call that caused it takes a permit.
    fn transition_to_half_open(
        &mut self,
        cx: &mut PolicyCx,
        i: usize,
        attempts: u32,
        admitted: bool,
    ) {
        let permitted = self.p.permitted_number_of_calls_in_half_open_state;
        let max_wait = self.p.max_wait_duration_in_half_open_state;
        let b = &mut self.breakers[i];
        b.state = State::HalfOpen {
            permits: permitted - admitted as u32,
            attempts,
        };
        b.half.clear();
        b.generation = b.generation.wrapping_add(1);
        if max_wait >= SimDuration::from_millis(1) {
            let timer = PolicyTimer {
                tag: HALF_OPEN_TIMEOUT,
                node: i as u32,
                generation: b.generation,
            };
            cx.at(cx.now().t + max_wait, timer);
        }
        cx.readmitted(ScopeSel::All, NodeId(i as u32));
    }

    fn transition_to_closed(&mut self, i: usize) {
        let b = &mut self.breakers[i];
        b.state = State::Closed;
        b.closed.clear();
        b.generation = b.generation.wrapping_add(1);
    }

    /// The breaker's state name, for tests and traces.
    pub fn state_name(&self, node: NodeId) -> &'static str {
        match self.breakers[node.index()].state {
            State::Closed => "CLOSED",
            State::Open { .. } => "OPEN",
            State::HalfOpen { .. } => "HALF_OPEN",
        }
    }
}

impl HealthPolicy for Resilience4j {
    fn is_routable(&self, _: Scope, node: NodeId, now: Now) -> bool {
        match self.breakers[node.index()].state {
            State::Closed => true,
            // `clock.instant().isAfter(retryAfterWaitDuration)`: strictly after.
            State::Open { until, .. } => now.t > until,
            State::HalfOpen { permits, .. } => permits > 0,
        }
    }

    fn readmits_at(&self, _: Scope, node: NodeId, _: Now) -> Option<Readmit> {
        match self.breakers[node.index()].state {
            State::Open { until, .. } => Some(Readmit::At(until + SimDuration::from_micros(1))),
            _ => None,
        }
    }

    fn on_selected(&mut self, cx: &mut PolicyCx, _scope: Scope, node: NodeId) {
        let i = node.index();
        match self.breakers[i].state {
            State::Open { until, attempts } if cx.now().t > until => {
                self.transition_to_half_open(cx, i, attempts, true)
            }
            State::HalfOpen {
                ref mut permits, ..
            } => {
                *permits = permits.saturating_sub(1);
            }
            _ => {}
        }
    }

    fn on_attempt(&mut self, cx: &mut PolicyCx, r: &AttemptReport) {
        let i = r.node.index();
        let failed = match Outcome::of(r.result) {
            Outcome::Ignored => {
                // An ignored exception releases its permission.
                if let State::HalfOpen {
                    ref mut permits, ..
                } = self.breakers[i].state
                {
                    *permits += 1;
                }
                return;
            }
            o => o == Outcome::Failure,
        };
        let slow = r.elapsed > self.p.slow_call_duration_threshold;
        let epoch_second = cx.now().wall_s;
        match self.breakers[i].state {
            State::Closed => {
                let t = self.breakers[i].closed.record(epoch_second, failed, slow);
                if self.verdict(t, self.min_calls_closed) == Verdict::Above {
                    self.transition_to_open(cx, i, 1);
                }
            }
            State::Open { .. } => {}
            State::HalfOpen { attempts, .. } => {
                let t = self.breakers[i].half.record(failed, slow);
                match self.verdict(t, self.min_calls_half) {
                    Verdict::Above => self.transition_to_open(cx, i, attempts + 1),
                    Verdict::Below => self.transition_to_closed(i),
                    Verdict::BelowMinimumCalls => {}
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        let i = timer.node as usize;
        if self.breakers[i].generation != timer.generation {
            return;
        }
        match (timer.tag, self.breakers[i].state) {
            (TO_HALF_OPEN, State::Open { attempts, .. }) => {
                self.transition_to_half_open(cx, i, attempts, false)
            }
            (HALF_OPEN_TIMEOUT, State::HalfOpen { attempts, .. }) => {
                self.transition_to_open(cx, i, attempts + 1)
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::AttemptResult;
    use crate::policy::testkit::{Harness, ms};

    const OK: AttemptResult = AttemptResult::Status(200);
    const BAD: AttemptResult = AttemptResult::Status(500);

    fn small() -> Resilience4jParams {
        Resilience4jParams {
            sliding_window_size: 10,
            minimum_number_of_calls: 10,
            wait_duration_in_open_state: SimDuration::from_secs(5),
            permitted_number_of_calls_in_half_open_state: 3,
            ..Default::default()
        }
    }

    fn r4j(p: Resilience4jParams) -> Harness<Resilience4j> {
        Harness::new(Resilience4j::new(&p, 2))
    }

    fn trip(h: &mut Harness<Resilience4j>, at_ms: u64) {
        for k in 0..10 {
            h.attempt(ms(at_ms + k), 0, if k % 2 == 0 { BAD } else { OK });
        }
    }

    #[test]
    fn opens_at_the_minimum_calls_with_ge_threshold() {
        let mut h = r4j(small());
        for k in 0..9 {
            h.attempt(ms(k), 0, BAD);
        }
        assert_eq!(h.policy.state_name(NodeId(0)), "CLOSED", "9 < 10 calls");
        let mut h = r4j(small());
        trip(&mut h, 0); // exactly 50 % of 10
        assert_eq!(h.policy.state_name(NodeId(0)), "OPEN");
        assert!(!h.routable(0));
        assert_eq!(h.history(0), vec![(ms(9), true)]);
    }

    #[test]
    fn default_minimum_is_clamped_to_a_smaller_count_window() {
        let p = Resilience4jParams {
            sliding_window_size: 4,
            ..Default::default() // minimum_number_of_calls 100
        };
        let mut h = r4j(p);
        for k in 0..4 {
            h.attempt(ms(k), 0, BAD);
        }
        assert_eq!(h.policy.state_name(NodeId(0)), "OPEN");
    }

    #[test]
    fn open_is_left_lazily_by_the_first_call_strictly_after_the_deadline() {
        let mut h = r4j(small());
        trip(&mut h, 0); // opened at 9 ms, deadline 5.009 s
        h.advance_to(ms(5_009));
        assert!(!h.routable(0), "at the deadline: not after it");
        h.advance_to(ms(5_010));
        assert!(h.routable(0));
        assert_eq!(
            h.policy.state_name(NodeId(0)),
            "OPEN",
            "no call yet: still OPEN"
        );
        h.advance_to(ms(60_000));
        assert_eq!(
            h.policy.state_name(NodeId(0)),
            "OPEN",
            "OPEN never ends without traffic"
        );
        h.select(ms(60_000), 0);
        assert_eq!(h.policy.state_name(NodeId(0)), "HALF_OPEN");
    }

    #[test]
    fn half_open_admits_the_permitted_calls_and_judges_their_rate() {
        let mut h = r4j(small());
        trip(&mut h, 0);
        // Three trials are admitted (the first flips the state), the fourth is not.
        h.advance_to(ms(6_000));
        for _ in 0..3 {
            assert!(h.routable(0));
            h.select(ms(6_000), 0);
        }
        assert!(!h.routable(0), "permits used up");
        // One failure of three: 33 % < 50 % → CLOSED with a fresh window.
        h.complete(ms(6_100), 0, BAD, SimDuration::ZERO);
        assert_eq!(
            h.policy.state_name(NodeId(0)),
            "HALF_OPEN",
            "1 < 3 recorded"
        );
        h.complete(ms(6_100), 0, OK, SimDuration::ZERO);
        h.complete(ms(6_100), 0, OK, SimDuration::ZERO);
        assert_eq!(h.policy.state_name(NodeId(0)), "CLOSED");
        assert!(h.routable(0));
    }

    #[test]
    fn a_failed_half_open_reopens_with_a_growing_wait() {
        let p = Resilience4jParams {
            exponential_backoff_multiplier: 2.0,
            ..small()
        };
        let mut h = r4j(p);
        trip(&mut h, 0); // OPEN until 5.009 s (attempt 1)
        for k in 0..3 {
            h.attempt(ms(6_000 + k), 0, if k < 2 { BAD } else { OK });
        }
        // 2 of 3 failed → OPEN with attempts 2: wait 10 s from 6.002 s.
        assert_eq!(h.policy.state_name(NodeId(0)), "OPEN");
        h.advance_to(ms(16_002));
        assert!(!h.routable(0));
        h.advance_to(ms(16_003));
        assert!(h.routable(0));
    }

    #[test]
    fn client_aborts_release_half_open_permits() {
        let mut h = r4j(small());
        trip(&mut h, 0);
        for _ in 0..3 {
            h.select(ms(6_000), 0);
        }
        assert!(!h.routable(0));
        h.complete(ms(6_001), 0, AttemptResult::ClientAbort, SimDuration::ZERO);
        assert!(h.routable(0), "the aborted trial gave its permit back");
    }

    #[test]
    fn slow_calls_open_the_breaker() {
        let p = Resilience4jParams {
            slow_call_rate_threshold: 50.0,
            slow_call_duration_threshold: SimDuration::from_secs(1),
            ..small()
        };
        let mut h = r4j(p);
        for k in 0..10 {
            h.select(ms(k), 0);
        }
        for k in 0..10 {
            let slow = if k < 5 { 1_001 } else { 1_000 };
            h.complete(ms(k + slow), 0, OK, SimDuration::from_millis(slow));
        }
        assert_eq!(h.policy.state_name(NodeId(0)), "OPEN", "5 of 10 over 1 s");
    }

    #[test]
    fn time_based_window_uses_epoch_seconds() {
        let p = Resilience4jParams {
            sliding_window_type: SlidingWindowType::TimeBased,
            sliding_window_size: 2,
            minimum_number_of_calls: 4,
            ..small()
        };
        let mut h = r4j(p);
        h.attempt(ms(100), 0, BAD);
        h.attempt(ms(200), 0, BAD);
        // Two seconds on, the first second's bucket has left the window.
        h.attempt(ms(2_100), 0, OK);
        h.attempt(ms(2_200), 0, OK);
        h.attempt(ms(2_300), 0, BAD);
        assert_eq!(
            h.policy.state_name(NodeId(0)),
            "CLOSED",
            "3 calls in the window"
        );
        h.attempt(ms(2_400), 0, BAD); // 2 of 4 = 50 %
        assert_eq!(h.policy.state_name(NodeId(0)), "OPEN");
    }

    #[test]
    fn automatic_transition_and_half_open_timeout() {
        let p = Resilience4jParams {
            automatic_transition_from_open_to_half_open_enabled: true,
            max_wait_duration_in_half_open_state: SimDuration::from_secs(2),
            ..small()
        };
        let mut h = r4j(p);
        trip(&mut h, 0);
        h.advance_to(ms(5_009));
        assert_eq!(
            h.policy.state_name(NodeId(0)),
            "HALF_OPEN",
            "timer at the deadline"
        );
        h.advance_to(ms(7_009));
        assert_eq!(
            h.policy.state_name(NodeId(0)),
            "OPEN",
            "no verdict within 2 s"
        );
    }
}
