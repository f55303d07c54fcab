//! Health policies: the port the world calls ([`api`]), the `PolicySpec` a
//! model names, `build`, and one module per policy.
//!
//! A policy decides; the gateway acts on its decisions (see [`api`]).

pub mod active_probe;
pub mod api;
pub mod clock;
pub mod failure_accrual;
pub mod heartbeat_ttl;
pub mod hystrix;
pub mod max_fails;
pub mod outlier_detection;
pub mod ratio_ejection;
pub mod resilience4j;
pub mod support;
#[cfg(test)]
pub(crate) mod testkit;

pub use crate::ids::{NodeId, Scope};
pub use api::{
    Action, AttemptReport, AttemptResult, Charge, HealthPolicy, HeartbeatPlan, Notice, PolicyCx,
    PolicyTimer, ProbeKind, ProbeOutcome, ProbeRequest, ProbeResult, ScopeSel,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
pub use support::{backoff, gateway_view, prober_pool, window};

pub use active_probe::{ActiveProbe, ActiveProbeSpec};
pub use clock::{Now, WallClock};
pub use failure_accrual::{FailureAccrual, FailureAccrualParams};
pub use heartbeat_ttl::{HeartbeatTtl, HeartbeatTtlSpec};
pub use hystrix::{Hystrix, HystrixParams};
pub use max_fails::{MaxFails, MaxFailsParams};
pub use outlier_detection::{IstioParams, OutlierDetection, OutlierDetectionParams};
pub use ratio_ejection::{RatioEjection, RatioEjectionParams};
pub use resilience4j::{Resilience4j, Resilience4jParams};

/// The baseline: every node is always routable.
pub struct NoPolicy;

impl HealthPolicy for NoPolicy {
    fn is_routable(&self, _: Scope, _: NodeId, _: Now) -> bool {
        true
    }
}

/// A health policy as written in a model file; `kind` is the tag.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(transform = crate::diagnostics::AcceptAlias { tag: "kind", name: "max_fails", alias: "nginx" })]
#[schemars(transform = crate::diagnostics::AcceptAlias { tag: "kind", name: "outlier_detection", alias: "envoy" })]
#[schemars(transform = crate::diagnostics::AcceptAlias { tag: "kind", name: "failure_accrual", alias: "finagle" })]
pub enum PolicySpec {
    /// No health checking: the baseline.
    #[serde(deserialize_with = "crate::diagnostics::no_fields")]
    None,
    /// nginx passive counting: `max_fails` / `fail_timeout` on each `server`.
    #[serde(alias = "nginx", deserialize_with = "crate::diagnostics::tracked")]
    MaxFails(MaxFailsParams),
    /// Active probing (generic prober, HAProxy `check`, Envoy active health
    /// checking, tengine `check`, Kubernetes readiness), chosen by `flavor`.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    ActiveProbe(ActiveProbeSpec),
    /// Heartbeats to a registry with a TTL (generic, Consul, Nacos 1.x,
    /// Eureka), chosen by `registry`.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    HeartbeatTtl(HeartbeatTtlSpec),
    /// Envoy outlier detection (the cluster's `outlier_detection` fields).
    #[serde(alias = "envoy", deserialize_with = "crate::diagnostics::tracked")]
    OutlierDetection(OutlierDetectionParams),
    /// Istio's `outlierDetection` field names, mapped to Envoy's.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Istio(IstioParams),
    /// A generic failure-ratio ejector over a sliding window.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    RatioEjection(RatioEjectionParams),
    /// A Resilience4j circuit breaker per node.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Resilience4j(Resilience4jParams),
    /// A Hystrix circuit breaker per node.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Hystrix(HystrixParams),
    /// Finagle (or `flavour: linkerd`, Linkerd 2.x) failure accrual.
    #[serde(alias = "finagle", deserialize_with = "crate::diagnostics::tracked")]
    FailureAccrual(FailureAccrualParams),
}

impl PolicySpec {
    /// A short name for tables and file names.
    pub fn label(&self) -> String {
        match self {
            PolicySpec::None => "none".into(),
            PolicySpec::MaxFails(p) => {
                format!("max_fails={} fail_timeout={}", p.max_fails, p.fail_timeout)
            }
            PolicySpec::ActiveProbe(p) => p.label(),
            PolicySpec::HeartbeatTtl(p) => p.label(),
            PolicySpec::OutlierDetection(_) => "outlier_detection".into(),
            PolicySpec::Istio(_) => "istio".into(),
            PolicySpec::RatioEjection(p) => format!(
                "ratio_ejection threshold={}% min={}",
                p.failure_percentage_threshold, p.minimum_requests
            ),
            PolicySpec::Resilience4j(_) => "resilience4j".into(),
            PolicySpec::Hystrix(_) => "hystrix".into(),
            PolicySpec::FailureAccrual(p) => match p.flavour {
                failure_accrual::Flavour::Finagle => "failure_accrual finagle".into(),
                failure_accrual::Flavour::Linkerd => "failure_accrual linkerd".into(),
            },
        }
    }

    /// The load balancer's panic threshold (percent) that comes with this
    /// policy, if it has one (Envoy's 50 %, Istio's `minHealthPercent`).
    pub fn healthy_panic_threshold(&self) -> Option<f64> {
        match self {
            PolicySpec::OutlierDetection(p) => Some(p.healthy_panic_threshold),
            PolicySpec::Istio(p) => Some(p.min_health_percent as f64),
            _ => None,
        }
    }

    /// Checks that serde cannot do; `Err((field, reason))` names the field
    /// relative to the policy object.
    pub fn validate(&self) -> Result<(), (String, String)> {
        match self {
            PolicySpec::None => Ok(()),
            PolicySpec::MaxFails(p) => p.validate(),
            PolicySpec::ActiveProbe(p) => p.validate(),
            PolicySpec::HeartbeatTtl(p) => p.validate(),
            PolicySpec::OutlierDetection(p) => p.validate(),
            PolicySpec::Istio(p) => p.validate(),
            PolicySpec::RatioEjection(p) => p.validate(),
            PolicySpec::Resilience4j(p) => p.validate(),
            PolicySpec::Hystrix(p) => p.validate(),
            PolicySpec::FailureAccrual(p) => p.validate(),
        }
    }
}

impl PolicySpec {
    /// Engine events per second the policy causes by itself (probes, beats),
    /// for the cost estimate before a run; `nodes` is the number of nodes.
    pub fn events_per_s(&self, nodes: usize) -> f64 {
        // measured: ~4 events per probe on e8-threads-10, ~3 per beat
        let every = |period: crate::engine::SimDuration, events: f64| {
            nodes as f64 * events / period.as_secs_f64().max(1e-6)
        };
        match self {
            PolicySpec::ActiveProbe(p) => every(p.period(), 4.0),
            PolicySpec::HeartbeatTtl(p) => every(p.period(), 3.0),
            PolicySpec::None
            | PolicySpec::MaxFails(_)
            | PolicySpec::OutlierDetection(_)
            | PolicySpec::Istio(_)
            | PolicySpec::RatioEjection(_)
            | PolicySpec::Resilience4j(_)
            | PolicySpec::Hystrix(_)
            | PolicySpec::FailureAccrual(_) => 0.0,
        }
    }

    /// Does it judge nodes by the outcomes of client requests (passive
    /// checking)? Only such a policy misses failures that clients abort first.
    pub fn counts_client_requests(&self) -> bool {
        match self {
            PolicySpec::MaxFails(_)
            | PolicySpec::OutlierDetection(_)
            | PolicySpec::Istio(_)
            | PolicySpec::RatioEjection(_)
            | PolicySpec::Resilience4j(_)
            | PolicySpec::Hystrix(_)
            | PolicySpec::FailureAccrual(_) => true,
            PolicySpec::None | PolicySpec::ActiveProbe(_) | PolicySpec::HeartbeatTtl(_) => false,
        }
    }

    /// Legal but suspicious settings, as `(field, message)` with the field
    /// relative to the policy object. They are printed as warnings
    /// (`warning: file: policy.field: message`) and never stop a run.
    pub fn warnings(&self) -> Vec<(String, String)> {
        match self {
            PolicySpec::MaxFails(p) => p.warnings(),
            PolicySpec::ActiveProbe(p) => p.warnings(),
            PolicySpec::None
            | PolicySpec::HeartbeatTtl(_)
            | PolicySpec::OutlierDetection(_)
            | PolicySpec::Istio(_)
            | PolicySpec::RatioEjection(_)
            | PolicySpec::Resilience4j(_)
            | PolicySpec::Hystrix(_)
            | PolicySpec::FailureAccrual(_) => vec![],
        }
    }
}

/// Builds the runtime policy. `scopes` is the number of independent copies of
/// peer state (nginx workers without `zone`), `nodes` the number of nodes.
pub fn build(spec: &PolicySpec, scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
    match spec {
        PolicySpec::None => Box::new(NoPolicy),
        PolicySpec::MaxFails(p) => Box::new(MaxFails::new(p, scopes, nodes)),
        PolicySpec::ActiveProbe(p) => Box::new(ActiveProbe::new(p, nodes)),
        PolicySpec::HeartbeatTtl(p) => Box::new(HeartbeatTtl::new(p, nodes)),
        PolicySpec::OutlierDetection(p) => Box::new(OutlierDetection::new(p, nodes)),
        PolicySpec::Istio(p) => Box::new(OutlierDetection::new(&p.to_envoy(), nodes)),
        PolicySpec::RatioEjection(p) => Box::new(RatioEjection::new(p, nodes)),
        PolicySpec::Resilience4j(p) => Box::new(Resilience4j::new(p, nodes)),
        PolicySpec::Hystrix(p) => Box::new(Hystrix::new(p, nodes)),
        PolicySpec::FailureAccrual(p) => Box::new(FailureAccrual::new(p, nodes)),
    }
}
