//! `hcsim tune`: a reduced tune file (tests/tune/tiny.json, successive
//! halving over 15 nginx candidates in two scenarios of 20 s) gives a Pareto
//! set, a recommendation verified on fresh seeds that `hcsim run` reproduces
//! exactly, a chart and a config snippet; the same bytes with --jobs 1 and
//! 2; the same bytes after a kill -9 and --resume; and bad tune files exit 2
//! naming the JSON path before anything runs. Every process started here is
//! waited for or killed by its pid.

use crate::{await_lines, kill, root, tmp};
use hcsim::tune::metric::Metric;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_hcsim");
const TINY: &str = "tests/tune/tiny.json";

/// Runs hcsim from the repository root, without the test hooks of the environment.
fn hcsim_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(root())
        .env_remove("HCSIM_STOP_AFTER")
        .env_remove("HCSIM_HANG_AFTER");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run hcsim")
}

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn tune(out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["tune", TINY, "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    hcsim_env(&args, &[])
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

/// Every file under `dir` (relative path → bytes), but the lock and the wall time.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for e in fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                if name != ".hcsim.lock" && name != "timing.json" {
                    out.push((
                        p.strip_prefix(base).unwrap().to_path_buf(),
                        fs::read(&p).unwrap(),
                    ));
                }
            }
        }
    }
    let mut out = vec![];
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn assert_same_files(a: &Path, b: &Path) {
    let (x, y) = (files(a), files(b));
    let names = |v: &[(PathBuf, Vec<u8>)]| v.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&x),
        names(&y),
        "{} and {} hold other files",
        a.display(),
        b.display()
    );
    for ((p, bx), (_, by)) in x.iter().zip(&y) {
        assert!(
            bx == by,
            "{} differs between {} and {}",
            p.display(),
            a.display(),
            b.display()
        );
    }
}

#[test]
fn a_tune_recommends_from_its_pareto_set_and_writes_chart_and_snippet() {
    let dir = tmp("tune-outputs");
    let (one, two) = (dir.join("one"), dir.join("two"));
    let out = ok(tune(&two, &["--jobs", "2"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("the Pareto set has") && stdout.contains("recommended (*):"),
        "{stdout}"
    );
    let r = read_json(&two.join("tune.json"));
    assert_eq!(r["search"]["method"], "successive_halving");
    let rungs = r["search"]["rungs"].as_array().unwrap();
    assert_eq!(rungs.len(), 2, "reps 1 then 3");
    assert!(rungs[1]["candidates"].as_u64() < rungs[0]["candidates"].as_u64());
    let pareto: Vec<u64> = r["pareto"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(pareto.len() >= 3, "pareto {pareto:?}");
    // The Pareto set: feasible, of the last rung, and no member dominated by another.
    let cands = r["candidates"].as_array().unwrap();
    let objs: Vec<String> = r["objectives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_string())
        .collect();
    let vec_of = |c: u64| -> Vec<f64> {
        objs.iter()
            .map(|o| {
                cands[c as usize]["objectives"][o]
                    .as_f64()
                    .unwrap_or(f64::INFINITY)
            })
            .collect()
    };
    for &c in &pareto {
        let cand = &cands[c as usize];
        assert_eq!(cand["feasible"], true);
        assert_eq!(cand["pareto"], true);
        assert_eq!(cand["rung"], 1);
        for &d in &pareto {
            let (a, b) = (vec_of(d), vec_of(c));
            let dominates =
                a.iter().zip(&b).all(|(x, y)| x <= y) && a.iter().zip(&b).any(|(x, y)| x < y);
            assert!(!dominates, "#{d} dominates #{c} in the Pareto set");
        }
    }
    let rec = r["recommended"]["candidate"].as_u64().unwrap();
    assert!(pareto.contains(&rec));
    let max_fails = r["recommended"]["params"]["policy.max_fails"].clone();
    let fail_timeout = r["recommended"]["params"]["policy.fail_timeout"]
        .as_str()
        .unwrap()
        .to_string();
    // Verification: fresh seeds, every frontier candidate re-judged.
    let v = &r["verification"];
    assert_eq!(v["fresh_seeds"], true);
    assert_eq!(v["reps"], 4);
    assert_eq!(v["candidates"].as_array().unwrap().len(), pareto.len());
    assert!(v["recommended_holds"].is_boolean());
    let search_seeds: Vec<u64> = rungs.iter().map(|g| g["seed"].as_u64().unwrap()).collect();
    assert!(!search_seeds.contains(&v["seed"].as_u64().unwrap()));
    // The chart decodes, the SVG is one, the snippet says the settings in nginx's words.
    let decoder = png::Decoder::new(std::io::BufReader::new(
        fs::File::open(two.join("frontier.png")).unwrap(),
    ));
    let info = decoder.read_info().unwrap().info().clone();
    assert_eq!((info.width, info.height), (1200, 800));
    let svg = fs::read_to_string(two.join("frontier.svg")).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains(&format!("#{rec}")),
        "the recommendation is labelled"
    );
    // Each point of the Pareto set is labelled with its settings, not only its number.
    for &c in &pareto {
        let label = cands[c as usize]["label"].as_str().unwrap();
        assert!(label.contains("max_fails="), "{label}");
        let text = format!("#{c} {label}").replace('"', "&quot;");
        assert!(svg.contains(&text), "#{c} unlabelled: {text}");
    }
    // The legend shows the marks themselves: every orange mark (the Pareto
    // set's colour) is a square marker, none a legend box.
    for rect in svg.split("<rect").skip(1).filter(|r| r.contains("#F28E2B")) {
        let attr = |name: &str| rect.split(&format!("{name}=\"")).nth(1)?.split('"').next();
        assert_eq!(attr("width"), attr("height"), "a legend box: <rect{rect}");
    }
    let conf = fs::read_to_string(two.join("recommended.nginx.conf")).unwrap();
    assert!(
        conf.contains(&format!(
            "max_fails={max_fails} fail_timeout={fail_timeout};"
        )),
        "{conf}"
    );
    let html = fs::read_to_string(two.join("report.html")).unwrap();
    assert!(
        html.contains("<svg") && html.contains("upstream nginx-3-nodes"),
        "report.html"
    );
    let timing = read_json(&two.join("timing.json"));
    assert!(timing["wall_time_s"].as_f64().is_some());

    ok(tune(&one, &["--jobs", "1", "--quiet"]));
    assert_same_files(&one, &two);
}

#[test]
fn hcsim_run_at_the_verification_seeds_reproduces_the_recommendation() {
    let dir = tmp("tune-reproduce");
    let out = dir.join("t");
    ok(tune(&out, &["--quiet"]));
    reproduces_the_recommendation(&dir, &out);
}

/// A tune may start from a gateway config: the model it imports is
/// `hcsim import`'s, byte for byte, kept as `model.json` beside tune.json,
/// and the recorded commands reproduce the recommendation from it.
#[test]
fn a_tune_from_an_imported_config_runs_on_hcsim_imports_model() {
    let dir = tmp("tune-imported");
    let out = dir.join("t");
    let file = "tests/tune/imported.json";
    ok(hcsim_env(
        &["tune", file, "--quiet", "--out", out.to_str().unwrap()],
        &[],
    ));
    let imported = ok(hcsim_env(
        &[
            "import",
            "tests/configs/e3-nginx.conf",
            "--rps",
            "100",
            "--duration",
            "20s",
        ],
        &[],
    ));
    assert_eq!(
        String::from_utf8_lossy(&imported.stdout),
        fs::read_to_string(out.join("model.json")).unwrap()
    );
    let r = read_json(&out.join("tune.json"));
    assert_eq!(
        r["model_file"],
        out.join("model.json").display().to_string()
    );
    assert!(
        r["pareto"].as_array().unwrap().len() >= 3,
        "{}",
        r["pareto"]
    );
    let snippet = fs::read_to_string(out.join("recommended.nginx.conf")).unwrap();
    assert!(
        snippet.contains("server 10.0.0.1:8080 max_fails="),
        "{snippet}"
    );
    reproduces_the_recommendation(&dir, &out);

    // A config that does not parse: exit 2 naming the config's file and line.
    let bad_dir = tmp("tune-imported-bad");
    let conf = bad_dir.join("broken.conf");
    fs::write(&conf, "upstream b {\n    server 10.0.0.1 max_fail=3;\n}\n").unwrap();
    let mut doc = read_json(&root().join(file));
    doc["import"]["file"] = conf.display().to_string().into();
    let path = bad_dir.join("tune.json");
    fs::write(&path, doc.to_string()).unwrap();
    let failed = hcsim_env(&["tune", path.to_str().unwrap()], &[]);
    assert_eq!(failed.status.code(), Some(2));
    let err = String::from_utf8_lossy(&failed.stderr);
    assert!(
        err.contains(&path.display().to_string()) && err.contains(&format!("{}:2", conf.display())),
        "{err}"
    );
}

/// Runs the commands tune.json records for the recommendation at the
/// verification seeds and checks they give its figures.
fn reproduces_the_recommendation(dir: &Path, out: &Path) {
    let r = read_json(&out.join("tune.json"));
    let model = r["model_file"].as_str().unwrap();
    let runs = r["verification"]["recommended_runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "one per scenario");
    for (i, sr) in runs.iter().enumerate() {
        let mut args: Vec<String> = vec!["run".into(), model.into()];
        for s in sr["set"].as_array().unwrap() {
            args.extend(["--set".into(), s.as_str().unwrap().into()]);
        }
        args.extend([
            "--seed".into(),
            sr["seed"].as_u64().unwrap().to_string(),
            "--reps".into(),
            sr["reps"].as_u64().unwrap().to_string(),
        ]);
        // The command recorded is this one, word for word (quoting aside).
        let unquoted = sr["command"].as_str().unwrap().replace('\'', "");
        assert_eq!(unquoted, format!("hcsim {}", args.join(" ")));
        let run_dir = dir.join(format!("run{i}"));
        args.extend([
            "--out".into(),
            run_dir.to_str().unwrap().into(),
            "--quiet".into(),
            "--no-charts".into(),
        ]);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(hcsim_env(&argv, &[]));
        let summary = read_json(&run_dir.join("summary.json"));
        let metrics = sr["metrics"].as_object().unwrap();
        assert!(!metrics.is_empty());
        for (name, m) in metrics {
            let metric = match name.strip_prefix("nodes.*.") {
                Some(f) => Metric::NodesSum(f.into()),
                None => Metric::Path(name.clone()),
            };
            let got: Vec<Option<f64>> = summary["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|run| metric.value(run))
                .collect();
            let want: Vec<Option<f64>> = m["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(Value::as_f64)
                .collect();
            assert_eq!(got, want, "{name} in {}", sr["scenario"]);
            if let Metric::Path(p) = &metric {
                // summary.json's own spread of the metric: the same figures.
                let spread = hcsim::spec::get_path(&summary, p).unwrap_or_else(|| panic!("{p}"));
                for stat in ["mean", "median", "min", "max"] {
                    assert_eq!(spread[stat], m[stat], "{stat} of {name}");
                }
            }
        }
    }
}

#[test]
fn a_tune_killed_in_its_second_rung_resumes_to_the_same_bytes() {
    let dir = tmp("tune-resume");
    let (whole, cut) = (dir.join("whole"), dir.join("cut"));
    ok(tune(&whole, &["--quiet"]));
    // Rung 0 has 30 runs; the process stays alive (holding the locks) after
    // 35, 5 of them in rung 1, until it is killed.
    let first = Command::new(BIN)
        .args([
            "tune",
            TINY,
            "--jobs",
            "1",
            "--quiet",
            "--out",
            cut.to_str().unwrap(),
        ])
        .current_dir(root())
        .env_remove("HCSIM_STOP_AFTER")
        .env("HCSIM_HANG_AFTER", "35")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let journal = cut.join(".stages/search-1/.checkpoint/runs.jsonl");
    let first = await_lines(
        &journal,
        6,
        60,
        first,
        "the tune did not checkpoint 5 runs of rung 1",
    );
    kill(first); // SIGKILL: the OS drops its locks, the checkpoint stays
    assert!(cut.join("runs/search-0.jsonl").exists(), "rung 0 was kept");
    assert!(!cut.join("tune.json").exists());

    // Without --resume, the kept runs are not thrown away silently.
    let refused = tune(&cut, &["--quiet"]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("--resume"), "{err}");

    ok(tune(&cut, &["--quiet", "--resume", "--jobs", "2"]));
    assert_same_files(&whole, &cut);
    assert!(
        !cut.join(".stages/search-1").exists(),
        "the finished stage's checkpoint is gone"
    );

    // An interruption by the stop hook, in the verification, resumes too.
    let stopped = hcsim_env(
        &[
            "tune",
            TINY,
            "--quiet",
            "--out",
            dir.join("stop").to_str().unwrap(),
        ],
        &[("HCSIM_STOP_AFTER", "80")],
    );
    assert_eq!(stopped.status.code(), Some(2));
    ok(tune(&dir.join("stop"), &["--quiet", "--resume"]));
    assert_same_files(&whole, &dir.join("stop"));
}

/// Ctrl-C (SIGINT) in the middle of a tune: exit 130 saying where the
/// finished work is and the command that finishes it.
#[test]
fn ctrl_c_in_a_tune_says_what_is_kept_and_how_to_resume() {
    let dir = tmp("tune-ctrl-c");
    let out = dir.join("cut");
    let child = Command::new(BIN)
        .args(["tune", TINY, "--jobs", "1", "--out", out.to_str().unwrap()])
        .current_dir(root())
        .env_remove("HCSIM_STOP_AFTER")
        .env("HCSIM_HANG_AFTER", "3")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let journal = out.join(".stages/search-0/.checkpoint/runs.jsonl");
    let child = await_lines(&journal, 4, 60, child, "the tune did not checkpoint 3 runs");
    let Some(done) = crate::interrupt(child, "the tune") else {
        return; // no kill(1)
    };
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted: the finished stages are kept in")
            && err.contains(&format!(
                "hcsim tune {TINY} --jobs 1 --out {} --resume",
                out.display()
            )),
        "{err}"
    );
    assert_eq!(crate::lines(&journal), 4, "the 3 runs are kept");

    // Resumed with another tune file, the checkpoint is refused in tune's words.
    let mut doc = tiny_anywhere();
    doc["reps"] = 4.into();
    let other = dir.join("other.json");
    fs::write(&other, doc.to_string()).unwrap();
    let refused = hcsim_env(
        &[
            "tune",
            other.to_str().unwrap(),
            "--resume",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains(
            "belongs to a different tune: it was written by `hcsim tune tests/tune/tiny.json`"
        ),
        "{err}"
    );
}

/// The tasks of an array share one --out: a shard runs while another shard
/// of the same stage is in progress there; the same shard twice is refused.
#[test]
fn shards_of_a_tune_share_one_output_directory() {
    let dir = tmp("tune-shared-out");
    let out = dir.join("shared");
    let child = Command::new(BIN)
        .args([
            "tune",
            TINY,
            "--jobs",
            "1",
            "--shard",
            "1/2",
            "--out",
            out.to_str().unwrap(),
        ])
        .current_dir(root())
        .env_remove("HCSIM_STOP_AFTER")
        .env("HCSIM_HANG_AFTER", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let journal = out.join(".stages/search-0.shard-1-of-2/.checkpoint/runs.jsonl");
    let child = await_lines(&journal, 2, 60, child, "shard 1/2 did not checkpoint a run");
    let second = hcsim_env(
        &[
            "tune",
            TINY,
            "--jobs",
            "1",
            "--shard",
            "auto",
            "--out",
            out.to_str().unwrap(),
        ],
        &[("CLOUD_RUN_TASK_INDEX", "1"), ("CLOUD_RUN_TASK_COUNT", "2")],
    );
    let same = tune(&out, &["--shard", "1/2"]);
    crate::kill(child);
    let second = ok(second);
    assert!(
        String::from_utf8_lossy(&second.stdout).starts_with("shard 2/2 of stage search-0: "),
        "{}",
        String::from_utf8_lossy(&second.stdout)
    );
    assert!(out.join("runs/search-0.shard-2-of-2.jsonl").exists());
    assert_eq!(same.status.code(), Some(2));
    let err = String::from_utf8_lossy(&same.stderr);
    assert!(
        err.contains("another hcsim is writing to this directory"),
        "{err}"
    );
}

/// Two machines, each running `--shard K/2` of every stage in turn and
/// exchanging their `runs/` shard files between rounds, end with the same
/// bytes as one machine running the whole tune.
#[test]
fn a_tune_run_in_shards_ends_with_the_whole_tunes_bytes() {
    let dir = tmp("tune-shards");
    let whole = dir.join("whole");
    ok(tune(&whole, &["--quiet", "--jobs", "2"]));
    let machines = [dir.join("m1"), dir.join("m2")];
    let mut stages = vec![];
    for _round in 0..5 {
        for (k, m) in machines.iter().enumerate() {
            let out = ok(tune(
                m,
                &["--shard", &format!("{}/2", k + 1), "--jobs", "1"],
            ));
            let said = String::from_utf8_lossy(&out.stdout).to_string();
            if let Some(stage) = said
                .strip_prefix(&format!("shard {}/2 of stage ", k + 1))
                .and_then(|r| r.split(':').next())
            {
                stages.push(stage.to_string());
            }
        }
        if machines.iter().all(|m| m.join("tune.json").exists()) {
            break;
        }
        // Exchange the shard files, as a shared directory or a copy would.
        for (from, to) in [(&machines[0], &machines[1]), (&machines[1], &machines[0])] {
            for e in fs::read_dir(from.join("runs")).unwrap().flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                if name.contains(".shard-") && !to.join("runs").join(&name).exists() {
                    fs::copy(e.path(), to.join("runs").join(&name)).unwrap();
                }
            }
        }
    }
    // Both machines name each stage they ran a shard of; once per stage here.
    stages.dedup();
    assert_eq!(
        stages,
        ["search-0", "search-1", "verify"],
        "the machines ran their shards of every stage, in turn"
    );
    for m in &machines {
        // The shard files stay beside the merged ones; the rest is the whole tune's.
        for e in fs::read_dir(m.join("runs")).unwrap().flatten() {
            if e.file_name().to_string_lossy().contains(".shard-") {
                fs::remove_file(e.path()).unwrap();
            }
        }
        assert_same_files(&whole, m);
    }

    // A stage with a shard missing: --resume refuses, naming what is missing.
    let part = dir.join("part");
    ok(tune(&part, &["--shard", "1/3", "--quiet"]));
    let refused = tune(&part, &["--resume", "--quiet"]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("search-0") && err.contains("missing shard 2/3, 3/3"),
        "{err}"
    );
}

/// The tiny tune file with its model's absolute path: it may be written anywhere.
fn tiny_anywhere() -> Value {
    let mut doc = read_json(&root().join(TINY));
    doc["model"] = Value::String(
        root()
            .join("models/nginx-3-nodes.json")
            .display()
            .to_string(),
    );
    doc
}

/// Writes `tune` (the tiny file with `edit` applied) into `dir` and runs it.
fn bad(dir: &Path, name: &str, edit: impl Fn(&mut Value)) -> String {
    let mut doc = tiny_anywhere();
    edit(&mut doc);
    let path = dir.join(format!("{name}.json"));
    fs::write(&path, doc.to_string()).unwrap();
    let out_dir = dir.join(format!("{name}-out"));
    let out = hcsim_env(
        &[
            "tune",
            path.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out_dir.exists(), "{name}: nothing ran");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        err.contains(&path.display().to_string()),
        "{name} names the file: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn bad_tune_files_exit_2_naming_the_json_path_before_running() {
    let dir = tmp("tune-bad");
    let err = bad(&dir, "empty-space", |d| d["space"] = serde_json::json!([]));
    assert!(err.contains(": space: the search space is empty"), "{err}");
    let err = bad(&dir, "empty-values", |d| {
        d["space"][0]["params"][0]["values"] = serde_json::json!([])
    });
    assert!(
        err.contains("space[0].params[0].values: must not be empty"),
        "{err}"
    );
    let err = bad(&dir, "unknown-metric", |d| {
        d["constraints"][0]["metric"] = "nodes.A.ejection".into()
    });
    assert!(
        err.contains("constraints[0].metric: no run has a metric `nodes.A.ejection`")
            && err.contains("did you mean `nodes.A.ejections`?"),
        "{err}"
    );
    let err = bad(&dir, "unknown-node-metric", |d| {
        d["objectives"][1]["metric"] = "nodes.*.ejected_s".into()
    });
    assert!(
        err.contains("objectives[1].metric: nodes have no metric `ejected_s`"),
        "{err}"
    );
    let err = bad(&dir, "missing-path", |d| {
        d["space"][0]["params"][0]["path"] = "policy.max_fail".into()
    });
    assert!(
        err.contains("space[0].params[0].path: `policy.max_fail` is not a field of the model")
            && err.contains("`policy` has no field `max_fail`"),
        "{err}"
    );
    let err = bad(&dir, "unknown-scenario", |d| {
        d["objectives"][0]["scenario"] = "crsh".into()
    });
    assert!(
        err.contains("objectives[0].scenario: no scenario named \"crsh\""),
        "{err}"
    );
    let err = bad(&dir, "bad-scenario-value", |d| {
        d["scenarios"][1]["set"][1] = "clients.rate_per_s=-5".into()
    });
    assert!(err.contains("scenarios[1] \"noisy\""), "{err}");
    let err = bad(&dir, "unknown-field", |d| {
        d["objective"] = serde_json::json!([])
    });
    assert!(err.contains("unknown field `objective`"), "{err}");
    let err = bad(&dir, "model-and-import", |d| {
        d["import"] = serde_json::json!({"file": "nginx.conf"})
    });
    assert!(
        err.contains("import: give either `model` or `import`"),
        "{err}"
    );
    let err = bad(&dir, "no-model", |d| {
        d.as_object_mut().unwrap().remove("model");
    });
    assert!(err.contains("model: missing"), "{err}");
}
