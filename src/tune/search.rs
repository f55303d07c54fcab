//! Running the tune's stages through the sweep engine: each rung of the
//! search and the verification is a sweep plan (candidates × scenarios as
//! points, replications with common seeds) run by [`Session`] — in
//! parallel, checkpointed run by run, resumable after a kill. A finished
//! stage's runs are kept in `runs/<stage>.jsonl` (in run order, so the file
//! does not depend on `--jobs`); `--resume` takes them from there. With
//! `--shard K/N` a process runs its shard of the first unfinished stage into
//! `runs/<stage>.shard-K-of-N.jsonl`; once every shard's file is there, they
//! are merged (checked as `hcsim merge` checks a sweep's) into the stage's file.

use super::pareto::Values;
use super::setup::Setup;
use crate::engine::rng::derive_seed;
use crate::error::Error;
use crate::spec::SeedMode;
use crate::sweep::journal::{self, read_journal};
use crate::sweep::{DirLock, Plan, PlanHeader, RunSource, Session, Shard};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Where finished stages' runs are kept, under the output directory.
pub const RUNS_DIR: &str = "runs";
/// Where stages in progress keep their checkpoint, under the output directory.
pub const STAGES_DIR: &str = ".stages";
/// The stream of the search's later rungs' seeds.
const SEARCH_STREAM: u64 = 0x7475_6e65;
/// The stream of the verification's seeds: never those of the search.
const VERIFY_STREAM: u64 = 0x7665_7269;

/// One stage: some candidates, every scenario, `reps` replications seeded
/// from `seed` as `hcsim run --seed SEED --reps REPS` seeds them.
#[derive(Clone, Debug)]
pub struct Stage {
    /// `search-0`, `search-1`, …, `verify`.
    pub id: String,
    pub candidates: Vec<usize>,
    pub seed: u64,
    pub reps: u32,
}

/// A stage's results: per candidate of the stage (in its order), the values
/// of each measure in each replication; and the simulated seconds.
pub struct StageRuns {
    pub values: Vec<Values>,
    pub simulated_s: f64,
    pub runs: usize,
    /// Runs simulated now (not taken from a finished stage or a checkpoint).
    pub simulated_now: usize,
}

/// The base seed of rung `k` of the search: the tune file's seed for the
/// first (so a grid's runs are `hcsim run --seed SEED`'s), a derived one after.
pub fn rung_seed(seed: u64, k: usize) -> u64 {
    if k == 0 {
        seed
    } else {
        derive_seed(seed, &[SEARCH_STREAM, k as u64])
    }
}

/// The verification's base seed: derived from the tune file's seed on a
/// stream of its own, and moved on until none of its replications' seeds
/// is one the search used.
pub fn verify_seed(seed: u64, search: &[Stage], reps: u32) -> u64 {
    let used: std::collections::BTreeSet<u64> = search
        .iter()
        .flat_map(|s| (0..s.reps as u64).map(|r| crate::engine::rng::rep_seed(s.seed, r)))
        .collect();
    let mut v = derive_seed(seed, &[VERIFY_STREAM]);
    let mut k = 0;
    while (0..reps as u64).any(|r| used.contains(&crate::engine::rng::rep_seed(v, r))) {
        k += 1;
        v = derive_seed(seed, &[VERIFY_STREAM, k]);
    }
    v
}

/// What a stage's runs need besides the stage.
pub struct RunOpts<'a> {
    pub out: &'a Path,
    pub resume: bool,
    pub pool: &'a rayon::ThreadPool,
    /// Called as each run is checkpointed.
    pub on_run: &'a mut dyn FnMut(),
    /// Test hook: stop as if killed after this many more runs.
    pub stop_after: Option<usize>,
    /// `--shard K/N`: run only this shard's runs of the first stage not yet
    /// finished, then stop.
    pub shard: Shard,
}

/// What [`run_stage`] did.
pub enum StageOutcome {
    /// The stage is complete: its results.
    Done(StageRuns),
    /// This process ran its shard of the stage and wrote its runs to `file`;
    /// the stage goes on when every shard's file is in `runs/`.
    Sharded { file: PathBuf, runs: usize },
}

/// The sweep plan of a stage: its candidates × the scenarios, candidate-major.
pub fn plan(setup: &Setup, stage: &Stage) -> Plan {
    let ns = setup.scenarios.len();
    let mut points = Vec::with_capacity(stage.candidates.len() * ns);
    let mut models = Vec::with_capacity(stage.candidates.len() * ns);
    for &c in &stage.candidates {
        for (s, sc) in setup.scenarios.iter().enumerate() {
            points.push(vec![json!(c), json!(sc.name)]);
            models.push(setup.model(c, s).clone());
        }
    }
    let header = PlanHeader {
        hcsim_version: env!("CARGO_PKG_VERSION").to_string(),
        name: setup.name.clone(),
        sweep_file: setup.file.display().to_string(),
        definition: json!({"tune": setup.definition, "stage": stage.id}),
        model_file: setup.model_file.display().to_string(),
        model: setup.base.clone(),
        seed: stage.seed,
        seeds: SeedMode::Common,
        reps: stage.reps,
        axes: vec!["candidate".into(), "scenario".into()],
        points,
        args: vec![],
        fingerprint: String::new(),
    };
    Plan::assemble(header, models)
}

/// The file a finished stage's runs are kept in.
pub fn stage_file(out: &Path, id: &str) -> PathBuf {
    out.join(RUNS_DIR).join(format!("{id}.jsonl"))
}

/// The file one shard's runs of a stage are kept in.
pub fn shard_file(out: &Path, id: &str, shard: Shard) -> PathBuf {
    out.join(RUNS_DIR)
        .join(format!("{id}.shard-{}-of-{}.jsonl", shard.k, shard.n))
}

/// The shard files of stage `id` in `runs/`, sorted.
fn shard_files(out: &Path, id: &str) -> Vec<PathBuf> {
    let prefix = format!("{id}.shard-");
    let mut found: Vec<PathBuf> = std::fs::read_dir(out.join(RUNS_DIR))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".jsonl"))
        })
        .collect();
    found.sort();
    found
}

/// The stage's runs from its shards' files in `runs/`, if every shard's
/// file is there: checked as `hcsim merge` checks a sweep's shards, and
/// kept as the stage's finished file. `None` when there are no shard files
/// or some shard's is missing (and this process runs a shard: it runs its
/// own); an error when they belong to another tune or, without `--shard`,
/// when some are missing.
fn merged_shards(
    out: &Path,
    stage: &Stage,
    plan: &Plan,
    shard: Shard,
) -> Result<Option<RunSource>, Error> {
    let files = shard_files(out, &stage.id);
    if files.is_empty() {
        return Ok(None);
    }
    for f in &files {
        let j = read_journal(f)?;
        if j.head.header.fingerprint != plan.header.fingerprint {
            return Err(Error::Checkpoint {
                path: f.clone(),
                reason: format!(
                    "holds runs of stage {} of a different tune (the tune file, its model or hcsim differ): remove it",
                    stage.id
                ),
            });
        }
    }
    let gathered = crate::sweep::merge::gather(&files)?;
    if gathered.gaps.is_empty() {
        return gathered.runs().map(Some);
    }
    if !shard.is_whole() {
        return Ok(None);
    }
    let missing: Vec<String> = gathered.gaps.iter().map(|g| g.shard.to_string()).collect();
    let reruns: Vec<String> = gathered
        .gaps
        .iter()
        .map(|g| {
            format!(
                "\n  rerun: {} --shard {} --out {}",
                plan.header.command(),
                g.shard,
                crate::sweep::plan::shell_word(&out.display().to_string())
            )
        })
        .collect();
    Err(Error::Usage(format!(
        "stage {} was run in shards but not all of them are in {}: missing shard {}; copy in the missing shards' runs/ files or run them (then this command again), or remove the shard files to run the stage here:{}",
        stage.id,
        out.join(RUNS_DIR).display(),
        missing.join(", "),
        reruns.concat()
    )))
}

/// Fails if an interrupted tune left a checkpoint in `out` and `--resume`
/// was not given: its runs would otherwise be thrown away.
/// A checkpoint whose stage is finished (a process killed after writing the
/// stage's file, before removing its checkpoint) holds nothing to resume:
/// it is removed instead.
pub fn refuse_stale_checkpoints(out: &Path) -> Result<(), Error> {
    let Ok(dirs) = std::fs::read_dir(out.join(STAGES_DIR)) else {
        return Ok(());
    };
    let mut found: Vec<PathBuf> = dirs
        .flatten()
        .map(|d| d.path())
        .filter(|d| {
            let finished = d.file_name().map(|n| {
                out.join(RUNS_DIR)
                    .join(format!("{}.jsonl", n.to_string_lossy()))
            });
            !finished.is_some_and(|f| drop_obsolete_checkpoint(d, &f))
        })
        .map(|d| d.join(".checkpoint").join(crate::sweep::RUNS_FILE))
        .filter(|p| p.exists())
        .collect();
    let _ = std::fs::remove_dir(out.join(STAGES_DIR));
    found.sort();
    if let Some(path) = found.into_iter().next() {
        return Err(Error::Checkpoint {
            path,
            reason: format!(
                "an interrupted tune left its runs here: pass --resume to finish it, or remove {} to start over",
                out.join(STAGES_DIR).display()
            ),
        });
    }
    Ok(())
}

/// Removes the stage directory `dir` if its checkpoint is of the same
/// plan as `finished`, the stage's finished runs: everything it holds is
/// there. Returns whether it did.
fn drop_obsolete_checkpoint(dir: &Path, finished: &Path) -> bool {
    let checkpoint = dir.join(".checkpoint").join(crate::sweep::RUNS_FILE);
    let (Ok(c), Ok(f)) = (read_journal(&checkpoint), read_journal(finished)) else {
        return false;
    };
    c.head.header.fingerprint == f.head.header.fingerprint
        && c.head.shard == f.head.shard
        && std::fs::remove_dir_all(dir).is_ok()
}

/// Removes what an earlier tune wrote in `out` (its stages' runs and
/// snippets), so a new tune never mixes them with its own.
pub fn clear_previous(out: &Path) -> Result<(), Error> {
    let runs = out.join(RUNS_DIR);
    match std::fs::remove_dir_all(&runs) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Error::Write {
                path: runs,
                source: e,
            });
        }
        _ => {}
    }
    for name in super::page::SNIPPETS {
        let p = out.join(name);
        match std::fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::Write { path: p, source: e });
            }
            _ => {}
        }
    }
    Ok(())
}

/// Runs a stage (or, with `--resume` or `--shard`, takes what a previous
/// process or every shard did of it) and reads its results back; with
/// `--shard K/N` and the stage unfinished, runs only that shard's runs.
pub fn run_stage(setup: &Setup, stage: &Stage, opts: &mut RunOpts) -> Result<StageOutcome, Error> {
    let plan = plan(setup, stage);
    let file = stage_file(opts.out, &stage.id);
    let keep = opts.resume || !opts.shard.is_whole();
    if keep
        && let Ok(j) = read_journal(&file)
        && j.head.header.fingerprint == plan.header.fingerprint
        && j.done.len() == plan.header.runs()
    {
        // A checkpoint a killed process left beside the finished file goes.
        let dir = opts.out.join(STAGES_DIR).join(&stage.id);
        if drop_obsolete_checkpoint(&dir, &file) {
            let _ = std::fs::remove_dir(opts.out.join(STAGES_DIR));
        }
        let runs = RunSource::new(std::slice::from_ref(&j), |_| true)?;
        return read_back(setup, stage, &plan, &runs, 0).map(StageOutcome::Done);
    }
    if keep && let Some(runs) = merged_shards(opts.out, stage, &plan, opts.shard)? {
        journal::write_shard_file(&file, &plan.header, Shard::WHOLE, &runs)?;
        return read_back(setup, stage, &plan, &runs, 0).map(StageOutcome::Done);
    }
    let shard = opts.shard;
    let mine = shard_file(opts.out, &stage.id, shard);
    if !shard.is_whole()
        && let Ok(j) = read_journal(&mine)
        && j.head.header.fingerprint == plan.header.fingerprint
        && j.done.len() == shard.runs(plan.header.runs()).len()
    {
        // This shard's part is done; the others' are not in runs/ yet.
        return Ok(StageOutcome::Sharded {
            file: mine,
            runs: 0,
        });
    }
    let dir = if shard.is_whole() {
        opts.out.join(STAGES_DIR).join(&stage.id)
    } else {
        opts.out
            .join(STAGES_DIR)
            .join(format!("{}.shard-{}-of-{}", stage.id, shard.k, shard.n))
    };
    let lock = DirLock::acquire(&dir)?;
    let mut session = Session::open(&plan, &dir, shard, opts.resume, lock)?;
    let todo = session.todo().len();
    if opts.stop_after == Some(0) {
        return Err(Error::Interrupted {
            done: session.resumed(),
            total: plan.header.runs(),
            checkpoint: dir.join(".checkpoint").join(crate::sweep::RUNS_FILE),
        });
    }
    let runs = session.run(&plan, opts.pool, opts.on_run, opts.stop_after)?;
    if let Some(n) = opts.stop_after.as_mut() {
        *n -= todo.min(*n);
    }
    std::fs::create_dir_all(opts.out.join(RUNS_DIR)).map_err(|source| Error::Write {
        path: opts.out.join(RUNS_DIR),
        source,
    })?;
    let result = if shard.is_whole() {
        journal::write_shard_file(&file, &plan.header, shard, &runs)?;
        read_back(setup, stage, &plan, &runs, todo).map(StageOutcome::Done)
    } else {
        journal::write_shard_file(&mine, &plan.header, shard, &runs)?;
        Ok(StageOutcome::Sharded {
            file: mine,
            runs: todo,
        })
    };
    drop(runs);
    drop(session.finish());
    let _ = std::fs::remove_dir_all(&dir);
    // Gone once no stage is in progress (fails, harmlessly, while one is).
    let _ = std::fs::remove_dir(opts.out.join(STAGES_DIR));
    result
}

/// Reduces every run of a stage to the values of the measures.
fn read_back(
    setup: &Setup,
    stage: &Stage,
    plan: &Plan,
    runs: &RunSource,
    simulated_now: usize,
) -> Result<StageRuns, Error> {
    let ns = setup.scenarios.len();
    let reps = stage.reps as usize;
    let blank: Values = vec![vec![None; reps]; setup.measures.len()];
    let mut values = vec![blank; stage.candidates.len()];
    let mut simulated_s = 0.0;
    for i in 0..runs.len() {
        let rec = runs.record(i)?;
        let (point, rep) = plan.header.point_rep(rec.run);
        let (pos, scenario) = (point / ns, point % ns);
        simulated_s += rec
            .summary
            .get("duration_s")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        for (m, measure) in setup.measures.iter().enumerate() {
            if measure.scenario == scenario {
                values[pos][m][rep as usize] = measure.metric.value(&rec.summary);
            }
        }
    }
    Ok(StageRuns {
        values,
        simulated_s,
        runs: runs.len(),
        simulated_now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::rep_seed;

    #[test]
    fn verification_seeds_are_never_the_searchs() {
        let stage = |k: usize, reps: u32| Stage {
            id: format!("search-{k}"),
            candidates: vec![0],
            seed: rung_seed(7, k),
            reps,
        };
        let search = [stage(0, 1), stage(1, 3), stage(2, 9)];
        assert_eq!(
            search[0].seed, 7,
            "the first rung is `hcsim run --seed 7`'s"
        );
        let v = verify_seed(7, &search, 10);
        for s in &search {
            for r in 0..s.reps as u64 {
                for q in 0..10 {
                    assert_ne!(rep_seed(s.seed, r), rep_seed(v, q));
                }
            }
        }
        // A search that used the verification's first seed moves it on.
        let clash = [Stage {
            id: "search-0".into(),
            candidates: vec![0],
            seed: v,
            reps: 1,
        }];
        assert_ne!(verify_seed(7, &clash, 10), v);
        assert_eq!(verify_seed(7, &search, 10), v, "deterministic");
    }
}
