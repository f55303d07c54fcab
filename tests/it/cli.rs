//! The binary as users meet it: output formats, and bad input (exit code 2,
//! a message naming the file and the JSON path, never a panic).

use crate::{hcsim, tmp};

fn bad(name: &str, body: &str, args: &[&str]) -> (i32, String) {
    let dir = tmp(&format!("bad-{name}"));
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, body).unwrap();
    let p = path.to_str().unwrap().to_string();
    let mut all = vec!["run", p.as_str(), "--out", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = hcsim(&all);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!err.contains("panicked"), "{err}");
    (o.status.code().unwrap_or(-1), err.replace(&p, "FILE"))
}

const OK: &str = r#"{"name": "ok", "duration": "2s",
  "clients": {"kind": "open", "rate_per_s": 10.0},
  "nodes": [{"name": "a"}, {"name": "b"}]}"#;

#[test]
fn bad_models_exit_2_naming_file_and_path() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "syntax",
            r#"{"name": "x",}"#,
            "error: FILE:1:14: not valid JSON",
        ),
        (
            "typo",
            &OK.replace("\"duration\"", "\"duraton\""),
            "error: FILE: duraton: unknown field `duraton`",
        ),
        (
            "type",
            &OK.replace("10.0", "\"fast\""),
            "error: FILE: clients.rate_per_s: invalid type: string \"fast\", expected f64",
        ),
        (
            "unit",
            &OK.replace("\"2s\"", "\"2\""),
            "error: FILE: duration: expected a duration with a unit",
        ),
        (
            "node",
            &OK.replace("]}", r#"], "faults": [{"kind": "crash", "node": "c"}]}"#),
            "error: FILE: faults[0].node: no node named \"c\"",
        ),
        (
            "prob",
            &OK.replace(
                "]}",
                r#"], "faults": [{"kind": "flaky", "node": "a", "p": 1.5}]}"#,
            ),
            "error: FILE: faults[0].p: must be a probability in [0, 1], found 1.5",
        ),
        (
            "ft",
            &OK.replace(
                "]}",
                r#"], "policy": {"kind": "nginx", "fail_timeout": "1500ms"}}"#,
            ),
            "error: FILE: policy.fail_timeout: nginx takes fail_timeout in whole seconds",
        ),
        (
            "kind",
            &OK.replace("]}", r#"], "policy": {"kind": "magic"}}"#),
            "error: FILE: policy.kind: unknown variant `magic`, expected one of `none`, `max_fails`",
        ),
        (
            "empty",
            &OK.replace(r#"[{"name": "a"}, {"name": "b"}]"#, "[]"),
            "error: FILE: nodes: the upstream needs at least one node",
        ),
        (
            "dup",
            &OK.replace(r#""b""#, r#""a""#),
            "error: FILE: nodes[1].name: duplicate node name \"a\"",
        ),
        (
            "rate",
            &OK.replace("10.0", "-1"),
            "error: FILE: clients.rate_per_s: must be a positive number",
        ),
    ];
    for (name, body, want) in cases {
        let (code, err) = bad(name, body, &[]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(
            err.starts_with(want),
            "{name}: got {err:?}, want prefix {want:?}"
        );
    }
}

#[test]
fn missing_file_and_bad_set_exit_2() {
    let o = hcsim(&["run", "models/nope.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("error: models/nope.json: cannot read"));
    let (code, err) = bad("set1", OK, &["--set", "clients.rate_per_s"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("error: --set clients.rate_per_s: expected PATH=VALUE"),
        "{err}"
    );
    let (code, err) = bad("set2", OK, &["--set", "nodes[5].weight=2"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with(
            "error: FILE: nodes[5].weight: index 5 is out of range: `nodes` has 2 item(s) (in --set nodes[5].weight=2)"
        ),
        "{err}"
    );
    let (code, err) = bad("set4", OK, &["--set", "gatway.workers=2"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("error: FILE: gatway: unknown field `gatway`"),
        "{err}"
    );
    let (code, err) = bad("set3", OK, &["--set", "gateway.wrokers=2"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("error: FILE: gateway.wrokers: unknown field `wrokers`"),
        "{err}"
    );
}

#[test]
fn json_output_has_the_documented_names() {
    let dir = tmp("json-out");
    let o = hcsim(&[
        "run",
        "models/e1b-503-default.json",
        "--format",
        "json",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["model"], "e1b-503-default");
    assert_eq!(doc["reps"], 1);
    assert_eq!(doc["client"]["status"]["503"]["median"], 75.0);
    assert_eq!(doc["nodes"][0]["name"], "A");
    for key in [
        "attempts",
        "answered",
        "share",
        "failures",
        "ejections",
        "ejected_time_s",
        "first_ejection_delay_s",
        "recovery_delay_s",
    ] {
        assert!(doc["nodes"][0].get(key).is_some(), "nodes[].{key} missing");
    }
    for key in [
        "requests",
        "ok",
        "errors",
        "timeouts",
        "unfinished",
        "status",
        "latency_ms",
    ] {
        assert!(doc["client"].get(key).is_some(), "client.{key} missing");
    }
    assert_eq!(doc["runs"][0]["nodes"][0]["share"], 0.0);
    let on_disk: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(on_disk, doc);
    let timeline = std::fs::read_to_string(dir.join("timeline.csv")).unwrap();
    assert!(timeline.starts_with(
        "rep,seed,t_s,requests,ok,errors,timeouts,latency_p50_ms,latency_p99_ms,A.answered,A.attempts,A.failures,A.ejected,B.answered"
    ));
}

#[test]
fn table_output_is_aligned_for_people() {
    let dir = tmp("table-out");
    let o = hcsim(&[
        "run",
        "models/e2-p02-flaky-2pct.json",
        "--reps",
        "3",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("reps 3"), "{out}");
    let header = out
        .lines()
        .find(|l| l.starts_with("node"))
        .expect("node table");
    assert!(header.contains("share") && header.contains("ejected") && header.contains("recovery"));
    assert!(
        out.lines().any(|l| l.starts_with("A ") && l.contains('%')),
        "{out}"
    );
}

#[test]
fn unknown_subcommand_is_a_usage_error() {
    let o = hcsim(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn check_prints_the_model_as_it_will_run_and_that_checks_the_same() {
    let dir = tmp("check");
    for m in [
        "models/e2-p02-flaky-2pct.json",
        "models/e4-stopped-backend.json",
    ] {
        let o = hcsim(&["check", m]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let first: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(
            first["gateway"]["proxy_read_timeout"], "60s",
            "defaults are written out"
        );
        assert!(first["policy"]["kind"].is_string());
        let again = dir.join("again.json");
        std::fs::write(&again, &o.stdout).unwrap();
        let o2 = hcsim(&["check", again.to_str().unwrap()]);
        assert_eq!(o2.status.code(), Some(0));
        assert_eq!(
            o.stdout, o2.stdout,
            "{m}: check output is not a fixed point"
        );
    }
    // --set applies before the check; the E5 lesson is a warning, not an error
    let o = hcsim(&[
        "check",
        "models/e5-client-timeout-first.json",
        "--set",
        "policy.fail_timeout=0s",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with(
            "warning: models/e5-client-timeout-first.json: clients.timeout: clients give up after \
         5s, no later than gateway.proxy_connect_timeout (60s) and gateway.proxy_read_timeout (60s)"
        ),
        "{err}"
    );
    assert!(lines[1].starts_with(
        "warning: models/e5-client-timeout-first.json: policy.fail_timeout: 0s ejects a node only"
    ), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["policy"]["fail_timeout"], "0s");
}

#[test]
fn max_events_stops_with_exit_2_and_keeps_what_was_simulated() {
    let dir = tmp("max-events");
    let out = dir.join("out");
    let o = hcsim(&[
        "run",
        "models/e2-p02-flaky-2pct.json",
        "--reps",
        "2",
        "--max-events",
        "1000",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    let error = err.lines().find(|l| l.starts_with("error:")).unwrap();
    assert!(
        error.starts_with(
            "error: models/e2-p02-flaky-2pct.json: 2 of 2 replication(s) stopped at --max-events \
             1000 before the end of the run (seed 1 at 2.627s of 20s)"
        ),
        "{err}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    for run in summary["runs"].as_array().unwrap() {
        assert_eq!(run["events"], 1000);
        let d = run["duration_s"].as_f64().unwrap();
        assert!(d > 0.0 && d < 20.0, "duration_s {d}");
        assert_eq!(run["measure_to_s"], run["duration_s"]);
        let c = &run["client"];
        let sum = ["ok", "errors", "timeouts", "unfinished"]
            .iter()
            .map(|k| c[k].as_u64().unwrap())
            .sum::<u64>();
        assert_eq!(c["requests"].as_u64().unwrap(), sum);
    }
    let timeline = std::fs::read_to_string(out.join("timeline.csv")).unwrap();
    assert!(timeline.lines().count() > 1);
    // the same run without the cap reaches the end
    let o = hcsim(&[
        "run",
        "models/e2-p02-flaky-2pct.json",
        "--max-events",
        "1000000",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn an_unwritable_output_fails_before_running_naming_path_and_os_error() {
    let dir = tmp("unwritable");
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = file.join("out");
    let o = hcsim(&[
        "run",
        "models/e1a-refused.json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {}: cannot write: Not a directory (os error 20)",
            out.display()
        )
    );
    assert!(o.stdout.is_empty(), "it ran although it could not write");
}

#[test]
fn write_atomic_reports_the_target_and_leaves_no_temporary_file() {
    let dir = tmp("atomic");
    // a directory where the file should go: the rename fails
    let target = dir.join("summary.json");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("x"), "").unwrap();
    let e = hcsim::output::write_atomic(&target, b"{}").unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot write: ", target.display())),
        "{e}"
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("summary.json")]);
    hcsim::output::write_atomic(&dir.join("ok.json"), b"{}").unwrap();
    assert_eq!(std::fs::read(dir.join("ok.json")).unwrap(), b"{}");
}

#[test]
fn a_closed_stdout_pipe_is_not_a_panic() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let dir = tmp("pipe");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hcsim"))
        .args([
            "run",
            "models/e2-p02-flaky-2pct.json",
            "--reps",
            "40",
            "--format",
            "json",
            "--no-charts",
            "--out",
        ])
        .arg(&dir)
        .current_dir(crate::root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hcsim");
    let mut first = [0u8; 1];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap(); // then closed, like `| head -c1`
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(out.status.code(), Some(101));
}
