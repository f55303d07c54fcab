//! Slow start (`gateway.slow_start`): HAProxy's `slowstart`, Envoy's
//! `slow_start_config` and Istio's `warmup`, imported from real-world-shaped
//! configs, exported back, and a returning node's traffic rising over its
//! window as the real gateways ramp it.

use crate::{hcsim, root, tmp};
use hcsim::config::export;
use hcsim::config::import::{self, Options, Workload};
use serde_json::json;

/// HAProxy 2.6.12's `show stat` weight of a server `weight 16 slowstart 10s`
/// (so the column, `ceil(eweight / 16)`, shows `server_recalc_eweight`'s
/// `w`), polled every 50 ms after its check marked it UP again: a step each
/// second from 1/16, full after 10 s. Measured on loopback with
/// `check inter 500ms rise 1 fall 1`, killing and restarting the backend.
const MEASURED_HAPROXY_STEPS: [u32; 11] = [1, 2, 4, 5, 7, 9, 10, 12, 13, 15, 16];

use crate::import::assert_nothing_unmodelled as no_unmodelled;

fn crash(node: &str, at: u64, secs: u64, duration: u64) -> Workload {
    Workload {
        faults: vec![
            serde_json::from_value(json!({
                "kind": "crash", "node": node, "at": format!("{at}s"), "for": format!("{secs}s")
            }))
            .unwrap(),
        ],
        duration: hcsim::engine::SimDuration::from_secs(duration),
        ..Workload::default()
    }
}

const HAPROXY: &str = "global\n    maxconn 4096\n\ndefaults\n    mode http\n    timeout connect 2s\n    timeout client 30s\n    timeout server 30s\n    default-server inter 1s fall 3 rise 2 slowstart 10s\n\nfrontend fe\n    bind :8080\n    default_backend app\n\nbackend app\n    balance roundrobin\n    server app1 10.0.0.1:8080 check\n    server app2 10.0.0.2:8080 check\n";

/// `default-server ... slowstart 10s`: imported without a warning, with its
/// line; the returning server's share follows HAProxy's steps (the
/// share of picks while warming is the mean of `w / (16 + w)` over the
/// measured steps, 0.3018); written back, `haproxy -c` takes it.
#[test]
fn haproxy_slowstart_ramps_a_returning_server_as_haproxy_does() {
    let dir = tmp("slow-start-haproxy");
    let p = dir.join("haproxy.cfg");
    std::fs::write(&p, HAPROXY).unwrap();
    let im = import::read(&p, &Options::default(), &crash("app2", 10, 10, 60)).unwrap();
    no_unmodelled(&im, "haproxy");
    assert_eq!(im.doc["gateway"]["slow_start"], json!({"window": "10s"}));
    let line = im.origins.iter().find(|(f, _)| f == "gateway.slow_start");
    assert_eq!(line.map(|(_, at)| at.line), Some(9));
    let m = im.model().unwrap();
    let r = hcsim::world::run(&m, 1);
    let want: f64 = MEASURED_HAPROXY_STEPS[..10]
        .iter()
        .map(|&w| w as f64 / (16.0 + w as f64))
        .sum::<f64>()
        / 10.0;
    let got = r.nodes[1].warmup_share.expect("app2 warmed up");
    assert!((got - want).abs() < 0.01, "share {got}, HAProxy's {want}");
    assert_eq!(r.nodes[1].warmups, 1);
    // app1 never returned: HAProxy does not slow-start at start-up.
    assert_eq!((r.nodes[0].warmups, r.nodes[0].warmup_share), (0, None));
    let conf = export::haproxy::config(&m, &export::Options::of(&m)).unwrap();
    assert!(conf.contains(" slowstart 10s"), "{conf}");
    let out = dir.join("exported.cfg");
    crate::import::assert_haproxy_accepts(&out, &conf);
    let again = import::read(&out, &Options::default(), &Workload::default()).unwrap();
    assert_eq!(again.doc["gateway"]["slow_start"], json!({"window": "10s"}));
}

/// Through the binary: a returning server's attempts per second climb over
/// its window (HAProxy's 1/16 steps), where without `slowstart` it takes
/// its half at once.
#[test]
fn the_returning_servers_traffic_rises_over_the_window() {
    let dir = tmp("slow-start-timeline");
    let model = |ss: bool| {
        let mut m = json!({
            "name": "slowstart", "seed": 1, "duration": "45s",
            "clients": {"kind": "open", "rate_per_s": 200.0, "arrivals": "constant", "timeout": "5s"},
            "gateway": {"flavor": "haproxy", "balancer": "round_robin"},
            "nodes": [{"name": "A"}, {"name": "B"}],
            "faults": [{"kind": "crash", "node": "B", "at": "10s", "for": "10s"}],
            "policies": [{"kind": "active_probe", "flavor": "haproxy", "probe": "tcp",
                          "inter": "1s", "rise": 2, "fall": 3}]
        });
        if ss {
            m["gateway"]["slow_start"] = json!({"window": "10s"});
        }
        m
    };
    let per_second = |ss: bool| -> Vec<u64> {
        let f = dir.join(format!("m-{ss}.json"));
        std::fs::write(&f, model(ss).to_string()).unwrap();
        let out = dir.join(format!("out-{ss}"));
        let o = hcsim(&[
            "run",
            f.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--no-charts",
            "-q",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let csv = std::fs::read_to_string(out.join("timeline.csv")).unwrap();
        let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let col = head.iter().position(|h| *h == "B.answered").unwrap();
        csv.lines()
            .skip(1)
            .map(|l| l.split(',').nth(col).unwrap().parse().unwrap())
            .collect()
    };
    let (slow, full) = (per_second(true), per_second(false));
    // B is back in the second 21 (after 2 checks of `rise`).
    let back = slow.iter().skip(15).position(|&x| x > 0).unwrap() + 15;
    assert!(full[back + 1] >= 99, "{full:?}");
    let window = &slow[back + 1..back + 11];
    assert!(window.windows(2).all(|w| w[0] <= w[1]), "{slow:?}");
    assert!(window[0] < 25 && window[9] > 85, "{slow:?}");
    assert!(slow[back + 12] >= 99, "{slow:?}");
}

fn envoy(extra: &str, checks: &str) -> String {
    format!(
        "static_resources:\n  clusters:\n  - name: app\n    type: STATIC\n    connect_timeout: 1s\n    lb_policy: ROUND_ROBIN\n{extra}    load_assignment:\n      cluster_name: app\n      endpoints:\n      - lb_endpoints:\n        - endpoint:\n            address:\n              socket_address: {{ address: 10.0.0.1, port_value: 8080 }}\n        - endpoint:\n            address:\n              socket_address: {{ address: 10.0.0.2, port_value: 8080 }}\n{checks}"
    )
}

const SLOW: &str = "    round_robin_lb_config:\n      slow_start_config:\n        slow_start_window: 10s\n        aggression:\n          default_value: 1.0\n          runtime_key: upstream.slow_start.aggression\n        min_weight_percent:\n          value: 10\n";
const HC: &str = "    health_checks:\n    - timeout: 1s\n      interval: 1s\n      unhealthy_threshold: 2\n      healthy_threshold: 1\n      no_traffic_interval: 1s\n      tcp_health_check: {}\n";
const OD: &str = "    outlier_detection:\n      consecutive_5xx: 3\n      interval: 1s\n      base_ejection_time: 10s\n      max_ejection_percent: 100\n";

/// Envoy's `slow_start_config`: every host ramps from start-up; a host
/// passing its active check after failing ramps again (`setLastHcPassTime`),
/// its share of the picks in that window about 0.31 (the mean of
/// `f / (1 + f)`, `f = max(t, 0.1)`); an outlier ejection's end does not
/// restart it.
#[test]
fn envoy_slow_start_follows_active_checks_not_outlier_ejections() {
    let dir = tmp("slow-start-envoy");
    let p = dir.join("envoy.yaml");
    std::fs::write(&p, envoy(SLOW, HC)).unwrap();
    let im = import::read(&p, &Options::default(), &crash("10.0.0.2:8080", 20, 10, 60)).unwrap();
    no_unmodelled(&im, "envoy");
    assert_eq!(
        im.doc["gateway"]["slow_start"],
        json!({"window": "10s", "aggression": 1.0, "min_weight_percent": 10.0})
    );
    let m = im.model().unwrap();
    let r = hcsim::world::run(&m, 1);
    // Two returns: the first check passed at start-up (hosts begin
    // unhealthy until then), and after the crash.
    assert_eq!(r.nodes[1].warmups, 2, "{:?}", r.nodes[1]);
    // Start-up: both ramp together (0.5 each); B's return: about 0.31.
    let a = r.nodes[0].warmup_share.unwrap();
    let b = r.nodes[1].warmup_share.unwrap();
    assert!((a - 0.5).abs() < 0.01, "{a}");
    assert!((0.37..0.44).contains(&b), "{b}");
    let y = export::envoy::write(&m).unwrap();
    assert!(
        y.contains("round_robin_lb_config") && y.contains("slow_start_window"),
        "{y}"
    );
    let out = dir.join("exported.yaml");
    std::fs::write(&out, &y).unwrap();
    let again = import::read(&out, &Options::default(), &Workload::default()).unwrap();
    assert_eq!(
        again.doc["gateway"]["slow_start"],
        im.doc["gateway"]["slow_start"]
    );

    // Outlier detection alone: B ejected by its failed connects, back after 10 s at
    // full weight; only the start-up window is a ramp.
    std::fs::write(&p, envoy(SLOW, OD)).unwrap();
    let m = import::read(&p, &Options::default(), &crash("10.0.0.2:8080", 20, 5, 60))
        .unwrap()
        .model()
        .unwrap();
    let r = hcsim::world::run(&m, 1);
    assert!(r.nodes[1].ejections > 0, "{:?}", r.nodes[1]);
    assert_eq!(r.nodes[1].warmups, 0);
    let b = r.nodes[1].warmup_share.unwrap();
    assert!((b - 0.5).abs() < 0.01, "{b}");
}

/// Istio: `warmup {duration, minimumPercent, aggression}` and the older
/// `warmupDurationSecs`, as istiod's `setWarmup`/`setSlowStartConfig` write
/// them; exported as `warmup`.
#[test]
fn istio_warmup_imports_and_exports() {
    let dir = tmp("slow-start-istio");
    let rule = |lb: &str| {
        format!(
            "apiVersion: networking.istio.io/v1beta1\nkind: DestinationRule\nmetadata:\n  name: reviews\nspec:\n  host: reviews\n  trafficPolicy:\n    loadBalancer:\n{lb}"
        )
    };
    for (lb, want) in [
        (
            "      simple: ROUND_ROBIN\n      warmup:\n        duration: 60s\n        minimumPercent: 20\n        aggression: 2\n",
            json!({"window": "60s", "min_weight_percent": 20.0, "aggression": 2.0}),
        ),
        (
            "      simple: LEAST_REQUEST\n      warmupDurationSecs: 30s\n",
            json!({"window": "30s"}),
        ),
    ] {
        let p = dir.join("dr.yaml");
        std::fs::write(&p, rule(lb)).unwrap();
        let im = import::read(&p, &Options::default(), &Workload::default()).unwrap();
        no_unmodelled(&im, lb);
        let mut got = im.doc["gateway"]["slow_start"].clone();
        if let Some(a) = got.get_mut("aggression") {
            *a = json!(a.as_f64().unwrap());
        }
        assert_eq!(got, want, "{lb}");
        let m = im.model().unwrap();
        let y = export::istio::write(&m).unwrap();
        assert!(y.contains("warmup:"), "{y}");
        std::fs::write(&p, &y).unwrap();
        let again = import::read(&p, &Options::default(), &Workload::default()).unwrap();
        assert_eq!(again.doc["gateway"]["slow_start"]["window"], want["window"]);
    }
}

/// A slow start the gateway cannot have, or Envoy's knobs on HAProxy's:
/// exit 2 naming the field.
#[test]
fn slow_start_on_the_wrong_gateway_is_refused() {
    let dir = tmp("slow-start-bad");
    for (gateway, field) in [
        (
            json!({"flavor": "kong", "slow_start": {"window": "10s"}}),
            "gateway.slow_start.window",
        ),
        (
            json!({"flavor": "haproxy", "slow_start": {"window": "10s", "aggression": 2.0}}),
            "gateway.slow_start.aggression",
        ),
        (
            json!({"slow_start": {"window": "0s"}}),
            "gateway.slow_start.window",
        ),
        (
            json!({"slow_start": {"window": "5s", "min_weight_percent": 150}}),
            "gateway.slow_start.min_weight_percent",
        ),
    ] {
        let m = json!({"name": "x", "duration": "5s", "clients": {"kind": "open", "rate_per_s": 10.0},
                       "gateway": gateway, "nodes": [{"name": "a"}]});
        let f = dir.join("m.json");
        std::fs::write(&f, m.to_string()).unwrap();
        let o = hcsim(&[
            "run",
            f.to_str().unwrap(),
            "--out",
            dir.join("o").to_str().unwrap(),
            "-q",
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(field) && err.contains("m.json"), "{err}");
    }
    let _ = root();
}
