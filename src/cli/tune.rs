//! `hcsim tune FILE`: a tune file's candidates through its scenarios (the
//! sweep engine's runs, checkpointed), the Pareto set and one
//! recommendation verified on fresh seeds; tune.json, the frontier chart,
//! the config snippet and report.html in output/<name>/, a table on stdout.

use super::sweep::{HANG_AFTER_ENV, STOP_AFTER_ENV, test_hook};
use super::{TuneArgs, emit};
use crate::error::Error;
use crate::run::{clamp_jobs, thread_pool};
use crate::sweep::DirLock;
use crate::tune::{self, Progress, RunOpts, Setup, TuneResult, page, result, search};
use std::path::Path;
use std::process::ExitCode;

/// The file with the wall time of the last `hcsim tune` in a directory:
/// kept apart from tune.json, whose bytes do not depend on the machine.
pub(super) const TIMING_FILE: &str = "timing.json";

pub(super) fn run(args: TuneArgs) -> Result<ExitCode, Error> {
    // Everything is checked before anything is simulated.
    let mut setup = Setup::load(&args.file)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("output").join(&setup.name));
    let placement = super::shard::placement(&args.shard)?;
    let shard = placement.shard;
    // A shard locks only its own part of the stage (`run_stage`), so that the
    // tasks of an array can share one --out; the whole tune locks all of it.
    let _lock = if shard.is_whole() {
        Some(DirLock::acquire(&out)?)
    } else {
        None
    };
    if let Some(imported) = &setup.imported {
        if !args.quiet {
            for w in &imported.warnings {
                super::say(&format!("warning: {}: {w}", imported.config.display()));
            }
        }
        // The imported model is the base every run and command names.
        let file = out.join(tune::setup::IMPORTED_MODEL);
        crate::output::write_atomic(&file, imported.json.as_bytes())?;
        setup.model_file = file;
    }
    // A shard meets only its own checkpoint (which `run_stage` refuses
    // without --resume); the other shards' may be in progress beside it.
    if !args.resume && shard.is_whole() {
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
    if let Some(source) = &placement.source {
        say(&format!("shard {shard} from {source}"));
    }
    let pool = thread_pool(jobs)?;
    super::interrupt::hint_resume_tune(&out);
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
        shard,
    };
    let ran = tune::run(&setup, &mut opts, &mut |l| say(l));
    let outcome = match ran.map_err(|e| super::shard::retry_hint(e, &placement))? {
        Progress::Finished(outcome) => outcome,
        Progress::Sharded { stage, file, runs } => {
            if !quiet {
                emit(&format!(
                    "shard {shard} of stage {stage}: {runs} runs simulated now, all of the shard's runs in {}\nwhen every shard's {stage}.shard-*-of-{}.jsonl is in {}, run again: with --shard K/N for the next stage, or --resume to finish here\n",
                    file.display(),
                    shard.n,
                    out.join(search::RUNS_DIR).display(),
                ))?;
            }
            return Ok(ExitCode::SUCCESS);
        }
    };
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
