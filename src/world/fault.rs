//! Faults: the scheduled start and end of each fault window, applied to a node.

use super::World;
use crate::spec::FaultKind;

impl World<'_> {
    pub(crate) fn on_fault_start(&mut self, i: usize) {
        let f = self.model.faults[i];
        let node = f.node;
        match f.kind {
            FaultKind::Crash => self.crash_node(node),
            FaultKind::Hang => {
                self.nodes[node.index()].hung = true;
                self.freeze_node(node);
            }
            FaultKind::Stop => {
                self.nodes[node.index()].stopped = true;
                self.freeze_node(node);
            }
            FaultKind::Partition => self.nodes[node.index()].partitioned = true,
            FaultKind::Flaky { p, error, status } => {
                self.nodes[node.index()].flaky = Some((p, error, status))
            }
            FaultKind::Slow { factor, extra } => {
                self.nodes[node.index()].slow = Some((factor, extra))
            }
        }
    }

    pub(crate) fn on_fault_end(&mut self, i: usize) {
        let f = self.model.faults[i];
        let node = f.node;
        let n = &mut self.nodes[node.index()];
        match f.kind {
            FaultKind::Crash => n.crashed = false, // restarted with an empty queue
            FaultKind::Hang => {
                n.hung = false;
                self.thaw_node(node);
            }
            FaultKind::Stop => {
                n.stopped = false;
                self.thaw_node(node);
            }
            FaultKind::Partition => n.partitioned = false,
            FaultKind::Flaky { .. } => n.flaky = None,
            FaultKind::Slow { .. } => n.slow = None,
        }
    }
}
