//! `gateway.pool` in each format's words: nginx `keepalive*` in the
//! upstream with `proxy_http_version` and `proxy_set_header Connection` at
//! the location, HAProxy `http-reuse`, `option`, `timeout http-keep-alive`
//! and the servers' `pool-*`, Envoy's `circuit_breakers` and HTTP protocol
//! options, Istio's `connectionPool`. A pool of another product's kind is
//! [`Unsupported`].

use super::{Unsupported, time};
use crate::spec::connections::{
    EnvoyPoolSpec, HaproxyOption, HaproxyPoolSpec, HttpReuse, HttpVersion, NginxPoolSpec,
};
use crate::spec::{Model, PoolSpec};
use serde_json::{Map, Value, json};
use std::fmt::Write;

fn other_kind(pool: &PoolSpec, format: &str, kind: &str) -> Unsupported {
    Unsupported(format!(
        "gateway.pool is {}'s (`kind: {}`); {format} keeps connections by its own rules: give \
         the model a pool of `kind: {kind}`",
        pool.label(),
        pool.label()
    ))
}

/// nginx: the pool, if any (an error for another kind).
fn nginx_pool(model: &Model) -> Result<Option<&NginxPoolSpec>, Unsupported> {
    match &model.gateway.pool {
        None => Ok(None),
        Some(PoolSpec::Nginx(p)) => Ok(Some(p)),
        Some(p) => Err(other_kind(p, "nginx", "nginx")),
    }
}

/// The `keepalive*` lines of the `upstream` block.
pub(super) fn nginx_upstream(model: &Model) -> Result<String, Unsupported> {
    let Some(p) = nginx_pool(model)? else {
        return Ok(String::new());
    };
    let mut s = String::new();
    let _ = writeln!(s, "    keepalive {};", p.keepalive);
    let _ = writeln!(
        s,
        "    keepalive_timeout {};",
        time(p.keepalive_timeout, None)?
    );
    let _ = writeln!(s, "    keepalive_requests {};", p.keepalive_requests);
    let _ = writeln!(s, "    keepalive_time {};", time(p.keepalive_time, None)?);
    Ok(s)
}

/// The location's `proxy_http_version` and `proxy_set_header Connection`.
pub(super) fn nginx_location(model: &Model) -> Result<String, Unsupported> {
    let Some(p) = nginx_pool(model)? else {
        return Ok(String::new());
    };
    let mut s = String::new();
    if p.proxy_http_version == HttpVersion::Http11 {
        s.push_str("        proxy_http_version 1.1;\n");
    }
    if !p.connection_header.eq_ignore_ascii_case("close") {
        if p.connection_header.contains(['"', '\\', ';', '\n']) {
            return Err(Unsupported(format!(
                "connection_header {:?} cannot be written as an nginx string",
                p.connection_header
            )));
        }
        let _ = writeln!(
            s,
            "        proxy_set_header Connection \"{}\";",
            p.connection_header
        );
    }
    Ok(s)
}

/// HAProxy: the pool in force (its default with keep-alive clients and no
/// section: nothing to write), an error for another kind.
fn haproxy_pool(model: &Model) -> Result<Option<&HaproxyPoolSpec>, Unsupported> {
    match &model.gateway.pool {
        None => Ok(None),
        Some(PoolSpec::Haproxy(p)) => Ok(Some(p)),
        Some(p) => Err(other_kind(p, "HAProxy", "haproxy")),
    }
}

/// The backend's `http-reuse`, `option` and `timeout http-keep-alive` lines.
pub(super) fn haproxy_backend(model: &Model) -> Result<String, Unsupported> {
    let Some(p) = haproxy_pool(model)? else {
        return Ok(String::new());
    };
    let mut s = String::new();
    let reuse = match p.http_reuse {
        HttpReuse::Never => "never",
        HttpReuse::Safe => "safe",
        HttpReuse::Aggressive => "aggressive",
        HttpReuse::Always => "always",
    };
    let _ = writeln!(s, "    http-reuse {reuse}");
    let option = match p.option {
        HaproxyOption::HttpKeepAlive => "http-keep-alive",
        HaproxyOption::HttpServerClose => "http-server-close",
        HaproxyOption::Httpclose => "httpclose",
    };
    let _ = writeln!(s, "    option {option}");
    if let Some(t) = p.timeout_http_keep_alive {
        let _ = writeln!(s, "    timeout http-keep-alive {}", time(t, Some("us"))?);
    }
    Ok(s)
}

/// The `pool-*` keywords of each `server` line (those not at HAProxy's default).
pub(super) fn haproxy_server(model: &Model) -> Result<String, Unsupported> {
    let Some(p) = haproxy_pool(model)? else {
        return Ok(String::new());
    };
    let mut s = String::new();
    if p.pool_purge_delay != HaproxyPoolSpec::default().pool_purge_delay {
        let _ = write!(
            s,
            " pool-purge-delay {}",
            time(p.pool_purge_delay, Some("us"))?
        );
    }
    if let Some(m) = p.pool_max_conn {
        let _ = write!(s, " pool-max-conn {m}");
    }
    if p.pool_low_conn != 0 {
        let _ = write!(s, " pool-low-conn {}", p.pool_low_conn);
    }
    Ok(s)
}

/// Envoy and Istio: the pool, if any (an error for another kind).
fn envoy_pool<'m>(
    model: &'m Model,
    format: &str,
) -> Result<Option<&'m EnvoyPoolSpec>, Unsupported> {
    match &model.gateway.pool {
        None => Ok(None),
        Some(PoolSpec::Envoy(p)) => Ok(Some(p)),
        Some(p) => Err(other_kind(p, format, "envoy")),
    }
}

/// The cluster's `circuit_breakers` and HTTP protocol options.
pub(super) fn envoy_cluster(model: &Model, c: &mut Value) -> Result<(), Unsupported> {
    let Some(p) = envoy_pool(model, "Envoy")? else {
        return Ok(());
    };
    let cb = &p.circuit_breakers;
    c["circuit_breakers"] = json!({"thresholds": [{
        "priority": "DEFAULT",
        "max_connections": cb.max_connections,
        "max_pending_requests": cb.max_pending_requests,
        "max_requests": cb.max_requests,
        "max_retries": cb.max_retries,
    }]});
    let mut common = Map::new();
    common.insert(
        "idle_timeout".into(),
        json!(p.idle_timeout.unwrap_or(crate::engine::SimDuration::ZERO)),
    );
    if let Some(n) = p.max_requests_per_connection {
        common.insert("max_requests_per_connection".into(), json!(n));
    }
    c["typed_extension_protocol_options"] = json!({
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
            "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
            "common_http_protocol_options": common,
            "explicit_http_config": {"http_protocol_options": {}},
        }
    });
    Ok(())
}

/// Istio's `connectionPool` (beside `tcp.connectTimeout`).
pub(super) fn istio(model: &Model, pool: &mut Value) -> Result<(), Unsupported> {
    let Some(p) = envoy_pool(model, "Istio")? else {
        return Ok(());
    };
    let cb = &p.circuit_breakers;
    pool["tcp"]["maxConnections"] = json!(cb.max_connections);
    let mut http = json!({
        "http1MaxPendingRequests": cb.max_pending_requests,
        "http2MaxRequests": cb.max_requests,
        "maxRetries": cb.max_retries,
        "maxRequestsPerConnection": p.max_requests_per_connection.unwrap_or(0),
    });
    http["idleTimeout"] = json!(p.idle_timeout.unwrap_or(crate::engine::SimDuration::ZERO));
    pool["http"] = http;
    Ok(())
}
