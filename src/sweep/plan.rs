//! A sweep's plan: the sweep file read, its model patched at every point of
//! the grid and validated as `hcsim run` validates a model, and the header
//! (everything that determines the results) that checkpoints and shard
//! outputs carry.

use super::axes::{Axis, cell_text, expand_axis, point_indices};
use crate::engine::rng::derive_seed;
use crate::engine::time::parse_duration;
use crate::error::Error;
use crate::spec::{self, AxisSpec, Model, Override, SeedMode, SweepSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// At most this many points per sweep.
pub const MAX_POINTS: usize = 100_000;

/// Everything that determines a sweep's results, stored at the head of
/// checkpoints and shard outputs so that `hcsim merge` needs no other file.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct PlanHeader {
    pub hcsim_version: String,
    pub name: String,
    /// The sweep file, as given on the command line; empty for a
    /// command-line grid (`hcsim sweep MODEL --param ...`).
    pub sweep_file: String,
    /// The sweep file's content, or the sweep file a command-line grid stands for.
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
    /// The command-line arguments after the file that shape the results
    /// (`--param`, `--set`, `--reps`, `--seed`), for the command that
    /// reproduces them. Not in the fingerprint: what they change is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// A hash of all of the above but the file paths (a command-line grid's
    /// model path too) and the arguments: a checkpoint or a shard belongs to
    /// a sweep only if their fingerprints agree.
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

    /// Whether the grid came from `--param` arguments rather than a sweep file.
    pub fn is_command_line(&self) -> bool {
        self.sweep_file.is_empty()
    }

    /// The command that reproduces the results (`--jobs`, `--shard`,
    /// `--resume` and `--out` do not change them).
    /// `tune` for a stage of `hcsim tune` (its definition holds the tune
    /// file), else `sweep`: the command that writes such a plan.
    pub fn kind(&self) -> &'static str {
        if self.definition.get("tune").is_some() {
            "tune"
        } else {
            "sweep"
        }
    }

    pub fn command(&self) -> String {
        let file = if self.is_command_line() {
            &self.model_file
        } else {
            &self.sweep_file
        };
        ["hcsim", self.kind(), file.as_str()]
            .into_iter()
            .chain(self.args.iter().map(String::as_str))
            .map(shell_word)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The axis columns the outputs show, and each point's cells: every axis
    /// path, followed by `<path>_s`, its value in seconds, when every cell of
    /// the axis is a duration (so that it can be plotted as a number).
    pub fn output_columns(&self) -> (Vec<String>, Vec<Vec<Value>>) {
        let seconds = |v: &Value| {
            v.as_str()
                .and_then(|s| parse_duration(s).ok())
                .and_then(|d| serde_json::Number::from_f64(d.as_secs_f64()))
        };
        let durations: Vec<bool> = (0..self.axes.len())
            .map(|a| {
                !self.points.is_empty() && self.points.iter().all(|p| seconds(&p[a]).is_some())
            })
            .collect();
        let mut names = vec![];
        for (a, name) in self.axes.iter().enumerate() {
            names.push(name.clone());
            if durations[a] {
                names.push(format!("{name}_s"));
            }
        }
        let cells = self
            .points
            .iter()
            .map(|p| {
                let mut row = Vec::with_capacity(names.len());
                for (a, cell) in p.iter().enumerate() {
                    row.push(cell.clone());
                    if durations[a] {
                        row.push(seconds(cell).map_or(Value::Null, Value::Number));
                    }
                }
                row
            })
            .collect();
        (names, cells)
    }

    fn compute_fingerprint(&self) -> String {
        let mut h = self.clone();
        if h.is_command_line()
            && let Some(d) = h.definition.as_object_mut()
        {
            // The model's path as given, which depends on the directory the
            // grid runs from (a sweep file's is relative to the file).
            d.remove("model");
        }
        h.sweep_file.clear();
        h.model_file.clear();
        h.args.clear();
        h.fingerprint.clear();
        let text = serde_json::to_string(&h).expect("a plan header serializes");
        format!("{:016x}", crate::spec::overrides::fnv1a(text.as_bytes()))
    }
}

/// A word of a shell command, quoted when the shell would read it otherwise.
pub fn shell_word(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:+@%".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

fn describe(axes: &[String], cells: &[Value]) -> String {
    axes.iter()
        .zip(cells)
        .map(|(a, c)| format!("{a}={}", cell_text(c)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What `hcsim sweep` takes besides the sweep file or the `--param`s, and
/// which changes the results: `--set` (applied to the model after the
/// sweep's own `set`), `--reps` and `--seed` (replacing the sweep's).
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub set: Vec<Override>,
    pub reps: Option<u32>,
    pub seed: Option<u64>,
}

impl Overrides {
    /// The arguments, in a fixed order: `--set`s as given, `--reps`, `--seed`.
    fn args(&self) -> Vec<String> {
        let mut out = vec![];
        for s in &self.set {
            out.extend(["--set".to_string(), s.text().to_string()]);
        }
        if let Some(r) = self.reps {
            out.extend(["--reps".to_string(), r.to_string()]);
        }
        if let Some(s) = self.seed {
            out.extend(["--seed".to_string(), s.to_string()]);
        }
        out
    }
}

/// Where a grid was defined, which errors name: a sweep file's fields, or
/// the `--param` arguments (one axis each, in order).
#[derive(Clone, Copy)]
enum Origin<'a> {
    File(&'a Path),
    Params(&'a [String]),
}

impl Origin<'_> {
    /// An error in axis `i`, `field` being relative to the axis.
    fn axis(self, i: usize, field: String, reason: String) -> Error {
        match self {
            Origin::File(path) => Error::Invalid {
                path: path.to_path_buf(),
                field: format!("axes[{i}].{field}"),
                reason,
            },
            Origin::Params(params) => Error::Param {
                arg: params[i].clone(),
                reason: format!("{field}: {reason}"),
            },
        }
    }
}

/// A grid as [`Plan::build`] takes it, from a sweep file or from `--param`s.
struct Draft<'a> {
    origin: Origin<'a>,
    name: String,
    definition: Value,
    model_file: PathBuf,
    /// The model document with every `set` and `--set` applied.
    base: Value,
    /// The fields `--set` changed, for notes on errors.
    set_fields: Vec<(String, String)>,
    /// The base model validated.
    base_model: Model,
    seed: Option<u64>,
    seeds: SeedMode,
    reps: u32,
    axes: &'a [AxisSpec],
    charts: &'a [spec::ChartSpec],
    args: Vec<String>,
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
    pub fn load(sweep_path: &Path, overrides: &Overrides) -> Result<Plan, Error> {
        let definition = spec::read_document(sweep_path)?;
        let spec: SweepSpec = spec::from_document(&definition, sweep_path)?;
        Plan::from_spec_with(spec, definition, sweep_path, overrides)
    }

    /// What `hcsim sweep FILE` runs: a sweep file, or with `--param`s a
    /// model file and the grid they make.
    pub fn open(path: &Path, params: &[String], overrides: &Overrides) -> Result<Plan, Error> {
        let doc = spec::read_document(path)?;
        match (spec::file_kind(&doc), params.is_empty()) {
            (spec::FileKind::Sweep, true) => {
                let spec: SweepSpec = spec::from_document(&doc, path)?;
                Plan::from_spec_with(spec, doc, path, overrides)
            }
            (spec::FileKind::Sweep, false) => Err(Error::Usage(format!(
                "{} is a sweep file, which has its own `axes`: --param makes a grid from a model file (pass the model, or drop --param)",
                path.display()
            ))),
            (spec::FileKind::Model, true) => Err(Error::Usage(format!(
                "{} is a model: give the grid with --param PATH=LIST (e.g. --param policy.max_fails=1,2,3 --param policy.fail_timeout=1s..10s:1s), or pass a sweep file",
                path.display()
            ))),
            (spec::FileKind::Model, false) => Plan::from_params(path, doc, params, overrides),
            (spec::FileKind::Tune, _) => Err(Error::Usage(format!(
                "{} is a tune file: run it with `hcsim tune {}`",
                path.display(),
                path.display()
            ))),
        }
    }

    pub fn from_spec(spec: SweepSpec, definition: Value, sweep_path: &Path) -> Result<Plan, Error> {
        Plan::from_spec_with(spec, definition, sweep_path, &Overrides::default())
    }

    fn from_spec_with(
        spec: SweepSpec,
        definition: Value,
        sweep_path: &Path,
        overrides: &Overrides,
    ) -> Result<Plan, Error> {
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
        let in_sweep = |context: &str, source: Error| Error::InSweep {
            sweep: sweep_path.to_path_buf(),
            context: context.into(),
            source: Box::new(source),
        };
        let mut base = spec::read_document(&model_file).map_err(|e| in_sweep("model", e))?;
        for (key, value) in &spec.set {
            Override::new(key, value.clone())
                .and_then(|o| o.apply(&mut base))
                .map_err(|reason| invalid(format!("set.{}", spec::shorten(key)), reason))?;
        }
        let set_fields = spec::apply_sets(&mut base, &model_file, &overrides.set)?;
        let base_model = Model::from_document(&base, &model_file).map_err(|e| {
            let context = match (spec.set.is_empty(), overrides.set.is_empty()) {
                (true, true) => "its model",
                (false, true) => "its model with `set` applied",
                (true, false) => "its model with --set applied",
                (false, false) => "its model with `set` and --set applied",
            };
            in_sweep(context, spec::note_sets(e, &set_fields))
        })?;
        Plan::build(Draft {
            origin: Origin::File(sweep_path),
            name: name.to_string(),
            model_file,
            base,
            set_fields,
            base_model,
            seed: overrides.seed.or(spec.seed),
            seeds: spec.seeds,
            reps: overrides.reps.unwrap_or(spec.reps),
            axes: &spec.axes,
            charts: &spec.charts,
            args: overrides.args(),
            definition,
        })
    }

    /// A command-line grid: the model document read from `model_path`, one
    /// axis per `--param`, in order. Its definition is the sweep file it
    /// stands for, and its name (the output directory) is derived from the
    /// model and the arguments.
    fn from_params(
        model_path: &Path,
        mut base: Value,
        params: &[String],
        overrides: &Overrides,
    ) -> Result<Plan, Error> {
        let axes = params
            .iter()
            .map(|arg| {
                super::params::parse_param(arg).map_err(|reason| Error::Param {
                    arg: arg.clone(),
                    reason,
                })
            })
            .collect::<Result<Vec<AxisSpec>, Error>>()?;
        let model_file = normalize(model_path);
        let set_fields = spec::apply_sets(&mut base, &model_file, &overrides.set)?;
        let base_model = Model::from_document(&base, &model_file)
            .map_err(|e| spec::note_sets(e, &set_fields))?;
        let name = super::params::grid_name(&base_model.name, params, &overrides.set);
        let reps = overrides.reps.unwrap_or(1);
        let mut definition = serde_json::json!({
            "name": name,
            "model": model_file,
            "reps": reps,
        });
        if let Some(seed) = overrides.seed {
            definition["seed"] = seed.into();
        }
        definition["axes"] = serde_json::to_value(&axes).expect("axes serialize");
        let mut args: Vec<String> = params
            .iter()
            .flat_map(|p| ["--param".to_string(), p.clone()])
            .collect();
        args.extend(overrides.args());
        Plan::build(Draft {
            origin: Origin::Params(params),
            name,
            definition,
            model_file,
            base,
            set_fields,
            base_model,
            seed: overrides.seed,
            seeds: SeedMode::Common,
            reps,
            axes: &axes,
            charts: &[],
            args,
        })
    }

    /// Expands the axes, patches and validates every point, and writes the header.
    fn build(d: Draft) -> Result<Plan, Error> {
        let origin = d.origin;
        let mut base = d.base;
        let model_file = &d.model_file;
        // Fields left at their defaults are not in the file, but may be swept.
        let normalized = serde_json::to_value(&d.base_model.spec).unwrap_or(Value::Null);
        let axes = check_axes(origin, d.axes, &mut base, &normalized, model_file)?;
        let (columns, cells, models) = grid(origin, &axes, &base, model_file, &d.set_fields)?;
        if let Origin::File(sweep_path) = origin {
            // Charts that name a missing axis fail now, not after the runs.
            spec::charts::check_sweep_axes(d.charts, &columns)
                .and_then(|()| check_chart_metrics(d.charts, &models))
                .map_err(|(field, reason)| Error::Invalid {
                    path: sweep_path.to_path_buf(),
                    field,
                    reason,
                })?;
        }
        let sweep_file = match origin {
            Origin::File(p) => p.display().to_string(),
            Origin::Params(_) => String::new(),
        };
        let mut header = PlanHeader {
            hcsim_version: env!("CARGO_PKG_VERSION").to_string(),
            name: d.name,
            sweep_file,
            definition: d.definition,
            model_file: model_file.display().to_string(),
            model: base,
            seed: d.seed.unwrap_or(d.base_model.seed),
            seeds: d.seeds,
            reps: d.reps,
            axes: columns,
            points: cells,
            args: d.args,
            fingerprint: String::new(),
        };
        header.fingerprint = header.compute_fingerprint();
        Ok(Plan { header, models })
    }

    /// A plan made elsewhere (`hcsim tune` makes one per rung of its search):
    /// `header` without its fingerprint, which is computed here, and one
    /// validated model per point.
    pub fn assemble(mut header: PlanHeader, models: Vec<Model>) -> Plan {
        debug_assert_eq!(header.points.len(), models.len());
        header.fingerprint = header.compute_fingerprint();
        Plan { header, models }
    }

    /// Peak memory of running `runs` on `jobs` worker threads, bytes, about:
    /// the run each thread simulates (its cost estimate, the largest of the
    /// points), each point's validated model, what is kept per run (a flag
    /// and where its checkpoint line is), and a fixed part for the batches
    /// of runs the outputs are written from. Completed runs are not held.
    pub fn estimated_bytes(&self, runs: &[usize], jobs: usize) -> f64 {
        /// Kept per run: its checkpoint entry, its flag and its place in the to-do list.
        const BYTES_PER_RUN: f64 = 48.0;
        /// Kept per point: its model and axis values (measured 2.6 KB on a
        /// two-node model, 100,000 points).
        const BYTES_PER_POINT: f64 = 3072.0;
        /// The program, the plan and the batches outputs are written from.
        const FIXED_BYTES: f64 = 64.0 * 1024.0 * 1024.0;
        let per_run = self
            .models
            .iter()
            .map(|m| crate::run::cost::estimate(m).bytes)
            .fold(0.0, f64::max);
        per_run * jobs.clamp(1, runs.len().max(1)) as f64
            + runs.len() as f64 * BYTES_PER_RUN
            + self.models.len() as f64 * BYTES_PER_POINT
            + FIXED_BYTES
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
    origin: Origin,
    specs: &[AxisSpec],
    base: &mut Value,
    normalized: &Value,
    model_file: &Path,
) -> Result<Vec<Axis>, Error> {
    let mut axes = Vec::with_capacity(specs.len());
    // Each column's path and the axis that gave it.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, a) in specs.iter().enumerate() {
        let axis = expand_axis(a).map_err(|(f, r)| origin.axis(i, f, r))?;
        for (j, c) in axis.columns.iter().enumerate() {
            let zip = if a.zip.is_some() {
                format!(".zip[{j}]")
            } else {
                String::new()
            };
            if let Err(reason) = spec::check_path_depth(&c.path) {
                return Err(match origin {
                    Origin::File(_) => {
                        let field = if a.zip.is_some() {
                            format!("zip[{j}].path")
                        } else {
                            "path".into()
                        };
                        origin.axis(i, field, reason)
                    }
                    Origin::Params(params) => Error::Param {
                        arg: spec::shorten(&params[i]),
                        reason,
                    },
                });
            }
            if let Some(&first) = seen.get(&c.path) {
                return Err(match origin {
                    Origin::File(_) => origin.axis(
                        i,
                        if a.zip.is_some() {
                            format!("zip[{j}].path")
                        } else {
                            "path".into()
                        },
                        format!("`{}` is already an axis", c.path),
                    ),
                    Origin::Params(params) => Error::Param {
                        arg: params[i].clone(),
                        reason: format!(
                            "`{}` is already an axis, given by --param {}: each path may vary along one axis",
                            c.path, params[first]
                        ),
                    },
                });
            }
            seen.insert(c.path.clone(), i);
            if spec::get_path(base, &c.path).is_some() {
                continue;
            }
            if spec::get_path(normalized, &c.path).is_none() {
                return Err(match origin {
                    Origin::File(sweep) => Error::UnknownSweepPath {
                        sweep: sweep.to_path_buf(),
                        axis: format!("axes[{i}]{zip}"),
                        path: c.path.clone(),
                        model: model_file.to_path_buf(),
                        reason: missing_reason(base, &c.path, "in the sweep's `set`"),
                    },
                    Origin::Params(params) => Error::Param {
                        arg: params[i].clone(),
                        reason: format!(
                            "`{}` is not in the model {}: {}",
                            c.path,
                            model_file.display(),
                            missing_reason(base, &c.path, "with --set PATH=VALUE")
                        ),
                    },
                });
            }
            add_default_parents(base, normalized, &c.path);
        }
        axes.push(axis);
    }
    Ok(axes)
}

/// The metric columns a run of `model` has: those of a run stopped before
/// its first event (every field is there, counting nothing). Status codes
/// (`client.status.503`) appear only once seen, so they are not listed.
pub fn metric_names(model: &Model) -> Vec<String> {
    let (summary, _) = crate::world::run_budgeted(model, model.seed, 0, None);
    let doc = serde_json::to_value(&summary).expect("a run summary serializes");
    let mut set = super::table::ColumnSet::default();
    set.add(&super::table::flatten_run(&doc));
    set.columns().names
}

/// Charts that name a metric no run will have fail before the runs, not after.
fn check_chart_metrics(
    charts: &[spec::ChartSpec],
    models: &[Model],
) -> Result<(), (String, String)> {
    let Some(first) = models.first() else {
        return Ok(());
    };
    let names = metric_names(first);
    for (i, c) in charts.iter().enumerate() {
        let metric = match c {
            spec::ChartSpec::Heatmap { metric, .. }
            | spec::ChartSpec::Lines { metric, .. }
            | spec::ChartSpec::Distribution { metric, .. } => metric,
            spec::ChartSpec::Timeline { .. } => continue,
        };
        if names.contains(metric) || metric.starts_with("client.status.") {
            continue;
        }
        // Points may differ in their nodes: a metric of any point will do.
        if models[1..].iter().any(|m| metric_names(m).contains(metric)) {
            continue;
        }
        let hint = crate::diagnostics::suggest(metric, names.iter().map(String::as_str))
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        return Err((
            format!("charts[{i}].metric"),
            format!(
                "no run has a metric `{metric}` (metrics are columns of runs.csv such as `client.errors` or `nodes.<name>.share`){hint}"
            ),
        ));
    }
    Ok(())
}

/// The grid's points: the axis columns, each point's cells, and each point's
/// model, patched from `base` and validated as `hcsim run` validates it.
type Grid = (Vec<String>, Vec<Vec<Value>>, Vec<Model>);

fn grid(
    origin: Origin,
    axes: &[Axis],
    base: &Value,
    model_file: &Path,
    set_fields: &[(String, String)],
) -> Result<Grid, Error> {
    let lens: Vec<usize> = axes.iter().map(Axis::len).collect();
    let points = lens
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .filter(|&n| n <= MAX_POINTS)
        .ok_or_else(|| {
            let sizes = lens
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(" × ");
            let reason = format!("the grid has {sizes} points, more than {MAX_POINTS}");
            match origin {
                Origin::File(path) => Error::Invalid {
                    path: path.to_path_buf(),
                    field: "axes".into(),
                    reason,
                },
                Origin::Params(_) => Error::Usage(format!("--param: {reason}")),
            }
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
        let mut doc = base.clone();
        let at_point = |doc: &Value, source: Error| {
            let context = format!("point {p} ({})", describe(&columns, &row));
            point_error(
                origin,
                axes,
                doc,
                context,
                spec::note_sets(source, set_fields),
            )
        };
        for (a, &k) in axes.iter().zip(&idx) {
            for c in &a.columns {
                if let Err(reason) = spec::set_path(&mut doc, &c.path, c.values[k].clone()) {
                    let source = Error::Invalid {
                        path: model_file.to_path_buf(),
                        field: c.path.clone(),
                        reason,
                    };
                    return Err(at_point(&doc, source));
                }
            }
        }
        models.push(Model::from_document(&doc, model_file).map_err(|e| at_point(&doc, e))?);
        cells.push(row);
    }
    Ok((columns, cells, models))
}

/// An error in the model of one point. From a sweep file it names the file
/// and the point; from `--param`s, the argument whose path holds the field
/// in error (the last one, as it was applied last), if any.
fn point_error(
    origin: Origin,
    axes: &[Axis],
    doc: &Value,
    context: String,
    source: Error,
) -> Error {
    let params = match origin {
        Origin::File(sweep) => {
            return Error::InSweep {
                sweep: sweep.to_path_buf(),
                context,
                source: Box::new(source),
            };
        }
        Origin::Params(params) => params,
    };
    let field = match &source {
        Error::Parse { field, .. } | Error::Invalid { field, .. } => field.clone(),
        _ => String::new(),
    };
    let under =
        |a: &str, b: &str| a == b || a.strip_prefix(b).is_some_and(|r| r.starts_with(['.', '[']));
    let blamed = axes.iter().enumerate().rev().find(|(_, a)| {
        a.columns.iter().any(|c| {
            let canonical = spec::canonical_path(doc, &c.path).unwrap_or_else(|| c.path.clone());
            !field.is_empty()
                && [canonical.as_str(), c.path.as_str()]
                    .iter()
                    .any(|p| under(&field, p) || under(p, &field))
        })
    });
    match blamed {
        Some((i, _)) => Error::Param {
            arg: params[i].clone(),
            reason: format!("at {context}: {source}"),
        },
        None => Error::Usage(format!("the --param grid at {context}: {source}")),
    }
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

/// Why a path is not in a document: the first segment that is missing, and
/// `how` an optional field left out can be given a value.
pub fn missing_reason(doc: &Value, path: &str, how: &str) -> String {
    let segs: Vec<&str> = path.split('.').collect();
    for i in 0..segs.len() {
        let prefix = segs[..=i].join(".");
        if spec::get_path(doc, &prefix).is_none() {
            let optional = format!(
                "; an optional field that the model leaves out can be given a value in the model or {how}"
            );
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
pub fn normalize(p: &Path) -> PathBuf {
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
            missing_reason(&doc, "policy.max_fail", "")
                .starts_with("`policy` has no field `max_fail`")
        );
        assert!(
            missing_reason(&doc, "polcy.max_fails", "")
                .starts_with("the model has no top-level field `polcy`")
        );
        assert!(missing_reason(&doc, "nodes.B.weight", "").starts_with("`nodes` has no field `B`"));
    }
}
