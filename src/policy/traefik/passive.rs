//! Traefik's passive health check (`loadBalancer.passiveHealthCheck`, since
//! v3.6.0: commit fc0fac8543), `PassiveServiceHealthChecker` in
//! `pkg/healthcheck/healthcheck.go`:
//!
//! - `WrapHandler` wraps each server's proxy, inside the retry middleware,
//!   so every attempt is judged. A **failure**: the backend was never
//!   called (no `WroteHeaders`/`WroteRequest` trace: a dial error), or the
//!   status written is ≥ 500 (proxy-made 502 and 504 included). Anything
//!   else is a **success**, and `failures[target] = nil`: any success
//!   clears the count, so failures must come in a row. A client that gives
//!   up is written as 499, which is < 500: a success.
//! - On a failure its time is appended and `healthy` keeps the failures
//!   after `now − failureWindow`; at `maxFailedAttempts` of them the
//!   balancer's `SetStatus(down)` runs (once, under a singleflight, while no
//!   timer is running). Without an active check a timer of
//!   **`failureWindow`** then sets it up again, with no probe; **with an
//!   active check configured the passive checker never sets a server up**:
//!   the active check's next success does.

use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::policy::{AttemptReport, AttemptResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `loadBalancer.passiveHealthCheck`, with Traefik's names and defaults
/// (`PassiveServerHealthCheck.SetDefaults`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct TraefikPassiveParams {
    /// The window the failures must fall in, and how long the server then
    /// stays down (without an active check). Default 10s.
    pub failure_window: SimDuration,
    /// Failures in a row, within the window, that set the server down. Default 1.
    pub max_failed_attempts: u32,
}

impl Default for TraefikPassiveParams {
    fn default() -> Self {
        TraefikPassiveParams {
            failure_window: SimDuration::from_secs(10),
            max_failed_attempts: 1,
        }
    }
}

impl TraefikPassiveParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        if self.failure_window.is_zero() {
            return Err((
                "passiveHealthCheck.failureWindow".into(),
                "must be positive".into(),
            ));
        }
        if self.max_failed_attempts == 0 {
            return Err((
                "passiveHealthCheck.maxFailedAttempts".into(),
                "must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// `WrapHandler`'s test: did the attempt fail?
pub fn is_failure(r: AttemptResult) -> bool {
    match r {
        // The backend was never called (dial error).
        AttemptResult::Refused | AttemptResult::ConnectTimeout | AttemptResult::Rejected => true,
        // Written after the request: 502 (EOF, reset), 504 (response timeout).
        AttemptResult::Reset | AttemptResult::ReadTimeout => true,
        AttemptResult::Status(s) => s >= 500,
        // ErrorHandler writes 499 for context.Canceled: below 500.
        AttemptResult::ClientAbort => false,
    }
}

/// What a passive verdict asks the balancer to do.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Nothing,
    /// `SetStatus(down)`; `Some(t)`: and a timer sets it up at `t`.
    Down(Option<SimTime>),
}

#[derive(Clone, Debug)]
pub(super) struct PassiveState {
    pub(super) p: TraefikPassiveParams,
    has_active: bool,
    failures: Vec<VecDeque<SimTime>>,
    /// Per node: the time its re-up timer fires, while one runs.
    timer: Vec<Option<SimTime>>,
}

impl PassiveState {
    pub(super) fn new(p: &TraefikPassiveParams, has_active: bool, nodes: usize) -> Self {
        PassiveState {
            p: p.clone(),
            has_active,
            failures: vec![VecDeque::new(); nodes],
            timer: vec![None; nodes],
        }
    }

    /// The attempt on `r.node` ended at `now`.
    pub(super) fn on_attempt(&mut self, now: SimTime, r: &AttemptReport) -> Verdict {
        let i = r.node.index();
        if !is_failure(r.result) {
            self.failures[i].clear();
            return Verdict::Nothing;
        }
        let f = &mut self.failures[i];
        f.push_back(now);
        // healthy(): keep the failures after windowStart (t.After).
        let start = now.as_micros() as i64 - self.p.failure_window.as_micros() as i64;
        while f.front().is_some_and(|t| (t.as_micros() as i64) <= start) {
            f.pop_front();
        }
        if f.len() < self.p.max_failed_attempts as usize {
            return Verdict::Nothing;
        }
        if self.timer[i].is_some() {
            // "A timer is already running for this target".
            return Verdict::Nothing;
        }
        if self.has_active {
            return Verdict::Down(None);
        }
        let at = now + self.p.failure_window;
        self.timer[i] = Some(at);
        Verdict::Down(Some(at))
    }

    /// The re-up timer of `node` fired at `now`: true if it was the one
    /// running (then `SetStatus(up)`).
    pub(super) fn on_timer(&mut self, now: SimTime, node: NodeId) -> bool {
        let t = &mut self.timer[node.index()];
        if *t == Some(now) {
            *t = None;
            true
        } else {
            false
        }
    }

    /// Failures in the list of `node` (kept until a success or the window).
    #[cfg(test)]
    pub(super) fn failures(&self, node: NodeId) -> usize {
        self.failures[node.index()].len()
    }
}
