//! The connections of each node over the replications (`gateway.pool`):
//! `summary.json`'s `nodes[].connections` (the table's block for them is
//! `table::connection_block`).

use crate::metrics::{NodeConnections, NodeSummary};
use crate::stats::Spread;
use serde::{Deserialize, Serialize};

/// [`NodeConnections`] over the runs (fields in the file's order).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct ConnStats {
    pub closed_before_response: Spread,
    pub opened: Spread,
    pub overflow: Spread,
    pub refused: Spread,
    pub reset_on_reuse: Spread,
    pub reused: Spread,
    pub reused_share: Spread,
    pub timed_out: Spread,
}

impl ConnStats {
    /// One node's connections over the runs; `None` without a pool.
    pub fn over(nodes: &[&NodeSummary]) -> Option<ConnStats> {
        let conns: Vec<&NodeConnections> = nodes
            .iter()
            .filter_map(|n| n.connections.as_ref())
            .collect();
        if conns.is_empty() {
            return None;
        }
        let of = |f: fn(&NodeConnections) -> f64| {
            Spread::of(&conns.iter().map(|c| f(c)).collect::<Vec<_>>())
        };
        Some(ConnStats {
            closed_before_response: of(|c| c.closed_before_response as f64),
            opened: of(|c| c.opened as f64),
            overflow: of(|c| c.overflow as f64),
            refused: of(|c| c.refused as f64),
            reset_on_reuse: of(|c| c.reset_on_reuse as f64),
            reused: of(|c| c.reused as f64),
            reused_share: of(|c| c.reused_share),
            timed_out: of(|c| c.timed_out as f64),
        })
    }
}
