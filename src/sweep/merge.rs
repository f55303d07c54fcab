//! `hcsim merge`: the shards' outputs of a distributed sweep combined into
//! the runs of the whole sweep. When some shard cannot be merged yet, the
//! refusal lists exactly which: missing (no directory given holds it) or
//! incomplete (its directory holds the checkpoint of a task that was
//! interrupted, killed or is still running), each with the command that
//! reruns it.

use super::journal::{Journal, RUNS_FILE, RunSource, read_journal};
use super::lock::DirLock;
use super::plan::{PlanHeader, shell_word};
use super::shard::Shard;
use crate::error::Error;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where a shard that is not in progress keeps its checkpoint, under its directory.
const CHECKPOINT: [&str; 2] = [".checkpoint", RUNS_FILE];

/// A shard `hcsim merge` cannot take yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    pub shard: Shard,
    pub state: GapState,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GapState {
    /// None of the directories given holds it; `out` is where the others'
    /// directories say it belongs, when they follow one pattern.
    Missing { out: Option<PathBuf> },
    /// Its directory holds only the checkpoint of `done` of its `of` runs;
    /// `running` names the process that still writes it, if one does.
    Incomplete {
        dir: PathBuf,
        done: usize,
        of: usize,
        running: Option<String>,
    },
}

/// What the directories given to a merge hold.
pub struct Gathered {
    /// The sweep's header (from its first shard found).
    pub header: PlanHeader,
    /// How many shards the sweep was split into.
    pub n: u32,
    /// Every complete shard's file, by shard.
    complete: Vec<Journal>,
    /// The shards that cannot be merged yet, by shard.
    pub gaps: Vec<Gap>,
    /// Directories given that hold no shard's output at all.
    pub empty: Vec<PathBuf>,
}

/// One shard's output found in a directory (or a `runs.jsonl` given as is).
struct Part {
    /// The directory or file as given.
    given: PathBuf,
    journal: Journal,
    /// A checkpoint (the shard did not finish), not a finished `runs.jsonl`.
    checkpoint: bool,
}

/// Reads what every directory (or `runs.jsonl`) holds: finished shards and
/// checkpoints of unfinished ones, checked to come from the same sweep split
/// the same way.
pub fn gather(dirs: &[PathBuf]) -> Result<Gathered, Error> {
    let mut parts: Vec<Part> = Vec::with_capacity(dirs.len());
    let mut empty = Vec::new();
    for d in dirs {
        let (file, checkpoint) = if d.is_dir() {
            let done = d.join(RUNS_FILE);
            let ckpt = d.join(CHECKPOINT[0]).join(CHECKPOINT[1]);
            if done.exists() {
                (done, false)
            } else if ckpt.exists() {
                (ckpt, true)
            } else {
                empty.push(d.clone());
                continue;
            }
        } else if d.exists() {
            (d.clone(), false)
        } else {
            empty.push(d.clone());
            continue;
        };
        let journal = read_journal(&file)?;
        parts.push(Part {
            given: d.clone(),
            journal,
            checkpoint,
        });
    }
    // The header of the lowest shard found (shard 1's when the merge can go
    // on), finished shards before checkpoints: the one the outputs name.
    parts.sort_by_key(|p| (p.journal.head.shard.k, p.checkpoint));
    let Some(first) = parts.first() else {
        let listed: Vec<String> = empty.iter().map(|p| p.display().to_string()).collect();
        return Err(Error::Usage(format!(
            "no shard output in {}: each directory should hold the runs.jsonl that `hcsim sweep --shard K/N --out DIR` writes (or its .checkpoint/ while it runs)",
            listed.join(", ")
        )));
    };
    let head = &first.journal.head;
    let (first_path, first_shard) = (first.journal.path.clone(), head.shard);
    let (header, n) = (head.header.clone(), head.shard.n);
    for p in &parts {
        let j = &p.journal;
        if j.head.header.fingerprint != header.fingerprint {
            return Err(Error::Checkpoint {
                path: j.path.clone(),
                reason: format!(
                    "belongs to a different sweep than {} (the sweep file, its model or hcsim differ)",
                    first_path.display()
                ),
            });
        }
        if j.head.shard.n != n {
            return Err(Error::Checkpoint {
                path: j.path.clone(),
                reason: format!(
                    "is shard {} but {} is shard {first_shard}: all shards must split the sweep the same way",
                    j.head.shard,
                    first_path.display(),
                ),
            });
        }
    }
    let (done, unfinished): (Vec<Part>, Vec<Part>) = parts.into_iter().partition(|p| !p.checkpoint);
    let complete = by_shard(done, &header)?;
    let mut gaps: BTreeMap<u32, Gap> = BTreeMap::new();
    let mut dirs_of: Vec<(u32, PathBuf)> = complete
        .values()
        .map(|j| (j.head.shard.k, shard_dir(&j.path)))
        .collect();
    for p in unfinished {
        let s = p.journal.head.shard;
        dirs_of.push((s.k, p.given.clone()));
        if complete.contains_key(&s.k) {
            continue;
        }
        let done = p.journal.done.iter().filter(|e| s.owns(e.run)).count();
        let better = match gaps.get(&s.k) {
            Some(Gap {
                state: GapState::Incomplete { done: d, .. },
                ..
            }) => done > *d,
            _ => true,
        };
        if better {
            let running = match DirLock::acquire(&p.given) {
                Err(Error::Locked { holder, .. }) => Some(holder),
                _ => None,
            };
            gaps.insert(
                s.k,
                Gap {
                    shard: s,
                    state: GapState::Incomplete {
                        dir: p.given,
                        done,
                        of: s.runs(header.runs()).len(),
                        running,
                    },
                },
            );
        }
    }
    for k in 1..=n {
        if !complete.contains_key(&k) && !gaps.contains_key(&k) {
            let out = guess_dir(&dirs_of, k);
            gaps.insert(
                k,
                Gap {
                    shard: Shard { k, n },
                    state: GapState::Missing { out },
                },
            );
        }
    }
    Ok(Gathered {
        header,
        n,
        complete: complete.into_values().collect(),
        gaps: gaps.into_values().collect(),
        empty,
    })
}

/// The finished shards' files by K, each checked to hold all its runs; two
/// of the same shard are refused.
fn by_shard(done: Vec<Part>, header: &PlanHeader) -> Result<BTreeMap<u32, Journal>, Error> {
    let mut complete: BTreeMap<u32, Journal> = BTreeMap::new();
    for p in done {
        let s = p.journal.head.shard;
        if let Some(other) = complete.get(&s.k) {
            return Err(Error::Usage(format!(
                "{} and {} are both shard {s}",
                other.path.display(),
                p.journal.path.display(),
            )));
        }
        let of = s.runs(header.runs()).len();
        let owned = p.journal.done.iter().filter(|e| s.owns(e.run)).count();
        if owned != of || owned != p.journal.done.len() {
            return Err(Error::Checkpoint {
                path: p.journal.path.clone(),
                reason: format!(
                    "holds {} runs of shard {s} but the shard has {of}: was it cut short?",
                    p.journal.done.len()
                ),
            });
        }
        complete.insert(s.k, p.journal);
    }
    Ok(complete)
}

impl Gathered {
    /// All the sweep's runs in index order, read from the shards' files as
    /// they are needed (every shard is complete).
    pub fn runs(&self) -> Result<RunSource, Error> {
        assert!(self.gaps.is_empty(), "runs() of an incomplete merge");
        let records = RunSource::new(&self.complete, |_| true)?;
        if records.len() != self.header.runs() {
            return Err(Error::Usage(format!(
                "the shards hold {} distinct runs but the sweep has {}",
                records.len(),
                self.header.runs()
            )));
        }
        Ok(records)
    }
}

/// Reads the outputs of every shard of a sweep (directories or their
/// `runs.jsonl`), checks that they belong together and are complete, and
/// returns the sweep's header and all its runs in index order (read from
/// the shards' files as they are needed). When some shard is missing or
/// incomplete, the error lists each with the command that reruns it.
pub fn merge(dirs: &[PathBuf]) -> Result<(PlanHeader, RunSource), Error> {
    let g = gather(dirs)?;
    if !g.gaps.is_empty() {
        return Err(Error::Usage(report(&g)));
    }
    let runs = g.runs()?;
    Ok((g.header, runs))
}

/// The refusal of a merge with gaps: one entry per shard it lacks, with
/// what is known of it and the command that reruns it.
pub fn report(g: &Gathered) -> String {
    let h = &g.header;
    let mut msg = format!(
        "merge needs all {} shards of {} {}; {} of them cannot be merged yet, and nothing was written:",
        g.n,
        h.kind(),
        h.name,
        g.gaps.len()
    );
    for gap in &g.gaps {
        let s = gap.shard;
        let rerun = |out: &str, resume: bool| {
            format!(
                "\n    rerun: {} --shard {s} --out {out}{}",
                h.command(),
                if resume { " --resume" } else { "" }
            )
        };
        match &gap.state {
            GapState::Missing { out } => {
                msg += &format!("\n  missing shard {s}: none of the directories given holds it");
                let out = out
                    .as_ref()
                    .map_or("DIR".to_string(), |d| shell_word(&d.display().to_string()));
                msg += &rerun(&out, false);
            }
            GapState::Incomplete {
                dir,
                done,
                of,
                running,
            } => {
                let d = dir.display();
                match running {
                    Some(holder) => {
                        msg += &format!(
                            "\n  incomplete shard {s}: still running in {d} ({holder}), {done} of its {of} runs done: wait for it to finish"
                        );
                    }
                    None => {
                        msg += &format!(
                            "\n  incomplete shard {s}: {d} holds the checkpoint of {done} of its {of} runs (its task was interrupted or killed); --resume runs the rest"
                        );
                        msg += &rerun(&shell_word(&d.to_string()), true);
                    }
                }
            }
        }
    }
    for e in &g.empty {
        msg += &format!(
            "\n  {}: holds no shard output (no runs.jsonl, no .checkpoint/)",
            e.display()
        );
    }
    msg += "\nthen run this merge again";
    msg
}

/// The directory a shard's `runs.jsonl` is in (the file itself when it
/// has no parent to name).
fn shard_dir(file: &Path) -> PathBuf {
    match file.parent() {
        Some(p)
            if file.file_name().is_some_and(|n| n == RUNS_FILE) && !p.as_os_str().is_empty() =>
        {
            p.to_path_buf()
        }
        _ => file.to_path_buf(),
    }
}

/// A directory pattern: the text around one number that is the shard's K
/// (`delta` 0) or K - 1 (`delta` -1, 0-based task indices), at `width`
/// digits when it was written with leading zeros.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Pattern {
    prefix: String,
    suffix: String,
    delta: i64,
    width: usize,
}

/// Every pattern that `dir` of shard `k` fits.
fn patterns(dir: &Path, k: u32) -> BTreeSet<Pattern> {
    let text = dir.display().to_string();
    let b = text.as_bytes();
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let digits = &text[start..i];
        let Ok(v) = digits.parse::<i64>() else {
            continue;
        };
        let width = if digits.len() > 1 && digits.starts_with('0') {
            digits.len()
        } else {
            0
        };
        for delta in [0, -1] {
            if v == k as i64 + delta {
                found.insert(Pattern {
                    prefix: text[..start].to_string(),
                    suffix: text[i..].to_string(),
                    delta,
                    width,
                });
            }
        }
    }
    found
}

/// Where shard `k`'s directory is when every known shard's directory
/// follows one pattern (`shards/0`, `shards/1`... or `out/shard-1-of-4`...).
fn guess_dir(known: &[(u32, PathBuf)], k: u32) -> Option<PathBuf> {
    let mut common: Option<BTreeSet<Pattern>> = None;
    for (kk, dir) in known {
        let p = patterns(dir, *kk);
        common = Some(match common {
            None => p,
            Some(c) => c.intersection(&p).cloned().collect(),
        });
    }
    let common = common?;
    if common.len() != 1 {
        return None;
    }
    let p = common.into_iter().next()?;
    let v = k as i64 + p.delta;
    let dir = PathBuf::from(format!("{}{v:0w$}{}", p.prefix, p.suffix, w = p.width));
    (!known.iter().any(|(_, d)| *d == dir)).then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(list: &[(u32, &str)]) -> Vec<(u32, PathBuf)> {
        list.iter().map(|(k, d)| (*k, PathBuf::from(d))).collect()
    }

    #[test]
    fn a_missing_shards_directory_follows_the_others() {
        // 0-based task indices (`--out shards/$SLURM_ARRAY_TASK_ID`).
        let known = dirs(&[(1, "shards/0"), (2, "shards/1"), (4, "shards/3")]);
        assert_eq!(guess_dir(&known, 3), Some(PathBuf::from("shards/2")));
        // 1-based, and hcsim's default directories.
        let known = dirs(&[(1, "out/1"), (3, "out/3")]);
        assert_eq!(guess_dir(&known, 2), Some(PathBuf::from("out/2")));
        let known = dirs(&[
            (1, "output/grid-2/shard-1-of-4"),
            (4, "output/grid-2/shard-4-of-4"),
        ]);
        assert_eq!(
            guess_dir(&known, 2),
            Some(PathBuf::from("output/grid-2/shard-2-of-4"))
        );
        // Leading zeros are kept.
        let known = dirs(&[(1, "r/task-000"), (2, "r/task-001")]);
        assert_eq!(guess_dir(&known, 11), Some(PathBuf::from("r/task-010")));
        // No common pattern, or two: no guess.
        assert_eq!(guess_dir(&dirs(&[(1, "a"), (2, "b")]), 3), None);
        assert_eq!(guess_dir(&dirs(&[(4, "s/shard-4-of-4")]), 2), None);
        assert_eq!(guess_dir(&[], 2), None);
    }
}
