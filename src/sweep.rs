//! Parameter sweeps: a [`SweepSpec`] (`sweeps/*.json`) expands into a [`Plan`] of
//! points × replications; runs go in parallel, are checkpointed as they finish,
//! and end up in `runs.csv`, `points.csv` and `results.json` (or, for one shard
//! of a distributed sweep, in a `runs.jsonl` that `hcsim merge` combines).
//!
//! Determinism: run `i` of a sweep is point `i / reps`, replication `i % reps`,
//! and its seed depends only on the sweep's seed, the point and the
//! replication. Results are tagged with `i` and sorted before anything is
//! written, so outputs are byte-identical whatever `--jobs`, `--shard` or
//! `--resume` did.

use crate::cli::{self, MergeArgs, SweepArgs};
use crate::engine::SimDuration;
use crate::engine::rng::derive_seed;
use crate::engine::time::parse_duration;
use crate::error::Error;
use crate::metrics::{RunSummary, round6};
use crate::model;
use crate::report;
use crate::scenario::{self, Clients, LatencySpec, Scenario};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Number, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{IsTerminal, Write};
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

/// At most this many values per axis (a `range` that expands to more is refused).
pub const MAX_AXIS_VALUES: u64 = 10_000;
/// At most this many points per sweep.
pub const MAX_POINTS: usize = 100_000;
/// Above this many simulated requests, `hcsim sweep` asks for `--yes`.
pub const CONFIRM_ABOVE_REQUESTS: f64 = 1e10;
/// Test hook: checkpoint this many runs, then stop as if the process had been
/// killed (runs finishing after that are lost) and exit with an error.
pub const STOP_AFTER_ENV: &str = "HCSIM_STOP_AFTER";

/// Where a run's records go while a sweep is in progress, under the output directory.
const CHECKPOINT_DIR: &str = ".checkpoint";
/// The file of completed runs, in the checkpoint directory and in a shard's output.
const RUNS_FILE: &str = "runs.jsonl";
/// Fields of a run summary that describe the run rather than measure it.
const NOT_METRICS: &[&str] = &[
    "model",
    "seed",
    "duration_s",
    "measure_from_s",
    "measure_to_s",
];

// ---------------------------------------------------------------- spec types

/// A sweep file.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// Names the output directory (`output/<name>/`).
    pub name: String,
    /// Free text for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The model to start from, relative to the directory of the sweep file.
    pub model: PathBuf,
    /// Replications per point. Default 1.
    #[serde(default = "one")]
    pub reps: u32,
    /// Base seed. Default: the model's `seed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// How replications are seeded across points. Default `common`.
    #[serde(default)]
    pub seeds: SeedMode,
    /// Overrides applied to the model before the axes, in key order (so
    /// `policy` is applied before `policy.max_fails`). Values are JSON.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, Value>,
    /// The axes of the grid; points are their cartesian product, the last axis varying fastest.
    #[serde(default)]
    pub axes: Vec<AxisSpec>,
    /// Charts drawn at the end (heatmap, lines, distribution); default:
    /// heatmaps over the first two axes, or lines over the only one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub charts: Vec<crate::charts::ChartSpec>,
}

fn one() -> u32 {
    1
}

/// How the seed of replication `r` of point `p` is chosen.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SeedMode {
    /// Every point uses the seeds of `hcsim run --seed S --reps N` (common
    /// random numbers): differences between points come from the parameters, not the draws.
    #[default]
    Common,
    /// Each (point, replication) gets its own seed, `derive_seed(S, [p, r])`.
    Independent,
}

/// One axis as written. Either `path` with `values` or `range` (and optional
/// `labels`), or `zip`: a list of such axes that vary together.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AxisSpec {
    /// A dotted path into the model document: `policy.max_fails`,
    /// `nodes.A.weight`, `faults[0].for`, or a whole section such as `policy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The values, as JSON (durations are strings with units, as in models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<Value>>,
    /// `from`, `to` (inclusive) and `step`: all numbers or all durations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<RangeSpec>,
    /// Names for the values in outputs (useful when values are whole sections).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<String>>,
    /// Axes that take their i-th values together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zip: Option<Vec<AxisSpec>>,
}

/// `{"from": 1, "to": 10, "step": 1}` or `{"from": "1s", "to": "10s", "step": "1s"}`.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RangeSpec {
    pub from: Value,
    pub to: Value,
    pub step: Value,
}

/// `--shard K/N`: the runs whose index modulo `N` is `K - 1`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct Shard {
    pub k: u32,
    pub n: u32,
}

impl Shard {
    pub const WHOLE: Shard = Shard { k: 1, n: 1 };

    pub fn owns(self, run: usize) -> bool {
        run % self.n as usize == (self.k - 1) as usize
    }
    pub fn is_whole(self) -> bool {
        self.n == 1
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected K/N with 1 <= K <= N, e.g. 2/8, found \"{s}\"");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let k: u32 = k.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if k == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }
}

// ------------------------------------------------------------ axes

/// One column of the grid: a model path and its values in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub path: String,
    /// What is written into the model document.
    pub values: Vec<Value>,
    /// What the outputs show: the label, or the value itself.
    pub cells: Vec<Value>,
}

/// An axis after expansion: one column, or several (a zip) that take their
/// i-th values together.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub columns: Vec<Column>,
}

impl Axis {
    pub fn len(&self) -> usize {
        self.columns[0].values.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Expands an axis. `Err((field, reason))` names the field relative to the axis.
pub fn expand_axis(a: &AxisSpec) -> Result<Axis, (String, String)> {
    let Some(members) = &a.zip else {
        return Ok(Axis {
            columns: vec![expand_column(a)?],
        });
    };
    if a.path.is_some() || a.values.is_some() || a.range.is_some() || a.labels.is_some() {
        return Err((
            "zip".into(),
            "a zipped axis holds only `zip`; give `path`, `values` or `range`, and `labels` in each of its members".into(),
        ));
    }
    if members.is_empty() {
        return Err(("zip".into(), "must list at least one axis".into()));
    }
    let mut columns = Vec::with_capacity(members.len());
    for (j, m) in members.iter().enumerate() {
        if m.zip.is_some() {
            return Err((format!("zip[{j}].zip"), "zips do not nest".into()));
        }
        let col = expand_column(m).map_err(|(f, r)| (format!("zip[{j}].{f}"), r))?;
        columns.push(col);
    }
    let n = columns[0].values.len();
    for (j, c) in columns.iter().enumerate().skip(1) {
        if c.values.len() != n {
            return Err((
                format!("zip[{j}]"),
                format!(
                    "has {} values but zip[0] has {n}: zipped axes vary together and need as many values",
                    c.values.len()
                ),
            ));
        }
    }
    Ok(Axis { columns })
}

fn expand_column(a: &AxisSpec) -> Result<Column, (String, String)> {
    let path = a.path.clone().ok_or_else(|| {
        (
            "path".to_string(),
            "missing: name the model field to vary, e.g. \"policy.max_fails\" (or give `zip`)"
                .to_string(),
        )
    })?;
    if path.trim().is_empty() {
        return Err(("path".into(), "must not be empty".into()));
    }
    if path == "seed" {
        return Err((
            "path".into(),
            "a sweep does not vary the model's `seed`: runs are seeded from the sweep's `seed`, `seeds` and `reps`".into(),
        ));
    }
    let values = match (&a.values, &a.range) {
        (Some(_), Some(_)) => {
            return Err((
                "range".into(),
                "give either `values` or `range`, not both".into(),
            ));
        }
        (None, None) => {
            return Err((
                "values".into(),
                "missing: give `values` (a list) or `range` ({\"from\", \"to\", \"step\"})".into(),
            ));
        }
        (Some(v), None) => {
            if v.is_empty() {
                return Err(("values".into(), "must not be empty".into()));
            }
            if v.len() as u64 > MAX_AXIS_VALUES {
                return Err((
                    "values".into(),
                    format!("has {} values, more than {MAX_AXIS_VALUES}", v.len()),
                ));
            }
            v.clone()
        }
        (None, Some(r)) => expand_range(r).map_err(|(f, r)| (format!("range{f}"), r))?,
    };
    let cells = match &a.labels {
        None => values.clone(),
        Some(labels) => {
            if labels.len() != values.len() {
                return Err((
                    "labels".into(),
                    format!(
                        "has {} labels for {} values: give one label per value",
                        labels.len(),
                        values.len()
                    ),
                ));
            }
            let mut seen = BTreeSet::new();
            for l in labels {
                if l.trim().is_empty() {
                    return Err(("labels".into(), "a label must not be empty".into()));
                }
                if !seen.insert(l.as_str()) {
                    return Err(("labels".into(), format!("duplicate label \"{l}\"")));
                }
            }
            labels.iter().cloned().map(Value::String).collect()
        }
    };
    Ok(Column {
        path,
        values,
        cells,
    })
}

/// Expands a range by index (`from + i*step`, never by repeated addition), `to`
/// included when a step lands on it. `Err((field, reason))`, field being
/// `""`, `".from"`, `".to"` or `".step"`.
pub fn expand_range(r: &RangeSpec) -> Result<Vec<Value>, (String, String)> {
    match (&r.from, &r.to, &r.step) {
        (Value::Number(f), Value::Number(t), Value::Number(s)) => {
            match (f.as_i64(), t.as_i64(), s.as_i64()) {
                (Some(f), Some(t), Some(s)) => int_range(f, t, s),
                _ => float_range(f, t, s),
            }
        }
        (Value::String(f), Value::String(t), Value::String(s)) => duration_range(f, t, s),
        _ => Err((
            String::new(),
            "`from`, `to` and `step` must be all numbers or all durations such as \"5s\"".into(),
        )),
    }
}

fn check_count(n: u128) -> Result<usize, (String, String)> {
    if n > MAX_AXIS_VALUES as u128 {
        return Err((
            String::new(),
            format!("expands to {n} values, more than {MAX_AXIS_VALUES} per axis"),
        ));
    }
    Ok(n as usize)
}

fn empty_range(
    from: impl fmt::Display,
    to: impl fmt::Display,
    step: impl fmt::Display,
) -> (String, String) {
    (
        String::new(),
        format!("is empty: from {from} never reaches {to} by steps of {step}"),
    )
}

fn zero_step() -> (String, String) {
    (".step".into(), "must not be zero".into())
}

fn int_range(from: i64, to: i64, step: i64) -> Result<Vec<Value>, (String, String)> {
    if step == 0 {
        return Err(zero_step());
    }
    let span = to as i128 - from as i128;
    if span != 0 && span.signum() != (step as i128).signum() {
        return Err(empty_range(from, to, step));
    }
    let n = check_count((span / step as i128) as u128 + 1)?;
    Ok((0..n as i128)
        .map(|i| Value::from((from as i128 + i * step as i128) as i64))
        .collect())
}

/// Digits after the decimal point in a number's shortest form (`0.25` → 2).
fn decimals(n: &Number) -> Option<u32> {
    let s = n.to_string();
    if s.contains(['e', 'E']) {
        return None;
    }
    Some(s.split_once('.').map_or(0, |(_, frac)| frac.len() as u32))
}

fn float_range(f: &Number, t: &Number, s: &Number) -> Result<Vec<Value>, (String, String)> {
    let (from, to, step) = match (f.as_f64(), t.as_f64(), s.as_f64()) {
        (Some(a), Some(b), Some(c)) if a.is_finite() && b.is_finite() && c.is_finite() => (a, b, c),
        _ => return Err((String::new(), "must be finite numbers".into())),
    };
    if step == 0.0 {
        return Err(zero_step());
    }
    let steps = (to - from) / step;
    if steps < -1e-9 {
        return Err(empty_range(f, t, s));
    }
    let n = check_count((steps + 1e-9).floor() as u128 + 1)?;
    // Round to the precision the user wrote, so 0.1 steps give 0.3, not 0.30000000000000004.
    let digits = match (decimals(f), decimals(s)) {
        (Some(a), Some(b)) => a.max(b).min(15),
        _ => 15,
    };
    let scale = 10f64.powi(digits as i32);
    (0..n)
        .map(|i| {
            let x = ((from + i as f64 * step) * scale).round() / scale;
            Number::from_f64(x)
                .map(Value::Number)
                .ok_or_else(|| (String::new(), "must be finite numbers".into()))
        })
        .collect()
}

fn duration_range(f: &str, t: &str, s: &str) -> Result<Vec<Value>, (String, String)> {
    let parse =
        |field: &str, text: &str| parse_duration(text).map_err(|e| (format!(".{field}"), e));
    let from = parse("from", f)?.as_micros();
    let to = parse("to", t)?.as_micros();
    let step = parse("step", s)?.as_micros();
    if step == 0 {
        return Err(zero_step());
    }
    if to < from {
        return Err(empty_range(f, t, s));
    }
    let n = check_count(((to - from) / step) as u128 + 1)?;
    Ok((0..n as u64)
        .map(|i| Value::String(SimDuration::from_micros(from + i * step).to_string()))
        .collect())
}

/// The per-axis value indices of point `p`, the last axis varying fastest.
pub fn point_indices(lens: &[usize], mut p: usize) -> Vec<usize> {
    let mut idx = vec![0; lens.len()];
    for (slot, &len) in idx.iter_mut().zip(lens).rev() {
        *slot = p % len;
        p /= len;
    }
    idx
}

// ------------------------------------------------------------ the plan

/// Everything that determines a sweep's results, stored at the head of
/// checkpoints and shard outputs so that `hcsim merge` needs no other file.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct PlanHeader {
    pub hcsim_version: String,
    pub name: String,
    /// The sweep file, as given on the command line.
    pub sweep_file: String,
    /// The sweep file's content.
    pub definition: Value,
    /// The model file, resolved from the sweep file's directory.
    pub model_file: String,
    /// The model document with the sweep's `set` applied: every point starts from it.
    pub model: Value,
    pub seed: u64,
    pub seeds: SeedMode,
    pub reps: u32,
    /// Axis columns (model paths), in order.
    pub axes: Vec<String>,
    /// Per point, the cell of each axis column.
    pub points: Vec<Vec<Value>>,
    /// A hash of all of the above but the file paths: a checkpoint or a shard
    /// belongs to a sweep only if their fingerprints agree.
    pub fingerprint: String,
}

impl PlanHeader {
    pub fn runs(&self) -> usize {
        self.points.len() * self.reps as usize
    }
    /// Run index → (point, replication).
    pub fn point_rep(&self, run: usize) -> (usize, u32) {
        (run / self.reps as usize, (run % self.reps as usize) as u32)
    }
    /// The seed of replication `rep` of `point`.
    pub fn seed(&self, point: usize, rep: u32) -> u64 {
        match self.seeds {
            SeedMode::Common => cli::rep_seed(self.seed, rep as u64),
            SeedMode::Independent => derive_seed(self.seed, &[point as u64, rep as u64]),
        }
    }
    /// `policy.max_fails=3, policy.fail_timeout=5s`.
    pub fn describe_point(&self, point: usize) -> String {
        describe(&self.axes, &self.points[point])
    }

    fn compute_fingerprint(&self) -> String {
        let mut h = self.clone();
        h.sweep_file.clear();
        h.model_file.clear();
        h.fingerprint.clear();
        let text = serde_json::to_string(&h).expect("a plan header serializes");
        format!("{:016x}", fnv1a(text.as_bytes()))
    }
}

fn describe(axes: &[String], cells: &[Value]) -> String {
    axes.iter()
        .zip(cells)
        .map(|(a, c)| format!("{a}={}", cell_text(c)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// FNV-1a, 64 bits: a stable content hash (not for security).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A sweep ready to run: its header and one validated scenario per point.
#[derive(Clone, Debug)]
pub struct Plan {
    pub header: PlanHeader,
    pub scenarios: Vec<Scenario>,
}

impl Plan {
    /// Reads a sweep file, patches its model at every point and validates each
    /// point as `hcsim run` would.
    pub fn load(sweep_path: &Path) -> Result<Plan, Error> {
        let definition = scenario::read_document(sweep_path)?;
        let spec: SweepSpec = scenario::from_document(&definition, sweep_path)?;
        Plan::from_spec(spec, definition, sweep_path)
    }

    pub fn from_spec(spec: SweepSpec, definition: Value, sweep_path: &Path) -> Result<Plan, Error> {
        let invalid = |field: String, reason: String| Error::Invalid {
            path: sweep_path.to_path_buf(),
            field,
            reason,
        };
        let name = spec.name.trim();
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\']) {
            return Err(invalid(
                "name".into(),
                format!(
                    "must be usable as a directory name (it names output/<name>/), found \"{}\"",
                    spec.name
                ),
            ));
        }
        if !(1..=100_000).contains(&spec.reps) {
            return Err(invalid(
                "reps".into(),
                format!("must be between 1 and 100000, found {}", spec.reps),
            ));
        }
        let model_file = normalize(
            &sweep_path
                .parent()
                .unwrap_or(Path::new(""))
                .join(&spec.model),
        );
        let mut base = scenario::read_document(&model_file).map_err(|source| Error::InSweep {
            sweep: sweep_path.to_path_buf(),
            context: "model".into(),
            source: Box::new(source),
        })?;
        for (key, value) in &spec.set {
            scenario::set_path(&mut base, key, value.clone())
                .map_err(|reason| invalid(format!("set.{key}"), reason))?;
        }
        let base_scenario =
            Scenario::from_document(&base, &model_file).map_err(|source| Error::InSweep {
                sweep: sweep_path.to_path_buf(),
                context: if spec.set.is_empty() {
                    "its model".into()
                } else {
                    "its model with `set` applied".into()
                },
                source: Box::new(source),
            })?;
        // Fields left at their defaults are not in the file, but may be swept.
        let normalized = serde_json::to_value(&base_scenario.spec).unwrap_or(Value::Null);

        let axes = check_axes(&spec.axes, &mut base, &normalized, sweep_path, &model_file)?;
        let (columns, cells, scenarios) = grid(&axes, &base, sweep_path, &model_file)?;

        let mut header = PlanHeader {
            hcsim_version: env!("CARGO_PKG_VERSION").to_string(),
            name: name.to_string(),
            sweep_file: sweep_path.display().to_string(),
            definition,
            model_file: model_file.display().to_string(),
            model: base,
            seed: spec.seed.unwrap_or(base_scenario.seed),
            seeds: spec.seeds,
            reps: spec.reps,
            axes: columns,
            points: cells,
            fingerprint: String::new(),
        };
        header.fingerprint = header.compute_fingerprint();
        Ok(Plan { header, scenarios })
    }

    /// Runs run `run` and returns its checkpoint line (without the newline).
    pub fn run_line(&self, run: usize) -> String {
        let (point, rep) = self.header.point_rep(run);
        let seed = self.header.seed(point, rep);
        let summary = model::run(&self.scenarios[point], seed);
        serde_json::to_string(&RunLine {
            run,
            point,
            rep,
            seed,
            summary: &summary,
        })
        .expect("a run summary serializes")
    }

    /// Requests that `runs` simulate, at most about (closed loops count as if
    /// nothing ever timed out).
    pub fn estimated_requests(&self, runs: &[usize]) -> f64 {
        let per_point: Vec<f64> = self.scenarios.iter().map(estimated_requests).collect();
        runs.iter()
            .map(|&r| per_point[self.header.point_rep(r).0])
            .sum()
    }
}

/// Expands the axes and checks that each path is in the model, as written
/// or as a field left at its default (then `base` gets the empty sections
/// the path goes through).
fn check_axes(
    specs: &[AxisSpec],
    base: &mut Value,
    normalized: &Value,
    sweep_path: &Path,
    model_file: &Path,
) -> Result<Vec<Axis>, Error> {
    let invalid = |field: String, reason: String| Error::Invalid {
        path: sweep_path.to_path_buf(),
        field,
        reason,
    };
    let mut axes = Vec::with_capacity(specs.len());
    let mut seen = BTreeSet::new();
    for (i, a) in specs.iter().enumerate() {
        let axis = expand_axis(a).map_err(|(f, r)| invalid(format!("axes[{i}].{f}"), r))?;
        for (j, c) in axis.columns.iter().enumerate() {
            let at = if a.zip.is_some() {
                format!("axes[{i}].zip[{j}]")
            } else {
                format!("axes[{i}]")
            };
            if !seen.insert(c.path.clone()) {
                return Err(invalid(
                    format!("{at}.path"),
                    format!("`{}` is already an axis", c.path),
                ));
            }
            if scenario::get_path(base, &c.path).is_some() {
                continue;
            }
            if scenario::get_path(normalized, &c.path).is_none() {
                return Err(Error::UnknownSweepPath {
                    sweep: sweep_path.to_path_buf(),
                    axis: at,
                    path: c.path.clone(),
                    model: model_file.to_path_buf(),
                    reason: missing_reason(base, &c.path),
                });
            }
            add_default_parents(base, normalized, &c.path);
        }
        axes.push(axis);
    }
    Ok(axes)
}

/// The grid's points: the axis columns, each point's cells, and each point's
/// model, patched from `base` and validated as `hcsim run` validates it.
type Grid = (Vec<String>, Vec<Vec<Value>>, Vec<Scenario>);

fn grid(axes: &[Axis], base: &Value, sweep_path: &Path, model_file: &Path) -> Result<Grid, Error> {
    let lens: Vec<usize> = axes.iter().map(Axis::len).collect();
    let points = lens
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .filter(|&n| n <= MAX_POINTS)
        .ok_or_else(|| Error::Invalid {
            path: sweep_path.to_path_buf(),
            field: "axes".into(),
            reason: format!(
                "the grid has {} points, more than {MAX_POINTS}",
                lens.iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(" × ")
            ),
        })?;
    let columns: Vec<String> = axes
        .iter()
        .flat_map(|a| a.columns.iter().map(|c| c.path.clone()))
        .collect();
    let mut cells = Vec::with_capacity(points);
    let mut scenarios = Vec::with_capacity(points);
    for p in 0..points {
        let idx = point_indices(&lens, p);
        let row: Vec<Value> = axes
            .iter()
            .zip(&idx)
            .flat_map(|(a, &k)| a.columns.iter().map(move |c| c.cells[k].clone()))
            .collect();
        let at_point = |source: Error| Error::InSweep {
            sweep: sweep_path.to_path_buf(),
            context: format!("point {p} ({})", describe(&columns, &row)),
            source: Box::new(source),
        };
        let mut doc = base.clone();
        for (a, &k) in axes.iter().zip(&idx) {
            for c in &a.columns {
                scenario::set_path(&mut doc, &c.path, c.values[k].clone()).map_err(|reason| {
                    at_point(Error::Invalid {
                        path: model_file.to_path_buf(),
                        field: c.path.clone(),
                        reason,
                    })
                })?;
            }
        }
        scenarios.push(Scenario::from_document(&doc, model_file).map_err(at_point)?);
        cells.push(row);
    }
    Ok((columns, cells, scenarios))
}

/// Adds empty objects for the sections on the way to `path` that the model
/// leaves at their defaults (`gateway` in `gateway.proxy_read_timeout`), so
/// that the axis has a parent to write into. An empty section validates as
/// the defaults it stands for.
fn add_default_parents(doc: &mut Value, normalized: &Value, path: &str) {
    let segs: Vec<&str> = path.split('.').collect();
    for i in 0..segs.len().saturating_sub(1) {
        let prefix = segs[..=i].join(".");
        if scenario::get_path(doc, &prefix).is_none()
            && scenario::get_path(normalized, &prefix).is_some_and(Value::is_object)
        {
            // The parent of `prefix` exists (checked at the previous segment).
            let _ = scenario::set_path(doc, &prefix, Value::Object(Default::default()));
        }
    }
}

/// Why a path is not in a document: the first segment that is missing.
fn missing_reason(doc: &Value, path: &str) -> String {
    let segs: Vec<&str> = path.split('.').collect();
    for i in 0..segs.len() {
        let prefix = segs[..=i].join(".");
        if scenario::get_path(doc, &prefix).is_none() {
            let optional = "; an optional field that the model leaves out can be given a value in the model or in the sweep's `set`";
            return if i == 0 {
                format!("the model has no top-level field `{}`{optional}", segs[0])
            } else {
                format!(
                    "`{}` has no field `{}`{optional}",
                    segs[..i].join("."),
                    segs[i]
                )
            };
        }
    }
    "not found".into()
}

/// Removes `.` and `name/..` pairs without touching the file system, so that
/// outputs show `models/x.json` rather than `sweeps/../models/x.json`.
fn normalize(p: &Path) -> PathBuf {
    let mut out: Vec<Component> = Vec::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    if out.is_empty() {
        return PathBuf::from(".");
    }
    out.iter().collect()
}

fn mean_secs(l: &LatencySpec) -> f64 {
    match l {
        LatencySpec::Constant { value } => value.as_secs_f64(),
        LatencySpec::Exponential { mean } => mean.as_secs_f64(),
        LatencySpec::Lognormal { median, sigma } => {
            median.as_secs_f64() * (sigma * sigma / 2.0).exp()
        }
        LatencySpec::Uniform { min, max } => (min.as_secs_f64() + max.as_secs_f64()) / 2.0,
    }
}

/// Requests one run of `sc` sends, at most about.
pub fn estimated_requests(sc: &Scenario) -> f64 {
    let secs = sc.duration.as_secs_f64();
    match &sc.clients {
        Clients::Open { rate_per_s, .. } => rate_per_s * secs,
        Clients::Closed {
            concurrency,
            think_time,
            ..
        } => {
            let service = sc
                .nodes
                .iter()
                .map(|n| mean_secs(&n.service_time))
                .sum::<f64>()
                / sc.nodes.len().max(1) as f64;
            let cycle = think_time.as_secs_f64() + service + sc.gateway.rtt.as_secs_f64();
            *concurrency as f64 * secs / cycle.max(1e-4)
        }
    }
}

// ------------------------------------------------------------ run records

/// One completed run, as a checkpoint line.
#[derive(Serialize)]
struct RunLine<'a> {
    run: usize,
    point: usize,
    rep: u32,
    seed: u64,
    summary: &'a RunSummary,
}

/// One completed run, read back from its line.
#[derive(Clone, Debug, Deserialize)]
pub struct RunRecord {
    pub run: usize,
    pub point: usize,
    pub rep: u32,
    pub seed: u64,
    pub summary: Value,
}

/// A record and the line it was read from (kept verbatim for shard outputs).
#[derive(Clone, Debug)]
struct Done {
    rec: RunRecord,
    line: String,
}

/// The first line of a checkpoint or of a shard's `runs.jsonl`.
#[derive(Clone, Debug, Deserialize, Serialize)]
struct JournalHead {
    header: PlanHeader,
    shard: Shard,
}

/// A journal as read: its head, its records, and the length of its intact part.
struct Journal {
    head: JournalHead,
    done: Vec<Done>,
    intact_len: u64,
}

/// Reads a journal. A last line without its newline is a write that was cut
/// short (a crash or Ctrl-C): it is left out, and `intact_len` ends before it.
fn read_journal(path: &Path) -> Result<Journal, Error> {
    let text = fs::read_to_string(path).map_err(|source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |reason: String| Error::Checkpoint {
        path: path.to_path_buf(),
        reason,
    };
    let intact = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    let mut lines = intact.lines();
    let head: JournalHead = lines
        .next()
        .ok_or_else(|| bad("is empty".into()))
        .and_then(|l| {
            serde_json::from_str(l).map_err(|e| bad(format!("line 1 is not a sweep header: {e}")))
        })?;
    let total = head.header.runs();
    let mut done = Vec::new();
    for (i, line) in lines.enumerate() {
        let rec: RunRecord = serde_json::from_str(line)
            .map_err(|e| bad(format!("line {} is not a run record: {e}", i + 2)))?;
        let (point, rep) = if rec.run < total {
            head.header.point_rep(rec.run)
        } else {
            (usize::MAX, 0)
        };
        if point != rec.point || rep != rec.rep || rec.seed != head.header.seed(point, rep) {
            return Err(bad(format!(
                "line {}: run {} does not belong to this sweep",
                i + 2,
                rec.run
            )));
        }
        done.push(Done {
            rec,
            line: line.to_string(),
        });
    }
    Ok(Journal {
        head,
        done,
        intact_len: intact.len() as u64,
    })
}

/// Appends run lines to the checkpoint, each flushed to the OS as it is written.
struct Checkpoint {
    path: PathBuf,
    file: File,
}

impl Checkpoint {
    fn dir(out: &Path) -> PathBuf {
        out.join(CHECKPOINT_DIR)
    }

    /// Opens the checkpoint of `out`, returning the runs it already holds.
    fn open(
        out: &Path,
        header: &PlanHeader,
        shard: Shard,
        resume: bool,
    ) -> Result<(Checkpoint, Vec<Done>), Error> {
        let dir = Checkpoint::dir(out);
        let path = dir.join(RUNS_FILE);
        let werr = |p: &Path| {
            let p = p.to_path_buf();
            move |source| Error::Write { path: p, source }
        };
        let existing = if path.exists() {
            Some(read_journal(&path)?)
        } else {
            None
        };
        if let Some(j) = existing {
            if !resume && !j.done.is_empty() {
                return Err(Error::Checkpoint {
                    path,
                    reason: format!(
                        "an interrupted sweep left {} completed runs here: pass --resume to finish it, or remove {} to start over",
                        j.done.len(),
                        dir.display()
                    ),
                });
            }
            if resume {
                if j.head.header.fingerprint != header.fingerprint {
                    return Err(Error::Checkpoint {
                        path,
                        reason: format!(
                            "belongs to a different sweep (the sweep file, its model or hcsim changed since it was written); remove {} to start over",
                            dir.display()
                        ),
                    });
                }
                if j.head.shard != shard {
                    return Err(Error::Checkpoint {
                        path,
                        reason: format!(
                            "was written by shard {} but this is shard {shard}",
                            j.head.shard
                        ),
                    });
                }
                let file = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(werr(&path))?;
                // Drop a torn last line before appending after it.
                file.set_len(j.intact_len).map_err(werr(&path))?;
                drop(file);
                let file = OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(werr(&path))?;
                return Ok((Checkpoint { path, file }, j.done));
            }
        }
        fs::create_dir_all(&dir).map_err(werr(&dir))?;
        let mut file = File::create(&path).map_err(werr(&path))?;
        let head = serde_json::to_string(&JournalHead {
            header: header.clone(),
            shard,
        })
        .expect("a plan header serializes");
        file.write_all(format!("{head}\n").as_bytes())
            .map_err(werr(&path))?;
        Ok((Checkpoint { path, file }, Vec::new()))
    }

    fn append(&mut self, line: &str) -> Result<(), Error> {
        // One write per line: a crash cuts at most the last line short.
        let mut buf = String::with_capacity(line.len() + 1);
        buf.push_str(line);
        buf.push('\n');
        self.file
            .write_all(buf.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|source| Error::Write {
                path: self.path.clone(),
                source,
            })
    }

    fn remove(self, out: &Path) {
        drop(self.file);
        let _ = fs::remove_file(&self.path);
        let _ = fs::remove_dir(Checkpoint::dir(out));
    }
}

// ------------------------------------------------------------ commands

/// `hcsim sweep`.
pub fn cmd_sweep(args: SweepArgs) -> Result<ExitCode, Error> {
    let plan = Plan::load(&args.sweep)?;
    let h = &plan.header;
    // Charts that name a missing axis fail now, not after the runs.
    if let Some(charts) = h.definition.get("charts") {
        let charts: Vec<crate::charts::ChartSpec> =
            serde_json::from_value(charts.clone()).unwrap_or_default();
        crate::charts::check_sweep_axes(&charts, &h.axes).map_err(|(field, reason)| {
            Error::Invalid {
                path: args.sweep.clone(),
                field,
                reason,
            }
        })?;
    }
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let out = args.out.clone().unwrap_or_else(|| {
        let base = Path::new("output").join(&h.name);
        if shard.is_whole() {
            base
        } else {
            base.join(format!("shard-{}-of-{}", shard.k, shard.n))
        }
    });
    let stop_after = match std::env::var(STOP_AFTER_ENV) {
        Ok(v) => Some(v.trim().parse::<usize>().map_err(|_| {
            Error::Usage(format!(
                "{STOP_AFTER_ENV} must be a number of runs, found \"{v}\""
            ))
        })?),
        Err(_) => None,
    };
    let mine: Vec<usize> = (0..h.runs()).filter(|&r| shard.owns(r)).collect();
    let requests = plan.estimated_requests(&mine);
    if !args.quiet {
        let mut line = format!(
            "sweep {}: {} points × {} reps = {} runs",
            h.name,
            h.points.len(),
            h.reps,
            h.runs()
        );
        if !shard.is_whole() {
            line += &format!("; shard {shard} runs {} of them", mine.len());
        }
        line += &format!(", up to about {} simulated requests", human(requests));
        eprintln!("{line}");
    }
    if requests > CONFIRM_ABOVE_REQUESTS && !args.yes {
        return Err(Error::Usage(format!(
            "sweep {} would simulate up to about {} requests in {} runs, above the {} that `hcsim sweep` runs without --yes; split it across machines with --shard K/N, or pass --yes",
            h.name,
            human(requests),
            mine.len(),
            human(CONFIRM_ABOVE_REQUESTS)
        )));
    }
    let pool = cli::thread_pool(args.jobs)?;

    let (mut ckpt, mut done) = Checkpoint::open(&out, h, shard, args.resume)?;
    done.retain(|d| shard.owns(d.rec.run));
    let have: BTreeSet<usize> = done.iter().map(|d| d.rec.run).collect();
    let todo: Vec<usize> = mine.iter().copied().filter(|r| !have.contains(r)).collect();
    if !args.quiet && args.resume {
        if have.is_empty() {
            eprintln!(
                "nothing to resume in {}: running the whole sweep",
                out.display()
            );
        } else {
            eprintln!(
                "resuming: {} runs already done, {} to go",
                have.len(),
                todo.len()
            );
        }
    }

    let progress = if args.quiet || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        let pb = ProgressBar::new(todo.len() as u64);
        pb.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{wide_bar}] {pos}/{len} runs  {rate} runs/s  ETA {eta}",
            )
            .expect("the progress template is valid")
            .with_key(
                "rate",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0}", state.per_sec());
                },
            )
            .progress_chars("=> "),
        );
        pb
    };
    let (lines, stopped) = execute(&plan, &todo, &pool, &mut ckpt, &progress, stop_after)?;
    progress.finish_and_clear();
    for line in lines {
        let rec: RunRecord = serde_json::from_str(&line).map_err(|e| Error::Checkpoint {
            path: ckpt.path.clone(),
            reason: format!("a run record does not read back: {e}"),
        })?;
        done.push(Done { rec, line });
    }
    if stopped {
        return Err(Error::Interrupted {
            done: done.len(),
            total: mine.len(),
            checkpoint: ckpt.path.clone(),
        });
    }
    done.sort_by_key(|d| d.rec.run);
    done.dedup_by_key(|d| d.rec.run);

    if shard.is_whole() {
        let records: Vec<RunRecord> = done.into_iter().map(|d| d.rec).collect();
        // The per-run part of the tables runs on the same number of threads.
        cli::thread_pool(args.jobs)?.install(|| write_outputs(&out, h, &records))?;
        ckpt.remove(&out);
        if !args.no_charts {
            crate::cli::cmd_plot(&out)?;
        }
        if !args.quiet {
            crate::cli::emit(
                &(format!(
                    "wrote {} (runs.csv, points.csv, results.json: {} runs)",
                    out.display(),
                    records.len()
                ) + "\n"),
            );
        }
    } else {
        let mut text = serde_json::to_string(&JournalHead {
            header: h.clone(),
            shard,
        })
        .expect("a plan header serializes");
        text.push('\n');
        for d in &done {
            text.push_str(&d.line);
            text.push('\n');
        }
        let path = out.join(RUNS_FILE);
        report::write_atomic(&path, text.as_bytes())?;
        ckpt.remove(&out);
        if !args.quiet {
            crate::cli::emit(
                &(format!(
                    "wrote {} ({} runs of shard {shard}); combine the shards with `hcsim merge DIR... --out DIR`",
                    path.display(),
                    done.len()
                ) + "\n"),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `todo` on the pool, appending each run's line to the checkpoint as it
/// completes. Returns the new lines, in completion order, and whether the
/// stop hook cut the sweep short.
fn execute(
    plan: &Plan,
    todo: &[usize],
    pool: &rayon::ThreadPool,
    ckpt: &mut Checkpoint,
    progress: &ProgressBar,
    stop_after: Option<usize>,
) -> Result<(Vec<String>, bool), Error> {
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<String>();
    let mut lines = Vec::with_capacity(todo.len());
    let mut failed = None;
    std::thread::scope(|s| {
        let stop = &stop;
        s.spawn(move || {
            pool.install(|| {
                todo.par_iter().for_each_with(tx, |tx, &run| {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    // The receiver outlives every sender; a send cannot fail.
                    let _ = tx.send(plan.run_line(run));
                })
            })
        });
        for line in rx {
            if stop_after.is_some_and(|n| lines.len() >= n) {
                // Like a kill: runs finishing after the stop are lost.
                continue;
            }
            if failed.is_none()
                && let Err(e) = ckpt.append(&line)
            {
                failed = Some(e);
                stop.store(true, Ordering::Relaxed);
            }
            lines.push(line);
            progress.inc(1);
            if stop_after.is_some_and(|n| lines.len() >= n) {
                stop.store(true, Ordering::Relaxed);
            }
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let stopped = lines.len() < todo.len();
    Ok((lines, stopped))
}

/// `hcsim merge`.
pub fn cmd_merge(args: MergeArgs) -> Result<ExitCode, Error> {
    let mut parts: Vec<(PathBuf, Journal)> = Vec::with_capacity(args.dirs.len());
    for d in &args.dirs {
        let file = if d.is_dir() {
            d.join(RUNS_FILE)
        } else {
            d.clone()
        };
        let j = read_journal(&file)?;
        parts.push((file, j));
    }
    parts.sort_by_key(|(_, j)| j.head.shard.k);
    let (first_path, first) = &parts[0];
    let n = first.head.shard.n;
    for (path, j) in &parts {
        if j.head.header.fingerprint != first.head.header.fingerprint {
            return Err(Error::Checkpoint {
                path: path.clone(),
                reason: format!(
                    "belongs to a different sweep than {} (the sweep file, its model or hcsim differ)",
                    first_path.display()
                ),
            });
        }
        if j.head.shard.n != n {
            return Err(Error::Checkpoint {
                path: path.clone(),
                reason: format!(
                    "is shard {} but {} is shard {}: all shards must split the sweep the same way",
                    j.head.shard,
                    first_path.display(),
                    first.head.shard
                ),
            });
        }
    }
    for w in parts.windows(2) {
        if w[0].1.head.shard == w[1].1.head.shard {
            return Err(Error::Usage(format!(
                "{} and {} are both shard {}",
                w[0].0.display(),
                w[1].0.display(),
                w[0].1.head.shard
            )));
        }
    }
    let have: BTreeSet<u32> = parts.iter().map(|(_, j)| j.head.shard.k).collect();
    let missing: Vec<String> = (1..=n)
        .filter(|k| !have.contains(k))
        .map(|k| format!("{k}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(Error::Usage(format!(
            "missing shard {}: merge needs the output of every shard",
            missing.join(", ")
        )));
    }
    let header = parts
        .iter()
        .find(|(_, j)| j.head.shard.k == 1)
        .map(|(_, j)| j.head.header.clone())
        .expect("shard 1 is present");
    let mut records: Vec<RunRecord> = Vec::with_capacity(header.runs());
    for (path, j) in parts {
        let owned = j
            .done
            .iter()
            .filter(|d| j.head.shard.owns(d.rec.run))
            .count();
        let expected = (0..header.runs()).filter(|&r| j.head.shard.owns(r)).count();
        if owned != expected || owned != j.done.len() {
            return Err(Error::Checkpoint {
                path,
                reason: format!(
                    "holds {} runs of shard {} but the shard has {expected}: was it cut short?",
                    j.done.len(),
                    j.head.shard
                ),
            });
        }
        records.extend(j.done.into_iter().map(|d| d.rec));
    }
    records.sort_by_key(|r| r.run);
    records.dedup_by_key(|r| r.run);
    if records.len() != header.runs() {
        return Err(Error::Usage(format!(
            "the shards hold {} distinct runs but the sweep has {}",
            records.len(),
            header.runs()
        )));
    }
    write_outputs(&args.out, &header, &records)?;
    if !args.no_charts {
        crate::cli::cmd_plot(&args.out)?;
    }
    if !args.quiet {
        crate::cli::emit(
            &(format!(
                "wrote {} (runs.csv, points.csv, results.json: {} runs)",
                args.out.display(),
                records.len()
            ) + "\n"),
        );
    }
    Ok(ExitCode::SUCCESS)
}

// ------------------------------------------------------------ outputs

/// A segment of a metric's path; list items are named (`nodes.A`) but keep their order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Seg {
    Key(String),
    Item(usize, String),
}

/// Every numeric leaf of a run summary (nulls included: a metric that a run
/// lacks), under its path.
fn flatten(v: &Value, path: &mut Vec<Seg>, out: &mut Vec<(Vec<Seg>, Option<Number>)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if path.is_empty() && NOT_METRICS.contains(&k.as_str()) {
                    continue;
                }
                path.push(Seg::Key(k.clone()));
                flatten(x, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                let name = x
                    .get("name")
                    .and_then(Value::as_str)
                    .map_or_else(|| i.to_string(), str::to_string);
                path.push(Seg::Item(i, name));
                flatten(x, path, out);
                path.pop();
            }
        }
        Value::Number(n) => out.push((path.clone(), Some(n.clone()))),
        Value::Null => out.push((path.clone(), None)),
        Value::String(_) | Value::Bool(_) => {}
    }
}

fn seg_name(path: &[Seg]) -> String {
    path.iter()
        .map(|s| match s {
            Seg::Key(k) => k.as_str(),
            Seg::Item(_, name) => name.as_str(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// Runs × metrics: the metric names (dotted, e.g. `nodes.A.share`,
/// `client.status.503`) in a fixed order, and one row of values per run.
pub struct MetricTable {
    pub names: Vec<String>,
    pub rows: Vec<Vec<Option<Number>>>,
}

/// Flattens run summaries. Columns are the union over all runs (a status code
/// seen in one run only still gets a column), sorted by path with list items
/// in their order, so the order never depends on which runs came first.
pub fn metric_table<'a>(summaries: impl Iterator<Item = &'a Value>) -> MetricTable {
    use rayon::prelude::*;
    // Flattening and filling rows are per-run work: done on the worker
    // threads, so the serial end of a sweep stays short (it bounds --jobs scaling).
    let summaries: Vec<&Value> = summaries.collect();
    let flat: Vec<Vec<(Vec<Seg>, Option<Number>)>> = summaries
        .par_iter()
        .map(|s| {
            let mut out = Vec::new();
            flatten(s, &mut Vec::new(), &mut out);
            out
        })
        .collect();
    // Most runs have the same metrics in the same order: collect the key set
    // from the distinct shapes only.
    let mut keys: BTreeSet<&Vec<Seg>> = BTreeSet::new();
    let mut last: Option<&Vec<(Vec<Seg>, Option<Number>)>> = None;
    for run in &flat {
        let same = last.is_some_and(|l| {
            l.len() == run.len() && l.iter().zip(run).all(|((a, _), (b, _))| a == b)
        });
        if !same {
            keys.extend(run.iter().map(|(k, _)| k));
        }
        last = Some(run);
    }
    let index: BTreeMap<&Vec<Seg>, usize> = keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    let names = keys.iter().map(|k| seg_name(k)).collect();
    let rows = flat
        .par_iter()
        .map(|run| {
            let mut row = vec![None; index.len()];
            for (k, v) in run {
                row[index[k]] = v.clone();
            }
            row
        })
        .collect();
    MetricTable { names, rows }
}

/// Statistics of one metric over the replications of a point.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Stats {
    pub median: Option<f64>,
    pub mean: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub p5: Option<f64>,
    pub p95: Option<f64>,
    /// Runs that had a value.
    pub n: usize,
}

/// The quantile `q` with linear interpolation between order statistics (R's
/// type 7, numpy's default), so that `quantile(0.5)` is the median.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

impl Stats {
    /// Median, mean, min and max exactly as `hcsim run` computes them (so a
    /// point equals `hcsim run --reps` on its model), plus p5 and p95.
    pub fn of(xs: &[f64]) -> Stats {
        let s = report::stat(xs);
        let get = |k: &str| s.get(k).and_then(Value::as_f64);
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        Stats {
            median: get("median"),
            mean: get("mean"),
            min: get("min"),
            max: get("max"),
            p5: quantile(&sorted, 0.05).map(round6),
            p95: quantile(&sorted, 0.95).map(round6),
            n: xs.len(),
        }
    }
    const FIELDS: [&'static str; 7] = ["median", "mean", "min", "max", "p5", "p95", "n"];
    fn cells(&self) -> [String; 7] {
        let f = |x: Option<f64>| x.map(fmt_f64).unwrap_or_default();
        [
            f(self.median),
            f(self.mean),
            f(self.min),
            f(self.max),
            f(self.p5),
            f(self.p95),
            self.n.to_string(),
        ]
    }
}

/// Numbers as people write them: `3`, `0.25`, never `3.0` or `-0`.
fn fmt_f64(x: f64) -> String {
    if x == 0.0 { "0".into() } else { format!("{x}") }
}

fn fmt_number(n: &Number) -> String {
    match (n.as_u64(), n.as_i64(), n.as_f64()) {
        (Some(u), _, _) => u.to_string(),
        (_, Some(i), _) => i.to_string(),
        (_, _, Some(f)) => fmt_f64(f),
        _ => n.to_string(),
    }
}

/// An axis value in a CSV cell: strings bare, numbers as numbers, sections as compact JSON.
fn cell_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => fmt_number(n),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Serializes parallel name and value lists as one JSON object, in list order.
struct Ordered<'a, V>(&'a [String], &'a [V]);

impl<V: Serialize> Serialize for Ordered<'_, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0.iter().zip(self.1) {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// `results.json`.
#[derive(Serialize)]
struct Results<'a> {
    hcsim_version: &'a str,
    sweep: &'a str,
    /// The command that reproduces these results (`--jobs`, `--shard`,
    /// `--resume` and `--out` do not change them).
    command: String,
    sweep_file: &'a str,
    model_file: &'a str,
    fingerprint: &'a str,
    seed: u64,
    seeds: SeedMode,
    reps: u32,
    axes: &'a [String],
    metrics: &'a [String],
    points: Vec<PointOut<'a>>,
    runs: Vec<RunOut<'a>>,
    definition: &'a Value,
    model: &'a Value,
}

#[derive(Serialize)]
struct PointOut<'a> {
    point: usize,
    values: Ordered<'a, Value>,
    seeds: Vec<u64>,
    stats: Ordered<'a, Stats>,
}

#[derive(Serialize)]
struct RunOut<'a> {
    run: usize,
    point: usize,
    rep: u32,
    seed: u64,
    metrics: Ordered<'a, Option<Number>>,
}

fn csv_bytes(
    path: &Path,
    fill: impl FnOnce(&mut csv::Writer<Vec<u8>>) -> Result<(), csv::Error>,
) -> Result<Vec<u8>, Error> {
    let werr = |e: csv::Error| Error::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    };
    let mut w = csv::Writer::from_writer(vec![]);
    fill(&mut w).map_err(werr)?;
    w.into_inner().map_err(|e| werr(e.into_error().into()))
}

/// Writes `runs.csv`, `points.csv` and `results.json` into `out`, each
/// atomically. `records` must hold every run of the sweep, sorted by run index.
fn write_outputs(out: &Path, h: &PlanHeader, records: &[RunRecord]) -> Result<(), Error> {
    debug_assert!(records.iter().enumerate().all(|(i, r)| r.run == i));
    let table = metric_table(records.iter().map(|r| &r.summary));
    let reps = h.reps as usize;
    let stats: Vec<Vec<Stats>> = (0..h.points.len())
        .map(|p| {
            let rows = &table.rows[p * reps..(p + 1) * reps];
            (0..table.names.len())
                .map(|m| {
                    let xs: Vec<f64> = rows
                        .iter()
                        .filter_map(|row| row[m].as_ref().and_then(Number::as_f64))
                        .collect();
                    Stats::of(&xs)
                })
                .collect()
        })
        .collect();

    let path = out.join("runs.csv");
    let runs_csv = csv_bytes(&path, |w| {
        let mut head = vec!["point".to_string(), "rep".into()];
        head.extend(h.axes.iter().cloned());
        head.push("seed".into());
        head.extend(table.names.iter().cloned());
        w.write_record(&head)?;
        for (r, row) in records.iter().zip(&table.rows) {
            let mut rec = vec![r.point.to_string(), r.rep.to_string()];
            rec.extend(h.points[r.point].iter().map(cell_text));
            rec.push(r.seed.to_string());
            rec.extend(
                row.iter()
                    .map(|v| v.as_ref().map(fmt_number).unwrap_or_default()),
            );
            w.write_record(&rec)?;
        }
        Ok(())
    })?;
    report::write_atomic(&path, &runs_csv)?;

    let path = out.join("points.csv");
    let points_csv = csv_bytes(&path, |w| {
        let mut head = vec!["point".to_string()];
        head.extend(h.axes.iter().cloned());
        for m in &table.names {
            head.extend(Stats::FIELDS.iter().map(|f| format!("{m}.{f}")));
        }
        w.write_record(&head)?;
        for (p, point_stats) in stats.iter().enumerate() {
            let mut rec = vec![p.to_string()];
            rec.extend(h.points[p].iter().map(cell_text));
            for s in point_stats {
                rec.extend(s.cells());
            }
            w.write_record(&rec)?;
        }
        Ok(())
    })?;
    report::write_atomic(&path, &points_csv)?;

    let results = Results {
        hcsim_version: &h.hcsim_version,
        sweep: &h.name,
        command: format!("hcsim sweep {}", h.sweep_file),
        sweep_file: &h.sweep_file,
        model_file: &h.model_file,
        fingerprint: &h.fingerprint,
        seed: h.seed,
        seeds: h.seeds,
        reps: h.reps,
        axes: &h.axes,
        metrics: &table.names,
        points: (0..h.points.len())
            .map(|p| PointOut {
                point: p,
                values: Ordered(&h.axes, &h.points[p]),
                seeds: records[p * reps..(p + 1) * reps]
                    .iter()
                    .map(|r| r.seed)
                    .collect(),
                stats: Ordered(&table.names, &stats[p]),
            })
            .collect(),
        runs: records
            .iter()
            .zip(&table.rows)
            .map(|(r, row)| RunOut {
                run: r.run,
                point: r.point,
                rep: r.rep,
                seed: r.seed,
                metrics: Ordered(&table.names, row),
            })
            .collect(),
        definition: &h.definition,
        model: &h.model,
    };
    let json = serde_json::to_string_pretty(&results).expect("results serialize") + "\n";
    report::write_atomic(&out.join("results.json"), json.as_bytes())
}

/// `12.3k`, `4.5M`, `2.1G`: an order of magnitude for people.
fn human(x: f64) -> String {
    let (v, unit) = if x >= 1e12 {
        (x / 1e12, "T")
    } else if x >= 1e9 {
        (x / 1e9, "G")
    } else if x >= 1e6 {
        (x / 1e6, "M")
    } else if x >= 1e3 {
        (x / 1e3, "k")
    } else {
        return format!("{x:.0}");
    };
    format!("{v:.1}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn range(from: Value, to: Value, step: Value) -> Result<Vec<Value>, (String, String)> {
        expand_range(&RangeSpec { from, to, step })
    }

    #[test]
    fn integer_ranges_include_their_end_and_go_both_ways() {
        assert_eq!(
            range(json!(1), json!(5), json!(2)).unwrap(),
            vec![json!(1), json!(3), json!(5)]
        );
        assert_eq!(
            range(json!(1), json!(6), json!(2)).unwrap(),
            vec![json!(1), json!(3), json!(5)]
        );
        assert_eq!(
            range(json!(3), json!(1), json!(-1)).unwrap(),
            vec![json!(3), json!(2), json!(1)]
        );
        assert_eq!(range(json!(4), json!(4), json!(1)).unwrap(), vec![json!(4)]);
    }

    #[test]
    fn float_ranges_are_expanded_by_index_not_by_addition() {
        let v = range(json!(0.0), json!(1.0), json!(0.1)).unwrap();
        assert_eq!(v.len(), 11, "1.0 is reached despite 0.1 not being exact");
        assert_eq!(v[3], json!(0.3));
        assert_eq!(v[10], json!(1.0));
        let v = range(json!(0.001), json!(0.01), json!(0.003)).unwrap();
        assert_eq!(
            v,
            vec![json!(0.001), json!(0.004), json!(0.007), json!(0.01)]
        );
        let v = range(json!(1.0), json!(0.0), json!(-0.25)).unwrap();
        assert_eq!(v.len(), 5);
        assert_eq!(v[4], json!(0.0));
    }

    #[test]
    fn duration_ranges_use_units() {
        let v = range(json!("1s"), json!("3s"), json!("500ms")).unwrap();
        assert_eq!(
            v,
            vec![
                json!("1s"),
                json!("1.5s"),
                json!("2s"),
                json!("2.5s"),
                json!("3s")
            ]
        );
    }

    #[test]
    fn bad_ranges_are_refused() {
        let e = range(json!(1), json!(5), json!(0)).unwrap_err();
        assert_eq!(e.0, ".step");
        assert!(e.1.contains("zero"), "{e:?}");
        let e = range(json!(5), json!(1), json!(1)).unwrap_err();
        assert!(e.1.contains("is empty"), "{e:?}");
        let e = range(json!(0), json!(1_000_000), json!(1)).unwrap_err();
        assert!(e.1.contains("more than 10000"), "{e:?}");
        let e = range(json!("1s"), json!("1h"), json!("1ms")).unwrap_err();
        assert!(e.1.contains("more than 10000"), "{e:?}");
        let e = range(json!("1s"), json!(10), json!("1s")).unwrap_err();
        assert!(e.1.contains("all numbers or all durations"), "{e:?}");
        let e = range(json!("1s"), json!("10"), json!("1s")).unwrap_err();
        assert_eq!(e.0, ".to");
        let e = range(json!("0s"), json!("10s"), json!("0s")).unwrap_err();
        assert_eq!(e.0, ".step");
    }

    fn axis(v: Value) -> Result<Axis, (String, String)> {
        expand_axis(&serde_json::from_value(v).unwrap())
    }

    #[test]
    fn zipped_axes_vary_together() {
        let a = axis(json!({"zip": [
            {"path": "gateway.proxy_connect_timeout", "values": ["1s", "5s"]},
            {"path": "gateway.proxy_read_timeout", "range": {"from": "10s", "to": "50s", "step": "40s"}}
        ]}))
        .unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a.columns[1].values, vec![json!("10s"), json!("50s")]);
        let e = axis(json!({"zip": [
            {"path": "a", "values": [1, 2]},
            {"path": "b", "values": [1, 2, 3]}
        ]}))
        .unwrap_err();
        assert_eq!(e.0, "zip[1]");
        assert!(e.1.contains("has 3 values but zip[0] has 2"), "{e:?}");
        let e = axis(json!({"path": "a", "zip": [{"path": "b", "values": [1]}]})).unwrap_err();
        assert!(e.1.contains("holds only `zip`"), "{e:?}");
        let e = axis(json!({"zip": [{"zip": []}]})).unwrap_err();
        assert_eq!(e.0, "zip[0].zip");
    }

    #[test]
    fn labels_name_section_values() {
        let a = axis(json!({"path": "policy", "values": [{"kind": "none"}, {"kind": "max_fails"}], "labels": ["off", "nginx"]})).unwrap();
        assert_eq!(a.columns[0].cells, vec![json!("off"), json!("nginx")]);
        assert_eq!(a.columns[0].values[0], json!({"kind": "none"}));
        let e = axis(json!({"path": "policy", "values": [1, 2], "labels": ["x"]})).unwrap_err();
        assert_eq!(e.0, "labels");
        let e =
            axis(json!({"path": "policy", "values": [1, 2], "labels": ["x", "x"]})).unwrap_err();
        assert!(e.1.contains("duplicate label"), "{e:?}");
        let e = axis(json!({"path": "p", "values": [1], "range": {"from": 1, "to": 2, "step": 1}}))
            .unwrap_err();
        assert!(e.1.contains("not both"), "{e:?}");
        let e = axis(json!({"path": "seed", "values": [1]})).unwrap_err();
        assert!(e.1.contains("does not vary the model's `seed`"), "{e:?}");
    }

    #[test]
    fn points_are_row_major_with_the_last_axis_fastest() {
        let lens = [2, 3];
        let all: Vec<Vec<usize>> = (0..6).map(|p| point_indices(&lens, p)).collect();
        assert_eq!(
            all,
            vec![
                vec![0, 0],
                vec![0, 1],
                vec![0, 2],
                vec![1, 0],
                vec![1, 1],
                vec![1, 2]
            ]
        );
        assert_eq!(point_indices(&[], 0), Vec::<usize>::new());
    }

    #[test]
    fn shards_partition_the_runs() {
        let s: Shard = "2/3".parse().unwrap();
        assert_eq!(s, Shard { k: 2, n: 3 });
        assert!(s.owns(1) && s.owns(4) && !s.owns(0) && !s.owns(2));
        for bad in ["0/3", "4/3", "3", "a/b", "1/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let shards: Vec<Shard> = (1..=3).map(|k| Shard { k, n: 3 }).collect();
        for run in 0..20 {
            assert_eq!(shards.iter().filter(|s| s.owns(run)).count(), 1);
        }
    }

    #[test]
    fn quantiles_interpolate_and_match_the_median() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&xs, 0.5), Some(2.5));
        assert_eq!(quantile(&xs, 0.0), Some(1.0));
        assert_eq!(quantile(&xs, 1.0), Some(4.0));
        assert!((quantile(&xs, 0.05).unwrap() - 1.15).abs() < 1e-12);
        let s = Stats::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(
            (s.median, s.min, s.max, s.n),
            (Some(2.5), Some(1.0), Some(4.0), 4)
        );
        assert_eq!(Stats::of(&[]).median, None);
    }

    #[test]
    fn metric_columns_use_node_names_and_keep_node_order() {
        let runs = [
            json!({"model": "m", "seed": 1, "events": 10, "client": {"status": {"200": 5}, "ok": 5},
                   "nodes": [{"name": "b", "share": 0.5, "delay": null}, {"name": "a", "share": 0.5, "delay": 1.5}]}),
            json!({"model": "m", "seed": 2, "events": 11, "client": {"status": {"200": 4, "503": 1}, "ok": 4},
                   "nodes": [{"name": "b", "share": 1.0, "delay": null}, {"name": "a", "share": 0.0, "delay": null}]}),
        ];
        let t = metric_table(runs.iter());
        assert_eq!(
            t.names,
            [
                "client.ok",
                "client.status.200",
                "client.status.503",
                "events",
                "nodes.b.delay",
                "nodes.b.share",
                "nodes.a.delay",
                "nodes.a.share"
            ]
        );
        assert_eq!(t.rows[0][2], None, "a status a run did not see is absent");
        assert_eq!(t.rows[1][2], Some(Number::from(1)));
        assert_eq!(fmt_number(t.rows[1][5].as_ref().unwrap()), "1");
    }

    #[test]
    fn paths_are_normalized_lexically() {
        assert_eq!(
            normalize(Path::new("sweeps/../models/x.json")),
            PathBuf::from("models/x.json")
        );
        assert_eq!(
            normalize(Path::new("./a/./b.json")),
            PathBuf::from("a/b.json")
        );
        assert_eq!(
            normalize(Path::new("../models/x.json")),
            PathBuf::from("../models/x.json")
        );
        assert_eq!(
            normalize(Path::new("/tmp/s/../m.json")),
            PathBuf::from("/tmp/m.json")
        );
    }

    #[test]
    fn defaulted_sections_get_an_empty_parent() {
        let mut doc = json!({"name": "m", "nodes": [{"name": "A"}]});
        let normalized = json!({"name": "m", "gateway": {"proxy_read_timeout": "60s"}, "nodes": [{"name": "A", "weight": 1}]});
        add_default_parents(&mut doc, &normalized, "gateway.proxy_read_timeout");
        add_default_parents(&mut doc, &normalized, "nodes.A.weight");
        assert_eq!(
            doc,
            json!({"name": "m", "gateway": {}, "nodes": [{"name": "A"}]})
        );
    }

    #[test]
    fn missing_paths_name_the_first_missing_segment() {
        let doc = json!({"policy": {"max_fails": 1}, "nodes": [{"name": "A"}]});
        assert!(
            missing_reason(&doc, "policy.max_fail").starts_with("`policy` has no field `max_fail`")
        );
        assert!(
            missing_reason(&doc, "polcy.max_fails")
                .starts_with("the model has no top-level field `polcy`")
        );
        assert!(missing_reason(&doc, "nodes.B.weight").starts_with("`nodes` has no field `B`"));
    }
}
