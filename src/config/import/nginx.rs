//! nginx: an `upstream` block, `worker_processes`, and the `proxy_*`
//! settings that reach the `location` proxying to it.
//!
//! The `proxy_*` settings are inherited as `ngx_http_proxy_merge_loc_conf`
//! merges them: http → server → location → nested location (and `if` in a
//! location), each level keeping its own value and taking its parent's
//! otherwise. Times follow `ngx_parse_time`: units `ms s m h d w M y`,
//! largest first, a bare number is seconds; `fail_timeout` takes whole
//! seconds only (`ms` is an error there, as in nginx).

use super::nginx_syntax::{self, Directive};
use super::{Draft, Format, Loc, Options, choose};
use crate::engine::SimDuration;
use crate::error::Error;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::path::Path;

pub(super) fn import(path: &Path, text: &str, opts: &Options) -> Result<(Draft, String), Error> {
    let parsed = nginx_syntax::parse(path, text)?;
    let mut d = Draft {
        warnings: parsed.warnings,
        ..Draft::default()
    };
    let main = &parsed.directives;
    let http_blocks: Vec<&Directive> = main.iter().filter(|x| x.name == "http").collect();
    // A file without `http` is a snippet of one (a conf.d file).
    let http: Vec<&Directive> = if http_blocks.is_empty() {
        main.iter().collect()
    } else {
        http_blocks.iter().flat_map(|h| h.children()).collect()
    };
    let ups: Vec<&Directive> = http
        .iter()
        .copied()
        .filter(|x| x.name == "upstream" && x.block.is_some())
        .collect();
    let mut names = vec![];
    for u in &ups {
        let [name] = u.args.as_slice() else {
            return Err(u.at.error("`upstream` takes one name: upstream NAME { … }"));
        };
        names.push((name.clone(), u.at.clone()));
    }
    // `stream { upstream … }`: TCP load balancing, targets beside http's
    // (`stream/NAME` when an http upstream has the same name).
    let streams: Vec<&Directive> = main
        .iter()
        .filter(|x| x.name == "stream")
        .flat_map(|s| s.children())
        .collect();
    let stream_ups: Vec<&Directive> = streams
        .iter()
        .copied()
        .filter(|x| x.name == "upstream" && x.block.is_some())
        .collect();
    let http_count = names.len();
    for u in &stream_ups {
        let [name] = u.args.as_slice() else {
            return Err(u.at.error("`upstream` takes one name: upstream NAME { … }"));
        };
        let shown = if names.iter().any(|(n, _)| n == name) {
            format!("stream/{name}")
        } else {
            name.clone()
        };
        names.push((shown, u.at.clone()));
    }
    let kind = |i: usize| {
        if i < http_count {
            "http upstream"
        } else {
            "stream upstream"
        }
        .to_string()
    };
    let i = choose(&names, &kind, opts.target.as_deref(), Format::Nginx, path)?;
    let workers = worker_processes(main, &mut d)?;
    if i >= http_count {
        let up = stream_ups[i - http_count];
        upstream(up, workers, &mut d)?;
        stream_settings(&streams, (&up.args[0], &up.at), &mut d)?;
        return Ok((d, names[i].0.clone()));
    }
    let (up, name) = (ups[i], names[i].0.clone());
    upstream(up, workers, &mut d)?;
    let health = proxy_settings(&http, (&name, &up.at), &mut d)?;
    if let Some((hc, read)) = health {
        health_check(&hc, read, &mut d)?;
    }
    super::pool::nginx(main, (up, &name), &http, &mut d, parse_time)?;
    Ok((d, name))
}

/// A `stream` upstream's proxying: the `server` block whose `proxy_pass`
/// names it, with the stream-level settings it inherits. The stream
/// module's `proxy_next_upstream on|off` (default on) retries a failed
/// connect (`error`, `timeout`: there are no HTTP statuses);
/// `proxy_timeout` (default 10m), the idle time between two reads or
/// writes, is the read timeout of the model.
fn stream_settings(
    streams: &[&Directive],
    (name, up_at): (&str, &Loc),
    d: &mut Draft,
) -> Result<(), Error> {
    let top: Vec<&Directive> = streams.to_vec();
    let server = streams.iter().find(|x| {
        x.name == "server"
            && x.children()
                .iter()
                .any(|c| c.name == "proxy_pass" && c.args.first().map(String::as_str) == Some(name))
    });
    let mut next: (Value, Loc) = (json!(["error", "timeout"]), up_at.clone());
    let mut read: (SimDuration, Loc) = (SimDuration::from_secs(600), up_at.clone());
    let mut connect: (SimDuration, Loc) = (SimDuration::from_secs(60), up_at.clone());
    let levels: Vec<&Directive> = top
        .iter()
        .copied()
        .chain(server.into_iter().flat_map(|s| s.children()))
        .collect();
    for x in levels {
        let at = &x.at;
        let time = || directive_time(x);
        match x.name.as_str() {
            "proxy_next_upstream" => match x.args.as_slice() {
                [v] if v == "on" => next = (json!(["error", "timeout"]), at.clone()),
                [v] if v == "off" => next = (json!(["off"]), at.clone()),
                _ => {
                    return Err(
                        at.error("the stream module's `proxy_next_upstream` takes on or off")
                    );
                }
            },
            "proxy_next_upstream_tries" => {
                let [v] = x.args.as_slice() else {
                    return Err(at.error("`proxy_next_upstream_tries` takes one number"));
                };
                d.gateway("proxy_next_upstream_tries", json!(int(v, at, &x.name)?), at);
            }
            "proxy_next_upstream_timeout" => {
                d.gateway("proxy_next_upstream_timeout", json!(time()?), at)
            }
            "proxy_connect_timeout" => connect = (time()?, at.clone()),
            "proxy_timeout" => read = (time()?, at.clone()),
            _ => {}
        }
    }
    d.gateway("proxy_next_upstream", next.0, &next.1);
    d.gateway("proxy_connect_timeout", json!(connect.0), &connect.1);
    d.gateway("proxy_read_timeout", json!(read.0), &read.1);
    match server {
        Some(s) => d.notes.push(format!(
            "A stream (TCP) upstream: each connection is one request of the model; the \
             settings are those of the server at {}.",
            s.at
        )),
        None => d.warn(
            up_at,
            format!(
                "no stream `server` with `proxy_pass {name}` found: the model takes the \
                 stream-level settings"
            ),
        ),
    }
    Ok(())
}

/// NGINX Plus `health_check [interval=5s] [fails=1] [passes=1] [uri=/]
/// [port=] [match=] [mandatory] [persistent]` in the location proxying to
/// the upstream (`ngx_http_upstream_hc_module`): the generic prober, one
/// HTTP probe per node every interval, `fails` failures in a row eject and
/// `passes` successes readmit; a probe waits as long as the location's
/// `proxy_read_timeout`.
fn health_check(x: &Directive, read: SimDuration, d: &mut Draft) -> Result<(), Error> {
    let at = &x.at;
    let mut c = json!({"kind": "active_probe", "flavor": "generic", "probe": "http",
        "interval": SimDuration::from_secs(5), "timeout": read, "fall": 1, "rise": 1});
    for p in &x.args {
        let (key, value) = match p.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (p.as_str(), None),
        };
        match (key, value) {
            ("interval", Some(v)) => {
                c["interval"] = json!(parse_time(v, false).map_err(|e| {
                    at.error(format!("invalid health_check interval \"{v}\": {e}"))
                })?)
            }
            ("fails", Some(v)) => c["fall"] = json!(int(v, at, "health_check fails")?),
            ("passes", Some(v)) => c["rise"] = json!(int(v, at, "health_check passes")?),
            ("uri", Some(_)) => {}
            ("jitter", Some(_)) => d.warn(at, "health_check jitter is not modelled"),
            // "port: defines the port used when connecting to a server to
            // perform a health check" (ngx_http_upstream_hc_module).
            ("port", Some(v)) => {
                let port = v.parse::<u16>().ok().filter(|&n| n > 0).ok_or_else(|| {
                    at.error(format!("health_check port={v}: expected a port 1 to 65535"))
                })?;
                check_port(port, at, d);
            }
            ("match", Some(m)) => d.warn(
                at,
                format!(
                    "health_check match={m} is not modelled: a probe passes on a 2xx or 3xx status"
                ),
            ),
            ("mandatory", None) => d.warn(
                at,
                "health_check mandatory is not modelled: the nodes start healthy",
            ),
            ("persistent", None) => {}
            ("type", Some("grpc")) => {
                d.warn(at, "health_check type=grpc is modelled as an HTTP probe")
            }
            _ => {
                return Err(at.error(format!(
                    "invalid parameter \"{p}\" of `health_check`: expected interval=, jitter=, \
                     fails=, passes=, uri=, match=, port=, type=grpc, mandatory or persistent"
                )));
            }
        }
    }
    d.policy(c, at);
    d.notes.push(
        "The NGINX Plus health_check is modelled by the generic prober (a probe timeout of the \
         location's proxy_read_timeout)."
            .into(),
    );
    Ok(())
}

/// `health_check port=N`: every server of the upstream whose own port is
/// another (80 when its address has none) gets `check_port`; a UNIX socket
/// has no port and keeps its checks.
fn check_port(port: u16, at: &Loc, d: &mut Draft) {
    for i in 0..d.nodes.len() {
        // A repeated address is named `ADDR#2`….
        let name = d.nodes[i]["name"].as_str().unwrap_or_default();
        let name = name.split('#').next().unwrap_or_default();
        if name.starts_with("unix:") {
            continue;
        }
        let own: Option<u16> = match name.rsplit_once(':') {
            Some((_, p)) if !name.ends_with(']') => p.parse().ok(),
            _ => Some(80),
        };
        if own != Some(port) {
            d.nodes[i]["check_port"] = json!(port);
            d.origin(&format!("nodes[{i}].check_port"), at);
        }
    }
}

/// `worker_processes N` in the main context: the gateway's workers.
fn worker_processes(main: &[Directive], d: &mut Draft) -> Result<u32, Error> {
    let Some(w) = main.iter().rfind(|x| x.name == "worker_processes") else {
        return Ok(1);
    };
    match w.args.as_slice() {
        [a] if a == "auto" => {
            d.warn(
                &w.at,
                "worker_processes auto: one worker per CPU core of the machine nginx runs on; \
                 imported as 1 (set gateway.workers to that number)",
            );
            Ok(1)
        }
        [n] => {
            let n = int(n, &w.at, "worker_processes")?;
            d.gateway("workers", json!(n), &w.at);
            Ok(n)
        }
        _ => Err(w.at.error("`worker_processes` takes a number or `auto`")),
    }
}

/// The client keys an imported `ip_hash` or `hash` (or HAProxy's `balance source`) gets (the config does
/// not say how many clients there are; `--set clients.keys=N` changes it).
pub(super) const IMPORTED_KEYS: u32 = 1000;

/// A node's `max_fails`/`fail_timeout`, and where they were written.
struct Passive {
    max_fails: u32,
    fail_timeout: SimDuration,
    at: Loc,
}

fn upstream(up: &Directive, workers: u32, d: &mut Draft) -> Result<(), Error> {
    let mut passive: Vec<Passive> = vec![];
    // The node names so far: a set, so that 50,000 servers stay linear.
    let mut seen = Names::default();
    let mut check: Option<Value> = None;
    let mut expect_alive: Option<(Value, Loc)> = None;
    for x in up.children() {
        let at = &x.at;
        match x.name.as_str() {
            "server" => passive.push(server(x, d, &mut seen)?),
            "least_conn" => d.gateway("balancer", json!("least_conn"), at),
            "random" => match x.args.first().map(String::as_str) {
                Some("two") => {
                    d.gateway("balancer", json!("random_two"), at);
                    if let Some(m) = x.args.get(1)
                        && m != "least_conn"
                    {
                        d.warn(at, format!("random two {m}: hcsim's random_two compares connections (least_conn)"));
                    }
                }
                _ => d.warn(
                    at,
                    "random (one draw) is not modelled: the model keeps round_robin",
                ),
            },
            "zone" => d.gateway("zone", json!(true), at),
            // gateway.pool, with the location's settings (pool.rs).
            "keepalive" | "keepalive_requests" | "keepalive_time" | "keepalive_timeout" => {}
            "ip_hash" => {
                if !x.args.is_empty() {
                    return Err(at.error("`ip_hash` takes no arguments"));
                }
                d.gateway("balancer", json!("ip_hash"), at);
                d.client_keys = Some(IMPORTED_KEYS);
            }
            "hash" => {
                let consistent = match x.args.as_slice() {
                    [_] => false,
                    [_, c] if c == "consistent" => true,
                    [_, p] => {
                        return Err(at.error(format!(
                            "invalid parameter \"{p}\" of `hash`: expected `consistent`"
                        )));
                    }
                    _ => return Err(at.error("`hash` takes a key and `consistent` at most")),
                };
                d.gateway(
                    "balancer",
                    json!({"hash": {"key": x.args[0], "consistent": consistent}}),
                    at,
                );
                d.client_keys = Some(IMPORTED_KEYS);
            }
            "least_time" | "sticky" => d.warn(
                at,
                format!(
                    "{} balancing is not modelled: the model keeps round_robin",
                    x.name
                ),
            ),
            "check" => check = Some(tengine_check(x, workers, d)?),
            "check_http_expect_alive" => {
                let classes: Vec<Value> = x
                    .args
                    .iter()
                    .map(|a| match a.as_str() {
                        "http_2xx" | "http_3xx" | "http_4xx" | "http_5xx" => {
                            Ok(json!(a.replace("http_", "http")))
                        }
                        _ => Err(at.error(format!(
                            "check_http_expect_alive: expected http_2xx, http_3xx, http_4xx or http_5xx, found \"{a}\""
                        ))),
                    })
                    .collect::<Result<_, _>>()?;
                expect_alive = Some((json!(classes), at.clone()));
            }
            _ => d.warn(at, format!("`{}` in an upstream is not modelled", x.name)),
        }
    }
    if d.nodes.is_empty() {
        return Err(up
            .at
            .error("this upstream has no `server`: expected at least one"));
    }
    if d.gateway
        .get("balancer")
        .and_then(|b| b["hash"]["consistent"].as_bool())
        == Some(true)
    {
        // nginx gives the servers of one address the same points and shares
        // them by smooth WRR; the model's `addr#2` is a server of its own.
        let twins: Vec<String> = d
            .nodes
            .iter()
            .filter_map(|n| n["name"].as_str())
            .filter(|n| n.contains('#'))
            .map(String::from)
            .collect();
        if let Some(at) = (!twins.is_empty()).then(|| up.at.clone()) {
            d.warn(
                &at,
                format!(
                    "servers listed twice under `hash ... consistent` are not modelled as one \
                     server name: {} get points of their own",
                    twins.join(", ")
                ),
            );
        }
    }
    // One policy for all nodes: the first primary server's settings.
    let first = passive
        .iter()
        .zip(&d.nodes)
        .find(|(_, n)| n.get("backup").is_none())
        .map(|(p, _)| p)
        .unwrap_or(&passive[0]);
    let (mf, ft) = (first.max_fails, first.fail_timeout);
    let mut warnings = vec![];
    for p in &passive {
        if p.max_fails != mf || p.fail_timeout != ft {
            warnings.push(p.at.warning(format!(
                "max_fails={} fail_timeout={} differs from the first server's (max_fails={mf} \
                 fail_timeout={ft}): the model applies one setting to every node, the first's",
                p.max_fails, p.fail_timeout
            )));
        }
    }
    d.warnings.extend(warnings);
    let first_at = first.at.clone();
    d.policy(
        json!({"kind": "max_fails", "max_fails": mf, "fail_timeout": ft}),
        &first_at,
    );
    if let Some(mut c) = check {
        if let Some((v, at)) = expect_alive {
            c["expect_alive"] = v;
            d.origin(&format!("policies[{}].expect_alive", d.policies.len()), &at);
        }
        let at = up
            .children()
            .iter()
            .find(|x| x.name == "check")
            .map(|x| x.at.clone())
            .unwrap_or_else(|| up.at.clone());
        d.policy(c, &at);
    } else if let Some((_, at)) = expect_alive {
        d.warn(&at, "check_http_expect_alive without `check` has no effect");
    }
    Ok(())
}

/// `server ADDRESS [parameters]` → a node.
/// The node names given so far, and the next `#k` to try per address: a
/// server's name is found in O(1), however many servers share an address.
#[derive(Default)]
struct Names {
    taken: HashSet<String>,
    next: HashMap<String, u64>,
}

impl Names {
    /// `addr`, or `addr#2`, `addr#3`… if taken.
    fn name(&mut self, addr: &str) -> String {
        let mut name = addr.to_string();
        if self.taken.contains(&name) {
            let k = self.next.entry(addr.to_string()).or_insert(2);
            loop {
                name = format!("{addr}#{k}");
                *k += 1;
                if !self.taken.contains(&name) {
                    break;
                }
            }
        }
        self.taken.insert(name.clone());
        name
    }
}

fn server(x: &Directive, d: &mut Draft, seen: &mut Names) -> Result<Passive, Error> {
    let at = &x.at;
    let Some(addr) = x.args.first() else {
        return Err(at.error("`server` needs an address: server HOST[:PORT] [parameters];"));
    };
    let name = seen.name(addr);
    let mut node = json!({ "name": name });
    let mut passive = Passive {
        max_fails: 1,
        fail_timeout: SimDuration::from_secs(10),
        at: at.clone(),
    };
    for p in &x.args[1..] {
        let (key, value) = match p.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (p.as_str(), None),
        };
        match (key, value) {
            ("weight", Some(v)) => {
                let w = int(v, at, "weight")?;
                if w == 0 {
                    return Err(at.error("invalid parameter \"weight=0\": expected at least 1"));
                }
                node["weight"] = json!(w);
            }
            ("max_fails", Some(v)) => passive.max_fails = int(v, at, "max_fails")?,
            ("fail_timeout", Some(v)) => {
                passive.fail_timeout = parse_time(v, true)
                    .map_err(|e| at.error(format!("invalid fail_timeout \"{v}\": {e}")))?
            }
            ("max_conns", Some(v)) => node["max_conns"] = json!(int(v, at, "max_conns")?),
            ("backup", None) => node["backup"] = json!(true),
            ("down", None) => node["down"] = json!(true),
            ("resolve", None) => d.warn(
                at,
                "server parameter `resolve` is not modelled: the model keeps the addresses the \
                 name has now (a DNS change that adds or removes one is not simulated)",
            ),
            ("drain", None) | ("slow_start" | "route" | "service", Some(_)) => {
                d.warn(at, format!("server parameter `{p}` is not modelled"))
            }
            _ => {
                return Err(at.error(format!(
                    "invalid parameter \"{p}\" of `server`: expected weight=, max_fails=, \
                     fail_timeout=, max_conns=, backup or down"
                )));
            }
        }
    }
    let i = d.nodes.len();
    d.nodes.push(node);
    d.origin(&format!("nodes[{i}]"), at);
    Ok(passive)
}

/// tengine / nginx_upstream_check_module:
/// `check interval=ms [fall=n] [rise=n] [timeout=ms] [default_down=bool] [type=…] [port=n]`.
fn tengine_check(x: &Directive, workers: u32, d: &mut Draft) -> Result<Value, Error> {
    let at = &x.at;
    let mut c = json!({"kind": "active_probe", "flavor": "tengine", "workers": workers});
    for p in &x.args {
        let Some((key, v)) = p.split_once('=') else {
            return Err(at.error(format!(
                "invalid parameter \"{p}\" of `check`: expected KEY=VALUE"
            )));
        };
        match key {
            "interval" | "timeout" => {
                let ms = int(v, at, key)?;
                c[key] = json!(SimDuration::from_millis(ms as u64));
            }
            "rise" | "fall" => c[key] = json!(int(v, at, key)?),
            "default_down" => match v {
                "true" => c["default_down"] = json!(true),
                "false" => c["default_down"] = json!(false),
                _ => return Err(at.error(format!("default_down: expected true or false, found \"{v}\""))),
            },
            "type" => match v {
                "tcp" => c["probe"] = json!("tcp"),
                "http" => c["probe"] = json!("http"),
                "ssl_hello" | "mysql" | "ajp" | "fastcgi" => {
                    d.warn(at, format!("check type={v} is modelled as a TCP connect"));
                    c["probe"] = json!("tcp");
                }
                _ => return Err(at.error(format!("check: unknown type \"{v}\": expected tcp, ssl_hello, http, mysql, ajp or fastcgi"))),
            },
            "port" => d.warn(at, "check port= is not modelled: probes go to the node"),
            _ => {
                return Err(at.error(format!(
                    "invalid parameter \"{p}\" of `check`: expected interval=, rise=, fall=, \
                     timeout=, default_down=, type= or port="
                )));
            }
        }
    }
    Ok(c)
}

/// The `proxy_*` settings in force at one level, each with its line.
#[derive(Clone, Debug, Default, PartialEq)]
struct Proxy {
    next_upstream: Option<(Vec<String>, Loc)>,
    tries: Option<(u32, Loc)>,
    timeout: Option<(SimDuration, Loc)>,
    connect: Option<(SimDuration, Loc)>,
    read: Option<(SimDuration, Loc)>,
    send: Option<(SimDuration, Loc)>,
}

impl Proxy {
    /// The settings of a level whose directives are `ds`, inheriting `self`.
    fn child(&self, ds: &[Directive]) -> Result<Proxy, Error> {
        let mut p = self.clone();
        for x in ds {
            let at = x.at.clone();
            let time = || directive_time(x);
            match x.name.as_str() {
                "proxy_next_upstream" => {
                    if x.args.is_empty() {
                        return Err(at.error("`proxy_next_upstream` needs at least one condition"));
                    }
                    p.next_upstream = Some((x.args.clone(), at));
                }
                "proxy_next_upstream_tries" => {
                    let [v] = x.args.as_slice() else {
                        return Err(at.error("`proxy_next_upstream_tries` takes one number"));
                    };
                    p.tries = Some((int(v, &at, &x.name)?, at));
                }
                "proxy_next_upstream_timeout" => p.timeout = Some((time()?, at)),
                "proxy_connect_timeout" => p.connect = Some((time()?, at)),
                "proxy_read_timeout" => p.read = Some((time()?, at)),
                "proxy_send_timeout" => p.send = Some((time()?, at)),
                _ => {}
            }
        }
        Ok(p)
    }

    fn values(&self) -> impl PartialEq + '_ {
        (
            self.next_upstream.as_ref().map(|v| &v.0),
            self.tries.as_ref().map(|v| v.0),
            self.timeout.as_ref().map(|v| v.0),
            self.connect.as_ref().map(|v| v.0),
            self.read.as_ref().map(|v| v.0),
        )
    }
}

/// A location (or `if` in one) proxying to the upstream, and its settings.
struct Use {
    at: Loc,
    proxy: Proxy,
    /// NGINX Plus `health_check` in the same block.
    health: Option<Directive>,
}

/// Walks server → location → nested location, collecting the uses of `name`.
fn walk(
    ds: &[Directive],
    inherited: &Proxy,
    name: &str,
    uses: &mut Vec<Use>,
    d: &mut Draft,
) -> Result<(), Error> {
    let here = inherited.child(ds)?;
    for x in ds {
        match x.name.as_str() {
            "proxy_pass" if x.args.first().is_some_and(|u| names_upstream(u, name)) => {
                uses.push(Use {
                    at: x.at.clone(),
                    proxy: here.clone(),
                    health: ds.iter().find(|h| h.name == "health_check").cloned(),
                })
            }
            "grpc_pass" | "fastcgi_pass" | "uwsgi_pass" | "scgi_pass" | "memcached_pass"
                if x.args.first().is_some_and(|u| names_upstream(u, name)) =>
            {
                d.warn(
                    &x.at,
                    format!(
                        "{} reaches this upstream with its own *_next_upstream and timeouts, \
                         which are not imported",
                        x.name
                    ),
                )
            }
            "server" | "location" | "if" | "limit_except" if x.block.is_some() => {
                walk(x.children(), &here, name, uses, d)?
            }
            _ => {}
        }
    }
    Ok(())
}

/// Does `proxy_pass URL` name the upstream `name`?
fn names_upstream(url: &str, name: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let host = rest.split('/').next().unwrap_or("");
    host == name
}

/// The `proxy_*` settings that reach the first location proxying to `name`.
fn proxy_settings(
    http: &[&Directive],
    (name, up_at): (&str, &Loc),
    d: &mut Draft,
) -> Result<Option<(Directive, SimDuration)>, Error> {
    let owned: Vec<Directive> = http.iter().map(|x| (*x).clone()).collect();
    let mut uses = vec![];
    walk(&owned, &Proxy::default(), name, &mut uses, d)?;
    let proxy = match uses.first() {
        Some(u) => {
            for other in &uses[1..] {
                if other.proxy.values() != u.proxy.values() {
                    d.warn(
                        &other.at,
                        format!(
                            "this location also proxies to `{name}`, with other proxy_* settings: \
                             the model follows the first one ({})",
                            u.at
                        ),
                    );
                }
            }
            d.notes.push(format!(
                "The proxy_* settings are those in force at {}.",
                u.at
            ));
            u.proxy.clone()
        }
        None => {
            let p = Proxy::default().child(&owned)?;
            // At the upstream's own line, not at the first directive of http.
            d.warn(
                up_at,
                format!(
                    "no `proxy_pass http://{name}` found: the model takes the http-level \
                     proxy_* settings"
                ),
            );
            p
        }
    };
    if let Some((words, at)) = &proxy.next_upstream {
        let mut kept = vec![];
        for w in words {
            match w.as_str() {
                "error" | "timeout" | "invalid_header" | "http_500" | "http_502" | "http_503"
                | "http_504" | "http_403" | "http_404" | "http_429" | "non_idempotent" | "off" => {
                    kept.push(json!(w))
                }
                "denied" => d.warn(at, "proxy_next_upstream denied is not modelled"),
                _ => {
                    return Err(at.error(format!(
                        "invalid proxy_next_upstream condition \"{w}\": expected error, timeout, \
                         invalid_header, http_500, http_502, http_503, http_504, http_403, \
                         http_404, http_429, non_idempotent or off"
                    )));
                }
            }
        }
        d.gateway("proxy_next_upstream", json!(kept), at);
    }
    if let Some((n, at)) = &proxy.tries {
        d.gateway("proxy_next_upstream_tries", json!(n), at);
    }
    for (key, v) in [
        ("proxy_next_upstream_timeout", &proxy.timeout),
        ("proxy_connect_timeout", &proxy.connect),
        ("proxy_read_timeout", &proxy.read),
    ] {
        if let Some((t, at)) = v {
            d.gateway(key, json!(t), at);
        }
    }
    if let Some((t, at)) = &proxy.send {
        // Armed only while a write to the upstream blocks
        // (`ngx_http_upstream_send_request`): a request of headers fits in
        // the socket buffers, so it never fires for the model's requests.
        // Measured on nginx 1.22.1 (docs/calibration.md): a GET to an
        // upstream that never reads ends at proxy_read_timeout; only a
        // 20 MB body met proxy_send_timeout.
        d.notes.push(format!(
            "proxy_send_timeout {t} ({at}) has no effect on the model's requests: they have no \
             body, and a request's headers fit in the socket buffers; only an upload that fills \
             them would meet it."
        ));
    }
    let read = proxy
        .read
        .as_ref()
        .map_or(SimDuration::from_secs(60), |r| r.0);
    Ok(uses
        .first()
        .and_then(|u| u.health.clone())
        .map(|h| (h, read)))
}

fn int(v: &str, at: &Loc, what: &str) -> Result<u32, Error> {
    v.parse::<u32>().map_err(|_| {
        at.error(format!(
            "invalid {what} \"{v}\": expected a whole number (0 to {})",
            u32::MAX
        ))
    })
}

/// `ngx_parse_time`: `is_sec` for settings in whole seconds (`ms` is then
/// an error), else milliseconds are allowed; a bare number is seconds.
/// The one time argument of directive `x` (`proxy_read_timeout 5s`).
fn directive_time(x: &Directive) -> Result<SimDuration, Error> {
    match x.args.as_slice() {
        [v] => {
            parse_time(v, false).map_err(|e| x.at.error(format!("invalid {} \"{v}\": {e}", x.name)))
        }
        _ => Err(x.at.error(format!("`{}` takes one time, e.g. 5s", x.name))),
    }
}

pub(crate) fn parse_time(text: &str, is_sec: bool) -> Result<SimDuration, String> {
    // Units, largest first, in microseconds.
    const UNITS: [(&str, u64); 8] = [
        ("y", 365 * 86_400_000_000),
        ("M", 30 * 86_400_000_000),
        ("w", 7 * 86_400_000_000),
        ("d", 86_400_000_000),
        ("h", 3_600_000_000),
        ("ms", 1_000),
        ("m", 60_000_000),
        ("s", 1_000_000),
    ];
    let rank = |u: &str| {
        ["y", "M", "w", "d", "h", "m", "s", "ms"]
            .iter()
            .position(|x| *x == u)
    };
    let bad = || {
        if is_sec {
            "expected a time in whole seconds such as 10s, 1m or 10 (ms is not allowed here)"
                .to_string()
        } else {
            "expected a time such as 500ms, 5s, 1m30s or 60 (seconds)".to_string()
        }
    };
    let mut total: u64 = 0;
    let mut last_rank: Option<usize> = None;
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if n == 0 {
            return Err(bad());
        }
        let value: u64 = rest[..n].parse().map_err(|_| bad())?;
        rest = &rest[n..];
        let unit = UNITS.iter().find(|(u, _)| rest.starts_with(u));
        let (micros, r) = match unit {
            Some((u, m)) => {
                if (is_sec && *u == "ms") || (!is_sec && *u == "y") {
                    return Err(bad());
                }
                rest = &rest[u.len()..];
                (*m, rank(u))
            }
            None if rest.trim().is_empty() => (1_000_000, Some(6)),
            None => return Err(bad()),
        };
        if last_rank.is_some_and(|l| r <= Some(l)) {
            return Err(bad());
        }
        last_rank = r;
        total = value
            .checked_mul(micros)
            .and_then(|v| v.checked_add(total))
            .ok_or_else(|| format!("\"{text}\" is too large"))?;
        rest = rest.trim_start();
    }
    Ok(SimDuration::from_micros(total))
}

#[cfg(test)]
mod tests;
