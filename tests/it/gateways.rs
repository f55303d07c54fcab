//! The Caddy and Traefik gateways end to end: their request paths on
//! models, `hcsim import` of their configs (and its errors), `hcsim
//! export` back (the same gateway and policy), and the real binaries
//! accepting the exports (`caddy validate`; Traefik started with the file
//! provider on 127.0.0.1, its API read, stopped by its pid).

use crate::{hcsim, root, tmp};
use hcsim::spec::Model;
use hcsim::world;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn scenario(doc: Value) -> Model {
    Model::from_document(&doc, "inline.json".as_ref()).unwrap_or_else(|e| panic!("{e}"))
}

fn model(gateway: Value, faults: Value, policy: Value, clients: Value) -> Value {
    json!({
        "name": "gw", "duration": "20s",
        "clients": clients,
        "gateway": gateway,
        "nodes": [{"name": "A"}, {"name": "B"}],
        "faults": faults,
        "policy": policy
    })
}

fn open(rate: f64) -> Value {
    json!({"kind": "open", "rate_per_s": rate, "arrivals": "constant", "timeout": "3s"})
}

fn status(r: &hcsim::metrics::RunSummary, s: &str) -> u64 {
    r.client.status.get(s).copied().unwrap_or(0)
}

#[test]
fn caddy_retries_nothing_by_default_and_answers_503_without_upstreams() {
    // tryAgain: no lb_try_duration, no lb_retries: a refused connection is
    // the client's 502; with both nodes down, 503 "no upstreams available"
    // once the passive check has them out.
    let crash = json!([{"kind": "crash", "node": "A", "at": "5s", "for": "10s"}]);
    let r = world::run(
        &scenario(model(
            json!({"flavor": "caddy"}),
            crash.clone(),
            json!({"kind": "none"}),
            open(20.0),
        )),
        1,
    );
    let a = r.nodes[0].attempts;
    assert!(
        status(&r, "502") > 50,
        "every request random picks A while it is down: {r:?}"
    );
    assert_eq!(
        r.nodes.iter().map(|n| n.attempts).sum::<u64>(),
        r.client.requests,
        "one try each"
    );
    assert!(a > 0);
    // lb_try_duration: the same requests are tried again 250 ms later.
    let r = world::run(
        &scenario(model(
            json!({"flavor": "caddy", "caddy": {"lb_try_duration": "2s"}}),
            crash,
            json!({"kind": "caddy", "passive": {"fail_duration": "1s"}}),
            open(20.0),
        )),
        1,
    );
    assert_eq!(status(&r, "502"), 0, "{:?}", r.client.status);
    assert!(
        r.client.latency_ms.max.unwrap() >= 250.0,
        "a retry waits lb_try_interval"
    );
    let both = json!([
        {"kind": "crash", "node": "A", "at": "5s", "for": "10s"},
        {"kind": "crash", "node": "B", "at": "5s", "for": "10s"}
    ]);
    let r = world::run(
        &scenario(model(
            json!({"flavor": "caddy"}),
            both,
            json!({"kind": "caddy", "passive": {"fail_duration": "30s", "max_fails": 1}}),
            open(20.0),
        )),
        1,
    );
    assert!(
        status(&r, "503") > 100,
        "no upstreams available: {:?}",
        r.client.status
    );
}

#[test]
fn caddy_without_a_response_timeout_never_counts_a_hung_backend() {
    let hang = json!([{"kind": "hang", "node": "A", "at": "5s"}]);
    let p = json!({"kind": "caddy", "passive": {"fail_duration": "10s", "max_fails": 1}});
    let r = world::run(
        &scenario(model(
            json!({"flavor": "caddy"}),
            hang.clone(),
            p.clone(),
            open(20.0),
        )),
        1,
    );
    assert_eq!(
        r.nodes[0].ejections, 0,
        "the clients leave first (499, not counted)"
    );
    assert!(r.client.timeouts > 50);
    // With response_header_timeout the hang is a 504 and a failure.
    let r = world::run(
        &scenario(model(
            json!({"flavor": "caddy", "caddy": {"response_header_timeout": "1s"}}),
            hang,
            p,
            open(20.0),
        )),
        1,
    );
    assert_eq!(
        r.nodes[0].ejections, 2,
        "out for 10 s after each counted timeout"
    );
    assert!(status(&r, "504") >= 1);
}

#[test]
fn traefik_balances_by_weight_retries_dial_errors_and_answers_503_when_all_are_down() {
    let mut doc = model(
        json!({"flavor": "traefik"}),
        json!([]),
        json!({"kind": "none"}),
        open(30.0),
    );
    doc["nodes"] = json!([{"name": "A", "weight": 2}, {"name": "B"}]);
    let r = world::run(&scenario(doc), 1);
    let (a, b) = (r.nodes[0].answered as f64, r.nodes[1].answered as f64);
    assert!(
        (a / b - 2.0).abs() < 0.05,
        "EDF weighted round robin: {a} / {b}"
    );
    // The retry middleware: a refused connection (nothing written) is tried again.
    let crash = json!([{"kind": "crash", "node": "A", "at": "5s", "for": "10s"}]);
    let r = world::run(
        &scenario(model(
            json!({"flavor": "traefik", "traefik": {"retry": {"attempts": 2}}}),
            crash.clone(),
            json!({"kind": "none"}),
            open(30.0),
        )),
        1,
    );
    assert_eq!(status(&r, "502"), 0, "{:?}", r.client.status);
    let r = world::run(
        &scenario(model(
            json!({"flavor": "traefik"}),
            crash,
            json!({"kind": "none"}),
            open(30.0),
        )),
        1,
    );
    assert!(
        status(&r, "502") > 100,
        "no retry middleware: {:?}",
        r.client.status
    );
    // No server up: 503 "no available server".
    let both = json!([
        {"kind": "flaky", "node": "A", "at": "5s", "p": 1.0, "status": 500},
        {"kind": "flaky", "node": "B", "at": "5s", "p": 1.0, "status": 500}
    ]);
    let r = world::run(
        &scenario(model(
            json!({"flavor": "traefik"}),
            both,
            json!({"kind": "traefik", "passiveHealthCheck": {"failureWindow": "30s"}}),
            open(30.0),
        )),
        1,
    );
    assert!(status(&r, "503") > 300, "{:?}", r.client.status);
}

#[test]
fn the_traefik_breaker_trips_under_errors_and_cuts_every_server_off() {
    let flaky =
        json!([{"kind": "flaky", "node": "A", "at": "5s", "for": "10s", "p": 0.6, "status": 503}]);
    let gw = json!({"flavor": "traefik", "traefik": {"circuitBreaker": {"expression": "ResponseCodeRatio(500, 600, 0, 600) > 0.25"}}});
    let r = world::run(
        &scenario(model(gw, flaky, json!({"kind": "none"}), open(50.0))),
        1,
    );
    assert!(
        r.nodes[0].ejections >= 1 && r.nodes[1].ejections >= 1,
        "a trip ejects both"
    );
    // The fallback answers 503 without an attempt.
    let attempts: u64 = r.nodes.iter().map(|n| n.attempts).sum();
    assert!(
        attempts < r.client.requests - 200,
        "{attempts} of {}",
        r.client.requests
    );
}

/// The real binaries, when scripts/gateway-bins.sh could install them.
fn real(name: &str) -> Option<PathBuf> {
    let p = root().join(".cache/gateways").join(name);
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var_os("HCSIM_REQUIRE_TOOLS").is_none(),
        "HCSIM_REQUIRE_TOOLS is set but {} is missing (scripts/gateway-bins.sh installs it)",
        p.display()
    );
    eprintln!(
        "skipped: {} is not installed (scripts/gateway-bins.sh)",
        p.display()
    );
    None
}

fn run_ok(args: &[&str]) -> String {
    let out = hcsim(args);
    assert!(
        out.status.success(),
        "hcsim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Free ports on 127.0.0.1 (nothing listens on them afterwards).
fn free_ports(n: usize) -> Vec<u16> {
    let ls: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    ls.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

/// import → run → export → import again: the same gateway and policy.
/// The export points every node at 127.0.0.1 (a real binary started on it
/// sends its checks nowhere else).
fn round_trip(config: &str, to: &str, file: &str) -> (PathBuf, Value) {
    let d = tmp(&format!("rt-{to}"));
    let first = d.join("first.json");
    run_ok(&[
        "import",
        config,
        "-o",
        first.to_str().unwrap(),
        "--duration",
        "5s",
    ]);
    run_ok(&[
        "run",
        first.to_str().unwrap(),
        "--quiet",
        "--no-charts",
        "--out",
        d.join("out").to_str().unwrap(),
    ]);
    let a = read_json(&first);
    let nodes = a["nodes"].as_array().unwrap().clone();
    let exported = d.join(file);
    let mut args: Vec<String> = [
        "export",
        first.to_str().unwrap(),
        "--to",
        to,
        "-o",
        exported.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    for (n, p) in nodes.iter().zip(free_ports(nodes.len())) {
        args.push("--address".into());
        args.push(format!("{}=127.0.0.1:{p}", n["name"].as_str().unwrap()));
    }
    run_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let second = d.join("second.json");
    run_ok(&[
        "import",
        exported.to_str().unwrap(),
        "-o",
        second.to_str().unwrap(),
        "--duration",
        "5s",
    ]);
    let b = read_json(&second);
    for k in ["gateway", "policy"] {
        assert_eq!(a[k], b[k], "{config}: `{k}` after export and import");
    }
    let weights = |v: &Value| {
        v["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["weight"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(weights(&a), weights(&b));
    (exported, a)
}

#[test]
fn a_caddyfile_round_trips_and_caddy_accepts_the_export() {
    let (exported, m) = round_trip("tests/configs/caddy/Caddyfile", "caddy", "Caddyfile");
    assert_eq!(m["gateway"]["caddy"]["lb_try_duration"], "5s");
    assert_eq!(m["policy"]["passive"]["unhealthy_status"], json!([5, 500]));
    assert_eq!(m["policy"]["active"]["fails"], 3);
    let Some(caddy) = real("caddy") else { return };
    let out = Command::new(&caddy)
        .args(["validate", "--adapter", "caddyfile", "--config"])
        .arg(&exported)
        .output()
        .expect("run caddy validate");
    assert!(
        out.status.success(),
        "caddy validate: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn caddy_json_imports_its_handler() {
    let d = tmp("caddy-json");
    let m = d.join("m.json");
    run_ok(&[
        "import",
        "tests/configs/caddy/caddy.json",
        "-o",
        m.to_str().unwrap(),
    ]);
    let v = read_json(&m);
    assert_eq!(v["gateway"]["caddy"]["lb_retries"], 2);
    assert_eq!(v["policy"]["active"]["interval"], "1s", "1000000000 ns");
    assert_eq!(v["policy"]["passive"]["unhealthy_status"], json!([5]));
    assert!(
        v["description"]
            .as_str()
            .unwrap()
            .contains("policy.passive.max_fails ← caddy.json:23")
    );
}

#[test]
fn traefik_yaml_round_trips_and_traefik_runs_the_export() {
    let (exported, m) = round_trip(
        "tests/configs/traefik/dynamic.yml",
        "traefik",
        "dynamic.yml",
    );
    assert_eq!(m["gateway"]["traefik"]["retry"]["attempts"], 3);
    assert_eq!(m["policy"]["healthCheck"]["unhealthyInterval"], "500ms");
    assert_eq!(m["nodes"][0]["weight"], 2);
    let Some(traefik) = real("traefik") else {
        return;
    };
    let d = exported.parent().unwrap().to_path_buf();
    let ports = free_ports(2);
    let opts = hcsim::config::export::Options {
        addresses: vec![],
        listen: format!("127.0.0.1:{}", ports[0]),
    };
    let api = format!("127.0.0.1:{}", ports[1]);
    let static_cfg = hcsim::config::export::traefik::static_config(
        &opts,
        exported.to_str().unwrap(),
        &api,
        d.join("access.log").to_str().unwrap(),
    );
    std::fs::write(d.join("traefik.yml"), static_cfg).unwrap();
    let mut child = Command::new(&traefik)
        .arg(format!("--configFile={}", d.join("traefik.yml").display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start traefik");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = String::new();
    while Instant::now() < deadline {
        if let Ok(body) = get(&api, "/api/rawdata") {
            if body.contains("api@file") && body.contains("api-retry@file") {
                seen = body;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    let raw: Value =
        serde_json::from_str(&seen).unwrap_or_else(|_| panic!("no API answer: {seen}"));
    for section in ["routers", "services", "middlewares"] {
        for (name, v) in raw[section].as_object().unwrap() {
            if name.ends_with("@file") {
                assert_eq!(v["status"], "enabled", "{section} {name}: {v}");
                assert!(v.get("error").is_none(), "{section} {name}: {v}");
            }
        }
    }
    assert!(raw["middlewares"]["api-breaker@file"]["circuitBreaker"]["expression"].is_string());
}

/// A plain HTTP/1.0 GET to 127.0.0.1, bounded in time.
fn get(addr: &str, path: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut s =
        std::net::TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_millis(300))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n")?;
    let mut buf = String::new();
    s.read_to_string(&mut buf)?;
    Ok(buf
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_string()))
}

#[test]
fn traefik_toml_and_crds_import() {
    let d = tmp("traefik-imports");
    let m = d.join("toml.json");
    run_ok(&[
        "import",
        "tests/configs/traefik/dynamic.toml",
        "-o",
        m.to_str().unwrap(),
    ]);
    let v = read_json(&m);
    assert_eq!(v["policy"]["passiveHealthCheck"]["maxFailedAttempts"], 3);
    assert_eq!(
        v["gateway"]["traefik"]["forwardingTimeouts"]["dialTimeout"],
        "1s"
    );
    assert!(
        v["description"]
            .as_str()
            .unwrap()
            .contains("dynamic.toml:20")
    );
    let m = d.join("crds.json");
    run_ok(&[
        "import",
        "tests/configs/traefik/crds.yaml",
        "--nodes",
        "2",
        "-o",
        m.to_str().unwrap(),
    ]);
    let v = read_json(&m);
    assert_eq!(v["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(v["gateway"]["traefik"]["retry"]["attempts"], 4);
    assert_eq!(
        v["gateway"]["traefik"]["circuitBreaker"]["expression"],
        "NetworkErrorRatio() > 0.50"
    );
}

#[test]
fn bad_configs_exit_2_naming_the_line() {
    let out = hcsim(&[
        "import",
        "tests/configs/caddy/unknown-subdirective.Caddyfile",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("unknown-subdirective.Caddyfile:4: unrecognized subdirective health_intervall")
            && e.contains("did you mean `health_interval`"),
        "{e}"
    );
    let out = hcsim(&["import", "tests/configs/traefik/bad-expression.yml"]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("bad-expression.yml:10:") && e.contains("column 22: expected an operand"),
        "{e}"
    );
}
