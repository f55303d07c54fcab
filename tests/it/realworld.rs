//! What the real world does to a test, through the binary: a crashed
//! process's start-up time (`restart_delay`), a fault's random phase (`at`
//! as a distribution), the load generator's send jitter, and the gateway's
//! event log (`--events`, `events.csv`).

use crate::{hcsim, tmp};
use serde_json::{Value, json};
use std::path::Path;

/// Writes `doc` as a model file in `dir` and returns its path.
fn model(dir: &Path, name: &str, doc: &Value) -> String {
    let p = dir.join(format!("{name}.json"));
    std::fs::write(&p, serde_json::to_string_pretty(doc).unwrap()).unwrap();
    p.to_string_lossy().into_owned()
}

/// `hcsim run` into `out` (no charts); the summary.json it wrote.
fn run(path: &str, out: &Path, extra: &[&str]) -> Value {
    let out_s = out.to_string_lossy().into_owned();
    let mut args = vec!["run", path, "--no-charts", "-q", "--out", &out_s];
    args.extend_from_slice(extra);
    let o = hcsim(&args);
    assert!(
        o.status.success(),
        "hcsim run {path}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap()
}

/// One node crashing at 1 s for 1 s, 100 requests/s at constant spacing:
/// nginx's single server answers 502 for every refused connect.
fn crash(restart_delay: Option<Value>) -> Value {
    let mut fault = json!({"kind": "crash", "node": "a", "at": "1s", "for": "1s"});
    if let Some(d) = restart_delay {
        fault["restart_delay"] = d;
    }
    json!({
        "name": "restart", "duration": "4s",
        "clients": {"kind": "open", "rate_per_s": 100.0, "arrivals": "constant"},
        "nodes": [{"name": "a", "service_time": {"dist": "constant", "value": "1ms"}}],
        "faults": [fault]
    })
}

#[test]
fn a_restarted_process_refuses_connections_for_its_start_up_time() {
    let dir = tmp("restart");
    let errors = |doc: &Value, name: &str| {
        let s = run(&model(&dir, name, doc), &dir.join(name), &[]);
        s["runs"][0]["client"]["errors"].as_u64().unwrap()
    };
    // Requests at 1.00, 1.01, ..., 1.99 s meet the crash: 100 refusals.
    let plain = errors(&crash(None), "plain");
    assert_eq!(plain, 100);
    // Default 0s is today's behaviour.
    assert_eq!(errors(&crash(Some(json!("0s"))), "zero"), plain);
    // A JVM's 1.5 s start-up: the port stays closed until 3.5 s.
    assert_eq!(errors(&crash(Some(json!("1500ms"))), "jvm"), 250);
    // A distribution: between 0.5 and 1 s more refusals, drawn per restart.
    let drawn = errors(
        &crash(Some(
            json!({"dist": "uniform", "min": "500ms", "max": "1s"}),
        )),
        "drawn",
    );
    assert!((150..=200).contains(&drawn), "{drawn}");
}

/// A crash whose start is drawn in [2 s, 3 s) per replication, in front
/// of nginx with max_fails=1 at 1,000 requests/s over four nodes.
fn random_phase() -> Value {
    json!({
        "name": "phase", "duration": "6s",
        "clients": {"kind": "open", "rate_per_s": 1000.0},
        "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}],
        "faults": [{"kind": "crash", "node": "a", "for": "1s",
                    "at": {"dist": "uniform", "min": "2s", "max": "3s"}}],
        "policy": {"kind": "max_fails", "max_fails": 1, "fail_timeout": "10s"}
    })
}

#[test]
fn a_random_fault_phase_is_drawn_per_replication_and_measured_from_there() {
    let dir = tmp("phase");
    let path = model(&dir, "phase", &random_phase());
    let one = run(&path, &dir.join("j1"), &["--reps", "6", "--jobs", "1"]);
    let two = run(&path, &dir.join("j2"), &["--reps", "6", "--jobs", "2"]);
    // Deterministic whatever the thread count.
    assert_eq!(one, two);
    let starts: Vec<f64> = one["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["fault_start_s"][0].as_f64().unwrap())
        .collect();
    assert!(starts.iter().all(|s| (2.0..=3.0).contains(s)), "{starts:?}");
    let mut distinct = starts.clone();
    distinct.dedup();
    assert!(distinct.len() > 3, "{starts:?}");
    // The first refused connect ejects `a` within milliseconds of the
    // drawn start; measured from the earliest possible start (2 s) the
    // delay would reach the drawn offset.
    for r in one["runs"].as_array().unwrap() {
        let d = r["nodes"][0]["first_ejection_delay_s"].as_f64().unwrap();
        assert!(d < 0.05, "first_ejection_delay_s {d} in {}", r["seed"]);
    }
    // The summary lists the fault at the median start, with the spread.
    let f = &one["faults"][0];
    assert_eq!(f["start_drawn_s"]["n"], 6);
    let median = f["start_drawn_s"]["median"].as_f64().unwrap();
    assert_eq!(f["start_s"].as_f64().unwrap(), median);
    assert!((f["end_s"].as_f64().unwrap() - (median + 1.0)).abs() < 1e-6);
}

#[test]
fn a_fixed_fault_start_writes_no_drawn_starts() {
    let dir = tmp("phase-fixed");
    let mut doc = random_phase();
    doc["faults"][0]["at"] = json!("2s");
    let s = run(
        &model(&dir, "fixed", &doc),
        &dir.join("out"),
        &["--reps", "2"],
    );
    assert!(
        s["runs"][0].get("fault_start_s").is_none(),
        "{}",
        s["runs"][0]
    );
    assert!(s["faults"][0].get("start_drawn_s").is_none());
    assert_eq!(s["faults"][0]["start_s"], 2.0);
}

#[test]
fn send_jitter_delays_requests_without_moving_the_arrivals() {
    let dir = tmp("jitter");
    // 100 requests/s at constant spacing, 9 ms of service.
    let mut doc = json!({
        "name": "jitter", "duration": "10s",
        "clients": {"kind": "open", "rate_per_s": 100.0, "arrivals": "constant"},
        "nodes": [{"name": "a", "service_time": {"dist": "constant", "value": "9ms"}}]
    });
    let plain = run(
        &model(&dir, "plain", &doc),
        &dir.join("plain"),
        &["--trace"],
    );
    doc["clients"]["send_jitter"] = json!("5ms");
    let path = model(&dir, "jit", &doc);
    let jit = run(&path, &dir.join("jit"), &["--trace"]);
    assert_eq!(jit, run(&path, &dir.join("again"), &["--trace"]));
    let c = |s: &Value, k: &str| s["runs"][0]["client"][k].as_u64().unwrap();
    // The last arrival (9.99 s) may leave after the end; none other is lost.
    assert!(c(&plain, "requests") - c(&jit, "requests") <= 1);
    // Latency is measured from when the request left: unchanged.
    assert_eq!(
        plain["runs"][0]["client"]["latency_ms"]["p50"],
        jit["runs"][0]["client"]["latency_ms"]["p50"]
    );
    // Each attempt ends where it would have, plus its jitter: up to 5 ms.
    let ends = |out: &str| -> Vec<u64> {
        let mut r = csv::Reader::from_path(dir.join(out).join("attempts.csv")).unwrap();
        let col = r
            .headers()
            .unwrap()
            .iter()
            .position(|h| h == "t_s")
            .unwrap();
        r.records()
            .map(|x| (x.unwrap()[col].parse::<f64>().unwrap() * 1e6).round() as u64)
            .collect()
    };
    let (on_time, late) = (ends("plain"), ends("jit"));
    assert!(
        on_time.iter().all(|t| t % 10_000 == on_time[0]),
        "{on_time:?}"
    );
    let delays: Vec<u64> = late.iter().map(|t| (t - on_time[0]) % 10_000).collect();
    assert!(delays.iter().all(|&d| d <= 5_000), "{delays:?}");
    assert!(
        delays.iter().filter(|&&d| d > 500).count() > 500,
        "{delays:?}"
    );
}

/// Reads events.csv into (source, node, line) rows.
fn events(dir: &Path) -> Vec<(String, String, String)> {
    let mut r = csv::Reader::from_path(dir.join("events.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    assert_eq!(
        h.iter().collect::<Vec<_>>(),
        ["rep", "seed", "t_s", "replica", "node", "source", "line"]
    );
    r.records()
        .map(|x| {
            let x = x.unwrap();
            (x[5].to_string(), x[4].to_string(), x[6].to_string())
        })
        .collect()
}

#[test]
fn the_event_log_has_nginx_error_log_lines() {
    let dir = tmp("events-nginx");
    let doc = json!({
        "name": "shop", "duration": "20s",
        "clients": {"kind": "open", "rate_per_s": 200.0},
        "nodes": [{"name": "a"}, {"name": "b"}],
        "faults": [{"kind": "crash", "node": "a", "at": "2s"},
                   {"kind": "crash", "node": "b", "at": "10s"}],
        "policy": {"kind": "max_fails", "max_fails": 1, "fail_timeout": "5s"}
    });
    let path = model(&dir, "shop", &doc);
    run(&path, &dir.join("out"), &["--events"]);
    let ev = events(&dir.join("out"));
    let has = |src: &str, node: &str, line: &str| {
        ev.iter()
            .any(|(s, n, l)| s == src && n == node && l == line)
    };
    assert!(has(
        "nginx",
        "a",
        "[error] connect() failed (111: Connection refused) while connecting to upstream, \
         upstream: \"http://127.0.0.1:8001/\""
    ));
    assert!(has(
        "nginx",
        "a",
        "[warn] upstream server temporarily disabled while connecting to upstream, \
         upstream: \"http://127.0.0.1:8001/\""
    ));
    // Both down: nginx finds no live peer.
    assert!(has(
        "nginx",
        "",
        "[error] no live upstreams while connecting to upstream, upstream: \"http://shop/\""
    ));
    // Each warning follows the error of the same attempt, in its phase
    // (the crash resets the requests in flight: "while reading").
    let phase = |l: &str| {
        l.split(" while ")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .to_string()
    };
    for (i, (_, node, l)) in ev.iter().enumerate() {
        if l.starts_with("[warn] upstream server temporarily disabled") {
            let (_, n, before) = &ev[i - 1];
            assert!(n == node && before.starts_with("[error] "), "{before}");
            assert_eq!(phase(before), phase(l));
        }
    }
    assert!(ev.iter().any(|(_, _, l)| l
        == "[warn] upstream server temporarily disabled while reading response header from \
            upstream, upstream: \"http://127.0.0.1:8001/\""));
    // Without --events the file is gone from a reused directory.
    run(&path, &dir.join("out"), &[]);
    assert!(!dir.join("out/events.csv").exists());
}

#[test]
fn the_event_log_has_nginx_read_timeouts() {
    let dir = tmp("events-timeout");
    let doc = json!({
        "name": "slow", "duration": "10s",
        "clients": {"kind": "open", "rate_per_s": 50.0},
        "gateway": {"proxy_read_timeout": "1s"},
        "nodes": [{"name": "a"}, {"name": "b"}],
        "faults": [{"kind": "hang", "node": "a", "at": "1s"}]
    });
    run(&model(&dir, "slow", &doc), &dir.join("out"), &["--events"]);
    let ev = events(&dir.join("out"));
    assert!(ev.iter().any(|(_, n, l)| n == "a"
        && l == "[error] upstream timed out (110: Connection timed out) while reading response \
                 header from upstream, upstream: \"http://127.0.0.1:8001/\""));
    assert!(ev.iter().any(|(_, n, l)| n == "a"
        && l == "[warn] upstream server temporarily disabled while reading response header \
                 from upstream, upstream: \"http://127.0.0.1:8001/\""));
}

#[test]
fn the_event_log_has_haproxy_server_state_changes() {
    let dir = tmp("events-haproxy");
    let doc = json!({
        "name": "be", "duration": "20s",
        "clients": {"kind": "open", "rate_per_s": 50.0},
        "gateway": {"flavor": "haproxy"},
        "nodes": [{"name": "A"}, {"name": "B"}],
        "faults": [{"kind": "crash", "node": "A", "at": "3s", "for": "6s"},
                   {"kind": "flaky", "node": "B", "p": 1.0, "at": "12s"}],
        "policy": {"kind": "active_probe", "flavor": "haproxy", "probe": "http",
                   "inter": "1s", "fall": 2, "rise": 2}
    });
    run(&model(&dir, "be", &doc), &dir.join("out"), &["--events"]);
    let ev = events(&dir.join("out"));
    let lines: Vec<&str> = ev.iter().map(|(_, _, l)| l.as_str()).collect();
    assert!(ev.iter().all(|(s, _, _)| s == "haproxy"), "{ev:?}");
    assert!(lines.contains(
        &"Server be/A is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", \
          check duration: 0ms. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, \
          0 remaining in queue."
    ), "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.starts_with(
            "Server be/A is UP, reason: Layer7 check passed, code: 200, check duration: "
        ) && l.ends_with(
            "ms. 2 active and 0 backup servers online. 0 sessions requeued, 0 total in queue."
        )),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(
            "Server be/B is DOWN, reason: Layer7 wrong status, code: 503, info: \"Service \
         Unavailable\", check duration: "
        )),
        "{lines:#?}"
    );
}

#[test]
fn the_event_log_has_envoy_outlier_detection_events() {
    let dir = tmp("events-envoy");
    let doc = json!({
        "name": "cluster", "duration": "60s",
        "clients": {"kind": "open", "rate_per_s": 200.0},
        "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "faults": [{"kind": "flaky", "node": "a", "p": 1.0, "at": "5s", "for": "20s"}],
        "policy": {"kind": "outlier_detection", "max_ejection_percent": 100,
                   "base_ejection_time": "10s", "interval": "1s"}
    });
    run(
        &model(&dir, "cluster", &doc),
        &dir.join("out"),
        &["--events"],
    );
    let ev = events(&dir.join("out"));
    // An Envoy gateway writes no nginx error log.
    assert!(
        ev.iter().all(|(s, n, _)| s == "envoy" && n == "a"),
        "{ev:?}"
    );
    let json: Vec<Value> = ev
        .iter()
        .map(|(_, _, l)| serde_json::from_str(l).unwrap())
        .collect();
    // Five 503s in a row are five gateway failures too: that detection
    // comes first (both are posted in this order) and is logged although
    // `enforcing_consecutive_gateway_failure` (0) does not enforce it.
    assert_eq!(
        json[0],
        json!({"type": "CONSECUTIVE_GATEWAY_FAILURE", "cluster_name": "cluster",
               "upstream_url": "127.0.0.1:8001", "action": "EJECT", "num_ejections": 0,
               "enforced": false, "eject_consecutive_event": {}})
    );
    assert_eq!(
        json[1],
        json!({"type": "CONSECUTIVE_5XX", "cluster_name": "cluster",
               "upstream_url": "127.0.0.1:8001", "action": "EJECT", "num_ejections": 1,
               "enforced": true, "eject_consecutive_event": {}})
    );
    let uneject = json.iter().find(|j| j["action"] == "UNEJECT").unwrap();
    assert_eq!(uneject["num_ejections"], 1);
    assert_eq!(uneject["enforced"], false);
    assert!(
        uneject["secs_since_last_action"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 10
    );
    // The second ejection says how long since the un-ejection.
    let second = json
        .iter()
        .filter(|j| j["action"] == "EJECT" && j["enforced"] == true)
        .nth(1)
        .unwrap();
    assert_eq!(second["num_ejections"], 2);
    assert!(second.get("secs_since_last_action").is_some());
}

#[test]
fn bad_realworld_fields_name_their_path() {
    let dir = tmp("realworld-bad");
    let cases = [
        (
            json!([{"kind": "hang", "node": "a", "at": "1s", "restart_delay": "1s"}]),
            "faults[0].restart_delay: only a crash restarts",
        ),
        (
            json!([{"kind": "crash", "node": "a", "restart_delay": {"dist": "uniform", "min": "2s", "max": "1s"}}]),
            "faults[0].restart_delay.min: \"2s\" is above max \"1s\"",
        ),
        (
            json!([{"kind": "crash", "node": "a", "at": {"dist": "lognormal", "median": "1s", "sigma": 11.0}}]),
            "faults[0].at.sigma: must be in [0, 10]",
        ),
        (
            json!([{"kind": "crash", "node": "a", "at": {"dist": "uniform", "min": "20s", "max": "30s"}}]),
            "faults[0].at: starts at 20s, not before the end of the run (10s)",
        ),
        (
            json!([{"kind": "crash", "node": "a", "at": {"dist": "gamma"}}]),
            "faults[0].at.dist: unknown variant `gamma`",
        ),
    ];
    for (i, (faults, want)) in cases.into_iter().enumerate() {
        let doc = json!({
            "name": "bad", "duration": "10s",
            "clients": {"kind": "open", "rate_per_s": 10.0},
            "nodes": [{"name": "a"}], "faults": faults
        });
        let path = model(&dir, &format!("bad{i}"), &doc);
        let o = hcsim(&["check", &path]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(want), "{err}");
    }
    let doc = json!({
        "name": "bad", "duration": "10s",
        "clients": {"kind": "open", "rate_per_s": 10.0,
                    "send_jitter": {"dist": "exponential", "mean": "0s"}},
        "nodes": [{"name": "a"}]
    });
    let o = hcsim(&["check", &model(&dir, "jitter", &doc)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("clients.send_jitter.mean: must be positive"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A free TCP port on 127.0.0.1 (nothing listens on it once returned).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn haproxy_writes_the_down_line_the_event_log_writes() {
    use crate::{sbin, tool_present};
    use std::process::{Command, Stdio};
    let haproxy = sbin("haproxy");
    if !tool_present(&haproxy, "-v") {
        return;
    }
    let dir = tmp("events-real-haproxy");
    // One server on a closed port, HTTP checks: DOWN after two refusals.
    let (front, dead) = (free_port(), free_port());
    let cfg = dir.join("h.cfg");
    std::fs::write(
        &cfg,
        format!(
            "global\n    log stderr format raw local0\ndefaults\n    mode http\n    log global\n    \
             timeout connect 1s\n    timeout client 5s\n    timeout server 5s\nfrontend fe\n    \
             bind 127.0.0.1:{front}\n    default_backend be\nbackend be\n    option httpchk\n    \
             server A 127.0.0.1:{dead} check inter 200ms fall 2 rise 2\n"
        ),
    )
    .unwrap();
    let child = Command::new(&haproxy)
        .args(["-db", "-f"])
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start haproxy");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // Stopped by its pid, then read to the end.
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().expect("haproxy output");
    let real = String::from_utf8_lossy(&out.stderr).into_owned();
    let real_down = real
        .lines()
        .find(|l| l.starts_with("Server be/A is DOWN"))
        .unwrap_or_else(|| panic!("no DOWN line from haproxy: {real}"));
    assert!(
        real.lines()
            .any(|l| l == "backend be has no server available!"),
        "{real}"
    );
    // The same backend in hcsim: its node `A` at 127.0.0.1:8001 crashed.
    let doc = json!({
        "name": "be", "duration": "3s",
        "clients": {"kind": "open", "rate_per_s": 1.0},
        "gateway": {"flavor": "haproxy"},
        "nodes": [{"name": "A"}],
        "faults": [{"kind": "crash", "node": "A"}],
        "policy": {"kind": "active_probe", "flavor": "haproxy", "probe": "http",
                   "inter": "200ms", "fall": 2, "rise": 2}
    });
    run(&model(&dir, "be", &doc), &dir.join("out"), &["--events"]);
    let ev = events(&dir.join("out"));
    let sim_down = &ev
        .iter()
        .find(|(_, _, l)| l.starts_with("Server be/A is DOWN"))
        .unwrap()
        .2;
    // Equal but for the measured check duration ("0ms" against a closed port).
    let parts = |l: &str| {
        let (head, rest) = l.split_once("check duration: ").unwrap();
        (
            head.to_string(),
            rest.split_once("ms.").unwrap().1.to_string(),
        )
    };
    assert_eq!(parts(sim_down), parts(real_down));
    assert!(
        ev.iter()
            .any(|(_, _, l)| l == "backend be has no server available!")
    );
}
