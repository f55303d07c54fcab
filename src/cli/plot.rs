//! `hcsim plot DIR`: redraw a finished run's or sweep's charts and report.html.

use super::PlotArgs;
use crate::error::Error;
use std::process::ExitCode;

pub(super) fn run(args: PlotArgs) -> Result<ExitCode, Error> {
    crate::output::plot(&args.dir)?;
    Ok(ExitCode::SUCCESS)
}
