//! Which peer an attempt goes to, and giving it back: nginx's balancers
//! (`ngx_http_upstream_round_robin.c`: smooth weighted round-robin and the
//! backup set; `ngx_http_upstream_least_conn_module.c`;
//! `ngx_http_upstream_random_module.c` with `two`), HAProxy's `roundrobin`
//! (`lb_fwrr.c`), the eligibility tests every balancer applies (`down`,
//! `max_conns`, the health policies) and Envoy's panic threshold. Freeing a
//! peer does the passive accounting (`free_round_robin_peer`) and reports the
//! attempt to the policies.

/// The balancer a pick runs, fixed when the gateway is built: a tag to
/// test per pick, where `Balancer` (whose `hash` variant holds its key)
/// would be compared through its payload's niche.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PickKind {
    RoundRobin,
    /// Round robin as HAProxy's `fwrr` takes it (the gateway has `hap`).
    HaproxyRoundRobin,
    LeastConn,
    RandomTwo,
    /// `ip_hash`, `hash` or HAProxy's `source`: always by direct scans.
    Hash,
}

impl PickKind {
    pub(crate) fn of(b: &crate::spec::Balancer, haproxy: bool) -> PickKind {
        use crate::spec::Balancer;
        match b {
            Balancer::RoundRobin if haproxy => PickKind::HaproxyRoundRobin,
            Balancer::RoundRobin => PickKind::RoundRobin,
            Balancer::LeastConn => PickKind::LeastConn,
            Balancer::RandomTwo => PickKind::RandomTwo,
            Balancer::IpHash | Balancer::Hash(_) | Balancer::Source(_) => PickKind::Hash,
        }
    }
}

pub(super) mod cookie;
pub(super) mod direct;
pub(super) mod hash;
pub(super) mod keys;
pub(super) mod pick;
pub(super) mod routing;
pub(super) mod source;
pub(crate) mod warm;

use crate::policy::{AttemptReport, AttemptResult, Charge, Now};
use crate::spec::Model;
use crate::world::{NodeId, World};
use pick::Pickers;

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

/// Envoy's panic decision for one priority (`LoadBalancerBase`):
/// `recalculatePerPriorityState` takes the priority's health as
/// `min(100, 140 × healthy / hosts)` in integers (the default
/// overprovisioning factor, 140 %), and `recalculatePerPriorityPanic` never
/// sets panic while that is 100, i.e. while at least 5 of 7 hosts are healthy,
/// whatever the threshold; below it, `isHostSetInPanic`:
/// `100 × healthy / hosts < threshold` (strict), the threshold a whole
/// percent (`PROTOBUF_PERCENT_TO_ROUNDED_INTEGER_OR_DEFAULT`).
pub(super) fn in_panic(healthy: usize, hosts: usize, threshold: f64) -> bool {
    if hosts > 0 && 140 * healthy / hosts >= 100 {
        return false;
    }
    let pct = if hosts == 0 {
        0.0
    } else {
        100.0 * healthy as f64 / hosts as f64
    };
    pct < threshold.round()
}

/// `max_conns` reached (0 means unlimited).
pub(super) fn at_max_conns(max_conns: u32, conns: u32) -> bool {
    max_conns > 0 && conns >= max_conns
}

impl World<'_> {
    /// `get_round_robin_peer` (or the configured balancer) with the backup fallback.
    pub(super) fn select_peer(&mut self, slot: u32) -> Option<NodeId> {
        if self.gw.path == super::PathKind::Kong {
            return self.kong_pick(slot);
        }
        if self.gw.direct {
            return self.direct_select_peer(slot);
        }
        let scope = self.gw.reqs[slot as usize].scope;
        let now = self.fleet.now_in(scope, self.q.now());
        self.refresh_due(now.t);
        #[cfg(debug_assertions)]
        if self.gw.n * self.model.scopes() <= 256 {
            self.check_routing();
        }
        self.gw.reqs[slot as usize].panic = self.gw.routing.in_panic(scope);
        self.pick_with_backup(slot, now)
    }

    /// The configured balancer in the request's set (the single-server path,
    /// the direct scans or the structures), then, when nothing is eligible,
    /// the backup set once (nginx's `backup` fallback).
    #[inline(always)]
    pub(super) fn pick_with_backup(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        loop {
            let r = &self.gw.reqs[slot as usize];
            let picked = if self.gw.single && !r.in_backup {
                self.pick_single(slot, now)
            } else if self.gw.direct {
                self.direct_pick(slot, now)
            } else {
                match self.gw.pick_kind {
                    PickKind::HaproxyRoundRobin => self.pick_haproxy_rr(slot),
                    PickKind::RoundRobin => self.pick_round_robin(slot),
                    PickKind::LeastConn => self.pick_least_conn(slot),
                    PickKind::RandomTwo => self.pick_random_two(slot),
                    PickKind::Hash => unreachable!("the hash balancers pick by direct scans"),
                }
            };
            match picked {
                Some(node) => {
                    self.debug_check_pick(slot, node, now);
                    self.take_peer(slot, node);
                    return Some(node);
                }
                None => {
                    let r = &self.gw.reqs[slot as usize];
                    if !r.in_backup && !self.gw.backup.is_empty() && !self.hap_primary_full(slot) {
                        let r = &mut self.gw.reqs[slot as usize];
                        r.in_backup = true;
                        r.clear_tried();
                        continue;
                    }
                    return None;
                }
            }
        }
    }

    /// Invariant checked by the property tests (debug builds): a node is
    /// selected only while every policy lets it through, or in Envoy's panic
    /// routing, or on nginx's single-server path that ignores max_fails.
    /// (HAProxy's retry on the same server does not select: it is not checked.)
    pub(super) fn debug_check_pick(&self, slot: u32, node: NodeId, now: Now) {
        let r = &self.gw.reqs[slot as usize];
        let (scope, single) = (r.scope, self.gw.single && !r.in_backup);
        let local = self.fleet.local(scope);
        debug_assert!(
            r.panic
                || self
                    .fleet
                    .policies_of(scope)
                    .all(|i| (single && self.bank.bypass_single[i])
                        || self.bank.get(i).is_routable(local, node, now)),
            "selected node {} in scope {scope} at {} although a policy ejects it",
            node.0,
            now.t
        );
    }

    /// The balancer chose `node`: count the connection, tell the policies.
    pub(super) fn take_peer(&mut self, slot: u32, node: NodeId) {
        let r = &self.gw.reqs[slot as usize];
        let (scope, single) = (r.scope, self.gw.single && !r.in_backup);
        let k = self.gw.k(scope, node);
        self.gw.conns[k] += 1;
        if !self.gw.direct {
            self.conns_changed(scope, node);
        }
        let (first, local) = (self.fleet.policies_of(scope).start, self.fleet.local(scope));
        for k in 0..self.bank.hear_selections.len() {
            let i = first + self.bank.hear_selections[k];
            if !((single && self.bank.bypass_single[i]) || self.selected_in_place(i, local, node)) {
                self.with_policy(i, Some(node), |p, cx| p.on_selected(cx, local, node));
            }
        }
    }

    /// The `peers->single` path: no `max_fails` at all.
    pub(super) fn pick_single(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        let node = self.gw.primary[0];
        let r = &self.gw.reqs[slot as usize];
        let k = self.gw.k(r.scope, node);
        let m = self.gw.max_conns[node.index()];
        let local = self.fleet.local(r.scope);
        let ok = !self.gw.down[node.index()]
            && !at_max_conns(m, self.gw.conns[k])
            && (r.panic
                || self.fleet.policies_of(r.scope).all(|i| {
                    self.bank.bypass_single[i] || self.bank.get(i).is_routable(local, node, now)
                }));
        ok.then_some(node)
    }

    /// The request's current set (primary or backup) and its index among
    /// the per-(scope, set) structures.
    fn current_set(&self, slot: u32) -> (&[NodeId], usize) {
        let r = &self.gw.reqs[slot as usize];
        let set = if r.in_backup {
            &self.gw.backup
        } else {
            &self.gw.primary
        };
        (set, r.scope as usize * 2 + r.in_backup as usize)
    }

    /// Is `node` eligible for this request: a member (not `down`, not
    /// ejected unless in panic, under `max_conns`) and not tried yet
    /// (random's draws).
    fn eligible(&self, slot: u32, node: NodeId) -> bool {
        let r = &self.gw.reqs[slot as usize];
        self.gw.routing.is_member(self.gw.k(r.scope, node)) && !r.is_tried(node)
    }

    /// The tried members of the request's current set, as positions: they
    /// sit out this pick.
    /// (In a buffer of the gateway's, to give back with `return_sitting_out`.)
    fn tried_members(&mut self, slot: u32) -> Vec<u32> {
        let mut out = std::mem::take(&mut self.gw.sitting_out);
        out.clear();
        let r = &self.gw.reqs[slot as usize];
        if r.tried.is_empty() {
            return out;
        }
        out.extend(
            r.tried_nodes()
                .filter(|n| {
                    self.gw.set_of[n.index()].backup == r.in_backup
                        && self.gw.routing.is_member(self.gw.k(r.scope, *n))
                })
                .map(|n| self.gw.set_of[n.index()].pos),
        );
        out
    }

    /// `ngx_http_upstream_get_peer`: smooth weighted round-robin, strict `>`,
    /// over the members not tried yet ([`Swrr`](super::pick::Swrr)).
    fn pick_round_robin(&mut self, slot: u32) -> Option<NodeId> {
        let sitting_out = self.tried_members(slot);
        let backup = self.gw.reqs[slot as usize].in_backup;
        let i = self.current_set(slot).1;
        let Pickers::Smooth(v) = &mut self.gw.pickers else {
            unreachable!("round-robin without its structure")
        };
        let s = &mut v[i];
        sitting_out.iter().for_each(|&p| s.leave(p));
        let pos = s.pick(0);
        sitting_out.iter().for_each(|&p| s.join(p, 0));
        self.gw.sitting_out = sitting_out;
        let set = if backup {
            &self.gw.backup
        } else {
            &self.gw.primary
        };
        let node = set[pos? as usize];
        self.gw.reqs[slot as usize].mark_tried(node);
        Some(node)
    }

    /// HAProxy `balance roundrobin` (`lb_fwrr.c`), as a weighted rotation
    /// ([`Rotation`](super::pick::Rotation)): the eligible server with the
    /// lowest next position wins (config order breaks ties) and moves on by
    /// total weight / its weight; a server that was out of the rotation comes
    /// back at the current position. With equal weights it is a plain
    /// rotation, so a retry that is redispatched uses up the next server's
    /// turn (reference D13).
    fn pick_haproxy_rr(&mut self, slot: u32) -> Option<NodeId> {
        let sitting_out = self.tried_members(slot);
        let r = &self.gw.reqs[slot as usize];
        let (backup, scope) = (r.in_backup, r.scope as usize);
        let gw = &mut self.gw;
        let Pickers::Rotation(v) = &mut gw.pickers else {
            unreachable!("HAProxy round-robin without its structure")
        };
        let rot = &mut v[scope * 2 + backup as usize];
        sitting_out.iter().for_each(|&p| rot.leave(p));
        let pos = rot.pick(&mut gw.rr_cur[scope]);
        sitting_out.iter().for_each(|&p| rot.join(p));
        gw.sitting_out = sitting_out;
        let set = if backup { &gw.backup } else { &gw.primary };
        let node = set[pos? as usize];
        gw.reqs[slot as usize].mark_tried(node);
        Some(node)
    }

    /// `ngx_http_upstream_get_least_conn_peer`: fewest `conns/weight`; ties
    /// broken by smooth WRR over the tied peers ([`LeastConn`](super::pick::LeastConn)).
    fn pick_least_conn(&mut self, slot: u32) -> Option<NodeId> {
        let sitting_out = self.tried_members(slot);
        let backup = self.gw.reqs[slot as usize].in_backup;
        let i = self.current_set(slot).1;
        let Pickers::Least(v) = &mut self.gw.pickers else {
            unreachable!("least_conn without its structure")
        };
        let lc = &mut v[i];
        sitting_out.iter().for_each(|&p| lc.leave(p));
        let pos = lc.pick();
        let (scope, conns) = (self.gw.reqs[slot as usize].scope, &self.gw.conns);
        let set = if backup {
            &self.gw.backup
        } else {
            &self.gw.primary
        };
        for &p in &sitting_out {
            lc.join(
                p,
                conns[scope as usize * self.gw.n + set[p as usize].index()],
            );
        }
        self.gw.sitting_out = sitting_out;
        let node = set[pos? as usize];
        self.gw.reqs[slot as usize].mark_tried(node);
        Some(node)
    }

    /// `node`'s connections in `scope` changed: `max_conns` may now keep it
    /// out or let it in, and `least_conn` ranks it anew.
    #[inline]
    pub(super) fn conns_changed(&mut self, scope: u16, node: NodeId) {
        if self.gw.max_conns[node.index()] > 0 {
            self.sync_member(scope, node);
        }
        if !matches!(self.gw.pickers, Pickers::Least(_)) {
            return;
        }
        let k = self.gw.k(scope, node);
        if self.gw.routing.is_member(k) {
            let (at, conns) = (self.gw.set_of[node.index()], self.gw.conns[k]);
            self.gw.pickers.conns_changed(scope, at, conns);
        }
    }

    /// `ngx_http_upstream_get_random2_peer`: two weighted random draws, the
    /// one with fewer `conns/weight` wins; after 20 unsuccessful draws in a
    /// request, plain round-robin. Backup sets use round-robin.
    fn pick_random_two(&mut self, slot: u32) -> Option<NodeId> {
        if self.gw.reqs[slot as usize].in_backup || self.gw.total_weight == 0 {
            return self.pick_round_robin(slot);
        }
        let scope = self.gw.reqs[slot as usize].scope;
        let mut prev: Option<NodeId> = None;
        loop {
            if self.gw.reqs[slot as usize].random_tries > 20 {
                return self.pick_round_robin(slot);
            }
            let node = self.gw.weighted_draw(&mut self.rng.gateway);
            if prev != Some(node) && self.eligible(slot, node) {
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

    /// A failed attempt cuts the peer's effective weight (nginx
    /// `peer->effective_weight -= peer->weight / peer->max_fails`).
    fn cut_weight(&mut self, scope: u16, node: NodeId, cut: i64) {
        if self.gw.direct {
            let k = self.gw.k(scope, node);
            self.gw.ew[k] = (self.gw.ew[k] - cut).max(0);
            return;
        }
        let at = self.gw.set_of[node.index()];
        self.gw.pickers.cut(scope, at, cut);
    }

    /// `free_round_robin_peer`: return the connection slot and do the
    /// passive accounting (nothing for a single server).
    #[inline(always)]
    pub(super) fn free_peer(
        &mut self,
        slot: u32,
        node: NodeId,
        charge: Charge,
        result: AttemptResult,
    ) {
        self.free_peer_reporting(slot, node, charge, result, result);
    }

    /// [`free_peer`](Self::free_peer), the policies hearing `reported`
    /// instead of `result` (what Kong's log phase makes of a last try).
    /// Out of line: only Kong's path comes here.
    #[inline(never)]
    pub(super) fn free_peer_as(
        &mut self,
        slot: u32,
        node: NodeId,
        charge: Charge,
        result: AttemptResult,
        reported: AttemptResult,
    ) {
        self.free_peer_reporting(slot, node, charge, result, reported);
    }

    /// The body of [`free_peer`](Self::free_peer) and
    /// [`free_peer_as`](Self::free_peer_as).
    #[inline(always)]
    fn free_peer_reporting(
        &mut self,
        slot: u32,
        node: NodeId,
        charge: Charge,
        result: AttemptResult,
        reported: AttemptResult,
    ) {
        let now = self.q.now();
        let r = &mut self.gw.reqs[slot as usize];
        r.node = None;
        let (scope, counted, id) = (r.scope, r.counted, r.id);
        let elapsed = now.saturating_since(r.att_start);
        let single = self.gw.single && !r.in_backup;
        let k = self.gw.k(scope, node);
        self.gw.conns[k] = self.gw.conns[k].saturating_sub(1);
        if !self.gw.direct {
            self.conns_changed(scope, node);
        }
        if self.pool.is_some() {
            // Keep or close the attempt's connection (pool/).
            self.pool_free(slot, node, charge, result);
        }
        if self.obs.any {
            self.observe_attempt(id, scope, node, result, charge);
        }
        let report = AttemptReport {
            scope: self.fleet.local(scope),
            node,
            result: reported,
            charge,
            elapsed,
        };
        let first = self.fleet.policies_of(scope).start;
        if single {
            self.gw.reqs[slot as usize].tries = 0;
            for k in 0..self.bank.hear_attempts.len() {
                let i = first + self.bank.hear_attempts[k];
                if !self.bank.bypass_single[i] {
                    self.with_policy(i, Some(node), |p, cx| p.on_attempt(cx, &report));
                }
            }
            return;
        }
        if charge == Charge::Failed {
            self.rec.failure(now, node, counted);
            if self.rec.tracks_replicas() {
                self.rec.replica_failure(scope, node, counted);
            }
        }
        if charge == Charge::Failed && self.gw.path != super::PathKind::Haproxy {
            let w = self.gw.weight[node.index()];
            let cut: i64 = self
                .bank
                .slice(self.fleet.policies_of(scope))
                .iter()
                .map(|p| p.weight_cut(node, w as u32) as i64)
                .sum();
            self.cut_weight(scope, node, cut);
        }
        for k in 0..self.bank.hear_attempts.len() {
            let i = first + self.bank.hear_attempts[k];
            self.with_policy(i, Some(node), |p, cx| p.on_attempt(cx, &report));
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
        // The overprovisioning factor: 3 of 4 healthy (75 %, health
        // min(100, 140 × 3 / 4) = 100) is no panic even at a threshold of 80,
        // which the strict comparison alone would call panic.
        assert!(!in_panic(3, 4, 80.0));
        assert!(!in_panic(5, 7, 100.0));
        assert!(
            in_panic(4, 6, 80.0),
            "140 × 4 / 6 = 93 < 100, and 66.7 % < 80"
        );
        // The threshold is a whole percent: 66.6 rounds to 67, above 2 of 3.
        assert!(in_panic(2, 3, 66.6));
        assert!(!in_panic(2, 3, 66.4));
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
