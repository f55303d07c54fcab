//! A model's gateway as HAProxy 2.6 config: a `backend` (`balance`,
//! `retries`, `option redispatch`, `cookie NAME insert` with `option
//! persist` and the servers' `cookie VALUE`, timeouts, `option httpchk` and its
//! `http-check expect` rules, servers with their check and `observe`
//! settings) and, when the checks need them, `spread-checks` in a `global`
//! section. [`config`] adds a
//! frontend that sends everything to it.

use super::{Options, Unsupported, ident, time};
use crate::policy::active_probe::{ActiveProbeSpec, HaproxyExpect, Observe, OnError};
use crate::policy::{PolicySpec, ProbeKind};
use crate::spec::{Balancer, GatewayFlavor, Model, Redispatch};
use std::fmt::Write;

/// The `global` (if needed) and `backend` sections.
pub fn write(model: &Model) -> Result<String, Unsupported> {
    write_with(model, &Options::of(model))
}

fn t(d: crate::engine::SimDuration) -> Result<String, Unsupported> {
    time(d, Some("us"))
}

/// [`write`] with other addresses.
pub fn write_with(model: &Model, opts: &Options) -> Result<String, Unsupported> {
    let g = &model.gateway;
    if g.flavor != GatewayFlavor::Haproxy {
        return Err(Unsupported(
            "the model's gateway is nginx: give it `gateway.flavor: haproxy` (HAProxy's retries) \
             or export it with --to nginx"
                .into(),
        ));
    }
    if g.healthy_panic_threshold.is_some_and(|p| p > 0.0) {
        return Err(Unsupported(
            "gateway.healthy_panic_threshold is Envoy's; HAProxy has no panic mode".into(),
        ));
    }
    let mut check = None;
    for p in &model.policies {
        match p {
            PolicySpec::None => {}
            PolicySpec::ActiveProbe(ActiveProbeSpec::Haproxy(h)) if check.is_none() => {
                check = Some(h.clone())
            }
            other => {
                return Err(Unsupported(format!(
                    "the policy `{}` has no HAProxy equivalent (HAProxy has `check` with \
                     `observe`)",
                    other.label()
                )));
            }
        }
    }
    let h = g.haproxy();
    if let Some(c) = &check
        && c.timeout_connect.is_some()
        && c.timeout_connect != h.timeout_connect
    {
        return Err(Unsupported(
            "the checks' timeout_connect differs from gateway.haproxy.timeout_connect: HAProxy \
             has one `timeout connect` per backend"
                .into(),
        ));
    }
    let name = ident(&model.name);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# hcsim model \"{}\": the gateway as HAProxy 2.6",
        model.name
    );
    if let Some(c) = &check
        && (c.spread_checks > 0 || c.max_spread_checks.is_some())
    {
        s.push_str("global\n");
        if c.spread_checks > 0 {
            let _ = writeln!(s, "    spread-checks {}", c.spread_checks);
        }
        if let Some(m) = c.max_spread_checks {
            let _ = writeln!(s, "    max-spread-checks {}", t(m)?);
        }
        s.push('\n');
    }
    let _ = writeln!(s, "backend {name}\n    mode http");
    let balance = match &g.balancer {
        Balancer::Source(src) => {
            // `hash-type consistent` alone implies `avalanche` (cfgparse-listen.c).
            let hash_type = match (src.consistent, src.avalanche) {
                (false, false) => "map-based",
                (false, true) => "map-based sdbm avalanche",
                (true, true) => "consistent",
                (true, false) => "consistent sdbm",
            };
            let _ = writeln!(s, "    hash-type {hash_type}");
            "source"
        }
        Balancer::IpHash | Balancer::Hash(_) => {
            return Err(Unsupported(
                "nginx's hash balancers are not HAProxy's (`balance source` and `hash-type` \
                 place servers otherwise)"
                    .into(),
            ));
        }
        Balancer::RoundRobin => "roundrobin",
        Balancer::LeastConn => "leastconn",
        Balancer::RandomTwo => "random(2)",
    };
    let _ = writeln!(s, "    balance {balance}\n    retries {}", h.retries);
    match h.redispatch {
        Redispatch::Flag(false) | Redispatch::Interval(0) => {}
        Redispatch::Flag(true) => s.push_str("    option redispatch\n"),
        Redispatch::Interval(n) => {
            let _ = writeln!(s, "    option redispatch {n}");
        }
    }
    let timeouts = [
        ("connect", h.timeout_connect),
        ("server", h.timeout_server),
        ("queue", h.timeout_queue),
    ];
    for (which, d) in timeouts.iter().filter_map(|(w, d)| Some((w, (*d)?))) {
        let _ = writeln!(s, "    timeout {which} {}", t(d)?);
    }
    cookie_lines(&h, &mut s);
    s.push_str(&super::pool::haproxy_backend(model)?);
    let pool_params = super::pool::haproxy_server(model)?;
    if let Some(c) = &check {
        if let Some(d) = c.timeout_check {
            let _ = writeln!(s, "    timeout check {}", t(d)?);
        }
        if c.probe == ProbeKind::Http {
            s.push_str("    option httpchk\n");
            for e in &c.expect {
                let _ = writeln!(s, "    http-check expect {}", expect_rule(e)?);
            }
        }
    }
    for ((n, addr), sname) in model
        .declared_nodes()
        .iter()
        .zip(&opts.addresses)
        .zip(server_names(model))
    {
        let _ = write!(s, "    server {sname} {addr}");
        if let Some(c) = &check {
            check_params(c, &mut s)?;
            node_check_params(n, &mut s);
        }
        weight_param(n, &mut s)?;
        for (kw, v) in [("maxconn", n.max_conns), ("maxqueue", n.max_queue)] {
            if v > 0 {
                let _ = write!(s, " {kw} {v}");
            }
        }
        if let Some(ss) = &model.gateway.slow_start {
            let _ = write!(s, " slowstart {}", t(ss.window)?);
        }
        if n.backup {
            s.push_str(" backup");
        }
        if n.down {
            s.push_str(" disabled");
        }
        if let Some(v) = h.cookie.as_ref().and_then(|c| c.value_of(&n.name)) {
            let _ = write!(s, " cookie {v}");
        }
        s.push_str(&pool_params);
        s.push('\n');
    }
    Ok(s)
}

/// `cookie NAME insert indirect nocache` and `option persist`.
fn cookie_lines(h: &crate::spec::HaproxySpec, s: &mut String) {
    if let Some(c) = &h.cookie {
        let _ = writeln!(s, "    cookie {} insert indirect nocache", c.name);
        if c.persist {
            s.push_str("    option persist\n");
        }
    }
}

/// A server's `weight` (HAProxy's go up to 256).
fn weight_param(n: &crate::spec::NodeSpec, s: &mut String) -> Result<(), Unsupported> {
    if n.weight != 1 {
        if n.weight > 256 {
            return Err(Unsupported(format!(
                "node {}'s weight {} is above HAProxy's 256",
                n.name, n.weight
            )));
        }
        let _ = write!(s, " weight {}", n.weight);
    }
    Ok(())
}

/// A server line's check parameters: `check inter … rise … fall …` and
/// `observe … error-limit … on-error …`.
fn check_params(
    c: &crate::policy::active_probe::HaproxyCheckParams,
    s: &mut String,
) -> Result<(), Unsupported> {
    let _ = write!(s, " check inter {}", t(c.inter)?);
    if let Some(f) = c.fastinter {
        let _ = write!(s, " fastinter {}", t(f)?);
    }
    if let Some(d) = c.downinter {
        let _ = write!(s, " downinter {}", t(d)?);
    }
    let _ = write!(s, " rise {} fall {}", c.rise, c.fall);
    if let Some(o) = c.observe {
        let o = match o {
            Observe::Layer4 => "layer4",
            Observe::Layer7 => "layer7",
        };
        let on_error = match c.on_error {
            OnError::Fastinter => "fastinter",
            OnError::FailCheck => "fail-check",
            OnError::SuddenDeath => "sudden-death",
            OnError::MarkDown => "mark-down",
        };
        let _ = write!(
            s,
            " observe {o} error-limit {} on-error {on_error}",
            c.error_limit
        );
    }
    Ok(())
}

/// An `expect` rule as `http-check expect`'s arguments.
fn expect_rule(e: &HaproxyExpect) -> Result<String, Unsupported> {
    let not = if e.negate { "! " } else { "" };
    match (&e.status, &e.rstatus) {
        (Some(list), _) => Ok(format!("{not}status {}", list.join(","))),
        (None, Some(re)) => {
            // HAProxy reads a single-quoted word as it is.
            if re.contains('\'') {
                return Err(Unsupported(format!(
                    "the rstatus regex \"{re}\" has a `'`, which an HAProxy word cannot quote as is"
                )));
            }
            let plain = !re.is_empty()
                && !re
                    .chars()
                    .any(|c| c.is_whitespace() || matches!(c, '#' | '\\' | '"'));
            Ok(if plain {
                format!("{not}rstatus {re}")
            } else {
                format!("{not}rstatus '{re}'")
            })
        }
        (None, None) => Err(Unsupported(
            "an expect rule without status or rstatus".into(),
        )),
    }
}

/// [`write_with`]'s sections and a frontend on `opts.listen` using the backend.
pub fn config(model: &Model, opts: &Options) -> Result<String, Unsupported> {
    let mut s = write_with(model, opts)?;
    let _ = write!(
        s,
        "\nfrontend hcsim_in\n    mode http\n    bind {}\n    timeout client 60s\n    default_backend {}\n",
        opts.listen,
        ident(&model.name)
    );
    Ok(s)
}

/// The `server` name of each node: its name as an identifier, made unique
/// with its index when two would clash (what HAProxy's logs call it).
pub fn server_names(model: &Model) -> Vec<String> {
    let mut names = std::collections::BTreeSet::new();
    model
        .declared_nodes()
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut sname = ident(&n.name);
            if !names.insert(sname.clone()) {
                sname = format!("{sname}-{i}");
            }
            sname
        })
        .collect()
}

/// A checked server's own check settings: `addr`, `port`, `on-marked-down`,
/// `on-marked-up`.
fn node_check_params(n: &crate::spec::NodeSpec, s: &mut String) {
    if let Some(addr) = n.check_addr {
        let _ = write!(s, " addr {addr}");
    }
    if let Some(port) = n.check_port {
        let _ = write!(s, " port {port}");
    }
    if n.on_marked_down.is_some() {
        s.push_str(" on-marked-down shutdown-sessions");
    }
    if n.on_marked_up.is_some() {
        s.push_str(" on-marked-up shutdown-backup-sessions");
    }
}
