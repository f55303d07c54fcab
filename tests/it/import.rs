//! `hcsim import` and `hcsim export`: the config corpus and its golden
//! models (`tests/configs/`), the malformed configs (`tests/bad-configs/`),
//! round trips of the shipped models through nginx and HAProxy config, the
//! exported configs checked by the real `nginx -t` and `haproxy -c`, and
//! mutated configs that must never panic.

use crate::{hcsim, root, sbin, tmp};
use hcsim::config::export;
use hcsim::config::import::{self, Format, Options, Workload};
use hcsim::policy::PolicySpec;
use hcsim::policy::active_probe::ActiveProbeSpec;
use hcsim::spec::{GatewayFlavor, Model};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Corpus files and the target each imports.
const CASES: &[(&str, Option<&str>)] = &[
    ("nginx-acceptance/nginx.conf", Some("api_backend")),
    ("nginx-acceptance/nginx.conf", Some("static_backend")),
    ("nginx-docs-upstream.conf", None),
    ("haproxy-acceptance.cfg", None),
    ("kubeadm-haproxy.cfg", None),
    ("envoy-acceptance.yaml", Some("api")),
    ("envoy-front-proxy.yaml", Some("service1")),
    ("istio-acceptance.yaml", None),
    ("istio-bookinfo-destination-rule-all.yaml", Some("reviews")),
    ("k8s-deployment.yaml", None),
    ("k8s-tcp-liveness-readiness.yaml", None),
    ("kong-acceptance.yml", None),
    ("linkerd-acceptance.yaml", None),
];

#[test]
fn corpus_configs_import_to_their_golden_models() {
    let bless = std::env::var_os("HCSIM_BLESS").is_some();
    let mut failures = vec![];
    for (file, target) in CASES {
        let path = format!("tests/configs/{file}");
        let mut args = vec!["import", path.as_str()];
        if let Some(t) = target {
            args.extend(["--target", t]);
        }
        let o = hcsim(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(0) || stderr.contains("panicked") {
            failures.push(format!("{file}: exit {:?}: {stderr}", o.status.code()));
            continue;
        }
        let golden = root().join(format!(
            "tests/configs/{}{}.model.json",
            file.trim_end_matches(|c| c != '.').trim_end_matches('.'),
            target.map(|t| format!("-{t}")).unwrap_or_default()
        ));
        let got = String::from_utf8_lossy(&o.stdout).into_owned();
        if bless {
            std::fs::write(&golden, &got).unwrap();
        }
        let want = std::fs::read_to_string(&golden)
            .unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
        if got != want {
            failures.push(format!("{file}: differs from {}", golden.display()));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn the_nginx_acceptance_case_has_exactly_its_settings() {
    let o = hcsim(&[
        "import",
        "tests/configs/nginx-acceptance/nginx.conf",
        "--target",
        "api_backend",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let m: Value = serde_json::from_slice(&o.stdout).unwrap();
    let g = &m["gateway"];
    assert_eq!(g["balancer"], "least_conn");
    assert_eq!(g["zone"], true);
    assert_eq!(g["workers"], 2);
    assert_eq!(
        g["proxy_next_upstream"],
        serde_json::json!(["error", "timeout", "http_502", "http_503"])
    );
    assert_eq!(g["proxy_next_upstream_tries"], 2);
    assert_eq!(g["proxy_read_timeout"], "2s"); // the location's, not the server's 30s
    assert_eq!(g["proxy_connect_timeout"], "3s"); // from http
    let weights: Vec<u64> = m["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["weight"].as_u64().unwrap())
        .collect();
    assert_eq!(weights, [3, 2, 1]);
    assert_eq!(m["nodes"][2]["backup"], true);
    assert_eq!(m["policy"]["max_fails"], 2);
    assert_eq!(m["policy"]["fail_timeout"], "5s");
    // keepalive 32 is read, but the location keeps nginx's HTTP/1.0: no reuse.
    assert_eq!(g["pool"]["keepalive"], 32);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(
            "warning: tests/configs/nginx-acceptance/nginx.conf:13: keepalive has no effect \
             here: the location at tests/configs/nginx-acceptance/nginx.conf:23 speaks HTTP/1.0"
        ),
        "{stderr}"
    );
}

#[test]
fn several_targets_without_target_list_their_names() {
    let o = hcsim(&["import", "tests/configs/envoy-acceptance.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("2 clusters, pick one with --target NAME: api (cluster, tests/configs/envoy-acceptance.yaml:25), other (cluster, "), "{e}");
    let o = hcsim(&[
        "import",
        "tests/configs/haproxy-acceptance.cfg",
        "--target",
        "nope",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("no backend named \"nope\"; there are: app (backend, tests/configs/haproxy-acceptance.cfg:"),
        "{e}"
    );
}

/// The list a missing or wrong `--target` prints says what each target is.
#[test]
fn the_target_list_names_each_targets_kind() {
    let dir = tmp("target-kinds");
    for (name, text, want) in [
        (
            "nginx.conf",
            "events {}\nhttp {\n  upstream web { server 10.0.0.1; }\n}\nstream {\n  upstream db { server 10.0.0.2:5432; }\n}\n",
            "web (http upstream, DIR/nginx.conf:3), db (stream upstream, DIR/nginx.conf:6)",
        ),
        (
            "haproxy.cfg",
            "backend be\n server s1 10.0.0.1:80\nlisten li\n bind :81\n server s1 10.0.0.2:80\n",
            "be (backend, DIR/haproxy.cfg:1), li (listen, DIR/haproxy.cfg:3)",
        ),
        (
            "k8s.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n",
            "web (Deployment, DIR/k8s.yaml:4), db (StatefulSet, DIR/k8s.yaml:9)",
        ),
        (
            "dr.yaml",
            "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: a\nspec:\n  host: a.svc\n---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: b\nspec:\n  host: b.svc\n",
            "a.svc (DestinationRule, DIR/dr.yaml:6), b.svc (DestinationRule, DIR/dr.yaml:13)",
        ),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let want = want.replace("DIR", dir.to_str().unwrap());
        for extra in [&[][..], &["--target", "nope"][..]] {
            let mut args = vec!["import", p.to_str().unwrap()];
            args.extend(extra);
            let o = hcsim(&args);
            assert_eq!(o.status.code(), Some(2), "{name} {extra:?}");
            let e = String::from_utf8_lossy(&o.stderr);
            assert!(e.contains(&want), "{name} {extra:?}: {e}");
        }
    }
}

#[test]
fn bad_configs_fail_with_their_expected_message() {
    let bless = std::env::var_os("HCSIM_BLESS").is_some();
    let dir = root().join("tests/bad-configs");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x != "expected"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 15, "only {} bad configs", cases.len());
    let mut failures = vec![];
    for c in &cases {
        let rel = c
            .strip_prefix(root())
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let o = hcsim(&["import", &rel]);
        let stderr = String::from_utf8_lossy(&o.stderr).replace(&rel, "FILE");
        let first = stderr
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or("")
            .to_string();
        let expected = c.with_extension("expected");
        if bless {
            std::fs::write(&expected, format!("{first}\n")).unwrap();
        }
        let want = std::fs::read_to_string(&expected).unwrap_or_default();
        if stderr.contains("panicked") || o.status.code() != Some(2) {
            failures.push(format!("{rel}: exit {:?}: {stderr}", o.status.code()));
        } else if !first.starts_with("error: FILE:") {
            failures.push(format!("{rel}: does not name FILE:LINE: {first}"));
        } else if first != want.trim_end() {
            failures.push(format!(
                "{rel}:\n  got  {first}\n  want {}",
                want.trim_end()
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// The shipped models with their gateway written as `format`, each with its path.
fn exported(format: Format) -> Vec<(PathBuf, Model, String)> {
    let mut out = vec![];
    for f in crate::shipped_models() {
        let Ok(m) = Model::load(&f) else { continue };
        let text = match format {
            Format::Nginx => export::nginx::write(&m),
            Format::Haproxy => export::haproxy::write(&m),
            _ => unreachable!(),
        };
        if let Ok(t) = text {
            out.push((f, m, t));
        }
    }
    out
}

/// The gateway part of a model as HAProxy and nginx see it: what a config
/// can carry, with the settings that are not in any config (rtt, clock
/// phase, node names and service) left out, and the equivalences of the
/// formats applied (no nginx policy = `max_fails=0`; HAProxy checks use
/// the backend's `timeout connect`; tengine polls with every nginx worker).
fn gateway_part(m: &Model) -> Value {
    let mut policies = vec![];
    for p in &m.policies {
        let mut p = p.clone();
        match &mut p {
            PolicySpec::None if m.gateway.flavor == GatewayFlavor::Nginx => {
                p = PolicySpec::MaxFails(hcsim::policy::MaxFailsParams {
                    max_fails: 0,
                    ..Default::default()
                });
            }
            PolicySpec::None => continue,
            PolicySpec::ActiveProbe(ActiveProbeSpec::Haproxy(h)) => {
                h.timeout_connect = h.timeout_connect.or(m.gateway.haproxy().timeout_connect);
                h.version = Default::default();
                h.threads = None;
            }
            PolicySpec::ActiveProbe(ActiveProbeSpec::Tengine(t)) => {
                t.workers = m.gateway.workers;
                t.threads = None;
            }
            _ => {}
        }
        policies.push(serde_json::to_value(&p).unwrap());
    }
    let mut g = serde_json::to_value(&m.gateway).unwrap();
    g["rtt"] = Value::Null;
    g["clock_phase"] = Value::Null;
    // A config is one gateway; how many run (`replicas`) is the deployment's.
    for k in ["replicas", "spread"] {
        g.as_object_mut().unwrap().remove(k);
    }
    if m.gateway.flavor == GatewayFlavor::Haproxy {
        g["haproxy"] = serde_json::to_value(m.gateway.haproxy()).unwrap();
    }
    let nodes: Vec<Value> = m
        .declared_nodes()
        .iter()
        .map(|n| serde_json::json!([n.weight, n.backup, n.down, n.max_conns]))
        .collect();
    serde_json::json!({"gateway": g, "nodes": nodes, "policies": policies})
}

fn reimport(dir: &Path, name: &str, text: &str, format: Format) -> Model {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    let opts = Options {
        format: Some(format),
        ..Options::default()
    };
    let im =
        import::read(&p, &opts, &Workload::default()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    im.model().unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn shipped_models_round_trip_through_nginx_and_haproxy_config() {
    let dir = tmp("roundtrip");
    for (format, min) in [(Format::Nginx, 20), (Format::Haproxy, 1)] {
        let models = exported(format);
        assert!(
            models.len() >= min,
            "only {} models export as {format}",
            models.len()
        );
        for (f, m, text) in &models {
            let back = reimport(&dir, "exported.conf", text, format);
            assert_eq!(
                gateway_part(&back),
                gateway_part(m),
                "{} through {format}:\n{text}",
                f.display()
            );
        }
    }
}

/// Runs a checker, or says why it cannot: `None` when the binary is absent.
pub(crate) fn check_with(bin: &str, args: &[&str]) -> Option<std::process::Output> {
    match Command::new(bin).args(args).output() {
        Ok(o) => Some(o),
        Err(_) => {
            assert!(
                std::env::var_os("HCSIM_REQUIRE_TOOLS").is_none(),
                "HCSIM_REQUIRE_TOOLS is set but {bin} is not installed (scripts/test-deps.sh installs it)"
            );
            eprintln!("skipped: {bin} is not installed");
            None
        }
    }
}

/// Writes `conf` to `path` and asserts that `haproxy -c` accepts it (when
/// HAProxy is installed).
pub(crate) fn assert_haproxy_accepts(path: &Path, conf: &str) {
    std::fs::write(path, conf).unwrap();
    if let Some(o) = check_with(
        &sbin("haproxy"),
        &["-c", "-q", "-f", path.to_str().unwrap()],
    ) {
        assert!(
            o.status.success(),
            "haproxy -c: {}\n{conf}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// `hcsim import CONF --target TARGET` at 200 req/s for 30 s (with `fault`),
/// then `hcsim run` of the model into `out`: its summary.json.
fn import_and_run(conf: &Path, target: &str, fault: Option<&str>, out: &Path) -> Value {
    let model = out.with_extension("json");
    let mut args = vec![
        "import",
        conf.to_str().unwrap(),
        "--target",
        target,
        "--rps",
        "200",
        "--duration",
        "30s",
        "-o",
        model.to_str().unwrap(),
    ];
    if let Some(f) = fault {
        args.extend(["--fault", f]);
    }
    let o = hcsim(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = hcsim(&[
        "run",
        model.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-charts",
        "--format",
        "json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn exported_configs_pass_nginx_t_and_haproxy_c() {
    let dir = tmp("real-binaries");
    let mut checked = 0;
    for (f, m, _) in exported(Format::Nginx) {
        // Stock nginx has no tengine `check`.
        if m.policies
            .iter()
            .any(|p| matches!(p, PolicySpec::ActiveProbe(_)))
        {
            continue;
        }
        let conf = export::nginx::config(&m, &export::Options::of(&m)).unwrap();
        let p = dir.join("nginx.conf");
        std::fs::write(&p, &conf).unwrap();
        let Some(o) = check_with(
            &sbin("nginx"),
            &[
                "-t",
                "-q",
                "-p",
                dir.to_str().unwrap(),
                "-c",
                p.to_str().unwrap(),
            ],
        ) else {
            break;
        };
        assert!(
            o.status.success(),
            "{}: nginx -t: {}\n{conf}",
            f.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        checked += 1;
    }
    for (f, m, _) in exported(Format::Haproxy) {
        let conf = export::haproxy::config(&m, &export::Options::of(&m)).unwrap();
        let p = dir.join("haproxy.cfg");
        std::fs::write(&p, &conf).unwrap();
        let Some(o) = check_with(&sbin("haproxy"), &["-c", "-q", "-f", p.to_str().unwrap()]) else {
            break;
        };
        assert!(
            o.status.success(),
            "{}: haproxy -c: {}\n{conf}",
            f.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        checked += 1;
    }
    eprintln!("{checked} exported configs checked by the real binaries");
}

#[test]
fn an_imported_config_runs_with_a_workload_and_a_fault() {
    let out = tmp("import-run");
    let model = out.join("api.json");
    let o = hcsim(&[
        "import",
        "tests/configs/nginx-acceptance/nginx.conf",
        "--target",
        "api_backend",
        "--rps",
        "50",
        "--duration",
        "20s",
        "--fault",
        "crash:10.0.0.1:8080@5s+10s",
        "-o",
        model.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = hcsim(&[
        "run",
        model.to_str().unwrap(),
        "--out",
        out.join("run").to_str().unwrap(),
        "--no-charts",
        "--format",
        "json",
        "--set",
        "clients.timeout=5s",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(s.to_string().contains("10.0.0.1:8080"));
}

#[test]
fn exporting_a_model_a_format_cannot_express_exits_2() {
    let o = hcsim(&["export", "models/crash-istio.json", "--to", "haproxy"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.starts_with(
            "error: models/crash-istio.json: gateway: cannot be written as haproxy config"
        ),
        "{e}"
    );
    let o = hcsim(&["export", "models/crash-istio.json", "--to", "istio"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("kind: DestinationRule"));
}

/// Byte mutations of every corpus config: errors are fine, panics are not.
#[test]
fn mutated_configs_never_panic() {
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::{RngExt, SeedableRng};
    let dir = tmp("import-fuzz");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(16);
    let pieces = [
        "{",
        "}",
        ";",
        "\"",
        "'",
        "\\",
        "#",
        "\n",
        " ",
        ":",
        "- ",
        "---\n",
        "=",
        "0",
        "999999999999999999999",
        "ms",
        "include x;",
        "server",
        "check",
    ];
    let mut n = 0;
    for (file, target) in CASES
        .iter()
        .chain(&[("../bad-configs/01-nginx-unclosed-block.conf", None)])
    {
        let text = std::fs::read_to_string(root().join("tests/configs").join(file)).unwrap();
        let ext = Path::new(file).extension().unwrap().to_str().unwrap();
        for _ in 0..60 {
            let mut t: Vec<char> = text.chars().collect();
            for _ in 0..rng.random_range(1..4) {
                let i = rng.random_range(0..=t.len());
                match rng.random_range(0..3) {
                    0 if i < t.len() => {
                        t.remove(i);
                    }
                    1 => t.truncate(i),
                    _ => {
                        let p = pieces[rng.random_range(0..pieces.len())];
                        for (k, c) in p.chars().enumerate() {
                            t.insert((i + k).min(t.len()), c);
                        }
                    }
                }
            }
            let p = dir.join(format!("m.{ext}"));
            std::fs::write(&p, t.iter().collect::<String>()).unwrap();
            let opts = Options {
                target: target.map(String::from),
                ..Options::default()
            };
            let r = std::panic::catch_unwind(|| {
                if let Ok(im) = import::read(&p, &opts, &Workload::default()) {
                    let _ = im.model();
                }
            });
            assert!(
                r.is_ok(),
                "{file} mutated panicked:\n{}",
                t.iter().collect::<String>()
            );
            n += 1;
        }
    }
    assert!(n >= 600);
}

/// The seed experiment E3 written as nginx config, imported and given the
/// model's workload and fault, gives the hand-written model's figures.
#[test]
fn an_imported_nginx_config_reproduces_the_seed_experiment_e3() {
    let out = tmp("import-e3");
    let model = out.join("e3.json");
    let o = hcsim(&[
        "import",
        "tests/configs/e3-nginx.conf",
        "--rps",
        "100",
        "--duration",
        "20s",
        "--set",
        "clients.arrivals=constant",
        "--set",
        r#"faults=[{"kind":"flaky","node":"10.0.0.1:8080","at":"1s","for":"3s","p":1.0,"status":503}]"#,
        "-o",
        model.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let figures = |file: &str, dir: &str| -> Value {
        let o = hcsim(&[
            "run",
            file,
            "--reps",
            "5",
            "--out",
            out.join(dir).to_str().unwrap(),
            "--no-charts",
            "--format",
            "json",
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let s: Value = serde_json::from_slice(&o.stdout).unwrap();
        let mut nodes = s["nodes"].clone();
        for n in nodes.as_array_mut().unwrap() {
            n.as_object_mut().unwrap().remove("name");
        }
        serde_json::json!({"client": s["client"], "nodes": nodes, "events": s["events"]})
    };
    assert_eq!(
        figures(model.to_str().unwrap(), "imported"),
        figures("models/e3-ft05-recovery.json", "hand-written")
    );
}

/// A model's Envoy or Istio view: balancer, connect timeout, nodes, the
/// policies (without the settings of the Envoy version or the simulator),
/// and the panic threshold in force.
fn mesh_part(m: &Model, with_nodes: bool) -> Value {
    let panic = m
        .gateway
        .healthy_panic_threshold
        .or_else(|| m.policies.iter().find_map(|p| p.healthy_panic_threshold()));
    let policies: Vec<Value> = m
        .policies
        .iter()
        .filter(|p| !matches!(p, PolicySpec::None))
        .map(|p| {
            let mut v = serde_json::to_value(p).unwrap();
            let o = v.as_object_mut().unwrap();
            for k in [
                "healthy_panic_threshold",
                "max_ejection_percent_mode",
                "always_eject_one_host",
                "threads",
                "cluster_start",
                "consecutiveErrors",
                "send_unhealthy_endpoints",
            ] {
                o.remove(k);
            }
            v
        })
        .collect();
    let nodes: Vec<Value> = if with_nodes {
        m.nodes
            .iter()
            .filter(|n| !n.down)
            .map(|n| serde_json::json!([n.weight, n.backup]))
            .collect()
    } else {
        vec![]
    };
    serde_json::json!({
        "balancer": m.gateway.balancer,
        "connect": m.gateway.proxy_connect_timeout,
        "panic": panic,
        "nodes": nodes,
        "policies": policies,
    })
}

#[test]
fn shipped_models_round_trip_through_envoy_and_istio_config() {
    let dir = tmp("roundtrip-mesh");
    let mut n = (0, 0);
    for f in std::fs::read_dir(root().join("models"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
    {
        let Ok(m) = Model::load(&f) else { continue };
        if m.policies.iter().all(|p| matches!(p, PolicySpec::None)) {
            continue;
        }
        if let Ok(text) = export::envoy::write(&m) {
            let back = reimport(&dir, "cluster.yaml", &text, Format::Envoy);
            assert_eq!(
                mesh_part(&back, true),
                mesh_part(&m, true),
                "{} through Envoy:\n{text}",
                f.display()
            );
            n.0 += 1;
        }
        if let Ok(text) = export::istio::write(&m) {
            let back = reimport(&dir, "dr.yaml", &text, Format::Istio);
            assert_eq!(
                mesh_part(&back, false),
                mesh_part(&m, false),
                "{} through Istio:\n{text}",
                f.display()
            );
            n.1 += 1;
        }
    }
    assert!(
        n.0 >= 10 && n.1 >= 3,
        "only {n:?} models exported as Envoy / Istio"
    );
}

#[test]
fn export_takes_the_listen_address_and_node_addresses() {
    // calibration/harness.py writes real configs this way.
    let out = hcsim(&[
        "export",
        "models/e1a-refused.json",
        "--to",
        "nginx",
        "--listen",
        "127.0.0.1:9090",
        "--address",
        "B=127.0.0.1:9102",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("listen 127.0.0.1:9090;"), "{text}");
    assert!(text.contains("server 127.0.0.1:9102 "), "{text}");
    assert!(
        text.contains("server 127.0.0.1:8001 "),
        "A keeps its default: {text}"
    );
    let bad = hcsim(&[
        "export",
        "models/e1a-refused.json",
        "--to",
        "nginx",
        "--address",
        "Z=127.0.0.1:1",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("no node named `Z`"), "{err}");
}

/// What a kong.yml carries of a Kong model: the gateway's Kong settings and
/// timeouts, the targets' weights, the policy.
fn kong_part(m: &Model) -> Value {
    let g = &m.gateway;
    serde_json::json!({
        "kong": serde_json::to_value(g.kong()).unwrap(),
        "timeouts": [g.proxy_connect_timeout.to_string(), g.proxy_read_timeout.to_string()],
        "nodes": m.nodes.iter().map(|n| (n.weight, n.down)).collect::<Vec<_>>(),
        "policies": serde_json::to_value(&m.policies).unwrap(),
    })
}

#[test]
fn kong_models_and_configs_round_trip_through_kong_yml() {
    let dir = tmp("kong-roundtrip");
    let mut models: Vec<(String, Model)> = std::fs::read_dir(root().join("models"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter_map(|p| Some((p.display().to_string(), Model::load(&p).ok()?)))
        .filter(|(_, m)| m.gateway.flavor == GatewayFlavor::Kong)
        .collect();
    models.sort_by(|a, b| a.0.cmp(&b.0));
    let path = root().join("tests/configs/kong-acceptance.yml");
    let im = import::read(&path, &Options::default(), &Workload::default()).unwrap();
    models.push(("kong-acceptance.yml".into(), im.model().unwrap()));
    assert!(models.len() >= 7, "{} Kong models", models.len());
    for (name, m) in &models {
        let text = export::kong::write(m).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back = reimport(&dir, "kong.yml", &text, Format::Kong);
        assert_eq!(kong_part(&back), kong_part(m), "{name}:\n{text}");
    }
    // Another request path has no kong.yml.
    let nginx = Model::load(&root().join("models/e2-p02-flaky-2pct.json")).unwrap();
    assert!(export::kong::write(&nginx).is_err());
}

/// `im` imported without a "not modelled" warning (`what`: the case).
pub(crate) fn assert_nothing_unmodelled(im: &import::Imported, what: &str) {
    assert!(
        im.warnings
            .iter()
            .all(|w| !w.message.contains("not modelled")),
        "{what}: {:?}",
        im.warnings
    );
}

/// Issue 31 (items 5 and 6): HAProxy's `http-check expect` and Envoy's
/// `expected_statuses`, imported from real-world-shaped files, are in the
/// model with their line, without the old "not modelled" warning; a node
/// answering 503 to every check is ejected or kept as they say; the
/// exported HAProxy config passes `haproxy -c`.
#[test]
fn imported_expected_statuses_decide_whether_a_503_ejects() {
    let dir = tmp("expected-statuses");
    let flaky = |node: &str| -> Workload {
        Workload {
            faults: vec![
                serde_json::from_value(serde_json::json!({
                    "kind": "flaky", "node": node, "p": 1.0, "status": 503
                }))
                .unwrap(),
            ],
            duration: hcsim::engine::SimDuration::from_secs(30),
            ..Workload::default()
        }
    };
    let haproxy = |expect: &str| {
        format!(
            "global\n    log stdout format raw local0\n\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n\nfrontend fe\n    bind :8080\n    default_backend app\n\nbackend app\n    balance roundrobin\n    option httpchk GET /healthz\n    http-check expect {expect}\n    server app1 10.0.0.1:8080 check inter 1s fall 2 rise 2\n    server app2 10.0.0.2:8080 check inter 1s fall 2 rise 2\n"
        )
    };
    let mut checked = 0;
    for (expect, want, ejects) in [
        (
            "status 200-399",
            serde_json::json!([{"status": ["200-399"]}]),
            true,
        ),
        (
            "rstatus ^[23]",
            serde_json::json!([{"rstatus": "^[23]"}]),
            true,
        ),
        // Quoted: unquoted, HAProxy would read `\d` as `d`.
        (
            r"rstatus '^2\d\d$'",
            serde_json::json!([{"rstatus": r"^2\d\d$"}]),
            true,
        ),
        (
            "status 200-399,503",
            serde_json::json!([{"status": ["200-399", "503"]}]),
            false,
        ),
        (
            "! rstatus ^5[0-4][0-24-9]",
            serde_json::json!([{"rstatus": "^5[0-4][0-24-9]", "negate": true}]),
            false,
        ),
    ] {
        let p = dir.join(format!("haproxy-{checked}.cfg"));
        std::fs::write(&p, haproxy(expect)).unwrap();
        let im = import::read(&p, &Options::default(), &flaky("app1")).unwrap();
        assert_nothing_unmodelled(&im, expect);
        assert_eq!(im.doc["policy"]["expect"], want, "{expect}");
        let line = im.origins.iter().find(|(f, _)| f == "policy.expect");
        assert_eq!(line.map(|(_, at)| at.line), Some(17), "{expect}");
        let m = im.model().unwrap();
        let r = hcsim::world::run(&m, 1);
        assert_eq!(
            r.nodes[0].ejections > 0,
            ejects,
            "{expect}: {:?}",
            r.nodes[0]
        );
        assert_eq!(r.nodes[1].ejections, 0, "{expect}");
        // Written back, HAProxy reads it.
        let conf = export::haproxy::config(&m, &export::Options::of(&m)).unwrap();
        assert!(
            conf.contains(&format!("    http-check expect {expect}\n"))
                || conf.contains("http-check expect ! rstatus ^5[0-4][0-24-9]\n"),
            "{conf}"
        );
        let out = dir.join(format!("exported-{checked}.cfg"));
        assert_haproxy_accepts(&out, &conf);
        // And the exported config imports to the same rules.
        let again = import::read(&out, &Options::default(), &Workload::default()).unwrap();
        assert_eq!(again.doc["policy"]["expect"], want, "{conf}");
        checked += 1;
    }
    let envoy = |ranges: &str| {
        format!(
            "static_resources:\n  clusters:\n  - name: app\n    type: STATIC\n    connect_timeout: 1s\n    lb_policy: ROUND_ROBIN\n    load_assignment:\n      cluster_name: app\n      endpoints:\n      - lb_endpoints:\n        - endpoint:\n            address:\n              socket_address: {{ address: 10.0.0.1, port_value: 8080 }}\n        - endpoint:\n            address:\n              socket_address: {{ address: 10.0.0.2, port_value: 8080 }}\n    health_checks:\n    - timeout: 1s\n      interval: 1s\n      unhealthy_threshold: 2\n      healthy_threshold: 2\n      http_health_check:\n        path: /healthz\n        expected_statuses: {ranges}\n"
        )
    };
    for (ranges, want, ejects) in [
        (
            "[{start: 200, end: 400}]",
            serde_json::json!([{"start": 200, "end": 400}]),
            true,
        ),
        (
            "[{start: 200, end: 400}, {start: 503, end: 504}]",
            serde_json::json!([{"start": 200, "end": 400}, {"start": 503, "end": 504}]),
            false,
        ),
    ] {
        let p = dir.join(format!("envoy-{checked}.yaml"));
        std::fs::write(&p, envoy(ranges)).unwrap();
        let im = import::read(&p, &Options::default(), &flaky("10.0.0.1:8080")).unwrap();
        assert_nothing_unmodelled(&im, ranges);
        assert_eq!(im.doc["policy"]["expected_statuses"], want, "{ranges}");
        let line = im
            .origins
            .iter()
            .find(|(f, _)| f == "policy.expected_statuses");
        assert_eq!(line.map(|(_, at)| at.line), Some(24), "{ranges}");
        let m = im.model().unwrap();
        let r = hcsim::world::run(&m, 1);
        // Hosts start unhealthy: a failed first check keeps one out.
        assert_eq!(
            r.nodes[0].ejected_time_s > 20.0,
            ejects,
            "{ranges}: {:?}",
            r.nodes[0]
        );
        assert!(r.nodes[0].ejected_time_s < 1.0 || ejects, "{ranges}");
        assert!(r.nodes[1].ejected_time_s < 1.0, "{ranges}");
        // Written back as the cluster's http_health_check.
        let yaml = export::envoy::write(&m).unwrap();
        let p2 = dir.join(format!("envoy-exported-{checked}.yaml"));
        std::fs::write(&p2, &yaml).unwrap();
        let again = import::read(&p2, &Options::default(), &Workload::default()).unwrap();
        assert_eq!(again.doc["policy"]["expected_statuses"], want, "{yaml}");
        checked += 1;
    }
}

/// A real-world-shaped nginx file with session affinity (`ip_hash`) and a
/// cache tier (`hash $request_uri consistent`).
const HASHED_NGINX: &str = "events {}
http {
    upstream sessions {
        ip_hash;
        server 10.0.0.1:8080 max_fails=1 fail_timeout=10s;
        server 10.0.0.2:8080 max_fails=1 fail_timeout=10s;
        server 10.0.0.3:8080 max_fails=1 fail_timeout=10s;
    }
    upstream cache {
        hash $request_uri consistent;
        server 10.0.1.1:80;
        server 10.0.1.2:80;
        server 10.0.1.3:80 weight=2;
        server 10.0.1.4:80;
    }
    server {
        listen 8080;
        location / {
            proxy_pass http://sessions;
        }
        location /static/ {
            proxy_pass http://cache;
        }
    }
}
";

/// Per node (attempts, answered, failures) and the client errors of a run
/// of the imported `target`, with `fault` if any.
fn hashed_run(
    dir: &Path,
    target: &str,
    fault: Option<&str>,
) -> (Vec<(String, f64, f64, f64)>, f64) {
    let out = dir.join(format!("run-{target}-{}", fault.is_some()));
    let s = import_and_run(&dir.join("nginx.conf"), target, fault, &out);
    let nodes = s["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let f = |k: &str| n[k]["mean"].as_f64().unwrap();
            (
                n["name"].as_str().unwrap().to_string(),
                f("attempts"),
                f("answered"),
                f("failures"),
            )
        })
        .collect();
    (nodes, s["client"]["errors"]["mean"].as_f64().unwrap())
}

#[test]
fn ip_hash_and_consistent_hash_import_export_and_move_only_the_crashed_nodes_clients() {
    let dir = tmp("hashed-nginx");
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, HASHED_NGINX).unwrap();
    for (target, balancer, line, crashed) in [
        ("sessions", serde_json::json!("ip_hash"), 4, "10.0.0.2:8080"),
        (
            "cache",
            serde_json::json!({"hash": {"key": "$request_uri", "consistent": true}}),
            10,
            "10.0.1.2:80",
        ),
    ] {
        let opts = Options {
            target: Some(target.into()),
            ..Options::default()
        };
        let im = import::read(&conf, &opts, &Workload::default()).unwrap();
        assert!(im.warnings.is_empty(), "{target}: {:?}", im.warnings);
        assert_eq!(im.doc["gateway"]["balancer"], balancer, "{target}");
        assert_eq!(im.doc["clients"]["keys"], 1000, "{target}");
        let at = im
            .origins
            .iter()
            .find(|(f, _)| f == "gateway.balancer")
            .map(|(_, at)| at.line);
        assert_eq!(at, Some(line), "{target}: the directive's line");
        // Exported back, the directive is there and the real nginx accepts it.
        let m = im.model().unwrap();
        let out = export::nginx::config(&m, &export::Options::of(&m)).unwrap();
        let directive = if target == "sessions" {
            "    ip_hash;\n"
        } else {
            "    hash $request_uri consistent;\n"
        };
        assert!(out.contains(directive), "{target}:\n{out}");
        assert_eq!(
            reimport(&dir, target, &out, Format::Nginx).gateway.balancer,
            m.gateway.balancer
        );
        let p = dir.join(format!("export-{target}.conf"));
        std::fs::write(&p, &out).unwrap();
        if let Some(o) = check_with(
            &sbin("nginx"),
            &[
                "-t",
                "-q",
                "-p",
                dir.to_str().unwrap(),
                "-c",
                p.to_str().unwrap(),
            ],
        ) {
            assert!(
                o.status.success(),
                "{target}: nginx -t: {}\n{out}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        // The same requests and keys with and without a crash of one node
        // for 10 s: its clients fail over (one failed attempt ejects it for
        // fail_timeout), nobody sees an error, and every other node keeps
        // all its own clients and gains some of the crashed node's.
        let fault = format!("crash:{crashed}@10s+10s");
        let (calm, calm_errors) = hashed_run(&dir, target, None);
        let (hit, errors) = hashed_run(&dir, target, Some(&fault));
        assert_eq!((calm_errors, errors), (0.0, 0.0), "{target}");
        let mut gained = 0.0;
        for ((name, a0, _, _), (_, a1, answered, failures)) in calm.iter().zip(&hit) {
            if name == crashed {
                assert!(
                    (1.0..=2.0).contains(failures),
                    "{target}: {failures} failures"
                );
                assert!(*a1 < 0.8 * a0, "{target}: {a1} attempts of {a0}");
                // Its clients not answered by it went elsewhere.
                gained -= a0 - answered;
            } else {
                assert!(
                    *a1 >= a0 - 1.0,
                    "{target}: {name} lost clients: {a1} < {a0}"
                );
                gained += a1 - a0;
            }
        }
        assert!(
            gained.abs() <= 2.0,
            "{target}: {gained} attempts unaccounted for"
        );
    }
}

/// A real-world-shaped HAProxy file: an ingress `listen` with `balance
/// source` (map-based, the default, as OKD's and kubeadm's installers write
/// it) and an application backend with `hash-type consistent`.
const SOURCE_HAPROXY: &str = "defaults
    mode http
    retries 3
    option redispatch
    timeout connect 5s
    timeout client 30s
    timeout server 30s

listen ingress-router-80
    bind *:80
    balance source
    server worker1 10.0.0.1:80 check inter 1s
    server worker2 10.0.0.2:80 check inter 1s
    server worker3 10.0.0.3:80 check inter 1s
    server worker4 10.0.0.4:80 check inter 1s

backend app
    balance source
    hash-type consistent
    server app1 10.0.1.1:8080 check inter 1s
    server app2 10.0.1.2:8080 check inter 1s
    server app3 10.0.1.3:8080 check inter 1s weight 2
    server app4 10.0.1.4:8080 check inter 1s
";

/// `summary.json`'s `keys` of a run of the imported `target` with `fault`.
fn source_run(dir: &Path, target: &str, fault: Option<&str>) -> Value {
    let out = dir.join(format!("run-{target}-{}", fault.is_some()));
    let s = import_and_run(&dir.join("haproxy.cfg"), target, fault, &out);
    s["keys"].clone()
}

#[test]
fn balance_source_imports_exports_and_moves_what_its_hash_type_moves() {
    let dir = tmp("source-haproxy");
    let conf = dir.join("haproxy.cfg");
    std::fs::write(&conf, SOURCE_HAPROXY).unwrap();
    let mut off = vec![];
    for (target, consistent, line, crashed) in [
        ("ingress-router-80", false, 11, "worker2"),
        ("app", true, 18, "app2"),
    ] {
        let opts = Options {
            target: Some(target.into()),
            ..Options::default()
        };
        let im = import::read(&conf, &opts, &Workload::default()).unwrap();
        assert_nothing_unmodelled(&im, target);
        let want =
            serde_json::json!({"source": {"consistent": consistent, "avalanche": consistent}});
        assert_eq!(im.doc["gateway"]["balancer"], want, "{target}");
        assert_eq!(im.doc["clients"]["keys"], 1000, "{target}");
        let at = |field: &str| {
            im.origins
                .iter()
                .rfind(|(f, _)| f == field)
                .map(|(_, at)| at.line)
        };
        assert_eq!(at("gateway.balancer"), Some(line), "{target}");
        if consistent {
            assert_eq!(at("gateway.balancer.source.consistent"), Some(line + 1));
        }
        // Exported back: the same balancer, and the real HAProxy accepts it.
        let m = im.model().unwrap();
        let out = export::haproxy::config(&m, &export::Options::of(&m)).unwrap();
        assert!(out.contains("    balance source\n"), "{target}:\n{out}");
        let hash_type = if consistent {
            "consistent"
        } else {
            "map-based"
        };
        assert!(
            out.contains(&format!("    hash-type {hash_type}\n")),
            "{out}"
        );
        assert_eq!(
            reimport(&dir, target, &out, Format::Haproxy)
                .gateway
                .balancer,
            m.gateway.balancer
        );
        let p = dir.join(format!("export-{target}.cfg"));
        std::fs::write(&p, &out).unwrap();
        if let Some(o) = check_with(&sbin("haproxy"), &["-c", "-q", "-f", p.to_str().unwrap()]) {
            assert!(
                o.status.success(),
                "{target}: haproxy -c: {}\n{out}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        // No fault: every answer from its key's home.
        let calm = source_run(&dir, target, None);
        assert_eq!(calm["off_home"]["mean"], 0.0, "{target}: {calm}");
        let hit = source_run(&dir, target, Some(&format!("crash:{crashed}@10s+10s")));
        off.push(hit["off_home_share"]["mean"].as_f64().unwrap());
    }
    // The map-based crash moves most clients while the server is DOWN
    // (about 3/4 of them for a third of the run), the consistent one only
    // the crashed server's (1/5 of the weight).
    let (map, ring) = (off[0], off[1]);
    assert!((0.15..0.35).contains(&map), "map-based: {map}");
    assert!((0.02..0.1).contains(&ring), "consistent: {ring}");
}

#[test]
fn a_hash_type_haproxy_refuses_exits_2_at_its_line() {
    let dir = tmp("source-haproxy-bad");
    for (bad, says) in [
        (
            "hash-type ketama",
            "only supports 'consistent' and 'map-based'",
        ),
        (
            "hash-type consistent md5",
            "only supports 'sdbm', 'djb2', 'crc32', or 'wt6'",
        ),
        ("hash-type map-based sdbm loud", "only supports 'avalanche'"),
    ] {
        let conf = dir.join("haproxy.cfg");
        let text = SOURCE_HAPROXY.replace("    hash-type consistent\n", &format!("    {bad}\n"));
        std::fs::write(&conf, text).unwrap();
        let o = hcsim(&["import", conf.to_str().unwrap(), "--target", "app"]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("haproxy.cfg:19") && err.contains(says),
            "{bad}: {err}"
        );
    }
}

/// Issue 31: HAProxy's `cookie NAME insert` persistence, from a
/// real-world-shaped backend.
const COOKIE_HAPROXY: &str = "\
global
    log stdout format raw local0

defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    retries 3
    option redispatch

frontend www
    bind *:80
    default_backend web

backend web
    balance roundrobin
    cookie SERVERID insert indirect nocache
    option httpchk GET /health
    server web1 10.0.0.11:8080 check inter 1s fall 2 rise 1 cookie w1
    server web2 10.0.0.12:8080 check inter 1s fall 2 rise 1 cookie w2
    server web3 10.0.0.13:8080 check inter 1s fall 2 rise 1 cookie w3
";

/// The `cookie` line and the servers' values are in the model with their
/// lines, without a "not modelled" warning; the export says them again and
/// passes `haproxy -c`; through the binary, one client (`clients.keys` 1)
/// sticks to the server whose answer set its cookie, moves when that server
/// crashes, and stays on its new server after the crashed one returns (the
/// new server's answer re-cookied it).
#[test]
fn cookie_insert_imports_exports_and_holds_a_client_to_its_server() {
    let dir = tmp("cookie-haproxy");
    let conf = dir.join("haproxy.cfg");
    std::fs::write(&conf, COOKIE_HAPROXY).unwrap();
    let im = import::read(&conf, &Options::default(), &Workload::default()).unwrap();
    assert_nothing_unmodelled(&im, "cookie");
    let want = serde_json::json!({"name": "SERVERID", "persist": false,
        "values": {"web1": "w1", "web2": "w2", "web3": "w3"}});
    assert_eq!(im.doc["gateway"]["haproxy"]["cookie"], want);
    assert_eq!(im.doc["clients"]["keys"], 1000);
    let at = |field: &str| {
        im.origins
            .iter()
            .rfind(|(f, _)| f == field)
            .map(|(_, at)| at.line)
    };
    assert_eq!(at("gateway.haproxy.cookie"), Some(18));
    assert_eq!(at("gateway.haproxy.cookie.values.web2"), Some(21));
    let m = im.model().unwrap();
    let out = export::haproxy::config(&m, &export::Options::of(&m)).unwrap();
    assert!(
        out.contains("    cookie SERVERID insert indirect nocache\n"),
        "{out}"
    );
    assert!(out.contains(" cookie w2"), "{out}");
    let back = reimport(&dir, "web", &out, Format::Haproxy);
    assert_eq!(
        back.gateway.haproxy.as_ref().unwrap().cookie,
        m.gateway.haproxy.as_ref().unwrap().cookie
    );
    let p = dir.join("export.cfg");
    std::fs::write(&p, &out).unwrap();
    if let Some(o) = check_with(&sbin("haproxy"), &["-c", "-q", "-f", p.to_str().unwrap()]) {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // `option persist` is read too.
    let persist = COOKIE_HAPROXY.replace("    option redispatch\n", "    option persist\n");
    std::fs::write(&conf, persist).unwrap();
    let im = import::read(&conf, &Options::default(), &Workload::default()).unwrap();
    assert_eq!(im.doc["gateway"]["haproxy"]["cookie"]["persist"], true);

    std::fs::write(&conf, COOKIE_HAPROXY).unwrap();
    let model = dir.join("web.json");
    let c = conf.to_str().unwrap();
    let args = ["import", c, "--rps", "200", "--duration", "30s"];
    let o = hcsim(
        &[&args[..], &["--fault", "crash:web3@10s+10s", "-o"]]
            .concat()
            .into_iter()
            .chain([model.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let run = dir.join("run");
    let o = hcsim(&[
        "run",
        model.to_str().unwrap(),
        "--out",
        run.to_str().unwrap(),
        "--no-charts",
        "-q",
        "--set",
        "clients.keys=1",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let share = |i: usize| s["nodes"][i]["share"]["mean"].as_f64().unwrap();
    // The three first requests leave before any answer: web3's, the last,
    // sets the cookie. It answers until its crash at 10 s (a third of
    // the run) and never again; the server that answered the redispatched
    // retries holds the client for the rest.
    assert!((0.30..0.34).contains(&share(2)), "{s}");
    assert!(share(0).max(share(1)) > 0.55, "{s}");
    assert!(s["client"]["status"].get("503").is_none(), "{s}");
}

/// A real-world-shaped backend with `timeout queue` in its defaults and a
/// server's `maxconn`/`maxqueue`: imported with their lines (no more "not
/// modelled"), exported back, and accepted by `haproxy -c`.
const QUEUE_HAPROXY: &str = "\
global
    maxconn 4096

defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout queue 30s

frontend www
    bind :80
    default_backend app

backend app
    balance roundrobin
    server s1 10.0.0.1:8080 check maxconn 100 maxqueue 10
    server s2 10.0.0.2:8080 check maxconn 100
";

#[test]
fn haproxy_timeout_queue_and_maxqueue_import_and_export() {
    let dir = tmp("queue-haproxy");
    let conf = dir.join("haproxy.cfg");
    std::fs::write(&conf, QUEUE_HAPROXY).unwrap();
    let im = import::read(&conf, &Options::default(), &Workload::default()).unwrap();
    assert_nothing_unmodelled(&im, "queue");
    assert_eq!(im.doc["gateway"]["haproxy"]["timeout_queue"], "30s");
    assert_eq!(im.doc["nodes"][0]["max_conns"], 100);
    assert_eq!(im.doc["nodes"][0]["max_queue"], 10);
    assert!(im.doc["nodes"][1].get("max_queue").is_none());
    let at = |field: &str| {
        im.origins
            .iter()
            .rfind(|(f, _)| f == field)
            .map(|(_, at)| at.line)
    };
    assert_eq!(at("gateway.haproxy.timeout_queue"), Some(9));
    let m = im.model().unwrap();
    let h = m.gateway.haproxy.as_ref().unwrap();
    assert_eq!(
        h.timeout_queue.map(|d| d.to_string()).as_deref(),
        Some("30s")
    );
    assert_eq!(m.nodes[0].max_queue, 10);
    let out = export::haproxy::config(&m, &export::Options::of(&m)).unwrap();
    assert!(out.contains("    timeout queue 30s\n"), "{out}");
    assert!(out.contains(" maxconn 100 maxqueue 10"), "{out}");
    let back = reimport(&dir, "exported.cfg", &out, Format::Haproxy);
    assert_eq!(
        back.gateway.haproxy.as_ref().unwrap().timeout_queue,
        h.timeout_queue
    );
    assert_eq!(back.nodes[0].max_queue, 10);
    assert_haproxy_accepts(&dir.join("export.cfg"), &out);
    // A backend's own `timeout queue` overrides its defaults'.
    let own = QUEUE_HAPROXY.replace(
        "    balance roundrobin\n",
        "    balance roundrobin\n    timeout queue 2s\n",
    );
    std::fs::write(&conf, own).unwrap();
    let im = import::read(&conf, &Options::default(), &Workload::default()).unwrap();
    assert_eq!(im.doc["gateway"]["haproxy"]["timeout_queue"], "2s");
    // `minconn` is still not modelled.
    let min = QUEUE_HAPROXY.replace("maxqueue 10", "minconn 10");
    std::fs::write(&conf, min).unwrap();
    let im = import::read(&conf, &Options::default(), &Workload::default()).unwrap();
    assert!(
        im.warnings
            .iter()
            .any(|w| w.message.contains("`minconn` is not modelled")),
        "{:?}",
        im.warnings
    );
}
