//! The connection settings of each format, read into `gateway.pool` with
//! their lines (see [`crate::spec::connections`]):
//!
//! - nginx: `keepalive`, `keepalive_timeout`, `keepalive_requests`,
//!   `keepalive_time` in the `upstream`, and the `proxy_http_version` and
//!   `proxy_set_header Connection` in force at the location proxying to it
//!   (`proxy_set_header` is inherited only by a level that sets none of its
//!   own, as `ngx_http_proxy_merge_loc_conf` merges arrays);
//! - HAProxy: `http-reuse`, `option http-keep-alive | http-server-close |
//!   httpclose`, `timeout http-keep-alive`, and the servers'
//!   `pool-purge-delay`, `pool-max-conn`, `pool-low-conn`;
//! - Envoy: the cluster's `circuit_breakers` (default priority),
//!   `max_requests_per_connection` and the HTTP protocol options'
//!   `idle_timeout` (`common_http_protocol_options`, or
//!   `typed_extension_protocol_options`); whether the route retries resets;
//! - Istio: `connectionPool.tcp.maxConnections`, `connectionPool.http`'s
//!   `http1MaxPendingRequests`, `http2MaxRequests`,
//!   `maxRequestsPerConnection`, `maxRetries`, `idleTimeout` (istiod's
//!   defaults for what is unset: 2³²−1, no limit, 1 h).

use super::nginx_syntax::Directive;
use super::{Draft, Loc};
use crate::engine::SimDuration;
use crate::error::Error;
use serde_json::{Map, Value, json};

/// nginx's `keepalive*` directives of `up` and the location settings that
/// decide reuse. `main`: the whole file (a `keepalive` outside an upstream
/// is an error, as in nginx).
pub(super) fn nginx(
    main: &[Directive],
    (up, name): (&Directive, &str),
    http: &[&Directive],
    d: &mut Draft,
    parse_time: fn(&str, bool) -> Result<SimDuration, String>,
) -> Result<(), Error> {
    misplaced_keepalive(main)?;
    let mut pool = Map::new();
    let mut first: Option<Loc> = None;
    for x in up.children() {
        let key = match x.name.as_str() {
            "keepalive" | "keepalive_requests" => x.name.as_str(),
            "keepalive_timeout" | "keepalive_time" => x.name.as_str(),
            _ => continue,
        };
        if pool.contains_key(key) {
            return Err(x.at.error(format!("\"{key}\" directive is duplicate")));
        }
        let [v] = x.args.as_slice() else {
            return Err(x.at.error(format!(
                "invalid number of arguments in \"{key}\" directive"
            )));
        };
        let value = match key {
            "keepalive" | "keepalive_requests" => {
                let n: u32 = v.parse().map_err(|_| {
                    x.at.error(format!("invalid value \"{v}\" in \"{key}\" directive"))
                })?;
                if key == "keepalive" && n == 0 {
                    return Err(x
                        .at
                        .error(format!("invalid value \"{v}\" in \"keepalive\" directive")));
                }
                json!(n)
            }
            _ => json!(parse_time(v, false).map_err(|e| {
                x.at.error(format!("\"{key}\" directive invalid value \"{v}\": {e}"))
            })?),
        };
        pool.insert(key.into(), value);
        d.origin(&format!("gateway.pool.{key}"), &x.at);
        if key == "keepalive" {
            first = Some(x.at.clone());
        }
    }
    let Some(at) = first else {
        if let Some(x) = up
            .children()
            .iter()
            .find(|x| x.name.starts_with("keepalive_"))
        {
            d.warn(
                &x.at,
                format!(
                    "{} without `keepalive` has no effect: nothing is cached",
                    x.name
                ),
            );
        }
        return Ok(());
    };
    let (version, connection, location) = location_settings(http, name);
    pool.insert("kind".into(), json!("nginx"));
    let v11 = version.as_ref().is_some_and(|(v, _)| v == "1.1");
    if let Some((v, vat)) = &version {
        pool.insert("proxy_http_version".into(), json!(v));
        d.origin("gateway.pool.proxy_http_version", vat);
    }
    let header = match &connection {
        Some((h, hat)) => {
            pool.insert("connection_header".into(), json!(h));
            d.origin("gateway.pool.connection_header", hat);
            h.clone()
        }
        None => "close".into(),
    };
    if !v11 || header.eq_ignore_ascii_case("close") {
        let why = match (&location, v11) {
            (None, _) => "no location proxies to this upstream".to_string(),
            (Some(l), false) => {
                format!("the location at {l} speaks HTTP/1.0 (no `proxy_http_version 1.1;`)")
            }
            (Some(l), true) => format!(
                "the location at {l} sends `Connection: close` (no `proxy_set_header Connection \"\";`)"
            ),
        };
        d.warn(
            &at,
            format!(
                "keepalive has no effect here: {why}, so nginx reuses no connection (as without \
                 keepalive)"
            ),
        );
    }
    d.gateway.insert("pool".into(), Value::Object(pool));
    d.origin("gateway.pool", &at);
    Ok(())
}

/// `keepalive` (the upstream cache) anywhere but in an `upstream` block:
/// `"keepalive" directive is not allowed here`.
fn misplaced_keepalive(ds: &[Directive]) -> Result<(), Error> {
    for x in ds {
        if x.name == "keepalive" {
            return Err(x
                .at
                .error("\"keepalive\" directive is not allowed here (only in an upstream block)"));
        }
        if x.name != "upstream" {
            misplaced_keepalive(x.children())?;
        }
    }
    Ok(())
}

/// A setting with the line it came from.
type At<T> = Option<(T, Loc)>;

/// `proxy_http_version` and `proxy_set_header Connection` in force at the
/// first location proxying to `name`, and that location.
fn location_settings(http: &[&Directive], name: &str) -> (At<String>, At<String>, Option<Loc>) {
    fn walk(
        ds: &[Directive],
        (version, header): (At<String>, At<String>),
        name: &str,
    ) -> Option<(At<String>, At<String>, Loc)> {
        let mut version = version;
        if let Some(x) = ds.iter().rfind(|x| x.name == "proxy_http_version") {
            version = x.args.first().map(|v| (v.clone(), x.at.clone()));
        }
        // Arrays: a level with any proxy_set_header replaces the inherited set.
        let mut header = header;
        if ds.iter().any(|x| x.name == "proxy_set_header") {
            header = ds
                .iter()
                .filter(|x| x.name == "proxy_set_header")
                .rfind(|x| {
                    x.args
                        .first()
                        .is_some_and(|h| h.eq_ignore_ascii_case("connection"))
                })
                .map(|x| (x.args.get(1).cloned().unwrap_or_default(), x.at.clone()));
        }
        for x in ds {
            match x.name.as_str() {
                "proxy_pass"
                    if x.args.first().is_some_and(|u| {
                        let rest = u
                            .strip_prefix("http://")
                            .or_else(|| u.strip_prefix("https://"))
                            .unwrap_or(u);
                        rest.split('/').next() == Some(name)
                    }) =>
                {
                    return Some((version, header, x.at.clone()));
                }
                "server" | "location" | "if" | "limit_except" if x.block.is_some() => {
                    if let Some(found) = walk(x.children(), (version.clone(), header.clone()), name)
                    {
                        return Some(found);
                    }
                }
                _ => {}
            }
        }
        None
    }
    let owned: Vec<Directive> = http.iter().map(|x| (*x).clone()).collect();
    match walk(&owned, (None, None), name) {
        Some((v, h, at)) => (v, h, Some(at)),
        None => (None, None, None),
    }
}

/// HAProxy's connection settings of a backend (its `defaults`, then itself).
#[derive(Debug, Default)]
pub(super) struct HaproxyPool {
    fields: Map<String, Value>,
    at: Option<Loc>,
}

impl HaproxyPool {
    /// Reads a backend line if it is a connection setting (`true`: consumed);
    /// `server` and `default-server` lines give their `pool-*` keywords and
    /// are left to the caller. `time` reads an HAProxy time (the caller's).
    pub(super) fn line(
        &mut self,
        (neg, w): (bool, &[&str]),
        at: &Loc,
        d: &mut Draft,
        time: fn(&str, &Loc) -> Result<SimDuration, Error>,
    ) -> Result<bool, Error> {
        match w {
            ["http-reuse", mode] => {
                let m = match *mode {
                    "never" | "safe" | "aggressive" | "always" => *mode,
                    _ => {
                        return Err(at.error(format!(
                            "http-reuse: expected never, safe, aggressive or always, found \"{mode}\""
                        )));
                    }
                };
                self.set("http_reuse", json!(m), at, d);
            }
            [
                "option",
                o @ ("http-keep-alive" | "http-server-close" | "httpclose"),
            ] => {
                let v = if neg { "http-keep-alive" } else { o };
                self.set("option", json!(v.replace('-', "_")), at, d);
            }
            ["timeout", "http-keep-alive", v] => {
                let t = time(v, at)?;
                if t.is_zero() {
                    return Err(at.error("timeout http-keep-alive: must be positive"));
                }
                self.set("timeout_http_keep_alive", json!(t), at, d);
            }
            ["server" | "default-server", rest @ ..] => {
                for (i, kw) in rest.iter().enumerate() {
                    let field = match *kw {
                        "pool-purge-delay" => "pool_purge_delay",
                        "pool-max-conn" => "pool_max_conn",
                        "pool-low-conn" => "pool_low_conn",
                        _ => continue,
                    };
                    let Some(v) = rest.get(i + 1) else {
                        continue;
                    };
                    let value = if field == "pool_purge_delay" {
                        json!(time(v, at)?)
                    } else {
                        match v.parse::<i64>() {
                            Ok(-1) if field == "pool_max_conn" => Value::Null,
                            Ok(n) if n >= 0 => json!(n),
                            _ => {
                                return Err(at.error(format!(
                                    "{kw}: expected a whole number{}, found \"{v}\"",
                                    if field == "pool_max_conn" {
                                        " or -1"
                                    } else {
                                        ""
                                    }
                                )));
                            }
                        }
                    };
                    if !self.fields.contains_key(field) {
                        self.set(field, value, at, d);
                    }
                }
                return Ok(false);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn set(&mut self, field: &str, v: Value, at: &Loc, d: &mut Draft) {
        self.fields.insert(field.into(), v);
        d.origin(&format!("gateway.pool.{field}"), at);
        self.at.get_or_insert_with(|| at.clone());
    }

    /// The backend's `gateway.pool`, if it set anything about connections.
    pub(super) fn finish(mut self, d: &mut Draft) {
        let Some(at) = self.at else {
            return;
        };
        self.fields.retain(|_, v| !v.is_null());
        self.fields.insert("kind".into(), json!("haproxy"));
        d.gateway.insert("pool".into(), Value::Object(self.fields));
        d.origin("gateway.pool", &at);
    }
}

/// Envoy's connection settings of cluster `c`; `at` finds a key's line.
pub(super) fn envoy(c: &Value, at: &dyn Fn(&[&str]) -> Loc, d: &mut Draft) -> Result<(), Error> {
    let mut pool = Map::new();
    let mut first: Option<Loc> = None;
    let mut note = |pool: &mut Map<String, Value>, f: &str, v: Value, keys: &[&str]| {
        let a = at(keys);
        pool.insert(f.into(), v);
        d.origin(&format!("gateway.pool.{f}"), &a);
        first.get_or_insert(a);
    };
    if let Some(thresholds) = c
        .pointer("/circuit_breakers/thresholds")
        .and_then(Value::as_array)
    {
        let mut cb = Map::new();
        for (i, t) in thresholds.iter().enumerate() {
            let p = t
                .get("priority")
                .and_then(Value::as_str)
                .unwrap_or("DEFAULT");
            if p != "DEFAULT" {
                continue;
            }
            for f in [
                "max_connections",
                "max_pending_requests",
                "max_requests",
                "max_retries",
            ] {
                let Some(v) = t.get(f) else { continue };
                let n = v.get("value").unwrap_or(v);
                let n = super::yaml::uint(n).ok_or_else(|| {
                    at(&["circuit_breakers", "thresholds"]).error(format!(
                        "circuit_breakers.thresholds[{i}].{f}: expected a whole number"
                    ))
                })?;
                cb.insert(f.into(), json!(n.min(u32::MAX as u64)));
            }
        }
        if !cb.is_empty() {
            note(
                &mut pool,
                "circuit_breakers",
                Value::Object(cb),
                &["circuit_breakers"],
            );
        }
    }
    let typed = "/typed_extension_protocol_options/envoy.extensions.upstreams.http.v3.HttpProtocolOptions/common_http_protocol_options";
    for (base, keys) in [
        (
            "/common_http_protocol_options",
            vec!["common_http_protocol_options"],
        ),
        (typed, vec!["typed_extension_protocol_options"]),
    ] {
        let Some(opts) = c.pointer(base) else {
            continue;
        };
        if let Some(v) = opts.get("idle_timeout") {
            let t = super::yaml::duration(v)
                .map_err(|e| at(&keys).error(format!("idle_timeout: {e}")))?;
            // Envoy: 0s disables the idle timeout.
            let v = if t.is_zero() { Value::Null } else { json!(t) };
            note(&mut pool, "idle_timeout", v, &keys);
        }
        if let Some(v) = opts.get("max_requests_per_connection") {
            note(
                &mut pool,
                "max_requests_per_connection",
                max_requests(v, &at(&keys))?,
                &keys,
            );
        }
    }
    if let Some(v) = c.get("max_requests_per_connection") {
        let keys = ["max_requests_per_connection"];
        note(
            &mut pool,
            "max_requests_per_connection",
            max_requests(v, &at(&keys))?,
            &keys,
        );
    }
    if let Some(a) = first {
        pool.insert("kind".into(), json!("envoy"));
        d.gateway.insert("pool".into(), Value::Object(pool));
        d.origin("gateway.pool", &a);
    }
    Ok(())
}

/// `max_requests_per_connection` (0 or unset: no limit).
fn max_requests(v: &Value, at: &Loc) -> Result<Value, Error> {
    let n = super::yaml::uint(v.get("value").unwrap_or(v))
        .ok_or_else(|| at.error("max_requests_per_connection: expected a whole number"))?;
    Ok(if n == 0 {
        Value::Null
    } else {
        json!(n.min(u32::MAX as u64))
    })
}

/// Envoy: with a pool, whether the route's `retry_on` retries resets
/// (`reset` or `5xx`, which the route's reader maps to `timeout` among
/// other conditions; `connect-failure` alone maps to `error`).
pub(super) fn envoy_retry_on_reset(d: &mut Draft) {
    // No retry policy (`["off"]`): nothing is retried, the flag does not matter.
    let retries_resets = d
        .gateway
        .get("proxy_next_upstream")
        .and_then(Value::as_array)
        .is_none_or(|w| w.iter().any(|x| x == "timeout" || x == "off"));
    if let Some(Value::Object(p)) = d.gateway.get_mut("pool")
        && !retries_resets
    {
        p.insert("retry_on_reset".into(), json!(false));
    }
}

/// Istio's `connectionPool` of a traffic policy `tp` onto an Envoy pool.
pub(super) fn istio(tp: &Value, at: &dyn Fn(&[&str]) -> Loc, d: &mut Draft) -> Result<(), Error> {
    let Some(cp) = tp.get("connectionPool") else {
        return Ok(());
    };
    const MAX: u64 = u32::MAX as u64;
    let mut cb = json!({"max_connections": MAX, "max_pending_requests": MAX,
                        "max_requests": MAX, "max_retries": MAX});
    let mut pool = json!({"kind": "envoy"});
    let mut any = false;
    for (section, key, field) in [
        ("tcp", "maxConnections", "max_connections"),
        ("http", "http1MaxPendingRequests", "max_pending_requests"),
        ("http", "http2MaxRequests", "max_requests"),
        ("http", "maxRetries", "max_retries"),
    ] {
        let Some(v) = cp.pointer(&format!("/{section}/{key}")) else {
            continue;
        };
        let a = at(&["connectionPool", section, key]);
        let n = super::yaml::uint(v).ok_or_else(|| {
            a.error(format!(
                "connectionPool.{section}.{key}: expected a whole number"
            ))
        })?;
        cb[field] = json!(n.min(MAX));
        d.origin(&format!("gateway.pool.circuit_breakers.{field}"), &a);
        any = true;
    }
    if let Some(v) = cp.pointer("/http/maxRequestsPerConnection") {
        let a = at(&["connectionPool", "http", "maxRequestsPerConnection"]);
        pool["max_requests_per_connection"] = max_requests(v, &a)?;
        d.origin("gateway.pool.max_requests_per_connection", &a);
        any = true;
    }
    if let Some(v) = cp.pointer("/http/idleTimeout") {
        let a = at(&["connectionPool", "http", "idleTimeout"]);
        let t: SimDuration = super::yaml::duration(v)
            .map_err(|e| a.error(format!("connectionPool.http.idleTimeout: {e}")))?;
        pool["idle_timeout"] = if t.is_zero() { Value::Null } else { json!(t) };
        d.origin("gateway.pool.idle_timeout", &a);
        any = true;
    }
    if any {
        pool["circuit_breakers"] = cb;
        d.gateway.insert("pool".into(), pool);
        d.origin("gateway.pool", &at(&["connectionPool"]));
    }
    Ok(())
}
