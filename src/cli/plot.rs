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
    if !args.dir.join("summary.json").is_file() && !args.dir.join("results.json").is_file() {
        if let Some(what) = other_output(&args.dir) {
            return Err(Error::Usage(format!(
                "{}: {what}; `hcsim plot` redraws the charts of a run's directory \
                 (summary.json) or a sweep's (results.json)",
                args.dir.display()
            )));
        }
    }
    let charts = crate::output::plot(&args.dir)?;
    super::emit(&format!(
        "wrote {charts} chart(s) and {}\n",
        args.dir.join("report.html").display()
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// What another command's output directory is, and where its pages are.
fn other_output(dir: &std::path::Path) -> Option<String> {
    if dir.join("tune.json").is_file() {
        return Some(format!(
            "this is a tune's output (tune.json): `hcsim tune` drew its report, {}",
            dir.join("report.html").display()
        ));
    }
    if dir.join("compare.html").is_file() {
        return Some(format!(
            "this is a compare's output: `hcsim compare` drew its page, {}",
            dir.join("compare.html").display()
        ));
    }
    None
}
