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
    /// Some node has `on_marked_down` or `on_marked_up`: the checks'
    /// DOWN and UP notices may kill requests ([`World::haproxy_marked`]).
    pub(crate) on_marked: bool,
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
                on_marked: model
                    .nodes
                    .iter()
                    .any(|n| n.on_marked_down.is_some() || n.on_marked_up.is_some()),
            }
        })
    }
}

impl World<'_> {
    /// Policy instance `i` marked `node` DOWN (`up` false) or UP. After
    /// `srv_update_status` (src/server.c, 2.6): on the DOWN transition of a
    /// server with `on-marked-down shutdown-sessions`, `srv_shutdown_streams`
    /// kills its streams; on the UP transition of a non-backup server with
    /// `on-marked-up shutdown-backup-sessions` (and a weight above 0, which
    /// every node that can come UP has here), `srv_shutdown_backup_streams`
    /// kills those of every backup server. Only the checks of instance `i`'s
    /// own replica (its own HAProxy process) act, and only on its requests.
    ///
    /// `stream_shutdown` (src/stream.c) shuts the response channel; a stream
    /// still waiting for its response header then ends in
    /// `http_wait_for_response` (src/http_ana.c) as on a server close: 502
    /// (the termination flags `DH`: `SF_ERR_DOWN` was set first), or
    /// `abort_keep_alive` for a request that is not its connection's first;
    /// not retried (that needs `retry-on` layer-7 retries). That is
    /// [`haproxy_response`](Self::haproxy_response) with a reset, now.
    #[cold]
    pub(crate) fn haproxy_marked(&mut self, i: usize, node: NodeId, up: bool) {
        use crate::policy::{ActiveProbeSpec, PolicySpec};
        let layout = self.fleet.layout();
        if !matches!(
            self.model.policies[layout.policy_index(i)],
            PolicySpec::ActiveProbe(ActiveProbeSpec::Haproxy(_))
        ) {
            return;
        }
        let n = &self.model.nodes[node.index()];
        let on: &[NodeId] = match up {
            false if n.on_marked_down.is_some() => &[node],
            true if n.on_marked_up.is_some() && !n.backup => &self.gw.backup,
            _ => return,
        };
        let scopes = layout.scopes_of(self.fleet.replica_of_policy(i));
        let victims: Vec<(u32, NodeId)> = (self.gw.reqs.iter().enumerate())
            .filter(|(_, r)| r.active && scopes.contains(&(r.scope as usize)))
            .filter_map(|(s, r)| r.node.filter(|x| on.contains(x)).map(|x| (s as u32, x)))
            .collect();
        // Through the out-of-line dispatch: no new caller of the inlined
        // response path, whose inlining the other products' paths keep.
        for (slot, x) in victims {
            self.product_response(slot, x, Reply::Reset);
        }
    }

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

#[cfg(test)]
mod tests {
    use crate::spec::Model;
    use crate::world::{TraceLine, run_traced};
    use serde_json::{Value, json};
    use std::path::Path;

    /// A and B behind HAProxy's HTTP checks (`inter 500ms rise 2 fall 2`);
    /// from 2 s to 4 s A's work takes 5 s more, so its checks time out and
    /// A goes DOWN at 3.5416 s, and its requests of that window run long.
    fn model(a: Value, b: Value) -> Model {
        let mut nodes = [a, b];
        for (n, name) in nodes.iter_mut().zip(["A", "B"]) {
            n["name"] = json!(name);
            if n.get("service_time").is_none() {
                n["service_time"] = json!({"dist": "constant", "value": "10ms"});
            }
        }
        let doc = json!({
            "name": "m", "seed": 1, "duration": "10s",
            "clients": {"kind": "open", "rate_per_s": 20.0, "timeout": "30s"},
            "gateway": {"flavor": "haproxy"},
            "nodes": nodes,
            "faults": [{"kind": "slow", "node": "A", "at": "2s", "for": "2s", "extra": "5s"}],
            "policies": [{"kind": "active_probe", "flavor": "haproxy", "probe": "http",
                          "inter": "500ms", "rise": 2, "fall": 2}]
        });
        Model::from_document(&doc, Path::new("m.json")).unwrap()
    }

    fn traced(m: &Model) -> (crate::metrics::RunSummary, Vec<TraceLine>) {
        let mut lines = Vec::new();
        let s = run_traced(m, 1, &mut |l: &TraceLine| lines.push(l.clone()));
        (s, lines)
    }

    /// `srv_update_status` (src/server.c, 2.6) calls `srv_shutdown_streams`
    /// on the DOWN transition of a server with `on-marked-down
    /// shutdown-sessions`; each stream, waiting for its response header,
    /// ends in `http_wait_for_response`'s server-close branch (src/http_ana.c):
    /// a 502, not retried. Without the keyword the same requests finish.
    #[test]
    fn shutdown_sessions_ends_the_requests_of_a_server_marked_down_with_502() {
        let (with, lines) = traced(&model(
            json!({"on_marked_down": "shutdown_sessions"}),
            json!({}),
        ));
        let (without, lines0) = traced(&model(json!({}), json!({})));
        assert_eq!(with.nodes[0].ejections, 1);
        let killed: Vec<&TraceLine> = lines.iter().filter(|l| l.result == "reset").collect();
        assert!(killed.len() >= 10, "{killed:?}");
        assert!(
            killed.iter().all(|l| l.node == "A" && l.t_s == 3.5416),
            "{killed:?}"
        );
        assert_eq!(with.client.status.get("502"), Some(&(killed.len() as u64)));
        // Not retried: one attempt per request, in both runs.
        assert_eq!(lines.len() as u64, with.client.requests);
        assert_eq!(lines0.len() as u64, without.client.requests);
        assert_eq!(without.client.status.get("502"), None);
        assert!(lines0.iter().all(|l| l.result == "200"));
        assert_eq!(without.client.requests, with.client.requests);
        // Started from 2 s, killed at 3.5416 s; finished after 5 s without.
        assert!(without.client.latency_ms.max.unwrap() >= 5000.0);
        assert!(with.client.latency_ms.max.unwrap() < 1541.6 + 1.0);
    }

    /// `srv_update_status` calls `srv_shutdown_backup_streams` when a
    /// non-backup server with `on-marked-up shutdown-backup-sessions` comes
    /// UP: the streams of every backup server end. Here the backup B's
    /// requests take 3 s (its checks go to another port and pass) and A, DOWN
    /// from 3.5416 s, is UP again at 4.5624 s.
    #[test]
    fn shutdown_backup_sessions_ends_the_backups_requests_when_a_primary_comes_up() {
        let b = json!({"backup": true, "check_port": 9090,
                       "service_time": {"dist": "constant", "value": "3s"}});
        let (with, lines) = traced(&model(
            json!({"on_marked_up": "shutdown_backup_sessions"}),
            b.clone(),
        ));
        let (without, lines0) = traced(&model(json!({}), b.clone()));
        let killed: Vec<&TraceLine> = lines.iter().filter(|l| l.result == "reset").collect();
        assert!(killed.len() >= 10, "{killed:?}");
        assert!(
            killed.iter().all(|l| l.node == "B" && l.t_s == 4.5624),
            "{killed:?}"
        );
        assert_eq!(with.client.status.get("502"), Some(&(killed.len() as u64)));
        assert!(lines0.iter().all(|l| l.result == "200"));
        assert_eq!(without.client.status.get("502"), None);
        // On the backup itself the keyword does nothing (`!(s->flags & SRV_F_BACKUP)`).
        let mut on_backup = b;
        on_backup["on_marked_up"] = json!("shutdown_backup_sessions");
        let (_, lines1) = traced(&model(json!({}), on_backup));
        assert!(lines1.iter().all(|l| l.result == "200"));
    }
}
