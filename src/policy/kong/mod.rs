//! Kong's upstream health checks and circuit breaker: the `healthchecks`
//! of a Kong upstream (`kong/db/schema/entities/upstreams.lua`), run by
//! lua-resty-healthcheck 3.1.2 (`lib/resty/healthcheck.lua`) as Kong wires
//! it (`kong/runloop/balancer/healthcheckers.lua`, `kong/init.lua`,
//! `kong/runloop/handler.lua`). Checked against the sources only: there is
//! no Kong binary to run here.
//!
//! - **One state per target**, shared by the active and the passive checks
//!   and by every worker of a Kong node (the shm): four states, of which
//!   `healthy` and `mostly_healthy` take traffic, moved by four counters
//!   (successes, HTTP failures, TCP failures, timeouts) — see [`counter`].
//!   Each gateway replica is a Kong node with its own state (Kong does not
//!   share health between nodes).
//! - **Passive** (`report_http_status`, `report_tcp_failure`,
//!   `report_timeout` with `"passive"`): Kong reports each try that is
//!   retried in its balancer phase (a failed connect, a reset → TCP failure;
//!   a connect or read timeout → timeout) and the last one in its log phase
//!   by its status (504 → timeout; anything else → the status, so a last
//!   try refused or reset reaches the checker as an HTTP 502). The request
//!   path of `gateway.flavor: kong` tells them apart; under another request
//!   path every failed attempt is reported as a retried one. A status in
//!   `healthy.http_statuses` is a success, one in `unhealthy.http_statuses`
//!   an HTTP failure, any other is ignored; a client's abort is the status
//!   499 (ignored unless listed).
//! - **Passive checks never re-enable a target**: an unhealthy target gets
//!   no traffic, so no success, and stays out until an active check (or
//!   Kong's admin API, not modelled) brings it back.
//! - **Active** (see [`active`]): probes on the checker's 0.1 s tick, each
//!   interval rounded up to it, rounds skipped while the previous one runs.
//!   A status is judged by the active lists (`run_single_check` →
//!   `report_http_status(…, "active")`), a refused connect is a TCP failure,
//!   a connect or status-line timeout a timeout. Kong turns active checks
//!   off for `type: tcp` on HTTP upstreams (`create_healthchecker`).
//! - **Defaults are Kong's** (`healthchecks_config` in upstreams.lua):
//!   every interval and every threshold 0, so `{"kind": "kong"}` checks
//!   nothing — not lua-resty-healthcheck's own defaults.
//!
//! Not modelled: the admin API's `/healthy` and `/unhealthy`, the
//! 505/426 HTTP-version renegotiation of `negotiate_http_version`, TLS.

mod active;
pub mod counter;

use super::{
    AttemptReport, AttemptResult, HealthPolicy, Interests, Now, PolicyCx, PolicyParams,
    PolicyTimer, ProbeKind, ProbeOutcome, ProbeResult, Scope, ScopeSel, periodic_events_per_s,
};
use crate::engine::SimDuration;
use crate::ids::NodeId;
use active::{Checker, Mode};
use counter::{Ctr, Health, Target};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `checks.active.type`.
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckType {
    /// `GET http_path`, judged by its status.
    #[default]
    Http,
    /// As `http` (the TLS handshake is not modelled).
    Https,
    /// Connect only. On an HTTP upstream Kong turns the active checks off
    /// for this type (`create_healthchecker` zeroes both intervals).
    Tcp,
}

/// `healthchecks.active.healthy`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ActiveHealthy {
    /// Between checks of the targets that take traffic; 0s: none. Default 0s.
    pub interval: SimDuration,
    /// Statuses that count as a success. Default [200, 302].
    pub http_statuses: Vec<u16>,
    /// Successes that make a target healthy; 0: off. Default 0.
    pub successes: u8,
}

impl Default for ActiveHealthy {
    fn default() -> Self {
        ActiveHealthy {
            interval: SimDuration::ZERO,
            http_statuses: vec![200, 302],
            successes: 0,
        }
    }
}

/// `healthchecks.active.unhealthy`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ActiveUnhealthy {
    /// Between checks of the targets that take no traffic; 0s: none. Default 0s.
    pub interval: SimDuration,
    /// Statuses that count as an HTTP failure. Default [429, 404, 500, 501, 502, 503, 504, 505].
    pub http_statuses: Vec<u16>,
    /// Refused or reset checks that make a target unhealthy; 0: off. Default 0.
    pub tcp_failures: u8,
    /// Timed-out checks that make a target unhealthy; 0: off. Default 0.
    pub timeouts: u8,
    /// HTTP failures that make a target unhealthy; 0: off. Default 0.
    pub http_failures: u8,
}

impl Default for ActiveUnhealthy {
    fn default() -> Self {
        ActiveUnhealthy {
            interval: SimDuration::ZERO,
            http_statuses: vec![429, 404, 500, 501, 502, 503, 504, 505],
            tcp_failures: 0,
            timeouts: 0,
            http_failures: 0,
        }
    }
}

/// `healthchecks.active`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ActiveChecks {
    /// `http` (default), `https` or `tcp`.
    #[serde(rename = "type")]
    pub kind: CheckType,
    /// Bounds the connect and, separately, the wait for the status line. Default 1s.
    pub timeout: SimDuration,
    /// Targets checked at once (work packages). Default 10.
    pub concurrency: u32,
    pub healthy: ActiveHealthy,
    pub unhealthy: ActiveUnhealthy,
}

impl Default for ActiveChecks {
    fn default() -> Self {
        ActiveChecks {
            kind: CheckType::Http,
            timeout: SimDuration::from_secs(1),
            concurrency: 10,
            healthy: ActiveHealthy::default(),
            unhealthy: ActiveUnhealthy::default(),
        }
    }
}

/// `healthchecks.passive.healthy`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PassiveHealthy {
    /// Statuses that count as a success. Default 200–208, 226, 300–308.
    pub http_statuses: Vec<u16>,
    /// Successes that make a target healthy again; 0: off. Default 0.
    pub successes: u8,
}

impl Default for PassiveHealthy {
    fn default() -> Self {
        let mut s: Vec<u16> = (200..=208).collect();
        s.push(226);
        s.extend(300..=308);
        PassiveHealthy {
            http_statuses: s,
            successes: 0,
        }
    }
}

/// `healthchecks.passive.unhealthy` (Kong's circuit breaker).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PassiveUnhealthy {
    /// Statuses that count as an HTTP failure. Default [429, 500, 503].
    pub http_statuses: Vec<u16>,
    /// Refused or reset tries that make a target unhealthy; 0: off. Default 0.
    pub tcp_failures: u8,
    /// Timed-out tries that make a target unhealthy; 0: off. Default 0.
    pub timeouts: u8,
    /// HTTP failures that make a target unhealthy; 0: off. Default 0.
    pub http_failures: u8,
}

impl Default for PassiveUnhealthy {
    fn default() -> Self {
        PassiveUnhealthy {
            http_statuses: vec![429, 500, 503],
            tcp_failures: 0,
            timeouts: 0,
            http_failures: 0,
        }
    }
}

/// `healthchecks.passive`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PassiveChecks {
    pub healthy: PassiveHealthy,
    pub unhealthy: PassiveUnhealthy,
}

/// A Kong upstream's `healthchecks` (its `threshold` is
/// `gateway.kong.health_threshold`). Every default is Kong's: nothing is
/// checked unless an interval or a threshold is set.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct KongParams {
    pub active: ActiveChecks,
    pub passive: PassiveChecks,
}

impl KongParams {
    /// The active checker runs (an interval is set and the type is not `tcp`).
    fn probes(&self) -> bool {
        self.active.kind != CheckType::Tcp
            && !(self.active.healthy.interval.is_zero() && self.active.unhealthy.interval.is_zero())
    }

    /// A passive threshold can make a target unhealthy.
    fn breaks(&self) -> bool {
        let u = &self.passive.unhealthy;
        u.tcp_failures > 0 || u.timeouts > 0 || u.http_failures > 0
    }

    /// Every threshold with its field name.
    fn limits(&self) -> [(&'static str, u8); 8] {
        let (a, p) = (&self.active, &self.passive);
        [
            ("active.healthy.successes", a.healthy.successes),
            ("active.unhealthy.tcp_failures", a.unhealthy.tcp_failures),
            ("active.unhealthy.timeouts", a.unhealthy.timeouts),
            ("active.unhealthy.http_failures", a.unhealthy.http_failures),
            ("passive.healthy.successes", p.healthy.successes),
            ("passive.unhealthy.tcp_failures", p.unhealthy.tcp_failures),
            ("passive.unhealthy.timeouts", p.unhealthy.timeouts),
            ("passive.unhealthy.http_failures", p.unhealthy.http_failures),
        ]
    }
}

impl PolicyParams for KongParams {
    fn label(&self) -> String {
        match (self.probes(), self.breaks()) {
            (true, true) => "kong active+passive".into(),
            (true, false) => "kong active".into(),
            (false, true) => "kong passive".into(),
            (false, false) => "kong (no checks)".into(),
        }
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let err = |f: &str, r: String| Err((f.to_string(), r));
        for (field, v) in self.limits() {
            if v == 255 {
                return err(
                    field,
                    "must be at most 254 (lua-resty-healthcheck refuses 255: its counters are \
                     8-bit)"
                        .into(),
                );
            }
        }
        for (field, d) in [
            ("active.healthy.interval", self.active.healthy.interval),
            ("active.unhealthy.interval", self.active.unhealthy.interval),
            ("active.timeout", self.active.timeout),
        ] {
            if d > SimDuration::from_secs(65535) {
                return err(field, format!("must be at most 65535s, found {d}"));
            }
        }
        if self.active.timeout.is_zero() {
            return err("active.timeout", "must be positive".into());
        }
        if self.active.concurrency == 0 {
            return err("active.concurrency", "must be at least 1".into());
        }
        let lists = [
            (
                "active.healthy.http_statuses",
                &self.active.healthy.http_statuses,
            ),
            (
                "active.unhealthy.http_statuses",
                &self.active.unhealthy.http_statuses,
            ),
            (
                "passive.healthy.http_statuses",
                &self.passive.healthy.http_statuses,
            ),
            (
                "passive.unhealthy.http_statuses",
                &self.passive.unhealthy.http_statuses,
            ),
        ];
        for (field, list) in lists {
            if let Some((i, s)) = list
                .iter()
                .enumerate()
                .find(|(_, s)| !(100..=999).contains(*s))
            {
                return err(
                    &format!("{field}[{i}]"),
                    format!("must be a status between 100 and 999, found {s}"),
                );
            }
        }
        Ok(())
    }

    fn warnings(&self) -> Vec<(String, String)> {
        let mut w = vec![];
        let a = &self.active;
        let intervals = !(a.healthy.interval.is_zero() && a.unhealthy.interval.is_zero());
        if a.kind == CheckType::Tcp && intervals {
            w.push((
                "active.type".into(),
                "Kong turns active checks off for `type: tcp` on an HTTP upstream \
                 (healthcheckers.lua zeroes both intervals): no probe is sent"
                    .into(),
            ));
        }
        if !self.probes() && !self.breaks() {
            w.push((
                "active".into(),
                "every interval and every passive threshold is 0 (Kong's defaults): nothing is \
                 checked, as with `none`"
                    .into(),
            ));
        }
        if self.breaks() && (!self.probes() || a.unhealthy.interval.is_zero()) {
            w.push((
                "passive.unhealthy".into(),
                "passive checks never re-enable a target: once unhealthy it stays out for the \
                 rest of the run unless active.unhealthy.interval probes it"
                    .into(),
            ));
        }
        if self.probes() && !a.unhealthy.interval.is_zero() && a.healthy.successes == 0 {
            w.push((
                "active.healthy.successes".into(),
                "is 0: the probes of unhealthy targets can never make one healthy again".into(),
            ));
        }
        w
    }

    fn events_per_s(&self, nodes: usize) -> f64 {
        if !self.probes() {
            return 0.0;
        }
        let a = &self.active;
        [a.healthy.interval, a.unhealthy.interval]
            .into_iter()
            .filter(|d| !d.is_zero())
            .map(|d| periodic_events_per_s(nodes, d.max(active::CHECK_INTERVAL), 4.0))
            .fold(0.0, f64::max)
    }

    fn counts_client_requests(&self) -> bool {
        self.breaks()
    }

    fn build(&self, _scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(Kong::new(self, nodes))
    }
}

/// A set of HTTP statuses (100–999), as `to_set` makes them.
#[derive(Clone, Debug)]
struct Statuses([u64; 16]);

impl Statuses {
    fn of(list: &[u16]) -> Self {
        let mut bits = [0u64; 16];
        for &s in list.iter().filter(|&&s| s < 1024) {
            bits[s as usize / 64] |= 1 << (s % 64);
        }
        Statuses(bits)
    }

    fn has(&self, s: u16) -> bool {
        s < 1024 && self.0[s as usize / 64] & (1 << (s % 64)) != 0
    }
}

/// One side's thresholds and status lists (active or passive).
#[derive(Clone, Debug)]
struct Limits {
    healthy: Statuses,
    unhealthy: Statuses,
    successes: u8,
    tcp_failures: u8,
    timeouts: u8,
    http_failures: u8,
}

impl Limits {
    /// `report_http_status`: the counter a status increments, with its
    /// limit; `None` for a status in neither list (ignored). 0 is an invalid
    /// response: an HTTP failure.
    fn of_status(&self, s: u16) -> Option<(Ctr, u8)> {
        if self.healthy.has(s) {
            Some((Ctr::Success, self.successes))
        } else if self.unhealthy.has(s) || s == 0 {
            Some((Ctr::Http, self.http_failures))
        } else {
            None
        }
    }
}

/// Kong's health checker of one upstream on one Kong node.
pub struct Kong {
    targets: Vec<Target>,
    active: Limits,
    passive: Limits,
    checker: Option<Checker>,
}

impl Kong {
    pub fn new(p: &KongParams, nodes: usize) -> Self {
        let a = &p.active;
        let kind = match a.kind {
            CheckType::Tcp => ProbeKind::Tcp,
            CheckType::Http | CheckType::Https => ProbeKind::Http,
        };
        let checker = if p.probes() {
            Checker::new(
                kind,
                a.timeout,
                a.concurrency,
                a.healthy.interval,
                a.unhealthy.interval,
            )
        } else {
            None
        };
        Kong {
            targets: vec![Target::default(); nodes],
            active: Limits {
                healthy: Statuses::of(&a.healthy.http_statuses),
                unhealthy: Statuses::of(&a.unhealthy.http_statuses),
                successes: a.healthy.successes,
                tcp_failures: a.unhealthy.tcp_failures,
                timeouts: a.unhealthy.timeouts,
                http_failures: a.unhealthy.http_failures,
            },
            passive: Limits {
                healthy: Statuses::of(&p.passive.healthy.http_statuses),
                unhealthy: Statuses::of(&p.passive.unhealthy.http_statuses),
                successes: p.passive.healthy.successes,
                tcp_failures: p.passive.unhealthy.tcp_failures,
                timeouts: p.passive.unhealthy.timeouts,
                http_failures: p.passive.unhealthy.http_failures,
            },
            checker,
        }
    }

    /// A target's state, for tests and traces.
    pub fn health(&self, node: NodeId) -> Health {
        self.targets[node.index()].health
    }

    /// `incr_counter`, with Kong's balancer told of a change to healthy or
    /// unhealthy (the only events that move `address.available`).
    fn incr(&mut self, cx: &mut PolicyCx, node: NodeId, c: Ctr, limit: u8) {
        let t = &mut self.targets[node.index()];
        let was = t.health.routable();
        if t.incr(c, limit).is_some() && t.health.routable() != was {
            if was {
                cx.ejected(ScopeSel::All, node);
            } else {
                cx.readmitted(ScopeSel::All, node);
            }
        }
    }

    /// `report_tcp_failure` / `report_timeout` / `report_http_status` of one side.
    fn report(&mut self, cx: &mut PolicyCx, node: NodeId, active: bool, what: Report) {
        let l = if active { &self.active } else { &self.passive };
        let (c, limit) = match what {
            Report::Tcp => (Ctr::Tcp, l.tcp_failures),
            Report::Timeout => (Ctr::Timeout, l.timeouts),
            Report::Status(s) => match l.of_status(s) {
                Some(x) => x,
                None => return,
            },
            Report::Connected => (Ctr::Success, l.successes),
        };
        self.incr(cx, node, c, limit);
    }
}

/// What one check or try reports.
#[derive(Copy, Clone, Debug)]
enum Report {
    Tcp,
    Timeout,
    Status(u16),
    /// A `type: tcp` check connected (`report_success`).
    Connected,
}

impl HealthPolicy for Kong {
    fn on_start(&mut self, cx: &mut PolicyCx) {
        if let Some(c) = self.checker.as_mut() {
            c.start(cx);
        }
    }

    fn is_routable(&self, _: Scope, node: NodeId, _: Now) -> bool {
        self.targets[node.index()].health.routable()
    }

    fn interests(&self) -> Interests {
        Interests {
            selections: false,
            // A target's state changes only in `set_health`, each time with
            // its notice.
            routes_by_notices: true,
            ..Interests::DEFAULT
        }
    }

    /// The passive check: what Kong's balancer and log phases report.
    fn on_attempt(&mut self, cx: &mut PolicyCx, r: &AttemptReport) {
        let what = match r.result {
            AttemptResult::Status(s) => Report::Status(s),
            AttemptResult::Refused | AttemptResult::Reset => Report::Tcp,
            AttemptResult::ConnectTimeout | AttemptResult::ReadTimeout => Report::Timeout,
            // The log phase reports `ngx.status`, 499.
            AttemptResult::ClientAbort => Report::Status(499),
            AttemptResult::Rejected => return,
        };
        self.report(cx, r.node, false, what);
    }

    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        let Some(checker) = self.checker.as_mut() else {
            return;
        };
        let Some(mode) = checker.due(timer) else {
            return;
        };
        let targets = &self.targets;
        let wanted = move |n: &NodeId| {
            let h = targets[n.index()].health;
            match mode {
                Mode::Healthy => h.routable(),
                Mode::Unhealthy => !h.routable(),
            }
        };
        let list = (0..targets.len() as u32).map(NodeId).filter(wanted);
        checker.run(cx, mode, list);
    }

    fn on_probe_result(&mut self, cx: &mut PolicyCx, node: NodeId, o: &ProbeOutcome) {
        let what = match o.result {
            ProbeResult::Connected => Report::Connected,
            ProbeResult::Status(s) => Report::Status(s),
            ProbeResult::Refused | ProbeResult::Reset => Report::Tcp,
            ProbeResult::ConnectTimeout | ProbeResult::Timeout => Report::Timeout,
        };
        self.report(cx, node, true, what);
        if let Some(c) = self.checker.as_mut() {
            c.checked(cx, o.tag);
        }
    }
}

#[cfg(test)]
mod tests;
