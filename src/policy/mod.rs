//! Health policies: the port the world calls ([`api`]), the policy a model
//! names and how it is built ([`spec`]), and one module per policy.
//!
//! A policy decides; the gateway acts on its decisions (see [`api`]). Adding
//! a policy takes one file here, one [`PolicySpec`] variant and one arm of
//! [`PolicySpec::params`] (see [`spec`]).

pub mod active_probe;
pub mod api;
pub mod caddy;
pub mod clock;
pub mod endpoints;
pub mod failure_accrual;
pub mod heartbeat_ttl;
pub mod hystrix;
pub mod kong;
pub mod latency_ejection;
pub mod linkerd;
pub mod max_fails;
pub mod none;
pub mod outlier_detection;
pub mod ratio_ejection;
pub mod resilience4j;
pub mod spec;
pub mod support;
#[cfg(test)]
pub(crate) mod testkit;
pub mod traefik;

pub use crate::ids::{NodeId, Scope};

/// The id of the run's random stream every policy draws from
/// ([`PolicyCx::rng`]; `engine::rng::stream(seed, RNG_STREAM)`).
pub const RNG_STREAM: u64 = 5;
pub use api::{
    Action, AfterConnect, AttemptReport, AttemptResult, Charge, FleetRole, HealthPolicy,
    HeartbeatPlan, Interests, LogEvent, Notice, PolicyCx, PolicyTimer, ProbeKind, ProbeOutcome,
    ProbeRequest, ProbeResult, Readmit, ScopeSel,
};
pub use clock::{Now, WallClock};
pub use spec::{PolicyParams, PolicySpec, build, periodic_events_per_s};
pub use support::{backoff, gateway_view, prober_pool, window};

pub use active_probe::{ActiveProbe, ActiveProbeSpec};
pub use caddy::{Caddy, CaddyParams};
pub use failure_accrual::{FailureAccrual, FailureAccrualParams};
pub use heartbeat_ttl::{HeartbeatTtl, HeartbeatTtlSpec};
pub use hystrix::{Hystrix, HystrixParams};
pub use kong::{Kong, KongParams};
pub use latency_ejection::{LatencyEjection, LatencyEjectionParams};
pub use linkerd::{Linkerd, LinkerdParams};
pub use max_fails::{MaxFails, MaxFailsParams};
pub use none::{NoParams, NoPolicy};
pub use outlier_detection::{IstioParams, OutlierDetection, OutlierDetectionParams};
pub use ratio_ejection::{RatioEjection, RatioEjectionParams};
pub use resilience4j::{Resilience4j, Resilience4jParams};
pub use traefik::{Traefik, TraefikParams};
