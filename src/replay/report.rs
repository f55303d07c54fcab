//! After the inference: the model written, the replay as logged and each
//! counterfactual run, and what they say as `replay.json` and as the
//! table on stdout: the inferred workload, faults and ejections; the fit,
//! log vs replay; each what-if beside what the clients did see, with the
//! noise verdict of `hcsim compare` and the range over the censored fault
//! boundaries.

use super::fit::{self, Fit};
use super::infer::{Behaviour, Inference};
use super::scan::{BadLine, Scan};
use super::whatif::{self, Range, Runs, Scenario};
use super::{Options, Outcome};
use crate::config::import::Imported;
use crate::error::Error;
use crate::output::compare::Verdict;
use crate::output::table::align;
use crate::spec::Model;
use crate::spec::Override;
use crate::stats::Spread;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What was read.
#[derive(Clone, Debug, Serialize)]
pub struct LogInfo {
    pub file: String,
    pub format: String,
    pub config: Option<String>,
    pub target: Option<String>,
    pub lines: u64,
    pub requests: u64,
    pub malformed: u64,
    pub first_malformed: Vec<BadLine>,
    pub not_proxied: u64,
    pub elsewhere: u64,
    /// Times to the second only (`$time_local`): starts are ±0.5 s.
    pub whole_second_times: bool,
    /// Epoch seconds of t = 0 (the earliest request start).
    pub origin_epoch_s: f64,
    /// Attempts that came later than the reorder horizon.
    pub out_of_order: u64,
    pub nodes: Vec<String>,
}

/// A bad line as written to replay.json.
impl Serialize for BadLine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("BadLine", 2)?;
        st.serialize_field("line", &self.line)?;
        st.serialize_field("reason", &self.reason)?;
        st.end()
    }
}

/// One metric of a counterfactual.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub metric: String,
    pub log: Option<f64>,
    pub as_logged: Spread,
    pub what_if: Spread,
    pub diff: Option<f64>,
    pub p_value: Option<f64>,
    pub verdict: Verdict,
    pub censoring: Range,
}

/// One counterfactual.
#[derive(Clone, Debug, Serialize)]
pub struct WhatIf {
    pub set: Vec<String>,
    /// Its outputs (summary.json, charts, report.html), below the replay's directory.
    pub dir: String,
    pub rows: Vec<Row>,
}

/// `replay.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub log: LogInfo,
    pub model: String,
    pub reps: u64,
    pub seed: u64,
    /// Fault boundaries the log leaves open were also replayed at their ends.
    pub censored: bool,
    pub inference: Inference,
    pub fit: Fit,
    pub counterfactuals: Vec<WhatIf>,
    pub test: String,
    pub limits: Vec<String>,
}

/// What a log cannot tell, as the outputs state it.
pub const LIMITS: [&str; 6] = [
    "While the gateway sent a node nothing (ejected), its behaviour is unknown: a fault's start and end are known only between the last answer and the first failure, and the last failure and the first answer after; the what-ifs are also run with the shortest and longest faults the log allows (censoring range).",
    "A log tells a frozen node (hang) from a stopped one (SIGSTOP) by nothing: both are written as hang, whose heartbeat thread keeps beating.",
    "A 502 is a refused connect when it took under 3 ms and the log has no $upstream_connect_time; a reset after the request was sent looks like the backend's own 502 unless the chain was retried.",
    "HAProxy logs only the last server of a request: failed connects before it are charged to it, or (redispatched, `+` retries) to the other server when there are two, else to none.",
    "With $time_local (whole seconds) a request's start is known to ±0.5 s and the lines' order is their completion order.",
    "The workload is open-loop (the log cannot tell a closed loop), with the most common method for every request; request sizes and keep-alive are not modelled.",
];

fn metric_wanted(m: &str) -> bool {
    if let Some(c) = m.strip_prefix("client.") {
        return matches!(
            c,
            "requests" | "ok" | "errors" | "timeouts" | "latency_ms.p50" | "latency_ms.p99"
        ) || c.starts_with("status.");
    }
    crate::metrics::path::split_node_metric(m).is_some_and(|(_, field)| {
        [
            "share",
            "attempts",
            "answered",
            "ejections",
            "ejected_time_s",
            "first_ejection_delay_s",
            "recovery_delay_s",
        ]
        .contains(&field.as_str())
    })
}

fn description(o: &Options, imported: Option<&Imported>, s: &Scan, inf: &Inference) -> String {
    let from = match imported {
        Some(i) => format!(
            "the gateway from {} ({} `{}`)",
            o.config.as_deref().unwrap_or(Path::new("")).display(),
            i.format,
            i.target
        ),
        None => "hcsim's default gateway settings (no --config)".into(),
    };
    format!(
        "Inferred by `hcsim replay` from {} ({}, {} requests): {from}{}; the workload, service times and {} fault(s) from the log (replay.json says what each rests on).",
        o.log.display(),
        s.kind.name(),
        s.client.requests,
        if o.actual.is_empty() {
            String::new()
        } else {
            format!(", with --actual {}", Override::texts(&o.actual).join(" "))
        },
        inf.faults.len()
    )
}

fn write_json(path: &Path, v: &impl Serialize) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(v).map_err(|e| Error::Usage(e.to_string()))? + "\n";
    crate::output::write_atomic(path, text.as_bytes())
}

/// The output directory: `--out`, else `output/<log>-replay/`.
pub fn out_dir(o: &Options) -> PathBuf {
    o.out.clone().unwrap_or_else(|| default_out(&o.log))
}

/// Runs the replay and the what-ifs, writes everything into the output directory.
pub fn run(
    o: &Options,
    base: &Value,
    imported: Option<&Imported>,
    s: &Scan,
    inf: Inference,
    warnings: Vec<String>,
) -> Result<Outcome, Error> {
    let name = format!("{}-replay", super::stem(&o.log));
    let out = out_dir(o);
    crate::output::prepare_dir(&out)?;
    let model_path = out.join("replay-model.json");
    let origin = s.collector.origin;
    let desc = description(o, imported, s, &inf);
    let docs = whatif::variants(base, &inf, &name, origin, &desc);
    let mid = Model::from_document(&docs[0].1, &model_path)?;
    write_json(&model_path, &mid.effective_spec())?;
    let runs = Runs {
        docs: &docs,
        model_path: &model_path,
        seed: o.seed,
        reps: o.reps.max(1),
        charts: o.charts,
    };
    let logged = runs.scenario("as logged", &[], &out)?;
    let w = &inf.workload;
    let rate = w.requests as f64 / w.arrivals_end_s.max(1e-3);
    let log_figs = fit::log_figures(s, &inf);
    let fit = fit::fit(&log_figs, &logged.summary.runs, rate, w.requests as f64);
    let mut scenarios: Vec<Scenario> = vec![logged];
    for g in &o.groups {
        let dir_name = crate::output::whatif::run_dir_name(&name, g, None).map_err(Error::Usage)?;
        let sc = runs.scenario(&Override::texts(g).join(" "), g, &out.join(&dir_name))?;
        scenarios.push(sc);
    }
    let mut counterfactuals = vec![];
    if scenarios.len() > 1 {
        let c = whatif::comparison(&scenarios);
        if o.charts {
            whatif::compare_page(&scenarios, &c, &out.join("compare"))?;
        }
        let names: Vec<String> = c
            .metrics
            .iter()
            .map(|r| r.metric.clone())
            .filter(|m| metric_wanted(m))
            .collect();
        for (k, sc) in scenarios.iter().enumerate().skip(1) {
            let ranges = whatif::censoring(sc, &names);
            let rows = c
                .metrics
                .iter()
                .filter(|r| metric_wanted(&r.metric))
                .zip(ranges)
                .map(|(r, range)| {
                    let vs = r.cells[k].vs_first.clone();
                    Row {
                        metric: r.metric.clone(),
                        log: log_figs
                            .iter()
                            .find(|(n, _)| *n == r.metric)
                            .and_then(|(_, v)| *v),
                        as_logged: r.cells[0].spread,
                        what_if: r.cells[k].spread,
                        diff: vs.as_ref().and_then(|v| v.diff),
                        p_value: vs.as_ref().and_then(|v| v.p_value),
                        verdict: vs.map_or(Verdict::NoData, |v| v.verdict),
                        censoring: range,
                    }
                })
                .collect();
            counterfactuals.push(WhatIf {
                set: Override::texts(&sc.set),
                dir: sc
                    .dir
                    .file_name()
                    .map_or(String::new(), |n| n.to_string_lossy().into_owned()),
                rows,
            });
        }
    }
    let report = Report {
        log: LogInfo {
            file: o.log.display().to_string(),
            format: s.kind.name(),
            config: o.config.as_ref().map(|p| p.display().to_string()),
            target: imported.map(|i| i.target.clone()).or(o.target.clone()),
            lines: s.lines,
            requests: s.client.requests,
            malformed: s.bad,
            first_malformed: s.first_bad.clone(),
            not_proxied: s.not_proxied,
            elsewhere: s.elsewhere,
            whole_second_times: s.coarse,
            origin_epoch_s: origin,
            out_of_order: s.collector.late,
            nodes: s.servers.names.clone(),
        },
        model: "replay-model.json".into(),
        reps: o.reps.max(1),
        seed: scenarios[0].summary.seed,
        censored: docs.len() > 1,
        inference: inf,
        fit,
        counterfactuals,
        test: crate::output::compare::TEST.into(),
        limits: LIMITS.iter().map(|l| l.to_string()).collect(),
    };
    write_json(&out.join("replay.json"), &report)?;
    let text = text(&report, &out);
    let mut warnings = warnings;
    if s.bad > 0 {
        let first: Vec<String> = s
            .first_bad
            .iter()
            .map(|b| format!("line {}: {}", b.line, b.reason))
            .collect();
        warnings.push(format!(
            "{}: {} of {} line(s) malformed and left out ({:.1}%): {}{}",
            o.log.display(),
            s.bad,
            s.lines,
            100.0 * s.bad as f64 / s.lines.max(1) as f64,
            first.join("; "),
            if s.bad as usize > first.len() {
                "; …"
            } else {
                ""
            }
        ));
    }
    Ok(Outcome {
        out,
        report,
        text,
        warnings,
    })
}

fn num(x: Option<f64>) -> String {
    match x.map(|v| v + 0.0) {
        None => "-".into(),
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        Some(v) => format!("{v:.3}"),
    }
}

fn spread(s: &Spread) -> String {
    match (s.median, s.min, s.max) {
        (Some(m), Some(lo), Some(hi)) if (hi - lo).abs() > 1e-9 => {
            format!("{} [{}–{}]", num(Some(m)), num(Some(lo)), num(Some(hi)))
        }
        (m, ..) => num(m),
    }
}

fn behaviour(b: &Behaviour) -> String {
    match b {
        Behaviour::Crash => "crash (refuses connections)".into(),
        Behaviour::Partition => "partition (connects time out)".into(),
        Behaviour::Hang => "hang (accepts, never answers)".into(),
        Behaviour::Flaky { p, reset: true, .. } => format!("flaky p={p} (resets)"),
        Behaviour::Flaky { p, status, .. } => format!("flaky p={p} status {status}"),
        Behaviour::Slow { factor } => format!("slow ×{factor}"),
    }
}

fn text(r: &Report, out: &Path) -> String {
    let l = &r.log;
    let w = &r.inference.workload;
    let mut t = format!(
        "replay of {}  ({})\n{} line(s): {} request(s), {} malformed, {} not proxied, {} for other upstreams\n",
        l.file, l.format, l.lines, l.requests, l.malformed, l.not_proxied, l.elsewhere
    );
    t.push_str(&format!(
        "workload: {:.2} req/s{} ({} spacing), arrivals until {:.1}s, run {:.1}s; {}; client timeout {}\n",
        w.rate_per_s,
        if w.schedule.len() > 1 { format!(" then {} rate change(s)", w.schedule.len() - 1) } else { String::new() },
        if w.arrivals == crate::spec::Arrivals::Constant { "constant" } else { "Poisson" },
        w.arrivals_end_s,
        w.duration_s,
        serde_json::to_value(w.method).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
        w.timeout_s.map_or("none seen".into(), |x| format!("{x}s"))
    ));
    t.push_str("faults inferred (seconds since the first request; [earliest–latest] where the log cannot tell):\n");
    if r.inference.faults.is_empty() {
        t.push_str("  none\n");
    }
    let b = |x: &super::infer::Bound| {
        if x.width() > 1e-6 {
            format!("{:.3} [{:.3}–{:.3}]", x.mid(), x.lo, x.hi)
        } else {
            format!("{:.3}", x.lo)
        }
    };
    for f in &r.inference.faults {
        t.push_str(&format!(
            "  {}  {}  from {} to {}  ({})\n",
            f.node,
            behaviour(&f.behaviour),
            b(&f.start),
            f.end.as_ref().map_or("the end".into(), b),
            f.evidence
        ));
    }
    let mut ej: Vec<String> = vec![];
    for n in &l.nodes {
        let mine: Vec<_> = r
            .inference
            .episodes
            .iter()
            .filter(|e| &e.node == n)
            .collect();
        if let Some(first) = mine.first() {
            ej.push(format!(
                "{n} {} (first at {:.3}s, from {})",
                mine.len(),
                first.start_s,
                first.source
            ));
        }
    }
    t.push_str(&format!(
        "ejections in the log: {}\n",
        if ej.is_empty() {
            "none".into()
        } else {
            ej.join("; ")
        }
    ));
    t.push_str(&format!(
        "\nfit: the replay as logged ({} reps) against the log: {} of {} figures agree\n",
        r.reps,
        r.fit.agree,
        r.fit.figures.len()
    ));
    let mut rows = vec![vec![
        "figure".into(),
        "log".into(),
        "replay".into(),
        "verdict".into(),
    ]];
    for f in &r.fit.figures {
        rows.push(vec![
            f.figure.clone(),
            num(f.log),
            spread(&f.replay),
            f.verdict.into(),
        ]);
    }
    t.push_str(&align(&rows));
    for c in &r.counterfactuals {
        t.push_str(&format!(
            "\nwhat if --set {}: the same workload and faults ({} reps each)\n",
            c.set.join(" --set "),
            r.reps
        ));
        let mut rows = vec![vec![
            "metric".into(),
            "log".into(),
            "as logged".into(),
            "what if".into(),
            "Δ".into(),
            "p".into(),
            "noise".into(),
            if r.censored {
                "censoring range".into()
            } else {
                String::new()
            },
        ]];
        for x in &c.rows {
            let range = match (x.censoring.lo, x.censoring.hi) {
                (Some(a), Some(b)) if r.censored => format!("{}–{}", num(Some(a)), num(Some(b))),
                _ => String::new(),
            };
            rows.push(vec![
                x.metric.clone(),
                num(x.log),
                spread(&x.as_logged),
                spread(&x.what_if),
                x.diff.map_or("-".into(), |d| format!("{d:+.3}")),
                x.p_value.map_or("-".into(), |p| {
                    if p < 0.001 {
                        "<0.001".into()
                    } else {
                        format!("{p:.3}")
                    }
                }),
                x.verdict.text().into(),
                range,
            ]);
        }
        t.push_str(&align(&rows));
    }
    t.push_str(&format!("\nwrote {}\n", out.display()));
    t
}

/// Where the replay's outputs go by default.
pub fn default_out(log: &Path) -> PathBuf {
    Path::new("output").join(format!("{}-replay", super::stem(log)))
}
