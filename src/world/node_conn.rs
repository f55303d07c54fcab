//! The node's side of the connections the gateway keeps (`gateway.pool`,
//! world/gateway/pool/): what the node's faults do to them.
//!
//! - crash: the dying kernel closes every connection (a FIN or a reset
//!   reaches the gateway half a round trip later: idle ones are dropped
//!   from the pool, a request sent on one in that window fails);
//! - partition: a close the node makes meanwhile (its keep-alive timeout)
//!   never reaches the gateway, which reuses the connection afterwards and
//!   meets a reset;
//! - stop (SIGSTOP): the process's keep-alive timers wait; an idle
//!   connection whose timeout passed while stopped is closed when it runs
//!   again; requests sent on kept connections wait in the socket (no
//!   backlog slot is needed) and time out;
//! - `stop_accepting`: new connects are refused (`Node::refuses_connections`);
//!   the connections the node has are served until it closes them by its
//!   own keep-alive timeout or request limit.

use super::World;
use crate::ids::NodeId;
use crate::spec::FaultKind;

impl World<'_> {
    /// A crash of `node` closes its connections: the gateway learns of it
    /// half a round trip from now.
    #[cold]
    #[inline(never)]
    pub(crate) fn pool_node_crashed(&mut self, node: NodeId) {
        let now = self.q.now();
        if let Some(p) = self.pool.as_deref_mut() {
            p.node_closes_all(node, now);
        }
    }

    /// A partition or a stop of `node` starts (`start`) or ends.
    #[cold]
    #[inline(never)]
    pub(crate) fn conn_fault(&mut self, node: NodeId, kind: FaultKind, start: bool) {
        let now = self.q.now();
        let Some(p) = self.pool.as_deref_mut() else {
            return;
        };
        match (kind, start) {
            (FaultKind::Partition, true) => p.partition_began(node, now),
            (FaultKind::Partition, false) => p.partition_ended(node, now),
            (FaultKind::Stop, true) => p.stop_began(node, now),
            (FaultKind::Stop, false) => p.stop_ended(node, now),
            _ => {}
        }
    }
}
