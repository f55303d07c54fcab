//! The products' steps of the pipeline, kept out of line: nginx's path
//! (`mod.rs`) tests [`PathKind`] once and comes here only for another
//! product, and once per request end only where a pool or a product
//! counts something.

use super::{PathKind, Reply};
use crate::world::{Fail, NodeId, World};

impl World<'_> {
    /// An attempt of HAProxy, Kong, Linkerd, Caddy or Traefik failed
    /// without a response (`on_attempt_failed`).
    #[inline(never)]
    pub(super) fn product_failed(&mut self, slot: u32, node: NodeId, why: Fail) {
        match self.gw.path {
            PathKind::Haproxy => self.haproxy_failed(slot, node, why),
            PathKind::Kong => self.kong_failed(slot, node, why),
            PathKind::Linkerd => self.linkerd_failed(slot, node, why),
            PathKind::Flavored => self.flavor_failed(slot, node, why),
            PathKind::Nginx => unreachable!("nginx's path fails in mod.rs"),
        }
    }

    /// A response of a node reached HAProxy, Kong, Linkerd, Caddy or
    /// Traefik (`on_response`).
    #[inline(never)]
    pub(super) fn product_response(&mut self, slot: u32, node: NodeId, reply: Reply) {
        match self.gw.path {
            PathKind::Haproxy => self.haproxy_response(slot, node, reply),
            PathKind::Kong => self.kong_response(slot, node, reply),
            PathKind::Linkerd => self.linkerd_response(slot, node, reply),
            PathKind::Flavored => self.flavor_response(slot, node, reply),
            PathKind::Nginx => unreachable!("nginx's path answers in mod.rs"),
        }
    }

    /// The request of `slot` ends with `status` (`None`: the client gave
    /// up; `relayed`: a node's response is relayed): the pool keeps or
    /// closes its connection, Caddy and Traefik count it.
    #[inline(never)]
    pub(super) fn request_ends(&mut self, slot: u32, status: Option<u16>, relayed: bool) {
        if self.pool.is_some() {
            self.pool_request_done(slot, status, relayed);
        }
        if self.gw.path == PathKind::Flavored {
            self.flavor_finalize(slot, status.unwrap_or(499));
        }
        if let Some(p) = self.pods.as_deref_mut() {
            p.request_ended(self.q.now(), status);
        }
    }
}
