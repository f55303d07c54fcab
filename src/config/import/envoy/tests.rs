use crate::config::import::{Imported, Options, Workload, read};
use serde_json::{Value, json};

fn import(text: &str, ext: &str) -> Imported {
    let dir =
        std::env::temp_dir().join(format!("hcsim-envoy-{}-{}", std::process::id(), text.len()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("envoy.{ext}"));
    std::fs::write(&p, text).unwrap();
    read(&p, &Options::default(), &Workload::default()).unwrap_or_else(|e| panic!("{e}"))
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
