//! Kong's declarative configuration (`kong.yml`, YAML or JSON, as `deck`
//! and `kong config db_import` read it): an `upstream` with its
//! `healthchecks` (→ the `kong` policy, `threshold` →
//! `gateway.kong.health_threshold`) and its `targets` (nested, or top-level
//! with `upstream:`) → nodes with their weights (0 → `down`); the Service
//! whose `host` is the upstream (`retries`, `connect_timeout`,
//! `read_timeout`, in milliseconds) → `gateway.kong`; its routes are listed
//! in the description. The target is the upstream's `name`; `--target` may
//! also name a Service or a route that leads to one. Checked against Kong's
//! schema (`kong/db/schema/entities/{upstreams,targets,services}.lua`).

use super::yaml::{self, Lines};
use super::{Draft, Format, Options, choose};
use crate::config::Loc;
use crate::engine::SimDuration;
use crate::error::Error;
use serde_json::{Map, Value, json};
use std::path::Path;

/// A Service's default timeouts (ms), `services.lua`.
const DEFAULT_TIMEOUT_MS: u64 = 60_000;

pub(super) fn import(path: &Path, text: &str, opts: &Options) -> Result<(Draft, String), Error> {
    let docs = yaml::documents(path, text)?;
    let lines = Lines::new(path, text);
    let Some(doc) = docs.first() else {
        return Err(Loc::new(path, 1).error("an empty Kong configuration: nothing to import"));
    };
    let root = &doc.value;
    let list = |k: &str| -> Vec<Value> {
        root.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let upstreams = list("upstreams");
    let services = list("services");
    let mut names = vec![];
    let mut from = doc.line;
    for u in &upstreams {
        let name = u.get("name").and_then(Value::as_str).unwrap_or("");
        let line = lines.key_value(from, "name", name);
        from = line;
        names.push((name.to_string(), lines.at(line)));
    }
    // `--target` may name a Service or a route: follow it to its upstream.
    let wanted = opts
        .target
        .as_deref()
        .map(|t| upstream_of(t, &services, &list("routes")).unwrap_or_else(|| t.to_string()));
    let i = choose(
        &names,
        &|_| "upstream".into(),
        wanted.as_deref(),
        Format::Kong,
        path,
    )?;
    let (upstream, name) = (&upstreams[i], names[i].0.clone());
    let anchor = names[i].1.line;
    let at = |keys: &[&str]| lines.at(lines.path(anchor, keys));
    let mut d = Draft::default();
    let top = at(&[]);
    d.gateway("flavor", json!("kong"), &top);
    match upstream.get("algorithm").and_then(Value::as_str) {
        None | Some("round-robin") => {}
        Some(other) => d.warn(
            &at(&["algorithm"]),
            format!(
                "algorithm {other} is not modelled: the model balances with Kong's round-robin wheel"
            ),
        ),
    }
    for k in [
        "hash_on",
        "hash_fallback",
        "slots",
        "host_header",
        "use_srv_name",
    ] {
        if upstream.get(k).is_some() {
            d.warn(&at(&[k]), format!("{k} is not modelled"));
        }
    }
    targets(
        path,
        &lines,
        upstream,
        &name,
        &list("targets"),
        anchor,
        &mut d,
    )?;
    let mut kong = Map::new();
    service(
        &lines,
        &services,
        &list("routes"),
        &name,
        doc.line,
        &top,
        &mut kong,
        &mut d,
    )?;
    if let Some(hc) = upstream.get("healthchecks") {
        let hat = at(&["healthchecks"]);
        if let Some(t) = hc.get("threshold") {
            let tat = at(&["healthchecks", "threshold"]);
            let t = t.as_f64().ok_or_else(|| {
                tat.error(format!(
                    "healthchecks.threshold: expected a number, found {t}"
                ))
            })?;
            kong.insert("health_threshold".into(), json!(t));
            d.origin("gateway.kong.health_threshold", &tat);
        }
        let policy = healthchecks(
            hc,
            &|keys: &[&str]| {
                let mut k = vec!["healthchecks"];
                k.extend_from_slice(keys);
                at(&k)
            },
            &mut d,
        )?;
        d.policy(policy, &hat);
    } else {
        d.policy(json!({"kind": "kong"}), &top);
        d.notes
            .push("The upstream has no healthchecks: Kong's defaults check nothing.".into());
    }
    if !kong.is_empty() {
        d.gateway("kong", Value::Object(kong), &top);
    }
    Ok((d, name))
}

/// A Service's `host`, or the host of its `url`.
fn host_of(s: &Value) -> Option<String> {
    s.get("host")
        .and_then(Value::as_str)
        .map(String::from)
        .or_else(|| {
            let url = s.get("url").and_then(Value::as_str)?;
            let rest = url.split("://").nth(1)?;
            Some(rest.split(['/', ':']).next()?.to_string())
        })
}

/// The upstream a Service or route called `t` proxies to (its `host`).
fn upstream_of(t: &str, services: &[Value], routes: &[Value]) -> Option<String> {
    let named = |v: &Value| v.get("name").and_then(Value::as_str) == Some(t);
    if let Some(s) = services.iter().find(|s| named(s)) {
        return host_of(s);
    }
    for s in services {
        let nested = s.get("routes").and_then(Value::as_array);
        if nested.is_some_and(|rs| rs.iter().any(named)) {
            return host_of(s);
        }
    }
    let r = routes.iter().find(|r| named(r))?;
    let svc = r.get("service")?;
    let svc_name = svc
        .as_str()
        .or_else(|| svc.get("name").and_then(Value::as_str))?;
    services
        .iter()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(svc_name))
        .and_then(host_of)
}

/// The upstream's targets (nested and top-level) → nodes.
fn targets(
    path: &Path,
    lines: &Lines,
    upstream: &Value,
    name: &str,
    top: &[Value],
    anchor: usize,
    d: &mut Draft,
) -> Result<(), Error> {
    let nested = upstream
        .get("targets")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let of_this = top.iter().filter(|t| {
        let u = t.get("upstream");
        u.and_then(Value::as_str) == Some(name)
            || u.and_then(|u| u.get("name")).and_then(Value::as_str) == Some(name)
    });
    let mut from = anchor;
    let mut seen = 0;
    for (nested_one, t) in nested
        .iter()
        .map(|t| (true, t))
        .chain(of_this.map(|t| (false, t)))
    {
        let target = t.get("target").and_then(Value::as_str).unwrap_or("");
        let start = if nested_one { from } else { 1 };
        let line = lines.key_value(start, "target", target);
        if nested_one {
            from = line;
        }
        let tat = lines.at(line);
        if target.is_empty() {
            return Err(tat.error("a target needs `target: host:port`"));
        }
        let (host, port) = split_port(target);
        if port.is_none() {
            return Err(tat.error(format!(
                "target \"{target}\" has no port: expected host:port (Kong would take 8000; write \
                 it out)"
            )));
        }
        if host.parse::<std::net::IpAddr>().is_err() {
            d.warn(
                &tat,
                format!(
                    "target {target} is a hostname: Kong balances over every address it resolves \
                     to, the model over one node"
                ),
            );
        }
        let mut node = json!({ "name": target });
        if let Some(w) = t.get("weight") {
            let w = w.as_u64().filter(|&w| w <= 65535).ok_or_else(|| {
                tat.error(format!(
                    "weight: expected a whole number 0..=65535, found {w}"
                ))
            })?;
            if w == 0 {
                node["down"] = json!(true);
            } else {
                node["weight"] = json!(w);
            }
        } else {
            // Kong's default weight.
            node["weight"] = json!(100);
        }
        d.origin(&format!("nodes[{seen}]"), &tat);
        d.nodes.push(node);
        seen += 1;
    }
    if seen == 0 {
        return Err(Loc::new(path, anchor).error(format!("upstream {name} has no targets")));
    }
    Ok(())
}

/// `host:port`, `[v6]:port`, `host` → (host, port).
fn split_port(t: &str) -> (&str, Option<&str>) {
    if let Some(rest) = t.strip_prefix('[') {
        return match rest.split_once("]:") {
            Some((h, p)) => (h, Some(p)),
            None => (rest.trim_end_matches(']'), None),
        };
    }
    match t.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') && !p.is_empty() => (h, Some(p)),
        _ => (t, None),
    }
}

/// A Service's timeout in milliseconds.
fn millis(v: &Value, field: &str, at: &Loc) -> Result<SimDuration, Error> {
    v.as_u64()
        .filter(|&ms| ms > 0)
        .map(SimDuration::from_millis)
        .ok_or_else(|| {
            at.error(format!(
                "{field}: expected milliseconds (a whole number above 0), found {v}"
            ))
        })
}

/// The Service whose `host` is the upstream → `gateway.kong.retries` and the timeouts.
#[allow(clippy::too_many_arguments)]
fn service(
    lines: &Lines,
    services: &[Value],
    routes: &[Value],
    upstream: &str,
    doc_line: usize,
    top: &Loc,
    kong: &mut Map<String, Value>,
    d: &mut Draft,
) -> Result<(), Error> {
    let to_it: Vec<&Value> = services
        .iter()
        .filter(|s| host_of(s).as_deref() == Some(upstream))
        .collect();
    let Some(s) = to_it.first() else {
        d.warn(
            top,
            format!(
                "no Service proxies to upstream {upstream}: the model takes a Service's defaults \
                 (retries 5, timeouts 60s)"
            ),
        );
        return Ok(());
    };
    let sname = s.get("name").and_then(Value::as_str).unwrap_or("");
    let sline = lines.key_value(doc_line, "name", sname);
    let at = |k: &str| lines.at(lines.key(sline, k));
    if to_it.len() > 1 {
        d.warn(
            &lines.at(sline),
            format!(
                "{} Services proxy to upstream {upstream}: the model takes {sname}'s retries and \
                 timeouts",
                to_it.len()
            ),
        );
    }
    if let Some(r) = s.get("retries") {
        let rat = at("retries");
        let r = r.as_u64().filter(|&r| r <= 32767).ok_or_else(|| {
            rat.error(format!(
                "retries: expected a whole number 0..=32767, found {r}"
            ))
        })?;
        kong.insert("retries".into(), json!(r));
        d.origin("gateway.kong.retries", &rat);
    }
    if let Some(v) = s.get("connect_timeout") {
        let a = at("connect_timeout");
        d.gateway(
            "proxy_connect_timeout",
            json!(millis(v, "connect_timeout", &a)?),
            &a,
        );
    }
    if let Some(v) = s.get("read_timeout") {
        let a = at("read_timeout");
        d.gateway(
            "proxy_read_timeout",
            json!(millis(v, "read_timeout", &a)?),
            &a,
        );
    }
    if let Some(v) = s.get("write_timeout")
        && v.as_u64() != Some(DEFAULT_TIMEOUT_MS)
    {
        d.warn(
            &at("write_timeout"),
            "write_timeout is not modelled: requests are sent at once",
        );
    }
    let mut route_names: Vec<String> = s
        .get("routes")
        .and_then(Value::as_array)
        .map(|rs| {
            rs.iter()
                .filter_map(|r| r.get("name").and_then(Value::as_str).map(String::from))
                .collect()
        })
        .unwrap_or_default();
    route_names.extend(routes.iter().filter_map(|r| {
        let svc = r.get("service")?;
        let n = svc
            .as_str()
            .or_else(|| svc.get("name").and_then(Value::as_str))?;
        (n == sname).then(|| r.get("name").and_then(Value::as_str).map(String::from))?
    }));
    d.notes.push(if route_names.is_empty() {
        format!("Service {sname} proxies to upstream {upstream}.")
    } else {
        format!(
            "Routes {} → Service {sname} → upstream {upstream}.",
            route_names.join(", ")
        )
    });
    Ok(())
}

/// An upstream's `healthchecks` → the `kong` policy.
fn healthchecks(hc: &Value, at: &dyn Fn(&[&str]) -> Loc, d: &mut Draft) -> Result<Value, Error> {
    let mut p = Map::new();
    p.insert("kind".into(), json!("kong"));
    for side in ["active", "passive"] {
        let Some(s) = hc.get(side).and_then(Value::as_object) else {
            continue;
        };
        let mut out = Map::new();
        for (k, v) in s {
            let kat = at(&[side, k]);
            let field = format!("healthchecks.{side}.{k}");
            match (side, k.as_str()) {
                ("active", "type") => {
                    let t = v.as_str().unwrap_or("");
                    let t = match t {
                        "http" | "https" | "tcp" => t,
                        "grpc" | "grpcs" => {
                            d.warn(
                                &kat,
                                format!("{field} {t} is not modelled: checked as http"),
                            );
                            "http"
                        }
                        _ => {
                            return Err(kat.error(format!(
                                "{field}: expected http, https, tcp, grpc or grpcs, found {v}"
                            )));
                        }
                    };
                    out.insert("type".into(), json!(t));
                }
                ("active", "timeout") => {
                    out.insert("timeout".into(), json!(seconds(v, &field, &kat)?));
                }
                ("active", "concurrency") => {
                    let n = v.as_u64().ok_or_else(|| {
                        kat.error(format!("{field}: expected a whole number, found {v}"))
                    })?;
                    out.insert("concurrency".into(), json!(n));
                }
                ("active", "http_path" | "https_sni" | "https_verify_certificate" | "headers") => {
                    d.warn(
                        &kat,
                        format!("{field} is not modelled: a probe gets the node's own answer"),
                    );
                }
                ("passive", "type") => {}
                (_, "healthy" | "unhealthy") => {
                    let Some(m) = v.as_object() else {
                        return Err(kat.error(format!("{field}: expected a mapping, found {v}")));
                    };
                    let mut inner = Map::new();
                    for (ik, iv) in m {
                        let iat = at(&[side, k, ik]);
                        let ifield = format!("{field}.{ik}");
                        match ik.as_str() {
                            "interval" if side == "active" => {
                                inner.insert(ik.clone(), json!(seconds(iv, &ifield, &iat)?));
                            }
                            "http_statuses" => {
                                let list = iv.as_array().and_then(|a| {
                                    a.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>()
                                });
                                let list = list.ok_or_else(|| {
                                    iat.error(format!(
                                        "{ifield}: expected a list of statuses, found {iv}"
                                    ))
                                })?;
                                inner.insert(ik.clone(), json!(list));
                            }
                            "successes" | "tcp_failures" | "timeouts" | "http_failures" => {
                                let n = iv.as_u64().filter(|&n| n <= 255).ok_or_else(|| {
                                    iat.error(format!(
                                        "{ifield}: expected a whole number 0..=255, found {iv}"
                                    ))
                                })?;
                                inner.insert(ik.clone(), json!(n));
                            }
                            _ => d.warn(&iat, format!("{ifield} is not modelled")),
                        }
                    }
                    out.insert(k.clone(), Value::Object(inner));
                }
                _ => d.warn(&kat, format!("{field} is not modelled")),
            }
        }
        p.insert(side.into(), Value::Object(out));
    }
    for k in hc.as_object().into_iter().flat_map(|m| m.keys()) {
        if !["active", "passive", "threshold"].contains(&k.as_str()) {
            d.warn(&at(&[k]), format!("healthchecks.{k} is not modelled"));
        }
    }
    Ok(Value::Object(p))
}

/// Kong's seconds (a number, fractions allowed, 0..=65535) as a duration.
fn seconds(v: &Value, field: &str, at: &Loc) -> Result<SimDuration, Error> {
    v.as_f64()
        .filter(|s| (0.0..=65535.0).contains(s))
        .map(SimDuration::from_secs_f64)
        .ok_or_else(|| {
            at.error(format!(
                "{field}: expected seconds (a number 0..=65535), found {v}"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::super::{Options, Workload, read};
    use std::path::PathBuf;

    fn import(
        name: &str,
        text: &str,
        target: Option<&str>,
    ) -> Result<super::super::Imported, String> {
        let dir = std::env::temp_dir().join(format!("hcsim-kong-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p: PathBuf = dir.join("kong.yml");
        std::fs::write(&p, text).unwrap();
        let opts = Options {
            target: target.map(String::from),
            ..Default::default()
        };
        read(&p, &opts, &Workload::default()).map_err(|e| e.to_string())
    }

    const CONFIG: &str = "_format_version: \"3.0\"
services:
- name: api
  host: api-upstream
  retries: 2
  connect_timeout: 2000
  read_timeout: 5000
  routes:
  - name: api-route
    paths: [/api]
upstreams:
- name: other
  targets:
  - target: 10.0.9.1:80
- name: api-upstream
  healthchecks:
    threshold: 25
    active:
      http_path: /health
      healthy:
        interval: 2
        successes: 2
      unhealthy:
        interval: 1
        tcp_failures: 2
        http_failures: 3
    passive:
      unhealthy:
        tcp_failures: 2
        timeouts: 3
  targets:
  - target: 10.0.0.1:8080
    weight: 50
  - target: 10.0.0.2:8080
targets:
- target: 10.0.0.3:8080
  upstream: api-upstream
  weight: 0
";

    #[test]
    fn an_upstream_its_targets_and_its_service() {
        let im = import("full", CONFIG, Some("api-route")).unwrap();
        assert_eq!(im.target, "api-upstream", "the route leads to the upstream");
        let v = serde_json::to_value(im.model().unwrap().effective_spec()).unwrap();
        assert_eq!(v["gateway"]["flavor"], "kong");
        assert_eq!(v["gateway"]["kong"]["retries"], 2);
        assert_eq!(v["gateway"]["kong"]["health_threshold"], 25.0);
        assert_eq!(v["gateway"]["proxy_connect_timeout"], "2s");
        assert_eq!(v["gateway"]["proxy_read_timeout"], "5s");
        let nodes = v["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[0]["weight"], 50);
        assert_eq!(nodes[1]["weight"], 100, "Kong's default weight");
        assert_eq!(nodes[2]["down"], true, "weight 0");
        assert_eq!(v["policy"]["kind"], "kong");
        assert_eq!(v["policy"]["active"]["healthy"]["interval"], "2s");
        assert_eq!(v["policy"]["active"]["unhealthy"]["tcp_failures"], 2);
        assert_eq!(v["policy"]["passive"]["unhealthy"]["timeouts"], 3);
        let w: Vec<String> = im.warnings.iter().map(|w| w.to_string()).collect();
        assert!(
            w.iter()
                .any(|w| w.contains("kong.yml:19: healthchecks.active.http_path is not modelled")),
            "{w:?}"
        );
        let desc = v["description"].as_str().unwrap();
        assert!(
            desc.contains("Routes api-route → Service api → upstream api-upstream"),
            "{desc}"
        );
    }

    #[test]
    fn a_target_without_a_port_names_its_line() {
        let text = CONFIG.replace("10.0.0.2:8080", "10.0.0.2");
        let e = import("noport", &text, Some("api-upstream")).unwrap_err();
        assert!(
            e.contains("kong.yml:34: target \"10.0.0.2\" has no port: expected host:port"),
            "{e}"
        );
    }
}
