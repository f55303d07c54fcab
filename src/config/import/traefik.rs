//! Traefik 3.7 dynamic configuration: the file provider's YAML or TOML
//! (`http.services.<name>.loadBalancer`, the routers that use the service
//! and their `retry` and `circuitBreaker` middlewares,
//! `http.serversTransports`), or the Kubernetes CRDs as YAML (`IngressRoute`
//! services with their `Middleware` and `ServersTransport` resources). The
//! target is the service (CRDs: `<IngressRoute>/<service>`).
//!
//! Read: the servers and their weights, `healthCheck` (`interval`,
//! `unhealthyInterval`, `timeout`, `status`), `passiveHealthCheck`
//! (`failureWindow`, `maxFailedAttempts`), the transport's
//! `forwardingTimeouts` (`dialTimeout`, `responseHeaderTimeout`), `retry`
//! (`attempts`, `initialInterval`, `status`, `timeout`) and
//! `circuitBreaker` (its expression parsed here: one that does not parse is
//! an error at its line). Durations are Go's (`"10s"`) or whole seconds.

use super::yaml::{self, Lines};
use super::{Draft, Format, Loc, Options, choose};
use crate::engine::SimDuration;
use crate::error::Error;
use crate::policy::traefik::breaker::expression;
use serde_json::{Map, Value, json};
use std::path::Path;

/// Where keys are written: YAML (`key:`) or TOML (`key =`, `[a.key]`).
enum Finder<'a> {
    Yaml(Lines<'a>),
    Toml { lines: Vec<&'a str>, path: &'a Path },
}

impl Finder<'_> {
    fn key(&self, from: usize, key: &str) -> usize {
        match self {
            Finder::Yaml(l) => l.key(from, key),
            Finder::Toml { lines, .. } => lines
                .iter()
                .enumerate()
                .skip(from.max(1) - 1)
                .find(|(_, l)| {
                    let t = l.trim();
                    let bare = t.trim_start_matches('"');
                    bare.starts_with(&format!("{key} ="))
                        || bare.starts_with(&format!("{key}="))
                        || bare.starts_with(&format!("{key}\" ="))
                        || (t.starts_with('[')
                            && (t.contains(&format!(".{key}]"))
                                || t.contains(&format!(".{key}."))
                                || t.contains(&format!(".\"{key}\""))
                                || t.starts_with(&format!("[{key}"))
                                || t.starts_with(&format!("[[{key}"))))
                })
                .map_or(from, |(i, _)| i + 1),
        }
    }

    fn path(&self, from: usize, keys: &[&str]) -> usize {
        keys.iter().fold(from, |at, k| self.key(at, k))
    }

    fn at(&self, line: usize) -> Loc {
        match self {
            Finder::Yaml(l) => l.at(line),
            Finder::Toml { path, .. } => Loc::new(path, line),
        }
    }
}

/// `ptypes.Duration`: a Go duration, or a number of seconds.
fn duration(v: &Value, at: &Loc, what: &str) -> Result<SimDuration, Error> {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(secs) => {
                SimDuration::try_from_secs_f64(secs).map_err(|e| at.error(format!("{what}: {e}")))
            }
            None => Err(at.error(format!("{what}: expected a duration, found {v}"))),
        },
        Value::String(s) => {
            match s.trim().parse::<f64>() {
                Ok(secs) => SimDuration::try_from_secs_f64(secs)
                    .map_err(|e| at.error(format!("{what}: {e}"))),
                _ => crate::engine::time::parse_duration(s)
                    .map_err(|e| at.error(format!("{what}: {e}"))),
            }
        }
        _ => Err(at.error(format!("{what}: expected a duration, found {v}"))),
    }
}

fn uint(v: &Value, at: &Loc, what: &str) -> Result<u64, Error> {
    yaml::uint(v).ok_or_else(|| at.error(format!("{what}: expected a whole number, found {v}")))
}

/// A server URL as a node name (`host:port`).
fn server(url: &str, at: &Loc) -> Result<String, Error> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| {
        at.error(format!(
            "server url \"{url}\": expected scheme://host[:port]"
        ))
    })?;
    let hostport = rest.split('/').next().unwrap_or(rest);
    if hostport.is_empty() {
        return Err(at.error(format!("server url \"{url}\" has no host")));
    }
    let has_port = hostport
        .rsplit_once(':')
        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
    Ok(if has_port {
        hostport.to_string()
    } else {
        format!("{hostport}:{}", if scheme == "https" { 443 } else { 80 })
    })
}

fn is_toml(path: &Path, text: &str) -> bool {
    path.extension().is_some_and(|e| e == "toml")
        || text
            .lines()
            .map(str::trim)
            .any(|l| l.starts_with("[http") || l.starts_with("[[http"))
}

/// Is this a Kubernetes CRD file (rather than the file provider's)?
fn is_crd(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim();
        t.starts_with("kind:")
            && ["IngressRoute", "Middleware", "TraefikService"]
                .iter()
                .any(|k| t.ends_with(k))
    })
}

/// The service's settings as the model's gateway, nodes and policy.
struct Reader<'a> {
    f: Finder<'a>,
    d: Draft,
    traefik: Map<String, Value>,
    policy: Map<String, Value>,
    policy_at: Option<Loc>,
}

impl Reader<'_> {
    /// `loadBalancer` (file provider) or an IngressRoute service (CRD): the
    /// health checks, strategy and sticky sessions.
    fn load_balancer(&mut self, lb: &Value, base: usize, servers: bool) -> Result<(), Error> {
        let at = |r: &Reader, keys: &[&str]| r.f.at(r.f.path(base, keys));
        if servers {
            let list = lb
                .get("servers")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if list.is_empty() {
                return Err(at(self, &[]).error("the loadBalancer has no servers"));
            }
            let mut from = self.f.key(base, "servers");
            for s in &list {
                from = self.f.key(from + 1, "url");
                let here = self.f.at(from);
                let url = s
                    .get("url")
                    .and_then(Value::as_str)
                    .ok_or_else(|| here.error("a server needs a `url`"))?;
                let mut node = json!({ "name": server(url, &here)? });
                if let Some(w) = s.get("weight") {
                    let w = uint(w, &here, "weight")?;
                    if w == 0 {
                        self.d.warn(
                            &here,
                            "weight 0: Traefik ignores this server; so does the model",
                        );
                        continue;
                    }
                    node["weight"] = json!(w);
                }
                self.d.nodes.push(node);
                self.d
                    .origin(&format!("nodes[{}]", self.d.nodes.len() - 1), &here);
            }
        }
        if let Some(hc) = lb.get("healthCheck") {
            let here = at(self, &["healthCheck"]);
            self.policy_at.get_or_insert(here.clone());
            let mut m = Map::new();
            for k in ["interval", "unhealthyInterval", "timeout"] {
                if let Some(v) = hc.get(k) {
                    let l = at(self, &["healthCheck", k]);
                    m.insert(k.into(), json!(duration(v, &l, k)?));
                    self.d.origin(&format!("policy.healthCheck.{k}"), &l);
                }
            }
            if let Some(v) = hc.get("status") {
                let l = at(self, &["healthCheck", "status"]);
                m.insert("status".into(), json!(uint(v, &l, "status")?));
                self.d.origin("policy.healthCheck.status", &l);
            }
            if hc.get("mode").and_then(Value::as_str) == Some("grpc") {
                self.d.warn(
                    &at(self, &["healthCheck", "mode"]),
                    "gRPC health checks are not modelled: the model checks over HTTP",
                );
            }
            if hc.get("followRedirects").and_then(Value::as_bool) == Some(false) {
                self.d.warn(
                    &at(self, &["healthCheck", "followRedirects"]),
                    "followRedirects: false is not modelled",
                );
            }
            self.policy.insert("healthCheck".into(), Value::Object(m));
        }
        if let Some(p) = lb.get("passiveHealthCheck") {
            let here = at(self, &["passiveHealthCheck"]);
            self.policy_at.get_or_insert(here.clone());
            let mut m = Map::new();
            if let Some(v) = p.get("failureWindow") {
                let l = at(self, &["passiveHealthCheck", "failureWindow"]);
                m.insert(
                    "failureWindow".into(),
                    json!(duration(v, &l, "failureWindow")?),
                );
                self.d.origin("policy.passiveHealthCheck.failureWindow", &l);
            }
            if let Some(v) = p.get("maxFailedAttempts") {
                let l = at(self, &["passiveHealthCheck", "maxFailedAttempts"]);
                m.insert(
                    "maxFailedAttempts".into(),
                    json!(uint(v, &l, "maxFailedAttempts")?),
                );
                self.d
                    .origin("policy.passiveHealthCheck.maxFailedAttempts", &l);
            }
            self.policy
                .insert("passiveHealthCheck".into(), Value::Object(m));
        }
        if let Some(s) = lb.get("strategy").and_then(Value::as_str)
            && s != "wrr"
        {
            self.d.warn(
                &at(self, &["strategy"]),
                format!("strategy {s} is not modelled: the model keeps weighted round robin (wrr)"),
            );
        }
        if lb.get("sticky").is_some() {
            self.d.warn(
                &at(self, &["sticky"]),
                "sticky sessions are not modelled: every request is balanced",
            );
        }
        Ok(())
    }

    /// `forwardingTimeouts` of a servers transport.
    fn transport(&mut self, t: &Value, base: usize) -> Result<(), Error> {
        let mut m = Map::new();
        for k in ["dialTimeout", "responseHeaderTimeout"] {
            if let Some(v) = t.pointer(&format!("/forwardingTimeouts/{k}")) {
                let l = self.f.at(self.f.path(base, &["forwardingTimeouts", k]));
                m.insert(k.into(), json!(duration(v, &l, k)?));
                self.d
                    .origin(&format!("gateway.traefik.forwardingTimeouts.{k}"), &l);
            }
        }
        if !m.is_empty() {
            self.traefik
                .insert("forwardingTimeouts".into(), Value::Object(m));
        }
        Ok(())
    }

    /// A middleware's settings (`retry`, `circuitBreaker`); others warn.
    fn middleware(
        &mut self,
        name: &str,
        m: &Value,
        base: usize,
        order: &mut Vec<&'static str>,
    ) -> Result<(), Error> {
        let at = |r: &Reader, keys: &[&str]| r.f.at(r.f.path(base, keys));
        if let Some(r) = m.get("retry") {
            let mut out = Map::new();
            let l = at(self, &["retry", "attempts"]);
            let attempts = r
                .get("attempts")
                .map(|v| uint(v, &l, "attempts"))
                .transpose()?
                .unwrap_or(0);
            if attempts == 0 {
                return Err(l.error(format!("middleware {name}: retry needs attempts of at least 1 (Traefik: \"incorrect (or empty) value for attempt\")")));
            }
            out.insert("attempts".into(), json!(attempts));
            self.d.origin("gateway.traefik.retry.attempts", &l);
            if let Some(v) = r.get("initialInterval") {
                let l = at(self, &["retry", "initialInterval"]);
                out.insert(
                    "initialInterval".into(),
                    json!(duration(v, &l, "initialInterval")?),
                );
                self.d.origin("gateway.traefik.retry.initialInterval", &l);
            }
            if let Some(v) = r.get("timeout") {
                let l = at(self, &["retry", "timeout"]);
                out.insert("timeout".into(), json!(duration(v, &l, "timeout")?));
            }
            if let Some(v) = r.get("status") {
                let list: Vec<String> = match v {
                    Value::Array(a) => a
                        .iter()
                        .map(|x| {
                            x.as_str()
                                .map(String::from)
                                .unwrap_or_else(|| x.to_string())
                        })
                        .collect(),
                    other => vec![
                        other
                            .as_str()
                            .map(String::from)
                            .unwrap_or_else(|| other.to_string()),
                    ],
                };
                out.insert("status".into(), json!(list));
                self.d.origin(
                    "gateway.traefik.retry.status",
                    &at(self, &["retry", "status"]),
                );
            }
            for k in [
                "disableRetryOnNetworkError",
                "retryNonIdempotentMethod",
                "maxRequestBodyBytes",
            ] {
                if r.get(k).is_some() {
                    self.d.warn(
                        &at(self, &["retry", k]),
                        format!("retry.{k} is not modelled"),
                    );
                }
            }
            self.traefik.insert("retry".into(), Value::Object(out));
            order.push("retry");
        } else if let Some(b) = m.get("circuitBreaker") {
            let l = at(self, &["circuitBreaker", "expression"]);
            let e = b.get("expression").and_then(Value::as_str).ok_or_else(|| {
                l.error(format!(
                    "middleware {name}: circuitBreaker needs an `expression`"
                ))
            })?;
            if let Err(err) = expression::parse(e) {
                return Err(l.error(format!(
                    "middleware {name}: the circuitBreaker expression \"{e}\" does not parse: {err} (expected comparisons such as `NetworkErrorRatio() > 0.30`, joined by && or ||)"
                )));
            }
            let mut out = Map::new();
            out.insert("expression".into(), json!(e));
            self.d
                .origin("gateway.traefik.circuitBreaker.expression", &l);
            for k in ["checkPeriod", "fallbackDuration", "recoveryDuration"] {
                if let Some(v) = b.get(k) {
                    let l = at(self, &["circuitBreaker", k]);
                    out.insert(k.into(), json!(duration(v, &l, k)?));
                    self.d
                        .origin(&format!("gateway.traefik.circuitBreaker.{k}"), &l);
                }
            }
            if let Some(v) = b.get("responseCode") {
                let l = at(self, &["circuitBreaker", "responseCode"]);
                out.insert("responseCode".into(), json!(uint(v, &l, "responseCode")?));
            }
            self.traefik
                .insert("circuitBreaker".into(), Value::Object(out));
            order.push("circuitBreaker");
        } else if let Some(kind) = m.as_object().and_then(|o| o.keys().next()) {
            if matches!(
                kind.as_str(),
                "rateLimit" | "inFlightReq" | "buffering" | "errors" | "forwardAuth"
            ) {
                self.d.warn(
                    &self.f.at(base),
                    format!("middleware {name} ({kind}) is not modelled"),
                );
            }
        }
        Ok(())
    }

    fn into_draft(mut self, anchor: &Loc) -> Draft {
        self.d.gateway("flavor", json!("traefik"), anchor);
        if !self.traefik.is_empty() {
            self.d
                .gateway
                .insert("traefik".into(), Value::Object(self.traefik));
        }
        if self.policy.is_empty() {
            self.d.policy(json!({"kind": "none"}), anchor);
            self.d
                .notes
                .push("The service has no health checks (Traefik's default).".into());
        } else {
            let mut p = self.policy;
            p.insert("kind".into(), json!("traefik"));
            let at = self.policy_at.clone().unwrap_or_else(|| anchor.clone());
            self.d.policy(Value::Object(p), &at);
        }
        self.d
    }
}

/// A middleware name without its provider (`retry@file` → `retry`).
fn local(name: &str) -> &str {
    name.split('@').next().unwrap_or(name)
}

fn file_provider(path: &Path, text: &str, opts: &Options) -> Result<(Draft, String), Error> {
    let toml = is_toml(path, text);
    let (root, f) = if toml {
        let v: Value = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| {
                text[..s.start.min(text.len())].lines().count().max(1)
            });
            Loc::new(path, line).error(format!("not valid TOML: {}", e.message()))
        })?;
        (
            v,
            Finder::Toml {
                lines: text.lines().collect(),
                path,
            },
        )
    } else {
        let docs = yaml::documents(path, text)?;
        let v = docs
            .into_iter()
            .next()
            .map(|d| d.value)
            .unwrap_or(Value::Null);
        (v, Finder::Yaml(Lines::new(path, text)))
    };
    let http = root.get("http").cloned().unwrap_or(Value::Null);
    let services = http
        .get("services")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let svc_base = f.path(1, &["http", "services"]);
    let names: Vec<(String, Loc)> = services
        .iter()
        .map(|(n, _)| (n.clone(), f.at(f.key(svc_base, n))))
        .collect();
    // `loadBalancer`, `weighted`, `mirroring` or `failover`.
    let kind = |i: usize| {
        let svc = &services[&names[i].0];
        match svc.as_object().and_then(|m| m.keys().next()) {
            Some(k) => format!("{k} service"),
            None => "service".to_string(),
        }
    };
    let i = choose(&names, &kind, opts.target.as_deref(), Format::Traefik, path)?;
    let (name, anchor) = names[i].clone();
    let svc = &services[&name];
    let base = anchor.line;
    let mut r = Reader {
        f,
        d: Draft::default(),
        traefik: Map::new(),
        policy: Map::new(),
        policy_at: None,
    };
    let Some(lb) = svc.get("loadBalancer") else {
        let kind = svc
            .as_object()
            .and_then(|o| o.keys().next().cloned())
            .unwrap_or_default();
        return Err(anchor.error(format!(
            "service {name} is a `{kind}` service: hcsim models a loadBalancer service (pick one with --target)"
        )));
    };
    let lb_base = r.f.key(base, "loadBalancer");
    r.load_balancer(lb, lb_base, true)?;
    if let Some(t) = lb.get("serversTransport").and_then(Value::as_str) {
        let tb = r.f.path(1, &["serversTransports", local(t)]);
        match http.pointer(&format!("/serversTransports/{}", local(t))) {
            Some(tv) => r.transport(tv, tb)?,
            None => r.d.warn(&r.f.at(r.f.key(lb_base, "serversTransport")), format!("serversTransport {t} is not in this file: the model keeps Traefik's defaults (dialTimeout 30s, no responseHeaderTimeout)")),
        }
    }
    // The routers that send to the service, and their middlewares.
    let routers = http
        .get("routers")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let users: Vec<(&String, &Value)> = routers
        .iter()
        .filter(|(_, rt)| {
            rt.get("service").and_then(Value::as_str).map(local) == Some(name.as_str())
        })
        .collect();
    let mws = http
        .get("middlewares")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some((rname, rt)) = users.first() {
        if users.len() > 1 {
            r.d.warn(&anchor, format!("{} routers use service {name}: the model takes the middlewares of router {rname}", users.len()));
        }
        let list: Vec<String> = rt
            .get("middlewares")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        let mut order = vec![];
        let mut stack: Vec<String> = list.into_iter().rev().collect();
        let mut seen = 0;
        while let Some(m) = stack.pop() {
            seen += 1;
            if seen > 64 {
                break;
            }
            let key = local(&m).to_string();
            let Some(mv) = mws.get(&key) else {
                r.d.warn(
                    &anchor,
                    format!("middleware {m} is not in this file: not modelled"),
                );
                continue;
            };
            let mb = r.f.path(1, &["middlewares", &key]);
            if let Some(chain) = mv.pointer("/chain/middlewares").and_then(Value::as_array) {
                for c in chain.iter().rev().filter_map(Value::as_str) {
                    stack.push(c.to_string());
                }
                continue;
            }
            r.middleware(&key, mv, mb, &mut order)?;
        }
        if order == ["retry", "circuitBreaker"] {
            r.d.warn(&anchor, "the retry middleware comes before the circuit breaker: Traefik's breaker then sees every try; the model puts the breaker outside the retries (it sees each request once)");
        }
    } else {
        r.d.warn(
            &anchor,
            format!("no router uses service {name}: the model has no middlewares"),
        );
    }
    Ok((r.into_draft(&anchor), name))
}

fn crds(path: &Path, text: &str, opts: &Options) -> Result<(Draft, String), Error> {
    let docs = yaml::documents(path, text)?;
    let f = Finder::Yaml(Lines::new(path, text));
    let kind = |d: &yaml::Doc| {
        d.value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let meta = |d: &yaml::Doc| {
        d.value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    // Targets: every service of every route of every IngressRoute.
    let mut targets: Vec<(String, Loc, usize, Value, Vec<String>)> = vec![];
    for d in docs.iter().filter(|d| kind(d) == "IngressRoute") {
        let ir = meta(d);
        let mut from = d.line;
        for route in d
            .value
            .pointer("/spec/routes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mws: Vec<String> = route
                .get("middlewares")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|m| m.get("name").and_then(Value::as_str))
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            for s in route
                .get("services")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let sname = s.get("name").and_then(Value::as_str).unwrap_or("");
                from = match &f {
                    Finder::Yaml(l) => l.key_value(from, "name", sname),
                    _ => from,
                };
                targets.push((
                    format!("{ir}/{sname}"),
                    f.at(from),
                    from,
                    s.clone(),
                    mws.clone(),
                ));
                from += 1;
            }
        }
    }
    let names: Vec<(String, Loc)> = targets.iter().map(|t| (t.0.clone(), t.1.clone())).collect();
    let i = choose(
        &names,
        &|_| "IngressRoute service".into(),
        opts.target.as_deref(),
        Format::Traefik,
        path,
    )?;
    let (name, anchor, base, svc, mws) = targets[i].clone();
    let mut r = Reader {
        f,
        d: Draft::default(),
        traefik: Map::new(),
        policy: Map::new(),
        policy_at: None,
    };
    if svc.get("kind").and_then(Value::as_str) == Some("TraefikService") {
        return Err(anchor.error(
            "a TraefikService (weighted or mirroring) is not modelled: pick a Kubernetes Service",
        ));
    }
    r.d.default_nodes(
        opts.nodes.unwrap_or(3),
        &anchor,
        "an IngressRoute names a Kubernetes Service, not its endpoints",
    );
    r.load_balancer(&svc, base, false)?;
    if let Some(t) = svc.get("serversTransport").and_then(Value::as_str) {
        match docs
            .iter()
            .find(|d| kind(d) == "ServersTransport" && meta(d) == t)
        {
            Some(td) => {
                let spec = td.value.get("spec").cloned().unwrap_or(Value::Null);
                let b = r.f.key(td.line, "spec");
                r.transport(&spec, b)?;
            }
            None => r.d.warn(
                &anchor,
                format!("ServersTransport {t} is not in this file: Traefik's defaults"),
            ),
        }
    }
    let mut order = vec![];
    for m in &mws {
        match docs
            .iter()
            .find(|d| kind(d) == "Middleware" && meta(d) == *m)
        {
            Some(md) => {
                let spec = md.value.get("spec").cloned().unwrap_or(Value::Null);
                let b = r.f.key(md.line, "spec");
                r.middleware(m, &spec, b, &mut order)?;
            }
            None => r.d.warn(
                &anchor,
                format!("Middleware {m} is not in this file: not modelled"),
            ),
        }
    }
    if order == ["retry", "circuitBreaker"] {
        r.d.warn(&anchor, "the retry middleware comes before the circuit breaker: the model puts the breaker outside the retries");
    }
    Ok((r.into_draft(&anchor), name))
}

pub(super) fn import(path: &Path, text: &str, opts: &Options) -> Result<(Draft, String), Error> {
    if is_crd(text) {
        crds(path, text, opts)
    } else {
        file_provider(path, text, opts)
    }
}

/// Does the text look like Traefik dynamic configuration (file provider
/// YAML or TOML, or its CRDs)? (For `import`'s format detection.)
pub(super) fn looks_like(text: &str) -> bool {
    is_crd(text)
        || text
            .lines()
            .map(str::trim)
            .any(|l| l.starts_with("[http.services") || l.starts_with("[[http.services"))
        || (text
            .lines()
            .any(|l| l.trim_start().starts_with("loadBalancer:"))
            && text.lines().any(|l| l.trim_start().starts_with("http:")))
}
