//! What a new user trips on in the first hour, through the binary: the
//! import → what-if loop, a long run that says nothing, a rerun that
//! replaces another run, `hcsim reproduce` outside the repository.

use crate::{root, tmp};
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn hcsim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hcsim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run hcsim")
}

/// The one directory in `parent`, if there is exactly one.
fn only_dir(parent: &Path) -> Option<std::path::PathBuf> {
    let dirs: Vec<_> = std::fs::read_dir(parent)
        .ok()?
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.is_dir())
        .collect();
    (dirs.len() == 1).then(|| dirs[0].clone())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `hcsim import nginx.conf > shop.json` then `hcsim run shop.json --set
/// duration=20s`: the imported model's measurement window is derived from
/// its duration, so the what-if runs; a window the user wrote out is kept,
/// and the error says which override to add.
#[test]
fn an_imported_model_takes_a_shorter_duration() {
    let dir = tmp("first-hour-import");
    let conf = root().join("tests/configs/e3-nginx.conf");
    let o = hcsim_in(&dir, &["import", conf.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    std::fs::write(dir.join("shop.json"), &o.stdout).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc.get("measure"), None, "a derived window is not written");
    let o = hcsim_in(
        &dir,
        &[
            "run",
            "shop.json",
            "--set",
            "duration=20s",
            "--no-charts",
            "-q",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));

    let mut doc = doc;
    doc["measure"] = serde_json::json!({"from": "0s", "to": "60s"});
    std::fs::write(dir.join("own.json"), doc.to_string()).unwrap();
    let o = hcsim_in(&dir, &["run", "own.json", "--set", "duration=20s", "-q"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("measure.to"), "{err}");
    assert!(err.contains("--set measure.to=20s"), "{err}");
}

/// A run of many replications says what they cost in all, not one's cost
/// (read from its first lines on stderr; the run is then stopped).
#[test]
fn the_estimate_of_a_long_run_counts_every_replication() {
    use std::io::BufRead;
    let dir = tmp("first-hour-estimate");
    let model = root().join("models/e2-p02-flaky-2pct.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hcsim"))
        .args([
            "run",
            model.to_str().unwrap(),
            "--set",
            "clients.rate_per_s=100000",
            "--set",
            "duration=40s",
            "--reps",
            "20",
            "--jobs",
            "1",
            "--no-charts",
            "-q",
        ])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut seen = String::new();
    for line in std::io::BufReader::new(stderr).lines().take(10) {
        let line = line.unwrap_or_default();
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("replications:") {
            break;
        }
    }
    crate::kill(child);
    assert!(seen.contains("20 replications: about"), "{seen}");
    assert!(seen.contains("of CPU ("), "{seen}");
}

/// Ctrl-C during `hcsim run` says that nothing was written, and leaves no
/// empty directory behind.
#[test]
fn ctrl_c_in_a_run_says_nothing_was_written() {
    let dir = tmp("first-hour-sigint");
    let model = root().join("models/e2-p02-flaky-2pct.json");
    let child = Command::new(env!("CARGO_BIN_EXE_hcsim"))
        .args([
            "run",
            model.to_str().unwrap(),
            "--set",
            "clients.rate_per_s=10000",
            "--set",
            "duration=1h",
            "--jobs",
            "1",
        ])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let out = loop {
        if let Some(d) = only_dir(&dir.join("output"))
            && d.join(".hcsim.lock").exists()
        {
            break d;
        }
        if start.elapsed().as_secs() > 60 {
            crate::kill(child);
            panic!("the run never locked its directory");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // The handler is installed right after the lock is taken.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let o = crate::interrupt(child, "the run").expect("kill(1) sends SIGINT");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert!(err.contains("was not created"), "{err}");
    assert!(!out.exists(), "the empty directory is removed");
}

/// On a terminal, `hcsim run` shows a bar of the virtual time simulated;
/// with `--format json` (or off a terminal) it does not.
#[test]
fn a_long_run_shows_progress_on_a_terminal_only() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: script(1) (util-linux) is not installed");
        return;
    }
    let dir = tmp("first-hour-progress");
    let model = root().join("models/e2-p02-flaky-2pct.json");
    let run = |extra: &str| {
        let cmd = format!(
            "timeout 120 {} run {} --set clients.rate_per_s=20000 --set duration=150s \
             --no-charts --jobs 1 --out out {extra}",
            env!("CARGO_BIN_EXE_hcsim"),
            model.display()
        );
        let o = Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stdout));
        text(&o.stdout)
    };
    let shown = run("");
    assert!(
        shown.contains("simulated") && shown.contains("ETA"),
        "{shown}"
    );
    let json = run("--format json");
    assert!(!json.contains("ETA"), "{json}");
}

/// A rerun with other replications or another seed does not silently
/// replace the run in the default directory (a compare may be based on it).
#[test]
fn a_rerun_with_other_replications_is_refused_without_force() {
    let dir = tmp("first-hour-rerun");
    let model = root().join("models/e2-p02-flaky-2pct.json");
    let m = model.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", m, "--set", "duration=2s", "--no-charts", "-q"];
        args.extend_from_slice(extra);
        hcsim_in(&dir, &args)
    };
    assert!(run(&["--reps", "3"]).status.success());
    assert!(run(&["--reps", "3"]).status.success(), "the same run again");
    let o = run(&["--reps", "1"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("--reps 3") && err.contains("--force"), "{err}");
    let o = run(&["--seed", "7", "--reps", "3"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let summary = only_dir(&dir.join("output")).unwrap().join("summary.json");
    let reps = |p: &Path| {
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
        doc["reps"].as_u64()
    };
    assert_eq!(reps(&summary), Some(3), "the 3-replication run is kept");
    assert!(run(&["--reps", "1", "--force"]).status.success());
    assert_eq!(reps(&summary), Some(1));
}

/// `hcsim reproduce` runs from any directory (its models are built in),
/// fits its table to the width, ends with a verdict line, and exits 1 when
/// a figure leaves its band.
#[test]
fn reproduce_runs_anywhere_and_fails_when_a_figure_is_outside() {
    let dir = tmp("first-hour-reproduce");
    let o = hcsim_in(&dir, &["reproduce"]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}{out}", text(&o.stderr));
    assert!(out.lines().all(|l| l.chars().count() <= 120), "{out}");
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("reproduce: ") && last.contains(" 0 outside"),
        "{last}"
    );

    // The same models, one of them changed: E2's 2% node fails 40%.
    let models = dir.join("models");
    std::fs::create_dir_all(&models).unwrap();
    for e in std::fs::read_dir(root().join("models")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if name.starts_with('e') && name.ends_with(".json") {
            std::fs::copy(&p, models.join(&name)).unwrap();
        }
    }
    let e2 = models.join("e2-p02-flaky-2pct.json");
    let t = std::fs::read_to_string(&e2).unwrap();
    std::fs::write(&e2, t.replace("\"p\": 0.02", "\"p\": 0.4")).unwrap();
    let o = hcsim_in(&dir, &["reproduce", "--models", "models"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let err = text(&o.stderr);
    assert!(
        err.contains("reproduce: ") && !err.contains(" 0 outside"),
        "{err}"
    );
}

/// A mistyped model path gets the nearest file's name; a gateway config
/// given to `hcsim run` is pointed to `hcsim import`.
#[test]
fn a_wrong_file_gets_a_hint() {
    let o = crate::hcsim(&["run", "models/e2-p02-flaky-2pc.json"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("did you mean models/e2-p02-flaky-2pct.json?"),
        "{err}"
    );
    let o = crate::hcsim(&["run", "tests/configs/e3-nginx.conf"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("hcsim import"), "{err}");
}

/// `hcsim run` lists what it wrote; `hcsim plot` says what it drew, and
/// on a tune's directory says what that directory is.
#[test]
fn run_and_plot_say_what_they_wrote() {
    let dir = tmp("first-hour-wrote");
    let model = root().join("models/e2-p02-flaky-2pct.json");
    let o = hcsim_in(
        &dir,
        &["run", model.to_str().unwrap(), "--trace", "--out", "r"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("wrote r (attempts.csv, ejections.csv, "),
        "{out}"
    );
    assert!(out.contains("summary.json, timeline.csv, "), "{out}");
    assert!(
        out.contains("chart(s) in charts/ as .png and .svg, report.html)"),
        "{out}"
    );
    let o = hcsim_in(&dir, &["plot", "r"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).starts_with("wrote "), "{}", text(&o.stdout));
    std::fs::create_dir_all(dir.join("t")).unwrap();
    std::fs::write(dir.join("t/tune.json"), "{}").unwrap();
    let o = hcsim_in(&dir, &["plot", "t"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("this is a tune's output"),
        "{}",
        text(&o.stderr)
    );
}

/// A long run's timeline has a bucket chosen from its duration (10 s for an
/// hour: 360 rows, not 3,600), a derived bucket is not written out by `hcsim
/// check` or `hcsim import`, and a bucket the model sets is kept.
#[test]
fn a_long_run_picks_its_timeline_bucket_from_the_duration() {
    let dir = tmp("first-hour-bucket");
    let model = root().join("models/e2-p02-flaky-2pct.json");
    let model = model.to_str().unwrap();
    let run = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            model,
            "--set",
            "duration=1h",
            "--set",
            "clients.rate_per_s=2",
            "--no-charts",
            "-q",
            "--out",
            out,
        ];
        args.extend_from_slice(extra);
        let o = hcsim_in(&dir, &args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let csv = std::fs::read_to_string(dir.join(out).join("timeline.csv")).unwrap();
        let t: Vec<String> = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(2).unwrap().to_string())
            .collect();
        t
    };
    let t = run("derived", &[]);
    assert_eq!(t.len(), 360, "an hour in 10 s rows");
    assert_eq!((t[0].as_str(), t[1].as_str()), ("0", "10"));
    let t = run("explicit", &["--set", "timeline_bucket=1s"]);
    assert_eq!(t.len(), 3600, "a bucket the model sets is kept");
    let t = run("short", &["--set", "duration=10m"]);
    assert_eq!(t.len(), 600, "1 s rows up to 10 minutes");

    let o = hcsim_in(&dir, &["check", model]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        !text(&o.stdout).contains("timeline_bucket"),
        "{}",
        text(&o.stdout)
    );
    let conf = root().join("tests/configs/e3-nginx.conf");
    let o = hcsim_in(&dir, &["import", conf.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        !text(&o.stdout).contains("timeline_bucket"),
        "{}",
        text(&o.stdout)
    );
}

/// Utilization is a percentage wherever people read it, as shares are: the
/// run's table and report, and `hcsim compare` (with its difference in
/// percentage points); summary.json keeps the fraction.
#[test]
fn utilization_reads_in_percent_in_compare_as_in_the_table() {
    let dir = tmp("first-hour-utilization");
    let model = root().join("models/e2-p02-flaky-2pct.json");
    let model = model.to_str().unwrap();
    for (out, rate) in [("low", "100"), ("high", "400")] {
        let set = format!("clients.rate_per_s={rate}");
        let o = hcsim_in(
            &dir,
            &[
                "run",
                model,
                "--reps",
                "2",
                "--set",
                &set,
                "--no-charts",
                "-q",
                "--out",
                out,
            ],
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("low/summary.json")).unwrap()).unwrap();
    let u = summary["nodes"][0]["utilization"]["median"]
        .as_f64()
        .unwrap();
    assert!(u > 0.0 && u < 1.0, "summary.json keeps a fraction: {u}");
    let o = hcsim_in(&dir, &["compare", "low", "high"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let table = text(&o.stdout);
    let row = table
        .lines()
        .find(|l| l.starts_with("nodes.A.utilization"))
        .unwrap_or_else(|| panic!("no utilization row:\n{table}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert!(cells[1].ends_with('%'), "{row}");
    assert!(
        row.contains(" pp"),
        "a difference in percentage points: {row}"
    );
    let low = format!("{:.1}%", u * 100.0);
    assert!(row.contains(&low), "{low} in {row}");
}
