//! One override, one name; one metric vocabulary. A `--set` is parsed once
//! into an `Override`, which names itself by one rule wherever it shows (a
//! run's directory, a sweep's grid, a compare label, a tune candidate), and
//! every command that lists metrics lists them from `metrics::path`.

use crate::tmp;
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};

fn hcsim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hcsim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run hcsim")
}

fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8 stdout")
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
}

/// Two nodes, one named as an import names them (an address with a port).
fn model() -> Value {
    json!({
        "name": "m", "duration": "3s",
        "clients": {"kind": "open", "rate_per_s": 200.0, "arrivals": "constant"},
        "gateway": {"proxy_next_upstream": ["error", "timeout", "http_503"]},
        "nodes": [{"name": "a"}, {"name": "10.1.0.11:8080"}],
        "faults": [{"kind": "flaky", "node": "a", "at": "1s", "p": 0.3}],
        "policy": {"kind": "max_fails", "max_fails": 2, "fail_timeout": "1s"}
    })
}

fn setup(name: &str) -> std::path::PathBuf {
    let dir = tmp(name);
    std::fs::write(dir.join("m.json"), model().to_string()).unwrap();
    dir
}

#[test]
fn one_override_has_one_name_in_run_sweep_compare_and_tune() {
    let dir = setup("one-name");
    let name = "a.weight=5";
    // run: the what-if's directory.
    ok(hcsim_in(&dir, &["run", "m.json", "--no-charts", "-q"]));
    ok(hcsim_in(
        &dir,
        &[
            "run",
            "m.json",
            "--set",
            "nodes.a.weight=5",
            "--no-charts",
            "-q",
        ],
    ));
    assert!(dir.join(format!("output/m--{name}/summary.json")).is_file());
    // sweep --param: the grid's directory.
    ok(hcsim_in(
        &dir,
        &[
            "sweep",
            "m.json",
            "--param",
            "nodes.a.weight=5",
            "--no-charts",
            "-q",
        ],
    ));
    assert!(
        dir.join(format!("output/m-sweep-{name}/results.json"))
            .is_file()
    );
    // compare: the run's label.
    let c: Value = serde_json::from_str(&ok(hcsim_in(
        &dir,
        &[
            "compare",
            "output/m",
            &format!("output/m--{name}"),
            "--format",
            "json",
            "--no-charts",
        ],
    )))
    .unwrap();
    assert_eq!(c["runs"][1]["label"], json!(format!("m--{name}")));
    // tune: the candidate's label.
    let tune = json!({
        "name": "t", "model": "m.json", "reps": 1,
        "space": [{"params": [{"path": "nodes.a.weight", "values": [5]}]}],
        "scenarios": [{"name": "s", "set": ["duration=2s"]}],
        "objectives": [{"name": "errors", "metric": "client.errors", "scenario": "s"}]
    });
    std::fs::write(dir.join("t.json"), tune.to_string()).unwrap();
    let check: Value = serde_json::from_str(&ok(hcsim_in(&dir, &["check", "t.json"]))).unwrap();
    assert_eq!(check["candidates"][0]["label"], json!(name), "{check}");
}

#[test]
fn a_node_named_by_its_address_is_set_by_name_bare_or_quoted() {
    let dir = setup("address-name");
    for set in [
        r#"nodes["10.1.0.11:8080"].weight=3"#,
        "nodes.10.1.0.11:8080.weight=3",
    ] {
        let out = ok(hcsim_in(&dir, &["check", "m.json", "--set", set]));
        let m: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(m["nodes"][1]["weight"], json!(3), "{set}");
    }
    // An address that is not a node: the names it could have meant.
    let o = hcsim_in(
        &dir,
        &["check", "m.json", "--set", "nodes.10.1.0.12:8080.weight=3"],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("\"10.1.0.11:8080\""), "{err}");
    // Its metrics read back by the same name.
    ok(hcsim_in(&dir, &["run", "m.json", "--no-charts", "-q"]));
    let c: Value = serde_json::from_str(&ok(hcsim_in(
        &dir,
        &[
            "compare",
            "output/m",
            "output/m",
            "--format",
            "json",
            "--no-charts",
        ],
    )))
    .unwrap();
    let names: Vec<&str> = c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"nodes[\"10.1.0.11:8080\"].share"),
        "{names:?}"
    );
}

#[test]
fn sweep_and_compare_list_the_same_metrics_for_the_same_runs() {
    let dir = setup("same-metrics");
    for rate in ["200", "400"] {
        let set = format!("clients.rate_per_s={rate}");
        ok(hcsim_in(
            &dir,
            &[
                "run",
                "m.json",
                "--reps",
                "3",
                "--set",
                &set,
                "--no-charts",
                "-q",
            ],
        ));
    }
    ok(hcsim_in(
        &dir,
        &[
            "sweep",
            "m.json",
            "--param",
            "clients.rate_per_s=200,400",
            "--reps",
            "3",
            "--no-charts",
            "-q",
            "--out",
            "grid",
        ],
    ));
    let results = read_json(&dir.join("grid/results.json"));
    let mut swept: Vec<String> = results["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect();
    let c: Value = serde_json::from_str(&ok(hcsim_in(
        &dir,
        &[
            "compare",
            "output/m--rate_per_s=200",
            "output/m--rate_per_s=400",
            "--all",
            "--format",
            "json",
            "--no-charts",
        ],
    )))
    .unwrap();
    let mut compared: Vec<String> = c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap().to_string())
        .collect();
    swept.sort();
    compared.sort();
    assert!(swept.len() > 20, "{swept:?}");
    assert_eq!(swept, compared);
}
