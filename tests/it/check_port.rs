//! `nodes[].check_port` (HAProxy's server `check port N`, Envoy's endpoint
//! `health_check_config.port_value`): the checks go to another endpoint of
//! the host, so a hung traffic port keeps passing them while its requests
//! fail; a crash of the host fails both.

use crate::tmp;
use hcsim::config::export;
use hcsim::config::import::{self, Options, Workload};
use serde_json::json;

fn fault(kind: &str, node: &str) -> Workload {
    Workload {
        faults: vec![
            serde_json::from_value(json!({"kind": kind, "node": node, "at": "10s", "for": "20s"}))
                .unwrap(),
        ],
        duration: hcsim::engine::SimDuration::from_secs(40),
        ..Workload::default()
    }
}

fn haproxy(port: &str) -> String {
    format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 30s\n    timeout server 2s\n\nfrontend fe\n    bind :8080\n    default_backend app\n\nbackend app\n    balance roundrobin\n    option httpchk GET /healthz\n    server app1 10.0.0.1:8080 check inter 1s fall 3 rise 2{port}\n    server app2 10.0.0.2:8080 check inter 1s fall 3 rise 2{port}\n"
    )
}

/// [`haproxy`] with `params` imported (without a "not modelled" warning)
/// and run with a `kind` fault of app1.
fn import_run(
    dir: &std::path::Path,
    params: &str,
    kind: &str,
) -> (hcsim::metrics::RunSummary, hcsim::spec::Model) {
    let p = dir.join("haproxy.cfg");
    std::fs::write(&p, haproxy(params)).unwrap();
    let im = import::read(&p, &Options::default(), &fault(kind, "app1")).unwrap();
    crate::import::assert_nothing_unmodelled(&im, "check port");
    let m = im.model().unwrap();
    (hcsim::world::run(&m, 1), m)
}

/// `m` exported for HAProxy (holding `want`), accepted by `haproxy -c` and
/// imported again: the document.
fn exported_again(dir: &std::path::Path, m: &hcsim::spec::Model, want: &str) -> import::Imported {
    let conf = export::haproxy::config(m, &export::Options::of(m)).unwrap();
    assert!(conf.contains(want), "{conf}");
    let out = dir.join("exported.cfg");
    crate::import::assert_haproxy_accepts(&out, &conf);
    import::read(&out, &Options::default(), &Workload::default()).unwrap()
}

/// `check port 9090`: imported without a warning, a hang of app1's traffic
/// port leaves it UP (its requests time out on `timeout server`) where the
/// same config without `port` marks it DOWN; a crash marks it DOWN either
/// way. Written back with `port 9090`, `haproxy -c` takes it.
///
/// The real HAProxy 2.6.12 does the same: `server A 127.0.0.1:18081 check
/// inter 500ms rise 1 fall 2 port 18091` (`option httpchk`, `timeout server
/// 1s`, another process answering on 18091), A's traffic process stopped
/// (SIGSTOP) for 3 s: `show stat` still says UP, and of 10 requests
/// through the round robin 5 are 504 (A's, after `timeout server`) and 5
/// are B's 200.
#[test]
fn a_check_on_another_port_keeps_a_hung_server_up_under_haproxy() {
    let dir = tmp("check-port");
    let run = |port: &str, kind: &str| import_run(&dir, port, kind);
    let (apart, m) = run(" port 9090", "hang");
    assert_eq!(m.nodes[0].check_port, Some(9090));
    assert_eq!(apart.nodes[0].ejections, 0, "{:?}", apart.nodes[0]);
    assert!(
        apart.client.timeouts + apart.client.errors > 0,
        "{:?}",
        apart.client
    );
    let (shared, m0) = run("", "hang");
    assert_eq!(m0.nodes[0].check_port, None);
    assert!(shared.nodes[0].ejections > 0, "{:?}", shared.nodes[0]);
    assert!(
        apart.client.timeouts + apart.client.errors > shared.client.timeouts + shared.client.errors,
        "the hung server keeps its traffic: {:?} vs {:?}",
        apart.client,
        shared.client
    );
    let (crashed, _) = run(" port 9090", "crash");
    assert!(crashed.nodes[0].ejections > 0, "{:?}", crashed.nodes[0]);
    // `port` equal to the traffic's is the same endpoint.
    let (_, same) = run(" port 8080", "hang");
    assert_eq!(same.nodes[0].check_port, None);

    let again = exported_again(&dir, &m, " port 9090");
    assert_eq!(again.doc["nodes"][0]["check_port"], json!(9090));
    // Envoy writes it as the endpoint's health_check_config; nginx cannot.
    assert!(export::nginx::write(&m).is_err());
}

/// Envoy's `health_check_config.port_value` reads into `check_port` and
/// is written back.
#[test]
fn envoy_health_check_config_port_round_trips() {
    let dir = tmp("check-port-envoy");
    let y = "static_resources:\n  clusters:\n  - name: app\n    type: STATIC\n    connect_timeout: 1s\n    lb_policy: ROUND_ROBIN\n    load_assignment:\n      cluster_name: app\n      endpoints:\n      - lb_endpoints:\n        - endpoint:\n            address:\n              socket_address: { address: 10.0.0.1, port_value: 8080 }\n            health_check_config: { port_value: 9901 }\n        - endpoint:\n            address:\n              socket_address: { address: 10.0.0.2, port_value: 8080 }\n    health_checks:\n    - timeout: 1s\n      interval: 2s\n      unhealthy_threshold: 2\n      healthy_threshold: 1\n      no_traffic_interval: 2s\n      tcp_health_check: {}\n";
    let p = dir.join("envoy.yaml");
    std::fs::write(&p, y).unwrap();
    let im = import::read(&p, &Options::default(), &fault("hang", "10.0.0.1:8080")).unwrap();
    assert_eq!(im.doc["nodes"][0]["check_port"], json!(9901));
    assert!(im.doc["nodes"][1].get("check_port").is_none());
    let m = im.model().unwrap();
    let r = hcsim::world::run(&m, 1);
    assert_eq!(r.nodes[0].ejections, 0, "{:?}", r.nodes[0]);
    let out = export::envoy::write(&m).unwrap();
    assert!(out.contains("port_value: 9901"), "{out}");
    std::fs::write(&p, &out).unwrap();
    let again = import::read(&p, &Options::default(), &Workload::default()).unwrap();
    assert_eq!(again.doc["nodes"][0]["check_port"], json!(9901));
}

/// NGINX Plus `health_check port=8080` ("defines the port used when
/// connecting to a server to perform a health check",
/// ngx_http_upstream_hc_module): `check_port` of every server of the
/// upstream whose own port is another, with the line as its origin; a
/// hang of the traffic port then keeps passing the probes.
#[test]
fn nginx_plus_health_check_port_is_the_check_port() {
    let dir = tmp("check-port-nginx");
    let conf = "http {\n    upstream app {\n        zone app 64k;\n        server 10.0.0.1:80 max_fails=0;\n        server 10.0.0.2:8080 max_fails=0;\n        server 10.0.0.3 max_fails=0;\n    }\n    server {\n        listen 80;\n        location / {\n            proxy_pass http://app;\n            proxy_read_timeout 2s;\n            health_check interval=1s fails=2 passes=1 port=8080;\n        }\n    }\n}\n";
    let p = dir.join("nginx.conf");
    std::fs::write(&p, conf).unwrap();
    let im = import::read(&p, &Options::default(), &fault("hang", "10.0.0.1:80")).unwrap();
    crate::import::assert_nothing_unmodelled(&im, "check port");
    let ports: Vec<_> = (0..3)
        .map(|i| im.doc["nodes"][i].get("check_port").cloned())
        .collect();
    assert_eq!(ports, [Some(json!(8080)), None, Some(json!(8080))]);
    assert!(
        im.origins
            .iter()
            .any(|(f, at)| f == "nodes[0].check_port" && at.line == 13),
        "{:?}",
        im.origins
    );
    let m = im.model().unwrap();
    let hung = hcsim::world::run(&m, 1);
    assert_eq!(hung.nodes[0].ejections, 0, "{:?}", hung.nodes[0]);
    std::fs::write(&p, conf.replace(" port=8080", "")).unwrap();
    let im = import::read(&p, &Options::default(), &fault("hang", "10.0.0.1:80")).unwrap();
    assert!(im.doc["nodes"][0].get("check_port").is_none());
    let shared = hcsim::world::run(&im.model().unwrap(), 1);
    assert!(shared.nodes[0].ejections > 0, "{:?}", shared.nodes[0]);
    std::fs::write(&p, conf.replace("port=8080", "port=0")).unwrap();
    let e = import::read(&p, &Options::default(), &Workload::default()).unwrap_err();
    assert!(e.to_string().contains("health_check port=0"), "{e}");
}

/// HAProxy's server `addr 10.0.1.2` (`srv_parse_addr`): the checks go to
/// another host, so even a crash of app1 leaves it UP while its requests
/// fail, where `check port` alone sees the crash; `addr` of the server's
/// own host is no other host. Imported without a warning, written back
/// with `addr`, `haproxy -c` takes it; the other exports refuse it.
#[test]
fn a_check_on_another_host_keeps_a_crashed_server_up_under_haproxy() {
    let dir = tmp("check-addr");
    let run = |params: &str, kind: &str| import_run(&dir, params, kind);
    let (other, m) = run(" addr 10.0.1.2 port 9090", "crash");
    assert_eq!(m.nodes[0].check_addr, Some("10.0.1.2".parse().unwrap()));
    assert_eq!(m.nodes[0].check_port, Some(9090));
    assert_eq!(other.nodes[0].ejections, 0, "{:?}", other.nodes[0]);
    assert!(other.client.errors > 0, "{:?}", other.client);
    let (port_only, _) = run(" port 9090", "crash");
    assert!(port_only.nodes[0].ejections > 0, "{:?}", port_only.nodes[0]);
    assert!(other.client.errors > port_only.client.errors);
    let (_, own) = run(" addr 10.0.0.1", "crash");
    assert_eq!(own.nodes[0].check_addr, None);

    let again = exported_again(&dir, &m, " addr 10.0.1.2 port 9090");
    assert_eq!(again.doc["nodes"][0]["check_addr"], json!("10.0.1.2"));
    assert!(export::nginx::write(&m).is_err());
    assert!(export::envoy::write(&m).is_err());

    std::fs::write(dir.join("bad.cfg"), haproxy(" addr backend-1")).unwrap();
    let err = import::read(
        &dir.join("bad.cfg"),
        &Options::default(),
        &Workload::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("bad.cfg:14") && err.contains("expected an IPv4 or IPv6 address"),
        "{err}"
    );
}
