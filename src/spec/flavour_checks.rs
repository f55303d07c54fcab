//! The checks of a Kong or Linkerd gateway (`gateway.flavor: kong` or
//! `linkerd`): their own settings, and the nginx settings their request
//! paths do not have kept out of such a model.

use super::model_spec::{Balancer, GatewayFlavor, GatewaySpec, NextUpstream, NodeSpec};
use crate::engine::SimDuration;

/// Kong's round-robin wheel may hold at most this many slots per worker
/// (`sum of weights / their gcd`).
pub(super) const MAX_KONG_WHEEL: u64 = 1 << 22;

type Invalid = (String, String);

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Invalid {
    (field.into(), reason.into())
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The gateway settings a Kong or Linkerd request path does not have are
/// left at their defaults; their own sections appear only with their flavour.
pub(super) fn check(g: &GatewaySpec, nodes: &[NodeSpec]) -> Result<(), Invalid> {
    let own = [
        ("haproxy", g.haproxy.is_some(), GatewayFlavor::Haproxy),
        ("kong", g.kong.is_some(), GatewayFlavor::Kong),
        ("linkerd", g.linkerd.is_some(), GatewayFlavor::Linkerd),
    ];
    for (name, set, flavor) in own {
        if set && g.flavor != flavor {
            return Err(invalid(
                format!("gateway.{name}"),
                format!("these settings need `\"flavor\": \"{name}\"`"),
            ));
        }
    }
    let name = match g.flavor {
        GatewayFlavor::Kong => "Kong",
        GatewayFlavor::Linkerd => "Linkerd",
        // Caddy's and Traefik's settings are checked in `flavor_checks.rs`.
        GatewayFlavor::Nginx
        | GatewayFlavor::Haproxy
        | GatewayFlavor::Caddy
        | GatewayFlavor::Traefik => return Ok(()),
    };
    let d = GatewaySpec::default();
    let nginx_only = [
        (
            "proxy_next_upstream",
            g.proxy_next_upstream != [NextUpstream::Error, NextUpstream::Timeout],
        ),
        (
            "proxy_next_upstream_tries",
            g.proxy_next_upstream_tries != 0,
        ),
        (
            "proxy_next_upstream_timeout",
            !g.proxy_next_upstream_timeout.is_zero(),
        ),
        ("balancer", g.balancer != Balancer::RoundRobin),
        (
            "healthy_panic_threshold",
            g.healthy_panic_threshold.is_some(),
        ),
    ];
    for (field, changed) in nginx_only {
        if changed {
            let why = match g.flavor {
                GatewayFlavor::Kong => {
                    "Kong keeps nginx's `proxy_next_upstream error timeout` with \
                     `gateway.kong.retries` more tries, balances with its own round-robin wheel \
                     and has no panic routing (see `gateway.kong.health_threshold`)"
                }
                _ => {
                    "Linkerd's proxy does not retry, balances by P2C over peak-EWMA and has no \
                      panic routing"
                }
            };
            return Err(invalid(
                format!("gateway.{field}"),
                format!("does not apply to {name}'s request path: leave it out ({why})"),
            ));
        }
    }
    for (i, n) in nodes.iter().enumerate() {
        if n.backup {
            return Err(invalid(
                format!("nodes[{i}].backup"),
                format!("{name} has no backup endpoints"),
            ));
        }
        if n.max_conns > 0 {
            return Err(invalid(
                format!("nodes[{i}].max_conns"),
                format!("{name} has no per-endpoint connection limit in hcsim's model"),
            ));
        }
    }
    match g.flavor {
        GatewayFlavor::Kong => check_kong(g, nodes),
        _ => check_linkerd(g, nodes, &d),
    }
}

fn check_kong(g: &GatewaySpec, nodes: &[NodeSpec]) -> Result<(), Invalid> {
    let k = g.kong();
    if !(0.0..=100.0).contains(&k.health_threshold) {
        return Err(invalid(
            "gateway.kong.health_threshold",
            format!("is a percentage (0..=100), found {}", k.health_threshold),
        ));
    }
    if k.retries > 32767 {
        return Err(invalid(
            "gateway.kong.retries",
            format!("must be between 0 and 32767, found {}", k.retries),
        ));
    }
    for (i, n) in nodes.iter().enumerate() {
        if n.weight > 65535 {
            return Err(invalid(
                format!("nodes[{i}].weight"),
                format!("a Kong target's weight is 0..=65535, found {}", n.weight),
            ));
        }
    }
    let weights: Vec<u64> = nodes
        .iter()
        .filter(|n| !n.down)
        .map(|n| n.weight as u64)
        .collect();
    let divisor = weights.iter().fold(0, |d, &w| gcd(d, w));
    let slots = weights
        .iter()
        .sum::<u64>()
        .checked_div(divisor)
        .unwrap_or(0);
    if slots * g.workers as u64 > MAX_KONG_WHEEL {
        return Err(invalid(
            "nodes",
            format!(
                "Kong's round-robin wheel would hold {slots} slots per worker (the weights' sum \
                 over their gcd); hcsim keeps at most {MAX_KONG_WHEEL} over all workers"
            ),
        ));
    }
    Ok(())
}

fn check_linkerd(g: &GatewaySpec, nodes: &[NodeSpec], d: &GatewaySpec) -> Result<(), Invalid> {
    if g.workers > 1 {
        return Err(invalid(
            "gateway.workers",
            "a Linkerd proxy has one balancer: leave `workers` at 1 (model several proxies \
             with `replicas`)",
        ));
    }
    for (field, changed) in [
        (
            "proxy_connect_timeout",
            g.proxy_connect_timeout != d.proxy_connect_timeout,
        ),
        (
            "proxy_read_timeout",
            g.proxy_read_timeout != d.proxy_read_timeout,
        ),
    ] {
        if changed {
            return Err(invalid(
                format!("gateway.{field}"),
                "is nginx's: Linkerd's are `gateway.linkerd.connect_timeout` and \
                 `gateway.linkerd.response_timeout`",
            ));
        }
    }
    if let Some((i, n)) = nodes.iter().enumerate().find(|(_, n)| n.weight != 1) {
        return Err(invalid(
            format!("nodes[{i}].weight"),
            format!(
                "Linkerd's P2C balancer does not weigh endpoints: leave the weight at 1, \
                 found {}",
                n.weight
            ),
        ));
    }
    let l = g.linkerd();
    if l.connect_timeout.is_zero() {
        return Err(invalid(
            "gateway.linkerd.connect_timeout",
            "must be positive",
        ));
    }
    if l.response_timeout.is_some_and(|t| t.is_zero()) {
        return Err(invalid(
            "gateway.linkerd.response_timeout",
            "must be positive (omit it for none)",
        ));
    }
    if l.ewma_decay.is_zero() {
        return Err(invalid("gateway.linkerd.ewma_decay", "must be positive"));
    }
    Ok(())
}

/// The waits of a Linkerd attempt a client timeout is compared with:
/// (field, its value as written, when it fires).
pub(super) fn client_waits(g: &GatewaySpec) -> Vec<(String, String, Option<SimDuration>)> {
    let l = g.linkerd();
    vec![
        (
            "gateway.linkerd.connect_timeout".into(),
            l.connect_timeout.to_string(),
            Some(l.connect_timeout),
        ),
        (
            "gateway.linkerd.response_timeout".into(),
            l.response_timeout
                .map_or_else(|| "unset: never".into(), |d| d.to_string()),
            l.response_timeout.map(|d| g.rtt + d),
        ),
    ]
}
