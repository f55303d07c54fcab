//! `hcsim replay`: an incident's access log → what each backend did →
//! a model that reproduces the log → what other settings would have done.
//!
//! 1. [`format`], [`nginx_conf`], [`haproxy_log`]: the log's format (an
//!    nginx `log_format` given or read from the config, a preset, or
//!    HAProxy's httplog), [`reader`] the file (plain or gzip, streamed),
//!    [`clock`] its timestamps, [`chain`] each line's attempts.
//! 2. [`scan`] reads every line into [`collect`]'s bounded state; [`infer`]
//!    turns it into the workload, each node's service time and faults (with
//!    their censored boundaries) and the gateway's ejections.
//! 3. [`model`] writes the inferred model (`replay-model.json`, a normal
//!    model file); [`whatif`] runs it as logged and with each `--set`
//!    group through `run::Replications`, writes the usual outputs, and sets
//!    them side by side with `hcsim compare`'s noise verdicts; [`fit`]
//!    states log vs replay figure by figure; [`report`] the table and
//!    `replay.json`.

pub mod chain;
pub mod clock;
pub mod collect;
pub mod fit;
pub mod format;
pub mod haproxy_log;
pub mod infer;
pub mod model;
pub mod nginx_conf;
pub mod reader;
pub mod report;
pub mod scan;
pub mod whatif;

use crate::config::import::{self, Format, Imported};
use crate::error::Error;
use crate::spec::Override;
use crate::spec::{GatewayFlavor, Model, apply_sets};
use chain::{Servers, Timeouts};
use format::LogFormat;
use scan::Kind;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// What to replay and ask.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub log: PathBuf,
    /// The gateway's config and the upstream/backend the log is of.
    pub config: Option<PathBuf>,
    pub target: Option<String>,
    /// A `log_format` name of the config, a preset's name, `haproxy`, or a format's text.
    pub log_format: Option<String>,
    /// nginx's error log of the same time.
    pub error_log: Option<PathBuf>,
    /// Overrides of the logged settings (without a config, or to correct it).
    pub actual: Vec<Override>,
    /// Counterfactual `--set` groups.
    pub groups: Vec<Vec<Override>>,
    pub reps: u64,
    pub seed: Option<u64>,
    /// Default `output/<log>-replay/`.
    pub out: Option<PathBuf>,
    pub charts: bool,
}

/// What a replay produced.
pub struct Outcome {
    pub out: PathBuf,
    pub report: report::Report,
    pub text: String,
    /// Warnings about the config and the log (stderr).
    pub warnings: Vec<String>,
}

/// `access.log.1.gz` → `access`.
pub fn stem(log: &Path) -> String {
    let name = log
        .file_name()
        .map_or_else(|| "log".to_string(), |n| n.to_string_lossy().into_owned());
    let mut s = name.as_str();
    for ext in [".gz", ".1", ".log", ".txt"] {
        s = s.strip_suffix(ext).unwrap_or(s);
    }
    let s: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    if s.is_empty() { "log".into() } else { s }
}

/// The gateway in force: the imported config, or hcsim's defaults for the
/// log's kind; with `--actual` applied. Nodes come later for a log without config.
struct Base {
    doc: Value,
    imported: Option<Imported>,
    formats: Vec<LogFormat>,
    upstream_of: std::collections::HashMap<String, String>,
}

fn base(o: &Options, warnings: &mut Vec<String>) -> Result<Base, Error> {
    let Some(cfg) = &o.config else {
        return Ok(Base {
            doc: json!({"name": "replay", "duration": "60s", "clients": {"kind": "open", "rate_per_s": 1.0}, "nodes": []}),
            imported: None,
            formats: vec![],
            upstream_of: Default::default(),
        });
    };
    let opts = import::Options {
        format: None,
        target: o.target.clone(),
        nodes: None,
    };
    let imported = import::read(cfg, &opts, &import::Workload::default())?;
    warnings.extend(imported.warnings.iter().map(|w| w.to_string()));
    let (formats, upstream_of) = if imported.format == Format::Nginx {
        let text = crate::spec::document::read_capped(cfg, "a config file")?;
        let c = nginx_conf::read(cfg, &text)?;
        (c.formats, c.upstream_of)
    } else {
        (vec![], Default::default())
    };
    Ok(Base {
        doc: imported.doc.clone(),
        imported: Some(imported),
        formats,
        upstream_of,
    })
}

/// The log's kind: the one named, or the one its lines have.
fn kind(o: &Options, b: &Base) -> Result<Kind, Error> {
    let backend = b
        .imported
        .as_ref()
        .filter(|i| i.format == Format::Haproxy)
        .map(|i| i.target.clone());
    let Some(name) = &o.log_format else {
        return scan::detect(&o.log, &b.formats, backend);
    };
    if name == "haproxy" || name == "httplog" {
        return Ok(Kind::Haproxy { backend });
    }
    let f = b
        .formats
        .iter()
        .cloned()
        .chain(format::presets())
        .find(|f| &f.name == name);
    let f = match f {
        Some(f) => f,
        None if name.contains('$') => LogFormat::compile("--log-format", "--log-format", name)
            .map_err(|e| Error::Usage(format!("--log-format: {e}")))?,
        None => {
            let known: Vec<String> = b
                .formats
                .iter()
                .map(|f| format!("{} ({})", f.name, f.origin))
                .chain(format::PRESETS.iter().map(|(n, _)| n.to_string()))
                .chain(["haproxy".to_string()])
                .collect();
            return Err(Error::Usage(format!(
                "--log-format {name}: no such format; known: {} (or give the format's text, with its $variables)",
                known.join(", ")
            )));
        }
    };
    let missing = f.missing();
    if !missing.0.is_empty() {
        return Err(Error::Usage(format!(
            "--log-format {name}: the format lacks what a replay needs: {missing}"
        )));
    }
    Ok(Kind::Nginx(f))
}

/// The servers of the base's nodes, by the names the log uses.
fn servers(b: &Base, kind: &Kind) -> Servers {
    let Some(imp) = &b.imported else {
        return Servers::open();
    };
    let nodes: Vec<(String, Vec<String>)> = b.doc["nodes"]
        .as_array()
        .map(|ns| {
            ns.iter()
                .filter_map(|n| n["name"].as_str())
                .map(|name| {
                    let addrs = match kind {
                        Kind::Haproxy { .. } => vec![name.to_string()],
                        Kind::Nginx(_) => {
                            let bare = name.split('#').next().unwrap_or(name);
                            vec![name.to_string(), nginx_conf::with_port(bare)]
                        }
                    };
                    (name.to_string(), addrs)
                })
                .collect()
        })
        .unwrap_or_default();
    Servers::fixed(&nodes, Some(imp.target.clone()))
}

fn timeouts(m: &Model) -> Timeouts {
    match m.gateway.flavor {
        // Kong's Service timeouts are nginx's.
        GatewayFlavor::Nginx | GatewayFlavor::Kong => Timeouts {
            connect_s: m.gateway.proxy_connect_timeout.as_secs_f64(),
            read_s: m.gateway.proxy_read_timeout.as_secs_f64(),
        },
        GatewayFlavor::Haproxy => {
            let h = m.gateway.haproxy();
            Timeouts {
                connect_s: h.timeout_connect.map_or(0.0, |t| t.as_secs_f64()),
                read_s: h.timeout_server.map_or(0.0, |t| t.as_secs_f64()),
            }
        }
        GatewayFlavor::Linkerd => {
            let l = m.gateway.linkerd();
            Timeouts {
                connect_s: l.connect_timeout.as_secs_f64(),
                read_s: l.response_timeout.map_or(0.0, |t| t.as_secs_f64()),
            }
        }
        GatewayFlavor::Caddy => {
            let c = m.gateway.caddy();
            Timeouts {
                connect_s: c.dial_timeout.as_secs_f64(),
                read_s: c.response_header_timeout.map_or(0.0, |t| t.as_secs_f64()),
            }
        }
        GatewayFlavor::Traefik => {
            let f = m.gateway.traefik().forwarding_timeouts;
            Timeouts {
                connect_s: f.dial_timeout.as_secs_f64(),
                read_s: f.response_header_timeout.map_or(0.0, |t| t.as_secs_f64()),
            }
        }
    }
}

/// Checks the lines' servers: those in no upstream of the config are an error.
fn check_servers(o: &Options, b: &Base, s: &scan::Scan) -> Result<(), Error> {
    let Some(imp) = &b.imported else {
        return Ok(());
    };
    let unknown: Vec<&(String, u64, u64)> = s
        .servers
        .unknown
        .iter()
        .filter(|(a, _, _)| !b.upstream_of.contains_key(a))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = unknown
        .iter()
        .take(10)
        .map(|(a, n, line)| format!("{a} ({n} line(s), first at line {line})"))
        .collect();
    let known: Vec<&str> = s.servers.names.iter().map(String::as_str).collect();
    Err(Error::Usage(format!(
        "{}: the log names {} server(s) that are not in {} `{}` of {}: {}{}; its servers are: {}. \
         Check --target, or that the config is the one the log was written with",
        o.log.display(),
        unknown.len(),
        imp.format,
        imp.target,
        o.config.as_deref().unwrap_or(Path::new("?")).display(),
        list.join(", "),
        if unknown.len() > 10 { ", …" } else { "" },
        known.join(", ")
    )))
}

/// Replays the log (on the current rayon pool).
pub fn replay(o: &Options, progress: &mut dyn FnMut(u64, u64)) -> Result<Outcome, Error> {
    // Taken before the log is read: a second writer learns at once that
    // the directory is busy, and no sweep's clean-up removes this one's files.
    let _lock = crate::sweep::DirLock::acquire(&report::out_dir(o))?;
    let mut warnings = vec![];
    let mut b = base(o, &mut warnings)?;
    let kind = kind(o, &b)?;
    if b.imported.is_none() {
        match kind {
            Kind::Haproxy { .. } => b.doc["gateway"] = json!({"flavor": "haproxy"}),
            // nginx's defaults, written out so that `--set policy.x=` has a kind.
            Kind::Nginx(_) => {
                b.doc["policy"] =
                    json!({"kind": "max_fails", "max_fails": 1, "fail_timeout": "10s"})
            }
        }
    }
    let probe_doc = {
        let mut d = b.doc.clone();
        if d["nodes"].as_array().is_none_or(Vec::is_empty) {
            d["nodes"] = json!([{"name": "probe"}]);
        }
        apply_sets(&mut d, &o.log, &o.actual)?;
        Model::from_document(&d, Path::new("--actual"))?
    };
    let upstream_name = match (&b.imported, &kind) {
        (None, Kind::Nginx(_)) => o.target.clone(),
        _ => None,
    };
    let opts = scan::Options {
        servers: servers(&b, &kind),
        timeouts: timeouts(&probe_doc),
        upstream_name,
        progress,
    };
    let s = scan::scan(&o.log, kind, opts)?;
    check_servers(o, &b, &s)?;
    if s.client.requests == 0 {
        return Err(no_requests(o, &s));
    }
    if b.imported.is_none() {
        b.doc["nodes"] = Value::Array(s.servers.names.iter().map(|n| json!({"name": n})).collect());
    }
    apply_sets(&mut b.doc, &o.log, &o.actual)?;
    let logged = Model::from_document(&b.doc, Path::new("the logged settings"))?;
    let disabled = match &o.error_log {
        Some(p) => disabled_by_node(p, &s)?,
        None => vec![],
    };
    let inf = infer::infer(
        &s,
        logged.gateway.rtt.as_secs_f64() * 1000.0,
        &disabled,
        check_interval(&b.doc),
    );
    report::run(o, &b.doc, b.imported.as_ref(), &s, inf, warnings)
}

/// How often HAProxy checks a server that is down (`downinter`, else
/// `inter`), from the logged settings' HAProxy active probe.
fn check_interval(doc: &Value) -> Option<f64> {
    let mut ps: Vec<&Value> = doc["policies"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    if doc["policy"].is_object() {
        ps.push(&doc["policy"]);
    }
    let p = ps
        .into_iter()
        .find(|p| p["kind"] == "active_probe" && p["flavor"] == "haproxy")?;
    let every = p["downinter"]
        .as_str()
        .or(p["inter"].as_str())
        .unwrap_or("2s");
    crate::engine::time::parse_duration(every)
        .ok()
        .map(|d| d.as_secs_f64())
}

fn no_requests(o: &Options, s: &scan::Scan) -> Error {
    let what = if s.bad > 0 && s.bad == s.lines {
        let first = s.first_bad.first().map_or(String::new(), |b| {
            format!(" (line {}: {})", b.line, b.reason)
        });
        format!(
            "none of its {} line(s) could be read as {}{first}",
            s.lines,
            s.kind.name()
        )
    } else if s.elsewhere + s.not_proxied > 0 {
        format!(
            "none of its {} line(s) is a request to the target ({} for another upstream or backend, {} not proxied)",
            s.lines, s.elsewhere, s.not_proxied
        )
    } else {
        "it has no request".to_string()
    };
    Error::Usage(format!("{}: nothing to replay: {what}", o.log.display()))
}

/// The error log's "temporarily disabled" times per node (seconds since t = 0).
fn disabled_by_node(path: &Path, s: &scan::Scan) -> Result<Vec<Vec<f64>>, Error> {
    let lines = scan::disabled_lines(path, s.zone.unwrap_or(0.0))?;
    let mut out = vec![vec![]; s.servers.names.len()];
    let mut servers = s.servers.clone();
    for (t, addr) in lines {
        if let chain::Server::Node(i) = servers.lookup(&addr, 0)
            && i < out.len()
        {
            out[i].push(t - s.collector.origin);
        }
    }
    Ok(out)
}
