//! The nodes a request has tried in its current set (nginx's `tried`
//! bitmap in `ngx_http_upstream_rr_peer_data_t`), kept inside the request:
//! a request slot owns no heap memory, so a burst of held requests (Envoy's
//! cluster warming holds every request of its first seconds) neither
//! allocates per slot nor leaves the balancer a cold line to read per pick.
//!
//! Up to 64 nodes the set is a bitmap. Beyond, it is the list of the nodes
//! in the order they were tried: a request tries few nodes (its `tries`), and
//! the balancers ask for the list anyway, to set those nodes aside.

use crate::ids::NodeId;

/// Nodes kept in the request before the list spills to the heap.
const INLINE: usize = 4;

#[derive(Clone, Debug, Default)]
pub(super) struct Tried {
    /// Up to 64 nodes: node `i` is bit `i`.
    bits: u64,
    /// More than 64 nodes: the first tried, in order, then `spill`.
    first: [u32; INLINE],
    len: u32,
    spill: Vec<NodeId>,
}

impl Tried {
    /// Whether `n` was tried; `wide`: the upstream has more than 64 nodes.
    #[inline]
    pub(super) fn has(&self, n: NodeId, wide: bool) -> bool {
        if !wide {
            return self.bits & (1 << n.index()) != 0;
        }
        self.first[..(self.len as usize).min(INLINE)].contains(&n.0) || self.spill.contains(&n)
    }

    #[inline]
    pub(super) fn mark(&mut self, n: NodeId, wide: bool) {
        if !wide {
            self.bits |= 1 << n.index();
            return;
        }
        if self.has(n, true) {
            return;
        }
        match self.first.get_mut(self.len as usize) {
            Some(slot) => *slot = n.0,
            None => self.spill.push(n),
        }
        self.len += 1;
    }

    /// The tried nodes: in node order up to 64 nodes, else in the order tried.
    pub(super) fn nodes(&self, wide: bool) -> impl Iterator<Item = NodeId> + '_ {
        let bits = if wide { 0 } else { self.bits };
        let first = if wide {
            &self.first[..(self.len as usize).min(INLINE)]
        } else {
            &[][..]
        };
        (0..64)
            .filter(move |i| bits & (1 << i) != 0)
            .map(NodeId)
            .chain(first.iter().map(|&i| NodeId(i)))
            .chain(self.spill.iter().copied())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.bits == 0 && self.len == 0
    }

    pub(super) fn clear(&mut self) {
        self.bits = 0;
        self.len = 0;
        self.spill.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_set_keeps_the_order_tried_and_spills_past_the_inline_nodes() {
        let mut t = Tried::default();
        let order = [70u32, 3, 199, 70, 64, 0, 150, 3];
        for &n in &order {
            t.mark(NodeId(n), true);
        }
        let got: Vec<u32> = t.nodes(true).map(|n| n.0).collect();
        assert_eq!(got, [70, 3, 199, 64, 0, 150]);
        assert!(t.has(NodeId(150), true) && t.has(NodeId(0), true) && !t.has(NodeId(1), true));
        t.clear();
        assert!(t.is_empty() && t.nodes(true).next().is_none());
        t.mark(NodeId(5), true);
        assert_eq!(t.nodes(true).map(|n| n.0).collect::<Vec<_>>(), [5]);
    }

    #[test]
    fn a_narrow_set_is_a_bitmap_in_node_order() {
        let mut t = Tried::default();
        for n in [63u32, 0, 7, 0] {
            t.mark(NodeId(n), false);
        }
        assert_eq!(t.nodes(false).map(|n| n.0).collect::<Vec<_>>(), [0, 7, 63]);
        assert!(t.has(NodeId(7), false) && !t.has(NodeId(8), false));
        t.clear();
        assert!(t.is_empty());
    }
}
