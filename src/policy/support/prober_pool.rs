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
    use crate::engine::{SimDuration, SimTime, Stream, rng};
    use crate::policy::{Action, Now, ProbeKind};

    fn req(tag: u32) -> ProbeRequest {
        ProbeRequest {
            kind: ProbeKind::Http,
            connect_timeout: SimDuration::from_secs(1),
            timeout: SimDuration::from_secs(1),
            timeout_after_connect: None,
            tag,
        }
    }

    fn sent(actions: &[Action]) -> Vec<u32> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Probe { node, .. } => Some(node.0),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn probes_wait_for_a_free_thread_in_fifo_order() {
        let mut rng = rng::stream(1, Stream::Policy);
        let (mut timers, mut notices) = (vec![], vec![]);
        let now = Now {
            t: SimTime::ZERO,
            wall_s: 0,
        };
        let mut cx = PolicyCx::new(now, &mut rng, &mut timers, &mut notices);
        let mut pool = ProberPool::new(Some(2), 4);
        for n in 0..4 {
            pool.submit(&mut cx, NodeId(n), req(n));
        }
        assert_eq!(sent(&cx.take_actions()), [0, 1], "two threads");
        assert_eq!((pool.busy(), pool.waiting()), (2, 2));
        assert!(pool.is_pending(NodeId(3)));
        pool.on_result(&mut cx, NodeId(1));
        assert_eq!(sent(&cx.take_actions()), [2], "the first waiting one");
        assert!(!pool.is_pending(NodeId(1)));
        pool.on_result(&mut cx, NodeId(0));
        pool.on_result(&mut cx, NodeId(2));
        assert_eq!(sent(&cx.take_actions()), [3]);
        assert_eq!((pool.busy(), pool.waiting()), (1, 0));
    }

    #[test]
    fn an_unbounded_pool_sends_everything_at_once() {
        let mut rng = rng::stream(1, Stream::Policy);
        let (mut timers, mut notices) = (vec![], vec![]);
        let now = Now {
            t: SimTime::ZERO,
            wall_s: 0,
        };
        let mut cx = PolicyCx::new(now, &mut rng, &mut timers, &mut notices);
        let mut pool = ProberPool::new(None, 3);
        for n in 0..3 {
            pool.submit(&mut cx, NodeId(n), req(0));
        }
        assert_eq!(sent(&cx.take_actions()), [0, 1, 2]);
    }
}
