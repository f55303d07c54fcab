//! `hcsim tune FILE`: a tune file's candidates through its scenarios (the
//! sweep engine's runs, checkpointed), the Pareto set and one
//! recommendation verified on fresh seeds; tune.json, the frontier chart,
//! the config snippet and report.html in output/<name>/, a table on stdout.

use super::sweep::{HANG_AFTER_ENV, STOP_AFTER_ENV, test_hook};
use super::{TuneArgs, emit};
use crate::error::Error;
use crate::run::{clamp_jobs, thread_pool};
use crate::sweep::DirLock;
use crate::tune::{self, RunOpts, Setup, TuneResult, page, result, search};
use std::path::Path;
use std::process::ExitCode;

/// The file with the wall time of the last `hcsim tune` in a directory:
/// kept apart from tune.json, whose bytes do not depend on the machine.
pub const TIMING_FILE: &str = "timing.json";

pub fn run(args: TuneArgs) -> Result<ExitCode, Error> {
    // Everything is checked before anything is simulated.
    let setup = Setup::load(&args.file)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("output").join(&setup.name));
    let _lock = DirLock::acquire(&out)?;
    if !args.resume {
        search::refuse_stale_checkpoints(&out)?;
        search::clear_previous(&out)?;
    }
    let first = setup.candidates.len() * setup.scenarios.len() * tune::schedule(&setup)[0] as usize;
    let (jobs, note) = clamp_jobs(args.jobs, first);
    let quiet = args.quiet;
    let say = |line: &str| {
        if !quiet {
            super::say(line);
        }
    };
    if let Some(note) = note {
        say(&format!("note: {note}"));
    }
    let pool = thread_pool(jobs)?;
    let stop_after = test_hook(STOP_AFTER_ENV)?;
    let hang_after = test_hook(HANG_AFTER_ENV)?;
    let mut checkpointed = 0;
    let mut on_run = || {
        checkpointed += 1;
        if hang_after.is_some_and(|n| checkpointed >= n) {
            // Test hook: stay alive holding the locks until killed (or a minute passes).
            std::thread::sleep(std::time::Duration::from_secs(60));
            std::process::exit(3);
        }
    };
    let started = std::time::Instant::now();
    let mut opts = RunOpts {
        out: &out,
        resume: args.resume,
        pool: &pool,
        on_run: &mut on_run,
        stop_after,
    };
    let outcome = tune::run(&setup, &mut opts, &mut |l| say(l))?;
    let result = TuneResult::new(&setup, &outcome);
    let snippet = page::write_outputs(&out, &setup, &result)?;
    let wall = started.elapsed().as_secs_f64();
    let timing = serde_json::json!({
        "wall_time_s": (wall * 1000.0).round() / 1000.0,
        "runs": outcome.runs,
        "runs_simulated_by_this_process": outcome.simulated_now,
        "simulated_hours": result.simulated_hours,
    });
    crate::output::write_atomic(
        &out.join(TIMING_FILE),
        (serde_json::to_string_pretty(&timing).expect("json") + "\n").as_bytes(),
    )?;
    if !quiet {
        emit(&result::table(&result))?;
        let snippet = match &snippet {
            Ok(name) => format!(", {name}"),
            Err(why) => {
                super::say(&format!("note: no config snippet: {why}"));
                String::new()
            }
        };
        emit(&format!(
            "\nwrote {} (tune.json, {}.png/.svg, report.html{snippet}); {} runs, {} simulated hours in {:.1} s\n",
            out.display(),
            page::CHART,
            outcome.runs,
            crate::sweep::fmt_f64(result.simulated_hours),
            wall
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
