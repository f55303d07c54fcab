//! The Service's endpoints as one gateway replica sees them, when the
//! model's nodes are Kubernetes pods (`pods`, `nodes[].pod`): a node is
//! routable while its endpoint is in the replica's list.
//!
//! The world tells every replica's instance of a change of a pod's `ready`
//! condition in the EndpointSlice ([`HealthPolicy::on_endpoint`]), with the
//! instant that replica's controller applies it (the change's
//! `endpoint_propagation`, drawn per replica). The EndpointSlice controller
//! (`staging/src/k8s.io/endpointslice/utils.go`, `podToEndpoint`) writes
//! `serving` = the pod's Ready condition, `terminating` = a deletion
//! timestamp, and `ready = serving && !terminating`; ingress-nginx
//! (`internal/ingress/controller/endpointslices.go`,
//! `getEndpointsFromSlices`) drops every endpoint whose `ready` is false,
//! so a terminating pod leaves its upstream as soon as the slice update
//! reaches it. That is what this policy routes by. (kube-proxy falls back to
//! serving-and-terminating endpoints only when none is ready; gateways do
//! not.)
//!
//! Changes reach a replica in the order they were made: the world never
//! gives a change an instant before the previous change of the same node.

use super::{HealthPolicy, Interests, NodeId, Now, PolicyCx, PolicyTimer, Scope};
use crate::engine::SimTime;
use std::collections::VecDeque;

/// The timer tag of an endpoint change arriving.
const TAG_ARRIVE: u32 = 1;

/// One replica's endpoint list.
pub struct Endpoints {
    /// Per node: in the list now.
    listed: Vec<bool>,
    /// Per node: changes on their way, (instant applied, ready), in order.
    pending: Vec<VecDeque<(SimTime, bool)>>,
}

impl Endpoints {
    /// `listed[i]`: node `i`'s endpoint is in the list at the start.
    pub fn new(listed: Vec<bool>) -> Self {
        let n = listed.len();
        Endpoints {
            listed,
            pending: vec![VecDeque::new(); n],
        }
    }
}

impl HealthPolicy for Endpoints {
    fn interests(&self) -> Interests {
        Interests {
            selections: false,
            attempts: false,
            ..Interests::DEFAULT
        }
    }

    fn is_routable(&self, _: Scope, node: NodeId, _: Now) -> bool {
        self.listed[node.index()]
    }

    fn on_endpoint(&mut self, cx: &mut PolicyCx, node: NodeId, ready: bool, at: SimTime) {
        let q = &mut self.pending[node.index()];
        debug_assert!(q.back().is_none_or(|&(t, _)| t <= at));
        q.push_back((at, ready));
        cx.at(
            at,
            PolicyTimer {
                tag: TAG_ARRIVE,
                node: node.0,
                generation: 0,
            },
        );
    }

    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        let i = timer.node as usize;
        let now = cx.now().t;
        while let Some(&(t, ready)) = self.pending[i].front() {
            if t > now {
                break;
            }
            self.listed[i] = ready;
            self.pending[i].pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testkit::{Harness, ms};

    #[test]
    fn a_change_applies_at_its_instant_and_in_order() {
        let mut h = Harness::new(Endpoints::new(vec![true, true]));
        h.call(ms(0), |p, cx| p.on_endpoint(cx, NodeId(0), false, ms(1000)));
        h.call(ms(0), |p, cx| p.on_endpoint(cx, NodeId(0), true, ms(3000)));
        assert!(h.routable(0));
        h.advance_to(ms(999));
        assert!(h.routable(0));
        h.advance_to(ms(1000));
        assert!(!h.routable(0));
        assert!(h.routable(1));
        h.advance_to(ms(3000));
        assert!(h.routable(0));
    }
}
