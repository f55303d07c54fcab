//! `hcsim run MODEL`: replications of one model, their files, and a table.

use super::{Format, RunArgs, emit, print_warnings};
use crate::error::Error;
use crate::output::{self, summary::Summary, table};
use crate::run::{Replications, load_checked, thread_pool};
use std::path::Path;
use std::process::ExitCode;

pub fn run(args: RunArgs) -> Result<ExitCode, Error> {
    let (model, warnings) = load_checked(&args.model, &args.set, args.max_events)?;
    print_warnings(&args.model, &warnings);
    let base = args.seed.unwrap_or(model.seed);
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("output").join(&model.name));
    // Fail before the work, not after it.
    output::prepare_dir(&out_dir)?;
    let reps = Replications::of(&model)
        .seed(base)
        .reps(args.reps as u64)
        .max_events(args.max_events)
        .trace(args.trace);
    let outcome = thread_pool(args.jobs)?.install(|| reps.run());
    let summary = Summary::new(&model, &args.model, base, &args.set, outcome.runs);
    let traces = args.trace.then_some(outcome.traces.as_slice());
    output::write_run(&out_dir, &summary, traces)?;
    if !args.no_charts {
        output::plot(&out_dir)?;
    }
    match args.format {
        Format::Json => emit(&summary.to_json()),
        Format::Table => {
            emit(&table::table(&summary));
            emit(&format!("\nwrote {}\n", out_dir.display()));
        }
    }
    if let Some((seed, cut)) = outcome.cut.first() {
        return Err(Error::Limit {
            path: args.model.clone(),
            reason: format!(
                "{} of {} replication(s) stopped at --max-events {} before the end of the \
                 run (seed {seed} at {:.3}s of {}); {} holds what they simulated until then \
                 (each run's duration_s says how far it got)",
                outcome.cut.len(),
                args.reps,
                cut.max_events,
                cut.at.as_secs_f64(),
                model.duration,
                out_dir.display()
            ),
        });
    }
    Ok(ExitCode::SUCCESS)
}
