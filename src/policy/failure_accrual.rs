//! Failure accrual per endpoint: Finagle's `FailureAccrualFactory` with its
//! default policy since 19.6.0 (`FailureAccrualFactory.defaultPolicy`):
//! `successRateWithinDuration(0.8, 30 s, equalJittered(5s, 300s), 5)
//! orElse consecutiveFailures(5, equalJittered(5s, 300s))`, or
//! `consecutiveFailures` alone (`accrual_policy: consecutive`: Linkerd 1.x's
//! default, Finagle before 19.6.0); and Linkerd 2.x's opt-in
//! consecutive-failures breaker (`flavour: linkerd`: 7 failures, 1 s..60 s
//! doubling back-off, jitter 0.5).
//!
//! `successRateWithinDuration` (`FailureAccrualPolicy.scala`): each success
//! and each failure counted by the policy updates an [`Ema`] of the success
//! rate (1 or 0) stamped with the milliseconds since the policy was built or
//! revived, time constant `window`, and a [`WindowedAdder`] of requests over
//! `window` in 5 slices. A failure marks the endpoint dead if the stamp is
//! at least `window`, the average is below the required rate and the adder
//! holds at least `min_requests`. `orElse` asks both policies on every
//! failure (each advances its own back-off stream when it answers) and takes
//! the longer duration; successes and revivals go to both.
//!
//! States: Alive → (the policy marks the endpoint dead on a failure) → Dead
//! for a back-off duration (failures ignored) → ProbeOpen (routable again) →
//! the first request selected → ProbeClosed (busy: nothing else is sent) →
//! a success revives it (Alive, counter and back-off reset); a failure marks
//! it dead again for the next back-off duration.
//!
//! Finagle specifics kept: the counter is +1 per failure in Alive/ProbeClosed
//! and reset by *any* success, including one completing while Dead; marking
//! dead needs `counter ≥ consecutive_failures`, so a failed probe re-kills at
//! once unless such a success reset the counter, in which case the endpoint
//! probes again; an ignorable result (here: a client abort) in ProbeClosed
//! returns to ProbeOpen; the first completion in ProbeClosed decides, even if
//! it belongs to a request sent earlier. Linkerd: a failed probe always marks
//! dead with the next back-off; completions while dead are ignored.
//!
//! What is a failure: connect errors (a failed service acquisition),
//! timeouts and resets always; 5xx statuses with the default
//! `server_errors_as_failures` classifier. Finagle's own default classifier
//! counts only exceptions — select it with `classifier: exceptions_only`.
//! One accrual state per node, shared by all gateway workers.

use super::support::backoff::{EqualJittered, EqualJitteredCursor, JitteredExponential};
use super::support::ema::{Ema, WindowedAdder};
use super::{
    AttemptReport, AttemptResult, HealthPolicy, Now, PolicyCx, PolicyParams, PolicyTimer, Scope,
    ScopeSel,
};
use crate::engine::SimDuration;
use crate::ids::NodeId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whose failure accrual.
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Flavour {
    /// Finagle / Linkerd 1.x: 5 failures, equal-jittered 5 s..300 s.
    #[default]
    Finagle,
    /// Linkerd 2.x `failure-accrual: consecutive`: 7 failures, 1 s..60 s, jitter 0.5.
    Linkerd,
}

/// Which `FailureAccrualPolicy` marks a Finagle endpoint dead.
#[derive(Copy, Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AccrualPolicy {
    /// Finagle ≥ 19.6.0's default: `successRateWithinDuration(…) orElse
    /// consecutiveFailures(…)`, the longer mark-dead duration wins.
    SuccessRateOrConsecutive,
    /// `consecutiveFailures` alone: Linkerd 1.x's default
    /// (`io.l5d.consecutiveFailures`), Finagle before 19.6.0, Linkerd 2.x.
    Consecutive,
}

/// Which responses count as failures.
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Classifier {
    /// 5xx statuses, timeouts, connect errors and resets (Linkerd 2.x; Finagle's `ServerErrorsAsFailures`).
    #[default]
    ServerErrorsAsFailures,
    /// Only timeouts, connect errors and resets (Finagle's `ResponseClassifier.Default`).
    ExceptionsOnly,
}

/// Failure accrual parameters; unset values take the flavour's default.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct FailureAccrualParams {
    pub flavour: Flavour,
    /// Consecutive failures that mark the endpoint dead. Finagle 5, Linkerd 7.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consecutive_failures: Option<u32>,
    /// First mark-dead duration. Finagle 5s, Linkerd 1s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_penalty: Option<SimDuration>,
    /// Longest mark-dead duration. Finagle 300s, Linkerd 60s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_penalty: Option<SimDuration>,
    /// Linkerd only: jitter up to this fraction of the back-off. Default 0.5.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_ratio: Option<f64>,
    pub classifier: Classifier,
    /// Finagle: `success_rate_or_consecutive` (default, Finagle ≥ 19.6.0) or
    /// `consecutive` (Linkerd 1.x, older Finagle). Linkerd 2.x: `consecutive`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accrual_policy: Option<AccrualPolicy>,
    /// `successRateWithinDuration`'s `requiredSuccessRate`. Default 0.8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_success_rate: Option<f64>,
    /// `successRateWithinDuration`'s `window`: the moving average's time
    /// constant, the time since start or revival before it may mark dead,
    /// and the range of its request counter. Default 30s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success_rate_window: Option<SimDuration>,
    /// `successRateWithinDuration`'s `minRequestThreshold`: requests the
    /// counter must hold. Default 5.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_requests: Option<u32>,
}

impl FailureAccrualParams {
    pub fn consecutive_failures(&self) -> u32 {
        self.consecutive_failures.unwrap_or(match self.flavour {
            Flavour::Finagle => 5,
            Flavour::Linkerd => 7,
        })
    }
    pub fn min_penalty(&self) -> SimDuration {
        self.min_penalty.unwrap_or(match self.flavour {
            Flavour::Finagle => SimDuration::from_secs(5),
            Flavour::Linkerd => SimDuration::from_secs(1),
        })
    }
    pub fn max_penalty(&self) -> SimDuration {
        self.max_penalty.unwrap_or(match self.flavour {
            Flavour::Finagle => SimDuration::from_secs(300),
            Flavour::Linkerd => SimDuration::from_secs(60),
        })
    }
    pub fn accrual_policy(&self) -> AccrualPolicy {
        self.accrual_policy.unwrap_or(match self.flavour {
            Flavour::Finagle => AccrualPolicy::SuccessRateOrConsecutive,
            Flavour::Linkerd => AccrualPolicy::Consecutive,
        })
    }
    pub fn required_success_rate(&self) -> f64 {
        self.required_success_rate.unwrap_or(0.8)
    }
    pub fn success_rate_window(&self) -> SimDuration {
        self.success_rate_window
            .unwrap_or(SimDuration::from_secs(30))
    }
    pub fn min_requests(&self) -> u32 {
        self.min_requests.unwrap_or(5)
    }
}

impl PolicyParams for FailureAccrualParams {
    fn label(&self) -> String {
        match (self.flavour, self.accrual_policy()) {
            (Flavour::Finagle, AccrualPolicy::SuccessRateOrConsecutive) => {
                "failure_accrual finagle".into()
            }
            (Flavour::Finagle, AccrualPolicy::Consecutive) => {
                "failure_accrual finagle consecutive".into()
            }
            (Flavour::Linkerd, _) => "failure_accrual linkerd".into(),
        }
    }

    fn build(&self, _scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(FailureAccrual::new(self, nodes))
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let err = |f: &str, r: &str| Err((f.to_string(), r.to_string()));
        if self.consecutive_failures() == 0 {
            return err("consecutive_failures", "must be at least 1");
        }
        if self.min_penalty().is_zero() {
            return err("min_penalty", "must be positive");
        }
        if self.max_penalty() < self.min_penalty() {
            return err("max_penalty", "cannot be smaller than min_penalty");
        }
        if let Some(j) = self.jitter_ratio {
            if self.flavour == Flavour::Finagle {
                return err(
                    "jitter_ratio",
                    "Finagle's equal-jittered back-off has no jitter ratio (use flavour linkerd)",
                );
            }
            if !(0.0..=1.0).contains(&j) {
                return err("jitter_ratio", "must be in [0, 1]");
            }
        }
        if self.flavour == Flavour::Linkerd
            && self.accrual_policy() == AccrualPolicy::SuccessRateOrConsecutive
        {
            return err(
                "accrual_policy",
                "Linkerd 2.x's breaker counts consecutive failures only (use flavour finagle)",
            );
        }
        if self.accrual_policy() == AccrualPolicy::Consecutive {
            let set = [
                (
                    "required_success_rate",
                    self.required_success_rate.is_some(),
                ),
                ("success_rate_window", self.success_rate_window.is_some()),
                ("min_requests", self.min_requests.is_some()),
            ];
            if let Some((f, _)) = set.iter().find(|(_, s)| *s) {
                return err(
                    f,
                    "applies only with accrual_policy success_rate_or_consecutive",
                );
            }
        }
        if !(0.0..=1.0).contains(&self.required_success_rate()) {
            return err("required_success_rate", "must be in [0, 1]");
        }
        // `WindowedAdder(window, 5, …)` needs slices of at least 1 ms.
        if self.success_rate_window() < SimDuration::from_millis(5) {
            return err("success_rate_window", "must be at least 5ms");
        }
        Ok(())
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    Alive,
    Dead,
    ProbeOpen,
    ProbeClosed,
}

/// `successRateWithinDuration`'s settings, in milliseconds as Finagle
/// counts them.
#[derive(Copy, Clone, Debug)]
struct RateRule {
    required: f64,
    window_ms: i64,
    min_requests: i64,
}

/// `successRateWithinDuration`'s state for one endpoint.
#[derive(Clone, Debug)]
struct SuccessRate {
    ema: Ema,
    /// `startMillis`: when the policy was built or last revived.
    start_ms: i64,
    /// `requestCounter`: `WindowedAdder(window, 5, …)`.
    requests: WindowedAdder,
    /// `nextMarkDeadFor`: its own position in the back-off stream.
    cursor: EqualJitteredCursor,
}

impl SuccessRate {
    fn new(rule: RateRule, first: EqualJitteredCursor) -> Self {
        SuccessRate {
            ema: Ema::new(rule.window_ms),
            start_ms: 0,
            requests: WindowedAdder::new(rule.window_ms, 5, 0),
            cursor: first,
        }
    }

    /// `recordSuccess`: the counter, then the average with a 1.
    fn record_success(&mut self, now: i64) {
        self.requests.incr(now);
        self.ema.update(now - self.start_ms, 1.0);
    }

    /// `markDeadOnFailure` → `canRemove`: a window since start or revival,
    /// the average below the required rate, and enough requests (asked
    /// last: reading the counter may close its slice).
    fn mark_dead_on_failure(
        &mut self,
        rule: RateRule,
        now: i64,
        backoff: &EqualJittered,
        rng: &mut crate::engine::SimRng,
    ) -> Option<SimDuration> {
        self.requests.incr(now);
        let stamp = now - self.start_ms;
        let sr = self.ema.update(stamp, 0.0);
        if stamp >= rule.window_ms
            && sr < rule.required
            && self.requests.sum(now) >= rule.min_requests
        {
            let d = self.cursor.duration();
            self.cursor = backoff.next(self.cursor, rng);
            Some(d)
        } else {
            None
        }
    }

    /// `revived`: a fresh back-off stream, clock, counter and average.
    fn revived(&mut self, now: i64, first: EqualJitteredCursor) {
        self.cursor = first;
        self.start_ms = now;
        self.requests.reset(now);
        self.ema.reset();
    }
}

#[derive(Clone, Debug)]
struct Endpoint {
    state: State,
    consecutive: u32,
    /// Finagle: the consecutive policy's position in the mark-dead back-off stream.
    cursor: EqualJitteredCursor,
    /// Finagle's default policy: the success-rate half.
    rate: Option<SuccessRate>,
    /// Linkerd: back-off iterations since the breaker shut.
    iteration: u32,
    generation: u32,
}

/// Failure accrual for every node.
pub struct FailureAccrual {
    flavour: Flavour,
    classifier: Classifier,
    threshold: u32,
    finagle: EqualJittered,
    linkerd: JitteredExponential,
    rule: Option<RateRule>,
    endpoints: Vec<Endpoint>,
}

/// `Stopwatch.systemMillis`, on the simulated clock.
fn now_ms(cx: &PolicyCx) -> i64 {
    (cx.now().t.as_micros() / 1000) as i64
}

impl FailureAccrual {
    pub fn new(p: &FailureAccrualParams, nodes: usize) -> Self {
        let finagle = EqualJittered {
            start: p.min_penalty(),
            max: p.max_penalty(),
        };
        let rule = (p.flavour == Flavour::Finagle
            && p.accrual_policy() == AccrualPolicy::SuccessRateOrConsecutive)
            .then(|| RateRule {
                required: p.required_success_rate(),
                window_ms: (p.success_rate_window().as_micros() / 1000) as i64,
                min_requests: p.min_requests() as i64,
            });
        FailureAccrual {
            flavour: p.flavour,
            classifier: p.classifier,
            threshold: p.consecutive_failures(),
            linkerd: JitteredExponential {
                min: p.min_penalty(),
                max: p.max_penalty(),
                jitter_ratio: p.jitter_ratio.unwrap_or(0.5),
            },
            endpoints: vec![
                Endpoint {
                    state: State::Alive,
                    consecutive: 0,
                    cursor: finagle.first(),
                    rate: rule.map(|r| SuccessRate::new(r, finagle.first())),
                    iteration: 0,
                    generation: 0,
                };
                nodes
            ],
            rule,
            finagle,
        }
    }

    /// The endpoint's state name, for tests and traces.
    pub fn state_name(&self, node: NodeId) -> &'static str {
        match self.endpoints[node.index()].state {
            State::Alive => "Alive",
            State::Dead => "Dead",
            State::ProbeOpen => "ProbeOpen",
            State::ProbeClosed => "ProbeClosed",
        }
    }

    /// The success-rate average of `node` (`successRate.last`), if the
    /// policy has one.
    pub fn success_rate(&self, node: NodeId) -> Option<f64> {
        self.endpoints[node.index()]
            .rate
            .as_ref()
            .map(|r| r.ema.last())
    }

    /// `markDeadFor(duration)`: Dead, and ProbeOpen when the timer fires.
    fn mark_dead(&mut self, cx: &mut PolicyCx, i: usize, duration: SimDuration) {
        let e = &mut self.endpoints[i];
        e.state = State::Dead;
        e.generation = e.generation.wrapping_add(1);
        let timer = PolicyTimer {
            tag: 0,
            node: i as u32,
            generation: e.generation,
        };
        cx.at(cx.now().t + duration, timer);
        cx.ejected(ScopeSel::All, NodeId(i as u32));
    }

    /// `FailureAccrualFactory.didFail`.
    fn did_fail(&mut self, cx: &mut PolicyCx, i: usize) {
        let e = &self.endpoints[i];
        if !matches!(e.state, State::Alive | State::ProbeClosed) {
            return;
        }
        let probing = e.state == State::ProbeClosed;
        match self.flavour {
            Flavour::Finagle => {
                let now = now_ms(cx);
                let (backoff, threshold) = (self.finagle, self.threshold);
                let e = &mut self.endpoints[i];
                // `orElse`: both policies hear the failure, `self` first.
                let by_rate = match (&mut e.rate, self.rule) {
                    (Some(r), Some(rule)) => r.mark_dead_on_failure(rule, now, &backoff, cx.rng()),
                    _ => None,
                };
                e.consecutive += 1;
                let by_count = (e.consecutive >= threshold).then(|| {
                    let d = e.cursor.duration();
                    e.cursor = backoff.next(e.cursor, cx.rng());
                    d
                });
                // The longer of the two durations.
                match by_rate.max(by_count) {
                    Some(d) => self.mark_dead(cx, i, d),
                    None if probing => e.state = State::ProbeOpen, // probe again
                    None => {}
                }
            }
            Flavour::Linkerd => {
                let e = &mut self.endpoints[i];
                e.consecutive += 1;
                if probing || e.consecutive == self.threshold {
                    let d = self.linkerd.delay(e.iteration, cx.rng());
                    e.iteration += 1;
                    self.mark_dead(cx, i, d);
                }
            }
        }
    }

    /// `FailureAccrualFactory.didSucceed`: a probe's success revives the
    /// endpoint (`policy.revived()`), then every success is recorded
    /// (`policy.recordSuccess()`), whatever the state.
    fn did_succeed(&mut self, cx: &mut PolicyCx, i: usize) {
        let first = self.finagle.first();
        let now = now_ms(cx);
        let e = &mut self.endpoints[i];
        match (self.flavour, e.state) {
            (_, State::ProbeClosed) => {
                e.state = State::Alive;
                e.cursor = first;
                e.iteration = 0;
                e.consecutive = 0;
                if let Some(r) = &mut e.rate {
                    r.revived(now, first);
                }
            }
            (Flavour::Finagle, _) | (Flavour::Linkerd, State::Alive) => e.consecutive = 0,
            (Flavour::Linkerd, _) => {}
        }
        if self.flavour == Flavour::Finagle
            && let Some(r) = &mut e.rate
        {
            r.record_success(now);
        }
    }
}

impl HealthPolicy for FailureAccrual {
    fn is_routable(&self, _: Scope, node: NodeId, _: Now) -> bool {
        matches!(
            self.endpoints[node.index()].state,
            State::Alive | State::ProbeOpen
        )
    }

    fn on_selected(&mut self, _cx: &mut PolicyCx, _scope: Scope, node: NodeId) {
        let e = &mut self.endpoints[node.index()];
        if e.state == State::ProbeOpen {
            e.state = State::ProbeClosed; // stopProbing
        }
    }

    fn on_attempt(&mut self, cx: &mut PolicyCx, r: &AttemptReport) {
        let i = r.node.index();
        match r.result {
            AttemptResult::Status(s) if s >= 500 => match self.classifier {
                Classifier::ServerErrorsAsFailures => self.did_fail(cx, i),
                Classifier::ExceptionsOnly => self.did_succeed(cx, i),
            },
            AttemptResult::Status(_) => self.did_succeed(cx, i),
            AttemptResult::Refused
            | AttemptResult::ConnectTimeout
            | AttemptResult::ReadTimeout
            | AttemptResult::Reset => self.did_fail(cx, i),
            // Another layer rejected it: the endpoint never saw it.
            AttemptResult::Rejected => {}
            AttemptResult::ClientAbort => {
                let e = &mut self.endpoints[i];
                if e.state == State::ProbeClosed {
                    e.state = State::ProbeOpen;
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        let e = &mut self.endpoints[timer.node as usize];
        if e.state == State::Dead && e.generation == timer.generation {
            e.state = State::ProbeOpen; // startProbing
            cx.readmitted(ScopeSel::All, NodeId(timer.node));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SimTime;
    use crate::policy::testkit::{Harness, ms};

    const OK: AttemptResult = AttemptResult::Status(200);
    const BAD: AttemptResult = AttemptResult::Status(503);

    fn fa(p: FailureAccrualParams) -> Harness<FailureAccrual> {
        Harness::new(FailureAccrual::new(&p, 2))
    }

    #[test]
    fn finagle_marks_dead_on_the_fifth_consecutive_failure_for_5s() {
        let mut h = fa(FailureAccrualParams::default());
        for k in 0..4 {
            h.attempt(ms(k), 0, BAD);
        }
        h.attempt(ms(4), 0, OK); // reset
        for k in 0..4 {
            h.attempt(ms(10 + k), 0, BAD);
        }
        assert!(h.routable(0));
        h.attempt(ms(14), 0, BAD);
        assert!(!h.routable(0), "fifth consecutive failure");
        h.advance_to(ms(5_013));
        assert!(!h.routable(0));
        h.advance_to(ms(5_014));
        assert_eq!(h.policy.state_name(NodeId(0)), "ProbeOpen");
        assert!(h.routable(0));
    }

    #[test]
    fn one_probe_request_then_revive_or_kill_with_the_next_backoff() {
        let mut h = fa(FailureAccrualParams::default());
        for k in 0..5 {
            h.attempt(ms(k), 0, BAD);
        }
        h.advance_to(ms(5_004));
        h.select(ms(5_004), 0);
        assert_eq!(h.policy.state_name(NodeId(0)), "ProbeClosed");
        assert!(!h.routable(0), "busy while the probe is out");
        // The probe fails: the counter is still ≥ 5, so dead again at once, for [5, 10) s.
        h.complete(ms(5_010), 0, BAD, SimDuration::ZERO);
        assert_eq!(h.policy.state_name(NodeId(0)), "Dead");
        let t_dead = h.now();
        while !h.routable(0) {
            let t = h.now() + SimDuration::from_millis(10);
            h.advance_to(t);
        }
        let d = h.now().saturating_since(t_dead);
        assert!(
            d >= SimDuration::from_secs(5) && d < SimDuration::from_secs(10),
            "{d}"
        );
        // A successful probe revives it and resets the back-off to 5 s.
        let t = h.now();
        h.attempt(t, 0, OK);
        assert_eq!(h.policy.state_name(NodeId(0)), "Alive");
        for k in 0..5 {
            h.attempt(t + SimDuration::from_millis(k + 1), 0, BAD);
        }
        let t_dead = h.now();
        h.advance_to(t_dead + SimDuration::from_secs(5));
        assert!(h.routable(0), "first duration of a fresh stream: 5 s");
    }

    #[test]
    fn a_success_while_dead_resets_the_counter_so_a_failed_probe_probes_again() {
        let mut h = fa(FailureAccrualParams::default());
        for k in 0..5 {
            h.attempt(ms(k), 0, BAD);
        }
        // A request sent before the ejection completes with success while Dead.
        h.complete(ms(100), 0, OK, SimDuration::ZERO);
        h.advance_to(ms(5_004));
        h.select(ms(5_004), 0);
        h.complete(ms(5_010), 0, BAD, SimDuration::ZERO);
        assert_eq!(
            h.policy.state_name(NodeId(0)),
            "ProbeOpen",
            "counter 1 < 5: not marked dead, probe again"
        );
    }

    #[test]
    fn exceptions_only_classifier_ignores_5xx() {
        let mut h = fa(FailureAccrualParams {
            classifier: Classifier::ExceptionsOnly,
            ..Default::default()
        });
        for k in 0..10 {
            h.attempt(ms(k), 0, BAD);
        }
        assert!(h.routable(0));
        for k in 0..5 {
            h.attempt(ms(20 + k), 0, AttemptResult::Refused);
        }
        assert!(!h.routable(0));
    }

    #[test]
    fn a_client_abort_of_the_probe_reopens_probing() {
        let mut h = fa(FailureAccrualParams::default());
        for k in 0..5 {
            h.attempt(ms(k), 0, BAD);
        }
        h.select(ms(6_000), 0);
        h.complete(ms(6_001), 0, AttemptResult::ClientAbort, SimDuration::ZERO);
        assert_eq!(h.policy.state_name(NodeId(0)), "ProbeOpen");
    }

    #[test]
    fn linkerd_seven_failures_then_doubling_penalties() {
        let mut h = fa(FailureAccrualParams {
            flavour: Flavour::Linkerd,
            jitter_ratio: Some(0.0),
            ..Default::default()
        });
        for k in 0..6 {
            h.attempt(ms(k), 0, BAD);
        }
        assert!(h.routable(0));
        h.attempt(ms(6), 0, BAD);
        assert!(!h.routable(0), "seventh failure");
        // Penalties 1, 2, 4 s while probes fail.
        let mut t: SimTime = h.now();
        for expect in [1u64, 2, 4] {
            h.advance_to(t + (SimDuration::from_secs(expect) - SimDuration::from_micros(1)));
            assert!(!h.routable(0));
            h.advance_to(t + SimDuration::from_secs(expect));
            assert!(h.routable(0));
            t = h.now();
            h.attempt(t, 0, BAD);
        }
        // A successful probe: alive, and the next trip starts at 1 s again.
        h.advance_to(t + SimDuration::from_secs(8));
        let t = h.now();
        h.attempt(t, 0, OK);
        assert_eq!(h.policy.state_name(NodeId(0)), "Alive");
        for k in 0..7 {
            h.attempt(t + SimDuration::from_millis(k + 1), 0, BAD);
        }
        let t = h.now();
        h.advance_to(t + SimDuration::from_secs(1));
        assert!(h.routable(0));
    }

    /// OK and 503 in turn every `step_ms` from `from_ms` to `to_ms`; stops
    /// at the first mark-dead and returns its time.
    fn alternate(
        h: &mut Harness<FailureAccrual>,
        from_ms: u64,
        to_ms: u64,
        step_ms: u64,
    ) -> Option<SimTime> {
        for (k, t) in (from_ms..to_ms).step_by(step_ms as usize).enumerate() {
            h.attempt(ms(t), 0, if k % 2 == 0 { OK } else { BAD });
            if !h.routable(0) {
                return Some(ms(t));
            }
        }
        None
    }

    #[test]
    fn half_failing_is_marked_dead_by_success_rate_after_one_window() {
        // `FailureAccrualFactory.defaultPolicy` (Finagle ≥ 19.6.0): never five
        // in a row, but the success rate (an `Ema` near 0.5) is below 0.8;
        // `canRemove` waits until the stamp reaches the 30 s window.
        let mut h = fa(FailureAccrualParams::default());
        let dead = alternate(&mut h, 0, 60_000, 100).expect("marked dead");
        assert_eq!(dead, ms(30_100), "the first failure at or after 30 s");
        let sr = h.policy.success_rate(NodeId(0)).unwrap();
        assert!(sr < 0.8 && sr > 0.4, "{sr}");
        // The success-rate policy's first duration: 5 s.
        h.advance_to(ms(35_099));
        assert!(!h.routable(0));
        h.advance_to(ms(35_100));
        assert_eq!(h.policy.state_name(NodeId(0)), "ProbeOpen");
        // Consecutive-only (Linkerd 1.x's default) never marks it dead.
        let mut h = fa(FailureAccrualParams {
            accrual_policy: Some(AccrualPolicy::Consecutive),
            ..Default::default()
        });
        assert_eq!(alternate(&mut h, 0, 60_000, 100), None);
        assert_eq!(h.policy.success_rate(NodeId(0)), None);
    }

    #[test]
    fn success_rate_needs_min_requests_in_its_counter() {
        // The `WindowedAdder` (range 30 s, 5 slices of 6 s) closes a slice
        // at the first request 6 s after the last close, so with one request
        // every 8 s each slice stretches to 8 s and it holds 5 requests over
        // 32 s: marked dead at the fifth, 40 s.
        let mut h = fa(FailureAccrualParams::default());
        assert_eq!(alternate(&mut h, 0, 400_000, 8_000), Some(ms(40_000)));
        // One every 13 s: each gap also zeroes a skipped slice, the counter
        // never holds more than 3 (< `minRequestThreshold` 5).
        let mut h = fa(FailureAccrualParams::default());
        assert_eq!(alternate(&mut h, 0, 400_000, 13_000), None);
        let mut h = fa(FailureAccrualParams {
            min_requests: Some(3),
            ..Default::default()
        });
        assert_eq!(alternate(&mut h, 0, 400_000, 13_000), Some(ms(39_000)));
    }

    #[test]
    fn a_failed_probe_is_judged_by_both_halves_with_their_own_backoff() {
        let mut h = fa(FailureAccrualParams::default());
        let dead = alternate(&mut h, 0, 60_000, 100).unwrap();
        // Probe at ProbeOpen: it fails. Consecutive: 1 (the last success
        // reset it), no. Success rate: still below 0.8 → its second duration,
        // equal-jittered in [5, 10) s.
        let t = dead + SimDuration::from_secs(5);
        h.select(t, 0);
        h.complete(t, 0, BAD, SimDuration::ZERO);
        assert_eq!(h.policy.state_name(NodeId(0)), "Dead");
        let t_dead = h.now();
        while !h.routable(0) {
            let t = h.now() + SimDuration::from_millis(10);
            h.advance_to(t);
        }
        let d = h.now().saturating_since(t_dead);
        assert!(
            d >= SimDuration::from_secs(5) && d < SimDuration::from_secs(10),
            "{d}"
        );
        // A successful probe revives: the success rate starts over (a fresh
        // `Ema`, clock and counter): half failing again takes another 30 s.
        let t = h.now();
        h.attempt(t, 0, OK);
        assert_eq!(h.policy.state_name(NodeId(0)), "Alive");
        assert_eq!(h.policy.success_rate(NodeId(0)), Some(1.0));
        let t0 = t.as_micros() / 1000 + 100;
        let again = alternate(&mut h, t0, t0 + 60_000, 100).unwrap();
        let after = again.as_micros() / 1000 - (t0 - 100);
        assert!(
            (30_000..30_300).contains(&after),
            "{after} ms after revival"
        );
    }

    #[test]
    fn success_rate_settings_are_checked() {
        let bad = |p: FailureAccrualParams| p.validate().unwrap_err().0;
        let consecutive = FailureAccrualParams {
            accrual_policy: Some(AccrualPolicy::Consecutive),
            min_requests: Some(3),
            ..Default::default()
        };
        assert_eq!(bad(consecutive), "min_requests");
        let linkerd = FailureAccrualParams {
            flavour: Flavour::Linkerd,
            accrual_policy: Some(AccrualPolicy::SuccessRateOrConsecutive),
            ..Default::default()
        };
        assert_eq!(bad(linkerd), "accrual_policy");
        let rate = FailureAccrualParams {
            required_success_rate: Some(1.5),
            ..Default::default()
        };
        assert_eq!(bad(rate), "required_success_rate");
    }

    #[test]
    fn defaults_by_flavour() {
        let f = FailureAccrualParams::default();
        assert_eq!(
            (f.consecutive_failures(), f.min_penalty(), f.max_penalty()),
            (5, SimDuration::from_secs(5), SimDuration::from_secs(300))
        );
        let l = FailureAccrualParams {
            flavour: Flavour::Linkerd,
            ..Default::default()
        };
        assert_eq!(
            (l.consecutive_failures(), l.min_penalty(), l.max_penalty()),
            (7, SimDuration::from_secs(1), SimDuration::from_secs(60))
        );
    }
}
