//! The request paths of the gateways whose decisions live in their own
//! files, [`super::caddy`] and [`super::traefik`]: the hooks the shared
//! pipeline of [`super`] calls when `gateway.flavor` is `caddy` or
//! `traefik`, and what both need (which nodes may be picked now).
//!
//! Neither proxy keeps nginx's `tried` set, its backup servers or its
//! single-server shortcut: a retry picks again among every available
//! server, the one that just failed included.

use super::super::{Fail, NodeId, World};
use super::Reply;
use super::balancer::at_max_conns;
use super::caddy::CaddyPath;
use super::traefik::TraefikPath;
use crate::engine::SimDuration;
use crate::policy::Now;
use crate::spec::{GatewayFlavor, Model};

/// The flavour's own state.
pub(crate) enum Flavored {
    Caddy(Box<CaddyPath>),
    Traefik(Box<TraefikPath>),
}

impl Flavored {
    /// The state of `model`'s gateway if it is Caddy or Traefik.
    pub(crate) fn of(model: &Model) -> Option<Flavored> {
        match model.gateway.flavor {
            GatewayFlavor::Caddy => Some(Flavored::Caddy(Box::new(CaddyPath::of(model)))),
            GatewayFlavor::Traefik => Some(Flavored::Traefik(Box::new(TraefikPath::of(model)))),
            _ => None,
        }
    }

    /// The connect timeout and the response-header timeout of an attempt.
    pub(crate) fn timeouts(&self) -> (SimDuration, Option<SimDuration>) {
        match self {
            Flavored::Caddy(c) => (c.spec.dial_timeout, c.spec.response_header_timeout),
            Flavored::Traefik(t) => (t.dial_timeout, t.response_header_timeout),
        }
    }
}

impl World<'_> {
    fn flavored(&mut self) -> &mut Flavored {
        self.gw
            .flavored
            .as_mut()
            .expect("a flavoured gateway has its state")
    }

    /// The Caddy path's state (`flavor: caddy`).
    pub(super) fn caddy(&mut self) -> &mut CaddyPath {
        match self.flavored() {
            Flavored::Caddy(c) => c,
            Flavored::Traefik(_) => unreachable!("the Caddy path without its state"),
        }
    }

    /// The Traefik path's state (`flavor: traefik`).
    pub(super) fn traefik(&mut self) -> &mut TraefikPath {
        match self.flavored() {
            Flavored::Traefik(t) => t,
            Flavored::Caddy(_) => unreachable!("the Traefik path without its state"),
        }
    }

    /// A request arrived (its slot is set up): the flavour's own state.
    #[inline(never)]
    pub(super) fn flavor_begin(&mut self, slot: u32) {
        match self.flavored() {
            Flavored::Caddy(c) => c.begin(slot),
            Flavored::Traefik(t) => t.begin(slot),
        }
    }

    /// `connect` for the flavour: pick a server (or not) and start the attempt.
    #[inline(never)]
    pub(super) fn flavor_connect(&mut self, slot: u32) {
        if matches!(self.flavored(), Flavored::Caddy(_)) {
            self.caddy_connect(slot)
        } else {
            self.traefik_connect(slot)
        }
    }

    /// An attempt ended without a response.
    pub(super) fn flavor_failed(&mut self, slot: u32, node: NodeId, why: Fail) {
        if matches!(self.flavored(), Flavored::Caddy(_)) {
            self.caddy_failed(slot, node, why)
        } else {
            self.traefik_failed(slot, node, why)
        }
    }

    /// A response header (or a reset) arrived.
    pub(super) fn flavor_response(&mut self, slot: u32, node: NodeId, reply: Reply) {
        if matches!(self.flavored(), Flavored::Caddy(_)) {
            self.caddy_response(slot, node, reply)
        } else {
            self.traefik_response(slot, node, reply)
        }
    }

    /// The wait before a retry ended.
    pub(crate) fn flavor_retry(&mut self, slot: u32) {
        self.flavor_connect(slot);
    }

    /// The request ends with `status` (also a client's give-up, 499):
    /// Traefik's breaker records what it served.
    pub(super) fn flavor_finalize(&mut self, slot: u32, status: u16) {
        if matches!(self.flavored(), Flavored::Traefik(_)) {
            self.traefik_finalize(slot, status);
        }
    }

    /// May `node` take a request of `scope` now: not `down`, under its
    /// connection limit, and routable for every policy (the routing cache,
    /// or the policies themselves for small upstreams).
    pub(super) fn flavor_eligible(&self, scope: u16, node: NodeId, now: Now) -> bool {
        if !self.gw.direct {
            return self.gw.routing.is_member(self.gw.k(scope, node));
        }
        let (policies, local) = self.replica_policies(scope);
        !self.gw.down[node.index()]
            && !at_max_conns(
                self.gw.max_conns[node.index()],
                self.gw.conns[self.gw.k(scope, node)],
            )
            && policies.iter().all(|p| p.is_routable(local, node, now))
    }

    /// Before a pick: expiries due in the routing cache.
    pub(super) fn flavor_refresh(&mut self, now: Now) {
        if !self.gw.direct {
            self.refresh_due(now.t);
        }
    }
}
