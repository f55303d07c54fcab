//! `--shard K/N|auto`, `--shard-base` and `--shards` (sweep and tune): the
//! shard this process runs, `auto` read from the array engine's variables.

use super::ShardArgs;
use crate::error::Error;
use crate::sweep::shard::{self, Placement};
use std::collections::BTreeMap;

/// The shard the flags name, reading the process's environment for `auto`.
pub(super) fn placement(args: &ShardArgs) -> Result<Placement, Error> {
    let env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        .collect();
    shard::resolve(args.shard, args.shard_base, args.shards, &env).map_err(Error::Usage)
}

/// A refused checkpoint (one left without `--resume`) of a task that the
/// engine says is a retry: it tells to put `--resume` in the job's command.
pub(super) fn retry_hint(e: Error, p: &Placement) -> Error {
    match (e, &p.retry) {
        (Error::Checkpoint { path, reason }, Some(retry)) if reason.contains("--resume") => {
            Error::Checkpoint {
                path,
                reason: format!(
                    "{reason}; this task is a retry ({retry}): put --resume in the job's command so that a requeued or retried task continues its own checkpoint"
                ),
            }
        }
        (e, _) => e,
    }
}
