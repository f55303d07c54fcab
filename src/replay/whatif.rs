//! Runs of the inferred model: as logged (the fit) and with each `--set`
//! group (the counterfactuals), each with the same workload and faults,
//! the same seeds (common random numbers), through [`Replications`], and
//! written with the `output` writers like `hcsim run`'s. When a fault
//! boundary is censored, the shortest and longest faults the log allows
//! run too, and each metric gets the range of their medians.

use super::model::{self, Variant};
use crate::error::Error;
use crate::metrics::RunSummary;
use crate::output::compare::{self, Comparison, RunDir};
use crate::output::summary::Summary;
use crate::run::Replications;
use crate::spec::{Model, Override, apply_sets};
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One scenario: the overrides, where its outputs went, and its runs
/// under each variant (the middle first).
pub struct Scenario {
    pub label: String,
    pub set: Vec<Override>,
    pub dir: PathBuf,
    pub summary: Summary,
    /// Shortest and longest faults' runs (empty when nothing is censored).
    pub bounds: Vec<Vec<RunSummary>>,
}

/// How to run.
pub struct Runs<'a> {
    pub docs: &'a [(Variant, Value)],
    pub model_path: &'a Path,
    pub seed: Option<u64>,
    pub reps: u64,
    pub charts: bool,
}

fn model_of(doc: &Value, path: &Path, set: &[Override]) -> Result<Model, Error> {
    let mut d = doc.clone();
    apply_sets(&mut d, path, set)?;
    Model::from_document(&d, path)
}

impl Runs<'_> {
    /// Runs a scenario and writes its middle variant's outputs into `dir`.
    pub fn scenario(&self, label: &str, set: &[Override], dir: &Path) -> Result<Scenario, Error> {
        crate::output::prepare_dir(dir)?;
        let mut summary = None;
        let mut bounds = vec![];
        for (v, doc) in self.docs {
            let m = model_of(doc, self.model_path, set)?;
            crate::run::cost::preflight(&m, None).map_err(|reason| Error::Limit {
                path: self.model_path.to_path_buf(),
                reason,
            })?;
            let seed = self.seed.unwrap_or(m.seed);
            let out = Replications::of(&m).seed(seed).reps(self.reps).run();
            if *v == Variant::Mid {
                let s = Summary::new(&m, self.model_path, seed, set, out.runs);
                crate::output::write_run(dir, &s, None, None, false)?;
                if self.charts {
                    crate::output::plot(dir)?;
                }
                summary = Some(s);
            } else {
                bounds.push(out.runs);
            }
        }
        Ok(Scenario {
            label: label.to_string(),
            set: set.to_vec(),
            dir: dir.to_path_buf(),
            summary: summary.expect("the middle variant runs"),
            bounds,
        })
    }
}

/// A metric's medians over the variants: the censoring range.
#[derive(Clone, Debug, Serialize)]
pub struct Range {
    pub metric: String,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

/// Each metric of `names` under every variant of `s`: the least and
/// greatest median (over the middle, shortest and longest faults).
pub fn censoring(s: &Scenario, names: &[String]) -> Vec<Range> {
    let all: Vec<&[RunSummary]> = std::iter::once(s.summary.runs.as_slice())
        .chain(s.bounds.iter().map(Vec::as_slice))
        .collect();
    names
        .iter()
        .map(|m| {
            let medians: Vec<f64> = all
                .iter()
                .filter_map(|runs| {
                    let v: Vec<Option<f64>> =
                        runs.iter().map(|r| super::fit::run_figure(r, m)).collect();
                    crate::stats::Spread::of_options(v).median
                })
                .collect();
            Range {
                metric: m.clone(),
                lo: medians.iter().copied().min_by(f64::total_cmp),
                hi: medians.iter().copied().max_by(f64::total_cmp),
            }
        })
        .collect()
}

/// The scenarios side by side as `hcsim compare` sets runs (its metric
/// rows and noise verdicts), the first being the replay as logged.
pub fn comparison(scenarios: &[Scenario]) -> Comparison {
    compare::compare(&run_dirs(scenarios), false)
}

fn run_dirs(scenarios: &[Scenario]) -> Vec<RunDir> {
    scenarios
        .iter()
        .map(|s| RunDir {
            dir: s.dir.clone(),
            summary: s.summary.clone(),
        })
        .collect()
}

/// Writes compare.html and its charts for the scenarios into `dir`.
pub fn compare_page(scenarios: &[Scenario], c: &Comparison, dir: &Path) -> Result<PathBuf, Error> {
    crate::output::prepare_dir(dir)?;
    compare::page::write(dir, c, &run_dirs(scenarios))
}

/// The variants to run: the middle, and the bounds if anything is censored.
pub fn variants(
    base: &Value,
    inf: &super::infer::Inference,
    name: &str,
    origin: f64,
    description: &str,
) -> Vec<(Variant, Value)> {
    let mut v = vec![Variant::Mid];
    if model::censored(inf) {
        v.push(Variant::Shortest);
        v.push(Variant::Longest);
    }
    v.into_iter()
        .map(|x| (x, model::document(base, inf, name, origin, description, x)))
        .collect()
}
