//! The pool's hooks in the request path: an attempt takes an idle
//! connection or waits for one (`start_attempt`), a new connection is
//! counted (`open_connection`), the attempt's connection is kept or closed
//! when its peer is freed (`free_peer`), and the retry rules that depend on
//! the connection (`next_upstream`).

use super::super::super::{Event, Fail, NodeId, World, lane};
use super::super::Reply;
use super::{Cause, ConnTimer, NONE, Rules};
use crate::engine::SimTime;
use crate::policy::{AttemptResult, Charge};
use crate::spec::connections::HaproxyOption;

/// What a reused connection does with the request sent on it.
enum Fate {
    /// The node has it open: the request reaches the node.
    Served,
    /// The node closed it before the request reached it; its FIN reaches
    /// the gateway at this time (or did, unseen, during a partition: then
    /// the request meets a reset one round trip from now).
    Closed(SimTime, Cause),
}

impl World<'_> {
    /// `start_attempt` with a pool: the request goes on an idle connection
    /// to `node` if the product's rules give it one, or (Envoy) waits for
    /// one or overflows. `false`: open a new connection as without a pool.
    #[cold]
    #[inline(never)]
    pub(in crate::world) fn pool_attempt(
        &mut self,
        slot: u32,
        node: NodeId,
        generation: u32,
        cap_at: SimTime,
    ) -> bool {
        let now = self.q.now();
        let r = &self.gw.reqs[slot as usize];
        let (scope, id, client) = (r.scope, r.id, r.client);
        let Some(pool) = self.pool.as_deref_mut() else {
            return false;
        };
        if pool.slot(slot).request != id {
            pool.begin_request(slot, id, client, scope, now);
        }
        let s = pool.slot(slot);
        s.reused = false;
        s.cause = Cause::None;
        let not_first = s.not_first;
        let k = pool.k(scope, node);
        let replica = pool.replica(scope);
        if let Rules::Envoy { cb, .. } = &pool.rules
            && pool.breakers[replica].requests >= cb.max_requests
        {
            self.pool_overflow(slot, node);
            return true;
        }
        if let Some(conn) = pool.take_idle(k, now, not_first) {
            self.send_on(slot, node, conn, generation, cap_at);
            return true;
        }
        let Rules::Envoy { cb, .. } = &pool.rules else {
            return false;
        };
        let b = &pool.breakers[replica];
        if b.connections < cb.max_connections {
            return false;
        }
        if b.pending >= cb.max_pending_requests {
            self.pool_overflow(slot, node);
            return true;
        }
        // Pending: waits for a connection of this host to be ready; the
        // route's timeout (`proxy_read_timeout`) bounds the wait.
        pool.breakers[replica].pending += 1;
        pool.pending[k].push_back((slot, generation));
        pool.slot(slot).pending = true;
        let at = (now + self.model.gateway.proxy_read_timeout).min(cap_at);
        let why = Fail::ReadTimeout;
        self.q.schedule(
            at,
            Event::AttemptFailed {
                slot,
                generation,
                why,
            },
        );
        true
    }

    /// Sends the attempt `generation` of `slot` on the idle connection `conn`.
    fn send_on(&mut self, slot: u32, node: NodeId, conn: u32, generation: u32, cap_at: SimTime) {
        let now = self.q.now();
        let (scope, counted) = {
            let r = &self.gw.reqs[slot as usize];
            (r.scope, r.counted)
        };
        let n = &self.nodes[node.index()];
        let (partitioned, half) = (n.partitioned, self.model.gateway.rtt.half());
        let Some(pool) = self.pool.as_deref_mut() else {
            return;
        };
        let k = pool.k(scope, node);
        let replica = pool.replica(scope);
        let stopped_since = pool.stop_from[node.index()];
        let c = &mut pool.conns[conn as usize];
        c.busy = true;
        c.requests += 1;
        let fate = if partitioned {
            // Lost on the way like any request in a partition.
            Fate::Served
        } else if c.peer_gone {
            Fate::Closed(now + half + half, Cause::ResetByPeer)
        } else if c.node_close_at != SimTime::MAX
            && c.node_close_at <= now + half
            && stopped_since.is_none_or(|s| c.node_close_at < s)
        {
            Fate::Closed((c.node_close_at + half).max(now), Cause::ClosedOnReuse)
        } else {
            Fate::Served
        };
        c.node_close_at = SimTime::MAX;
        let s = pool.slot(slot);
        s.conn = conn;
        s.reused = true;
        pool.counts[node.index()].reused += counted as u64;
        match pool.rules {
            Rules::Haproxy { .. } => pool.use_server_conn(k),
            Rules::Envoy { .. } => {
                pool.breakers[replica].requests += 1;
                pool.slot(slot).active = true;
            }
            Rules::Nginx { .. } => {}
        }
        // Envoy's onPoolReady reports a connect success for a reused
        // connection too.
        self.tell_connected(slot, node);
        let read_timeout = match &self.gw.hap {
            None => Some(self.model.gateway.proxy_read_timeout),
            Some(h) => h.timeout_server,
        };
        let r = &mut self.gw.reqs[slot as usize];
        r.sent = true;
        r.read_deadline = read_timeout.map_or(SimTime::MAX, |t| now + t).min(cap_at);
        r.read_timer = false;
        match fate {
            Fate::Served if half.is_zero() => self.on_request_at_node(slot, generation, node),
            Fate::Served => self.q.schedule_in_lane(
                lane::HALF_RTT,
                now + half,
                Event::AtNode {
                    slot,
                    generation,
                    node,
                },
            ),
            Fate::Closed(at, cause) => {
                if let Some(p) = self.pool.as_deref_mut() {
                    p.slot(slot).cause = cause;
                }
                let reply = Reply::Reset;
                self.q.schedule(
                    at,
                    Event::Response {
                        slot,
                        generation,
                        reply,
                    },
                );
            }
        }
    }

    /// `open_connection` connected the attempt of `slot` to `node`: a new
    /// connection, busy with it.
    #[cold]
    #[inline(never)]
    pub(in crate::world) fn pool_connected(&mut self, slot: u32, node: NodeId) {
        let now = self.q.now();
        let r = &self.gw.reqs[slot as usize];
        let (scope, counted) = (r.scope, r.counted);
        let Some(pool) = self.pool.as_deref_mut() else {
            return;
        };
        let id = pool.open(scope, node, now);
        let k = pool.k(scope, node);
        let replica = pool.replica(scope);
        let s = pool.slot(slot);
        s.conn = id;
        s.reused = false;
        pool.counts[node.index()].opened += counted as u64;
        match pool.rules {
            Rules::Haproxy { .. } => pool.use_server_conn(k),
            Rules::Envoy { .. } => {
                let b = &mut pool.breakers[replica];
                b.connections += 1;
                b.requests += 1;
                pool.slot(slot).active = true;
            }
            Rules::Nginx { .. } => {}
        }
    }

    /// Envoy's circuit breaker refused the attempt of `slot` to `node`: a
    /// local 503 (`UO`), reported to no policy and not retried.
    fn pool_overflow(&mut self, slot: u32, node: NodeId) {
        let r = &mut self.gw.reqs[slot as usize];
        r.node = None;
        let (scope, counted, id) = (r.scope, r.counted, r.id);
        let k = self.gw.k(scope, node);
        self.gw.conns[k] = self.gw.conns[k].saturating_sub(1);
        if !self.gw.direct {
            self.conns_changed(scope, node);
        }
        if let Some(p) = self.pool.as_deref_mut() {
            p.counts[node.index()].overflow += counted as u64;
        }
        if self.obs.any {
            self.observe_overflow(id, scope, node);
        }
        self.finalize(slot, 503, None);
    }

    /// `free_peer` with a pool: the attempt's connection is kept for reuse
    /// or closed, by the product's rules and the node's limits.
    #[cold]
    #[inline(never)]
    pub(in crate::world) fn pool_free(
        &mut self,
        slot: u32,
        node: NodeId,
        charge: Charge,
        result: AttemptResult,
    ) {
        let now = self.q.now();
        let r = &self.gw.reqs[slot as usize];
        let (scope, counted) = (r.scope, r.counted);
        let half = self.model.gateway.rtt.half();
        let Some(pool) = self.pool.as_deref_mut() else {
            return;
        };
        let cause = pool.slot(slot).cause;
        pool.last_cause = cause;
        if cause != Cause::None && result == AttemptResult::Reset && self.obs.events.is_some() {
            self.log_pool_reset(scope, node, cause);
        }
        let Some(pool) = self.pool.as_deref_mut() else {
            return;
        };
        let k = pool.k(scope, node);
        let replica = pool.replica(scope);
        pool.slot(slot);
        let s = &mut pool.slots[slot as usize];
        let (conn, reused) = (s.conn, s.reused);
        if s.pending {
            s.pending = false;
            let q = &mut pool.pending[k];
            if let Some(i) = q.iter().position(|&(x, _)| x == slot) {
                q.remove(i);
            }
            let b = &mut pool.breakers[replica];
            b.pending = b.pending.saturating_sub(1);
            return;
        }
        if s.active {
            s.active = false;
            let b = &mut pool.breakers[replica];
            b.requests = b.requests.saturating_sub(1);
        }
        s.conn = NONE;
        pool.count_result(node, result, reused, counted);
        if conn == NONE {
            return;
        }
        let c = &pool.conns[conn as usize];
        let answered = matches!(result, AttemptResult::Status(_));
        let node_keeps = c.requests < pool.node_requests[node.index()];
        let keep = answered
            && node_keeps
            && match pool.rules {
                Rules::Nginx {
                    requests,
                    time,
                    reuses,
                    ..
                } => {
                    reuses
                        && charge != Charge::Failed
                        && c.requests < requests
                        && now.saturating_since(c.opened) <= time
                }
                Rules::Haproxy { reuse, option, .. } => {
                    reuse != crate::spec::connections::HttpReuse::Never
                        && option == HaproxyOption::HttpKeepAlive
                }
                Rules::Envoy { max_requests, .. } => c.requests < max_requests,
            };
        if let Rules::Haproxy { .. } = pool.rules {
            // `srv_add_to_idle_list` counts this connection as used until it is admitted.
            let admitted = keep && pool.admit_idle(k, conn, now);
            pool.servers[k].used = pool.servers[k].used.saturating_sub(1);
            if admitted {
                self.pool_idle(conn, now, half);
                self.arm_purge(k);
            } else if let Some(p) = self.pool.as_deref_mut() {
                p.close(conn);
            }
            return;
        }
        if keep {
            self.pool_idle(conn, now, half);
        } else {
            pool.close(conn);
        }
        if let Some(p) = self.pool.as_deref_mut()
            && let Rules::Envoy { .. } = p.rules
            && !p.pending[k].is_empty()
        {
            // A ready connection, or room for a new one: the oldest waiting
            // request takes it (`onUpstreamReady`), once this event is over.
            self.q.schedule(
                now,
                Event::Conn {
                    id: k as u32,
                    what: ConnTimer::Attach,
                },
            );
        }
    }

    /// Connection `conn` goes idle now: in its (scope, node) list and, for
    /// nginx, its worker's cache (the least recently cached one closed when
    /// it is full); the node starts its own keep-alive timer, from when it
    /// sent its answer.
    fn pool_idle(&mut self, conn: u32, now: SimTime, half: crate::engine::SimDuration) {
        let Some(pool) = self.pool.as_deref_mut() else {
            return;
        };
        let c = &mut pool.conns[conn as usize];
        c.busy = false;
        c.idle_since = now;
        let (scope, node) = (c.scope, c.node);
        c.node_close_at = match pool.node_timeout[node.index()] {
            Some(t) => SimTime::from_micros(now.as_micros().saturating_sub(half.as_micros())) + t,
            None => SimTime::MAX,
        };
        let k = pool.k(scope, node);
        pool.idle[k].push(conn);
        if let Rules::Nginx { keepalive, .. } = pool.rules {
            let cache = &mut pool.cache[scope as usize];
            cache.push(conn);
            if cache.len() > keepalive as usize {
                let lru = cache[0];
                pool.unlist(lru);
                pool.close(lru);
            }
        }
    }

    /// nginx (`ngx_http_upstream_next`): an error on a cached connection
    /// does not use up a try (`u->peer.tries++`), so a single server is
    /// tried once more.
    #[cold]
    #[inline(never)]
    pub(in crate::world) fn pool_after_failure(&mut self, slot: u32, error: bool) {
        let Some(pool) = self.pool.as_deref() else {
            return;
        };
        if error
            && matches!(pool.rules, Rules::Nginx { .. })
            && pool.slots.get(slot as usize).is_some_and(|s| s.reused)
        {
            let r = &mut self.gw.reqs[slot as usize];
            r.tries += 1;
        }
    }

    /// Envoy: may the request of `slot` be retried after `result`? Not a
    /// reset without `retry_on: reset`, nor beyond `max_retries` retries in
    /// flight in the replica (`RetryStateImpl::shouldRetry` gives back the
    /// request's previous retry first, then takes one).
    #[cold]
    #[inline(never)]
    pub(in crate::world) fn pool_may_retry(&mut self, slot: u32, result: AttemptResult) -> bool {
        let scope = self.gw.reqs[slot as usize].scope;
        let Some(pool) = self.pool.as_deref_mut() else {
            return true;
        };
        let Rules::Envoy {
            retry_on_reset,
            ref cb,
            ..
        } = pool.rules
        else {
            return true;
        };
        if result == AttemptResult::Reset && !retry_on_reset {
            return false;
        }
        let max = cb.max_retries;
        let replica = pool.replica(scope);
        let held = std::mem::take(&mut pool.slot(slot).retry_held);
        let b = &mut pool.breakers[replica];
        if held {
            b.retries = b.retries.saturating_sub(1);
        }
        if b.retries >= max {
            return false;
        }
        b.retries += 1;
        pool.slot(slot).retry_held = true;
        true
    }

    /// The request of `slot` ends: answered with `status` (`None`: the
    /// client gave up); `relayed`: a node's response. Its retry (Envoy) and
    /// its client connection (HAProxy) are given back.
    #[cold]
    #[inline(never)]
    pub(in crate::world) fn pool_request_done(
        &mut self,
        slot: u32,
        status: Option<u16>,
        relayed: bool,
    ) {
        let now = self.q.now();
        let (scope, client) = {
            let r = &self.gw.reqs[slot as usize];
            (r.scope, r.client)
        };
        let Some(pool) = self.pool.as_deref_mut() else {
            return;
        };
        let replica = pool.replica(scope);
        pool.slot(slot);
        let s = &mut pool.slots[slot as usize];
        if std::mem::take(&mut s.retry_held) {
            let b = &mut pool.breakers[replica];
            b.retries = b.retries.saturating_sub(1);
        }
        s.request = 0;
        // HAProxy closes the client connection after an answer of its own
        // (`http_reply_and_close`), and after every answer with `option httpclose`.
        let keeps = status.is_some()
            && relayed
            && !matches!(
                pool.rules,
                Rules::Haproxy {
                    option: HaproxyOption::Httpclose,
                    ..
                }
            );
        pool.clients.end(replica, client, keeps, now);
    }

    /// HAProxy: a read error or a close from the server before the response
    /// of a request that is not the first of its client connection ends in
    /// `abort_keep_alive` (`http_wait_for_response`, src/http_ana.c): the
    /// client connection is closed without an answer, nothing is logged and
    /// no health check hears of it.
    #[cold]
    #[inline(never)]
    pub(in crate::world) fn pool_keepalive_abort(&mut self, slot: u32, node: NodeId) -> bool {
        let counted = self.gw.reqs[slot as usize].counted;
        let Some(pool) = self.pool.as_deref_mut() else {
            return false;
        };
        let s = pool.slot(slot);
        if !s.not_first {
            return false;
        }
        let reused = s.reused;
        pool.count_result(node, AttemptResult::Reset, reused, counted);
        // Counted here: the peer is freed as a client abort.
        pool.slot(slot).reused = false;
        true
    }

    /// A timer of the pool.
    #[cold]
    #[inline(never)]
    pub(crate) fn on_conn_timer(&mut self, id: u32, what: ConnTimer) {
        match what {
            ConnTimer::Purge => self.purge(id as usize),
            ConnTimer::Attach => self.attach_pending(id as usize),
        }
    }

    /// Envoy's `onUpstreamReady` for (scope, node) `k`: waiting requests
    /// take ready connections, oldest first, or open a new one while the
    /// cluster is under `max_connections`.
    fn attach_pending(&mut self, k: usize) {
        loop {
            let Some(pool) = self.pool.as_deref_mut() else {
                return;
            };
            let Some(&(slot, generation)) = pool.pending[k].front() else {
                return;
            };
            let r = &self.gw.reqs[slot as usize];
            let live = r.active && r.att_gen == generation && r.node.is_some();
            let Some(node) = r.node.filter(|_| live) else {
                pool.pending[k].pop_front();
                continue;
            };
            let now = self.q.now();
            let scope = r.scope;
            let replica = pool.replica(scope);
            let conn = pool.take_idle(k, now, false);
            let Rules::Envoy { ref cb, .. } = pool.rules else {
                return;
            };
            if conn.is_none() && pool.breakers[replica].connections >= cb.max_connections {
                return;
            }
            pool.pending[k].pop_front();
            let b = &mut pool.breakers[replica];
            b.pending = b.pending.saturating_sub(1);
            pool.slot(slot).pending = false;
            // A new generation: the wait's timeout no longer applies.
            let r = &mut self.gw.reqs[slot as usize];
            r.att_gen = r.att_gen.wrapping_add(1);
            let generation = r.att_gen;
            match conn {
                Some(c) => self.send_on(slot, node, c, generation, SimTime::MAX),
                None => self.open_connection(slot, node, generation, SimTime::MAX),
            }
        }
    }
}

impl super::Pool {
    /// The client side of request `id` in `slot` (HAProxy: is it the first
    /// request of its client connection?).
    fn begin_request(&mut self, slot: u32, id: u64, client: Option<u32>, scope: u16, now: SimTime) {
        let replica = self.replica(scope);
        let keepalive = match self.rules {
            Rules::Haproxy {
                keepalive_timeout, ..
            } => keepalive_timeout,
            _ => None,
        };
        let not_first = self.clients.begin(replica, client, keepalive, now);
        let s = self.slot(slot);
        s.request = id;
        s.not_first = not_first;
        s.retry_held = false;
    }
}
