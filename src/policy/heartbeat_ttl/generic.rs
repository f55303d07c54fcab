//! A hand-written registry (seed 004): nodes whose last beat is older than
//! `ttl` are dropped, by an exact timer per node or by periodic scans, and
//! the gateway sees the change at once or through a refreshed copy. The
//! same bookkeeping ([`TtlRegistry`]) serves Consul and Nacos 1.x.

use super::{
    Gateways, Registry, SelfCheckSpec, Setup, TAG_EXPIRE, TAG_SCAN, positive, positive_if_set,
    refresh, self_check_valid,
};
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::policy::{PolicyCx, PolicyTimer};
use rand::RngExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

impl GenericRegistryParams {
    pub(super) fn label(&self) -> String {
        format!("heartbeat interval={} ttl={}", self.interval, self.ttl)
    }

    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        positive("interval", self.interval)?;
        positive("ttl", self.ttl)?;
        positive_if_set("check_interval", self.check_interval)?;
        positive_if_set("refresh_interval", self.refresh_interval)?;
        self_check_valid(&self.self_check)
    }

    pub(super) fn setup(&self, nodes: usize) -> Setup {
        Setup {
            interval: self.interval,
            self_check: self.self_check,
            initially: true,
            propagation: refresh(self.refresh_interval),
            server_layers: 0,
            registry: Box::new(TtlRegistry::new(self.ttl, self.check_interval, true, nodes)),
        }
    }
}

/// Last-beat bookkeeping: an exact expiry timer per node (Consul), or
/// periodic scans that mark nodes whose last beat is older than `ttl`
/// (Nacos 1.x, or a hand-written registry).
pub(super) struct TtlRegistry {
    ttl: SimDuration,
    scan: Option<SimDuration>,
    /// `None`: never beat (a Consul check registered critical).
    last: Vec<Option<SimTime>>,
    healthy: Vec<bool>,
    generation: Vec<u32>,
}

impl TtlRegistry {
    /// Every node registered at time zero, `passing` (beat at zero) or not
    /// (never beat); `scan`: the scan period, `None` for exact timers.
    pub(super) fn new(
        ttl: SimDuration,
        scan: Option<SimDuration>,
        passing: bool,
        nodes: usize,
    ) -> Self {
        TtlRegistry {
            ttl,
            scan,
            last: vec![passing.then_some(SimTime::ZERO); nodes],
            healthy: vec![passing; nodes],
            generation: vec![0; nodes],
        }
    }

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
    fn start(&mut self, _gw: &mut Gateways, cx: &mut PolicyCx) {
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

    fn on_beat(&mut self, gw: &mut Gateways, cx: &mut PolicyCx, node: NodeId) {
        let i = node.index();
        let now = cx.now().t;
        self.last[i] = Some(now);
        if self.scan.is_none() {
            self.arm_expiry(cx, i, now + self.ttl);
        }
        if !self.healthy[i] {
            self.healthy[i] = true;
            gw.publish(cx, node, true);
        }
    }

    fn on_timer(&mut self, gw: &mut Gateways, cx: &mut PolicyCx, timer: PolicyTimer) {
        let now = cx.now().t;
        match timer.tag {
            TAG_EXPIRE => {
                let i = timer.node as usize;
                if timer.generation == self.generation[i] && self.healthy[i] {
                    self.healthy[i] = false;
                    gw.publish(cx, NodeId(timer.node), false);
                }
            }
            TAG_SCAN => {
                for i in 0..self.last.len() {
                    let stale = self.last[i].is_none_or(|l| now.saturating_since(l) > self.ttl);
                    if stale && self.healthy[i] {
                        self.healthy[i] = false;
                        gw.publish(cx, NodeId(i as u32), false);
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

#[cfg(test)]
mod tests {
    use super::super::tests::started;
    use crate::engine::SimDuration;
    use crate::ids::NodeId;
    use crate::policy::testkit::ms;

    const A: NodeId = NodeId(0);
    const B: NodeId = NodeId(1);

    #[test]
    fn generic_exact_ttl_ejects_a_silent_node_and_a_beat_readmits_it() {
        let mut h = started(
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
        let mut h = started(
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
    fn self_check_is_passed_to_the_engine() {
        let h = started(
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
