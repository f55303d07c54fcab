//! A prober's thread pool: at most `threads` probes in flight, the rest wait
//! in FIFO order for a free thread (seed 004, table 3: a few hung nodes hold
//! threads for a whole timeout and stretch every other node's probe interval).

use crate::ids::NodeId;
use crate::policy::{PolicyCx, ProbeRequest};
use std::collections::VecDeque;

/// Probes waiting for, or holding, a prober thread.
#[derive(Clone, Debug)]
pub struct ProberPool {
    /// `None`: unbounded (an event-driven prober such as HAProxy's or Envoy's).
    threads: Option<u32>,
    busy: u32,
    waiting: VecDeque<(NodeId, ProbeRequest)>,
    /// Per node: probes waiting or in flight.
    pending: Vec<u32>,
}

impl ProberPool {
    pub fn new(threads: Option<u32>, nodes: usize) -> Self {
        ProberPool {
            threads,
            busy: 0,
            waiting: VecDeque::new(),
            pending: vec![0; nodes],
        }
    }

    /// Sends the probe now if a thread is free, else queues it. The probe's
    /// timeout starts when a thread takes it, as in a real thread pool.
    pub fn submit(&mut self, cx: &mut PolicyCx, node: NodeId, req: ProbeRequest) {
        self.pending[node.index()] += 1;
        if self.threads.is_none_or(|t| self.busy < t) {
            self.busy += 1;
            cx.probe(node, req);
        } else {
            self.waiting.push_back((node, req));
        }
    }

    /// A probe to `node` ended: its thread takes the next waiting probe.
    pub fn on_result(&mut self, cx: &mut PolicyCx, node: NodeId) {
        let p = &mut self.pending[node.index()];
        *p = p.saturating_sub(1);
        self.busy = self.busy.saturating_sub(1);
        if let Some((next, req)) = self.waiting.pop_front() {
            self.busy += 1;
            cx.probe(next, req);
        }
    }

    /// Is a probe to `node` waiting or in flight?
    pub fn is_pending(&self, node: NodeId) -> bool {
        self.pending[node.index()] > 0
    }

    /// Probes holding a thread now.
    pub fn busy(&self) -> u32 {
        self.busy
    }

    /// Probes waiting for a thread.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{SimDuration, SimTime};
    use crate::policy::ProbeKind;
    use crate::policy::testkit::Harness;

    fn req(tag: u32) -> ProbeRequest {
        ProbeRequest {
            kind: ProbeKind::Http,
            connect_timeout: SimDuration::from_secs(1),
            timeout: SimDuration::from_secs(1),
            timeout_after_connect: None,
            tag,
        }
    }

    /// The nodes of the probes sent since the last look.
    fn sent(h: &mut Harness<ProberPool>) -> Vec<u32> {
        h.take_in_flight().iter().map(|p| p.node.0).collect()
    }

    #[test]
    fn probes_wait_for_a_free_thread_in_fifo_order() {
        let mut h = Harness::part(ProberPool::new(Some(2), 4), 1);
        let t = SimTime::ZERO;
        for n in 0..4 {
            h.call(t, |pool, cx| pool.submit(cx, NodeId(n), req(n)));
        }
        assert_eq!(sent(&mut h), [0, 1], "two threads");
        assert_eq!((h.policy.busy(), h.policy.waiting()), (2, 2));
        assert!(h.policy.is_pending(NodeId(3)));
        h.call(t, |pool, cx| pool.on_result(cx, NodeId(1)));
        assert_eq!(sent(&mut h), [2], "the first waiting one");
        assert!(!h.policy.is_pending(NodeId(1)));
        h.call(t, |pool, cx| pool.on_result(cx, NodeId(0)));
        h.call(t, |pool, cx| pool.on_result(cx, NodeId(2)));
        assert_eq!(sent(&mut h), [3]);
        assert_eq!((h.policy.busy(), h.policy.waiting()), (1, 0));
    }

    #[test]
    fn an_unbounded_pool_sends_everything_at_once() {
        let mut h = Harness::part(ProberPool::new(None, 3), 1);
        for n in 0..3 {
            h.call(SimTime::ZERO, |pool, cx| pool.submit(cx, NodeId(n), req(0)));
        }
        assert_eq!(sent(&mut h), [0, 1, 2]);
    }
}
