//! A model's gateway as a Caddyfile for Caddy 2.11: a site block with one
//! `reverse_proxy` (its upstreams, `lb_policy`, `lb_retries`,
//! `lb_try_duration`, `lb_try_interval`, the passive and active checks and
//! the transport's timeouts). [`config`] adds the global options that keep
//! Caddy to HTTP on the listen address (no admin endpoint, no automatic
//! HTTPS). Active checks need a health URI: `/health` (the model's probe
//! asks the node itself).

use super::{Options, Unsupported, time};
use crate::engine::SimDuration;
use crate::policy::PolicySpec;
use crate::policy::caddy::CaddyParams;
use crate::spec::gateway_flavors::CaddyLbPolicy;
use crate::spec::{GatewayFlavor, Model};
use std::fmt::Write;

/// The health URI the exported active checks ask for.
pub const HEALTH_URI: &str = "/health";

fn t(d: SimDuration) -> Result<String, Unsupported> {
    time(d, Some("us"))
}

/// The model's Caddy policy (or none).
fn policy(model: &Model) -> Result<Option<&CaddyParams>, Unsupported> {
    let mut found = None;
    for p in &model.policies {
        match p {
            PolicySpec::None => {}
            PolicySpec::Caddy(c) if found.is_none() => found = Some(c),
            other => {
                return Err(Unsupported(format!(
                    "the policy `{}` has no Caddy equivalent (Caddy has `kind: caddy`)",
                    other.label()
                )));
            }
        }
    }
    Ok(found)
}

/// A status of Caddy's JSON (`5` for 5xx) as the Caddyfile writes it.
fn status(s: u16) -> String {
    if s < 100 {
        format!("{s}xx")
    } else {
        s.to_string()
    }
}

/// The site block.
pub fn write(model: &Model) -> Result<String, Unsupported> {
    write_with(model, &Options::of(model))
}

/// [`write`] with other addresses.
pub fn write_with(model: &Model, opts: &Options) -> Result<String, Unsupported> {
    super::no_check_port(model, "Caddy")?;
    let g = &model.gateway;
    if g.flavor != GatewayFlavor::Caddy {
        return Err(Unsupported(
            "the model's gateway is not Caddy: give it `gateway.flavor: caddy` (Caddy's request path)".into(),
        ));
    }
    let c = g.caddy();
    let p = policy(model)?;
    let mut caps = model.declared_nodes().iter().map(|n| n.max_conns);
    let cap = caps.next().unwrap_or(0);
    if model.declared_nodes().iter().any(|n| n.max_conns != cap) {
        return Err(Unsupported(
            "nodes with different max_conns: a Caddyfile has one unhealthy_request_count for all upstreams".into(),
        ));
    }
    if let Some(n) = model.declared_nodes().iter().find(|n| n.down) {
        return Err(Unsupported(format!(
            "node {} is `down`: Caddy has no such setting",
            n.name
        )));
    }
    let port = opts.listen.rsplit_once(':').map_or("8080", |(_, p)| p);
    let host = opts.listen.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# hcsim model \"{}\": the gateway as a Caddyfile (Caddy 2.11)",
        model.name
    );
    let _ = writeln!(s, "http://:{port} {{\n\tbind {host}");
    let _ = writeln!(s, "\treverse_proxy {} {{", opts.addresses.join(" "));
    let lb = match c.lb_policy {
        CaddyLbPolicy::Random => "random".to_string(),
        CaddyLbPolicy::RoundRobin => "round_robin".to_string(),
        CaddyLbPolicy::First => "first".to_string(),
        CaddyLbPolicy::WeightedRoundRobin => {
            let w: Vec<String> = model
                .declared_nodes()
                .iter()
                .map(|n| n.weight.to_string())
                .collect();
            format!("weighted_round_robin {}", w.join(" "))
        }
    };
    let _ = writeln!(s, "\t\tlb_policy {lb}");
    if c.lb_retries > 0 {
        let _ = writeln!(s, "\t\tlb_retries {}", c.lb_retries);
    }
    if !c.lb_try_duration.is_zero() {
        let _ = writeln!(s, "\t\tlb_try_duration {}", t(c.lb_try_duration)?);
    }
    if let Some(i) = c.lb_try_interval.filter(|i| !i.is_zero()) {
        let _ = writeln!(s, "\t\tlb_try_interval {}", t(i)?);
    }
    let mut request_cap = cap;
    if let Some(p) = p {
        if let Some(x) = &p.passive {
            if !x.fail_duration.is_zero() {
                let _ = writeln!(s, "\t\tfail_duration {}", t(x.fail_duration)?);
            }
            let _ = writeln!(s, "\t\tmax_fails {}", x.max_fails);
            if !x.unhealthy_status.is_empty() {
                let list: Vec<String> = x.unhealthy_status.iter().map(|&v| status(v)).collect();
                let _ = writeln!(s, "\t\tunhealthy_status {}", list.join(" "));
            }
            if let Some(l) = x.unhealthy_latency {
                let _ = writeln!(s, "\t\tunhealthy_latency {}", t(l)?);
            }
            if x.unhealthy_request_count > 0 {
                if cap > 0 && cap != x.unhealthy_request_count {
                    return Err(Unsupported(
                        "nodes' max_conns and unhealthy_request_count differ: a Caddyfile has one"
                            .into(),
                    ));
                }
                request_cap = x.unhealthy_request_count;
            }
        }
        if let Some(a) = &p.active {
            let _ = writeln!(s, "\t\thealth_uri {HEALTH_URI}");
            let _ = writeln!(s, "\t\thealth_interval {}", t(a.interval)?);
            let _ = writeln!(s, "\t\thealth_timeout {}", t(a.timeout)?);
            let _ = writeln!(
                s,
                "\t\thealth_passes {}\n\t\thealth_fails {}",
                a.passes, a.fails
            );
            if let Some(e) = a.expect_status {
                let _ = writeln!(s, "\t\thealth_status {}", status(e));
            }
        }
    }
    if request_cap > 0 {
        let _ = writeln!(s, "\t\tunhealthy_request_count {request_cap}");
    }
    let _ = writeln!(
        s,
        "\t\ttransport http {{\n\t\t\tdial_timeout {}",
        t(c.dial_timeout)?
    );
    if let Some(r) = c.response_header_timeout {
        let _ = writeln!(s, "\t\t\tresponse_header_timeout {}", t(r)?);
    }
    s.push_str("\t\t}\n\t}\n}\n");
    Ok(s)
}

/// A whole Caddyfile: global options, then [`write_with`]'s site.
pub fn config(model: &Model, opts: &Options) -> Result<String, Unsupported> {
    let site = write_with(model, opts)?;
    Ok(format!(
        "{{\n\tadmin off\n\tauto_https off\n\tpersist_config off\n}}\n\n{site}"
    ))
}
