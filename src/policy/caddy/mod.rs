//! Caddy 2.11's `reverse_proxy` health checks (`caddyserver/caddy`,
//! `modules/caddyhttp/reverseproxy`), `{"kind": "caddy"}`: the `passive`
//! and `active` sections of the handler's `health_checks`, with Caddy's
//! JSON names. A host takes requests while `Upstream.Available()` holds
//! (hosts.go): the active checker has not marked it unhealthy, it has fewer
//! than `max_fails` remembered failures (`Healthy`), and it is not `Full`.
//!
//! - [`passive`]: each failure remembered for `fail_duration` on its own,
//!   statuses counted once per matching `unhealthy_status` entry,
//!   `unhealthy_latency`, `unhealthy_request_count`;
//! - [`active`]: a round of checks every `interval` from the start, and
//!   `passes`/`fails` counted since the last change of state.
//!
//! Caddy's request path (random selection, `lb_try_duration`, 503 "no
//! upstreams available") is the gateway's `flavor: caddy`.

pub mod active;
pub mod passive;

use super::{
    AttemptReport, HealthPolicy, Interests, Now, PolicyCx, PolicyParams, PolicyTimer, ProbeKind,
    ProbeOutcome, ProbeRequest, Scope, ScopeSel, periodic_events_per_s,
};
use crate::ids::NodeId;
use active::ActiveState;
pub use active::CaddyActiveParams;
pub use passive::CaddyPassiveParams;
use passive::PassiveState;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Caddy handler's `health_checks`. Both sections are optional; without
/// either, Caddy checks nothing.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CaddyParams {
    /// `health_checks.passive` (Caddyfile `fail_duration`, `max_fails`,
    /// `unhealthy_status`, `unhealthy_latency`, `unhealthy_request_count`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passive: Option<CaddyPassiveParams>,
    /// `health_checks.active` (Caddyfile `health_interval`,
    /// `health_timeout`, `health_passes`, `health_fails`, `health_status`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active: Option<CaddyActiveParams>,
}

impl PolicyParams for CaddyParams {
    fn label(&self) -> String {
        let mut parts = vec!["caddy".to_string()];
        if let Some(p) = &self.passive {
            parts.push(format!(
                "fail_duration={} max_fails={}",
                p.fail_duration, p.max_fails
            ));
            if !p.unhealthy_status.is_empty() {
                let s: Vec<String> = p
                    .unhealthy_status
                    .iter()
                    .map(|&s| {
                        if s < 100 {
                            format!("{s}xx")
                        } else {
                            s.to_string()
                        }
                    })
                    .collect();
                parts.push(format!("unhealthy_status={}", s.join(",")));
            }
            if let Some(l) = p.unhealthy_latency {
                parts.push(format!("unhealthy_latency={l}"));
            }
        }
        if let Some(a) = &self.active {
            parts.push(format!(
                "health_interval={} health_fails={} health_passes={}",
                a.interval, a.fails, a.passes
            ));
        }
        parts.join(" ")
    }

    fn validate(&self) -> Result<(), (String, String)> {
        if let Some(p) = &self.passive {
            p.validate()?;
        }
        if let Some(a) = &self.active {
            a.validate()?;
        }
        Ok(())
    }

    fn warnings(&self) -> Vec<(String, String)> {
        let mut w = vec![];
        if let Some(p) = &self.passive
            && p.fail_duration.is_zero()
        {
            w.push((
                "passive.fail_duration".into(),
                "is 0 (Caddy's default): Caddy remembers no failure, so the passive \
                 check never takes a host out (set fail_duration to enable it)"
                    .into(),
            ));
        }
        if let Some(a) = &self.active
            && a.timeout >= a.interval
        {
            w.push((
                "active.timeout".into(),
                format!(
                    "{} is not shorter than `interval` ({}): Caddy starts the next round \
                     while checks of a host that stops answering still wait",
                    a.timeout, a.interval
                ),
            ));
        }
        w
    }

    fn events_per_s(&self, nodes: usize) -> f64 {
        self.active
            .as_ref()
            .map_or(0.0, |a| periodic_events_per_s(nodes, a.interval, 4.0))
    }

    fn counts_client_requests(&self) -> bool {
        self.passive.is_some()
    }

    fn build(&self, _scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(Caddy::new(self, nodes))
    }
}

/// Timer tags.
const TAG_ROUND: u32 = 1;
const TAG_FORGET: u32 = 2;

/// The runtime policy: both checkers of one handler.
pub struct Caddy {
    active: Option<ActiveState>,
    passive: Option<PassiveState>,
    /// Per node: out by `Healthy()` (active or passive), as last reported.
    out: Vec<bool>,
    nodes: usize,
}

impl Caddy {
    pub fn new(p: &CaddyParams, nodes: usize) -> Self {
        Caddy {
            active: p.active.as_ref().map(|a| ActiveState::new(a, nodes)),
            passive: p.passive.as_ref().map(|x| PassiveState::new(x, nodes)),
            out: vec![false; nodes],
            nodes,
        }
    }

    /// `Upstream.Healthy()`.
    fn healthy(&self, node: NodeId) -> bool {
        self.active.as_ref().is_none_or(|a| a.healthy(node))
            && self.passive.as_ref().is_none_or(|p| p.healthy(node))
    }

    /// Reports a change of `Healthy()` to the metrics.
    fn sync(&mut self, cx: &mut PolicyCx, node: NodeId) {
        let out = !self.healthy(node);
        if out != self.out[node.index()] {
            self.out[node.index()] = out;
            if out {
                cx.ejected(ScopeSel::All, node);
            } else {
                cx.readmitted(ScopeSel::All, node);
            }
        }
    }

    /// `doActiveHealthCheckForAllHosts`: one check per upstream, now.
    fn round(&mut self, cx: &mut PolicyCx) {
        let Some(a) = &self.active else { return };
        let req = ProbeRequest {
            kind: ProbeKind::Http,
            connect_timeout: a.p.connect_timeout(),
            timeout: a.p.timeout,
            timeout_after_connect: None,
            tag: 0,
        };
        let next = cx.now().t + a.p.interval;
        for n in 0..self.nodes {
            cx.probe(NodeId(n as u32), req);
        }
        cx.at(
            next,
            PolicyTimer {
                tag: TAG_ROUND,
                node: 0,
                generation: 0,
            },
        );
    }

    fn arm_forget(cx: &mut PolicyCx, node: NodeId, at: crate::engine::SimTime) {
        cx.at(
            at,
            PolicyTimer {
                tag: TAG_FORGET,
                node: node.0,
                generation: 0,
            },
        );
    }
}

impl HealthPolicy for Caddy {
    fn on_start(&mut self, cx: &mut PolicyCx) {
        self.round(cx);
    }

    fn is_routable(&self, _scope: Scope, node: NodeId, _now: Now) -> bool {
        !self.out[node.index()] && !self.passive.as_ref().is_some_and(|p| p.full(node))
    }

    fn on_selected(&mut self, _cx: &mut PolicyCx, _scope: Scope, node: NodeId) {
        if let Some(p) = &mut self.passive {
            p.selected(node);
        }
    }

    fn interests(&self) -> Interests {
        // `Full` changes with every request in flight, without a notice.
        let limits = self.passive.as_ref().is_some_and(|p| p.limits_requests());
        Interests {
            selections: limits,
            attempts: self.passive.is_some(),
            routes_by_notices: !limits,
            ..Interests::DEFAULT
        }
    }

    fn on_attempt(&mut self, cx: &mut PolicyCx, r: &AttemptReport) {
        let Some(p) = &mut self.passive else { return };
        if let Some(at) = p.on_attempt(cx.now().t, r) {
            Self::arm_forget(cx, r.node, at);
        }
        self.sync(cx, r.node);
    }

    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        match timer.tag {
            TAG_ROUND => self.round(cx),
            TAG_FORGET => {
                let node = NodeId(timer.node);
                let Some(p) = &mut self.passive else { return };
                if let Some(at) = p.on_timer(cx.now().t, node) {
                    Self::arm_forget(cx, node, at);
                }
                self.sync(cx, node);
            }
            _ => {}
        }
    }

    fn on_probe_result(&mut self, cx: &mut PolicyCx, node: NodeId, o: &ProbeOutcome) {
        if let Some(a) = &mut self.active {
            a.on_result(node, o.result);
            self.sync(cx, node);
        }
    }
}

#[cfg(test)]
mod tests;
