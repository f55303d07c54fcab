//! The `hcsim` binary: parse → run → exit code. User errors exit with 2.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match hcsim::cli::Cli::try_parse() {
        Ok(cli) => cli,
        // `--help` and `--version` print on stdout: a closed one fails as
        // any other output does, instead of exiting 0 with nothing shown.
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) && hcsim::atomic::stdout_closed() =>
        {
            hcsim::cli::say(&format!(
                "error: cannot write to stdout: {}",
                hcsim::atomic::closed_stdout_error()
            ));
            return ExitCode::from(2);
        }
        Err(e) => e.exit(),
    };
    match hcsim::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            hcsim::cli::say(&format!("error: {e}"));
            ExitCode::from(2)
        }
    }
}

/// Notes whether standard output is closed (`hcsim check m.json >&-`) as
/// the process starts. It must run before `main`: the Rust runtime opens
/// `/dev/null` on a closed standard descriptor before calling `main`,
/// after which the output would vanish without an error. Entries of
/// `.init_array` run before the runtime's setup.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static NOTE_CLOSED_STDOUT: extern "C" fn() = note_closed_stdout;

#[cfg(target_os = "linux")]
extern "C" fn note_closed_stdout() {
    let fds = std::path::Path::new("/proc/self/fd");
    if fds.is_dir() && std::fs::symlink_metadata(fds.join("1")).is_err() {
        hcsim::cli::mark_stdout_closed();
    }
}
