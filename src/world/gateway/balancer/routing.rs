//! Which peers each gateway worker may pick, kept up to date as policies
//! change their minds instead of asked per peer per request.
//!
//! nginx asks, for every peer on every pick, whether it is down, at
//! `max_conns` or failed (`ngx_http_upstream_get_peer`); Envoy counts the
//! healthy hosts on every membership change. A simulator of a 1,000-node
//! upstream cannot afford the first: here each policy's verdict on each
//! (worker, node) is cached and asked again only when it can have changed —
//! after a callback about that node, a timer of that node, a notice naming it,
//! or the time the policy says an ejection expires on its own
//! ([`HealthPolicy::readmits_at`]: nginx's `fail_timeout`, an open circuit's
//! wait). From the verdicts follow the per-worker healthy count (Envoy's
//! panic threshold, HAProxy's `srv_act`) and the balancers' member sets.

use crate::engine::SimTime;
use crate::ids::Scope;
use crate::policy::{Now, Readmit};
use crate::world::{NodeId, World};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The cached verdicts and what follows from them.
pub(crate) struct Routing {
    n: usize,
    /// (scope, node) pairs of one replica: `scopes per replica × n`. A
    /// policy instance belongs to one replica and sees only its scopes.
    nkl: usize,
    /// Per policy instance, per (scope, node) of its replica (at
    /// `policy × nkl + k % nkl`): the policy ejects the node.
    out: Vec<bool>,
    /// Per policy instance, per (scope, node): the expiry waiting in a heap, if any.
    wake: Vec<Option<Readmit>>,
    /// Per (scope, node): how many policies eject it.
    ejecting: Vec<u16>,
    /// Per scope: primary peers that are not `down` and not ejected.
    healthy: Vec<u32>,
    /// Primary peers that are not `down`.
    hosts: u32,
    /// Per scope: Envoy's panic routing is on.
    panic: Vec<bool>,
    /// Per (scope, node): may be picked (not down, not ejected or in panic,
    /// under `max_conns`), the request's own tried set aside.
    member: Vec<bool>,
    /// Expiries at a wall-clock second (with the instant it starts on the
    /// policy's replica's clock) and at an instant: (when, k, policy).
    wall: BinaryHeap<Reverse<(SimTime, i64, u32, u16)>>,
    at: BinaryHeap<Reverse<(SimTime, u32, u16)>>,
}

impl Routing {
    /// Before `on_start`: every policy routes every node.
    pub(crate) fn new(
        n: usize,
        scopes: usize,
        scopes_per_replica: usize,
        policies: usize,
        hosts: u32,
    ) -> Self {
        let nkl = n * scopes_per_replica;
        Routing {
            n,
            nkl,
            out: vec![false; nkl * policies],
            wake: vec![None; nkl * policies],
            ejecting: vec![0; n * scopes],
            healthy: vec![hosts; scopes],
            hosts,
            panic: vec![false; scopes],
            member: vec![false; n * scopes],
            wall: BinaryHeap::new(),
            at: BinaryHeap::new(),
        }
    }

    /// Where policy instance `i`'s verdict on global (scope, node) `k` sits
    /// (`k` is within the instance's replica: one replica's `k < nkl`).
    #[inline]
    fn ik(&self, i: usize, k: usize) -> usize {
        i * self.nkl + if k < self.nkl { k } else { k % self.nkl }
    }

    pub(crate) fn is_member(&self, k: usize) -> bool {
        self.member[k]
    }

    pub(crate) fn is_routable(&self, k: usize) -> bool {
        self.ejecting[k] == 0
    }

    pub(crate) fn in_panic(&self, scope: Scope) -> bool {
        self.panic[scope as usize]
    }

    /// Primary peers of `scope` that are up: not `down`, not ejected.
    pub(crate) fn healthy(&self, scope: Scope) -> u32 {
        self.healthy[scope as usize]
    }

    fn scopes(&self) -> usize {
        self.panic.len()
    }
}

impl World<'_> {
    /// Asks every policy about every node (at the start).
    pub(crate) fn refresh_all(&mut self) {
        if self.gw.direct {
            return;
        }
        let scopes = self.gw.routing.scopes();
        for s in 0..scopes {
            let now = self.fleet.now_in(s as Scope, self.q.now());
            for n in 0..self.gw.n {
                let node = NodeId(n as u32);
                for i in self.fleet.policies_of(s as Scope) {
                    self.refresh(i, s as Scope, node, now);
                }
                self.sync_member(s as Scope, node);
            }
        }
    }

    /// Asks policy `i` again about `node`, in every scope of its replica
    /// (`now` on that replica's clock). Kept out of line: the callers
    /// (`with_policy`) are on every attempt's path.
    #[inline(never)]
    pub(crate) fn refresh_node(&mut self, i: usize, node: NodeId, now: Now) {
        if node.index() >= self.gw.n {
            return;
        }
        let layout = self.fleet.layout();
        let scopes = layout.scopes_of(layout.replica_of_policy(i));
        let first = scopes.start;
        for s in scopes {
            let (s, ls) = (s as Scope, (s - first) as Scope);
            let k = self.gw.k(s, node);
            let out = !self.bank.get(i).is_routable(ls, node, now);
            // The common case: routable before and after.
            if out || self.gw.routing.out[self.gw.routing.ik(i, k)] {
                self.reconsider(i, s, node, out, now);
            }
        }
    }

    /// Asks policy `i` again about (`scope`, `node`).
    fn refresh(&mut self, i: usize, scope: Scope, node: NodeId, now: Now) {
        let out = !self
            .bank
            .get(i)
            .is_routable(self.fleet.local(scope), node, now);
        self.reconsider(i, scope, node, out, now);
    }

    /// Policy `i` now says `out` of (`scope`, `node`): updates the expiry,
    /// the counts, the panic state and the balancers' members.
    fn reconsider(&mut self, i: usize, scope: Scope, node: NodeId, out: bool, now: Now) {
        let k = self.gw.k(scope, node);
        let ik = self.gw.routing.ik(i, k);
        let readmit = if out {
            self.bank
                .get(i)
                .readmits_at(self.fleet.local(scope), node, now)
        } else {
            None
        };
        let starts = match readmit {
            Some(Readmit::WallSecond(s)) => self
                .fleet
                .clock(self.fleet.replica_of_policy(i))
                .second_starts(s),
            _ => SimTime::ZERO,
        };
        let rt = &mut self.gw.routing;
        if rt.wake[ik] != readmit {
            rt.wake[ik] = readmit;
            match readmit {
                Some(Readmit::WallSecond(s)) => {
                    rt.wall.push(Reverse((starts, s, k as u32, i as u16)))
                }
                Some(Readmit::At(t)) => rt.at.push(Reverse((t, k as u32, i as u16))),
                None => {}
            }
        }
        if rt.out[ik] == out {
            return;
        }
        rt.out[ik] = out;
        let before = rt.ejecting[k] == 0;
        if out {
            rt.ejecting[k] += 1;
        } else {
            rt.ejecting[k] -= 1;
        }
        let after = rt.ejecting[k] == 0;
        if before == after {
            return;
        }
        let counts = !self.gw.down[node.index()] && !self.model.nodes[node.index()].backup;
        if counts {
            let h = &mut rt.healthy[scope as usize];
            if after {
                *h += 1;
            } else {
                *h -= 1;
            }
            let panic = self.gw.panic_threshold > 0.0
                && super::in_panic(*h as usize, rt.hosts as usize, self.gw.panic_threshold);
            if panic != rt.panic[scope as usize] {
                rt.panic[scope as usize] = panic;
                for n in 0..self.gw.n {
                    self.sync_member(scope, NodeId(n as u32));
                }
                return;
            }
        }
        self.sync_member(scope, node);
    }

    /// Re-asks the policies whose ejections expired by `now`.
    #[inline]
    pub(crate) fn refresh_due(&mut self, now: SimTime) {
        let rt = &self.gw.routing;
        if rt.wall.is_empty() && rt.at.is_empty() {
            return;
        }
        loop {
            let rt = &mut self.gw.routing;
            let (k, i) = match (rt.wall.peek(), rt.at.peek()) {
                (Some(&Reverse((t, s, k, i))), _) if t <= now => {
                    rt.wall.pop();
                    let ik = rt.ik(i as usize, k as usize);
                    if rt.wake[ik] != Some(Readmit::WallSecond(s)) {
                        continue;
                    }
                    (k, i)
                }
                (_, Some(&Reverse((t, k, i)))) if t <= now => {
                    rt.at.pop();
                    let ik = rt.ik(i as usize, k as usize);
                    if rt.wake[ik] != Some(Readmit::At(t)) {
                        continue;
                    }
                    (k, i)
                }
                _ => return,
            };
            let rt = &mut self.gw.routing;
            let ik = rt.ik(i as usize, k as usize);
            rt.wake[ik] = None;
            let (scope, node) = (
                (k as usize / rt.n) as Scope,
                NodeId((k as usize % rt.n) as u32),
            );
            let now = self
                .fleet
                .now(self.fleet.replica_of_policy(i as usize), now);
            self.refresh(i as usize, scope, node, now);
        }
    }

    /// Puts (`scope`, `node`) in or out of the balancer's members.
    pub(crate) fn sync_member(&mut self, scope: Scope, node: NodeId) {
        let gw = &mut self.gw;
        let k = gw.k(scope, node);
        let rt = &gw.routing;
        let max = gw.max_conns[node.index()];
        let want = !gw.down[node.index()]
            && (rt.panic[scope as usize] || rt.ejecting[k] == 0)
            && !(max > 0 && gw.conns[k] >= max);
        if want != rt.member[k] {
            gw.routing.member[k] = want;
            gw.pickers
                .set_member(scope, gw.set_of[node.index()], want, gw.conns[k]);
        }
    }

    /// In debug builds: every cached verdict equals the policy's answer now.
    #[cfg(debug_assertions)]
    pub(crate) fn check_routing(&self) {
        for s in 0..self.gw.routing.scopes() {
            let now = self.fleet.now_in(s as Scope, self.q.now());
            for n in 0..self.gw.n {
                let node = NodeId(n as u32);
                let k = self.gw.k(s as Scope, node);
                for i in self.fleet.policies_of(s as Scope) {
                    let p = self.bank.get(i);
                    assert_eq!(
                        self.gw.routing.out[self.gw.routing.ik(i, k)],
                        !p.is_routable(self.fleet.local(s as Scope), node, now),
                        "policy {i}'s cached verdict on node {n} in scope {s} is stale at {}",
                        now.t
                    );
                }
            }
        }
    }
}
