//! The node table as each gateway replica saw it (`hcsim run --per-replica`).
//!
//! Off by default: a fleet's summary aggregates over replicas, and these
//! counters cost a branch per request and `replicas × nodes` cells. When on,
//! every request, attempt and ejection is also counted in the cell of the
//! replica that handled it (`FleetLayout::replica_of` its scope).

use super::NodeSummary;
use crate::engine::SimTime;
use crate::ids::{FleetLayout, NodeId, Scope};
use crate::stats::round6;

/// One node as one replica saw it.
#[derive(Clone, Copy, Debug, Default)]
struct Cell {
    attempts: u64,
    answered: u64,
    failures: u64,
    fault_attempts: u64,
    fault_attempts_ok: u64,
    ejections: u64,
    false_ejections: u64,
    /// Ejected µs inside the measurement window, summed over the replica's scopes.
    ejected_us: u64,
    first_after_fault: Option<SimTime>,
    recovered_at: Option<SimTime>,
}

/// Per (replica, node) counters, `cells[replica × nodes + node]`.
#[derive(Clone, Debug)]
pub(super) struct ReplicaTally {
    nodes: usize,
    layout: FleetLayout,
    cells: Vec<Cell>,
}

impl ReplicaTally {
    pub(super) fn new(layout: FleetLayout, nodes: usize) -> Self {
        ReplicaTally {
            nodes,
            layout,
            cells: vec![Cell::default(); layout.replicas() * nodes],
        }
    }

    fn cell(&mut self, scope: usize, node: NodeId) -> &mut Cell {
        let r = self.layout.replica_of(scope as Scope);
        &mut self.cells[r * self.nodes + node.index()]
    }

    pub(super) fn attempt(&mut self, scope: usize, node: NodeId, during_fault: bool) {
        let c = self.cell(scope, node);
        c.attempts += 1;
        c.fault_attempts += during_fault as u64;
    }

    pub(super) fn failure(&mut self, scope: usize, node: NodeId) {
        self.cell(scope, node).failures += 1;
    }

    /// A 2xx from `node` reached the client through the replica of `scope`;
    /// `fault_ok`: its attempt started during a fault; `fault_end`: the end
    /// of the node's last fault, after which the first answer is its recovery.
    pub(super) fn answered(
        &mut self,
        t: SimTime,
        scope: usize,
        node: NodeId,
        counted: bool,
        fault_ok: bool,
        fault_end: Option<SimTime>,
    ) {
        let c = self.cell(scope, node);
        if counted {
            c.answered += 1;
            c.fault_attempts_ok += fault_ok as u64;
        }
        if c.recovered_at.is_none() && fault_end.is_some_and(|e| t >= e) {
            c.recovered_at = Some(t);
        }
    }

    /// The replica of `scope` ejected `node` at `t` (a scope went from
    /// routable to ejected); `after_fault`: at or after its first fault began.
    pub(super) fn ejected(
        &mut self,
        t: SimTime,
        scope: usize,
        node: NodeId,
        in_fault: bool,
        after_fault: bool,
    ) {
        let c = self.cell(scope, node);
        c.ejections += 1;
        c.false_ejections += !in_fault as u64;
        if after_fault && c.first_after_fault.is_none() {
            c.first_after_fault = Some(t);
        }
    }

    /// `us` of ejection (inside the measurement window) closed in `scope`.
    pub(super) fn ejected_time(&mut self, scope: usize, node: NodeId, us: u64) {
        self.cell(scope, node).ejected_us += us;
    }

    /// Each replica's node table: the counters above, the other fields zero.
    pub(super) fn finish(
        &self,
        names: &[String],
        fault_first_start: &[Option<SimTime>],
        fault_last_end: &[Option<SimTime>],
    ) -> Vec<Vec<NodeSummary>> {
        let since = |t: Option<SimTime>, from: Option<SimTime>| {
            t.zip(from)
                .map(|(t, f)| round6(t.saturating_since(f).as_secs_f64()))
        };
        self.cells
            .chunks(self.nodes.max(1))
            .map(|row| {
                let total: u64 = row.iter().map(|c| c.answered).sum();
                row.iter()
                    .enumerate()
                    .map(|(i, c)| NodeSummary {
                        name: names[i].clone(),
                        attempts: c.attempts,
                        answered: c.answered,
                        share: if total > 0 {
                            round6(c.answered as f64 / total as f64)
                        } else {
                            0.0
                        },
                        failures: c.failures,
                        ejections: c.ejections,
                        false_ejections: c.false_ejections,
                        ejected_time_s: round6(
                            c.ejected_us as f64 / 1e6 / self.layout.scopes_per_replica() as f64,
                        ),
                        first_ejection_delay_s: since(c.first_after_fault, fault_first_start[i]),
                        recovery_delay_s: since(c.recovered_at, fault_last_end[i]),
                        fault_attempts: c.fault_attempts,
                        fault_attempts_ok: c.fault_attempts_ok,
                        ..NodeSummary::default()
                    })
                    .collect()
            })
            .collect()
    }
}
