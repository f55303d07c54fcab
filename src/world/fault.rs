//! Faults: the scheduled start and end of each fault window, applied to a node.
//! Both are scheduled before any other event, so at one instant they run
//! first: whatever else happens at a fault's start already sees it.

use super::World;
use crate::spec::FaultKind;

impl World<'_> {
    pub(crate) fn on_fault_start(&mut self, i: usize) {
        let f = self.model.faults[i];
        let node = f.node;
        self.nodes[node.index()].active_faults += 1;
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
        n.active_faults -= 1;
        match f.kind {
            FaultKind::Crash => {
                n.crashed = false; // restarted with an empty queue
                for p in 0..self.policies.len() {
                    self.with_policy(p, Some(node), |p, cx| p.on_restarted(cx, node));
                }
            }
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

#[cfg(test)]
mod tests {
    use crate::spec::Model;
    use std::path::Path;

    #[test]
    fn a_fault_holds_from_its_start_instant_to_just_before_its_end() {
        // Attempts every 125 ms; two windows back to back, [250, 500) and
        // [500, 625) ms: the attempts at 250, 375 and 500 ms are sent during
        // a fault, the one at 625 ms is not.
        let doc = serde_json::json!({
            "name": "t", "duration": "1s",
            "clients": {"kind": "open", "rate_per_s": 8.0, "arrivals": "constant"},
            "nodes": [{"name": "a"}],
            "faults": [
                {"kind": "slow", "node": "a", "factor": 1.0, "at": "250ms", "for": "250ms"},
                {"kind": "flaky", "node": "a", "p": 0.0, "at": "500ms", "for": "125ms"}
            ]
        });
        let model = Model::from_document(&doc, Path::new("t.json")).unwrap();
        let s = crate::world::run(&model, 1);
        assert_eq!(s.nodes[0].attempts, 8);
        assert_eq!(s.nodes[0].fault_attempts, 3);
        assert_eq!(s.nodes[0].fault_attempts_ok, 3);
    }
}
