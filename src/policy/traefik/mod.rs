//! Traefik 3.7's server health (`traefik/traefik`, `pkg/healthcheck`),
//! `{"kind": "traefik"}`: a load balancer's `healthCheck` (active) and
//! `passiveHealthCheck`, with Traefik's names. Both drive the same thing,
//! the balancer's status of each server (`Balancer.SetStatus` in
//! `pkg/server/service/loadbalancer/wrr/wrr.go`): the passive checker sets a
//! server down, the active checker sets it up or down at every check, and
//! the last word wins.
//!
//! - [`active`]: two loops (servers up, servers down) on their own tickers,
//!   each checking its servers one after the other; no thresholds.
//! - [`passive`]: failures in a row within `failureWindow`; any success
//!   clears them; the window is also the time down, unless an active check
//!   is configured, in which case only that check brings a server back.
//! - [`breaker`]: the circuit-breaker middleware (a router's, not a
//!   server's), which the gateway's `flavor: traefik` runs.
//!
//! Traefik's request path (weighted round robin, the retry middleware, 503
//! "no available server") is the gateway's `flavor: traefik`.

pub mod active;
pub mod breaker;
pub mod passive;

use super::{
    AttemptReport, HealthPolicy, Interests, Now, PolicyCx, PolicyParams, PolicyTimer, ProbeKind,
    ProbeOutcome, ProbeRequest, Scope, ScopeSel,
};
use crate::engine::SimDuration;
use crate::ids::NodeId;
pub use active::TraefikActiveParams;
use active::{HEALTHY, Loop, Next, UNHEALTHY};
pub use passive::TraefikPassiveParams;
use passive::{PassiveState, Verdict};
use rand::RngExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Traefik's default `forwardingTimeouts.dialTimeout`
/// (`ForwardingTimeouts.SetDefaults`, pkg/config/dynamic/http_config.go).
pub const DEFAULT_DIAL_TIMEOUT: SimDuration = SimDuration::from_secs(30);

/// A load balancer's health checks. Both are optional; without either,
/// Traefik checks nothing.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct TraefikParams {
    /// `loadBalancer.healthCheck`: the active check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check: Option<TraefikActiveParams>,
    /// `loadBalancer.passiveHealthCheck` (Traefik 3.6 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passive_health_check: Option<TraefikPassiveParams>,
}

impl PolicyParams for TraefikParams {
    fn label(&self) -> String {
        let mut parts = vec!["traefik".to_string()];
        if let Some(a) = &self.health_check {
            parts.push(format!(
                "healthCheck interval={} timeout={}",
                a.interval, a.timeout
            ));
            if let Some(u) = a.unhealthy_interval {
                parts.push(format!("unhealthyInterval={u}"));
            }
        }
        if let Some(p) = &self.passive_health_check {
            parts.push(format!(
                "passive failureWindow={} maxFailedAttempts={}",
                p.failure_window, p.max_failed_attempts
            ));
        }
        parts.join(" ")
    }

    fn validate(&self) -> Result<(), (String, String)> {
        if let Some(a) = &self.health_check {
            a.validate()?;
        }
        if let Some(p) = &self.passive_health_check {
            p.validate()?;
        }
        Ok(())
    }

    fn warnings(&self) -> Vec<(String, String)> {
        let mut w = vec![];
        if self.health_check.is_some() && self.passive_health_check.is_some() {
            w.push((
                "passiveHealthCheck".into(),
                "with an active healthCheck, a server the passive check sets down comes \
                 back only when an active check passes (at the next `interval` tick of \
                 the loop it is in), not after failureWindow"
                    .into(),
            ));
        }
        w
    }

    fn events_per_s(&self, nodes: usize) -> f64 {
        self.health_check.as_ref().map_or(0.0, |a| {
            let per = |d: SimDuration| 4.0 * nodes as f64 / d.as_secs_f64().max(1e-6);
            per(a.interval).max(per(a.unhealthy_interval()))
        })
    }

    fn counts_client_requests(&self) -> bool {
        self.passive_health_check.is_some()
    }

    fn build(&self, _scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(Traefik::new(self, nodes))
    }
}

/// Timer tags.
const TAG_TICK: u32 = 1;
const TAG_REUP: u32 = 2;

/// The runtime policy: the balancer's status of each server and the
/// checkers that set it.
pub struct Traefik {
    active: Option<(TraefikActiveParams, [Loop; 2])>,
    passive: Option<PassiveState>,
    /// `Balancer.status`: the servers that are up.
    up: Vec<bool>,
}

impl Traefik {
    pub fn new(p: &TraefikParams, nodes: usize) -> Self {
        let has_active = p.health_check.is_some();
        Traefik {
            active: p.health_check.as_ref().map(|a| {
                (
                    a.clone(),
                    [Loop::new(a.interval), Loop::new(a.unhealthy_interval())],
                )
            }),
            passive: p
                .passive_health_check
                .as_ref()
                .map(|x| PassiveState::new(x, has_active, nodes)),
            up: vec![true; nodes],
        }
    }

    /// `Balancer.SetStatus(name, up)`.
    fn set_status(&mut self, cx: &mut PolicyCx, node: NodeId, up: bool) {
        if self.up[node.index()] != up {
            self.up[node.index()] = up;
            if up {
                cx.readmitted(ScopeSel::All, node);
            } else {
                cx.ejected(ScopeSel::All, node);
            }
        }
    }

    fn arm_tick(&self, cx: &mut PolicyCx, l: usize) {
        let Some((_, loops)) = &self.active else {
            return;
        };
        let at = loops[l].next_tick(cx.now().t);
        cx.at(
            at,
            PolicyTimer {
                tag: TAG_TICK,
                node: l as u32,
                generation: 0,
            },
        );
    }

    fn check(&self, cx: &mut PolicyCx, l: usize, next: Next) {
        let (Some((a, _)), Next::Check(node)) = (&self.active, next) else {
            return;
        };
        cx.probe(
            node,
            ProbeRequest {
                kind: ProbeKind::Http,
                connect_timeout: a.connect_timeout(),
                timeout: a.timeout,
                timeout_after_connect: None,
                tag: l as u32,
            },
        );
    }
}

impl HealthPolicy for Traefik {
    fn on_start(&mut self, cx: &mut PolicyCx) {
        let n = self.up.len();
        if let Some((_, loops)) = &mut self.active {
            // NewServiceHealthChecker fills the healthy channel from a map:
            // in no set order.
            let mut order: Vec<NodeId> = (0..n as u32).map(NodeId).collect();
            for i in (1..order.len()).rev() {
                let j = cx.rng().random_range(0..=i);
                order.swap(i, j);
            }
            loops[HEALTHY].channel.extend(order);
        }
        self.arm_tick(cx, HEALTHY);
        self.arm_tick(cx, UNHEALTHY);
    }

    fn is_routable(&self, _scope: Scope, node: NodeId, _now: Now) -> bool {
        self.up[node.index()]
    }

    fn interests(&self) -> Interests {
        Interests {
            selections: false,
            attempts: self.passive.is_some(),
            routes_by_notices: true,
            ..Interests::DEFAULT
        }
    }

    fn on_attempt(&mut self, cx: &mut PolicyCx, r: &AttemptReport) {
        let Some(p) = &mut self.passive else { return };
        let now = cx.now().t;
        match p.on_attempt(now, r) {
            Verdict::Nothing => {}
            Verdict::Down(reup) => {
                self.set_status(cx, r.node, false);
                if let Some(at) = reup {
                    cx.at(
                        at,
                        PolicyTimer {
                            tag: TAG_REUP,
                            node: r.node.0,
                            generation: 0,
                        },
                    );
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        match timer.tag {
            TAG_TICK => {
                let l = timer.node as usize;
                let Some((_, loops)) = &mut self.active else {
                    return;
                };
                let next = loops[l].on_tick();
                self.check(cx, l, next);
                self.arm_tick(cx, l);
            }
            TAG_REUP => {
                let node = NodeId(timer.node);
                if self
                    .passive
                    .as_mut()
                    .is_some_and(|p| p.on_timer(cx.now().t, node))
                {
                    self.set_status(cx, node, true);
                }
            }
            _ => {}
        }
    }

    fn on_probe_result(&mut self, cx: &mut PolicyCx, node: NodeId, o: &ProbeOutcome) {
        let l = o.tag as usize;
        let Some((a, loops)) = &mut self.active else {
            return;
        };
        if loops[l].checking() != Some(node) {
            return;
        }
        let up = a.passes_check(o.result);
        loops[if up { HEALTHY } else { UNHEALTHY }]
            .channel
            .push_back(node);
        let next = loops[l].on_checked();
        self.set_status(cx, node, up);
        self.check(cx, l, next);
    }
}

#[cfg(test)]
mod tests;
