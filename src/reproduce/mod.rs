//! `hcsim reproduce`: runs the shipped models of the seed experiments and sets
//! each figure measured on real software beside the one hcsim produces.
//!
//! The seed figures are quoted from `seed-experiments.md` (measured on real
//! nginx and small Python services); every hcsim figure is computed here, now.

mod active;
mod passive;

use crate::error::Error;
use crate::metrics::RunSummary;
use crate::run::Replications;
use crate::spec::{self, Model};
use crate::world::TraceLine;
use serde::Serialize;
use std::path::Path;

/// One comparison: a figure of the seed experiment and hcsim's.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub experiment: &'static str,
    pub case: String,
    pub metric: String,
    /// As measured on real software (from the seed articles).
    pub seed: String,
    /// As hcsim computes it.
    pub hcsim: String,
    /// `within` the acceptance band, `outside` it, or `differs` with a reason.
    pub verdict: String,
}

impl Row {
    pub fn new(
        experiment: &'static str,
        case: impl Into<String>,
        metric: impl Into<String>,
        seed: impl Into<String>,
        hcsim: impl Into<String>,
        within: bool,
    ) -> Row {
        Row {
            experiment,
            case: case.into(),
            metric: metric.into(),
            seed: seed.into(),
            hcsim: hcsim.into(),
            verdict: if within { "within" } else { "outside" }.into(),
        }
    }

    /// A figure with no acceptance band, shown for information.
    pub fn info(
        experiment: &'static str,
        case: impl Into<String>,
        metric: impl Into<String>,
        seed: impl Into<String>,
        hcsim: impl Into<String>,
        note: &str,
    ) -> Row {
        Row {
            experiment,
            case: case.into(),
            metric: metric.into(),
            seed: seed.into(),
            hcsim: hcsim.into(),
            verdict: note.into(),
        }
    }

    pub fn is_outside(&self) -> bool {
        self.verdict == "outside"
    }
}

/// Loads a shipped model, with `--set`-style overrides.
pub(crate) fn load(
    models: &Path,
    file: &str,
    sets: &[(&str, serde_json::Value)],
) -> Result<Model, Error> {
    let path = models.join(file);
    let mut doc = spec::read_document(&path)?;
    for (k, v) in sets {
        spec::set_path(&mut doc, k, v.clone()).map_err(|reason| Error::Set {
            arg: format!("{k}={v}"),
            reason,
        })?;
    }
    Model::from_document(&doc, &path)
}

/// `reps` replications with the seeds `hcsim run --reps` uses.
pub(crate) fn replicate(model: &Model, reps: u64) -> Vec<RunSummary> {
    Replications::of(model).reps(reps).run().runs
}

/// One run with its attempt trace.
pub(crate) fn traced(model: &Model, seed: u64) -> (RunSummary, Vec<TraceLine>) {
    let mut out = Replications::of(model).seed(seed).trace(true).run();
    (out.runs.remove(0), out.traces.remove(0))
}

/// Every comparison row, experiment by experiment.
pub fn rows(models: &Path) -> Result<Vec<Row>, Error> {
    let mut rows = Vec::new();
    rows.extend(passive::rows(models)?);
    rows.extend(active::rows(models)?);
    Ok(rows)
}

/// The rows as a Markdown table.
pub fn markdown(rows: &[Row]) -> String {
    let mut out = String::from(
        "| exp | case | metric | seed (real software) | hcsim | verdict |\n|---|---|---|---|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            r.experiment,
            r.case,
            r.metric,
            r.seed.replace('|', "\\|"),
            r.hcsim.replace('|', "\\|"),
            r.verdict
        ));
    }
    out
}
