//! Connections as the model file writes them: the gateway's pool of idle
//! upstream connections (`gateway.pool`, one form per product), a node's
//! own keep-alive limits (`nodes[].keepalive_timeout`,
//! `nodes[].keepalive_requests`) and the clients' connections
//! (`clients.connection`), with their checks. Without `gateway.pool` (and,
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

use super::model_spec::{ClientsSpec, FaultSpec, GatewayFlavor, GatewaySpec, ModelSpec, NodeSpec};
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

/// A field (JSON path) and why its value is refused.
type Invalid = (String, String);

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Invalid {
    (field.into(), reason.into())
}

/// The clients' `connection`.
pub fn client_connection(c: &ClientsSpec) -> ClientConnection {
    match c {
        ClientsSpec::Open(o) => o.connection,
        ClientsSpec::Closed(c) => c.connection,
    }
}

/// Does the gateway of `spec` keep connections that outlive a request?
/// nginx and Envoy with a `gateway.pool`; HAProxy with one, or with
/// keep-alive clients (its default `http-reuse safe` then reuses).
pub fn keeps_connections(g: &GatewaySpec, clients: &ClientsSpec) -> bool {
    match (&g.pool, g.flavor) {
        (Some(_), _) => true,
        (None, GatewayFlavor::Haproxy) => client_connection(clients) == ClientConnection::Keepalive,
        (None, GatewayFlavor::Nginx) => false,
    }
}

/// `gateway.pool`: its kind matches the gateway, its numbers fit.
pub fn check_pool(g: &GatewaySpec) -> Result<(), Invalid> {
    let Some(pool) = &g.pool else {
        return Ok(());
    };
    let at = |f: &str| format!("gateway.pool.{f}");
    match (pool, g.flavor) {
        (PoolSpec::Haproxy(_), GatewayFlavor::Nginx) => {
            return Err(invalid(
                "gateway.pool.kind",
                "an HAProxy pool needs `\"flavor\": \"haproxy\"` (nginx and Envoy gateways \
                 take `nginx` or `envoy`)",
            ));
        }
        (PoolSpec::Nginx(_) | PoolSpec::Envoy(_), GatewayFlavor::Haproxy) => {
            return Err(invalid(
                "gateway.pool.kind",
                format!(
                    "the gateway is HAProxy (`flavor: haproxy`): its pool is `{{\"kind\": \
                     \"haproxy\"}}`, not `{}`",
                    pool.label()
                ),
            ));
        }
        _ => {}
    }
    match pool {
        PoolSpec::Nginx(n) => {
            if n.keepalive == 0 {
                return Err(invalid(
                    at("keepalive"),
                    "must be at least 1 (nginx: invalid value \"0\"); leave out the pool for none",
                ));
            }
            let scopes = if g.zone { 1 } else { g.workers.max(1) as u64 };
            let total = n.keepalive as u64 * scopes * g.replicas.max(1) as u64;
            if total > MAX_POOLED_CONNECTIONS {
                return Err(invalid(
                    at("keepalive"),
                    format!(
                        "{} idle connections per worker × {scopes} worker(s) × {} replica(s) = \
                         {total} connections kept; at most {MAX_POOLED_CONNECTIONS} are simulated",
                        n.keepalive,
                        g.replicas.max(1)
                    ),
                ));
            }
            positive(&at("keepalive_timeout"), n.keepalive_timeout)?;
            positive(&at("keepalive_time"), n.keepalive_time)?;
            if n.keepalive_requests == 0 {
                return Err(invalid(
                    at("keepalive_requests"),
                    "must be at least 1 (with 0 nginx would close every connection)",
                ));
            }
        }
        PoolSpec::Haproxy(h) => {
            positive(&at("pool_purge_delay"), h.pool_purge_delay)?;
            if let Some(t) = h.timeout_http_keep_alive {
                positive(&at("timeout_http_keep_alive"), t)?;
            }
        }
        PoolSpec::Envoy(e) => {
            if let Some(t) = e.idle_timeout {
                positive(&at("idle_timeout"), t).map_err(|(f, _)| {
                    invalid(f, "must be positive (null for no idle timeout, Envoy's 0s)")
                })?;
            }
            if e.max_requests_per_connection == Some(0) {
                return Err(invalid(
                    at("max_requests_per_connection"),
                    "must be at least 1 (null for no limit)",
                ));
            }
            let cb = &e.circuit_breakers;
            for (f, v) in [
                ("max_connections", cb.max_connections),
                ("max_requests", cb.max_requests),
            ] {
                if v == 0 {
                    return Err(invalid(
                        at(&format!("circuit_breakers.{f}")),
                        "must be at least 1 (with 0 every request would overflow)",
                    ));
                }
            }
        }
    }
    Ok(())
}

fn positive(field: &str, d: SimDuration) -> Result<(), Invalid> {
    if d.is_zero() {
        Err(invalid(field, "must be positive"))
    } else {
        Ok(())
    }
}

/// `nodes[i].keepalive_timeout` and `keepalive_requests`.
pub fn check_node(i: usize, n: &NodeSpec) -> Result<(), Invalid> {
    if let Some(t) = n.keepalive_timeout {
        positive(&format!("nodes[{i}].keepalive_timeout"), t)?;
    }
    if n.keepalive_requests == Some(0) {
        return Err(invalid(
            format!("nodes[{i}].keepalive_requests"),
            "must be at least 1 (leave it out for no limit)",
        ));
    }
    Ok(())
}

/// A `stop_accepting` fault needs connections that outlive a request:
/// without them, it is a crash.
pub fn check_stop_accepting(spec: &ModelSpec) -> Result<(), Invalid> {
    if keeps_connections(&spec.gateway, &spec.clients) {
        return Ok(());
    }
    let Some(i) = spec
        .faults
        .iter()
        .position(|f| matches!(f, FaultSpec::StopAccepting(_)))
    else {
        return Ok(());
    };
    let hint = match spec.gateway.flavor {
        GatewayFlavor::Nginx => {
            "set gateway.pool ({\"kind\": \"nginx\", \"keepalive\": 16, \"proxy_http_version\": \
             \"1.1\", \"connection_header\": \"\"}, or {\"kind\": \"envoy\"})"
        }
        GatewayFlavor::Haproxy => {
            "set clients.connection to \"keepalive\" (HAProxy's http-reuse safe reuses only \
             after a client's first request), or gateway.pool"
        }
    };
    Err(invalid(
        format!("faults[{i}].kind"),
        format!(
            "stop_accepting closes the node's listening socket but serves the connections it \
             has, and the gateway keeps no connection to it beyond one request: {hint}; \
             without them, use \"crash\""
        ),
    ))
}

/// Legal but suspicious connection settings, as `(field, message)`.
pub fn warnings(spec: &ModelSpec) -> Vec<(String, String)> {
    let mut w = Vec::new();
    match &spec.gateway.pool {
        Some(PoolSpec::Nginx(n)) if !n.reuses() => w.push((
            "gateway.pool".into(),
            format!(
                "{}: nginx caches no connection, every attempt opens one (set \
                 \"proxy_http_version\": \"1.1\" and \"connection_header\": \"\" to reuse them)",
                match n.proxy_http_version {
                    HttpVersion::Http10 =>
                        "nginx speaks HTTP/1.0 to the nodes (its default), \
                                            after which they close the connection",
                    HttpVersion::Http11 => "nginx sends `Connection: close` (its default)",
                },
            ),
        )),
        Some(PoolSpec::Haproxy(h))
            if h.reuses()
                && h.http_reuse == HttpReuse::Safe
                && client_connection(&spec.clients) == ClientConnection::Close =>
        {
            w.push((
                "clients.connection".into(),
                "clients close their connection after each request, and `http-reuse safe` \
                 never reuses a server connection for the first request of a client connection: \
                 nothing is reused (\"connection\": \"keepalive\" to reuse)"
                    .into(),
            ))
        }
        _ => {}
    }
    w
}

#[cfg(test)]
mod tests {
    use crate::spec::Model;
    use serde_json::{Value, json};
    use std::path::Path;

    fn check(gateway: Value, faults: Value) -> Result<Model, String> {
        let doc = json!({
            "name": "t", "duration": "10s",
            "clients": {"kind": "open", "rate_per_s": 10.0},
            "gateway": gateway,
            "nodes": [{"name": "a"}, {"name": "b"}],
            "faults": faults
        });
        Model::from_document(&doc, Path::new("m.json")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_pool_takes_the_products_defaults_and_checks_its_numbers() {
        let m = check(
            json!({"pool": {"kind": "nginx", "keepalive": 16}}),
            json!([]),
        )
        .unwrap();
        let eff = serde_json::to_value(m.effective_spec()).unwrap();
        assert_eq!(
            eff["gateway"]["pool"],
            json!({"kind": "nginx", "keepalive": 16, "keepalive_timeout": "60s",
                   "keepalive_requests": 1000, "keepalive_time": "3600s",
                   "proxy_http_version": "1.0", "connection_header": "close"})
        );
        let w = m.warnings();
        assert!(
            w.iter()
                .any(|(f, m)| f == "gateway.pool" && m.contains("caches no connection")),
            "{w:?}"
        );
        let e = check(
            json!({"pool": {"kind": "nginx", "keepalive": 16, "keepalive_timeout": "0s"}}),
            json!([]),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "m.json: gateway.pool.keepalive_timeout: must be positive"
        );
        let e = check(
            json!({"workers": 4, "pool": {"kind": "nginx", "keepalive": 1000000}}),
            json!([]),
        )
        .unwrap_err();
        assert!(
            e.starts_with(
                "m.json: gateway.pool.keepalive: 1000000 idle connections per worker × 4"
            ),
            "{e}"
        );
        let e = check(json!({"pool": {"kind": "haproxy"}}), json!([])).unwrap_err();
        assert!(
            e.contains("gateway.pool.kind: an HAProxy pool needs"),
            "{e}"
        );
        let e = check(
            json!({"pool": {"kind": "envoy", "circuit_breakers": {"max_connections": 0}}}),
            json!([]),
        )
        .unwrap_err();
        assert!(
            e.contains("gateway.pool.circuit_breakers.max_connections: must be at least 1"),
            "{e}"
        );
        let e = check(
            json!({"pool": {"kind": "envoy", "idle_timeout": "-1s"}}),
            json!([]),
        )
        .unwrap_err();
        assert!(
            e.contains("gateway.pool.idle_timeout: durations cannot be negative"),
            "{e}"
        );
    }

    #[test]
    fn stop_accepting_needs_a_gateway_that_keeps_connections() {
        let stop = json!([{"kind": "stop_accepting", "node": "a", "at": "1s", "for": "1s"}]);
        let e = check(json!({}), stop.clone()).unwrap_err();
        assert!(
            e.starts_with("m.json: faults[0].kind: stop_accepting closes the node's listening"),
            "{e}"
        );
        check(
            json!({"pool": {"kind": "nginx", "keepalive": 2}}),
            stop.clone(),
        )
        .unwrap();
        let e = check(json!({"flavor": "haproxy"}), stop).unwrap_err();
        assert!(e.contains("clients.connection"), "{e}");
    }
}
