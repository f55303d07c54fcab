//! The Caddy and Traefik gateways' settings (`gateway_flavors.rs`) checked
//! against the rest of the model, their warnings, and the transport settings
//! the health checks share with the proxy (bound into the policies).

use super::gateway_flavors::*;
use super::model_spec::{Balancer, GatewayFlavor, GatewaySpec, ModelSpec, NextUpstream};
use crate::policy::PolicySpec;

type Invalid = (String, String);

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Invalid {
    (field.into(), reason.into())
}

/// nginx settings that the Caddy and Traefik gateways do not read: set to
/// anything but their default, they are refused, naming what to use.
fn nginx_only(g: &GatewaySpec, flavor: &str, hint: &str) -> Result<(), Invalid> {
    let d = GatewaySpec::default();
    let changed = [
        (
            "proxy_connect_timeout",
            g.proxy_connect_timeout != d.proxy_connect_timeout,
        ),
        (
            "proxy_read_timeout",
            g.proxy_read_timeout != d.proxy_read_timeout,
        ),
        (
            "proxy_next_upstream",
            g.proxy_next_upstream != vec![NextUpstream::Error, NextUpstream::Timeout],
        ),
        (
            "proxy_next_upstream_tries",
            g.proxy_next_upstream_tries != 0,
        ),
        (
            "proxy_next_upstream_timeout",
            !g.proxy_next_upstream_timeout.is_zero(),
        ),
        ("zone", g.zone),
        ("balancer", g.balancer != Balancer::RoundRobin),
        (
            "healthy_panic_threshold",
            g.healthy_panic_threshold.is_some_and(|p| p > 0.0),
        ),
    ];
    if let Some((f, _)) = changed.iter().find(|(_, c)| *c) {
        return Err(invalid(
            format!("gateway.{f}"),
            format!("is nginx's; the {flavor} gateway does not read it ({hint})"),
        ));
    }
    if g.workers > 1 {
        return Err(invalid(
            "gateway.workers",
            format!("{flavor} is one process with one state per upstream: leave `workers` at 1"),
        ));
    }
    Ok(())
}

/// The Caddy and Traefik sections against the flavour and the nodes.
pub fn check(spec: &ModelSpec) -> Result<(), Invalid> {
    let g = &spec.gateway;
    if g.caddy.is_some() && g.flavor != GatewayFlavor::Caddy {
        return Err(invalid(
            "gateway.caddy",
            "Caddy settings need `\"flavor\": \"caddy\"`",
        ));
    }
    if g.traefik.is_some() && g.flavor != GatewayFlavor::Traefik {
        return Err(invalid(
            "gateway.traefik",
            "Traefik settings need `\"flavor\": \"traefik\"`",
        ));
    }
    let flavor = match g.flavor {
        GatewayFlavor::Caddy => "Caddy",
        GatewayFlavor::Traefik => "Traefik",
        _ => return Ok(()),
    };
    if g.haproxy.is_some() {
        return Err(invalid(
            "gateway.haproxy",
            "HAProxy settings need `\"flavor\": \"haproxy\"`",
        ));
    }
    if g.flavor == GatewayFlavor::Caddy {
        nginx_only(
            g,
            flavor,
            "use gateway.caddy: lb_retries, lb_try_duration, dial_timeout, response_header_timeout, lb_policy",
        )?;
        let c = g.caddy.clone().unwrap_or_default();
        if c.dial_timeout.is_zero() {
            return Err(invalid("gateway.caddy.dial_timeout", "must be positive"));
        }
        if c.response_header_timeout.is_some_and(|d| d.is_zero()) {
            return Err(invalid(
                "gateway.caddy.response_header_timeout",
                "must be positive (omit it for none)",
            ));
        }
    } else {
        nginx_only(
            g,
            flavor,
            "use gateway.traefik: retry, circuitBreaker, forwardingTimeouts",
        )?;
        let t = g.traefik.clone().unwrap_or_default();
        if let Some(r) = &t.retry {
            if r.attempts == 0 {
                return Err(invalid(
                    "gateway.traefik.retry.attempts",
                    "must be at least 1 (Traefik: \"incorrect (or empty) value for attempt\")",
                ));
            }
            r.ranges()
                .map_err(|(i, m)| invalid(format!("gateway.traefik.retry.status[{i}]"), m))?;
        }
        if let Some(b) = &t.circuit_breaker {
            b.validate()
                .map_err(|(f, m)| invalid(format!("gateway.traefik.circuitBreaker.{f}"), m))?;
        }
        if t.forwarding_timeouts.dial_timeout.is_zero() {
            return Err(invalid(
                "gateway.traefik.forwardingTimeouts.dialTimeout",
                "must be positive",
            ));
        }
        if t.forwarding_timeouts
            .response_header_timeout
            .is_some_and(|d| d.is_zero())
        {
            return Err(invalid(
                "gateway.traefik.forwardingTimeouts.responseHeaderTimeout",
                "must be positive (omit it for none)",
            ));
        }
    }
    for (i, n) in spec.nodes.iter().enumerate() {
        if n.backup {
            return Err(invalid(
                format!("nodes[{i}].backup"),
                format!("{flavor} has no backup servers"),
            ));
        }
        if n.max_conns > 0 && g.flavor == GatewayFlavor::Traefik {
            return Err(invalid(
                format!("nodes[{i}].max_conns"),
                "Traefik's load balancer has no per-server connection limit",
            ));
        }
    }
    Ok(())
}

/// Legal but suspicious settings of the flavours.
pub fn warnings(spec: &ModelSpec) -> Vec<(String, String)> {
    let mut w = vec![];
    if spec.gateway.flavor == GatewayFlavor::Caddy
        && spec.gateway.caddy().lb_policy != CaddyLbPolicy::WeightedRoundRobin
        && let Some(i) = spec.nodes.iter().position(|n| n.weight != 1)
    {
        w.push((
            format!("nodes[{i}].weight"),
            "Caddy ignores weights unless `gateway.caddy.lb_policy` is weighted_round_robin".into(),
        ));
    }
    w
}

/// Gives the policies the transport settings they share with the proxy:
/// Caddy's and Traefik's active checks dial through it.
pub fn bind(g: &GatewaySpec, policies: &mut [PolicySpec]) {
    for p in policies {
        match p {
            PolicySpec::Caddy(c) if g.flavor == GatewayFlavor::Caddy => {
                if let Some(a) = &mut c.active {
                    a.dial_timeout = Some(g.caddy().dial_timeout);
                }
            }
            PolicySpec::Traefik(t) if g.flavor == GatewayFlavor::Traefik => {
                if let Some(a) = &mut t.health_check {
                    a.dial_timeout = Some(g.traefik().forwarding_timeouts.dial_timeout);
                }
            }
            _ => {}
        }
    }
}
