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
