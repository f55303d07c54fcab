//! Faults: the scheduled start and end of each fault window, applied to a node.
//! Both are scheduled before any other event, so at one instant they run
//! first: whatever else happens at a fault's start already sees it. A fault
//! whose `at` is a distribution has its start drawn once per replication
//! (`fault_windows`); a crash with a `restart_delay` keeps refusing
//! connections for its drawn start-up time after its window ends.

use super::node::Sampler;
use super::streams::Stream;
use super::{Event, World};
use crate::engine::SimTime;
use crate::ids::NodeId;
use crate::spec::{FaultKind, Model};

/// Each fault's window `[start, end)` in the run of `seed`: as the model
/// gives it, or with its start drawn from its `at` distribution (one draw
/// per drawn fault, in file order, from the `Phase` stream).
pub(crate) fn fault_windows(model: &Model, seed: u64) -> Vec<(SimTime, Option<SimTime>)> {
    let mut draws = None;
    model
        .faults
        .iter()
        .map(|f| match f.phase {
            None => (f.start, f.end),
            Some(p) => {
                let rng = draws.get_or_insert_with(|| Stream::Phase.of(seed));
                f.window_at(Sampler::new(&p).sample(rng), model.end())
            }
        })
        .collect()
}

impl World<'_> {
    pub(crate) fn on_fault_start(&mut self, i: usize) {
        let f = self.model.faults[i];
        let node = f.node;
        self.nodes[node.index()].active_faults += 1;
        match f.kind {
            FaultKind::Crash if self.is_pod(node) => {
                // The container exits; the kubelet restarts it (pods/).
                self.nodes[node.index()].crash_fault = true;
                self.container_exited(node);
            }
            FaultKind::Crash => self.crash_node(node),
            FaultKind::Hang => {
                self.nodes[node.index()].hung = true;
                self.freeze_node(node);
            }
            FaultKind::Stop => {
                self.nodes[node.index()].stopped = true;
                self.freeze_node(node);
                self.conn_fault(node, FaultKind::Stop, true);
            }
            FaultKind::Partition => {
                self.nodes[node.index()].partitioned = true;
                self.conn_fault(node, FaultKind::Partition, true);
            }
            FaultKind::StopAccepting => self.nodes[node.index()].not_listening = true,
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
        let pod = self.is_pod(node);
        let n = &mut self.nodes[node.index()];
        n.active_faults -= 1;
        match f.kind {
            // The kubelet restarts a pod's container: containers started
            // from now on stay up.
            FaultKind::Crash if pod => {
                n.crash_fault = false;
            }
            // restarted with an empty queue; listening after its start-up time
            FaultKind::Crash => match f.restart_delay {
                None => self.restarted(node),
                Some(d) => {
                    let delay = Sampler::new(&d).sample(&mut self.rng.restart);
                    if delay.is_zero() {
                        self.restarted(node);
                    } else {
                        let generation = n.restarts;
                        let at = self.q.now() + delay;
                        self.q.schedule(at, Event::Listening { node, generation });
                    }
                }
            },
            FaultKind::Hang => {
                n.hung = false;
                self.thaw_node(node);
            }
            FaultKind::Stop => {
                n.stopped = false;
                self.conn_fault(node, FaultKind::Stop, false);
                self.thaw_node(node);
            }
            FaultKind::Partition => {
                n.partitioned = false;
                self.conn_fault(node, FaultKind::Partition, false);
            }
            FaultKind::StopAccepting => n.not_listening = false,
            FaultKind::Flaky { .. } => n.flaky = None,
            FaultKind::Slow { .. } => n.slow = None,
        }
    }
}

impl World<'_> {
    /// A restarted process finished starting up and listens again, unless
    /// it crashed again meanwhile (`generation` is then stale).
    pub(crate) fn on_listening(&mut self, node: NodeId, generation: u32) {
        if self.nodes[node.index()].restarts == generation {
            self.restarted(node);
        }
    }

    /// The process of `node` listens again after a crash: it accepts
    /// connections, and the policies hear of it (a restarted service
    /// registers itself anew with its registry).
    pub(crate) fn restarted(&mut self, node: NodeId) {
        self.nodes[node.index()].crashed = false;
        self.with_every_policy(Some(node), |p, cx| p.on_restarted(cx, node));
    }
}

#[cfg(test)]
mod tests {
    use super::fault_windows;
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

    fn crash_model(extra: serde_json::Value) -> Model {
        let mut doc = serde_json::json!({
            "name": "t", "duration": "4s",
            "clients": {"kind": "open", "rate_per_s": 100.0, "arrivals": "constant"},
            "nodes": [{"name": "a", "service_time": {"dist": "constant", "value": "1ms"}}],
            "faults": [{"kind": "crash", "node": "a", "at": "1s", "for": "1s"}]
        });
        for (k, v) in extra.as_object().unwrap() {
            doc["faults"][0][k] = v.clone();
        }
        Model::from_document(&doc, Path::new("t.json")).unwrap()
    }

    #[test]
    fn a_crashed_process_listens_only_after_its_restart_delay() {
        // One attempt every 10 ms; the single server refuses from 1 s to
        // the end of its start-up: 2 s, or 2.25 s with a 250 ms start-up.
        let refused = |m: &Model| crate::world::run(m, 1).client.errors;
        assert_eq!(refused(&crash_model(serde_json::json!({}))), 100);
        let slow = crash_model(serde_json::json!({"restart_delay": "250ms"}));
        assert_eq!(refused(&slow), 125);
        // The fault's own window (and its metrics) still ends at `for`.
        let s = crate::world::run(&slow, 1);
        assert_eq!(s.nodes[0].fault_attempts, 100);
    }

    #[test]
    fn a_second_crash_during_start_up_is_not_ended_by_the_first_restart() {
        // Crash [1 s, 2 s), 2 s start-up (until 4 s), crash again at 3 s
        // for 0.5 s: it ends at 3.5 s with its own (zero) start-up, and the
        // first restart's end at 4 s must not matter.
        let doc = serde_json::json!({
            "name": "t", "duration": "5s",
            "clients": {"kind": "open", "rate_per_s": 100.0, "arrivals": "constant"},
            "nodes": [{"name": "a", "service_time": {"dist": "constant", "value": "1ms"}}],
            "faults": [
                {"kind": "crash", "node": "a", "at": "1s", "for": "1s", "restart_delay": "2s"},
                {"kind": "crash", "node": "a", "at": "3s", "for": "500ms"}
            ]
        });
        let m = Model::from_document(&doc, Path::new("t.json")).unwrap();
        // Refused from 1 s to 3.5 s: 250 attempts.
        assert_eq!(crate::world::run(&m, 1).client.errors, 250);
    }

    #[test]
    fn drawn_fault_starts_depend_on_the_seed_only() {
        let m = crash_model(serde_json::json!({
            "at": {"dist": "uniform", "min": "500ms", "max": "1500ms"}
        }));
        let a = fault_windows(&m, 7);
        assert_eq!(a, fault_windows(&m, 7));
        assert_ne!(a, fault_windows(&m, 8));
        let (s, e) = a[0];
        assert!(s.as_micros() >= 500_000 && s.as_micros() <= 1_500_000);
        assert_eq!(e.unwrap().as_micros() - s.as_micros(), 1_000_000);
        // A fixed start is the model's, whatever the seed.
        let fixed = crash_model(serde_json::json!({}));
        assert_eq!(
            fault_windows(&fixed, 8)[0],
            (fixed.faults[0].start, fixed.faults[0].end)
        );
    }
}
