//! The balancers as direct scans over every peer, asking every policy, as
//! nginx does. For an upstream of a few peers this is cheaper than keeping
//! the policies' verdicts and the balancers' structures up to date (measured
//! with callgrind on 10k req/s: equal at 4 nodes, the scans 9 % cheaper at
//! 2, the structures 20 % cheaper at 8), so upstreams of up to
//! [`DIRECT_MAX_NODES`] use it; it is also the reference the structures are
//! tested against (`tests`: the same peer for every attempt, on every
//! shipped model and on random ones).

use super::super::{Gateway, Request};
use super::PickKind;
use super::{at_max_conns, in_panic};
use crate::ids::Scope;
use crate::policy::Now;
use crate::world::fleet::Fleet;
use crate::world::policies::{Instance, PolicyBank};
use crate::world::{NodeId, World};

/// Upstreams with at most this many nodes pick by direct scans.
pub(crate) const DIRECT_MAX_NODES: usize = 3;

/// Is `node` eligible for this request: not tried, not `down`, not ejected
/// by any policy (unless in panic), not at `max_conns` (the skip tests of `get_peer`).
/// `policies`: those of the request's replica, which call its scope `local`.
#[inline(always)]
pub(super) fn direct_eligible(
    gw: &Gateway,
    (policies, local): (&[Instance], Scope),
    r: &Request,
    node: NodeId,
    now: Now,
) -> bool {
    let k = gw.k(r.scope, node);
    // Cheapest first: the tests are pure, so their order changes only the cost.
    !r.is_tried(node)
        && !gw.down[node.index()]
        && !at_max_conns(gw.max_conns[node.index()], gw.conns[k])
        && (r.panic || policies.iter().all(|p| p.is_routable(local, node, now)))
}

/// The policies of the replica of global scope `s`, and `s` as they call
/// it (`World::replica_policies`, from the two parts it reads, so that a
/// pick can hold them beside a mutable gateway).
#[inline(always)]
fn policies_in<'b>(fleet: &Fleet, bank: &'b PolicyBank, s: Scope) -> (&'b [Instance], Scope) {
    if fleet.is_fleet() {
        (bank.slice(fleet.policies_of(s)), fleet.local(s))
    } else {
        (bank.slice(0..bank.len()), s)
    }
}

impl World<'_> {
    /// The policies of the replica of global scope `s`, and `s` as they call it.
    #[inline(always)]
    pub(in crate::world::gateway) fn replica_policies(&self, s: Scope) -> (&[Instance], Scope) {
        policies_in(&self.fleet, &self.bank, s)
    }

    /// `get_round_robin_peer` (or the configured balancer) with the backup fallback.
    pub(in crate::world::gateway) fn direct_select_peer(&mut self, slot: u32) -> Option<NodeId> {
        let scope = self.gw.reqs[slot as usize].scope;
        let now = self.fleet.now_in(scope, self.q.now());
        let panic = self.gw.panic_threshold > 0.0 && {
            let (policies, local) = self.replica_policies(scope);
            let hosts = self.gw.primary.iter().filter(|n| !self.gw.down[n.index()]);
            let (mut total, mut healthy) = (0, 0);
            for &n in hosts {
                total += 1;
                healthy += policies.iter().all(|p| p.is_routable(local, n, now)) as usize;
            }
            in_panic(healthy, total, self.gw.panic_threshold)
        };
        self.gw.reqs[slot as usize].panic = panic;
        if self.gw.warm.is_none() {
            return self.pick_with_backup(slot, now);
        }
        self.warm_weights(scope);
        let picked = self.pick_with_backup(slot, now);
        let counted = self.gw.reqs[slot as usize].counted;
        self.warm_count(scope, picked, counted);
        picked
    }

    /// One pick of the configured balancer by direct scans.
    #[inline(always)]
    pub(in crate::world::gateway) fn direct_pick(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        match self.gw.pick_kind {
            PickKind::HaproxyRoundRobin => self.direct_pick_haproxy_rr(slot, now),
            PickKind::RoundRobin => self.direct_pick_round_robin(slot, now),
            PickKind::LeastConn => self.direct_pick_least_conn(slot, now),
            PickKind::RandomTwo => self.direct_pick_random_two(slot, now),
            PickKind::Hash => self.direct_pick_hash(slot, now),
        }
    }

    fn direct_set_len(&self, slot: u32) -> usize {
        if self.gw.reqs[slot as usize].in_backup {
            self.gw.backup.len()
        } else {
            self.gw.primary.len()
        }
    }

    fn direct_set_node(&self, slot: u32, i: usize) -> NodeId {
        if self.gw.reqs[slot as usize].in_backup {
            self.gw.backup[i]
        } else {
            self.gw.primary[i]
        }
    }

    /// The `i`-th peer of the request's current set, if it is eligible.
    #[inline(always)]
    fn direct_eligible_peer(&self, slot: u32, i: usize, now: Now) -> Option<NodeId> {
        let node = self.direct_set_node(slot, i);
        let r = &self.gw.reqs[slot as usize];
        direct_eligible(&self.gw, self.replica_policies(r.scope), r, node, now).then_some(node)
    }

    /// `ngx_http_upstream_get_peer`: smooth weighted round-robin, strict `>`.
    /// The set, the request and the policies looked up once, the best
    /// peer's current weight kept rather than read again.
    pub(super) fn direct_pick_round_robin(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        let World {
            gw, fleet, bank, ..
        } = self;
        let r = &gw.reqs[slot as usize];
        let policies = policies_in(fleet, bank, r.scope);
        let base = r.scope as usize * gw.n;
        let set = if r.in_backup { &gw.backup } else { &gw.primary };
        let mut best: Option<(NodeId, usize, i64)> = None;
        let mut total = 0;
        for &node in set {
            if !direct_eligible(gw, policies, r, node, now) {
                continue;
            }
            let (i, k) = (node.index(), base + node.index());
            let cw = gw.cw[k] + gw.ew[k];
            gw.cw[k] = cw;
            total += gw.ew[k];
            if gw.ew[k] < gw.weight[i] {
                gw.ew[k] += 1;
            }
            if best.is_none_or(|(_, _, b)| cw > b) {
                best = Some((node, k, cw));
            }
        }
        let (best, k, _) = best?;
        gw.reqs[slot as usize].mark_tried(best);
        gw.cw[k] -= total;
        Some(best)
    }

    /// HAProxy `balance roundrobin` (`lb_fwrr.c`), as a weighted rotation:
    /// the eligible server with the lowest next position wins (config order
    /// breaks ties) and moves on by total weight / its weight; a server that
    /// was out of the rotation comes back at the current position. With equal
    /// weights it is a plain rotation, so a retry that is redispatched uses up
    /// the next server's turn (reference D13).
    fn direct_pick_haproxy_rr(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        let scope = self.gw.reqs[slot as usize].scope;
        let cur = self.gw.rr_cur[scope as usize];
        let mut best: Option<(u64, NodeId)> = None;
        for i in 0..self.direct_set_len(slot) {
            let Some(node) = self.direct_eligible_peer(slot, i, now) else {
                continue;
            };
            let pos = self.gw.rr_pos[self.gw.k(scope, node)].max(cur);
            if best.is_none_or(|(b, _)| pos < b) {
                best = Some((pos, node));
            }
        }
        let (pos, node) = best?;
        self.gw.rr_cur[scope as usize] = pos;
        let k = self.gw.k(scope, node);
        self.gw.rr_pos[k] = pos + self.gw.rr_step[node.index()];
        self.gw.reqs[slot as usize].mark_tried(node);
        Some(node)
    }

    /// `ngx_http_upstream_get_least_conn_peer`: fewest `conns/weight`; ties
    /// broken by smooth WRR over the tied peers.
    fn direct_pick_least_conn(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        let scope = self.gw.reqs[slot as usize].scope;
        let mut best: Option<(usize, NodeId)> = None;
        let mut many = false;
        for i in 0..self.direct_set_len(slot) {
            let Some(node) = self.direct_eligible_peer(slot, i, now) else {
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
            for i in first..self.direct_set_len(slot) {
                let Some(node) = self.direct_eligible_peer(slot, i, now) else {
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
    fn direct_pick_random_two(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        if self.gw.reqs[slot as usize].in_backup || self.gw.total_weight == 0 {
            return self.direct_pick_round_robin(slot, now);
        }
        let scope = self.gw.reqs[slot as usize].scope;
        let mut prev: Option<NodeId> = None;
        loop {
            if self.gw.reqs[slot as usize].random_tries > 20 {
                return self.direct_pick_round_robin(slot, now);
            }
            let node = self.gw.weighted_draw(&mut self.rng.gateway);
            let ok = prev != Some(node)
                && direct_eligible(
                    &self.gw,
                    self.replica_policies(self.gw.reqs[slot as usize].scope),
                    &self.gw.reqs[slot as usize],
                    node,
                    now,
                );
            if ok {
                match prev {
                    None => prev = Some(node),
                    Some(p) => {
                        let chosen = self.gw.less_loaded(scope, p, node);
                        self.gw.reqs[slot as usize].mark_tried(chosen);
                        return Some(chosen);
                    }
                }
            }
            self.gw.reqs[slot as usize].random_tries += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::Model;
    use crate::world::World;
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use std::path::Path;

    /// Every attempt of a run: request, worker, node, result, how it was charged.
    fn attempts(model: &Model, seed: u64, reference: bool) -> Vec<String> {
        let mut lines = Vec::new();
        let mut sink = |l: &crate::world::TraceLine| {
            lines.push(format!(
                "{:.6} {} {} {} {} {}",
                l.t_s, l.request, l.scope, l.node, l.result, l.charge
            ))
        };
        let mut w = World::new(model, seed, Some(&mut sink));
        // The hash balancers have no structures: they always scan.
        w.gw.direct =
            reference || model.gateway.balancer.is_hash() || model.gateway.slow_start.is_some();
        w.run();
        lines
    }

    fn same_choices(model: &Model, seed: u64) -> Result<usize, String> {
        let fast = attempts(model, seed, false);
        let direct = attempts(model, seed, true);
        if let Some(i) = (0..fast.len().min(direct.len())).find(|&i| fast[i] != direct[i]) {
            return Err(format!(
                "attempt {i} differs:\n  structures: {}\n  direct:     {}",
                fast[i], direct[i]
            ));
        }
        if fast.len() != direct.len() {
            return Err(format!("{} attempts vs {}", fast.len(), direct.len()));
        }
        Ok(fast.len())
    }

    fn shipped() -> Vec<(String, Value)> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
        let mut out: Vec<(String, Value)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .map(|p| {
                let text = std::fs::read_to_string(&p).unwrap();
                (
                    p.display().to_string(),
                    serde_json::from_str(&text).unwrap(),
                )
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    #[test]
    fn every_shipped_model_picks_the_same_peers_as_the_direct_scans() {
        let mut total = 0;
        for (path, mut doc) in shipped() {
            // Fewer requests, the same timing of faults and checks.
            if let Some(r) = doc["clients"]["rate_per_s"].as_f64() {
                doc["clients"]["rate_per_s"] = json!(r.min(400.0));
            }
            let model = match Model::from_document(&doc, Path::new(&path)) {
                Ok(m) => m,
                Err(e) => panic!("{path}: {e}"),
            };
            total += same_choices(&model, 7).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
        assert!(total > 50_000, "only {total} attempts compared");
    }

    /// The policies of the shipped models, to draw from.
    fn policies() -> Vec<Value> {
        let mut out = Vec::new();
        for (_, doc) in shipped() {
            if let Some(p) = doc.get("policy") {
                out.push(json!([p]));
            }
            if let Some(p) = doc.get("policies") {
                out.push(p.clone());
            }
        }
        out.sort_by_key(|v| v.to_string());
        out.dedup();
        out
    }

    fn fault(kind: u8, node: &str, at: u32, p: f64) -> Value {
        match kind {
            0 => json!({"kind": "crash", "node": node, "at": format!("{at}s"), "for": "3s"}),
            1 => json!({"kind": "flaky", "node": node, "p": p, "status": 503}),
            2 => json!({"kind": "hang", "node": node, "at": format!("{at}s"), "for": "2s"}),
            3 => {
                json!({"kind": "flaky", "node": node, "p": p, "status": 502, "at": format!("{at}s")})
            }
            _ => json!({"kind": "stop", "node": node, "at": format!("{at}s"), "for": "2s"}),
        }
    }

    #[derive(Debug, Clone)]
    struct Shape {
        nodes: Vec<(u32, bool, u32, bool)>,
        balancer: u8,
        haproxy: bool,
        workers: u32,
        zone: bool,
        policy: usize,
        faults: Vec<(u8, usize, u32, f64)>,
        rate: f64,
        tries: u32,
        seed: u64,
        /// Gateway replicas (1 mostly).
        replicas: u32,
    }

    fn shape() -> impl Strategy<Value = Shape> {
        (
            prop::collection::vec(
                (
                    1u32..4,
                    prop::bool::weighted(0.15),
                    0u32..4,
                    prop::bool::weighted(0.05),
                ),
                1..14,
            ),
            0u8..3,
            prop::bool::weighted(0.15),
            1u32..4,
            any::<bool>(),
            0usize..1000,
            prop::collection::vec((0u8..5, 0usize..14, 0u32..6, 0.0f64..1.0), 0..4),
            prop_oneof![Just(30.0), Just(200.0), Just(800.0)],
            0u32..3,
            (
                any::<u64>(),
                prop_oneof![6 => Just(1u32), 1 => Just(2), 1 => Just(3)],
            ),
        )
            .prop_map(
                |(
                    nodes,
                    balancer,
                    haproxy,
                    workers,
                    zone,
                    policy,
                    faults,
                    rate,
                    tries,
                    (seed, replicas),
                )| {
                    Shape {
                        nodes,
                        balancer,
                        haproxy,
                        workers,
                        zone,
                        policy,
                        faults,
                        rate,
                        tries,
                        seed,
                        replicas,
                    }
                },
            )
    }

    fn model_of(s: &Shape, policies: &[Value]) -> Result<Model, String> {
        let names: Vec<String> = (0..s.nodes.len()).map(|i| format!("n{i}")).collect();
        let nodes: Vec<Value> = s
            .nodes
            .iter()
            .zip(&names)
            .map(|(&(weight, backup, max_conns, down), name)| {
                json!({"name": name, "weight": weight, "backup": backup,
                       "max_conns": max_conns * 3, "down": down, "workers": 8,
                       "service_time": {"dist": "exponential", "mean": "4ms"}})
            })
            .collect();
        let faults: Vec<Value> = s
            .faults
            .iter()
            .map(|&(k, n, at, p)| fault(k, &names[n % names.len()], at, p))
            .collect();
        let balancer = ["round_robin", "least_conn", "random_two"][s.balancer as usize];
        let mut gateway = json!({
            "balancer": balancer,
            "proxy_next_upstream": ["error", "timeout", "http_502", "http_503"],
            "proxy_next_upstream_tries": s.tries,
            "workers": if s.haproxy { 1 } else { s.workers },
            "zone": s.zone,
            "replicas": s.replicas,
        });
        if s.haproxy {
            gateway = json!({"flavor": "haproxy", "balancer": balancer, "replicas": s.replicas,
                             "haproxy": {"retries": s.tries + 1, "redispatch": true}});
        }
        let doc = json!({
            "name": "differential", "duration": "6s",
            "clients": {"kind": "open", "rate_per_s": s.rate, "timeout": "2s"},
            "gateway": gateway,
            "nodes": nodes,
            "faults": faults,
            "policies": policies[s.policy % policies.len()],
        });
        Model::from_document(&doc, Path::new("differential.json")).map_err(|e| e.to_string())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1200))]
        /// Random upstreams (weights, backups, `max_conns`, `down`, faults,
        /// workers without `zone`, every policy of the shipped models, all
        /// balancers, HAProxy, fleets of replicas): the structures choose as
        /// the direct scans.
        #[test]
        fn random_models_pick_the_same_peers_as_the_direct_scans(s in shape()) {
            let policies = policies();
            let model = model_of(&s, &policies);
            prop_assume!(model.is_ok(), "{}", model.err().unwrap());
            if let Err(e) = same_choices(&model.unwrap(), s.seed) {
                return Err(TestCaseError::fail(e));
            }
        }
    }
}
