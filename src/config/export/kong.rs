//! A Kong model (`gateway.flavor: kong`) as Kong's declarative
//! configuration (`kong.yml`, `_format_version: "3.0"`): one Service with
//! its `retries` and timeouts (milliseconds) and a catch-all route, the
//! upstream it proxies to with the `kong` policy as its `healthchecks`
//! (intervals and the timeout in seconds) and the nodes as `targets`
//! (`down` → weight 0). `hcsim import` reads it back to the same model.

use super::{Options, Unsupported, ident};
use crate::engine::SimDuration;
use crate::policy::{KongParams, PolicySpec};
use crate::spec::{GatewayFlavor, Model};
use serde_json::{Value, json};

/// Kong's seconds: a number (fractions allowed).
fn seconds(d: SimDuration) -> Value {
    match d.whole_secs() {
        Some(s) => json!(s),
        None => json!(d.as_secs_f64()),
    }
}

/// A duration in whole milliseconds (a Service's timeouts).
fn millis(d: SimDuration, field: &str) -> Result<u64, Unsupported> {
    let us = d.as_micros();
    if us % 1_000 != 0 {
        return Err(Unsupported(format!(
            "{field} {d} is not a whole number of milliseconds"
        )));
    }
    Ok(us / 1_000)
}

/// The `kong` policy as an upstream's `healthchecks`.
fn healthchecks(p: &KongParams, threshold: f64) -> Result<Value, Unsupported> {
    let mut v = serde_json::to_value(p).map_err(|e| Unsupported(e.to_string()))?;
    let a = &p.active;
    v["active"]["timeout"] = seconds(a.timeout);
    v["active"]["healthy"]["interval"] = seconds(a.healthy.interval);
    v["active"]["unhealthy"]["interval"] = seconds(a.unhealthy.interval);
    v["threshold"] = json!(threshold);
    Ok(v)
}

/// The declarative configuration as YAML.
pub fn write(model: &Model) -> Result<String, Unsupported> {
    write_with(model, &Options::of(model))
}

/// Like [`write`], the targets at `opts.addresses`.
pub fn write_with(model: &Model, opts: &Options) -> Result<String, Unsupported> {
    super::no_check_port(model, "Kong")?;
    let g = &model.gateway;
    if g.flavor != GatewayFlavor::Kong {
        return Err(Unsupported(
            "only a Kong gateway (`flavor: kong`) is a Kong Service".into(),
        ));
    }
    if g.replicas > 1 {
        return Err(Unsupported(
            "a fleet of Kong nodes (`replicas`) is one kong.yml loaded by each; export \
             without replicas"
                .into(),
        ));
    }
    let k = g.kong();
    let mut checks = None;
    for p in &model.policies {
        match p {
            PolicySpec::None => {}
            PolicySpec::Kong(kp) if checks.is_none() => {
                checks = Some(healthchecks(kp, k.health_threshold)?)
            }
            other => {
                return Err(Unsupported(format!(
                    "the policy `{}` is not one of Kong's (an upstream has one `healthchecks`)",
                    other.label()
                )));
            }
        }
    }
    let name = ident(&model.name);
    let upstream = format!("{name}-upstream");
    let targets: Vec<Value> = model
        .declared_nodes()
        .iter()
        .zip(&opts.addresses)
        .map(|(n, addr)| {
            let weight = if n.down { 0 } else { n.weight };
            json!({"target": addr, "weight": weight})
        })
        .collect();
    let mut up = json!({"name": upstream, "algorithm": "round-robin", "targets": targets});
    match checks {
        Some(c) => up["healthchecks"] = c,
        None if k.health_threshold > 0.0 => {
            up["healthchecks"] = json!({"threshold": k.health_threshold})
        }
        None => {}
    }
    let doc = json!({
        "_format_version": "3.0",
        "services": [{
            "name": name,
            "host": upstream,
            "port": 80,
            "protocol": "http",
            "retries": k.retries,
            "connect_timeout": millis(g.proxy_connect_timeout, "proxy_connect_timeout")?,
            "read_timeout": millis(g.proxy_read_timeout, "proxy_read_timeout")?,
            "routes": [{"name": format!("{name}-route"), "paths": ["/"]}],
        }],
        "upstreams": [up],
    });
    serde_yaml_ng::to_string(&doc).map_err(|e| Unsupported(e.to_string()))
}
