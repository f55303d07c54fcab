//! A tune file read and checked before anything runs: its model, the
//! candidates of its search space, its scenarios as `--set` overrides, the
//! metrics its objectives and constraints name, and every (candidate,
//! scenario) model validated as `hcsim run --set` validates it.

use super::metric::Metric;
use crate::error::Error;
use crate::spec::tune::{
    Goal, ImportFormat, Op, Recommend, SearchMethod, Stat, TuneImportSpec, TuneSpec,
};
use crate::spec::{self, Model, Override};
use crate::sweep::axes::{expand_axis, point_indices};
use crate::sweep::plan::{metric_names, missing_reason, normalize};
use crate::sweep::{MAX_POINTS, cell_text};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// At most this many candidates in a search space.
pub const MAX_CANDIDATES: usize = 5_000;
/// At most this many runs in one rung of the search (candidates × scenarios × reps).
pub const MAX_RUNS: usize = 1_000_000;

/// One setting of the search space.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub index: usize,
    /// The alternative of the space it belongs to.
    pub alternative: usize,
    /// Every override, in the order applied: the alternative's `set`, then its parameters.
    pub params: Vec<Override>,
    /// The varying parameters as outputs show them (`max_fails=3 fail_timeout=5s`).
    pub label: String,
}

impl Candidate {
    /// The overrides as `--set PATH=VALUE` arguments.
    pub fn set_args(&self) -> Vec<String> {
        Override::texts(&self.params)
    }
}

/// A scenario: its name and the `--set` overrides that make it.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub set: Vec<Override>,
}

/// An objective, checked.
#[derive(Clone, Debug)]
pub struct Objective {
    pub name: String,
    /// Index into [`Setup::measures`].
    pub measure: usize,
    pub stat: Stat,
    pub goal: Goal,
    pub missing: Option<f64>,
    pub weight: f64,
}

/// A constraint, checked.
#[derive(Clone, Debug)]
pub struct Constraint {
    /// `nodes.*.ejections@noisy <= 0 in 95% of replications`.
    pub text: String,
    pub measure: usize,
    pub op: Op,
    pub bound: f64,
    pub fraction: f64,
    pub stat: Option<Stat>,
    pub missing: Option<f64>,
}

/// A metric in a scenario: what each run is reduced to.
#[derive(Clone, Debug, PartialEq)]
pub struct Measure {
    pub metric: Metric,
    pub scenario: usize,
}

/// How the search runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Grid,
    Halving { min_reps: u32, eta: u32 },
}

/// A tune file, ready to run.
pub struct Setup {
    pub file: PathBuf,
    pub name: String,
    pub description: String,
    /// The tune file's content.
    pub definition: Value,
    pub model_file: PathBuf,
    /// The model document every point starts from.
    pub base: Value,
    pub seed: u64,
    pub reps: u32,
    pub verify_reps: u32,
    pub method: Method,
    pub candidates: Vec<Candidate>,
    /// Labels of the alternatives.
    pub alternatives: Vec<String>,
    pub scenarios: Vec<Scenario>,
    pub measures: Vec<Measure>,
    pub objectives: Vec<Objective>,
    pub constraints: Vec<Constraint>,
    pub recommend: Recommend,
    /// The chart's objectives (x, y).
    pub chart: (usize, usize),
    /// Per point `candidate × scenarios + scenario`, its model.
    pub models: Vec<Model>,
    /// The gateway config the base model was imported from, if it was.
    pub imported: Option<Imported>,
}

/// A tune's base imported from a gateway config.
pub struct Imported {
    pub config: PathBuf,
    /// What `hcsim import` would warn of.
    pub warnings: Vec<String>,
    /// The model as `hcsim import` writes it: the bytes of `model.json`.
    pub json: String,
}

/// The name of the imported base model in the output directory.
pub const IMPORTED_MODEL: &str = "model.json";

/// The model a tune file's `import` gives, as `hcsim import` writes it
/// (every default written out), with the config's path and import warnings.
fn import_base(
    path: &Path,
    dir: &Path,
    spec: &TuneImportSpec,
) -> Result<(PathBuf, Value, Imported), Error> {
    use crate::config::import::{self, Format, Options, Workload};
    let config = normalize(&dir.join(&spec.file));
    let invalid = |field: &str, reason: String| Error::Invalid {
        path: path.to_path_buf(),
        field: format!("import.{field}"),
        reason,
    };
    let mut workload = Workload::default();
    if let Some(r) = spec.rate_per_s {
        if !(r.is_finite() && r > 0.0) {
            return Err(invalid(
                "rate_per_s",
                format!("expected a positive rate, found {r}"),
            ));
        }
        workload.rate_per_s = r;
    }
    if let Some(d) = &spec.duration {
        workload.duration = crate::engine::time::parse_duration(d)
            .map_err(|e| invalid("duration", format!("{e}, found \"{d}\"")))?;
    }
    let opts = Options {
        format: spec.format.map(|f| match f {
            ImportFormat::Nginx => Format::Nginx,
            ImportFormat::Haproxy => Format::Haproxy,
            ImportFormat::Envoy => Format::Envoy,
            ImportFormat::Istio => Format::Istio,
            ImportFormat::Kubernetes => Format::Kubernetes,
        }),
        target: spec.target.clone(),
        nodes: spec.nodes,
    };
    let in_tune = |e: Error| Error::InSweep {
        sweep: path.to_path_buf(),
        context: "import".into(),
        source: Box::new(e),
    };
    let imported = import::read(&config, &opts, &workload).map_err(in_tune)?;
    let model = imported.model_of(&imported.doc, &config).map_err(in_tune)?;
    let spec = model.effective_spec();
    let base = serde_json::to_value(&spec).expect("a model serializes");
    let json = serde_json::to_string_pretty(&spec).expect("a model serializes") + "\n";
    let warnings = imported.warnings.iter().map(ToString::to_string).collect();
    Ok((
        config.clone(),
        base,
        Imported {
            config,
            warnings,
            json,
        },
    ))
}

impl Setup {
    /// Reads and checks a tune file; nothing is simulated.
    pub fn load(path: &Path) -> Result<Setup, Error> {
        let definition = spec::read_document(path)?;
        let tune: TuneSpec = spec::from_document(&definition, path)?;
        let invalid = |field: String, reason: String| Error::Invalid {
            path: path.to_path_buf(),
            field,
            reason,
        };
        let name = tune.name.trim().to_string();
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\']) {
            return Err(invalid(
                "name".into(),
                format!(
                    "must be usable as a directory name (it names output/<name>/), found \"{}\"",
                    tune.name
                ),
            ));
        }
        for (field, reps) in [("reps", tune.reps), ("verify.reps", tune.verify.reps)] {
            if !(1..=10_000).contains(&reps) {
                return Err(invalid(
                    field.into(),
                    format!("must be between 1 and 10000, found {reps}"),
                ));
            }
        }
        let dir = path.parent().unwrap_or(Path::new(""));
        let (model_file, base, imported) = match (&tune.model, &tune.import) {
            (Some(model), None) => {
                let model_file = normalize(&dir.join(model));
                let base = spec::read_document(&model_file).map_err(|e| Error::InSweep {
                    sweep: path.to_path_buf(),
                    context: "model".into(),
                    source: Box::new(e),
                })?;
                (model_file, base, None)
            }
            (None, Some(import)) => {
                let (config, base, imported) = import_base(path, dir, import)?;
                (config, base, Some(imported))
            }
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "import".into(),
                    "give either `model` or `import` (a gateway config), not both".into(),
                ));
            }
            (None, None) => {
                return Err(invalid(
                    "model".into(),
                    "missing: give the model to start from, or `import` with a gateway config"
                        .into(),
                ));
            }
        };
        let base_model = Model::from_document(&base, &model_file).map_err(|e| Error::InSweep {
            sweep: path.to_path_buf(),
            context: "model".into(),
            source: Box::new(e),
        })?;
        let (candidates, alternatives) = candidates(path, &tune, &base, &model_file)?;
        let scenarios = scenarios(path, &tune)?;
        let method = method(path, &tune, candidates.len())?;
        check_points(path, candidates.len(), scenarios.len())?;
        let models = point_models(path, &base, &model_file, &candidates, &scenarios)?;
        let mut setup = Setup {
            file: path.to_path_buf(),
            imported,
            name,
            description: tune.description.clone(),
            definition,
            model_file,
            base,
            seed: tune.seed.unwrap_or(base_model.seed),
            reps: tune.reps,
            verify_reps: tune.verify.reps,
            method,
            candidates,
            alternatives,
            scenarios,
            measures: vec![],
            objectives: vec![],
            constraints: vec![],
            recommend: tune.recommend,
            chart: (0, 0),
            models,
        };
        setup.check_goals(&tune)?;
        Ok(setup)
    }

    /// The model of `candidate` in `scenario`.
    pub fn model(&self, candidate: usize, scenario: usize) -> &Model {
        &self.models[candidate * self.scenarios.len() + scenario]
    }

    /// The overrides of `candidate` in `scenario`, as `hcsim run` takes them.
    pub fn point_sets(&self, candidate: usize, scenario: usize) -> Vec<Override> {
        let mut sets = self.candidates[candidate].params.clone();
        sets.extend(self.scenarios[scenario].set.iter().cloned());
        sets
    }

    /// The base model with `candidate`'s settings (no scenario): what the
    /// config snippet is written from.
    pub fn candidate_model(&self, candidate: usize) -> Result<Model, Error> {
        let mut doc = self.base.clone();
        spec::apply_sets(
            &mut doc,
            &self.model_file,
            &self.candidates[candidate].params,
        )?;
        Model::from_document(&doc, &self.model_file)
    }

    /// Objectives and constraints: scenarios that exist, metrics that runs have.
    fn check_goals(&mut self, tune: &TuneSpec) -> Result<(), Error> {
        let file = self.file.clone();
        let invalid = |field: String, reason: String| Error::Invalid {
            path: file.clone(),
            field,
            reason,
        };
        if tune.objectives.is_empty() {
            return Err(invalid(
                "objectives".into(),
                "must list at least one objective, e.g. {\"metric\": \"client.errors\", \"scenario\": \"crash\"}".into(),
            ));
        }
        // The metric names of each scenario's first point.
        let names: Vec<Vec<String>> = (0..self.scenarios.len())
            .map(|s| metric_names(self.model(0, s)))
            .collect();
        let mut names_seen: Vec<String> = vec![];
        for (i, o) in tune.objectives.iter().enumerate() {
            let at = format!("objectives[{i}]");
            let measure = self.measure(&at, &o.metric, &o.scenario, &names)?;
            let name = if o.name.trim().is_empty() {
                format!("{}@{}", o.metric, o.scenario)
            } else {
                o.name.trim().to_string()
            };
            if names_seen.contains(&name) {
                return Err(invalid(
                    format!("{at}.name"),
                    format!("another objective is already named \"{name}\""),
                ));
            }
            names_seen.push(name.clone());
            if !o.weight.is_finite() || o.weight < 0.0 {
                return Err(invalid(
                    format!("{at}.weight"),
                    format!("must be a number ≥ 0, found {}", o.weight),
                ));
            }
            check_finite(&invalid, &format!("{at}.missing"), o.missing)?;
            self.objectives.push(Objective {
                name,
                measure,
                stat: o.stat,
                goal: o.goal,
                missing: o.missing,
                weight: o.weight,
            });
        }
        for (i, c) in tune.constraints.iter().enumerate() {
            let at = format!("constraints[{i}]");
            let measure = self.measure(&at, &c.metric, &c.scenario, &names)?;
            let fraction = c.fraction.unwrap_or(1.0);
            if !(fraction > 0.0 && fraction <= 1.0) {
                return Err(invalid(
                    format!("{at}.fraction"),
                    format!("must be in (0, 1], found {fraction}"),
                ));
            }
            if c.fraction.is_some() && c.stat.is_some() {
                return Err(invalid(
                    format!("{at}.fraction"),
                    "give `fraction` (a share of the replications) or `stat` (a statistic over them), not both".into(),
                ));
            }
            check_finite(&invalid, &format!("{at}.bound"), Some(c.bound))?;
            check_finite(&invalid, &format!("{at}.missing"), c.missing)?;
            let over = match c.stat {
                Some(s) => format!("{} over the replications", s.name()),
                None if fraction == 1.0 => "in every replication".into(),
                None => format!(
                    "in ≥ {}% of replications",
                    crate::sweep::fmt_f64(fraction * 100.0)
                ),
            };
            let text = format!(
                "{}@{} {} {} {over}",
                c.metric,
                c.scenario,
                c.op.symbol(),
                crate::sweep::fmt_f64(c.bound)
            );
            self.constraints.push(Constraint {
                text,
                measure,
                op: c.op,
                bound: c.bound,
                fraction,
                stat: c.stat,
                missing: c.missing,
            });
        }
        self.chart = match &tune.chart {
            None => (0, 1.min(self.objectives.len() - 1)),
            Some(c) => {
                let find = |field: &str, name: &str| {
                    self.objectives
                        .iter()
                        .position(|o| o.name == name)
                        .ok_or_else(|| {
                            let all: Vec<String> = self
                                .objectives
                                .iter()
                                .map(|o| format!("\"{}\"", o.name))
                                .collect();
                            invalid(
                                format!("chart.{field}"),
                                format!(
                                    "no objective is named \"{name}\" (they are {})",
                                    all.join(", ")
                                ),
                            )
                        })
                };
                (find("x", &c.x)?, find("y", &c.y)?)
            }
        };
        Ok(())
    }

    /// The measure of `metric` in `scenario`, added if new; `at` is the
    /// objective or constraint, for errors.
    fn measure(
        &mut self,
        at: &str,
        metric: &str,
        scenario: &str,
        names: &[Vec<String>],
    ) -> Result<usize, Error> {
        let invalid = |field: String, reason: String| Error::Invalid {
            path: self.file.clone(),
            field,
            reason,
        };
        let s = self
            .scenarios
            .iter()
            .position(|s| s.name == scenario)
            .ok_or_else(|| {
                let all: Vec<String> = self
                    .scenarios
                    .iter()
                    .map(|s| format!("\"{}\"", s.name))
                    .collect();
                invalid(
                    format!("{at}.scenario"),
                    format!(
                        "no scenario named \"{scenario}\" (they are {})",
                        all.join(", ")
                    ),
                )
            })?;
        let metric = Metric::parse(metric, &names[s], self.model(0, s))
            .map_err(|reason| invalid(format!("{at}.metric"), reason))?;
        let m = Measure {
            metric,
            scenario: s,
        };
        Ok(match self.measures.iter().position(|x| *x == m) {
            Some(i) => i,
            None => {
                self.measures.push(m);
                self.measures.len() - 1
            }
        })
    }
}

fn check_finite(
    invalid: &impl Fn(String, String) -> Error,
    field: &str,
    v: Option<f64>,
) -> Result<(), Error> {
    match v {
        Some(x) if !x.is_finite() => Err(invalid(
            field.into(),
            format!("must be a finite number, found {x}"),
        )),
        _ => Ok(()),
    }
}

/// The candidates of every alternative, in order, and the alternatives' labels.
fn candidates(
    path: &Path,
    tune: &TuneSpec,
    base: &Value,
    model_file: &Path,
) -> Result<(Vec<Candidate>, Vec<String>), Error> {
    let invalid = |field: String, reason: String| Error::Invalid {
        path: path.to_path_buf(),
        field,
        reason,
    };
    if tune.space.is_empty() {
        return Err(invalid(
            "space".into(),
            "the search space is empty: list at least one alternative, e.g. {\"params\": [{\"path\": \"policy.max_fails\", \"values\": [1, 2, 3]}]}".into(),
        ));
    }
    let mut out: Vec<Candidate> = vec![];
    let mut labels = vec![];
    for (a, alt) in tune.space.iter().enumerate() {
        let at = format!("space[{a}]");
        if alt.params.is_empty() && alt.set.is_empty() {
            return Err(invalid(
                at,
                "an empty alternative: give the `params` to vary (and optionally a `set`)".into(),
            ));
        }
        labels.push(if alt.label.trim().is_empty() {
            format!("alternative {a}")
        } else {
            alt.label.trim().to_string()
        });
        // The alternative's `set`, checked as `--set` would apply it.
        let mut doc = base.clone();
        let mut fixed = vec![];
        for (key, value) in &alt.set {
            let field = || format!("{at}.set.{}", spec::shorten(key));
            let o = Override::new(key, value.clone()).map_err(|r| invalid(field(), r))?;
            spec::apply_sets(&mut doc, model_file, std::slice::from_ref(&o))
                .map_err(|e| invalid(field(), e.to_string()))?;
            fixed.push(o);
        }
        let with_set = Model::from_document(&doc, model_file).map_err(|e| {
            invalid(
                format!("{at}.set"),
                format!("the model with this `set`: {e}"),
            )
        })?;
        let normalized = serde_json::to_value(&with_set.spec).unwrap_or(Value::Null);
        let mut axes = vec![];
        for (j, p) in alt.params.iter().enumerate() {
            let axis =
                expand_axis(p).map_err(|(f, r)| invalid(format!("{at}.params[{j}].{f}"), r))?;
            for (k, c) in axis.columns.iter().enumerate() {
                let field = if p.zip.is_some() {
                    format!("{at}.params[{j}].zip[{k}].path")
                } else {
                    format!("{at}.params[{j}].path")
                };
                spec::check_path_depth(&c.path).map_err(|r| invalid(field.clone(), r))?;
                if spec::get_path(&doc, &c.path).is_none()
                    && spec::get_path(&normalized, &c.path).is_none()
                {
                    return Err(invalid(
                        field,
                        format!(
                            "`{}` is not a field of the model {}: {}",
                            c.path,
                            model_file.display(),
                            missing_reason(&doc, &c.path, "in the alternative's `set`")
                        ),
                    ));
                }
            }
            axes.push(axis);
        }
        let lens: Vec<usize> = axes.iter().map(|x| x.len()).collect();
        let n = lens.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n));
        if n.is_none_or(|n| out.len() + n > MAX_CANDIDATES) {
            return Err(invalid(
                "space".into(),
                format!("has more than {MAX_CANDIDATES} candidates: search a coarser grid first"),
            ));
        }
        for p in 0..n.unwrap_or(0) {
            let idx = point_indices(&lens, p);
            let mut params = fixed.clone();
            let mut shown = vec![];
            for (axis, &k) in axes.iter().zip(&idx) {
                for c in &axis.columns {
                    let o = Override::new(&c.path, c.values[k].clone())
                        .expect("an axis path was checked when the axis was expanded");
                    shown.push(format!("{}={}", o.path().short(), cell_text(&c.cells[k])));
                    params.push(o);
                }
            }
            let mut label = shown.join(" ");
            if tune.space.len() > 1 {
                label = format!("{}: {label}", labels[a])
                    .trim_end_matches([' ', ':'])
                    .to_string();
            }
            out.push(Candidate {
                index: out.len(),
                alternative: a,
                params,
                label,
            });
        }
    }
    Ok((out, labels))
}

/// The scenarios as `--set` overrides: `faults` first, then `set`.
fn scenarios(path: &Path, tune: &TuneSpec) -> Result<Vec<Scenario>, Error> {
    let invalid = |field: String, reason: String| Error::Invalid {
        path: path.to_path_buf(),
        field,
        reason,
    };
    if tune.scenarios.is_empty() {
        return Err(invalid(
            "scenarios".into(),
            "must list at least one scenario, e.g. {\"name\": \"crash\", \"faults\": [{\"kind\": \"crash\", \"node\": \"A\", \"at\": \"10s\", \"for\": \"10s\"}]}".into(),
        ));
    }
    let mut out: Vec<Scenario> = vec![];
    for (i, s) in tune.scenarios.iter().enumerate() {
        let name = s.name.trim();
        if name.is_empty() || out.iter().any(|o| o.name == name) {
            return Err(invalid(
                format!("scenarios[{i}].name"),
                format!("must be a name no other scenario has, found \"{}\"", s.name),
            ));
        }
        let mut set = vec![];
        if let Some(faults) = &s.faults {
            set.push(
                Override::new("faults", Value::Array(faults.clone())).expect("`faults` is a path"),
            );
        }
        for (j, arg) in s.set.iter().enumerate() {
            if !arg.contains('=') {
                return Err(invalid(
                    format!("scenarios[{i}].set[{j}]"),
                    format!(
                        "expected PATH=VALUE, e.g. clients.rate_per_s=10000, found \"{}\"",
                        spec::shorten(arg)
                    ),
                ));
            }
            let o = Override::parse(arg.trim()).map_err(|reason| {
                invalid(
                    format!("scenarios[{i}].set[{j}]"),
                    format!("{reason}, found \"{}\"", spec::shorten(arg)),
                )
            })?;
            set.push(o);
        }
        out.push(Scenario {
            name: name.to_string(),
            description: s.description.clone(),
            set,
        });
    }
    Ok(out)
}

fn method(path: &Path, tune: &TuneSpec, n: usize) -> Result<Method, Error> {
    let s = &tune.search;
    let invalid = |field: &str, reason: String| Error::Invalid {
        path: path.to_path_buf(),
        field: field.into(),
        reason,
    };
    if s.eta < 2 {
        return Err(invalid(
            "search.eta",
            format!("must be at least 2, found {}", s.eta),
        ));
    }
    if s.min_reps < 1 || s.min_reps > tune.reps {
        return Err(invalid(
            "search.min_reps",
            format!(
                "must be between 1 and `reps` ({}), found {}",
                tune.reps, s.min_reps
            ),
        ));
    }
    let halving = match s.method {
        SearchMethod::Grid => false,
        SearchMethod::Halving => true,
        SearchMethod::Auto => n > s.grid_limit,
    };
    let first = if halving { s.min_reps } else { tune.reps };
    let runs = n
        .saturating_mul(tune.scenarios.len())
        .saturating_mul(first as usize);
    if runs > MAX_RUNS {
        return Err(invalid(
            "space",
            format!(
                "{n} candidates × {} scenarios × {first} reps make {runs} runs in the first rung, more than {MAX_RUNS}: search a coarser grid, or use successive halving with fewer min_reps",
                tune.scenarios.len()
            ),
        ));
    }
    Ok(if halving {
        Method::Halving {
            min_reps: s.min_reps,
            eta: s.eta,
        }
    } else {
        Method::Grid
    })
}

/// Every (candidate, scenario) point has a model checked and kept before
/// anything runs (about 2 KB each), and a rung is a sweep of them: at most
/// a sweep's [`MAX_POINTS`], refused before any is made.
fn check_points(path: &Path, candidates: usize, scenarios: usize) -> Result<(), Error> {
    let points = candidates.saturating_mul(scenarios);
    if points > MAX_POINTS {
        return Err(Error::Invalid {
            path: path.to_path_buf(),
            field: "scenarios".into(),
            reason: format!(
                "{candidates} candidates × {scenarios} scenarios make {points} points, each a \
                 model checked before anything runs; at most {MAX_POINTS} (as a sweep's): \
                 search a coarser grid or split the scenarios across tune files"
            ),
        });
    }
    Ok(())
}

/// Every (candidate, scenario) model, validated before anything runs. An
/// error names the tune file, the candidate and the scenario.
fn point_models(
    path: &Path,
    base: &Value,
    model_file: &Path,
    candidates: &[Candidate],
    scenarios: &[Scenario],
) -> Result<Vec<Model>, Error> {
    let mut models = Vec::with_capacity(candidates.len() * scenarios.len());
    for c in candidates {
        for (s, sc) in scenarios.iter().enumerate() {
            let mut sets = c.params.clone();
            sets.extend(sc.set.iter().cloned());
            let mut doc = base.clone();
            let at = |e: Error| {
                let field = format!("scenarios[{s}]");
                Error::InSweep {
                    sweep: path.to_path_buf(),
                    context: format!(
                        "candidate {} ({}) in {field} \"{}\"",
                        c.index, c.label, sc.name
                    ),
                    source: Box::new(e),
                }
            };
            let set_fields = spec::apply_sets(&mut doc, model_file, &sets).map_err(at)?;
            let model = Model::from_document(&doc, model_file)
                .map_err(|e| at(spec::note_sets(e, &set_fields)))?;
            models.push(model);
        }
    }
    Ok(models)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn candidate_overrides_read_back_as_the_values_they_stand_for() {
        for (path, value) in [
            ("policy.fail_timeout", json!("5s")),
            ("policy.max_fails", json!(3)),
            ("nodes.A.weight", json!(2.5)),
            ("description", json!("1")),
            ("description", json!("{not json")),
            (
                "policy",
                json!({"kind": "outlier_detection", "interval": "1s"}),
            ),
            ("faults", json!([{"kind": "crash", "node": "A"}])),
            ("gateway.zone", json!(true)),
        ] {
            let o = Override::new(path, value.clone()).unwrap();
            let back = Override::parse(o.text()).unwrap();
            assert_eq!(back.path().as_str(), path);
            assert_eq!(back.value(), &value, "{o}");
        }
    }
}
