//! A model's gateway as an Envoy cluster (YAML): endpoints (backups at
//! priority 1), `lb_policy`, `connect_timeout`, `outlier_detection`,
//! `health_checks` (with `http_health_check.expected_statuses` and
//! `retriable_statuses`) and `common_lb_config.healthy_panic_threshold`.
//! Retries and timeouts belong to a route, which this does not write.

use super::{Options, Unsupported, ident};
use crate::policy::active_probe::ActiveProbeSpec;
use crate::policy::{PolicySpec, ProbeKind};
use crate::spec::{Balancer, Model};
use serde_json::{Map, Value, json};

/// The cluster as YAML.
pub fn write(model: &Model) -> Result<String, Unsupported> {
    write_with(model, &Options::of(model))
}

/// [`write`] with other addresses.
pub fn write_with(model: &Model, opts: &Options) -> Result<String, Unsupported> {
    let g = &model.gateway;
    super::nginx_like(model)?;
    super::no_check_addr(model, "Envoy")?;
    let name = ident(&model.name);
    let lb = match g.balancer {
        Balancer::RoundRobin => "ROUND_ROBIN",
        Balancer::IpHash | Balancer::Hash(_) | Balancer::Source(_) => {
            return Err(Unsupported(format!(
                "the hash balancers have no Envoy equivalent (RING_HASH and MAGLEV place \
                 hosts otherwise): {:?}",
                g.balancer
            )));
        }
        Balancer::RandomTwo => "LEAST_REQUEST",
        Balancer::LeastConn => {
            return Err(Unsupported(
                "least_conn (a full scan) has no Envoy equivalent; LEAST_REQUEST is random_two"
                    .into(),
            ));
        }
    };
    let mut groups: Vec<Value> = vec![];
    for backup in [false, true] {
        let eps: Vec<Value> = model
            .declared_nodes()
            .iter()
            .zip(&opts.addresses)
            .filter(|(n, _)| n.backup == backup && !n.down)
            .map(|(n, addr)| {
                let (host, port) = addr.rsplit_once(':').unwrap_or((addr, "80"));
                let mut e = json!({"endpoint": {"address": {"socket_address": {
                    "address": host, "port_value": port.parse::<u16>().unwrap_or(80)}}}});
                if n.weight != 1 {
                    e["load_balancing_weight"] = json!(n.weight);
                }
                if let Some(port) = n.check_port {
                    // `Endpoint.HealthCheckConfig.port_value`: the checks' port.
                    e["endpoint"]["health_check_config"] = json!({ "port_value": port });
                }
                e
            })
            .collect();
        if eps.is_empty() {
            continue;
        }
        let mut grp = json!({"lb_endpoints": eps});
        if backup {
            grp["priority"] = json!(1);
        }
        groups.push(grp);
    }
    let mut c = json!({
        "name": name,
        "type": "STATIC",
        "connect_timeout": g.proxy_connect_timeout,
        "lb_policy": lb,
        "load_assignment": {"cluster_name": name, "endpoints": groups},
    });
    let mut panic = g.healthy_panic_threshold;
    for p in &model.policies {
        match p {
            PolicySpec::None => {}
            PolicySpec::OutlierDetection(od) => {
                let mut v = serde_json::to_value(od).map_err(|e| Unsupported(e.to_string()))?;
                let m = v.as_object_mut().expect("a struct serializes to an object");
                let p = m.remove("healthy_panic_threshold").and_then(|p| p.as_f64());
                panic = panic.or(p);
                m.remove("max_ejection_percent_mode");
                c["outlier_detection"] = v;
            }
            PolicySpec::ActiveProbe(ActiveProbeSpec::Envoy(e)) => {
                let mut v = serde_json::to_value(e).map_err(|e| Unsupported(e.to_string()))?;
                let m: &mut Map<String, Value> = v.as_object_mut().expect("an object");
                let probe = m.remove("probe");
                m.remove("threads");
                m.remove("cluster_start");
                let statuses: Vec<(String, Value)> = ["expected_statuses", "retriable_statuses"]
                    .into_iter()
                    .filter_map(|k| m.remove(k).map(|v| (k.to_string(), v)))
                    .collect();
                if probe == Some(json!("tcp")) || e.probe == ProbeKind::Tcp {
                    m.insert("tcp_health_check".into(), json!({}));
                } else {
                    let mut h = json!({"path": "/"});
                    for (k, v) in statuses {
                        h[k] = v;
                    }
                    m.insert("http_health_check".into(), h);
                }
                c["health_checks"] = json!([v]);
            }
            other => {
                return Err(Unsupported(format!(
                    "the policy `{}` has no Envoy cluster equivalent",
                    other.label()
                )));
            }
        }
    }
    c["common_lb_config"] = json!({"healthy_panic_threshold": {"value": panic.unwrap_or(50.0)}});
    if let Some(ss) = &g.slow_start {
        // The config of the cluster's lb_policy (`EdfLoadBalancerBase` reads
        // the one of its own policy); aggression is a RuntimeDouble.
        let key = if lb == "LEAST_REQUEST" {
            "least_request_lb_config"
        } else {
            "round_robin_lb_config"
        };
        let mut cfg = json!({"slow_start_window": ss.window});
        if let Some(a) = ss.aggression {
            cfg["aggression"] =
                json!({"default_value": a, "runtime_key": "upstream.slow_start.aggression"});
        }
        if let Some(m) = ss.min_weight_percent {
            cfg["min_weight_percent"] = json!({ "value": m });
        }
        c[key] = json!({ "slow_start_config": cfg });
    }
    super::pool::envoy_cluster(model, &mut c)?;
    serde_yaml_ng::to_string(&c).map_err(|e| Unsupported(e.to_string()))
}
