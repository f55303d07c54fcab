//! HAProxy 2.6's queues (`flavor: haproxy` with some node's `max_conns`):
//! a request that finds every usable server full waits in the backend's
//! queue, one sent to a full server by its cookie in that server's queue.
//! The functions named are HAProxy's.
//!
//! - `assign_server_and_queue` (src/backend.c): the balancer skips full
//!   servers; when every usable one is full (`SRV_STATUS_FULL`), the request
//!   joins the backend's queue (`pendconn_add`, src/queue.c). A request
//!   assigned to its server without balancing (cookie, `SF_DIRECT`) that
//!   finds it full joins the server's queue, unless `maxqueue` is reached:
//!   then `srv_redispatch_connect` balances it with `option redispatch`, else
//!   answers 503.
//! - `srv_redispatch_connect` arms `timeout queue` (`tick_add_ifset`: none
//!   when unset; `cfgparse.c` copies `timeout connect` into it). On expiry
//!   `back_try_conn_req` answers 503 (`STRM_ET_QUEUE_TO`, flags `sQ`): no
//!   connection was tried, nothing is retried and no check hears of it.
//! - `process_srv_queue`, on each connection a server releases (a response,
//!   a give-up, a redispatch, a client abort): while the server is under its
//!   `maxconn`, `pendconn_process_next_strm` hands the slot to the oldest of
//!   the heads of the server's and the backend's queues (their keys are the
//!   millisecond they were queued, the server's queue winning a tie); the
//!   backend's queue only while the server is usable (`px_ok`).
//! - A retry on the same server keeps its slot (`stream_choose_redispatch`
//!   leaves `srv_conn` set); a redispatch or a last failure releases it.
//! - A server going DOWN sends its queue back to balancing with `option
//!   redispatch` and without `option persist` (`pendconn_redistribute`); one
//!   coming UP takes requests from the backend's queue up to its `maxconn`
//!   (`pendconn_grab_from_px`).
//! - A queued request whose client gives up leaves its queue
//!   (`STRM_ET_QUEUE_ABRT`).
//! - Backup servers take requests only when no active server is usable
//!   (`srv_act == 0`): a usable but full primary queues the request rather
//!   than sending it to a backup.

use super::super::{Event, NodeId, World, lane};
use super::balancer::at_max_conns;
use crate::engine::{SimDuration, SimTime};
use crate::metrics::QueueSummary;
use crate::spec::{GatewayFlavor, Model};
use std::collections::VecDeque;

/// Which queue a request waits in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Queued {
    Backend,
    Server(NodeId),
}

/// A queued request: its slot, the generation its queue timeout carries,
/// and its key (the millisecond it was queued).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Waiting {
    pub(super) slot: u32,
    pub(super) generation: u32,
    pub(super) key_ms: u64,
}

/// The queues of every gateway scope (each replica is its own HAProxy).
#[derive(Debug)]
pub(crate) struct Pending {
    /// Per scope: the backend's queue (`px->queue`).
    backend: Vec<VecDeque<Waiting>>,
    /// Per (scope, node): the server's queue (`srv->queue`).
    server: Vec<VecDeque<Waiting>>,
    /// Per node: `maxqueue` (0: unlimited).
    max_queue: Vec<u32>,
    n: usize,
    /// `timeout queue` in effect (`None`: until the client gives up).
    pub(super) timeout: Option<SimDuration>,
    /// `option redispatch` without `option persist`: a DOWN server's queue
    /// goes back to balancing.
    pub(super) redistribute: bool,
    /// Per request slot: the queue it waits in, and since when (kept here
    /// rather than in the request, which models without queues share).
    slots: Vec<(Option<Queued>, SimTime)>,
    /// Per (scope, node): usable when last looked at ([`World::hap_watch`]).
    usable: Vec<bool>,
    /// Counted requests: queued, dequeued to a server, timed out, abandoned;
    /// the longest wait.
    stats: QueueSummary,
}

impl Pending {
    /// The queues of an HAProxy model with some node's `max_conns`, else
    /// `None`: a model without them allocates and consults nothing.
    pub(crate) fn of(model: &Model) -> Option<Box<Pending>> {
        if model.gateway.flavor != GatewayFlavor::Haproxy
            || model.nodes.iter().all(|n| n.max_conns == 0)
        {
            return None;
        }
        let h = model.gateway.haproxy();
        let (scopes, n) = (model.scopes(), model.nodes.len());
        let persist = h.cookie.as_ref().is_some_and(|c| c.persist);
        Some(Box::new(Pending {
            backend: vec![VecDeque::new(); scopes],
            server: vec![VecDeque::new(); scopes * n],
            max_queue: model.nodes.iter().map(|x| x.max_queue).collect(),
            n,
            timeout: h.queue_timeout(),
            redistribute: h.redispatch.after().is_some() && !persist,
            slots: Vec::new(),
            usable: (0..scopes)
                .flat_map(|_| model.nodes.iter().map(|x| !x.down))
                .collect(),
            stats: QueueSummary::default(),
        }))
    }

    fn k(&self, scope: u16, node: NodeId) -> usize {
        scope as usize * self.n + node.index()
    }

    /// The queue the request of `slot` waits in.
    pub(super) fn queued(&self, slot: u32) -> Option<Queued> {
        self.slots.get(slot as usize).and_then(|s| s.0)
    }

    /// The request of `slot` waits in `at` from `now`, or (`None`) no more:
    /// how long it waited.
    fn set_queued(&mut self, slot: u32, at: Option<Queued>, now: SimTime) -> SimDuration {
        let i = slot as usize;
        if self.slots.len() <= i {
            self.slots.resize(i + 1, (None, SimTime::ZERO));
        }
        let s = &mut self.slots[i];
        let waited = now.saturating_since(s.1);
        *s = (at, now);
        waited
    }

    /// `srv->queue.length`.
    pub(super) fn server_len(&self, scope: u16, node: NodeId) -> usize {
        self.server[self.k(scope, node)].len()
    }

    /// `srv->maxqueue > 0 && srv->queue.length >= srv->maxqueue`.
    pub(super) fn server_queue_full(&self, scope: u16, node: NodeId) -> bool {
        let m = self.max_queue[node.index()];
        m > 0 && self.server_len(scope, node) >= m as usize
    }

    /// `pendconn_add`: at the tail of its queue (keys are arrival times, so
    /// the tail keeps the tree's order; equal keys go after the others).
    pub(super) fn add(&mut self, scope: u16, at: Queued, w: Waiting) {
        match at {
            Queued::Backend => self.backend[scope as usize].push_back(w),
            Queued::Server(n) => {
                let k = self.k(scope, n);
                self.server[k].push_back(w);
            }
        }
    }

    /// `pendconn_cond_unlink`: the request of `slot` leaves its queue.
    pub(super) fn unlink(&mut self, scope: u16, at: Queued, slot: u32) {
        let q = match at {
            Queued::Backend => &mut self.backend[scope as usize],
            Queued::Server(n) => {
                let k = self.k(scope, n);
                &mut self.server[k]
            }
        };
        if let Some(i) = q.iter().position(|w| w.slot == slot) {
            q.remove(i);
        }
    }

    /// `pendconn_process_next_strm(srv, px, px_ok)`: the older head of the
    /// server's and (with `px_ok`) the backend's queue, the server's on a
    /// tie (`pkey <= ppkey`), taken out of its queue.
    pub(super) fn next(&mut self, scope: u16, node: NodeId, px_ok: bool) -> Option<Waiting> {
        let k = self.k(scope, node);
        let p = self.server[k].front().map(|w| w.key_ms);
        let pp = if px_ok {
            self.backend[scope as usize].front().map(|w| w.key_ms)
        } else {
            None
        };
        match (p, pp) {
            (None, None) => None,
            (Some(p), Some(pp)) if p > pp => self.backend[scope as usize].pop_front(),
            (Some(_), _) => self.server[k].pop_front(),
            (None, Some(_)) => self.backend[scope as usize].pop_front(),
        }
    }

    /// `pendconn_grab_from_px`'s loop: the backend queue's head.
    pub(super) fn next_of_backend(&mut self, scope: u16) -> Option<Waiting> {
        self.backend[scope as usize].pop_front()
    }

    /// `pendconn_redistribute`: the whole queue of a server that went DOWN.
    pub(super) fn take_server_queue(&mut self, scope: u16, node: NodeId) -> VecDeque<Waiting> {
        let k = self.k(scope, node);
        std::mem::take(&mut self.server[k])
    }

    /// The figures for `summary.json`.
    pub(crate) fn summary(&self) -> QueueSummary {
        QueueSummary {
            max_wait_s: crate::stats::round6(self.stats.max_wait_s),
            ..self.stats
        }
    }
}

impl World<'_> {
    /// Whether `node` is usable in `scope` (`srv_currently_usable`): not
    /// `down` and let through by every policy; `max_conns` aside.
    pub(crate) fn hap_usable(&self, scope: u16, node: NodeId) -> bool {
        if self.gw.down[node.index()] {
            return false;
        }
        if !self.gw.direct {
            return self.gw.routing.is_routable(self.gw.k(scope, node));
        }
        let now = self.fleet.now_in(scope, self.q.now());
        let (policies, local) = self.replica_policies(scope);
        policies.iter().all(|p| p.is_routable(local, node, now))
    }

    /// HAProxy with queues: is a primary server usable, only full? Then the
    /// backups are not used (a backend balances over its backups only when
    /// no active server is usable, `srv_act == 0` in `fwrr_get_next_server`
    /// and `recalc_server_map`): the request waits in the backend's queue.
    pub(super) fn hap_primary_full(&self, slot: u32) -> bool {
        if self.gw.pending.is_none() {
            return false;
        }
        let scope = self.gw.reqs[slot as usize].scope;
        self.gw.primary.iter().any(|&n| self.hap_usable(scope, n))
    }

    /// Balancing found no server for `slot`: `SRV_STATUS_FULL` (some usable
    /// server, all of them full) queues it in the backend, else
    /// `SRV_STATUS_NOSRV` (503 at once). Returns whether it was queued.
    pub(super) fn hap_queue_if_full(&mut self, slot: u32) -> bool {
        if self.gw.pending.is_none() {
            return false;
        }
        let scope = self.gw.reqs[slot as usize].scope;
        let primary_up = self.gw.primary.iter().any(|&n| self.hap_usable(scope, n));
        let usable = primary_up || self.gw.backup.iter().any(|&n| self.hap_usable(scope, n));
        if usable {
            self.hap_enqueue(slot, Queued::Backend);
        }
        usable
    }

    /// `pendconn_add` and `srv_redispatch_connect`'s `SRV_STATUS_QUEUED`:
    /// the request waits, its `timeout queue` armed.
    pub(super) fn hap_enqueue(&mut self, slot: u32, at: Queued) {
        let now = self.q.now();
        let r = &mut self.gw.reqs[slot as usize];
        r.att_gen = r.att_gen.wrapping_add(1);
        r.node = None;
        let (scope, generation, counted) = (r.scope, r.att_gen, r.counted);
        let p = self.gw.pending.as_deref_mut().expect("queues");
        p.set_queued(slot, Some(at), now);
        p.add(
            scope,
            at,
            Waiting {
                slot,
                generation,
                key_ms: now.as_micros() / 1_000,
            },
        );
        if counted {
            p.stats.queued += 1;
        }
        if let Some(t) = p.timeout {
            let ev = Event::QueueTimeout { slot, generation };
            self.q
                .schedule_in_lane_or_wheel(lane::QUEUE_TIMEOUT, now + t, ev);
        }
    }

    /// `timeout queue` expired for a request still queued: 503 (`sQ`).
    pub(crate) fn on_queue_timeout(&mut self, slot: u32, generation: u32) {
        let Some(r) = self.gw.reqs.get(slot as usize) else {
            return;
        };
        let queued = self.gw.pending.as_ref().and_then(|p| p.queued(slot));
        let Some(at) = queued.filter(|_| r.active && r.att_gen == generation) else {
            return;
        };
        let (scope, counted) = (r.scope, r.counted);
        self.hap_leave_queue(slot, scope, at);
        let p = self.gw.pending.as_deref_mut().expect("queues");
        if counted {
            p.stats.timeouts += 1;
        }
        self.finalize(slot, 503, None);
    }

    /// The request of `slot` leaves its queue `at` (timeout, client abort).
    fn hap_leave_queue(&mut self, slot: u32, scope: u16, at: Queued) {
        self.note_wait(slot);
        if let Some(p) = self.gw.pending.as_deref_mut() {
            p.unlink(scope, at, slot);
        }
    }

    /// The request of `slot` is out of its queue: how long it waited.
    fn note_wait(&mut self, slot: u32) {
        let now = self.q.now();
        let counted = self.gw.reqs[slot as usize].counted;
        if let Some(p) = self.gw.pending.as_deref_mut() {
            let waited = p.set_queued(slot, None, now).as_secs_f64();
            if counted {
                p.stats.max_wait_s = p.stats.max_wait_s.max(waited);
            }
        }
    }

    /// The client of `slot` gave up: out of its queue if it waits in one
    /// (`STRM_ET_QUEUE_ABRT`), or the slot a turn-around pause holds
    /// released. Returns the server whose slot was released, if any.
    pub(super) fn hap_client_gone(&mut self, slot: u32) -> Option<NodeId> {
        let queued = self.gw.pending.as_ref()?.queued(slot);
        let r = &self.gw.reqs[slot as usize];
        let scope = r.scope;
        if let Some(at) = queued {
            let counted = r.counted;
            self.hap_leave_queue(slot, scope, at);
            if counted {
                self.gw
                    .pending
                    .as_deref_mut()
                    .expect("queues")
                    .stats
                    .abandoned += 1;
            }
            return None;
        }
        let held = r.retry_same.filter(|_| r.node.is_none())?;
        self.hap_drop_slot(scope, held);
        Some(held)
    }

    /// A connection slot of `node` in `scope` is kept (a retry on the same
    /// server during its turn-around pause) or given back.
    pub(super) fn hap_hold_slot(&mut self, scope: u16, node: NodeId) {
        let k = self.gw.k(scope, node);
        self.gw.conns[k] += 1;
        if !self.gw.direct {
            self.conns_changed(scope, node);
        }
    }

    pub(super) fn hap_drop_slot(&mut self, scope: u16, node: NodeId) {
        let k = self.gw.k(scope, node);
        self.gw.conns[k] = self.gw.conns[k].saturating_sub(1);
        if !self.gw.direct {
            self.conns_changed(scope, node);
        }
    }

    /// `process_srv_queue(node)` after `node` released a connection in
    /// `scope`: its free slots go to the oldest queued requests.
    pub(super) fn hap_released(&mut self, scope: u16, node: NodeId) {
        if self.gw.pending.is_none() {
            return;
        }
        // px_ok: a usable server; a backup one only while no active is.
        let px_ok = self.hap_usable(scope, node)
            && (!self.gw.set_of[node.index()].backup
                || !self.gw.primary.iter().any(|&n| self.hap_usable(scope, n)));
        // `srv_dynamic_maxconn` is at least 1.
        let max = self.gw.max_conns[node.index()].max(1);
        while !at_max_conns(max, self.gw.conns[self.gw.k(scope, node)]) {
            let p = self.gw.pending.as_deref_mut().expect("queues");
            let Some(w) = p.next(scope, node, px_ok) else {
                return;
            };
            self.hap_dequeued(w, node);
        }
    }

    /// A queued request got a slot of `node` (`stream_add_srv_conn`) and
    /// connects (`SC_ST_ASS`).
    fn hap_dequeued(&mut self, w: Waiting, node: NodeId) {
        self.note_wait(w.slot);
        let r = &self.gw.reqs[w.slot as usize];
        debug_assert!(r.active && r.att_gen == w.generation);
        if r.counted {
            self.gw.pending.as_deref_mut().expect("queues").stats.served += 1;
        }
        self.take_peer(w.slot, node);
        self.start_attempt(w.slot, node);
    }

    /// After a policy heard about `node` in `scope`: if its usability
    /// changed since last looked at, [`hap_server_changed`](Self::hap_server_changed).
    #[cold]
    #[inline(never)]
    pub(crate) fn hap_watch(&mut self, scope: u16, node: NodeId) {
        // A policy may speak of an id beyond the servers (as `refresh_node`
        // skips): no server, no queue.
        if node.index() >= self.gw.n {
            return;
        }
        let now = self.hap_usable(scope, node);
        let Some(p) = self.gw.pending.as_deref_mut() else {
            return;
        };
        let k = p.k(scope, node);
        if p.usable[k] != now {
            p.usable[k] = now;
            self.hap_server_changed(scope, node, now);
        }
    }

    /// A policy's verdict on `node` in `scope` changed (`usable` now):
    /// `pendconn_grab_from_px` when it comes up, `pendconn_redistribute`
    /// when it goes down.
    fn hap_server_changed(&mut self, scope: u16, node: NodeId, usable: bool) {
        let Some(p) = self.gw.pending.as_deref_mut() else {
            return;
        };
        if !usable {
            if !p.redistribute {
                return;
            }
            for w in p.take_server_queue(scope, node) {
                self.note_wait(w.slot);
                if let Some(c) = self.gw.hash.cookie.as_deref_mut() {
                    c.clear_direct(w.slot);
                }
                // Back to balancing (`SC_ST_REQ`); it may queue again.
                self.hap_rebalance(w.slot);
            }
            return;
        }
        if self.gw.set_of[node.index()].backup
            && self.gw.primary.iter().any(|&n| self.hap_usable(scope, n))
        {
            return;
        }
        let m = self.gw.max_conns[node.index()];
        while !at_max_conns(m, self.gw.conns[self.gw.k(scope, node)]) {
            let p = self.gw.pending.as_deref_mut().expect("queues");
            let Some(w) = p.next_of_backend(scope) else {
                return;
            };
            self.hap_dequeued(w, node);
        }
    }

    /// Balances the request of `slot` again, queueing it when all are full.
    fn hap_rebalance(&mut self, slot: u32) {
        let r = &mut self.gw.reqs[slot as usize];
        r.in_backup = false;
        r.clear_tried();
        match self.select_peer(slot) {
            Some(node) => self.start_attempt(slot, node),
            None if self.hap_queue_if_full(slot) => {}
            None => self.finalize(slot, 503, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Pending, Queued, Waiting};
    use crate::spec::Model;
    use crate::world::{NodeId, World};
    use serde_json::{Value, json};

    fn model(haproxy: Value, nodes: Value, clients: Value) -> Model {
        let doc = json!({
            "name": "queues", "duration": "3s", "seed": 1,
            "clients": clients,
            "gateway": {"flavor": "haproxy", "rtt": "0s", "haproxy": haproxy},
            "nodes": nodes,
        });
        Model::from_document(&doc, std::path::Path::new("queues.json")).unwrap()
    }

    /// One server with `maxconn 1` answering after 400 ms; six requests
    /// 10 ms apart (the burst measured on HAProxy 2.6.12).
    fn burst(haproxy: Value, clients_timeout: &str) -> Model {
        model(
            haproxy,
            json!([{"name": "s1", "max_conns": 1, "workers": 8,
                    "service_time": {"dist": "constant", "value": "400ms"}}]),
            json!({"kind": "open", "rate_per_s": 100.0, "arrivals": "constant",
                   "timeout": clients_timeout, "schedule": [{"at": "55ms", "rate_per_s": 0.0}]}),
        )
    }

    fn w(slot: u32, key_ms: u64) -> Waiting {
        Waiting {
            slot,
            generation: 0,
            key_ms,
        }
    }

    fn queues(haproxy: Value, max_queue: u32) -> Box<Pending> {
        let m = model(
            haproxy,
            json!([{"name": "a", "max_conns": 1, "max_queue": max_queue}, {"name": "b"}]),
            json!({"kind": "open", "rate_per_s": 1.0}),
        );
        Pending::of(&m).unwrap()
    }

    /// `pendconn_process_next_strm`: the older head wins, the server's
    /// queue on a tie (`pkey <= ppkey`); the backend's only with `px_ok`.
    #[test]
    fn the_older_head_of_the_two_queues_is_served_first() {
        let a = NodeId(0);
        let mut p = queues(json!({}), 0);
        p.add(0, Queued::Backend, w(1, 10));
        p.add(0, Queued::Server(a), w(2, 20));
        p.add(0, Queued::Backend, w(3, 20));
        p.add(0, Queued::Server(a), w(4, 30));
        assert_eq!(p.next(0, a, true).map(|x| x.slot), Some(1));
        // Both heads queued at 20 ms: the server's first.
        assert_eq!(p.next(0, a, true).map(|x| x.slot), Some(2));
        assert_eq!(p.next(0, a, true).map(|x| x.slot), Some(3));
        assert_eq!(p.next(0, a, true).map(|x| x.slot), Some(4));
        assert_eq!(p.next(0, a, true), None);
        p.add(0, Queued::Backend, w(5, 40));
        // A server not usable takes nothing from the backend's queue.
        assert_eq!(p.next(0, a, false), None);
        assert_eq!(p.next(0, NodeId(1), true).map(|x| x.slot), Some(5));
    }

    /// `assign_server_and_queue`: `maxqueue` bounds the server's queue
    /// (`srv->queue.length >= srv->maxqueue`); 0 is unlimited; a request
    /// leaving (`pendconn_cond_unlink`) keeps the others' order.
    #[test]
    fn maxqueue_bounds_the_server_queue_and_leaving_keeps_the_order() {
        let a = NodeId(0);
        let mut p = queues(json!({}), 2);
        assert!(!p.server_queue_full(0, a));
        p.add(0, Queued::Server(a), w(1, 0));
        p.add(0, Queued::Server(a), w(2, 1));
        assert!(p.server_queue_full(0, a));
        p.add(0, Queued::Server(a), w(3, 2));
        p.unlink(0, Queued::Server(a), 2);
        assert_eq!(p.server_len(0, a), 2);
        assert_eq!(p.next(0, a, false).map(|x| x.slot), Some(1));
        assert_eq!(p.next(0, a, false).map(|x| x.slot), Some(3));
        let mut unlimited = queues(json!({}), 0);
        for i in 0..100 {
            unlimited.add(0, Queued::Server(a), w(i, 0));
        }
        assert!(!unlimited.server_queue_full(0, a));
    }

    /// `timeout queue` defaults to `timeout connect` (`cfgparse.c`), none
    /// when neither is set; `pendconn_redistribute` needs `option
    /// redispatch` without `option persist`; no queues without `max_conns`.
    #[test]
    fn the_queue_timeout_and_redistribution_follow_the_backend() {
        let ms = crate::engine::SimDuration::from_millis;
        let p = queues(json!({"timeout_connect": "1s"}), 0);
        assert_eq!(p.timeout, Some(ms(1000)));
        let p = queues(json!({"timeout_connect": "1s", "timeout_queue": "30s"}), 0);
        assert_eq!(p.timeout, Some(ms(30_000)));
        assert_eq!(queues(json!({}), 0).timeout, None);
        assert!(!queues(json!({}), 0).redistribute);
        assert!(queues(json!({"redispatch": true}), 0).redistribute);
        let persist = json!({"redispatch": true, "cookie": {"persist": true}});
        let m = model(
            persist,
            json!([{"name": "a", "max_conns": 1}]),
            json!({"kind": "open", "rate_per_s": 1.0, "keys": 10}),
        );
        assert!(!Pending::of(&m).unwrap().redistribute);
        let m = model(
            json!({}),
            json!([{"name": "a"}]),
            json!({"kind": "open", "rate_per_s": 1.0}),
        );
        assert!(Pending::of(&m).is_none());
    }

    /// The measured burst (docs/calibration.md): with `timeout queue 1s`,
    /// the first three are served (0.4, 0.79, 1.18 s), the last three
    /// answered 503 after 1 s in the queue.
    #[test]
    fn a_full_server_queues_and_the_queue_timeout_answers_503() {
        let m = burst(
            json!({"timeout_connect": "5s", "timeout_queue": "1s"}),
            "20s",
        );
        let s = World::new(&m, m.seed, None).run();
        assert_eq!(s.client.requests, 6);
        assert_eq!(s.client.status.get("200"), Some(&3));
        assert_eq!(s.client.status.get("503"), Some(&3));
        let q = s.queues.unwrap();
        assert_eq!((q.queued, q.served, q.timeouts, q.abandoned), (5, 2, 3, 0));
        // The third waited 0.8 s less its 20 ms head start.
        assert!((q.max_wait_s - 1.0).abs() < 1e-9, "{q:?}");
        // No connection was tried for a 503: no failure was counted.
        assert_eq!(s.nodes[0].failures, 0);
        assert_eq!(s.nodes[0].attempts, 3);
    }

    /// Without `timeout queue` and `timeout connect` the queue waits for
    /// ever: every request is served, one after the other. A client giving
    /// up on a request in service releases its slot to the next queued one.
    #[test]
    fn without_a_queue_timeout_requests_wait_until_their_client_gives_up() {
        let m = burst(json!({}), "20s");
        let s = World::new(&m, m.seed, None).run();
        assert_eq!(s.client.status.get("200"), Some(&6));
        let q = s.queues.unwrap();
        assert_eq!((q.queued, q.served, q.timeouts), (5, 5, 0));
        assert!((q.max_wait_s - 1.95).abs() < 1e-9, "{q:?}");
        let m = burst(json!({}), "1s");
        let s = World::new(&m, m.seed, None).run();
        let q = s.queues.unwrap();
        // Answered at 0.4 and 0.8 s; the third, in service from 0.8 s, is
        // given up at 1.02 s, which hands its slot to the fourth, whose
        // client gives up 10 ms later, and so on: none is given up queued.
        assert_eq!(s.client.status.get("200"), Some(&2));
        assert_eq!(s.client.timeouts, 4);
        assert_eq!((q.queued, q.served, q.abandoned), (5, 5, 0));
    }

    /// A model whose nodes have no `max_conns` has no queues: a full
    /// server still fails at once, and the summary has no `queues`.
    #[test]
    fn no_max_conns_no_queues() {
        let m = model(
            json!({"timeout_queue": "1s"}),
            json!([{"name": "s1", "service_time": {"dist": "constant", "value": "400ms"}}]),
            json!({"kind": "open", "rate_per_s": 100.0, "arrivals": "constant",
                   "schedule": [{"at": "55ms", "rate_per_s": 0.0}]}),
        );
        let s = World::new(&m, m.seed, None).run();
        assert!(s.queues.is_none());
        assert_eq!(s.client.status.get("200"), Some(&6));
    }
}
