//! Whether a peer may take an attempt now, for the request paths that pick
//! among every peer without nginx's set of tried peers (Kong's wheel,
//! Linkerd's P2C): not `down`, and routable for every policy of the
//! request's replica (Envoy's panic routing aside).

use super::super::{NodeId, World};
use crate::ids::Scope;
use crate::policy::Now;

impl World<'_> {
    /// Now on `scope`'s clock, with the cached verdicts whose expiry has
    /// come brought up to date.
    pub(super) fn usable_now(&mut self, scope: Scope) -> Now {
        let now = self.fleet.now_in(scope, self.q.now());
        if !self.gw.direct {
            self.refresh_due(now.t);
        }
        now
    }

    /// May `node` take an attempt of a request of `scope` now?
    pub(super) fn usable(&self, scope: Scope, node: NodeId, now: Now) -> bool {
        if self.gw.direct {
            let (policies, local) = self.replica_policies(scope);
            !self.gw.down[node.index()] && policies.iter().all(|p| p.is_routable(local, node, now))
        } else {
            self.gw.routing.is_member(self.gw.k(scope, node))
        }
    }
}
