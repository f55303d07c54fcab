//! The request path of a Traefik 3.7 router (`flavor: traefik`):
//!
//! - The circuit-breaker middleware (`gateway.traefik.circuitBreaker`,
//!   [`crate::policy::traefik::breaker`]) first: a request it does not
//!   admit gets its `responseCode` at once; the answers of those it admits
//!   are recorded (a client's give-up as 499).
//! - The retry middleware (`pkg/middlewares/retry/retry.go`): up to
//!   `attempts` tries. A try is retried when the connection failed before
//!   anything was written to the server (a refused or timed-out dial:
//!   `proxyReached && !wroteRequest`), or when its status is in `status`
//!   (idempotent methods), unless `timeout` has passed; the last try's
//!   answer is the client's. Between tries, `cenkalti/backoff`'s exponential
//!   back-off from `initialInterval` with a multiplier of
//!   2^(1/(attempts − 1)) and ±50 % randomization; without an interval, at
//!   once.
//! - The load balancer (`pkg/server/service/loadbalancer/wrr/wrr.go`):
//!   weighted round robin by earliest deadline, a server's deadline moving
//!   by 1/weight at each pick, a server that is down skipped (its deadline
//!   moves all the same); the servers in a random order
//!   (`service.go` `shuffle`). No server up: 503 "no available server".
//! - The proxy's errors (`ComputeStatusCode`, pkg/proxy/httputil/proxy.go):
//!   502 for a refused connection or a reset, 504 for a timeout (dial or
//!   `responseHeaderTimeout`, which is unset by default).

use super::super::{Event, Fail, NodeId, World};
use super::Reply;
use crate::engine::{SimDuration, SimTime};
use crate::policy::traefik::breaker::{Change, CircuitBreaker};
use crate::policy::{AttemptResult, Charge, Notice, ScopeSel};
use crate::spec::Model;
use crate::spec::gateway_flavors::TraefikRetrySpec;
use rand::RngExt;

/// Go's `container/heap` over the servers, by deadline.
#[derive(Clone, Debug, Default)]
pub(crate) struct Edf {
    /// (deadline, weight, node).
    heap: Vec<(f64, f64, NodeId)>,
    cur: f64,
}

impl Edf {
    fn less(&self, i: usize, j: usize) -> bool {
        self.heap[i].0 < self.heap[j].0
    }

    fn up(&mut self, mut j: usize) {
        while j > 0 {
            let i = (j - 1) / 2;
            if i == j || !self.less(j, i) {
                break;
            }
            self.heap.swap(i, j);
            j = i;
        }
    }

    fn down(&mut self, i0: usize, n: usize) {
        let mut i = i0;
        loop {
            let j1 = 2 * i + 1;
            if j1 >= n {
                break;
            }
            let mut j = j1;
            let j2 = j1 + 1;
            if j2 < n && self.less(j2, j1) {
                j = j2;
            }
            if !self.less(j, i) {
                break;
            }
            self.heap.swap(i, j);
            i = j;
        }
    }

    /// `Balancer.Add`: deadline `curDeadline + 1/weight`, `heap.Push`.
    fn push(&mut self, node: NodeId, weight: f64) {
        self.heap.push((self.cur + 1.0 / weight, weight, node));
        let n = self.heap.len();
        self.up(n - 1);
    }

    /// `heap.Pop` then, with the deadline moved on, `heap.Push`.
    fn pick_one(&mut self) -> NodeId {
        let n = self.heap.len();
        self.heap.swap(0, n - 1);
        self.down(0, n - 1);
        let (d, w, node) = self.heap.pop().expect("a server");
        self.cur = d;
        self.heap.push((d + 1.0 / w, w, node));
        let n = self.heap.len();
        self.up(n - 1);
        node
    }

    /// `nextServer` pops again while the server it just skipped (`node`,
    /// down) keeps the earliest deadline: with a weight far above the
    /// others' that is billions of pops. The same pops at once: its
    /// deadline moved by `1/weight` until it is no longer below every other
    /// server's (`curDeadline` the last one popped).
    fn skip(&mut self, node: NodeId) {
        let Some(at) = self.heap.iter().position(|h| h.2 == node) else {
            return;
        };
        let (d, w, _) = self.heap[at];
        let others = self
            .heap
            .iter()
            .filter(|h| h.2 != node)
            .map(|h| h.0)
            .fold(f64::INFINITY, f64::min);
        if others.is_infinite() || d >= others {
            return;
        }
        let mut steps = ((others - d) * w).ceil().max(1.0);
        while d + steps / w < others {
            steps += 1.0;
        }
        self.cur = d + (steps - 1.0) / w;
        self.heap[at].0 = d + steps / w;
        let n = self.heap.len();
        self.down(at, n);
    }
}

/// The retry middleware's back-off of one request.
#[derive(Copy, Clone, Debug, Default)]
struct Backoff {
    /// `currentInterval`, µs.
    current: f64,
}

/// A router's state.
pub(crate) struct TraefikPath {
    pub(super) dial_timeout: SimDuration,
    pub(super) response_header_timeout: Option<SimDuration>,
    retry: Option<TraefikRetrySpec>,
    ranges: Vec<(u16, u16)>,
    idempotent: bool,
    /// Per replica: its breaker, if the router has one.
    breakers: Vec<CircuitBreaker>,
    /// Per replica: the weighted round robin (filled at the first pick).
    edf: Vec<Edf>,
    /// Per request slot: admitted by the breaker, and its back-off.
    admitted: Vec<bool>,
    backoff: Vec<Backoff>,
}

impl TraefikPath {
    pub(super) fn of(model: &Model) -> Self {
        let t = model.gateway.traefik();
        let breakers = match &t.circuit_breaker {
            Some(p) => (0..model.replicas())
                .map(|_| CircuitBreaker::new(p).expect("a validated condition"))
                .collect(),
            None => vec![],
        };
        TraefikPath {
            dial_timeout: t.forwarding_timeouts.dial_timeout,
            response_header_timeout: t.forwarding_timeouts.response_header_timeout,
            ranges: t
                .retry
                .as_ref()
                .map(|r| r.ranges().expect("validated"))
                .unwrap_or_default(),
            retry: t.retry,
            idempotent: !model.clients.method().is_non_idempotent(),
            breakers,
            edf: vec![Edf::default(); model.replicas()],
            admitted: vec![],
            backoff: vec![],
        }
    }

    pub(super) fn begin(&mut self, slot: u32) {
        let i = slot as usize;
        if self.admitted.len() <= i {
            self.admitted.resize(i + 1, false);
            self.backoff.resize(i + 1, Backoff::default());
        }
        self.admitted[i] = false;
        self.backoff[i] = Backoff {
            current: self
                .retry
                .as_ref()
                .map_or(0.0, |r| r.initial_interval.as_micros() as f64),
        };
    }

    fn attempts(&self) -> u32 {
        self.retry.as_ref().map_or(1, |r| r.attempts)
    }
}

impl World<'_> {
    /// The breaker changed state: a trip cuts every server off (reported as
    /// an ejection of each), the recovery lets them back.
    fn breaker_changed(&mut self, replica: usize, change: Change) {
        let now = self.q.now();
        let n = self.gw.n;
        let notice = |node| match change {
            Change::Tripped => Some(Notice::Ejected {
                scope: ScopeSel::All,
                node,
            }),
            Change::Recovering => Some(Notice::Readmitted {
                scope: ScopeSel::All,
                node,
            }),
            Change::Standby => None,
        };
        for i in 0..n {
            if let Some(x) = notice(NodeId(i as u32)) {
                self.rec.notice(now, x, replica);
            }
        }
    }

    /// The breaker, then the retry middleware's try: the balancer's pick.
    pub(super) fn traefik_connect(&mut self, slot: u32) {
        let scope = self.gw.reqs[slot as usize].scope;
        let now = self.fleet.now_in(scope, self.q.now());
        let replica = self.fleet.replica_of(scope);
        let t = self.traefik();
        if !t.breakers.is_empty() && !t.admitted[slot as usize] {
            let (ok, change) = t.breakers[replica].admit(now);
            let code = t.breakers[replica].response_code;
            if ok {
                t.admitted[slot as usize] = true;
            }
            if let Some(c) = change {
                self.breaker_changed(replica, c);
            }
            if !ok {
                self.finalize(slot, code, None);
                return;
            }
        }
        self.flavor_refresh(now);
        match self.traefik_pick(scope, now) {
            Some(node) => {
                self.debug_check_pick(slot, node, now);
                self.take_peer(slot, node);
                self.start_attempt(slot, node);
            }
            // http.Error(rw, "no available server", 503): before the proxy,
            // so only a `status` range can retry it.
            None => self.traefik_decide(slot, 503, false, None),
        }
    }

    /// `Balancer.nextServer`.
    fn traefik_pick(&mut self, scope: u16, now: crate::policy::Now) -> Option<NodeId> {
        let replica = self.fleet.replica_of(scope);
        let nodes = self.gw.primary.clone();
        if !nodes.iter().any(|&n| self.flavor_eligible(scope, n, now)) {
            return None;
        }
        if self.traefik().edf[replica].heap.is_empty() {
            // shuffle(service.Servers), then Add in that order.
            let mut order = nodes;
            for i in (1..order.len()).rev() {
                let j = self.rng.gateway.random_range(0..=i);
                order.swap(i, j);
            }
            let weights: Vec<f64> = order
                .iter()
                .map(|n| self.model.nodes[n.index()].weight.max(1) as f64)
                .collect();
            let edf = &mut self.traefik().edf[replica];
            for (n, w) in order.into_iter().zip(weights) {
                edf.push(n, w);
            }
        }
        loop {
            let node = self.traefik().edf[replica].pick_one();
            if self.flavor_eligible(scope, node, now) {
                return Some(node);
            }
            self.traefik().edf[replica].skip(node);
        }
    }

    pub(super) fn traefik_failed(&mut self, slot: u32, node: NodeId, why: Fail) {
        // Refused and dial timeouts never wrote the request: the retry
        // middleware's network-error retry. A response timeout did.
        let (result, status, before_write) = match why {
            Fail::Refused => (AttemptResult::Refused, 502, true),
            Fail::ConnectTimeout => (AttemptResult::ConnectTimeout, 504, true),
            Fail::Rejected => (AttemptResult::Rejected, 502, true),
            Fail::ReadTimeout => (AttemptResult::ReadTimeout, 504, false),
        };
        self.free_peer(slot, node, Charge::Failed, result);
        self.traefik_decide(slot, status, before_write, None);
    }

    pub(super) fn traefik_response(&mut self, slot: u32, node: NodeId, reply: Reply) {
        match reply {
            Reply::Status(s) => {
                let charge = if s >= 500 {
                    Charge::Failed
                } else {
                    Charge::Success
                };
                self.free_peer(slot, node, charge, AttemptResult::Status(s));
                self.traefik_decide(slot, s, false, Some(node));
            }
            Reply::Reset => {
                self.free_peer(slot, node, Charge::Failed, AttemptResult::Reset);
                self.traefik_decide(slot, 502, false, None);
            }
        }
    }

    /// The retry middleware's `responseWriter.WriteHeader`: retry, or write.
    fn traefik_decide(&mut self, slot: u32, status: u16, before_write: bool, by: Option<NodeId>) {
        let now = self.q.now();
        let r = &self.gw.reqs[slot as usize];
        let (start, tried, generation) = (r.start, r.retries_done + 1, r.att_gen);
        let t = self.traefik();
        let retry = t.retry.clone();
        let timed_out = retry
            .as_ref()
            .is_some_and(|r| !r.timeout.is_zero() && now.saturating_since(start) >= r.timeout);
        let listed = t.idempotent && t.ranges.iter().any(|&(a, b)| (a..=b).contains(&status));
        let again = tried < t.attempts() && !timed_out && (before_write || listed);
        if !again {
            self.finalize(slot, status, by);
            return;
        }
        let wait = match self.traefik_backoff(slot, start, now) {
            Some(w) => w,
            None => {
                self.finalize(slot, status, by);
                return;
            }
        };
        self.gw.reqs[slot as usize].retries_done = tried;
        self.q
            .schedule(now + wait, Event::Retry { slot, generation });
    }

    /// `ExponentialBackOff.NextBackOff` (`cenkalti/backoff` v4): a random
    /// value in `current ± 50 %`, then `current × multiplier` (at most
    /// 60 s); `None` (`Stop`) past 15 minutes. Zero without an interval.
    fn traefik_backoff(&mut self, slot: u32, start: SimTime, now: SimTime) -> Option<SimDuration> {
        let t = self.traefik();
        let r = t.retry.as_ref()?;
        if r.attempts < 2 || r.initial_interval.is_zero() {
            return Some(SimDuration::ZERO);
        }
        let mult = 2f64.powf(1.0 / (r.attempts - 1) as f64);
        let cur = t.backoff[slot as usize].current;
        let max = 60e6;
        t.backoff[slot as usize].current = if cur >= max / mult { max } else { cur * mult };
        let u: f64 = self.rng.gateway.random();
        let (lo, hi) = (cur - 0.5 * cur, cur + 0.5 * cur);
        let next = SimDuration::from_micros((lo + u * (hi - lo + 1.0)) as u64);
        if now.saturating_since(start) + next > SimDuration::from_secs(15 * 60) {
            return None;
        }
        Some(next)
    }

    /// The request ends with `status`: the breaker records an answer it
    /// admitted (`serve`: `metrics.Record`, then `checkAndSet`).
    pub(super) fn traefik_finalize(&mut self, slot: u32, status: u16) {
        let r = &self.gw.reqs[slot as usize];
        let (scope, start) = (r.scope, r.start);
        let now = self.fleet.now_in(scope, self.q.now());
        let replica = self.fleet.replica_of(scope);
        let t = self.traefik();
        if t.breakers.is_empty() || !t.admitted[slot as usize] {
            return;
        }
        let latency = now.t.saturating_since(start);
        if let Some(c) = t.breakers[replica].record(now, status, latency) {
            self.breaker_changed(replica, c);
        }
    }
}
