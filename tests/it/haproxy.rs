//! The HAProxy request path end to end (reference Part B §B4–B5 and the
//! verification runs D12–D14 on HAProxy 2.6.12).

use hcsim::spec::Model;
use hcsim::world;
use serde_json::{Value, json};

fn scenario(doc: Value) -> Model {
    Model::from_document(&doc, "inline.json".as_ref()).expect("valid model")
}

/// One request every 10 s to a HAProxy backend.
fn base(nodes: Value, faults: Value, haproxy: Value) -> Value {
    json!({
        "name": "haproxy", "duration": "60s",
        "clients": {"kind": "open", "rate_per_s": 0.1, "arrivals": "constant"},
        "gateway": {"flavor": "haproxy", "haproxy": haproxy},
        "nodes": nodes,
        "faults": faults
    })
}

#[test]
fn refused_connects_are_retried_after_a_one_second_pause() {
    // D12: retries 3 against a refusing server: 503 after 3.0 s, 4 attempts.
    let sc = scenario(base(
        json!([{"name": "A"}]),
        json!([{"kind": "crash", "node": "A"}]),
        json!({"retries": 3, "timeout_connect": "5s"}),
    ));
    let r = world::run(&sc, 1);
    assert_eq!(r.client.status.get("503"), Some(&r.client.requests));
    assert_eq!(r.nodes[0].attempts, 4 * r.client.requests);
    let p50 = r.client.latency_ms.p50.unwrap();
    assert!((p50 - 3000.0).abs() < 100.0, "{p50} ms");
}

#[test]
fn connect_timeouts_are_retried_at_once() {
    // D12: black-holed server, timeout connect 500 ms: 503 after 2.0 s.
    let sc = scenario(base(
        json!([{"name": "A"}]),
        json!([{"kind": "partition", "node": "A"}]),
        json!({"retries": 3, "timeout_connect": "500ms"}),
    ));
    let r = world::run(&sc, 1);
    assert_eq!(r.client.status.get("503"), Some(&r.client.requests));
    let p50 = r.client.latency_ms.p50.unwrap();
    assert!((p50 - 2000.0).abs() < 70.0, "{p50} ms");
}

#[test]
fn roundrobin_with_redispatch_always_hits_the_dead_server_first() {
    // D13: every request is refused by A, redispatched at once to B.
    let sc = scenario(base(
        json!([{"name": "A"}, {"name": "B"}]),
        json!([{"kind": "crash", "node": "A"}]),
        json!({"retries": 3, "redispatch": true, "timeout_connect": "5s"}),
    ));
    let r = world::run(&sc, 1);
    assert_eq!(r.client.ok, r.client.requests);
    assert_eq!(
        r.nodes[0].attempts, r.client.requests,
        "dead first, every time"
    );
    assert_eq!(r.nodes[1].attempts, r.client.requests);
    assert!(
        r.client.latency_ms.max.unwrap() < 50.0,
        "no turn-around pause"
    );
}

#[test]
fn without_redispatch_retries_stay_on_the_same_server() {
    let sc = scenario(base(
        json!([{"name": "A"}, {"name": "B"}]),
        json!([{"kind": "crash", "node": "A"}]),
        json!({"retries": 2}),
    ));
    let r = world::run(&sc, 1);
    let failed = r.client.status.get("503").copied().unwrap_or(0);
    assert_eq!(failed + r.client.ok, r.client.requests);
    assert_eq!(failed, r.nodes[0].attempts / 3, "three attempts on A each");
    assert!(
        failed > 0 && r.client.ok > 0,
        "half the requests start on A"
    );
}

#[test]
fn server_timeout_and_close_map_to_504_and_502() {
    let sc = scenario(base(
        json!([{"name": "A"}]),
        json!([{"kind": "hang", "node": "A"}]),
        json!({"timeout_server": "1s"}),
    ));
    let r = world::run(&sc, 1);
    assert_eq!(r.client.status.get("504"), Some(&r.client.requests));
    let sc = scenario(base(
        json!([{"name": "A"}]),
        json!([{"kind": "flaky", "node": "A", "p": 1.0, "error": "reset"}]),
        json!({}),
    ));
    let r = world::run(&sc, 1);
    assert_eq!(
        r.client.status.get("502"),
        Some(&r.client.requests),
        "no retry once connected"
    );
}

#[test]
fn no_usable_server_is_a_503() {
    let mut doc = base(
        json!([{"name": "A"}]),
        json!([{"kind": "crash", "node": "A"}]),
        json!({}),
    );
    doc["policies"] = json!([{"kind": "active_probe", "flavor": "haproxy", "inter": "1s"}]);
    let r = world::run(&scenario(doc), 1);
    // The first check (at 0 s) marks A DOWN. The request sent at 0 s is
    // retried on A all the same (no redispatch): its 4 attempts are the only
    // ones; every later request finds no server.
    assert!(r.client.requests > 1);
    assert_eq!(r.nodes[0].attempts, 4, "only the request at 0 s reached A");
    assert_eq!(r.client.status.get("503"), Some(&r.client.requests));
}

#[test]
fn observe_layer7_marks_down_on_the_third_502_which_still_reaches_the_client() {
    // D14: error-limit 3 on-error mark-down fastinter 1s, with a passing TCP check.
    let mut doc = base(
        json!([{"name": "A"}]),
        json!([{"kind": "flaky", "node": "A", "at": "10s", "for": "1s", "p": 1.0, "status": 502}]),
        json!({}),
    );
    doc["clients"] = json!({"kind": "open", "rate_per_s": 10.0, "arrivals": "constant"});
    doc["duration"] = json!("20s");
    doc["policies"] = json!([{
        "kind": "active_probe", "flavor": "haproxy", "inter": "10s", "fastinter": "1s",
        "observe": "layer7", "error_limit": 3, "on_error": "mark-down"
    }]);
    let r = world::run(&scenario(doc), 1);
    let a = &r.nodes[0];
    assert_eq!(
        r.client.status.get("502"),
        Some(&3),
        "the third 502 went to the client"
    );
    assert_eq!(a.ejections, 1);
    let d = a.first_ejection_delay_s.unwrap();
    assert!(
        (0.2..0.21).contains(&d),
        "marked down at the third error: {d}"
    );
    // Two passing checks at fastinter bring it back: DOWN for about 2 s.
    assert!(
        (a.ejected_time_s - 2.0).abs() < 0.05,
        "{}",
        a.ejected_time_s
    );
}

#[test]
fn nginx_settings_stay_nginx() {
    let mut doc = base(json!([{"name": "A"}]), json!([]), json!({"retries": 1}));
    doc["gateway"]["flavor"] = json!("nginx");
    let e = Model::from_document(&doc, "m.json".as_ref())
        .unwrap_err()
        .to_string();
    assert!(e.contains("gateway.haproxy: HAProxy settings need"), "{e}");
}

/// An HTTP check of A every 2 s with `timeout connect 1s` (the connect
/// window) and `timeout check CHECK`; A's answers take `service`.
fn checked(service: &str, fault: Value, check: &str) -> Value {
    let mut doc = base(
        json!([
            {"name": "A", "service_time": {"dist": "constant", "value": service}},
            {"name": "B"}
        ]),
        json!([fault]),
        json!({"retries": 3, "timeout_connect": "1s"}),
    );
    doc["duration"] = json!("30s");
    doc["policies"] = json!([{
        "kind": "active_probe", "flavor": "haproxy", "probe": "http",
        "inter": "2s", "timeout_connect": "1s", "timeout_check": check
    }]);
    doc
}

#[test]
fn a_timeout_check_longer_than_the_connect_window_is_honoured_in_2_6() {
    // tcpcheck_eval_connect / process_chk_conn; measured on 2.6.12
    // (docs/calibration.md): a server answering checks in 1.5 s stays UP with
    // `timeout check 5s`, and a hung one fails each check at 3 s with
    // `timeout check 3s`, not at the 1 s connect window.
    let slow = scenario(checked(
        "1500ms",
        json!({"kind": "slow", "node": "B", "at": "0s", "factor": 1.0}),
        "5s",
    ));
    let r = world::run(&slow, 1);
    assert_eq!(r.nodes[0].ejections, 0, "slow but healthy: stays UP");
    assert!(r.nodes[0].probes >= 8);
    let hung = scenario(checked(
        "1ms",
        json!({"kind": "hang", "node": "A", "at": "10s"}),
        "3s",
    ));
    let r = world::run(&hung, 1);
    let a = &r.nodes[0];
    assert_eq!(a.ejections, 1);
    let d = a.first_ejection_delay_s.unwrap();
    // From full health (fall 3): three checks of 3 s, 2 s apart, the first
    // starting within 2 s of the hang.
    assert!((13.0..=15.1).contains(&d), "first ejection after {d} s");
}

/// One server with `maxconn 1` answering in 400 ms, six requests 10 ms
/// apart, as measured on HAProxy 2.6.12 (docs/calibration.md,
/// `haproxy-queue`).
fn queue_burst(haproxy: Value, max_queue: u32, keys: Option<u32>) -> Value {
    let mut clients = json!({"kind": "open", "rate_per_s": 100.0, "arrivals": "constant",
        "timeout": "20s", "schedule": [{"at": "55ms", "rate_per_s": 0.0}]});
    if let Some(k) = keys {
        // One request first, whose answer sets the key's cookie, then the
        // burst from 0.5 s.
        clients["keys"] = json!(k);
        clients["rate_per_s"] = json!(1.0);
        clients["schedule"] = json!([{"at": "500ms", "rate_per_s": 100.0},
                                     {"at": "555ms", "rate_per_s": 0.0}]);
    }
    json!({
        "name": "haproxy-queue", "duration": "4s", "seed": 1,
        "clients": clients,
        "gateway": {"flavor": "haproxy", "haproxy": haproxy},
        "nodes": [{"name": "s1", "max_conns": 1, "max_queue": max_queue, "workers": 8,
                   "service_time": {"dist": "constant", "value": "400ms"}}]
    })
}

/// `hcsim run` of `doc`: its summary.json's run (`runs[0]`).
fn run_binary(doc: &Value, name: &str) -> Value {
    let (_, out) = crate::run_doc(name, doc, &["-q"]);
    let s: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    s["runs"][0].clone()
}

#[test]
fn a_full_server_queues_requests_until_timeout_queue() {
    // assign_server_and_queue / pendconn_add / process_srv_queue and the
    // SC_ST_QUE branch of back_try_conn_req: three served one after the
    // other, three answered 503 after 1 s in the queue (sQ).
    let s = run_binary(
        &queue_burst(json!({"timeout_queue": "1s"}), 0, None),
        "queue-1s",
    );
    assert_eq!(s["client"]["status"]["200"], 3, "{s}");
    assert_eq!(s["client"]["status"]["503"], 3, "{s}");
    assert_eq!(s["queues"]["queued"], 5);
    assert_eq!(s["queues"]["served"], 2);
    assert_eq!(s["queues"]["timeouts"], 3);
    assert_eq!(s["nodes"][0]["attempts"], 3);
    // A queue timeout tries no connection: no failure is charged.
    assert_eq!(s["nodes"][0]["failures"], 0);
    // Latencies: 0.4, 0.79, 1.18 s served; 1.0 s for each 503.
    let max = s["client"]["latency_ms"]["max"].as_f64().unwrap();
    assert!((max - 1180.0).abs() < 5.0, "{max}");
    // `timeout queue` unset is `timeout connect`; without either, the
    // queue waits: all six are served, the last after 2.35 s.
    let s = run_binary(
        &queue_burst(json!({"timeout_connect": "1s"}), 0, None),
        "queue-connect",
    );
    assert_eq!(s["client"]["status"]["503"], 3, "{s}");
    let s = run_binary(&queue_burst(json!({}), 0, None), "queue-none");
    assert_eq!(s["client"]["status"]["200"], 6, "{s}");
    let max = s["client"]["latency_ms"]["max"].as_f64().unwrap();
    assert!((max - 2350.0).abs() < 5.0, "{max}");
}

#[test]
fn a_full_primary_queues_instead_of_using_the_backup() {
    // fwrr_get_next_server balances over the backups only when no active
    // server is usable (`srv_act == 0`); a usable but full one makes
    // assign_server return SRV_STATUS_FULL: the backend's queue.
    let mut doc = queue_burst(json!({"timeout_queue": "1s"}), 0, None);
    doc["nodes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "b", "backup": true,
        "service_time": {"dist": "constant", "value": "1ms"}}));
    let s = run_binary(&doc, "queue-backup");
    assert_eq!(s["client"]["status"]["200"], 3, "{s}");
    assert_eq!(s["client"]["status"]["503"], 3, "{s}");
    assert_eq!(s["nodes"][1]["attempts"], 0, "{s}");
}

#[test]
fn a_cookie_sends_requests_to_its_server_queue_up_to_maxqueue() {
    // assign_server_and_queue and srv_redispatch_connect's
    // SRV_STATUS_FULL: with one client key, the burst after the first
    // answer goes to s1 by its cookie: one connects, two wait in its queue
    // (`maxqueue 2`), three get 503 at once; with `option redispatch` those
    // three are balanced instead, and wait in the backend's queue.
    let doc = queue_burst(json!({"timeout_queue": "10s", "cookie": {}}), 2, Some(1));
    let s = run_binary(&doc, "queue-cookie");
    assert_eq!(s["client"]["requests"], 7, "{s}");
    assert_eq!(s["client"]["status"]["200"], 4, "{s}");
    assert_eq!(s["client"]["status"]["503"], 3, "{s}");
    assert_eq!(s["queues"]["timeouts"], 0);
    assert_eq!(s["queues"]["queued"], 2);
    // 0.4, 0.4, 0.79 and 1.18 s for the answers, nothing for the 503s.
    let mean = s["client"]["latency_ms"]["mean"].as_f64().unwrap();
    assert!((mean - 2770.0 / 7.0).abs() < 5.0, "{mean}");
    let redispatch = json!({"timeout_queue": "10s", "cookie": {}, "redispatch": true});
    let s = run_binary(&queue_burst(redispatch, 2, Some(1)), "queue-redispatch");
    assert_eq!(s["client"]["status"]["200"], 7, "{s}");
    assert_eq!(s["queues"]["queued"], 5);
    // No summary key for a model without queues.
    let mut plain = queue_burst(json!({}), 0, None);
    plain["nodes"][0]["max_conns"] = json!(0);
    plain["nodes"][0]
        .as_object_mut()
        .unwrap()
        .remove("max_queue");
    let s = run_binary(&plain, "queue-plain");
    assert!(s.get("queues").is_none(), "{s}");
}
