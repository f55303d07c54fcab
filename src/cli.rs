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

/// The seed of replication `rep`: the base seed itself for the first, so that
/// `--seed S --reps 1` reproduces any replication whose seed is S.
pub fn rep_seed(base: u64, rep: u64) -> u64 {
    if rep == 0 {
        base
    } else {
        derive_seed(base, &[rep])
    }
}

/// Loads a model document and applies `--set` overrides.
pub fn load_with_overrides(path: &Path, sets: &[String]) -> Result<Scenario, Error> {
    let mut doc = scenario::read_document(path)?;
    for arg in sets {
        let (key, value) = arg.split_once('=').ok_or_else(|| Error::Set {
            arg: arg.clone(),
            reason: "expected PATH=VALUE, e.g. clients.rate_per_s=10000".into(),
        })?;
        scenario::set_path(
            &mut doc,
            key.trim(),
            scenario::parse_set_value(value.trim()),
        )
        .map_err(|reason| Error::Set {
            arg: arg.clone(),
            reason,
        })?;
    }
    Scenario::from_document(&doc, path)
}

/// Runs the command; `Err` is a user error (exit code 2).
pub fn run(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Run(args) => cmd_run(args),
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

fn cmd_run(args: RunArgs) -> Result<ExitCode, Error> {
    let sc = load_with_overrides(&args.model, &args.set)?;
    let base = args.seed.unwrap_or(sc.seed);
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("output").join(&sc.name));
    let pool = thread_pool(args.jobs)?;
    let reps = args.reps as u64;
    let (runs, traces): (Vec<RunSummary>, Vec<Vec<TraceLine>>) = pool.install(|| {
        (0..reps)
            .into_par_iter()
            .map(|r| {
                let seed = rep_seed(base, r);
                if args.trace {
                    let mut lines = Vec::new();
                    let mut sink = |l: &TraceLine| lines.push(l.clone());
                    let s = model::run_traced(&sc, seed, &mut sink);
                    (s, lines)
                } else {
                    (model::run(&sc, seed), Vec::new())
                }
            })
            .unzip()
    });
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
        Format::Json => print!("{json}"),
        Format::Table => {
            print!("{}", report::table(&report));
            println!("\nwrote {}", out_dir.display());
        }
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
        print!("{}", crate::reproduce::markdown(&rows));
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
        print!("{}", report::align(&table));
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
