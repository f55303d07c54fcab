//! A model's gateway as Traefik 3.7 dynamic configuration for the file
//! provider (YAML): a router sending everything to one service, its
//! circuit-breaker and retry middlewares (the breaker first, outside the
//! retries, as the model runs them), the service's load balancer with its
//! servers, `healthCheck` and `passiveHealthCheck`, and a servers transport
//! with the forwarding timeouts. Traefik's entry points are its static
//! configuration: [`static_config`] writes one listening on
//! `opts.listen` and reading the dynamic file.

use super::{Options, Unsupported, ident, time};
use crate::engine::SimDuration;
use crate::policy::PolicySpec;
use crate::spec::{GatewayFlavor, Model};
use serde_json::{Map, Value, json};

/// The health path the exported active checks ask for.
pub const HEALTH_PATH: &str = "/health";

fn t(d: SimDuration) -> Result<Value, Unsupported> {
    time(d, Some("us")).map(Value::String)
}

/// The dynamic configuration as YAML.
pub fn write(model: &Model) -> Result<String, Unsupported> {
    write_with(model, &Options::of(model))
}

/// [`write`] with other addresses.
pub fn write_with(model: &Model, opts: &Options) -> Result<String, Unsupported> {
    super::no_check_port(model, "Traefik")?;
    let v = document(model, opts)?;
    let y = serde_yaml_ng::to_string(&v).map_err(|e| Unsupported(e.to_string()))?;
    Ok(format!(
        "# hcsim model \"{}\": the gateway as Traefik 3.7 dynamic configuration (file provider)\n{y}",
        model.name
    ))
}

/// The dynamic configuration as a document (the YAML's content).
pub fn document(model: &Model, opts: &Options) -> Result<Value, Unsupported> {
    let g = &model.gateway;
    if g.flavor != GatewayFlavor::Traefik {
        return Err(Unsupported(
            "the model's gateway is not Traefik: give it `gateway.flavor: traefik` (Traefik's request path)".into(),
        ));
    }
    let tr = g.traefik();
    let name = ident(&model.name);
    let mut lb = Map::new();
    let servers: Vec<Value> = model
        .declared_nodes()
        .iter()
        .zip(&opts.addresses)
        .map(|(n, a)| {
            let mut s = json!({"url": format!("http://{a}")});
            if n.weight != 1 {
                s["weight"] = json!(n.weight);
            }
            s
        })
        .collect();
    if let Some(n) = model.declared_nodes().iter().find(|n| n.down) {
        return Err(Unsupported(format!(
            "node {} is `down`: Traefik has no such setting",
            n.name
        )));
    }
    lb.insert("servers".into(), Value::Array(servers));
    let mut found = false;
    for p in &model.policies {
        match p {
            PolicySpec::None => {}
            PolicySpec::Traefik(x) if !found => {
                found = true;
                if let Some(a) = &x.health_check {
                    let mut hc = json!({"path": HEALTH_PATH, "interval": t(a.interval)?, "timeout": t(a.timeout)?});
                    if let Some(u) = a.unhealthy_interval {
                        hc["unhealthyInterval"] = t(u)?;
                    }
                    if let Some(s) = a.status {
                        hc["status"] = json!(s);
                    }
                    lb.insert("healthCheck".into(), hc);
                }
                if let Some(ph) = &x.passive_health_check {
                    lb.insert(
                        "passiveHealthCheck".into(),
                        json!({"failureWindow": t(ph.failure_window)?, "maxFailedAttempts": ph.max_failed_attempts}),
                    );
                }
            }
            other => {
                return Err(Unsupported(format!(
                    "the policy `{}` has no Traefik equivalent (Traefik has `kind: traefik`)",
                    other.label()
                )));
            }
        }
    }
    let f = &tr.forwarding_timeouts;
    let mut ft = json!({"dialTimeout": t(f.dial_timeout)?});
    if let Some(r) = f.response_header_timeout {
        ft["responseHeaderTimeout"] = t(r)?;
    }
    lb.insert("serversTransport".into(), json!(name));
    let mut mws = Map::new();
    let mut chain = vec![];
    if let Some(b) = &tr.circuit_breaker {
        chain.push(json!(format!("{name}-breaker")));
        mws.insert(
            format!("{name}-breaker"),
            json!({"circuitBreaker": {
                "expression": b.expression,
                "checkPeriod": t(b.check_period)?,
                "fallbackDuration": t(b.fallback_duration)?,
                "recoveryDuration": t(b.recovery_duration)?,
                "responseCode": b.response_code,
            }}),
        );
    }
    if let Some(r) = &tr.retry {
        chain.push(json!(format!("{name}-retry")));
        let mut rv = json!({"attempts": r.attempts});
        if !r.initial_interval.is_zero() {
            rv["initialInterval"] = t(r.initial_interval)?;
        }
        if !r.status.is_empty() {
            rv["status"] = json!(r.status);
        }
        if !r.timeout.is_zero() {
            rv["timeout"] = t(r.timeout)?;
        }
        mws.insert(format!("{name}-retry"), json!({ "retry": rv }));
    }
    let mut router = json!({"rule": "PathPrefix(`/`)", "service": name});
    if !chain.is_empty() {
        router["middlewares"] = Value::Array(chain);
    }
    let mut http = json!({
        "routers": {name.clone(): router},
        "services": {name.clone(): {"loadBalancer": Value::Object(lb)}},
        "serversTransports": {name.clone(): {"forwardingTimeouts": ft}},
    });
    if !mws.is_empty() {
        http["middlewares"] = Value::Object(mws);
    }
    let _ = opts.listen.as_str();
    Ok(json!({ "http": http }))
}

/// A static configuration: one entry point on `opts.listen`, the file
/// provider reading `dynamic`, the API (`api_listen`, for checks) and JSON
/// access logs to `access_log`.
pub fn static_config(opts: &Options, dynamic: &str, api_listen: &str, access_log: &str) -> String {
    format!(
        "entryPoints:\n  web:\n    address: \"{}\"\n  traefik:\n    address: \"{api_listen}\"\nproviders:\n  file:\n    filename: \"{dynamic}\"\n    watch: false\napi:\n  insecure: true\nping: {{}}\nlog:\n  level: DEBUG\naccessLog:\n  filePath: \"{access_log}\"\n  format: json\n",
        opts.listen
    )
}
