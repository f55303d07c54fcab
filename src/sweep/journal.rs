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
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
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

/// A run line's identity, read without keeping its summary.
#[derive(Deserialize)]
struct RunKey {
    run: usize,
    point: usize,
    rep: u32,
    seed: u64,
    #[allow(dead_code)]
    summary: serde::de::IgnoredAny,
}

/// Where a completed run's line is in its journal: the run and the line's
/// byte range (without its newline). A sweep keeps these, not the lines,
/// so its memory does not grow with the summaries.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub run: usize,
    offset: u64,
    len: u64,
}

/// The first line of a checkpoint or of a shard's `runs.jsonl`.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct JournalHead {
    pub header: PlanHeader,
    pub shard: Shard,
}

/// A journal as read: its head, where its runs are, and the length of its intact part.
pub struct Journal {
    pub path: PathBuf,
    pub head: JournalHead,
    pub done: Vec<Entry>,
    intact_len: u64,
}

/// Reads a journal line by line, keeping where each run is rather than the
/// run itself. A last line without its newline is a write that was cut short
/// (a crash or Ctrl-C): it is left out, and `intact_len` ends before it.
pub fn read_journal(path: &Path) -> Result<Journal, Error> {
    let rerr = |source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    };
    let bad = |reason: String| Error::Checkpoint {
        path: path.to_path_buf(),
        reason,
    };
    let mut r = BufReader::new(File::open(path).map_err(rerr)?);
    let mut buf = Vec::new();
    let mut offset = 0u64;
    // The next complete line (without its newline), or None at the end or at a torn line.
    let mut next_line = |buf: &mut Vec<u8>| -> Result<Option<u64>, Error> {
        buf.clear();
        let n = r.read_until(b'\n', buf).map_err(rerr)? as u64;
        if n == 0 || buf.last() != Some(&b'\n') {
            return Ok(None);
        }
        buf.pop();
        Ok(Some(n))
    };
    let head: JournalHead = match next_line(&mut buf)? {
        None => return Err(bad("is empty".into())),
        Some(n) => {
            offset += n;
            serde_json::from_slice(&buf)
                .map_err(|e| bad(format!("line 1 is not a sweep header: {e}")))?
        }
    };
    let total = head.header.runs();
    let mut done = Vec::new();
    let mut line_no = 1;
    while let Some(n) = next_line(&mut buf)? {
        line_no += 1;
        let rec: RunKey = serde_json::from_slice(&buf)
            .map_err(|e| bad(format!("line {line_no} is not a run record: {e}")))?;
        let (point, rep) = if rec.run < total {
            head.header.point_rep(rec.run)
        } else {
            (usize::MAX, 0)
        };
        if point != rec.point || rep != rec.rep || rec.seed != head.header.seed(point, rep) {
            return Err(bad(format!(
                "line {line_no}: run {} does not belong to this sweep",
                rec.run
            )));
        }
        done.push(Entry {
            run: rec.run,
            offset,
            len: n - 1,
        });
        offset += n;
    }
    Ok(Journal {
        path: path.to_path_buf(),
        head,
        done,
        intact_len: offset,
    })
}

/// The completed runs of a sweep in run order, each read from its journal
/// when it is needed: what outputs are written from, one run at a time.
pub struct RunSource {
    files: Vec<(PathBuf, File)>,
    /// By position in run order: the file and the line's place in it.
    at: Vec<(usize, Entry)>,
}

impl RunSource {
    /// The runs of `journals` that `keep` accepts, in run order; a run found
    /// twice is read from its first line (in the order of `journals`).
    pub fn new(journals: &[Journal], keep: impl Fn(usize) -> bool) -> Result<RunSource, Error> {
        let mut files = Vec::with_capacity(journals.len());
        let mut at = Vec::new();
        for (f, j) in journals.iter().enumerate() {
            let file = File::open(&j.path).map_err(|source| Error::ReadFile {
                path: j.path.clone(),
                source,
            })?;
            files.push((j.path.clone(), file));
            at.extend(j.done.iter().filter(|e| keep(e.run)).map(|&e| (f, e)));
        }
        // Stable: the first line of a run stays first.
        at.sort_by_key(|(_, e)| e.run);
        at.dedup_by_key(|(_, e)| e.run);
        Ok(RunSource { files, at })
    }

    /// Completed runs.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// The run index at position `i`.
    pub fn run(&self, i: usize) -> usize {
        self.at[i].1.run
    }

    /// The line of the run at position `i`, as it was written.
    pub fn line(&self, i: usize) -> Result<Vec<u8>, Error> {
        let (f, e) = self.at[i];
        let (path, file) = &self.files[f];
        let mut buf = vec![0; e.len as usize];
        let mut file: &File = file;
        file.seek(SeekFrom::Start(e.offset))
            .and_then(|_| file.read_exact(&mut buf))
            .map_err(|source| Error::ReadFile {
                path: path.clone(),
                source,
            })?;
        Ok(buf)
    }

    /// The record of the run at position `i`.
    pub fn record(&self, i: usize) -> Result<RunRecord, Error> {
        self.parse(i, &self.line(i)?)
    }

    /// Parses `line`, the line of the run at position `i`.
    pub fn parse(&self, i: usize, line: &[u8]) -> Result<RunRecord, Error> {
        serde_json::from_slice(line).map_err(|e| Error::Checkpoint {
            path: self.files[self.at[i].0].0.clone(),
            reason: format!("run {} does not read back: {e}", self.run(i)),
        })
    }
}

/// Why a checkpoint written for the sweep `was` cannot resume the sweep
/// `now`: the command that wrote it when the commands differ (other
/// `--param`, `--set`, `--reps` or `--seed`), else what else changes results.
fn different_sweep(was: &PlanHeader, now: &PlanHeader, dir: &Path) -> String {
    let (a, b) = (was.command(), now.command());
    let kind = now.kind();
    if a != b {
        return format!(
            "belongs to a different {kind}: it was written by `{a}`, not `{b}`; finish it with that command and --resume, or remove {} to start over",
            dir.display()
        );
    }
    let changed = if now.is_command_line() {
        "the model or hcsim".to_string()
    } else {
        format!("the {kind} file, its model or hcsim")
    };
    format!(
        "belongs to a different {kind} ({changed} changed since it was written); remove {} to start over",
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

    /// Opens the checkpoint of `out`, returning the journal it already holds
    /// (if any). The caller holds the lock of `out`: no other process writes
    /// the checkpoint.
    pub fn open(
        out: &Path,
        header: &PlanHeader,
        shard: Shard,
        resume: bool,
    ) -> Result<(Checkpoint, Option<Journal>), Error> {
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
                    .append(true)
                    .open(&path)
                    .map_err(werr(&path))?;
                // Drop a torn last line before appending after it (under the
                // directory's lock: no other process writes this file).
                if file.metadata().map_err(werr(&path))?.len() != j.intact_len {
                    file.set_len(j.intact_len).map_err(werr(&path))?;
                }
                return Ok((Checkpoint { path, file }, Some(j)));
            }
        }
        // A new checkpoint replaces any old one by a rename, never by
        // truncating a file in place.
        let head = serde_json::to_string(&JournalHead {
            header: header.clone(),
            shard,
        })
        .expect("a plan header serializes");
        crate::atomic::write(&path, format!("{head}\n").as_bytes()).map_err(werr(&path))?;
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(werr(&path))?;
        Ok((Checkpoint { path, file }, None))
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

/// Writes a shard's `runs.jsonl` atomically: the header line, then its
/// runs' lines in run order, streamed from their journal.
pub fn write_shard_file(
    path: &Path,
    header: &PlanHeader,
    shard: Shard,
    runs: &RunSource,
) -> Result<(), Error> {
    let head = serde_json::to_string(&JournalHead {
        header: header.clone(),
        shard,
    })
    .expect("a plan header serializes");
    let mut failed = None;
    let written = crate::atomic::write_with(path, |w| {
        w.write_all(head.as_bytes())?;
        w.write_all(b"\n")?;
        for i in 0..runs.len() {
            let line = runs.line(i).map_err(|e| {
                let msg = e.to_string();
                failed = Some(e);
                std::io::Error::other(msg)
            })?;
            w.write_all(&line)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    });
    match (written, failed) {
        (_, Some(e)) => Err(e),
        (Err(source), None) => Err(Error::Write {
            path: path.to_path_buf(),
            source,
        }),
        (Ok(()), None) => Ok(()),
    }
}
