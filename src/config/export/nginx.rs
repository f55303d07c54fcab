//! A model's gateway as nginx config: an `upstream` (balancer, `zone`,
//! servers with `weight`, `max_fails`, `fail_timeout`, `backup`, `down`,
//! `max_conns`; tengine `check` for its probe) and a `server` whose
//! `location /` proxies to it with the model's `proxy_*` settings.
//! [`config`] wraps it in a whole `nginx.conf` (`worker_processes`, `events`).

use super::{Options, Unsupported, ident, time};
use crate::policy::PolicySpec;
use crate::policy::active_probe::{ActiveProbeSpec, StatusClass};
use crate::spec::{Balancer, Model};
use std::fmt::Write;

/// The http-context snippet: `upstream` and `server` blocks.
pub fn write(model: &Model) -> Result<String, Unsupported> {
    write_with(model, &Options::of(model))
}

/// [`write`] with other addresses.
pub fn write_with(model: &Model, opts: &Options) -> Result<String, Unsupported> {
    super::no_check_port(model, "nginx")?;
    let g = &model.gateway;
    super::nginx_like(model)?;
    if g.healthy_panic_threshold.is_some_and(|p| p > 0.0) {
        return Err(Unsupported(
            "gateway.healthy_panic_threshold is Envoy's; nginx has no panic mode".into(),
        ));
    }
    if g.slow_start.is_some() {
        return Err(Unsupported(
            "gateway.slow_start on the nginx pipeline is Envoy's slow_start_config; open-source \
             nginx has no slow start (export it with --to envoy or --to istio)"
                .into(),
        ));
    }
    let mut passive = None;
    let mut check = None;
    for p in &model.policies {
        match p {
            PolicySpec::MaxFails(m) if passive.is_none() => passive = Some(m.clone()),
            PolicySpec::None => {}
            PolicySpec::ActiveProbe(ActiveProbeSpec::Tengine(t)) if check.is_none() => {
                check = Some(t.clone())
            }
            other => {
                return Err(Unsupported(format!(
                    "the policy `{}` has no nginx equivalent (nginx has max_fails/fail_timeout, \
                     and tengine `check`)",
                    other.label()
                )));
            }
        }
    }
    // No passive policy: accounting off.
    let (max_fails, fail_timeout) = match &passive {
        Some(m) => (m.max_fails, m.fail_timeout),
        None => (0, crate::engine::SimDuration::from_secs(10)),
    };
    if fail_timeout.whole_secs().is_none() {
        return Err(Unsupported(format!(
            "fail_timeout {fail_timeout} is not whole seconds, which nginx requires"
        )));
    }
    let name = ident(&model.name);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# hcsim model \"{}\": the gateway as nginx (http context)",
        model.name
    );
    let _ = writeln!(s, "upstream {name} {{");
    balancer_lines(model, opts, &mut s);
    if g.zone {
        let _ = writeln!(s, "    zone {name} 64k;");
    }
    for (n, addr) in model.declared_nodes().iter().zip(&opts.addresses) {
        let _ = write!(s, "    server {addr}");
        if n.weight != 1 {
            let _ = write!(s, " weight={}", n.weight);
        }
        let _ = write!(
            s,
            " max_fails={max_fails} fail_timeout={}",
            time(fail_timeout, None)?
        );
        if n.max_conns > 0 {
            let _ = write!(s, " max_conns={}", n.max_conns);
        }
        if n.backup {
            s.push_str(" backup");
        }
        if n.down {
            s.push_str(" down");
        }
        if &n.name != addr {
            let _ = writeln!(s, ";  # {}", n.name);
        } else {
            s.push_str(";\n");
        }
    }
    if let Some(t) = &check {
        let ms = |d: crate::engine::SimDuration| d.as_micros() / 1000;
        let _ = writeln!(
            s,
            "    check interval={} rise={} fall={} timeout={} default_down={} type={};",
            ms(t.interval),
            t.rise,
            t.fall,
            ms(t.timeout),
            t.default_down,
            if t.probe == crate::policy::ProbeKind::Http {
                "http"
            } else {
                "tcp"
            }
        );
        let classes: Vec<&str> = t
            .expect_alive
            .iter()
            .map(|c| match c {
                StatusClass::Http2xx => "http_2xx",
                StatusClass::Http3xx => "http_3xx",
                StatusClass::Http4xx => "http_4xx",
                StatusClass::Http5xx => "http_5xx",
            })
            .collect();
        let _ = writeln!(s, "    check_http_expect_alive {};", classes.join(" "));
    }
    s.push_str(&super::pool::nginx_upstream(model)?);
    s.push_str("}\n\n");
    let words: Vec<String> = g
        .proxy_next_upstream
        .iter()
        .map(|w| {
            serde_json::to_value(w)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        })
        .collect();
    let _ = writeln!(s, "server {{\n    listen {};", opts.listen);
    let _ = writeln!(s, "    location / {{\n        proxy_pass http://{name};");
    let _ = writeln!(s, "        proxy_next_upstream {};", words.join(" "));
    let _ = writeln!(
        s,
        "        proxy_next_upstream_tries {};",
        g.proxy_next_upstream_tries
    );
    let _ = writeln!(
        s,
        "        proxy_next_upstream_timeout {};",
        time(g.proxy_next_upstream_timeout, None)?
    );
    let _ = writeln!(
        s,
        "        proxy_connect_timeout {};",
        time(g.proxy_connect_timeout, None)?
    );
    let _ = writeln!(
        s,
        "        proxy_read_timeout {};",
        time(g.proxy_read_timeout, None)?
    );
    s.push_str(&super::pool::nginx_location(model)?);
    s.push_str("    }\n}\n");
    Ok(s)
}

/// The upstream's balancer directive (`least_conn`, `random two`,
/// `ip_hash`, `hash KEY [consistent]`; none for round robin).
fn balancer_lines(model: &Model, opts: &Options, s: &mut String) {
    match &model.gateway.balancer {
        Balancer::RoundRobin => {}
        Balancer::LeastConn => s.push_str("    least_conn;\n"),
        Balancer::RandomTwo => s.push_str("    random two least_conn;\n"),
        Balancer::IpHash => s.push_str("    ip_hash;\n"),
        // HAProxy's: `nginx_like` refuses the model before this.
        Balancer::Source(_) => unreachable!("balance source is exported to HAProxy only"),
        Balancer::Hash(h) => {
            let renamed: Vec<&str> = model
                .declared_nodes()
                .iter()
                .zip(&opts.addresses)
                .filter(|(n, addr)| n.name != **addr)
                .map(|(n, _)| n.name.as_str())
                .collect();
            if h.consistent && !renamed.is_empty() {
                let _ = writeln!(
                    s,
                    "    # The points of `consistent` follow the server addresses; the model's \
                     follow the node names, which differ here ({}).",
                    renamed.join(", ")
                );
            }
            let key = quote(&h.key);
            let consistent = if h.consistent { " consistent" } else { "" };
            let _ = writeln!(s, "    hash {key}{consistent};");
        }
    }
}

/// A whole `nginx.conf` around [`write_with`]'s snippet: `worker_processes`,
/// `events`, `http`, with the pid file and logs relative to nginx's prefix
/// (`nginx -p DIR`).
pub fn config(model: &Model, opts: &Options) -> Result<String, Unsupported> {
    let snippet = write_with(model, opts)?;
    let mut s = String::new();
    let _ = writeln!(s, "worker_processes {};", model.gateway.workers);
    s.push_str("pid nginx.pid;\nerror_log stderr;\nevents {}\nhttp {\n    access_log off;\n");
    for l in snippet.lines() {
        if l.is_empty() {
            s.push('\n');
        } else {
            let _ = writeln!(s, "    {l}");
        }
    }
    s.push_str("}\n");
    Ok(s)
}

/// `text` as one nginx argument: as is if it is a plain word, else in
/// double quotes with `"` and `\` escaped.
fn quote(text: &str) -> String {
    let plain = !text.is_empty()
        && !text
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, ';' | '{' | '}' | '"' | '\'' | '#' | '\\'));
    if plain {
        return text.to_string();
    }
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    format!("\"{escaped}\"")
}
