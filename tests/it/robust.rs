//! Fault tests of the command line: two writers on one output directory
//! (a sweep and a second sweep, a run, a plot, a compare or a replay),
//! a sweep killed with SIGKILL and resumed, a finished sweep resumed, full
//! disks on stdout and stderr, outputs of another model left in a reused
//! `--out`, an absurd `--jobs`, and a sweep's memory not growing with its
//! runs. Every process started here is waited for or killed by its pid.

use crate::{await_lines, kill, lines, tmp};
use serde_json::json;
use std::fs;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_hcsim");

pub(crate) fn hcsim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("HCSIM_STOP_AFTER")
        .env_remove("HCSIM_HANG_AFTER")
        .output()
        .unwrap()
}

pub(crate) fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "hcsim failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub(crate) fn user_error(out: Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "expected exit code 2:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// A tiny model and a 2 × 3-rep sweep of it in `dir`.
pub(crate) fn tiny(dir: &Path) {
    fs::create_dir_all(dir.join("models")).unwrap();
    fs::create_dir_all(dir.join("sweeps")).unwrap();
    let model = json!({
        "name": "tiny-crash", "seed": 11, "duration": "3s",
        "clients": {"kind": "open", "rate_per_s": 50.0},
        "nodes": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
        "faults": [{"kind": "crash", "node": "A", "at": "1s", "for": "1s"}],
        "policy": {"kind": "max_fails", "max_fails": 3, "fail_timeout": "5s"}
    });
    let sweep = json!({
        "name": "tiny", "model": "../models/tiny.json", "reps": 3,
        "axes": [{"path": "policy.max_fails", "values": [1, 2, 3, 4]}]
    });
    fs::write(dir.join("models/tiny.json"), model.to_string()).unwrap();
    fs::write(dir.join("sweeps/tiny.json"), sweep.to_string()).unwrap();
}

fn assert_same_outputs(a: &Path, b: &Path) {
    for f in ["runs.csv", "points.csv", "results.json"] {
        let x = fs::read(a.join(f)).unwrap();
        let y = fs::read(b.join(f)).unwrap();
        assert!(
            x == y,
            "{f} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

#[test]
fn a_second_writer_is_refused_and_a_killed_sweep_resumes_identically() {
    let dir = tmp("lock");
    tiny(&dir);
    ok(hcsim_in(
        &dir,
        &["sweep", "sweeps/tiny.json", "--quiet", "--out", "whole"],
    ));

    let args = [
        "sweep",
        "sweeps/tiny.json",
        "--jobs",
        "1",
        "--quiet",
        "--out",
        "cut",
    ];
    // Checkpoints 4 runs, then stays alive holding the lock (a minute at most).
    let journal = dir.join("cut/.checkpoint/runs.jsonl");
    let first = held_after(&dir, &args, 4, &journal);
    let pid = format!("pid {} on ", first.id());
    let mut resume = args.to_vec();
    resume.push("--resume");
    // Every command that writes a directory waits for the lock: a second
    // sweep, a resume, and a run (whose files the sweep's clean-up would
    // delete), a plot, a compare or a replay into it.
    let run = ["run", "models/tiny.json", "--quiet", "--out", "cut"];
    let compare = [
        "compare", "done", "done", "--out", "cut", "--format", "json",
    ];
    let log = crate::replay::crash_log((3.0, 6.0)).join("\n") + "\n";
    fs::write(dir.join("access.log"), log).unwrap();
    let replay = [
        "replay",
        "access.log",
        "--reps",
        "1",
        "--no-charts",
        "--quiet",
        "--out",
        "cut",
    ];
    ok(hcsim_in(
        &dir,
        &[
            "run",
            "models/tiny.json",
            "--quiet",
            "--no-charts",
            "--out",
            "done",
        ],
    ));
    for second in [
        &args[..],
        &resume[..],
        &run[..],
        &["plot", "cut"],
        &compare[..],
        &replay[..],
    ] {
        let err = user_error(hcsim_in(&dir, second));
        assert!(
            err.contains("another hcsim is writing to this directory") && err.contains(&pid),
            "{second:?}: {err}"
        );
    }
    assert_eq!(
        lines(&journal),
        5,
        "the refused writers left the checkpoint alone"
    );
    for f in [
        "summary.json",
        "timeline.csv",
        "compare.html",
        "replay.json",
    ] {
        assert!(!dir.join("cut").join(f).exists(), "{f} was written");
    }

    kill(first); // SIGKILL: no chance to clean up; the OS drops its lock
    ok(hcsim_in(&dir, &resume));
    assert_same_outputs(&dir.join("whole"), &dir.join("cut"));
    assert!(!journal.exists());

    // A finished sweep resumed (a requeued batch job) is a no-op.
    let before = fs::metadata(dir.join("cut/results.json"))
        .unwrap()
        .modified()
        .unwrap();
    let loud: Vec<&str> = resume.iter().copied().filter(|a| *a != "--quiet").collect();
    let out = ok(hcsim_in(&dir, &loud));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already complete"), "{err}");
    let after = fs::metadata(dir.join("cut/results.json"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(before, after, "nothing was rewritten");
}

#[test]
fn a_full_stdout_exits_non_zero_and_a_full_stderr_does_not_panic() {
    let dir = tmp("full");
    tiny(&dir);
    // A private full-like device (1,7), never the machine's own /dev/full.
    let node = dir.join("full");
    let made = Command::new("mknod")
        .arg(&node)
        .args(["c", "1", "7"])
        .status()
        .is_ok_and(|s| s.success());
    let full = made.then(|| fs::OpenOptions::new().write(true).open(&node).ok());
    let Some(Some(full)) = full else {
        assert!(
            std::env::var_os("HCSIM_REQUIRE_TOOLS").is_none(),
            "cannot mknod a full-like device (not root?) and HCSIM_REQUIRE_TOOLS is set"
        );
        eprintln!("skipped: cannot make a full-like device (mknod needs root)");
        return;
    };
    for args in [
        &["schema", "model"][..],
        &["check", "models/tiny.json"],
        &[
            "run",
            "models/tiny.json",
            "--format",
            "json",
            "--no-charts",
            "--out",
            "r",
        ],
    ] {
        let out = Command::new(BIN)
            .args(args)
            .current_dir(&dir)
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        let err = user_error(out);
        assert!(err.contains("cannot write to stdout"), "{args:?}: {err}");
    }
    // A warning (and the error after it) with stderr on /dev/full.
    let out = Command::new(BIN)
        .args(["run", "models/tiny.json", "--jobs", "100000", "--no-charts"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(full.try_clone().unwrap())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(101), "panicked");
    assert!(out.status.code().is_some());
}

#[test]
fn an_absurd_jobs_count_is_lowered_with_a_note() {
    let dir = tmp("jobs");
    tiny(&dir);
    let started = Instant::now();
    let out = ok(hcsim_in(
        &dir,
        &[
            "sweep",
            "sweeps/tiny.json",
            "--jobs",
            "100000",
            "--out",
            "s",
            "--no-charts",
        ],
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("note: --jobs 100000 is more than 4 × the"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_reused_out_keeps_no_files_of_another_model() {
    let dir = tmp("stale");
    tiny(&dir);
    ok(hcsim_in(
        &dir,
        &["sweep", "sweeps/tiny.json", "--quiet", "--out", "o"],
    ));
    let charts = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(d.join("charts"))
            .map(|r| {
                r.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let sweep_charts = charts(&dir.join("o"));
    assert!(!sweep_charts.is_empty());
    // A run into the sweep's folder: the sweep's files and charts go.
    ok(hcsim_in(
        &dir,
        &["run", "models/tiny.json", "--quiet", "--out", "o"],
    ));
    for f in ["results.json", "runs.csv", "points.csv"] {
        assert!(!dir.join("o").join(f).exists(), "{f} was left");
    }
    let run_charts = charts(&dir.join("o"));
    assert!(
        run_charts
            .iter()
            .all(|c| !sweep_charts.contains(c) || c.starts_with("timeline")),
        "{run_charts:?}"
    );
    // And back: the run's files go.
    ok(hcsim_in(
        &dir,
        &["sweep", "sweeps/tiny.json", "--quiet", "--out", "o"],
    ));
    for f in ["summary.json", "timeline.csv", "ejections.csv"] {
        assert!(!dir.join("o").join(f).exists(), "{f} was left");
    }
    assert_eq!(charts(&dir.join("o")), sweep_charts);
}

/// `hcsim ARGS` in `dir` and its peak RSS in KiB, measured by
/// `/usr/bin/time` when there is one; stderr keeps only hcsim's lines.
pub(crate) fn measured(dir: &Path, args: &[&str]) -> (Output, Option<u64>) {
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        return (hcsim_in(dir, args), None);
    }
    let mut out = Command::new(time)
        .args(["-f", "peak %M"])
        .arg(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let peak = err
        .lines()
        .find_map(|l| l.strip_prefix("peak "))
        .and_then(|k| k.trim().parse().ok());
    out.stderr = err
        .lines()
        .filter(|l| !l.starts_with("peak ") && !l.starts_with("Command exited"))
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .into_bytes();
    (out, peak)
}

/// Peak RSS of a successful `hcsim ARGS` in `dir`, KiB.
fn peak_rss_kib(dir: &Path, args: &[&str]) -> Option<u64> {
    let (out, peak) = measured(dir, args);
    ok(out);
    peak
}

/// Starts `hcsim ARGS` in `dir` with the test hook that holds the output
/// directory's lock after `runs` checkpointed runs, and returns it once
/// `journal` shows them (killing it and failing after 30 s).
fn held_after(dir: &Path, args: &[&str], runs: usize, journal: &Path) -> Child {
    let child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("HCSIM_HANG_AFTER", runs.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let what = format!("hcsim did not checkpoint {runs} runs");
    await_lines(journal, runs + 1, 30, child, &what)
}

#[test]
fn sweep_memory_does_not_grow_with_its_runs() {
    let dir = tmp("memory");
    fs::create_dir_all(dir.join("models")).unwrap();
    fs::create_dir_all(dir.join("sweeps")).unwrap();
    let model = json!({
        "name": "speck", "duration": "200ms",
        "clients": {"kind": "open", "rate_per_s": 20.0},
        "nodes": [{"name": "A"}, {"name": "B"}]
    });
    fs::write(dir.join("models/speck.json"), model.to_string()).unwrap();
    for reps in [1100, 3300] {
        let sweep = json!({
            "name": format!("speck-{reps}"), "model": "../models/speck.json", "reps": reps,
            "axes": [{"path": "nodes[0].weight", "values": [1]}]
        });
        fs::write(dir.join(format!("sweeps/{reps}.json")), sweep.to_string()).unwrap();
    }
    let run = |reps: u32| {
        let file = format!("sweeps/{reps}.json");
        let out = format!("o{reps}");
        let args = [
            "sweep",
            &file,
            "--out",
            &out,
            "--quiet",
            "--no-charts",
            "--jobs",
            "2",
        ];
        peak_rss_kib(&dir, &args)
    };
    let (Some(small), Some(large)) = (run(1100), run(3300)) else {
        return; // no /usr/bin/time
    };
    // Keeping the runs cost ~22 KB each: 2,200 more runs were ~48 MB more.
    assert!(
        large < small + 16 * 1024,
        "peak RSS {small} KiB for 1,100 runs but {large} KiB for 3,300"
    );
}

#[test]
fn ctrl_c_says_how_many_runs_are_kept_and_how_to_resume() {
    let dir = tmp("ctrl-c");
    tiny(&dir);
    let args = ["sweep", "sweeps/tiny.json", "--jobs", "1", "--out", "cut"];
    let child = Command::new(BIN)
        .args(args)
        .current_dir(&dir)
        .env("HCSIM_HANG_AFTER", "3")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let journal = dir.join("cut/.checkpoint/runs.jsonl");
    let child = await_lines(
        &journal,
        4,
        30,
        child,
        "the sweep did not checkpoint 3 runs",
    );
    let Some(out) = crate::interrupt(child, "the sweep") else {
        return; // no kill(1)
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted: 3 finished run(s) are kept in")
            && err.contains("hcsim sweep sweeps/tiny.json --jobs 1 --out cut --resume"),
        "{err}"
    );
}
