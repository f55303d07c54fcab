//! The request-path settings of the Kong and Linkerd gateways
//! (`gateway.kong`, `gateway.linkerd`); `flavour_checks.rs` checks them.

use crate::engine::SimDuration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Kong Service and its upstream, as far as they decide a request's fate.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct KongSpec {
    /// The Service's `retries`: more tries after a failed connect, a reset
    /// or a timeout (`set_more_tries` on nginx's `proxy_next_upstream error
    /// timeout`; a status is never retried). Default 5.
    pub retries: u32,
    /// The upstream's `healthchecks.threshold`: while the targets that take
    /// traffic hold no more than this percent of the weight, Kong answers
    /// every request 503 ("Balancer is unhealthy"). Default 0 (503 only when
    /// no target takes traffic).
    pub health_threshold: f64,
}

impl Default for KongSpec {
    fn default() -> Self {
        KongSpec {
            retries: 5,
            health_threshold: 0.0,
        }
    }
}

/// A Linkerd outbound proxy's settings on the way to the Service's endpoints.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LinkerdSpec {
    /// `LINKERD2_PROXY_OUTBOUND_HTTP_FAILFAST_TIMEOUT`: how long the balancer
    /// waits for an endpoint to become ready before it fails the queued
    /// requests with 504 and, until an endpoint is ready, refuses every new
    /// one with 503. Default 3s.
    pub failfast_timeout: SimDuration,
    /// `LINKERD2_PROXY_OUTBOUND_CONNECT_TIMEOUT`; a connect that times out
    /// is answered 504. Default 1s.
    pub connect_timeout: SimDuration,
    /// `timeout.linkerd.io/response`, from the request's dispatch to an
    /// endpoint (504). Default: none (the proxy waits as long as the client).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_timeout: Option<SimDuration>,
    /// The balancer's peak-EWMA `default_rtt` (floored at 1ms). Default 30ms.
    pub ewma_default_rtt: SimDuration,
    /// The balancer's peak-EWMA `decay`. Default 10s.
    pub ewma_decay: SimDuration,
}

impl Default for LinkerdSpec {
    fn default() -> Self {
        LinkerdSpec {
            failfast_timeout: SimDuration::from_secs(3),
            connect_timeout: SimDuration::from_secs(1),
            response_timeout: None,
            ewma_default_rtt: SimDuration::from_millis(30),
            ewma_decay: SimDuration::from_secs(10),
        }
    }
}
