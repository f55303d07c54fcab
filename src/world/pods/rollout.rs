//! The Deployment controller's rolling update (`pkg/controller/deployment/
//! rolling.go`), reconciled at once whenever a pod's readiness changes, a
//! pod is deleted or gone (no controller or watch latency):
//!
//! 1. `reconcileNewReplicaSet` / `NewRSNewReplicas`: while the pods that
//!    are not terminating number fewer than `replicas + maxSurge`, create
//!    new pods, at most up to `replicas` new ones. A terminating pod is not
//!    counted (`FilterActivePods`): its replacement starts while it drains.
//! 2. `reconcileOldReplicaSets`: `maxScaledDown = all − minAvailable −
//!    newUnavailable` with `minAvailable = replicas − maxUnavailable`; first
//!    old pods that are not ready go (`cleanupUnhealthyReplicas`), then
//!    ready old pods while more than `minAvailable` pods are available
//!    (`scaleDownOldReplicaSetsForRollingUpdate`), oldest revision first.
//!    Among old pods the ReplicaSet deletes (`ActivePodsWithRanks`) the
//!    not-ready first, then the one ready for the shortest time, then the
//!    newest; a tie goes to the lower slot.
//!
//! The update is complete (`DeploymentComplete`) when `replicas` new pods
//! are ready and no old pod is active (terminating ones do not count); its
//! window for the figures lasts until the last old pod is gone and no
//! gateway replica lists it. A pod is available as soon as it is ready
//! (`minReadySeconds` 0).

use super::kubelet::Probers;
use super::{KillReason, Pod};
use crate::engine::SimTime;
use crate::ids::NodeId;
use crate::spec::pods::Rollout;
use crate::world::{Event, World};

/// The controller's state.
pub(super) struct Controller {
    rollouts: Vec<Rollout>,
    replicas: u32,
    /// The rolling update under way, if any.
    current: Option<usize>,
    /// The Deployment's revision: the pods of the start are revision 0.
    revision: u32,
    /// A reconcile is running: a nested request runs after it.
    busy: bool,
    again: bool,
}

impl Controller {
    pub(super) fn new(spec: &crate::spec::Pods) -> Controller {
        Controller {
            rollouts: spec.rollouts.clone(),
            replicas: spec.replicas,
            current: None,
            revision: 0,
            busy: false,
            again: false,
        }
    }
}

/// What the controller counts of the pods.
struct Census {
    /// Not terminating.
    active: u32,
    new: u32,
    new_ready: u32,
    ready: u32,
    /// Old pods that are not terminating, in the order the ReplicaSet
    /// deletes them.
    old: Vec<(bool, SimTime, SimTime, usize)>,
    /// Old pods still in a slot (terminating ones included).
    old_left: u32,
    /// Free slots: (used before, slot).
    free: Vec<(bool, usize)>,
    /// When the next slot that is not free yet frees.
    soonest_free: SimTime,
}

impl World<'_> {
    /// Time zero: each rolling update at its instant.
    pub(super) fn rollouts_begin(&mut self) {
        let Some(p) = self.pods.as_deref() else {
            return;
        };
        let starts: Vec<SimTime> = p
            .rollout
            .rollouts
            .iter()
            .map(|r| SimTime::ZERO + r.at)
            .collect();
        for (k, at) in starts.into_iter().enumerate() {
            self.q.schedule(at, Event::Rollout(k as u32));
        }
    }

    /// Rolling update `k` starts: a new revision (`u32::MAX`: a slot
    /// freed for a pod that waits).
    pub(crate) fn on_rollout(&mut self, k: usize) {
        if k == u32::MAX as usize {
            self.reconcile();
            return;
        }
        let now = self.q.now();
        let Some(p) = self.pods.as_deref_mut() else {
            return;
        };
        p.rollout.current = Some(k);
        p.rollout.revision += 1;
        p.log.deploy_start(now, k);
        self.reconcile();
    }

    fn census(&self) -> Census {
        let mut c = Census {
            active: 0,
            new: 0,
            new_ready: 0,
            ready: 0,
            old: Vec::new(),
            old_left: 0,
            free: Vec::new(),
            soonest_free: SimTime::MAX,
        };
        let Some(p) = self.pods.as_deref() else {
            return c;
        };
        let revision = p.rollout.revision;
        let pods = self.model.pods.as_ref();
        for (i, slot) in p.slots.iter().enumerate() {
            let Some(pod) = slot else {
                // Free once no gateway replica lists its last pod; never
                // used slots first (a reused one keeps the policies' state).
                let listed_until = p.listed_until[i];
                if !pods.is_some_and(|s| s.is_pod(i)) {
                    continue;
                }
                if listed_until <= self.q.now() {
                    let used = p.pod_gen[i] > 0 || i < self.model.declared_nodes().len();
                    c.free.push((used, i));
                } else {
                    c.soonest_free = c.soonest_free.min(listed_until);
                }
                continue;
            };
            let old = pod.revision < revision;
            c.old_left += old as u32;
            if pod.deleted.is_some() {
                continue;
            }
            c.active += 1;
            c.ready += pod.ready as u32;
            if old {
                // Deleted first: not ready, then ready the shortest, then newest.
                c.old.push((pod.ready, pod.ready_since, pod.created, i));
            } else {
                c.new += 1;
                c.new_ready += pod.ready as u32;
            }
        }
        c.free.sort();
        c.old.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then(b.1.cmp(&a.1))
                .then(b.2.cmp(&a.2))
                .then(a.3.cmp(&b.3))
        });
        c
    }

    /// One pass of the controller, repeated while a pass changed something
    /// a nested call asked to look at again.
    pub(super) fn reconcile(&mut self) {
        let Some(p) = self.pods.as_deref_mut() else {
            return;
        };
        if p.rollout.busy {
            p.rollout.again = true;
            return;
        }
        p.rollout.busy = true;
        loop {
            self.reconcile_once();
            let p = self.pods.as_deref_mut().expect("pods");
            if !std::mem::take(&mut p.rollout.again) {
                p.rollout.busy = false;
                return;
            }
        }
    }

    fn reconcile_once(&mut self) {
        let now = self.q.now();
        let Some(p) = self.pods.as_deref() else {
            return;
        };
        let Some(k) = p.rollout.current else {
            return;
        };
        let r = p.rollout.rollouts[k];
        let n = p.rollout.replicas;
        let c = self.census();
        // 1. New pods.
        let max_total = n + r.max_surge;
        if c.active < max_total && c.new < n {
            let want = (max_total - c.active).min(n - c.new) as usize;
            for &(_, slot) in c.free.iter().take(want) {
                self.create_pod(NodeId(slot as u32));
            }
            if want > c.free.len() && c.soonest_free < SimTime::MAX {
                // The others wait for a slot to free.
                self.q.schedule(c.soonest_free, Event::Rollout(u32::MAX));
            }
        }
        // 2. Old pods.
        let c = self.census();
        let min_available = n.saturating_sub(r.max_unavailable);
        let new_unavailable = c.new - c.new_ready;
        let mut budget =
            (c.active as i64 - min_available as i64 - new_unavailable as i64).max(0) as u32;
        let mut available = c.ready;
        for &(ready, _, _, slot) in &c.old {
            if budget == 0 {
                break;
            }
            if ready {
                if available <= min_available {
                    break;
                }
                available -= 1;
            }
            budget -= 1;
            self.delete_pod(NodeId(slot as u32));
        }
        let c = self.census();
        let old_active = c.old.len();
        let p = self.pods.as_deref_mut().expect("pods");
        if c.new == n && c.new_ready == n && old_active == 0 {
            // `DeploymentComplete`: terminating pods no longer count.
            p.log.deploy_done(now);
        }
        if c.old_left == 0 && p.log.is_done() {
            // The last old pod is gone: the update's window can close.
            p.rollout.current = None;
            p.log.deploy_drained(now);
        }
    }

    /// The ReplicaSet creates a pod of the current revision in `node`'s
    /// free slot; its container starts now.
    fn create_pod(&mut self, node: NodeId) {
        let now = self.q.now();
        let Some(params) = self.pod_params(node) else {
            return;
        };
        let probes = Probers::created(params, now);
        let Some(p) = self.pods.as_deref_mut() else {
            return;
        };
        p.pod_gen[node.index()] = p.pod_gen[node.index()].wrapping_add(1);
        let mut pod = Pod::new(p.rollout.revision, now, probes);
        pod.ready = false;
        pod.container = super::Container::Exited;
        let ticks = pod.probes.first_ticks();
        p.slots[node.index()] = Some(pod);
        p.log.created(now, node);
        self.start_container(node);
        for (kind, at) in ticks {
            self.probe_event(node, at, kind);
        }
    }

    /// An old pod is deleted: it turns not ready (its endpoint goes) and
    /// the kubelet kills its container; one waiting out a back-off is gone
    /// at once.
    fn delete_pod(&mut self, node: NodeId) {
        let now = self.q.now();
        let Some(pod) = self.pod_mut(node) else {
            return;
        };
        pod.deleted = Some(now);
        let exited = pod.container == super::Container::Exited;
        if let Some(p) = self.pods.as_deref_mut() {
            p.log.deleted(now, node);
        }
        self.publish_ready(node);
        if exited {
            self.container_exited(node);
        } else {
            self.kill(node, KillReason::Deleted);
        }
    }
}
