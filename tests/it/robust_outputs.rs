//! Outputs that are not regular files, and the directory lock: every file
//! a command writes (`import -o`, `export -o`, `run --export-csv` and
//! `--export-markdown`, `compare --export-csv`) reaches a null-like and a
//! full-like device node (private ones, made with mknod in a temporary
//! directory), a FIFO's reader, `-`, `/dev/stdout`, a `/dev/fd/N` passed to
//! the child and a symbolic link's target, and leaves the node or link as
//! it was; a 254-byte name works. A closed stdout (`>&-`) is an error; a
//! tune killed just after a stage file was written starts afresh (the
//! lock of `run`, `plot` and `compare` is tested in `robust.rs`). Every process started
//! here is waited for or killed by its pid.

use crate::robust::{hcsim_in, ok, tiny, user_error};
use crate::{await_lines, kill, root, tmp};
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_hcsim");

/// A command that writes one file, with `{}` where its path goes.
struct Writer {
    name: &'static str,
    args: Vec<String>,
}

impl Writer {
    /// `args` followed by the path.
    fn new(name: &'static str, args: &[&str]) -> Writer {
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.push("{}".into());
        Writer { name, args }
    }

    fn with(&self, path: &str) -> Vec<String> {
        self.args
            .iter()
            .map(|a| {
                if a == "{}" {
                    path.to_string()
                } else {
                    a.clone()
                }
            })
            .collect()
    }
}

fn run_in(dir: &Path, args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    hcsim_in(dir, &args)
}

/// A file type's name, for messages.
fn kind(p: &Path) -> &'static str {
    match fs::symlink_metadata(p).map(|m| m.file_type()) {
        Ok(t) if t.is_symlink() => "link",
        Ok(t) if t.is_char_device() => "char device",
        Ok(t) if t.is_fifo() => "fifo",
        Ok(t) if t.is_file() => "file",
        Ok(_) => "other",
        Err(_) => "missing",
    }
}

/// Makes a character device 1,`minor` at `p` (a null-like 3, a full-like
/// 7); false when this user cannot (the device cases are then skipped).
fn mknod(p: &Path, minor: u32) -> bool {
    let ok = Command::new("mknod")
        .arg(p)
        .args(["c", "1", &minor.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("HCSIM_REQUIRE_TOOLS").is_none(),
            "cannot mknod (not root?) and HCSIM_REQUIRE_TOOLS is set"
        );
        eprintln!("skipped: device-node outputs (mknod needs root)");
    }
    ok
}

#[test]
fn outputs_that_are_not_regular_files_get_the_content_and_stay_what_they_are() {
    let dir = tmp("out-nodes");
    tiny(&dir);
    let conf = root().join("tests/configs/e3-nginx.conf");
    let model = root().join("models/e2-p02-flaky-2pct.json");
    let (conf, model) = (conf.display().to_string(), model.display().to_string());
    let run = [
        "run",
        "models/tiny.json",
        "--quiet",
        "--no-charts",
        "--out",
        "r",
    ];
    ok(hcsim_in(&dir, &run));
    let compare = ["compare", "r", "r", "--no-charts", "--format", "json"];
    let writers = [
        Writer::new("import -o", &["import", &conf, "-o"]),
        Writer::new("export -o", &["export", &model, "--to", "nginx", "-o"]),
        Writer::new("run --export-csv", &[&run[..], &["--export-csv"]].concat()),
        Writer::new(
            "run --export-markdown",
            &[&run[..], &["--export-markdown"]].concat(),
        ),
        Writer::new(
            "compare --export-csv",
            &[&compare[..], &["--export-csv"]].concat(),
        ),
    ];
    let nodes = dir.join("nodes");
    fs::create_dir_all(&nodes).unwrap();
    let (null, full) = (nodes.join("null"), nodes.join("full"));
    let devices = mknod(&null, 3) && mknod(&full, 7);
    for w in &writers {
        let name = w.name;
        // The bytes a regular file gets.
        let plain = dir.join("plain.out");
        ok(run_in(&dir, &w.with(plain.to_str().unwrap())));
        let want = fs::read(&plain).unwrap();
        assert!(!want.is_empty(), "{name}");

        if devices {
            ok(run_in(&dir, &w.with(null.to_str().unwrap())));
            let err = user_error(run_in(&dir, &w.with(full.to_str().unwrap())));
            assert!(err.contains("No space left on device"), "{name}: {err}");
            for p in [&null, &full] {
                assert_eq!(kind(p), "char device", "{name} replaced {}", p.display());
            }
        }

        // A FIFO: its reader gets everything.
        let fifo = nodes.join("fifo");
        let _ = fs::remove_file(&fifo);
        assert!(
            Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let reader = {
            let f = fifo.clone();
            std::thread::spawn(move || fs::read(f).unwrap())
        };
        ok(run_in(&dir, &w.with(fifo.to_str().unwrap())));
        assert_eq!(reader.join().unwrap(), want, "{name}: the FIFO's reader");
        assert_eq!(kind(&fifo), "fifo", "{name}");

        // A symbolic link: the file it names gets the content.
        let target = nodes.join("target.out");
        fs::write(&target, b"old").unwrap();
        let link = nodes.join("link.out");
        let _ = fs::remove_file(&link);
        std::os::unix::fs::symlink("target.out", &link).unwrap();
        ok(run_in(&dir, &w.with(link.to_str().unwrap())));
        assert_eq!(kind(&link), "link", "{name}");
        assert_eq!(
            fs::read(&target).unwrap(),
            want,
            "{name}: the link's target"
        );

        // `-` and /dev/stdout are the standard output.
        for p in ["-", "/dev/stdout"] {
            let out = ok(run_in(&dir, &w.with(p)));
            if !name.starts_with("compare") {
                assert_eq!(out.stdout, want, "{name} {p}");
            } else {
                // The file first, then the comparison printed as asked.
                assert!(out.stdout.starts_with(&want), "{name} {p}");
            }
        }

        // A descriptor passed to the child (as `>(...)` passes one): fd 3
        // is this test's stdout pipe, the child's own stdout goes to stderr.
        let mut args = vec![
            "-c".to_string(),
            "\"$0\" \"$@\" 3>&1 1>&2".into(),
            BIN.into(),
        ];
        args.extend(w.with("/dev/fd/3"));
        let out = Command::new("bash")
            .args(&args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name} /dev/fd/3: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, want, "{name} /dev/fd/3");

        // A name as long as a file name may be (255 bytes).
        let long = nodes.join("o".repeat(246) + ".out.txt");
        assert_eq!(long.file_name().unwrap().len(), 254);
        ok(run_in(&dir, &w.with(long.to_str().unwrap())));
        assert_eq!(fs::read(&long).unwrap(), want, "{name}: a 254-byte name");
        let left: Vec<String> = fs::read_dir(&nodes)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp"))
            .collect();
        assert!(left.is_empty(), "{name} left {left:?}");
    }
}

/// Runs hcsim in `dir` with its standard output closed (`>&-`).
fn with_stdout_closed(dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["-c", "exec \"$0\" \"$@\" >&-", BIN];
    all.extend_from_slice(args);
    Command::new("bash")
        .args(&all)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_closed_stdout_is_an_error_where_something_is_printed() {
    let dir = tmp("closed-stdout");
    tiny(&dir);
    let conf = root().join("tests/configs/e3-nginx.conf");
    for args in [
        &["import", conf.to_str().unwrap()][..],
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
        &["run", "models/tiny.json", "--no-charts", "--out", "r"],
        &["import", conf.to_str().unwrap(), "-o", "-"],
        &["--help"],
        &["run", "--help"],
        &["--version"],
    ] {
        let err = user_error(with_stdout_closed(&dir, args));
        assert!(
            err.contains("cannot write to stdout: standard output is closed"),
            "{args:?}: {err}"
        );
    }
    // The paths that lead to the closed stdout are refused as `-` is.
    for path in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
        let args = ["import", conf.to_str().unwrap(), "-o", path];
        let err = user_error(with_stdout_closed(&dir, &args));
        assert!(
            err.contains("standard output is closed (started with >&-)"),
            "{args:?}: {err}"
        );
    }
    // The run's files are written all the same, before the output fails.
    assert!(dir.join("r/summary.json").exists());
    // Nothing to print: nothing to fail.
    for args in [
        &[
            "run",
            "models/tiny.json",
            "--quiet",
            "--no-charts",
            "--out",
            "q",
        ][..],
        &["import", conf.to_str().unwrap(), "-o", "m.json"],
    ] {
        let out = with_stdout_closed(&dir, args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The files of a tune's output directory, but the lock and the wall time.
fn tune_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = vec![];
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                todo.push(p);
            } else if name != ".hcsim.lock" && name != "timing.json" {
                out.push((
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_tune_killed_just_after_a_stage_file_leaves_nothing_that_refuses_a_fresh_run() {
    let dir = tmp("tune-stale");
    let tune = |out: &Path, extra: &[&str], env: Option<(&str, &str)>| {
        let mut cmd = Command::new(BIN);
        cmd.args([
            "tune",
            "tests/tune/tiny.json",
            "--quiet",
            "--jobs",
            "1",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .current_dir(root())
        .env_remove("HCSIM_STOP_AFTER")
        .env_remove("HCSIM_HANG_AFTER")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        cmd
    };
    let whole = dir.join("whole");
    ok(tune(&whole, &[], None).output().unwrap());
    // The first rung's 30 runs checkpointed, then held (no stage file yet).
    let cut = dir.join("cut");
    let child = tune(&cut, &[], Some(("HCSIM_HANG_AFTER", "30")))
        .spawn()
        .unwrap();
    let journal = cut.join(".stages/search-0/.checkpoint/runs.jsonl");
    kill(await_lines(
        &journal,
        31,
        60,
        child,
        "rung 0 was not checkpointed",
    ));
    let saved = dir.join("saved-stage");
    copy_dir(&cut.join(".stages/search-0"), &saved);
    // Resumed: the stage file is written and the checkpoint removed; stopped
    // at once in the next rung, whose checkpoint is then dropped too.
    let child = tune(&cut, &["--resume"], Some(("HCSIM_HANG_AFTER", "1")))
        .spawn()
        .unwrap();
    let next = cut.join(".stages/search-1/.checkpoint/runs.jsonl");
    kill(await_lines(&next, 2, 60, child, "rung 1 did not start"));
    assert!(cut.join("runs/search-0.jsonl").exists());
    fs::remove_dir_all(cut.join(".stages")).unwrap();
    // Now the state of a process killed between writing runs/search-0.jsonl
    // and removing its checkpoint.
    let killed_after_stage_file = |out: &Path| {
        let _ = fs::remove_dir_all(out);
        copy_dir(&cut, out);
        copy_dir(&saved, &out.join(".stages/search-0"));
    };

    // A fresh run is not refused, and gives the whole tune's bytes.
    let fresh = dir.join("fresh");
    killed_after_stage_file(&fresh);
    ok(tune(&fresh, &[], None).output().unwrap());
    assert_eq!(tune_files(&fresh), tune_files(&whole));

    // A resumed one finishes, keeps nothing stale, and a fresh run follows.
    let resumed = dir.join("resumed");
    killed_after_stage_file(&resumed);
    ok(tune(&resumed, &["--resume"], None).output().unwrap());
    assert!(
        !resumed.join(".stages").exists(),
        "a stale checkpoint is left"
    );
    assert_eq!(tune_files(&resumed), tune_files(&whole));
    ok(tune(&resumed, &[], None).output().unwrap());
    assert_eq!(tune_files(&resumed), tune_files(&whole));

    // A checkpoint of an unfinished stage still refuses a fresh run.
    let partial = dir.join("partial");
    killed_after_stage_file(&partial);
    fs::remove_file(partial.join("runs/search-0.jsonl")).unwrap();
    let err = user_error(tune(&partial, &[], None).output().unwrap());
    assert!(err.contains("pass --resume"), "{err}");
}
