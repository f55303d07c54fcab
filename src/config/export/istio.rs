//! A model's gateway as an Istio `DestinationRule`: `loadBalancer`,
//! `connectionPool.tcp.connectTimeout` and, from the `istio` policy,
//! `outlierDetection`. The nodes are the service's endpoints, which a
//! DestinationRule does not list.

use super::{Unsupported, ident};
use crate::policy::PolicySpec;
use crate::spec::{Balancer, Model};
use serde_json::{Value, json};

/// The DestinationRule as YAML.
pub fn write(model: &Model) -> Result<String, Unsupported> {
    let g = &model.gateway;
    super::nginx_like(model)?;
    super::no_check_port(model, "Istio")?;
    let simple = match g.balancer {
        Balancer::RoundRobin => "ROUND_ROBIN",
        Balancer::IpHash | Balancer::Hash(_) | Balancer::Source(_) => {
            return Err(Unsupported(format!(
                "the hash balancers have no Istio equivalent (RING_HASH and MAGLEV place \
                 hosts otherwise): {:?}",
                g.balancer
            )));
        }
        Balancer::RandomTwo => "LEAST_REQUEST",
        Balancer::LeastConn => {
            return Err(Unsupported(
                "least_conn (a full scan) has no Istio equivalent; LEAST_REQUEST is random_two"
                    .into(),
            ));
        }
    };
    let mut tp = json!({
        "loadBalancer": {"simple": simple},
        "connectionPool": {"tcp": {"connectTimeout": g.proxy_connect_timeout}},
    });
    if let Some(ss) = &g.slow_start {
        // `warmup`, which istiod turns into Envoy's slow_start_config (`setWarmup`).
        let mut w = json!({ "duration": ss.window });
        if let Some(a) = ss.aggression {
            w["aggression"] = json!(a);
        }
        if let Some(m) = ss.min_weight_percent {
            w["minimumPercent"] = json!(m);
        }
        tp["loadBalancer"]["warmup"] = w;
    }
    for p in &model.policies {
        match p {
            PolicySpec::None => {}
            PolicySpec::Istio(i) => {
                let mut v = serde_json::to_value(i).map_err(|e| Unsupported(e.to_string()))?;
                if let Value::Object(m) = &mut v {
                    m.remove("max_ejection_percent_mode");
                    m.remove("always_eject_one_host");
                    m.remove("consecutiveErrors");
                    m.remove("send_unhealthy_endpoints");
                }
                tp["outlierDetection"] = v;
            }
            other => {
                return Err(Unsupported(format!(
                    "the policy `{}` has no DestinationRule equivalent (it has the `istio` \
                     policy's outlierDetection)",
                    other.label()
                )));
            }
        }
    }
    super::pool::istio(model, &mut tp["connectionPool"])?;
    let name = ident(&model.name);
    let dr = json!({
        "apiVersion": "networking.istio.io/v1",
        "kind": "DestinationRule",
        "metadata": {"name": name},
        "spec": {"host": name, "trafficPolicy": tp},
    });
    serde_yaml_ng::to_string(&dr).map_err(|e| Unsupported(e.to_string()))
}
