//! The command line's arguments (clap derive): `///` comments are the help
//! text. Execution lives in one file per subcommand; domain code never sees
//! these types.

use crate::spec::Override;
use crate::sweep::shard::ShardArg;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

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
    /// Combine the outputs of `hcsim sweep --shard K/N` into those of the
    /// whole sweep. With shards missing or unfinished, write nothing, list
    /// them with the command that reruns each, and exit with code 2.
    Merge(MergeArgs),
    /// Recommend health-check settings: run a tune file's candidates through
    /// its scenarios, keep those meeting its constraints, and write the Pareto
    /// set, one recommendation verified on fresh seeds, a frontier chart and
    /// the settings as config.
    Tune(TuneArgs),
    /// Redraw the charts and report.html of a finished run from its output files.
    Plot(PlotArgs),
    /// Run the seed experiments' models and compare hcsim with the figures
    /// measured on real software.
    Reproduce(ReproduceArgs),
    /// Set finished runs side by side: each metric per run, the difference to
    /// the first run and whether it is beyond the replication noise; writes
    /// compare.html with the timelines overlaid.
    Compare(CompareArgs),
    /// Read a gateway config (nginx, HAProxy, Envoy, Istio, Kubernetes) and
    /// print the model it makes, every default written out; settings hcsim
    /// does not model are warnings naming their file and line.
    Import(ImportArgs),
    /// Write the gateway part of a model as nginx, HAProxy, Envoy or Istio config.
    Export(ExportArgs),
    /// Replay an incident from the gateway's access log: infer the workload
    /// and what each backend did, check the replay against the log, and
    /// show what other settings (`--set`) would have given the clients.
    Replay(ReplayArgs),
    /// Print a shell completion script, e.g. `hcsim completions bash > ~/.local/share/bash-completion/completions/hcsim`.
    Completions(CompletionsArgs),
    /// Print the manual page (roff), e.g. `hcsim man | man -l -`; `hcsim man
    /// run` prints hcsim-run(1), `--dir DIR` writes every page into DIR.
    Man(ManArgs),
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// The subcommand whose page to print (hcsim-SUBCOMMAND(1)); default
    /// the main page, hcsim(1).
    pub subcommand: Option<String>,
    /// Write hcsim.1 and every hcsim-SUBCOMMAND.1 into this directory
    /// instead (e.g. ~/.local/share/man/man1).
    #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
    pub dir: Option<std::path::PathBuf>,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The config file: nginx.conf, haproxy.cfg, an Envoy bootstrap or
    /// cluster (YAML/JSON), Istio DestinationRules, Kubernetes workloads.
    pub file: PathBuf,
    /// The upstream / backend / cluster / DestinationRule host / workload
    /// to import, when the file has several.
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,
    /// The format (default: detected from the content).
    #[arg(long, value_enum)]
    pub format: Option<ConfigFormat>,
    /// Write the model to FILE instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Requests per second of the imported model's open-loop clients (default 100).
    #[arg(long, value_name = "N")]
    pub rps: Option<f64>,
    /// Simulated time of the imported model, e.g. 120s (default 60s).
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// A fault, KIND:NODE@AT[+FOR] with KIND crash, hang, stop or partition,
    /// e.g. `--fault crash:10.0.0.1:8080@10s+30s`, or a Kubernetes
    /// workload's `rolling_update@AT`. Repeatable.
    #[arg(long = "fault", value_name = "FAULT")]
    pub faults: Vec<String>,
    /// Nodes to create when the config does not list them (Istio, an Envoy
    /// cluster fed by EDS, a DaemonSet). Default 3.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub nodes: Option<u32>,
    #[command(flatten)]
    pub overrides: SetArgs,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ConfigFormat {
    Nginx,
    Haproxy,
    Envoy,
    Istio,
    Kubernetes,
    Kong,
    Linkerd,
    /// A Caddyfile or Caddy's JSON config.
    Caddy,
    /// Traefik dynamic configuration (YAML, TOML or the CRDs).
    Traefik,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The model file (JSON).
    pub model: PathBuf,
    /// The config format to write.
    #[arg(long, value_enum)]
    pub to: ExportFormat,
    /// A whole config file (nginx: worker_processes, events and http; HAProxy:
    /// a frontend too) instead of the snippet.
    #[arg(long)]
    pub full: bool,
    #[command(flatten)]
    pub overrides: SetArgs,
    /// Write to FILE instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Where the gateway listens (nginx `listen`, the HAProxy frontend's
    /// `bind`), e.g. `127.0.0.1:8080` (the default).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// A node's address, `NODE=HOST:PORT`, instead of its default (its name
    /// if that is an address, else 127.0.0.1:8001, :8002… in model order).
    /// Repeatable.
    #[arg(long = "address", value_name = "NODE=HOST:PORT")]
    pub address: Vec<String>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// An `upstream` and a `server` proxying to it (http context).
    Nginx,
    /// A `backend` (and `global` for spread-checks).
    Haproxy,
    /// A cluster (YAML).
    Envoy,
    /// A DestinationRule (YAML).
    Istio,
    /// Kong's declarative configuration (kong.yml): a Service, its upstream
    /// and targets (a Kong gateway only).
    Kong,
    /// A Caddyfile site with its `reverse_proxy` (`--full`: with global options).
    Caddy,
    /// Traefik dynamic configuration for the file provider (YAML).
    Traefik,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Output directories of `hcsim run` (each holds summary.json); the first is the baseline.
    #[arg(required = true, num_args = 2.., value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
    pub format: CompareFormat,
    /// Where to write compare.html and its charts (default: beside the
    /// first run, `<first>--vs--<second>/`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Skip compare.html and its charts.
    #[arg(long)]
    pub no_charts: bool,
    /// Show every metric, also those that are 0 in every run (by default
    /// a row is shown when some run has it, or it is one of the metrics a
    /// what-if is read for).
    #[arg(long)]
    pub all: bool,
    /// Also write the comparison as a Markdown table to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Also write the comparison as CSV (one row per metric and run) to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// Aligned columns for people.
    Table,
    /// One JSON document.
    Json,
    /// A Markdown table.
    Markdown,
    /// CSV, one row per metric and run.
    Csv,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// An output directory written by `hcsim run` (summary.json) or
    /// `hcsim sweep` (results.json).
    pub dir: PathBuf,
}

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Run the experiments' models from this directory (default: the
    /// copies of models/e*.json built into hcsim, so it runs anywhere).
    #[arg(long, value_name = "DIR")]
    pub models: Option<PathBuf>,
    /// Print a Markdown table (for docs/seed-comparison.md).
    #[arg(long)]
    pub markdown: bool,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The model file (JSON).
    pub file: PathBuf,
    #[command(flatten)]
    pub overrides: SetArgs,
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
    /// A tune file (`sweeps/tune-*.json`).
    Tune,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The model file (JSON), e.g. models/e2-p02-flaky-2pct.json.
    pub model: PathBuf,
    #[command(flatten)]
    pub overrides: SetArgs,
    /// Seed of the first replication (default: the model's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Number of replications; each gets its own seed and clock phase.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub reps: u32,
    /// Output directory (default: output/<model name>/; with --set,
    /// output/<model name>--<what changed>/, e.g. output/e2--rate_per_s=10000/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Name the output directory output/NAME/ instead (a what-if's label).
    #[arg(long, value_name = "NAME", conflicts_with = "out")]
    pub label: Option<String>,
    /// Replace a run of other replications (--reps, --seed, model file)
    /// in the default output directory (refused without it: a compare may
    /// be based on that run).
    #[arg(long)]
    pub force: bool,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Print nothing on stdout (errors and warnings still go to stderr).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Also write the run's metrics as a Markdown table to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Also write the run's metrics as CSV (one row per metric) to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Also write attempts.csv: every upstream attempt (an access log).
    #[arg(long)]
    pub trace: bool,
    /// Also write events.csv: the lines the real gateway would log (nginx's
    /// error log, HAProxy's server state changes, Envoy's outlier events),
    /// at most 1,000,000 over all replications.
    #[arg(long)]
    pub events: bool,
    /// With gateway.replicas: also each replica's own node table (stdout,
    /// summary.json `per_replica`, replicas.csv).
    #[arg(long)]
    pub per_replica: bool,
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
    /// The sweep file (JSON), e.g. sweeps/max-fails-grid-crash.json; or a
    /// model file, e.g. models/crash-10s-of-3.json, with the grid in --param.
    pub sweep: PathBuf,
    /// With a model file: one axis of the grid, a list or a range, e.g.
    /// `--param policy.max_fails=1,2,3` or `--param policy.fail_timeout=1s..10s:1s`
    /// (FROM..TO[:STEP], TO included; STEP defaults to 1 for integers).
    /// Repeatable: the grid is the product of the axes, in the order given,
    /// the last varying fastest.
    #[arg(long = "param", value_name = "PATH=LIST")]
    pub param: Vec<String>,
    #[command(flatten)]
    pub overrides: SetArgs,
    /// Replications per point (default: the sweep file's `reps`, or 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub reps: Option<u32>,
    /// Base seed (default: the sweep file's `seed`, or the model's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Runs in parallel on this many threads (default: all cores). Outputs do not depend on it.
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Output directory (default: output/<sweep name>/, and
    /// output/<sweep name>/shard-K-of-N/ with --shard). A --param grid's name
    /// is made of the model's name and the arguments, e.g.
    /// crash-10s-of-3-sweep-max_fails=1,2,3-fail_timeout=1s,5s.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print nothing but errors: no size estimate, progress bar or summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Finish an interrupted sweep: run only the runs its checkpoint lacks.
    #[arg(long)]
    pub resume: bool,
    #[command(flatten)]
    pub shard: ShardArgs,
    /// Run even above 10^10 estimated simulated requests.
    #[arg(long)]
    pub yes: bool,
    /// Skip the charts and report.html.
    #[arg(long)]
    pub no_charts: bool,
}

#[derive(Args, Debug)]
pub struct TuneArgs {
    /// The tune file (JSON), e.g. sweeps/tune-nginx-max-fails.json.
    pub file: PathBuf,
    /// Runs in parallel on this many threads (default: all cores). Outputs do not depend on it.
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Output directory (default: output/<tune name>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Finish an interrupted tune: keep the stages and runs it finished.
    #[arg(long)]
    pub resume: bool,
    #[command(flatten)]
    pub shard: ShardArgs,
}

/// `--shard K/N` or `--shard auto`, `--shard-base`, `--shards` (sweep and tune).
#[derive(Args, Debug, Clone, Copy)]
pub struct ShardArgs {
    /// Run only shard K of N: the runs whose index modulo N is K-1 (a tune:
    /// shard K of its first unfinished stage, then stop), for `hcsim merge`
    /// (a tune: for the next run with --shard or --resume). `auto` reads K and
    /// N from the array task's environment: Slurm (SLURM_ARRAY_TASK_ID,
    /// _MIN, _STEP, _COUNT), AWS Batch (AWS_BATCH_JOB_ARRAY_INDEX, _SIZE),
    /// Google Cloud Batch (BATCH_TASK_INDEX, BATCH_TASK_COUNT), Cloud Run
    /// (CLOUD_RUN_TASK_INDEX, _COUNT) or a Kubernetes Indexed Job
    /// (JOB_COMPLETION_INDEX, with --shards N).
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<ShardArg>,
    /// What the K of --shard K/N counts from: 1 (the default: 1/N to N/N)
    /// or 0 (0/N to (N-1)/N, as 0-based task indices do).
    #[arg(long, value_name = "0|1", requires = "shard", value_parser = clap::value_parser!(u32).range(0..=1))]
    pub shard_base: Option<u32>,
    /// With --shard auto: the number of shards, where the engine does not
    /// tell it (a Kubernetes Indexed Job's completions).
    #[arg(long, value_name = "N", requires = "shard", value_parser = clap::value_parser!(u32).range(1..))]
    pub shards: Option<u32>,
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

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The access log (plain or gzip): nginx with any log_format that has
    /// the upstream fields, ingress-nginx's default, the "upstream timing"
    /// format, or HAProxy's option httplog (with or without syslog headers).
    pub log: PathBuf,
    /// The gateway's config the log was written under (nginx.conf,
    /// haproxy.cfg…, read as `hcsim import` reads it); also where the
    /// log_format is found.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The upstream / backend of the config (or ingress-nginx's
    /// $proxy_upstream_name without a config) the log is of.
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,
    /// The log's format: a log_format name of --config, a preset
    /// (ingress-nginx, upstream-timing, calibration, combined), haproxy, or
    /// a format's text. Default: the one the lines match.
    #[arg(long, value_name = "NAME|FORMAT")]
    pub log_format: Option<String>,
    /// nginx's error log of the same time: its "upstream server
    /// temporarily disabled" lines confirm the ejections.
    #[arg(long, value_name = "FILE")]
    pub error_log: Option<PathBuf>,
    /// What if: override a field of the inferred model, e.g. `--set
    /// policy.max_fails=5 --set policy.fail_timeout=30s` (as `hcsim run
    /// --set`). Repeatable: all of them make one what-if.
    #[command(flatten)]
    pub overrides: SetArgs,
    /// Another what-if, its overrides separated by `;`, e.g. `--compare
    /// 'gateway.proxy_read_timeout=1s'`. Repeatable.
    #[arg(long = "compare", value_name = "PATH=VALUE[;PATH=VALUE…]")]
    pub compare: Vec<String>,
    /// The settings the log was written under, where --config does not say
    /// them (or says them wrong), e.g. `--actual policy.max_fails=3`.
    /// Repeatable.
    #[arg(long = "actual", value_name = "PATH=VALUE", value_parser = OverrideParser("--actual"))]
    pub actual: Vec<Override>,
    /// Replications of each replay.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub reps: u64,
    /// Seed of the first replication (default 1).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Output directory (default: output/<log>-replay/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replications in parallel on this many threads (default: all cores).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Skip the charts, report.html and compare.html.
    #[arg(long)]
    pub no_charts: bool,
    /// Print nothing on stdout, and no progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `--set PATH=VALUE`, the same flag wherever a model is read.
#[derive(Args, Debug, Clone, Default)]
pub struct SetArgs {
    /// Override a field of the model, e.g. `--set clients.rate_per_s=10000`,
    /// `--set policy.fail_timeout=30s` or `--set 'nodes["10.0.0.1:80"].weight=3'`
    /// (a sweep: before the grid is applied, after its own `set`).
    /// Repeatable, applied in order. VALUE is JSON, or a string.
    #[arg(long = "set", value_name = "PATH=VALUE", value_parser = OverrideParser("--set"))]
    pub set: Vec<Override>,
}

/// Parses an override (`--set`, and `hcsim replay --actual`) where it
/// enters; a malformed one is a usage error (exit code 2) worded as every
/// override error is: `--FLAG ARG: reason`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OverrideParser(pub(crate) &'static str);

impl clap::builder::TypedValueParser for OverrideParser {
    type Value = Override;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Override, clap::Error> {
        use clap::error::ErrorKind;
        let flag = self.0;
        let text = value.to_str().ok_or_else(|| {
            clap::Error::raw(ErrorKind::InvalidUtf8, format!("{flag}: not UTF-8\n"))
        })?;
        Override::parse(text).map_err(|reason| {
            clap::Error::raw(
                ErrorKind::ValueValidation,
                format!("{flag} {}: {reason}\n", crate::spec::shorten(text)),
            )
        })
    }
}
