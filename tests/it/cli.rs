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
            "error: --set nodes[5].weight=2: index 5 is out of range: `nodes` has 2 item(s)"
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
    assert!(timeline.starts_with("rep,seed,t_s,requests,ok,errors,timeouts,A.answered,A.attempts,A.failures,A.ejected,B.answered"));
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
