//! `hcsim import`: a gateway config → a model document. One file per
//! format; each fills a [`Draft`] (the gateway, the nodes, the policies,
//! where each came from and the warnings), which becomes the model with a
//! plain workload ([`Workload`]) that the command line can change.
//!
//! | format | reads | target |
//! |---|---|---|
//! | nginx | `nginx.conf` and its includes: an `upstream`, `worker_processes`, the `proxy_*` settings reaching the `location` that proxies to it, tengine `check`, NGINX Plus `health_check`; a `stream` upstream as TCP | the upstream |
//! | HAProxy | `haproxy.cfg`: `defaults` (chains through `from`) inherited into a `backend`/`listen`, its servers, timeouts, retries, checks and their `http-check expect` status rules, `observe` | the backend |
//! | Envoy | a bootstrap (YAML or JSON, snake_case or proto3 JSON names), a config dump, a list of clusters or one cluster: endpoints, `lb_policy`, `outlier_detection`, `health_checks` (with their expected and retriable statuses), panic threshold, the route's timeout and retries | the cluster |
//! | Istio | `DestinationRule` documents: `outlierDetection`, `connectionPool`, `loadBalancer` | the `host` |
//! | Kubernetes | `Deployment`/`StatefulSet`/`Pod`: replicas and the `readinessProbe` | the workload's name |
//! | Kong | declarative `kong.yml`: an upstream's `healthchecks` and `targets`, the Service proxying to it | the upstream (or a Service or route leading to it) |
//! | Linkerd | a `Service`'s failure-accrual and response-timeout annotations | the Service's name |
//! | Caddy | a Caddyfile's `reverse_proxy` or Caddy's JSON handler: upstreams, load balancing and retries, passive and active checks, transport timeouts | the site (`:8080`, `site#2`) |
//! | Traefik | dynamic configuration (file provider YAML/TOML, or the CRDs): a loadBalancer service, its health checks, servers transport, the routers' retry and circuitBreaker | the service |

mod caddy;
mod caddyfile;
mod envoy;
mod haproxy;
mod istio;
mod kong;
mod kubernetes;
mod linkerd;
mod nginx;
pub mod nginx_syntax;
mod pool;
mod traefik;
mod yaml;

use super::source::{Loc, Warning, read_text};
use crate::engine::SimDuration;
use crate::error::Error;
use crate::spec::{FaultSpec, Model};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The config formats hcsim reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Nginx,
    Haproxy,
    Envoy,
    Istio,
    Kubernetes,
    Kong,
    Linkerd,
    Caddy,
    Traefik,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Nginx => "nginx",
            Format::Haproxy => "haproxy",
            Format::Envoy => "envoy",
            Format::Istio => "istio",
            Format::Kubernetes => "kubernetes",
            Format::Kong => "kong",
            Format::Linkerd => "linkerd",
            Format::Caddy => "caddy",
            Format::Traefik => "traefik",
        }
    }

    /// What `--target` names in this format.
    fn target_noun(self) -> &'static str {
        match self {
            Format::Nginx => "upstream",
            Format::Haproxy => "backend",
            Format::Envoy => "cluster",
            Format::Istio => "DestinationRule host",
            Format::Kubernetes => "workload",
            Format::Kong => "upstream",
            Format::Linkerd => "Service",
            Format::Caddy => "reverse_proxy site",
            Format::Traefik => "service",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Guesses the format from the content: YAML/JSON documents by their
/// `kind` or Envoy's keys, nginx by its braces and semicolons, HAProxy by
/// its section keywords.
pub fn detect(text: &str) -> Option<Format> {
    // An Istio rule's `loadBalancer` and `subsets` look like Traefik's keys.
    if text.lines().any(|l| {
        let l = l.trim().trim_start_matches("- ");
        l == "kind: DestinationRule" || l == "\"kind\": \"DestinationRule\","
    }) {
        return Some(Format::Istio);
    }
    if traefik::looks_like(text) {
        return Some(Format::Traefik);
    }
    if caddy::looks_like(text) {
        return Some(Format::Caddy);
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let kind_is = |kinds: &[&str]| {
        lines.iter().any(|l| {
            let l = l.trim_start_matches("- ");
            let v = l
                .strip_prefix("kind:")
                .or_else(|| l.strip_prefix("\"kind\":"))
                .map(|v| v.trim().trim_end_matches(',').trim_matches(['"', '\'']));
            v.is_some_and(|v| kinds.contains(&v))
        })
    };
    if kind_is(&["DestinationRule"]) {
        return Some(Format::Istio);
    }
    if kind_is(&["Service"]) && text.contains("linkerd.io/") {
        return Some(Format::Linkerd);
    }
    if kind_is(&[
        "Deployment",
        "StatefulSet",
        "Pod",
        "ReplicaSet",
        "DaemonSet",
    ]) {
        return Some(Format::Kubernetes);
    }
    let has_key = |k: &str| {
        lines.iter().any(|l| {
            let l = l.trim_start_matches("- ");
            l.starts_with(&format!("{k}:")) || l.starts_with(&format!("\"{k}\":"))
        })
    };
    // Kong's declarative config: `_format_version`, or upstreams with targets.
    if has_key("_format_version") || (has_key("upstreams") && has_key("targets")) {
        return Some(Format::Kong);
    }
    let envoy_keys = [
        "static_resources",
        "clusters",
        "load_assignment",
        "lb_policy",
        "outlier_detection",
        "lb_endpoints",
        "connect_timeout",
        "static_clusters",
        "dynamic_active_clusters",
        // proto3 JSON names.
        "staticResources",
        "loadAssignment",
        "lbPolicy",
        "lbEndpoints",
        "connectTimeout",
        "staticClusters",
        "dynamicActiveClusters",
    ];
    if text.contains("envoy.config.cluster.v3.Cluster") {
        return Some(Format::Envoy);
    }
    let json = text.trim_start().starts_with('{');
    if envoy_keys
        .iter()
        .any(|k| has_key(k) || (json && text.contains(&format!("\"{k}\""))))
    {
        return Some(Format::Envoy);
    }
    fn first_word<'a>(l: &&'a str) -> &'a str {
        l.split_whitespace().next().unwrap_or("")
    }
    let haproxy_sections = ["global", "defaults", "frontend", "backend", "listen"];
    let nginx_like = lines
        .iter()
        .any(|l| l.ends_with('{') || l.ends_with(';') || l.ends_with('}'));
    // HAProxy: a section line, and no block (a header value may end with `;`).
    if lines.iter().any(|l| {
        haproxy_sections.contains(&first_word(l)) && !l.ends_with('{') && !l.ends_with(';')
    }) && !lines.iter().any(|l| l.ends_with('{'))
    {
        return Some(Format::Haproxy);
    }
    nginx_like.then_some(Format::Nginx)
}

/// How to import.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The format; detected from the content when `None`.
    pub format: Option<Format>,
    /// The upstream / backend / cluster / host / workload, when the file has several.
    pub target: Option<String>,
    /// Nodes to create when the config does not list them (Istio, an
    /// Envoy cluster fed by EDS). Default 3.
    pub nodes: Option<u32>,
}

/// What a config does not say: the load and the faults.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Open-loop Poisson arrivals. Default 100 req/s.
    pub rate_per_s: f64,
    /// Default 60s.
    pub duration: SimDuration,
    pub faults: Vec<FaultSpec>,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            rate_per_s: 100.0,
            duration: SimDuration::from_secs(60),
            faults: vec![],
        }
    }
}

/// An imported config: the model document and what could not be carried.
#[derive(Clone, Debug)]
pub struct Imported {
    pub format: Format,
    /// The upstream / backend / cluster / host / workload imported.
    pub target: String,
    /// A complete model document (`hcsim check` fills in the defaults).
    pub doc: Value,
    pub warnings: Vec<Warning>,
    /// Model field → the config line it came from.
    pub origins: Vec<(String, Loc)>,
}

impl Imported {
    /// Validates the document (after `--set` overrides, if any). An error
    /// in a field read from the config names the config line.
    pub fn model_of(&self, doc: &Value, path: &Path) -> Result<Model, Error> {
        Model::from_document(doc, path).map_err(|e| self.locate(e))
    }

    /// The validated model.
    pub fn model(&self) -> Result<Model, Error> {
        self.model_of(&self.doc, Path::new("imported model"))
    }

    fn locate(&self, e: Error) -> Error {
        let (field, msg) = match &e {
            Error::Invalid { field, reason, .. } => (field, reason),
            Error::Parse { field, msg, .. } => (field, msg),
            _ => return e,
        };
        let under = |f: &str| {
            field == f
                || field
                    .strip_prefix(f)
                    .is_some_and(|r| r.starts_with(['.', '[']))
        };
        match self
            .origins
            .iter()
            .filter(|(f, _)| under(f))
            .max_by_key(|(f, _)| f.len())
        {
            Some((_, at)) => at.error(format!("{field}: {msg}")),
            None => e,
        }
    }
}

/// What a format's reader fills in.
#[derive(Debug, Default)]
pub(crate) struct Draft {
    /// `gateway` fields (absent ones take hcsim's defaults).
    pub gateway: Map<String, Value>,
    /// Each node's document, with `name`.
    pub nodes: Vec<Value>,
    /// Policy documents, with `kind`.
    pub policies: Vec<Value>,
    /// The `pods` block (a Kubernetes workload's pod lifecycle), if any.
    pub pods: Option<Map<String, Value>>,
    pub warnings: Vec<Warning>,
    pub origins: Vec<(String, Loc)>,
    /// Lines of the description: where the settings came from, what is approximate.
    pub notes: Vec<String>,
    /// A hash balancer was read: the model's clients get this many keys
    /// (a config does not say how many clients there are).
    pub client_keys: Option<u32>,
    /// Where each field of `origins` is (a field set again leaves an empty
    /// name where it was, so that setting one is O(1) however many nodes).
    origin_index: HashMap<String, usize>,
}

impl Draft {
    pub(crate) fn warn(&mut self, at: &Loc, msg: impl Into<String>) {
        self.warnings.push(at.warning(msg));
    }

    /// Sets `gateway.<key>` from the line `at`.
    pub(crate) fn gateway(&mut self, key: &str, value: Value, at: &Loc) {
        self.gateway.insert(key.into(), value);
        self.origin(&format!("gateway.{key}"), at);
    }

    pub(crate) fn origin(&mut self, field: &str, at: &Loc) {
        if let Some(&i) = self.origin_index.get(field) {
            self.origins[i].0.clear();
        }
        self.origin_index
            .insert(field.to_string(), self.origins.len());
        self.origins.push((field.to_string(), at.clone()));
    }

    /// The first origin recorded (still in force).
    pub(crate) fn first_origin(&self) -> Option<&Loc> {
        self.origins
            .iter()
            .find(|(f, _)| !f.is_empty())
            .map(|(_, at)| at)
    }

    /// Adds a policy; its fields' origins are `policies[i]`.
    pub(crate) fn policy(&mut self, doc: Value, at: &Loc) {
        let i = self.policies.len();
        self.policies.push(doc);
        self.origin(&format!("policies[{i}]"), at);
    }

    /// `count` nodes named `<prefix>-0`, `<prefix>-1`…, as a config's
    /// replica count says (`at` is its line): refused before any is made
    /// when there are more than a model may have.
    pub(crate) fn numbered_nodes(
        &mut self,
        prefix: &str,
        count: u64,
        at: &Loc,
    ) -> Result<(), Error> {
        crate::spec::limits::check_node_count(count)
            .map_err(|why| at.error(format!("replicas: {why} (a node per pod)")))?;
        for k in 0..count {
            self.nodes.push(json!({ "name": format!("{prefix}-{k}") }));
        }
        self.origin("nodes", at);
        Ok(())
    }

    /// `n` nodes named `node-1`…, for a config that does not list them.
    pub(crate) fn default_nodes(&mut self, n: u32, at: &Loc, why: &str) {
        for i in 1..=n {
            self.nodes.push(json!({ "name": format!("node-{i}") }));
        }
        self.warn(
            at,
            format!(
                "{why}: the model gets {n} nodes named node-1… (change with --nodes N or --set)"
            ),
        );
    }

    fn into_imported(
        self,
        format: Format,
        file: &Path,
        target: String,
        workload: &Workload,
    ) -> Imported {
        let one = self.policies.len() == 1;
        let origins: Vec<(String, Loc)> = self
            .origins
            .into_iter()
            .filter(|(f, _)| !f.is_empty())
            .map(|(f, at)| match f.strip_prefix("policies[0]") {
                Some(rest) if one => (format!("policy{rest}"), at),
                _ => (f, at),
            })
            .collect();
        let mut sources: Vec<String> = origins
            .iter()
            .map(|(f, at)| format!("{f} ← {}:{}", file_name(&at.file), at.line))
            .collect();
        sources.dedup();
        let mut description = format!(
            "Imported by `hcsim import` from {} ({} {} `{target}`).",
            file.display(),
            format,
            format.target_noun()
        );
        if !sources.is_empty() {
            description.push_str(&format!(" Read: {}.", sources.join("; ")));
        }
        for n in &self.notes {
            description.push(' ');
            description.push_str(n);
        }
        description.push_str(&format!(
            " Not in the config, hcsim's defaults: {} req/s (Poisson) for {}, {}, the nodes' \
             service times and workers{}.",
            workload.rate_per_s,
            workload.duration,
            if workload.faults.is_empty() {
                "no faults".to_string()
            } else {
                format!(
                    "{} fault(s) given on the command line",
                    workload.faults.len()
                )
            },
            match self.client_keys {
                Some(k) => format!(", {k} distinct clients for the hash balancer (clients.keys)"),
                None => String::new(),
            }
        ));
        let name: String = target
            .chars()
            .map(|c| {
                if matches!(c, '/' | '\\' | '\0') {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        let mut doc = json!({
            "name": name,
            "description": description,
            "duration": workload.duration,
            "clients": {"kind": "open", "rate_per_s": workload.rate_per_s},
            "gateway": Value::Object(self.gateway),
            "nodes": self.nodes,
            "faults": workload.faults,
        });
        if let Some(pods) = self.pods {
            doc["pods"] = Value::Object(pods);
        }
        if let Some(k) = self.client_keys {
            doc["clients"]["keys"] = json!(k);
        }
        match self.policies.len() {
            0 => {}
            1 => {
                doc["policy"] = self.policies[0].clone();
            }
            _ => {
                doc["policies"] = Value::Array(self.policies);
            }
        }
        Imported {
            format,
            target,
            doc,
            warnings: self.warnings,
            origins,
        }
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// Reads `path` and imports its target.
pub fn read(path: &Path, opts: &Options, workload: &Workload) -> Result<Imported, Error> {
    let text = read_text(path)?;
    let format = match opts.format {
        Some(f) => f,
        None => detect(&text).ok_or_else(|| {
            Loc::new(path, 1).error(
                "cannot tell the format (nginx, haproxy, envoy, istio, kubernetes, kong, \
                 linkerd, caddy or traefik) from the content: give it with --format",
            )
        })?,
    };
    let (draft, target) = match format {
        Format::Nginx => nginx::import(path, &text, opts)?,
        Format::Haproxy => haproxy::import(path, &text, opts)?,
        Format::Envoy => envoy::import(path, &text, opts)?,
        Format::Istio => istio::import(path, &text, opts)?,
        Format::Kubernetes => kubernetes::import(path, &text, opts)?,
        Format::Kong => kong::import(path, &text, opts)?,
        Format::Linkerd => linkerd::import(path, &text, opts)?,
        Format::Caddy => caddy::import(path, &text, opts)?,
        Format::Traefik => traefik::import(path, &text, opts)?,
    };
    Ok(draft.into_imported(format, path, target, workload))
}

/// Picks the target among `names` (with where each is defined): the one
/// `--target` names, or the only one. `kind` says what the target at an
/// index is (`http upstream`, `listen`, `cluster`, `Deployment`…), for the
/// list a wrong or missing `--target` shows.
pub(crate) fn choose(
    names: &[(String, Loc)],
    kind: &dyn Fn(usize) -> String,
    target: Option<&str>,
    format: Format,
    file: &Path,
) -> Result<usize, Error> {
    let noun = format.target_noun();
    // At most 20 names, each cut to a readable length: a file of 5,000
    // upstreams must not print a 184 KB line.
    const SHOWN: usize = 20;
    let list = || {
        let mut l = names
            .iter()
            .take(SHOWN)
            .enumerate()
            .map(|(i, (n, at))| format!("{} ({}, {at})", crate::diagnostics::shorten(n), kind(i)))
            .collect::<Vec<_>>()
            .join(", ");
        if names.len() > SHOWN {
            l.push_str(&format!(" … and {} more", names.len() - SHOWN));
        }
        l
    };

    match target {
        Some(t) => names.iter().position(|(n, _)| n == t).ok_or_else(|| {
            let t = crate::diagnostics::shorten(t);
            if names.is_empty() {
                Loc::new(file, 1).error(format!("no {noun} in this file, so none named \"{t}\""))
            } else {
                Loc::new(file, 1).error(format!("no {noun} named \"{t}\"; there are: {}", list()))
            }
        }),
        None => match names.len() {
            0 => Err(Loc::new(file, 1).error(format!("no {noun} in this file: nothing to import"))),
            1 => Ok(0),
            _ => Err(Error::Usage(format!(
                "{}: {} {noun}s, pick one with --target NAME: {}",
                file.display(),
                names.len(),
                list()
            ))),
        },
    }
}

/// Parses `KIND:NODE@AT[+FOR]` (`crash:a@10s+30s`), KIND one of crash,
/// hang, stop, partition.
pub fn parse_fault(text: &str) -> Result<FaultSpec, String> {
    let shown = crate::diagnostics::excerpt(text, crate::diagnostics::EXCERPT_CHARS);
    let bad = || {
        format!(
            "expected KIND:NODE@AT[+FOR], e.g. crash:a@10s+30s (KIND: crash, hang, stop or partition), or rolling_update@AT, found \"{shown}\""
        )
    };
    // A rolling update of the pods names no node (a Kubernetes workload's).
    if let Some(at) = text.strip_prefix("rolling_update@") {
        let at = crate::engine::time::parse_duration(at).map_err(|e| format!("AT: {e}"))?;
        return serde_json::from_value(json!({"kind": "rolling_update", "at": at}))
            .map_err(|e| format!("{e} in \"{shown}\""));
    }
    let (kind, rest) = text.split_once(':').ok_or_else(bad)?;
    let (node, window) = rest.rsplit_once('@').ok_or_else(bad)?;
    let (at, for_) = match window.split_once('+') {
        Some((a, f)) => (a, Some(f)),
        None => (window, None),
    };
    if !matches!(kind, "crash" | "hang" | "stop" | "partition") || node.is_empty() {
        return Err(bad());
    }
    // Each part named in its own words (AT, FOR), before serde sees it.
    let duration = |part: &str, d: &str| {
        crate::engine::time::parse_duration(d).map_err(|e| format!("{part}: {e}"))
    };
    let mut doc = json!({"kind": kind, "node": node, "at": duration("AT", at)?});
    if let Some(f) = for_ {
        doc["for"] = json!(duration("FOR", f)?);
    }
    serde_json::from_value(doc).map_err(|e| {
        let (field, msg) = crate::diagnostics::join(".", &e.to_string());
        format!("{field}: {msg} in \"{shown}\"")
    })
}

/// A config file included by another, or the file itself.
pub(crate) fn display_path(base: &Path, rel: &str) -> PathBuf {
    let p = Path::new(rel);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_format_from_its_content() {
        let cases = [
            ("upstream b {\n server 10.0.0.1;\n}\n", Some(Format::Nginx)),
            ("http {\n}\n", Some(Format::Nginx)),
            (
                "global\n  daemon\nbackend b\n  server s1 10.0.0.1:80 check\n",
                Some(Format::Haproxy),
            ),
            (
                "static_resources:\n  clusters:\n  - name: x\n",
                Some(Format::Envoy),
            ),
            ("{\"static_resources\": {}}", Some(Format::Envoy)),
            (
                "apiVersion: networking.istio.io/v1\nkind: DestinationRule\n",
                Some(Format::Istio),
            ),
            (
                "apiVersion: apps/v1\nkind: Deployment\n",
                Some(Format::Kubernetes),
            ),
            (
                "_format_version: \"3.0\"\nupstreams:\n- name: u\n",
                Some(Format::Kong),
            ),
            (
                "apiVersion: v1\nkind: Service\nmetadata:\n  annotations:\n    balancer.linkerd.io/failure-accrual: consecutive\n",
                Some(Format::Linkerd),
            ),
            ("hello\n", None),
        ];
        for (text, want) in cases {
            assert_eq!(detect(text), want, "{text}");
        }
    }

    #[test]
    fn faults_parse_from_the_short_form() {
        let f = parse_fault("crash:10.0.0.1:80@10s+30s").unwrap();
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["node"], "10.0.0.1:80");
        assert_eq!(v["at"], "10s");
        assert_eq!(v["for"], "30s");
        assert!(parse_fault("hang:a@5s").is_ok());
        assert!(matches!(
            parse_fault("rolling_update@30s"),
            Ok(FaultSpec::RollingUpdate(_))
        ));
        assert!(parse_fault("rolling_update@soon").is_err());
        assert!(parse_fault("melt:a@5s").is_err());
        assert!(parse_fault("crash:a").is_err());
        assert!(parse_fault("crash:a@soon").is_err());
        // The part at fault is named, with no path marker in the message.
        let e = parse_fault("crash:X@1e30s").unwrap_err();
        assert_eq!(
            e,
            "AT: expected a duration with a unit such as \"5s\", \"300ms\" or \"1m30s\", \
             found \"1e30s\""
        );
        let e = parse_fault("hang:X@1s+2000000000s").unwrap_err();
        assert!(
            e.starts_with("FOR: duration \"2000000000s\" is too large"),
            "{e}"
        );
        let e = parse_fault(&format!("crash:{}", "x".repeat(100_000))).unwrap_err();
        assert!(e.len() < 300, "{e}");
    }
}
