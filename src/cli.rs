//! The command line: `Cli` (clap derive) and what each subcommand does.

use crate::engine::rng::derive_seed;
use crate::error::Error;
use crate::metrics::RunSummary;
use crate::model::{self, TraceLine};
use crate::report::{self, RunReport};
use crate::scenario::{self, Scenario};
use clap::{Args, Parser, Subcommand, ValueEnum};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Simulate gateway health-check policies in virtual time.
#[derive(Parser, Debug)]
#[command(name = "hcsim", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a model (optionally several seeded replications) and report its metrics.
    Run(RunArgs),
    /// Validate a model (or a sweep) and print it with every default filled
    /// in: what `run` will simulate. Exit code 0 if it is valid (warnings
    /// allowed), 2 if not.
    Check(CheckArgs),
    /// Print the JSON Schema of model or sweep files, for editors to validate
    /// and complete them.
    Schema(SchemaArgs),
    /// Run a model over a grid of parameters (points × replications) in parallel.
    Sweep(SweepArgs),
    /// Combine the outputs of `hcsim sweep --shard K/N` into those of the whole sweep.
    Merge(MergeArgs),
    /// Redraw the charts and report.html of a finished run from its output files.
    Plot(PlotArgs),
    /// Run the seed experiments' models and compare hcsim with the figures
    /// measured on real software.
    Reproduce(ReproduceArgs),
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// An output directory written by `hcsim run` (summary.json) or
    /// `hcsim sweep` (results.json).
    pub dir: PathBuf,
}

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Directory holding the shipped models.
    #[arg(long, default_value = "models")]
    pub models: PathBuf,
    /// Print a Markdown table (for docs/seed-comparison.md).
    #[arg(long)]
    pub markdown: bool,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The model file (JSON).
    pub file: PathBuf,
    /// Override a field first, as `hcsim run --set` does. Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
}

#[derive(Args, Debug)]
pub struct SchemaArgs {
    /// Which kind of file.
    #[arg(value_enum, default_value_t = SchemaKind::Model)]
    pub kind: SchemaKind,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum SchemaKind {
    /// A model file (`models/*.json`).
    Model,
    /// A sweep file (`sweeps/*.json`).
    Sweep,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The model file (JSON), e.g. models/e2-p02-flaky-2pct.json.
    pub model: PathBuf,
    /// Override a field of the model, e.g. `--set clients.rate_per_s=10000`
    /// or `--set policy.fail_timeout=30s`. Repeatable. VALUE is JSON, or a string.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Seed of the first replication (default: the model's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Number of replications; each gets its own seed and clock phase.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub reps: u32,
    /// Output directory (default: output/<model name>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also write attempts.csv: every upstream attempt (an access log).
    #[arg(long)]
    pub trace: bool,
    /// Replications run in parallel on this many threads (default: all cores).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Stop each replication after N engine events (then exit code 2). What
    /// was simulated until then is still written; each run's `duration_s`
    /// says how far it got. Also lifts the refusal of very large models.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_events: Option<u64>,
    /// Skip the charts and report.html.
    #[arg(long)]
    pub no_charts: bool,
}

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The sweep file (JSON), e.g. sweeps/max-fails-grid-crash.json.
    pub sweep: PathBuf,
    /// Runs in parallel on this many threads (default: all cores). Outputs do not depend on it.
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Output directory (default: output/<sweep name>/, and
    /// output/<sweep name>/shard-K-of-N/ with --shard).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print nothing but errors: no size estimate, progress bar or summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Finish an interrupted sweep: run only the runs its checkpoint lacks.
    #[arg(long)]
    pub resume: bool,
    /// Run only shard K of N (the runs whose index modulo N is K-1), for `hcsim merge`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<crate::sweep::Shard>,
    /// Run even above 10^10 estimated simulated requests.
    #[arg(long)]
    pub yes: bool,
    /// Skip the charts and report.html.
    #[arg(long)]
    pub no_charts: bool,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Output directories of `hcsim sweep --shard K/N`, one per shard, in any order.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Where to write runs.csv, points.csv and results.json.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Skip the charts and report.html.
    #[arg(long)]
    pub no_charts: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns for people.
    Table,
    /// One JSON document (the same as summary.json).
    Json,
}

/// Writes to stdout. A closed pipe (`hcsim ... | head`) quietly ends the
/// output instead of panicking; other write errors are reported on stderr.
pub(crate) fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("error: cannot write to stdout: {e}");
    }
}

/// The seed of replication `rep`: the base seed itself for the first, so that
/// `--seed S --reps 1` reproduces any replication whose seed is S.
pub fn rep_seed(base: u64, rep: u64) -> u64 {
    if rep == 0 {
        base
    } else {
        derive_seed(base, &[rep])
    }
}

/// Loads a model document and applies `--set` overrides. An error in a
/// field that a `--set` changed says so.
pub fn load_with_overrides(path: &Path, sets: &[String]) -> Result<Scenario, Error> {
    let mut doc = scenario::read_document(path)?;
    let mut set_fields = vec![];
    for arg in sets {
        let err = |reason: String| Error::Set {
            arg: arg.clone(),
            reason,
        };
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| err("expected PATH=VALUE, e.g. clients.rate_per_s=10000".into()))?;
        let (key, value) = (key.trim(), value.trim());
        // Text that starts like JSON must be JSON: a missing brace should not
        // turn an object into a string.
        if value.starts_with(['{', '[', '"'])
            && let Err(e) = serde_json::from_str::<serde_json::Value>(value)
        {
            return Err(err(format!("VALUE is not valid JSON: {e}")));
        }
        scenario::set_path(&mut doc, key, scenario::parse_set_value(value)).map_err(err)?;
        if let Some(field) = scenario::canonical_path(&doc, key) {
            set_fields.push((field, arg));
        }
    }
    Scenario::from_document(&doc, path).map_err(|e| {
        set_fields.iter().rev().fold(e, |e, (field, arg)| {
            e.note_under(field, &format!("set by --set {arg}"))
        })
    })
}

/// Prints warnings to stderr as `warning: file: field: message`.
pub fn print_warnings(path: &Path, warnings: &[(String, String)]) {
    for (field, msg) in warnings {
        if field.is_empty() {
            eprintln!("warning: {}: {msg}", path.display());
        } else {
            eprintln!("warning: {}: {field}: {msg}", path.display());
        }
    }
}

/// Runs the command; `Err` is a user error (exit code 2).
pub fn run(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Run(args) => cmd_run(args),
        Command::Check(args) => cmd_check(args),
        Command::Schema(args) => cmd_schema(args),
        Command::Sweep(args) => crate::sweep::cmd_sweep(args),
        Command::Merge(args) => crate::sweep::cmd_merge(args),
        Command::Plot(args) => cmd_plot(&args.dir).map(|_| ExitCode::SUCCESS),
        Command::Reproduce(args) => cmd_reproduce(args),
    }
}

pub(crate) fn thread_pool(jobs: Option<usize>) -> Result<rayon::ThreadPool, Error> {
    let mut b = rayon::ThreadPoolBuilder::new();
    if let Some(j) = jobs {
        if j == 0 {
            return Err(Error::Usage("--jobs must be at least 1".into()));
        }
        b = b.num_threads(j);
    }
    b.build()
        .map_err(|e| Error::Usage(format!("cannot start worker threads: {e}")))
}

/// Validates a model and checks what it would cost; prints the warnings.
fn load_checked(path: &Path, sets: &[String], max_events: Option<u64>) -> Result<Scenario, Error> {
    let sc = load_with_overrides(path, sets)?;
    let mut warnings = sc.warnings();
    let cost = crate::limits::preflight(&sc, max_events).map_err(|reason| Error::Limit {
        path: path.to_path_buf(),
        reason,
    })?;
    warnings.extend(cost);
    print_warnings(path, &warnings);
    Ok(sc)
}

fn cmd_check(args: CheckArgs) -> Result<ExitCode, Error> {
    let doc = scenario::read_document(&args.file)?;
    match crate::check::file_kind(&doc) {
        crate::check::FileKind::Model => {
            let sc = load_checked(&args.file, &args.set, None)?;
            let json = serde_json::to_string_pretty(&crate::check::effective_spec(&sc))
                .map_err(|e| Error::Usage(e.to_string()))?;
            emit(&format!("{json}\n"));
        }
        crate::check::FileKind::Sweep => {
            if !args.set.is_empty() {
                return Err(Error::Usage(
                    "--set applies to models; a sweep sets fields with its own `set`".into(),
                ));
            }
            let (plan, warnings) = crate::check::sweep(&args.file)?;
            print_warnings(&args.file, &warnings);
            let json =
                serde_json::to_string_pretty(&plan).map_err(|e| Error::Usage(e.to_string()))?;
            emit(&format!("{json}\n"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_schema(args: SchemaArgs) -> Result<ExitCode, Error> {
    let schema = match args.kind {
        SchemaKind::Model => crate::schema::model(),
        SchemaKind::Sweep => crate::schema::sweep(),
    };
    let json = serde_json::to_string_pretty(&schema).map_err(|e| Error::Usage(e.to_string()))?;
    emit(&format!("{json}\n"));
    Ok(ExitCode::SUCCESS)
}

fn cmd_run(args: RunArgs) -> Result<ExitCode, Error> {
    let sc = load_checked(&args.model, &args.set, args.max_events)?;
    let base = args.seed.unwrap_or(sc.seed);
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("output").join(&sc.name));
    // Fail before the work, not after it.
    report::prepare_dir(&out_dir)?;
    let pool = thread_pool(args.jobs)?;
    let reps = args.reps as u64;
    let budget = args.max_events.unwrap_or(u64::MAX);
    let results: Vec<(RunSummary, Vec<TraceLine>, Option<model::Truncated>)> = pool.install(|| {
        (0..reps)
            .into_par_iter()
            .map(|r| {
                let seed = rep_seed(base, r);
                if args.trace {
                    let mut lines = Vec::new();
                    let mut sink = |l: &TraceLine| lines.push(l.clone());
                    let (s, cut) = model::run_budgeted(&sc, seed, budget, Some(&mut sink));
                    (s, lines, cut)
                } else {
                    let (s, cut) = model::run_budgeted(&sc, seed, budget, None);
                    (s, Vec::new(), cut)
                }
            })
            .collect()
    });
    let mut runs = Vec::with_capacity(results.len());
    let mut traces = Vec::with_capacity(results.len());
    let mut cuts = vec![];
    for (s, t, cut) in results {
        if let Some(c) = cut {
            cuts.push((s.seed, c));
        }
        runs.push(s);
        traces.push(t);
    }
    let report = RunReport::new(&sc, &args.model, base, &args.set, &runs);
    let json =
        serde_json::to_string_pretty(&report).map_err(|e| Error::Usage(e.to_string()))? + "\n";
    let csv_err = |path: PathBuf| {
        move |e: csv::Error| Error::Write {
            path: path.clone(),
            source: std::io::Error::other(e.to_string()),
        }
    };
    report::write_atomic(&out_dir.join("summary.json"), json.as_bytes())?;
    let p = out_dir.join("timeline.csv");
    report::write_atomic(
        &p,
        &report::timeline_csv(&runs).map_err(csv_err(p.clone()))?,
    )?;
    let p = out_dir.join("ejections.csv");
    report::write_atomic(
        &p,
        &report::ejections_csv(&runs).map_err(csv_err(p.clone()))?,
    )?;
    if args.trace {
        let p = out_dir.join("attempts.csv");
        let bytes = trace_csv(&runs, &traces).map_err(csv_err(p.clone()))?;
        report::write_atomic(&p, &bytes)?;
    }
    if !args.no_charts {
        cmd_plot(&out_dir)?;
    }
    match args.format {
        Format::Json => emit(&json),
        Format::Table => {
            emit(&report::table(&report));
            emit(&format!("\nwrote {}\n", out_dir.display()));
        }
    }
    if let Some((seed, cut)) = cuts.first() {
        return Err(Error::Limit {
            path: args.model.clone(),
            reason: format!(
                "{} of {reps} replication(s) stopped at --max-events {} before the end of the \
                 run (seed {seed} at {:.3}s of {}); {} holds what they simulated until then \
                 (each run's duration_s says how far it got)",
                cuts.len(),
                cut.max_events,
                cut.at.as_secs_f64(),
                sc.duration,
                out_dir.display()
            ),
        });
    }
    Ok(ExitCode::SUCCESS)
}

/// Draws the charts of an output directory (a run's or a sweep's) and its report.html.
pub fn cmd_plot(dir: &Path) -> Result<(), Error> {
    if dir.join("results.json").exists() {
        let drawn = crate::charts::draw_sweep(dir)?;
        crate::html::sweep_report(dir, &drawn)
    } else {
        let drawn = crate::charts::draw_run(dir)?;
        crate::html::run_report(dir, &drawn)
    }
}

fn cmd_reproduce(args: ReproduceArgs) -> Result<ExitCode, Error> {
    let rows = crate::reproduce::rows(&args.models)?;
    if args.markdown {
        emit(&crate::reproduce::markdown(&rows));
    } else {
        let mut table = vec![vec![
            "exp".to_string(),
            "case".into(),
            "metric".into(),
            "seed".into(),
            "hcsim".into(),
            "verdict".into(),
        ]];
        for r in &rows {
            table.push(vec![
                r.experiment.to_string(),
                r.case.clone(),
                r.metric.clone(),
                r.seed.clone(),
                r.hcsim.clone(),
                r.verdict.clone(),
            ]);
        }
        emit(&report::align(&table));
    }
    let outside = rows.iter().filter(|r| r.is_outside()).count();
    if outside > 0 {
        eprintln!("{outside} figure(s) outside their acceptance band");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn trace_csv(runs: &[RunSummary], traces: &[Vec<TraceLine>]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(vec![]);
    w.write_record([
        "rep", "seed", "t_s", "request", "worker", "node", "result", "charge",
    ])?;
    for (rep, (run, lines)) in runs.iter().zip(traces).enumerate() {
        for l in lines {
            w.write_record([
                rep.to_string(),
                run.seed.to_string(),
                format!("{:.6}", l.t_s),
                l.request.to_string(),
                l.scope.to_string(),
                l.node.clone(),
                l.result.clone(),
                l.charge.to_string(),
            ])?;
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn first_replication_uses_the_base_seed() {
        assert_eq!(rep_seed(42, 0), 42);
        assert_ne!(rep_seed(42, 1), 42);
        assert_ne!(rep_seed(42, 1), rep_seed(42, 2));
    }
}
