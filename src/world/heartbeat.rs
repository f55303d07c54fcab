//! Heartbeat threads: each node beats from its own thread when a policy asks.
//! The thread keeps going while the workers hang, does nothing while the
//! process is crashed or stopped, and its beats are lost in a partition. With
//! a self-check, the thread first sends a request through the node's own
//! worker pool and beats only on a 2xx within the timeout
//! (`while true { if self_check() { beat() }; sleep(interval) }`).

use super::node::Job;
use super::{Event, NodeId, World};
use crate::engine::{SimDuration, SimTime};
use crate::policy::HeartbeatPlan;
use rand::RngExt;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Thread {
    interval: SimDuration,
    self_check: Option<SimDuration>,
    /// Bumped when a self-check ends: the other outcome is then stale.
    generation: u32,
}

impl World<'_> {
    /// Starts one heartbeat thread per node for `policy`, each at a random phase.
    pub(crate) fn start_heartbeats(&mut self, policy: u16, plan: HeartbeatPlan) {
        let p = policy as usize;
        if self.heartbeats.len() <= p {
            self.heartbeats.resize_with(p + 1, Vec::new);
        }
        let now = self.q.now();
        let thread = Thread {
            interval: plan.interval,
            self_check: plan.self_check,
            generation: 0,
        };
        self.heartbeats[p] = vec![thread; self.nodes.len()];
        for i in 0..self.nodes.len() {
            let phase = self
                .rng
                .heartbeat
                .random_range(0..plan.interval.as_micros().max(1));
            self.q.schedule(
                now + SimDuration::from_micros(phase),
                Event::HeartbeatTick {
                    policy,
                    node: i as u32,
                },
            );
        }
    }

    fn next_tick(&mut self, policy: u16, node: NodeId) {
        let t = &self.heartbeats[policy as usize][node.index()];
        let at: SimTime = self.q.now() + t.interval;
        self.q.schedule(
            at,
            Event::HeartbeatTick {
                policy,
                node: node.0,
            },
        );
    }

    pub(crate) fn on_heartbeat_tick(&mut self, policy: u16, node: NodeId) {
        let n = &self.nodes[node.index()];
        if !n.beats() {
            self.next_tick(policy, node);
            return;
        }
        let full = n.accept_queue_full();
        let t = &mut self.heartbeats[policy as usize][node.index()];
        match t.self_check {
            None => {
                self.emit_beat(policy, node);
                self.next_tick(policy, node);
            }
            Some(timeout) => {
                t.generation = t.generation.wrapping_add(1);
                let generation = t.generation;
                if !full {
                    self.enqueue(node, Job::SelfCheck { policy, generation });
                }
                let at = self.q.now() + timeout;
                self.q.schedule(
                    at,
                    Event::SelfCheckTimeout {
                        policy,
                        node: node.0,
                        generation,
                    },
                );
            }
        }
    }

    /// The self-check got an answer from a worker (`ok`: a 2xx).
    pub(crate) fn self_check_done(&mut self, policy: u16, node: NodeId, generation: u32, ok: bool) {
        let t = &mut self.heartbeats[policy as usize][node.index()];
        if t.generation != generation {
            return;
        }
        t.generation = t.generation.wrapping_add(1);
        if ok && self.nodes[node.index()].beats() {
            self.emit_beat(policy, node);
        }
        self.next_tick(policy, node);
    }

    pub(crate) fn on_self_check_timeout(&mut self, policy: u16, node: NodeId, generation: u32) {
        let t = &mut self.heartbeats[policy as usize][node.index()];
        if t.generation != generation {
            return;
        }
        t.generation = t.generation.wrapping_add(1);
        self.next_tick(policy, node);
    }

    fn emit_beat(&mut self, policy: u16, node: NodeId) {
        if self.nodes[node.index()].partitioned {
            return;
        }
        let at = self.q.now() + self.model.gateway.rtt.half();
        self.q.schedule(
            at,
            Event::HeartbeatArrive {
                policy,
                node: node.0,
            },
        );
    }

    pub(crate) fn on_heartbeat_arrive(&mut self, policy: u16, node: NodeId) {
        self.with_policy(policy as usize, Some(node), |p, cx| {
            p.on_heartbeat(cx, node)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Event, NodeId, World};
    use crate::spec::Model;
    use std::path::Path;

    /// Three nodes beating every second to a registry that drops a node
    /// 3 s after its last beat; `a` crashes at 5 s.
    fn registry(replicas: u32, refresh: Option<&str>) -> Model {
        let mut policy = serde_json::json!({"kind": "heartbeat_ttl", "registry": "generic",
                                            "interval": "1s", "ttl": "3s"});
        if let Some(r) = refresh {
            policy["refresh_interval"] = r.into();
        }
        let doc = serde_json::json!({
            "name": "t", "duration": "60s",
            "clients": {"kind": "open", "rate_per_s": 20.0},
            "gateway": {"replicas": replicas},
            "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "faults": [{"kind": "crash", "node": "a", "at": "5s"}],
            "policies": [{"kind": "max_fails", "max_fails": 0}, policy]
        });
        Model::from_document(&doc, Path::new("t.json")).unwrap()
    }

    /// Runs `model` with seed 1 to its end; returns the world, and the
    /// policy instance and node of every heartbeat that reached the registry.
    fn run(model: &Model) -> (World<'_>, Vec<(u16, u32)>) {
        let mut w = World::new(model, 1, None);
        w.begin();
        let mut beats = Vec::new();
        while let Some((_, ev)) = w.q.pop_before(model.end()) {
            if let Event::HeartbeatArrive { policy, node } = ev {
                beats.push((policy, node));
            }
            w.dispatch(ev);
        }
        (w, beats)
    }

    #[test]
    fn a_fleet_sends_one_set_of_beats_to_one_registry() {
        let (_, one) = run(&registry(1, None));
        let m = registry(4, None);
        let (w, fleet) = run(&m);
        assert!(one.len() > 100, "{} beats", one.len());
        // The same threads, the same phases (the heartbeat stream is drawn
        // once), all to replica 0's instance of the registry (policy 1).
        assert_eq!(fleet, one);
        assert!(fleet.iter().all(|&(p, _)| p == 1));
        assert_eq!(w.heartbeats.iter().filter(|t| !t.is_empty()).count(), 1);
        // Every replica's view heard the registry drop `a`.
        let now = w.fleet.now(0, w.now());
        for r in 0..4 {
            let p = w.bank.get(w.fleet.layout().policy(r, 1));
            assert!(!p.is_routable(0, NodeId(0), now), "replica {r}");
            assert!(p.is_routable(0, NodeId(1), now), "replica {r}");
        }
    }
}
