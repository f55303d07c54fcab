//! `gateway.balancer`: how the gateway chooses a peer, the hash balancers'
//! settings included.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the gateway chooses a peer (`gateway.balancer`).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Balancer {
    #[default]
    RoundRobin,
    LeastConn,
    RandomTwo,
    /// nginx `ip_hash` (`ngx_http_upstream_get_ip_hash_peer`): the first
    /// three octets of the client's IPv4 address choose the peer. Needs
    /// `clients.keys`: key k is the address `10.B.C.D`, `B = (k >> 8) & 255`, `C = k & 255`,
    /// `D = (k >> 16) XOR C`.
    IpHash,
    /// nginx `hash KEY [consistent]` (`ngx_http_upstream_get_hash_peer`,
    /// `ngx_http_upstream_get_chash_peer`). Needs `clients.keys`.
    Hash(HashBalancer),
    /// HAProxy `balance source` (`get_server_sh`, src/backend.c) with its
    /// `hash-type`. Needs `clients.keys` and `"flavor": "haproxy"`: the
    /// client's IPv4 address (as for `ip_hash`) is the hash.
    Source(SourceBalancer),
}

/// `balance source` with `hash-type map-based|consistent [FUNCTION] [avalanche]`.
/// The hash function (`sdbm`, `djb2`, `wt6`, `crc32`) does not apply to
/// source hashing: `get_server_sh` takes the address itself.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceBalancer {
    /// `hash-type consistent`: the servers' points on a ring
    /// (`chash_get_server_hash`, src/lb_chash.c), so a server going down moves
    /// only its own clients; else `map-based` (`map_get_server_hash`,
    /// src/lb_map.c), the hash modulo the usable servers' total weight, so a
    /// server going down moves most clients.
    #[serde(default)]
    pub consistent: bool,
    /// The `avalanche` modifier: the address goes through `full_hash` first.
    /// HAProxy applies it by default with `hash-type consistent` written
    /// without a function, and not otherwise.
    #[serde(default)]
    pub avalanche: bool,
}

/// `hash KEY [consistent]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HashBalancer {
    /// The key as nginx writes it, e.g. `$request_uri` or `$remote_addr`.
    /// Each request's text: `$remote_addr` is its client's IPv4 address
    /// (as for `ip_hash`), `$binary_remote_addr` its 4 bytes, `$request_uri`,
    /// `$uri` and `$document_uri` are `/k<key>`, any other variable `k<key>`;
    /// other text is kept as written.
    pub key: String,
    /// `consistent`: ketama points (160 per unit of weight per server, from
    /// the server's name, i.e. the node's `name`).
    #[serde(default)]
    pub consistent: bool,
}

impl Balancer {
    /// `ip_hash`, `hash` or `source`: the peer follows the request's client key.
    pub fn is_hash(&self) -> bool {
        matches!(
            self,
            Balancer::IpHash | Balancer::Hash(_) | Balancer::Source(_)
        )
    }
}
