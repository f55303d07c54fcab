//! The request path of an HAProxy 2.6 backend (`flavor: haproxy`): the
//! pipeline of [`super`] with HAProxy's answers after a failed connect and on
//! the response. The functions named are HAProxy's.
//!
//! - No usable server: 503 at once (`srv_redispatch_connect`, src/backend.c,
//!   on `SRV_STATUS_NOSRV`; the status comes from `http_return_srv_error`,
//!   src/http_ana.c). That is `connect` in [`super`].
//! - A failed connect (refused, or `timeout connect` expired) is retried at
//!   most `retries` times: `back_handle_st_cer` (src/backend.c) counts the
//!   retry and, when they have run out, gives up with 503
//!   (`http_return_srv_error`).
//! - The retry goes to the same server unless `option redispatch` applies:
//!   `stream_choose_redispatch` (include/haproxy/stream.h) redispatches when
//!   the server is down, on every `redispatch_after`-th retry (counted from
//!   the last one when negative), or at once when the balancer is of the
//!   round-robin kind (`roundrobin`, `random`) and more than one server is up.
//! - After a refused connect (an asynchronous error) `back_handle_st_cer`
//!   waits min(1 s, `timeout connect`) in the turn-around state before
//!   retrying, unless it redispatched with a round-robin-kind balancer and
//!   more than one server up; `back_try_conn_req` (src/backend.c) ends the
//!   wait. After a connect timeout it retries at once.
//! - On the response (`http_wait_for_response`, src/http_ana.c) any status
//!   is relayed; the server closing before a header is a 502, `timeout
//!   server` a 504. Neither is retried. For a request that is not the
//!   first of its keep-alive client connection (`TX_NOT_FIRST`, with
//!   `gateway.pool`), a read error or close goes to `abort_keep_alive`: the
//!   client connection is closed without an answer (status 0 in hcsim), not
//!   logged and not counted by `observe`.

use super::super::{Event, Fail, NodeId, World};
use super::Reply;
use super::balancer::at_max_conns;
use super::balancer::pick::Pickers;
use crate::engine::SimDuration;
use crate::policy::{AttemptResult, Charge};
use crate::spec::{Balancer, GatewayFlavor, Model};

/// An HAProxy backend's settings, resolved.
#[derive(Clone, Debug)]
pub(super) struct Haproxy {
    pub(super) retries: u32,
    pub(super) redispatch_after: Option<i32>,
    /// `timeout connect` as configured (the turn-around pause uses it).
    pub(super) timeout_connect: Option<SimDuration>,
    pub(super) timeout_server: Option<SimDuration>,
}

impl Haproxy {
    /// The backend's settings with `flavor: haproxy`, else `None` (nginx).
    pub(super) fn of(model: &Model) -> Option<Haproxy> {
        (model.gateway.flavor == GatewayFlavor::Haproxy).then(|| {
            let h = model.gateway.haproxy();
            Haproxy {
                retries: h.retries,
                redispatch_after: h.redispatch.after(),
                timeout_connect: h.timeout_connect,
                timeout_server: h.timeout_server,
            }
        })
    }
}

impl World<'_> {
    /// A response header (or a close) from `node` reached HAProxy: relay
    /// the status, or answer 502 if the server closed before it.
    pub(super) fn haproxy_response(&mut self, slot: u32, node: NodeId, reply: Reply) {
        let scope = self.gw.reqs[slot as usize].scope;
        self.haproxy_answer(slot, node, reply);
        // `process_srv_queue`: the released slot goes to a queued request.
        self.hap_released(scope, node);
    }

    fn haproxy_answer(&mut self, slot: u32, node: NodeId, reply: Reply) {
        match reply {
            Reply::Reset if self.pool.is_some() && self.pool_keepalive_abort(slot, node) => {
                // `abort_keep_alive`: the client's keep-alive connection is
                // closed without an answer (status 0); no check counts it.
                self.free_peer(slot, node, Charge::Success, AttemptResult::ClientAbort);
                self.finalize(slot, 0, None);
            }
            Reply::Reset => {
                self.free_peer(slot, node, Charge::Failed, AttemptResult::Reset);
                self.finalize(slot, 502, None);
            }
            Reply::Status(s) => {
                if self.gw.hash.cookie.is_some() {
                    self.cookie_answered(slot, node);
                }
                self.free_peer(slot, node, Charge::Success, AttemptResult::Status(s));
                self.finalize(slot, s, Some(node));
            }
        }
    }

    /// HAProxy: `timeout server` expired (504), or a connect failed
    /// (`back_handle_st_cer`): retry, on the same server or redispatched.
    pub(super) fn haproxy_failed(&mut self, slot: u32, node: NodeId, why: Fail) {
        let scope = self.gw.reqs[slot as usize].scope;
        if !self.haproxy_retry_or_end(slot, node, why) {
            // `sess_change_server(s, NULL)` then `process_srv_queue`: the
            // request gave up or was redispatched.
            self.hap_released(scope, node);
        }
    }

    /// The body of [`haproxy_failed`](Self::haproxy_failed): whether the
    /// request keeps its slot of `node` (a retry on the same server).
    fn haproxy_retry_or_end(&mut self, slot: u32, node: NodeId, why: Fail) -> bool {
        let result = match why {
            Fail::Refused => AttemptResult::Refused,
            Fail::ConnectTimeout => AttemptResult::ConnectTimeout,
            Fail::Rejected => AttemptResult::Rejected,
            Fail::ReadTimeout => {
                self.free_peer(slot, node, Charge::Failed, AttemptResult::ReadTimeout);
                self.finalize(slot, 504, None);
                return false;
            }
        };
        // Each failed attempt is an observe layer-4 error (in on_attempt).
        self.free_peer(slot, node, Charge::Failed, result);
        let Some(h) = self.gw.hap.clone() else {
            return false;
        };
        let r = &self.gw.reqs[slot as usize];
        if r.retries_done >= h.retries {
            self.finalize(slot, 503, None);
            return false;
        }
        let (scope, retries_done) = (r.scope, r.retries_done + 1);
        let now = self.fleet.now_in(scope, self.q.now());
        if !self.gw.direct {
            self.refresh_due(now.t);
        }
        let (policies, local) = self.replica_policies(scope);
        let srv_act = if self.gw.direct {
            let up = |n: &&NodeId| {
                !self.gw.down[n.index()] && policies.iter().all(|p| p.is_routable(local, **n, now))
            };
            self.gw.primary.iter().filter(up).count()
        } else {
            self.gw.routing.healthy(scope) as usize
        };
        let up = |n: NodeId| {
            !self.gw.down[n.index()]
                && if self.gw.direct {
                    policies.iter().all(|p| p.is_routable(local, n, now))
                } else {
                    self.gw.routing.is_routable(self.gw.k(scope, n))
                }
        };
        let rr = matches!(
            self.model.gateway.balancer,
            Balancer::RoundRobin | Balancer::RandomTwo
        );
        // stream_choose_redispatch: the immediate redispatch is for a
        // request without SF_DIRECT (not sent by its cookie).
        let direct = self.cookie_direct(slot);
        let redispatch = h.redispatch_after.is_some_and(|after| {
            let nth = if after > 0 {
                retries_done as i32 % after == 0
            } else {
                let m = h.retries as i32 + 1 + after;
                m != 0 && retries_done as i32 % m == 0
            };
            !up(node) || nth || (srv_act > 1 && rr && !direct)
        });
        if redispatch && direct {
            // SF_DIRECT cleared: the answer will set the cookie.
            if let Some(c) = self.gw.hash.cookie.as_deref_mut() {
                c.clear_direct(slot);
            }
        }
        // An asynchronous error (refused) pauses before retrying the same
        // server; a connect timeout or an immediate RR redispatch does not.
        let pause = why == Fail::Refused && (!redispatch || !rr || srv_act <= 1);
        let delay = if pause {
            h.timeout_connect.map_or(SimDuration::from_secs(1), |t| {
                t.min(SimDuration::from_secs(1))
            })
        } else {
            SimDuration::ZERO
        };
        let r = &mut self.gw.reqs[slot as usize];
        r.retries_done = retries_done;
        r.retry_same = (!redispatch).then_some(node);
        let keep = !redispatch && self.gw.pending.is_some();
        if keep {
            // The retry on the same server keeps its slot (`srv_conn`).
            self.hap_hold_slot(scope, node);
        } else if redispatch {
            // `stream_choose_redispatch` releases it before balancing.
            self.hap_released(scope, node);
        }
        let r = &mut self.gw.reqs[slot as usize];
        if delay.is_zero() {
            self.retry(slot);
        } else {
            let generation = r.att_gen;
            self.q
                .schedule(self.q.now() + delay, Event::Retry { slot, generation });
        }
        // Released already when redispatched; kept on the same server.
        true
    }

    /// HAProxy's turn-around pause ended.
    pub(crate) fn on_retry(&mut self, slot: u32, generation: u32) {
        let Some(r) = self.gw.reqs.get(slot as usize) else {
            return;
        };
        if r.active && r.att_gen == generation && r.node.is_none() {
            if self.gw.flavored.is_some() {
                self.flavor_retry(slot);
            } else {
                self.retry(slot);
            }
        }
    }

    /// `fwrr_get_next_server(px, srvtoavoid)` (src/lb_fwrr.c) for a
    /// redispatch: when the server to avoid comes up first in the rotation,
    /// its position is updated (`fwrr_update_position`) before it is set
    /// aside, so it uses up its turn, and the next server is taken. Without
    /// this, the dead server kept its turn and took the next new request.
    fn spend_avoided_turn(&mut self, slot: u32, avoid: NodeId) {
        if self.model.gateway.balancer != Balancer::RoundRobin
            || self.gw.set_of[avoid.index()].backup
        {
            return;
        }
        let scope = self.gw.reqs[slot as usize].scope;
        let s = scope as usize;
        if !self.gw.direct {
            let at = self.gw.set_of[avoid.index()].pos;
            let gw = &mut self.gw;
            if let Pickers::Rotation(v) = &mut gw.pickers
                && v[s * 2].peek(gw.rr_cur[s]) == Some(at)
            {
                v[s * 2].pick(&mut gw.rr_cur[s]);
            }
            return;
        }
        let now = self.fleet.now_in(scope, self.q.now());
        let (policies, local) = self.replica_policies(scope);
        let cur = self.gw.rr_cur[s];
        let gw = &self.gw;
        let next = gw
            .primary
            .iter()
            .filter(|&&n| {
                !gw.down[n.index()]
                    && !at_max_conns(gw.max_conns[n.index()], gw.conns[gw.k(scope, n)])
                    && policies.iter().all(|p| p.is_routable(local, n, now))
            })
            .map(|&n| (gw.rr_pos[gw.k(scope, n)].max(cur), n))
            .min_by_key(|&(pos, n)| (pos, gw.set_of[n.index()].pos));
        if let Some((pos, n)) = next
            && n == avoid
        {
            let k = self.gw.k(scope, n);
            self.gw.rr_cur[s] = pos;
            self.gw.rr_pos[k] = pos + self.gw.rr_step[n.index()];
        }
    }

    /// HAProxy: the next connection attempt of a request.
    fn retry(&mut self, slot: u32) {
        let r = &mut self.gw.reqs[slot as usize];
        if let Some(node) = r.retry_same {
            if self.gw.pending.is_some() {
                // The slot held through the pause is the attempt's.
                let scope = r.scope;
                self.hap_drop_slot(scope, node);
            }
            self.take_peer(slot, node);
            self.start_attempt(slot, node);
            return;
        }
        // Redispatch: back to load balancing, avoiding the last server when
        // another one is usable.
        let last = r.last_node;
        r.in_backup = false;
        r.clear_tried();
        if let Some(l) = last {
            r.mark_tried(l);
            self.spend_avoided_turn(slot, l);
        }
        let picked = self.select_peer(slot).or_else(|| {
            let r = &mut self.gw.reqs[slot as usize];
            r.in_backup = false;
            r.clear_tried();
            self.select_peer(slot)
        });
        match picked {
            Some(node) => self.start_attempt(slot, node),
            None if self.hap_queue_if_full(slot) => {}
            None => self.finalize(slot, 503, None),
        }
    }
}
