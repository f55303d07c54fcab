//! Caddy's active health checks (`health_checks.active`), as
//! `modules/caddyhttp/reverseproxy/healthchecks.go` (Caddy 2.11) runs them:
//!
//! - `activeHealthChecker` runs `doActiveHealthCheckForAllHosts` at once,
//!   then on a `time.Ticker` of `interval`: every round starts one goroutine
//!   per upstream, whether or not the previous check of it has finished.
//! - `doActiveHealthCheck`: an HTTP GET through the proxy's transport, with
//!   an `http.Client` timeout of `timeout`. A transport error or timeout
//!   fails; so does a status outside `expect_status` (default: 2xx, and
//!   redirects are not followed, so a 3xx fails).
//! - `markUnhealthy`: `countHealthFail(1)`, and if `activeFails >= fails`
//!   and `setHealthy(false)` changes the state, `resetHealth()`.
//!   `markHealthy` is its mirror with `passes`. **The counters are reset
//!   only by a change of state, never by the opposite result**: `fails 3`
//!   means three failures since the last change, not three in a row (an
//!   endpoint alternating 500/200 goes down every sixth check). While
//!   healthy, passes pile up unused, and so do failures while unhealthy.
//! - The state lives on the `Upstream` (hosts.go); its zero value is
//!   healthy, so every host starts in, before its first check.

use crate::engine::SimDuration;
use crate::ids::NodeId;
use crate::policy::ProbeResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::passive::status_matches;

/// `health_checks.active`, with Caddy's JSON names and defaults (the
/// health URI and port are not modelled: the probe asks the node itself).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CaddyActiveParams {
    /// Time between rounds; the first round runs at start. Default 30s.
    pub interval: SimDuration,
    /// The whole check must answer within this. Default 5s.
    pub timeout: SimDuration,
    /// Passes since the last change of state that bring a host back. Default 1.
    pub passes: u32,
    /// Failures since the last change of state that take a host out. Default 1.
    pub fails: u32,
    /// The status a healthy host answers (or its class below 100: `2` is
    /// any 2xx). Default: any 2xx.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect_status: Option<u16>,
    /// The proxy transport's `dial_timeout` (the checks use the proxy's
    /// transport): bound to `gateway.caddy.dial_timeout` by the model.
    #[serde(skip)]
    pub dial_timeout: Option<SimDuration>,
}

impl Default for CaddyActiveParams {
    fn default() -> Self {
        CaddyActiveParams {
            interval: SimDuration::from_secs(30),
            timeout: SimDuration::from_secs(5),
            passes: 1,
            fails: 1,
            expect_status: None,
            dial_timeout: None,
        }
    }
}

/// Caddy's transport default `dial_timeout` (httptransport.go `NewTransport`).
pub const DEFAULT_DIAL_TIMEOUT: SimDuration = SimDuration::from_secs(3);

impl CaddyActiveParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        for (f, d) in [("interval", self.interval), ("timeout", self.timeout)] {
            if d.is_zero() {
                return Err((format!("active.{f}"), "must be positive".into()));
            }
        }
        for (f, n) in [("passes", self.passes), ("fails", self.fails)] {
            if n == 0 {
                return Err((format!("active.{f}"), "must be at least 1".into()));
            }
        }
        if let Some(s) = self.expect_status
            && !(1..=5).contains(&s)
            && !(100..=599).contains(&s)
        {
            return Err((
                "active.expect_status".into(),
                format!("is a status (100–599) or a class 1–5, found {s}"),
            ));
        }
        Ok(())
    }

    /// The probe's connect deadline: the transport's dial timeout, within
    /// the client's timeout.
    pub fn connect_timeout(&self) -> SimDuration {
        self.dial_timeout
            .unwrap_or(DEFAULT_DIAL_TIMEOUT)
            .min(self.timeout)
    }

    /// Does this result pass `doActiveHealthCheck`'s tests?
    pub fn passes_check(&self, r: ProbeResult) -> bool {
        match r {
            ProbeResult::Status(s) => match self.expect_status {
                Some(e) => status_matches(s, e),
                None => (200..300).contains(&s),
            },
            _ => false,
        }
    }
}

/// The active checker's counters and state, per upstream.
#[derive(Clone, Debug)]
pub(super) struct ActiveState {
    pub(super) p: CaddyActiveParams,
    unhealthy: Vec<bool>,
    passes: Vec<u64>,
    fails: Vec<u64>,
}

impl ActiveState {
    pub(super) fn new(p: &CaddyActiveParams, nodes: usize) -> Self {
        ActiveState {
            p: p.clone(),
            unhealthy: vec![false; nodes],
            passes: vec![0; nodes],
            fails: vec![0; nodes],
        }
    }

    /// `Upstream.healthy()`: not marked unhealthy by the active checker.
    pub(super) fn healthy(&self, node: NodeId) -> bool {
        !self.unhealthy[node.index()]
    }

    /// `markHealthy` / `markUnhealthy` for one check's result.
    pub(super) fn on_result(&mut self, node: NodeId, r: ProbeResult) {
        let i = node.index();
        if self.p.passes_check(r) {
            self.passes[i] += 1;
            if self.passes[i] >= self.p.passes as u64 && self.unhealthy[i] {
                self.unhealthy[i] = false;
                self.reset(i);
            }
        } else {
            self.fails[i] += 1;
            if self.fails[i] >= self.p.fails as u64 && !self.unhealthy[i] {
                self.unhealthy[i] = true;
                self.reset(i);
            }
        }
    }

    /// `resetHealth`.
    fn reset(&mut self, i: usize) {
        self.passes[i] = 0;
        self.fails[i] = 0;
    }
}
