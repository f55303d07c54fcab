//! `hcsim merge DIR... --out DIR`: the shards of a distributed sweep combined.

use super::{MergeArgs, emit};
use crate::error::Error;
use crate::output;
use std::process::ExitCode;

pub(super) fn run(args: MergeArgs) -> Result<ExitCode, Error> {
    let (header, records) = crate::sweep::merge::merge(&args.dirs)?;
    let _lock = crate::sweep::DirLock::acquire(&args.out)?;
    output::sweep::write_outputs(&args.out, &header, &records)?;
    output::remove_run_files(&args.out)?;
    if !args.no_charts {
        output::plot(&args.out)?;
    }
    if !args.quiet {
        emit(&output::sweep_summary::sweep_summary(&args.out)?)?;
        emit(&format!(
            "wrote {} (runs.csv, points.csv, results.json: {} runs)\n",
            args.out.display(),
            records.len()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
