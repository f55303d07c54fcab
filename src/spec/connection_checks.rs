//! The checks of a model's connection settings (`connections.rs`): the
//! pool's kind against the gateway, its numbers, the nodes' own limits,
//! `stop_accepting` only where the gateway keeps connections, and the
//! warnings of settings that keep nothing.

use super::connections::*;
use super::model_spec::{ClientsSpec, FaultSpec, GatewayFlavor, GatewaySpec, ModelSpec, NodeSpec};
use crate::engine::SimDuration;

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
        (
            None,
            GatewayFlavor::Nginx
            | GatewayFlavor::Kong
            | GatewayFlavor::Linkerd
            | GatewayFlavor::Caddy
            | GatewayFlavor::Traefik,
        ) => false,
    }
}

/// `gateway.pool`: its kind matches the gateway, its numbers fit.
pub fn check_pool(g: &GatewaySpec) -> Result<(), Invalid> {
    let Some(pool) = &g.pool else {
        return Ok(());
    };
    let at = |f: &str| format!("gateway.pool.{f}");
    match (pool, g.flavor) {
        (
            _,
            GatewayFlavor::Kong
            | GatewayFlavor::Linkerd
            | GatewayFlavor::Caddy
            | GatewayFlavor::Traefik,
        ) => {
            return Err(invalid(
                "gateway.pool",
                "kept connections are modelled for nginx, HAProxy and Envoy gateways; the \
                 connection reuse of Kong, Linkerd, Caddy and Traefik is not: leave gateway.pool out",
            ));
        }
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
        GatewayFlavor::Kong
        | GatewayFlavor::Linkerd
        | GatewayFlavor::Caddy
        | GatewayFlavor::Traefik => {
            "kept connections are not modelled for Kong, Linkerd, Caddy or Traefik gateways"
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
