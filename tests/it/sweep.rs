//! `hcsim sweep` and `hcsim merge` end to end: outputs are byte-identical
//! whatever `--jobs`, `--shard` or an interruption did, a point equals
//! `hcsim run` on its model, and bad sweep files are refused with exit code 2.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const OUTPUTS: [&str; 3] = ["runs.csv", "points.csv", "results.json"];

/// A fresh directory for one test.
fn workdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sweep")
        .join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn hcsim(dir: &Path, args: &[&str]) -> Output {
    hcsim_env(dir, args, &[])
}

fn hcsim_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcsim"));
    cmd.args(args).current_dir(dir).stdin(Stdio::null());
    cmd.env_remove("HCSIM_STOP_AFTER");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "hcsim failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Exit code 2 and the stderr text.
fn user_error(out: Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "expected exit code 2:\n{err}");
    err
}

/// Three nodes, one crashes from 1 s to 3 s; 50 requests/s for 6 s;
/// max_fails=3 fail_timeout=5s (a point of the tiny sweep).
fn tiny_model() -> Value {
    json!({
        "name": "tiny-crash", "seed": 11, "duration": "6s",
        "clients": {"kind": "open", "rate_per_s": 50.0},
        "nodes": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
        "faults": [{"kind": "crash", "node": "A", "at": "1s", "for": "2s"}],
        "policy": {"kind": "max_fails", "max_fails": 3, "fail_timeout": "5s"}
    })
}

/// 2 × 2 points × 3 reps = 12 runs.
fn tiny_sweep() -> Value {
    json!({
        "name": "tiny", "model": "../models/tiny.json", "reps": 3,
        "axes": [
            {"path": "policy.max_fails", "values": [1, 3]},
            {"path": "policy.fail_timeout", "range": {"from": "2s", "to": "5s", "step": "3s"}}
        ]
    })
}

/// Lays out `models/tiny.json` and `sweeps/<file>` in `dir`.
fn write_files(dir: &Path, file: &str, sweep: &Value) {
    fs::create_dir_all(dir.join("models")).unwrap();
    fs::create_dir_all(dir.join("sweeps")).unwrap();
    fs::write(dir.join("models/tiny.json"), tiny_model().to_string()).unwrap();
    fs::write(dir.join("sweeps").join(file), sweep.to_string()).unwrap();
}

/// runs.csv, points.csv and results.json are byte-identical in `a` and `b`.
pub fn assert_same_outputs(a: &Path, b: &Path) {
    for f in OUTPUTS {
        let x = fs::read(a.join(f)).unwrap_or_else(|e| panic!("{}: {e}", a.join(f).display()));
        let y = fs::read(b.join(f)).unwrap_or_else(|e| panic!("{}: {e}", b.join(f).display()));
        assert!(
            x == y,
            "{f} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn jobs_1_and_jobs_2_write_identical_files() {
    let dir = workdir("jobs");
    write_files(&dir, "tiny.json", &tiny_sweep());
    ok(hcsim(
        &dir,
        &["sweep", "sweeps/tiny.json", "--jobs", "1", "--out", "j1"],
    ));
    ok(hcsim(
        &dir,
        &["sweep", "sweeps/tiny.json", "--jobs", "2", "--out", "j2"],
    ));
    assert_same_outputs(&dir.join("j1"), &dir.join("j2"));
    let results = read_json(&dir.join("j1/results.json"));
    assert_eq!(results["runs"].as_array().unwrap().len(), 12);
    assert!(
        !dir.join("j1/.checkpoint").exists(),
        "checkpoint removed when done"
    );
}

#[test]
fn shards_merged_equal_the_unsharded_sweep() {
    let dir = workdir("shards");
    write_files(&dir, "tiny.json", &tiny_sweep());
    ok(hcsim(
        &dir,
        &["sweep", "sweeps/tiny.json", "--out", "whole"],
    ));
    for k in 1..=3 {
        let shard = format!("{k}/3");
        let out = format!("shard{k}");
        ok(hcsim(
            &dir,
            &[
                "sweep",
                "sweeps/tiny.json",
                "--shard",
                &shard,
                "--out",
                &out,
            ],
        ));
    }
    // Any order of the shard directories.
    ok(hcsim(
        &dir,
        &["merge", "shard3", "shard1", "shard2", "--out", "merged"],
    ));
    assert_same_outputs(&dir.join("whole"), &dir.join("merged"));

    let err = user_error(hcsim(&dir, &["merge", "shard1", "shard3", "--out", "m2"]));
    assert!(err.contains("missing shard 2/3"), "{err}");
    let err = user_error(hcsim(&dir, &["merge", "shard1", "shard1", "--out", "m3"]));
    assert!(err.contains("are both shard 1/3"), "{err}");
}

#[test]
fn an_interrupted_sweep_resumes_to_identical_outputs() {
    let dir = workdir("resume");
    write_files(&dir, "tiny.json", &tiny_sweep());
    ok(hcsim(
        &dir,
        &["sweep", "sweeps/tiny.json", "--out", "whole"],
    ));

    // Stop after 5 completed runs, as a crash or Ctrl-C would.
    let args = ["sweep", "sweeps/tiny.json", "--jobs", "2", "--out", "cut"];
    let out = hcsim_env(&dir, &args, &[("HCSIM_STOP_AFTER", "5")]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--resume"), "{err}");
    assert!(
        !dir.join("cut/results.json").exists(),
        "no output from a cut sweep"
    );
    let journal = dir.join("cut/.checkpoint/runs.jsonl");
    let kept = fs::read_to_string(&journal).unwrap().lines().count() - 1;
    assert_eq!(kept, 5, "runs checkpointed");

    // Starting over by accident would throw the checkpoint away: refused.
    let err = user_error(hcsim(&dir, &args));
    assert!(err.contains("pass --resume"), "{err}");

    // A write cut short leaves a torn last line: it is ignored.
    let mut text = fs::read_to_string(&journal).unwrap();
    text.push_str("{\"run\": 11, \"point\": 3, \"re");
    fs::write(&journal, text).unwrap();

    let mut resume = args.to_vec();
    resume.push("--resume");
    ok(hcsim(&dir, &resume));
    assert_same_outputs(&dir.join("whole"), &dir.join("cut"));
    assert!(!dir.join("cut/.checkpoint").exists());
}

#[test]
fn a_resumed_checkpoint_must_belong_to_the_same_sweep() {
    let dir = workdir("resume-other");
    write_files(&dir, "tiny.json", &tiny_sweep());
    let args = ["sweep", "sweeps/tiny.json", "--jobs", "1", "--out", "cut"];
    let out = hcsim_env(&dir, &args, &[("HCSIM_STOP_AFTER", "2")]);
    assert!(!out.status.success());
    let mut changed = tiny_sweep();
    changed["reps"] = json!(4);
    fs::write(dir.join("sweeps/tiny.json"), changed.to_string()).unwrap();
    let err = user_error(hcsim(&dir, &[&args[..], &["--resume"]].concat()));
    assert!(err.contains("belongs to a different sweep"), "{err}");
}

/// Summary aggregates (`{median, min, max, mean, n}` nested by metric) flattened
/// to the sweep's dotted metric names.
fn flatten_aggregates(v: &Value, prefix: &str, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(m) if m.contains_key("median") && m.contains_key("n") => {
            out.insert(prefix.to_string(), v.clone());
        }
        Value::Object(m) => {
            for (k, x) in m {
                flatten_aggregates(x, &format!("{prefix}.{k}"), out);
            }
        }
        Value::Array(items) => {
            for x in items {
                let name = x["name"].as_str().unwrap();
                flatten_aggregates(x, &format!("{prefix}.{name}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn the_model_point_equals_hcsim_run_with_the_same_seeds() {
    let dir = workdir("equals-run");
    write_files(&dir, "tiny.json", &tiny_sweep());
    ok(hcsim(&dir, &["sweep", "sweeps/tiny.json", "--out", "sw"]));
    ok(hcsim(
        &dir,
        &[
            "run",
            "models/tiny.json",
            "--reps",
            "3",
            "--out",
            "run",
            "--format",
            "json",
        ],
    ));
    let results = read_json(&dir.join("sw/results.json"));
    let summary = read_json(&dir.join("run/summary.json"));
    let point = results["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            p["values"]
                == json!({"policy.max_fails": 3, "policy.fail_timeout": "5s", "policy.fail_timeout_s": 5.0})
        })
        .expect("the point max_fails=3 fail_timeout=5s");
    let run_seeds: Vec<&Value> = summary["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["seed"])
        .collect();
    let point_seeds: Vec<&Value> = point["seeds"].as_array().unwrap().iter().collect();
    assert_eq!(point_seeds, run_seeds);

    let mut expected = BTreeMap::new();
    for section in ["client", "nodes", "clock_phase_s", "events", "probe_rounds"] {
        flatten_aggregates(&summary[section], section, &mut expected);
    }
    assert!(expected.len() > 20, "{} metrics", expected.len());
    assert!(expected.contains_key("nodes.A.first_ejection_delay_s"));
    for (metric, agg) in &expected {
        let stats = &point["stats"][metric];
        for f in ["median", "mean", "min", "max", "n"] {
            assert_eq!(stats[f], agg[f], "{metric}.{f}");
        }
    }
    // And nothing in the sweep's metrics is unknown to hcsim run.
    let names: Vec<&str> = results["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    for n in &names {
        assert!(expected.contains_key(*n), "{n} is not in summary.json");
    }
}

#[test]
fn seeds_are_common_by_default_and_independent_on_request() {
    use hcsim::engine::rng::derive_seed;
    let dir = workdir("seeds");
    let mut sweep = tiny_sweep();
    sweep["seed"] = json!(99);
    write_files(&dir, "common.json", &sweep);
    sweep["seeds"] = json!("independent");
    fs::write(dir.join("sweeps/independent.json"), sweep.to_string()).unwrap();
    ok(hcsim(&dir, &["sweep", "sweeps/common.json", "--out", "c"]));
    ok(hcsim(
        &dir,
        &["sweep", "sweeps/independent.json", "--out", "i"],
    ));
    for (out, common) in [("c", true), ("i", false)] {
        let results = read_json(&dir.join(out).join("results.json"));
        for run in results["runs"].as_array().unwrap() {
            let p = run["point"].as_u64().unwrap();
            let r = run["rep"].as_u64().unwrap();
            let expected = match (common, r) {
                (true, 0) => 99,
                (true, r) => derive_seed(99, &[r]),
                (false, r) => derive_seed(99, &[p, r]),
            };
            assert_eq!(run["seed"], json!(expected), "{out}: point {p} rep {r}");
        }
    }
}

#[test]
fn outputs_name_columns_by_path_and_node_name() {
    let dir = workdir("columns");
    let mut sweep = tiny_sweep();
    sweep["axes"] = json!([
        {"path": "policy", "values": [{"kind": "none"}, {"kind": "max_fails", "max_fails": 2, "fail_timeout": "1s"}], "labels": ["off", "mf2"]},
        {"zip": [
            {"path": "gateway.proxy_connect_timeout", "values": ["1s", "2s"]},
            {"path": "gateway.proxy_read_timeout", "values": ["3s", "4s"]}
        ]}
    ]);
    write_files(&dir, "tiny.json", &sweep);
    ok(hcsim(&dir, &["sweep", "sweeps/tiny.json", "--out", "o"]));
    let runs = fs::read_to_string(dir.join("o/runs.csv")).unwrap();
    let header: Vec<&str> = runs.lines().next().unwrap().split(',').collect();
    assert_eq!(
        header[..8],
        [
            "point",
            "rep",
            "policy",
            "gateway.proxy_connect_timeout",
            "gateway.proxy_connect_timeout_s",
            "gateway.proxy_read_timeout",
            "gateway.proxy_read_timeout_s",
            "seed"
        ],
        "a duration axis is followed by its value in seconds"
    );
    assert_eq!(
        header[8], "overloaded",
        "a run's overload flag follows its seed"
    );
    for col in [
        "nodes.A.utilization",
        "client.latency_ms.p999",
        "client.slower_than.1s",
        "nodes.A.share",
        "nodes.C.ejected_time_s",
        "client.status.200",
        "client.ok",
    ] {
        assert!(header.contains(&col), "{col} missing from {header:?}");
    }
    let a = header.iter().position(|c| *c == "nodes.A.share").unwrap();
    let c = header.iter().position(|c| *c == "nodes.C.share").unwrap();
    assert!(a < c, "nodes keep the model's order");
    assert_eq!(runs.lines().count(), 1 + 4 * 3);
    assert!(
        runs.lines()
            .nth(1)
            .unwrap()
            .starts_with("0,0,off,1s,1,3s,3,")
    );
    let points = fs::read_to_string(dir.join("o/points.csv")).unwrap();
    let head = points.lines().next().unwrap();
    assert!(head.starts_with(
        "point,policy,gateway.proxy_connect_timeout,gateway.proxy_connect_timeout_s,gateway.proxy_read_timeout,gateway.proxy_read_timeout_s,overloaded,"
    ));
    assert!(
        points
            .lines()
            .skip(1)
            .all(|l| l.split(',').nth(6) == Some("0")),
        "no point of a light sweep overloads"
    );
    for col in [
        "nodes.A.share.median",
        "nodes.A.share.mean",
        "nodes.A.share.p5",
        "nodes.A.share.p95",
    ] {
        assert!(head.split(',').any(|h| h == col), "{col}");
    }
    assert_eq!(points.lines().count(), 1 + 4);
    let results = read_json(&dir.join("o/results.json"));
    assert_eq!(results["hcsim_version"], json!(env!("CARGO_PKG_VERSION")));
    assert_eq!(results["command"], json!("hcsim sweep sweeps/tiny.json"));
    assert_eq!(results["definition"], sweep);
    assert_eq!(results["model_file"], json!("models/tiny.json"));
    assert_eq!(results["points"][2]["values"]["policy"], json!("mf2"));
    assert_eq!(
        results["points"][3]["values"]["gateway.proxy_read_timeout_s"],
        json!(4.0)
    );
    assert!(
        results["points"][0]["values"].get("policy_s").is_none(),
        "only duration axes get seconds"
    );
}

#[test]
fn bad_sweep_files_exit_2_naming_file_axis_and_path() {
    let dir = workdir("bad");
    let cases: Vec<(Value, &[&str])> = vec![
        (
            json!([{"path": "policy.max_fails", "values": [1]}, {"path": "policy.max_fail", "values": [1]}]),
            &[
                "sweeps/bad.json: axes[1]: `policy.max_fail` is not in the model models/tiny.json",
                "`policy` has no field `max_fail`",
            ],
        ),
        (
            json!([{"zip": [{"path": "policy.max_fails", "values": [1]}, {"path": "nodes.D.weight", "values": [1]}]}]),
            &[
                "sweeps/bad.json: axes[0].zip[1]: `nodes.D.weight` is not in the model",
                "`nodes` has no field `D`",
            ],
        ),
        (
            json!([{"path": "policy.fail_timeout", "values": ["5s", "1500ms"]}]),
            &[
                "sweeps/bad.json: point 1 (policy.fail_timeout=1500ms): models/tiny.json: policy.fail_timeout: nginx takes fail_timeout in whole seconds",
            ],
        ),
        (
            json!([{"path": "policy.max_fails", "range": {"from": 1, "to": 5, "step": 0}}]),
            &["sweeps/bad.json: axes[0].range.step: must not be zero"],
        ),
        (
            json!([{"path": "policy.max_fails", "range": {"from": 5, "to": 1, "step": 1}}]),
            &["sweeps/bad.json: axes[0].range: is empty"],
        ),
        (
            json!([{"path": "policy.max_fails", "range": {"from": 1, "to": 1000000, "step": 1}}]),
            &[
                "sweeps/bad.json: axes[0].range: expands to 1000000 values, more than 10000 per axis",
            ],
        ),
        (
            json!([{"path": "policy.max_fails", "values": [1], "lables": ["x"]}]),
            &[
                "sweeps/bad.json: axes[0].lables: unknown field `lables`, expected one of `path`, `values`, `range`, `labels`, `zip`",
            ],
        ),
    ];
    fs::create_dir_all(dir.join("sweeps")).unwrap();
    fs::create_dir_all(dir.join("models")).unwrap();
    fs::write(dir.join("models/tiny.json"), tiny_model().to_string()).unwrap();
    for (axes, expected) in cases {
        let mut sweep = tiny_sweep();
        sweep["axes"] = axes;
        fs::write(dir.join("sweeps/bad.json"), sweep.to_string()).unwrap();
        let err = user_error(hcsim(&dir, &["sweep", "sweeps/bad.json", "--out", "o"]));
        for e in expected {
            assert!(err.contains(e), "expected {e:?} in:\n{err}");
        }
        assert!(
            !dir.join("o").exists(),
            "nothing is written for a bad sweep"
        );
    }
    let mut sweep = tiny_sweep();
    sweep["modle"] = json!("x");
    fs::write(dir.join("sweeps/bad.json"), sweep.to_string()).unwrap();
    let err = user_error(hcsim(&dir, &["sweep", "sweeps/bad.json"]));
    assert!(
        err.contains("sweeps/bad.json: modle: unknown field `modle`"),
        "{err}"
    );
    fs::write(dir.join("sweeps/tiny.json"), tiny_sweep().to_string()).unwrap();
    let err = user_error(hcsim(&dir, &["sweep", "sweeps/tiny.json", "--jobs", "0"]));
    assert!(err.contains("--jobs must be at least 1"), "{err}");
    let err = user_error(hcsim(
        &dir,
        &["sweep", "sweeps/tiny.json", "--shard", "4/3"],
    ));
    assert!(err.contains("expected K/N with 1 <= K <= N"), "{err}");
}

/// The fenced block after `<!-- sweep-parallel-example -->` in the README.
fn readme_parallel_example() -> String {
    let readme =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let (_, after) = readme
        .split_once("<!-- sweep-parallel-example -->")
        .expect("README marks its GNU parallel example");
    let body = after.split_once("```sh\n").expect("a ```sh block").1;
    body.split_once("```")
        .expect("a closed block")
        .0
        .to_string()
}

#[test]
fn the_readme_gnu_parallel_example_gives_the_unsharded_outputs() {
    let example = readme_parallel_example();
    assert!(example.contains("--shard {}/3"), "{example}");
    let on_path = Command::new("parallel")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !on_path.is_ok_and(|s| s.success()) {
        assert!(
            std::env::var_os("HCSIM_REQUIRE_TOOLS").is_none(),
            "HCSIM_REQUIRE_TOOLS is set but GNU parallel is not installed"
        );
        eprintln!("skipped: GNU parallel is not on PATH (scripts/test-deps.sh installs it)");
        return;
    }
    // Run the documented commands verbatim on a tiny sweep under the shipped name.
    let dir = workdir("parallel");
    write_files(&dir, "max-fails-grid-crash.json", &tiny_sweep());
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_hcsim")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &example])
        .current_dir(&dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    ok(out);
    ok(hcsim(
        &dir,
        &[
            "sweep",
            "sweeps/max-fails-grid-crash.json",
            "--out",
            "whole",
        ],
    ));
    assert_same_outputs(&dir.join("whole"), &dir.join("output/max-fails-grid-crash"));
}

// ------------------------------------------------------- command-line grids

/// The README's command-line grid: 5 × 2 points × 2 reps of the shipped model.
const ACCEPTANCE: [&str; 9] = [
    "sweep",
    "models/crash-10s-of-3.json",
    "--param",
    "policy.max_fails=1,2,3,4,5",
    "--param",
    "policy.fail_timeout=1s,5s",
    "--reps",
    "2",
    "--no-charts",
];

/// `dir/models/crash-10s-of-3.json`, the shipped model.
fn copy_shipped_model(dir: &Path) {
    fs::create_dir_all(dir.join("models")).unwrap();
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/crash-10s-of-3.json");
    fs::copy(model, dir.join("models/crash-10s-of-3.json")).unwrap();
}

fn csv_header(path: &Path) -> Vec<String> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let head = text.lines().next().unwrap();
    head.split(',').map(str::to_string).collect()
}

#[test]
fn a_command_line_grid_writes_every_point_with_seconds_columns() {
    let dir = workdir("grid-acceptance");
    copy_shipped_model(&dir);
    let out = ok(hcsim(&dir, &[&ACCEPTANCE[..], &["--jobs", "1"]].concat()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let name = "crash-10s-of-3-sweep-max_fails=1,2,3,4,5-fail_timeout=1s,5s";
    let o = dir.join("output").join(name);
    assert!(
        stdout.contains(&format!("wrote output/{name} (")),
        "the output directory is named after the model and the params:\n{stdout}"
    );
    // The end summary: each charted metric's extremes and where they are.
    assert!(stdout.contains("10 points × 2 reps"), "{stdout}");
    assert!(stdout.contains("nodes.A.share (median)"), "{stdout}");
    assert!(stdout.contains("policy.max_fails="), "{stdout}");

    let points = fs::read_to_string(o.join("points.csv")).unwrap();
    assert_eq!(points.lines().count(), 1 + 10, "10 points");
    let head = csv_header(&o.join("points.csv"));
    assert_eq!(
        head[..4],
        [
            "point",
            "policy.max_fails",
            "policy.fail_timeout",
            "policy.fail_timeout_s"
        ]
    );
    let rows: Vec<&str> = points.lines().skip(1).collect();
    assert!(rows[0].starts_with("0,1,1s,1,"), "{}", rows[0]);
    assert!(rows[9].starts_with("9,5,5s,5,"), "{}", rows[9]);
    let runs = fs::read_to_string(o.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 1 + 20);
    assert_eq!(
        csv_header(&o.join("runs.csv"))[..6],
        [
            "point",
            "rep",
            "policy.max_fails",
            "policy.fail_timeout",
            "policy.fail_timeout_s",
            "seed"
        ]
    );
    let results = read_json(&o.join("results.json"));
    assert_eq!(
        results["command"],
        json!(
            "hcsim sweep models/crash-10s-of-3.json --param policy.max_fails=1,2,3,4,5 --param policy.fail_timeout=1s,5s --reps 2"
        )
    );
    assert_eq!(results["sweep"], json!(name));
    assert_eq!(results["sweep_file"], json!(""));
    assert_eq!(results["model_file"], json!("models/crash-10s-of-3.json"));
    assert_eq!(results["seed"], json!(1), "the model's seed");
    assert_eq!(
        results["definition"]["axes"][1],
        json!({"path": "policy.fail_timeout", "values": ["1s", "5s"]})
    );
    assert_eq!(
        results["points"][1]["values"],
        json!({"policy.max_fails": 1, "policy.fail_timeout": "5s", "policy.fail_timeout_s": 5.0})
    );

    // Determinism: one thread or two, the same bytes.
    ok(hcsim(
        &dir,
        &[&ACCEPTANCE[..], &["--jobs", "2", "--out", "j2", "--quiet"]].concat(),
    ));
    assert_same_outputs(&o, &dir.join("j2"));
}

#[test]
fn a_command_line_grid_equals_the_sweep_file_that_says_the_same() {
    let dir = workdir("grid-vs-file");
    write_files(&dir, "tiny.json", &tiny_sweep());
    ok(hcsim(&dir, &["sweep", "sweeps/tiny.json", "--out", "file"]));
    // tiny_sweep's axes as a range of integers and a range of durations.
    ok(hcsim(
        &dir,
        &[
            "sweep",
            "models/tiny.json",
            "--param",
            "policy.max_fails=1..3:2",
            "--param",
            "policy.fail_timeout=2s..5s:3s",
            "--reps",
            "3",
            "--out",
            "cli",
        ],
    ));
    for f in ["runs.csv", "points.csv"] {
        let a = fs::read(dir.join("file").join(f)).unwrap();
        let b = fs::read(dir.join("cli").join(f)).unwrap();
        assert!(a == b, "{f} differs");
    }
    let results = read_json(&dir.join("cli/results.json"));
    assert_eq!(
        results["definition"]["axes"],
        json!([
            {"path": "policy.max_fails", "range": {"from": 1, "to": 3, "step": 2}},
            {"path": "policy.fail_timeout", "range": {"from": "2s", "to": "5s", "step": "3s"}}
        ])
    );
    // A list of sections, split at the commas between them.
    let out = ok(hcsim(
        &dir,
        &[
            "sweep",
            "models/tiny.json",
            "--param",
            r#"policy={"kind":"none"},{"kind":"max_fails","max_fails":1,"fail_timeout":"2s"}"#,
            "--param",
            "faults[0].for=1s..2s:500ms",
            "--quiet",
            "--no-charts",
        ],
    ));
    assert!(out.stdout.is_empty(), "--quiet prints nothing");
    // Rewritten (JSON has characters a directory name should not): cut, with a hash.
    let grids: Vec<_> = fs::read_dir(dir.join("output"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("tiny-crash-sweep-policy=-kind-none-,-kind-max_fails-"))
        .collect();
    assert_eq!(grids.len(), 1, "{grids:?}");
    let o = dir.join("output").join(&grids[0]);
    let results = read_json(&o.join("results.json"));
    assert_eq!(results["points"].as_array().unwrap().len(), 6);
    assert_eq!(
        results["points"][5]["values"]["faults[0].for_s"],
        json!(2.0)
    );
}

#[test]
fn set_reps_and_seed_override_a_sweep_file() {
    let dir = workdir("grid-overrides");
    write_files(&dir, "tiny.json", &tiny_sweep());
    let out = ok(hcsim(
        &dir,
        &[
            "sweep",
            "sweeps/tiny.json",
            "--set",
            "duration=4s",
            "--reps",
            "2",
            "--seed",
            "5",
            "--out",
            "o",
            "--no-charts",
        ],
    ));
    let results = read_json(&dir.join("o/results.json"));
    assert_eq!(results["reps"], json!(2));
    assert_eq!(results["seed"], json!(5));
    assert_eq!(results["model"]["duration"], json!("4s"));
    assert_eq!(results["runs"].as_array().unwrap().len(), 4 * 2);
    assert_eq!(results["runs"][0]["seed"], json!(5));
    assert_eq!(
        results["command"],
        json!("hcsim sweep sweeps/tiny.json --set duration=4s --reps 2 --seed 5")
    );
    assert_eq!(results["definition"], tiny_sweep(), "the file as written");
    assert!(String::from_utf8_lossy(&out.stdout).contains("4 points × 2 reps"));

    // On a command-line grid, --set applies to the model before the grid.
    ok(hcsim(
        &dir,
        &[
            "sweep",
            "models/tiny.json",
            "--param",
            "policy.max_fails=1,2",
            "--set",
            "clients.rate_per_s=20",
            "--seed",
            "3",
            "--no-charts",
        ],
    ));
    let o = dir.join("output/tiny-crash-sweep-max_fails=1,2-with-rate_per_s=20");
    let results = read_json(&o.join("results.json"));
    assert_eq!(results["model"]["clients"]["rate_per_s"], json!(20));
    assert_eq!(results["seed"], json!(3));
    assert_eq!(results["reps"], json!(1));
    assert_eq!(
        results["command"],
        json!(
            "hcsim sweep models/tiny.json --param policy.max_fails=1,2 --set clients.rate_per_s=20 --seed 3"
        )
    );
}

#[test]
fn a_command_line_grid_resumes_shards_and_merges() {
    let dir = workdir("grid-resume");
    write_files(&dir, "tiny.json", &tiny_sweep());
    let grid = [
        "sweep",
        "models/tiny.json",
        "--param",
        "policy.max_fails=1,3",
        "--param",
        "policy.fail_timeout=2s..5s:3s",
        "--reps",
        "3",
        "--no-charts",
    ];
    ok(hcsim(&dir, &[&grid[..], &["--out", "whole"]].concat()));

    // Cut after 5 runs, in the default directory; the same arguments resume it.
    let out = hcsim_env(&dir, &grid, &[("HCSIM_STOP_AFTER", "5")]);
    assert!(!out.status.success());
    let cut = dir.join("output/tiny-crash-sweep-max_fails=1,3-fail_timeout=2s..5s_by_3s");
    assert!(cut.join(".checkpoint/runs.jsonl").exists());

    // Other arguments are refused, naming the command that wrote the checkpoint.
    let other = [
        "sweep",
        "models/tiny.json",
        "--param",
        "policy.max_fails=1,3",
        "--param",
        "policy.fail_timeout=2s..5s:3s",
        "--reps",
        "4",
        "--resume",
        "--out",
        cut.to_str().unwrap(),
    ];
    let err = user_error(hcsim(&dir, &other));
    assert!(
        err.contains(
            "belongs to a different sweep: it was written by `hcsim sweep models/tiny.json --param policy.max_fails=1,3 --param policy.fail_timeout=2s..5s:3s --reps 3`, not `hcsim sweep models/tiny.json --param policy.max_fails=1,3 --param policy.fail_timeout=2s..5s:3s --reps 4`"
        ),
        "{err}"
    );
    let out = ok(hcsim(&dir, &[&grid[..], &["--resume"]].concat()));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("resuming: 5 runs already done, 7 to go")
    );
    assert_same_outputs(&dir.join("whole"), &cut);

    ok(hcsim(
        &dir,
        &[&grid[..], &["--shard", "1/2", "--out", "shard1"]].concat(),
    ));
    // Another machine, another directory: the model's path is not part of the grid.
    fs::create_dir_all(dir.join("elsewhere")).unwrap();
    let mut moved = grid;
    moved[1] = "../models/tiny.json";
    ok(hcsim(
        &dir.join("elsewhere"),
        &[&moved[..], &["--shard", "2/2", "--out", "../shard2"]].concat(),
    ));
    ok(hcsim(
        &dir,
        &[
            "merge",
            "shard2",
            "shard1",
            "--out",
            "merged",
            "--no-charts",
        ],
    ));
    assert_same_outputs(&dir.join("whole"), &dir.join("merged"));
}

#[test]
fn bad_params_exit_2_naming_the_argument_and_what_was_expected() {
    let dir = workdir("grid-bad");
    write_files(&dir, "tiny.json", &tiny_sweep());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--param", "policy.max_fails"],
            "error: --param policy.max_fails: no `=` between PATH and LIST: expected PATH=LIST, a list a,b,c or a range FROM..TO[:STEP]",
        ),
        (
            vec!["--param", "policy.max_fails="],
            "error: --param policy.max_fails=: the list of values is empty: expected PATH=LIST",
        ),
        (
            vec!["--param", "policy.max_fails=1,,3"],
            "error: --param policy.max_fails=1,,3: value 2 of the list is empty",
        ),
        (
            vec!["--param", "policy.max_fail=1,2"],
            "error: --param policy.max_fail=1,2: `policy.max_fail` is not in the model models/tiny.json: `policy` has no field `max_fail` (did you mean `max_fails`?); an optional field that the model leaves out can be given a value in the model or with --set PATH=VALUE",
        ),
        (
            vec!["--param", "policy.max_fails=5..1"],
            "error: --param policy.max_fails=5..1: the range is empty: from 5 never reaches 1 by steps of 1; a negative STEP counts down",
        ),
        (
            vec!["--param", "policy.max_fails=1..20000"],
            "error: --param policy.max_fails=1..20000: the range expands to 20000 values, more than 10000 per axis",
        ),
        (
            vec!["--param", "policy.fail_timeout=1s..10s"],
            "error: --param policy.fail_timeout=1s..10s: a range of durations needs a STEP: FROM..TO:STEP, e.g. 1s..10s:1s",
        ),
        (
            vec!["--param", "policy.fail_timeout=1s..10:1s"],
            "error: --param policy.fail_timeout=1s..10:1s: FROM and TO must be both numbers or both durations",
        ),
        (
            vec!["--param", "policy.max_fails=a,b"],
            "error: --param policy.max_fails=a,b: at point 0 (policy.max_fails=a): models/tiny.json: policy.max_fails: invalid type: string \"a\", expected",
        ),
        (
            vec![
                "--param",
                "policy.max_fails=1,2",
                "--param",
                "policy.fail_timeout=5s,1500ms",
            ],
            "error: --param policy.fail_timeout=5s,1500ms: at point 1 (policy.max_fails=1, policy.fail_timeout=1500ms): models/tiny.json: policy.fail_timeout: nginx takes fail_timeout in whole seconds",
        ),
        (
            vec![
                "--param",
                "policy.max_fails=1",
                "--param",
                "policy.max_fails=2",
            ],
            "error: --param policy.max_fails=2: `policy.max_fails` is already an axis, given by --param policy.max_fails=1",
        ),
        (
            vec![
                "--param",
                "policy.max_fails=1..10000",
                "--param",
                "nodes.B.weight=1..11",
            ],
            "error: --param: the grid has 10000 × 11 points, more than 100000",
        ),
        (
            vec![
                "--param",
                "policy.max_fails=1,2",
                "--set",
                "policy.max_fails",
            ],
            "error: --set policy.max_fails: expected PATH=VALUE",
        ),
        (
            vec![
                "--param",
                "policy.max_fails=1,2",
                "--set",
                "clients.rate_per_s=fast",
            ],
            "error: models/tiny.json: clients.rate_per_s: invalid type: string \"fast\", expected f64 (set by --set clients.rate_per_s=fast)",
        ),
        (
            vec![],
            "error: models/tiny.json is a model: give the grid with --param PATH=LIST",
        ),
    ];
    for (args, want) in cases {
        let all = [&["sweep", "models/tiny.json", "--out", "o"][..], &args[..]].concat();
        let err = user_error(hcsim(&dir, &all));
        assert!(
            err.starts_with(want),
            "{args:?}: expected {want:?} in:\n{err}"
        );
        assert!(!dir.join("o").exists(), "{args:?}: nothing is written");
    }
    let err = user_error(hcsim(
        &dir,
        &["sweep", "sweeps/tiny.json", "--param", "policy.max_fails=1"],
    ));
    assert!(
        err.starts_with("error: sweeps/tiny.json is a sweep file, which has its own `axes`"),
        "{err}"
    );
    let err = user_error(hcsim(
        &dir,
        &["sweep", "sweeps/tiny.json", "--set", "policy.max_fail=2"],
    ));
    assert!(
        err.contains("its model with --set applied") && err.contains("unknown field `max_fail`"),
        "{err}"
    );
    let err = user_error(hcsim(&dir, &["sweep", "sweeps/tiny.json", "--reps", "0"]));
    assert!(err.contains("--reps"), "{err}");
}

/// A point past the nodes' capacity is flagged: `overloaded` counts its runs
/// with an overload warning in points.csv, runs.csv and results.json, and
/// report.html names it.
#[test]
fn overloaded_points_are_flagged() {
    let dir = workdir("overload");
    let mut sweep = tiny_sweep();
    sweep["reps"] = json!(2);
    // three nodes of 64 workers × 5 ms: about 38,000 requests/s in all
    sweep["axes"] = json!([{"path": "clients.rate_per_s", "values": [50, 60000]}]);
    write_files(&dir, "tiny.json", &sweep);
    ok(hcsim(&dir, &["sweep", "sweeps/tiny.json", "--out", "o"]));
    let points = fs::read_to_string(dir.join("o/points.csv")).unwrap();
    let rows: Vec<Vec<&str>> = points.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0][..3], ["point", "clients.rate_per_s", "overloaded"]);
    assert_eq!((rows[1][2], rows[2][2]), ("0", "2"));
    let runs = fs::read_to_string(dir.join("o/runs.csv")).unwrap();
    let flags: Vec<&str> = runs
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(4).unwrap())
        .collect();
    assert_eq!(flags, ["0", "0", "1", "1"]);
    let results = read_json(&dir.join("o/results.json"));
    assert_eq!(results["points"][1]["overloaded"], json!(2));
    assert_eq!(results["runs"][0]["overloaded"], json!(false));
    let report = fs::read_to_string(dir.join("o/report.html")).unwrap();
    assert!(
        report.contains("Warning (overload): 1 of 2 points"),
        "report.html does not flag the point"
    );
}

// ------------------------------------------------- --shard auto, merge's report

/// `--shard auto` in the tasks of an AWS Batch array (0-based, with a
/// size), `--shard K/N --shard-base 0`, and `--shard K/N` give the same
/// shard files, and the merge of the auto shards equals the unsharded sweep.
#[test]
fn shard_auto_and_shard_base_0_name_the_same_shards() {
    let dir = workdir("shard-auto");
    write_files(&dir, "tiny.json", &tiny_sweep());
    ok(hcsim(
        &dir,
        &["sweep", "sweeps/tiny.json", "--quiet", "--out", "whole"],
    ));
    for i in 0..4 {
        let index = i.to_string();
        let out = format!("auto/{i}");
        let env = [
            ("AWS_BATCH_JOB_ARRAY_INDEX", index.as_str()),
            ("AWS_BATCH_JOB_ARRAY_SIZE", "4"),
        ];
        let said = ok(hcsim_env(
            &dir,
            &[
                "sweep",
                "sweeps/tiny.json",
                "--shard",
                "auto",
                "--out",
                &out,
            ],
            &env,
        ));
        let err = String::from_utf8_lossy(&said.stderr);
        assert!(
            err.contains(&format!(
                "shard {}/4 runs 3 of them (AWS Batch array job AWS_BATCH_JOB_ARRAY_INDEX={i} of 4)",
                i + 1
            )),
            "{err}"
        );
        let zero = format!("{i}/4");
        let base0 = format!("base0/{i}");
        ok(hcsim(
            &dir,
            &[
                "sweep",
                "sweeps/tiny.json",
                "--quiet",
                "--shard",
                &zero,
                "--shard-base",
                "0",
                "--out",
                &base0,
            ],
        ));
        let one = format!("{}/4", i + 1);
        let base1 = format!("base1/{i}");
        ok(hcsim(
            &dir,
            &[
                "sweep",
                "sweeps/tiny.json",
                "--quiet",
                "--shard",
                &one,
                "--out",
                &base1,
            ],
        ));
        let file = |d: &str| fs::read(dir.join(d).join("runs.jsonl")).unwrap();
        assert!(
            file(&out) == file(&base0) && file(&out) == file(&base1),
            "shard {one}"
        );
    }
    let merged = ok(hcsim(
        &dir,
        &[
            "merge",
            "auto/2",
            "auto/0",
            "auto/3",
            "auto/1",
            "--out",
            "merged",
            "--no-charts",
        ],
    ));
    assert!(merged.status.success());
    assert_same_outputs(&dir.join("whole"), &dir.join("merged"));

    // 0/4 without --shard-base 0 is a typo; auto outside an array is refused.
    let err = user_error(hcsim(
        &dir,
        &["sweep", "sweeps/tiny.json", "--shard", "0/4"],
    ));
    assert!(err.contains("--shard 0/4: K counts from 1"), "{err}");
    assert!(err.contains("add --shard-base 0"), "{err}");
    let err = user_error(hcsim(
        &dir,
        &["sweep", "sweeps/tiny.json", "--shard", "auto"],
    ));
    assert!(
        err.contains("--shard auto: none of SLURM_ARRAY_TASK_ID"),
        "{err}"
    );
    assert!(
        err.contains("JOB_COMPLETION_INDEX (Kubernetes Indexed Job)"),
        "{err}"
    );
    let err = user_error(hcsim_env(
        &dir,
        &["sweep", "sweeps/tiny.json", "--shard", "auto"],
        &[("JOB_COMPLETION_INDEX", "2")],
    ));
    assert!(err.contains("pass --shards N"), "{err}");
    let err = user_error(hcsim(
        &dir,
        &["sweep", "sweeps/tiny.json", "--shard-base", "0"],
    ));
    assert!(err.contains("--shard"), "{err}");
}

/// A merge with one shard interrupted and one never run lists both, with
/// the commands that rerun them, writes nothing, and exits 2; the printed
/// commands then complete the merge.
#[test]
fn merge_names_missing_and_incomplete_shards_and_how_to_rerun_them() {
    let dir = workdir("merge-gaps");
    write_files(&dir, "tiny.json", &tiny_sweep());
    ok(hcsim(
        &dir,
        &["sweep", "sweeps/tiny.json", "--quiet", "--out", "whole"],
    ));
    for k in [1, 3] {
        let shard = format!("{k}/4");
        let out = format!("shards/task-{k}");
        ok(hcsim(
            &dir,
            &[
                "sweep",
                "sweeps/tiny.json",
                "--quiet",
                "--shard",
                &shard,
                "--out",
                &out,
            ],
        ));
    }
    // Shard 2/4 stops after one of its three runs, as if killed.
    let cut = hcsim_env(
        &dir,
        &[
            "sweep",
            "sweeps/tiny.json",
            "--quiet",
            "--jobs",
            "1",
            "--shard",
            "2/4",
            "--out",
            "shards/task-2",
        ],
        &[("HCSIM_STOP_AFTER", "1")],
    );
    assert_eq!(cut.status.code(), Some(2));
    let err = user_error(hcsim(
        &dir,
        &[
            "merge",
            "shards/task-1",
            "shards/task-2",
            "shards/task-3",
            "--out",
            "merged",
        ],
    ));
    let expected = "error: merge needs all 4 shards of sweep tiny; 2 of them cannot be merged yet, and nothing was written:
  incomplete shard 2/4: shards/task-2 holds the checkpoint of 1 of its 3 runs (its task was interrupted or killed); --resume runs the rest
    rerun: hcsim sweep sweeps/tiny.json --shard 2/4 --out shards/task-2 --resume
  missing shard 4/4: none of the directories given holds it
    rerun: hcsim sweep sweeps/tiny.json --shard 4/4 --out shards/task-4
then run this merge again
";
    assert_eq!(err, expected);
    assert!(!dir.join("merged").exists(), "nothing written");
    for line in err
        .lines()
        .filter_map(|l| l.trim().strip_prefix("rerun: hcsim "))
    {
        let args: Vec<&str> = line.split(' ').collect();
        ok(hcsim(&dir, &args));
    }
    ok(hcsim(
        &dir,
        &[
            "merge",
            "shards/task-1",
            "shards/task-2",
            "shards/task-3",
            "shards/task-4",
            "--out",
            "merged",
            "--no-charts",
        ],
    ));
    assert_same_outputs(&dir.join("whole"), &dir.join("merged"));

    // A directory with nothing of a shard in it is named.
    fs::create_dir_all(dir.join("shards/empty")).unwrap();
    let err = user_error(hcsim(
        &dir,
        &["merge", "shards/task-1", "shards/empty", "--out", "m2"],
    ));
    assert!(err.contains("shards/empty: holds no shard output"), "{err}");
    assert!(err.contains("missing shard 2/4"), "{err}");
}
