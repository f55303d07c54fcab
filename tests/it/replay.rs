//! `hcsim replay`: the calibration pairs of real logs (each first log
//! replayed with the second setting lands in the second real run's range),
//! and the binary on bad input and on synthetic logs.

use crate::{hcsim, root, tmp, tool_present};
use std::path::Path;
use std::process::Command;

fn replay_json(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("replay.json")).expect("replay.json");
    serde_json::from_str(&text).expect("replay.json is JSON")
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A line of the calibration harness's log_format.
fn calib_line(end: f64, rt: f64, status: u16, addrs: &str, statuses: &str, times: &str) -> String {
    format!(
        "{end:.3} {rt:.3} \"GET /r/1 HTTP/1.0\" {status} \"{addrs}\" \"{statuses}\" \"{times}\""
    )
}

/// 20 req/s for 20 s over two servers in turn; `b` refuses connections
/// from 5 s to 10 s (each refused attempt retried on `a`).
pub(crate) fn crash_log(b_down: (f64, f64)) -> Vec<String> {
    let t0 = 1_796_000_000.0;
    (0..400)
        .map(|i| {
            let start = t0 + i as f64 / 20.0;
            let t = i as f64 / 20.0;
            if i % 2 == 1 && t >= b_down.0 && t < b_down.1 {
                calib_line(
                    start + 0.006,
                    0.006,
                    200,
                    "127.0.0.1:9002, 127.0.0.1:9001",
                    "502, 200",
                    "0.000, 0.006",
                )
            } else {
                let addr = if i % 2 == 0 {
                    "127.0.0.1:9001"
                } else {
                    "127.0.0.1:9002"
                };
                calib_line(start + 0.005, 0.005, 200, addr, "200", "0.005")
            }
        })
        .collect()
}

const CONF: &str = "events {}\nhttp {\n  upstream be {\n    server 127.0.0.1:9001 max_fails=1 fail_timeout=1s;\n    server 127.0.0.1:9002 max_fails=1 fail_timeout=1s;\n  }\n  server {\n    listen 127.0.0.1:8080;\n    location / { proxy_pass http://be; }\n  }\n}\n";

#[test]
fn every_calibration_pair_s_first_log_predicts_its_second_real_run() {
    if !tool_present("python3", "--version") {
        return;
    }
    let out = Command::new("python3")
        .arg(root().join("calibration/replay_pairs.py"))
        .args(["check", "--hcsim", env!("CARGO_BIN_EXE_hcsim")])
        .current_dir(root())
        .output()
        .expect("run replay_pairs.py");
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    for pair in [
        "nginx-flaky",
        "nginx-sigstop",
        "nginx-crash",
        "haproxy-checks",
    ] {
        assert!(t.contains(&format!("## {pair}")), "{pair} missing:\n{t}");
    }
    assert!(!t.contains("differs"), "{t}");
    // Each pair checks the fit and the prediction on its figures.
    assert!(t.matches("| fit |").count() >= 4 * 4, "{t}");
    assert!(t.matches("| prediction |").count() >= 4 * 4, "{t}");
}

#[test]
fn a_crash_is_inferred_with_its_censored_end_and_the_what_ifs_run() {
    let d = tmp("replay-crash");
    let log = d.join("access.log");
    std::fs::write(&log, crash_log((5.0, 10.0)).join("\n") + "\n").unwrap();
    let conf = d.join("nginx.conf");
    std::fs::write(&conf, CONF).unwrap();
    let out_dir = d.join("out");
    let o = hcsim(&[
        "replay",
        log.to_str().unwrap(),
        "--config",
        conf.to_str().unwrap(),
        "--target",
        "be",
        "--reps",
        "4",
        "--no-charts",
        "--out",
        out_dir.to_str().unwrap(),
        "--set",
        "policy.fail_timeout=5s",
        "--compare",
        "policy.max_fails=3; policy.fail_timeout=2s",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let r = replay_json(&out_dir);
    let faults = r["inference"]["faults"].as_array().unwrap();
    let crash = faults
        .iter()
        .find(|f| f["kind"] == "crash")
        .unwrap_or_else(|| panic!("{faults:?}"));
    assert_eq!(crash["node"], "127.0.0.1:9002");
    // The first refused attempt at 5.05 s, the last answer before at 4.95 s.
    let start = &crash["start"];
    assert!(
        start["lo"].as_f64().unwrap() <= 4.96 && start["hi"].as_f64().unwrap() >= 5.04,
        "{crash}"
    );
    // The last refusal at 9.95 s, the first answer after at 10.05 s.
    let end = &crash["end"];
    assert!((end["lo"].as_f64().unwrap() - 9.95).abs() < 0.01, "{crash}");
    assert!(
        (end["hi"].as_f64().unwrap() - 10.05).abs() < 0.01,
        "{crash}"
    );
    assert_eq!(r["inference"]["workload"]["arrivals"], "constant");
    assert!((r["inference"]["workload"]["rate_per_s"].as_f64().unwrap() - 20.0).abs() < 0.01);
    assert_eq!(r["censored"], true);
    assert_eq!(r["counterfactuals"].as_array().unwrap().len(), 2);
    for c in r["counterfactuals"].as_array().unwrap() {
        assert!(
            out_dir
                .join(c["dir"].as_str().unwrap())
                .join("summary.json")
                .is_file()
        );
        let share = c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["metric"] == "nodes[\"127.0.0.1:9002\"].share")
            .expect("share row");
        assert!(
            share["censoring"]["lo"].as_f64().unwrap()
                <= share["censoring"]["hi"].as_f64().unwrap()
        );
    }
    // The model is a normal model file.
    let m = hcsim(&["check", out_dir.join("replay-model.json").to_str().unwrap()]);
    assert!(m.status.success(), "{}", text(&m));
    assert!(t.contains("what if --set policy.fail_timeout=5s"), "{t}");
    assert!(t.contains("censoring range"), "{t}");
}

#[test]
fn the_same_log_replays_to_the_same_bytes_whatever_the_threads() {
    let d = tmp("replay-determinism");
    let log = d.join("access.log");
    std::fs::write(&log, crash_log((3.0, 6.0)).join("\n") + "\n").unwrap();
    // The same output directory (summary.json names it), kept after each run.
    let o = d.join("out");
    let mut kept = vec![];
    for jobs in ["1", "2"] {
        let r = hcsim(&[
            "replay",
            log.to_str().unwrap(),
            "--reps",
            "3",
            "--no-charts",
            "--quiet",
            "-j",
            jobs,
            "--out",
            o.to_str().unwrap(),
            "--set",
            "policy.max_fails=2",
        ]);
        assert!(r.status.success(), "{}", text(&r));
        let files: Vec<Vec<u8>> = ["replay-model.json", "summary.json", "replay.json"]
            .iter()
            .map(|f| std::fs::read(o.join(f)).unwrap())
            .collect();
        kept.push(files);
    }
    for (i, f) in ["replay-model.json", "summary.json", "replay.json"]
        .iter()
        .enumerate()
    {
        assert!(
            kept[0][i] == kept[1][i],
            "{f} differs between -j 1 and -j 2"
        );
    }
}

#[test]
fn malformed_lines_are_counted_with_their_numbers_and_the_rest_replayed() {
    let d = tmp("replay-malformed");
    let mut lines = crash_log((100.0, 100.0));
    for i in (19..lines.len()).step_by(20) {
        lines[i] = format!("garbage {i}");
    }
    let log = d.join("access.log");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let out_dir = d.join("out");
    let o = hcsim(&[
        "replay",
        log.to_str().unwrap(),
        "--reps",
        "2",
        "--no-charts",
        "--quiet",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("20 of 400 line(s) malformed"), "{t}");
    assert!(
        t.contains("line 20: does not match") && t.contains("line 40:"),
        "{t}"
    );
    let r = replay_json(&out_dir);
    assert_eq!(r["log"]["malformed"], 20);
    assert_eq!(r["log"]["requests"], 380);
    let first: Vec<u64> = r["log"]["first_malformed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["line"].as_u64().unwrap())
        .collect();
    assert_eq!(first, [20, 40, 60, 80, 100]);
}

#[test]
fn servers_not_in_the_config_are_listed_and_exit_2() {
    let d = tmp("replay-unknown");
    let conf = d.join("nginx.conf");
    std::fs::write(&conf, CONF).unwrap();
    let log = d.join("access.log");
    let mut lines = crash_log((100.0, 100.0));
    lines.push(calib_line(
        1_796_000_021.0,
        0.005,
        200,
        "10.9.9.9:80",
        "200",
        "0.005",
    ));
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let o = hcsim(&[
        "replay",
        log.to_str().unwrap(),
        "--config",
        conf.to_str().unwrap(),
        "--target",
        "be",
        "--out",
        d.join("out").to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("10.9.9.9:80 (1 line(s), first at line 401)"),
        "{t}"
    );
    assert!(
        t.contains("not in nginx `be`") && t.contains("127.0.0.1:9001"),
        "{t}"
    );
}

#[test]
fn an_empty_log_and_logs_in_no_usable_format_exit_2_saying_why() {
    let d = tmp("replay-bad");
    let empty = d.join("empty.log");
    std::fs::write(&empty, "\n\n").unwrap();
    let o = hcsim(&["replay", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("the log is empty"), "{}", text(&o));

    let junk = d.join("junk.log");
    std::fs::write(&junk, "hello world\nsomething else\n").unwrap();
    let o = hcsim(&["replay", junk.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("no known format") && t.contains("$upstream_addr"),
        "{t}"
    );

    let combined = d.join("combined.log");
    std::fs::write(
        &combined,
        "1.2.3.4 - - [01/Dec/2026:20:00:01 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"curl\"\n",
    )
    .unwrap();
    let o = hcsim(&["replay", combined.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("`combined`") && t.contains("$upstream_addr") && t.contains("$request_time"),
        "{t}"
    );

    let missing = d.join("nope.log");
    let o = hcsim(&["replay", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("nope.log"));
    let o = hcsim(&["replay", junk.to_str().unwrap(), "--log-format", "nosuch"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("ingress-nginx"), "{}", text(&o));
}

#[test]
fn an_ingress_nginx_log_with_whole_second_times_replays_for_its_upstream() {
    let d = tmp("replay-ingress");
    let mut lines = vec![];
    for i in 0..600 {
        let t = i as f64 / 20.0;
        let stamp = format!(
            "01/Dec/2026:20:{:02}:{:02} +0000",
            (t as u64) / 60,
            (t as u64) % 60
        );
        let (addrs, times, statuses) = if i % 2 == 1 && (10.0..16.0).contains(&t) {
            ("10.1.0.6:8080, 10.1.0.5:8080", "0.000, 0.005", "502, 200")
        } else if i % 2 == 1 {
            ("10.1.0.6:8080", "0.005", "200")
        } else {
            ("10.1.0.5:8080", "0.005", "200")
        };
        lines.push(format!(
            "10.0.0.9 - - [{stamp}] \"GET /a HTTP/1.1\" 200 5 \"-\" \"curl/8\" 80 0.006 [default-api-80] [] {addrs} 5 {times} {statuses} id{i}"
        ));
        // Another upstream's line, skipped with --target.
        lines.push(format!(
            "10.0.0.9 - - [{stamp}] \"GET /b HTTP/1.1\" 200 5 \"-\" \"curl/8\" 80 0.006 [default-web-80] [] 10.2.0.1:80 5 0.005 200 id{i}b"
        ));
    }
    let log = d.join("ingress.log");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let out_dir = d.join("out");
    let o = hcsim(&[
        "replay",
        log.to_str().unwrap(),
        "--target",
        "default-api-80",
        "--reps",
        "2",
        "--no-charts",
        "--quiet",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = replay_json(&out_dir);
    assert!(
        r["log"]["format"]
            .as_str()
            .unwrap()
            .contains("ingress-nginx")
    );
    assert_eq!(r["log"]["whole_second_times"], true);
    assert_eq!(r["log"]["requests"], 600);
    assert_eq!(r["log"]["elsewhere"], 600);
    let nodes: Vec<&str> = r["log"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["10.1.0.5:8080", "10.1.0.6:8080"]);
    let crash = r["inference"]["faults"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "crash")
        .expect("a crash");
    assert_eq!(crash["node"], "10.1.0.6:8080");
    let s = crash["start"]["hi"].as_f64().unwrap();
    assert!((9.0..11.5).contains(&s), "{crash}");
}

#[test]
fn the_config_s_log_format_that_the_lines_match_is_found_or_named() {
    let d = tmp("replay-formats");
    let conf = d.join("nginx.conf");
    std::fs::write(
        &conf,
        CONF.replace(
            "http {\n",
            "http {\n  log_format main '$remote_addr [$time_local] \"$request\" $status';\n  log_format up '$status|$msec|$request_time|$upstream_addr|$upstream_status|$upstream_response_time';\n",
        ),
    )
    .unwrap();
    let lines: Vec<String> = (0..100)
        .map(|i| {
            let addr = if i % 2 == 0 {
                "127.0.0.1:9001"
            } else {
                "127.0.0.1:9002"
            };
            format!(
                "200|{:.3}|0.005|{addr}|200|0.005",
                1_796_000_000.005 + i as f64 / 10.0
            )
        })
        .collect();
    let log = d.join("access.log");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let out_dir = d.join("out");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "replay",
            log.to_str().unwrap(),
            "--config",
            conf.to_str().unwrap(),
            "--target",
            "be",
            "--reps",
            "1",
            "--no-charts",
            "--quiet",
            "--out",
            out_dir.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |a: Vec<String>| hcsim(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let o = run(args(&[]));
    assert!(o.status.success(), "{}", text(&o));
    let r = replay_json(&out_dir);
    assert!(
        r["log"]["format"].as_str().unwrap().contains("`up` ("),
        "{}",
        r["log"]["format"]
    );
    assert_eq!(r["log"]["requests"], 100);
    let o = run(args(&["--log-format", "main"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("--log-format main: the format lacks")
            && text(&o).contains("$upstream_addr"),
        "{}",
        text(&o)
    );
}
