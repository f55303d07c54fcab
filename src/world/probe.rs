//! Active probes on the wire: the connect (refused at once by a crashed
//! process, lost in a partition or when the accept queue is full, otherwise
//! accepted by the kernel), then for HTTP a request that waits in the node's
//! accept queue and worker pool like real work. The result goes back to the
//! policy that asked, or a timeout does.

use super::node::Job;
use super::{Event, NodeId, World};
use crate::engine::SimTime;
use crate::policy::{AfterConnect, ProbeKind, ProbeOutcome, ProbeRequest, ProbeResult};

#[derive(Clone, Copy, Debug)]
struct Slot {
    active: bool,
    /// Bumped when the probe ends: late events for it are ignored.
    generation: u32,
    policy: u16,
    node: NodeId,
    start: SimTime,
    tag: u32,
}

/// Probes in flight.
#[derive(Default)]
pub(crate) struct Probes {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl Probes {
    fn live(&self, probe: u32, generation: u32) -> Option<Slot> {
        let s = *self.slots.get(probe as usize)?;
        (s.active && s.generation == generation).then_some(s)
    }
}

/// Is `policy` a gateway's check (the kubelet's probes name their own port)?
fn gateways_check(policy: u16) -> bool {
    policy != super::pods::KUBELET
}

impl World<'_> {
    /// Policy `policy` asked for a probe of `node` now.
    pub(crate) fn send_probe(&mut self, policy: u16, node: NodeId, req: ProbeRequest) {
        let now = self.q.now();
        self.rec.probe_sent(now, node);
        let slot = Slot {
            active: true,
            generation: 0,
            policy,
            node,
            start: now,
            tag: req.tag,
        };
        let probe = match self.probes.free.pop() {
            Some(i) => {
                let s = &mut self.probes.slots[i as usize];
                *s = Slot {
                    generation: s.generation,
                    ..slot
                };
                i
            }
            None => {
                self.probes.slots.push(slot);
                (self.probes.slots.len() - 1) as u32
            }
        };
        let generation = self.probes.slots[probe as usize].generation;
        let done = |result| Event::ProbeDone {
            probe,
            generation,
            result,
        };
        let rtt = self.model.gateway.rtt;
        let n = &self.nodes[node.index()];
        if self.model.nodes[node.index()].check_addr.is_some() && gateways_check(policy) {
            // `addr`: another host answers; nothing of this node reaches it.
            let answer = match req.kind {
                ProbeKind::Tcp => (now + rtt, ProbeResult::Connected),
                ProbeKind::Http => (now + rtt + rtt, ProbeResult::Status(200)),
            };
            self.q.schedule(answer.0, done(answer.1));
        } else if self.model.nodes[node.index()].check_port.is_some() && gateways_check(policy) {
            // `check port N`: another endpoint of the host answers; only
            // the host's crash or partition reaches it.
            if n.crashed {
                self.q.schedule(now + rtt, done(ProbeResult::Refused));
            } else if n.partitioned {
                let t = req.connect_timeout.min(req.timeout);
                self.q.schedule(now + t, done(ProbeResult::ConnectTimeout));
            } else {
                let answer = match req.kind {
                    ProbeKind::Tcp => (now + rtt, ProbeResult::Connected),
                    ProbeKind::Http => (now + rtt + rtt, ProbeResult::Status(200)),
                };
                self.q.schedule(answer.0, done(answer.1));
            }
        } else if n.refuses_connections() {
            self.q.schedule(now + rtt, done(ProbeResult::Refused));
        } else if n.drops_syn() {
            let t = req.connect_timeout.min(req.timeout);
            self.q.schedule(now + t, done(ProbeResult::ConnectTimeout));
        } else {
            let connected = now + rtt;
            match req.kind {
                ProbeKind::Tcp => {
                    self.enqueue(node, Job::Accept);
                    self.q.schedule(connected, done(ProbeResult::Connected));
                }
                ProbeKind::Http => {
                    self.q.schedule(
                        connected + rtt.half(),
                        Event::ProbeAtNode { probe, generation },
                    );
                    let deadline = match req.timeout_after_connect {
                        Some(AfterConnect::Replace(d)) => connected + d,
                        Some(AfterConnect::Later(d)) => (connected + d).max(now + req.timeout),
                        None => now + req.timeout,
                    };
                    self.q.schedule(deadline, done(ProbeResult::Timeout));
                }
            }
        }
    }

    /// An HTTP probe's request reached the node.
    pub(crate) fn on_probe_at_node(&mut self, probe: u32, generation: u32) {
        let Some(s) = self.probes.live(probe, generation) else {
            return;
        };
        let n = &self.nodes[s.node.index()];
        if n.crashed {
            let at = self.q.now() + self.model.gateway.rtt.half();
            self.q.schedule(
                at,
                Event::ProbeDone {
                    probe,
                    generation,
                    result: ProbeResult::Reset,
                },
            );
        } else if !n.partitioned {
            self.enqueue(s.node, Job::Probe { probe, generation });
        }
    }

    /// A probe ended (answered, failed or timed out): tell its policy.
    pub(crate) fn on_probe_done(&mut self, probe: u32, generation: u32, result: ProbeResult) {
        let Some(s) = self.probes.live(probe, generation) else {
            return;
        };
        let slot = &mut self.probes.slots[probe as usize];
        slot.active = false;
        slot.generation = slot.generation.wrapping_add(1);
        self.probes.free.push(probe);
        if s.policy == super::pods::KUBELET {
            self.kubelet_probe_done(s.node, s.tag, result);
            return;
        }
        let outcome = ProbeOutcome {
            result,
            latency: self.q.now().saturating_since(s.start),
            tag: s.tag,
        };
        self.with_policy(s.policy as usize, Some(s.node), |p, cx| {
            p.on_probe_result(cx, s.node, &outcome)
        });
    }
}
