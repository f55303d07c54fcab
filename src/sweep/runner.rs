//! Running a sweep's runs in parallel: each run's line is appended to the
//! checkpoint as it completes, so an interrupted sweep loses at most the
//! runs in flight, and `--resume` runs only those its checkpoint lacks.

use super::journal::{Checkpoint, Done, RunRecord};
use super::plan::Plan;
use super::shard::Shard;
use crate::error::Error;
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

/// A sweep (or one shard of it) in progress in an output directory.
pub struct Session {
    ckpt: Checkpoint,
    out: PathBuf,
    /// The runs this shard owns.
    mine: usize,
    /// Completed runs, from the checkpoint and from this session.
    done: Vec<Done>,
    /// The runs still to do, in index order.
    todo: Vec<usize>,
}

impl Session {
    /// Opens the checkpoint of `out` (or, with `resume`, continues it) for
    /// `shard`'s runs of `plan`.
    pub fn open(plan: &Plan, out: &Path, shard: Shard, resume: bool) -> Result<Session, Error> {
        let mine = shard.runs(plan.header.runs());
        let (ckpt, mut done) = Checkpoint::open(out, &plan.header, shard, resume)?;
        done.retain(|d| shard.owns(d.rec.run));
        let have: BTreeSet<usize> = done.iter().map(|d| d.rec.run).collect();
        let todo = mine.iter().copied().filter(|r| !have.contains(r)).collect();
        Ok(Session {
            ckpt,
            out: out.to_path_buf(),
            mine: mine.len(),
            done,
            todo,
        })
    }

    /// Runs the checkpoint already held.
    pub fn resumed(&self) -> usize {
        self.done.len()
    }

    /// Runs still to do.
    pub fn todo(&self) -> &[usize] {
        &self.todo
    }

    /// Runs what remains on `pool`, calling `on_run` as each completes, and
    /// returns every completed run sorted by index. `stop_after` (a test
    /// hook) stops after that many runs as if the process had been killed:
    /// runs finishing after it are lost, and the result is
    /// [`Error::Interrupted`].
    pub fn run(
        &mut self,
        plan: &Plan,
        pool: &rayon::ThreadPool,
        on_run: &mut dyn FnMut(),
        stop_after: Option<usize>,
    ) -> Result<Vec<Done>, Error> {
        let (lines, stopped) = execute(plan, &self.todo, pool, &mut self.ckpt, on_run, stop_after)?;
        for line in lines {
            let rec: RunRecord = serde_json::from_str(&line).map_err(|e| Error::Checkpoint {
                path: self.ckpt.path.clone(),
                reason: format!("a run record does not read back: {e}"),
            })?;
            self.done.push(Done { rec, line });
        }
        if stopped {
            return Err(Error::Interrupted {
                done: self.done.len(),
                total: self.mine,
                checkpoint: self.ckpt.path.clone(),
            });
        }
        let mut done = std::mem::take(&mut self.done);
        done.sort_by_key(|d| d.rec.run);
        done.dedup_by_key(|d| d.rec.run);
        Ok(done)
    }

    /// Removes the checkpoint, once the outputs are written.
    pub fn finish(self) {
        self.ckpt.remove(&self.out);
    }
}

/// Runs `todo` on the pool, appending each run's line to the checkpoint as it
/// completes. Returns the new lines, in completion order, and whether the
/// stop hook cut the sweep short.
fn execute(
    plan: &Plan,
    todo: &[usize],
    pool: &rayon::ThreadPool,
    ckpt: &mut Checkpoint,
    on_run: &mut dyn FnMut(),
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
            on_run();
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
