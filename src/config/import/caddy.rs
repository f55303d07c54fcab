//! Caddy 2.11: a `reverse_proxy` handler, from a Caddyfile (`reverse_proxy
//! [matcher] [upstreams…] { … }` in a site block, as
//! `modules/caddyhttp/reverseproxy/caddyfile.go` reads it) or from Caddy's
//! JSON config (`apps.http.servers.*.routes[].handle[]`, `"handler":
//! "reverse_proxy"`, subroutes included). The target is the handler: its
//! site (or server) and, when it has several, its number
//! (`:8080#2`).
//!
//! Read: the upstreams (`to`), `lb_policy` (random, round_robin, first),
//! `lb_retries`, `lb_try_duration`, `lb_try_interval`, the passive checks
//! (`fail_duration`, `max_fails`, `unhealthy_status`, `unhealthy_latency`,
//! `unhealthy_request_count`), the active ones (`health_uri`/`health_port`
//! enable them; `health_interval`, `health_timeout`, `health_passes`,
//! `health_fails`, `health_status`) and the transport's `dial_timeout` and
//! `response_header_timeout`. A subdirective Caddy does not know is an
//! error (`unrecognized subdirective`), as in Caddy.

use super::caddyfile::{self, Directive, Token};
use super::yaml::Lines;
use super::{Draft, Format, Loc, Options, choose};
use crate::engine::SimDuration;
use crate::error::Error;
use serde_json::{Map, Value, json};
use std::path::Path;

/// Every subdirective of `reverse_proxy` in Caddy 2.11 (caddyfile.go).
const KNOWN: &[&str] = &[
    "to",
    "dynamic",
    "lb_policy",
    "lb_retries",
    "lb_try_duration",
    "lb_try_interval",
    "lb_retry_match",
    "health_uri",
    "health_path",
    "health_upstream",
    "health_port",
    "health_headers",
    "health_method",
    "health_request_body",
    "health_interval",
    "health_timeout",
    "health_status",
    "health_body",
    "health_follow_redirects",
    "health_passes",
    "health_fails",
    "max_fails",
    "fail_duration",
    "unhealthy_request_count",
    "unhealthy_status",
    "unhealthy_latency",
    "flush_interval",
    "request_buffers",
    "response_buffers",
    "stream_buffer_size",
    "stream_timeout",
    "stream_close_delay",
    "trusted_proxies",
    "header_up",
    "header_down",
    "method",
    "rewrite",
    "transport",
    "handle_response",
    "replace_status",
    "verbose_logs",
];

/// What settings the reader collects from either form, with their lines.
#[derive(Default)]
struct Handler {
    upstreams: Vec<(String, Loc)>,
    caddy: Map<String, Value>,
    passive: Map<String, Value>,
    active: Map<String, Value>,
    /// Active checks are enabled (`health_uri`, `health_path` or `health_port`).
    active_on: Option<Loc>,
    active_at: Option<Loc>,
    passive_at: Option<Loc>,
    /// `weighted_round_robin`'s weights, one per upstream in order.
    weights: Option<(Vec<u64>, Loc)>,
}

/// `caddy.ParseDuration`: Go's durations, and days.
fn duration(s: &str, at: &Loc, what: &str) -> Result<SimDuration, Error> {
    let parsed = match s.strip_suffix('d').and_then(|d| d.parse::<f64>().ok()) {
        Some(days) => SimDuration::try_from_secs_f64(days * 86_400.0),
        None => crate::engine::time::parse_duration(s),
    };
    parsed.map_err(|e| at.error(format!("bad {what} value '{s}': {e}")))
}

fn one_arg<'a>(d: &'a Directive, path: &Path) -> Result<&'a Token, Error> {
    match d.args() {
        [a] => Ok(a),
        _ => Err(Loc::new(path, d.line()).error(format!(
            "{}: wrong argument count or unexpected line ending after '{}'",
            d.name(),
            d.args().first().map_or(d.name(), |a| a.text.as_str())
        ))),
    }
}

fn number(t: &Token, at: &Loc, what: &str) -> Result<u64, Error> {
    t.text
        .parse()
        .map_err(|_| at.error(format!("bad {what} number '{}'", t.text)))
}

/// `health_status 2xx` / `unhealthy_status 5xx 503`: a class is its digit.
fn status(t: &str, at: &Loc) -> Result<u64, Error> {
    let s = if t.len() == 3 && t.ends_with("xx") {
        &t[..1]
    } else {
        t
    };
    s.parse()
        .map_err(|_| at.error(format!("bad status value '{t}'")))
}

/// An upstream address as `parseUpstreamDialAddress` reads it: scheme,
/// host, port (80 for http without one); placeholders are not modelled.
fn upstream(text: &str, at: &Loc) -> Result<String, Error> {
    let (scheme, rest) = match text.split_once("://") {
        Some((s, r)) => (s, r),
        None => ("", text),
    };
    if !matches!(scheme, "" | "http" | "h2c" | "https") {
        return Err(at.error(format!("unsupported URL scheme {scheme}://")));
    }
    let hostport = rest.split('/').next().unwrap_or(rest);
    if hostport.contains('{') {
        return Err(at.error(format!(
            "upstream {text}: placeholders are not modelled (a dynamic upstream)"
        )));
    }
    let default_port = if scheme == "https" { "443" } else { "80" };
    let split = if hostport.starts_with('[') {
        hostport.split_once("]:").map(|(h, p)| (format!("{h}]"), p))
    } else {
        hostport.rsplit_once(':').map(|(h, p)| (h.to_string(), p))
    };
    let (host, port) = match split {
        Some((h, p)) => (h, p.to_string()),
        None => (hostport.to_string(), default_port.to_string()),
    };
    if port.contains('-') {
        return Err(at.error(format!("upstream {text}: port ranges are not modelled")));
    }
    port.parse::<u16>()
        .map_err(|_| at.error(format!("upstream {text}: invalid port {port}")))?;
    let host = if host.is_empty() {
        "localhost".into()
    } else {
        host
    };
    Ok(format!("{host}:{port}"))
}

/// The sites (and their handlers) of a Caddyfile.
fn caddyfile_handlers(path: &Path, text: &str) -> Result<Vec<(String, Loc, Directive)>, Error> {
    let top = caddyfile::parse(path, text)?;
    let mut out = vec![];
    // One site may be written without braces: the first line is its address.
    let sites: Vec<(String, usize, Vec<Directive>)> =
        if top.iter().any(|d| d.block.is_some() && !d.words.is_empty()) {
            top.into_iter()
                .filter(|d| !d.words.is_empty())
                .map(|d| {
                    let label: Vec<&str> = d
                        .words
                        .iter()
                        .map(|t| t.text.trim_end_matches(','))
                        .collect();
                    (label.join(","), d.line(), d.block.unwrap_or_default())
                })
                .collect()
        } else {
            let mut it = top.into_iter().filter(|d| !d.words.is_empty());
            match it.next() {
                Some(first) => {
                    let label: Vec<&str> = first.words.iter().map(|t| t.text.as_str()).collect();
                    vec![(label.join(","), first.line(), it.collect())]
                }
                None => vec![],
            }
        };
    fn walk(ds: &[Directive], found: &mut Vec<Directive>) {
        for d in ds {
            if d.name() == "reverse_proxy" {
                found.push(d.clone());
            } else if let Some(b) = &d.block {
                walk(b, found);
            }
        }
    }
    for (label, line, body) in sites {
        let mut found = vec![];
        walk(&body, &mut found);
        let many = found.len() > 1;
        for (k, d) in found.into_iter().enumerate() {
            let name = if many {
                format!("{label}#{}", k + 1)
            } else {
                label.clone()
            };
            let _ = line;
            out.push((name, Loc::new(path, d.line()), d));
        }
    }
    Ok(out)
}

fn read_caddyfile_handler(
    path: &Path,
    d: &Directive,
    h: &mut Handler,
    draft: &mut Draft,
) -> Result<(), Error> {
    let at = |line: usize| Loc::new(path, line);
    let mut args = d.args();
    // The matcher token: a path, `*` or a named matcher.
    if let Some(first) = args.first()
        && (first.text.starts_with('/') || first.text == "*" || first.text.starts_with('@'))
    {
        args = &args[1..];
    }
    for a in args {
        h.upstreams
            .push((upstream(&a.text, &at(a.line))?, at(a.line)));
    }
    for s in d.block.as_deref().unwrap_or(&[]) {
        let (name, line) = (s.name(), s.line());
        let here = at(line);
        if name.starts_with('@') {
            continue; // a response matcher for handle_response
        }
        if !KNOWN.contains(&name) {
            let hint = crate::diagnostics::suggest(name, KNOWN.iter().copied())
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            return Err(here.error(format!(
                "unrecognized subdirective {name} in reverse_proxy{hint}"
            )));
        }
        let dur = |key: &str| -> Result<Value, Error> {
            Ok(json!(duration(&one_arg(s, path)?.text, &here, key)?))
        };
        match name {
            "to" => {
                for a in s.args() {
                    h.upstreams.push((upstream(&a.text, &at(a.line))?, at(a.line)));
                }
            }
            "lb_policy" => {
                let p = one_arg_or_more(s, path)?;
                match p.as_str() {
                    "random" | "round_robin" | "first" => {
                        h.caddy.insert("lb_policy".into(), json!(p));
                        draft.origin("gateway.caddy.lb_policy", &here);
                    }
                    "weighted_round_robin" => {
                        let w: Result<Vec<u64>, Error> =
                            s.args()[1..].iter().map(|a| number(a, &here, "weight")).collect();
                        h.weights = Some((w?, here.clone()));
                        h.caddy.insert("lb_policy".into(), json!(p));
                        draft.origin("gateway.caddy.lb_policy", &here);
                    }
                    other => draft.warn(&here, format!("lb_policy {other} is not modelled: the model keeps Caddy's default, random")),
                }
            }
            "lb_retries" => {
                h.caddy.insert("lb_retries".into(), json!(number(one_arg(s, path)?, &here, "lb_retries")?));
                draft.origin("gateway.caddy.lb_retries", &here);
            }
            "lb_try_duration" | "lb_try_interval" => {
                h.caddy.insert(name.into(), dur(name)?);
                draft.origin(&format!("gateway.caddy.{name}"), &here);
            }
            "health_uri" | "health_path" | "health_port" => {
                one_arg(s, path)?;
                h.active_on.get_or_insert(here.clone());
            }
            "health_interval" | "health_timeout" => {
                let key = &name["health_".len()..];
                h.active.insert(key.into(), dur(name)?);
                h.active_at.get_or_insert(here.clone());
                draft.origin(&format!("policy.active.{key}"), &here);
            }
            "health_passes" | "health_fails" => {
                let key = &name["health_".len()..];
                h.active.insert(key.into(), json!(number(one_arg(s, path)?, &here, name)?));
                h.active_at.get_or_insert(here.clone());
                draft.origin(&format!("policy.active.{key}"), &here);
            }
            "health_status" => {
                h.active.insert("expect_status".into(), json!(status(&one_arg(s, path)?.text, &here)?));
                h.active_at.get_or_insert(here.clone());
                draft.origin("policy.active.expect_status", &here);
            }
            "health_follow_redirects" => draft.warn(&here, "health_follow_redirects is not modelled: a check that the node answers with a redirect fails in the model"),
            "health_body" | "health_headers" | "health_method" | "health_request_body" | "health_upstream" => {
                draft.warn(&here, format!("{name} is not modelled: the model checks the node itself and passes on its status"))
            }
            "fail_duration" | "unhealthy_latency" => {
                h.passive.insert(name.into(), dur(name)?);
                h.passive_at.get_or_insert(here.clone());
                draft.origin(&format!("policy.passive.{name}"), &here);
            }
            "max_fails" | "unhealthy_request_count" => {
                h.passive.insert(name.into(), json!(number(one_arg(s, path)?, &here, name)?));
                h.passive_at.get_or_insert(here.clone());
                draft.origin(&format!("policy.passive.{name}"), &here);
            }
            "unhealthy_status" => {
                if s.args().is_empty() {
                    return Err(here.error("unhealthy_status: wrong argument count"));
                }
                let v: Result<Vec<u64>, Error> = s.args().iter().map(|a| status(&a.text, &here)).collect();
                h.passive.insert(name.into(), json!(v?));
                h.passive_at.get_or_insert(here.clone());
                draft.origin("policy.passive.unhealthy_status", &here);
            }
            "transport" => read_transport(path, s, h, draft)?,
            "lb_retry_match" => draft.warn(&here, "lb_retry_match is not modelled: only dial errors (and, for GET, other errors) are retried"),
            "dynamic" => draft.warn(&here, "dynamic upstreams are not modelled: the model has only the upstreams listed"),
            "handle_response" | "replace_status" => draft.warn(&here, format!("{name} is not modelled: the upstream's status reaches the client as it is")),
            "method" => draft.warn(&here, "method is not modelled: the model's clients.method decides which requests are retried (GET only)"),
            _ => {} // headers, buffering, streaming, logging: no effect on health or routing
        }
    }
    Ok(())
}

fn one_arg_or_more(d: &Directive, path: &Path) -> Result<String, Error> {
    d.args().first().map(|t| t.text.clone()).ok_or_else(|| {
        Loc::new(path, d.line()).error(format!("{}: wrong argument count", d.name()))
    })
}

fn read_transport(
    path: &Path,
    s: &Directive,
    h: &mut Handler,
    draft: &mut Draft,
) -> Result<(), Error> {
    let here = Loc::new(path, s.line());
    let kind = one_arg_or_more(s, path)?;
    if kind != "http" {
        draft.warn(
            &here,
            format!("transport {kind} is not modelled: the model proxies over plain HTTP"),
        );
        return Ok(());
    }
    for t in s.block.as_deref().unwrap_or(&[]) {
        let at = Loc::new(path, t.line());
        match t.name() {
            "dial_timeout" | "response_header_timeout" => {
                let v = duration(&one_arg(t, path)?.text, &at, t.name())?;
                h.caddy.insert(t.name().into(), json!(v));
                draft.origin(&format!("gateway.caddy.{}", t.name()), &at);
            }
            n @ ("keepalive"
            | "keepalive_interval"
            | "keepalive_idle_conns"
            | "keepalive_idle_conns_per_host") => draft.warn(
                &at,
                format!("{n} is not modelled: every attempt opens its own connection"),
            ),
            n @ ("read_timeout"
            | "write_timeout"
            | "max_conns_per_host"
            | "dial_fallback_delay"
            | "expect_continue_timeout") => draft.warn(&at, format!("{n} is not modelled")),
            _ => {}
        }
    }
    Ok(())
}

/// Caddy's JSON: every `reverse_proxy` handler, with its server's name.
fn json_handlers(path: &Path, text: &str) -> Result<Vec<(String, usize, Value)>, Error> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| Loc::new(path, e.line()).error(format!("not valid JSON: {e}")))?;
    let lines = Lines::new(path, text);
    let mut out = vec![];
    fn walk(v: &Value, found: &mut Vec<Value>) {
        match v {
            Value::Object(m) => {
                if m.get("handler").and_then(Value::as_str) == Some("reverse_proxy") {
                    found.push(v.clone());
                }
                m.values().for_each(|x| walk(x, found));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, found)),
            _ => {}
        }
    }
    let servers = v.pointer("/apps/http/servers").and_then(Value::as_object);
    let mut from = 1;
    for (name, server) in servers.into_iter().flatten() {
        let mut found = vec![];
        walk(server, &mut found);
        let many = found.len() > 1;
        let base = lines.key(1, name);
        for (k, h) in found.into_iter().enumerate() {
            from = lines.key_value(from.max(base), "handler", "reverse_proxy");
            let label = if many {
                format!("{name}#{}", k + 1)
            } else {
                name.clone()
            };
            out.push((label, from, h));
            from += 1;
        }
    }
    Ok(out)
}

/// `caddy.Duration` in JSON: nanoseconds, or a duration string.
fn json_duration(v: &Value, at: &Loc, what: &str) -> Result<SimDuration, Error> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .map(|ns| SimDuration::from_micros(ns / 1000))
            .ok_or_else(|| at.error(format!("{what}: expected a duration, found {v}"))),
        Value::String(s) => duration(s, at, what),
        _ => Err(at.error(format!("{what}: expected a duration, found {v}"))),
    }
}

fn read_json_handler(
    path: &Path,
    text: &str,
    line: usize,
    v: &Value,
    h: &mut Handler,
    draft: &mut Draft,
) -> Result<(), Error> {
    let lines = Lines::new(path, text);
    let at = |keys: &[&str]| lines.at(lines.path(line, keys));
    for (i, u) in v
        .get("upstreams")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let here = at(&["upstreams", "dial"]);
        let here = Loc::new(path, here.line + i);
        let dial = u.get("dial").and_then(Value::as_str).unwrap_or("");
        h.upstreams.push((upstream(dial, &here)?, here.clone()));
        if u.get("max_requests").is_some() {
            draft.warn(&here, "max_requests per upstream is not carried: the model's nodes[].max_conns says it (set it with --set)");
        }
    }
    if let Some(lb) = v.get("load_balancing") {
        if let Some(p) = lb
            .pointer("/selection_policy/policy")
            .and_then(Value::as_str)
        {
            let here = at(&["load_balancing", "selection_policy", "policy"]);
            if matches!(p, "random" | "round_robin" | "first") {
                h.caddy.insert("lb_policy".into(), json!(p));
                draft.origin("gateway.caddy.lb_policy", &here);
            } else {
                draft.warn(
                    &here,
                    format!("selection policy {p} is not modelled: the model keeps random"),
                );
            }
        }
        if let Some(r) = lb.get("retries").and_then(Value::as_u64) {
            h.caddy.insert("lb_retries".into(), json!(r));
            draft.origin(
                "gateway.caddy.lb_retries",
                &at(&["load_balancing", "retries"]),
            );
        }
        for (k, key) in [
            ("try_duration", "lb_try_duration"),
            ("try_interval", "lb_try_interval"),
        ] {
            if let Some(x) = lb.get(k) {
                let here = at(&["load_balancing", k]);
                h.caddy
                    .insert(key.into(), json!(json_duration(x, &here, k)?));
                draft.origin(&format!("gateway.caddy.{key}"), &here);
            }
        }
        if lb.get("retry_match").is_some() {
            draft.warn(
                &at(&["load_balancing", "retry_match"]),
                "retry_match is not modelled",
            );
        }
    }
    read_json_checks(v, &at, h, draft)?;
    if let Some(t) = v.get("transport") {
        let proto = t.get("protocol").and_then(Value::as_str).unwrap_or("http");
        if proto != "http" {
            draft.warn(
                &at(&["transport"]),
                format!("transport {proto} is not modelled"),
            );
        }
        for k in ["dial_timeout", "response_header_timeout"] {
            if let Some(x) = t.get(k) {
                let l = at(&["transport", k]);
                h.caddy.insert(k.into(), json!(json_duration(x, &l, k)?));
                draft.origin(&format!("gateway.caddy.{k}"), &l);
            }
        }
    }
    Ok(())
}

/// `health_checks.active` and `.passive` of a JSON handler.
fn read_json_checks(
    v: &Value,
    at: &dyn Fn(&[&str]) -> Loc,
    h: &mut Handler,
    draft: &mut Draft,
) -> Result<(), Error> {
    if let Some(a) = v.pointer("/health_checks/active") {
        let here = at(&["health_checks", "active"]);
        if ["uri", "path", "port"].iter().any(|k| a.get(k).is_some()) {
            h.active_on = Some(here.clone());
        }
        h.active_at = Some(here.clone());
        for k in ["interval", "timeout"] {
            if let Some(x) = a.get(k) {
                let l = at(&["health_checks", "active", k]);
                h.active.insert(k.into(), json!(json_duration(x, &l, k)?));
                draft.origin(&format!("policy.active.{k}"), &l);
            }
        }
        for k in ["passes", "fails", "expect_status"] {
            if let Some(x) = a.get(k).and_then(Value::as_u64) {
                h.active.insert(k.into(), json!(x));
                draft.origin(
                    &format!("policy.active.{k}"),
                    &at(&["health_checks", "active", k]),
                );
            }
        }
        for k in [
            "expect_body",
            "follow_redirects",
            "headers",
            "body",
            "upstream",
        ] {
            if a.get(k).is_some() {
                draft.warn(
                    &at(&["health_checks", "active", k]),
                    format!("active.{k} is not modelled"),
                );
            }
        }
    }
    if let Some(p) = v.pointer("/health_checks/passive") {
        h.passive_at = Some(at(&["health_checks", "passive"]));
        for k in ["fail_duration", "unhealthy_latency"] {
            if let Some(x) = p.get(k) {
                let l = at(&["health_checks", "passive", k]);
                h.passive.insert(k.into(), json!(json_duration(x, &l, k)?));
                draft.origin(&format!("policy.passive.{k}"), &l);
            }
        }
        for k in ["max_fails", "unhealthy_request_count"] {
            if let Some(x) = p.get(k).and_then(Value::as_u64) {
                h.passive.insert(k.into(), json!(x));
                draft.origin(
                    &format!("policy.passive.{k}"),
                    &at(&["health_checks", "passive", k]),
                );
            }
        }
        if let Some(x) = p.get("unhealthy_status") {
            h.passive.insert("unhealthy_status".into(), x.clone());
            draft.origin(
                "policy.passive.unhealthy_status",
                &at(&["health_checks", "passive", "unhealthy_status"]),
            );
        }
    }
    Ok(())
}

/// Is this text Caddy's JSON config (rather than a Caddyfile)?
fn is_json(text: &str) -> bool {
    text.trim_start().starts_with('{') && serde_json::from_str::<Value>(text).is_ok()
}

pub(super) fn import(path: &Path, text: &str, opts: &Options) -> Result<(Draft, String), Error> {
    let mut d = Draft::default();
    let mut h = Handler::default();
    let target;
    let anchor;
    if is_json(text) {
        let hs = json_handlers(path, text)?;
        let names: Vec<(String, Loc)> = hs
            .iter()
            .map(|(n, l, _)| (n.clone(), Loc::new(path, *l)))
            .collect();
        let i = choose(
            &names,
            &|_| "reverse_proxy handler".into(),
            opts.target.as_deref(),
            Format::Caddy,
            path,
        )?;
        read_json_handler(path, text, hs[i].1, &hs[i].2, &mut h, &mut d)?;
        target = hs[i].0.clone();
        anchor = names[i].1.clone();
    } else {
        let hs = caddyfile_handlers(path, text)?;
        let names: Vec<(String, Loc)> = hs.iter().map(|(n, l, _)| (n.clone(), l.clone())).collect();
        let i = choose(
            &names,
            &|_| "reverse_proxy".into(),
            opts.target.as_deref(),
            Format::Caddy,
            path,
        )?;
        read_caddyfile_handler(path, &hs[i].2, &mut h, &mut d)?;
        target = hs[i].0.clone();
        anchor = names[i].1.clone();
    }
    finish(h, &mut d, &anchor)?;
    Ok((d, target))
}

/// The handler's settings as the model's gateway, nodes and policy.
fn finish(h: Handler, d: &mut Draft, anchor: &Loc) -> Result<(), Error> {
    if h.upstreams.is_empty() {
        return Err(
            anchor.error("reverse_proxy has no upstream (give them as arguments or with `to`)")
        );
    }
    d.gateway("flavor", json!("caddy"), anchor);
    if !h.caddy.is_empty() {
        d.gateway.insert("caddy".into(), Value::Object(h.caddy));
    }
    if let Some((w, at)) = &h.weights
        && w.len() != h.upstreams.len()
    {
        return Err(at.error(format!(
            "weighted_round_robin has {} weights for {} upstreams (Caddy indexes one per upstream)",
            w.len(),
            h.upstreams.len()
        )));
    }
    for (i, (addr, at)) in h.upstreams.iter().enumerate() {
        let mut n = json!({ "name": addr });
        if let Some((w, _)) = &h.weights {
            if w[i] == 0 {
                return Err(at.error(
                    "weight 0 is not modelled (an upstream that never takes traffic): remove it",
                ));
            }
            n["weight"] = json!(w[i]);
        }
        d.nodes.push(n);
        d.origin(&format!("nodes[{i}]"), at);
    }
    let mut policy = json!({"kind": "caddy"});
    if let Some(at) = &h.passive_at {
        policy["passive"] = Value::Object(h.passive);
        let _ = at;
    }
    match (&h.active_on, &h.active_at) {
        (Some(_), _) => policy["active"] = Value::Object(h.active),
        (None, Some(at)) => d.warn(
            at,
            "active health checks are off: Caddy enables them only with health_uri, health_path or health_port (IsEnabled)",
        ),
        (None, None) => {}
    }
    if policy.get("passive").is_some() || policy.get("active").is_some() {
        let at = h
            .active_on
            .or(h.passive_at)
            .unwrap_or_else(|| anchor.clone());
        d.policy(policy, &at);
    } else {
        d.policy(json!({"kind": "none"}), anchor);
        d.notes
            .push("The handler has no health checks (Caddy's default).".into());
    }
    Ok(())
}

/// Does the text look like a Caddyfile with a `reverse_proxy`, or Caddy's
/// JSON config? (For `import`'s format detection.)
pub(super) fn looks_like(text: &str) -> bool {
    if text.trim_start().starts_with('{') && text.contains("\"apps\"") {
        return text.contains("\"reverse_proxy\"");
    }
    text.lines()
        .any(|l| l.split_whitespace().next() == Some("reverse_proxy"))
}
