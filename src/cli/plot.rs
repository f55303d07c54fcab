//! `hcsim plot DIR`: redraw a finished run's or sweep's charts and report.html.

use super::PlotArgs;
use crate::error::Error;
use std::process::ExitCode;

pub(super) fn run(args: PlotArgs) -> Result<ExitCode, Error> {
    // Not while a run or sweep is writing there (a missing directory is
    // not created: reading it says what is wrong).
    let _lock = if args.dir.is_dir() {
        Some(crate::sweep::DirLock::acquire(&args.dir)?)
    } else {
        None
    };
    crate::output::plot(&args.dir)?;
    Ok(ExitCode::SUCCESS)
}
