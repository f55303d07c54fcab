//! HAProxy 2.6: a `backend` (or `listen`) with the `defaults` section it
//! inherits (the last one before it, or the one named by `from`), its
//! servers (with `default-server`), timeouts, retries, redispatch, `cookie
//! NAME insert` persistence with `option persist`, checks
//! (with their `http-check expect` status rules) and passive `observe`;
//! `spread-checks` from `global`.
//!
//! The syntax is HAProxy's (`cfgparse.c`, `parse_line`): one keyword and
//! its arguments per line, `#` comments, `"…"`/`'…'` quoting and `\`
//! escapes; a line starting with a section keyword opens a section. Times
//! are a number with an optional unit (`us ms s m h d`); a bare number is
//! milliseconds.

use super::{Draft, Format, Loc, Options, choose};
use crate::engine::SimDuration;
use crate::error::Error;
use crate::policy::active_probe::statuses;
use serde_json::{Map, Value, json};
use std::path::Path;

mod cookie;

const SECTIONS: [&str; 14] = [
    "global",
    "defaults",
    "frontend",
    "backend",
    "listen",
    "peers",
    "resolvers",
    "userlist",
    "mailers",
    "program",
    "http-errors",
    "cache",
    "ring",
    "log-forward",
];

/// One line: its words and where it is.
#[derive(Clone, Debug)]
struct Line {
    words: Vec<String>,
    at: Loc,
}

#[derive(Clone, Debug)]
struct Section {
    kind: String,
    name: Option<String>,
    /// `from NAME`: the defaults section it inherits.
    from: Option<String>,
    at: Loc,
    lines: Vec<Line>,
}

/// Splits one line into words (quotes, escapes, comments).
fn words(text: &str, at: &Loc) -> Result<Vec<String>, Error> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"') | None, '\\') => {
                let Some(n) = chars.next() else {
                    return Err(at.error("a `\\` ends the line: expected a character after it"));
                };
                cur.push(match n {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    other => other,
                });
                in_word = true;
            }
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '#') => break,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if let Some(q) = quote {
        return Err(at.error(format!(
            "unterminated string: expected a closing {q} on this line"
        )));
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// The header-rewriting keywords HAProxy 2.1 removed.
const REMOVED_REQ_RSP: [&str; 22] = [
    "reqadd",
    "reqallow",
    "reqdel",
    "reqdeny",
    "reqiallow",
    "reqidel",
    "reqideny",
    "reqipass",
    "reqirep",
    "reqitarpit",
    "reqpass",
    "reqrep",
    "reqtarpit",
    "rspadd",
    "rspdel",
    "rspdeny",
    "rspidel",
    "rspideny",
    "rspirep",
    "rsprep",
    "reqisetbe",
    "reqsetbe",
];

fn sections(path: &Path, text: &str) -> Result<Vec<Section>, Error> {
    let mut out: Vec<Section> = vec![];
    // HAProxy 2.6 stops at a last line without its line feed.
    if !text.is_empty() && !text.ends_with('\n') {
        let n = text.lines().count();
        return Err(Loc::new(path, n).error(
            "HAProxy 2.6 refuses this file: its last line has no line feed (\"Missing LF on \
             last line, file might have been truncated\"); end the file with a newline",
        ));
    }
    for (i, raw) in text.lines().enumerate() {
        let at = Loc::new(path, i + 1);
        let w = words(raw, &at)?;
        let Some(first) = w.first() else { continue };
        if SECTIONS.contains(&first.as_str()) {
            let mut name = w.get(1).cloned();
            let mut from = None;
            if let Some(i) = w.iter().position(|x| x == "from") {
                from = w.get(i + 1).cloned();
                if from.is_none() {
                    return Err(at.error("`from` needs the name of a defaults section"));
                }
                if i == 1 {
                    name = None;
                }
            }
            if matches!(first.as_str(), "backend" | "listen" | "frontend") && name.is_none() {
                return Err(at.error(format!("`{first}` needs a name")));
            }
            // `listen stats :1936`: an address on the section line, which
            // HAProxy 1.x took and 2.6 refuses.
            if matches!(first.as_str(), "listen" | "frontend") && w.len() > 2 && w[2] != "from" {
                return Err(at.error(format!(
                    "HAProxy 2.6 refuses this file: an address on the `{first}` line (\"{}\"); \
                     HAProxy 2.x takes it from a `bind` line (\"please use the 'bind' keyword for \
                     listening addresses\")",
                    crate::diagnostics::shorten(&w[2])
                )));
            }
            out.push(Section {
                kind: first.clone(),
                name,
                from,
                at,
                lines: vec![],
            });
            continue;
        }
        // Keywords HAProxy 2.1 removed: a file with them does not start.
        if let Some(new) = match first.as_str() {
            "contimeout" => Some("timeout connect"),
            "clitimeout" => Some("timeout client"),
            "srvtimeout" => Some("timeout server"),
            "redispatch" => Some("option redispatch"),
            _ => None,
        } {
            return Err(at.error(format!(
                "HAProxy 2.6 refuses this file: `{first}` is not supported since HAProxy 2.1; \
                 use `{new}`"
            )));
        }
        if REMOVED_REQ_RSP.contains(&first.as_str()) {
            return Err(at.error(format!(
                "HAProxy 2.6 refuses this file: `{first}` is not supported since HAProxy 2.1; \
                 use an `http-request` or `http-response` rule"
            )));
        }
        match out.last_mut() {
            Some(s) => s.lines.push(Line { words: w, at }),
            None => {
                return Err(at.error(format!(
                    "unknown keyword \"{first}\" out of a section: expected a section such as \
                     global, defaults, frontend, backend or listen"
                )));
            }
        }
    }
    Ok(out)
}

pub(super) fn import(path: &Path, text: &str, opts: &Options) -> Result<(Draft, String), Error> {
    let secs = sections(path, text)?;
    // A section without servers (a `stats` page, a stick table, a backend
    // that only denies) is no target beside those that have some.
    let has = |s: &Section, kws: &[&str]| {
        s.lines
            .iter()
            .any(|l| l.words.first().is_some_and(|w| kws.contains(&w.as_str())))
    };
    let proxies: Vec<usize> = (0..secs.len())
        .filter(|&i| matches!(secs[i].kind.as_str(), "backend" | "listen"))
        .collect();
    let serving = |i: &usize| has(&secs[*i], &["server", "server-template"]);
    let any_serving = proxies.iter().any(serving);
    let backends: Vec<usize> = proxies
        .iter()
        .copied()
        .filter(|i| serving(i) || !(any_serving || has(&secs[*i], &["stats", "stick-table"])))
        .collect();
    let names: Vec<(String, Loc)> = backends
        .iter()
        .map(|&i| (secs[i].name.clone().unwrap_or_default(), secs[i].at.clone()))
        .collect();
    let kind = |k: usize| secs[backends[k]].kind.clone();
    let k = choose(&names, &kind, opts.target.as_deref(), Format::Haproxy, path)?;
    let bi = backends[k];
    let backend = &secs[bi];
    let chain = defaults_chain(&secs, bi)?;
    let mut d = Draft::default();
    d.gateway("flavor", json!("haproxy"), &backend.at);
    let mut b = Backend::default();
    // The farthest ancestor first: each level overrides the one it inherits.
    for s in chain.iter().rev().map(|&i| &secs[i]).chain([backend]) {
        b.section();
        for l in &s.lines {
            b.line(l, &mut d)?;
        }
    }
    let global: Vec<&Line> = secs
        .iter()
        .filter(|s| s.kind == "global")
        .flat_map(|s| &s.lines)
        .collect();
    b.finish(&global, &mut d)?;
    Ok((d, names[k].0.clone()))
}

/// The `defaults` sections section `i` inherits, nearest first: the one its
/// `from` names (or the last one before it), then the one that one's `from`
/// names, and so on (HAProxy 2.6's named defaults). A `defaults` without
/// `from` inherits nothing: a new defaults section resets the settings. A
/// `from` naming a section defined later is an error, as in HAProxy (so a
/// cycle `a from b` / `b from a` is one).
fn defaults_chain(secs: &[Section], i: usize) -> Result<Vec<usize>, Error> {
    let mut chain: Vec<usize> = vec![];
    let mut cur = i;
    loop {
        let s = &secs[cur];
        let next = match &s.from {
            Some(n) => Some(
                secs.iter()
                    .position(|x| x.kind == "defaults" && x.name.as_deref() == Some(n))
                    .ok_or_else(|| s.at.error(format!("no defaults section named \"{n}\"")))?,
            ),
            None if s.kind == "defaults" => None,
            None => secs[..cur].iter().rposition(|x| x.kind == "defaults"),
        };
        let Some(next) = next else {
            return Ok(chain);
        };
        // HAProxy looks `from` up among the sections read so far, so a
        // later one (and with it any cycle) is refused.
        if next > cur {
            return Err(s.at.error(format!(
                "`from {}` names the defaults section of line {}, after this one: HAProxy \
                 refuses it (\"defaults section not found\"); a section inherits from one \
                 defined before it",
                secs[next].name.as_deref().unwrap_or(""),
                secs[next].at.line
            )));
        }
        if next == i || chain.contains(&next) {
            let names: Vec<String> = [i]
                .iter()
                .chain(&chain)
                .chain([&next])
                .map(|&k| secs[k].name.clone().unwrap_or_else(|| "(unnamed)".into()))
                .collect();
            return Err(s.at.error(format!(
                "`from {}` makes a cycle of defaults sections ({}): each must inherit from one \
                 defined before it",
                secs[next].name.as_deref().unwrap_or(""),
                names.join(" → ")
            )));
        }
        chain.push(next);
        cur = next;
    }
}

/// A server's parameters as written (after `default-server`).
#[derive(Clone, Debug, Default)]
struct ServerParams {
    check: bool,
    /// Check settings: `inter`, `fastinter`, `downinter`, `rise`, `fall`,
    /// `observe`, `error_limit`, `on_error` in the policy's spelling.
    checks: Map<String, Value>,
    node: Map<String, Value>,
    /// `slowstart`: the window and its line (`None`: none, or `slowstart 0`).
    slowstart: Option<(SimDuration, Loc)>,
    /// `cookie VALUE`.
    cookie: Option<String>,
}

#[derive(Debug, Default)]
struct Backend {
    default_server: ServerParams,
    servers: Vec<(String, ServerParams, Loc)>,
    haproxy: Map<String, Value>,
    httpchk: Option<(bool, Loc)>,
    timeout_check: Option<(SimDuration, Loc)>,
    /// `http-reuse` and the other connection settings (pool.rs).
    pool: super::pool::HaproxyPool,
    /// The `http-check` rules the backend's checks run.
    rules: CheckRules,
    /// `balance source`, where it was written (a later `balance` clears it).
    source: Option<Loc>,
    /// `hash-type`: consistent, avalanche, and where.
    hash_type: Option<(bool, bool, Loc)>,
    /// `cookie NAME insert …`: the name and where (rewrite and prefix
    /// modes are not modelled and leave it unset).
    cookie: Option<(String, Loc)>,
    /// `option persist`, where.
    persist: Option<Loc>,
}

/// `hash-type {map-based|consistent} [FUNCTION [avalanche]]` as
/// cfgparse-listen.c reads it: `consistent` alone implies `avalanche`; a
/// function is one of `sdbm`, `djb2`, `wt6`, `crc32` (none of them applies to
/// source hashing); anything else is refused, as HAProxy refuses it.
fn hash_type(args: &[&str], at: &Loc) -> Result<(bool, bool), Error> {
    let consistent = match args.first() {
        Some(&"consistent") => true,
        Some(&"map-based") => false,
        Some(m) => {
            return Err(at.error(format!(
                "hash-type {m}: HAProxy 2.6 only supports 'consistent' and 'map-based'"
            )));
        }
        None => return Err(at.error("`hash-type` needs 'consistent' or 'map-based'")),
    };
    match args[1..] {
        [] => Ok((consistent, consistent)),
        [f, ref m @ ..] => {
            if !["sdbm", "djb2", "wt6", "crc32"].contains(&f) {
                return Err(at.error(format!(
                    "hash-type function \"{f}\": HAProxy 2.6 only supports 'sdbm', 'djb2', \
                     'crc32', or 'wt6'"
                )));
            }
            match m {
                [] => Ok((consistent, false)),
                ["avalanche"] => Ok((consistent, true)),
                [x, ..] => Err(at.error(format!(
                    "hash-type modifier \"{x}\": HAProxy 2.6 only supports 'avalanche'"
                ))),
            }
        }
    }
}

/// One `http-check` step.
#[derive(Debug)]
enum CheckRule {
    Send,
    Connect,
    Expect(Expect, Loc),
}

/// What an `http-check expect` rule looks at.
#[derive(Debug)]
enum Expect {
    /// `[!] status 200-399,404`: inclusive ranges, as written.
    Status(Vec<(u32, u32)>, bool),
    /// `[!] rstatus REGEX`.
    Rstatus(String, bool),
    /// A match on what the model's answers do not have: `string`,
    /// `rstring`, `string-lf` (the body) or `hdr`/`fhdr` (a header); `!`.
    Unmodelled(&'static str, String, bool),
}

/// The `http-check` ruleset a proxy uses (`tcpcheck.c`,
/// `proxy_parse_httpcheck` / `proxy_parse_httpchk_opt`): each section that
/// has an `option httpchk` or an `http-check` rule builds a ruleset of its
/// own (named after the section), which replaces the one it inherited.
#[derive(Debug, Default)]
struct CheckRules {
    /// The current section has started its own ruleset.
    own: bool,
    rules: Vec<CheckRule>,
}

impl CheckRules {
    fn own(&mut self) {
        if !self.own {
            self.own = true;
            self.rules.clear();
        }
    }
}

impl Backend {
    /// The lines that follow are another section's.
    fn section(&mut self) {
        self.rules.own = false;
    }

    fn line(&mut self, l: &Line, d: &mut Draft) -> Result<(), Error> {
        let at = &l.at;
        let w: Vec<&str> = l.words.iter().map(String::as_str).collect();
        let (neg, w) = match w.as_slice() {
            ["no", rest @ ..] => (true, rest.to_vec()),
            _ => (false, w),
        };
        if self.pool.line((neg, &w), at, d, time)? {
            return Ok(());
        }
        match w.as_slice() {
            ["balance", "source", ..] => self.source = Some(at.clone()),
            ["hash-type", args @ ..] => {
                let (c, a) = hash_type(args, at)?;
                self.hash_type = Some((c, a, at.clone()));
            }
            ["balance", alg, ..] => {
                self.source = None;
                let b = match *alg {
                    "roundrobin" => Some("round_robin"),
                    "leastconn" => Some("least_conn"),
                    "random" | "random(2)" => Some("random_two"),
                    _ => None,
                };
                match b {
                    Some(b) => d.gateway("balancer", json!(b), at),
                    None => d.warn(
                        at,
                        format!("balance {alg} is not modelled: the model keeps roundrobin"),
                    ),
                }
            }
            ["retries", n] => {
                self.haproxy
                    .insert("retries".into(), json!(int(n, at, "retries")?));
                d.origin("gateway.haproxy.retries", at);
            }
            ["option", "redispatch", rest @ ..] => {
                let v = match (neg, rest) {
                    (true, _) => json!(false),
                    (false, []) => json!(true),
                    (false, [n]) => json!(n.parse::<i32>().map_err(|_| {
                        at.error(format!("option redispatch: expected an interval (a whole number), found \"{n}\""))
                    })?),
                    _ => return Err(at.error("option redispatch takes at most one interval")),
                };
                self.haproxy.insert("redispatch".into(), v);
                d.origin("gateway.haproxy.redispatch", at);
            }
            ["option", "httpchk", ..] => {
                self.httpchk = Some((!neg, at.clone()));
                if !neg {
                    self.rules.own();
                }
            }
            [
                "option",
                chk @ ("tcp-check" | "ssl-hello-chk" | "mysql-check" | "pgsql-check"
                | "redis-check" | "smtpchk" | "ldap-check" | "spop-check"),
                ..,
            ] if !neg => {
                d.warn(
                    at,
                    format!("option {chk} is modelled as a TCP connect check"),
                );
                self.httpchk = Some((false, at.clone()));
            }
            ["option", "persist"] => self.persist = (!neg).then(|| at.clone()),
            [
                "option",
                o @ ("allbackups" | "persist" | "prefer-last-server" | "abortonclose"),
                ..,
            ] if !neg => d.warn(at, format!("option {o} is not modelled")),
            ["http-check", "disable-on-404", ..] => {
                d.warn(at, "http-check disable-on-404 is not modelled")
            }
            ["http-check", "send-state", ..] => {}
            ["http-check", "expect", args @ ..] => {
                let e = expect_rule(args, at, d)?;
                self.rules.own();
                self.rules.rules.push(CheckRule::Expect(e, at.clone()));
            }
            ["http-check", step, ..] => {
                self.rules.own();
                match *step {
                    "send" => self.rules.rules.push(CheckRule::Send),
                    "connect" => self.rules.rules.push(CheckRule::Connect),
                    // `comment`, `set-var`, `unset-var`: no step of their own.
                    _ => {}
                }
            }
            ["timeout", which, v] => {
                let t = time(v, at)?;
                match *which {
                    // `queue` matters only with a server `maxconn`.
                    "connect" | "server" | "queue" => {
                        self.haproxy.insert(format!("timeout_{which}"), json!(t));
                        d.origin(&format!("gateway.haproxy.timeout_{which}"), at);
                    }
                    "check" => self.timeout_check = Some((t, at.clone())),
                    _ => {} // client-side timeouts
                }
            }
            ["timeout", ..] => {
                return Err(at.error("`timeout` takes a name and a time, e.g. timeout connect 5s"));
            }
            ["retry-on", rest @ ..] if rest != ["conn-failure"] => d.warn(
                at,
                "retry-on beyond conn-failure (layer-7 retries) is not modelled",
            ),
            ["default-server", params @ ..] => {
                let base = self.default_server.clone();
                self.default_server = server_params(base, params, at, d)?;
            }
            ["server", name, addr, params @ ..] => {
                let mut p = server_params(self.default_server.clone(), params, at, d)?;
                // `check port N` on the traffic's own port is no other endpoint.
                let own = addr
                    .rsplit_once(':')
                    .and_then(|(_, port)| port.parse::<u64>().ok());
                if p.node.get("check_port").and_then(Value::as_u64) == own {
                    p.node.remove("check_port");
                }
                // `addr` of the server's own host is no other host.
                let host = addr.rsplit_once(':').map_or(*addr, |(h, _)| h);
                let host = host.trim_start_matches('[').trim_end_matches(']');
                if p.node.get("check_addr").and_then(Value::as_str) == Some(host) {
                    p.node.remove("check_addr");
                }
                self.servers.push((name.to_string(), p, at.clone()));
            }
            ["server", ..] => {
                return Err(
                    at.error("`server` needs a name and an address: server NAME ADDRESS [params]")
                );
            }
            ["cookie", name, opts @ ..] => self.cookie = cookie::cookie_line(name, opts, at, d)?,
            ["cookie"] => return Err(at.error("`cookie` needs a name: cookie NAME [insert] …")),
            [
                kw @ ("stick-table"
                | "stick"
                | "use-server"
                | "server-template"
                | "hash-balance-factor"),
                ..,
            ] => d.warn(at, format!("`{kw}` is not modelled")),
            _ => {}
        }
        Ok(())
    }

    fn finish(mut self, global: &[&Line], d: &mut Draft) -> Result<(), Error> {
        std::mem::take(&mut self.pool).finish(d);
        if self.servers.is_empty() {
            let at = d.first_origin().cloned();
            return Err(at
                .unwrap_or_else(|| Loc::new(Path::new("?"), 1))
                .error("this backend has no `server`: expected at least one"));
        }
        self.finish_cookie(d);
        if !self.haproxy.is_empty() {
            d.gateway
                .insert("haproxy".into(), Value::Object(self.haproxy));
        }
        if let Some(at) = self.source.take() {
            let (consistent, avalanche) = self
                .hash_type
                .as_ref()
                .map_or((false, false), |h| (h.0, h.1));
            d.gateway(
                "balancer",
                json!({"source": {"consistent": consistent, "avalanche": avalanche}}),
                &at,
            );
            if let Some((_, _, ht)) = &self.hash_type {
                d.origin("gateway.balancer.source.consistent", ht);
                d.origin("gateway.balancer.source.avalanche", ht);
            }
            d.client_keys = Some(super::nginx::IMPORTED_KEYS);
        }
        slow_start(&self.servers, d);
        for (name, p, at) in &self.servers {
            let mut node = p.node.clone();
            node.insert("name".into(), json!(name));
            let i = d.nodes.len();
            d.nodes.push(Value::Object(node));
            d.origin(&format!("nodes[{i}]"), at);
        }
        let checked: Vec<&(String, ServerParams, Loc)> =
            self.servers.iter().filter(|s| s.1.check).collect();
        let Some(first) = checked.first() else {
            for (_, p, at) in &self.servers {
                if p.checks.contains_key("observe") {
                    d.warn(
                        at,
                        "observe without `check` is inert in HAProxy (and in the model)",
                    );
                }
            }
            return Ok(());
        };
        for (name, p, at) in &self.servers {
            if !p.check {
                d.warn(
                    at,
                    format!(
                        "server {name} has no `check`, but the model's checks probe every node"
                    ),
                );
            } else if p.checks != first.1.checks {
                d.warn(at, format!(
                    "server {name}'s check settings differ from {}'s: the model applies one setting to every node, the first checked server's",
                    first.0
                ));
            }
        }
        let mut policy = json!({"kind": "active_probe", "flavor": "haproxy"});
        for (k, v) in &first.1.checks {
            policy[k] = v.clone();
        }
        if let Some((http, _)) = &self.httpchk {
            policy["probe"] = json!(if *http { "http" } else { "tcp" });
        }
        let http = match &self.httpchk {
            Some((true, at)) => Some(at),
            _ => None,
        };
        let expect = self.rules.expect(http, d);
        if let Some((t, _)) = &self.timeout_check {
            policy["timeout_check"] = json!(t);
        }
        if let Some(t) = d
            .gateway
            .get("haproxy")
            .and_then(|h| h.get("timeout_connect"))
        {
            policy["timeout_connect"] = t.clone();
        }
        for l in global {
            match l
                .words
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .as_slice()
            {
                ["spread-checks", n] => {
                    policy["spread_checks"] = json!(int(n, &l.at, "spread-checks")?)
                }
                ["max-spread-checks", t] => policy["max_spread_checks"] = json!(time(t, &l.at)?),
                _ => {}
            }
        }
        let pi = d.policies.len();
        if let Some((rules, ats)) = &expect {
            policy["expect"] = json!(rules);
            // The first rule's line stands for `expect` (and `expect[0]`).
            for (k, at) in ats.iter().enumerate() {
                if k == 0 {
                    d.origin(&format!("policies[{pi}].expect"), at);
                } else {
                    d.origin(&format!("policies[{pi}].expect[{k}]"), at);
                }
            }
        }
        d.policy(policy, &first.2);
        Ok(())
    }
}

impl CheckRules {
    /// The `expect` rules of the policy, with the line of each (None: the
    /// default, HAProxy's implicit `http-check expect status 200-399`).
    /// `http`: the `option httpchk` line, if the checks are HTTP checks.
    fn expect(&self, http: Option<&Loc>, d: &mut Draft) -> Option<(Vec<Value>, Vec<Loc>)> {
        let expects: Vec<(&Expect, &Loc)> = self
            .rules
            .iter()
            .filter_map(|r| match r {
                CheckRule::Expect(e, at) => Some((e, at)),
                _ => None,
            })
            .collect();
        let &(_, first_at) = expects.first()?;
        let Some(httpchk) = http else {
            d.warn(
                first_at,
                "http-check expect has no effect: the checks are not HTTP checks (no `option \
                 httpchk`, or a later check option replaced it), and HAProxy ignores the rules",
            );
            return None;
        };
        let sends = self
            .rules
            .iter()
            .filter(|r| matches!(r, CheckRule::Send))
            .count();
        if sends > 1 {
            d.warn(
                first_at,
                "several http-check send/expect steps are modelled as one check request, whose \
                 answer every expect rule must accept",
            );
        }
        let mut out: Vec<Value> = vec![];
        let mut ats: Vec<Loc> = vec![];
        for (e, at) in &expects {
            if let Some(rule) = status_rule(e, at, d) {
                out.push(rule);
                ats.push((*at).clone());
            }
        }
        // check_proxy_tcpcheck: an implicit `expect status 200-399` after
        // a last `send` (or the one `option httpchk` writes).
        let implicit = !matches!(
            self.rules.last(),
            Some(CheckRule::Expect(..) | CheckRule::Connect)
        );
        if implicit {
            out.push(json!({"status": ["200-399"]}));
            ats.push(httpchk.clone());
        }
        if out.is_empty() {
            // Only matches the model cannot see, all assumed to pass.
            d.warn(
                first_at,
                "no http-check expect rule looks at the status and the body or header matches \
                 are assumed to pass, so every status passes the check (HAProxy adds its \
                 implicit `expect status 200-399` only after a last `send`)",
            );
            out.push(json!({"status": ["100-599"]}));
            ats.push(first_at.clone());
        }
        Some((out, ats))
    }
}

/// One `expect` rule of the policy, or None for a negated match on what
/// the model's answers lack (a warning: it is assumed to pass); a match on
/// them is modelled as `status 200-399` (a warning too).
fn status_rule(e: &Expect, at: &Loc, d: &mut Draft) -> Option<Value> {
    let with = |mut r: Value, negate: bool| {
        if negate {
            r["negate"] = json!(true);
        }
        r
    };
    Some(match e {
        Expect::Status(ranges, negate) => {
            // A node answers 100–599: a code beyond adds nothing.
            let items: Vec<String> = ranges
                .iter()
                .filter_map(|&(a, b)| {
                    let (a, b) = (a.max(100), b.min(599));
                    (a <= b).then(|| {
                        if a == b {
                            a.to_string()
                        } else {
                            format!("{a}-{b}")
                        }
                    })
                })
                .collect();
            if items.is_empty() {
                // Matches no status a node gives.
                json!({"status": ["100-599"], "negate": !negate})
            } else {
                with(json!({ "status": items }), *negate)
            }
        }
        Expect::Rstatus(re, negate) => match statuses::Regex::parse(re) {
            Ok(_) => with(json!({ "rstatus": re }), *negate),
            Err(e) => {
                let re = crate::diagnostics::shorten(re);
                d.warn(
                    at,
                    format!(
                        "http-check expect rstatus \"{re}\" is not modelled: {e}; the rule is \
                         modelled as `status 200-399`"
                    ),
                );
                json!({"status": ["200-399"]})
            }
        },
        Expect::Unmodelled(what, pattern, negate) => {
            let pattern = crate::diagnostics::shorten(pattern);
            let lacks = if what.contains("hdr") {
                "headers"
            } else {
                "body"
            };
            if *negate {
                d.warn(
                    at,
                    format!(
                        "http-check expect ! {what} \"{pattern}\" is not modelled (the model's \
                         answers have no {lacks}): the match is assumed to pass"
                    ),
                );
                return None;
            }
            // What a check's page holds when the service is well is seldom
            // on its error page: HAProxy 2.6.12 marks a server answering 503
            // without the string DOWN under `expect string OK`.
            d.warn(
                at,
                format!(
                    "http-check expect {what} \"{pattern}\" is not modelled (the model's \
                     answers have no {lacks}): it is modelled as matching a 2xx or 3xx answer \
                     and no other (`status 200-399`)"
                ),
            );
            json!({"status": ["200-399"]})
        }
    })
}

/// The arguments of `http-check expect` (`parse_tcpcheck_expect`): options
/// (`min-recv N`, `comment`, `ok-status`, `error-status`, `tout-status`,
/// `on-success`, `on-error`, `status-code`), `!` and one pattern.
fn expect_rule(args: &[&str], at: &Loc, d: &mut Draft) -> Result<Expect, Error> {
    let mut negate = false;
    let mut i = 0;
    let mut found: Option<Expect> = None;
    let refuse = |why: String| {
        at.error(format!(
            "HAProxy 2.6 refuses this file: http-check expect: {why}"
        ))
    };
    while i < args.len() {
        let mut a = args[i];
        if a.starts_with('!') {
            while let Some(rest) = a.strip_prefix('!') {
                negate = !negate;
                a = rest;
            }
            if a.is_empty() {
                i += 1;
                continue;
            }
        }
        let value = |i: usize| {
            args.get(i + 1)
                .copied()
                .ok_or_else(|| refuse(format!("'{a}' expects an argument")))
        };
        match a {
            "min-recv" | "comment" | "on-success" | "on-error" | "status-code" => {
                value(i)?;
                i += 1;
            }
            "ok-status" | "error-status" | "tout-status" => {
                value(i)?;
                d.warn(
                    at,
                    format!(
                        "http-check expect {a} is not modelled: a check passes or fails as its \
                         rules say"
                    ),
                );
                i += 1;
            }
            "status" | "rstatus" | "string" | "rstring" | "string-lf" | "hdr" | "fhdr" => {
                if found.is_some() {
                    return Err(refuse("only one pattern expected".into()));
                }
                let pattern = value(i)?;
                i += 1;
                found = Some(match a {
                    "status" => Expect::Status(status_list(pattern).map_err(refuse)?, negate),
                    "rstatus" => {
                        if let Err(statuses::RegexError::Invalid(w)) =
                            statuses::Regex::parse(pattern)
                        {
                            return Err(refuse(format!(
                                "rstatus \"{}\" is not a valid regular expression: {w}",
                                crate::diagnostics::shorten(pattern)
                            )));
                        }
                        Expect::Rstatus(pattern.to_string(), negate)
                    }
                    "hdr" | "fhdr" => {
                        // `hdr name PATTERN [value PATTERN]`: the rest of the line.
                        let rest = args[i..].join(" ");
                        i = args.len();
                        Expect::Unmodelled(if a == "hdr" { "hdr" } else { "fhdr" }, rest, negate)
                    }
                    "string" => Expect::Unmodelled("string", pattern.to_string(), negate),
                    "rstring" => Expect::Unmodelled("rstring", pattern.to_string(), negate),
                    _ => Expect::Unmodelled("string-lf", pattern.to_string(), negate),
                });
            }
            other => {
                return Err(refuse(format!(
                    "expected a pattern such as `status 200-399` or `rstatus ^[23]`, found \"{}\"",
                    crate::diagnostics::shorten(other)
                )));
            }
        }
        i += 1;
    }
    found.ok_or_else(|| refuse("expects at least a matching pattern".into()))
}

/// `status`'s list (`parse_tcpcheck_expect`, `TCPCHK_EXPECT_HTTP_STATUS`):
/// codes and ranges separated by commas, each `N` or `N-M`, `N <= M`.
fn status_list(pattern: &str) -> Result<Vec<(u32, u32)>, String> {
    let mut out = vec![];
    for item in pattern.split(',') {
        let num = |x: &str| -> Result<u32, String> {
            // read_uint: the digits there are (none: 0).
            if let Some(c) = x.chars().find(|c| !c.is_ascii_digit()) {
                return Err(format!(
                    "invalid character '{c}' in the list of status codes"
                ));
            }
            Ok(if x.is_empty() {
                0
            } else {
                x.parse().unwrap_or(u32::MAX)
            })
        };
        let (a, b) = match item.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let a = num(item)?;
                (a, a)
            }
        };
        if a > b {
            return Err(format!("invalid range of status codes '{pattern}'"));
        }
        out.push((a, b));
    }
    Ok(out)
}

/// `slowstart` (`srv_parse_slowstart`): the model's `gateway.slow_start`
/// is one window for every node, the first server's that has one.
fn slow_start(servers: &[(String, ServerParams, Loc)], d: &mut Draft) {
    let Some((first, (window, at))) = servers
        .iter()
        .find_map(|(name, p, _)| p.slowstart.as_ref().map(|s| (name, s)))
    else {
        return;
    };
    for (name, p, sat) in servers {
        if p.slowstart.as_ref().map(|s| s.0) != Some(*window) {
            d.warn(
                sat,
                format!(
                    "server {name}'s slowstart differs from {first}'s: the model ramps \
                     every returning node over one window, {first}'s {window}"
                ),
            );
        }
    }
    d.gateway("slow_start", json!({ "window": window }), at);
}

/// Applies `params` (a server line's or `default-server`'s) over `base`.
fn server_params(
    mut p: ServerParams,
    params: &[&str],
    at: &Loc,
    d: &mut Draft,
) -> Result<ServerParams, Error> {
    let mut i = 0;
    while i < params.len() {
        let kw = params[i];
        let value = || {
            params
                .get(i + 1)
                .copied()
                .ok_or_else(|| at.error(format!("server keyword `{kw}` expects a value")))
        };
        match kw {
            "check" => p.check = true,
            "no-check" => p.check = false,
            "backup" => {
                p.node.insert("backup".into(), json!(true));
            }
            "no-backup" => {
                p.node.remove("backup");
            }
            "disabled" => {
                p.node.insert("down".into(), json!(true));
            }
            "enabled" => {
                p.node.remove("down");
            }
            "inter" | "fastinter" | "downinter" => {
                let t = time(value()?, at)?;
                p.checks.insert(kw.into(), json!(t));
                i += 1;
            }
            "rise" | "fall" | "error-limit" => {
                let n = int(value()?, at, kw)?;
                p.checks.insert(kw.replace('-', "_"), json!(n));
                i += 1;
            }
            "observe" => {
                let v = value()?;
                if !matches!(v, "layer4" | "layer7") {
                    return Err(at.error(format!("observe: expected layer4 or layer7, found \"{v}\"")));
                }
                p.checks.insert("observe".into(), json!(v));
                i += 1;
            }
            "on-error" => {
                let v = value()?;
                if !matches!(v, "fastinter" | "fail-check" | "sudden-death" | "mark-down") {
                    return Err(at.error(format!(
                        "on-error: expected fastinter, fail-check, sudden-death or mark-down, found \"{v}\""
                    )));
                }
                p.checks.insert("on_error".into(), json!(v));
                i += 1;
            }
            "weight" => {
                let w = int(value()?, at, kw)?;
                if w > 256 {
                    return Err(at.error(format!("weight {w}: expected 0 to 256")));
                }
                if w == 0 {
                    d.warn(at, "weight 0 (no new traffic) is modelled as a `down` node");
                    p.node.insert("down".into(), json!(true));
                } else {
                    p.node.insert("weight".into(), json!(w));
                }
                i += 1;
            }
            "maxconn" => {
                p.node.insert("max_conns".into(), json!(int(value()?, at, kw)?));
                i += 1;
            }
            "maxqueue" => {
                p.node.insert("max_queue".into(), json!(int(value()?, at, kw)?));
                i += 1;
            }
            "cookie" => {
                p.cookie = Some(value()?.to_string());
                i += 1;
            }
            "slowstart" => {
                let t = time(value()?, at)?;
                p.slowstart = (!t.is_zero()).then(|| (t, at.clone()));
                i += 1;
            }
            "port" => {
                let v = value()?;
                let port = v
                    .parse::<u16>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| at.error(format!("port: expected a port number 1 to 65535, found \"{v}\"")))?;
                p.node.insert("check_port".into(), json!(port));
                i += 1;
            }
            // `srv_parse_addr` (src/server.c): the checks' address, an IP.
            "addr" => {
                let v = value()?;
                let ip = v.parse::<std::net::IpAddr>().map_err(|_| {
                    at.error(format!("addr: expected an IPv4 or IPv6 address, found \"{v}\""))
                })?;
                p.node.insert("check_addr".into(), json!(ip.to_string()));
                i += 1;
            }
            // `srv_parse_on_marked_down` / `_up` (src/server.c): one action each.
            "on-marked-down" | "on-marked-up" => {
                let (v, field, want) = match kw {
                    "on-marked-down" => (value()?, "on_marked_down", "shutdown-sessions"),
                    _ => (value()?, "on_marked_up", "shutdown-backup-sessions"),
                };
                if v != want {
                    return Err(at.error(format!("{kw}: expected {want}, found \"{v}\"")));
                }
                p.node.insert(field.into(), json!(want.replace('-', "_")));
                i += 1;
            }
            "agent-port" | "agent-inter" | "agent-addr" | "agent-send" | "track"
            | "minconn"
            | "resolvers" => {
                value()?;
                d.warn(at, format!("server keyword `{kw}` is not modelled"));
                i += 1;
            }
            "agent-check" | "non-stick" => d.warn(at, format!("server keyword `{kw}` is not modelled")),
            // Transport settings: no effect on health or routing.
            "ssl" | "no-ssl" | "send-proxy" | "send-proxy-v2" | "check-ssl" | "check-send-proxy"
            | "no-tls-tickets" | "tfo" | "allow-0rtt" | "no-send-proxy" | "check-via-socks4" => {}
            "id" | "sni" | "ca-file" | "crt" | "crl-file" | "verify" | "verifyhost" | "ciphers"
            | "ciphersuites" | "ssl-min-ver" | "ssl-max-ver" | "alpn" | "check-alpn" | "check-proto"
            | "check-sni" | "proto" | "namespace" | "pool-max-conn" | "pool-purge-delay"
            | "pool-low-conn" | "source" | "usesrc" | "redir" | "tcp-ut" | "ws" | "max-reuse"
            | "init-addr" | "resolve-prefer" | "resolve-opts" | "resolve-net" | "proxy-v2-options"
            | "socks4" | "curves" | "sigalgs" | "npn" | "shard" | "log-proto" | "hash-key" => {
                value()?;
                i += 1;
            }
            _ => d.warn(
                at,
                format!("unknown server keyword `{kw}`: not modelled (if it takes a value, that value is read as a keyword too)"),
            ),
        }
        i += 1;
    }
    Ok(p)
}

fn int(v: &str, at: &Loc, what: &str) -> Result<u32, Error> {
    v.parse::<u32>()
        .map_err(|_| at.error(format!("{what}: expected a whole number, found \"{v}\"")))
}

/// An HAProxy time: a number and an optional unit (`us ms s m h d`), milliseconds by default.
pub(crate) fn time(v: &str, at: &Loc) -> Result<SimDuration, Error> {
    let n = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let bad = || {
        at.error(format!(
            "invalid time \"{v}\": expected a number with an optional unit (us, ms, s, m, h, d; default ms)"
        ))
    };
    if n == 0 {
        return Err(bad());
    }
    let value: u64 = v[..n].parse().map_err(|_| bad())?;
    let micros: u64 = match &v[n..] {
        "" | "ms" => 1_000,
        "us" => 1,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => return Err(bad()),
    };
    value
        .checked_mul(micros)
        .map(SimDuration::from_micros)
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests;
