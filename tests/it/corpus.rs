//! Corpora of malformed files, each with the error it must produce.
//!
//! In `tests/bad-models/` (and `tests/bad-sweeps/`), every `NN-name.json` is
//! paired with `NN-name.expected`: the first error line of stderr (warnings
//! may come before it), with the file's path written `FILE` and the output
//! directory `OUT`. An optional
//! `NN-name.args` holds the command line, one argument per line (default:
//! `check FILE`, and then `run FILE`, or `sweep FILE` for sweeps, must fail
//! with the same line). Every case
//! must exit with code 2 without panicking. `HCSIM_BLESS=1 cargo test corpus`
//! rewrites the `.expected` files: review the diff.

use crate::{hcsim, root, tmp};
use std::path::{Path, PathBuf};

/// One file of a corpus and what running it printed.
struct Outcome {
    code: Option<i32>,
    first_line: String,
    stderr: String,
}

fn run_case(json: &Path, args: &[String], out: &Path) -> Outcome {
    let file = json.to_str().expect("utf-8 path");
    let out_s = out.to_str().expect("utf-8 path");
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("FILE", file).replace("OUT", out_s))
        .collect();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = hcsim(&argv);
    let stderr = String::from_utf8_lossy(&o.stderr)
        .replace(out_s, "OUT")
        .replace(file, "FILE");
    Outcome {
        code: o.status.code(),
        first_line: stderr
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or("")
            .to_string(),
        stderr,
    }
}

/// Checks every case of a corpus directory; returns how many there were.
/// `also` is a second command (with `FILE` and `OUT`) that must fail with
/// the same line when a case has no `.args`.
fn check_corpus(dir: &Path, also: &[&str]) -> usize {
    let bless = std::env::var_os("HCSIM_BLESS").is_some();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    cases.sort();
    let mut failures = vec![];
    for json in &cases {
        let rel = json.strip_prefix(root()).unwrap_or(json).to_path_buf();
        let name = rel.display().to_string();
        let args_file = json.with_extension("args");
        let custom = args_file.exists();
        let args: Vec<String> = if custom {
            std::fs::read_to_string(&args_file)
                .unwrap()
                .lines()
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect()
        } else {
            vec!["check".into(), "FILE".into()]
        };
        let out = tmp(&format!(
            "corpus-{}",
            json.file_stem().unwrap().to_string_lossy()
        ));
        let got = run_case(&rel, &args, &out.join("out"));
        let expected_file = json.with_extension("expected");
        if bless {
            std::fs::write(&expected_file, format!("{}\n", got.first_line)).unwrap();
        }
        let want = std::fs::read_to_string(&expected_file)
            .unwrap_or_else(|e| panic!("{}: {e}", expected_file.display()));
        let want = want.trim_end_matches('\n');
        let mut problems = vec![];
        if got.stderr.contains("panicked") {
            problems.push(format!("panicked:\n{}", got.stderr));
        }
        if got.code != Some(2) {
            problems.push(format!("exit code {:?}, want 2", got.code));
        }
        if !got.first_line.starts_with("error: FILE") && !got.first_line.starts_with("error: --set")
        {
            problems.push("the message does not start by naming the file".into());
        }
        if got.first_line != want {
            problems.push(format!("got  {:?}\nwant {:?}", got.first_line, want));
        }
        if !custom {
            // `run` (or `sweep`) reads and validates the same way as `check`.
            let also: Vec<String> = also.iter().map(|a| a.to_string()).collect();
            let ran = run_case(&rel, &also, &out.join("out"));
            if ran.first_line != got.first_line || ran.code != Some(2) {
                problems.push(format!(
                    "`{}` differs from `check`: {:?} (exit {:?})",
                    also[0], ran.first_line, ran.code
                ));
            }
        }
        if !problems.is_empty() {
            failures.push(format!("{name}: {}", problems.join("\n  ")));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
    cases.len()
}

#[test]
fn bad_models_fail_with_their_expected_message() {
    let n = check_corpus(
        &root().join("tests/bad-models"),
        &["run", "FILE", "--out", "OUT"],
    );
    assert!(n >= 40, "only {n} malformed models");
}

#[test]
fn bad_sweeps_fail_with_their_expected_message() {
    let n = check_corpus(
        &root().join("tests/bad-sweeps"),
        &["sweep", "FILE", "--out", "OUT", "--quiet"],
    );
    assert!(n >= 15, "only {n} malformed sweeps");
}
