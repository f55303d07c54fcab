//! Caddy's passive health checks (`health_checks.passive`), as
//! `modules/caddyhttp/reverseproxy` (Caddy 2.11) runs them:
//!
//! - `Handler.countFailure` (healthchecks.go) does `Host.countFail(1)` at
//!   once and starts a goroutine that does `countFail(-1)` after
//!   `fail_duration`: each failure expires on its own, an exact sliding
//!   window of individual failures with no "down for N seconds". With
//!   `fail_duration` 0 it does nothing (passive checks are off).
//! - `Upstream.Healthy` (hosts.go): the host is out while
//!   `Host.Fails() >= max_fails`; it is back the moment enough failures have
//!   expired, without a probe.
//! - What counts: `proxyLoopIteration` (reverseproxy.go) counts every proxy
//!   error except `context.Canceled` (the client left: 499);
//!   `reverseProxy` counts one failure per *matching* entry of
//!   `unhealthy_status` (no `break`: `[5, 500]` counts a 500 twice) and one
//!   more when the round trip took at least `unhealthy_latency`.
//!   A hung backend is never counted: there is no response timeout by
//!   default, so the client leaves first.
//! - `Upstream.Full`: `Host.NumRequests() >= MaxRequests`, where
//!   `MaxRequests` defaults to `unhealthy_request_count`
//!   (`provisionUpstream`); the count runs from `reverseProxy`'s start to
//!   its end.

use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::policy::{AttemptReport, AttemptResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `health_checks.passive`, with Caddy's JSON names and defaults.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CaddyPassiveParams {
    /// How long each failure is remembered; 0 (Caddy's default) turns the
    /// counting off. Caddyfile `fail_duration`.
    pub fail_duration: SimDuration,
    /// Failures within `fail_duration` that take the host out. Default 1
    /// (`Provision` turns 0 into 1).
    pub max_fails: u32,
    /// Statuses that count as a failure, as Caddy's JSON writes them: a
    /// three-digit status, or its class below 100 (`5` is any 5xx, the
    /// Caddyfile's `5xx`). Each matching entry counts once more.
    pub unhealthy_status: Vec<u16>,
    /// A response whose header took at least this long counts as one more
    /// failure. Default: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unhealthy_latency: Option<SimDuration>,
    /// The host takes no request while it has this many in flight (the
    /// default of every upstream's `max_requests`); 0 = no limit.
    pub unhealthy_request_count: u32,
}

impl Default for CaddyPassiveParams {
    fn default() -> Self {
        CaddyPassiveParams {
            fail_duration: SimDuration::ZERO,
            max_fails: 1,
            unhealthy_status: vec![],
            unhealthy_latency: None,
            unhealthy_request_count: 0,
        }
    }
}

/// `caddyhttp.StatusCodeMatches`: a class below 100 matches its hundreds.
pub fn status_matches(actual: u16, configured: u16) -> bool {
    if configured < 100 {
        actual / 100 == configured
    } else {
        actual == configured
    }
}

impl CaddyPassiveParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        if self.max_fails == 0 {
            return Err(("passive.max_fails".into(), "must be at least 1".into()));
        }
        for (i, &s) in self.unhealthy_status.iter().enumerate() {
            if !(1..=5).contains(&s) && !(100..=599).contains(&s) {
                return Err((
                    format!("passive.unhealthy_status[{i}]"),
                    format!("is a status (100–599) or a class 1–5 (5 = any 5xx), found {s}"),
                ));
            }
        }
        if self.unhealthy_latency.is_some_and(|d| d.is_zero()) {
            return Err((
                "passive.unhealthy_latency".into(),
                "must be positive (omit it for none)".into(),
            ));
        }
        Ok(())
    }

    /// How many failures this attempt counts (`countFailure` calls).
    pub fn failures_of(&self, r: &AttemptReport) -> usize {
        if self.fail_duration.is_zero() {
            return 0;
        }
        match r.result {
            AttemptResult::Status(s) => {
                let by_status = self
                    .unhealthy_status
                    .iter()
                    .filter(|&&c| status_matches(s, c))
                    .count();
                let slow = self.unhealthy_latency.is_some_and(|l| r.elapsed >= l) as usize;
                by_status + slow
            }
            AttemptResult::Refused
            | AttemptResult::ConnectTimeout
            | AttemptResult::ReadTimeout
            | AttemptResult::Reset => 1,
            // context.Canceled: "not our failure; don't retry or ding the upstream".
            AttemptResult::ClientAbort | AttemptResult::Rejected => 0,
        }
    }
}

/// Each host's remembered failures (the expiry of each, oldest first) and
/// its requests in flight.
#[derive(Clone, Debug)]
pub(super) struct PassiveState {
    pub(super) p: CaddyPassiveParams,
    expiries: Vec<VecDeque<SimTime>>,
    /// The expiry a timer is armed for, per node.
    armed: Vec<Option<SimTime>>,
    in_flight: Vec<u32>,
}

impl PassiveState {
    pub(super) fn new(p: &CaddyPassiveParams, nodes: usize) -> Self {
        PassiveState {
            p: p.clone(),
            expiries: vec![VecDeque::new(); nodes],
            armed: vec![None; nodes],
            in_flight: vec![0; nodes],
        }
    }

    /// `Host.Fails()`.
    pub(super) fn fails(&self, node: NodeId) -> usize {
        self.expiries[node.index()].len()
    }

    /// `Host.Fails() < MaxFails`.
    pub(super) fn healthy(&self, node: NodeId) -> bool {
        self.fails(node) < self.p.max_fails as usize
    }

    /// `Upstream.Full` with `unhealthy_request_count` as `max_requests`.
    pub(super) fn full(&self, node: NodeId) -> bool {
        self.p.unhealthy_request_count > 0
            && self.in_flight[node.index()] >= self.p.unhealthy_request_count
    }

    pub(super) fn limits_requests(&self) -> bool {
        self.p.unhealthy_request_count > 0
    }

    pub(super) fn selected(&mut self, node: NodeId) {
        self.in_flight[node.index()] += 1;
    }

    /// Counts the attempt's failures; returns the time a timer must be
    /// armed for, if one is needed now.
    pub(super) fn on_attempt(&mut self, now: SimTime, r: &AttemptReport) -> Option<SimTime> {
        let i = r.node.index();
        self.in_flight[i] = self.in_flight[i].saturating_sub(1);
        let n = self.p.failures_of(r);
        if n == 0 {
            return None;
        }
        let expiry = now + self.p.fail_duration;
        for _ in 0..n {
            self.expiries[i].push_back(expiry);
        }
        if self.armed[i].is_some() {
            return None;
        }
        self.armed[i] = Some(expiry);
        Some(expiry)
    }

    /// The timer for `node` fired at `now`: the failures due are forgotten
    /// (`countFail(-1)` each); returns the next expiry to arm, if any.
    /// A timer that is not the one armed is ignored.
    pub(super) fn on_timer(&mut self, now: SimTime, node: NodeId) -> Option<SimTime> {
        let i = node.index();
        if self.armed[i] != Some(now) {
            return None;
        }
        while self.expiries[i].front().is_some_and(|&e| e <= now) {
            self.expiries[i].pop_front();
        }
        self.armed[i] = self.expiries[i].front().copied();
        self.armed[i]
    }
}
