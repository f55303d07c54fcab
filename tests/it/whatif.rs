//! What-ifs and comparisons as users run them: `hcsim run --set` keeps its
//! baseline in a directory of its own, `hcsim compare` sets the two side by
//! side with a noise verdict, exports and shell conventions (`--quiet`,
//! completions, man page), and the friendlier errors where users trip.

use crate::tmp;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Runs hcsim in `dir` (so `output/` is the test's own).
fn hcsim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hcsim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run hcsim")
}

fn ok(o: Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "exit {:?}: {err}", o.status.code());
    String::from_utf8(o.stdout).expect("utf-8 stdout")
}

fn user_error(o: Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// A small model: node a answers 503 to 30% of requests, retried on b.
const MODEL: &str = r#"{
  "name": "m", "duration": "3s",
  "clients": {"kind": "open", "rate_per_s": 200.0, "arrivals": "constant"},
  "gateway": {"proxy_next_upstream": ["error", "timeout", "http_503"]},
  "nodes": [{"name": "a"}, {"name": "b"}],
  "faults": [{"kind": "flaky", "node": "a", "at": "1s", "p": 0.3}],
  "policy": {"kind": "max_fails", "max_fails": 2, "fail_timeout": "1s"}
}"#;

fn setup(name: &str) -> std::path::PathBuf {
    let dir = tmp(name);
    std::fs::write(dir.join("m.json"), MODEL).unwrap();
    dir
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
    )
    .unwrap()
}

/// The baseline and one what-if, 6 replications each.
fn two_runs(dir: &Path, extra: &[&str]) {
    let mut base = vec!["run", "m.json", "--reps", "6"];
    base.extend_from_slice(extra);
    ok(hcsim_in(dir, &base));
    let mut what_if = base.clone();
    what_if.extend(["--set", "clients.rate_per_s=400"]);
    ok(hcsim_in(dir, &what_if));
}

#[test]
fn a_what_if_gets_its_own_directory_and_records_its_overrides() {
    let dir = setup("whatif-dirs");
    ok(hcsim_in(&dir, &["run", "m.json", "--reps", "2"]));
    let table = ok(hcsim_in(
        &dir,
        &[
            "run",
            "m.json",
            "--reps",
            "2",
            "--set",
            "clients.rate_per_s=400",
            "--set",
            "policy.fail_timeout=3s",
        ],
    ));
    let base = dir.join("output/m");
    let what_if = dir.join("output/m--rate_per_s=400,fail_timeout=3s");
    assert_eq!(
        read_json(&base.join("summary.json"))["set"],
        serde_json::json!([])
    );
    assert_eq!(
        read_json(&what_if.join("summary.json"))["set"],
        serde_json::json!(["clients.rate_per_s=400", "policy.fail_timeout=3s"])
    );
    assert!(
        table.contains("what if: --set clients.rate_per_s=400 --set policy.fail_timeout=3s"),
        "{table}"
    );
    assert!(
        table.contains("wrote output/m--rate_per_s=400,fail_timeout=3s"),
        "{table}"
    );
    let report = std::fs::read_to_string(what_if.join("report.html")).unwrap();
    assert!(
        report.contains(
            "What if: this run overrides the model file with --set clients.rate_per_s=400"
        )
    );
    let svg = std::fs::read_to_string(what_if.join("charts/timeline.svg")).unwrap();
    assert!(
        svg.contains("what if: --set clients.rate_per_s=400"),
        "the chart's footer names the overrides"
    );
    // --label chooses the name; a label is a plain directory name
    ok(hcsim_in(
        &dir,
        &[
            "run",
            "m.json",
            "--no-charts",
            "--set",
            "clients.rate_per_s=300",
            "--label",
            "busy",
        ],
    ));
    assert!(dir.join("output/busy/summary.json").is_file());
    let err = user_error(hcsim_in(&dir, &["run", "m.json", "--label", "a/b"]));
    assert!(
        err.contains("--label \"a/b\": a label names a directory"),
        "{err}"
    );
    // the baseline was never touched
    assert_eq!(
        read_json(&base.join("summary.json"))["client"]["requests"]["median"],
        600.0
    );
}

#[test]
fn compare_shows_each_metric_with_its_difference_and_noise_verdict() {
    let dir = setup("whatif-compare");
    two_runs(&dir, &["--no-charts"]);
    let (a, b) = ("output/m", "output/m--rate_per_s=400");
    let table = ok(hcsim_in(&dir, &["compare", a, b]));
    for want in [
        "[1] output/m  model m  seed 1  reps 6",
        "[2] output/m--rate_per_s=400  model m  seed 1  reps 6  --set clients.rate_per_s=400",
        "client.requests",
        "client.errors",
        "client.latency_ms.p99",
        "nodes.a.share",
        "nodes.a.ejections",
        "nodes.a.first_ejection_delay_s",
        "beyond noise",
        "Mann-Whitney U",
    ] {
        assert!(table.contains(want), "missing {want:?} in\n{table}");
    }
    let requests = table
        .lines()
        .find(|l| l.starts_with("client.requests"))
        .unwrap();
    assert!(
        requests.contains("+600 (+100.0%)") && requests.ends_with("beyond noise"),
        "{requests}"
    );
    let html =
        std::fs::read_to_string(dir.join("output/m--vs--m--rate_per_s=400/compare.html")).unwrap();
    assert!(
        html.contains("Node a: traffic share of the 2xx answers per bucket")
            && html.matches("<svg").count() >= 4
    );

    let json: Value = serde_json::from_str(&ok(hcsim_in(
        &dir,
        &["compare", a, b, "--format", "json", "--no-charts"],
    )))
    .unwrap();
    assert_eq!(
        json["runs"][1]["set"],
        serde_json::json!(["clients.rate_per_s=400"])
    );
    let row = json["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "client.requests")
        .unwrap();
    assert_eq!(row["cells"][0]["median"], 600.0);
    assert_eq!(row["cells"][1]["vs_first"]["diff"], 600.0);
    assert_eq!(row["cells"][1]["vs_first"]["verdict"], "beyond");
    // 6 against 6, completely separated: the exact two-sided p is 2 / C(12, 6)
    let p = row["cells"][1]["vs_first"]["p_value"].as_f64().unwrap();
    assert!((p - 2.0 / 924.0).abs() < 1e-6, "{p}");

    let csv = ok(hcsim_in(
        &dir,
        &["compare", a, b, "--format", "csv", "--no-charts"],
    ));
    assert!(
        csv.starts_with("metric,run,dir,median,mean,min,max,n,diff,rel_diff,p_value,verdict\n")
    );
    assert!(
        csv.contains("client.requests,2,output/m--rate_per_s=400,1200,"),
        "{csv}"
    );
    let md = ok(hcsim_in(
        &dir,
        &["compare", a, b, "--format", "markdown", "--no-charts"],
    ));
    assert!(
        md.contains("| metric | [1] | [2] | Δ | p | noise |\n| :--- | ---: |"),
        "{md}"
    );
}

#[test]
fn compare_output_is_deterministic_across_runs_and_jobs() {
    let one = setup("whatif-det-1");
    let two = setup("whatif-det-2");
    two_runs(&one, &["--jobs", "1"]);
    two_runs(&two, &["--jobs", "2"]);
    let args = [
        "compare",
        "output/m",
        "output/m--rate_per_s=400",
        "--out",
        "cmp",
    ];
    let a = ok(hcsim_in(&one, &args));
    let b = ok(hcsim_in(&two, &args));
    assert_eq!(a, b);
    let c = ok(hcsim_in(&one, &args));
    assert_eq!(a, c, "the same command twice");
    let page = |d: &Path| std::fs::read(d.join("cmp/compare.html")).unwrap();
    assert_eq!(page(&one), page(&two), "compare.html is byte-identical");
    for d in [&one, &two] {
        ok(hcsim_in(
            d,
            &[
                "compare",
                "output/m",
                "output/m--rate_per_s=400",
                "--no-charts",
                "--export-csv",
                "c.csv",
                "--export-markdown",
                "c.md",
            ],
        ));
    }
    for f in ["c.csv", "c.md"] {
        assert_eq!(
            std::fs::read(one.join(f)).unwrap(),
            std::fs::read(two.join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn exports_and_quiet() {
    let dir = setup("whatif-exports");
    let out = hcsim_in(
        &dir,
        &[
            "run",
            "m.json",
            "--reps",
            "3",
            "--no-charts",
            "--quiet",
            "--export-markdown",
            "run.md",
            "--export-csv",
            "run.csv",
        ],
    );
    assert!(ok(out).is_empty(), "--quiet prints nothing on stdout");
    let md = std::fs::read_to_string(dir.join("run.md")).unwrap();
    assert!(
        md.starts_with("- [1] output/m  model m  seed 1  reps 3\n\n| metric | [1] |\n"),
        "{md}"
    );
    assert!(md.contains("| nodes.a.share |"), "{md}");
    let csv = std::fs::read_to_string(dir.join("run.csv")).unwrap();
    assert!(
        csv.contains("\nclient.requests,1,output/m,600,600,600,600,3,,,,\n"),
        "{csv}"
    );
    // errors still reach stderr with --quiet
    let err = user_error(hcsim_in(&dir, &["run", "missing.json", "--quiet"]));
    assert!(err.starts_with("error: missing.json: cannot read"), "{err}");
    two_runs(&dir, &["--no-charts", "--quiet"]);
    ok(hcsim_in(
        &dir,
        &[
            "compare",
            "output/m",
            "output/m--rate_per_s=400",
            "--no-charts",
            "--export-markdown",
            "c.md",
            "--export-csv",
            "c.csv",
        ],
    ));
    let md = std::fs::read_to_string(dir.join("c.md")).unwrap();
    assert!(
        md.contains("| client.requests | 600 | 1200 | +600 (+100.0%) | 0.002 | beyond noise |"),
        "{md}"
    );
    assert!(
        std::fs::read_to_string(dir.join("c.csv"))
            .unwrap()
            .starts_with("metric,run,dir,")
    );
}

#[test]
fn completions_and_man_page() {
    let dir = tmp("whatif-shell");
    for shell in ["bash", "zsh", "fish"] {
        let script = ok(hcsim_in(&dir, &["completions", shell]));
        assert!(
            script.contains("hcsim") && script.contains("compare"),
            "{shell}"
        );
        assert!(script.len() > 1000, "{shell}: {} bytes", script.len());
    }
    let man = ok(hcsim_in(&dir, &["man"]));
    assert!(man.contains(".TH hcsim"), "{}", &man[..man.len().min(300)]);
    assert!(man.contains("compare"));
    user_error(
        Command::new(env!("CARGO_BIN_EXE_hcsim"))
            .args(["completions", "tcsh"])
            .output()
            .unwrap(),
    );
}

#[test]
fn errors_where_users_trip() {
    let dir = setup("whatif-errors");
    let err = user_error(hcsim_in(
        &dir,
        &["run", "m.json", "--set", "clients.rate_per_s=10k"],
    ));
    assert!(
        err.contains("error: m.json: clients.rate_per_s: invalid type: string \"10k\", expected f64 (did you mean 10000? numbers take no k, M or G suffix) (set by --set clients.rate_per_s=10k)"),
        "{err}"
    );
    let err = user_error(hcsim_in(
        &dir,
        &["run", "m.json", "--set", "nodes.A.weight=2"],
    ));
    assert!(
        err.contains("error: m.json: nodes.A.weight: `nodes` has no item named \"A\" (nodes are \"a\", \"b\"; did you mean \"a\"?) (in --set nodes.A.weight=2)"),
        "{err}"
    );
    std::fs::write(
        dir.join("s.json"),
        r#"{"name": "s", "model": "m.json", "axes": []}"#,
    )
    .unwrap();
    let err = user_error(hcsim_in(&dir, &["run", "s.json"]));
    assert!(err.contains("error: s.json: this is a sweep (it names a `model` and `axes`), not a model: use `hcsim sweep s.json`"), "{err}");
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let err = user_error(hcsim_in(&dir, &["compare", "empty", "nowhere"]));
    assert!(err.contains("error: empty: a directory without summary.json: compare takes the output directories of `hcsim run`"), "{err}");
}

#[test]
#[cfg(unix)]
fn ctrl_c_in_a_sweep_says_how_to_resume() {
    let dir = setup("whatif-sigint");
    std::fs::write(
        dir.join("s.json"),
        r#"{"name": "s", "model": "m.json", "reps": 400, "set": {"duration": "30s"},
            "axes": [{"path": "policy.max_fails", "values": [1, 2, 3, 4]}]}"#,
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_hcsim"))
        .args(["sweep", "s.json", "--jobs", "1", "--no-charts"])
        .current_dir(&dir)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let ckpt = dir.join("output/s/.checkpoint/runs.jsonl");
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&ckpt).map_or(0, |t| t.lines().count()) < 3 {
        assert!(
            start.elapsed().as_secs() < 60,
            "the sweep never checkpointed a run"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = crate::interrupt(child, "the sweep").expect("kill(1) sends SIGINT");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains("finished run(s) are kept in output/s/.checkpoint/runs.jsonl"),
        "{err}"
    );
    assert!(
        err.contains("hcsim sweep s.json --jobs 1 --no-charts --resume"),
        "{err}"
    );
    // and the hint is right: the same command with --resume finishes the sweep
    ok(hcsim_in(
        &dir,
        &[
            "sweep",
            "s.json",
            "--jobs",
            "1",
            "--no-charts",
            "--resume",
            "--quiet",
        ],
    ));
    assert!(dir.join("output/s/points.csv").is_file());
}
