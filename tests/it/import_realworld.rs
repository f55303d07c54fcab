//! The real-world corpus of `tests/configs/real-world/` (issue 31): public
//! configs nobody here wrote, each with its source in `SOURCES.tsv` and the
//! settings expected of it in `expected.json` (written by a reader of the
//! products' documentation independent of hcsim, read by hand where the two
//! disagreed; see the corpus README) (per target: the node
//! count, the balancer, the policies and their key numbers; or the error a
//! file must give). Every file must be detected as its format, every target
//! import with exactly those settings, every refusal name its line; the
//! share of targets that import without a "not modelled" warning is
//! printed (`--nocapture`) and may not fall below the floor measured when
//! the corpus was gathered.

use crate::root;
use hcsim::config::import::{self, Format, Options, Workload};
use serde_json::Value;

/// Targets without a "not modelled" warning, in percent, at least: 132 of
/// the 171 (77.2%) when the corpus was gathered, most of the rest
/// Kubernetes workloads whose only warning was their `livenessProbe`; 159
/// (93.0%) once pods (`pods`) import it.
const WARNING_FREE_FLOOR: f64 = 90.0;

fn format(name: &str) -> Format {
    match name {
        "nginx" => Format::Nginx,
        "haproxy" => Format::Haproxy,
        "envoy" => Format::Envoy,
        "istio" => Format::Istio,
        "kubernetes" => Format::Kubernetes,
        other => panic!("unknown format {other}"),
    }
}

/// The value at a dotted path of the effective model (`gateway.balancer`),
/// or what `nodes` and `policy_kinds` stand for: the node count, the kinds
/// of the policies.
fn setting(m: &Value, key: &str) -> Value {
    match key {
        "nodes" => m["nodes"].as_array().map_or(0, Vec::len).into(),
        "policy_kinds" => {
            let mut kinds: Vec<String> = match m.get("policies").and_then(Value::as_array) {
                Some(ps) if !ps.is_empty() => ps
                    .iter()
                    .map(|p| p["kind"].as_str().unwrap_or("").to_string())
                    .collect(),
                _ => vec![m["policy"]["kind"].as_str().unwrap_or("none").to_string()],
            };
            kinds.sort();
            kinds.into()
        }
        _ => key
            .split('.')
            .fold(m, |v, k| v.get(k).unwrap_or(&Value::Null))
            .clone(),
    }
}

#[test]
fn real_world_configs_import_with_their_hand_read_settings() {
    let dir = root().join("tests/configs/real-world");
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let sources = std::fs::read_to_string(dir.join("SOURCES.tsv")).unwrap();
    let (mut targets, mut clean, mut failures) = (0usize, 0usize, vec![]);
    let files = expected.as_object().unwrap();
    assert!(files.len() >= 80, "{} files", files.len());
    for (file, e) in files {
        let name = file.rsplit('/').next().unwrap();
        assert!(
            sources.lines().any(|l| l.split('\t').nth(1) == Some(name)),
            "{file} has no source in SOURCES.tsv"
        );
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let fmt = e["format"].as_str().unwrap();
        let detected = import::detect(text.trim_start_matches('\u{feff}'));
        if detected != Some(format(fmt)) {
            failures.push(format!("{file}: detected as {detected:?}, not {fmt}"));
        }
        let opts = |target: Option<&str>| Options {
            format: Some(format(fmt)),
            target: target.map(String::from),
            ..Options::default()
        };
        if let Some(want) = e.get("error").and_then(Value::as_str) {
            match import::read(&path, &opts(None), &Workload::default()) {
                Ok(_) => failures.push(format!("{file}: imported, expected \"{want}\"")),
                Err(err) if !err.to_string().contains(want) => {
                    failures.push(format!("{file}: {err}, expected \"{want}\""))
                }
                Err(_) => {}
            }
            continue;
        }
        for (target, want) in e["targets"].as_object().unwrap() {
            let im = match import::read(&path, &opts(Some(target)), &Workload::default()) {
                Ok(im) => im,
                Err(err) => {
                    failures.push(format!("{file} --target {target}: {err}"));
                    continue;
                }
            };
            let m = match im.model() {
                Ok(m) => serde_json::to_value(m.effective_spec()).unwrap(),
                Err(err) => {
                    failures.push(format!("{file} --target {target}: model: {err}"));
                    continue;
                }
            };
            targets += 1;
            if !im
                .warnings
                .iter()
                .any(|w| w.message.contains("not modelled"))
            {
                clean += 1;
            }
            for (key, v) in want.as_object().unwrap() {
                let got = setting(&m, key);
                if &got != v {
                    failures.push(format!(
                        "{file} --target {target}: {key} is {got}, expected {v}"
                    ));
                }
            }
        }
    }
    let share = 100.0 * clean as f64 / targets.max(1) as f64;
    eprintln!(
        "real-world corpus: {} files, {targets} targets, {clean} ({share:.1}%) without a \
         \"not modelled\" warning",
        files.len()
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
    assert!(share >= WARNING_FREE_FLOOR, "{share:.1}%");
}

/// Imports `text` written as `name` in a fresh directory: the model, or
/// the error's text.
fn import_text(
    name: &str,
    text: &str,
    target: Option<&str>,
) -> Result<(Value, Vec<String>), String> {
    let dir = crate::tmp(&format!("rw-{}", name.replace('.', "-")));
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let opts = Options {
        target: target.map(String::from),
        ..Options::default()
    };
    let im = import::read(&path, &opts, &Workload::default()).map_err(|e| e.to_string())?;
    let m = serde_json::to_value(im.model().map_err(|e| e.to_string())?.effective_spec()).unwrap();
    Ok((m, im.warnings.iter().map(|w| w.to_string()).collect()))
}

#[test]
fn envoy_proto3_json_names_dumps_lists_weighted_routes_and_priorities() {
    // `egctl config`/xDS-style JSON: camelCase names, one Cluster document.
    let (m, _) = import_text(
        "cluster.json",
        r#"{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "backend",
           "connectTimeout": "0.25s", "lbPolicy": "LEAST_REQUEST",
           "outlierDetection": {"consecutive5xx": 3, "baseEjectionTime": "10s"},
           "loadAssignment": {"clusterName": "backend", "endpoints": [
             {"lbEndpoints": [{"endpoint": {"address": {"socketAddress": {"address": "10.0.0.1", "portValue": 8080}}}}]},
             {"priority": 1, "lbEndpoints": [{"endpoint": {"address": {"socketAddress": {"address": "10.0.0.1", "portValue": 8080}}}}]}]}}"#,
        None,
    )
    .unwrap();
    assert_eq!(m["gateway"]["proxy_connect_timeout"], "250ms");
    assert_eq!(m["gateway"]["balancer"], "random_two");
    assert_eq!(m["policy"]["kind"], "outlier_detection");
    assert_eq!(m["policy"]["consecutive_5xx"], 3);
    // The same address at two priorities: two hosts.
    assert_eq!(m["nodes"][0]["name"], "10.0.0.1:8080");
    assert_eq!(m["nodes"][1]["name"], "10.0.0.1:8080#2");
    assert_eq!(m["nodes"][1]["backup"], true);
    // An admin config_dump's dynamic_active_clusters, and a YAML list of clusters.
    let (m, _) = import_text(
        "dump.json",
        r#"{"configs": [{"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump",
           "dynamic_active_clusters": [{"version_info": "1", "cluster": {
             "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "example_proxy_cluster",
             "type": "LOGICAL_DNS", "load_assignment": {"cluster_name": "example_proxy_cluster",
             "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": "service1", "port_value": 8080}}}}]}]}}}]}]}"#,
        None,
    )
    .unwrap();
    assert_eq!(m["nodes"][0]["name"], "service1:8080");
    let list = "- name: a\n  connect_timeout: 1s\n  load_assignment:\n    endpoints:\n    - lb_endpoints:\n      - endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 80}}}\n- name: b\n  connect_timeout: 2s\n  load_assignment:\n    endpoints:\n    - lb_endpoints:\n      - endpoint: {address: {socket_address: {address: 10.0.0.2, port_value: 80}}}\n";
    assert_eq!(import::detect(list), Some(Format::Envoy));
    let (m, _) = import_text("list.yaml", list, Some("b")).unwrap();
    assert_eq!(m["gateway"]["proxy_connect_timeout"], "2s");
    // A route splitting by weighted_clusters keeps its timeout and retries.
    let weighted = "static_resources:\n  listeners:\n  - filter_chains:\n    - filters:\n      - typed_config:\n          route_config:\n            virtual_hosts:\n            - name: v\n              routes:\n              - match: {prefix: /}\n                route:\n                  timeout: 3s\n                  retry_policy: {retry_on: connect-failure, num_retries: 2}\n                  weighted_clusters:\n                    clusters:\n                    - {name: a, weight: 90}\n                    - {name: b, weight: 10}\n  clusters:\n  - name: a\n    load_assignment:\n      endpoints:\n      - lb_endpoints:\n        - endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 80}}}\n";
    let (m, w) = import_text("weighted.yaml", weighted, None).unwrap();
    assert_eq!(m["gateway"]["proxy_read_timeout"], "3s");
    assert_eq!(m["gateway"]["proxy_next_upstream_tries"], 3);
    assert!(w.iter().any(|w| w.contains("weighted share")), "{w:?}");
    // Envoy v2's `hosts` is refused, as Envoy refuses it.
    let e = import_text(
        "v2.yaml",
        "static_resources:\n  clusters:\n  - name: old\n    connect_timeout: 1s\n    hosts: [{socket_address: {address: 10.0.0.1, port_value: 80}}]\n",
        None,
    )
    .unwrap_err();
    assert!(e.contains("v2.yaml:5: `hosts` is Envoy's v2 API"), "{e}");
}

#[test]
fn nginx_stream_upstreams_health_checks_and_lua_import() {
    // A stream-only file: TCP load balancing.
    let stream = "events {}\nstream {\n  proxy_connect_timeout 2s;\n  upstream db {\n    least_conn;\n    server 10.0.0.1:5432 max_fails=2 fail_timeout=5s;\n    server 10.0.0.2:5432;\n  }\n  server {\n    listen 5432;\n    proxy_pass db;\n    proxy_timeout 30s;\n    proxy_next_upstream on;\n  }\n}\n";
    let (m, _) = import_text("stream.conf", stream, None).unwrap();
    assert_eq!(m["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(m["gateway"]["balancer"], "least_conn");
    assert_eq!(m["gateway"]["proxy_connect_timeout"], "2s");
    assert_eq!(m["gateway"]["proxy_read_timeout"], "30s");
    assert_eq!(
        m["gateway"]["proxy_next_upstream"],
        serde_json::json!(["error", "timeout"])
    );
    assert_eq!(m["policy"]["max_fails"], 2);
    // NGINX Plus health_check in the location: the generic prober.
    let plus = "http {\n  upstream app {\n    zone app 64k;\n    server 10.0.0.1:80;\n    server 10.0.0.2:80;\n  }\n  server {\n    location / {\n      proxy_pass http://app;\n      proxy_read_timeout 2s;\n      health_check interval=3s fails=2 passes=4 uri=/healthz;\n    }\n    location /lua {\n      content_by_lua_block {\n        ngx.say(\"}\")\n      }\n    }\n    if ($http_accept = \"application/activity+json\") {\n      return 404;\n    }\n  }\n}\n";
    let (m, w) = import_text("plus.conf", plus, None).unwrap();
    let probe = m["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "active_probe")
        .unwrap_or_else(|| panic!("{m}"));
    assert_eq!(probe["flavor"], "generic");
    assert_eq!(probe["interval"], "3s");
    assert_eq!(probe["fall"], 2);
    assert_eq!(probe["rise"], 4);
    assert_eq!(probe["timeout"], "2s");
    assert!(!w.iter().any(|w| w.contains("not modelled")), "{w:?}");
}

#[test]
fn haproxy_files_haproxy_2_6_refuses_do_not_import() {
    let cases = [
        (
            "defaults\n  contimeout 5s\nbackend b\n  server s 10.0.0.1:80\n",
            "h.cfg:2: HAProxy 2.6 refuses this file: `contimeout` is not supported since HAProxy 2.1; use `timeout connect`",
        ),
        (
            "listen stats :1936\n  mode http\n  stats enable\nbackend b\n  server s 10.0.0.1:80\n",
            "h.cfg:1: HAProxy 2.6 refuses this file: an address on the `listen` line",
        ),
        (
            "backend b\n  reqadd X-Forwarded-Proto:\\ https\n  server s 10.0.0.1:80\n",
            "h.cfg:2: HAProxy 2.6 refuses this file: `reqadd`",
        ),
        (
            "backend b\n  server s 10.0.0.1:80",
            "h.cfg:2: HAProxy 2.6 refuses this file: its last line has no line feed",
        ),
    ];
    for (text, want) in cases {
        let e = import_text("h.cfg", text, None).unwrap_err();
        assert!(e.contains(want), "{text}\n{e}");
    }
    // A stats page is not a target: the one backend is imported.
    let (m, _) = import_text(
        "s.cfg",
        "listen stats\n  bind :1936\n  mode http\n  stats enable\n  stats uri /\nbackend app\n  server a 10.0.0.1:80 check\n",
        None,
    )
    .unwrap();
    assert_eq!(m["nodes"][0]["name"], "a");
    // `timeout queue` is imported, with or without a server `maxconn`
    // (inert without one), and no longer warned about.
    let queue = |params: &str| {
        let text =
            format!("defaults\n  timeout queue 1m\nbackend app\n  server a 10.0.0.1:80 {params}\n");
        let (m, w) = import_text("q.cfg", &text, None).unwrap();
        assert!(!w.iter().any(|w| w.contains("timeout queue")), "{w:?}");
        m["gateway"]["haproxy"]["timeout_queue"].clone()
    };
    assert_eq!(queue("check"), "60s");
    assert_eq!(queue("check maxconn 100"), "60s");
}

#[test]
fn detection_takes_rules_and_header_values_for_what_they_are() {
    // An Istio rule with `loadBalancer`/`subsets` is not Traefik's.
    let dr = "apiVersion: networking.istio.io/v1alpha3\nkind: DestinationRule\nmetadata:\n  name: r\nspec:\n  host: r\n  trafficPolicy:\n    loadBalancer:\n      simple: ROUND_ROBIN\n  subsets:\n  - name: v1\n    labels:\n      version: v1\n";
    assert_eq!(import::detect(dr), Some(Format::Istio));
    // A header value ending in `;` does not make HAProxy nginx.
    let hp = "backend www\n  mode http\n  http-response set-header Strict-Transport-Security max-age=16000000;\\ includeSubDomains;\\ preload;\n  server www-1 10.0.0.1:80\n";
    assert_eq!(import::detect(hp), Some(Format::Haproxy));
}

#[test]
fn istio_rules_sharing_a_host_are_each_a_target_by_name() {
    let text = "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: reviews-strict\nspec:\n  host: reviews\n  trafficPolicy:\n    outlierDetection:\n      consecutive5xxErrors: 1\n---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: reviews-lax\nspec:\n  host: reviews\n  trafficPolicy:\n    outlierDetection:\n      consecutive5xxErrors: 9\n";
    let e = import_text("dr.yaml", text, None).unwrap_err();
    assert!(
        e.contains("reviews-strict") && e.contains("reviews-lax"),
        "{e}"
    );
    let (m, _) = import_text("dr.yaml", text, Some("reviews-lax")).unwrap();
    assert_eq!(m["policy"]["consecutive5xxErrors"], 9);
    let (m, _) = import_text("dr.yaml", text, Some("reviews-strict")).unwrap();
    assert_eq!(m["policy"]["consecutive5xxErrors"], 1);
}
