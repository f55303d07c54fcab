//! A sweep's plan: the sweep file read, its model patched at every point of
//! the grid and validated as `hcsim run` validates a model, and the header
//! (everything that determines the results) that checkpoints and shard
//! outputs carry.

use super::axes::{Axis, cell_text, expand_axis, point_indices};
use super::journal::RunLine;
use crate::engine::rng::derive_seed;
use crate::error::Error;
use crate::spec::{self, AxisSpec, Model, SeedMode, SweepSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// At most this many points per sweep.
pub const MAX_POINTS: usize = 100_000;

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
            SeedMode::Common => crate::engine::rng::rep_seed(self.seed, rep as u64),
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

/// A sweep ready to run: its header and one validated model per point.
#[derive(Clone, Debug)]
pub struct Plan {
    pub header: PlanHeader,
    pub models: Vec<Model>,
}

impl Plan {
    /// Reads a sweep file, patches its model at every point and validates each
    /// point as `hcsim run` would.
    pub fn load(sweep_path: &Path) -> Result<Plan, Error> {
        let definition = spec::read_document(sweep_path)?;
        let spec: SweepSpec = spec::from_document(&definition, sweep_path)?;
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
        let mut base = spec::read_document(&model_file).map_err(|source| Error::InSweep {
            sweep: sweep_path.to_path_buf(),
            context: "model".into(),
            source: Box::new(source),
        })?;
        for (key, value) in &spec.set {
            spec::set_path(&mut base, key, value.clone())
                .map_err(|reason| invalid(format!("set.{key}"), reason))?;
        }
        let base_scenario =
            Model::from_document(&base, &model_file).map_err(|source| Error::InSweep {
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
        let (columns, cells, models) = grid(&axes, &base, sweep_path, &model_file)?;
        // Charts that name a missing axis fail now, not after the runs.
        spec::charts::check_sweep_axes(&spec.charts, &columns)
            .map_err(|(field, reason)| invalid(field, reason))?;

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
        Ok(Plan { header, models })
    }

    /// Runs run `run` and returns its checkpoint line (without the newline).
    pub fn run_line(&self, run: usize) -> String {
        let (point, rep) = self.header.point_rep(run);
        let seed = self.header.seed(point, rep);
        let summary = crate::world::run(&self.models[point], seed);
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
        let per_point: Vec<f64> = self
            .models
            .iter()
            .map(|m| crate::run::cost::estimate(m).requests)
            .collect();
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
            if spec::get_path(base, &c.path).is_some() {
                continue;
            }
            if spec::get_path(normalized, &c.path).is_none() {
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
type Grid = (Vec<String>, Vec<Vec<Value>>, Vec<Model>);

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
    let mut models = Vec::with_capacity(points);
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
                spec::set_path(&mut doc, &c.path, c.values[k].clone()).map_err(|reason| {
                    at_point(Error::Invalid {
                        path: model_file.to_path_buf(),
                        field: c.path.clone(),
                        reason,
                    })
                })?;
            }
        }
        models.push(Model::from_document(&doc, model_file).map_err(at_point)?);
        cells.push(row);
    }
    Ok((columns, cells, models))
}

/// Adds empty objects for the sections on the way to `path` that the model
/// leaves at their defaults (`gateway` in `gateway.proxy_read_timeout`), so
/// that the axis has a parent to write into. An empty section validates as
/// the defaults it stands for.
fn add_default_parents(doc: &mut Value, normalized: &Value, path: &str) {
    let segs: Vec<&str> = path.split('.').collect();
    for i in 0..segs.len().saturating_sub(1) {
        let prefix = segs[..=i].join(".");
        if spec::get_path(doc, &prefix).is_none()
            && spec::get_path(normalized, &prefix).is_some_and(Value::is_object)
        {
            // The parent of `prefix` exists (checked at the previous segment).
            let _ = spec::set_path(doc, &prefix, Value::Object(Default::default()));
        }
    }
}

/// Why a path is not in a document: the first segment that is missing.
fn missing_reason(doc: &Value, path: &str) -> String {
    let segs: Vec<&str> = path.split('.').collect();
    for i in 0..segs.len() {
        let prefix = segs[..=i].join(".");
        if spec::get_path(doc, &prefix).is_none() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
