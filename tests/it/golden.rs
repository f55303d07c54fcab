//! Golden outputs: what every shipped model and three small sweeps write,
//! compared byte for byte with `tests/golden/`. A change of one byte fails
//! here; regenerate on purpose only, with
//! `HCSIM_BLESS=1 cargo test --test it golden` (see tests/golden/README.md).

use crate::root;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Replications per model: more than one, so that the summaries' statistics
/// over replications and the second replication's seed are pinned too.
const REPS: &str = "2";

/// What a run writes that must not change, and `hcsim check`'s effective model.
const RUN_FILES: [&str; 3] = ["summary.json", "timeline.csv", "ejections.csv"];
const SWEEP_FILES: [&str; 3] = ["runs.csv", "points.csv", "results.json"];

/// Models whose attempt trace (`--trace`) is pinned too: small ones, one per
/// request path (nginx retries, HAProxy, a prober, a registry).
const TRACED: [&str; 4] = [
    "e1c-503-next-upstream",
    "e4-stopped-backend",
    "haproxy-check-observe-layer7",
    "e7-heartbeat-ttl-crash",
];

fn bless() -> bool {
    std::env::var_os("HCSIM_BLESS").is_some_and(|v| v == "1")
}

fn golden_dir() -> PathBuf {
    root().join("tests/golden")
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("golden")
        .join(name);
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn hcsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hcsim"))
        .args(args)
        .current_dir(root())
        .env_remove("HCSIM_STOP_AFTER")
        .output()
        .expect("run hcsim")
}

fn names(dir: &Path, ext: &str) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == ext).then(|| p.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    v.sort();
    v
}

/// Compares `actual` with the golden file (or writes it when blessing).
/// Returns a description of the difference.
fn compare(golden: &Path, actual: &[u8]) -> Option<String> {
    if bless() {
        fs::create_dir_all(golden.parent().unwrap()).unwrap();
        if fs::read(golden).ok().as_deref() != Some(actual) {
            fs::write(golden, actual).unwrap();
        }
        return None;
    }
    let Ok(expected) = fs::read(golden) else {
        return Some(format!(
            "{}: missing (bless to create it)",
            golden.display()
        ));
    };
    if expected == actual {
        return None;
    }
    let (e, a) = (
        String::from_utf8_lossy(&expected),
        String::from_utf8_lossy(actual),
    );
    let line = e
        .lines()
        .zip(a.lines())
        .position(|(x, y)| x != y)
        .unwrap_or_else(|| e.lines().count().min(a.lines().count()));
    Some(format!(
        "{}: differs from line {}\n  golden: {}\n  now:    {}",
        golden.display(),
        line + 1,
        e.lines().nth(line).unwrap_or("<end of file>"),
        a.lines().nth(line).unwrap_or("<end of file>"),
    ))
}

/// Removes golden entries whose model or sweep is gone (when blessing), or
/// reports them.
fn stale(dir: &Path, live: &[String], problems: &Mutex<Vec<String>>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() && !live.contains(&name) {
            if bless() {
                fs::remove_dir_all(&p).unwrap();
            } else {
                problems.lock().unwrap().push(format!(
                    "{}: no such model or sweep any more (bless to remove it)",
                    p.display()
                ));
            }
        }
    }
}

fn check_model(name: &str, problems: &Mutex<Vec<String>>) {
    let model = format!("models/{name}.json");
    let out = scratch(&format!("run-{name}"));
    let mut args = vec![
        "run",
        &model,
        "--reps",
        REPS,
        "--no-charts",
        "--format",
        "json",
        "--out",
        out.to_str().unwrap(),
    ];
    let traced = TRACED.contains(&name);
    if traced {
        args.push("--trace");
    }
    let o = hcsim(&args);
    let mut found = vec![];
    if !o.status.success() {
        found.push(format!(
            "{model}: hcsim run failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let golden = golden_dir().join("runs").join(name);
    let files: &[&str] = if traced {
        &[
            "summary.json",
            "timeline.csv",
            "ejections.csv",
            "attempts.csv",
        ]
    } else {
        &RUN_FILES
    };
    for f in files {
        let actual = fs::read(out.join(f)).unwrap_or_default();
        found.extend(compare(&golden.join(f), &actual));
    }
    // A model whose nodes are pods writes what happened to them.
    let pods = out.join("pods.csv");
    if pods.exists() || golden.join("pods.csv").exists() {
        let actual = fs::read(&pods).unwrap_or_default();
        found.extend(compare(&golden.join("pods.csv"), &actual));
    }
    // stdout of --format json is summary.json itself
    if o.stdout != fs::read(out.join("summary.json")).unwrap_or_default() {
        found.push(format!("{model}: --format json differs from summary.json"));
    }
    let c = hcsim(&["check", &model]);
    if !c.status.success() {
        found.push(format!(
            "{model}: hcsim check failed: {}",
            String::from_utf8_lossy(&c.stderr)
        ));
    }
    found.extend(compare(&golden.join("check.json"), &c.stdout));
    let _ = fs::remove_dir_all(&out);
    problems.lock().unwrap().extend(found);
}

fn run_all(items: &[String], work: impl Fn(&str) + Sync) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    work(item);
                }
            });
        }
    });
}

fn finish(problems: Mutex<Vec<String>>) {
    let problems = problems.into_inner().unwrap();
    assert!(
        problems.is_empty(),
        "{} golden output(s) changed. If the change is on purpose, regenerate with \
         `HCSIM_BLESS=1 cargo test --test it golden` and say why in the commit.\n\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_shipped_model_writes_its_golden_outputs() {
    let models: Vec<String> = crate::shipped_models()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        models.len() > 50,
        "models/index.txt lists {} models",
        models.len()
    );
    for t in TRACED {
        assert!(models.iter().any(|m| m == t), "traced model {t} is gone");
    }
    let problems = Mutex::new(vec![]);
    stale(&golden_dir().join("runs"), &models, &problems);
    run_all(&models, |m| check_model(m, &problems));
    finish(problems);
}

/// `models/index.txt` names every model the repository ships (when git can
/// say which files it tracks), and each of them exists.
#[test]
fn the_index_of_shipped_models_is_complete() {
    let listed: Vec<String> = crate::shipped_models()
        .iter()
        .map(|p| {
            assert!(
                p.is_file(),
                "models/index.txt lists {}, which is missing",
                p.display()
            );
            p.file_name().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    let tracked = Command::new("git")
        .args(["ls-files", "models/*.json"])
        .current_dir(root())
        .output();
    let Some(o) = tracked
        .ok()
        .filter(|o| o.status.success() && !o.stdout.is_empty())
    else {
        eprintln!("skipped the completeness check: git cannot list the tracked files here");
        return;
    };
    let mut files: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.trim_start_matches("models/").to_string())
        .collect();
    files.sort();
    assert_eq!(
        listed, files,
        "models/index.txt and the shipped models differ: add the new one"
    );
}

#[test]
fn golden_sweeps_write_their_golden_outputs() {
    let dir = golden_dir().join("sweeps");
    let sweeps = names(&dir, "json");
    assert!(sweeps.len() >= 3, "{} golden sweeps", sweeps.len());
    let problems = Mutex::new(vec![]);
    stale(&dir, &sweeps, &problems);
    run_all(&sweeps, |name| {
        let file = format!("tests/golden/sweeps/{name}.json");
        let out = scratch(&format!("sweep-{name}"));
        let o = hcsim(&[
            "sweep",
            &file,
            "--quiet",
            "--no-charts",
            "--jobs",
            "2",
            "--out",
            out.to_str().unwrap(),
        ]);
        let mut found = vec![];
        if !o.status.success() {
            found.push(format!(
                "{file}: hcsim sweep failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        for f in SWEEP_FILES {
            let actual = fs::read(out.join(f)).unwrap_or_default();
            found.extend(compare(&dir.join(name).join(f), &actual));
        }
        let _ = fs::remove_dir_all(&out);
        problems.lock().unwrap().extend(found);
    });
    finish(problems);
}
