//! One integration-test binary (faster to build than one per file).

mod calibration;
mod charts;
mod check_port;
mod cli;
mod connections;
mod corpus;
mod determinism;
mod fidelity;
mod first_hour;
mod fleet;
mod fleet_registry;
mod fuzz;
mod fuzz_outputs;
mod gateways;
mod golden;
mod haproxy;
mod impact;
mod import;
mod import_hostile;
mod import_realworld;
mod kong;
mod layout;
mod linkerd;
mod nginx;
mod on_marked;
mod overrides;
mod pods;
mod policies;
mod probes;
mod properties;
mod realworld;
mod replay;
mod report;
mod robust;
mod robust_limits;
mod robust_outputs;
mod scenarios;
mod schema;
mod seeds;
mod slow_start;
mod slurm;
mod sweep;
mod tune;
mod whatif;

use hcsim::metrics::RunSummary;
use hcsim::spec::Model;
use hcsim::world::{self, TraceLine};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

/// The repository root (tests run the binary from there).
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The shipped models (`models/index.txt`), sorted: the tests cover
/// exactly these, so a user's own file in `models/` breaks none of them.
pub fn shipped_models() -> Vec<PathBuf> {
    let index = root().join("models/index.txt");
    let text = std::fs::read_to_string(&index).expect("models/index.txt");
    let mut v: Vec<PathBuf> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| root().join("models").join(l))
        .collect();
    v.sort();
    v
}

/// A fresh temporary directory for one test.
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hcsim-it-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// Runs the hcsim binary from the repository root.
pub fn hcsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hcsim"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run hcsim")
}

/// `hcsim run` of the model `doc`, written to a fresh temporary directory
/// `name`, with `args` after it and `--no-charts --out DIR`: the run's
/// output and its output directory (the run must succeed).
pub fn run_doc(name: &str, doc: &serde_json::Value, args: &[&str]) -> (Output, PathBuf) {
    let dir = tmp(name);
    let model = dir.join("model.json");
    std::fs::write(&model, serde_json::to_vec_pretty(doc).unwrap()).unwrap();
    let out = dir.join("out");
    let mut all = vec!["run", model.to_str().unwrap()];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--no-charts", "--out", out.to_str().unwrap()]);
    let o = hcsim(&all);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (o, out)
}

/// Where a system binary is: `/usr/sbin/NAME` or `/usr/local/sbin/NAME`,
/// else the bare name (looked up in `PATH`).
pub fn sbin(name: &str) -> String {
    for d in ["/usr/sbin", "/usr/local/sbin"] {
        let p = format!("{d}/{name}");
        if Path::new(&p).exists() {
            return p;
        }
    }
    name.to_string()
}

/// Whether `bin` runs (`bin ARG`); when it does not and the environment sets
/// HCSIM_REQUIRE_TOOLS, fails the test, else says the test is skipped.
pub fn tool_present(bin: &str, arg: &str) -> bool {
    let ok = Command::new(bin).arg(arg).output().is_ok();
    if !ok {
        assert!(
            std::env::var_os("HCSIM_REQUIRE_TOOLS").is_none(),
            "HCSIM_REQUIRE_TOOLS is set but {bin} is not installed (scripts/test-deps.sh installs it)"
        );
        eprintln!("skipped: {bin} is not installed");
    }
    ok
}

/// Builds a scenario from an inline JSON model.
pub fn scenario(doc: serde_json::Value) -> Model {
    Model::from_document(&doc, Path::new("inline.json")).unwrap_or_else(|e| panic!("{e}"))
}

/// One run and its attempt trace.
pub fn traced(sc: &Model, seed: u64) -> (RunSummary, Vec<TraceLine>) {
    let mut lines = Vec::new();
    let mut sink = |l: &TraceLine| lines.push(l.clone());
    let s = world::run_traced(sc, seed, &mut sink);
    (s, lines)
}

/// Every request ends exactly once.
pub fn assert_conserved(s: &RunSummary) {
    let c = &s.client;
    assert_eq!(
        c.requests,
        c.ok + c.errors + c.timeouts + c.unfinished,
        "requests not conserved in {} seed {}: {c:?}",
        s.model,
        s.seed
    );
    let by_status: u64 = c.status.values().sum();
    assert_eq!(by_status, c.ok + c.errors, "status counts in {}", s.model);
    let answered: u64 = s.nodes.iter().map(|n| n.answered).sum();
    assert_eq!(answered, c.ok, "answers by node vs ok in {}", s.model);
    if c.ok > 0 {
        // each share is rounded to 6 decimals
        let shares: f64 = s.nodes.iter().map(|n| n.share).sum();
        assert!(
            (shares - 1.0).abs() <= s.nodes.len() as f64 * 5e-7 + 1e-9,
            "shares sum to {shares} in {}",
            s.model
        );
    }
}

/// Lines in a file (0 if it is missing).
pub fn lines(p: &Path) -> usize {
    std::fs::read(p).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

/// Kills a child started here, by its pid, and reaps it.
pub fn kill(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Sends `child` SIGINT by pid, as Ctrl-C does, and waits (10 s at most)
/// for it to exit; `None` when kill(1) is missing. On a timeout, kills it
/// and fails with "`what` did not stop on SIGINT".
pub fn interrupt(mut child: Child, what: &str) -> Option<Output> {
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    if !sent.is_ok_and(|s| s.success()) {
        kill(child);
        return None;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            kill(child);
            panic!("{what} did not stop on SIGINT");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Some(child.wait_with_output().unwrap())
}

/// Waits until `journal` has `n` lines and gives `child` back; after `secs`
/// seconds, kills it and fails with "`what` in `secs` s".
pub fn await_lines(journal: &Path, n: usize, secs: u64, child: Child, what: &str) -> Child {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while lines(journal) < n {
        if std::time::Instant::now() > deadline {
            kill(child);
            panic!("{what} in {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}
