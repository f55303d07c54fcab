//! The request path of a Kong Service to an upstream (`flavor: kong`):
//! nginx's pipeline of [`super`] (Kong is OpenResty: one `kong_upstream`
//! whose peer `balancer_by_lua` sets) with Kong's own decisions. The
//! functions named are Kong's; checked against the sources only.
//!
//! - **The balancer** (`kong/runloop/balancer/round_robin.lua`): a wheel
//!   of `weight / gcd` slots per target (`afterHostUpdate`), shuffled once
//!   (`wheel_shuffle`, Fisher–Yates with `math.random`), one per nginx
//!   worker; `getPeer` moves the pointer one slot at a time, wrapping,
//!   skipping targets that are not `available`, until it comes round to
//!   where it started. A retry takes the next slot: it does not avoid the
//!   target that just failed. Weight-0 targets (`down`) have no slot.
//! - **No peer**: `getPeer` without a peer, or the balancer `unhealthy`
//!   (`updateStatus`: the available weight's share not above
//!   `healthchecks.threshold`), is "failure to get a peer from the
//!   ring-balancer": 503, on the first try (`runloop.access.after`) and on a
//!   retry (`Kong.balancer` → `ngx.exit(503)`).
//! - **Retries** (`Kong.balancer`: `set_more_tries(retries)` on the first
//!   try): up to `retries` more tries under nginx's default
//!   `proxy_next_upstream error timeout` (Kong's template sets no other):
//!   a failed connect, a reset or a timeout is retried, a status never, a
//!   non-idempotent request not once sent. The client gets nginx's 502
//!   (error) or 504 (timeout) when the tries run out.
//! - **What the health checker hears**: at each retry `Kong.balancer`
//!   reports the previous try (`get_last_failure`: "failed" with 504 →
//!   `report_timeout`, other "failed" → `report_tcp_failure`), and the log
//!   phase reports the last one by its status (`upstream_status`: 504 →
//!   `report_timeout`, else `report_http_status`) — so a last try refused or
//!   reset is reported as the status 502. The policies hear exactly that.

use super::super::{Fail, NodeId, World};
use super::{Ft, Reply};
use crate::engine::SimRng;
use crate::policy::{AttemptResult, Charge};
use crate::spec::{GatewayFlavor, Model};
use rand::RngExt;

/// A Kong Service's request path: the settings and each worker's wheel.
#[derive(Clone, Debug)]
pub(crate) struct KongPath {
    pub(super) retries: u32,
    health_threshold: f64,
    /// The targets with slots and their weights, in the order Kong lists them.
    targets: Vec<(NodeId, u64)>,
    divisor: u64,
    /// Per scope: the shuffled wheel, empty until the worker's first pick.
    wheels: Vec<Vec<NodeId>>,
    /// Per scope: `self.pointer` (1-based, starts at 1).
    pointers: Vec<usize>,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl KongPath {
    /// The path with `flavor: kong`, else `None`.
    pub(super) fn of(model: &Model) -> Option<KongPath> {
        if model.gateway.flavor != GatewayFlavor::Kong {
            return None;
        }
        let k = model.gateway.kong();
        let targets: Vec<(NodeId, u64)> = model
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.down && n.weight > 0)
            .map(|(i, n)| (NodeId(i as u32), n.weight as u64))
            .collect();
        let divisor = targets.iter().fold(0, |d, &(_, w)| gcd(d, w));
        let scopes = model.scopes();
        Some(KongPath {
            retries: k.retries,
            health_threshold: k.health_threshold,
            targets,
            divisor,
            wheels: vec![Vec::new(); scopes],
            pointers: vec![1; scopes],
        })
    }

    /// `afterHostUpdate`: every target's slots, then `wheel_shuffle`.
    fn build(&self, rng: &mut SimRng) -> Vec<NodeId> {
        let mut wheel = Vec::new();
        for &(node, w) in &self.targets {
            for _ in 0..w / self.divisor.max(1) {
                wheel.push(node);
            }
        }
        // `for i = #wheel, 2, -1 do local j = random(i) ...`
        for i in (2..=wheel.len()).rev() {
            let j = rng.random_range(1..=i);
            wheel.swap(i - 1, j - 1);
        }
        wheel
    }
}

impl World<'_> {
    /// `getPeer` for the request in `slot`: the next available slot of its
    /// worker's wheel, or `None` (503).
    #[inline(never)]
    pub(super) fn kong_pick(&mut self, slot: u32) -> Option<NodeId> {
        let scope = self.gw.reqs[slot as usize].scope;
        let now = self.usable_now(scope);
        let s = scope as usize;
        let kong = self.gw.kong.as_mut().expect("Kong's request path");
        if kong.wheels[s].is_empty() {
            kong.wheels[s] = kong.build(&mut self.rng.gateway);
        }
        let kong = self.gw.kong.as_ref().expect("Kong's request path");
        if !self.kong_balancer_healthy(scope, now) {
            return None;
        }
        let wheel = &kong.wheels[s];
        let size = wheel.len();
        let start = kong.pointers[s];
        let mut pointer = start;
        let mut found = None;
        loop {
            pointer += 1;
            if pointer > size {
                pointer = 1;
            }
            if let Some(&node) = wheel.get(pointer - 1)
                && self.usable(scope, node, now)
            {
                found = Some(node);
                break;
            }
            if pointer == start || size == 0 {
                break;
            }
        }
        self.gw.kong.as_mut().expect("Kong's request path").pointers[s] = pointer;
        let node = found?;
        self.take_peer(slot, node);
        Some(node)
    }

    /// `updateStatus`: is the available weight's share above the
    /// upstream's `healthchecks.threshold` (percent)?
    fn kong_balancer_healthy(&self, scope: u16, now: crate::policy::Now) -> bool {
        let kong = self.gw.kong.as_ref().expect("Kong's request path");
        if kong.health_threshold <= 0.0 {
            // Any available target will do, and `getPeer` finds one if there is.
            return true;
        }
        let total: u64 = kong.targets.iter().map(|&(_, w)| w).sum();
        let available: u64 = kong
            .targets
            .iter()
            .filter(|&&(n, _)| self.usable(scope, n, now))
            .map(|&(_, w)| w)
            .sum();
        total > 0 && available as f64 / total as f64 * 100.0 > kong.health_threshold
    }

    /// A Kong attempt ended without a response.
    pub(super) fn kong_failed(&mut self, slot: u32, node: NodeId, why: Fail) {
        let (ft, result) = match why {
            Fail::Refused => (Ft::Error, AttemptResult::Refused),
            Fail::ConnectTimeout => (Ft::Timeout, AttemptResult::ConnectTimeout),
            Fail::ReadTimeout => (Ft::Timeout, AttemptResult::ReadTimeout),
            Fail::Rejected => (Ft::Error, AttemptResult::Rejected),
        };
        self.kong_next(slot, node, ft, result);
    }

    /// A response header (or a reset) from `node` reached Kong: a status
    /// is relayed (never retried), a reset is retried as an error.
    pub(super) fn kong_response(&mut self, slot: u32, node: NodeId, reply: Reply) {
        match reply {
            Reply::Reset => self.kong_next(slot, node, Ft::Error, AttemptResult::Reset),
            Reply::Status(s) => {
                self.free_peer(slot, node, Charge::Success, AttemptResult::Status(s));
                self.finalize(slot, s, Some(node));
            }
        }
    }

    /// `ngx_http_upstream_next` under `proxy_next_upstream error timeout`,
    /// deciding first whether another try follows, so that the policies
    /// hear the failure as Kong reports it: a retried one as it is, the
    /// last one refused or reset as the status 502.
    fn kong_next(&mut self, slot: u32, node: NodeId, ft: Ft, result: AttemptResult) {
        let r = &self.gw.reqs[slot as usize];
        let non_idem = r.sent && self.model.clients.method().is_non_idempotent();
        let last = r.tries <= 1 || non_idem;
        let reported = match result {
            AttemptResult::Refused | AttemptResult::Reset if last => AttemptResult::Status(502),
            other => other,
        };
        self.free_peer_as(slot, node, Charge::Failed, result, reported);
        if last {
            let status = if ft == Ft::Timeout { 504 } else { 502 };
            self.finalize(slot, status, None);
        } else {
            self.connect(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::streams::Stream;
    use std::path::Path;

    fn model(nodes: serde_json::Value) -> Model {
        let doc = serde_json::json!({
            "name": "k", "duration": "1s",
            "clients": {"kind": "open", "rate_per_s": 1.0},
            "gateway": {"flavor": "kong", "workers": 2},
            "nodes": nodes
        });
        Model::from_document(&doc, Path::new("k.json")).unwrap()
    }

    #[test]
    fn the_wheel_has_weight_over_gcd_slots_per_target_shuffled() {
        let m = model(serde_json::json!([
            {"name": "a", "weight": 100}, {"name": "b", "weight": 50},
            {"name": "c", "weight": 150}, {"name": "d", "down": true}
        ]));
        let k = KongPath::of(&m).unwrap();
        assert_eq!(k.divisor, 50);
        assert_eq!(k.wheels.len(), 2, "one wheel per worker");
        let mut r = Stream::Gateway.of(1);
        let w = k.build(&mut r);
        let count = |n: u32| w.iter().filter(|x| x.0 == n).count();
        assert_eq!((count(0), count(1), count(2), count(3)), (2, 1, 3, 0));
        let shuffles: std::collections::BTreeSet<Vec<NodeId>> =
            (0..50).map(|_| k.build(&mut r)).collect();
        assert!(shuffles.len() > 10, "Fisher–Yates draws many orders");
    }
}
