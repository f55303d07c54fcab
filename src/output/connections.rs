//! The connections of each node over the replications (`gateway.pool`):
//! `summary.json`'s `nodes[].connections` and the table's block for them.

use super::table::align;
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

/// The table's connection block: one row per node, `None` without a pool.
pub fn table_block(nodes: &[(String, Option<&ConnStats>)]) -> Option<String> {
    if nodes.iter().all(|(_, c)| c.is_none()) {
        return None;
    }
    let cell = |s: &Spread| super::table::cell(s, "", 0);
    let mut rows = vec![
        [
            "connections",
            "opened",
            "reused",
            "reused share",
            "refused",
            "reset on reuse",
            "closed before response",
            "timeouts",
            "overflow",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    ];
    for (name, c) in nodes {
        let Some(c) = c else { continue };
        rows.push(vec![
            name.clone(),
            cell(&c.opened),
            cell(&c.reused),
            super::table::share_cell(&c.reused_share),
            cell(&c.refused),
            cell(&c.reset_on_reuse),
            cell(&c.closed_before_response),
            cell(&c.timed_out),
            cell(&c.overflow),
        ]);
    }
    Some(align(&rows))
}
