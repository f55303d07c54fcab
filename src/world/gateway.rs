//! The gateway: nginx's upstream request pipeline (`ngx_http_upstream.c`) and
//! its balancers (`ngx_http_upstream_round_robin.c`, least_conn, random).
//!
//! One request walks: select a peer (health policies decide eligibility) →
//! connect → send → wait for the header → either answer the client or, per
//! `proxy_next_upstream`, free the peer as failed and try the next one.
//!
//! With `flavor: haproxy` the same pipeline follows an HAProxy backend
//! (reference Part B §B5, haproxy `back_handle_st_cer`,
//! `stream_choose_redispatch`): only a failed connect is retried, at most
//! `retries` times, on the same server unless redispatched, after a
//! turn-around pause of min(1 s, `timeout connect`) when the connect was
//! refused; the client sees 503 when the retries run out or no server is up,
//! 504 on `timeout server`, 502 when the server closes before answering.

use super::{Event, Fail, NodeId, World, lane};
use crate::engine::{SimDuration, SimTime};
use crate::policy::{AttemptReport, AttemptResult, Charge, HealthPolicy, Now};
use crate::spec::{Balancer, GatewayFlavor, KERNEL_CONNECT_TIMEOUT, Model, NextUpstream};
use rand::RngExt;

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
    /// Bitmap of nodes already tried in the current set.
    tried: Vec<u64>,
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
        self.tried[n.index() / 64] & (1 << (n.index() % 64)) != 0
    }
    fn mark_tried(&mut self, n: NodeId) {
        self.tried[n.index() / 64] |= 1 << (n.index() % 64);
    }
}

/// An HAProxy backend's settings, resolved.
#[derive(Clone, Debug)]
struct Haproxy {
    retries: u32,
    redispatch_after: Option<i32>,
    /// `timeout connect` as configured (the turn-around pause uses it).
    timeout_connect: Option<SimDuration>,
    timeout_server: Option<SimDuration>,
}

/// Gateway state: in-flight requests and the balancer's per-peer tables.
pub(crate) struct Gateway {
    /// `Some`: the HAProxy request path.
    hap: Option<Haproxy>,
    reqs: Vec<Request>,
    free: Vec<u32>,
    next_id: u64,
    in_flight: usize,
    n: usize,
    /// Per (scope, node): smooth-WRR current and effective weights, and
    /// connections in flight.
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
    /// HAProxy `roundrobin`: each node's next position, the position of the
    /// last pick, and how far a pick moves a node (total weight / weight).
    rr_pos: Vec<u64>,
    rr_cur: u64,
    rr_step: Vec<u64>,
    /// Envoy's `healthy_panic_threshold`, percent; 0 = never panic.
    panic_threshold: f64,
}

impl Gateway {
    pub(crate) fn new(model: &Model) -> Self {
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
        let hap = (model.gateway.flavor == GatewayFlavor::Haproxy).then(|| {
            let h = model.gateway.haproxy();
            Haproxy {
                retries: h.retries,
                redispatch_after: h.redispatch.after(),
                timeout_connect: h.timeout_connect,
                timeout_server: h.timeout_server,
            }
        });
        let mut acc = 0;
        let ranges = primary
            .iter()
            .map(|&p| {
                acc += weight[p.index()];
                (acc, p)
            })
            .collect();
        Gateway {
            reqs: Vec::new(),
            free: Vec::new(),
            next_id: 0,
            in_flight: 0,
            n,
            cw: vec![0; n * scopes],
            ew: (0..scopes).flat_map(|_| weight.iter().copied()).collect(),
            conns: vec![0; n * scopes],
            weight,
            single: hap.is_none() && primary.len() == 1 && backup.is_empty(),
            primary,
            backup,
            down: model.nodes.iter().map(|x| x.down).collect(),
            max_conns: model.nodes.iter().map(|x| x.max_conns).collect(),
            initial_tries: match &hap {
                Some(h) => 1 + h.retries,
                None if cap > 0 => usable.min(cap),
                None => usable,
            },
            hap,
            ranges,
            total_weight: acc,
            rr_pos: vec![0; n],
            rr_cur: 0,
            rr_step: {
                let total: u64 = model.nodes.iter().map(|x| x.weight as u64).sum();
                model
                    .nodes
                    .iter()
                    .map(|x| total * 1_000_000 / x.weight.max(1) as u64)
                    .collect()
            },
            panic_threshold: panic_threshold(model),
        }
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
}

/// The effective panic threshold: `gateway.healthy_panic_threshold` if set,
/// else the highest one a policy brings (Envoy's 50 %), else 0 (nginx: none).
fn panic_threshold(model: &Model) -> f64 {
    model.gateway.healthy_panic_threshold.unwrap_or_else(|| {
        model
            .policies
            .iter()
            .filter_map(|p| p.healthy_panic_threshold())
            .fold(0.0, f64::max)
    })
}

/// Envoy's `isHostSetInPanic`: `100 × healthy / hosts < threshold` (strict).
fn in_panic(healthy: usize, hosts: usize, threshold: f64) -> bool {
    let pct = if hosts == 0 {
        0.0
    } else {
        100.0 * healthy as f64 / hosts as f64
    };
    pct < threshold
}

/// `max_conns` reached (0 means unlimited).
fn at_max_conns(max_conns: u32, conns: u32) -> bool {
    max_conns > 0 && conns >= max_conns
}

/// Is `node` eligible for this request: not tried, not `down`, not ejected
/// by any policy (unless in panic), not at `max_conns` (the skip tests of `get_peer`).
fn eligible(
    gw: &Gateway,
    policies: &[Box<dyn HealthPolicy>],
    r: &Request,
    node: NodeId,
    now: Now,
) -> bool {
    let k = gw.k(r.scope, node);
    !r.is_tried(node)
        && !gw.down[node.index()]
        && (r.panic || policies.iter().all(|p| p.is_routable(r.scope, node, now)))
        && !at_max_conns(gw.max_conns[node.index()], gw.conns[k])
}

impl World<'_> {
    pub(crate) fn start_request(&mut self, client: Option<u32>) {
        let now = self.q.now();
        let scope = if self.model.gateway.zone {
            // Keep the draw so that `zone` does not shift the gateway stream.
            let _ = self.pick_worker();
            0
        } else {
            self.pick_worker()
        };
        let counted = self.rec.in_window(now);
        self.rec.request_sent(now, counted);
        let gw = &mut self.gw;
        let slot = match gw.free.pop() {
            Some(s) => s,
            None => {
                gw.reqs.push(Request {
                    tried: vec![0; gw.n.div_ceil(64)],
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
        r.tried.iter_mut().for_each(|w| *w = 0);
        r.node = None;
        r.sent = false;
        r.random_tries = 0;
        r.retries_done = 0;
        r.last_node = None;
        r.retry_same = None;
        let generation = r.req_gen;
        self.arm_client_timeout(slot, generation);
        self.connect(slot);
    }

    /// `ngx_http_upstream_connect`: select a peer and start an attempt.
    fn connect(&mut self, slot: u32) {
        let Some(node) = self.select_peer(slot) else {
            // BUSY -> "no live upstreams" -> upstream_next(NOLIVE): nothing is
            // freed and NOLIVE is never in the mask, so 502 at once.
            // HAProxy answers 503 when no server is usable.
            let status = if self.gw.hap.is_some() { 503 } else { 502 };
            self.finalize(slot, status, None);
            return;
        };
        self.start_attempt(slot, node);
    }

    /// Connects to the selected `node` and sends the request.
    fn start_attempt(&mut self, slot: u32, node: NodeId) {
        let now = self.q.now();
        let faulty = self.rec.in_fault(node, now);
        let r = &mut self.gw.reqs[slot as usize];
        r.att_gen = r.att_gen.wrapping_add(1);
        r.node = Some(node);
        r.sent = false;
        r.att_faulty = faulty;
        r.last_node = Some(node);
        r.att_start = now;
        let (scope, single) = (r.scope, self.gw.single && !r.in_backup);
        let generation = r.att_gen;
        let counted = r.counted;
        self.rec.attempt(now, node, counted);
        let g = &self.model.gateway;
        let (connect_timeout, read_timeout) = match &self.gw.hap {
            None => (g.proxy_connect_timeout, Some(g.proxy_read_timeout)),
            Some(h) => (
                h.timeout_connect.unwrap_or(KERNEL_CONNECT_TIMEOUT),
                h.timeout_server,
            ),
        };
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
            self.q.schedule_in_lane(
                lane::CONNECT_TIMEOUT,
                now + connect_timeout,
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
            for i in 0..self.policies.len() {
                if !(single && self.policies[i].bypassed_for_single_server()) {
                    self.with_policy(i, |p, cx| p.on_connected(cx, scope, node));
                }
            }
            let sent_at = now + g.rtt;
            let r = &mut self.gw.reqs[slot as usize];
            r.sent = true;
            // HAProxy without `timeout server` waits for ever.
            r.read_deadline = read_timeout.map_or(SimTime::MAX, |t| sent_at + t);
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

    /// `get_round_robin_peer` (or the configured balancer) with the backup fallback.
    fn select_peer(&mut self, slot: u32) -> Option<NodeId> {
        let now = self.clock.now(self.q.now());
        let panic = self.gw.panic_threshold > 0.0 && {
            let scope = self.gw.reqs[slot as usize].scope;
            let hosts = self.gw.primary.iter().filter(|n| !self.gw.down[n.index()]);
            let (mut total, mut healthy) = (0, 0);
            for &n in hosts {
                total += 1;
                healthy += self.policies.iter().all(|p| p.is_routable(scope, n, now)) as usize;
            }
            in_panic(healthy, total, self.gw.panic_threshold)
        };
        self.gw.reqs[slot as usize].panic = panic;
        loop {
            let r = &self.gw.reqs[slot as usize];
            let picked = if self.gw.single && !r.in_backup {
                self.pick_single(slot, now)
            } else {
                match self.model.gateway.balancer {
                    Balancer::RoundRobin if self.gw.hap.is_some() => {
                        self.pick_haproxy_rr(slot, now)
                    }
                    Balancer::RoundRobin => self.pick_round_robin(slot, now),
                    Balancer::LeastConn => self.pick_least_conn(slot, now),
                    Balancer::RandomTwo => self.pick_random_two(slot, now),
                }
            };
            match picked {
                Some(node) => {
                    let r = &self.gw.reqs[slot as usize];
                    let (scope, single) = (r.scope, self.gw.single && !r.in_backup);
                    // Invariant checked by the property tests (debug builds): a
                    // node is selected only while every policy lets it through,
                    // or in Envoy's panic routing, or on nginx's single-server
                    // path that ignores max_fails. (HAProxy's retry on the same
                    // server does not select: it is not checked.)
                    debug_assert!(
                        r.panic
                            || self
                                .policies
                                .iter()
                                .all(|p| (single && p.bypassed_for_single_server())
                                    || p.is_routable(scope, node, now)),
                        "selected node {} in scope {scope} at {} although a policy ejects it",
                        node.0,
                        now.t
                    );
                    self.take_peer(slot, node);
                    return Some(node);
                }
                None => {
                    let r = &mut self.gw.reqs[slot as usize];
                    if !r.in_backup && !self.gw.backup.is_empty() {
                        r.in_backup = true;
                        r.tried.iter_mut().for_each(|w| *w = 0);
                        continue;
                    }
                    return None;
                }
            }
        }
    }

    /// The balancer chose `node`: count the connection, tell the policies.
    fn take_peer(&mut self, slot: u32, node: NodeId) {
        let r = &self.gw.reqs[slot as usize];
        let (scope, single) = (r.scope, self.gw.single && !r.in_backup);
        let k = self.gw.k(scope, node);
        self.gw.conns[k] += 1;
        for i in 0..self.policies.len() {
            if !(single && self.policies[i].bypassed_for_single_server()) {
                self.with_policy(i, |p, cx| p.on_selected(cx, scope, node));
            }
        }
    }

    /// The `peers->single` path: no `max_fails` at all.
    fn pick_single(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        let node = self.gw.primary[0];
        let r = &self.gw.reqs[slot as usize];
        let k = self.gw.k(r.scope, node);
        let m = self.gw.max_conns[node.index()];
        let ok = !self.gw.down[node.index()]
            && !at_max_conns(m, self.gw.conns[k])
            && (r.panic
                || self
                    .policies
                    .iter()
                    .all(|p| p.bypassed_for_single_server() || p.is_routable(r.scope, node, now)));
        ok.then_some(node)
    }

    fn set_len(&self, slot: u32) -> usize {
        if self.gw.reqs[slot as usize].in_backup {
            self.gw.backup.len()
        } else {
            self.gw.primary.len()
        }
    }

    fn set_node(&self, slot: u32, i: usize) -> NodeId {
        if self.gw.reqs[slot as usize].in_backup {
            self.gw.backup[i]
        } else {
            self.gw.primary[i]
        }
    }

    /// `ngx_http_upstream_get_peer`: smooth weighted round-robin, strict `>`.
    fn pick_round_robin(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        let mut best: Option<NodeId> = None;
        let mut total = 0;
        for i in 0..self.set_len(slot) {
            let node = self.set_node(slot, i);
            let r = &self.gw.reqs[slot as usize];
            if !eligible(&self.gw, &self.policies, r, node, now) {
                continue;
            }
            let k = self.gw.k(r.scope, node);
            let gw = &mut self.gw;
            gw.cw[k] += gw.ew[k];
            total += gw.ew[k];
            if gw.ew[k] < gw.weight[node.index()] {
                gw.ew[k] += 1;
            }
            if best.is_none_or(|b| gw.cw[k] > gw.cw[gw.k(gw.reqs[slot as usize].scope, b)]) {
                best = Some(node);
            }
        }
        let best = best?;
        let r = &mut self.gw.reqs[slot as usize];
        r.mark_tried(best);
        let scope = r.scope;
        let k = self.gw.k(scope, best);
        self.gw.cw[k] -= total;
        Some(best)
    }

    /// HAProxy `balance roundrobin` (`lb_fwrr.c`), as a weighted rotation:
    /// the eligible server with the lowest next position wins (config order
    /// breaks ties) and moves on by total weight / its weight; a server that
    /// was out of the rotation comes back at the current position. With equal
    /// weights it is a plain rotation, so a retry that is redispatched uses up
    /// the next server's turn (reference D13).
    fn pick_haproxy_rr(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        let cur = self.gw.rr_cur;
        let mut best: Option<(u64, NodeId)> = None;
        for i in 0..self.set_len(slot) {
            let node = self.set_node(slot, i);
            let r = &self.gw.reqs[slot as usize];
            if !eligible(&self.gw, &self.policies, r, node, now) {
                continue;
            }
            let pos = self.gw.rr_pos[node.index()].max(cur);
            if best.is_none_or(|(b, _)| pos < b) {
                best = Some((pos, node));
            }
        }
        let (pos, node) = best?;
        self.gw.rr_cur = pos;
        self.gw.rr_pos[node.index()] = pos + self.gw.rr_step[node.index()];
        self.gw.reqs[slot as usize].mark_tried(node);
        Some(node)
    }

    /// `ngx_http_upstream_get_least_conn_peer`: fewest `conns/weight`; ties
    /// broken by smooth WRR over the tied peers.
    fn pick_least_conn(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        let scope = self.gw.reqs[slot as usize].scope;
        let mut best: Option<(usize, NodeId)> = None;
        let mut many = false;
        for i in 0..self.set_len(slot) {
            let node = self.set_node(slot, i);
            if !eligible(
                &self.gw,
                &self.policies,
                &self.gw.reqs[slot as usize],
                node,
                now,
            ) {
                continue;
            }
            let gw = &self.gw;
            let c = gw.conns[gw.k(scope, node)] as i64;
            match best {
                None => best = Some((i, node)),
                Some((_, b)) => {
                    let lhs = c * gw.weight[b.index()];
                    let rhs = gw.conns[gw.k(scope, b)] as i64 * gw.weight[node.index()];
                    if lhs < rhs {
                        best = Some((i, node));
                        many = false;
                    } else if lhs == rhs {
                        many = true;
                    }
                }
            }
        }
        let (first, mut chosen) = best?;
        let mut total = 0;
        if many {
            let (bc, bw) = {
                let gw = &self.gw;
                (
                    gw.conns[gw.k(scope, chosen)] as i64,
                    gw.weight[chosen.index()],
                )
            };
            for i in first..self.set_len(slot) {
                let node = self.set_node(slot, i);
                if !eligible(
                    &self.gw,
                    &self.policies,
                    &self.gw.reqs[slot as usize],
                    node,
                    now,
                ) {
                    continue;
                }
                let gw = &mut self.gw;
                let k = gw.k(scope, node);
                if gw.conns[k] as i64 * bw != bc * gw.weight[node.index()] {
                    continue;
                }
                gw.cw[k] += gw.ew[k];
                total += gw.ew[k];
                if gw.ew[k] < gw.weight[node.index()] {
                    gw.ew[k] += 1;
                }
                if gw.cw[k] > gw.cw[gw.k(scope, chosen)] {
                    chosen = node;
                }
            }
        }
        let k = self.gw.k(scope, chosen);
        self.gw.cw[k] -= total;
        self.gw.reqs[slot as usize].mark_tried(chosen);
        Some(chosen)
    }

    /// `ngx_http_upstream_get_random2_peer`: two weighted random draws, the
    /// one with fewer `conns/weight` wins; after 20 unsuccessful draws in a
    /// request, plain round-robin. Backup sets use round-robin.
    fn pick_random_two(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        if self.gw.reqs[slot as usize].in_backup || self.gw.total_weight == 0 {
            return self.pick_round_robin(slot, now);
        }
        let scope = self.gw.reqs[slot as usize].scope;
        let mut prev: Option<NodeId> = None;
        loop {
            if self.gw.reqs[slot as usize].random_tries > 20 {
                return self.pick_round_robin(slot, now);
            }
            let x = self.rng_gateway.random_range(0..self.gw.total_weight);
            let i = self.gw.ranges.partition_point(|&(acc, _)| acc <= x);
            let node = self.gw.ranges[i].1;
            let ok = prev != Some(node)
                && eligible(
                    &self.gw,
                    &self.policies,
                    &self.gw.reqs[slot as usize],
                    node,
                    now,
                );
            if ok {
                match prev {
                    None => prev = Some(node),
                    Some(p) => {
                        let gw = &self.gw;
                        let lhs = gw.conns[gw.k(scope, node)] as i64 * gw.weight[p.index()];
                        let rhs = gw.conns[gw.k(scope, p)] as i64 * gw.weight[node.index()];
                        let chosen = if lhs > rhs { p } else { node };
                        self.gw.reqs[slot as usize].mark_tried(chosen);
                        return Some(chosen);
                    }
                }
            }
            self.gw.reqs[slot as usize].random_tries += 1;
        }
    }

    /// `free_round_robin_peer`: return the connection slot and do the
    /// passive accounting (nothing for a single server).
    fn free_peer(&mut self, slot: u32, node: NodeId, charge: Charge, result: AttemptResult) {
        let now = self.q.now();
        let r = &mut self.gw.reqs[slot as usize];
        r.node = None;
        let (scope, counted, id) = (r.scope, r.counted, r.id);
        let elapsed = now.saturating_since(r.att_start);
        let single = self.gw.single && !r.in_backup;
        let k = self.gw.k(scope, node);
        self.gw.conns[k] = self.gw.conns[k].saturating_sub(1);
        self.trace_attempt(id, scope, node, result, charge);
        if single {
            self.gw.reqs[slot as usize].tries = 0;
            let report = AttemptReport {
                scope,
                node,
                result,
                charge,
                elapsed,
            };
            for i in 0..self.policies.len() {
                if !self.policies[i].bypassed_for_single_server() {
                    self.with_policy(i, |p, cx| p.on_attempt(cx, &report));
                }
            }
            return;
        }
        if charge == Charge::Failed {
            self.rec.failure(now, node, counted);
        }
        if charge == Charge::Failed && self.gw.hap.is_none() {
            let w = self.gw.weight[node.index()];
            let cut: i64 = self
                .policies
                .iter()
                .map(|p| p.weight_cut(node, w as u32) as i64)
                .sum();
            self.gw.ew[k] = (self.gw.ew[k] - cut).max(0);
        }
        let report = AttemptReport {
            scope,
            node,
            result,
            charge,
            elapsed,
        };
        for i in 0..self.policies.len() {
            self.with_policy(i, |p, cx| p.on_attempt(cx, &report));
        }
        let r = &mut self.gw.reqs[slot as usize];
        r.tries = r.tries.saturating_sub(1);
    }

    /// The read deadline of an attempt still in flight.
    pub(crate) fn read_deadline(&self, slot: u32, generation: u32) -> Option<SimTime> {
        let r = self.gw.reqs.get(slot as usize)?;
        (r.active && r.att_gen == generation && r.sent).then_some(r.read_deadline)
    }

    /// Puts the attempt's `proxy_read_timeout` into the event queue: called
    /// whenever its response is not known to arrive before the deadline
    /// (queued, frozen, lost on the wire, or served too slowly). `at_node`:
    /// armed as the request reaches the node, in the FIFO lane for that.
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
            self.q.schedule_in_lane(lane::READ_TIMEOUT_AT_NODE, at, ev);
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

    pub(crate) fn on_attempt_failed(&mut self, slot: u32, generation: u32, why: Fail) {
        let Some(node) = self.attempt_of(slot, generation) else {
            return;
        };
        if self.gw.hap.is_some() {
            self.haproxy_failed(slot, node, why);
            return;
        }
        let (ft, result) = match why {
            Fail::Refused => (Ft::Error, AttemptResult::Refused),
            Fail::ConnectTimeout => (Ft::Timeout, AttemptResult::ConnectTimeout),
            Fail::ReadTimeout => (Ft::Timeout, AttemptResult::ReadTimeout),
        };
        self.next_upstream(slot, node, ft, result);
    }

    /// HAProxy: `timeout server` expired (504), or a connect failed
    /// (`back_handle_st_cer`): retry, on the same server or redispatched.
    fn haproxy_failed(&mut self, slot: u32, node: NodeId, why: Fail) {
        let result = match why {
            Fail::Refused => AttemptResult::Refused,
            Fail::ConnectTimeout => AttemptResult::ConnectTimeout,
            Fail::ReadTimeout => {
                self.free_peer(slot, node, Charge::Failed, AttemptResult::ReadTimeout);
                self.finalize(slot, 504, None);
                return;
            }
        };
        // Each failed attempt is an observe layer-4 error (in on_attempt).
        self.free_peer(slot, node, Charge::Failed, result);
        let Some(h) = self.gw.hap.clone() else {
            return;
        };
        let now = self.clock.now(self.q.now());
        let r = &self.gw.reqs[slot as usize];
        if r.retries_done >= h.retries {
            self.finalize(slot, 503, None);
            return;
        }
        let (scope, retries_done) = (r.scope, r.retries_done + 1);
        let up = |n: NodeId| {
            !self.gw.down[n.index()] && self.policies.iter().all(|p| p.is_routable(scope, n, now))
        };
        let srv_act = self.gw.primary.iter().filter(|&&n| up(n)).count();
        let rr = matches!(
            self.model.gateway.balancer,
            Balancer::RoundRobin | Balancer::RandomTwo
        );
        // stream_choose_redispatch
        let redispatch = h.redispatch_after.is_some_and(|after| {
            let nth = if after > 0 {
                retries_done as i32 % after == 0
            } else {
                let m = h.retries as i32 + 1 + after;
                m != 0 && retries_done as i32 % m == 0
            };
            !up(node) || nth || (srv_act > 1 && rr)
        });
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
        if delay.is_zero() {
            self.retry(slot);
        } else {
            let generation = r.att_gen;
            self.q
                .schedule(self.q.now() + delay, Event::Retry { slot, generation });
        }
    }

    /// HAProxy's turn-around pause ended.
    pub(crate) fn on_retry(&mut self, slot: u32, generation: u32) {
        let Some(r) = self.gw.reqs.get(slot as usize) else {
            return;
        };
        if r.active && r.att_gen == generation && r.node.is_none() {
            self.retry(slot);
        }
    }

    /// HAProxy: the next connection attempt of a request.
    fn retry(&mut self, slot: u32) {
        let r = &mut self.gw.reqs[slot as usize];
        if let Some(node) = r.retry_same {
            self.take_peer(slot, node);
            self.start_attempt(slot, node);
            return;
        }
        // Redispatch: back to load balancing, avoiding the last server when
        // another one is usable.
        let last = r.last_node;
        r.in_backup = false;
        r.tried.iter_mut().for_each(|w| *w = 0);
        if let Some(l) = last {
            r.mark_tried(l);
        }
        let picked = self.select_peer(slot).or_else(|| {
            let r = &mut self.gw.reqs[slot as usize];
            r.in_backup = false;
            r.tried.iter_mut().for_each(|w| *w = 0);
            self.select_peer(slot)
        });
        match picked {
            Some(node) => self.start_attempt(slot, node),
            None => self.finalize(slot, 503, None),
        }
    }

    /// A response header (or a reset) reached the gateway.
    pub(crate) fn on_response(&mut self, slot: u32, generation: u32, reply: Reply) {
        let Some(node) = self.attempt_of(slot, generation) else {
            return;
        };
        if self.gw.hap.is_some() {
            // HAProxy relays any status; a close before it is a 502.
            match reply {
                Reply::Reset => {
                    self.free_peer(slot, node, Charge::Failed, AttemptResult::Reset);
                    self.finalize(slot, 502, None);
                }
                Reply::Status(s) => {
                    self.free_peer(slot, node, Charge::Success, AttemptResult::Status(s));
                    self.finalize(slot, s, Some(node));
                }
            }
            return;
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
        if give_up {
            self.finalize(slot, status, None);
        } else {
            self.connect(slot);
        }
    }

    /// The gateway answers the client with `status`; `by` is the node whose
    /// response is relayed (already freed as a success).
    fn finalize(&mut self, slot: u32, status: u16, by: Option<NodeId>) {
        let now = self.q.now();
        let r = &self.gw.reqs[slot as usize];
        let (start, counted, client, faulty) = (r.start, r.counted, r.client, r.att_faulty);
        self.rec
            .answered(now, status, now.saturating_since(start), by, counted);
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
        let (counted, client, node) = (r.counted, r.client, r.node);
        if let Some(node) = node {
            self.free_peer(slot, node, Charge::Success, AttemptResult::ClientAbort);
        }
        let now = self.q.now();
        self.rec.timed_out(now, counted);
        self.release(slot);
        self.client_done(client);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn panic_is_strictly_below_the_threshold() {
        // 3 hosts, 2 ejected: 33 % < 50 % → panic (reference §1.9.1).
        assert!(in_panic(1, 3, 50.0));
        // 2 of 4 healthy: exactly 50 % is not below 50 %.
        assert!(!in_panic(2, 4, 50.0));
        assert!(in_panic(1, 4, 50.0));
        // 0 turns panic off, even with nothing healthy.
        assert!(!in_panic(0, 4, 0.0));
    }

    fn threshold_of(doc: serde_json::Value) -> f64 {
        let model = Model::from_document(&doc, Path::new("t.json")).unwrap();
        panic_threshold(&model)
    }

    #[test]
    fn the_panic_threshold_comes_from_the_gateway_or_the_policy() {
        let base = serde_json::json!({
            "name": "t", "duration": "1s",
            "clients": {"kind": "open", "rate_per_s": 1.0},
            "nodes": [{"name": "a"}, {"name": "b"}]
        });
        assert_eq!(threshold_of(base.clone()), 0.0, "nginx: no panic");
        let mut d = base.clone();
        d["policy"] = serde_json::json!({"kind": "outlier_detection"});
        assert_eq!(threshold_of(d.clone()), 50.0, "Envoy's default");
        d["gateway"] = serde_json::json!({"healthy_panic_threshold": 0.0});
        assert_eq!(threshold_of(d), 0.0, "the gateway setting wins");
        let mut d = base;
        d["policy"] = serde_json::json!({"kind": "istio", "minHealthPercent": 30});
        assert_eq!(threshold_of(d), 30.0);
    }
}
