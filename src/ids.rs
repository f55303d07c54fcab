//! Identifiers shared by every layer: which node, which copy of the gateway's peer state.

/// A node's index in the model's `nodes` list.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Which copy of the gateway's peer state a decision concerns: the nginx
/// worker process (each has its own state unless the upstream has a `zone`).
pub type Scope = u16;

/// How a fleet of gateway replicas (`gateway.replicas`) lays out its flat
/// tables: each replica has its own `scopes` copies of peer state and its
/// own instance of each of the `policies`. Global scope `s` belongs to
/// replica `s / scopes`; policy instance `i` to replica `i / policies`.
/// This is the one place that knows it: everything else asks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FleetLayout {
    replicas: usize,
    scopes: usize,
    policies: usize,
}

impl FleetLayout {
    /// `replicas` (at least 1), each with `scopes` copies of peer state
    /// (at least 1) and `policies` policy instances.
    pub fn new(replicas: usize, scopes: usize, policies: usize) -> Self {
        FleetLayout {
            replicas: replicas.max(1),
            scopes: scopes.max(1),
            policies,
        }
    }

    pub fn replicas(&self) -> usize {
        self.replicas
    }

    /// More than one replica: a single gateway skips the arithmetic.
    #[inline]
    pub fn is_fleet(&self) -> bool {
        self.replicas > 1
    }

    /// Copies of peer state per replica.
    pub fn scopes_per_replica(&self) -> usize {
        self.scopes
    }

    /// Policy instances per replica.
    pub fn policies_per_replica(&self) -> usize {
        self.policies
    }

    /// Copies of peer state in the whole fleet.
    pub fn scopes(&self) -> usize {
        self.replicas * self.scopes
    }

    /// Policy instances in the whole fleet.
    pub fn policy_instances(&self) -> usize {
        self.replicas * self.policies
    }

    /// The replica of global scope `s`.
    #[inline]
    pub fn replica_of(&self, s: Scope) -> usize {
        if self.is_fleet() {
            s as usize / self.scopes
        } else {
            0
        }
    }

    /// Global scope `s` within its replica: what that replica's policies call it.
    #[inline]
    pub fn local(&self, s: Scope) -> Scope {
        if self.is_fleet() {
            (s as usize % self.scopes) as Scope
        } else {
            s
        }
    }

    /// Replica `r`'s local scope `local` as a global scope.
    #[inline]
    pub fn scope(&self, r: usize, local: Scope) -> Scope {
        (r * self.scopes) as Scope + local
    }

    /// The global scopes of replica `r`.
    #[inline]
    pub fn scopes_of(&self, r: usize) -> std::ops::Range<usize> {
        r * self.scopes..(r + 1) * self.scopes
    }

    /// The replica of policy instance `i`.
    #[inline]
    pub fn replica_of_policy(&self, i: usize) -> usize {
        if self.is_fleet() {
            i / self.policies
        } else {
            0
        }
    }

    /// Policy instance `i`'s index within its replica (which of the model's policies it is).
    #[inline]
    pub fn policy_index(&self, i: usize) -> usize {
        if self.is_fleet() {
            i % self.policies
        } else {
            i
        }
    }

    /// Replica `r`'s instance of the model's policy `p`.
    #[inline]
    pub fn policy(&self, r: usize, p: usize) -> usize {
        r * self.policies + p
    }

    /// The policy instances of replica `r`.
    #[inline]
    pub fn policies_of(&self, r: usize) -> std::ops::Range<usize> {
        r * self.policies..(r + 1) * self.policies
    }

    /// The policy instances of the replica of global scope `s`.
    #[inline]
    pub fn policies_of_scope(&self, s: Scope) -> std::ops::Range<usize> {
        self.policies_of(self.replica_of(s))
    }
}

#[cfg(test)]
mod tests {
    use super::FleetLayout;

    #[test]
    fn a_fleet_lays_out_scopes_and_policies_replica_by_replica() {
        let f = FleetLayout::new(3, 4, 2);
        assert_eq!((f.scopes(), f.policy_instances()), (12, 6));
        assert_eq!((f.replica_of(9), f.local(9), f.scope(2, 1)), (2, 1, 9));
        assert_eq!(f.scopes_of(1), 4..8);
        assert_eq!((f.replica_of_policy(5), f.policy_index(5)), (2, 1));
        assert_eq!((f.policy(2, 1), f.policies_of_scope(5)), (5, 2..4));
        let one = FleetLayout::new(1, 4, 2);
        assert_eq!(
            (one.replica_of(3), one.local(3), one.policy_index(1)),
            (0, 3, 1)
        );
    }
}
