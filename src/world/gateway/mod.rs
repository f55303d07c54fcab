//! The gateway: nginx's upstream request pipeline (`ngx_http_upstream.c`).
//!
//! One request walks: select a peer (health policies decide eligibility) →
//! connect → send → wait for the header → either answer the client or, per
//! `proxy_next_upstream`, free the peer as failed and try the next one. The
//! steps, with the events between them, are listed in the docs of
//! [`crate::world`].
//!
//! - this file: the pipeline — start a request, connect, the attempt and its
//!   read timeout, the response, `ngx_http_upstream_test_next` and
//!   `ngx_http_upstream_next`, finalize, the client's timeout;
//! - [`balancer`]: which peer (`ngx_http_upstream_round_robin.c`, least_conn,
//!   random, HAProxy's `roundrobin`), and freeing it with the passive accounting;
//! - [`haproxy`]: the request path of an HAProxy backend (`flavor: haproxy`),
//!   which differs after a failed connect and on the response;
//! - [`kong`] and [`linkerd`]: Kong's (`flavor: kong`) and a Linkerd
//!   proxy's (`flavor: linkerd`) decisions on the same pipeline.

mod balancer;
mod caddy;
mod flavor;
mod haproxy;
mod kong;
mod linkerd;
mod pending;
mod pool;
mod products;
mod traefik;
mod tried;
mod usable;

use super::policies::PolicyBank;
use super::{Event, Fail, NodeId, World, lane};
use crate::engine::{SimDuration, SimTime};
use crate::policy::{AttemptResult, Charge};
use crate::spec::{KERNEL_CONNECT_TIMEOUT, Model, NextUpstream};
use balancer::pick::{LeastConn, Pickers, Rotation, SetPos, Swrr};
use balancer::routing::Routing;
use haproxy::Haproxy;
use kong::KongPath;
use linkerd::LinkerdPath;
pub(crate) use pool::{ConnTimer, Pool, nginx_reuse_error};
use tried::Tried;

/// What came back from a node.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Status(u16),
    /// The connection was reset or closed before a response header.
    Reset,
}

/// Why nginx calls `ngx_http_upstream_next` (its `ft_type`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Ft {
    Error,
    Timeout,
    Http(u16),
}

/// One client request inside the gateway.
#[derive(Clone, Debug, Default)]
pub(crate) struct Request {
    active: bool,
    /// Bumped when the request ends: stale client timeouts are ignored.
    req_gen: u32,
    /// Bumped for each attempt and when the request ends.
    att_gen: u32,
    id: u64,
    client: Option<u32>,
    start: SimTime,
    /// Which copy of peer state this request uses (its worker, or 0 with `zone`).
    scope: u16,
    counted: bool,
    /// `u.peer.tries`: attempts left.
    tries: u32,
    in_backup: bool,
    /// Nodes already tried in the current set.
    tried: Tried,
    /// The upstream has more than 64 nodes (`tried` is a list).
    wide: bool,
    /// The peer of the attempt in flight.
    node: Option<NodeId>,
    /// The request was sent on the current attempt (`u->request_sent`).
    sent: bool,
    /// When `proxy_read_timeout` expires for the current attempt.
    read_deadline: SimTime,
    /// The read timeout of the current attempt is in the event queue.
    read_timer: bool,
    /// Random draws so far (nginx's random balancer falls back to RR after 20).
    random_tries: u32,
    /// The attempt in flight started while a fault of its node was active.
    att_faulty: bool,
    /// HAProxy: connection retries so far (`conn_retries`).
    retries_done: u32,
    /// HAProxy: the server of the last attempt.
    last_node: Option<NodeId>,
    /// HAProxy: retry on this server (None: redispatch).
    retry_same: Option<NodeId>,
    /// When the attempt in flight selected its peer.
    att_start: SimTime,
    /// The last selection found the upstream in panic: policies were ignored.
    panic: bool,
}

impl Request {
    fn is_tried(&self, n: NodeId) -> bool {
        self.tried.has(n, self.wide)
    }
    fn mark_tried(&mut self, n: NodeId) {
        self.tried.mark(n, self.wide);
    }
    /// The tried nodes.
    fn tried_nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.tried.nodes(self.wide)
    }
    fn clear_tried(&mut self) {
        self.tried.clear();
    }
}

/// Whose request path a gateway walks: one field tested once per step, so
/// that the products a model does not use cost nginx's path nothing but
/// that test (`products.rs` dispatches on it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum PathKind {
    Nginx,
    Haproxy,
    Kong,
    Linkerd,
    /// Caddy or Traefik (`flavor.rs`).
    Flavored,
}

/// Gateway state: in-flight requests and the balancer's per-peer tables.
pub(crate) struct Gateway {
    /// Whose request path (set with `hap`, `kong`, `linkerd`, `flavored`).
    pub(crate) path: PathKind,
    /// The connect timeout and the read timeout (`None`: none) of an attempt.
    timeouts: (SimDuration, Option<SimDuration>),
    /// Something happens when a request ends besides the metrics: a pool
    /// keeps or closes its connection, Caddy or Traefik count it (set
    /// with the pool by `World::new`).
    pub(crate) end_hooks: bool,
    /// `Some`: the HAProxy request path.
    hap: Option<Haproxy>,
    /// `Some`: Kong's request path.
    pub(crate) kong: Option<KongPath>,
    /// `Some`: a Linkerd proxy's request path.
    pub(crate) linkerd: Option<LinkerdPath>,
    /// `Some`: the Caddy or Traefik request path (`flavor.rs`).
    pub(crate) flavored: Option<flavor::Flavored>,
    reqs: Vec<Request>,
    free: Vec<u32>,
    next_id: u64,
    in_flight: usize,
    n: usize,
    /// Per (scope, node): smooth-WRR current and effective weights (of the
    /// direct scans and `least_conn`'s), and connections in flight.
    cw: Vec<i64>,
    ew: Vec<i64>,
    conns: Vec<u32>,
    weight: Vec<i64>,
    primary: Vec<NodeId>,
    backup: Vec<NodeId>,
    down: Vec<bool>,
    max_conns: Vec<u32>,
    /// One primary peer and no backup: nginx skips all accounting.
    single: bool,
    initial_tries: u32,
    /// Cumulative weights of the primary set, for the random balancers.
    ranges: Vec<(i64, NodeId)>,
    total_weight: i64,
    /// HAProxy `roundrobin`: per (scope, node) its next position, per scope
    /// the position of the last pick (each replica has its own backend), and
    /// per node how far a pick moves it (total weight / weight).
    rr_pos: Vec<u64>,
    rr_cur: Vec<u64>,
    rr_step: Vec<u64>,
    /// Envoy's `healthy_panic_threshold`, percent; 0 = never panic.
    panic_threshold: f64,
    /// Each node's set and position in it.
    set_of: Vec<SetPos>,
    /// The policies' cached verdicts and the members they leave.
    pub(crate) routing: Routing,
    /// The balancer's structure over the members.
    pickers: Pickers,
    /// Pick by direct scans (`direct.rs`): no cached verdicts, no structures.
    pub(crate) direct: bool,
    /// Which balancer picks.
    pub(crate) pick_kind: balancer::PickKind,
    /// `ip_hash` or `hash` (such upstreams pick by direct scans, whatever
    /// their size), and the requests' keys and hash state.
    pub(crate) hash: Box<balancer::hash::HashParts>,
    /// `clients.keys`: each request draws its client key from 0..keys.
    pub(crate) keys: Option<u32>,
    /// A request's tried members while a pick leaves them out (kept to
    /// spare an allocation per retry).
    sitting_out: Vec<u32>,
    /// Per replica: policies still warming (Envoy's cluster warming), and
    /// the requests (slot, generation) waiting for them, in arrival order.
    pub(crate) warming: Vec<u32>,
    pub(crate) held: Vec<Vec<(u32, u32)>>,
    /// The shortest attempt timeout of the policies (Hystrix's execution
    /// timeout), from the peer's selection.
    attempt_cap: Option<SimDuration>,
    /// Some policy caps or may refuse attempts: `start_attempt` asks them.
    guarded: bool,
    /// `gateway.slow_start`: the nodes' ramps (`balancer/warm.rs`); such a
    /// gateway picks by direct scans.
    pub(crate) warm: Option<Box<balancer::warm::Warmup>>,
    /// HAProxy's backend and server queues, with some node's `max_conns`
    /// (`pending.rs`).
    pub(crate) pending: Option<Box<pending::Pending>>,
}

impl Gateway {
    /// The gateway of `model`, its tables sized for the policy instances of
    /// `bank` and the policies' demands on attempts (timeouts, refusals,
    /// warming) read from it.
    pub(crate) fn new(model: &Model, bank: &PolicyBank) -> Self {
        let n = model.nodes.len();
        let scopes = model.scopes();
        let primary: Vec<NodeId> = (0..n)
            .filter(|&i| !model.nodes[i].backup)
            .map(|i| NodeId(i as u32))
            .collect();
        let backup: Vec<NodeId> = (0..n)
            .filter(|&i| model.nodes[i].backup)
            .map(|i| NodeId(i as u32))
            .collect();
        let weight: Vec<i64> = model.nodes.iter().map(|x| x.weight as i64).collect();
        let usable = model.nodes.iter().filter(|x| !x.down).count() as u32;
        let cap = model.gateway.proxy_next_upstream_tries;
        let hap = Haproxy::of(model);
        let pick_kind = balancer::PickKind::of(&model.gateway.balancer, hap.is_some());
        let kong = KongPath::of(model);
        let linkerd = LinkerdPath::of(model);
        let flavored = flavor::Flavored::of(model);
        let nginx = hap.is_none() && kong.is_none() && linkerd.is_none();
        let path = match (&hap, &kong, &linkerd, &flavored) {
            (Some(_), ..) => PathKind::Haproxy,
            (_, Some(_), ..) => PathKind::Kong,
            (_, _, Some(_), _) => PathKind::Linkerd,
            (.., Some(_)) => PathKind::Flavored,
            _ => PathKind::Nginx,
        };
        let g = &model.gateway;
        let timeouts = match (&hap, &linkerd, &flavored) {
            (Some(h), ..) => (
                h.timeout_connect.unwrap_or(KERNEL_CONNECT_TIMEOUT),
                h.timeout_server,
            ),
            (None, Some(l), _) => (l.connect_timeout, l.response_timeout),
            (None, None, Some(f)) => f.timeouts(),
            (None, None, None) => (g.proxy_connect_timeout, Some(g.proxy_read_timeout)),
        };
        let mut set_of = vec![SetPos::default(); n];
        for (backup, set) in [(false, &primary), (true, &backup)] {
            for (pos, node) in set.iter().enumerate() {
                set_of[node.index()] = SetPos {
                    backup,
                    pos: pos as u32,
                };
            }
        }
        let rr_step: Vec<u64> = {
            let total: u64 = model.nodes.iter().map(|x| x.weight as u64).sum();
            model
                .nodes
                .iter()
                .map(|x| total * 1_000_000 / x.weight.max(1) as u64)
                .collect()
        };
        let pickers = Pickers::of(scopes, pick_kind, &weight, &rr_step, [&primary, &backup]);
        let hosts = primary
            .iter()
            .filter(|x| !model.nodes[x.index()].down)
            .count() as u32;
        let mut acc = 0;
        let ranges = primary
            .iter()
            .map(|&p| {
                acc += weight[p.index()];
                (acc, p)
            })
            .collect();
        Gateway {
            path,
            timeouts,
            end_hooks: flavored.is_some() || model.gateway.balancer.is_hash(),
            reqs: Vec::new(),
            free: Vec::new(),
            next_id: 0,
            in_flight: 0,
            n,
            cw: vec![0; n * scopes],
            ew: (0..scopes).flat_map(|_| weight.iter().copied()).collect(),
            conns: vec![0; n * scopes],
            weight,
            single: nginx && primary.len() == 1 && backup.is_empty(),
            primary,
            backup,
            down: model.nodes.iter().map(|x| x.down).collect(),
            max_conns: model.nodes.iter().map(|x| x.max_conns).collect(),
            initial_tries: match (&hap, &kong) {
                (Some(h), _) => 1 + h.retries,
                (None, Some(k)) => 1 + k.retries,
                (None, None) if cap > 0 => usable.min(cap),
                (None, None) => usable,
            },
            hap,
            kong,
            linkerd,
            flavored,
            ranges,
            total_weight: acc,
            rr_pos: vec![0; n * scopes],
            rr_cur: vec![0; scopes],
            rr_step,
            // Kong and Linkerd have no panic routing.
            panic_threshold: if nginx || model.gateway.flavor == crate::spec::GatewayFlavor::Haproxy
            {
                balancer::panic_threshold(model)
            } else {
                0.0
            },
            set_of,
            routing: Routing::new(n, scopes, model.scopes_per_replica(), bank.len(), hosts),
            pickers,
            direct: n <= balancer::direct::DIRECT_MAX_NODES
                || model.gateway.balancer.is_hash()
                || model.gateway.slow_start.is_some(),
            pick_kind,
            hash: Box::new(balancer::hash::HashParts {
                hashing: balancer::hash::Hashing::of(model),
                cookie: balancer::cookie::Cookies::of(model),
                ..Default::default()
            }),
            keys: model.keys,
            sitting_out: Vec::new(),
            warming: vec![bank.warming(); model.replicas()],
            held: vec![Vec::new(); model.replicas()],
            attempt_cap: bank.attempt_cap(),
            guarded: bank.attempt_cap().is_some() || bank.any_admitter(),
            warm: balancer::warm::Warmup::of(model, scopes),
            pending: pending::Pending::of(model),
        }
    }

    /// An HAProxy gateway with some node's `on_marked_down` or `on_marked_up`.
    pub(crate) fn haproxy_on_marked(&self) -> bool {
        self.hap.as_ref().is_some_and(|h| h.on_marked)
    }

    /// Requests in flight that the metrics count (sent inside the
    /// measurement window).
    pub(crate) fn in_flight_counted(&self) -> usize {
        if self.in_flight == 0 {
            return 0;
        }
        self.reqs.iter().filter(|r| r.active && r.counted).count()
    }

    fn k(&self, scope: u16, node: NodeId) -> usize {
        scope as usize * self.n + node.index()
    }

    /// `ngx_http_upstream_get_random2_peer`'s draw: a primary peer with
    /// probability proportional to its weight.
    #[inline]
    fn weighted_draw(&self, rng: &mut crate::engine::SimRng) -> NodeId {
        use rand::RngExt;
        let x = rng.random_range(0..self.total_weight);
        self.ranges[self.ranges.partition_point(|&(acc, _)| acc <= x)].1
    }

    /// Random two's choice between its draws `first` and `second`: the one
    /// with fewer connections per weight in `scope`, `second` on a tie.
    #[inline]
    fn less_loaded(&self, scope: u16, first: NodeId, second: NodeId) -> NodeId {
        let lhs = self.conns[self.k(scope, second)] as i64 * self.weight[first.index()];
        let rhs = self.conns[self.k(scope, first)] as i64 * self.weight[second.index()];
        if lhs > rhs { first } else { second }
    }

    /// Open connections to `node` from the global scopes `scopes`.
    pub(crate) fn conns_of(&self, scopes: std::ops::Range<usize>, node: NodeId) -> u32 {
        scopes.map(|s| self.conns[self.k(s as u16, node)]).sum()
    }
}

impl World<'_> {
    /// A client sends a request: it lands on a gateway worker (its scope),
    /// the client's timeout is armed, and the first attempt connects.
    pub(crate) fn start_request(&mut self, client: Option<u32>) {
        let now = self.q.now();
        let replica = self.fleet.pick(self.model, client, &mut self.rng.spread);
        let worker = if self.model.gateway.zone {
            // Keep the draw so that `zone` does not shift the gateway stream.
            let _ = self.pick_worker();
            0
        } else {
            self.pick_worker()
        };
        let scope = self.fleet.layout().scope(replica, worker);
        let counted = self.rec.in_window(now);
        self.rec.request_sent(now, counted);
        let gw = &mut self.gw;
        let slot = match gw.free.pop() {
            Some(s) => s,
            None => {
                gw.reqs.push(Request {
                    wide: gw.n > 64,
                    ..Default::default()
                });
                (gw.reqs.len() - 1) as u32
            }
        };
        gw.next_id += 1;
        gw.in_flight += 1;
        let tries = gw.initial_tries;
        let id = gw.next_id;
        let r = &mut gw.reqs[slot as usize];
        r.active = true;
        r.id = id;
        r.client = client;
        r.start = now;
        r.scope = scope;
        r.counted = counted;
        r.tries = tries;
        r.in_backup = false;
        r.clear_tried();
        r.node = None;
        r.sent = false;
        r.random_tries = 0;
        r.retries_done = 0;
        r.last_node = None;
        r.retry_same = None;
        let generation = r.req_gen;
        if self.gw.keys.is_some() {
            self.begin_hash(slot);
            if self.gw.hash.cookie.is_some() {
                return self.cookie_start(slot, generation, replica);
            }
        }
        if self.gw.path == PathKind::Flavored {
            self.flavor_begin(slot);
        }
        self.arm_client_timeout(slot, generation);
        if self.gw.warming[replica] > 0 {
            self.gw.held[replica].push((slot, generation));
            return;
        }
        self.connect(slot);
    }

    /// A policy of `replica` finished warming; once none is left, the
    /// requests that waited connect, in arrival order (those whose client
    /// gave up meanwhile are gone).
    pub(crate) fn on_warmed(&mut self, replica: usize) {
        let w = &mut self.gw.warming[replica];
        *w = w.saturating_sub(1);
        if *w > 0 {
            return;
        }
        for (slot, generation) in std::mem::take(&mut self.gw.held[replica]) {
            let r = &self.gw.reqs[slot as usize];
            if r.active && r.req_gen == generation {
                if self.gw.hash.cookie.is_some() {
                    self.cookie_connect(slot);
                } else {
                    self.connect(slot);
                }
            }
        }
    }

    /// `ngx_http_upstream_connect`: select a peer and start an attempt.
    #[inline(always)]
    fn connect(&mut self, slot: u32) {
        match self.gw.path {
            PathKind::Linkerd => return self.linkerd_connect(slot),
            PathKind::Flavored => return self.flavor_connect(slot),
            _ => {}
        }
        let Some(node) = self.select_peer(slot) else {
            // HAProxy: every usable server full queues the request.
            if self.gw.path == PathKind::Haproxy && self.hap_queue_if_full(slot) {
                return;
            }
            // BUSY -> "no live upstreams" -> upstream_next(NOLIVE): nothing is
            // freed and NOLIVE is never in the mask, so 502 at once.
            // HAProxy answers 503 when no server is usable, Kong when no
            // target is ("failure to get a peer from the ring-balancer").
            let status = if matches!(self.gw.path, PathKind::Haproxy | PathKind::Kong) {
                503
            } else {
                502
            };
            if self.obs.events.is_some() {
                self.no_live_upstreams(slot);
            }
            self.finalize(slot, status, None);
            return;
        };
        self.start_attempt(slot, node);
    }

    /// Selection found no peer for `slot`: the event log's line.
    #[cold]
    #[inline(never)]
    fn no_live_upstreams(&mut self, slot: u32) {
        let scope = self.gw.reqs[slot as usize].scope;
        self.log_no_live_upstreams(scope);
    }

    /// Connects to the selected `node` and sends the request.
    fn start_attempt(&mut self, slot: u32, node: NodeId) {
        let now = self.q.now();
        let faulty = self.nodes[node.index()].in_fault();
        let r = &mut self.gw.reqs[slot as usize];
        r.att_gen = r.att_gen.wrapping_add(1);
        r.node = Some(node);
        r.sent = false;
        r.att_faulty = faulty;
        r.last_node = Some(node);
        r.att_start = now;
        let scope = r.scope;
        let generation = r.att_gen;
        let counted = r.counted;
        self.rec.attempt(now, node, counted, faulty);
        if self.rec.tracks_replicas() {
            self.rec.replica_attempt(scope, node, counted, faulty);
        }
        // Policies that cap or refuse attempts (Hystrix); one test when none does.
        let mut cap_at = SimTime::MAX;
        if self.gw.guarded {
            match self.guard(slot, generation, scope, node) {
                Some(at) => cap_at = at,
                None => return,
            }
        }
        // Connections kept for reuse (`gateway.pool`, pool/); one test without.
        if self.pool.is_some() && self.pool_attempt(slot, node, generation, cap_at) {
            return;
        }
        self.open_connection(slot, node, generation, cap_at);
    }

    /// Connects to `node` for the attempt `generation` of `slot` and sends
    /// the request: refused, the SYN dropped, or connected.
    #[inline(always)]
    fn open_connection(&mut self, slot: u32, node: NodeId, generation: u32, cap_at: SimTime) {
        let now = self.q.now();
        let counted = self.gw.reqs[slot as usize].counted;
        let g = &self.model.gateway;
        let (connect_timeout, read_timeout) = self.gw.timeouts;
        let n = &self.nodes[node.index()];
        if n.refuses_connections() {
            self.q.schedule_in_lane(
                lane::RTT,
                now + g.rtt,
                Event::AttemptFailed {
                    slot,
                    generation,
                    why: Fail::Refused,
                },
            );
        } else if n.drops_syn() {
            if !n.partitioned {
                self.rec.backlog_refused(node, counted);
            }
            self.q.schedule_in_lane(
                lane::CONNECT_TIMEOUT,
                (now + connect_timeout).min(cap_at),
                Event::AttemptFailed {
                    slot,
                    generation,
                    why: Fail::ConnectTimeout,
                },
            );
        } else {
            // The read timeout is armed lazily (see `arm_read_timeout`): most
            // responses are known to come first, and a timer per attempt would
            // keep rate × proxy_read_timeout events pending.
            self.tell_connected(slot, node);
            if self.pool.is_some() {
                self.pool_connected(slot, node);
            }
            let g = &self.model.gateway;
            let sent_at = now + g.rtt;
            let r = &mut self.gw.reqs[slot as usize];
            r.sent = true;
            // HAProxy without `timeout server` waits for ever.
            r.read_deadline = read_timeout
                .map_or(SimTime::MAX, |t| sent_at + t)
                .min(cap_at);
            r.read_timer = false;
            if g.rtt.is_zero() {
                self.on_request_at_node(slot, generation, node);
            } else {
                self.q.schedule_in_lane(
                    lane::AT_NODE,
                    sent_at + g.rtt.half(),
                    Event::AtNode {
                        slot,
                        generation,
                        node,
                    },
                );
            }
        }
    }

    /// The policies that listen hear that the attempt of `slot` is connected.
    #[inline(always)]
    fn tell_connected(&mut self, slot: u32, node: NodeId) {
        let r = &self.gw.reqs[slot as usize];
        let (scope, single) = (r.scope, self.gw.single && !r.in_backup);
        let (first, local) = (self.fleet.policies_of(scope).start, self.fleet.local(scope));
        for k in 0..self.bank.hear_connections.len() {
            let i = first + self.bank.hear_connections[k];
            if !(single && self.bank.bypass_single[i]) {
                self.with_policy(i, Some(node), |p, cx| p.on_connected(cx, local, node));
            }
        }
    }

    /// Asks the policies that may refuse the attempt to `node` (Hystrix's
    /// thread pool): if one does, the attempt fails at once (`None`);
    /// else the time the policies' attempt timeout ends it (`SimTime::MAX`:
    /// never). Out of line: the canonical path never comes here.
    #[cold]
    #[inline(never)]
    fn guard(&mut self, slot: u32, generation: u32, scope: u16, node: NodeId) -> Option<SimTime> {
        let now = self.q.now();
        let (first, local) = (self.fleet.policies_of(scope).start, self.fleet.local(scope));
        for &k in &self.bank.admitters {
            if !self.bank.get(first + k).admits(local, node) {
                let why = Fail::Rejected;
                let ev = Event::AttemptFailed {
                    slot,
                    generation,
                    why,
                };
                self.q.schedule(now, ev);
                return None;
            }
        }
        Some(self.gw.attempt_cap.map_or(SimTime::MAX, |c| now + c))
    }

    /// The read deadline of an attempt still in flight.
    pub(crate) fn read_deadline(&self, slot: u32, generation: u32) -> Option<SimTime> {
        let r = self.gw.reqs.get(slot as usize)?;
        (r.active && r.att_gen == generation && r.sent).then_some(r.read_deadline)
    }

    /// Puts the attempt's `proxy_read_timeout` into the event queue: called
    /// by the node (node.rs) whenever the response is not known to arrive
    /// before the deadline (queued, frozen, lost on the wire, or served too
    /// slowly); `on_attempt_failed` handles it. `at_node`: armed as the
    /// request reaches the node, in the FIFO lane for that.
    pub(crate) fn arm_read_timeout(&mut self, slot: u32, generation: u32, at_node: bool) {
        let now = self.q.now();
        let Some(r) = self.gw.reqs.get_mut(slot as usize) else {
            return;
        };
        if !r.active
            || r.att_gen != generation
            || !r.sent
            || r.read_timer
            || r.read_deadline == SimTime::MAX
        {
            return;
        }
        r.read_timer = true;
        let at = r.read_deadline.max(now);
        let ev = Event::AttemptFailed {
            slot,
            generation,
            why: Fail::ReadTimeout,
        };
        if at_node {
            // Armed as the request reaches the node, the deadline is most
            // often that time plus the timeout; not for a request on a kept
            // connection (no connect before it) or one cut by a retry budget.
            self.q
                .schedule_in_lane_or_wheel(lane::READ_TIMEOUT_AT_NODE, at, ev);
        } else {
            self.q.schedule(at, ev);
        }
    }

    fn attempt_of(&self, slot: u32, generation: u32) -> Option<NodeId> {
        let r = self.gw.reqs.get(slot as usize)?;
        if r.active && r.att_gen == generation {
            r.node
        } else {
            None
        }
    }

    /// An attempt ended without a response: refused, or its connect or read
    /// timeout expired (armed by `start_attempt` and `arm_read_timeout`).
    pub(crate) fn on_attempt_failed(&mut self, slot: u32, generation: u32, why: Fail) {
        let Some(node) = self.attempt_of(slot, generation) else {
            return;
        };
        if self.gw.path != PathKind::Nginx {
            return self.product_failed(slot, node, why);
        }
        let (ft, result) = match why {
            Fail::Refused => (Ft::Error, AttemptResult::Refused),
            Fail::ConnectTimeout => (Ft::Timeout, AttemptResult::ConnectTimeout),
            Fail::ReadTimeout => (Ft::Timeout, AttemptResult::ReadTimeout),
            // Nothing was sent: like a failed connect, retried as an error.
            Fail::Rejected => (Ft::Error, AttemptResult::Rejected),
        };
        self.next_upstream(slot, node, ft, result);
    }

    /// A response header (or a reset) reached the gateway.
    pub(crate) fn on_response(&mut self, slot: u32, generation: u32, reply: Reply) {
        let Some(node) = self.attempt_of(slot, generation) else {
            return;
        };
        if self.gw.path != PathKind::Nginx {
            return self.product_response(slot, node, reply);
        }
        match reply {
            Reply::Reset => self.next_upstream(slot, node, Ft::Error, AttemptResult::Reset),
            Reply::Status(s) => {
                if self.test_next(slot, s) {
                    self.next_upstream(slot, node, Ft::Http(s), AttemptResult::Status(s));
                } else {
                    self.free_peer(slot, node, Charge::Success, AttemptResult::Status(s));
                    self.finalize(slot, s, Some(node));
                }
            }
        }
    }

    /// `ngx_http_upstream_test_next`: is this status a failure to retry?
    fn test_next(&self, slot: u32, status: u16) -> bool {
        let word = match status {
            500 => NextUpstream::Http500,
            502 => NextUpstream::Http502,
            503 => NextUpstream::Http503,
            504 => NextUpstream::Http504,
            403 => NextUpstream::Http403,
            404 => NextUpstream::Http404,
            429 => NextUpstream::Http429,
            _ => return false,
        };
        let r = &self.gw.reqs[slot as usize];
        let mask = self.model.next_upstream;
        let non_idem = r.sent && self.model.clients.method().is_non_idempotent();
        r.tries > 1
            && mask.contains(word)
            && (!non_idem || mask.contains(NextUpstream::NonIdempotent))
            && !self.next_upstream_timed_out(r)
    }

    fn next_upstream_timed_out(&self, r: &Request) -> bool {
        let t = self.model.gateway.proxy_next_upstream_timeout;
        !t.is_zero() && self.q.now().saturating_since(r.start) >= t
    }

    /// `ngx_http_upstream_next`: free the peer as failed (403/404: next),
    /// then retry at once or give up with the status nginx maps `ft` to.
    fn next_upstream(&mut self, slot: u32, node: NodeId, ft: Ft, result: AttemptResult) {
        let charge = match ft {
            Ft::Http(403 | 404) => Charge::Next,
            _ => Charge::Failed,
        };
        self.free_peer(slot, node, charge, result);
        if self.pool.is_some() {
            // nginx: an error on a cached connection gives the try back.
            self.pool_after_failure(slot, ft == Ft::Error);
        }
        let status = match ft {
            Ft::Timeout | Ft::Http(504) => 504,
            Ft::Http(s @ (500 | 503 | 403 | 404 | 429)) => s,
            _ => 502,
        };
        let r = &self.gw.reqs[slot as usize];
        let mask = self.model.next_upstream;
        let word = match ft {
            Ft::Error => NextUpstream::Error,
            Ft::Timeout => NextUpstream::Timeout,
            // test_next already checked the status word
            Ft::Http(_) => NextUpstream::Error,
        };
        let listed = matches!(ft, Ft::Http(_)) || mask.contains(word);
        let non_idem = r.sent && self.model.clients.method().is_non_idempotent();
        let give_up = r.tries == 0
            || !listed
            || (non_idem && !mask.contains(NextUpstream::NonIdempotent))
            || self.next_upstream_timed_out(r);
        // Envoy: `retry_on` without `reset`, the retries circuit breaker.
        let give_up = give_up || (self.pool.is_some() && !self.pool_may_retry(slot, result));
        if give_up {
            self.finalize(slot, status, None);
        } else {
            self.connect(slot);
        }
    }

    /// The gateway answers the client with `status`; `by` is the node whose
    /// response is relayed (already freed as a success).
    fn finalize(&mut self, slot: u32, status: u16, by: Option<NodeId>) {
        if self.gw.end_hooks {
            self.request_ends(slot, Some(status), by.is_some());
            if let Some(n) = by
                && self.gw.hash.hashing.is_some()
                && self.gw.reqs[slot as usize].counted
            {
                self.count_home(slot, n);
            }
        }
        let now = self.q.now();
        let r = &self.gw.reqs[slot as usize];
        let (start, counted, client, faulty) = (r.start, r.counted, r.client, r.att_faulty);
        self.rec
            .answered(now, status, now.saturating_since(start), by, counted);
        if self.rec.tracks_replicas()
            && let Some(n) = by
            && (200..300).contains(&status)
        {
            let scope = self.gw.reqs[slot as usize].scope;
            self.rec.replica_answered(now, scope, n, counted, faulty);
        }
        if let Some(n) = by
            && faulty
            && (200..300).contains(&status)
        {
            self.rec.fault_answered(n, counted);
        }
        self.release(slot);
        self.client_done(client);
    }

    fn release(&mut self, slot: u32) {
        let r = &mut self.gw.reqs[slot as usize];
        r.active = false;
        r.node = None;
        r.req_gen = r.req_gen.wrapping_add(1);
        r.att_gen = r.att_gen.wrapping_add(1);
        self.gw.free.push(slot);
        self.gw.in_flight -= 1;
    }

    /// The client gave up: nginx sees the client connection close and
    /// finalizes with 499, freeing the peer with state 0 (not a failure).
    pub(crate) fn on_client_timeout(&mut self, slot: u32, generation: u32) {
        let Some(r) = self.gw.reqs.get(slot as usize) else {
            return;
        };
        if !r.active || r.req_gen != generation {
            return;
        }
        let (counted, client, node, start) = (r.counted, r.client, r.node, r.start);
        let scope = r.scope;
        let held = if self.gw.pending.is_some() {
            self.hap_client_gone(slot)
        } else {
            None
        };
        if let Some(node) = node {
            if self.gw.path == PathKind::Linkerd {
                // tower's load handle is dropped with the cancelled request.
                self.linkerd_completed(slot, node);
            }
            self.free_peer(slot, node, Charge::Success, AttemptResult::ClientAbort);
        }
        if self.gw.end_hooks {
            self.request_ends(slot, None, false);
        }
        let now = self.q.now();
        self.rec
            .timed_out(now, now.saturating_since(start), counted);
        self.release(slot);
        if let Some(n) = node.or(held)
            && self.gw.pending.is_some()
        {
            self.hap_released(scope, n);
        }
        self.client_done(client);
    }
}

impl Pickers {
    /// Each scope's structures for the balancer `kind` over the primary and
    /// the backup set.
    fn of(
        scopes: usize,
        kind: balancer::PickKind,
        weight: &[i64],
        rr_step: &[u64],
        [primary, backup]: [&[NodeId]; 2],
    ) -> Pickers {
        use balancer::PickKind;
        let set_weights =
            |set: &[NodeId]| -> Vec<i64> { set.iter().map(|x| weight[x.index()]).collect() };
        match kind {
            PickKind::LeastConn => Pickers::Least(
                (0..scopes)
                    .flat_map(|_| {
                        [
                            LeastConn::new(&set_weights(primary)),
                            LeastConn::new(&set_weights(backup)),
                        ]
                    })
                    .collect(),
            ),
            PickKind::HaproxyRoundRobin => Pickers::Rotation(
                (0..scopes)
                    .flat_map(|_| [primary, backup])
                    .map(|set| Rotation::new(set.iter().map(|x| rr_step[x.index()]).collect()))
                    .collect(),
            ),
            PickKind::RoundRobin | PickKind::RandomTwo | PickKind::Hash => Pickers::Smooth(
                (0..scopes)
                    .flat_map(|_| {
                        [
                            Swrr::new(&set_weights(primary)),
                            Swrr::new(&set_weights(backup)),
                        ]
                    })
                    .collect(),
            ),
        }
    }
}
