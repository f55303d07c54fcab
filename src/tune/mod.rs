//! `hcsim tune`: settings recommended from simulation. A tune file
//! ([`TuneSpec`](crate::spec::TuneSpec)) gives a model, a search space of
//! settings, the scenarios every candidate faces, objectives and
//! constraints ([`setup`]). Candidates × scenarios × replications run as
//! sweep plans through the sweep engine ([`search`]): a grid for small
//! spaces, successive halving for larger ones. Each candidate is judged on
//! its replications ([`metric`], [`pareto`]); the Pareto set of the feasible
//! candidates and one recommendation follow, and the frontier is run again
//! on fresh seeds (verification). [`result`] is `tune.json` and the table,
//! [`page`] the chart, the report page and the config snippet.
//!
//! Determinism: every stage's seeds derive from the tune file's seed, its
//! runs are read back in run order, and ties are broken by candidate index:
//! the outputs do not depend on `--jobs` or on `--resume`.

pub mod metric;
pub mod page;
pub mod pareto;
pub mod result;
pub mod search;
pub mod setup;

pub use result::TuneResult;
pub use search::RunOpts;
pub use setup::Setup;

use crate::error::Error;
use pareto::{Evaluation, Values};
use search::{Stage, StageOutcome, run_stage, rung_seed, verify_seed};
use setup::Method;

/// Successive halving keeps at least this many candidates per rung (or all
/// there are), so that the last rung still has a frontier to choose on.
pub const KEEP_AT_LEAST: usize = 8;

/// The rungs of the search: replications of each, the last being `reps`.
pub fn schedule(setup: &Setup) -> Vec<u32> {
    match setup.method {
        Method::Grid => vec![setup.reps],
        Method::Halving { min_reps, eta } => {
            let mut out = vec![];
            let mut r = min_reps.min(setup.reps);
            loop {
                out.push(r);
                if r >= setup.reps {
                    return out;
                }
                r = r.saturating_mul(eta).min(setup.reps);
            }
        }
    }
}

/// How many candidates of `n` go on to the next rung.
fn kept(n: usize, eta: u32) -> usize {
    n.div_ceil(eta as usize).max(KEEP_AT_LEAST.min(n))
}

/// What a candidate was last judged on.
#[derive(Clone, Debug)]
pub struct Judged {
    /// The last rung it ran in.
    pub rung: usize,
    pub reps: u32,
    pub eval: Evaluation,
}

/// The search and the verification, as [`TuneResult`] reports them.
pub struct Outcome {
    pub stages: Vec<Stage>,
    /// Per candidate, its last judgement.
    pub judged: Vec<Judged>,
    /// The candidates of the last rung.
    pub finalists: Vec<usize>,
    pub pareto: Vec<usize>,
    pub recommended: Option<(usize, f64)>,
    pub verify: Option<Verification>,
    pub simulated_s: f64,
    pub runs: usize,
    /// Runs simulated by this process (the rest came from a checkpoint or a finished stage).
    pub simulated_now: usize,
}

/// The verification stage: its seed and reps, and per frontier candidate
/// (in the stage's order) its values and judgement.
pub struct Verification {
    pub stage: Stage,
    pub values: Vec<Values>,
    pub evals: Vec<Evaluation>,
}

/// How far [`run`] went.
pub enum Progress {
    /// Every stage ran: the search's and the verification's results.
    Finished(Outcome),
    /// With `--shard K/N`: this shard of `stage` ran (`runs` of its runs
    /// now) and wrote `file`; the tune goes on once every shard's file of
    /// the stage is in `runs/`.
    Sharded {
        stage: String,
        file: std::path::PathBuf,
        runs: usize,
    },
}

/// A stage's results, or how far a shard got.
macro_rules! stage_done {
    ($got:expr, $stage:expr) => {
        match $got {
            StageOutcome::Done(runs) => runs,
            StageOutcome::Sharded { file, runs } => {
                return Ok(Progress::Sharded {
                    stage: $stage.id.clone(),
                    file,
                    runs,
                });
            }
        }
    };
}

/// Runs the search and the verification; `say` reports progress.
pub fn run(
    setup: &Setup,
    opts: &mut RunOpts,
    say: &mut dyn FnMut(&str),
) -> Result<Progress, Error> {
    let rungs = schedule(setup);
    let eta = match setup.method {
        Method::Halving { eta, .. } => eta,
        Method::Grid => 1,
    };
    let mut alive: Vec<usize> = (0..setup.candidates.len()).collect();
    let mut judged: Vec<Option<Judged>> = vec![None; setup.candidates.len()];
    let mut stages = vec![];
    let (mut simulated_s, mut runs, mut now) = (0.0, 0, 0);
    for (k, &reps) in rungs.iter().enumerate() {
        let stage = Stage {
            id: format!("search-{k}"),
            candidates: alive.clone(),
            seed: rung_seed(setup.seed, k),
            reps,
        };
        say(&format!(
            "{}: {} candidates × {} scenarios × {reps} reps = {} runs",
            stage.id,
            alive.len(),
            setup.scenarios.len(),
            alive.len() * setup.scenarios.len() * reps as usize
        ));
        let got = stage_done!(run_stage(setup, &stage, opts)?, stage);
        simulated_s += got.simulated_s;
        runs += got.runs;
        now += got.simulated_now;
        for (&c, v) in alive.iter().zip(&got.values) {
            judged[c] = Some(Judged {
                rung: k,
                reps,
                eval: pareto::evaluate(setup, v),
            });
        }
        stages.push(stage);
        if k + 1 < rungs.len() {
            let on: Vec<(usize, &Evaluation)> = alive
                .iter()
                .map(|&c| (c, &judged[c].as_ref().expect("judged in this rung").eval))
                .collect();
            let mut next = pareto::ranking(setup, &on);
            next.truncate(kept(alive.len(), eta));
            next.sort_unstable();
            alive = next;
        }
    }
    let judged: Vec<Judged> = judged
        .into_iter()
        .map(|j| j.expect("every candidate runs in the first rung"))
        .collect();
    let on: Vec<(usize, &Evaluation)> = alive.iter().map(|&c| (c, &judged[c].eval)).collect();
    let front = pareto::pareto(setup, &on);
    let recommended = pareto::recommend(setup, &on, &front);
    let verify = if front.is_empty() {
        None
    } else {
        let stage = Stage {
            id: "verify".into(),
            candidates: front.clone(),
            seed: verify_seed(setup.seed, &stages, setup.verify_reps),
            reps: setup.verify_reps,
        };
        say(&format!(
            "verify: {} frontier candidates × {} scenarios × {} reps on fresh seeds",
            front.len(),
            setup.scenarios.len(),
            setup.verify_reps
        ));
        let got = stage_done!(run_stage(setup, &stage, opts)?, stage);
        simulated_s += got.simulated_s;
        runs += got.runs;
        now += got.simulated_now;
        let evals = got
            .values
            .iter()
            .map(|v| pareto::evaluate(setup, v))
            .collect();
        Some(Verification {
            stage,
            values: got.values,
            evals,
        })
    };
    Ok(Progress::Finished(Outcome {
        stages,
        judged,
        finalists: alive,
        pareto: front,
        recommended,
        verify,
        simulated_s,
        runs,
        simulated_now: now,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halving_keeps_a_third_but_never_fewer_than_the_floor() {
        assert_eq!(kept(90, 3), 30);
        assert_eq!(kept(20, 3), KEEP_AT_LEAST);
        assert_eq!(kept(5, 3), 5);
        assert_eq!(kept(100, 2), 50);
    }
}
