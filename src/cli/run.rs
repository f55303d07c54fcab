//! `hcsim run MODEL`: replications of one model, their files, and a table.

use super::{Format, RunArgs, emit, export, print_warnings};
use crate::error::Error;
use crate::output::compare::{self, RunDir};
use crate::output::{self, summary::Summary, table, whatif};
use crate::run::{Replications, load_checked, thread_pool};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

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
    if args.out.is_none() && !args.force {
        refuse_to_replace_another_run(&out_dir, &args, base)?;
    }
    // Fail before the work, not after it; one writer at a time, as a sweep's.
    let fresh = !out_dir.exists();
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
    // One worker (one replication, or `--jobs 1`): the replications run on
    // this thread, without a pool. A worker thread of its own, with its own
    // allocator arena, cost a one-second run of 1,000 nodes a tenth of its time.
    let here = jobs.map_or(args.reps == 1, |j| j == 1);
    let pool = if here { None } else { Some(thread_pool(jobs)?) };
    let threads = pool
        .as_ref()
        .map_or(1, rayon::ThreadPool::current_num_threads);
    if let Some(total) =
        crate::run::cost::replications_note(&model, args.reps as u64, threads, args.max_events)
    {
        super::say(&format!("warning: {}: {total}", args.model.display()));
    }
    super::interrupt::say_what_is_kept(&out_dir, fresh);
    let run = |reps: &Replications| match &pool {
        Some(pool) => pool.install(|| reps.run()),
        None => reps.run_here(),
    };
    let counter = AtomicU64::new(0);
    let outcome = if let Some(bar) = progress_bar(&args, &model) {
        let reps = reps.progress(&counter);
        let total = model.duration.as_micros().saturating_mul(args.reps as u64);
        bar.set_length(total);
        std::thread::scope(|s| {
            let work = s.spawn(|| run(&reps));
            while !work.is_finished() {
                bar.set_position(counter.load(Ordering::Relaxed).min(total));
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            bar.finish_and_clear();
            work.join().expect("the replications do not panic")
        })
    } else {
        run(&reps)
    };
    let summary = Summary::new(&model, &args.model, base, &args.overrides.set, outcome.runs);
    let traces = args.trace.then_some(outcome.traces.as_slice());
    let events = args.events.then_some(outcome.events.as_slice());
    let printed = args.format == Format::Json && !args.quiet;
    let json = output::write_run(&out_dir, &summary, traces, events, printed)?;
    super::interrupt::run_written();
    // On stderr whatever the mode (--quiet, --format json): a script must not
    // report a saturated system's figures without a sign of it.
    for w in &summary.warnings {
        super::say(&format!("warning ({}): {}", w.code, w.message));
    }
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
        Format::Json => emit(
            json.as_deref()
                .expect("the summary's text was kept to print"),
        )?,
        Format::Table => {
            emit(&table::table(&summary))?;
            emit(&format!(
                "\nwrote {} ({})\n",
                out_dir.display(),
                listing(&out_dir)
            ))?;
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
    // The process ends with this command (`hcsim run` is one per process):
    // the summary and the model go back to the system with it, not freed
    // piece by piece (a thousand nodes' of each: 0.7 M instructions).
    std::mem::forget(summary);
    std::mem::forget(model);
    Ok(ExitCode::SUCCESS)
}

/// A bar of virtual time simulated (all replications together) with an
/// ETA, on a terminal only: never with `--quiet` or `--format json`, nor
/// when stdout or stderr is not a terminal; and only for a run that takes
/// more than a moment (over a second of CPU by the estimate).
fn progress_bar(args: &RunArgs, model: &crate::spec::Model) -> Option<ProgressBar> {
    let cpu_s = crate::run::cost::estimate(model).events * args.reps as f64
        / crate::run::cost::EVENTS_PER_SEC;
    let shown = !args.quiet
        && matches!(args.format, Format::Table)
        && std::io::stdout().is_terminal()
        && std::io::stderr().is_terminal()
        && cpu_s > 1.0;
    shown.then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{wide_bar}] {sim} of {len_s} simulated  ETA {eta}",
            )
            .expect("the progress template is valid")
            .with_key(
                "sim",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0}s", state.pos() as f64 / 1e6);
                },
            )
            .with_key(
                "len_s",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0}s", state.len().unwrap_or(0) as f64 / 1e6);
                },
            )
            .progress_chars("=> "),
        );
        bar
    })
}

/// The default directory of a run (`output/<name>[--<what changed>]`) does not
/// say how many replications or which seed: a rerun with other ones would
/// silently replace the run a compare was based on. Refused unless it is the
/// same run (same model file, seed and replications) or `--force`.
fn refuse_to_replace_another_run(out: &Path, args: &RunArgs, seed: u64) -> Result<(), Error> {
    let Ok(text) = std::fs::read(out.join("summary.json")) else {
        return Ok(());
    };
    let Ok(old) = serde_json::from_slice::<serde_json::Value>(&text) else {
        return Ok(());
    };
    let (old_seed, old_reps) = (old["seed"].as_u64(), old["reps"].as_u64());
    let old_file = old["file"].as_str().unwrap_or_default();
    let same = old_seed == Some(seed)
        && old_reps == Some(u64::from(args.reps))
        && Path::new(old_file) == args.model;
    if same {
        return Ok(());
    }
    let shown = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
    Err(Error::Usage(format!(
        "{} holds another run ({old_file}, --reps {} --seed {}), which a compare may be \
         based on; this one is {}, --reps {} --seed {seed}. Keep both with --label NAME (or \
         --out DIR), or replace it with --force",
        out.display(),
        shown(old_reps),
        shown(old_seed),
        args.model.display(),
        args.reps
    )))
}

/// The files of a run's directory, charts counted: `summary.json,
/// timeline.csv, …, 3 charts (.png/.svg), report.html`.
fn listing(dir: &Path) -> String {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let charts = std::fs::read_dir(dir.join("charts")).map_or(0, |rd| {
        rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".png"))
            .count()
    });
    let mut shown: Vec<String> = files
        .iter()
        .filter(|n| *n != "charts" && *n != "report.html")
        .cloned()
        .collect();
    if charts > 0 {
        shown.push(format!("{charts} chart(s) in charts/ as .png and .svg"));
    }
    if files.iter().any(|n| n == "report.html") {
        shown.push("report.html".into());
    }
    shown.join(", ")
}
