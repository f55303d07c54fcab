//! The command line: [`Cli`] (the arguments, in [`args`]) and one file per
//! subcommand that turns them into calls to the library and prints the
//! results. Nothing below this layer prints or sees clap types.

pub mod args;
mod check;
mod compare;
mod completions;
mod export;
mod import;
mod interrupt;
mod man;
mod merge;
mod plot;
mod replay;
mod reproduce;
mod run;
mod schema;
mod shard;
mod sweep;
mod tune;

pub use args::*;

use crate::error::Error;
use std::path::Path;
use std::process::ExitCode;

/// Runs the command; `Err` is a user error (exit code 2).
pub fn run(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Check(args) => check::run(args),
        Command::Schema(args) => schema::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Plot(args) => plot::run(args),
        Command::Reproduce(args) => reproduce::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Import(args) => import::run(args),
        Command::Export(args) => export::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Man => man::run(),
    }
}

/// Writes to stdout. A closed pipe (`hcsim ... | head`) quietly ends the
/// output instead of panicking; any other write error (a full disk), or a
/// stdout closed when hcsim started (`>&-`), is an error, so the command
/// exits non-zero.
pub(crate) fn emit(text: &str) -> Result<(), Error> {
    use std::io::Write;
    if crate::atomic::stdout_closed() {
        return Err(Error::Stdout(crate::atomic::closed_stdout_error()));
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Stdout(e)),
        _ => Ok(()),
    }
}

/// Records, before `main` runs, that the process started with its standard
/// output closed (`>&-`): writes to it then fail instead of vanishing into
/// the `/dev/null` the runtime puts there (see `main.rs`).
pub fn mark_stdout_closed() {
    crate::atomic::mark_stdout_closed();
}

/// Writes a line to stderr. Unlike `eprintln!`, a stderr that cannot be
/// written (`2>/dev/full`) loses the line instead of panicking; a huge
/// value the line quotes is cut to an excerpt
/// ([`crate::diagnostics::clip_message`]).
pub fn say(line: &str) {
    use std::io::Write;
    let line = crate::diagnostics::clip_message(line);
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}").and_then(|()| err.flush());
}

/// Writes the `--export-markdown` / `--export-csv` files of a comparison
/// (or of one run's metrics).
pub(crate) fn export(
    c: &crate::output::compare::Comparison,
    markdown: Option<&Path>,
    csv: Option<&Path>,
) -> Result<(), Error> {
    use crate::output::compare::render;
    if let Some(p) = markdown {
        crate::output::write_atomic(p, render::markdown(c).as_bytes())?;
    }
    if let Some(p) = csv {
        let text = render::csv(c).map_err(|e| Error::Write {
            path: p.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?;
        crate::output::write_atomic(p, text.as_bytes())?;
    }
    Ok(())
}

/// Prints warnings to stderr as `warning: file: field: message`.
pub fn print_warnings(path: &Path, warnings: &[(String, String)]) {
    for (field, msg) in warnings {
        if field.is_empty() {
            say(&format!("warning: {}: {msg}", path.display()));
        } else {
            say(&format!("warning: {}: {field}: {msg}", path.display()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
