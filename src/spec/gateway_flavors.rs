//! The request-path settings of the Caddy and Traefik gateways
//! (`gateway.caddy`, `gateway.traefik`); `flavor_checks.rs` checks them
//! against the rest of the model.

use crate::engine::SimDuration;
use crate::policy::traefik::breaker::CircuitBreakerParams;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Caddy's selection policies that hcsim models (`lb_policy`).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CaddyLbPolicy {
    /// Uniformly among the available upstreams, weights ignored (Caddy's default).
    #[default]
    Random,
    /// The next available upstream after the last one picked.
    RoundRobin,
    /// The first available upstream in the order listed.
    First,
    /// `weighted_round_robin` with the nodes' weights: a counter walks the
    /// weights, and the position it lands on indexes the upstreams that are
    /// available, so an unavailable one's turns go to its neighbours.
    WeightedRoundRobin,
}

/// `gateway.caddy`: the `reverse_proxy` handler's load balancing and
/// transport (Caddyfile names).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CaddyGatewaySpec {
    /// `lb_policy`. Default `random`.
    pub lb_policy: CaddyLbPolicy,
    /// `lb_retries`: tries after the first. Default 0.
    pub lb_retries: u32,
    /// `lb_try_duration`: how long to keep trying, 0 = no retries unless
    /// `lb_retries`. Default 0s.
    pub lb_try_duration: SimDuration,
    /// `lb_try_interval`: the wait before each retry. Default 250ms with a
    /// `lb_try_duration`, else 0s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lb_try_interval: Option<SimDuration>,
    /// `transport http { dial_timeout }`. Default 3s.
    pub dial_timeout: SimDuration,
    /// `transport http { response_header_timeout }`. Default: none (a hung
    /// backend holds the request until the client leaves).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_header_timeout: Option<SimDuration>,
}

impl Default for CaddyGatewaySpec {
    fn default() -> Self {
        CaddyGatewaySpec {
            lb_policy: CaddyLbPolicy::Random,
            lb_retries: 0,
            lb_try_duration: SimDuration::ZERO,
            lb_try_interval: None,
            dial_timeout: SimDuration::from_secs(3),
            response_header_timeout: None,
        }
    }
}

impl CaddyGatewaySpec {
    /// `lb_try_interval` in force (`Handler.Provision`: 250ms when a try
    /// duration is set and the interval is 0).
    pub fn try_interval(&self) -> SimDuration {
        match self.lb_try_interval {
            Some(d) if !d.is_zero() => d,
            _ if !self.lb_try_duration.is_zero() => SimDuration::from_millis(250),
            _ => SimDuration::ZERO,
        }
    }
}

/// The retry middleware (`retry`), Traefik's names.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TraefikRetrySpec {
    /// Attempts in all, the first included (at least 1).
    pub attempts: u32,
    /// The first wait of the exponential back-off (it grows to twice this
    /// over the attempts, randomized by ±50 %); 0s or absent: retry at once.
    #[serde(default)]
    pub initial_interval: SimDuration,
    /// Statuses that are retried too (`"500-599"`, `"503"`), for idempotent
    /// methods (Traefik 3.7). Default: none (only failed connections).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<String>,
    /// No retry once this long has passed since the request arrived; 0s: no
    /// limit (Traefik 3.7).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub timeout: SimDuration,
}

impl TraefikRetrySpec {
    /// The `status` ranges, parsed (`types.NewHTTPCodeRanges`).
    pub fn ranges(&self) -> Result<Vec<(u16, u16)>, (usize, String)> {
        self.status
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let bad = || {
                    (
                        i,
                        format!("expected a status or a range such as \"500-599\", found \"{s}\""),
                    )
                };
                let (a, b) = match s.split_once('-') {
                    Some((a, b)) => (a.trim(), b.trim()),
                    None => (s.trim(), s.trim()),
                };
                let a: u16 = a.parse().map_err(|_| bad())?;
                let b: u16 = b.parse().map_err(|_| bad())?;
                if !(100..=599).contains(&a) || !(100..=599).contains(&b) || a > b {
                    return Err(bad());
                }
                Ok((a, b))
            })
            .collect()
    }
}

/// `serversTransport.forwardingTimeouts`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct ForwardingTimeoutsSpec {
    /// Default 30s.
    pub dial_timeout: SimDuration,
    /// Waiting for the response header once the request is written.
    /// Default: none (a hung backend holds the request until the client leaves).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_header_timeout: Option<SimDuration>,
}

impl Default for ForwardingTimeoutsSpec {
    fn default() -> Self {
        ForwardingTimeoutsSpec {
            dial_timeout: SimDuration::from_secs(30),
            response_header_timeout: None,
        }
    }
}

/// `gateway.traefik`: the router's middlewares and the servers transport.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct TraefikGatewaySpec {
    /// The retry middleware; absent: one attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<TraefikRetrySpec>,
    /// The circuit-breaker middleware (outside the retry middleware: it
    /// sees each request once, after its retries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub circuit_breaker: Option<CircuitBreakerParams>,
    pub forwarding_timeouts: ForwardingTimeoutsSpec,
}

fn is_zero(d: &SimDuration) -> bool {
    d.is_zero()
}
