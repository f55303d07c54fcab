//! `hcsim import` of hostile configs (issue 35, items 4–7), through the
//! binary: every one either imports in time linear in its size or exits 2
//! with `file:line` and what was expected, never a panic or a stack
//! overflow. The big cases print how long they took (`--nocapture`); no
//! test asserts a time.

use crate::robust::{hcsim_in, ok, user_error};
use crate::tmp;
use serde_json::Value;
use std::fmt::Write as _;
use std::fs;
use std::time::Instant;

/// `hcsim import FILE [extra]` in `dir`, and how long it took.
fn import(dir: &std::path::Path, file: &str, extra: &[&str]) -> (std::process::Output, f64) {
    let mut args = vec!["import", file];
    args.extend_from_slice(extra);
    let t = Instant::now();
    let out = hcsim_in(dir, &args);
    let secs = t.elapsed().as_secs_f64();
    eprintln!("hcsim import {file}: {secs:.2}s");
    (out, secs)
}

fn model(out: std::process::Output) -> Value {
    serde_json::from_slice(&ok(out).stdout).unwrap()
}

#[test]
fn nginx_100000_nested_blocks_are_refused_not_overflowed() {
    let dir = tmp("imp-deep-nginx");
    let mut text = String::from("upstream u { server 10.0.0.1; }\n");
    for _ in 0..100_000 {
        text.push_str("location / {\n");
    }
    fs::write(dir.join("deep.conf"), &text).unwrap();
    let err = user_error(import(&dir, "deep.conf", &[]).0);
    assert!(
        err.contains("deep.conf:102: blocks nested more than 100 deep"),
        "{err}"
    );
}

#[test]
fn include_fan_out_is_bounded_in_files_read() {
    // 12 levels of 4 files each including the 4 of the next level: 4¹² reads.
    let dir = tmp("imp-fanout");
    for level in 0..12 {
        for k in 0..4 {
            let body = if level == 11 {
                "# leaf\n".to_string()
            } else {
                format!("include l{}_*.conf;\n", level + 1)
            };
            fs::write(dir.join(format!("l{level}_{k}.conf")), body).unwrap();
        }
    }
    fs::write(
        dir.join("nginx.conf"),
        "http {\n  upstream u { server 10.0.0.1; }\n  include l0_*.conf;\n}\n",
    )
    .unwrap();
    let (out, secs) = import(&dir, "nginx.conf", &[]);
    let err = user_error(out);
    assert!(err.contains("includes read more than 10000 files"), "{err}");
    assert!(secs < 60.0, "{secs}");
}

#[test]
fn an_upstream_of_50000_servers_imports_linearly() {
    let dir = tmp("imp-50k-nginx");
    let mut text = String::from("upstream big {\n");
    for i in 0..50_000u32 {
        // Every tenth shares an address with the one before it.
        let k = if i % 10 == 9 { i - 1 } else { i };
        writeln!(
            text,
            "  server 10.{}.{}.{}:80;",
            k >> 16,
            (k >> 8) & 255,
            k & 255
        )
        .unwrap();
    }
    text.push_str("}\n");
    fs::write(dir.join("big.conf"), &text).unwrap();
    // 50,000 nodes fit the model (at most 20,000): the import itself must
    // get through all of them, then the node cap speaks.
    let err = user_error(import(&dir, "big.conf", &[]).0);
    assert!(err.contains("20000"), "{err}");
    // 10,000 servers import (64 workers each fit the model), with the
    // shared addresses numbered.
    let mut text = String::from("upstream big {\n");
    for i in 0..10_000u32 {
        let k = if i % 10 == 9 { i - 1 } else { i };
        writeln!(
            text,
            "  server 10.{}.{}.{}:80;",
            k >> 16,
            (k >> 8) & 255,
            k & 255
        )
        .unwrap();
    }
    text.push_str("}\n");
    fs::write(dir.join("ok.conf"), &text).unwrap();
    let m = model(import(&dir, "ok.conf", &[]).0);
    let nodes = m["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 10_000);
    assert_eq!(nodes[9]["name"], "10.0.0.8:80#2");
}

#[test]
fn a_megabyte_host_name_is_read_linearly_and_quoted_short() {
    let dir = tmp("imp-1mb-name");
    let host = "h".repeat(1 << 20);
    fs::write(
        dir.join("n.conf"),
        format!("upstream u {{\n  server {host}:80 bogus=1;\n}}\n"),
    )
    .unwrap();
    let err = user_error(import(&dir, "n.conf", &[]).0);
    assert!(err.contains("n.conf:2:"), "{err}");
    assert!(err.len() < 2_500, "{} bytes", err.len());
    // A megabyte word with `${`: the variable flag is kept, not searched.
    fs::write(
        dir.join("v.conf"),
        format!("upstream u {{\n  server 10.0.0.1;\n}}\nset $a ${{b}}{host};\n"),
    )
    .unwrap();
    ok(import(&dir, "v.conf", &[]).0);
}

/// An Envoy cluster of `n` endpoints, pretty-printed JSON or YAML.
fn envoy_cluster(n: u32, json: bool) -> String {
    let eps: Vec<Value> = (0..n)
        .map(|i| {
            serde_json::json!({"endpoint": {"address": {"socket_address": {
                "address": format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255),
                "port_value": 8080}}}})
        })
        .collect();
    let doc = serde_json::json!({"static_resources": {"clusters": [{
        "name": "big", "type": "STATIC", "connect_timeout": "1s",
        "load_assignment": {"cluster_name": "big", "endpoints": [{"lb_endpoints": eps}]}}]}});
    if json {
        serde_json::to_string_pretty(&doc).unwrap()
    } else {
        serde_yaml_like(&doc)
    }
}

/// Block YAML of the cluster, written by hand (each endpoint a flow map).
fn serde_yaml_like(doc: &Value) -> String {
    let c = &doc["static_resources"]["clusters"][0];
    let mut s = String::from(
        "static_resources:\n  clusters:\n  - name: big\n    type: STATIC\n    connect_timeout: 1s\n    load_assignment:\n      cluster_name: big\n      endpoints:\n      - lb_endpoints:\n",
    );
    for e in c["load_assignment"]["endpoints"][0]["lb_endpoints"]
        .as_array()
        .unwrap()
    {
        let sa = &e["endpoint"]["address"]["socket_address"];
        writeln!(
            s,
            "        - endpoint:\n            address:\n              socket_address: {{ address: {}, port_value: 8080 }}",
            sa["address"].as_str().unwrap()
        )
        .unwrap();
    }
    s
}

#[test]
fn envoy_50000_endpoints_are_found_in_one_pass() {
    let dir = tmp("imp-50k-envoy");
    for (file, json) in [("big.json", true), ("big.yaml", false)] {
        fs::write(dir.join(file), envoy_cluster(50_000, json)).unwrap();
        let err = user_error(import(&dir, file, &[]).0);
        assert!(err.contains("at most 20000 nodes"), "{file}: {err}");
    }
    // 10,000 endpoints import, each node from its own line.
    fs::write(dir.join("ok.json"), envoy_cluster(10_000, true)).unwrap();
    let (out, _) = import(&dir, "ok.json", &[]);
    let m = model(out);
    assert_eq!(m["nodes"].as_array().unwrap().len(), 10_000);
    assert_eq!(m["nodes"][9_999]["name"], "10.0.39.15:8080");
    let desc = m["description"].as_str().unwrap();
    // The last endpoint's address is on line 9 + 7 × 9,999 + … of the pretty JSON:
    // its own line, not the first endpoint's.
    let last = "nodes[9999] ← ok.json:";
    let at: usize = desc[desc.find(last).unwrap() + last.len()..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(at > 100_000, "{at}");
}

#[test]
fn a_100000_deep_yaml_flow_mapping_is_refused_before_the_yaml_library() {
    let dir = tmp("imp-deep-yaml");
    let text = format!(
        "static_resources:\n  clusters: {}{}\n",
        "{a: ".repeat(100_000),
        "}".repeat(100_000)
    );
    fs::write(dir.join("deep.yaml"), &text).unwrap();
    let err = user_error(import(&dir, "deep.yaml", &["--format", "envoy"]).0);
    assert!(
        err.contains(
            "deep.yaml:2: not valid YAML here: collections nested more than 100 levels deep"
        ),
        "{err}"
    );
    // Block nesting (`- - - …` on one line) stops at the loader's 128 levels.
    let text = format!("kind: Deployment\nx: {}1\n", "- ".repeat(100_000));
    fs::write(dir.join("dash.yaml"), &text).unwrap();
    let err = user_error(import(&dir, "dash.yaml", &["--format", "kubernetes"]).0);
    assert!(err.contains("dash.yaml:"), "{err}");
    assert!(err.len() < 500, "{err}");
}

#[test]
fn seconds_that_would_wrap_are_refused_with_what_was_written() {
    let dir = tmp("imp-wrap");
    fs::write(
        dir.join("k.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: w\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: c\n        readinessProbe:\n          httpGet: {path: /, port: 80}\n          periodSeconds: 288230376151711749\n",
    )
    .unwrap();
    let err = user_error(import(&dir, "k.yaml", &[]).0);
    assert!(
        err.contains("k.yaml:13: readinessProbe.periodSeconds: 288230376151711749:"),
        "{err}"
    );
    assert!(err.contains("288230376151711749s"), "{err}");
    fs::write(
        dir.join("e.yaml"),
        "clusters:\n- name: c\n  connect_timeout: {seconds: 288230376151711745}\n  load_assignment:\n    endpoints:\n    - lb_endpoints:\n      - endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 80}}}\n",
    )
    .unwrap();
    let err = user_error(import(&dir, "e.yaml", &[]).0);
    assert!(err.contains("e.yaml:3: connect_timeout:"), "{err}");
    assert!(err.contains("288230376151711745s"), "{err}");
}

#[test]
fn haproxy_defaults_chains_apply_every_level_and_a_cycle_is_an_error() {
    let dir = tmp("imp-haproxy-from");
    fs::write(
        dir.join("h.cfg"),
        "defaults base\n  timeout connect 7s\n  retries 5\ndefaults mid from base\n  timeout server 9s\nbackend app from mid\n  server a 10.0.0.1:80\n",
    )
    .unwrap();
    let m = model(import(&dir, "h.cfg", &[]).0);
    let h = &m["gateway"]["haproxy"];
    assert_eq!(h["timeout_connect"], "7s", "{m}");
    assert_eq!(h["timeout_server"], "9s", "{m}");
    assert_eq!(h["retries"], 5, "{m}");
    fs::write(
        dir.join("c.cfg"),
        "defaults a from b\n  retries 1\ndefaults b from a\n  retries 2\nbackend app from a\n  server s 10.0.0.1:80\n",
    )
    .unwrap();
    let err = user_error(import(&dir, "c.cfg", &[]).0);
    assert!(
        err.contains("c.cfg:1: `from b` names the defaults section of line 3, after this one"),
        "{err}"
    );
}

#[test]
fn yaml_duplicate_keys_are_errors_at_the_second_line() {
    let dir = tmp("imp-dup");
    fs::write(
        dir.join("d.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: w\nspec:\n  replicas: 4\nkind: Pod\n",
    )
    .unwrap();
    let err = user_error(import(&dir, "d.yaml", &[]).0);
    assert!(
        err.contains("d.yaml:7: the key `kind` is written twice in one mapping (first at line 2)"),
        "{err}"
    );
}

#[test]
fn envoy_values_of_the_wrong_type_are_errors() {
    let dir = tmp("imp-envoy-types");
    let ep = "      - endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 80}}}\n";
    let cases = [
        (
            format!("clusters:\n- name: c\n  lb_policy: 7\n  load_assignment:\n    endpoints:\n    - lb_endpoints:\n{ep}"),
            "t.yaml:3: lb_policy: expected a name",
        ),
        (
            "clusters:\n- name: c\n  load_assignment:\n    endpoints:\n    - lb_endpoints:\n      - endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: \"eighty\"}}}\n".into(),
            "t.yaml:6: socket_address.port_value: expected a port",
        ),
        (
            "clusters:\n- name: c\n  load_assignment:\n    endpoints: \"x\"\n".into(),
            "t.yaml:4: load_assignment.endpoints: expected a list",
        ),
        (
            format!("clusters:\n- name: c\n  health_checks: {{}}\n  load_assignment:\n    endpoints:\n    - lb_endpoints:\n{ep}"),
            "t.yaml:3: health_checks: expected a list",
        ),
    ];
    for (text, want) in cases {
        fs::write(dir.join("t.yaml"), &text).unwrap();
        let err = user_error(import(&dir, "t.yaml", &[]).0);
        assert!(err.contains(want), "{text}\n{err}");
    }
}

#[test]
fn a_misspelled_istio_field_is_named_with_a_suggestion() {
    let dir = tmp("imp-istio-typo");
    fs::write(
        dir.join("dr.yaml"),
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: r\nspec:\n  host: r.svc\n  trafficPolicyy:\n    outlierDetection:\n      consecutive5xxErrors: 3\n",
    )
    .unwrap();
    let (out, _) = import(&dir, "dr.yaml", &[]);
    let err = String::from_utf8_lossy(&ok(out).stderr).into_owned();
    assert!(
        err.contains("dr.yaml:7: `spec.trafficPolicyy` is not a DestinationRule field (did you mean `trafficPolicy`?)"),
        "{err}"
    );
}

#[test]
fn encodings_stream_blocks_lists_and_non_finite_numbers_get_precise_messages() {
    let dir = tmp("imp-messages");
    // A byte-order mark before a comment does not hide the upstream.
    fs::write(
        dir.join("bom.conf"),
        "\u{feff}# comment\nupstream u {\n  server 10.0.0.1;\n}\n",
    )
    .unwrap();
    ok(import(&dir, "bom.conf", &[]).0);
    // UTF-16, with and without its mark: said, no NUL echoed.
    let text = "upstream u {\n  server 10.0.0.1;\n}\n";
    let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    for (name, bytes) in [
        ("bom16.conf", [vec![0xFF, 0xFE], le.clone()].concat()),
        ("plain16.conf", le),
    ] {
        fs::write(dir.join(name), bytes).unwrap();
        let err = user_error(import(&dir, name, &["--format", "nginx"]).0);
        assert!(
            err.contains(&format!("{name}:1: the file is UTF-16")),
            "{err}"
        );
        assert!(!err.contains('\0'), "{err:?}");
    }
    // A stream-only nginx file.
    fs::write(
        dir.join("stream.conf"),
        "events {}\nstream {\n  upstream db {\n    server 10.0.0.1:5432;\n  }\n  server {\n    listen 5432;\n    proxy_pass db;\n  }\n}\n",
    )
    .unwrap();
    let out = import(&dir, "stream.conf", &[]).0;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("no upstream in this file"), "{text}");
    // A Kubernetes `kind: List`: its items are the workloads.
    fs::write(
        dir.join("list.yaml"),
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: a\n  spec:\n    replicas: 2\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: b\n  spec:\n    replicas: 3\n",
    )
    .unwrap();
    let m = model(import(&dir, "list.yaml", &["--target", "b"]).0);
    assert_eq!(m["nodes"].as_array().unwrap().len(), 3);
    assert!(
        m["description"].as_str().unwrap().contains("list.yaml:15"),
        "{m}"
    );
    // `.nan` and `.inf` say what they are.
    for v in [".nan", ".inf"] {
        fs::write(
            dir.join("n.yaml"),
            format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: w\nspec:\n  replicas: {v}\n"),
        )
        .unwrap();
        let err = user_error(import(&dir, "n.yaml", &[]).0);
        assert!(
            err.contains("n.yaml:6: not valid YAML: spec.replicas: "),
            "{err}"
        );
        assert!(
            err.contains(&format!("found {v}, which is not a number")),
            "{err}"
        );
        assert!(!err.contains("null"), "{err}");
    }
}

#[test]
fn the_target_warning_points_at_the_chosen_upstream() {
    let dir = tmp("imp-target-line");
    fs::write(
        dir.join("t.conf"),
        "upstream a {\n  server 10.0.0.1;\n}\nupstream b {\n  server 10.0.0.2;\n}\n",
    )
    .unwrap();
    let (out, _) = import(&dir, "t.conf", &["--target", "b"]);
    let err = String::from_utf8_lossy(&ok(out).stderr).into_owned();
    assert!(
        err.contains("t.conf:4: no `proxy_pass http://b` found"),
        "{err}"
    );
    assert!(!err.contains("t.conf:1:"), "{err}");
}

#[test]
fn a_list_of_5000_targets_is_cut_short() {
    let dir = tmp("imp-many-targets");
    let mut text = String::new();
    for i in 0..5_000 {
        writeln!(text, "upstream u{i} {{ server 10.0.0.1; }}").unwrap();
    }
    fs::write(dir.join("m.conf"), &text).unwrap();
    let err = user_error(import(&dir, "m.conf", &[]).0);
    assert!(err.contains("… and 4980 more"), "{err}");
    assert!(err.len() < 2_000, "{} bytes", err.len());
}

#[test]
fn durations_that_would_saturate_are_refused_in_every_importer() {
    let dir = tmp("imp-wrap-more");
    let cases = [
        (
            "t.yaml",
            "http:\n  services:\n    app:\n      loadBalancer:\n        servers:\n        - url: http://10.0.0.1:80\n        healthCheck:\n          path: /health\n          interval: 1e300\n",
            "t.yaml:9: interval:",
        ),
        (
            "Caddyfile",
            ":80 {\n  reverse_proxy 10.0.0.1:80 10.0.0.2:80 {\n    lb_try_duration 99999999999999999d\n  }\n}\n",
            "Caddyfile:3: bad lb_try_duration value '99999999999999999d'",
        ),
        (
            "k.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: w\nspec:\n  replicas: 2\n  template:\n    spec:\n      terminationGracePeriodSeconds: 288230376151711749\n      containers:\n      - name: c\n        image: x\n",
            "k.yaml:9: terminationGracePeriodSeconds:",
        ),
    ];
    for (file, text, says) in cases {
        fs::write(dir.join(file), text).unwrap();
        let err = user_error(import(&dir, file, &[]).0);
        assert!(
            err.contains(says) && err.contains("too large"),
            "{file}: {err}"
        );
    }
}
