//! Connections as the model file writes them: the gateway's pool of idle
//! upstream connections (`gateway.pool`, one form per product), a node's
//! own keep-alive limits (`nodes[].keepalive_timeout`,
//! `nodes[].keepalive_requests`) and the clients' connections
//! (`clients.connection`); `connection_checks.rs` checks them. Without `gateway.pool` (and,
//! with HAProxy, with clients that close their connection after each
//! request) every attempt opens a connection of its own, as before.
//!
//! The defaults are the products' own:
//! - nginx (`ngx_http_upstream_keepalive_module.c`,
//!   `ngx_http_upstream_init_keepalive`): `keepalive_timeout 60s`,
//!   `keepalive_requests 1000` (1.22), `keepalive_time 1h`; a connection is
//!   cached only with `proxy_http_version 1.1` and the `Connection` header
//!   cleared (nginx sends `Connection: close` otherwise);
//! - HAProxy 2.6 (`connect_server`, src/backend.c; `srv_add_to_idle_list`
//!   and `srv_cleanup_idle_conns`, src/server.c): `http-reuse safe`, `option
//!   http-keep-alive`, `pool-purge-delay 5s`, `pool-max-conn -1`,
//!   `pool-low-conn 0`;
//! - Envoy: the HTTP/1.1 pool (`common_http_protocol_options.idle_timeout`
//!   1 h, `max_requests_per_connection` unlimited) and the cluster's circuit
//!   breakers (`max_connections`, `max_pending_requests`, `max_requests`
//!   1024, `max_retries` 3).

use crate::diagnostics::tracked;
use crate::engine::SimDuration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The gateway's pool of idle connections to the nodes; `kind` names the
/// product whose rules it follows.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PoolSpec {
    /// nginx `keepalive` in the `upstream` (each worker keeps its own cache).
    #[serde(deserialize_with = "tracked")]
    Nginx(NginxPoolSpec),
    /// HAProxy's server-side idle connections (`http-reuse`); needs
    /// `"flavor": "haproxy"`.
    #[serde(deserialize_with = "tracked")]
    Haproxy(HaproxyPoolSpec),
    /// Envoy's HTTP/1.1 connection pool per host and the cluster's circuit
    /// breakers (also Istio's `connectionPool`).
    #[serde(deserialize_with = "tracked")]
    Envoy(EnvoyPoolSpec),
}

impl PoolSpec {
    pub fn label(&self) -> &'static str {
        match self {
            PoolSpec::Nginx(_) => "nginx",
            PoolSpec::Haproxy(_) => "haproxy",
            PoolSpec::Envoy(_) => "envoy",
        }
    }
}

/// `proxy_http_version`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
pub enum HttpVersion {
    /// nginx's default: the node closes the connection after its answer.
    #[default]
    #[serde(rename = "1.0")]
    Http10,
    #[serde(rename = "1.1")]
    Http11,
}

/// nginx's upstream keep-alive cache (`ngx_http_upstream_keepalive_module`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NginxPoolSpec {
    /// `keepalive N`: idle connections each worker keeps for the whole
    /// upstream (all servers together); when it is full, the least recently
    /// used one is closed.
    pub keepalive: u32,
    /// `keepalive_timeout`: an idle cached connection is closed after this. Default 60s.
    #[serde(default = "sixty_seconds")]
    pub keepalive_timeout: SimDuration,
    /// `keepalive_requests`: a connection is closed after this many requests. Default 1000.
    #[serde(default = "thousand")]
    pub keepalive_requests: u32,
    /// `keepalive_time`: a connection is not cached again once it is older
    /// than this. Default 1h.
    #[serde(default = "one_hour")]
    pub keepalive_time: SimDuration,
    /// `proxy_http_version` at the location: `"1.0"` (nginx's default: no
    /// connection is reused) or `"1.1"`.
    #[serde(default)]
    pub proxy_http_version: HttpVersion,
    /// The value of `proxy_set_header Connection` at the location. Default
    /// `"close"` (what nginx sends unless told otherwise): connections are
    /// reused only when it is cleared (`""`) or `keep-alive`.
    #[serde(default = "close_header")]
    pub connection_header: String,
}

impl NginxPoolSpec {
    /// A cached connection can be reused: HTTP/1.1 and no `Connection: close`.
    pub fn reuses(&self) -> bool {
        self.proxy_http_version == HttpVersion::Http11
            && !self.connection_header.eq_ignore_ascii_case("close")
    }
}

/// `http-reuse`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HttpReuse {
    Never,
    /// The first request of a client connection gets a connection of its
    /// own; later ones may reuse idle connections (HAProxy's default).
    #[default]
    Safe,
    /// First requests may also reuse connections already reused once (`safe` list).
    Aggressive,
    /// First requests may reuse any idle connection.
    Always,
}

/// HAProxy's connection mode for HTTP (`option http-keep-alive`, the default).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HaproxyOption {
    /// `option http-keep-alive`: both sides kept open.
    #[default]
    HttpKeepAlive,
    /// `option http-server-close`: the server connection is closed after
    /// each response, the client's kept.
    HttpServerClose,
    /// `option httpclose`: both closed after each response.
    Httpclose,
}

/// HAProxy's idle server connections.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HaproxyPoolSpec {
    /// `http-reuse never|safe|aggressive|always`. Default `safe`.
    pub http_reuse: HttpReuse,
    /// `option http-keep-alive` (default), `http-server-close` or `httpclose`.
    pub option: HaproxyOption,
    /// `timeout http-keep-alive`: a client connection idle this long
    /// between requests is closed, so the client's next request is the first
    /// of a new connection. Default: unset (HAProxy then waits `timeout
    /// http-request` or `timeout client`, which hcsim leaves to the client).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_http_keep_alive: Option<SimDuration>,
    /// `pool-purge-delay`: every this long, half of the idle connections
    /// beyond recent need are closed. Default 5s.
    pub pool_purge_delay: SimDuration,
    /// `pool-max-conn`: idle connections kept per server; default unset (-1, no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_max_conn: Option<u32>,
    /// `pool-low-conn`. Default 0.
    pub pool_low_conn: u32,
}

impl Default for HaproxyPoolSpec {
    fn default() -> Self {
        HaproxyPoolSpec {
            http_reuse: HttpReuse::Safe,
            option: HaproxyOption::HttpKeepAlive,
            timeout_http_keep_alive: None,
            pool_purge_delay: SimDuration::from_secs(5),
            pool_max_conn: None,
            pool_low_conn: 0,
        }
    }
}

impl HaproxyPoolSpec {
    /// Server connections can be reused at all.
    pub fn reuses(&self) -> bool {
        self.http_reuse != HttpReuse::Never && self.option == HaproxyOption::HttpKeepAlive
    }
}

/// Envoy's HTTP/1.1 connection pool and the cluster's circuit breakers.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EnvoyPoolSpec {
    /// `max_requests_per_connection` (HTTP protocol options): a connection
    /// is closed after this many requests. Default: unset, no limit.
    pub max_requests_per_connection: Option<u32>,
    /// `common_http_protocol_options.idle_timeout`: an idle connection is
    /// closed after this; `null` for none. Default 1h.
    pub idle_timeout: Option<SimDuration>,
    /// The cluster's `circuit_breakers` (default priority), per gateway replica.
    pub circuit_breakers: CircuitBreakersSpec,
    /// `retry_on` includes `reset` (or `5xx`): a request whose connection
    /// the node closed before the response is retried per the retry policy
    /// (`gateway.proxy_next_upstream`); otherwise it gets a 503. Default true.
    pub retry_on_reset: bool,
}

impl Default for EnvoyPoolSpec {
    fn default() -> Self {
        EnvoyPoolSpec {
            max_requests_per_connection: None,
            idle_timeout: Some(one_hour()),
            circuit_breakers: CircuitBreakersSpec::default(),
            retry_on_reset: true,
        }
    }
}

/// `circuit_breakers.thresholds` of an Envoy cluster: an overflow is a local
/// 503 (`UO`) that outlier detection does not count and that is not retried.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CircuitBreakersSpec {
    /// Connections open to all hosts together; a request finding none
    /// ready waits for one (pending). Default 1024.
    pub max_connections: u32,
    /// Requests waiting for a connection; one more overflows. Default 1024.
    pub max_pending_requests: u32,
    /// Requests in flight to the cluster; one more overflows. Default 1024.
    pub max_requests: u32,
    /// Retries in flight; a retry beyond it is not made. Default 3.
    pub max_retries: u32,
}

impl Default for CircuitBreakersSpec {
    fn default() -> Self {
        CircuitBreakersSpec {
            max_connections: 1024,
            max_pending_requests: 1024,
            max_requests: 1024,
            max_retries: 3,
        }
    }
}

/// How clients use their connections to the gateway.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientConnection {
    /// One request per connection (`Connection: close`, curl in a loop).
    #[default]
    Close,
    /// Keep-alive: a client sends its next request on the connection of the
    /// previous one (an open-loop client on its most recently idle one),
    /// which HAProxy's `http-reuse safe` depends on.
    Keepalive,
}

impl ClientConnection {
    pub(super) fn is_default(&self) -> bool {
        *self == ClientConnection::Close
    }
}

fn sixty_seconds() -> SimDuration {
    SimDuration::from_secs(60)
}
fn one_hour() -> SimDuration {
    SimDuration::from_secs(3600)
}
fn thousand() -> u32 {
    1000
}
fn close_header() -> String {
    "close".into()
}

/// Idle connections the pools of a model may keep in all (nginx
/// `keepalive` × workers × replicas); nginx allocates its cache items up
/// front, and so would a model of them.
pub const MAX_POOLED_CONNECTIONS: u64 = 1 << 20;
