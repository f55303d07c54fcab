//! `hcsim compare`: finished runs side by side. Each run directory's
//! `summary.json` is read back as a typed [`Summary`]; every metric of its
//! replications (`runs[]`) becomes a row with one cell per run (median, min,
//! max, mean, n), and each run after the first gets the difference of its
//! median to the first run's and a verdict on whether that difference is
//! beyond the replication noise: the two-sided Mann–Whitney U test over the
//! replications' values ([`crate::stats::mann_whitney`]) at [`ALPHA`].
//!
//! Rendering is in [`render`] (table, Markdown, CSV, JSON) and the page with
//! overlaid timelines and distributions in [`page`] (`compare.html`).

pub mod page;
pub mod render;

use super::summary::Summary;
use crate::error::Error;
use crate::metrics::path;
use crate::stats::Spread;
use crate::stats::mann_whitney::mann_whitney;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Significance level of the noise verdict.
pub const ALPHA: f64 = 0.05;

/// What the verdict is based on, as the outputs state it.
pub const TEST: &str = "two-sided Mann-Whitney U test over the replications (exact up to 40 values, else normal approximation with tie correction), alpha 0.05";

/// One run being compared.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    /// The directory's name (`hang-max-fails--rate_per_s=10000`).
    pub label: String,
    /// The directory as given.
    pub dir: String,
    pub model: String,
    pub file: String,
    pub seed: u64,
    pub reps: usize,
    pub set: Vec<String>,
}

/// Is a run's difference to the first run beyond the replication noise?
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// p < [`ALPHA`].
    Beyond,
    /// p ≥ [`ALPHA`].
    Within,
    /// So few replications that no difference could reach [`ALPHA`].
    TooFewReps,
    /// A run has no value (a node never ejected has no ejection delay).
    NoData,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Beyond => "beyond noise",
            Verdict::Within => "within noise",
            Verdict::TooFewReps => "too few reps",
            Verdict::NoData => "-",
        }
    }
}

/// A run's value against the first run's.
#[derive(Clone, Debug, Serialize)]
pub struct VsFirst {
    /// Median minus the first run's median.
    pub diff: Option<f64>,
    /// `diff` / |first run's median| (absent when that is 0).
    pub rel_diff: Option<f64>,
    pub p_value: Option<f64>,
    pub verdict: Verdict,
}

/// One run's cell of a metric.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    #[serde(flatten)]
    pub spread: Spread,
    /// `None` for the first run.
    pub vs_first: Option<VsFirst>,
}

/// One metric across the runs.
#[derive(Clone, Debug, Serialize)]
pub struct MetricRow {
    /// Dotted name, as in a sweep's `runs.csv` (`client.errors`, `nodes.a.share`).
    pub metric: String,
    pub cells: Vec<Cell>,
    /// Each run's values over its replications (for distributions).
    #[serde(skip)]
    pub values: Vec<Vec<f64>>,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub test: String,
    pub alpha: f64,
    pub runs: Vec<RunInfo>,
    pub metrics: Vec<MetricRow>,
}

/// A run directory with its summary.
pub struct RunDir {
    pub dir: PathBuf,
    pub summary: Summary,
}

impl RunDir {
    /// Reads `DIR/summary.json`; a directory without one (a sweep's, a
    /// typo) is an error that says what `compare` takes.
    pub fn read(dir: &Path) -> Result<RunDir, Error> {
        let path = dir.join("summary.json");
        if !path.is_file() {
            let what = if dir.join("results.json").is_file() {
                "a sweep's output"
            } else if dir.is_dir() {
                "a directory without summary.json"
            } else {
                "not a directory"
            };
            return Err(Error::Usage(format!(
                "{}: {what}: compare takes the output directories of `hcsim run` (each holds summary.json)",
                dir.display()
            )));
        }
        Ok(RunDir {
            dir: dir.to_path_buf(),
            summary: Summary::read(&path)?,
        })
    }

    fn label(&self) -> String {
        self.dir.file_name().map_or_else(
            || self.dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }
}

/// Metrics shown even when every run has 0 (what a what-if is read for).
fn core(metric: &str) -> bool {
    let node_core = ["share", "ejections", "first_ejection_delay_s"];
    metric.starts_with("client.latency_ms.")
        || matches!(
            metric,
            "client.requests"
                | "client.ok"
                | "client.errors"
                | "client.timeouts"
                | "client.unfinished"
        )
        || path::split_node_metric(metric).is_some_and(|(_, f)| node_core.contains(&f.as_str()))
}

/// Where a metric goes in the table: clients, then each node in turn, then the rest.
fn order_key(metric: &str, nodes: &[String]) -> (usize, usize, usize, String) {
    const CLIENT: [&str; 5] = ["requests", "ok", "errors", "timeouts", "unfinished"];
    const LATENCY: [&str; 7] = ["p50", "p90", "p99", "p999", "p99_9", "max", "mean"];
    const NODE: [&str; 8] = [
        "share",
        "answered",
        "attempts",
        "failures",
        "ejections",
        "ejected_time_s",
        "first_ejection_delay_s",
        "recovery_delay_s",
    ];
    let rank = |list: &[&str], x: &str| list.iter().position(|m| *m == x).unwrap_or(list.len());
    if let Some(c) = metric.strip_prefix("client.") {
        if let Some(l) = c.strip_prefix("latency_ms.") {
            return (0, 2, rank(&LATENCY, l), metric.to_string());
        }
        if c.starts_with("status.") {
            return (0, 1, 0, metric.to_string());
        }
        let r = rank(&CLIENT, c);
        return (
            0,
            if r < CLIENT.len() { 0 } else { 3 },
            r,
            metric.to_string(),
        );
    }
    if let Some((node, field)) = path::split_node_metric(metric) {
        if let Some(i) = nodes.iter().position(|n| *n == node) {
            return (1 + i, 0, rank(&NODE, &field), metric.to_string());
        }
    }
    (1 + nodes.len(), 0, 0, metric.to_string())
}

/// Compares `runs` (at least one); the first is the baseline. Every metric
/// of the runs ([`crate::metrics::path`]) with `all`; else those that some
/// run has (not 0) and the core ones.
pub fn compare(runs: &[RunDir], all: bool) -> Comparison {
    // values[r][metric] = the replications' values of run r
    let mut names: Vec<String> = vec![];
    let mut nodes: Vec<String> = vec![];
    let mut values: Vec<std::collections::BTreeMap<String, Vec<Option<f64>>>> = vec![];
    for r in runs {
        for n in &r.summary.nodes {
            if !nodes.contains(&n.name) {
                nodes.push(n.name.clone());
            }
        }
        let mut by_metric: std::collections::BTreeMap<String, Vec<Option<f64>>> =
            Default::default();
        for rep in &r.summary.runs {
            let run = serde_json::to_value(rep).unwrap_or_default();
            for (m, v) in path::metrics(&run) {
                let m = m.name();
                if !names.contains(&m) {
                    names.push(m.clone());
                }
                by_metric
                    .entry(m)
                    .or_default()
                    .push(v.and_then(|n| n.as_f64()));
            }
        }
        values.push(by_metric);
    }
    names.sort_by_cached_key(|m| order_key(m, &nodes));
    let present = |r: usize, m: &str| -> Vec<f64> {
        values[r]
            .get(m)
            .map(|v| v.iter().flatten().copied().collect())
            .unwrap_or_default()
    };
    let metrics = names
        .into_iter()
        .filter(|m| {
            all || core(m) || (0..runs.len()).any(|r| present(r, m).iter().any(|&x| x != 0.0))
        })
        .map(|m| {
            let base = present(0, &m);
            let base_spread = Spread::of(&base);
            let values: Vec<Vec<f64>> = (0..runs.len()).map(|r| present(r, &m)).collect();
            let cells = (0..runs.len())
                .map(|r| {
                    let vals = &values[r];
                    let spread = Spread::of(vals);
                    let vs_first = (r > 0).then(|| vs_first(&base, &base_spread, vals, &spread));
                    Cell { spread, vs_first }
                })
                .collect();
            MetricRow {
                metric: m,
                cells,
                values,
            }
        })
        .collect();
    Comparison {
        test: TEST.into(),
        alpha: ALPHA,
        runs: runs
            .iter()
            .map(|r| RunInfo {
                label: r.label(),
                dir: r.dir.display().to_string(),
                model: r.summary.model.clone(),
                file: r.summary.file.clone(),
                seed: r.summary.seed,
                reps: r.summary.reps,
                set: r.summary.set.clone(),
            })
            .collect(),
        metrics,
    }
}

fn vs_first(base: &[f64], base_spread: &Spread, vals: &[f64], spread: &Spread) -> VsFirst {
    let round = crate::stats::round6;
    let diff = match (spread.median, base_spread.median) {
        (Some(m), Some(b)) => Some(round(m - b)),
        _ => None,
    };
    let rel_diff = match (diff, base_spread.median) {
        (Some(d), Some(b)) if b != 0.0 => Some(round(d / b.abs())),
        _ => None,
    };
    let test = mann_whitney(base, vals);
    let verdict = match test {
        None => Verdict::NoData,
        Some(t) if t.min_p >= ALPHA && t.p >= ALPHA => Verdict::TooFewReps,
        Some(t) if t.p < ALPHA => Verdict::Beyond,
        Some(_) => Verdict::Within,
    };
    VsFirst {
        diff,
        rel_diff,
        p_value: test.map(|t| round(t.p)),
        verdict,
    }
}

/// The default directory of `compare.html`: beside the first run,
/// `<first>--vs--<second>…` (shortened with a hash when long).
pub fn default_out(runs: &[RunDir]) -> PathBuf {
    let parent = runs
        .first()
        .and_then(|r| r.dir.parent())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let labels: Vec<String> = runs.iter().map(RunDir::label).collect();
    let mut name = labels.join("--vs--");
    if name.len() > 120 {
        let hash = crate::spec::overrides::fnv1a(labels.join("\n").as_bytes());
        let mut cut = 100;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name = format!("{}-{:08x}", &name[..cut], hash as u32);
    }
    parent.join(name)
}
