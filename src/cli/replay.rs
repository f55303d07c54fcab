//! `hcsim replay LOG`: the access log of an incident → the inferred model,
//! its fit to the log, and the what-ifs of `--set` / `--compare`.

use super::args::ReplayArgs;
use super::{emit, say};
use crate::error::Error;
use crate::replay::{self, Options};
use crate::spec::Override;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::process::ExitCode;

pub(super) fn run(args: ReplayArgs) -> Result<ExitCode, Error> {
    let mut groups = vec![];
    if !args.overrides.set.is_empty() {
        groups.push(args.overrides.set.clone());
    }
    for c in &args.compare {
        let g: Vec<Override> = c
            .split(';')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(|x| {
                Override::parse(x).map_err(|reason| {
                    Error::Usage(format!("--compare {}: {reason}", crate::spec::shorten(x)))
                })
            })
            .collect::<Result<_, _>>()?;
        if g.is_empty() {
            return Err(Error::Usage(format!(
                "--compare {c:?}: expected PATH=VALUE[;PATH=VALUE…]"
            )));
        }
        groups.push(g);
    }
    let o = Options {
        log: args.log.clone(),
        config: args.config.clone(),
        target: args.target.clone(),
        log_format: args.log_format.clone(),
        error_log: args.error_log.clone(),
        actual: args.actual.clone(),
        groups,
        reps: args.reps,
        seed: args.seed,
        out: args.out.clone(),
        charts: !args.no_charts,
    };
    let bar = (!args.quiet && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new(1);
        b.set_style(
            ProgressStyle::with_template(
                "reading {msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b.set_message(args.log.display().to_string());
        b
    });
    let mut progress = |done: u64, total: u64| {
        if let Some(b) = &bar {
            b.set_length(total.max(1));
            b.set_position(done);
        }
    };
    let (jobs, _) = crate::run::clamp_jobs(args.jobs, args.reps as usize);
    let outcome = crate::run::thread_pool(jobs)?.install(|| replay::replay(&o, &mut progress));
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let outcome = outcome?;
    for w in &outcome.warnings {
        say(&format!("warning: {w}"));
    }
    if !args.quiet {
        emit(&outcome.text)?;
    }
    Ok(ExitCode::SUCCESS)
}
