//! Behaviours of the real products that change ejection delays, ejection
//! counts or client errors, each pinned against the source function it
//! follows and run end to end on inline models.

use crate::scenario;
use hcsim::world;
use serde_json::{Value, json};

fn four_nodes() -> Value {
    json!([{"name": "A"}, {"name": "B"}, {"name": "C"}, {"name": "D"}])
}

/// Envoy: with outlier detection and active health checking on one cluster,
/// a passing check un-ejects an ejected host (`DetectorImpl::initialize`
/// registers the callback, `successful_active_health_check_uneject_host`
/// defaults to true): a 1 s crash keeps A out for about one check interval,
/// not for `base_ejection_time` (30 s).
#[test]
fn envoy_active_check_unejects_an_outlier_ejected_host() {
    let doc = |uneject: bool| {
        scenario(json!({
            "name": "od-hc", "duration": "60s",
            "clients": {"kind": "open", "rate_per_s": 200.0, "arrivals": "constant"},
            "nodes": four_nodes(),
            "faults": [{"kind": "crash", "node": "A", "at": "5s", "for": "1s"}],
            "policies": [
                {"kind": "outlier_detection", "max_ejection_percent": 100,
                 "successful_active_health_check_uneject_host": uneject},
                {"kind": "active_probe", "flavor": "envoy", "probe": "http",
                 "interval": "1s", "timeout": "500ms", "no_traffic_interval": "1s",
                 "unhealthy_threshold": 3, "healthy_threshold": 2}
            ]
        }))
    };
    let on = world::run(&doc(true), 1);
    let off = world::run(&doc(false), 1);
    let (a_on, a_off) = (&on.nodes[0], &off.nodes[0]);
    assert_eq!(a_on.ejections, 1, "{a_on:?}");
    assert!(
        a_on.ejected_time_s > 0.5 && a_on.ejected_time_s < 2.5,
        "ejected for about one check interval after the crash: {}",
        a_on.ejected_time_s
    );
    assert!(
        a_off.ejected_time_s >= 30.0,
        "without the callback the ejection runs base_ejection_time: {}",
        a_off.ejected_time_s
    );
}

/// Envoy's cluster warming: a cluster with active health checks takes no
/// traffic until each host's first check completed
/// (`ClusterImplBase::onPreInitComplete` → `finishInitialization`). A host
/// down from the start then never gets a request; before, every host
/// started unhealthy, the cluster was in panic and A took a quarter of the
/// first requests.
#[test]
fn envoy_cluster_warms_before_it_takes_traffic() {
    let sc = scenario(json!({
        "name": "warming", "duration": "10s",
        "clients": {"kind": "open", "rate_per_s": 1000.0, "arrivals": "constant"},
        "gateway": {"proxy_next_upstream": ["off"]},
        "nodes": four_nodes(),
        "faults": [{"kind": "crash", "node": "A", "at": "0s"}],
        "policies": [{"kind": "active_probe", "flavor": "envoy", "probe": "http",
                      "interval": "1s", "timeout": "500ms", "no_traffic_interval": "1s",
                      "initial_jitter": "200ms",
                      "unhealthy_threshold": 3, "healthy_threshold": 2}]
    }));
    let r = world::run(&sc, 1);
    assert_eq!(r.nodes[0].attempts, 0, "A never passed a check");
    assert_eq!(r.client.errors, 0, "{:?}", r.client);
    assert_eq!(r.client.ok + r.client.unfinished, r.client.requests);
    // The first ~200 ms of requests waited for the first round.
    let p99 = r.client.latency_ms.p99.expect("latencies");
    assert!(p99 > 10.0, "requests held during warming: p99 {p99} ms");
}

/// istiod's `applyOutlierDetection` does not read the deprecated
/// `consecutiveErrors` (Istio ≥ 1.7): Envoy's defaults apply, so a node
/// answering 500 is ejected after 5 consecutive 5xx. hcsim used to map it to
/// gateway errors only (502/503/504) with 5xx detection off: never ejected.
#[test]
fn istio_ignores_the_deprecated_consecutive_errors() {
    let sc = scenario(json!({
        "name": "istio-legacy", "duration": "20s",
        "clients": {"kind": "open", "rate_per_s": 100.0, "arrivals": "constant"},
        "gateway": {"proxy_next_upstream": ["off"]},
        "nodes": four_nodes(),
        "faults": [{"kind": "flaky", "node": "A", "at": "5s", "p": 1.0, "status": 500}],
        "policies": [{"kind": "istio", "consecutiveErrors": 2, "maxEjectionPercent": 100}]
    }));
    let r = world::run(&sc, 1);
    let a = &r.nodes[0];
    assert!(a.ejections >= 1, "consecutive 5xx (5) ejects A: {a:?}");
    let d = a.first_ejection_delay_s.expect("ejected");
    // Round robin over 4 nodes at 100/s: A's 5th request is ~0.2 s in.
    assert!(d > 0.1 && d < 0.3, "after five 500s, not two: {d}");
}

/// istiod forces `minHealthPercent` to 0 when the service sends unhealthy
/// endpoints (`applyOutlierDetection`, `Service.SupportsUnhealthyEndpoints`):
/// with 3 of 4 nodes ejected, no panic routing to them.
#[test]
fn istio_sending_unhealthy_endpoints_turns_panic_off() {
    let doc = |send: bool| {
        scenario(json!({
            "name": "istio-unready", "duration": "20s",
            "clients": {"kind": "open", "rate_per_s": 100.0, "arrivals": "constant"},
            "gateway": {"proxy_next_upstream": ["off"]},
            "nodes": four_nodes(),
            "faults": [{"kind": "crash", "node": "A", "at": "5s"},
                       {"kind": "crash", "node": "B", "at": "5s"},
                       {"kind": "crash", "node": "C", "at": "5s"}],
            "policies": [{"kind": "istio", "consecutive5xxErrors": 1, "maxEjectionPercent": 100,
                          "minHealthPercent": 50, "baseEjectionTime": "60s",
                          "send_unhealthy_endpoints": send}]
        }))
    };
    let panic = world::run(&doc(false), 1);
    let off = world::run(&doc(true), 1);
    assert!(
        panic.nodes[0].fault_attempts > 10 * off.nodes[0].fault_attempts.max(1),
        "minHealthPercent 50 panics: {} attempts to crashed A; forced to 0: {}",
        panic.nodes[0].fault_attempts,
        off.nodes[0].fault_attempts
    );
}

/// Runs the binary on `doc` (one replication, its seed) and returns what
/// `hcsim run --format json` prints.
fn run_binary(name: &str, doc: &Value) -> Value {
    let (o, out) = crate::run_doc(name, doc, &["--reps", "1", "--format", "json"]);
    let v = serde_json::from_slice(&o.stdout).expect("summary JSON");
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
    v
}

/// The median of a summary figure (`client.errors`, `nodes.0.ejections`, …).
fn fig(s: &Value, path: &str) -> f64 {
    let mut v = s;
    for k in path.split('.') {
        v = match (v.is_array(), k.parse::<usize>()) {
            (true, Ok(i)) => &v[i],
            _ => &v[k],
        };
    }
    v.get("median").unwrap_or(v).as_f64().unwrap_or(f64::NAN)
}

/// Two nodes at 200 requests/s, no retries; A hangs from 5 s on.
fn hystrix_hang(policy: Value) -> Value {
    json!({
        "name": "hystrix-hang", "duration": "20s",
        "clients": {"kind": "open", "rate_per_s": 200.0, "arrivals": "constant"},
        "gateway": {"proxy_next_upstream": ["off"]},
        "nodes": [{"name": "A"}, {"name": "B"}],
        "faults": [{"kind": "hang", "node": "A", "at": "5s"}],
        "policy": policy
    })
}

/// Hystrix's execution timeout (`AbstractCommand.executeCommandAndObserve`
/// lifts `HystrixObservableTimeoutOperator`, whose timer fires
/// `execution.isolation.thread.timeoutInMilliseconds`, 1 s, after the start):
/// the caller gets its error at 1 s and the breaker counts the TIMEOUT then,
/// so it opens about 5.5 s into the hang. Before, the attempt lasted the
/// gateway's `proxy_read_timeout` (60 s): no error and no ejection in 20 s.
#[test]
fn hystrix_times_out_commands_at_the_execution_timeout() {
    let s = run_binary(
        "hystrix-timeout",
        &hystrix_hang(json!({"kind": "hystrix", "core_size": null})),
    );
    let timeouts = fig(&s, "client.status.504");
    assert!(
        timeouts > 400.0,
        "504s at the execution timeout: {timeouts}"
    );
    let max = fig(&s, "client.latency_ms.max");
    assert!(
        (1000.0..1010.0).contains(&max),
        "no request waits past 1 s: {max} ms"
    );
    assert!(fig(&s, "nodes.0.ejections") >= 1.0);
    let delay = fig(&s, "nodes.0.first_ejection_delay_s");
    assert!(
        (5.0..6.5).contains(&delay),
        "breaker open {delay} s into the hang"
    );
}

/// Hystrix's thread pool (`HystrixThreadPoolProperties`: `coreSize` 10,
/// `maxQueueSize` -1 → a `SynchronousQueue`): with ten commands of A stuck
/// in a hang, the eleventh is rejected at once
/// (`handleThreadPoolRejectionViaFallback`): the caller gets a 502 without
/// waiting, and THREAD_POOL_REJECTED counts as an error
/// (`HealthCounts.plus`), so the breaker opens. Before: every request to A
/// waited, nothing was counted, A stayed in.
#[test]
fn hystrix_rejects_the_eleventh_concurrent_command() {
    let s = run_binary(
        "hystrix-pool",
        &hystrix_hang(json!({"kind": "hystrix", "execution_timeout": null})),
    );
    let rejected = fig(&s, "client.status.502");
    assert!(rejected > 400.0, "rejections answered at once: {rejected}");
    assert_eq!(fig(&s, "client.slower_than.1s"), 0.0);
    let stuck =
        fig(&s, "nodes.0.attempts") - fig(&s, "nodes.0.answered") - fig(&s, "nodes.0.failures");
    assert_eq!(
        stuck, 10.0,
        "only the ten commands holding A's threads wait"
    );
    assert!(fig(&s, "nodes.0.ejections") >= 1.0);
}

/// Finagle ≥ 19.6.0's default failure accrual (`FailureAccrualFactory.
/// defaultPolicy`): `successRateWithinDuration(0.8, 30 s, …, 5) orElse
/// consecutiveFailures(5, …)`. A node failing 30 % of about 5 requests/s
/// rarely fails five in a row, but its success rate (an `Ema` over 30 s)
/// is near 0.7: it is marked dead at the first failure once 30 s have
/// passed. Consecutive-only (the old default, Linkerd 1.x's) leaves it in.
#[test]
fn finagle_marks_a_partly_failing_node_dead_by_success_rate() {
    let doc = |policy: Value| {
        json!({
            "name": "finagle-sr", "duration": "60s",
            "clients": {"kind": "open", "rate_per_s": 20.0, "arrivals": "constant"},
            "nodes": four_nodes(),
            "faults": [{"kind": "flaky", "node": "A", "at": "0s", "p": 0.3, "status": 503}],
            "policy": policy
        })
    };
    let hybrid = run_binary("finagle-sr", &doc(json!({"kind": "failure_accrual"})));
    let delay = fig(&hybrid, "nodes.0.first_ejection_delay_s");
    assert!(
        (30.0..32.0).contains(&delay),
        "dead {delay} s after the start"
    );
    let consecutive = run_binary(
        "finagle-consecutive",
        &doc(json!({"kind": "failure_accrual", "accrual_policy": "consecutive"})),
    );
    assert_eq!(fig(&consecutive, "nodes.0.ejections"), 0.0);
}

/// Consul's `deregister_critical_service_after` (agent `reapServicesInternal`,
/// a pass every 30 s): s0 hangs from 10 s to 100 s, its self-checked beats
/// stop, its check turns critical and, a minute later, the service is
/// removed. When the hang ends, its beats fail: with Spring Cloud Consul's
/// default (`reregister-service-on-failure` false) it stays out to the end;
/// with the switch on, the first refused beat re-registers it and the next
/// passes. Before, the first beat after the hang brought it back.
#[test]
fn consul_deregisters_a_service_critical_for_too_long() {
    let doc = |extra: Value| {
        let mut policy = json!({"kind": "heartbeat_ttl", "registry": "consul",
                                "interval": "5s", "ttl": "10s",
                                "self_check": {"timeout": "1s"}});
        policy
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({
            "name": "consul-reap", "duration": "200s",
            "clients": {"kind": "open", "rate_per_s": 20.0, "timeout": "2s"},
            "nodes": [{"name": "s0"}, {"name": "s1"}, {"name": "s2"}],
            "faults": [{"kind": "hang", "node": "s0", "at": "10s", "for": "90s"}],
            "policies": [policy]
        })
    };
    let out = |s: &Value| fig(s, "nodes.0.ejected_time_s");
    let kept = run_binary("consul-kept", &doc(json!({})));
    let removed = run_binary(
        "consul-removed",
        &doc(json!({"deregister_critical_service_after": "1m"})),
    );
    let back = run_binary(
        "consul-reregistered",
        &doc(json!({"deregister_critical_service_after": "1m",
                    "reregister": "on_failed_heartbeat"})),
    );
    // Out from ~15–20 s: back by ~106 s when kept, never when removed, one
    // beat later than kept when re-registered by the client (its new check
    // is critical, Consul's default).
    assert!((80.0..100.0).contains(&out(&kept)), "{}", out(&kept));
    assert!(out(&removed) > 175.0, "{}", out(&removed));
    let delta = out(&back) - out(&kept);
    assert!(
        (4.0..6.5).contains(&delta),
        "re-registered one beat later: {delta}"
    );
}

/// Nacos 1.x pushes a change to subscribers 1000 ms after it
/// (`PushService.onApplicationEvent` → `scheduleUdpSender(…, 1000,
/// MILLISECONDS)`): the shipped crash model's ejection comes exactly 1 s
/// later than with an immediate push (same seed, same scan phase).
#[test]
fn nacos1_pushes_a_change_one_second_after_it() {
    let model: Value = serde_json::from_str(
        &std::fs::read_to_string("models/registry-nacos1-crash.json").unwrap(),
    )
    .unwrap();
    let mut now = model.clone();
    now["policies"][0]["push_delay"] = json!("1us");
    let pushed = run_binary("nacos-push", &model);
    let at_once = run_binary("nacos-at-once", &now);
    let d = fig(&pushed, "nodes.0.first_ejection_delay_s")
        - fig(&at_once, "nodes.0.first_ejection_delay_s");
    assert!((d - 1.0).abs() < 1e-3, "pushed {d} s later");
}
