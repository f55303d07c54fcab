//! Traefik 3.7's active health check (`loadBalancer.healthCheck`),
//! `pkg/healthcheck/healthcheck.go`, `ServiceHealthChecker`:
//!
//! - `Launch` runs two loops, `healthcheck(healthyTargets, interval)` and
//!   `healthcheck(unhealthyTargets, unhealthyInterval)`
//!   (`unhealthyInterval` defaults to `interval`). Every target starts in
//!   the healthy channel, and up (`UpdateServerStatus(StatusUp)`).
//! - Each loop waits on a `time.Ticker` (first tick one interval after the
//!   start). At a tick it takes the targets in its channel, then checks
//!   them **one after the other**, each under a deadline of `timeout`
//!   (`executeHealthCheck`): a hung target delays the others of its loop.
//!   A tick that comes while the loop is still checking waits (the ticker
//!   holds one); more are dropped, so the loop starts its next round at once
//!   and then keeps to the ticker's grid.
//! - `checkHealthHTTP` fails on a transport error or a status outside
//!   [200, 400) (or other than `status`, when set). **There are no
//!   thresholds**: every check calls `SetStatus(up)` or `SetStatus(down)`
//!   with its own result, and sends the target to the channel of that
//!   result.

use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::policy::ProbeResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `loadBalancer.healthCheck`, with Traefik's names and defaults.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct TraefikActiveParams {
    /// Time between checks of a server that is up. Default 30s.
    pub interval: SimDuration,
    /// Time between checks of a server that is down. Default: `interval`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unhealthy_interval: Option<SimDuration>,
    /// Deadline of one check. Default 5s.
    pub timeout: SimDuration,
    /// The only status that passes; default: any in [200, 400).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The servers transport's `dialTimeout` (the checks use it): bound to
    /// `gateway.traefik.dial_timeout` by the model.
    #[serde(skip)]
    pub dial_timeout: Option<SimDuration>,
}

impl Default for TraefikActiveParams {
    fn default() -> Self {
        TraefikActiveParams {
            interval: SimDuration::from_secs(30),
            unhealthy_interval: None,
            timeout: SimDuration::from_secs(5),
            status: None,
            dial_timeout: None,
        }
    }
}

impl TraefikActiveParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        for (f, d) in [
            ("interval", Some(self.interval)),
            ("unhealthyInterval", self.unhealthy_interval),
            ("timeout", Some(self.timeout)),
        ] {
            if d.is_some_and(|d| d.is_zero()) {
                return Err((format!("healthCheck.{f}"), "must be positive".into()));
            }
        }
        if let Some(s) = self.status
            && !(100..=599).contains(&s)
        {
            return Err((
                "healthCheck.status".into(),
                format!("is an HTTP status (100–599), found {s}"),
            ));
        }
        Ok(())
    }

    pub fn unhealthy_interval(&self) -> SimDuration {
        self.unhealthy_interval.unwrap_or(self.interval)
    }

    /// `checkHealthHTTP`'s verdict.
    pub fn passes_check(&self, r: ProbeResult) -> bool {
        match r {
            ProbeResult::Status(s) => match self.status {
                Some(want) => s == want,
                None => (200..400).contains(&s),
            },
            _ => false,
        }
    }

    /// The connect deadline: the transport's dial timeout within the check's.
    pub fn connect_timeout(&self) -> SimDuration {
        self.dial_timeout
            .unwrap_or(super::DEFAULT_DIAL_TIMEOUT)
            .min(self.timeout)
    }
}

/// Which loop: 0 checks the targets that are up, 1 those that are down.
pub(super) const HEALTHY: usize = 0;
pub(super) const UNHEALTHY: usize = 1;

/// One `healthcheck` goroutine: its channel of targets, its ticker and the
/// round it is checking.
#[derive(Clone, Debug)]
pub(super) struct Loop {
    pub(super) period: SimDuration,
    /// The targets waiting in its channel, in the order they were sent.
    pub(super) channel: VecDeque<NodeId>,
    /// The targets of the round being checked, the one in flight first.
    round: VecDeque<NodeId>,
    /// A check is in flight.
    busy: bool,
    /// The ticker ticked while the loop was busy (it holds one tick).
    tick_held: bool,
}

/// What the loop asks of the checker next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Check this target now.
    Check(NodeId),
    /// Nothing to do until the next tick.
    Idle,
}

impl Loop {
    pub(super) fn new(period: SimDuration) -> Self {
        Loop {
            period,
            channel: VecDeque::new(),
            round: VecDeque::new(),
            busy: false,
            tick_held: false,
        }
    }

    /// The ticker ticked.
    pub(super) fn on_tick(&mut self) -> Next {
        if self.busy {
            self.tick_held = true;
            return Next::Idle;
        }
        self.start_round()
    }

    /// "We collect the targets to check once for all", then the first.
    fn start_round(&mut self) -> Next {
        self.round = std::mem::take(&mut self.channel);
        self.next()
    }

    fn next(&mut self) -> Next {
        match self.round.front() {
            Some(&n) => {
                self.busy = true;
                Next::Check(n)
            }
            None => {
                self.busy = false;
                Next::Idle
            }
        }
    }

    /// The check of the target in flight ended: the next target of the
    /// round, or the held tick's round, or nothing.
    pub(super) fn on_checked(&mut self) -> Next {
        self.round.pop_front();
        match self.next() {
            Next::Idle if self.tick_held => {
                self.tick_held = false;
                self.start_round()
            }
            n => n,
        }
    }

    /// The target of the check in flight.
    pub(super) fn checking(&self) -> Option<NodeId> {
        if self.busy {
            self.round.front().copied()
        } else {
            None
        }
    }

    /// The tick after `t` on the grid `k · period` from the start.
    pub(super) fn next_tick(&self, t: SimTime) -> SimTime {
        let p = self.period.as_micros().max(1);
        SimTime::from_micros((t.as_micros() / p + 1) * p)
    }
}
