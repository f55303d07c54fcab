//! `ModelSpec` → `Model`: the checks serde cannot do, one function per
//! section of the file, then the warnings (legal but suspicious settings).

use super::distribution::{check_latency, drawn};
use super::document::{from_document, json_kind, read_document};
use super::limits::MAX_REPLICAS;
use super::model::*;
use super::model_spec::*;
use crate::diagnostics;
use crate::engine::{SimDuration, SimTime};
use crate::error::Error;
use crate::ids::NodeId;
use crate::policy::PolicySpec;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// A field (JSON path) and why its value is refused.
type Invalid = (String, String);

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Invalid {
    (field.into(), reason.into())
}

impl Model {
    /// Loads and validates a model file.
    pub fn load(path: &Path) -> Result<Model, Error> {
        let doc = read_document(path)?;
        Model::from_document(&doc, path)
    }

    pub fn from_document(doc: &Value, path: &Path) -> Result<Model, Error> {
        if !doc.is_object() {
            return Err(Error::Parse {
                path: path.to_path_buf(),
                field: String::new(),
                msg: format!(
                    "a model is a JSON object ({{\"name\": ..., \"duration\": ..., ...}}), found {}",
                    json_kind(doc)
                ),
            });
        }
        let spec: ModelSpec = from_document(doc, path)?;
        Model::from_spec(spec, path)
    }

    /// Checks what serde cannot: names, ranges, references between sections.
    /// The sections are checked in file order, so the first error reported
    /// is the first in the file.
    pub fn from_spec(spec: ModelSpec, path: &Path) -> Result<Model, Error> {
        Model::validated(spec).map_err(|(field, reason)| Error::Invalid {
            path: path.to_path_buf(),
            field,
            reason,
        })
    }

    fn validated(spec: ModelSpec) -> Result<Model, Invalid> {
        check_name(&spec.name)?;
        let (measure_from, measure_to) = run_window(&spec)?;
        check_latency_thresholds(&spec.latency_thresholds)?;
        let clients = clients(&spec.clients)?;
        let send_jitter = match &spec.clients {
            ClientsSpec::Open(OpenClientsSpec {
                send_jitter: Some(j),
                ..
            }) => Some(drawn(j, "clients.send_jitter", true)?),
            _ => None,
        };
        check_gateway(&spec.gateway)?;
        super::connection_checks::check_pool(&spec.gateway)?;
        check_nodes(&spec.nodes)?;
        check_max_queue(&spec)?;
        super::flavour_checks::check(&spec.gateway, &spec.nodes)?;
        super::flavor_checks::check(&spec)?;
        check_hashing(&spec)?;
        check_cookie(&spec)?;
        super::limits::check_size(&spec)?;
        let faults = faults(&spec)?;
        super::connection_checks::check_stop_accepting(&spec)?;
        let mut policies = policies(&spec)?;
        super::haproxy::check_marked(&spec.gateway, &spec.nodes, &policies)?;
        super::flavor_checks::bind(&spec.gateway, &mut policies);
        check_fleet(&spec.gateway, &policies)?;
        let mut nodes = spec.nodes.clone();
        let pods = match super::pods::pods(&spec)? {
            Some(_) if spec.gateway.balancer.is_hash() => {
                return Err(invalid(
                    "gateway.balancer",
                    "hash balancing over pods is not modelled: use round_robin, least_conn or \
                     random_two with pods",
                ));
            }
            Some((pods, surge)) => {
                nodes.extend(surge);
                super::pods::check_with_faults(&spec, &pods)?;
                Some(pods)
            }
            None => None,
        };
        Ok(Model {
            name: spec.name.clone(),
            seed: spec.seed,
            duration: spec.duration,
            measure_from,
            measure_to,
            bucket: spec.bucket(),
            latency_thresholds: spec.latency_thresholds.clone(),
            clients,
            send_jitter,
            gateway: spec.gateway.clone(),
            next_upstream: NextUpstreamMask::from_words(&spec.gateway.proxy_next_upstream),
            nodes,
            faults,
            pods,
            policies,
            keys: spec.clients.keys(),
            spec: std::sync::Arc::new(spec),
        })
    }
}

/// `policy` or `policies[i]`: where policy `i` was written.
pub(super) fn policy_field(spec: &ModelSpec, i: usize) -> String {
    if spec.policy.is_some() {
        "policy".to_string()
    } else {
        format!("policies[{i}]")
    }
}

/// The longest model name: a directory name (`NAME_MAX`).
const MAX_NAME_BYTES: usize = 255;

/// `name` names the output directory.
fn check_name(name: &str) -> Result<(), Invalid> {
    if name.trim().is_empty() {
        return Err(invalid("name", "must not be empty"));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(invalid(
            "name",
            format!(
                "names the output directory output/<name>/, so it must fit in a file name \
                 ({MAX_NAME_BYTES} bytes), found {} bytes: {:?}",
                name.len(),
                diagnostics::excerpt(name, diagnostics::EXCERPT_CHARS)
            ),
        ));
    }
    if name.contains(['/', '\\', '\0']) || name == "." || name == ".." {
        return Err(invalid(
            "name",
            format!(
                "names the output directory output/<name>/, so it cannot be \".\", \"..\" \
                 or contain `/` or `\\`, found {:?}",
                diagnostics::excerpt(name, diagnostics::EXCERPT_CHARS)
            ),
        ));
    }
    Ok(())
}

/// `latency_thresholds`: each positive, no two alike, a handful at most.
fn check_latency_thresholds(ts: &[SimDuration]) -> Result<(), Invalid> {
    let max = super::limits::MAX_LATENCY_THRESHOLDS;
    if ts.len() > max {
        return Err(invalid(
            "latency_thresholds",
            format!("at most {max} thresholds, found {}", ts.len()),
        ));
    }
    for (i, t) in ts.iter().enumerate() {
        let field = format!("latency_thresholds[{i}]");
        if t.is_zero() {
            return Err(invalid(&field, "must be positive"));
        }
        if ts[..i].contains(t) {
            return Err(invalid(&field, format!("{t} is listed twice")));
        }
    }
    Ok(())
}

/// `duration`, `timeline_bucket` and `measure`: the measurement window.
fn run_window(spec: &ModelSpec) -> Result<(SimTime, SimTime), Invalid> {
    if spec.duration.is_zero() {
        return Err(invalid("duration", "must be positive"));
    }
    if spec.timeline_bucket.is_some_and(|b| b.is_zero()) {
        return Err(invalid("timeline_bucket", "must be positive"));
    }
    let end = SimTime::ZERO + spec.duration;
    let Some(m) = &spec.measure else {
        return Ok((SimTime::ZERO, end));
    };
    let to = m.to.map(|d| SimTime::ZERO + d).unwrap_or(end);
    let from = SimTime::ZERO + m.from;
    if from >= to {
        return Err(invalid(
            "measure.from",
            format!(
                "must be before measure.to ({}), found {}",
                to.since_start(),
                m.from
            ),
        ));
    }
    if to > end {
        return Err(invalid(
            "measure.to",
            format!(
                "must not be after the end of the run ({}): shorten it with the run \
                 (--set measure.to={}) or leave it out to measure to the end",
                spec.duration, spec.duration
            ),
        ));
    }
    Ok((from, to))
}

/// The `clients` section.
fn clients(spec: &ClientsSpec) -> Result<Clients, Invalid> {
    let clients = match spec {
        ClientsSpec::Open(c) => {
            if !(c.rate_per_s.is_finite() && c.rate_per_s > 0.0) {
                return Err(invalid(
                    "clients.rate_per_s",
                    format!(
                        "must be a positive number of requests per second, found {}",
                        c.rate_per_s
                    ),
                ));
            }
            if c.rate_per_s > 10_000_000.0 {
                return Err(invalid(
                    "clients.rate_per_s",
                    "is above 10,000,000 requests per second",
                ));
            }
            Clients::Open {
                rate_per_s: c.rate_per_s,
                arrivals: c.arrivals,
                timeout: c.timeout,
                method: c.method,
                schedule: super::schedule::steps(&c.schedule)?,
            }
        }
        ClientsSpec::Closed(c) => {
            if c.concurrency == 0 {
                return Err(invalid("clients.concurrency", "must be at least 1"));
            }
            Clients::Closed {
                concurrency: c.concurrency,
                think_time: c.think_time,
                timeout: c.timeout,
                method: c.method,
            }
        }
    };
    if clients.timeout().is_some_and(|t| t.is_zero()) {
        return Err(invalid("clients.timeout", "must be positive"));
    }
    Ok(clients)
}

/// The most client keys: `ip_hash` reads 24 bits of each (the addresses
/// `10.x.y.z`).
pub const MAX_KEYS: u32 = 1 << 24;

/// `clients.keys` and the hash balancers (`ip_hash`, `hash`): nginx's, with
/// no backup servers (their directives do not allow `backup`), and a key
/// space to hash; HAProxy's `source` (backups allowed, as HAProxy does).
fn check_hashing(spec: &ModelSpec) -> Result<(), Invalid> {
    let keys = spec.clients.keys();
    if let Some(k) = keys
        && !(1..=MAX_KEYS).contains(&k)
    {
        return Err(invalid(
            "clients.keys",
            format!("must be between 1 and {MAX_KEYS} distinct client identities, found {k}"),
        ));
    }
    let g = &spec.gateway;
    let name = match &g.balancer {
        Balancer::IpHash => "ip_hash",
        Balancer::Hash(h) => {
            if h.key.is_empty() {
                return Err(invalid(
                    "gateway.balancer.hash.key",
                    "must not be empty (nginx balances an empty key by round-robin)",
                ));
            }
            "hash"
        }
        Balancer::Source(_) => return check_source(spec),
        _ => return Ok(()),
    };
    if g.flavor != GatewayFlavor::Nginx {
        return Err(invalid(
            "gateway.balancer",
            format!("`{name}` is nginx's balancer: it needs `\"flavor\": \"nginx\"`"),
        ));
    }
    if keys.is_none() {
        return Err(invalid(
            "clients.keys",
            format!(
                "`{name}` chooses the peer from the client's key: give the number of distinct \
                 clients, e.g. \"keys\": 1000"
            ),
        ));
    }
    if let Some(i) = spec.nodes.iter().position(|n| n.backup) {
        return Err(invalid(
            format!("nodes[{i}].backup"),
            format!("nginx does not allow `backup` servers with `{name}`"),
        ));
    }
    let total: u64 = spec.nodes.iter().map(|n| n.weight as u64).sum();
    if total * 160 > MAX_KEYS as u64 {
        return Err(invalid(
            "gateway.balancer",
            format!(
                "the weights add up to {total}: at most {} with a hash balancer",
                MAX_KEYS / 160
            ),
        ));
    }
    Ok(())
}

/// `gateway.haproxy.cookie`: client keys to hold the cookies, a name and
/// values HAProxy's `cookie` keyword accepts, values naming nodes.
fn check_cookie(spec: &ModelSpec) -> Result<(), Invalid> {
    let Some(c) = spec
        .gateway
        .haproxy
        .as_ref()
        .and_then(|h| h.cookie.as_ref())
    else {
        return Ok(());
    };
    let at = "gateway.haproxy.cookie";
    if spec.clients.keys().is_none() {
        return Err(invalid(
            "clients.keys",
            "cookie persistence is held per client: give the number of distinct clients, \
             e.g. \"keys\": 1000",
        ));
    }
    let token = |v: &str| {
        !v.is_empty()
            && v.bytes()
                .all(|b| b.is_ascii_graphic() && !b"\";,=\\".contains(&b))
    };
    if !token(&c.name) {
        return Err(invalid(
            format!("{at}.name"),
            format!(
                "must be a cookie name (printable, without spaces, `;`, `,`, `=` or quotes), \
                 found {:?}",
                c.name
            ),
        ));
    }
    for (node, v) in &c.values {
        if !spec.nodes.iter().any(|n| &n.name == node) {
            return Err(invalid(
                format!("{at}.values.{node}"),
                "names no node of `nodes`",
            ));
        }
        if !token(v) {
            return Err(invalid(
                format!("{at}.values.{node}"),
                format!(
                    "must be a cookie value (printable, without spaces, `;`, `,`, `=` or \
                     quotes), found {v:?}"
                ),
            ));
        }
    }
    if let Some(n) = spec
        .nodes
        .iter()
        .find(|n| c.values.is_empty() && !token(&n.name))
    {
        return Err(invalid(
            format!("{at}.values"),
            format!(
                "node {:?} is not a cookie value: give each node's value in `values`",
                n.name
            ),
        ));
    }
    Ok(())
}

/// HAProxy's `balance source`: the HAProxy path, client keys, and server
/// weights HAProxy accepts (at most 256).
fn check_source(spec: &ModelSpec) -> Result<(), Invalid> {
    if spec.gateway.flavor != GatewayFlavor::Haproxy {
        return Err(invalid(
            "gateway.balancer",
            "`source` is HAProxy's `balance source`: it needs `\"flavor\": \"haproxy\"`",
        ));
    }
    if spec.clients.keys().is_none() {
        return Err(invalid(
            "clients.keys",
            "`source` chooses the server from the client's address: give the number of \
             distinct clients, e.g. \"keys\": 1000",
        ));
    }
    if let Some(i) = spec.nodes.iter().position(|n| n.weight > 256) {
        return Err(invalid(
            format!("nodes[{i}].weight"),
            "HAProxy's server weights go up to 256",
        ));
    }
    Ok(())
}

/// The `gateway` section.
fn check_gateway(g: &GatewaySpec) -> Result<(), Invalid> {
    if g.replicas == 0 || g.replicas > MAX_REPLICAS {
        return Err(invalid(
            "gateway.replicas",
            format!("must be between 1 and {MAX_REPLICAS}, found {}", g.replicas),
        ));
    }
    if g.workers == 0 || g.workers > 1024 {
        return Err(invalid(
            "gateway.workers",
            format!("must be between 1 and 1024, found {}", g.workers),
        ));
    }
    if let Some(p) = g.clock_phase
        && p >= SimDuration::from_secs(1)
    {
        return Err(invalid(
            "gateway.clock_phase",
            format!("must be below 1s (a phase within one wall-clock second), found \"{p}\""),
        ));
    }
    if g.proxy_next_upstream.is_empty() {
        return Err(invalid(
            "gateway.proxy_next_upstream",
            "must list at least one condition (nginx needs one), or be [\"off\"]",
        ));
    }
    if let Some(t) = g.healthy_panic_threshold
        && !(0.0..=100.0).contains(&t)
    {
        return Err(invalid(
            "gateway.healthy_panic_threshold",
            format!("is a percentage (0..=100), found {t}"),
        ));
    }
    for (field, d) in [
        ("proxy_connect_timeout", g.proxy_connect_timeout),
        ("proxy_read_timeout", g.proxy_read_timeout),
    ] {
        if d.is_zero() {
            return Err(invalid(format!("gateway.{field}"), "must be positive"));
        }
    }
    match (g.flavor, &g.haproxy) {
        (GatewayFlavor::Nginx, Some(_)) => {
            return Err(invalid(
                "gateway.haproxy",
                "HAProxy settings need `\"flavor\": \"haproxy\"`",
            ));
        }
        (GatewayFlavor::Haproxy, Some(h)) => {
            for (field, d) in [
                ("timeout_connect", h.timeout_connect),
                ("timeout_server", h.timeout_server),
                ("timeout_queue", h.timeout_queue),
            ] {
                if d.is_some_and(|d| d.is_zero()) {
                    return Err(invalid(
                        format!("gateway.haproxy.{field}"),
                        "must be positive (omit it for none)",
                    ));
                }
            }
        }
        _ => {}
    }
    if let Some(ss) = &g.slow_start {
        ss.check(g.flavor, &g.balancer)
            .map_err(|(f, r)| invalid(format!("gateway.slow_start.{f}"), r))?;
    }
    if g.flavor == GatewayFlavor::Haproxy && g.workers > 1 {
        return Err(invalid(
            "gateway.workers",
            "HAProxy's threads share one state per server: leave `workers` at 1",
        ));
    }
    Ok(())
}

/// `gateway.replicas` with the rest of the model.
fn check_fleet(g: &GatewaySpec, policies: &[PolicySpec]) -> Result<(), Invalid> {
    if g.replicas == 1 {
        return Ok(());
    }
    if policies.len() * g.replicas as usize > u16::MAX as usize {
        return Err(invalid(
            "gateway.replicas",
            format!(
                "{} replicas × {} policies: at most {} policy instances",
                g.replicas,
                policies.len(),
                u16::MAX
            ),
        ));
    }
    Ok(())
}

/// The `nodes` section.
fn check_nodes(nodes: &[NodeSpec]) -> Result<(), Invalid> {
    if nodes.is_empty() {
        return Err(invalid("nodes", "the upstream needs at least one node"));
    }
    super::limits::check_node_count(nodes.len() as u64).map_err(|r| invalid("nodes", r))?;
    // Sorted names tell whether any repeats in a fraction of the time a set
    // of them takes (names written in order cost one pass): the set, which
    // finds the first repeat in file order, is kept for when one does.
    let mut sorted: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    sorted.sort_unstable();
    let repeats = sorted.windows(2).any(|w| w[0] == w[1]);
    let mut names = BTreeSet::new();
    for (i, n) in nodes.iter().enumerate() {
        let at = |f: &str| format!("nodes[{i}].{f}");
        if n.name.trim().is_empty() {
            return Err(invalid(at("name"), "must not be empty"));
        }
        if repeats && !names.insert(n.name.as_str()) {
            return Err(invalid(
                at("name"),
                format!("duplicate node name \"{}\"", n.name),
            ));
        }
        if n.weight == 0 {
            return Err(invalid(at("weight"), "must be at least 1"));
        }
        if n.workers == 0 {
            return Err(invalid(at("workers"), "must be at least 1"));
        }
        check_latency(&n.service_time).map_err(|(f, r)| (at(&format!("service_time.{f}")), r))?;
        super::connection_checks::check_node(i, n)?;
    }
    if nodes.iter().all(|n| n.down || n.backup) {
        return Err(invalid(
            "nodes",
            "every node is `down` or `backup`: the upstream has no usable primary server",
        ));
    }
    Ok(())
}

/// `nodes[].max_queue` is HAProxy's `maxqueue`.
fn check_max_queue(spec: &ModelSpec) -> Result<(), Invalid> {
    if spec.gateway.flavor == GatewayFlavor::Haproxy {
        return Ok(());
    }
    match spec.nodes.iter().position(|n| n.max_queue > 0) {
        Some(i) => Err(invalid(
            format!("nodes[{i}].max_queue"),
            "server queues are HAProxy's: `max_queue` needs `\"flavor\": \"haproxy\"`",
        )),
        None => Ok(()),
    }
}

/// The `faults` section: each names a node and a window inside the run, and
/// windows of exclusive kinds on one node do not overlap.
fn faults(spec: &ModelSpec) -> Result<Vec<Fault>, Invalid> {
    let end = SimTime::ZERO + spec.duration;
    let mut faults = Vec::with_capacity(spec.faults.len());
    // A map keeps many faults linear; the first node of a name, as `node_index`.
    // (Not built without faults: it would cost as much as the nodes' checks.)
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    if !spec.faults.is_empty() {
        by_name.reserve(spec.nodes.len());
        for (i, n) in spec.nodes.iter().enumerate() {
            by_name.entry(n.name.as_str()).or_insert(i);
        }
    }
    for (i, f) in spec.faults.iter().enumerate() {
        let at = |field: &str| format!("faults[{i}].{field}");
        if let FaultSpec::RollingUpdate(_) = f {
            // Not a fault of one node: `pods.rs` reads it.
            continue;
        }
        let (node, at_spec, for_, kind) = fault_kind(f).map_err(|(f, r)| (at(&f), r))?;
        let idx = match by_name.get(node.as_str()) {
            Some(&idx) => idx,
            None => node_index(&spec.nodes, node).map_err(|r| (at("node"), r))?,
        };
        let phase = match at_spec.fixed() {
            Some(_) => None,
            None => Some(drawn(at_spec, &at("at"), false)?),
        };
        let (start, latest) = at_spec.range();
        let restart_delay = match f {
            FaultSpec::Crash(w) => match &w.restart_delay {
                Some(d) => Some(drawn(d, &at("restart_delay"), false)?),
                None => None,
            },
            FaultSpec::Hang(w)
            | FaultSpec::Stop(w)
            | FaultSpec::Partition(w)
            | FaultSpec::StopAccepting(w)
                if w.restart_delay.is_some() =>
            {
                return Err(invalid(
                    at("restart_delay"),
                    format!(
                        "only a crash restarts; a {} fault has no restart_delay",
                        kind.name()
                    ),
                ));
            }
            _ => None,
        };
        if start >= spec.duration {
            return Err(invalid(
                at("at"),
                format!(
                    "starts at {start}, not before the end of the run ({})",
                    spec.duration
                ),
            ));
        }
        if let Some(d) = for_
            && d.is_zero()
        {
            return Err(invalid(at("for"), "must be positive"));
        }
        faults.push(Fault {
            node: NodeId(idx as u32),
            kind,
            start: SimTime::ZERO + start,
            end: latest
                .zip(for_)
                .map(|(l, d)| SimTime::ZERO + l.saturating_add(d))
                .filter(|&e| e < end),
            length: for_,
            phase,
            restart_delay,
        });
    }
    // Overlapping windows of exclusive kinds on one node are ambiguous.
    if let Some((i, j)) = first_overlap(&faults) {
        let (a, b) = (&faults[i], &faults[j]);
        return Err(invalid(
            format!("faults[{j}]"),
            format!(
                "overlaps faults[{i}] on node \"{}\" ({} and {} cannot be active at once)",
                spec.nodes[a.node.index()].name,
                a.kind.name(),
                b.kind.name()
            ),
        ));
    }
    Ok(faults)
}

/// Two faults that may not be active at once on one node, `(i, j)` with
/// `i < j`, if any: the same kind, or two availability faults
/// (crash, hang, stop, partition). O(n log n): the windows are sorted by
/// node, class and start, and each is compared with the furthest-reaching
/// window before it.
fn first_overlap(faults: &[Fault]) -> Option<(usize, usize)> {
    let class = |f: &Fault| {
        if f.kind.is_availability() {
            "availability"
        } else {
            f.kind.name()
        }
    };
    let mut order: Vec<usize> = (0..faults.len()).collect();
    order.sort_by_key(|&i| (faults[i].node, class(&faults[i]), faults[i].start, i));
    let mut found: Option<(usize, usize)> = None;
    // The window reaching furthest among those before, in the current group.
    let mut reach: Option<(usize, SimTime)> = None;
    for (k, &j) in order.iter().enumerate() {
        let b = &faults[j];
        let same_group = k > 0 && {
            let a = &faults[order[k - 1]];
            a.node == b.node && class(a) == class(b)
        };
        if !same_group {
            reach = None;
        }
        let b_end = b.end.unwrap_or(SimTime::MAX);
        if let Some((i, end)) = reach
            && b.start < end
        {
            let pair = (i.min(j), i.max(j));
            if found.is_none_or(|f| (pair.1, pair.0) < (f.1, f.0)) {
                found = Some(pair);
            }
        }
        if reach.is_none_or(|(_, end)| b_end > end) {
            reach = Some((j, b_end));
        }
    }
    found
}

/// A fault's node, start, length and kind, its parameters checked.
type FaultParts<'a> = (&'a String, &'a DurationDist, Option<SimDuration>, FaultKind);

fn fault_kind(f: &FaultSpec) -> Result<FaultParts<'_>, Invalid> {
    Ok(match f {
        FaultSpec::Crash(w) => (&w.node, &w.at, w.for_, FaultKind::Crash),
        FaultSpec::Hang(w) => (&w.node, &w.at, w.for_, FaultKind::Hang),
        FaultSpec::Stop(w) => (&w.node, &w.at, w.for_, FaultKind::Stop),
        FaultSpec::Partition(w) => (&w.node, &w.at, w.for_, FaultKind::Partition),
        FaultSpec::StopAccepting(w) => (&w.node, &w.at, w.for_, FaultKind::StopAccepting),
        FaultSpec::Flaky(x) => {
            if !(0.0..=1.0).contains(&x.p) {
                return Err(invalid(
                    "p",
                    format!("must be a probability in [0, 1], found {}", x.p),
                ));
            }
            if !(100..=599).contains(&x.status) {
                return Err(invalid(
                    "status",
                    format!("must be an HTTP status in 100..=599, found {}", x.status),
                ));
            }
            let kind = FaultKind::Flaky {
                p: x.p,
                error: x.error,
                status: x.status,
            };
            (&x.node, &x.at, x.for_, kind)
        }
        FaultSpec::Slow(x) => {
            if !(x.factor.is_finite() && x.factor > 0.0) {
                return Err(invalid(
                    "factor",
                    format!("must be a positive number, found {}", x.factor),
                ));
            }
            let kind = FaultKind::Slow {
                factor: x.factor,
                extra: x.extra,
            };
            (&x.node, &x.at, x.for_, kind)
        }
        FaultSpec::RollingUpdate(_) => {
            return Err(invalid(
                "kind",
                "a rolling update acts on the Deployment, not on one node",
            ));
        }
    })
}

/// The index of the node named `name`, or why there is none.
fn node_index(nodes: &[NodeSpec], name: &str) -> Result<usize, String> {
    if let Some(i) = nodes.iter().position(|n| n.name == name) {
        return Ok(i);
    }
    // A handful of names, each cut short: a model may have 20,000 of them.
    const SHOWN: usize = 10;
    let quote = |n: &str| {
        format!(
            "\"{}\"",
            diagnostics::excerpt(n, diagnostics::EXCERPT_CHARS)
        )
    };
    let mut known: Vec<_> = nodes.iter().take(SHOWN).map(|n| quote(&n.name)).collect();
    if nodes.len() > SHOWN {
        known.push(format!("and {} more", nodes.len() - SHOWN));
    }
    let hint = diagnostics::suggest(name, nodes.iter().map(|n| n.name.as_str()))
        .map(|s| format!("; did you mean {}?", quote(s)))
        .unwrap_or_default();
    Err(format!(
        "no node named {} (nodes are {}{hint})",
        quote(name),
        known.join(", ")
    ))
}

/// `policy` or `policies`, with the gateway's default when neither is given.
fn policies(spec: &ModelSpec) -> Result<Vec<PolicySpec>, Invalid> {
    if spec.policy.is_some() && !spec.policies.is_empty() {
        return Err(invalid(
            "policies",
            "give either `policy` or `policies`, not both",
        ));
    }
    let policies = match (&spec.policy, spec.policies.is_empty()) {
        (Some(p), _) => vec![p.clone()],
        (None, false) => spec.policies.clone(),
        // HAProxy has no passive check of its own (`observe` belongs to
        // `check`); Kong's defaults check nothing; Linkerd accrues failures
        // only when a Service asks; Caddy and Traefik check nothing unless
        // configured.
        (None, true) if spec.gateway.flavor != GatewayFlavor::Nginx => vec![PolicySpec::None],
        (None, true) => vec![PolicySpec::MaxFails(Default::default())],
    };
    for (i, p) in policies.iter().enumerate() {
        let base = policy_field(spec, i);
        p.validate().map_err(|(f, r)| (format!("{base}.{f}"), r))?;
    }
    Ok(policies)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn minimal() -> Value {
        json!({
            "name": "t", "duration": "10s",
            "clients": {"kind": "open", "rate_per_s": 10.0},
            "nodes": [{"name": "a"}, {"name": "b"}]
        })
    }

    fn check(doc: Value) -> Result<Model, String> {
        Model::from_document(&doc, Path::new("m.json")).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_nginx_defaults() {
        let s = check(minimal()).unwrap();
        assert_eq!(s.policies, vec![PolicySpec::MaxFails(Default::default())]);
        assert!(s.next_upstream.contains(NextUpstream::Error));
        assert!(s.next_upstream.contains(NextUpstream::Timeout));
        assert!(!s.next_upstream.contains(NextUpstream::Http503));
        assert_eq!(s.gateway.proxy_read_timeout, SimDuration::from_secs(60));
        assert_eq!(s.gateway.proxy_connect_timeout, SimDuration::from_secs(60));
    }

    #[test]
    fn unknown_fields_are_rejected_with_their_path() {
        let mut d = minimal();
        d["policy"] = json!({"kind": "max_fails", "fail_timout": "5s"});
        let e = check(d).unwrap_err();
        assert_eq!(
            e,
            "m.json: policy.fail_timout: unknown field `fail_timout`, expected `max_fails` \
             or `fail_timeout` (did you mean `fail_timeout`?)"
        );
        let mut d = minimal();
        d["nodes"][1]["wieght"] = json!(2);
        let e = check(d).unwrap_err();
        assert!(
            e.contains("nodes[1].wieght: unknown field `wieght`, expected one of `name`, `weight`"),
            "{e}"
        );
    }

    #[test]
    fn errors_inside_tagged_variants_name_the_full_path() {
        let cases = [
            (
                "/clients/rate_per_s",
                json!("x"),
                "clients.rate_per_s: invalid type: string \"x\", expected f64",
            ),
            (
                "/clients/timeot",
                json!("1s"),
                "clients.timeot: unknown field `timeot`",
            ),
            (
                "/faults",
                json!([{"kind": "flaky", "node": "a", "p": "x"}]),
                "faults[0].p: invalid type: string \"x\", expected f64",
            ),
            (
                "/faults",
                json!([{"kind": "crash", "node": "a", "at": 5}]),
                "faults[0].at: invalid type: integer `5`, expected a duration",
            ),
            (
                "/faults",
                json!([{"kind": "flaky", "node": "a"}]),
                "faults[0]: missing field `p`",
            ),
            (
                "/faults",
                json!([{"kind": "crsh", "node": "a"}]),
                "faults[0].kind: unknown variant `crsh`",
            ),
            (
                "/faults",
                json!([{"node": "a"}]),
                "faults[0]: missing field `kind`",
            ),
            (
                "/policy",
                json!({"kind": "none", "max_fails": 3}),
                "policy.max_fails: unknown field `max_fails`, there are no fields",
            ),
            (
                "/policy",
                json!({"kind": "nginx", "max_fails": -1}),
                "policy.max_fails: invalid value: integer `-1`, expected u32",
            ),
            (
                "/nodes/0/service_time",
                json!({"dist": "lognormal", "median": "1ms", "sigma": "x"}),
                "nodes[0].service_time.sigma: invalid type: string",
            ),
            (
                "/nodes/0/service_time",
                json!({"dist": "constant", "valeu": "1ms"}),
                "nodes[0].service_time.valeu: unknown field `valeu`, expected `value` (did you mean `value`?)",
            ),
            (
                "/nodes/1/service_time",
                json!({"dist": "uniform", "min": "1ms"}),
                "nodes[1].service_time: missing field `max`",
            ),
        ];
        for (ptr, value, want) in cases {
            let mut d = minimal();
            let (parent, key) = ptr.rsplit_once('/').unwrap();
            let target = if parent.is_empty() {
                &mut d
            } else {
                d.pointer_mut(parent).unwrap()
            };
            match target {
                Value::Object(m) => {
                    m.insert(key.to_string(), value);
                }
                other => *other.get_mut(key.parse::<usize>().unwrap()).unwrap() = value,
            }
            let e = check(d).unwrap_err();
            assert!(
                e.starts_with(&format!("m.json: {want}")),
                "{ptr}: got {e:?}, want {want:?}"
            );
        }
    }

    #[test]
    fn a_client_timeout_before_the_upstream_ones_warns_only_for_passive_checks() {
        let mut d = minimal();
        d["clients"]["timeout"] = json!("5s");
        let w = check(d.clone()).unwrap().warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].1.starts_with(
            "clients give up after 5s, no later than gateway.proxy_connect_timeout (60s) and \
             gateway.proxy_read_timeout (60s)"
        ));
        d["gateway"] = json!({"proxy_connect_timeout": "2s", "proxy_read_timeout": "4s"});
        assert_eq!(check(d.clone()).unwrap().warnings(), vec![]);
        d["gateway"] = json!({"flavor": "haproxy", "haproxy": {"timeout_connect": "1s"}});
        // HAProxy's own default is no passive policy
        assert_eq!(check(d.clone()).unwrap().warnings(), vec![]);
        d["policy"] = json!({"kind": "ratio_ejection"});
        let w = check(d.clone()).unwrap().warnings();
        assert!(
            w[0].1
                .contains("no later than gateway.haproxy.timeout_server (unset: never)"),
            "{w:?}"
        );
        d["gateway"] = json!({});
        d["policy"] =
            json!({"kind": "active_probe", "flavor": "generic", "interval": "1s", "timeout": "1s"});
        let w = check(d).unwrap().warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].0, "policy.timeout");
    }

    #[test]
    fn fault_on_unknown_node_names_the_path() {
        let mut d = minimal();
        d["faults"] = json!([{"kind": "crash", "node": "c", "at": "1s"}]);
        let e = check(d).unwrap_err();
        assert!(
            e.contains("m.json: faults[0].node: no node named \"c\""),
            "{e}"
        );
    }

    #[test]
    fn durations_need_units() {
        let mut d = minimal();
        d["duration"] = json!(10);
        let e = check(d).unwrap_err();
        assert!(e.contains("duration: invalid type"), "{e}");
        let mut d = minimal();
        d["duration"] = json!("10 sec");
        let e = check(d).unwrap_err();
        assert!(e.contains("expected a duration with a unit"), "{e}");
    }

    #[test]
    fn overlapping_exclusive_faults_are_rejected() {
        let mut d = minimal();
        d["faults"] = json!([
            {"kind": "crash", "node": "a", "at": "1s", "for": "3s"},
            {"kind": "hang", "node": "a", "at": "2s"}
        ]);
        let e = check(d).unwrap_err();
        assert!(e.contains("faults[1]: overlaps faults[0]"), "{e}");
    }

    #[test]
    fn many_faults_are_checked_in_n_log_n() {
        // 200,000 back-to-back crashes on two nodes, and flaky windows over
        // them (another class): valid, and checked at once.
        let mut d = minimal();
        d["duration"] = json!("1000s");
        let mut faults: Vec<Value> = (0..200_000)
            .map(|i| {
                let node = if i % 2 == 0 { "a" } else { "b" };
                json!({"kind": "crash", "node": node, "at": format!("{}ms", i / 2 * 5), "for": "5ms"})
            })
            .collect();
        faults.push(json!({"kind": "flaky", "node": "a", "p": 0.5}));
        d["faults"] = json!(faults.clone());
        // (A quadratic check would take minutes here: the suite's time bounds it.)
        check(d.clone()).unwrap();
        // One window reaching over the next gives an error naming both.
        faults[150_000]["for"] = json!("11ms");
        d["faults"] = json!(faults);
        let e = check(d).unwrap_err();
        assert!(
            e.contains("faults[150002]: overlaps faults[150000] on node \"a\""),
            "{e}"
        );
    }

    #[test]
    fn the_effective_model_is_a_fixed_point() {
        let doc = json!({
            "name": "t", "duration": "10s",
            "clients": {"kind": "open", "rate_per_s": 10.0},
            "nodes": [{"name": "a"}, {"name": "b"}],
            "faults": [{"kind": "crash", "node": "a", "at": "1s"}]
        });
        let model = Model::from_document(&doc, Path::new("m.json")).unwrap();
        let eff = serde_json::to_value(model.effective_spec()).unwrap();
        assert_eq!(
            eff["policy"],
            json!({"kind": "max_fails", "max_fails": 1, "fail_timeout": "10s"})
        );
        // The whole run is measured: derived, so not written out.
        assert_eq!(eff.get("measure"), None);
        assert_eq!(eff["clients"]["timeout"], Value::Null);
        assert_eq!(eff["clients"]["arrivals"], "poisson");
        assert_eq!(eff["faults"][0]["for"], Value::Null);
        assert_eq!(eff["gateway"]["proxy_read_timeout"], "60s");
        assert_eq!(
            eff["nodes"][1]["service_time"],
            json!({"dist": "constant", "value": "5ms"})
        );
        let again = Model::from_document(&eff, Path::new("m.json")).unwrap();
        assert_eq!(serde_json::to_value(again.effective_spec()).unwrap(), eff);
    }

    #[test]
    fn a_measurement_window_is_written_only_where_it_differs_from_the_run() {
        let doc = |measure: Value| {
            json!({
                "name": "t", "duration": "10s", "measure": measure,
                "clients": {"kind": "open", "rate_per_s": 10.0},
                "nodes": [{"name": "a"}]
            })
        };
        let eff = |measure: Value| {
            let model = Model::from_document(&doc(measure), Path::new("m.json")).unwrap();
            serde_json::to_value(model.effective_spec()).unwrap()["measure"].clone()
        };
        assert_eq!(eff(json!({"from": "0s", "to": "10s"})), Value::Null);
        assert_eq!(eff(json!({"from": "2s"})), json!({"from": "2s"}));
        assert_eq!(eff(json!({"to": "5s"})), json!({"from": "0s", "to": "5s"}));
        let e = Model::from_document(&doc(json!({"to": "20s"})), Path::new("m.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--set measure.to=10s"), "{e}");
    }
}
