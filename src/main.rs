//! The `hcsim` binary: parse → run → exit code. User errors exit with 2.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = hcsim::cli::Cli::parse();
    match hcsim::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            hcsim::cli::say(&format!("error: {e}"));
            ExitCode::from(2)
        }
    }
}
