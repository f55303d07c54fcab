//! Heartbeat / TTL registries (reference §5): every node beats from its own
//! thread (it keeps beating while its workers hang, stops when it crashes or
//! is stopped, and its beats are lost in a partition); the registry marks a
//! node unhealthy when its last beat is too old; the gateway learns of it
//! through the registry's clients and their caches.
//!
//! | `registry` | detection | to the gateway |
//! |---|---|---|
//! | `generic` (seed 004) | last beat older than `ttl`, at once or at `check_interval` scans | at once, or a `refresh_interval` cache |
//! | `consul` (TTL check) | a one-shot `ttl` timer restarted by each beat; starts `critical`; optionally deregistered after `deregister_critical_service_after` by a reaper every 30 s | blocking queries: at once |
//! | `nacos1` (1.x ephemeral) | a scan every 5 s: unhealthy when the last beat is more than 15 s old | UDP push, 1 s after the change |
//! | `eureka` | lease `renew` sets `last = now + 90 s` and expiry needs `now > last + 90 s` (the 2× bug); an eviction task every 60 s, capped at 15 % of the registry, off under self-preservation | response cache, client fetch and Ribbon, 30 s each |
//!
//! With `self_check`, a node beats only if a request through its own worker
//! pool answers 2xx in time (seed 004's advice): then a hang stops the beats.
//!
//! This module holds the policy the registries share (heartbeat plan,
//! gateway view, timers); each registry's file holds its parameters, their
//! checks and label, and its bookkeeping (a `Registry`).

mod consul;
mod eureka;
mod generic;
mod nacos1;

pub use consul::{ConsulParams, InitialStatus};
pub use eureka::EurekaParams;
pub use generic::GenericRegistryParams;
pub use nacos1::Nacos1Params;

use super::support::gateway_view::{GatewayView, Propagation};
use super::{
    HealthPolicy, HeartbeatPlan, Now, PolicyCx, PolicyParams, PolicyTimer, Scope,
    periodic_events_per_s,
};
use crate::engine::SimDuration;
use crate::ids::NodeId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A heartbeat registry as written in a model file; `registry` is the tag.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(tag = "registry", rename_all = "snake_case", deny_unknown_fields)]
pub enum HeartbeatTtlSpec {
    /// Seed 004's registry: a few dozen lines that drop stale instances.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Generic(GenericRegistryParams),
    /// A Consul service with a TTL check.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Consul(ConsulParams),
    /// Nacos 1.x ephemeral instances (HTTP beats).
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Nacos1(Nacos1Params),
    /// Eureka server, client and Ribbon.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Eureka(EurekaParams),
}

impl HeartbeatTtlSpec {
    /// The time between two beats of a node.
    pub fn period(&self) -> SimDuration {
        match self {
            HeartbeatTtlSpec::Generic(p) => p.interval,
            HeartbeatTtlSpec::Consul(p) => p.interval,
            HeartbeatTtlSpec::Nacos1(p) => p.heart_beat_interval,
            HeartbeatTtlSpec::Eureka(p) => p.lease_renewal_interval,
        }
    }
}

impl PolicyParams for HeartbeatTtlSpec {
    fn label(&self) -> String {
        match self {
            HeartbeatTtlSpec::Generic(p) => p.label(),
            HeartbeatTtlSpec::Consul(p) => p.label(),
            HeartbeatTtlSpec::Nacos1(p) => p.label(),
            HeartbeatTtlSpec::Eureka(p) => p.label(),
        }
    }

    fn validate(&self) -> Result<(), (String, String)> {
        match self {
            HeartbeatTtlSpec::Generic(p) => p.validate(),
            HeartbeatTtlSpec::Consul(p) => p.validate(),
            HeartbeatTtlSpec::Nacos1(p) => p.validate(),
            HeartbeatTtlSpec::Eureka(p) => p.validate(),
        }
    }

    fn warnings(&self) -> Vec<(String, String)> {
        match self {
            HeartbeatTtlSpec::Consul(p) => p.warnings(),
            _ => vec![],
        }
    }

    fn events_per_s(&self, nodes: usize) -> f64 {
        periodic_events_per_s(nodes, self.period(), 3.0)
    }

    fn counts_client_requests(&self) -> bool {
        false
    }

    fn build(&self, _scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(HeartbeatTtl::new(self, nodes))
    }
}

/// Beat only after a check through the node's worker pool.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelfCheckSpec {
    /// No 2xx answer within this: no beat this time.
    pub timeout: SimDuration,
}

pub(super) fn positive(field: &str, d: SimDuration) -> Result<(), (String, String)> {
    if d.is_zero() {
        Err((field.into(), "must be positive".into()))
    } else {
        Ok(())
    }
}

/// `positive` for a setting that may be omitted.
pub(super) fn positive_if_set(field: &str, d: Option<SimDuration>) -> Result<(), (String, String)> {
    d.map_or(Ok(()), |d| positive(field, d))
}

pub(super) fn self_check_valid(s: &Option<SelfCheckSpec>) -> Result<(), (String, String)> {
    match s {
        Some(s) => positive("self_check.timeout", s.timeout),
        None => Ok(()),
    }
}

/// Timer tags. The view owns one; registries use the others.
const TAG_VIEW: u32 = 1;
const TAG_EXPIRE: u32 = 2;
const TAG_SCAN: u32 = 3;
const TAG_RATE: u32 = 4;
const TAG_THRESHOLD: u32 = 5;
const TAG_REAP: u32 = 6;

/// One registry's bookkeeping; it publishes health changes to the view.
trait Registry: Send {
    fn start(&mut self, view: &mut GatewayView, cx: &mut PolicyCx);
    fn on_beat(&mut self, view: &mut GatewayView, cx: &mut PolicyCx, node: NodeId);
    fn on_timer(&mut self, view: &mut GatewayView, cx: &mut PolicyCx, timer: PolicyTimer);
    /// The node's process started again after a crash.
    fn on_restart(&mut self, _view: &mut GatewayView, _cx: &mut PolicyCx, _node: NodeId) {}
}

/// What a registry brings to the policy: its nodes' heartbeats, whether
/// nodes start routable, the path from the registry to the gateway, and
/// its bookkeeping.
struct Setup {
    interval: SimDuration,
    self_check: Option<SelfCheckSpec>,
    initially: bool,
    propagation: Propagation,
    registry: Box<dyn Registry>,
}

/// The heartbeat / TTL policy.
pub struct HeartbeatTtl {
    plan: HeartbeatPlan,
    view: GatewayView,
    registry: Box<dyn Registry>,
}

fn refresh(r: Option<SimDuration>) -> Propagation {
    match r {
        Some(p) => Propagation::Pollers(vec![p]),
        None => Propagation::Immediate,
    }
}

impl HeartbeatTtl {
    pub fn new(spec: &HeartbeatTtlSpec, nodes: usize) -> Self {
        let s = match spec {
            HeartbeatTtlSpec::Generic(p) => p.setup(nodes),
            HeartbeatTtlSpec::Consul(p) => p.setup(nodes),
            HeartbeatTtlSpec::Nacos1(p) => p.setup(nodes),
            HeartbeatTtlSpec::Eureka(p) => p.setup(nodes),
        };
        HeartbeatTtl {
            plan: HeartbeatPlan {
                interval: s.interval,
                self_check: s.self_check.map(|c| c.timeout),
            },
            view: GatewayView::new(nodes, s.initially, s.propagation, TAG_VIEW),
            registry: s.registry,
        }
    }
}

impl HealthPolicy for HeartbeatTtl {
    fn on_start(&mut self, cx: &mut PolicyCx) {
        self.view.start(cx);
        cx.start_heartbeats(self.plan);
        self.registry.start(&mut self.view, cx);
    }

    fn is_routable(&self, _scope: Scope, node: NodeId, _now: Now) -> bool {
        self.view.is_routable(node)
    }

    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        if !self.view.on_timer(cx, timer) {
            self.registry.on_timer(&mut self.view, cx, timer);
        }
    }

    fn on_heartbeat(&mut self, cx: &mut PolicyCx, node: NodeId) {
        self.registry.on_beat(&mut self.view, cx, node);
    }

    fn on_restarted(&mut self, cx: &mut PolicyCx, node: NodeId) {
        self.registry.on_restart(&mut self.view, cx, node);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testkit::Harness;

    /// The registry `json` describes, with `nodes` nodes, started at time zero.
    pub(super) fn started(json: serde_json::Value, nodes: usize) -> Harness<HeartbeatTtl> {
        let spec: HeartbeatTtlSpec = serde_json::from_value(json).unwrap();
        Harness::seeded(HeartbeatTtl::new(&spec, nodes), 3)
    }
}
