//! Running a sweep's runs in parallel: each run's line is appended to the
//! checkpoint as it completes, so an interrupted sweep loses at most the
//! runs in flight, and `--resume` runs only those its checkpoint lacks.

use super::journal::{Checkpoint, RunLine, RunSource, read_journal};
use super::lock::DirLock;
use super::plan::Plan;
use super::shard::Shard;
use crate::error::Error;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

/// Runs run `run` of `plan` and returns its checkpoint line (without the newline).
fn run_line(plan: &Plan, run: usize) -> String {
    let (point, rep) = plan.header.point_rep(run);
    let seed = plan.header.seed(point, rep);
    let summary = crate::world::run(&plan.models[point], seed);
    serde_json::to_string(&RunLine {
        run,
        point,
        rep,
        seed,
        summary: &summary,
    })
    .expect("a run summary serializes")
}

/// A sweep (or one shard of it) in progress in an output directory, whose
/// lock it holds.
pub struct Session {
    lock: DirLock,
    ckpt: Checkpoint,
    out: PathBuf,
    shard: Shard,
    /// The runs this shard owns.
    mine: usize,
    /// Runs the checkpoint already held.
    resumed: usize,
    /// The runs still to do, in index order.
    todo: Vec<usize>,
}

impl Session {
    /// Opens the checkpoint of `out` (or, with `resume`, continues it) for
    /// `shard`'s runs of `plan`; `lock` is the lock of `out`.
    pub fn open(
        plan: &Plan,
        out: &Path,
        shard: Shard,
        resume: bool,
        lock: DirLock,
    ) -> Result<Session, Error> {
        let total = plan.header.runs();
        let mine = shard.runs(total);
        let (ckpt, journal) = Checkpoint::open(out, &plan.header, shard, resume)?;
        // One flag per run, not the runs: memory does not grow with summaries.
        let mut have = vec![false; total];
        for e in journal.iter().flat_map(|j| &j.done) {
            if shard.owns(e.run) {
                have[e.run] = true;
            }
        }
        let todo: Vec<usize> = mine.iter().copied().filter(|&r| !have[r]).collect();
        Ok(Session {
            lock,
            ckpt,
            out: out.to_path_buf(),
            shard,
            mine: mine.len(),
            resumed: mine.len() - todo.len(),
            todo,
        })
    }

    /// Runs the checkpoint already held.
    pub fn resumed(&self) -> usize {
        self.resumed
    }

    /// Runs still to do.
    pub fn todo(&self) -> &[usize] {
        &self.todo
    }

    /// Runs what remains on `pool`, calling `on_run` as each is
    /// checkpointed, and returns every completed run in index order, read
    /// back from the checkpoint as outputs need them. `stop_after` (a test
    /// hook) stops after that many runs as if the process had been killed:
    /// runs finishing after it are lost, and the result is
    /// [`Error::Interrupted`].
    pub fn run(
        &mut self,
        plan: &Plan,
        pool: &rayon::ThreadPool,
        on_run: &mut dyn FnMut(),
        stop_after: Option<usize>,
    ) -> Result<RunSource, Error> {
        let (new, stopped) = execute(plan, &self.todo, pool, &mut self.ckpt, on_run, stop_after)?;
        if stopped {
            return Err(Error::Interrupted {
                done: self.resumed + new,
                total: self.mine,
                checkpoint: self.ckpt.path.clone(),
            });
        }
        let journal = read_journal(&self.ckpt.path)?;
        let shard = self.shard;
        let runs = RunSource::new(std::slice::from_ref(&journal), |r| shard.owns(r))?;
        if runs.len() != self.mine {
            return Err(Error::Checkpoint {
                path: self.ckpt.path.clone(),
                reason: format!(
                    "holds {} of the {} runs after the sweep ran: was it written by another process?",
                    runs.len(),
                    self.mine
                ),
            });
        }
        Ok(runs)
    }

    /// Removes the checkpoint, once the outputs are written, and hands back
    /// the lock of the output directory (held until dropped).
    pub fn finish(self) -> DirLock {
        self.ckpt.remove(&self.out);
        self.lock
    }
}

/// Runs `todo` on the pool, appending each run's line to the checkpoint as it
/// completes. Returns how many were checkpointed and whether the stop hook
/// cut the sweep short.
fn execute(
    plan: &Plan,
    todo: &[usize],
    pool: &rayon::ThreadPool,
    ckpt: &mut Checkpoint,
    on_run: &mut dyn FnMut(),
    stop_after: Option<usize>,
) -> Result<(usize, bool), Error> {
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<String>();
    let mut done = 0;
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
                    let _ = tx.send(run_line(plan, run));
                })
            })
        });
        for line in rx {
            if failed.is_some() || stop_after.is_some_and(|n| done >= n) {
                // Like a kill: runs finishing after the stop are lost.
                continue;
            }
            if let Err(e) = ckpt.append(&line) {
                failed = Some(e);
                stop.store(true, Ordering::Relaxed);
                continue;
            }
            done += 1;
            on_run();
            if stop_after.is_some_and(|n| done >= n) {
                stop.store(true, Ordering::Relaxed);
            }
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let stopped = done < todo.len();
    Ok((done, stopped))
}
