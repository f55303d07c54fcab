//! `hcsim replay LOG`: the access log of an incident → the inferred model,
//! its fit to the log, and the what-ifs of `--set` / `--compare`.

use super::{emit, say};
use crate::error::Error;
use crate::replay::{self, Options};
use crate::spec::Override;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

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
    pub overrides: super::args::SetArgs,
    /// Another what-if, its overrides separated by `;`, e.g. `--compare
    /// 'gateway.proxy_read_timeout=1s'`. Repeatable.
    #[arg(long = "compare", value_name = "PATH=VALUE[;PATH=VALUE…]")]
    pub compare: Vec<String>,
    /// The settings the log was written under, where --config does not say
    /// them (or says them wrong), e.g. `--actual policy.max_fails=3`.
    /// Repeatable.
    #[arg(long = "actual", value_name = "PATH=VALUE", value_parser = super::args::OverrideParser("--actual"))]
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

pub(super) fn run(args: ReplayArgs) -> Result<ExitCode, Error> {
    let mut groups = vec![];
    if !args.overrides.set.is_empty() {
        groups.push(args.overrides.set.clone());
    }
    for c in &args.compare {
        let g: Vec<Override> = c
            .split(';')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(|x| {
                Override::parse(x).map_err(|reason| {
                    Error::Usage(format!("--compare {}: {reason}", crate::spec::shorten(x)))
                })
            })
            .collect::<Result<_, _>>()?;
        if g.is_empty() {
            return Err(Error::Usage(format!(
                "--compare {c:?}: expected PATH=VALUE[;PATH=VALUE…]"
            )));
        }
        groups.push(g);
    }
    let o = Options {
        log: args.log.clone(),
        config: args.config.clone(),
        target: args.target.clone(),
        log_format: args.log_format.clone(),
        error_log: args.error_log.clone(),
        actual: args.actual.clone(),
        groups,
        reps: args.reps,
        seed: args.seed,
        out: args.out.clone(),
        charts: !args.no_charts,
    };
    let bar = (!args.quiet && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new(1);
        b.set_style(
            ProgressStyle::with_template(
                "reading {msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b.set_message(args.log.display().to_string());
        b
    });
    let mut progress = |done: u64, total: u64| {
        if let Some(b) = &bar {
            b.set_length(total.max(1));
            b.set_position(done);
        }
    };
    let (jobs, _) = crate::run::clamp_jobs(args.jobs, args.reps as usize);
    let outcome = crate::run::thread_pool(jobs)?.install(|| replay::replay(&o, &mut progress));
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let outcome = outcome?;
    for w in &outcome.warnings {
        say(&format!("warning: {w}"));
    }
    if !args.quiet {
        emit(&outcome.text)?;
    }
    Ok(ExitCode::SUCCESS)
}
