//! `hcsim merge`: the shards' outputs of a distributed sweep combined into
//! the runs of the whole sweep.

use super::journal::{Journal, RUNS_FILE, RunSource, read_journal};
use super::plan::PlanHeader;
use crate::error::Error;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Reads the outputs of every shard of a sweep (directories or their
/// `runs.jsonl`), checks that they belong together and are complete, and
/// returns the sweep's header and all its runs in index order (read from
/// the shards' files as they are needed).
pub fn merge(dirs: &[PathBuf]) -> Result<(PlanHeader, RunSource), Error> {
    let mut parts: Vec<(PathBuf, Journal)> = Vec::with_capacity(dirs.len());
    for d in dirs {
        let file = if d.is_dir() {
            d.join(RUNS_FILE)
        } else {
            d.clone()
        };
        let j = read_journal(&file)?;
        parts.push((file, j));
    }
    parts.sort_by_key(|(_, j)| j.head.shard.k);
    let (first_path, first) = &parts[0];
    let n = first.head.shard.n;
    for (path, j) in &parts {
        if j.head.header.fingerprint != first.head.header.fingerprint {
            return Err(Error::Checkpoint {
                path: path.clone(),
                reason: format!(
                    "belongs to a different sweep than {} (the sweep file, its model or hcsim differ)",
                    first_path.display()
                ),
            });
        }
        if j.head.shard.n != n {
            return Err(Error::Checkpoint {
                path: path.clone(),
                reason: format!(
                    "is shard {} but {} is shard {}: all shards must split the sweep the same way",
                    j.head.shard,
                    first_path.display(),
                    first.head.shard
                ),
            });
        }
    }
    for w in parts.windows(2) {
        if w[0].1.head.shard == w[1].1.head.shard {
            return Err(Error::Usage(format!(
                "{} and {} are both shard {}",
                w[0].0.display(),
                w[1].0.display(),
                w[0].1.head.shard
            )));
        }
    }
    let have: BTreeSet<u32> = parts.iter().map(|(_, j)| j.head.shard.k).collect();
    let missing: Vec<String> = (1..=n)
        .filter(|k| !have.contains(k))
        .map(|k| format!("{k}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(Error::Usage(format!(
            "missing shard {}: merge needs the output of every shard",
            missing.join(", ")
        )));
    }
    let header = parts
        .iter()
        .find(|(_, j)| j.head.shard.k == 1)
        .map(|(_, j)| j.head.header.clone())
        .expect("shard 1 is present");
    for (path, j) in &parts {
        let owned = j.done.iter().filter(|e| j.head.shard.owns(e.run)).count();
        let expected = (0..header.runs()).filter(|&r| j.head.shard.owns(r)).count();
        if owned != expected || owned != j.done.len() {
            return Err(Error::Checkpoint {
                path: path.clone(),
                reason: format!(
                    "holds {} runs of shard {} but the shard has {expected}: was it cut short?",
                    j.done.len(),
                    j.head.shard
                ),
            });
        }
    }
    let journals: Vec<Journal> = parts.into_iter().map(|(_, j)| j).collect();
    let records = RunSource::new(&journals, |_| true)?;
    if records.len() != header.runs() {
        return Err(Error::Usage(format!(
            "the shards hold {} distinct runs but the sweep has {}",
            records.len(),
            header.runs()
        )));
    }
    Ok((header, records))
}
