//! After the runs: aggregate replications (median/min/max of every metric),
//! render the people's table, and write the output files atomically.

use crate::error::Error;
use crate::metrics::{RunSummary, round6};
use crate::scenario::Scenario;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Top-level fields of a run summary that identify a run rather than measure it.
const NOT_METRICS: &[&str] = &["model", "seed"];

/// The document `hcsim run` writes to `summary.json` and prints with `--format json`.
/// Every metric of [`RunSummary`] appears under the same name with
/// `{median, min, max, mean, n}` over the replications (`n`: runs that had a
/// value); `runs` holds each replication's plain summary.
#[derive(Serialize)]
pub struct RunReport<'a> {
    pub hcsim_version: &'static str,
    pub model: &'a str,
    pub file: String,
    /// The command that reproduces this report (options that change results only).
    pub command: String,
    pub seed: u64,
    pub reps: usize,
    pub set: &'a [String],
    pub client: Value,
    pub nodes: Value,
    pub clock_phase_s: Value,
    pub events: Value,
    /// Fault windows, for charts: `{node, kind, start_s, end_s}`.
    pub faults: Vec<FaultWindow>,
    /// The model as simulated, every default filled in.
    pub model_spec: Value,
    pub probe_rounds: Value,
    pub runs: &'a [RunSummary],
}

/// One fault window as it appears in `summary.json`.
#[derive(Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct FaultWindow {
    pub node: String,
    pub kind: String,
    pub start_s: f64,
    /// `None`: to the end of the run.
    pub end_s: Option<f64>,
}

impl<'a> RunReport<'a> {
    pub fn new(
        sc: &'a Scenario,
        file: &Path,
        seed: u64,
        set: &'a [String],
        runs: &'a [RunSummary],
    ) -> Self {
        let values: Vec<Value> = runs
            .iter()
            .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
            .collect();
        let agg = aggregate(&values);
        let get = |k: &str| agg.get(k).cloned().unwrap_or(Value::Null);
        let mut command = format!(
            "hcsim run {} --seed {seed} --reps {}",
            file.display(),
            runs.len()
        );
        for s in set {
            command.push_str(&format!(" --set '{s}'"));
        }
        RunReport {
            hcsim_version: env!("CARGO_PKG_VERSION"),
            model: &sc.name,
            file: file.display().to_string(),
            command,
            seed,
            reps: runs.len(),
            set,
            client: get("client"),
            nodes: get("nodes"),
            clock_phase_s: get("clock_phase_s"),
            events: get("events"),
            faults: sc
                .faults
                .iter()
                .map(|f| FaultWindow {
                    node: sc.nodes[f.node.index()].name.clone(),
                    kind: f.kind.name().to_string(),
                    start_s: round6(f.start.as_secs_f64()),
                    end_s: f.end.map(|e| round6(e.as_secs_f64())),
                })
                .collect(),
            model_spec: serde_json::to_value(&sc.spec).unwrap_or(Value::Null),
            probe_rounds: get("probe_rounds"),
            runs,
        }
    }
}

/// Aggregates documents of the same shape: numbers become
/// `{median, min, max, mean, n}`, objects and arrays recurse by key and index,
/// strings are kept when all runs agree.
pub fn aggregate(docs: &[Value]) -> Value {
    let Some(first) = docs.first() else {
        return Value::Null;
    };
    match first {
        Value::Object(m) => {
            let mut out = Map::new();
            for k in m.keys() {
                if NOT_METRICS.contains(&k.as_str()) {
                    continue;
                }
                let col: Vec<Value> = docs
                    .iter()
                    .map(|d| d.get(k).cloned().unwrap_or(Value::Null))
                    .collect();
                out.insert(k.clone(), aggregate(&col));
            }
            // Keys that appear only in later runs (e.g. a status code).
            for d in docs.iter().skip(1) {
                if let Value::Object(dm) = d {
                    for k in dm.keys() {
                        if !out.contains_key(k) && !NOT_METRICS.contains(&k.as_str()) {
                            let col: Vec<Value> = docs
                                .iter()
                                .map(|d| d.get(k).cloned().unwrap_or(Value::Null))
                                .collect();
                            out.insert(k.clone(), aggregate(&col));
                        }
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            (0..items.len())
                .map(|i| {
                    let col: Vec<Value> = docs
                        .iter()
                        .map(|d| d.get(i).cloned().unwrap_or(Value::Null))
                        .collect();
                    aggregate(&col)
                })
                .collect(),
        ),
        Value::String(s) => {
            if docs.iter().all(|d| d.as_str() == Some(s)) {
                Value::String(s.clone())
            } else {
                Value::Null
            }
        }
        _ => {
            let xs: Vec<f64> = docs.iter().filter_map(Value::as_f64).collect();
            stat(&xs)
        }
    }
}

/// `{median, min, max, mean, n}` of the values; status counts missing in a
/// run count as absent, not zero.
pub fn stat(xs: &[f64]) -> Value {
    if xs.is_empty() {
        return json!({"median": null, "min": null, "max": null, "mean": null, "n": 0});
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let mean = v.iter().sum::<f64>() / n as f64;
    json!({
        "median": round6(median),
        "min": round6(v[0]),
        "max": round6(v[n - 1]),
        "mean": round6(mean),
        "n": n,
    })
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// reader never sees a half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let err = |source| Error::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir).map_err(|source| Error::Write {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(err)
}

/// Creates the output directory and checks that files can be written in it,
/// so that a bad `--out` fails before the runs rather than after them.
pub fn prepare_dir(dir: &Path) -> Result<(), Error> {
    let err = |source| Error::Write {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    let probe = dir.join(format!(".hcsim-probe{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(err)?;
    std::fs::remove_file(&probe).map_err(err)
}

/// `timeline.csv`: one row per (replication, bucket).
pub fn timeline_csv(runs: &[RunSummary]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(vec![]);
    let Some(first) = runs.first() else {
        return Ok(vec![]);
    };
    let mut header = vec![
        "rep".to_string(),
        "seed".into(),
        "t_s".into(),
        "requests".into(),
        "ok".into(),
        "errors".into(),
        "timeouts".into(),
    ];
    for n in &first.timeline.node_names {
        for col in ["answered", "attempts", "failures", "ejected"] {
            header.push(format!("{n}.{col}"));
        }
    }
    w.write_record(&header)?;
    for (rep, run) in runs.iter().enumerate() {
        for row in &run.timeline.rows {
            let mut rec = vec![
                rep.to_string(),
                run.seed.to_string(),
                fmt_num(row.t_s),
                row.requests.to_string(),
                row.ok.to_string(),
                row.errors.to_string(),
                row.timeouts.to_string(),
            ];
            for i in 0..run.timeline.node_names.len() {
                rec.push(row.answered[i].to_string());
                rec.push(row.attempts[i].to_string());
                rec.push(row.failures[i].to_string());
                rec.push(fmt_num(row.ejected[i]));
            }
            w.write_record(&rec)?;
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// `ejections.csv`: one row per ejection interval.
pub fn ejections_csv(runs: &[RunSummary]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(vec![]);
    w.write_record([
        "rep",
        "seed",
        "node",
        "scope",
        "start_s",
        "end_s",
        "duration_s",
    ])?;
    for (rep, run) in runs.iter().enumerate() {
        for e in &run.ejection_log {
            let end = e.end_s.unwrap_or(run.duration_s);
            w.write_record([
                rep.to_string(),
                run.seed.to_string(),
                e.node.clone(),
                e.scope.to_string(),
                fmt_num(e.start_s),
                e.end_s.map(fmt_num).unwrap_or_default(),
                fmt_num(round6(end - e.start_s)),
            ])?;
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

fn fmt_num(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.to_string()
    }
}

// ------------------------------------------------------------------ table

/// `median` or `median [min–max]` when replications differ.
fn cell(v: &Value, key: &str, unit: &str, digits: usize) -> String {
    let Some(s) = v.get(key) else {
        return "-".into();
    };
    let f = |k: &str| s.get(k).and_then(Value::as_f64);
    match (f("median"), f("min"), f("max")) {
        (Some(m), Some(lo), Some(hi)) if (hi - lo).abs() > 1e-9 => {
            format!("{m:.digits$}{unit} [{lo:.digits$}–{hi:.digits$}]")
        }
        (Some(m), _, _) => format!("{m:.digits$}{unit}"),
        _ => "-".into(),
    }
}

/// The people's view of a report: aligned columns with units.
pub fn table(report: &RunReport) -> String {
    let mut out = String::new();
    let c = &report.client;
    let _ = writeln!(
        out,
        "{}  seed {}  reps {}  ({})",
        report.model, report.seed, report.reps, report.file
    );
    if let Some(run) = report.runs.first() {
        let _ = writeln!(
            out,
            "simulated {}s, measured {}s–{}s",
            run.duration_s, run.measure_from_s, run.measure_to_s
        );
    }
    let _ = writeln!(
        out,
        "\nclient  requests {}  ok {}  errors {}  timeouts {}  unfinished {}",
        cell(c, "requests", "", 0),
        cell(c, "ok", "", 0),
        cell(c, "errors", "", 0),
        cell(c, "timeouts", "", 0),
        cell(c, "unfinished", "", 0),
    );
    if let Some(Value::Object(st)) = c.get("status")
        && !st.is_empty()
    {
        let parts: Vec<String> = st
            .keys()
            .map(|k| format!("{k}: {}", cell(&Value::Object(st.clone()), k, "", 0)))
            .collect();
        let _ = writeln!(out, "        status  {}", parts.join("  "));
    }
    if let Some(l) = c.get("latency_ms") {
        let _ = writeln!(
            out,
            "        latency p50 {}  p90 {}  p99 {}  max {}",
            cell(l, "p50", "ms", 1),
            cell(l, "p90", "ms", 1),
            cell(l, "p99", "ms", 1),
            cell(l, "max", "ms", 1),
        );
    }
    let r = &report.probe_rounds;
    if r.get("rounds")
        .and_then(|x| x.get("max"))
        .and_then(Value::as_f64)
        .is_some_and(|x| x > 0.0)
    {
        let _ = writeln!(
            out,
            "probe rounds {}  duration min {}  median {}  max {}",
            cell(r, "rounds", "", 0),
            cell(r, "min_s", "s", 3),
            cell(r, "median_s", "s", 3),
            cell(r, "max_s", "s", 3),
        );
    }
    let empty = vec![];
    let nodes = match &report.nodes {
        Value::Array(nodes) => nodes,
        _ => &empty,
    };
    // Columns that only some models need.
    let any = |key: &str| {
        nodes.iter().any(|n| {
            n.get(key)
                .and_then(|s| s.get("max"))
                .and_then(Value::as_f64)
                .is_some_and(|x| x > 0.0)
        })
    };
    let (show_probes, show_false, show_fault) =
        (any("probes"), any("false_ejections"), any("fault_attempts"));
    let mut headers = vec![
        "node",
        "attempts",
        "answered",
        "share",
        "failures",
        "ejections",
        "ejected",
        "first ejection",
        "recovery",
    ];
    if show_false {
        headers.push("false ejections");
    }
    if show_fault {
        headers.push("in fault (ok)");
    }
    if show_probes {
        headers.push("probes/s");
    }
    let mut rows: Vec<Vec<String>> = vec![headers.iter().map(|s| s.to_string()).collect()];
    {
        for n in nodes {
            let share = n.get("share").cloned().unwrap_or(Value::Null);
            let pct = |k: &str| share.get(k).and_then(Value::as_f64).map(|x| x * 100.0);
            let share_cell = match (pct("median"), pct("min"), pct("max")) {
                (Some(m), Some(lo), Some(hi)) if (hi - lo).abs() > 1e-9 => {
                    format!("{m:.1}% [{lo:.1}–{hi:.1}]")
                }
                (Some(m), _, _) => format!("{m:.1}%"),
                _ => "-".into(),
            };
            let nruns = report.reps as f64;
            let optional = |key: &str| {
                let got = n
                    .get(key)
                    .and_then(|s| s.get("n"))
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0);
                let base = cell(n, key, "s", 2);
                if got > 0.0 && got < nruns {
                    format!("{base} ({got:.0}/{nruns:.0} runs)")
                } else {
                    base
                }
            };
            let mut row = vec![
                n.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string(),
                cell(n, "attempts", "", 0),
                cell(n, "answered", "", 0),
                share_cell,
                cell(n, "failures", "", 0),
                cell(n, "ejections", "", 0),
                cell(n, "ejected_time_s", "s", 2),
                optional("first_ejection_delay_s"),
                optional("recovery_delay_s"),
            ];
            if show_false {
                row.push(cell(n, "false_ejections", "", 0));
            }
            if show_fault {
                row.push(format!(
                    "{} ({})",
                    cell(n, "fault_attempts", "", 0),
                    cell(n, "fault_attempts_ok", "", 0)
                ));
            }
            if show_probes {
                row.push(cell(n, "probe_load_per_s", "", 2));
            }
            rows.push(row);
        }
    }
    out.push('\n');
    out.push_str(&align(&rows));
    out
}

/// Left-aligns the first column and right-aligns the others.
pub fn align(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, s) in r.iter().enumerate() {
            let pad = widths[i] - s.chars().count();
            if i == 0 {
                line.push_str(s);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(s);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_numbers_by_path() {
        let docs = vec![
            json!({"model": "m", "seed": 1, "nodes": [{"name": "a", "share": 0.2, "d": null}], "client": {"status": {"200": 5}}}),
            json!({"model": "m", "seed": 2, "nodes": [{"name": "a", "share": 0.4, "d": 1.5}], "client": {"status": {"200": 4, "502": 1}}}),
            json!({"model": "m", "seed": 3, "nodes": [{"name": "a", "share": 0.3, "d": 2.5}], "client": {"status": {"200": 5}}}),
        ];
        let a = aggregate(&docs);
        assert!(a.get("seed").is_none());
        assert_eq!(a["nodes"][0]["name"], json!("a"));
        assert_eq!(a["nodes"][0]["share"]["median"], json!(0.3));
        assert_eq!(a["nodes"][0]["share"]["min"], json!(0.2));
        assert_eq!(a["nodes"][0]["d"]["n"], json!(2));
        assert_eq!(a["nodes"][0]["d"]["median"], json!(2.0));
        assert_eq!(a["client"]["status"]["502"]["n"], json!(1));
    }

    #[test]
    fn align_pads_columns() {
        let rows = vec![
            vec!["node".to_string(), "share".into()],
            vec!["a".to_string(), "50.0%".into()],
        ];
        assert_eq!(align(&rows), "node  share\na     50.0%\n");
    }
}
