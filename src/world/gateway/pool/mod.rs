//! Connections kept for reuse (`gateway.pool`): per gateway scope (an
//! nginx worker without `zone`, an HAProxy process, an Envoy replica) and
//! node, the idle connections and the rules of the product that keeps them.
//! The other half of a connection, the node's (its own keep-alive timeout
//! and request limit, what its faults do to open connections), is in
//! `world/node_conn.rs`.
//!
//! A connection is one TCP connection with both ends' state: how many
//! requests it carried, when it went idle, and when the node closes it if
//! it stays idle (`node_close_at`). Expiries are checked when a connection
//! is looked up, not by timers: the gateway's own idle timeout closes the
//! oldest connections first, which is what a lookup that skips them sees,
//! and no event is queued per idle period.
//!
//! Per product (the functions named are theirs):
//! - nginx, `ngx_http_upstream_keepalive_module.c`:
//!   `ngx_http_upstream_get_keepalive_peer` asks the balancer first, then
//!   takes the most recently cached connection to that address;
//!   `ngx_http_upstream_free_keepalive_peer` caches a connection only if the
//!   attempt did not fail, the response allows keep-alive, it carried fewer
//!   than `keepalive_requests` requests and is younger than `keepalive_time`,
//!   closing the least recently cached one when the cache (`keepalive N`, all
//!   servers of the worker together) is full; `keepalive_close_handler`
//!   closes a cached connection when the node's FIN arrives or
//!   `keepalive_timeout` expires. An error on a cached connection gives the
//!   try back (`ngx_http_upstream_next`: `u->peer.tries++`).
//! - HAProxy 2.6, `connect_server` (src/backend.c): a request that is not
//!   the first of its client connection takes an idle server connection
//!   (the `idle` list, then `safe`, the oldest first); a first request takes
//!   one only with `http-reuse aggressive` (`safe` list) or `always` (both).
//!   `h1_detach` (src/mux_h1.c) hands a connection back to the `safe` list
//!   if it carried a request that was not its first, else to `idle`, when
//!   `srv_add_to_idle_list` (src/server.c) admits it; `srv_cleanup_idle_conns`
//!   closes half of the connections beyond recent need every
//!   `pool-purge-delay`.
//! - Envoy, `ConnPoolImplBase::newStreamImpl` (source/common/conn_pool):
//!   the most recently ready connection to the host, else a new one while
//!   the cluster is under `max_connections`, else the request waits
//!   (pending, up to `max_pending_requests`); `attachStreamToClient` refuses
//!   beyond `max_requests`. An overflow is a local 503 (`UO`) that
//!   `Filter::onUpstreamReset` (source/common/router/router.cc) neither
//!   reports to outlier detection nor retries; `RetryStateImpl::shouldRetry`
//!   makes no retry beyond `max_retries` in flight.

mod attempt;
mod clients;
mod haproxy;
mod stats;
#[cfg(test)]
mod tests;

use super::super::NodeId;
use crate::engine::{SimDuration, SimTime};
use crate::ids::FleetLayout;
use crate::spec::connection_checks::{client_connection, keeps_connections};
use crate::spec::connections::{
    CircuitBreakersSpec, HaproxyOption, HaproxyPoolSpec, HttpReuse, PoolSpec,
};
use crate::spec::{ClientConnection, GatewayFlavor, Model};
use clients::ClientConns;
pub(crate) use stats::ConnCounts;

/// nginx's error-log message for a reset that `cause` explains.
pub(crate) fn nginx_reuse_error(
    cause: Option<Cause>,
    result: crate::policy::AttemptResult,
) -> Option<&'static str> {
    match (cause?, result) {
        (Cause::ResetByPeer, crate::policy::AttemptResult::Reset) => Some(
            "recv() failed (104: Connection reset by peer) while reading response header from upstream",
        ),
        _ => None,
    }
}

/// No connection (an index into [`Pool::conns`]).
const NONE: u32 = u32::MAX;

/// How the product of `gateway.pool` keeps connections.
#[derive(Clone, Debug)]
pub(super) enum Rules {
    Nginx {
        keepalive: u32,
        timeout: SimDuration,
        requests: u32,
        time: SimDuration,
        /// HTTP/1.1 with the `Connection` header cleared.
        reuses: bool,
    },
    Haproxy {
        reuse: HttpReuse,
        option: HaproxyOption,
        keepalive_timeout: Option<SimDuration>,
        purge: SimDuration,
        max_idle: Option<u32>,
        low_idle: u32,
    },
    Envoy {
        max_requests: u32,
        idle: Option<SimDuration>,
        cb: CircuitBreakersSpec,
        retry_on_reset: bool,
    },
}

/// How the last attempt of a request failed, beyond its `AttemptResult`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Cause {
    #[default]
    None,
    /// The node closed the reused connection just before the request
    /// reached it: its FIN came back first (nginx "upstream prematurely
    /// closed connection").
    ClosedOnReuse,
    /// The node had closed the connection while the FIN could not reach
    /// the gateway (a partition): the request met a reset (nginx "recv()
    /// failed (104: Connection reset by peer)").
    ResetByPeer,
}

/// What the pool's timers are about (`Event::Conn`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum ConnTimer {
    /// HAProxy: `srv_cleanup_idle_conns` for one (scope, node).
    Purge,
    /// Envoy: a connection became ready while requests wait for one.
    Attach,
}

/// One connection between a gateway scope and a node.
#[derive(Clone, Debug)]
struct Conn {
    node: NodeId,
    scope: u16,
    busy: bool,
    /// Requests it carried (the one in flight included).
    requests: u32,
    opened: SimTime,
    idle_since: SimTime,
    /// When the node closes it if it is still idle then (`SimTime::MAX`: never).
    node_close_at: SimTime,
    /// The node closed it during a partition: its FIN never arrived.
    peer_gone: bool,
    /// HAProxy: it carried a request that was not its first (`safe` list).
    safe: bool,
}

/// The connection side of one request slot.
#[derive(Clone, Debug)]
struct SlotConn {
    /// The connection of the attempt in flight.
    conn: u32,
    /// The attempt in flight (or the last one) went on a reused connection.
    reused: bool,
    cause: Cause,
    /// The request this state is for (a slot is reused by later requests).
    request: u64,
    /// HAProxy: the request is not the first of its client connection.
    not_first: bool,
    /// Envoy: waiting for a connection, in `pending[k]`.
    pending: bool,
    /// Envoy: counted in the replica's requests in flight.
    active: bool,
    /// Envoy: holds one of the replica's retries in flight.
    retry_held: bool,
}

impl Default for SlotConn {
    fn default() -> Self {
        SlotConn {
            conn: NONE,
            reused: false,
            cause: Cause::None,
            request: 0,
            not_first: false,
            pending: false,
            active: false,
            retry_held: false,
        }
    }
}

/// HAProxy's per-server counters (`struct server`): connections in use,
/// the most in use since the last purge, and the estimated need.
#[derive(Clone, Debug, Default)]
struct ServerCounts {
    used: u32,
    max_used: u32,
    est_need: u32,
    /// The purge task is scheduled for it.
    purge_armed: bool,
}

/// Envoy's per-replica circuit-breaker resources.
#[derive(Clone, Debug, Default)]
struct Breakers {
    connections: u32,
    pending: u32,
    requests: u32,
    retries: u32,
}

/// Connections kept for reuse, for every scope and node of the run.
pub(crate) struct Pool {
    pub(super) rules: Rules,
    n: usize,
    half: SimDuration,
    /// How the run's scopes fall into gateway replicas.
    layout: FleetLayout,
    conns: Vec<Conn>,
    spare: Vec<u32>,
    /// Per (global scope, node): its idle connections, oldest first.
    idle: Vec<Vec<u32>>,
    /// nginx: per global scope, the cache in caching order, oldest first.
    cache: Vec<Vec<u32>>,
    /// Per request slot.
    slots: Vec<SlotConn>,
    /// Per node: its keep-alive timeout and request limit (`u32::MAX`: none).
    node_timeout: Vec<Option<SimDuration>>,
    node_requests: Vec<u32>,
    /// Per node: since when it is partitioned (a FIN it sends is lost) or
    /// stopped (its timers wait).
    partition_from: Vec<Option<SimTime>>,
    stop_from: Vec<Option<SimTime>>,
    /// HAProxy: per (global scope, node).
    servers: Vec<ServerCounts>,
    /// Envoy: per replica, and per (global scope, node) the requests
    /// waiting for a connection (slot, attempt generation), oldest first.
    breakers: Vec<Breakers>,
    pending: Vec<std::collections::VecDeque<(u32, u32)>>,
    /// HAProxy: the clients' connections (first request or not).
    clients: ClientConns,
    pub(super) counts: Vec<ConnCounts>,
    /// How the attempt freed last failed, for the event log.
    pub(crate) last_cause: Cause,
}

impl Pool {
    /// The pool of `model`, if its gateway keeps connections.
    pub(crate) fn of(model: &Model) -> Option<Pool> {
        if !keeps_connections(&model.gateway, &model.spec.clients) {
            return None;
        }
        let hap_default = PoolSpec::Haproxy(HaproxyPoolSpec::default());
        let spec = match (&model.gateway.pool, model.gateway.flavor) {
            (Some(p), _) => p,
            (None, GatewayFlavor::Haproxy) => &hap_default,
            (
                None,
                GatewayFlavor::Nginx
                | GatewayFlavor::Kong
                | GatewayFlavor::Linkerd
                | GatewayFlavor::Caddy
                | GatewayFlavor::Traefik,
            ) => {
                return None;
            }
        };
        let rules = match spec {
            PoolSpec::Nginx(p) => Rules::Nginx {
                keepalive: p.keepalive,
                timeout: p.keepalive_timeout,
                requests: p.keepalive_requests,
                time: p.keepalive_time,
                reuses: p.reuses(),
            },
            PoolSpec::Haproxy(p) => Rules::Haproxy {
                reuse: p.http_reuse,
                option: p.option,
                keepalive_timeout: p.timeout_http_keep_alive,
                purge: p.pool_purge_delay,
                max_idle: p.pool_max_conn,
                low_idle: p.pool_low_conn,
            },
            PoolSpec::Envoy(p) => Rules::Envoy {
                max_requests: p.max_requests_per_connection.unwrap_or(u32::MAX),
                idle: p.idle_timeout,
                cb: p.circuit_breakers.clone(),
                retry_on_reset: p.retry_on_reset,
            },
        };
        let n = model.nodes.len();
        let scopes = model.scopes();
        let keepalive_clients =
            client_connection(&model.spec.clients) == ClientConnection::Keepalive;
        Some(Pool {
            n,
            half: model.gateway.rtt.half(),
            layout: model.fleet_layout(),
            conns: Vec::new(),
            spare: Vec::new(),
            idle: vec![Vec::new(); n * scopes],
            cache: match rules {
                Rules::Nginx { .. } => vec![Vec::new(); scopes],
                _ => Vec::new(),
            },
            slots: Vec::new(),
            node_timeout: model.nodes.iter().map(|x| x.keepalive_timeout).collect(),
            node_requests: model
                .nodes
                .iter()
                .map(|x| x.keepalive_requests.unwrap_or(u32::MAX))
                .collect(),
            partition_from: vec![None; n],
            stop_from: vec![None; n],
            servers: match rules {
                Rules::Haproxy { .. } => vec![ServerCounts::default(); n * scopes],
                _ => Vec::new(),
            },
            breakers: match rules {
                Rules::Envoy { .. } => vec![Breakers::default(); model.replicas()],
                _ => Vec::new(),
            },
            pending: match rules {
                Rules::Envoy { .. } => vec![Default::default(); n * scopes],
                _ => Vec::new(),
            },
            clients: ClientConns::new(
                model,
                keepalive_clients && matches!(rules, Rules::Haproxy { .. }),
            ),
            counts: vec![ConnCounts::default(); n],
            last_cause: Cause::None,
            rules,
        })
    }

    fn k(&self, scope: u16, node: NodeId) -> usize {
        scope as usize * self.n + node.index()
    }

    fn replica(&self, scope: u16) -> usize {
        self.layout.replica_of(scope)
    }

    fn slot(&mut self, slot: u32) -> &mut SlotConn {
        let i = slot as usize;
        if i >= self.slots.len() {
            self.slots.resize(i + 1, SlotConn::default());
        }
        &mut self.slots[i]
    }

    /// The attempt of `slot` went on a reused connection.
    pub(crate) fn is_kept(&self, slot: u32) -> bool {
        self.slots
            .get(slot as usize)
            .is_some_and(|s| s.reused && s.conn != NONE)
    }

    /// A new connection, busy with its first request.
    fn open(&mut self, scope: u16, node: NodeId, now: SimTime) -> u32 {
        let c = Conn {
            node,
            scope,
            busy: true,
            requests: 1,
            opened: now,
            idle_since: now,
            node_close_at: SimTime::MAX,
            peer_gone: false,
            safe: false,
        };
        match self.spare.pop() {
            Some(id) => {
                self.conns[id as usize] = c;
                id
            }
            None => {
                self.conns.push(c);
                (self.conns.len() - 1) as u32
            }
        }
    }

    /// Closes connection `id` (busy, or already out of the idle lists).
    fn close(&mut self, id: u32) {
        let c = &self.conns[id as usize];
        if let Rules::Envoy { .. } = self.rules {
            let r = self.replica(c.scope);
            self.breakers[r].connections = self.breakers[r].connections.saturating_sub(1);
        }
        self.spare.push(id);
    }

    /// Takes `id` out of the idle lists of its (scope, node) and, for nginx,
    /// its scope's cache.
    fn unlist(&mut self, id: u32) {
        let (scope, node) = (self.conns[id as usize].scope, self.conns[id as usize].node);
        let k = self.k(scope, node);
        remove(&mut self.idle[k], id);
        if let Some(cache) = self.cache.get_mut(scope as usize) {
            remove(cache, id);
        }
    }

    /// Has the node's FIN for idle connection `id` reached the gateway by
    /// `now`? (Then the gateway closed it: nginx's `keepalive_close_handler`,
    /// HAProxy's and Envoy's read events on idle connections.)
    fn fin_arrived(&self, id: u32, now: SimTime) -> bool {
        let c = &self.conns[id as usize];
        let close = c.node_close_at;
        if close == SimTime::MAX || c.peer_gone {
            return false;
        }
        let i = c.node.index();
        if self.partition_from[i].is_some_and(|p| close + self.half >= p)
            || self.stop_from[i].is_some_and(|s| close >= s)
        {
            // Sent into a partition (lost), or the node is stopped and has
            // not closed it yet.
            return false;
        }
        now >= close + self.half
    }

    /// Has the gateway's own idle timeout closed idle connection `id` by `now`?
    fn gateway_expired(&self, id: u32, now: SimTime) -> bool {
        let c = &self.conns[id as usize];
        let timeout = match self.rules {
            Rules::Nginx { timeout, .. } => Some(timeout),
            Rules::Envoy { idle, .. } => idle,
            Rules::Haproxy { .. } => None,
        };
        timeout.is_some_and(|t| now >= c.idle_since + t)
    }

    /// Drops the idle connections of (scope, node) `k` that are closed by
    /// `now` (the node's FIN arrived, or the gateway's idle timeout).
    fn prune(&mut self, k: usize, now: SimTime) {
        let mut i = 0;
        while i < self.idle[k].len() {
            let id = self.idle[k][i];
            if self.fin_arrived(id, now) || self.gateway_expired(id, now) {
                self.unlist(id);
                self.close(id);
            } else {
                i += 1;
            }
        }
    }

    /// Takes an idle connection of (scope, node) `k` for a request: the most
    /// recent one (nginx, Envoy) or, for HAProxy, the oldest of the list the
    /// table of `connect_server` names for it.
    fn take_idle(&mut self, k: usize, now: SimTime, not_first: bool) -> Option<u32> {
        self.prune(k, now);
        let list = &self.idle[k];
        let id = match self.rules {
            Rules::Nginx { reuses, .. } => {
                if !reuses {
                    return None;
                }
                *list.last()?
            }
            Rules::Envoy { .. } => *list.last()?,
            Rules::Haproxy { reuse, option, .. } => {
                if reuse == HttpReuse::Never || option != HaproxyOption::HttpKeepAlive {
                    return None;
                }
                let oldest = |safe: bool| {
                    list.iter()
                        .copied()
                        .find(|&id| self.conns[id as usize].safe == safe)
                };
                let found = if not_first {
                    oldest(false).or_else(|| oldest(true))
                } else {
                    match reuse {
                        HttpReuse::Aggressive => oldest(true),
                        HttpReuse::Always => oldest(true).or_else(|| oldest(false)),
                        HttpReuse::Safe | HttpReuse::Never => None,
                    }
                };
                found?
            }
        };
        self.unlist(id);
        Some(id)
    }
}

/// The node's side (world/node_conn.rs): what its faults do to the idle
/// connections the gateway keeps to it.
impl Pool {
    /// The idle connections to `node`, in every scope.
    fn idle_to(&self, node: NodeId) -> Vec<u32> {
        let scopes = self.idle.len() / self.n.max(1);
        (0..scopes)
            .flat_map(|s| self.idle[s * self.n + node.index()].iter().copied())
            .collect()
    }

    /// `node`'s process died: its kernel closes every connection now.
    pub(crate) fn node_closes_all(&mut self, node: NodeId, now: SimTime) {
        for id in self.idle_to(node) {
            let c = &mut self.conns[id as usize];
            c.node_close_at = c.node_close_at.min(now);
        }
    }

    pub(crate) fn partition_began(&mut self, node: NodeId, now: SimTime) {
        self.partition_from[node.index()] = Some(now);
    }

    /// The partition of `node` ended: the closes it made meanwhile (and
    /// the FINs still on their way when it began) were never seen.
    pub(crate) fn partition_ended(&mut self, node: NodeId, now: SimTime) {
        let Some(from) = self.partition_from[node.index()].take() else {
            return;
        };
        let half = self.half;
        for id in self.idle_to(node) {
            let c = &mut self.conns[id as usize];
            let close = c.node_close_at;
            if close != SimTime::MAX && close + half >= from && close < now {
                c.peer_gone = true;
            }
        }
    }

    pub(crate) fn stop_began(&mut self, node: NodeId, now: SimTime) {
        self.stop_from[node.index()] = Some(now);
    }

    /// `node` runs again: keep-alive timeouts that passed while it was
    /// stopped fire now.
    pub(crate) fn stop_ended(&mut self, node: NodeId, now: SimTime) {
        let Some(from) = self.stop_from[node.index()].take() else {
            return;
        };
        for id in self.idle_to(node) {
            let c = &mut self.conns[id as usize];
            if c.node_close_at != SimTime::MAX && c.node_close_at >= from && c.node_close_at < now {
                c.node_close_at = now;
            }
        }
    }
}

fn remove(list: &mut Vec<u32>, id: u32) {
    if let Some(i) = list.iter().rposition(|&x| x == id) {
        list.remove(i);
    }
}
