//! Istio `DestinationRule` documents: `trafficPolicy.outlierDetection`
//! (hcsim's `istio` policy, which maps Istio's names onto Envoy's as
//! istiod does), `connectionPool.tcp.connectTimeout` and `loadBalancer`.
//! The target is the rule's `host`; the endpoints are not in the rule, so
//! the model gets `--nodes N` (default 3) nodes. The sidecar's route
//! defaults apply (Istio's default retry policy: 2 retries on connect
//! failures and 503, on another host).

use super::yaml::{self, Lines};
use super::{Draft, Format, Options, choose};
use crate::error::Error;
use serde_json::{Map, Value, json};
use std::path::Path;

const OD_FIELDS: [&str; 8] = [
    "consecutive5xxErrors",
    "consecutiveGatewayErrors",
    "splitExternalLocalOriginErrors",
    "consecutiveLocalOriginFailures",
    "interval",
    "baseEjectionTime",
    "maxEjectionPercent",
    "minHealthPercent",
];

pub(super) fn import(path: &Path, text: &str, opts: &Options) -> Result<(Draft, String), Error> {
    let docs = yaml::documents(path, text)?;
    let lines = Lines::new(path, text);
    let (rules, mut names) = yaml::named(&docs, &lines, &["DestinationRule"], "/spec/host", "host");
    // Rules sharing a host are each a target, named by the rule's name.
    let hosts: Vec<String> = names.iter().map(|(h, _)| h.clone()).collect();
    for (k, (n, _)) in names.iter_mut().enumerate() {
        if hosts.iter().filter(|h| **h == hosts[k]).count() > 1
            && let Some(rule) = rules[k]
                .value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
        {
            *n = rule.to_string();
        }
    }
    let i = choose(
        &names,
        &|_| "DestinationRule".into(),
        opts.target.as_deref(),
        Format::Istio,
        path,
    )?;
    let (rule, host) = (rules[i], names[i].0.clone());
    let anchor = rule.line;
    let at = |keys: &[&str]| lines.at(lines.path(anchor, keys));
    let mut d = Draft::default();
    for other in docs
        .iter()
        .filter(|x| x.value.get("kind").and_then(Value::as_str) == Some("VirtualService"))
    {
        d.warn(&lines.at(other.line), "VirtualService documents are not read: the model takes Istio's default route (no timeout, 2 retries)");
    }
    d.default_nodes(
        opts.nodes.unwrap_or(3),
        &names[i].1,
        "a DestinationRule does not list endpoints",
    );
    let root = at(&[]);
    // Istio's default route: retries 2 on connect-failure, refused-stream,
    // unavailable, cancelled and 503, on other hosts; no timeout.
    d.gateway(
        "proxy_next_upstream",
        json!(["error", "http_503", "non_idempotent"]),
        &root,
    );
    d.gateway("proxy_next_upstream_tries", json!(3), &root);
    d.gateway("proxy_connect_timeout", json!("10s"), &root);
    d.notes.push("Route settings are Istio's defaults (2 retries on connect failures and 503, no timeout: hcsim's 60s proxy_read_timeout stands in).".into());
    unknown_fields(&rule.value, &at, &mut d);
    let tp = rule
        .value
        .pointer("/spec/trafficPolicy")
        .cloned()
        .unwrap_or(Value::Null);
    let lb = tp.pointer("/loadBalancer/simple").and_then(Value::as_str);
    match lb {
        None | Some("LEAST_REQUEST" | "LEAST_CONN") => {
            let a = if lb.is_some() {
                at(&["loadBalancer", "simple"])
            } else {
                root.clone()
            };
            d.gateway("balancer", json!("random_two"), &a);
        }
        Some("ROUND_ROBIN") => d.gateway(
            "balancer",
            json!("round_robin"),
            &at(&["loadBalancer", "simple"]),
        ),
        Some(other) => d.warn(
            &at(&["loadBalancer", "simple"]),
            format!("loadBalancer {other} is not modelled: the model keeps round_robin"),
        ),
    }
    if let Some(lbm) = tp.get("loadBalancer").and_then(Value::as_object) {
        warmup(lbm, lb, &at, &mut d)?;
        for k in lbm
            .keys()
            .filter(|k| !matches!(k.as_str(), "simple" | "warmup" | "warmupDurationSecs"))
        {
            d.warn(
                &at(&["loadBalancer", k]),
                format!("loadBalancer.{k} is not modelled"),
            );
        }
    }
    if let Some(t) = tp.pointer("/connectionPool/tcp/connectTimeout") {
        let a = at(&["connectionPool", "tcp", "connectTimeout"]);
        let t = yaml::duration(t).map_err(|e| a.error(format!("connectTimeout: {e}")))?;
        d.gateway("proxy_connect_timeout", json!(t), &a);
    }
    for (section, inner) in [
        (
            "tcp",
            vec!["tcpKeepalive", "maxConnectionDuration", "idleTimeout"],
        ),
        (
            "http",
            vec![
                "h2UpgradePolicy",
                "useClientProtocol",
                "maxConcurrentStreams",
            ],
        ),
    ] {
        for k in inner {
            if tp
                .pointer(&format!("/connectionPool/{section}/{k}"))
                .is_some()
            {
                d.warn(
                    &at(&["connectionPool", section, k]),
                    format!("connectionPool.{section}.{k} is not modelled"),
                );
            }
        }
    }
    super::pool::istio(&tp, &at, &mut d)?;
    super::pool::envoy_retry_on_reset(&mut d);
    outlier_detection(&tp, &at, &root, &mut d)?;
    for k in ["subsets", "trafficPolicy/portLevelSettings"] {
        if rule.value.pointer(&format!("/spec/{k}")).is_some() {
            let last = k.rsplit('/').next().unwrap_or(k);
            d.warn(
                &at(&[last]),
                format!("{last} are not imported: the model follows the top-level trafficPolicy"),
            );
        }
    }
    Ok((d, host))
}

/// A DestinationRule's `spec` fields (networking.istio.io/v1).
const SPEC_FIELDS: [&str; 5] = [
    "host",
    "trafficPolicy",
    "subsets",
    "exportTo",
    "workloadSelector",
];
/// `trafficPolicy`'s fields.
const TRAFFIC_POLICY_FIELDS: [&str; 7] = [
    "loadBalancer",
    "connectionPool",
    "outlierDetection",
    "portLevelSettings",
    "tls",
    "tunnel",
    "proxyProtocol",
];

/// Warns of a field `spec` or `trafficPolicy` does not have, with the
/// field it may be a misspelling of: Istio would refuse the rule, and the
/// setting is not read.
fn unknown_fields(rule: &Value, at: &dyn Fn(&[&str]) -> crate::config::Loc, d: &mut Draft) {
    for (pointer, parent, known) in [
        ("/spec", "spec", &SPEC_FIELDS[..]),
        (
            "/spec/trafficPolicy",
            "trafficPolicy",
            &TRAFFIC_POLICY_FIELDS[..],
        ),
    ] {
        let Some(m) = rule.pointer(pointer).and_then(Value::as_object) else {
            continue;
        };
        for k in m.keys().filter(|k| !known.contains(&k.as_str())) {
            let hint = match crate::diagnostics::suggest(k, known.iter().copied()) {
                Some(s) => format!(" (did you mean `{s}`?)"),
                None => String::new(),
            };
            let shown = crate::diagnostics::shorten(k);
            d.warn(
                &at(&[parent, k]),
                format!(
                    "`{parent}.{shown}` is not a DestinationRule field{hint}: Istio's validation \
                     refuses it, and it is not imported"
                ),
            );
        }
    }
}

/// `loadBalancer.warmup {duration, minimumPercent, aggression}` or the
/// older `warmupDurationSecs` → `gateway.slow_start`, as istiod writes
/// Envoy's `slow_start_config` (`setWarmup`, `setSlowStartConfig` in
/// `pilot/pkg/networking/core/cluster_traffic_policy.go`: `warmup` first,
/// aggression 1 and minimum 10 % by default) for `ROUND_ROBIN`,
/// `LEAST_REQUEST` and `LEAST_CONN` (and the default) only.
fn warmup(
    lbm: &serde_json::Map<String, Value>,
    simple: Option<&str>,
    at: &dyn Fn(&[&str]) -> crate::config::Loc,
    d: &mut Draft,
) -> Result<(), Error> {
    let (key, spec) = match (lbm.get("warmup"), lbm.get("warmupDurationSecs")) {
        (Some(w), _) => {
            let a = at(&["loadBalancer", "warmup"]);
            let Some(dur) = w.get("duration") else {
                return Err(a.error("loadBalancer.warmup: expected a duration"));
            };
            let dur = yaml::duration(dur)
                .map_err(|e| a.error(format!("loadBalancer.warmup.duration: {e}")))?;
            let mut spec = json!({ "window": dur });
            for (k, field) in [
                ("aggression", "aggression"),
                ("minimumPercent", "min_weight_percent"),
            ] {
                if let Some(v) = w.get(k) {
                    let x = v.as_f64().ok_or_else(|| {
                        a.error(format!("loadBalancer.warmup.{k}: expected a number"))
                    })?;
                    spec[field] = json!(x);
                }
            }
            ("warmup", spec)
        }
        (None, Some(v)) => {
            let a = at(&["loadBalancer", "warmupDurationSecs"]);
            let dur = yaml::duration(v)
                .map_err(|e| a.error(format!("loadBalancer.warmupDurationSecs: {e}")))?;
            ("warmupDurationSecs", json!({ "window": dur }))
        }
        (None, None) => return Ok(()),
    };
    let a = at(&["loadBalancer", key]);
    if !matches!(
        simple,
        None | Some("ROUND_ROBIN" | "LEAST_REQUEST" | "LEAST_CONN")
    ) {
        d.warn(
            &a,
            format!(
                "loadBalancer.{key} is inert with {} (istiod writes no slow start)",
                simple.unwrap_or("")
            ),
        );
        return Ok(());
    }
    d.gateway("slow_start", spec, &a);
    Ok(())
}

/// `trafficPolicy.outlierDetection` → the `istio` policy (`none` without it).
fn outlier_detection(
    tp: &Value,
    at: &dyn Fn(&[&str]) -> crate::config::Loc,
    root: &crate::config::Loc,
    d: &mut Draft,
) -> Result<(), Error> {
    let root = root.clone();
    match tp.get("outlierDetection").and_then(Value::as_object) {
        Some(od) => {
            let oat = at(&["outlierDetection"]);
            let mut p = Map::new();
            p.insert("kind".into(), json!("istio"));
            for (k, v) in od {
                let kat = at(&["outlierDetection", k]);
                match k.as_str() {
                    "consecutiveErrors" => d.warn(&kat, "consecutiveErrors is ignored by istiod since Istio 1.7: Envoy's consecutive_5xx default (5) applies"),
                    "interval" | "baseEjectionTime" => {
                        let t = yaml::duration(v).map_err(|e| kat.error(format!("outlierDetection.{k}: {e}")))?;
                        p.insert(k.clone(), json!(t));
                    }
                    "splitExternalLocalOriginErrors" => {
                        let b = v.as_bool().ok_or_else(|| kat.error(format!("outlierDetection.{k}: expected true or false, found {v}")))?;
                        p.insert(k.clone(), json!(b));
                    }
                    k if OD_FIELDS.contains(&k) => {
                        let n = yaml::uint(v).ok_or_else(|| kat.error(format!("outlierDetection.{k}: expected a whole number, found {v}")))?;
                        p.insert(k.into(), json!(n));
                    }
                    _ => d.warn(&kat, format!("outlierDetection.{k} is not modelled")),
                }
            }
            d.policy(Value::Object(p), &oat);
        }
        None => d.policy(json!({"kind": "none"}), &root),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Options, Workload, read};
    use serde_json::json;
    use std::path::PathBuf;

    fn import(text: &str) -> super::super::Imported {
        let dir = std::env::temp_dir().join(format!("hcsim-istio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p: PathBuf = dir.join("dr.yaml");
        std::fs::write(&p, text).unwrap();
        read(&p, &Options::default(), &Workload::default()).unwrap()
    }

    #[test]
    fn a_destination_rule_maps_onto_the_istio_policy() {
        let im = import(
            "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: reviews\nspec:\n  host: reviews.prod.svc.cluster.local\n  trafficPolicy:\n    loadBalancer:\n      simple: ROUND_ROBIN\n    connectionPool:\n      tcp:\n        maxConnections: 100\n        connectTimeout: 30ms\n    outlierDetection:\n      consecutive5xxErrors: 7\n      interval: 5m\n      baseEjectionTime: 15m\n      minHealthPercent: 30\n",
        );
        let m = im.model().unwrap().effective_spec();
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["policy"]["kind"], "istio");
        assert_eq!(v["policy"]["consecutive5xxErrors"], 7);
        assert_eq!(v["policy"]["interval"], "300s");
        assert_eq!(v["policy"]["baseEjectionTime"], "900s");
        assert_eq!(v["policy"]["minHealthPercent"], 30);
        assert_eq!(v["gateway"]["balancer"], "round_robin");
        assert_eq!(v["gateway"]["proxy_connect_timeout"], "30ms");
        assert_eq!(v["nodes"].as_array().unwrap().len(), 3);
        // connectionPool: Envoy's circuit breakers, istiod's 2³²−1 for the rest.
        assert_eq!(
            v["gateway"]["pool"]["circuit_breakers"],
            json!({"max_connections": 100, "max_pending_requests": 4294967295u64,
                   "max_requests": 4294967295u64, "max_retries": 4294967295u64})
        );
        assert_eq!(v["gateway"]["pool"]["retry_on_reset"], false);
        let w: Vec<String> = im.warnings.iter().map(|w| w.to_string()).collect();
        assert!(!w.iter().any(|w| w.contains("maxConnections")), "{w:?}");
        assert!(
            im.origins.iter().any(
                |(f, at)| f == "gateway.pool.circuit_breakers.max_connections" && at.line == 12
            ),
            "{:?}",
            im.origins
        );
    }
}
