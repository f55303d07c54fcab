//! `hcsim sweep SWEEP` (or `hcsim sweep MODEL --param PATH=LIST ...`): a
//! grid of model variants × replications in parallel, checkpointed,
//! optionally one shard of it; then its files, charts, report and a summary.

use super::{SweepArgs, emit};
use crate::error::Error;
use crate::output;
use crate::run::thread_pool;
use crate::sweep::{Overrides, Plan, RUNS_FILE, RunRecord, Session, Shard, journal};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

/// Above this many simulated requests, `hcsim sweep` asks for `--yes`.
pub const CONFIRM_ABOVE_REQUESTS: f64 = 1e10;
/// Test hook: checkpoint this many runs, then stop as if the process had been
/// killed (runs finishing after that are lost) and exit with an error.
pub const STOP_AFTER_ENV: &str = "HCSIM_STOP_AFTER";

pub fn run(args: SweepArgs) -> Result<ExitCode, Error> {
    let overrides = Overrides {
        set: args.set.clone(),
        reps: args.reps,
        seed: args.seed,
    };
    let plan = Plan::open(&args.sweep, &args.param, &overrides)?;
    let h = &plan.header;
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let out = args.out.clone().unwrap_or_else(|| {
        let base = Path::new("output").join(&h.name);
        if shard.is_whole() {
            base
        } else {
            base.join(format!("shard-{}-of-{}", shard.k, shard.n))
        }
    });
    let stop_after = match std::env::var(STOP_AFTER_ENV) {
        Ok(v) => Some(v.trim().parse::<usize>().map_err(|_| {
            Error::Usage(format!(
                "{STOP_AFTER_ENV} must be a number of runs, found \"{v}\""
            ))
        })?),
        Err(_) => None,
    };
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
        }
        line += &format!(", up to about {} simulated requests", human(requests));
        eprintln!("{line}");
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
    let pool = thread_pool(args.jobs)?;

    let mut session = Session::open(&plan, &out, shard, args.resume)?;
    super::interrupt::hint_resume(&out);
    if !args.quiet && args.resume {
        if session.resumed() == 0 {
            eprintln!(
                "nothing to resume in {}: running the whole sweep",
                out.display()
            );
        } else {
            eprintln!(
                "resuming: {} runs already done, {} to go",
                session.resumed(),
                session.todo().len()
            );
        }
    }
    let progress = progress_bar(args.quiet, session.todo().len());
    let done = session.run(&plan, &pool, &mut || progress.inc(1), stop_after);
    progress.finish_and_clear();
    let done = done?;

    if shard.is_whole() {
        let records: Vec<RunRecord> = done.into_iter().map(|d| d.rec).collect();
        // The per-run part of the tables runs on the same number of threads.
        pool.install(|| output::sweep::write_outputs(&out, h, &records))?;
        session.finish();
        if !args.no_charts {
            output::plot(&out)?;
        }
        if !args.quiet {
            emit(&output::sweep_summary::sweep_summary(&out)?);
            emit(&format!(
                "wrote {} (runs.csv, points.csv, results.json: {} runs)\n",
                out.display(),
                records.len()
            ));
        }
    } else {
        let path = out.join(RUNS_FILE);
        output::write_atomic(&path, journal::shard_file(h, shard, &done).as_bytes())?;
        session.finish();
        if !args.quiet {
            emit(&format!(
                "wrote {} ({} runs of shard {shard}); combine the shards with `hcsim merge DIR... --out DIR`\n",
                path.display(),
                done.len()
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
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
