//! The request path of a Linkerd 2.x outbound proxy to a Service's
//! endpoints (`flavor: linkerd`), as linkerd2-proxy decides it; checked
//! against the sources only.
//!
//! - **The queue and failfast** (`linkerd/proxy/balance/queue`: `worker.rs`
//!   `spawn`, `PoolDriver::ready_or_failfast`, `failfast.rs`): requests
//!   are taken in order; each waits until the pool has a ready endpoint. The
//!   first wait starts the failfast timer (`Queue::entered`,
//!   `LINKERD2_PROXY_OUTBOUND_HTTP_FAILFAST_TIMEOUT`, 3 s); readiness clears
//!   it (`set_ready`), so every dispatch restarts the count for the next
//!   waiting request. When it expires the pool is in failfast: the queued
//!   requests fail at once with `FailFastError`, answered 504
//!   (`ServerRescue::rescue`: "gateway_timeout"), and the balancer's gate is
//!   shut, so until an endpoint is ready again every new request is refused
//!   by the route's `LoadShed` layer (`logical/policy/route.rs`) in front of
//!   it: `LoadShedError`, answered 503 ("unavailable"). An endpoint is ready
//!   when its breaker's gate lets it through (the policies:
//!   [`crate::policy::Linkerd`]'s probation admits one).
//! - **The balancer** (`linkerd/pool/p2c`, `P2cPool::p2c_ready_index`):
//!   with one ready endpoint, that one; with more, two distinct ones at
//!   random (`gen_pair`) and the one of lower load wins (`aload <= bload`:
//!   the first on a tie). The load is tower's `PeakEwma::load`: the RTT
//!   estimate, decayed to now, times (requests in flight + 1); reading it
//!   decays the estimate and moves its clock (`RttEstimate::decay`). Each
//!   completed request updates it (`RttEstimate::update`): a longer RTT
//!   replaces the estimate (the peak), a shorter one is averaged in with the
//!   weight `1 − e^(−elapsed/decay)`; a request the client cancels counts
//!   too, with the time it waited (its `Handle` is dropped with it). A new
//!   endpoint starts at `default_rtt`
//!   (Linkerd's 30 ms, decay 10 s: `BALANCER_DEFAULT_RTT`,
//!   `BALANCER_RTT_DECAY`). Endpoint weights play no part.
//! - **Answers** (`ClientRescue::rescue`, `endpoint.rs`): a refused connect
//!   or a reset is a 502, a connect timeout (`connect_timeout`, 1 s) a 504,
//!   a status is relayed; `timeout.linkerd.io/response`, counted here from
//!   the dispatch, a 504. No retries: Linkerd retries only what a route's
//!   retry annotations ask for (not modelled).

use super::super::{Event, Fail, NodeId, World};
use super::Reply;
use crate::engine::{SimDuration, SimTime};
use crate::policy::{AttemptResult, Charge, Now};
use crate::spec::{GatewayFlavor, Model};
use rand::RngExt;
use std::collections::VecDeque;

/// A balancer queue's failfast state (`failfast::State`, or none).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Queue {
    Ready,
    /// A request waits for an endpoint; the timer of this generation fails fast.
    Waiting,
    Failfast,
}

/// tower's `RttEstimate`, in nanoseconds.
#[derive(Copy, Clone, Debug)]
struct Rtt {
    rtt_ns: f64,
    update_at: SimTime,
}

/// One proxy's balancer state per replica, and the settings.
#[derive(Clone, Debug)]
pub(crate) struct LinkerdPath {
    failfast: SimDuration,
    pub(super) connect_timeout: SimDuration,
    pub(super) response_timeout: Option<SimDuration>,
    decay_ns: f64,
    n: usize,
    /// Per (replica, node).
    rtt: Vec<Rtt>,
    /// Per replica: the requests (slot, generation) waiting, in order.
    queue: Vec<VecDeque<(u32, u32)>>,
    state: Vec<Queue>,
    generation: Vec<u32>,
    /// The ready endpoints of the pick in progress.
    ready: Vec<NodeId>,
}

fn nanos(d: SimDuration) -> f64 {
    d.as_micros() as f64 * 1_000.0
}

impl Rtt {
    /// `RttEstimate::update(sent_at, recv_at)` at `now` (= `recv_at`).
    fn update(&mut self, rtt_ns: f64, now: SimTime, decay_ns: f64) -> f64 {
        if self.rtt_ns < rtt_ns {
            self.rtt_ns = rtt_ns;
        } else {
            let elapsed = nanos(now.saturating_since(self.update_at));
            let decay = (-elapsed / decay_ns).exp();
            self.rtt_ns = self.rtt_ns * decay + rtt_ns * (1.0 - decay);
        }
        self.update_at = now;
        self.rtt_ns
    }
}

impl LinkerdPath {
    /// The path with `flavor: linkerd`, else `None`.
    pub(super) fn of(model: &Model) -> Option<LinkerdPath> {
        if model.gateway.flavor != GatewayFlavor::Linkerd {
            return None;
        }
        let l = model.gateway.linkerd();
        let replicas = model.replicas();
        let n = model.nodes.len();
        let initial = Rtt {
            rtt_ns: nanos(l.ewma_default_rtt.max(SimDuration::from_millis(1))),
            update_at: SimTime::ZERO,
        };
        Some(LinkerdPath {
            failfast: l.failfast_timeout,
            connect_timeout: l.connect_timeout,
            response_timeout: l.response_timeout,
            decay_ns: nanos(l.ewma_decay),
            n,
            rtt: vec![initial; replicas * n],
            queue: vec![VecDeque::new(); replicas],
            state: vec![Queue::Ready; replicas],
            generation: vec![0; replicas],
            ready: Vec::with_capacity(n),
        })
    }

    /// `PeakEwma::load`: decays the estimate to now (a read moves its
    /// clock), times the requests in flight plus one.
    fn load(&mut self, k: usize, pending: u32, now: SimTime) -> f64 {
        let decay = self.decay_ns;
        self.rtt[k].update(0.0, now, decay) * (pending as f64 + 1.0)
    }
}

impl World<'_> {
    fn lk(&mut self) -> &mut LinkerdPath {
        self.gw.linkerd.as_mut().expect("Linkerd's request path")
    }

    /// A request of `slot` reaches the proxy's balancer: it queues behind
    /// the waiting ones and is dispatched when an endpoint is ready.
    #[inline(never)]
    pub(super) fn linkerd_connect(&mut self, slot: u32) {
        let r = &self.gw.reqs[slot as usize];
        let (replica, generation) = (self.fleet.replica_of(r.scope), r.req_gen);
        if self.lk().state[replica] == Queue::Failfast {
            // The balancer's gate is shut: `LoadShed` refuses the request,
            // unless an endpoint is ready now (the pool leaves failfast).
            match self.linkerd_pick(slot) {
                Some(node) => {
                    self.linkerd_set_state(replica, Queue::Ready);
                    self.take_peer(slot, node);
                    self.start_attempt(slot, node);
                }
                None => self.finalize(slot, 503, None),
            }
            return;
        }
        self.lk().queue[replica].push_back((slot, generation));
        self.linkerd_drain(replica);
    }

    /// The queue's worker: dispatches waiting requests in order while an
    /// endpoint is ready; then fails them (in failfast) or waits.
    pub(crate) fn linkerd_drain(&mut self, replica: usize) {
        loop {
            let Some(&(slot, generation)) = self.lk().queue[replica].front() else {
                return;
            };
            let r = &self.gw.reqs[slot as usize];
            if !r.active || r.req_gen != generation {
                self.lk().queue[replica].pop_front();
                continue;
            }
            let Some(node) = self.linkerd_pick(slot) else {
                break;
            };
            self.lk().queue[replica].pop_front();
            // `set_ready`: leaving failfast, or the wait is over.
            self.linkerd_set_state(replica, Queue::Ready);
            self.take_peer(slot, node);
            self.start_attempt(slot, node);
        }
        match self.lk().state[replica] {
            Queue::Failfast => self.linkerd_fail_queued(replica),
            Queue::Waiting => {}
            Queue::Ready => {
                self.linkerd_set_state(replica, Queue::Waiting);
                let l = self.lk();
                let (at, generation) = (l.failfast, l.generation[replica]);
                let at = self.q.now() + at;
                self.q.schedule(
                    at,
                    Event::LinkerdFailfast {
                        replica: replica as u32,
                        generation,
                    },
                );
            }
        }
    }

    fn linkerd_set_state(&mut self, replica: usize, s: Queue) {
        let l = self.lk();
        if l.state[replica] != s {
            l.state[replica] = s;
            l.generation[replica] = l.generation[replica].wrapping_add(1);
        }
    }

    /// The failfast timer of `replica` expired: unless an endpoint became
    /// ready meanwhile, every waiting request fails with 504.
    pub(crate) fn on_linkerd_failfast(&mut self, replica: u32, generation: u32) {
        let replica = replica as usize;
        let l = self.lk();
        if l.state[replica] != Queue::Waiting || l.generation[replica] != generation {
            return;
        }
        l.state[replica] = Queue::Failfast;
        l.generation[replica] = l.generation[replica].wrapping_add(1);
        self.linkerd_drain(replica);
    }

    /// In failfast: the queued requests fail at once (`FailFastError`, 504).
    fn linkerd_fail_queued(&mut self, replica: usize) {
        while let Some((slot, generation)) = self.lk().queue[replica].pop_front() {
            let r = &self.gw.reqs[slot as usize];
            if r.active && r.req_gen == generation {
                self.finalize(slot, 504, None);
            }
        }
    }

    /// An endpoint of `replica` may have become ready (a policy readmitted
    /// a node): the queue's worker looks again, after the current event.
    pub(crate) fn linkerd_readmitted(&mut self, replica: usize) {
        if !self.lk().queue[replica].is_empty() {
            self.q.schedule(
                self.q.now(),
                Event::LinkerdDrain {
                    replica: replica as u32,
                },
            );
        }
    }

    /// `P2cPool::p2c_ready_index` over the ready endpoints, by peak-EWMA load.
    fn linkerd_pick(&mut self, slot: u32) -> Option<NodeId> {
        let scope = self.gw.reqs[slot as usize].scope;
        let now = self.usable_now(scope);
        let mut ready = std::mem::take(&mut self.lk().ready);
        ready.clear();
        ready.extend(
            (0..self.gw.n as u32)
                .map(NodeId)
                .filter(|&n| self.usable(scope, n, now)),
        );
        let picked = match ready.len() {
            0 => None,
            1 => Some(ready[0]),
            len => {
                let a = self.rng.gateway.random_range(0..len);
                let mut b = self.rng.gateway.random_range(0..len - 1);
                if b >= a {
                    b += 1;
                }
                let (na, nb) = (ready[a], ready[b]);
                let la = self.linkerd_load(scope, na, now);
                let lb = self.linkerd_load(scope, nb, now);
                Some(if la <= lb { na } else { nb })
            }
        };
        self.lk().ready = ready;
        picked
    }

    fn linkerd_load(&mut self, scope: u16, node: NodeId, now: Now) -> f64 {
        let pending = self.gw.conns[self.gw.k(scope, node)];
        let replica = self.fleet.replica_of(scope);
        let l = self.lk();
        let k = replica * l.n + node.index();
        l.load(k, pending, now.t)
    }

    /// The request's RTT to `node` is known — a response, an error, or the
    /// client's cancel (the future, and its load handle, dropped):
    /// `Handle::drop` → `RttEstimate::update`.
    #[inline(never)]
    pub(super) fn linkerd_completed(&mut self, slot: u32, node: NodeId) {
        let now = self.q.now();
        let r = &self.gw.reqs[slot as usize];
        let (replica, start) = (self.fleet.replica_of(r.scope), r.att_start);
        let l = self.lk();
        let k = replica * l.n + node.index();
        let decay = l.decay_ns;
        l.rtt[k].update(nanos(now.saturating_since(start)), now, decay);
    }

    /// A response header (or a reset) from `node` reached the proxy: the
    /// status is relayed, a reset answered 502 — as HAProxy does.
    pub(super) fn linkerd_response(&mut self, slot: u32, node: NodeId, reply: Reply) {
        self.linkerd_completed(slot, node);
        self.haproxy_response(slot, node, reply);
    }

    /// An attempt ended without a response.
    pub(super) fn linkerd_failed(&mut self, slot: u32, node: NodeId, why: Fail) {
        self.linkerd_completed(slot, node);
        let (status, result) = match why {
            Fail::Refused => (502, AttemptResult::Refused),
            Fail::ConnectTimeout => (504, AttemptResult::ConnectTimeout),
            Fail::ReadTimeout => (504, AttemptResult::ReadTimeout),
            Fail::Rejected => (503, AttemptResult::Rejected),
        };
        self.free_peer(slot, node, Charge::Failed, result);
        self.finalize(slot, status, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_replaces_and_a_lower_rtt_is_averaged_in_by_elapsed_time() {
        let decay = 10e9;
        let mut r = Rtt {
            rtt_ns: 30e6,
            update_at: SimTime::ZERO,
        };
        assert_eq!(
            r.update(100e6, SimTime::from_micros(1_000_000), decay),
            100e6
        );
        // 10 s later a 10 ms answer: weight 1 − e^−1 for it.
        let v = r.update(10e6, SimTime::from_micros(11_000_000), decay);
        let want = 100e6 * (-1f64).exp() + 10e6 * (1.0 - (-1f64).exp());
        assert!((v - want).abs() < 1.0, "{v} vs {want}");
        // A read decays towards zero and moves the clock (tower's `decay`).
        let read = r.update(0.0, SimTime::from_micros(21_000_000), decay);
        assert!((read - want * (-1f64).exp()).abs() < 1.0);
        assert_eq!(r.update_at, SimTime::from_micros(21_000_000));
    }
}
