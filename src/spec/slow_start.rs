//! `gateway.slow_start`: a node that returns to service takes a share of
//! the traffic that ramps up over a window instead of its full weight at
//! once. Whose ramp follows from the gateway's flavour: HAProxy's server
//! `slowstart` with `flavor: haproxy`, Envoy's `slow_start_config` (and
//! Istio's `warmupDurationSecs`/`warmup`, which istiod turns into it) with
//! the nginx pipeline, as the Envoy and Istio imports write it.

use crate::engine::SimDuration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A node's weight ramps up after it returns (`gateway.slow_start`).
///
/// With `flavor: haproxy`, HAProxy 2.6's `slowstart <window>`
/// (`server_recalc_eweight` in `src/server.c`): a server marked UP by its
/// checks after being DOWN starts at 1/16 of its weight and steps up each
/// second (`server_warmup`), not at start-up. With the nginx pipeline,
/// Envoy's `slow_start_config` (`EdfLoadBalancerBase::applySlowStartFactor`):
/// every host at start-up and a host that passes an active health check
/// after failing take `weight × max(t^(1/aggression), min_weight_percent)`,
/// `t` the share of the window elapsed; an outlier ejection's end does not
/// restart it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlowStartSpec {
    /// The ramp's length: HAProxy's `slowstart` (whole seconds, rounded
    /// up), Envoy's `slow_start_window`.
    pub window: SimDuration,
    /// Envoy's `aggression`: the ramp is `t^(1/aggression)`. Default 1.0
    /// (linear). Not with `flavor: haproxy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggression: Option<f64>,
    /// Envoy's `min_weight_percent`: the least share of its weight a host
    /// in slow start takes. Default 10. Not with `flavor: haproxy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_weight_percent: Option<f64>,
}

impl SlowStartSpec {
    /// `aggression` in force (Envoy's default 1.0).
    pub fn aggression(&self) -> f64 {
        self.aggression.unwrap_or(1.0)
    }

    /// `min_weight_percent` in force (Envoy's default 10).
    pub fn min_weight_percent(&self) -> f64 {
        self.min_weight_percent.unwrap_or(10.0)
    }

    /// The checks serde cannot make: `Err((field under gateway.slow_start, reason))`.
    pub(crate) fn check(
        &self,
        flavor: super::GatewayFlavor,
        balancer: &super::Balancer,
    ) -> Result<(), (String, String)> {
        use super::GatewayFlavor;
        let bad = |f: &str, r: String| Err((f.to_string(), r));
        if self.window.is_zero() {
            return bad("window", "must be positive".into());
        }
        match flavor {
            GatewayFlavor::Haproxy => {
                for (f, v) in [
                    ("aggression", self.aggression),
                    ("min_weight_percent", self.min_weight_percent),
                ] {
                    if v.is_some() {
                        return bad(
                            f,
                            "is Envoy's: HAProxy's `slowstart` has only a window".into(),
                        );
                    }
                }
            }
            GatewayFlavor::Nginx => {}
            other => {
                return bad(
                    "window",
                    format!(
                        "slow start is HAProxy's (`flavor: haproxy`) or Envoy's (the nginx \
                         pipeline); the {} path has none",
                        format!("{other:?}").to_lowercase()
                    ),
                );
            }
        }
        if balancer.is_hash() {
            return bad(
                "window",
                "slow start needs round_robin, least_conn or random_two: the hash \
                 balancers keep their weights"
                    .into(),
            );
        }
        let a = self.aggression();
        if !(a.is_finite() && a > 0.0) {
            return bad("aggression", format!("must be positive, found {a}"));
        }
        let m = self.min_weight_percent();
        if !(0.0..=100.0).contains(&m) {
            return bad(
                "min_weight_percent",
                format!("is a percentage (0..=100), found {m}"),
            );
        }
        Ok(())
    }
}
