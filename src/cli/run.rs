//! `hcsim run MODEL`: replications of one model, their files, and a table.

use super::{Format, RunArgs, emit, export, print_warnings};
use crate::error::Error;
use crate::output::compare::{self, RunDir};
use crate::output::{self, summary::Summary, table, whatif};
use crate::run::{Replications, load_checked, thread_pool};
use std::path::Path;
use std::process::ExitCode;

pub(super) fn run(args: RunArgs) -> Result<ExitCode, Error> {
    let (model, warnings) = load_checked(&args.model, &args.overrides.set, args.max_events)?;
    crate::spec::limits::check_reps(&model, args.reps as u64).map_err(|reason| Error::Limit {
        path: args.model.clone(),
        reason,
    })?;
    print_warnings(&args.model, &warnings);
    let base = args.seed.unwrap_or(model.seed);
    // A what-if (`--set`) gets a directory of its own: it never overwrites its baseline.
    let out_dir = match &args.out {
        Some(out) => out.clone(),
        None => Path::new("output").join(
            whatif::run_dir_name(&model.name, &args.overrides.set, args.label.as_deref())
                .map_err(Error::Usage)?,
        ),
    };
    // Fail before the work, not after it; one writer at a time, as a sweep's.
    output::prepare_dir(&out_dir)?;
    let _lock = crate::sweep::DirLock::acquire(&out_dir)?;
    let reps = Replications::of(&model)
        .seed(base)
        .reps(args.reps as u64)
        .max_events(args.max_events)
        .trace(args.trace)
        .events(args.events)
        .per_replica(args.per_replica);
    let (jobs, note) = crate::run::clamp_jobs(args.jobs, args.reps as usize);
    if let Some(note) = note
        && !args.quiet
    {
        super::say(&format!("note: {note}"));
    }
    let outcome = thread_pool(jobs)?.install(|| reps.run());
    let summary = Summary::new(&model, &args.model, base, &args.overrides.set, outcome.runs);
    let traces = args.trace.then_some(outcome.traces.as_slice());
    let events = args.events.then_some(outcome.events.as_slice());
    output::write_run(&out_dir, &summary, traces, events)?;
    let dropped: u64 = outcome.events.iter().map(|l| l.dropped).sum();
    if dropped > 0 {
        super::say(&format!(
            "note: events.csv keeps at most {} lines per replication: {dropped} later line(s) \
             were not written (each capped replication ends with a line saying how many)",
            reps.events_cap()
        ));
    }
    if !args.no_charts {
        output::plot(&out_dir)?;
    }
    if args.export_markdown.is_some() || args.export_csv.is_some() {
        let run = RunDir {
            dir: out_dir.clone(),
            summary: summary.clone(),
        };
        let metrics = compare::compare(std::slice::from_ref(&run), false);
        export(
            &metrics,
            args.export_markdown.as_deref(),
            args.export_csv.as_deref(),
        )?;
    }
    match args.format {
        _ if args.quiet => {}
        Format::Json => emit(&summary.to_json())?,
        Format::Table => {
            emit(&table::table(&summary))?;
            emit(&format!("\nwrote {}\n", out_dir.display()))?;
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
