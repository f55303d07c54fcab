//! `hcsim man`: the manual page (roff) on stdout, generated from the clap
//! definition: `hcsim man | man -l -`, or install it as `man1/hcsim.1`.

use super::{Cli, emit};
use crate::error::Error;
use clap::CommandFactory;
use std::process::ExitCode;

pub(super) fn run() -> Result<ExitCode, Error> {
    let mut page = vec![];
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(|e| Error::Usage(format!("cannot render the manual page: {e}")))?;
    emit(&String::from_utf8_lossy(&page))?;
    Ok(ExitCode::SUCCESS)
}
