//! The journal of a sweep: one line per completed run, appended to
//! `.checkpoint/runs.jsonl` as runs finish (so `--resume` can finish an
//! interrupted sweep) and written as a shard's `runs.jsonl` (which `hcsim
//! merge` combines). Its first line is the plan's header.

use super::plan::PlanHeader;
use super::shard::Shard;
use crate::error::Error;
use crate::metrics::RunSummary;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where a run's records go while a sweep is in progress, under the output directory.
const CHECKPOINT_DIR: &str = ".checkpoint";
/// The file of completed runs, in the checkpoint directory and in a shard's output.
pub const RUNS_FILE: &str = "runs.jsonl";

/// One completed run, as a checkpoint line.
#[derive(Serialize)]
pub(crate) struct RunLine<'a> {
    pub run: usize,
    pub point: usize,
    pub rep: u32,
    pub seed: u64,
    pub summary: &'a RunSummary,
}

/// One completed run, read back from its line.
#[derive(Clone, Debug, Deserialize)]
pub struct RunRecord {
    pub run: usize,
    pub point: usize,
    pub rep: u32,
    pub seed: u64,
    pub summary: Value,
}

/// A record and the line it was read from (kept verbatim for shard outputs).
#[derive(Clone, Debug)]
pub struct Done {
    pub rec: RunRecord,
    pub line: String,
}

/// The first line of a checkpoint or of a shard's `runs.jsonl`.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct JournalHead {
    pub header: PlanHeader,
    pub shard: Shard,
}

/// A journal as read: its head, its records, and the length of its intact part.
pub struct Journal {
    pub head: JournalHead,
    pub done: Vec<Done>,
    intact_len: u64,
}

/// Reads a journal. A last line without its newline is a write that was cut
/// short (a crash or Ctrl-C): it is left out, and `intact_len` ends before it.
pub fn read_journal(path: &Path) -> Result<Journal, Error> {
    let text = fs::read_to_string(path).map_err(|source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |reason: String| Error::Checkpoint {
        path: path.to_path_buf(),
        reason,
    };
    let intact = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    let mut lines = intact.lines();
    let head: JournalHead = lines
        .next()
        .ok_or_else(|| bad("is empty".into()))
        .and_then(|l| {
            serde_json::from_str(l).map_err(|e| bad(format!("line 1 is not a sweep header: {e}")))
        })?;
    let total = head.header.runs();
    let mut done = Vec::new();
    for (i, line) in lines.enumerate() {
        let rec: RunRecord = serde_json::from_str(line)
            .map_err(|e| bad(format!("line {} is not a run record: {e}", i + 2)))?;
        let (point, rep) = if rec.run < total {
            head.header.point_rep(rec.run)
        } else {
            (usize::MAX, 0)
        };
        if point != rec.point || rep != rec.rep || rec.seed != head.header.seed(point, rep) {
            return Err(bad(format!(
                "line {}: run {} does not belong to this sweep",
                i + 2,
                rec.run
            )));
        }
        done.push(Done {
            rec,
            line: line.to_string(),
        });
    }
    Ok(Journal {
        head,
        done,
        intact_len: intact.len() as u64,
    })
}

/// Why a checkpoint written for the sweep `was` cannot resume the sweep
/// `now`: the command that wrote it when the commands differ (other
/// `--param`, `--set`, `--reps` or `--seed`), else what else changes results.
fn different_sweep(was: &PlanHeader, now: &PlanHeader, dir: &Path) -> String {
    let (a, b) = (was.command(), now.command());
    if a != b {
        return format!(
            "belongs to a different sweep: it was written by `{a}`, not `{b}`; finish it with that command and --resume, or remove {} to start over",
            dir.display()
        );
    }
    let changed = if now.is_command_line() {
        "the model or hcsim"
    } else {
        "the sweep file, its model or hcsim"
    };
    format!(
        "belongs to a different sweep ({changed} changed since it was written); remove {} to start over",
        dir.display()
    )
}

/// Appends run lines to the checkpoint, each flushed to the OS as it is written.
pub struct Checkpoint {
    pub path: PathBuf,
    file: File,
}

impl Checkpoint {
    fn dir(out: &Path) -> PathBuf {
        out.join(CHECKPOINT_DIR)
    }

    /// Opens the checkpoint of `out`, returning the runs it already holds.
    pub fn open(
        out: &Path,
        header: &PlanHeader,
        shard: Shard,
        resume: bool,
    ) -> Result<(Checkpoint, Vec<Done>), Error> {
        let dir = Checkpoint::dir(out);
        let path = dir.join(RUNS_FILE);
        let werr = |p: &Path| {
            let p = p.to_path_buf();
            move |source| Error::Write { path: p, source }
        };
        let existing = if path.exists() {
            Some(read_journal(&path)?)
        } else {
            None
        };
        if let Some(j) = existing {
            if !resume && !j.done.is_empty() {
                return Err(Error::Checkpoint {
                    path,
                    reason: format!(
                        "an interrupted sweep left {} completed runs here: pass --resume to finish it, or remove {} to start over",
                        j.done.len(),
                        dir.display()
                    ),
                });
            }
            if resume {
                if j.head.header.fingerprint != header.fingerprint {
                    return Err(Error::Checkpoint {
                        path,
                        reason: different_sweep(&j.head.header, header, &dir),
                    });
                }
                if j.head.shard != shard {
                    return Err(Error::Checkpoint {
                        path,
                        reason: format!(
                            "was written by shard {} but this is shard {shard}",
                            j.head.shard
                        ),
                    });
                }
                let file = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(werr(&path))?;
                // Drop a torn last line before appending after it.
                file.set_len(j.intact_len).map_err(werr(&path))?;
                drop(file);
                let file = OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(werr(&path))?;
                return Ok((Checkpoint { path, file }, j.done));
            }
        }
        fs::create_dir_all(&dir).map_err(werr(&dir))?;
        let mut file = File::create(&path).map_err(werr(&path))?;
        let head = serde_json::to_string(&JournalHead {
            header: header.clone(),
            shard,
        })
        .expect("a plan header serializes");
        file.write_all(format!("{head}\n").as_bytes())
            .map_err(werr(&path))?;
        Ok((Checkpoint { path, file }, Vec::new()))
    }

    pub fn append(&mut self, line: &str) -> Result<(), Error> {
        // One write per line: a crash cuts at most the last line short.
        let mut buf = String::with_capacity(line.len() + 1);
        buf.push_str(line);
        buf.push('\n');
        self.file
            .write_all(buf.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|source| Error::Write {
                path: self.path.clone(),
                source,
            })
    }

    pub fn remove(self, out: &Path) {
        drop(self.file);
        let _ = fs::remove_file(&self.path);
        let _ = fs::remove_dir(Checkpoint::dir(out));
    }
}

/// A shard's `runs.jsonl`: the header line, then its runs' lines in run order.
pub fn shard_file(header: &PlanHeader, shard: Shard, done: &[Done]) -> String {
    let mut text = serde_json::to_string(&JournalHead {
        header: header.clone(),
        shard,
    })
    .expect("a plan header serializes");
    text.push('\n');
    for d in done {
        text.push_str(&d.line);
        text.push('\n');
    }
    text
}
