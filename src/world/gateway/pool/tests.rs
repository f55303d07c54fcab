//! The pool against the products' sources, on small models whose timing is
//! worked out by hand (rtt 0.2 ms: a new connection sends its request one
//! round trip after the connect, a reused one at once; service 5 ms).

use crate::metrics::{NodeConnections, RunSummary};
use crate::spec::Model;
use serde_json::{Value, json};
use std::path::Path;

fn model(doc: Value) -> Model {
    Model::from_document(&doc, Path::new("t.json")).unwrap()
}

/// Two nodes, `rate` constant arrivals per second for `duration`, nginx
/// with `pool`, and the extra fields of `patch` (merged at the top level,
/// `nodes` replaced).
fn nginx(rate: f64, duration: &str, pool: Value, patch: Value) -> Model {
    let mut doc = json!({
        "name": "t", "duration": duration,
        "clients": {"kind": "open", "rate_per_s": rate, "arrivals": "constant"},
        "gateway": {"pool": pool},
        "nodes": [{"name": "A"}, {"name": "B"}]
    });
    for (k, v) in patch.as_object().unwrap() {
        if k == "gateway" {
            for (gk, gv) in v.as_object().unwrap() {
                doc["gateway"][gk] = gv.clone();
            }
        } else {
            doc[k] = v.clone();
        }
    }
    model(doc)
}

fn reusing(keepalive: u32) -> Value {
    json!({"kind": "nginx", "keepalive": keepalive, "proxy_http_version": "1.1",
           "connection_header": ""})
}

fn conns(s: &RunSummary, i: usize) -> NodeConnections {
    s.nodes[i]
        .connections
        .clone()
        .expect("a pool reports connections")
}

#[test]
fn nginx_reuses_the_cached_connection_only_with_http_1_1_and_no_connection_close() {
    // 20 requests, A and B in turn: each node's first request opens the
    // connection, the other nine reuse it (`get_keepalive_peer`).
    let s = crate::world::run(&nginx(10.0, "2s", reusing(16), json!({})), 1);
    for i in 0..2 {
        let c = conns(&s, i);
        assert_eq!((s.nodes[i].attempts, c.opened, c.reused), (10, 1, 9));
        assert_eq!(c.reused_share, 0.9);
    }
    // A reused connection skips the connect: 5 ms of service and one round
    // trip instead of two.
    assert_eq!(s.client.latency_ms.p50, Some(5.2));
    // nginx's defaults (HTTP/1.0, `Connection: close`): nothing is cached.
    let pool = json!({"kind": "nginx", "keepalive": 16});
    let s = crate::world::run(&nginx(10.0, "2s", pool, json!({})), 1);
    assert_eq!((conns(&s, 0).opened, conns(&s, 0).reused), (10, 0));
    assert_eq!(s.client.latency_ms.p50, Some(5.4));
}

#[test]
fn request_limits_and_the_cache_size_close_connections() {
    // keepalive_requests 3 (`c->requests >= conf->requests`): A's ten
    // requests go on four connections.
    let mut pool = reusing(16);
    pool["keepalive_requests"] = json!(3);
    let s = crate::world::run(&nginx(10.0, "2s", pool, json!({})), 1);
    assert_eq!((conns(&s, 0).opened, conns(&s, 0).reused), (4, 6));
    // The node's own limit: it answers its second request with
    // `Connection: close`.
    let nodes = json!({"nodes": [{"name": "A", "keepalive_requests": 2}, {"name": "B"}]});
    let s = crate::world::run(&nginx(10.0, "2s", reusing(16), nodes), 1);
    assert_eq!((conns(&s, 0).opened, conns(&s, 0).reused), (5, 5));
    assert_eq!((conns(&s, 1).opened, conns(&s, 1).reused), (1, 9));
    // keepalive 1: one idle connection per worker for the whole upstream;
    // caching B's evicts A's (the least recently cached), and so on.
    let s = crate::world::run(&nginx(10.0, "2s", reusing(1), json!({})), 1);
    assert_eq!((conns(&s, 0).opened, conns(&s, 1).opened), (10, 10));
    // keepalive_timeout: a connection idle longer is closed by nginx.
    let mut pool = reusing(16);
    pool["keepalive_timeout"] = json!("150ms");
    let s = crate::world::run(&nginx(10.0, "2s", pool, json!({})), 1);
    assert_eq!(conns(&s, 0).opened, 10, "A is used every 200 ms");
}

/// A's requests at 0 s and 1 s (2 requests per second in turn); its
/// connection went idle at 5.4 ms (the answer left the node at 5.3 ms), so
/// a node keep-alive timeout `t` closes it at 5.3 ms + `t`.
fn race(node_timeout: &str, method: &str, policy: Value) -> RunSummary {
    let nodes = json!({
        "nodes": [{"name": "A", "keepalive_timeout": node_timeout}, {"name": "B"}],
        "policy": policy,
        "clients": {"kind": "open", "rate_per_s": 2.0, "arrivals": "constant", "method": method}
    });
    crate::world::run(&nginx(2.0, "1200ms", reusing(16), nodes), 1)
}

#[test]
fn the_node_closing_an_idle_connection_races_a_reuse_within_the_round_trip() {
    let max_fails = json!({"kind": "max_fails", "max_fails": 1, "fail_timeout": "10s"});
    // Closed at 999.8 ms: its FIN reached nginx at 999.9 ms, before the
    // reuse at 1 s (`keepalive_close_handler`): a new connection, no error.
    let s = race("994.5ms", "GET", max_fails.clone());
    assert_eq!((conns(&s, 0).opened, conns(&s, 0).reset_on_reuse), (2, 0));
    // Closed at 1.0000 s or 1.0001 s: the request sent at 1 s reaches a
    // closed socket, the FIN comes back first ("upstream prematurely
    // closed connection"): an `error`, counted (A ejected at max_fails=1),
    // retried on B without using up a try (`u->peer.tries++`).
    for t in ["994.7ms", "994.8ms"] {
        let s = race(t, "GET", max_fails.clone());
        let a = conns(&s, 0);
        assert_eq!((a.reused, a.reset_on_reuse), (1, 1), "{t}");
        assert_eq!((s.nodes[0].failures, s.nodes[0].ejections), (1, 1), "{t}");
        assert_eq!(s.nodes[1].attempts, 2, "{t}: the retry goes to B");
        assert_eq!(s.client.status.get("200"), Some(&3), "{t}");
        // A POST that was sent is not retried without `non_idempotent`: 502.
        let s = race(t, "POST", max_fails.clone());
        assert_eq!(s.client.status.get("502"), Some(&1), "{t}");
        assert_eq!(s.nodes[1].attempts, 1, "{t}");
    }
    // Closed at 1.0002 s: the request reached the node at 1.0001 s, first.
    let s = race("994.9ms", "GET", max_fails);
    assert_eq!((conns(&s, 0).reused, conns(&s, 0).reset_on_reuse), (1, 0));
}

#[test]
fn a_single_server_gets_one_more_try_after_an_error_on_a_cached_connection() {
    // `peers->single` never retries, except after an error on a cached
    // connection (reference A8): the retry opens a new connection.
    let doc = json!({
        "name": "t", "duration": "1200ms",
        "clients": {"kind": "open", "rate_per_s": 1.0, "arrivals": "constant"},
        "gateway": {"pool": reusing(16)},
        "nodes": [{"name": "A", "keepalive_timeout": "994.7ms"}]
    });
    let s = crate::world::run(&model(doc), 1);
    let a = conns(&s, 0);
    assert_eq!((s.nodes[0].attempts, a.opened, a.reset_on_reuse), (3, 2, 1));
    assert_eq!(s.client.status.get("200"), Some(&2));
}

#[test]
fn stop_accepting_refuses_new_connections_and_serves_the_kept_one() {
    // A closes its listening socket from 2 s to 7 s. With a kept
    // connection nginx never notices (one request at a time: no new
    // connect is needed); without reuse each attempt connects, is refused,
    // and A is ejected as after a crash.
    let fault =
        json!({"faults": [{"kind": "stop_accepting", "node": "A", "at": "2s", "for": "5s"}]});
    let s = crate::world::run(&nginx(10.0, "10s", reusing(16), fault.clone()), 1);
    assert_eq!((s.nodes[0].ejections, conns(&s, 0).refused), (0, 0));
    assert_eq!(s.nodes[0].share, 0.5);
    let s = crate::world::run(
        &nginx(
            10.0,
            "10s",
            json!({"kind": "nginx", "keepalive": 16}),
            fault,
        ),
        1,
    );
    assert_eq!(s.nodes[0].ejections, 1);
    assert!(conns(&s, 0).refused >= 1);
}

#[test]
fn a_crash_closes_the_kept_connections_and_a_reuse_in_the_next_half_round_trip_fails() {
    // 5 requests per second: A's at 0, 0.4, 0.8, 1.2 s; its connection is
    // idle from 0.8054 s. A crash at 1.19995 s: its FIN reaches nginx at
    // 1.20005 s, after the reuse at 1.2 s; a crash at 1.1999 s: before it.
    let crash = |at: &str| {
        let f = json!({"faults": [{"kind": "crash", "node": "A", "at": at}]});
        crate::world::run(&nginx(5.0, "1300ms", reusing(16), f), 1)
    };
    let late = crash("1.19995s");
    assert_eq!(
        (conns(&late, 0).reset_on_reuse, conns(&late, 0).refused),
        (1, 0)
    );
    let early = crash("1.1999s");
    assert_eq!(
        (conns(&early, 0).reset_on_reuse, conns(&early, 0).refused),
        (0, 1)
    );
}

#[test]
fn a_close_during_a_partition_is_seen_as_a_reset_at_the_next_reuse() {
    // A's connection is idle from 5.4 ms; A closes it at 505.3 ms, inside
    // a partition [200 ms, 900 ms): the FIN is lost, nginx keeps the
    // connection, and the request of 1 s meets a reset.
    let doc = json!({
        "nodes": [{"name": "A", "keepalive_timeout": "500ms"}, {"name": "B"}],
        "faults": [{"kind": "partition", "node": "A", "at": "200ms", "for": "700ms"}]
    });
    let m = nginx(2.0, "1200ms", reusing(16), doc);
    let (s, _, log) = crate::world::run_logged(&m, 1, u64::MAX, None, false, Some(100), None);
    assert_eq!(conns(&s, 0).reset_on_reuse, 1);
    let log = log.unwrap();
    assert!(
        log.lines.iter().any(|l| l
            .line
            .starts_with("[error] recv() failed (104: Connection reset by peer)")),
        "{:?}",
        log.lines
    );
}

fn haproxy(clients: Value, pool: Option<Value>) -> Model {
    let mut doc = json!({
        "name": "t", "duration": "2s", "clients": clients,
        "gateway": {"flavor": "haproxy"},
        "nodes": [{"name": "A"}, {"name": "B"}]
    });
    if let Some(p) = pool {
        doc["gateway"]["pool"] = p;
    }
    model(doc)
}

#[test]
fn haproxy_reuses_only_for_requests_after_the_first_of_a_client_connection() {
    let open = |conn: &str| json!({"kind": "open", "rate_per_s": 10.0, "arrivals": "constant", "connection": conn});
    // Keep-alive clients (one request at a time, so one client
    // connection): every request after the first is `TX_NOT_FIRST` and takes
    // the node's idle connection.
    let s = crate::world::run(&haproxy(open("keepalive"), None), 1);
    for i in 0..2 {
        assert_eq!((conns(&s, i).opened, conns(&s, i).reused), (1, 9));
    }
    // One request per client connection: `http-reuse safe` never reuses.
    let safe = json!({"kind": "haproxy"});
    let s = crate::world::run(&haproxy(open("close"), Some(safe)), 1);
    assert_eq!((conns(&s, 0).opened, conns(&s, 0).reused), (10, 0));
    // `aggressive` lets first requests take only connections reused once
    // (the `safe` list), which close clients never make; `always` any.
    let aggressive = json!({"kind": "haproxy", "http_reuse": "aggressive"});
    let s = crate::world::run(&haproxy(open("close"), Some(aggressive)), 1);
    assert_eq!(conns(&s, 0).reused, 0);
    let always = json!({"kind": "haproxy", "http_reuse": "always"});
    let s = crate::world::run(&haproxy(open("close"), Some(always)), 1);
    assert_eq!((conns(&s, 0).opened, conns(&s, 0).reused), (1, 9));
    // `option http-server-close`: the server side is closed every time.
    let server_close = json!({"kind": "haproxy", "option": "http_server_close"});
    let s = crate::world::run(&haproxy(open("keepalive"), Some(server_close)), 1);
    assert_eq!(conns(&s, 0).reused, 0);
    // `timeout http-keep-alive` shorter than the gap between requests:
    // every client connection is closed before its next request.
    let short = json!({"kind": "haproxy", "timeout_http_keep_alive": "50ms"});
    let s = crate::world::run(&haproxy(open("keepalive"), Some(short)), 1);
    assert_eq!(conns(&s, 0).reused, 0);
}

#[test]
fn envoy_circuit_breakers_overflow_with_a_local_503_that_outlier_detection_ignores() {
    // One connection for the cluster and no pending requests: with 40 ms
    // of service and a request every 25 ms, every second request finds the
    // connection busy and overflows (`UO`).
    let doc = |pending: u32| {
        json!({
            "name": "t", "duration": "1s",
            "clients": {"kind": "open", "rate_per_s": 40.0, "arrivals": "constant"},
            "gateway": {"pool": {"kind": "envoy", "circuit_breakers":
                {"max_connections": 1, "max_pending_requests": pending}}},
            "nodes": [{"name": "A", "service_time": {"dist": "constant", "value": "40ms"}}],
            "policy": {"kind": "outlier_detection", "consecutive_5xx": 1}
        })
    };
    let s = crate::world::run(&model(doc(0)), 1);
    let a = conns(&s, 0);
    assert_eq!((a.opened, a.overflow), (1, 20));
    assert_eq!(s.client.status.get("503"), Some(&20));
    assert_eq!(s.nodes[0].ejections, 0, "an overflow is not an outlier");
    // With room to wait, requests queue for the one connection instead.
    let s = crate::world::run(&model(doc(1000)), 1);
    assert_eq!(conns(&s, 0).overflow, 0);
    assert!(s.client.latency_ms.max.unwrap() > 200.0);
    assert!(s.client.unfinished > 0);
}

#[test]
fn envoy_makes_no_retry_beyond_max_retries_in_flight_nor_of_a_reset_without_retry_on_reset() {
    // A answers 503 to every request, retried on B (`retry_on: 5xx`): with
    // `max_retries: 0` no retry may be in flight, so every 503 reaches the
    // client (`RetryStateImpl::shouldRetry` returns NoOverflow).
    let doc = |max_retries: u32, fault: Value, retry_on_reset: bool| {
        json!({
            "name": "t", "duration": "1s",
            "clients": {"kind": "open", "rate_per_s": 20.0, "arrivals": "constant"},
            "gateway": {"proxy_next_upstream": ["error", "http_503"],
                        "pool": {"kind": "envoy", "retry_on_reset": retry_on_reset,
                                 "circuit_breakers": {"max_retries": max_retries}}},
            "nodes": [{"name": "A"}, {"name": "B"}],
            "faults": [fault],
            "policy": {"kind": "none"}
        })
    };
    let e503 = json!({"kind": "flaky", "node": "A", "p": 1.0, "status": 503});
    let s = crate::world::run(&model(doc(3, e503.clone(), true)), 1);
    assert_eq!(s.client.status.get("200"), Some(&20));
    let s = crate::world::run(&model(doc(0, e503, true)), 1);
    assert_eq!(s.client.status.get("503"), Some(&10));
    // A reset is retried only with retry_on_reset.
    let reset = json!({"kind": "flaky", "node": "A", "p": 1.0, "error": "reset"});
    let s = crate::world::run(&model(doc(3, reset.clone(), true)), 1);
    assert_eq!(s.client.status.get("200"), Some(&20));
    let s = crate::world::run(&model(doc(3, reset, false)), 1);
    assert_eq!(s.client.status.get("200"), Some(&10));
}
