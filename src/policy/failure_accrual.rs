//! Failure accrual per endpoint: Finagle's `FailureAccrualFactory` with its
//! default `consecutiveFailures(5, equalJittered(5s, 300s))` policy (also
//! Linkerd 1.x), and Linkerd 2.x's opt-in consecutive-failures breaker
//! (`flavour: linkerd`: 7 failures, 1 s..60 s doubling back-off, jitter 0.5).
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
}

impl PolicyParams for FailureAccrualParams {
    fn label(&self) -> String {
        match self.flavour {
            Flavour::Finagle => "failure_accrual finagle".into(),
            Flavour::Linkerd => "failure_accrual linkerd".into(),
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

#[derive(Copy, Clone, Debug)]
struct Endpoint {
    state: State,
    consecutive: u32,
    /// Finagle: the position in the mark-dead back-off stream.
    cursor: EqualJitteredCursor,
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
    endpoints: Vec<Endpoint>,
}

impl FailureAccrual {
    pub fn new(p: &FailureAccrualParams, nodes: usize) -> Self {
        let finagle = EqualJittered {
            start: p.min_penalty(),
            max: p.max_penalty(),
        };
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
                    iteration: 0,
                    generation: 0,
                };
                nodes
            ],
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

    fn mark_dead(&mut self, cx: &mut PolicyCx, i: usize) {
        let e = &mut self.endpoints[i];
        let duration = match self.flavour {
            Flavour::Finagle => {
                let d = e.cursor.duration();
                e.cursor = self.finagle.next(e.cursor, cx.rng());
                d
            }
            Flavour::Linkerd => {
                let d = self.linkerd.delay(e.iteration, cx.rng());
                e.iteration += 1;
                d
            }
        };
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

    fn did_fail(&mut self, cx: &mut PolicyCx, i: usize) {
        let e = &mut self.endpoints[i];
        if !matches!(e.state, State::Alive | State::ProbeClosed) {
            return;
        }
        let probing = e.state == State::ProbeClosed;
        match self.flavour {
            Flavour::Finagle => {
                e.consecutive += 1;
                if e.consecutive >= self.threshold {
                    self.mark_dead(cx, i);
                } else if probing {
                    e.state = State::ProbeOpen; // probe again
                }
            }
            Flavour::Linkerd => {
                e.consecutive += 1;
                if probing || e.consecutive == self.threshold {
                    self.mark_dead(cx, i);
                }
            }
        }
    }

    fn did_succeed(&mut self, i: usize) {
        let first = self.finagle.first();
        let e = &mut self.endpoints[i];
        match (self.flavour, e.state) {
            (_, State::ProbeClosed) => {
                // revived(): counter and back-off start over.
                e.state = State::Alive;
                e.cursor = first;
                e.iteration = 0;
                e.consecutive = 0;
            }
            (Flavour::Finagle, _) | (Flavour::Linkerd, State::Alive) => e.consecutive = 0,
            (Flavour::Linkerd, _) => {}
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
                Classifier::ExceptionsOnly => self.did_succeed(i),
            },
            AttemptResult::Status(_) => self.did_succeed(i),
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
