//! The request path of Caddy 2.11's `reverse_proxy` (`flavor: caddy`),
//! `modules/caddyhttp/reverseproxy/reverseproxy.go`:
//!
//! - `ServeHTTP` loops over `proxyLoopIteration`: pick an available
//!   upstream (`Upstream.Available`: the health checks and `max_requests`),
//!   by `lb_policy` (`selectionpolicies.go`: `random` by default, uniform
//!   and blind to weights; `round_robin`; `first`); none → 503 "no
//!   upstreams available" (`errNoUpstream`), unless an earlier try's error
//!   is kept (`if proxyErr == nil`).
//! - A proxy error decides the status (`statusError`): 502, or 504 for a
//!   timeout (`response_header_timeout`; a dial timeout is a `DialError`,
//!   not a `net.Error`: 502). An upstream's status, 5xx included, goes to
//!   the client as it is, never retried (no `lb_retry_match` here).
//! - `LoadBalancing.tryAgain`: no retry unless `lb_try_duration` or
//!   `lb_retries`; none once `lb_try_duration` has passed since the request
//!   started or `lb_retries` retries were made; an error after the
//!   connection was made is retried only for GET (dial errors and "no
//!   upstream" for any method); then a wait of `lb_try_interval` (250 ms by
//!   default with a try duration). A retry picks again among every
//!   available upstream.
//! - There is no response timeout by default: a hung backend holds the
//!   request until the client leaves (`context.Canceled`: 499, not
//!   counted).

use super::super::{Event, Fail, NodeId, World};
use super::Reply;
use crate::policy::{AttemptResult, Charge};
use crate::spec::gateway_flavors::{CaddyGatewaySpec, CaddyLbPolicy};
use crate::spec::{Method, Model};
use rand::RngExt;

/// What the last try of a request ended with (`proxyErr`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
enum LastError {
    #[default]
    None,
    /// A `DialError` (refused, dial timeout): always retried.
    Dial(u16),
    /// An error once connected (reset, response timeout): retried for GET.
    Transport(u16),
}

/// Caddy's handler state.
pub(crate) struct CaddyPath {
    pub(super) spec: CaddyGatewaySpec,
    get: bool,
    /// Per request slot: its last error.
    last: Vec<LastError>,
    /// Per replica: `RoundRobinSelection.robin` (and
    /// `WeightedRoundRobinSelection.index`).
    robin: Vec<u32>,
    /// The nodes' weights and their sum (`weighted_round_robin`).
    weights: Vec<u32>,
    /// Go's `int` (64 bits): the sum of u32 weights does not wrap.
    total_weight: u64,
}

impl CaddyPath {
    pub(super) fn of(model: &Model) -> Self {
        CaddyPath {
            spec: model.gateway.caddy(),
            get: model.clients.method() == Method::Get,
            last: vec![],
            robin: vec![0; model.replicas()],
            weights: model.nodes.iter().map(|n| n.weight).collect(),
            total_weight: model.nodes.iter().map(|n| u64::from(n.weight)).sum(),
        }
    }

    pub(super) fn begin(&mut self, slot: u32) {
        let i = slot as usize;
        if self.last.len() <= i {
            self.last.resize(i + 1, LastError::None);
        }
        self.last[i] = LastError::None;
    }
}

impl World<'_> {
    /// `proxyLoopIteration`'s selection, then the attempt.
    pub(super) fn caddy_connect(&mut self, slot: u32) {
        let scope = self.gw.reqs[slot as usize].scope;
        let now = self.fleet.now_in(scope, self.q.now());
        self.flavor_refresh(now);
        let primary = self.gw.primary.len();
        let eligible = |w: &World, i: usize| w.flavor_eligible(scope, w.gw.primary[i], now);
        let replica = self.fleet.replica_of(scope);
        let picked = match self.caddy().spec.lb_policy {
            CaddyLbPolicy::Random => {
                // selectRandomHost: reservoir sampling, uniform over the available.
                let count = (0..primary).filter(|&i| eligible(self, i)).count();
                if count == 0 {
                    None
                } else {
                    let k = self.rng.gateway.random_range(0..count);
                    (0..primary).filter(|&i| eligible(self, i)).nth(k)
                }
            }
            CaddyLbPolicy::First => (0..primary).find(|&i| eligible(self, i)),
            CaddyLbPolicy::RoundRobin => {
                let mut found = None;
                for _ in 0..primary {
                    let c = self.caddy();
                    c.robin[replica] = c.robin[replica].wrapping_add(1);
                    let i = c.robin[replica] as usize % primary;
                    if eligible(self, i) {
                        found = Some(i);
                        break;
                    }
                }
                found
            }
            CaddyLbPolicy::WeightedRoundRobin => self.caddy_weighted(scope, replica, now),
        };
        match picked {
            Some(i) => {
                let node = self.gw.primary[i];
                self.debug_check_pick(slot, node, now);
                self.take_peer(slot, node);
                self.start_attempt(slot, node);
            }
            None => {
                let last = self.caddy().last[slot as usize];
                let (status, any_method) = match last {
                    LastError::None => (503, true),
                    LastError::Dial(s) => (s, true),
                    LastError::Transport(s) => (s, false),
                };
                self.caddy_try_again(slot, status, any_method);
            }
        }
    }

    /// `WeightedRoundRobinSelection.Select`: the counter picks a position
    /// by the weights, then that position among the available upstreams.
    fn caddy_weighted(
        &mut self,
        scope: u16,
        replica: usize,
        now: crate::policy::Now,
    ) -> Option<usize> {
        let n = self.gw.primary.len();
        if n < 2 {
            return Some(0); // `len(r.Weights) < 2`: pool[0], available or not
        }
        let c = self.caddy();
        c.robin[replica] = c.robin[replica].wrapping_add(1);
        // `int(atomic.AddUint32(&r.index, 1)) % totalWeight`: a uint32
        // counter, a 64-bit sum.
        let current = u64::from(c.robin[replica]) % c.total_weight.max(1);
        let mut acc = 0u64;
        let mut index = 0;
        for (i, &w) in c.weights.iter().enumerate() {
            acc += u64::from(w);
            if current < acc {
                index = i;
                break;
            }
        }
        let available: Vec<usize> = (0..n)
            .filter(|&i| self.flavor_eligible(scope, self.gw.primary[i], now))
            .collect();
        (!available.is_empty()).then(|| available[index % available.len()])
    }

    /// An attempt ended without a response: a dial error, or the response
    /// header timeout.
    pub(super) fn caddy_failed(&mut self, slot: u32, node: NodeId, why: Fail) {
        let (result, err) = match why {
            Fail::Refused => (AttemptResult::Refused, LastError::Dial(502)),
            Fail::ConnectTimeout => (AttemptResult::ConnectTimeout, LastError::Dial(502)),
            Fail::Rejected => (AttemptResult::Rejected, LastError::Dial(502)),
            Fail::ReadTimeout => (AttemptResult::ReadTimeout, LastError::Transport(504)),
        };
        self.free_peer(slot, node, Charge::Failed, result);
        self.caddy_error(slot, err);
    }

    /// The upstream answered (relayed as it is) or closed the connection.
    pub(super) fn caddy_response(&mut self, slot: u32, node: NodeId, reply: Reply) {
        match reply {
            Reply::Status(s) => {
                self.free_peer(slot, node, Charge::Success, AttemptResult::Status(s));
                self.finalize(slot, s, Some(node));
            }
            Reply::Reset => {
                self.free_peer(slot, node, Charge::Failed, AttemptResult::Reset);
                self.caddy_error(slot, LastError::Transport(502));
            }
        }
    }

    fn caddy_error(&mut self, slot: u32, err: LastError) {
        self.caddy().last[slot as usize] = err;
        let (status, any_method) = match err {
            LastError::Dial(s) => (s, true),
            LastError::Transport(s) => (s, false),
            LastError::None => (502, false),
        };
        self.caddy_try_again(slot, status, any_method);
    }

    /// `tryAgain`: wait `lb_try_interval` and loop, or answer `status`.
    fn caddy_try_again(&mut self, slot: u32, status: u16, any_method: bool) {
        let now = self.q.now();
        let r = &self.gw.reqs[slot as usize];
        let (start, retries, generation) = (r.start, r.retries_done, r.att_gen);
        let c = &self.caddy().spec;
        let (duration, max_retries, interval) = (c.lb_try_duration, c.lb_retries, c.try_interval());
        let get = self.caddy().get;
        // tryAgain's tests, in its order.
        let configured = !duration.is_zero() || max_retries > 0;
        let in_time = duration.is_zero() || now.saturating_since(start) < duration;
        let retries_left = max_retries == 0 || retries < max_retries;
        let again = configured && in_time && retries_left && (any_method || get);
        if !again {
            self.finalize(slot, status, None);
            return;
        }
        self.gw.reqs[slot as usize].retries_done = retries + 1;
        // An event even without a wait: a long run of tries makes no deep stack.
        self.q
            .schedule(now + interval, Event::Retry { slot, generation });
    }
}
