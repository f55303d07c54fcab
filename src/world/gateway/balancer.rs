//! Which peer an attempt goes to, and giving it back: nginx's balancers
//! (`ngx_http_upstream_round_robin.c`: smooth weighted round-robin and the
//! backup set; `ngx_http_upstream_least_conn_module.c`;
//! `ngx_http_upstream_random_module.c` with `two`), HAProxy's `roundrobin`
//! (`lb_fwrr.c`), the eligibility tests every balancer applies (`down`,
//! `max_conns`, the health policies) and Envoy's panic threshold. Freeing a
//! peer does the passive accounting (`free_round_robin_peer`) and reports the
//! attempt to the policies.

use super::super::{NodeId, World};
use super::{Gateway, Request};
use crate::policy::{AttemptReport, AttemptResult, Charge, HealthPolicy, Now};
use crate::spec::{Balancer, Model};
use rand::RngExt;

/// The effective panic threshold: `gateway.healthy_panic_threshold` if set,
/// else the highest one a policy brings (Envoy's 50 %), else 0 (nginx: none).
pub(super) fn panic_threshold(model: &Model) -> f64 {
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
    /// `get_round_robin_peer` (or the configured balancer) with the backup fallback.
    pub(super) fn select_peer(&mut self, slot: u32) -> Option<NodeId> {
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
    pub(super) fn take_peer(&mut self, slot: u32, node: NodeId) {
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

    /// The `i`-th peer of the request's current set, if it is eligible.
    fn eligible_peer(&self, slot: u32, i: usize, now: Now) -> Option<NodeId> {
        let node = self.set_node(slot, i);
        let r = &self.gw.reqs[slot as usize];
        eligible(&self.gw, &self.policies, r, node, now).then_some(node)
    }

    /// `ngx_http_upstream_get_peer`: smooth weighted round-robin, strict `>`.
    fn pick_round_robin(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        let scope = self.gw.reqs[slot as usize].scope;
        let mut best: Option<NodeId> = None;
        let mut total = 0;
        for i in 0..self.set_len(slot) {
            let Some(node) = self.eligible_peer(slot, i, now) else {
                continue;
            };
            let gw = &mut self.gw;
            let k = gw.k(scope, node);
            gw.cw[k] += gw.ew[k];
            total += gw.ew[k];
            if gw.ew[k] < gw.weight[node.index()] {
                gw.ew[k] += 1;
            }
            if best.is_none_or(|b| gw.cw[k] > gw.cw[gw.k(scope, b)]) {
                best = Some(node);
            }
        }
        let best = best?;
        self.gw.reqs[slot as usize].mark_tried(best);
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
            let Some(node) = self.eligible_peer(slot, i, now) else {
                continue;
            };
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
            let Some(node) = self.eligible_peer(slot, i, now) else {
                continue;
            };
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
                let Some(node) = self.eligible_peer(slot, i, now) else {
                    continue;
                };
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
    pub(super) fn free_peer(
        &mut self,
        slot: u32,
        node: NodeId,
        charge: Charge,
        result: AttemptResult,
    ) {
        let now = self.q.now();
        let r = &mut self.gw.reqs[slot as usize];
        r.node = None;
        let (scope, counted, id) = (r.scope, r.counted, r.id);
        let elapsed = now.saturating_since(r.att_start);
        let single = self.gw.single && !r.in_backup;
        let k = self.gw.k(scope, node);
        self.gw.conns[k] = self.gw.conns[k].saturating_sub(1);
        self.trace_attempt(id, scope, node, result, charge);
        let report = AttemptReport {
            scope,
            node,
            result,
            charge,
            elapsed,
        };
        if single {
            self.gw.reqs[slot as usize].tries = 0;
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
        for i in 0..self.policies.len() {
            self.with_policy(i, |p, cx| p.on_attempt(cx, &report));
        }
        let r = &mut self.gw.reqs[slot as usize];
        r.tries = r.tries.saturating_sub(1);
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
