//! Linkerd 2.x's per-endpoint circuit breaker ("failure accrual"), as the
//! outbound proxy runs it (`linkerd/linkerd2-proxy`,
//! `linkerd/app/outbound/src/http/breaker.rs`: `Params::extract_param`
//! spawns one breaker task per endpoint and gives it the endpoint's gate)
//! with the settings the policy controller reads from a Service's
//! annotations (`linkerd/linkerd2`, `parse_accrual_config`). Checked
//! against the sources only: there is no Linkerd binary to run here.
//!
//! `failure_accrual` picks the breaker:
//!
//! - `consecutive` (`balancer.linkerd.io/failure-accrual: consecutive`):
//!   [`consecutive`] — `max_failures` failures in a row shut the gate.
//! - `unified` (`… : unified`, proxy v2.358.0 / Linkerd edge-26.6.2,
//!   2026-06): [`unified`] — the same count (429 not counted) or a windowed
//!   success rate below a threshold in which a 429 counts as a failure.
//!
//! Both share the shut and probation states (`closed`, `probation`): the
//! gate is shut for a back-off drawn from a fresh stream at every trip
//! ([`backoff`]: `min_penalty` doubling to `max_penalty`, jitter up to
//! `jitter_ratio` of it), responses arriving meanwhile are ignored; then
//! `gate.limit(1)` admits exactly one request, and the *first response the
//! breaker hears next* decides — the probe's, or a straggler's: recovered →
//! open; else shut again for the next back-off of the stream.
//!
//! What is a failure (the default classifier, `classify::Response`): a 5xx
//! status or an error (refused, reset, timed out). A client that gives up
//! cancels the response future, which then reports nothing
//! (`BroadcastClassification`'s `ResponseFuture` sends a class only when it
//! resolves): a probe cancelled so leaves the endpoint in probation, its one
//! permit spent, until another response comes. Circuit breaking is off while
//! a ServiceProfile exists for the Service (the importer says so).
//!
//! With every endpoint of a balancer shut, the proxy's queue fails requests
//! fast after its failfast timeout: that is the request path's
//! (`gateway.flavor: linkerd`), not the breaker's.

mod backoff;
mod consecutive;
mod success_rate;
mod unified;

pub use backoff::ExponentialBackoff;
pub use unified::TripReason;

use super::{
    AttemptReport, AttemptResult, HealthPolicy, Now, PolicyCx, PolicyParams, PolicyTimer, Scope,
    ScopeSel,
};
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use unified::{OpenState, Unified};

/// `balancer.linkerd.io/failure-accrual`.
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Accrual {
    /// Consecutive failures only.
    #[default]
    Consecutive,
    /// Consecutive failures or a windowed success rate (429 a failure).
    Unified,
}

/// A Linkerd Service's failure accrual; defaults are the policy
/// controller's (`parse_consecutive_params`, `parse_success_rate_params`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LinkerdParams {
    /// `consecutive` (default) or `unified`.
    pub failure_accrual: Accrual,
    /// `…-consecutive-max-failures`: failures in a row that shut the gate.
    /// Default 7. `unified`: 0 turns this condition off.
    pub max_failures: u32,
    /// `…-consecutive-min-penalty`: the first back-off. Default 1s.
    pub min_penalty: SimDuration,
    /// `…-consecutive-max-penalty`: the longest back-off. Default 60s.
    pub max_penalty: SimDuration,
    /// `…-consecutive-jitter-ratio`: jitter up to this fraction of the
    /// back-off (0 to 100). Default 0.5.
    pub jitter_ratio: f64,
    /// `unified` only, `balancer.alpha.linkerd.io/failure-accrual-success-rate-threshold`:
    /// trip below this success rate (0 to 1; 0 turns it off). Default 0.8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success_rate_threshold: Option<f64>,
    /// `unified` only, `…-success-rate-window`: the trailing window (10
    /// slices). Default 10s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success_rate_window: Option<SimDuration>,
    /// `unified` only, `…-success-rate-min-requests`: samples the window
    /// must hold. Default 5.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success_rate_min_requests: Option<u32>,
}

impl Default for LinkerdParams {
    fn default() -> Self {
        LinkerdParams {
            failure_accrual: Accrual::Consecutive,
            max_failures: 7,
            min_penalty: SimDuration::from_secs(1),
            max_penalty: SimDuration::from_secs(60),
            jitter_ratio: 0.5,
            success_rate_threshold: None,
            success_rate_window: None,
            success_rate_min_requests: None,
        }
    }
}

impl LinkerdParams {
    pub fn success_rate_threshold(&self) -> f64 {
        self.success_rate_threshold.unwrap_or(0.8)
    }
    pub fn success_rate_window(&self) -> SimDuration {
        self.success_rate_window
            .unwrap_or(SimDuration::from_secs(10))
    }
    pub fn success_rate_min_requests(&self) -> u32 {
        self.success_rate_min_requests.unwrap_or(5)
    }
    fn backoff(&self) -> ExponentialBackoff {
        ExponentialBackoff {
            min: self.min_penalty,
            max: self.max_penalty,
            jitter: self.jitter_ratio,
        }
    }
    /// The unified breaker's settings, `None` for `consecutive`.
    fn unified(&self) -> Option<Unified> {
        (self.failure_accrual == Accrual::Unified).then(|| Unified {
            max_failures: self.max_failures,
            threshold_bp: unified::basis_points(self.success_rate_threshold()),
            window_us: self.success_rate_window().as_micros(),
            min_requests: self.success_rate_min_requests() as u64,
        })
    }
}

impl PolicyParams for LinkerdParams {
    fn label(&self) -> String {
        match self.failure_accrual {
            Accrual::Consecutive => "linkerd consecutive".into(),
            Accrual::Unified => "linkerd unified".into(),
        }
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let err = |f: &str, r: &str| Err((f.to_string(), r.to_string()));
        if self.max_penalty.is_zero() {
            return err(
                "max_penalty",
                "must be positive (`max_penalty cannot be zero`)",
            );
        }
        if self.min_penalty > self.max_penalty {
            return err("min_penalty", "cannot exceed max_penalty");
        }
        if !(self.jitter_ratio.is_finite() && (0.0..=100.0).contains(&self.jitter_ratio)) {
            return err("jitter_ratio", "must be between 0 and 100");
        }
        if self.failure_accrual == Accrual::Consecutive {
            let set = [
                (
                    "success_rate_threshold",
                    self.success_rate_threshold.is_some(),
                ),
                ("success_rate_window", self.success_rate_window.is_some()),
                (
                    "success_rate_min_requests",
                    self.success_rate_min_requests.is_some(),
                ),
            ];
            if let Some((f, _)) = set.iter().find(|(_, s)| *s) {
                return err(
                    f,
                    "applies only with failure_accrual unified (the proxy ignores it under \
                     consecutive)",
                );
            }
            return Ok(());
        }
        let t = self.success_rate_threshold();
        if !(0.0..=1.0).contains(&t) {
            return err("success_rate_threshold", "must be between 0 and 1");
        }
        if t != 0.0 {
            if self.success_rate_window() < SimDuration::from_millis(10) {
                return err("success_rate_window", "must be at least 10ms");
            }
            if self.success_rate_min_requests() > 1_000_000 {
                return err("success_rate_min_requests", "cannot exceed 1000000");
            }
        }
        Ok(())
    }

    fn warnings(&self) -> Vec<(String, String)> {
        let mut w = vec![];
        match self.failure_accrual {
            Accrual::Consecutive if self.max_failures == 0 => w.push((
                "max_failures".into(),
                "is 0: the consecutive breaker counts up to it exactly, so it never trips".into(),
            )),
            Accrual::Unified if self.max_failures == 0 && self.success_rate_threshold() == 0.0 => w
                .push((
                    "success_rate_threshold".into(),
                    "both conditions are off (max_failures 0 and threshold 0): nothing trips"
                        .into(),
                )),
            Accrual::Unified
                if self.success_rate_threshold() != 0.0
                    && self.success_rate_min_requests() == 0 =>
            {
                w.push((
                    "success_rate_min_requests".into(),
                    "is 0: the breaker can trip on the very first failure".into(),
                ))
            }
            _ => {}
        }
        w
    }

    fn build(&self, _scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(Linkerd::new(self, nodes))
    }
}

/// How the default classifier (and the rate-limit test) see a response.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Class {
    Success,
    /// A 429: a success to the classifier, a rate-limit signal to the
    /// unified breaker.
    RateLimited,
    /// A 5xx status or an error.
    Failure,
}

impl Class {
    pub fn is_success(self) -> bool {
        self != Class::Failure
    }

    /// The class of an attempt's result; `None`: the breaker hears nothing
    /// (the client cancelled, or nothing was sent).
    pub fn of(result: AttemptResult) -> Option<Class> {
        match result {
            AttemptResult::Status(s) if (500..=599).contains(&s) => Some(Class::Failure),
            AttemptResult::Status(429) => Some(Class::RateLimited),
            AttemptResult::Status(_) => Some(Class::Success),
            AttemptResult::Refused
            | AttemptResult::ConnectTimeout
            | AttemptResult::ReadTimeout
            | AttemptResult::Reset => Some(Class::Failure),
            AttemptResult::ClientAbort | AttemptResult::Rejected => None,
        }
    }
}

/// Where one endpoint's breaker task is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// `open`: the gate is open.
    Open,
    /// `closed`: the gate is shut for the stream's wait number `n`.
    Shut { n: u32 },
    /// `probation`: one permit, not taken yet.
    Probation { n: u32 },
    /// The permit was taken: the gate admits nothing.
    Probing { n: u32 },
}

#[derive(Clone, Debug)]
struct Endpoint {
    phase: Phase,
    count: consecutive::Count,
    open: Option<OpenState>,
    generation: u32,
}

/// Every endpoint's breaker in one proxy.
pub struct Linkerd {
    max_failures: u32,
    backoff: ExponentialBackoff,
    unified: Option<Unified>,
    endpoints: Vec<Endpoint>,
}

impl Linkerd {
    pub fn new(p: &LinkerdParams, nodes: usize) -> Self {
        let unified = p.unified();
        Linkerd {
            max_failures: p.max_failures,
            backoff: p.backoff(),
            endpoints: vec![
                Endpoint {
                    phase: Phase::Open,
                    count: consecutive::Count::default(),
                    open: unified.map(|u| u.state(SimTime::ZERO)),
                    generation: 0,
                };
                nodes
            ],
            unified,
        }
    }

    /// The breaker's state, for tests and traces.
    pub fn state_name(&self, node: NodeId) -> &'static str {
        match self.endpoints[node.index()].phase {
            Phase::Open => "open",
            Phase::Shut { .. } => "shut",
            Phase::Probation { .. } => "probation",
            Phase::Probing { .. } => "probing",
        }
    }

    /// The unified breaker's windowed success rate, if it has one.
    pub fn success_rate(&self, node: NodeId) -> Option<f64> {
        self.endpoints[node.index()]
            .open
            .as_ref()
            .and_then(Unified::ratio)
    }

    /// `gate.shut()` for the `n`-th wait of the back-off stream.
    fn shut(&mut self, cx: &mut PolicyCx, node: NodeId, n: u32) {
        let d = self.backoff.delay(n, cx.rng());
        let e = &mut self.endpoints[node.index()];
        e.phase = Phase::Shut { n };
        e.generation = e.generation.wrapping_add(1);
        let timer = PolicyTimer {
            tag: 0,
            node: node.0,
            generation: e.generation,
        };
        cx.at(cx.now().t + d, timer);
        cx.ejected(ScopeSel::All, node);
    }

    /// One response while open; `true` if the breaker trips.
    fn trips(&mut self, node: NodeId, class: Class, now: SimTime) -> bool {
        let e = &mut self.endpoints[node.index()];
        match (&self.unified, e.open.as_mut()) {
            (Some(u), Some(s)) => u.on_response(s, class, now).is_some(),
            _ => e.count.on_response(class, self.max_failures),
        }
    }
}

impl HealthPolicy for Linkerd {
    fn is_routable(&self, _: Scope, node: NodeId, _: Now) -> bool {
        matches!(
            self.endpoints[node.index()].phase,
            Phase::Open | Phase::Probation { .. }
        )
    }

    /// The request that takes probation's one permit.
    fn on_selected(&mut self, _cx: &mut PolicyCx, _scope: Scope, node: NodeId) {
        let e = &mut self.endpoints[node.index()];
        if let Phase::Probation { n } = e.phase {
            e.phase = Phase::Probing { n };
        }
    }

    fn on_attempt(&mut self, cx: &mut PolicyCx, r: &AttemptReport) {
        let Some(class) = Class::of(r.result) else {
            return;
        };
        let now = cx.now().t;
        let node = r.node;
        match self.endpoints[node.index()].phase {
            Phase::Open => {
                if self.trips(node, class, now) {
                    self.shut(cx, node, 0);
                }
            }
            Phase::Shut { .. } => {}
            Phase::Probation { n } | Phase::Probing { n } => {
                let recovered = match self.unified {
                    Some(_) => unified::probe_recovers(class),
                    None => consecutive::probe_recovers(class),
                };
                if recovered {
                    let e = &mut self.endpoints[node.index()];
                    e.phase = Phase::Open;
                    e.count = consecutive::Count::default();
                    if let (Some(u), Some(s)) = (&self.unified, e.open.as_mut()) {
                        u.reset(s, now);
                    }
                } else {
                    self.shut(cx, node, n.saturating_add(1));
                }
            }
        }
    }

    /// The back-off ended: `probation`.
    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        let e = &mut self.endpoints[timer.node as usize];
        if let Phase::Shut { n } = e.phase
            && e.generation == timer.generation
        {
            e.phase = Phase::Probation { n };
            cx.readmitted(ScopeSel::All, NodeId(timer.node));
        }
    }
}

#[cfg(test)]
mod tests;
