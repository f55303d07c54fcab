//! Envoy: a cluster of a bootstrap (`static_resources.clusters`), a list of
//! clusters, xDS `resources`, or one cluster on its own — its endpoints,
//! `lb_policy`, `connect_timeout`, `outlier_detection`, `health_checks`,
//! `common_lb_config.healthy_panic_threshold` — and the `timeout` and
//! `retry_policy` of the first route that points at it.
//!
//! Envoy's retries map onto nginx's retry settings: `num_retries` + 1
//! tries, `retry_on` words to `proxy_next_upstream` conditions (Envoy also
//! retries non-idempotent requests); the route's `timeout` bounds the
//! response (`proxy_read_timeout`, or `per_try_timeout` when set) and the
//! retries (`proxy_next_upstream_timeout`).

use super::yaml::{self, Lines};
use super::{Draft, Format, Loc, Options, choose};
use crate::error::Error;
use crate::policy::active_probe::statuses::{StatusRange, StatusSet, envoy_ranges};
use serde_json::{Map, Value, json};
use std::path::Path;

/// `outlier_detection` fields hcsim models (Envoy's own names).
const OD_FIELDS: [&str; 24] = [
    "consecutive_5xx",
    "enforcing_consecutive_5xx",
    "consecutive_gateway_failure",
    "enforcing_consecutive_gateway_failure",
    "split_external_local_origin_errors",
    "consecutive_local_origin_failure",
    "enforcing_consecutive_local_origin_failure",
    "interval",
    "base_ejection_time",
    "max_ejection_time",
    "max_ejection_time_jitter",
    "max_ejection_percent",
    "always_eject_one_host",
    "successful_active_health_check_uneject_host",
    "success_rate_minimum_hosts",
    "success_rate_request_volume",
    "success_rate_stdev_factor",
    "enforcing_success_rate",
    "enforcing_local_origin_success_rate",
    "failure_percentage_threshold",
    "failure_percentage_minimum_hosts",
    "failure_percentage_request_volume",
    "enforcing_failure_percentage",
    "enforcing_failure_percentage_local_origin",
];

const OD_DURATIONS: [&str; 4] = [
    "interval",
    "base_ejection_time",
    "max_ejection_time",
    "max_ejection_time_jitter",
];

const HC_DURATIONS: [&str; 9] = [
    "timeout",
    "interval",
    "initial_jitter",
    "interval_jitter",
    "no_traffic_interval",
    "no_traffic_healthy_interval",
    "unhealthy_interval",
    "unhealthy_edge_interval",
    "healthy_edge_interval",
];

/// Envoy's proto3 JSON names (`outlierDetection`, `lbPolicy`,
/// `loadAssignment`…, which Envoy accepts beside the field names) → the
/// field names, by protoc's `json_name` rule run backwards: an upper-case
/// letter is `_` and its lower case. A field with `_` before a digit
/// (`consecutive_5xx`, JSON `consecutive5xx`) is found by running the rule
/// forwards on the names hcsim reads. Keys that are not identifiers
/// (`envoy.extensions…HttpProtocolOptions`, `@type`) are left alone.
fn snake_keys(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let camel: Vec<String> = m
                .keys()
                .filter(|k| {
                    k.starts_with(|c: char| c.is_ascii_lowercase())
                        && k.chars().all(|c| c.is_ascii_alphanumeric())
                        && snake(k) != **k
                })
                .cloned()
                .collect();
            for k in camel {
                let s = snake(&k);
                if !m.contains_key(&s)
                    && let Some(x) = m.remove(&k)
                {
                    m.insert(s, x);
                }
            }
            m.values_mut().for_each(snake_keys);
        }
        Value::Array(a) => a.iter_mut().for_each(snake_keys),
        _ => {}
    }
}

/// The field name of a proto3 JSON name.
fn snake(camel: &str) -> String {
    if let Some(f) = OD_FIELDS.iter().find(|f| yaml::json_name(f) == camel) {
        return f.to_string();
    }
    let mut out = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The clusters of a document: a bootstrap's `static_resources.clusters`,
/// `clusters`, xDS `resources`, an admin `config_dump`'s
/// `static_clusters`/`dynamic_active_clusters` (each `{cluster: …}`), a
/// list of clusters, or one cluster.
fn clusters(v: &Value) -> Vec<&Value> {
    let mut out = vec![];
    collect_clusters(v, 0, &mut out);
    out
}

fn looks_like_cluster(v: &Value) -> bool {
    v.get("name").is_some_and(Value::is_string)
        && [
            "load_assignment",
            "lb_policy",
            "connect_timeout",
            "type",
            "hosts",
            "eds_cluster_config",
        ]
        .iter()
        .any(|k| v.get(k).is_some())
}

fn collect_clusters<'a>(v: &'a Value, depth: usize, out: &mut Vec<&'a Value>) {
    if depth > 8 {
        return;
    }
    if let Some(a) = v.as_array() {
        for x in a {
            if looks_like_cluster(x) {
                out.push(x);
            } else {
                collect_clusters(x, depth + 1, out);
            }
        }
        return;
    }
    let Some(m) = v.as_object() else { return };
    // A dump's `{version_info, cluster: {…}}`.
    if let Some(c) = m
        .get("cluster")
        .filter(|c| c.is_object() && looks_like_cluster(c))
    {
        out.push(c);
        return;
    }
    if m.get("@type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.ends_with(".Cluster"))
        || (depth == 0 && looks_like_cluster(v))
    {
        out.push(v);
        return;
    }
    if let Some(cs) = v
        .pointer("/static_resources/clusters")
        .or_else(|| v.get("clusters"))
        .and_then(Value::as_array)
    {
        out.extend(cs.iter());
        return;
    }
    for k in [
        "static_clusters",
        "dynamic_active_clusters",
        "dynamic_warming_clusters",
    ] {
        for c in m.get(k).and_then(Value::as_array).into_iter().flatten() {
            if let Some(c) = c.get("cluster") {
                out.push(c);
            }
        }
    }
    for k in ["resources", "configs"] {
        if let Some(x) = m.get(k) {
            collect_clusters(x, depth + 1, out);
        }
    }
}

pub(super) fn import(path: &Path, text: &str, opts: &Options) -> Result<(Draft, String), Error> {
    let mut docs = yaml::documents(path, text)?;
    for d in &mut docs {
        snake_keys(&mut d.value);
    }
    let lines = Lines::new(path, text);
    let mut found: Vec<(&Value, &Value, usize)> = vec![];
    for doc in &docs {
        for c in clusters(&doc.value) {
            found.push((c, &doc.value, doc.line));
        }
    }
    let mut names = vec![];
    // Each cluster's `name` after the previous one's: one pass however many.
    let (mut doc_line, mut cursor) = (0, 0);
    for (c, _, line) in &found {
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        if *line != doc_line {
            doc_line = *line;
            cursor = lines.key(*line, "clusters");
        }
        let at = lines
            .find_value(cursor, "name", name)
            .unwrap_or_else(|| lines.key_value(cursor, "name", name));
        cursor = at + 1;
        names.push((name.to_string(), lines.at(at)));
    }
    let i = choose(
        &names,
        &|_| "cluster".into(),
        opts.target.as_deref(),
        Format::Envoy,
        path,
    )?;
    let (cluster, doc, _) = found[i];
    let name = names[i].0.clone();
    let anchor = names[i].1.line;
    let mut d = Draft::default();
    let r = Reader {
        lines: &lines,
        anchor,
        d: &mut d,
    };
    r.cluster(cluster, opts)?;
    route(doc, &name, &lines, anchor, &mut d)?;
    super::pool::envoy_retry_on_reset(&mut d);
    Ok((d, name))
}

struct Reader<'a> {
    lines: &'a Lines<'a>,
    /// The line of the cluster's `name`.
    anchor: usize,
    d: &'a mut Draft,
}

impl Reader<'_> {
    fn at(&self, keys: &[&str]) -> Loc {
        self.lines.at(self.lines.path(self.anchor, keys))
    }

    fn duration(&self, v: &Value, keys: &[&str]) -> Result<crate::engine::SimDuration, Error> {
        yaml::duration(v).map_err(|e| self.at(keys).error(format!("{}: {e}", keys.join("."))))
    }

    /// `round_robin_lb_config` / `least_request_lb_config`: their
    /// `slow_start_config` (`EdfLoadBalancerBase`'s `slow_start_window`,
    /// `aggression`, `min_weight_percent`) as `gateway.slow_start`, when it
    /// is the config of the cluster's `lb_policy`.
    fn slow_start(&mut self, c: &Value, lb: &str) -> Result<(), Error> {
        for (k, policy) in [
            ("round_robin_lb_config", "ROUND_ROBIN"),
            ("least_request_lb_config", "LEAST_REQUEST"),
        ] {
            let Some(cfg) = c.get(k).and_then(Value::as_object) else {
                continue;
            };
            for other in cfg.keys().filter(|x| *x != "slow_start_config") {
                let at = self.at(&[k, other]);
                self.d.warn(&at, format!("{k}.{other} is not modelled"));
            }
            let Some(ss) = cfg.get("slow_start_config") else {
                continue;
            };
            let at = self.at(&[k, "slow_start_config"]);
            if lb != policy {
                self.d.warn(
                    &at,
                    format!(
                        "{k}.slow_start_config is inert with lb_policy {lb} (Envoy ignores it)"
                    ),
                );
                continue;
            }
            let path = [k, "slow_start_config", "slow_start_window"];
            let Some(w) = ss.get("slow_start_window") else {
                return Err(at.error(format!(
                    "{k}.slow_start_config: expected a slow_start_window"
                )));
            };
            let mut spec = json!({ "window": self.duration(w, &path)? });
            // `aggression` is a RuntimeDouble, `min_weight_percent` a Percent.
            for (field, key, inner) in [
                ("aggression", "aggression", "default_value"),
                ("min_weight_percent", "min_weight_percent", "value"),
            ] {
                let Some(v) = ss.get(key) else { continue };
                let Some(x) = v.get(inner).unwrap_or(v).as_f64() else {
                    return Err(self.at(&[k, "slow_start_config", key]).error(format!(
                        "{key}: expected a number {{{inner}: N}}, found {}",
                        shown(v)
                    )));
                };
                spec[field] = json!(x);
            }
            self.d.gateway("slow_start", spec, &at);
        }
        Ok(())
    }

    fn cluster(mut self, c: &Value, opts: &Options) -> Result<(), Error> {
        let at = self.at(&[]);
        if c.get("hosts").is_some() && c.get("load_assignment").is_none() {
            return Err(self.at(&["hosts"]).error(
                "`hosts` is Envoy's v2 API, which Envoy refuses since 1.18 (the v3 API has no \
                 such field): list the endpoints in load_assignment",
            ));
        }
        self.endpoints(c, opts)?;
        let t = match c.get("connect_timeout") {
            Some(v) => self.duration(v, &["connect_timeout"])?,
            None => crate::engine::SimDuration::from_secs(5),
        };
        let cat = self.at(&["connect_timeout"]);
        self.d.gateway("proxy_connect_timeout", json!(t), &cat);
        let lb = match c.get("lb_policy") {
            None => "ROUND_ROBIN",
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(self.at(&["lb_policy"]).error(format!(
                    "lb_policy: expected a name such as ROUND_ROBIN or LEAST_REQUEST, found {}",
                    shown(other)
                )));
            }
        };
        match lb {
            "ROUND_ROBIN" => {}
            "LEAST_REQUEST" => {
                let at = self.at(&["lb_policy"]);
                self.d.gateway("balancer", json!("random_two"), &at);
            }
            other => {
                let at = self.at(&["lb_policy"]);
                self.d.warn(
                    &at,
                    format!("lb_policy {other} is not modelled: the model keeps round_robin"),
                );
            }
        }
        let panic = c
            .pointer("/common_lb_config/healthy_panic_threshold")
            .map(|v| v.get("value").unwrap_or(v).as_f64());
        let pat = self.at(&["common_lb_config", "healthy_panic_threshold"]);
        match panic {
            Some(Some(p)) => self.d.gateway("healthy_panic_threshold", json!(p), &pat),
            Some(None) => {
                return Err(pat.error("healthy_panic_threshold: expected a percentage {value: N}"));
            }
            None => self.d.gateway("healthy_panic_threshold", json!(50.0), &at),
        }
        let mut any = false;
        if let Some(od) = c.get("outlier_detection") {
            self.outlier_detection(od)?;
            any = true;
        }
        let single;
        let hcs: &[Value] = match c.get("health_checks") {
            None | Some(Value::Null) => &[],
            Some(Value::Array(a)) => a,
            // One health check written without its list (protobuf's JSON
            // reader takes a single value for a repeated field).
            Some(one @ Value::Object(m)) if !m.is_empty() => {
                single = [one.clone()];
                &single
            }
            Some(other) => {
                return Err(self.at(&["health_checks"]).error(format!(
                    "health_checks: expected a list of health checks, found {}",
                    shown(other)
                )));
            }
        };
        if let Some(hc) = hcs.first() {
            self.health_check(hc)?;
            any = true;
            if hcs.len() > 1 {
                let at = self.at(&["health_checks"]);
                self.d
                    .warn(&at, "only the first of several health_checks is modelled");
            }
        }
        if !any {
            self.d.policy(json!({"kind": "none"}), &at);
        }
        let (lines, anchor) = (self.lines, self.anchor);
        super::pool::envoy(c, &|k: &[&str]| lines.at(lines.path(anchor, k)), self.d)?;
        self.slow_start(c, lb)?;
        for k in ["upstream_connection_options", "lb_subset_config"] {
            if c.get(k).is_some() {
                let at = self.at(&[k]);
                self.d.warn(&at, format!("{k} is not modelled"));
            }
        }
        Ok(())
    }

    /// `load_assignment.endpoints[].lb_endpoints[]`: a node per endpoint,
    /// each found on its line by a cursor that only moves forward (one
    /// pass over the file however many endpoints).
    fn endpoints(&mut self, c: &Value, opts: &Options) -> Result<(), Error> {
        let groups: &[Value] = match c.pointer("/load_assignment/endpoints") {
            None | Some(Value::Null) => &[],
            Some(Value::Array(a)) => a,
            Some(other) => {
                let at = self.at(&["load_assignment", "endpoints"]);
                return Err(at.error(format!(
                    "load_assignment.endpoints: expected a list of locality groups, found {}",
                    shown(other)
                )));
            }
        };
        let mut warned_priority = false;
        let mut cursor = self.anchor;
        let mut taken: std::collections::HashSet<String> = std::collections::HashSet::new();
        for g in groups {
            let priority = match g.get("priority") {
                None => 0,
                Some(p) => yaml::uint(p).ok_or_else(|| {
                    self.at(&["load_assignment", "priority"]).error(format!(
                        "load_assignment.endpoints[].priority: expected a whole number, found {}",
                        shown(p)
                    ))
                })?,
            };
            let lbs: &[Value] = match g.get("lb_endpoints") {
                None | Some(Value::Null) => &[],
                Some(Value::Array(a)) => a,
                Some(other) => {
                    let at = self.at(&["load_assignment", "lb_endpoints"]);
                    return Err(at.error(format!(
                        "load_assignment.endpoints[].lb_endpoints: expected a list of \
                         endpoints, found {}",
                        shown(other)
                    )));
                }
            };
            for e in lbs {
                let sa = e.pointer("/endpoint/address/socket_address");
                let Some(addr) = sa.and_then(|s| s.get("address")).and_then(Value::as_str) else {
                    let at = self.lines.at(self.lines.key(cursor, "lb_endpoints"));
                    self.d
                        .warn(&at, "an endpoint without socket_address.address is skipped");
                    continue;
                };
                let line = self
                    .lines
                    .find_value(cursor, "address", addr)
                    .unwrap_or_else(|| self.lines.key_value(self.anchor, "address", addr));
                cursor = line + 1;
                let at = self.lines.at(line);
                let port = match sa.and_then(|s| s.get("port_value")) {
                    None => None,
                    Some(p) => Some(yaml::uint(p).filter(|&p| p <= 65_535).ok_or_else(|| {
                        at.error(format!(
                            "socket_address.port_value: expected a port (0 to 65535), \
                                     found {}",
                            shown(p)
                        ))
                    })?),
                };
                let base = match port {
                    Some(p) => format!("{addr}:{p}"),
                    None => addr.to_string(),
                };
                // The same address in two priorities is two hosts to Envoy.
                let mut name = base.clone();
                let mut k = 2;
                while !taken.insert(name.clone()) {
                    name = format!("{base}#{k}");
                    k += 1;
                }
                let mut node = json!({ "name": name });
                if let Some(w) = e.get("load_balancing_weight") {
                    let w = yaml::uint(w).ok_or_else(|| {
                        at.error(format!(
                            "load_balancing_weight: expected a whole number, found {}",
                            shown(w)
                        ))
                    })?;
                    if w != 1 {
                        node["weight"] = json!(w);
                    }
                }
                // `health_check_config.port_value` (Envoy's
                // `Endpoint.HealthCheckConfig`): the checks' own port.
                if let Some(hp) = e.pointer("/endpoint/health_check_config/port_value") {
                    let hp = yaml::uint(hp).filter(|&p| p <= 65_535).ok_or_else(|| {
                        at.error(format!(
                            "health_check_config.port_value: expected a port (0 to 65535), found {}",
                            shown(hp)
                        ))
                    })?;
                    if hp != 0 && Some(hp) != port {
                        node["check_port"] = json!(hp);
                    }
                }
                if priority > 0 {
                    node["backup"] = json!(true);
                    if !warned_priority {
                        warned_priority = true;
                        self.d.warn(&at, "endpoints of priority > 0 are modelled as backups: used only while no priority-0 node is routable (Envoy spills over gradually)");
                    }
                }
                let i = self.d.nodes.len();
                self.d.nodes.push(node);
                self.d.origin(&format!("nodes[{i}]"), &at);
            }
        }
        if self.d.nodes.is_empty() {
            let at = self.at(&[]);
            self.d.default_nodes(
                opts.nodes.unwrap_or(3),
                &at,
                "the cluster lists no endpoints (EDS or DNS)",
            );
        }
        Ok(())
    }

    fn outlier_detection(&mut self, od: &Value) -> Result<(), Error> {
        let at = self.at(&["outlier_detection"]);
        let Some(m) = od.as_object() else {
            return Err(at.error("outlier_detection: expected a mapping"));
        };
        let mut p = Map::new();
        p.insert("kind".into(), json!("outlier_detection"));
        for (k, v) in m {
            let kat = self.at(&["outlier_detection", k]);
            if OD_DURATIONS.contains(&k.as_str()) {
                p.insert(
                    k.clone(),
                    json!(self.duration(v, &["outlier_detection", k])?),
                );
            } else if OD_FIELDS.contains(&k.as_str()) {
                let v = match v {
                    Value::Bool(_) => v.clone(),
                    _ => json!(yaml::uint(v).ok_or_else(|| kat.error(format!(
                        "outlier_detection.{k}: expected a whole number, found {v}"
                    )))?),
                };
                p.insert(k.clone(), v);
            } else {
                self.d
                    .warn(&kat, format!("outlier_detection.{k} is not modelled"));
            }
        }
        self.d.policy(Value::Object(p), &at);
        Ok(())
    }

    fn health_check(&mut self, hc: &Value) -> Result<(), Error> {
        let at = self.at(&["health_checks"]);
        let Some(m) = hc.as_object() else {
            return Err(at.error("health_checks[0]: expected a mapping"));
        };
        let mut p = Map::new();
        p.insert("kind".into(), json!("active_probe"));
        p.insert("flavor".into(), json!("envoy"));
        for req in [
            "timeout",
            "interval",
            "unhealthy_threshold",
            "healthy_threshold",
        ] {
            if !m.contains_key(req) {
                return Err(at.error(format!("health_checks[0]: `{req}` is required")));
            }
        }
        let mut statuses: Vec<(&str, Loc)> = vec![];
        for (k, v) in m {
            let kat = self.at(&["health_checks", k]);
            match k.as_str() {
                k if HC_DURATIONS.contains(&k) => {
                    p.insert(k.into(), json!(self.duration(v, &["health_checks", k])?));
                }
                "unhealthy_threshold" | "healthy_threshold" | "interval_jitter_percent" => {
                    let n = yaml::uint(v).ok_or_else(|| {
                        kat.error(format!(
                            "health_checks[0].{k}: expected a whole number, found {v}"
                        ))
                    })?;
                    p.insert(k.into(), json!(n));
                }
                "http_health_check" => {
                    p.insert("probe".into(), json!("http"));
                    for f in ["expected_statuses", "retriable_statuses"] {
                        if let Some(list) = v.get(f) {
                            let fat = self.at(&["health_checks", k, f]);
                            let ranges = status_ranges(list, f, &fat)?;
                            if !ranges.is_empty() {
                                p.insert(f.into(), json!(ranges));
                                statuses.push((f, fat));
                            }
                        }
                    }
                }
                "tcp_health_check" => {
                    p.insert("probe".into(), json!("tcp"));
                }
                "grpc_health_check" | "custom_health_check" => {
                    self.d
                        .warn(&kat, format!("{k} is modelled as an HTTP check"));
                    p.insert("probe".into(), json!("http"));
                }
                "reuse_connection"
                | "event_log_path"
                | "always_log_health_check_failures"
                | "always_log_health_check_success"
                | "event_logger" => {}
                _ => self
                    .d
                    .warn(&kat, format!("health_checks[0].{k} is not modelled")),
            }
        }
        let pi = self.d.policies.len();
        for (f, fat) in &statuses {
            self.d.origin(&format!("policies[{pi}].{f}"), fat);
        }
        self.d.policy(Value::Object(p), &at);
        Ok(())
    }
}

/// `http_health_check.expected_statuses` or `retriable_statuses`: a list
/// of `type.v3.Int64Range` (`{start, end}`, `end` excluded), checked as
/// Envoy's `HttpStatusChecker::validateRange` does (Envoy refuses the
/// cluster otherwise).
fn status_ranges(list: &Value, field: &str, at: &Loc) -> Result<Vec<StatusRange>, Error> {
    let name = format!("health_checks[0].http_health_check.{field}");
    let items: &[Value] = match list {
        Value::Null => &[],
        Value::Array(a) => a,
        other => {
            return Err(at.error(format!(
                "{name}: expected a list of ranges such as [{{start: 200, end: 400}}], found {}",
                shown(other)
            )));
        }
    };
    let mut out = vec![];
    for (i, r) in items.iter().enumerate() {
        // proto3: an absent bound is 0.
        let bound = |k: &str| -> Result<u16, Error> {
            match r.get(k) {
                None | Some(Value::Null) => Ok(0),
                Some(v) => yaml::uint(v)
                    .and_then(|n| u16::try_from(n).ok())
                    .ok_or_else(|| {
                        at.error(format!(
                            "{name}[{i}].{k}: expected an HTTP status (a whole number), found {}",
                            shown(v)
                        ))
                    }),
            }
        };
        if !r.is_object() {
            return Err(at.error(format!(
                "{name}[{i}]: expected a range {{start: N, end: M}}, found {}",
                shown(r)
            )));
        }
        out.push(StatusRange {
            start: bound("start")?,
            end: bound("end")?,
        });
    }
    envoy_ranges(field, &out, StatusSet::EMPTY).map_err(|(f, why)| {
        at.error(format!(
            "health_checks[0].http_health_check.{f}: {why} (Envoy refuses the cluster: \
             \"Invalid http status range\")"
        ))
    })?;
    Ok(out)
}

/// The first route to `cluster`, with its virtual host's retry policy.
fn find_route<'a>(
    v: &'a Value,
    cluster: &str,
    vhost_retry: Option<&'a Value>,
) -> Option<(&'a Value, Option<&'a Value>)> {
    match v {
        Value::Object(m) => {
            let retry = if m.contains_key("routes") {
                m.get("retry_policy")
            } else {
                vhost_retry
            };
            if let Some(r) = m.get("route")
                && (r.get("cluster").and_then(Value::as_str) == Some(cluster)
                    || r.pointer("/weighted_clusters/clusters")
                        .and_then(Value::as_array)
                        .is_some_and(|ws| {
                            ws.iter()
                                .any(|w| w.get("name").and_then(Value::as_str) == Some(cluster))
                        }))
            {
                return Some((r, retry));
            }
            m.values().find_map(|x| find_route(x, cluster, retry))
        }
        Value::Array(a) => a.iter().find_map(|x| find_route(x, cluster, vhost_retry)),
        _ => None,
    }
}

fn route(
    doc: &Value,
    cluster: &str,
    lines: &Lines,
    anchor: usize,
    d: &mut Draft,
) -> Result<(), Error> {
    let cat = lines.at(anchor);
    let Some((r, vhost_retry)) = find_route(doc, cluster, None) else {
        d.gateway("proxy_next_upstream", json!(["off"]), &cat);
        d.gateway("proxy_read_timeout", json!("15s"), &cat);
        d.notes.push("No route to the cluster in the file: Envoy's route defaults (15s timeout, no retries).".into());
        return Ok(());
    };
    let rline = match lines.find_value(1, "cluster", cluster) {
        Some(l) => l,
        // A share of `weighted_clusters`: the route is where they are listed.
        None => {
            let w = lines.key(1, "weighted_clusters");
            let at = lines.key_value(w, "name", cluster);
            if r.get("weighted_clusters").is_some() {
                d.warn(
                    &lines.at(at),
                    format!(
                        "the route sends a weighted share of its requests to `{cluster}`; the \
                         model is that cluster alone, with the route's timeout and retries"
                    ),
                );
            }
            at
        }
    };
    let at = |k: &str| lines.at(lines.key(rline, k));
    let route_at = lines.at(rline);
    let timeout = match r.get("timeout") {
        Some(v) => {
            yaml::duration(v).map_err(|e| at("timeout").error(format!("route timeout: {e}")))?
        }
        None => crate::engine::SimDuration::from_secs(15),
    };
    let tat = if r.get("timeout").is_some() {
        at("timeout")
    } else {
        route_at.clone()
    };
    if timeout.is_zero() {
        d.warn(
            &tat,
            "route timeout 0s (none) is modelled as hcsim's default proxy_read_timeout (60s)",
        );
    } else {
        d.gateway("proxy_read_timeout", json!(timeout), &tat);
    }
    let Some(rp) = r.get("retry_policy").or(vhost_retry) else {
        d.gateway("proxy_next_upstream", json!(["off"]), &route_at);
        return Ok(());
    };
    let rat = at("retry_policy");
    let words_text = rp.get("retry_on").and_then(Value::as_str).unwrap_or("");
    let mut words: Vec<&str> = vec![];
    for w in words_text
        .split(',')
        .map(str::trim)
        .filter(|w| !w.is_empty())
    {
        match w {
            "5xx" => words.extend([
                "error", "timeout", "http_500", "http_502", "http_503", "http_504",
            ]),
            "gateway-error" => words.extend(["http_502", "http_503", "http_504"]),
            "connect-failure" => words.push("error"),
            "reset" => words.extend(["error", "timeout"]),
            "retriable-status-codes" => {
                for c in rp
                    .get("retriable_status_codes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match c.as_u64() {
                        Some(c @ (500 | 502 | 503 | 504 | 403 | 404 | 429)) => {
                            words.push(match c {
                                500 => "http_500",
                                502 => "http_502",
                                503 => "http_503",
                                504 => "http_504",
                                403 => "http_403",
                                404 => "http_404",
                                _ => "http_429",
                            })
                        }
                        _ => d.warn(&rat, format!("retriable status code {c} is not modelled")),
                    }
                }
            }
            other => d.warn(&rat, format!("retry_on {other} is not modelled")),
        }
    }
    // hcsim's order of the conditions (NextUpstream's).
    const ORDER: [&str; 10] = [
        "error",
        "timeout",
        "http_500",
        "http_502",
        "http_503",
        "http_504",
        "http_403",
        "http_404",
        "http_429",
        "non_idempotent",
    ];
    words.sort_by_key(|w| ORDER.iter().position(|o| o == w));
    words.dedup();
    if words.is_empty() {
        d.gateway("proxy_next_upstream", json!(["off"]), &rat);
    } else {
        words.push("non_idempotent");
        d.gateway("proxy_next_upstream", json!(words), &rat);
        let n = rp
            .get("num_retries")
            .map_or(Some(1), yaml::uint)
            .ok_or_else(|| rat.error("num_retries: expected a whole number"))?;
        d.gateway("proxy_next_upstream_tries", json!(n + 1), &rat);
        if !timeout.is_zero() {
            d.gateway("proxy_next_upstream_timeout", json!(timeout), &tat);
        }
        d.warn(&rat, "Envoy backs off (25 ms base) between retries and may pick the same host again without retry_host_predicate previous_hosts; hcsim retries at once on another node");
    }
    if let Some(v) = rp.get("per_try_timeout") {
        let t = yaml::duration(v)
            .map_err(|e| at("per_try_timeout").error(format!("per_try_timeout: {e}")))?;
        d.gateway("proxy_read_timeout", json!(t), &at("per_try_timeout"));
    }
    Ok(())
}

/// A value as an error quotes it: JSON, cut to a readable length.
fn shown(v: &Value) -> String {
    crate::diagnostics::shorten(&v.to_string())
}

#[cfg(test)]
mod tests;
