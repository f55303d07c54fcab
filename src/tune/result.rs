//! `tune.json`: the search, every candidate's judgement, the Pareto set,
//! the recommendation and its verification on fresh seeds with the exact
//! `hcsim run` commands that reproduce it; and the table printed on stdout.
//! Nothing here depends on the wall clock (`timing.json` has that).

use super::metric::statistic;
use super::pareto::{ConstraintOutcome, Evaluation, Values};
use super::setup::{Method, Setup};
use super::{Outcome, Verification};
use crate::spec::Override;
use crate::spec::tune::{Goal, Op, Recommend, Stat};
use crate::sweep::fmt_f64;
use crate::sweep::plan::shell_word;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The document written to `tune.json`.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct TuneResult {
    pub hcsim_version: String,
    pub name: String,
    pub description: String,
    pub tune_file: String,
    pub model_file: String,
    /// The command that reproduces this file.
    pub command: String,
    pub seed: u64,
    pub search: SearchReport,
    /// Runs simulated in all, search and verification.
    pub runs: usize,
    /// Simulated time of all runs, hours.
    pub simulated_hours: f64,
    pub scenarios: Vec<ScenarioReport>,
    pub objectives: Vec<ObjectiveReport>,
    pub constraints: Vec<ConstraintReport>,
    pub recommend: Recommend,
    pub candidates: Vec<CandidateReport>,
    /// Candidate indices of the Pareto set (feasible, non-dominated, last rung).
    pub pareto: Vec<usize>,
    pub recommended: Option<Recommended>,
    pub verification: Option<VerificationReport>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct SearchReport {
    /// `grid` or `successive_halving`.
    pub method: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eta: Option<u32>,
    pub candidates: usize,
    pub scenarios: usize,
    pub rungs: Vec<RungReport>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct RungReport {
    pub rung: usize,
    pub seed: u64,
    pub reps: u32,
    pub candidates: usize,
    pub runs: usize,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct ScenarioReport {
    pub name: String,
    pub description: String,
    /// Its `--set` overrides, applied after the candidate's.
    pub set: Vec<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct ObjectiveReport {
    pub name: String,
    pub metric: String,
    pub scenario: String,
    pub stat: Stat,
    pub goal: Goal,
    pub missing: Option<f64>,
    pub weight: f64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct ConstraintReport {
    pub text: String,
    pub metric: String,
    pub scenario: String,
    pub op: Op,
    pub bound: f64,
    pub fraction: f64,
    pub stat: Option<Stat>,
    pub missing: Option<f64>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct CandidateReport {
    pub index: usize,
    pub alternative: String,
    pub label: String,
    /// Every override: model path → value.
    pub params: Map<String, Value>,
    /// The last rung it ran in, with how many replications.
    pub rung: usize,
    pub reps: u32,
    /// Objective name → its value.
    pub objectives: BTreeMap<String, Option<f64>>,
    pub constraints: Vec<ConstraintOutcome>,
    pub feasible: bool,
    pub pareto: bool,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Recommended {
    pub candidate: usize,
    pub label: String,
    /// Model path → value: the settings to use.
    pub params: Map<String, Value>,
    /// The same as `--set` arguments, in the order applied.
    pub set: Vec<String>,
    /// Its weighted score on the Pareto set (0 is best in every objective).
    pub score: f64,
    /// Its objectives in the search.
    pub objectives: BTreeMap<String, Option<f64>>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct VerificationReport {
    /// Base seed of the verification (derived from `seed` on a stream of its own).
    pub seed: u64,
    pub reps: u32,
    /// No replication of the verification used a seed of the search.
    pub fresh_seeds: bool,
    pub candidates: Vec<VerifiedCandidate>,
    /// Whether the recommendation still meets every constraint.
    pub recommended_holds: bool,
    /// The recommendation's runs: per scenario, the command that reproduces
    /// them and the values of each metric.
    pub recommended_runs: Vec<ScenarioRuns>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct VerifiedCandidate {
    pub candidate: usize,
    pub objectives: BTreeMap<String, Option<f64>>,
    pub constraints: Vec<ConstraintOutcome>,
    pub feasible: bool,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct ScenarioRuns {
    pub scenario: String,
    /// `hcsim run MODEL --set … --seed SEED --reps REPS`: its summary.json
    /// holds these runs.
    pub command: String,
    pub set: Vec<String>,
    pub seed: u64,
    pub reps: u32,
    /// Metric → per replication and over them.
    pub metrics: BTreeMap<String, MetricRuns>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct MetricRuns {
    /// Replication by replication (`null` where a run had none).
    pub values: Vec<Option<f64>>,
    /// As `summary.json`'s spread of the metric: over the runs that have it.
    pub mean: Option<f64>,
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

fn objectives_map(setup: &Setup, e: &Evaluation) -> BTreeMap<String, Option<f64>> {
    setup
        .objectives
        .iter()
        .zip(&e.objectives)
        .map(|(o, v)| (o.name.clone(), *v))
        .collect()
}

fn params_map(setup: &Setup, c: usize) -> Map<String, Value> {
    setup.candidates[c]
        .params
        .iter()
        .map(|o| (o.path().as_str().to_string(), o.value().clone()))
        .collect()
}

impl TuneResult {
    pub fn new(setup: &Setup, o: &Outcome) -> TuneResult {
        let measure_name = |m: usize| setup.measures[m].metric.name();
        let scenario_name = |m: usize| setup.scenarios[setup.measures[m].scenario].name.clone();
        let candidates = setup
            .candidates
            .iter()
            .map(|c| {
                let j = &o.judged[c.index];
                CandidateReport {
                    index: c.index,
                    alternative: setup.alternatives[c.alternative].clone(),
                    label: c.label.clone(),
                    params: params_map(setup, c.index),
                    rung: j.rung,
                    reps: j.reps,
                    objectives: objectives_map(setup, &j.eval),
                    constraints: j.eval.constraints.clone(),
                    feasible: j.eval.feasible,
                    pareto: o.pareto.contains(&c.index),
                }
            })
            .collect();
        let recommended = o.recommended.map(|(c, score)| Recommended {
            candidate: c,
            label: setup.candidates[c].label.clone(),
            params: params_map(setup, c),
            set: setup.candidates[c].set_args(),
            score,
            objectives: objectives_map(setup, &o.judged[c].eval),
        });
        let verification = o.verify.as_ref().map(|v| verification(setup, v, o));
        let method = match setup.method {
            Method::Grid => "grid",
            Method::Halving { .. } => "successive_halving",
        };
        TuneResult {
            hcsim_version: env!("CARGO_PKG_VERSION").to_string(),
            name: setup.name.clone(),
            description: setup.description.clone(),
            tune_file: setup.file.display().to_string(),
            model_file: setup.model_file.display().to_string(),
            command: ["hcsim", "tune", &setup.file.display().to_string()]
                .map(shell_word)
                .join(" "),
            seed: setup.seed,
            search: SearchReport {
                method: method.into(),
                eta: match setup.method {
                    Method::Halving { eta, .. } => Some(eta),
                    Method::Grid => None,
                },
                candidates: setup.candidates.len(),
                scenarios: setup.scenarios.len(),
                rungs: o
                    .stages
                    .iter()
                    .enumerate()
                    .map(|(k, s)| RungReport {
                        rung: k,
                        seed: s.seed,
                        reps: s.reps,
                        candidates: s.candidates.len(),
                        runs: s.candidates.len() * setup.scenarios.len() * s.reps as usize,
                    })
                    .collect(),
            },
            runs: o.runs,
            simulated_hours: crate::stats::round6(o.simulated_s / 3600.0),
            scenarios: setup
                .scenarios
                .iter()
                .map(|s| ScenarioReport {
                    name: s.name.clone(),
                    description: s.description.clone(),
                    set: Override::texts(&s.set),
                })
                .collect(),
            objectives: setup
                .objectives
                .iter()
                .map(|ob| ObjectiveReport {
                    name: ob.name.clone(),
                    metric: measure_name(ob.measure),
                    scenario: scenario_name(ob.measure),
                    stat: ob.stat,
                    goal: ob.goal,
                    missing: ob.missing,
                    weight: ob.weight,
                })
                .collect(),
            constraints: setup
                .constraints
                .iter()
                .map(|c| ConstraintReport {
                    text: c.text.clone(),
                    metric: measure_name(c.measure),
                    scenario: scenario_name(c.measure),
                    op: c.op,
                    bound: c.bound,
                    fraction: c.fraction,
                    stat: c.stat,
                    missing: c.missing,
                })
                .collect(),
            recommend: setup.recommend,
            candidates,
            pareto: o.pareto.clone(),
            recommended,
            verification,
        }
    }

    /// Reads a `tune.json`.
    pub fn read(path: &std::path::Path) -> Result<TuneResult, crate::error::Error> {
        let doc = crate::spec::read_document(path)?;
        crate::spec::from_document(&doc, path)
    }
}

fn verification(setup: &Setup, v: &Verification, o: &Outcome) -> VerificationReport {
    let used: std::collections::BTreeSet<u64> = o
        .stages
        .iter()
        .flat_map(|s| (0..s.reps as u64).map(move |r| crate::engine::rng::rep_seed(s.seed, r)))
        .collect();
    let fresh = (0..v.stage.reps as u64)
        .all(|r| !used.contains(&crate::engine::rng::rep_seed(v.stage.seed, r)));
    let candidates: Vec<VerifiedCandidate> = v
        .stage
        .candidates
        .iter()
        .zip(&v.evals)
        .map(|(&c, e)| VerifiedCandidate {
            candidate: c,
            objectives: objectives_map(setup, e),
            constraints: e.constraints.clone(),
            feasible: e.feasible,
        })
        .collect();
    let rec = o.recommended.map(|(c, _)| c);
    let pos = rec.and_then(|c| v.stage.candidates.iter().position(|&x| x == c));
    let recommended_holds = pos.is_some_and(|p| v.evals[p].feasible);
    let recommended_runs = match (rec, pos) {
        (Some(c), Some(p)) => recommended_runs(setup, &v.values[p], c, v.stage.seed, v.stage.reps),
        _ => vec![],
    };
    VerificationReport {
        seed: v.stage.seed,
        reps: v.stage.reps,
        fresh_seeds: fresh,
        candidates,
        recommended_holds,
        recommended_runs,
    }
}

/// Per scenario: the command whose `summary.json` has the recommendation's
/// verification runs, and their values.
fn recommended_runs(
    setup: &Setup,
    values: &Values,
    c: usize,
    seed: u64,
    reps: u32,
) -> Vec<ScenarioRuns> {
    setup
        .scenarios
        .iter()
        .enumerate()
        .map(|(s, sc)| {
            let set = setup.point_sets(c, s);
            let mut words = vec![
                "hcsim".to_string(),
                "run".into(),
                setup.model_file.display().to_string(),
            ];
            for a in &set {
                words.extend(["--set".to_string(), a.text().to_string()]);
            }
            words.extend([
                "--seed".into(),
                seed.to_string(),
                "--reps".into(),
                reps.to_string(),
            ]);
            let metrics = setup
                .measures
                .iter()
                .enumerate()
                .filter(|(_, m)| m.scenario == s)
                .map(|(m, measure)| {
                    let vals = values[m].clone();
                    let st = |stat| statistic(&vals, stat, None);
                    (
                        measure.metric.name(),
                        MetricRuns {
                            mean: st(Stat::Mean),
                            median: st(Stat::Median),
                            min: st(Stat::Min),
                            max: st(Stat::Max),
                            values: vals,
                        },
                    )
                })
                .collect();
            ScenarioRuns {
                scenario: sc.name.clone(),
                command: words
                    .iter()
                    .map(|w| shell_word(w))
                    .collect::<Vec<_>>()
                    .join(" "),
                set: Override::texts(&set),
                seed,
                reps,
                metrics,
            }
        })
        .collect()
}

/// A figure for the table: `–` when missing.
fn cell(v: Option<f64>) -> String {
    v.map_or("–".into(), fmt_f64)
}

/// The table printed on stdout: the Pareto set with its objectives (the
/// recommendation marked `*`), then the verification.
pub fn table(r: &TuneResult) -> String {
    let mut head = vec!["".to_string(), "candidate".to_string()];
    head.extend(r.objectives.iter().map(|o| o.name.clone()));
    let mut rows: Vec<Vec<String>> = vec![];
    for &c in &r.pareto {
        let cand = &r.candidates[c];
        let mark = if r.recommended.as_ref().is_some_and(|x| x.candidate == c) {
            "*"
        } else {
            ""
        };
        let mut row = vec![mark.to_string(), format!("#{c} {}", cand.label)];
        row.extend(r.objectives.iter().map(|o| cell(cand.objectives[&o.name])));
        rows.push(row);
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            rows.iter()
                .map(|row| row[i].chars().count())
                .chain([head[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |row: &[String]| {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = widths[i] - c.chars().count();
                if i < 2 {
                    format!("{c}{}", " ".repeat(pad))
                } else {
                    format!("{}{c}", " ".repeat(pad))
                }
            })
            .collect();
        cells.join("  ").trim_end().to_string() + "\n"
    };
    let feasible = r.candidates.iter().filter(|c| c.feasible).count();
    let mut out = format!(
        "tune {}: {} candidates × {} scenarios, {} ({} rung{}), {} runs, {} simulated hours\n",
        r.name,
        r.search.candidates,
        r.search.scenarios,
        r.search.method.replace('_', " "),
        r.search.rungs.len(),
        if r.search.rungs.len() == 1 { "" } else { "s" },
        r.runs,
        fmt_f64(r.simulated_hours)
    );
    for c in &r.constraints {
        out += &format!("constraint: {}\n", c.text);
    }
    out += &format!(
        "{feasible} of {} candidates meet the constraints; the Pareto set has {}:\n\n",
        r.candidates.len(),
        r.pareto.len()
    );
    out += &line(&head);
    for row in &rows {
        out += &line(row);
    }
    match (&r.recommended, &r.verification) {
        (Some(rec), Some(v)) => {
            out += &format!("\nrecommended (*): {}\n", rec.set.join(" "));
            let held = if v.recommended_holds {
                "every constraint still holds"
            } else {
                "a constraint does NOT hold"
            };
            let front_ok = v.candidates.iter().filter(|c| c.feasible).count();
            out += &format!(
                "verified on {} fresh seeds per scenario (seed {}): {held}; {front_ok} of {} frontier candidates still feasible\n",
                v.reps,
                v.seed,
                v.candidates.len()
            );
        }
        _ => out += "\nno candidate meets every constraint: nothing to recommend\n",
    }
    out
}
