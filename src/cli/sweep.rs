//! `hcsim sweep SWEEP` (or `hcsim sweep MODEL --param PATH=LIST ...`): a
//! grid of model variants × replications in parallel, checkpointed,
//! optionally one shard of it; then its files, charts, report and a summary.

use super::{SweepArgs, emit};
use crate::error::Error;
use crate::output;
use crate::run::{clamp_jobs, thread_pool};
use crate::sweep::{DirLock, Overrides, Plan, PlanHeader, RUNS_FILE, Session, Shard, journal};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

/// Above this many simulated requests, `hcsim sweep` asks for `--yes`.
pub(super) const CONFIRM_ABOVE_REQUESTS: f64 = 1e10;
/// Test hook: checkpoint this many runs, then stop as if the process had been
/// killed (runs finishing after that are lost) and exit with an error.
pub(super) const STOP_AFTER_ENV: &str = "HCSIM_STOP_AFTER";
/// Test hook: after checkpointing this many runs, stay alive holding the
/// output directory's lock (for at most a minute), as a sweep in progress
/// that another process meets, or that is then killed.
pub(super) const HANG_AFTER_ENV: &str = "HCSIM_HANG_AFTER";

pub(super) fn run(args: SweepArgs) -> Result<ExitCode, Error> {
    let overrides = Overrides {
        set: args.overrides.set.clone(),
        reps: args.reps,
        seed: args.seed,
    };
    let plan = Plan::open(&args.sweep, &args.param, &overrides)?;
    let h = &plan.header;
    let placement = super::shard::placement(&args.shard)?;
    let shard = placement.shard;
    let out = args.out.clone().unwrap_or_else(|| {
        let base = Path::new("output").join(&h.name);
        if shard.is_whole() {
            base
        } else {
            base.join(format!("shard-{}-of-{}", shard.k, shard.n))
        }
    });
    let stop_after = test_hook(STOP_AFTER_ENV)?;
    let mine = shard.runs(h.runs());
    let requests = plan.estimated_requests(&mine);
    if !args.quiet {
        let mut line = format!(
            "sweep {}: {} points × {} reps = {} runs",
            h.name,
            h.points.len(),
            h.reps,
            h.runs()
        );
        if !shard.is_whole() {
            line += &format!("; shard {shard} runs {} of them", mine.len());
            if let Some(source) = &placement.source {
                line += &format!(" ({source})");
            }
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let jobs = clamp_jobs(args.jobs, mine.len()).0.unwrap_or(cores);
        line += &format!(
            ", up to about {} simulated requests, peak memory about {}B",
            human(requests),
            human(plan.estimated_bytes(&mine, jobs))
        );
        super::say(&line);
    }
    if requests > CONFIRM_ABOVE_REQUESTS && !args.yes {
        return Err(Error::Usage(format!(
            "sweep {} would simulate up to about {} requests in {} runs, above the {} that `hcsim sweep` runs without --yes; split it across machines with --shard K/N, or pass --yes",
            h.name,
            human(requests),
            mine.len(),
            human(CONFIRM_ABOVE_REQUESTS)
        )));
    }
    let lock = DirLock::acquire(&out)?;
    if args.resume && complete(&out, h, shard, mine.len()) {
        // Nothing left to do (a requeued job whose sweep had finished).
        if !args.quiet {
            super::say(&format!(
                "sweep {} is already complete in {}: nothing to resume",
                h.name,
                out.display()
            ));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut session = Session::open(&plan, &out, shard, args.resume, lock)
        .map_err(|e| super::shard::retry_hint(e, &placement))?;
    let (jobs, note) = clamp_jobs(args.jobs, session.todo().len());
    if let Some(note) = note
        && !args.quiet
    {
        super::say(&format!("note: {note}"));
    }
    let pool = thread_pool(jobs)?;
    super::interrupt::hint_resume(&out);
    if !args.quiet && args.resume {
        if session.resumed() == 0 {
            super::say(&format!(
                "nothing to resume in {}: running the whole sweep",
                out.display()
            ));
        } else {
            let retry = placement
                .retry
                .as_ref()
                .map_or(String::new(), |r| format!(" (a retried task: {r})"));
            super::say(&format!(
                "resuming{retry}: {} runs already done, {} to go",
                session.resumed(),
                session.todo().len()
            ));
        }
    }
    let progress = progress_bar(args.quiet, session.todo().len());
    let hang_after = test_hook(HANG_AFTER_ENV)?;
    let mut checkpointed = 0;
    let mut on_run = || {
        progress.inc(1);
        checkpointed += 1;
        if hang_after.is_some_and(|n| checkpointed >= n) {
            // Test hook: stay alive holding the lock until killed (or a minute passes).
            std::thread::sleep(std::time::Duration::from_secs(60));
            std::process::exit(3);
        }
    };
    let runs = session.run(&plan, &pool, &mut on_run, stop_after);
    progress.finish_and_clear();
    let runs = runs?;

    if shard.is_whole() {
        // The per-run part of the tables runs on the same number of threads.
        pool.install(|| output::sweep::write_outputs(&out, h, &runs))?;
        output::remove_run_files(&out)?;
        // Held until the charts are drawn.
        let _lock = session.finish();
        if !args.no_charts {
            output::plot(&out)?;
        }
        if !args.quiet {
            emit(&output::sweep_summary::sweep_summary(&out)?)?;
            emit(&format!(
                "wrote {} (runs.csv, points.csv, results.json: {} runs)\n",
                out.display(),
                runs.len()
            ))?;
        }
    } else {
        let path = out.join(RUNS_FILE);
        journal::write_shard_file(&path, h, shard, &runs)?;
        let _lock = session.finish();
        if !args.quiet {
            emit(&format!(
                "wrote {} ({} runs of shard {shard}); combine the shards with `hcsim merge DIR... --out DIR`\n",
                path.display(),
                runs.len()
            ))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Did a sweep of this plan already finish in `out`? No checkpoint is left
/// and the outputs it ends with are there, of the same sweep (and shard).
fn complete(out: &Path, h: &PlanHeader, shard: Shard, mine: usize) -> bool {
    if out.join(".checkpoint").join(RUNS_FILE).exists() {
        return false;
    }
    if shard.is_whole() {
        output::sweep::SweepResults::read(&out.join("results.json"))
            .is_ok_and(|r| r.fingerprint == h.fingerprint)
    } else {
        journal::read_journal(&out.join(RUNS_FILE)).is_ok_and(|j| {
            j.head.header.fingerprint == h.fingerprint
                && j.head.shard == shard
                && j.done.len() == mine
        })
    }
}

/// A test hook's number of runs, if its variable is set.
pub(super) fn test_hook(var: &str) -> Result<Option<usize>, Error> {
    match std::env::var(var) {
        Ok(v) => Ok(Some(v.trim().parse::<usize>().map_err(|_| {
            Error::Usage(format!("{var} must be a number of runs, found \"{v}\""))
        })?)),
        Err(_) => Ok(None),
    }
}

/// A progress bar with an ETA on a terminal; hidden otherwise.
fn progress_bar(quiet: bool, runs: usize) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(runs as u64);
    pb.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{wide_bar}] {pos}/{len} runs  {rate} runs/s  ETA {eta}",
        )
        .expect("the progress template is valid")
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}", state.per_sec());
            },
        )
        .progress_chars("=> "),
    );
    pb
}

/// `12.3k`, `4.5M`, `2.1G`: an order of magnitude for people.
fn human(x: f64) -> String {
    let (v, unit) = if x >= 1e12 {
        (x / 1e12, "T")
    } else if x >= 1e9 {
        (x / 1e9, "G")
    } else if x >= 1e6 {
        (x / 1e6, "M")
    } else if x >= 1e3 {
        (x / 1e3, "k")
    } else {
        return format!("{x:.0}");
    };
    format!("{v:.1}{unit}")
}
