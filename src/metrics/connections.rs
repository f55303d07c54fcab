//! A node's connections over one run (`gateway.pool`): what
//! `summary.json` reports under `nodes[].connections`, absent without a pool.

use serde::{Deserialize, Serialize};

/// How the gateway's connections to one node fared: new connections,
/// reuse, and the attempts that failed, by cause.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct NodeConnections {
    /// Connections the gateway opened to it.
    pub opened: u64,
    /// Attempts sent on a connection kept from an earlier request.
    pub reused: u64,
    /// `reused` / the node's attempts.
    pub reused_share: f64,
    /// Attempts whose connect was refused (nothing listening, or
    /// `stop_accepting`).
    pub refused: u64,
    /// Attempts on a reused connection that the node had closed: its FIN
    /// came back before any response (nginx "upstream prematurely closed
    /// connection"), or a reset (a close it sent during a partition).
    pub reset_on_reuse: u64,
    /// Attempts on a new connection closed or reset before the response
    /// (a crash, a `flaky` reset).
    pub closed_before_response: u64,
    /// Attempts that ended at a connect or read timeout.
    pub timed_out: u64,
    /// Envoy: attempts refused by a circuit breaker (a local 503, `UO`).
    pub overflow: u64,
}
