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
//! With `gateway.replicas` above 1 the registry is one server for the fleet:
//! replica 0's instance keeps it and the heartbeats, the others keep only
//! their view of it (their own cache phases), fed by its verdicts
//! ([`FleetRole`]). Eureka's response cache is the server's, one for all.
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
    FleetRole, HealthPolicy, HeartbeatPlan, Interests, Now, PolicyCx, PolicyParams, PolicyTimer,
    Scope, periodic_events_per_s,
};
use crate::engine::{SimDuration, SimTime};
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

/// One registry's bookkeeping; it publishes health changes to the gateways.
trait Registry: Send {
    fn start(&mut self, gw: &mut Gateways, cx: &mut PolicyCx);
    fn on_beat(&mut self, gw: &mut Gateways, cx: &mut PolicyCx, node: NodeId);
    fn on_timer(&mut self, gw: &mut Gateways, cx: &mut PolicyCx, timer: PolicyTimer);
    /// The node's process started again after a crash.
    fn on_restart(&mut self, _gw: &mut Gateways, _cx: &mut PolicyCx, _node: NodeId) {}
}

/// The gateways a registry's verdicts reach: this gateway's view and, in
/// a fleet of replicas, every other replica's (through the world, which
/// hands them to the subscribers' `on_published` at the same instant).
struct Gateways<'a> {
    view: &'a mut GatewayView,
    fan_out: bool,
}

impl Gateways<'_> {
    /// The registry's verdict on `node` is `routable` from now on.
    fn publish(&mut self, cx: &mut PolicyCx, node: NodeId, routable: bool) {
        self.view.publish(cx, node, routable);
        if self.fan_out {
            let at = self.view.leaves_server(cx.now().t);
            cx.publish(node, routable, at);
        }
    }
}

/// What a registry brings to the policy: its nodes' heartbeats, whether
/// nodes start routable, the path from the registry to the gateway, and
/// its bookkeeping.
struct Setup {
    interval: SimDuration,
    self_check: Option<SelfCheckSpec>,
    initially: bool,
    propagation: Propagation,
    /// Leading poller layers of `propagation` that are the registry
    /// server's (one for a whole fleet of gateways).
    server_layers: usize,
    registry: Box<dyn Registry>,
}

/// The heartbeat / TTL policy.
///
/// In a fleet of gateway replicas the registry is one server: replica 0's
/// instance ([`FleetRole::Owner`]) starts the heartbeats and keeps the
/// registry, and publishes its verdicts to the other replicas' instances
/// ([`FleetRole::Subscriber`]), which keep only their own view (their own
/// caches' phases, their own push timers).
pub struct HeartbeatTtl {
    plan: HeartbeatPlan,
    view: GatewayView,
    /// `None` for a subscriber.
    registry: Option<Box<dyn Registry>>,
    /// The owner of a registry the fleet shares: its verdicts go to every replica.
    fan_out: bool,
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
            view: GatewayView::new(nodes, s.initially, s.propagation, TAG_VIEW)
                .with_server_layers(s.server_layers),
            registry: Some(s.registry),
            fan_out: false,
        }
    }

    /// Runs `f` on the registry (a subscriber has none: nothing happens).
    fn registry(&mut self, f: impl FnOnce(&mut dyn Registry, &mut Gateways)) {
        if let Some(r) = self.registry.as_deref_mut() {
            let mut gw = Gateways {
                view: &mut self.view,
                fan_out: self.fan_out,
            };
            f(r, &mut gw);
        }
    }
}

impl HealthPolicy for HeartbeatTtl {
    fn join_fleet(&mut self, role: FleetRole) {
        match role {
            FleetRole::Owner => self.fan_out = true,
            FleetRole::Subscriber => {
                self.registry = None;
                self.view.subscribe();
            }
        }
    }

    fn on_start(&mut self, cx: &mut PolicyCx) {
        self.view.start(cx);
        if self.registry.is_some() {
            cx.start_heartbeats(self.plan);
        }
        self.registry(|r, gw| r.start(gw, cx));
    }

    fn is_routable(&self, _scope: Scope, node: NodeId, _now: Now) -> bool {
        self.view.is_routable(node)
    }

    fn interests(&self) -> Interests {
        Interests {
            selections: false,
            attempts: false,
            // The verdicts live in the gateway view, whose `apply` is the only
            // place they change, each time with its notice.
            routes_by_notices: true,
            ..Interests::DEFAULT
        }
    }

    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        if !self.view.on_timer(cx, timer) {
            self.registry(|r, gw| r.on_timer(gw, cx, timer));
        }
    }

    fn on_heartbeat(&mut self, cx: &mut PolicyCx, node: NodeId) {
        self.registry(|r, gw| r.on_beat(gw, cx, node));
    }

    fn on_restarted(&mut self, cx: &mut PolicyCx, node: NodeId) {
        self.registry(|r, gw| r.on_restart(gw, cx, node));
    }

    fn on_published(&mut self, cx: &mut PolicyCx, node: NodeId, routable: bool, at: SimTime) {
        self.view.publish_from(cx, node, routable, at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng;
    use crate::policy::support::gateway_view::next_poll;
    use crate::policy::testkit::{Harness, ms};
    use rand::RngExt;
    use serde_json::json;

    const A: NodeId = NodeId(0);

    /// The registry `json` describes, with `nodes` nodes, started at time zero.
    pub(super) fn started(json: serde_json::Value, nodes: usize) -> Harness<HeartbeatTtl> {
        let spec: HeartbeatTtlSpec = serde_json::from_value(json).unwrap();
        Harness::seeded(HeartbeatTtl::new(&spec, nodes), 3)
    }

    /// One replica's instance of the registry `json` describes, in a
    /// fleet, started at time zero drawing from `seed`'s policy stream.
    fn in_fleet(json: serde_json::Value, role: FleetRole, seed: u64) -> Harness<HeartbeatTtl> {
        let spec: HeartbeatTtlSpec = serde_json::from_value(json).unwrap();
        let mut p = HeartbeatTtl::new(&spec, 1);
        p.join_fleet(role);
        let mut h = Harness::part(p, seed);
        h.call(SimTime::ZERO, |p, cx| p.on_start(cx));
        h
    }

    /// The `k`-th draw in `0..period` of `seed`'s policy stream: a view's
    /// poller phase (drawn first, in layer order, by `GatewayView::start`).
    fn phase(seed: u64, k: usize, period: SimDuration) -> SimDuration {
        let mut r = rng::stream(seed, crate::policy::RNG_STREAM);
        let mut x = 0;
        for _ in 0..=k {
            x = r.random_range(0..period.as_micros());
        }
        SimDuration::from_micros(x)
    }

    #[test]
    fn the_owner_is_the_single_gateway_and_publishes_each_verdict() {
        let json = json!({"registry": "generic", "interval": "500ms", "ttl": "1.5s"});
        let mut single = started(json.clone(), 1);
        let mut owner = in_fleet(json, FleetRole::Owner, 3);
        assert_eq!(owner.heartbeat_plans(), single.heartbeat_plans());
        for h in [&mut single, &mut owner] {
            h.heartbeat(ms(400), A);
            h.advance_to(ms(3_000)); // expired at 0.4 + 1.5 s
            h.heartbeat(ms(3_500), A);
        }
        assert_eq!(owner.history(A), single.history(A));
        assert_eq!(
            owner.published(),
            &[
                (ms(1_900), A, false, ms(1_900)),
                (ms(3_500), A, true, ms(3_500))
            ]
        );
        assert!(single.published().is_empty(), "one gateway shares nothing");
    }

    #[test]
    fn a_subscriber_keeps_a_view_and_no_registry() {
        let json = json!({"registry": "generic", "interval": "500ms", "ttl": "1.5s"});
        let mut h = in_fleet(json, FleetRole::Subscriber, 3);
        assert!(h.heartbeat_plans().is_empty(), "no heartbeat threads");
        assert!(h.pending_timers().is_empty(), "no expiry timers");
        h.advance_to(ms(60_000));
        assert!(h.routable(A), "no registry of its own expires A");
        h.call(ms(60_000), |p, cx| p.on_published(cx, A, false, ms(60_000)));
        assert!(!h.routable(A), "blocking queries: at once");
        assert!(h.published().is_empty());
    }

    #[test]
    fn subscribers_see_a_verdict_at_their_own_poll() {
        // `refresh_interval`: each replica's copy refreshes at its own phase.
        let json = json!({"registry": "generic", "interval": "1s", "ttl": "3s",
                          "refresh_interval": "30s"});
        let (t, p) = (ms(100_000), SimDuration::from_secs(30));
        let mut seen = Vec::new();
        for seed in [5, 6, 7] {
            let mut h = in_fleet(json.clone(), FleetRole::Subscriber, seed);
            h.call(t, |p, cx| p.on_published(cx, A, false, t));
            assert!(h.routable(A), "not before its next refresh");
            h.advance_to(ms(140_000));
            let at = next_poll(t, phase(seed, 0, p), p);
            assert_eq!(h.history(A), vec![(at, true)], "seed {seed}");
            seen.push(at);
        }
        seen.dedup();
        assert_eq!(seen.len(), 3, "three phases, three times: {seen:?}");
    }

    #[test]
    fn eureka_replicas_share_the_servers_response_cache() {
        // `responseCacheUpdateIntervalMs` is the server's: one phase for the
        // fleet (the owner's first draw); each replica then has its own
        // client fetch and Ribbon refresh.
        let json = json!({"registry": "eureka", "self_preservation": false});
        let p = SimDuration::from_secs(30);
        let mut owner = in_fleet(json.clone(), FleetRole::Owner, 3);
        owner.advance_to(ms(300_000)); // no beats: the lease expires, evicted
        let &[(t, node, false, at)] = owner.published() else {
            panic!("{:?}", owner.published())
        };
        assert_eq!(node, A);
        assert_eq!(at, next_poll(t, phase(3, 0, p), p), "the response cache");
        let own = next_poll(next_poll(at, phase(3, 1, p), p), phase(3, 2, p), p);
        assert_eq!(owner.history(A), vec![(own, true)]);
        let mut sub = in_fleet(json, FleetRole::Subscriber, 8);
        sub.advance_to(t);
        sub.call(t, |h, cx| h.on_published(cx, A, false, at));
        sub.advance_to(at + SimDuration::from_secs(60));
        // The subscriber draws its own two phases first: fetch, Ribbon.
        let fetched = next_poll(at, phase(8, 0, p), p);
        assert_eq!(
            sub.history(A),
            vec![(next_poll(fetched, phase(8, 1, p), p), true)]
        );
    }
}
