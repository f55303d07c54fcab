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
                .rng_heartbeat
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
