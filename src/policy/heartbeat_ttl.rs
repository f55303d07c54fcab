//! Heartbeat / TTL registries (reference §5): every node beats from its own
//! thread (it keeps beating while its workers hang, stops when it crashes or
//! is stopped, and its beats are lost in a partition); the registry marks a
//! node unhealthy when its last beat is too old; the gateway learns of it
//! through the registry's clients and their caches.
//!
//! | `registry` | detection | to the gateway |
//! |---|---|---|
//! | `generic` (seed 004) | last beat older than `ttl`, at once or at `check_interval` scans | at once, or a `refresh_interval` cache |
//! | `consul` (TTL check) | a one-shot `ttl` timer restarted by each beat; starts `critical` | blocking queries: at once |
//! | `nacos1` (1.x ephemeral) | a scan every 5 s: unhealthy when the last beat is more than 15 s old | UDP push: at once |
//! | `eureka` | lease `renew` sets `last = now + 90 s` and expiry needs `now > last + 90 s` (the 2× bug); an eviction task every 60 s, capped at 15 % of the registry, off under self-preservation | response cache, client fetch and Ribbon, 30 s each |
//!
//! With `self_check`, a node beats only if a request through its own worker
//! pool answers 2xx in time (seed 004's advice): then a hang stops the beats.

use super::support::gateway_view::{GatewayView, Propagation};
use super::{
    HealthPolicy, HeartbeatPlan, Now, PolicyCx, PolicyParams, PolicyTimer, Scope,
    periodic_events_per_s,
};
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use rand::RngExt;
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

/// Beat only after a check through the node's worker pool.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelfCheckSpec {
    /// No 2xx answer within this: no beat this time.
    pub timeout: SimDuration,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GenericRegistryParams {
    /// Time between beats.
    pub interval: SimDuration,
    /// A node whose last beat is older than this is unhealthy.
    pub ttl: SimDuration,
    /// The registry scans every `check_interval` (random phase); omitted:
    /// an exact timer per node, as Consul's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_interval: Option<SimDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check: Option<SelfCheckSpec>,
    /// The gateway's copy of the registry refreshes this often; omitted: at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_interval: Option<SimDuration>,
}

/// A check's status when it is registered.
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InitialStatus {
    /// Consul's default: not served until the first beat.
    #[default]
    Critical,
    Passing,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsulParams {
    /// How often the service calls `PUT /v1/agent/check/pass/...`.
    pub interval: SimDuration,
    /// The check's `ttl`.
    pub ttl: SimDuration,
    /// The check's `status` at registration. Default `critical`.
    #[serde(default)]
    pub initial_status: InitialStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check: Option<SelfCheckSpec>,
    /// Omitted: blocking queries see changes at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_interval: Option<SimDuration>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Nacos1Params {
    /// `preserved.heart.beat.interval`. Default 5s.
    #[serde(default = "five_s")]
    pub heart_beat_interval: SimDuration,
    /// `preserved.heart.beat.timeout`: unhealthy when the last beat is older. Default 15s.
    #[serde(default = "fifteen_s")]
    pub heart_beat_timeout: SimDuration,
    /// `preserved.ip.delete.timeout`: the instance is deleted (a later beat
    /// re-registers it; routing is the same as unhealthy). Default 30s.
    #[serde(default = "thirty_s")]
    pub ip_delete_timeout: SimDuration,
    /// The server's beat-check task period (fixed delay). Default 5s.
    #[serde(default = "five_s")]
    pub check_interval: SimDuration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check: Option<SelfCheckSpec>,
    /// Omitted: UDP push reaches the client at once; with push off, the
    /// client polls (`cacheMillis`, 10 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_interval: Option<SimDuration>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EurekaParams {
    /// Client `leaseRenewalIntervalInSeconds`. Default 30s.
    #[serde(default = "thirty_s")]
    pub lease_renewal_interval: SimDuration,
    /// Client `leaseExpirationDurationInSeconds`. Default 90s.
    #[serde(default = "ninety_s")]
    pub lease_expiration_duration: SimDuration,
    /// Server `evictionIntervalTimerInMs`. Default 60s.
    #[serde(default = "sixty_s")]
    pub eviction_interval: SimDuration,
    /// Server `enableSelfPreservation`. Default true.
    #[serde(default = "yes")]
    pub self_preservation: bool,
    /// Server `renewalPercentThreshold`. Default 0.85.
    #[serde(default = "pct")]
    pub renewal_percent_threshold: f64,
    /// Server `expectedClientRenewalIntervalSeconds`. Default 30s.
    #[serde(default = "thirty_s")]
    pub expected_client_renewal_interval: SimDuration,
    /// Server `renewalThresholdUpdateIntervalMs`. Default 15m.
    #[serde(default = "fifteen_m")]
    pub renewal_threshold_update_interval: SimDuration,
    /// Server `responseCacheUpdateIntervalMs` (read-only cache). Default 30s.
    #[serde(default = "thirty_s")]
    pub response_cache_update_interval: SimDuration,
    /// Client `registryFetchIntervalSeconds`. Default 30s.
    #[serde(default = "thirty_s")]
    pub registry_fetch_interval: SimDuration,
    /// Ribbon `ServerListRefreshInterval`. Default 30s.
    #[serde(default = "thirty_s")]
    pub server_list_refresh_interval: SimDuration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check: Option<SelfCheckSpec>,
}

fn five_s() -> SimDuration {
    SimDuration::from_secs(5)
}
fn fifteen_s() -> SimDuration {
    SimDuration::from_secs(15)
}
fn thirty_s() -> SimDuration {
    SimDuration::from_secs(30)
}
fn sixty_s() -> SimDuration {
    SimDuration::from_secs(60)
}
fn ninety_s() -> SimDuration {
    SimDuration::from_secs(90)
}
fn fifteen_m() -> SimDuration {
    SimDuration::from_secs(900)
}
fn yes() -> bool {
    true
}
fn pct() -> f64 {
    0.85
}

fn positive(field: &str, d: SimDuration) -> Result<(), (String, String)> {
    if d.is_zero() {
        Err((field.into(), "must be positive".into()))
    } else {
        Ok(())
    }
}

/// `positive` for a setting that may be omitted.
fn positive_if_set(field: &str, d: Option<SimDuration>) -> Result<(), (String, String)> {
    d.map_or(Ok(()), |d| positive(field, d))
}

fn self_check_valid(s: &Option<SelfCheckSpec>) -> Result<(), (String, String)> {
    match s {
        Some(s) => positive("self_check.timeout", s.timeout),
        None => Ok(()),
    }
}

impl PolicyParams for HeartbeatTtlSpec {
    fn label(&self) -> String {
        match self {
            HeartbeatTtlSpec::Generic(p) => {
                format!("heartbeat interval={} ttl={}", p.interval, p.ttl)
            }
            HeartbeatTtlSpec::Consul(p) => format!("consul ttl={} interval={}", p.ttl, p.interval),
            HeartbeatTtlSpec::Nacos1(p) => format!(
                "nacos1 beat={} timeout={}",
                p.heart_beat_interval, p.heart_beat_timeout
            ),
            HeartbeatTtlSpec::Eureka(p) => format!(
                "eureka renew={} lease={}",
                p.lease_renewal_interval, p.lease_expiration_duration
            ),
        }
    }

    fn validate(&self) -> Result<(), (String, String)> {
        match self {
            HeartbeatTtlSpec::Generic(p) => {
                positive("interval", p.interval)?;
                positive("ttl", p.ttl)?;
                positive_if_set("check_interval", p.check_interval)?;
                positive_if_set("refresh_interval", p.refresh_interval)?;
                self_check_valid(&p.self_check)
            }
            HeartbeatTtlSpec::Consul(p) => {
                positive("interval", p.interval)?;
                positive("ttl", p.ttl)?;
                positive_if_set("refresh_interval", p.refresh_interval)?;
                self_check_valid(&p.self_check)
            }
            HeartbeatTtlSpec::Nacos1(p) => {
                positive("heart_beat_interval", p.heart_beat_interval)?;
                positive("heart_beat_timeout", p.heart_beat_timeout)?;
                positive("check_interval", p.check_interval)?;
                positive_if_set("refresh_interval", p.refresh_interval)?;
                self_check_valid(&p.self_check)
            }
            HeartbeatTtlSpec::Eureka(p) => {
                for (f, d) in [
                    ("lease_renewal_interval", p.lease_renewal_interval),
                    ("lease_expiration_duration", p.lease_expiration_duration),
                    ("eviction_interval", p.eviction_interval),
                    (
                        "expected_client_renewal_interval",
                        p.expected_client_renewal_interval,
                    ),
                    (
                        "renewal_threshold_update_interval",
                        p.renewal_threshold_update_interval,
                    ),
                    (
                        "response_cache_update_interval",
                        p.response_cache_update_interval,
                    ),
                    ("registry_fetch_interval", p.registry_fetch_interval),
                    (
                        "server_list_refresh_interval",
                        p.server_list_refresh_interval,
                    ),
                ] {
                    positive(f, d)?;
                }
                if !(0.0..=1.0).contains(&p.renewal_percent_threshold) {
                    return Err((
                        "renewal_percent_threshold".into(),
                        format!("must be in [0, 1], found {}", p.renewal_percent_threshold),
                    ));
                }
                self_check_valid(&p.self_check)
            }
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

const TAG_VIEW: u32 = 1;
const TAG_EXPIRE: u32 = 2;
const TAG_SCAN: u32 = 3;
const TAG_RATE: u32 = 4;
const TAG_THRESHOLD: u32 = 5;

/// One registry's bookkeeping; it publishes health changes to the view.
trait Registry: Send {
    fn start(&mut self, view: &mut GatewayView, cx: &mut PolicyCx);
    fn on_beat(&mut self, view: &mut GatewayView, cx: &mut PolicyCx, node: NodeId);
    fn on_timer(&mut self, view: &mut GatewayView, cx: &mut PolicyCx, timer: PolicyTimer);
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
        let (interval, self_check, initially, propagation, registry): (
            _,
            _,
            _,
            _,
            Box<dyn Registry>,
        ) = match spec {
            HeartbeatTtlSpec::Generic(p) => (
                p.interval,
                p.self_check,
                true,
                refresh(p.refresh_interval),
                Box::new(TtlRegistry {
                    ttl: p.ttl,
                    scan: p.check_interval,
                    last: vec![Some(SimTime::ZERO); nodes],
                    healthy: vec![true; nodes],
                    generation: vec![0; nodes],
                }),
            ),
            HeartbeatTtlSpec::Consul(p) => {
                let passing = p.initial_status == InitialStatus::Passing;
                (
                    p.interval,
                    p.self_check,
                    passing,
                    refresh(p.refresh_interval),
                    Box::new(TtlRegistry {
                        ttl: p.ttl,
                        scan: None,
                        last: vec![passing.then_some(SimTime::ZERO); nodes],
                        healthy: vec![passing; nodes],
                        generation: vec![0; nodes],
                    }),
                )
            }
            HeartbeatTtlSpec::Nacos1(p) => (
                p.heart_beat_interval,
                p.self_check,
                true,
                refresh(p.refresh_interval),
                Box::new(TtlRegistry {
                    ttl: p.heart_beat_timeout,
                    scan: Some(p.check_interval),
                    last: vec![Some(SimTime::ZERO); nodes],
                    healthy: vec![true; nodes],
                    generation: vec![0; nodes],
                }),
            ),
            HeartbeatTtlSpec::Eureka(p) => (
                p.lease_renewal_interval,
                p.self_check,
                true,
                Propagation::Pollers(vec![
                    p.response_cache_update_interval,
                    p.registry_fetch_interval,
                    p.server_list_refresh_interval,
                ]),
                Box::new(Eureka::new(p, nodes)),
            ),
        };
        HeartbeatTtl {
            plan: HeartbeatPlan {
                interval,
                self_check: self_check.map(|s| s.timeout),
            },
            view: GatewayView::new(nodes, initially, propagation, TAG_VIEW),
            registry,
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
}

/// Last-beat bookkeeping: an exact expiry timer per node (Consul), or
/// periodic scans that mark nodes whose last beat is older than `ttl`
/// (Nacos 1.x, or a hand-written registry).
struct TtlRegistry {
    ttl: SimDuration,
    scan: Option<SimDuration>,
    /// `None`: never beat (a Consul check registered critical).
    last: Vec<Option<SimTime>>,
    healthy: Vec<bool>,
    generation: Vec<u32>,
}

impl TtlRegistry {
    fn arm_expiry(&mut self, cx: &mut PolicyCx, i: usize, at: SimTime) {
        self.generation[i] = self.generation[i].wrapping_add(1);
        cx.at(
            at,
            PolicyTimer {
                tag: TAG_EXPIRE,
                node: i as u32,
                generation: self.generation[i],
            },
        );
    }
}

impl Registry for TtlRegistry {
    fn start(&mut self, _view: &mut GatewayView, cx: &mut PolicyCx) {
        match self.scan {
            Some(period) => {
                let phase = cx.rng().random_range(0..period.as_micros());
                let at = cx.now().t + SimDuration::from_micros(phase);
                cx.at(
                    at,
                    PolicyTimer {
                        tag: TAG_SCAN,
                        node: 0,
                        generation: 0,
                    },
                );
            }
            None => {
                for i in 0..self.last.len() {
                    if let Some(l) = self.last[i] {
                        self.arm_expiry(cx, i, l + self.ttl);
                    }
                }
            }
        }
    }

    fn on_beat(&mut self, view: &mut GatewayView, cx: &mut PolicyCx, node: NodeId) {
        let i = node.index();
        let now = cx.now().t;
        self.last[i] = Some(now);
        if self.scan.is_none() {
            self.arm_expiry(cx, i, now + self.ttl);
        }
        if !self.healthy[i] {
            self.healthy[i] = true;
            view.publish(cx, node, true);
        }
    }

    fn on_timer(&mut self, view: &mut GatewayView, cx: &mut PolicyCx, timer: PolicyTimer) {
        let now = cx.now().t;
        match timer.tag {
            TAG_EXPIRE => {
                let i = timer.node as usize;
                if timer.generation == self.generation[i] && self.healthy[i] {
                    self.healthy[i] = false;
                    view.publish(cx, NodeId(timer.node), false);
                }
            }
            TAG_SCAN => {
                for i in 0..self.last.len() {
                    let stale = self.last[i].is_none_or(|l| now.saturating_since(l) > self.ttl);
                    if stale && self.healthy[i] {
                        self.healthy[i] = false;
                        view.publish(cx, NodeId(i as u32), false);
                    }
                }
                if let Some(period) = self.scan {
                    cx.at(now + period, timer);
                }
            }
            _ => {}
        }
    }
}

/// Eureka's registry (`AbstractInstanceRegistry`, `Lease`,
/// `PeerAwareInstanceRegistryImpl`): leases, the eviction task and
/// self-preservation. Every instance registered at time zero; the server had
/// been running in a steady state before (its last-minute renewal count is
/// warm).
struct Eureka {
    p: EurekaParams,
    registered: Vec<bool>,
    /// `Lease.lastUpdateTimestamp`.
    last_update: Vec<SimTime>,
    expected_clients: u64,
    threshold: u64,
    renews_this_min: u64,
    renews_last_min: u64,
}

impl Eureka {
    fn new(p: &EurekaParams, nodes: usize) -> Self {
        let mut e = Eureka {
            p: p.clone(),
            registered: vec![true; nodes],
            last_update: vec![SimTime::ZERO; nodes],
            expected_clients: nodes as u64,
            threshold: 0,
            renews_this_min: 0,
            renews_last_min: 0,
        };
        e.update_threshold();
        e.renews_last_min = e.renewals_per_min(nodes as u64);
        e
    }

    fn renewals_per_min(&self, clients: u64) -> u64 {
        let per_client = 60.0 / self.p.lease_renewal_interval.as_secs_f64();
        (clients as f64 * per_client) as u64
    }

    /// `updateRenewsPerMinThreshold`: `(int)(expected × 60 / interval × percent)`.
    fn update_threshold(&mut self) {
        let per_min = 60.0 / self.p.expected_client_renewal_interval.as_secs_f64();
        self.threshold =
            (self.expected_clients as f64 * per_min * self.p.renewal_percent_threshold) as u64;
    }

    /// `isLeaseExpirationEnabled`.
    fn expiration_enabled(&self) -> bool {
        !self.p.self_preservation || (self.threshold > 0 && self.renews_last_min > self.threshold)
    }

    /// `Lease.isExpired(0)`: `now > lastUpdate + duration`.
    fn expired(&self, i: usize, now: SimTime) -> bool {
        now > self.last_update[i] + self.p.lease_expiration_duration
    }

    fn arm(cx: &mut PolicyCx, tag: u32, at: SimTime) {
        cx.at(
            at,
            PolicyTimer {
                tag,
                node: 0,
                generation: 0,
            },
        );
    }

    /// `evict()`: expired leases, at most `size − (int)(size × percent)` per
    /// run, chosen by a partial Fisher–Yates shuffle.
    fn evict(&mut self, view: &mut GatewayView, cx: &mut PolicyCx) {
        if !self.expiration_enabled() {
            return;
        }
        let now = cx.now().t;
        let mut expired: Vec<usize> = (0..self.registered.len())
            .filter(|&i| self.registered[i] && self.expired(i, now))
            .collect();
        let size = self.registered.iter().filter(|&&r| r).count() as u64;
        let limit = size - (size as f64 * self.p.renewal_percent_threshold) as u64;
        let to_evict = (expired.len() as u64).min(limit) as usize;
        for k in 0..to_evict {
            let j = k + cx.rng().random_range(0..expired.len() - k);
            expired.swap(k, j);
            let i = expired[k];
            self.registered[i] = false;
            if self.expected_clients > 0 {
                self.expected_clients -= 1;
                self.update_threshold();
            }
            view.publish(cx, NodeId(i as u32), false);
        }
    }
}

impl Registry for Eureka {
    fn start(&mut self, _view: &mut GatewayView, cx: &mut PolicyCx) {
        // The server started an unknown time before the run: the timers'
        // phase is random. MeasuredRate and the eviction task share it.
        let phase = SimDuration::from_micros(
            cx.rng()
                .random_range(0..self.p.eviction_interval.as_micros()),
        );
        let now = cx.now().t;
        let minute = SimDuration::from_secs(60);
        let phase_rate = phase.min(minute);
        // Steady state before the run: the bucket that closes at the first
        // swap already holds the renewals of its part of the minute before zero.
        let before = (minute - phase_rate).as_secs_f64() / 60.0;
        self.renews_this_min =
            (self.renewals_per_min(self.expected_clients) as f64 * before) as u64;
        Self::arm(cx, TAG_RATE, now + phase_rate);
        Self::arm(cx, TAG_SCAN, now + phase);
        let t = cx
            .rng()
            .random_range(0..self.p.renewal_threshold_update_interval.as_micros());
        Self::arm(cx, TAG_THRESHOLD, now + SimDuration::from_micros(t));
    }

    fn on_beat(&mut self, view: &mut GatewayView, cx: &mut PolicyCx, node: NodeId) {
        let i = node.index();
        let now = cx.now().t;
        if self.registered[i] {
            // renew(): the lease's deadline moves one extra duration ahead.
            self.renews_this_min += 1;
            self.last_update[i] = now + self.p.lease_expiration_duration;
        } else {
            // The renewal answers 404 and the client registers again.
            self.registered[i] = true;
            self.last_update[i] = now;
            self.expected_clients += 1;
            self.update_threshold();
            view.publish(cx, node, true);
        }
    }

    fn on_timer(&mut self, view: &mut GatewayView, cx: &mut PolicyCx, timer: PolicyTimer) {
        let now = cx.now().t;
        match timer.tag {
            TAG_RATE => {
                self.renews_last_min = self.renews_this_min;
                self.renews_this_min = 0;
                Self::arm(cx, TAG_RATE, now + SimDuration::from_secs(60));
            }
            TAG_SCAN => {
                self.evict(view, cx);
                Self::arm(cx, TAG_SCAN, now + self.p.eviction_interval);
            }
            TAG_THRESHOLD => {
                let count = self.registered.iter().filter(|&&r| r).count() as u64;
                if !self.p.self_preservation
                    || count as f64
                        > self.p.renewal_percent_threshold * self.expected_clients as f64
                {
                    self.expected_clients = count;
                    self.update_threshold();
                }
                Self::arm(
                    cx,
                    TAG_THRESHOLD,
                    now + self.p.renewal_threshold_update_interval,
                );
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testkit::{Harness, ms};

    const A: NodeId = NodeId(0);
    const B: NodeId = NodeId(1);

    fn spec(json: serde_json::Value) -> HeartbeatTtlSpec {
        serde_json::from_value(json).unwrap()
    }

    fn harness(json: serde_json::Value, nodes: usize) -> Harness<HeartbeatTtl> {
        Harness::seeded(HeartbeatTtl::new(&spec(json), nodes), 3)
    }

    #[test]
    fn generic_exact_ttl_ejects_a_silent_node_and_a_beat_readmits_it() {
        let mut h = harness(
            serde_json::json!({"registry": "generic", "interval": "500ms", "ttl": "1.5s"}),
            2,
        );
        assert_eq!(
            h.heartbeat_plans()[0].interval,
            SimDuration::from_millis(500)
        );
        assert_eq!(h.heartbeat_plans()[0].self_check, None);
        for t in [400, 900, 1400] {
            h.heartbeat(ms(t), A);
            h.heartbeat(ms(t), B);
        }
        h.heartbeat(ms(1900), B); // A falls silent after 1.4 s
        h.advance_to(ms(2899));
        assert!(h.routable(A), "1.499 s since the last beat");
        h.advance_to(ms(2900));
        assert!(!h.routable(A), "ttl expired at 1.4 + 1.5 s");
        assert!(h.routable(B), "B's last beat was at 1.9 s");
        h.advance_to(ms(3400));
        assert!(!h.routable(B));
    }

    #[test]
    fn scans_find_stale_nodes_at_their_own_cadence() {
        let mut h = harness(
            serde_json::json!({"registry": "generic", "interval": "1s", "ttl": "3s", "check_interval": "1s"}),
            1,
        );
        h.heartbeat(ms(500), A);
        h.advance_to(ms(3_500));
        assert!(h.routable(A), "age 3 s is not older than 3 s");
        h.advance_to(ms(4_600));
        assert!(!h.routable(A), "the first scan after 3.5 s");
        let ejected_at = h.now();
        assert!(ejected_at > ms(3_500));
    }

    #[test]
    fn consul_checks_start_critical() {
        let mut h = harness(
            serde_json::json!({"registry": "consul", "interval": "10s", "ttl": "30s"}),
            1,
        );
        assert!(!h.routable(A));
        h.heartbeat(ms(7_000), A);
        assert!(h.routable(A));
        h.advance_to(ms(36_999));
        assert!(h.routable(A));
        h.advance_to(ms(37_000));
        assert!(!h.routable(A), "critical exactly ttl after the update");
    }

    #[test]
    fn nacos1_marks_unhealthy_15_to_20_s_after_the_last_beat() {
        let mut h = harness(serde_json::json!({"registry": "nacos1"}), 1);
        assert_eq!(h.heartbeat_plans()[0].interval, SimDuration::from_secs(5));
        h.heartbeat(ms(2_000), A);
        let mut ejected = None;
        for t in (2_000..40_000).step_by(100) {
            h.advance_to(ms(t));
            if ejected.is_none() && !h.routable(A) {
                ejected = Some(t);
            }
        }
        let e = ejected.expect("ejected") as f64 / 1000.0 - 2.0;
        assert!(e > 15.0 && e <= 20.1, "{e}");
    }

    #[test]
    fn eureka_lease_expires_after_twice_the_duration() {
        let mut h = harness(
            serde_json::json!({"registry": "eureka", "self_preservation": false,
                               "response_cache_update_interval": "1us",
                               "registry_fetch_interval": "1us",
                               "server_list_refresh_interval": "1us"}),
            1,
        );
        h.heartbeat(ms(25_000), A); // renew(): last = 25 + 90 s
        let mut seen = None;
        for t in (25_000..400_000).step_by(500) {
            h.advance_to(ms(t));
            if seen.is_none() && !h.routable(A) {
                seen = Some(t);
            }
        }
        let t = seen.expect("evicted") as f64 / 1000.0;
        assert!(
            t > 205.0 && t <= 265.5,
            "expired 2 × 90 s after the renewal, evicted by the next run: {t}"
        );
    }

    #[test]
    fn eureka_self_preservation_keeps_dead_instances_in_small_registries() {
        // 3 instances: threshold (int)(3 × 2 × 0.85) = 5; with one dead the
        // others renew 4 times a minute, not more than 5: nothing is evicted.
        let mut h = harness(serde_json::json!({"registry": "eureka"}), 3);
        for k in 0..20u64 {
            let t = 10_000 + k * 30_000;
            h.heartbeat(ms(t), A);
            h.heartbeat(ms(t), B);
            h.advance_to(ms(t));
        }
        assert!(h.routable(NodeId(2)), "never evicted");
    }

    #[test]
    fn self_check_is_passed_to_the_engine() {
        let h = harness(
            serde_json::json!({"registry": "generic", "interval": "1s", "ttl": "3s",
                               "self_check": {"timeout": "300ms"}}),
            1,
        );
        assert_eq!(
            h.heartbeat_plans()[0].self_check,
            Some(SimDuration::from_millis(300))
        );
    }
}
