use crate::config::import::{Imported, Options, Workload, read};
use serde_json::{Value, json};

fn import(text: &str, ext: &str) -> Imported {
    try_import(text, ext).unwrap_or_else(|e| panic!("{e}"))
}

fn try_import(text: &str, ext: &str) -> Result<Imported, String> {
    // One directory per text: tests run in parallel.
    let hash = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        h.finish()
    };
    let dir = std::env::temp_dir().join(format!(
        "hcsim-envoy-{}-{}-{hash:x}",
        std::process::id(),
        text.len()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("envoy.{ext}"));
    std::fs::write(&p, text).unwrap();
    read(&p, &Options::default(), &Workload::default()).map_err(|e| e.to_string())
}

fn model(im: &Imported) -> Value {
    serde_json::to_value(im.model().unwrap().effective_spec()).unwrap()
}

#[test]
fn one_cluster_in_json_with_envoy_defaults() {
    let im = import(
        r#"{"name": "c", "type": "STATIC", "load_assignment": {"endpoints": [
            {"lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": "10.0.0.1", "port_value": 80}}}}]},
            {"priority": 1, "lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": "10.0.0.2", "port_value": 80}}}, "load_balancing_weight": 3}]}]}}"#,
        "json",
    );
    let m = model(&im);
    assert_eq!(m["gateway"]["proxy_connect_timeout"], "5s"); // Envoy's default
    assert_eq!(m["gateway"]["proxy_read_timeout"], "15s"); // the route default
    assert_eq!(m["gateway"]["proxy_next_upstream"], json!(["off"])); // no retry policy
    assert_eq!(m["gateway"]["healthy_panic_threshold"], 50.0);
    assert_eq!(m["nodes"][1]["backup"], true);
    assert_eq!(m["nodes"][1]["weight"], 3);
    assert_eq!(m["policy"]["kind"], "none");
}

#[test]
fn retry_policy_words_map_onto_next_upstream() {
    let im = import(
        "static_resources:\n  listeners:\n  - filter_chains:\n    - filters:\n      - typed_config:\n          route_config:\n            virtual_hosts:\n            - name: v\n              retry_policy:\n                retry_on: 5xx,retriable-status-codes,refused-stream\n                retriable_status_codes: [429, 409]\n                num_retries: 3\n                per_try_timeout: 500ms\n              routes:\n              - route: { cluster: c, timeout: 2s }\n  clusters:\n  - name: c\n    load_assignment:\n      endpoints:\n      - lb_endpoints:\n        - endpoint: { address: { socket_address: { address: 10.0.0.1, port_value: 80 } } }\n",
        "yaml",
    );
    let g = &model(&im)["gateway"];
    assert_eq!(
        g["proxy_next_upstream"],
        json!([
            "error",
            "timeout",
            "http_500",
            "http_502",
            "http_503",
            "http_504",
            "http_429",
            "non_idempotent"
        ])
    );
    assert_eq!(g["proxy_next_upstream_tries"], 4);
    assert_eq!(g["proxy_read_timeout"], "500ms");
    assert_eq!(g["proxy_next_upstream_timeout"], "2s");
    let w: Vec<String> = im.warnings.iter().map(|w| w.to_string()).collect();
    assert!(
        w.iter()
            .any(|w| w.contains("retriable status code 409 is not modelled")),
        "{w:?}"
    );
    assert!(
        w.iter()
            .any(|w| w.contains("retry_on refused-stream is not modelled")),
        "{w:?}"
    );
}

fn hc_cluster(http: &str) -> String {
    format!(
        "name: c\nconnect_timeout: 1s\nload_assignment:\n  endpoints:\n  - lb_endpoints:\n    - endpoint: {{ address: {{ socket_address: {{ address: 10.0.0.1, port_value: 80 }} }} }}\nhealth_checks:\n- timeout: 1s\n  interval: 5s\n  unhealthy_threshold: 3\n  healthy_threshold: 2\n  http_health_check:\n    path: /healthz\n{http}"
    )
}

/// `HttpHealthCheckerImpl`'s `expected_statuses` / `retriable_statuses`,
/// with their lines; none: only 200 (the model's default).
#[test]
fn expected_and_retriable_statuses_are_read_with_their_lines() {
    let im = import(
        &hc_cluster(
            "    expected_statuses:\n    - start: 200\n      end: 400\n    retriable_statuses: [{start: 503, end: 504}]\n",
        ),
        "yaml",
    );
    assert!(im.warnings.is_empty(), "{:?}", im.warnings);
    let p = &model(&im)["policy"];
    assert_eq!(p["expected_statuses"], json!([{"start": 200, "end": 400}]));
    assert_eq!(p["retriable_statuses"], json!([{"start": 503, "end": 504}]));
    let line = |f: &str| {
        im.origins
            .iter()
            .find(|(k, _)| k == f)
            .map(|(_, at)| at.line)
    };
    assert_eq!(line("policy.expected_statuses"), Some(14));
    assert_eq!(line("policy.retriable_statuses"), Some(17));
    // proto3 JSON names, bounds as strings (int64).
    let im = import(
        r#"{"name": "c", "type": "STATIC", "connectTimeout": "1s", "healthChecks": [{"timeout": "1s", "interval": "5s", "unhealthyThreshold": 3, "healthyThreshold": 2, "httpHealthCheck": {"path": "/", "expectedStatuses": [{"start": "200", "end": "300"}]}}]}"#,
        "json",
    );
    assert_eq!(
        model(&im)["policy"]["expected_statuses"],
        json!([{"start": 200, "end": 300}])
    );
    let p = &model(&import(&hc_cluster(""), "yaml"))["policy"];
    assert!(p.get("expected_statuses").is_none(), "{p}");
}

#[test]
fn status_ranges_envoy_refuses_are_refused_with_their_line() {
    for (http, want) in [
        (
            "    expected_statuses: [{start: 200, end: 200}]\n",
            "expected_statuses[0]: an empty range",
        ),
        (
            "    expected_statuses: [{start: 200, end: 300}, {end: 300}]\n",
            "expected_statuses[1]: start must be an HTTP status",
        ),
        (
            "    retriable_statuses: [{start: 500, end: 700}]\n",
            "retriable_statuses[0]: end must be at most 600",
        ),
        ("    expected_statuses: 200\n", "expected a list of ranges"),
        (
            "    expected_statuses: [{start: 200, end: 99999}]\n",
            "expected_statuses[0].end: expected an HTTP status",
        ),
    ] {
        let e = try_import(&hc_cluster(http), "yaml").unwrap_err();
        assert!(
            e.contains("envoy.yaml:14: health_checks[0].http_health_check.") && e.contains(want),
            "{http}: {e}"
        );
    }
}
