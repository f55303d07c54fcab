//! Eureka: the server's leases, eviction task and self-preservation, and the
//! three 30 s caches (the server's response cache, the client's fetch,
//! Ribbon's server list) between a change and the gateway.

use super::{
    Gateways, Registry, SelfCheckSpec, Setup, TAG_RATE, TAG_SCAN, TAG_THRESHOLD, positive,
    self_check_valid,
};
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::policy::support::gateway_view::Propagation;
use crate::policy::{PolicyCx, PolicyTimer};
use rand::RngExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

impl EurekaParams {
    pub(super) fn label(&self) -> String {
        format!(
            "eureka renew={} lease={}",
            self.lease_renewal_interval, self.lease_expiration_duration
        )
    }

    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        for (f, d) in [
            ("lease_renewal_interval", self.lease_renewal_interval),
            ("lease_expiration_duration", self.lease_expiration_duration),
            ("eviction_interval", self.eviction_interval),
            (
                "expected_client_renewal_interval",
                self.expected_client_renewal_interval,
            ),
            (
                "renewal_threshold_update_interval",
                self.renewal_threshold_update_interval,
            ),
            (
                "response_cache_update_interval",
                self.response_cache_update_interval,
            ),
            ("registry_fetch_interval", self.registry_fetch_interval),
            (
                "server_list_refresh_interval",
                self.server_list_refresh_interval,
            ),
        ] {
            positive(f, d)?;
        }
        if !(0.0..=1.0).contains(&self.renewal_percent_threshold) {
            return Err((
                "renewal_percent_threshold".into(),
                format!(
                    "must be in [0, 1], found {}",
                    self.renewal_percent_threshold
                ),
            ));
        }
        self_check_valid(&self.self_check)
    }

    pub(super) fn setup(&self, nodes: usize) -> Setup {
        Setup {
            interval: self.lease_renewal_interval,
            self_check: self.self_check,
            initially: true,
            propagation: Propagation::Pollers(vec![
                self.response_cache_update_interval,
                self.registry_fetch_interval,
                self.server_list_refresh_interval,
            ]),
            // The response cache is the server's; the fetch and Ribbon's
            // list are each gateway's.
            server_layers: 1,
            registry: Box::new(Eureka::new(self, nodes)),
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
    fn evict(&mut self, gw: &mut Gateways, cx: &mut PolicyCx) {
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
            gw.publish(cx, NodeId(i as u32), false);
        }
    }
}

impl Registry for Eureka {
    fn start(&mut self, _gw: &mut Gateways, cx: &mut PolicyCx) {
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

    fn on_beat(&mut self, gw: &mut Gateways, cx: &mut PolicyCx, node: NodeId) {
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
            gw.publish(cx, node, true);
        }
    }

    fn on_timer(&mut self, gw: &mut Gateways, cx: &mut PolicyCx, timer: PolicyTimer) {
        let now = cx.now().t;
        match timer.tag {
            TAG_RATE => {
                self.renews_last_min = self.renews_this_min;
                self.renews_this_min = 0;
                Self::arm(cx, TAG_RATE, now + SimDuration::from_secs(60));
            }
            TAG_SCAN => {
                self.evict(gw, cx);
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
    use super::super::tests::started;
    use crate::ids::NodeId;
    use crate::policy::testkit::ms;

    const A: NodeId = NodeId(0);
    const B: NodeId = NodeId(1);

    #[test]
    fn eureka_lease_expires_after_twice_the_duration() {
        let mut h = started(
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
        let mut h = started(serde_json::json!({"registry": "eureka"}), 3);
        for k in 0..20u64 {
            let t = 10_000 + k * 30_000;
            h.heartbeat(ms(t), A);
            h.heartbeat(ms(t), B);
            h.advance_to(ms(t));
        }
        assert!(h.routable(NodeId(2)), "never evicted");
    }
}
