//! `hcsim completions bash|zsh|fish`: the shell completion script, generated
//! from the same clap definition as the command line itself.

use super::{Cli, CompletionsArgs, Shell, emit};
use crate::error::Error;
use clap::CommandFactory;
use std::process::ExitCode;

pub(super) fn run(args: CompletionsArgs) -> Result<ExitCode, Error> {
    use clap_complete::Shell as S;
    let shell = match args.shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
    };
    let mut script = vec![];
    clap_complete::generate(shell, &mut Cli::command(), "hcsim", &mut script);
    emit(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}
