//! The `none` policy: no health checking, the baseline every node is
//! routable under.

use super::{HealthPolicy, Interests, NodeId, Now, PolicyParams, Scope};

/// The baseline: every node is always routable.
pub struct NoPolicy;

impl HealthPolicy for NoPolicy {
    fn is_routable(&self, _: Scope, _: NodeId, _: Now) -> bool {
        true
    }

    fn interests(&self) -> Interests {
        Interests {
            selections: false,
            attempts: false,
            routes_by_notices: true,
            ..Interests::DEFAULT
        }
    }
}

/// The parameters of `{"kind": "none"}`: there are none.
pub struct NoParams;

impl PolicyParams for NoParams {
    fn label(&self) -> String {
        "none".into()
    }

    fn counts_client_requests(&self) -> bool {
        false
    }

    fn build(&self, _scopes: usize, _nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(NoPolicy)
    }
}
