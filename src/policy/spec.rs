//! The policy a model names ([`PolicySpec`]), what every policy's parameters
//! tell the rest of the simulator before a run ([`PolicyParams`]), and
//! [`build`], which turns them into the runtime policy.
//!
//! Each policy's file implements [`PolicyParams`] for its parameters; a
//! [`PolicySpec`] variant maps to them in [`PolicySpec::params`], its one
//! match. Everything here runs once per run, never on the simulation's hot
//! path.

use super::api::HealthPolicy;
use super::none::NoParams;
use super::{
    ActiveProbeSpec, CaddyParams, FailureAccrualParams, HeartbeatTtlSpec, HystrixParams,
    IstioParams, KongParams, LatencyEjectionParams, LinkerdParams, MaxFailsParams,
    OutlierDetectionParams, RatioEjectionParams, Resilience4jParams, TraefikParams,
};
use crate::engine::SimDuration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// Latency-based outlier ejection: a node whose latency quantile over an
    /// interval exceeds `factor` × the other nodes' median is ejected.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    LatencyEjection(LatencyEjectionParams),
    /// Kong's upstream `healthchecks` (lua-resty-healthcheck): active and
    /// passive checks on one four-counter state per target.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Kong(KongParams),
    /// Linkerd 2.x's per-endpoint breaker (`failure_accrual: consecutive`
    /// or `unified`), as the outbound proxy runs it.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Linkerd(LinkerdParams),
    /// Caddy's `reverse_proxy` health checks: `passive` and `active`.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Caddy(CaddyParams),
    /// Traefik's load-balancer health checks: `healthCheck` and
    /// `passiveHealthCheck`.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Traefik(TraefikParams),
}

/// What a policy's parameters (one [`PolicySpec`] variant) say before a run,
/// and how they become the runtime policy. Only `label` and `build` have no
/// default.
pub trait PolicyParams {
    /// A short name for tables and file names.
    fn label(&self) -> String;

    /// Checks that serde cannot do; `Err((field, reason))` names the field
    /// relative to the policy object.
    fn validate(&self) -> Result<(), (String, String)> {
        Ok(())
    }

    /// Legal but suspicious settings, as `(field, message)` with the field
    /// relative to the policy object. They are printed as warnings
    /// (`warning: file: policy.field: message`) and never stop a run.
    fn warnings(&self) -> Vec<(String, String)> {
        vec![]
    }

    /// Engine events per second the policy causes by itself (probes, beats),
    /// for the cost estimate before a run; `nodes` is the number of nodes.
    /// See [`periodic_events_per_s`].
    fn events_per_s(&self, _nodes: usize) -> f64 {
        0.0
    }

    /// Does it judge nodes by the outcomes of client requests (passive
    /// checking)? Only such a policy misses failures that clients abort
    /// first. Passive checking is the rule; probers and registries say no.
    fn counts_client_requests(&self) -> bool {
        true
    }

    /// The load balancer's panic threshold (percent) that comes with this
    /// policy, if it has one (Envoy's 50 %, Istio's `minHealthPercent`).
    fn healthy_panic_threshold(&self) -> Option<f64> {
        None
    }

    /// Builds the runtime policy. `scopes` is the number of independent
    /// copies of peer state (nginx workers without `zone`), `nodes` the
    /// number of nodes.
    fn build(&self, scopes: usize, nodes: usize) -> Box<dyn HealthPolicy>;
}

/// The cost of a policy that makes `events` engine events per node every
/// `period` (measured: ~4 events per probe on e8-threads-10, ~3 per beat).
pub fn periodic_events_per_s(nodes: usize, period: SimDuration, events: f64) -> f64 {
    nodes as f64 * events / period.as_secs_f64().max(1e-6)
}

impl PolicySpec {
    /// The parameters behind the variant: every other method asks them.
    pub fn params(&self) -> &dyn PolicyParams {
        match self {
            PolicySpec::None => &NoParams,
            PolicySpec::MaxFails(p) => p,
            PolicySpec::ActiveProbe(p) => p,
            PolicySpec::HeartbeatTtl(p) => p,
            PolicySpec::OutlierDetection(p) => p,
            PolicySpec::Istio(p) => p,
            PolicySpec::RatioEjection(p) => p,
            PolicySpec::Resilience4j(p) => p,
            PolicySpec::Hystrix(p) => p,
            PolicySpec::FailureAccrual(p) => p,
            PolicySpec::LatencyEjection(p) => p,
            PolicySpec::Kong(p) => p,
            PolicySpec::Linkerd(p) => p,
            PolicySpec::Caddy(p) => p,
            PolicySpec::Traefik(p) => p,
        }
    }

    /// A short name for tables and file names.
    pub fn label(&self) -> String {
        self.params().label()
    }

    /// The load balancer's panic threshold (percent) that comes with this
    /// policy, if it has one (Envoy's 50 %, Istio's `minHealthPercent`).
    pub fn healthy_panic_threshold(&self) -> Option<f64> {
        self.params().healthy_panic_threshold()
    }

    /// Checks that serde cannot do; `Err((field, reason))` names the field
    /// relative to the policy object.
    pub fn validate(&self) -> Result<(), (String, String)> {
        self.params().validate()
    }

    /// Engine events per second the policy causes by itself (probes, beats),
    /// for the cost estimate before a run; `nodes` is the number of nodes.
    pub fn events_per_s(&self, nodes: usize) -> f64 {
        self.params().events_per_s(nodes)
    }

    /// Does it judge nodes by the outcomes of client requests (passive
    /// checking)? Only such a policy misses failures that clients abort first.
    pub fn counts_client_requests(&self) -> bool {
        self.params().counts_client_requests()
    }

    /// Legal but suspicious settings, as `(field, message)` with the field
    /// relative to the policy object. They are printed as warnings
    /// (`warning: file: policy.field: message`) and never stop a run.
    pub fn warnings(&self) -> Vec<(String, String)> {
        self.params().warnings()
    }
}

/// Builds the runtime policy. `scopes` is the number of independent copies of
/// peer state (nginx workers without `zone`), `nodes` the number of nodes.
pub fn build(spec: &PolicySpec, scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
    spec.params().build(scopes, nodes)
}
