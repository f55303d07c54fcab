//! A Consul service with a TTL check: each beat (`PUT
//! /v1/agent/check/pass/...`) restarts a one-shot `ttl` timer; the check
//! starts `critical` unless registered `passing`; blocking queries show the
//! change to the gateway at once.
//!
//! `deregister_critical_service_after` (agent `reapServices`: a pass every
//! `check_reap_interval`, 30 s, from the agent's start; `reapServicesInternal`
//! removes a service whose check has been critical *longer* than the
//! timeout, raised to `check_deregister_interval_min`, 1 m): once removed,
//! the check is gone too and a beat fails (404, "CheckID does not have
//! associated TTL") until the service registers again. When that happens is
//! the client's choice; Spring Cloud Consul's `TtlScheduler`:
//! `reregister: on_restart` (its default, `heartbeat.reregister-service-on-failure`
//! false): only a restarted process registers again (at start-up);
//! `on_failed_heartbeat` (true): the first failed beat re-registers the service
//! (`possiblyReregisterIfFails` → `agentServiceRegister`), its new check
//! `initial_status` until the next beat passes it.

use super::{
    Gateways, NodeId, Registry, SelfCheckSpec, Setup, TAG_EXPIRE, TAG_REAP, positive,
    positive_if_set, refresh, self_check_valid,
};
use crate::engine::{SimDuration, SimTime};
use crate::policy::{PolicyCx, PolicyTimer};
use rand::RngExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A check's status when it is registered.
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InitialStatus {
    /// Consul's default: not served until the first beat.
    #[default]
    Critical,
    Passing,
}

/// When a deregistered service registers again (Spring Cloud Consul).
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reregister {
    /// When its process starts again after a crash
    /// (`reregister-service-on-failure: false`, the default).
    #[default]
    OnRestart,
    /// At the first heartbeat the agent refuses
    /// (`reregister-service-on-failure: true`); also at a restart.
    OnFailedHeartbeat,
}

/// `check_reap_interval`: not configurable.
const REAP_INTERVAL: SimDuration = SimDuration::from_secs(30);
/// `check_deregister_interval_min`.
const DEREGISTER_MIN: SimDuration = SimDuration::from_secs(60);

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
    /// The check's `deregister_critical_service_after`: the service is
    /// removed at the first reap (every 30 s) after its check has been
    /// critical longer than this (at least 1m, as Consul raises it).
    /// Omitted: never removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deregister_critical_service_after: Option<SimDuration>,
    /// When a removed service registers again. Default `on_restart`.
    #[serde(default)]
    pub reregister: Reregister,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check: Option<SelfCheckSpec>,
    /// Omitted: blocking queries see changes at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_interval: Option<SimDuration>,
}

impl ConsulParams {
    pub(super) fn label(&self) -> String {
        format!("consul ttl={} interval={}", self.ttl, self.interval)
    }

    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        positive("interval", self.interval)?;
        positive("ttl", self.ttl)?;
        positive_if_set(
            "deregister_critical_service_after",
            self.deregister_critical_service_after,
        )?;
        positive_if_set("refresh_interval", self.refresh_interval)?;
        self_check_valid(&self.self_check)
    }

    pub(super) fn warnings(&self) -> Vec<(String, String)> {
        match self.deregister_critical_service_after {
            Some(d) if d < DEREGISTER_MIN => vec![(
                "deregister_critical_service_after".into(),
                format!("below Consul's minimum of 1m: the agent uses 1m (not {d})"),
            )],
            _ => vec![],
        }
    }

    pub(super) fn setup(&self, nodes: usize) -> Setup {
        let passing = self.initial_status == InitialStatus::Passing;
        Setup {
            interval: self.interval,
            self_check: self.self_check,
            initially: passing,
            propagation: refresh(self.refresh_interval),
            server_layers: 0,
            registry: Box::new(ConsulAgent::new(self, nodes)),
        }
    }
}

/// The local agents' view of every node's service and TTL check.
struct ConsulAgent {
    ttl: SimDuration,
    passing_at_registration: bool,
    deregister_after: Option<SimDuration>,
    reregister: Reregister,
    /// The service (and its check) is registered.
    registered: Vec<bool>,
    /// Since when the check is critical (`CriticalTime`); `None`: passing.
    critical_since: Vec<Option<SimTime>>,
    generation: Vec<u32>,
}

impl ConsulAgent {
    fn new(p: &ConsulParams, nodes: usize) -> Self {
        let passing = p.initial_status == InitialStatus::Passing;
        ConsulAgent {
            ttl: p.ttl,
            passing_at_registration: passing,
            deregister_after: p
                .deregister_critical_service_after
                .map(|d| d.max(DEREGISTER_MIN)),
            reregister: p.reregister,
            registered: vec![true; nodes],
            critical_since: vec![(!passing).then_some(SimTime::ZERO); nodes],
            generation: vec![0; nodes],
        }
    }

    /// `CheckTTL.SetStatus` restarts the one-shot timer.
    fn arm_expiry(&mut self, cx: &mut PolicyCx, i: usize) {
        self.generation[i] = self.generation[i].wrapping_add(1);
        let timer = PolicyTimer {
            tag: TAG_EXPIRE,
            node: i as u32,
            generation: self.generation[i],
        };
        cx.at(cx.now().t + self.ttl, timer);
    }

    /// The service registers again, its new check `initial_status`.
    fn register(&mut self, gw: &mut Gateways, cx: &mut PolicyCx, node: NodeId) {
        let i = node.index();
        self.registered[i] = true;
        self.generation[i] = self.generation[i].wrapping_add(1);
        if self.passing_at_registration {
            self.critical_since[i] = None;
            self.arm_expiry(cx, i);
            gw.publish(cx, node, true);
        } else {
            self.critical_since[i] = Some(cx.now().t);
        }
    }
}

impl Registry for ConsulAgent {
    fn start(&mut self, _gw: &mut Gateways, cx: &mut PolicyCx) {
        for i in 0..self.registered.len() {
            if self.critical_since[i].is_none() {
                self.arm_expiry(cx, i);
            }
        }
        if self.deregister_after.is_some() {
            // The agent started before the run: its reaper's phase is random.
            let phase = cx.rng().random_range(0..REAP_INTERVAL.as_micros());
            let timer = PolicyTimer {
                tag: TAG_REAP,
                node: 0,
                generation: 0,
            };
            cx.at(cx.now().t + SimDuration::from_micros(phase), timer);
        }
    }

    fn on_beat(&mut self, gw: &mut Gateways, cx: &mut PolicyCx, node: NodeId) {
        let i = node.index();
        if !self.registered[i] {
            // The agent answers 404: no such check.
            if self.reregister == Reregister::OnFailedHeartbeat {
                self.register(gw, cx, node);
            }
            return;
        }
        self.arm_expiry(cx, i);
        if self.critical_since[i].take().is_some() {
            gw.publish(cx, node, true);
        }
    }

    fn on_timer(&mut self, gw: &mut Gateways, cx: &mut PolicyCx, timer: PolicyTimer) {
        let now = cx.now().t;
        match timer.tag {
            TAG_EXPIRE => {
                let i = timer.node as usize;
                if timer.generation == self.generation[i]
                    && self.registered[i]
                    && self.critical_since[i].is_none()
                {
                    self.critical_since[i] = Some(now);
                    gw.publish(cx, NodeId(timer.node), false);
                }
            }
            TAG_REAP => {
                // `reapServicesInternal`: `cs.CriticalFor() > timeout`.
                let after = self.deregister_after.unwrap_or(SimDuration::MAX);
                for i in 0..self.registered.len() {
                    if self.registered[i]
                        && self.critical_since[i].is_some_and(|c| now.saturating_since(c) > after)
                    {
                        self.registered[i] = false;
                        self.critical_since[i] = None;
                        self.generation[i] = self.generation[i].wrapping_add(1);
                    }
                }
                cx.at(now + REAP_INTERVAL, timer);
            }
            _ => {}
        }
    }

    fn on_restart(&mut self, gw: &mut Gateways, cx: &mut PolicyCx, node: NodeId) {
        if !self.registered[node.index()] {
            self.register(gw, cx, node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::started;
    use super::super::{HeartbeatTtl, HeartbeatTtlSpec};
    use crate::engine::{SimDuration, SimTime};
    use crate::ids::NodeId;
    use crate::policy::testkit::{Harness, ms};
    use crate::policy::{HealthPolicy, PolicyParams};

    const A: NodeId = NodeId(0);

    #[test]
    fn consul_checks_start_critical() {
        let mut h = started(
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

    /// Beats every 10 s until 7 s, then silence: critical at 37 s.
    fn silent_after_7s(json: serde_json::Value) -> (Harness<HeartbeatTtl>, SimTime) {
        let mut h = started(json, 1);
        h.heartbeat(ms(7_000), A);
        h.advance_to(ms(37_000));
        assert!(!h.routable(A));
        // The reaper's first pass is at a random phase in [0, 30) s.
        let reap = h
            .pending_timers()
            .into_iter()
            .find(|(_, t)| t.tag == super::super::TAG_REAP)
            .map(|(at, _)| at)
            .expect("a reaper");
        (h, reap)
    }

    #[test]
    fn a_service_critical_too_long_is_deregistered_and_beats_fail() {
        // `reapServicesInternal`: removed at the first pass (every 30 s) with
        // `CriticalFor() > deregister_critical_service_after`.
        let json = serde_json::json!({"registry": "consul", "interval": "10s", "ttl": "30s",
                                      "deregister_critical_service_after": "1m"});
        let (mut h, _) = silent_after_7s(json);
        // Critical from 37 s: removed at the first pass after 97 s.
        h.advance_to(ms(97_000));
        h.heartbeat(ms(97_000), A);
        assert!(h.routable(A), "not removed yet: the beat passes the check");
        // Silent again from 97 s: critical at 127 s, removed at the first
        // reap after 187 s, i.e. by 217 s.
        h.advance_to(ms(217_001));
        h.heartbeat(ms(217_001), A);
        assert!(!h.routable(A), "the check is gone: the beat fails (404)");
        h.heartbeat(ms(227_001), A);
        assert!(!h.routable(A), "and so do later ones, until it registers");
        // A restart registers the service again, its check critical; the
        // next beat passes it.
        h.call(ms(230_000), |p, cx| p.on_restarted(cx, A));
        assert!(!h.routable(A));
        h.heartbeat(ms(231_000), A);
        assert!(h.routable(A));
    }

    #[test]
    fn a_failed_heartbeat_reregisters_with_spring_cloud_consuls_switch() {
        // `TtlScheduler.possiblyReregisterIfFails`: the refused pass calls
        // `agentServiceRegister`; the new check is critical until the next pass.
        let json = serde_json::json!({"registry": "consul", "interval": "10s", "ttl": "30s",
                                      "deregister_critical_service_after": "1m",
                                      "reregister": "on_failed_heartbeat"});
        let (mut h, _) = silent_after_7s(json);
        h.advance_to(ms(130_000)); // removed by 127 s at the latest
        h.heartbeat(ms(130_000), A);
        assert!(!h.routable(A), "the failed beat only re-registers");
        h.heartbeat(ms(140_000), A);
        assert!(h.routable(A), "the next beat passes the new check");
    }

    #[test]
    fn removal_waits_for_a_reap_and_at_least_a_minute() {
        let json = serde_json::json!({"registry": "consul", "interval": "10s", "ttl": "30s",
                                      "deregister_critical_service_after": "10s"});
        let spec: HeartbeatTtlSpec = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(spec.warnings()[0].0, "deregister_critical_service_after");
        // Critical at 37 s, raised to 1 m: removed at the first reap strictly
        // after 97 s, on the reaper's 30 s grid (same seed, same phase).
        let beat_fails_at = |t: SimTime| {
            let (mut h, _) = silent_after_7s(json.clone());
            h.heartbeat(t, A);
            !h.routable(A)
        };
        let (_, first_reap) = silent_after_7s(json.clone());
        let grid = |k: u64| first_reap + SimDuration::from_secs(30 * k);
        let k = (0..10).find(|&k| grid(k) > ms(97_000)).unwrap();
        assert!(!beat_fails_at(SimTime::from_micros(
            grid(k).as_micros() - 1
        )));
        assert!(beat_fails_at(grid(k)));
    }
}
