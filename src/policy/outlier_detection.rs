//! Envoy outlier detection, as `source/common/upstream/outlier_detection_impl.cc`
//! implements it, and Istio's `outlierDetection` field names mapped onto it.
//!
//! One detector per cluster, shared by all gateway workers (Envoy runs it on
//! the main thread). Per host it keeps three consecutive-error counters, two
//! success-rate accumulators (external and local origin) of two interval
//! buckets each, the ejection flag and the ejection-time multiplier.
//!
//! - Consecutive detectors act on the response that reaches the threshold
//!   (`++counter == threshold`), not at the next tick, and reset the counter
//!   whether or not the ejection was allowed or enforced.
//! - Every `interval` (first tick one interval after start) the detector
//!   un-ejects hosts whose time is up, swaps buckets, runs success-rate and
//!   failure-percentage analysis on the interval that just ended, and lowers
//!   the multiplier of hosts healthy for a whole interval.
//! - `ejectHost` checks the `max_ejection_percent` cap (strict or legacy, see
//!   [`MaxEjectionPercentMode`]), then rolls `enforcing_<type>` from the policy
//!   random stream.
//!
//! Decisions where Envoy is silent or hcsim differs:
//! - The post to the main thread is modelled with zero delay.
//! - Hosts are visited in node order (Envoy: hash-map order, arbitrary).
//! - With `split_external_local_origin_errors`, the connection success that
//!   Envoy reports at `onPoolReady` comes from the gateway's `on_connected`.
//! - A host found by both success rate and failure percentage in one tick is
//!   ejected twice, as a release build of Envoy does (its guard is a debug
//!   `ASSERT`): the active-ejection count then stays one too high.
//! - Active health checking and runtime overrides are not modelled.

use super::support::ejection::{Cap, Ejection, TICK, Times, arm_tick, may_eject};
use super::{
    AttemptReport, AttemptResult, HealthPolicy, Interests, LogEvent, Now, PolicyCx, PolicyParams,
    PolicyTimer, Scope, ScopeSel,
};
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use rand::RngExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How `max_ejection_percent` caps ejections; Envoy changed the rule over time.
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MaxEjectionPercentMode {
    /// Envoy ≥ 1.28 (PRs #27624, #27909): allowed iff
    /// `100 × (active + 1) / hosts ≤ max_ejection_percent`. With the default
    /// 10 %, no host of a cluster of fewer than 10 can ever be ejected.
    #[default]
    Strict,
    /// Envoy ≤ 1.27: allowed iff `100 × active / hosts < max_ejection_percent`:
    /// the first ejection always passes and the cap can be overshot by one
    /// host (3 hosts at 50 % → 2 ejected, issue #26877).
    Legacy,
}

/// Envoy's `outlier_detection` cluster settings (proto field names). Every
/// field is optional and defaults to Envoy's default.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct OutlierDetectionParams {
    /// Consecutive 5xx (incl. local errors mapped to 502/503/504) that trigger detection. Default 5.
    pub consecutive_5xx: u32,
    /// Percent chance a consecutive-5xx detection ejects. Default 100.
    pub enforcing_consecutive_5xx: u32,
    /// Consecutive 502/503/504. Default 5.
    pub consecutive_gateway_failure: u32,
    /// Default 0: gateway-failure detection is stats only.
    pub enforcing_consecutive_gateway_failure: u32,
    /// Count local-origin errors (connect failures, timeouts, resets) apart
    /// from HTTP statuses. Default false.
    pub split_external_local_origin_errors: bool,
    /// Split mode only. Default 5.
    pub consecutive_local_origin_failure: u32,
    /// Split mode only. Default 100.
    pub enforcing_consecutive_local_origin_failure: u32,
    /// Time between analysis sweeps (un-ejection happens only then). Default 10s.
    pub interval: SimDuration,
    /// Ejection time = base × multiplier. Default 30s.
    pub base_ejection_time: SimDuration,
    /// Cap on the ejection time. Default max(300s, base_ejection_time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ejection_time: Option<SimDuration>,
    /// Uniform extra time in [0, jitter] ms drawn at each ejection. Default 0s.
    pub max_ejection_time_jitter: SimDuration,
    /// Cap on simultaneously ejected hosts, percent of all hosts. Default 10.
    pub max_ejection_percent: u32,
    /// `strict` (Envoy ≥ 1.28, default) or `legacy` (≤ 1.27).
    pub max_ejection_percent_mode: MaxEjectionPercentMode,
    /// Envoy ≥ 1.31: the first ejection is allowed whatever the cap. Default false.
    pub always_eject_one_host: bool,
    /// With an Envoy active health check (`active_probe`, `flavor: envoy`)
    /// in the same model, a passing check of an ejected host that the
    /// checker holds healthy un-ejects it at once, so an ejection lasts about
    /// one check interval. Default true; set false when the health check does
    /// not exercise what fails.
    #[serde(skip_serializing_if = "is_true")]
    pub successful_active_health_check_uneject_host: bool,
    /// Hosts with enough volume needed for success-rate analysis. Default 5.
    pub success_rate_minimum_hosts: u32,
    /// Requests in the last interval for a host to count in success rate. Default 100.
    pub success_rate_request_volume: u32,
    /// Eject below mean − (factor/1000) × stdev. Default 1900.
    pub success_rate_stdev_factor: u32,
    /// Default 100.
    pub enforcing_success_rate: u32,
    /// Split mode only. Default 100.
    pub enforcing_local_origin_success_rate: u32,
    /// Eject a host whose failure percentage is at least this. Default 85.
    pub failure_percentage_threshold: u32,
    /// Default 5.
    pub failure_percentage_minimum_hosts: u32,
    /// Requests in the last interval for a host to count. Default 50.
    pub failure_percentage_request_volume: u32,
    /// Default 0: failure-percentage detection is stats only.
    pub enforcing_failure_percentage: u32,
    /// Default 0.
    pub enforcing_failure_percentage_local_origin: u32,
    /// The load balancer's `healthy_panic_threshold` (percent) that comes
    /// with this policy: below it, the gateway ignores ejections. Envoy's
    /// default 50; 0 turns panic off. `gateway.healthy_panic_threshold`
    /// overrides it.
    pub healthy_panic_threshold: f64,
}

impl Default for OutlierDetectionParams {
    fn default() -> Self {
        OutlierDetectionParams {
            consecutive_5xx: 5,
            enforcing_consecutive_5xx: 100,
            consecutive_gateway_failure: 5,
            enforcing_consecutive_gateway_failure: 0,
            split_external_local_origin_errors: false,
            consecutive_local_origin_failure: 5,
            enforcing_consecutive_local_origin_failure: 100,
            interval: SimDuration::from_secs(10),
            base_ejection_time: SimDuration::from_secs(30),
            max_ejection_time: None,
            max_ejection_time_jitter: SimDuration::ZERO,
            max_ejection_percent: 10,
            max_ejection_percent_mode: MaxEjectionPercentMode::Strict,
            always_eject_one_host: false,
            successful_active_health_check_uneject_host: true,
            success_rate_minimum_hosts: 5,
            success_rate_request_volume: 100,
            success_rate_stdev_factor: 1900,
            enforcing_success_rate: 100,
            enforcing_local_origin_success_rate: 100,
            failure_percentage_threshold: 85,
            failure_percentage_minimum_hosts: 5,
            failure_percentage_request_volume: 50,
            enforcing_failure_percentage: 0,
            enforcing_failure_percentage_local_origin: 0,
            healthy_panic_threshold: 50.0,
        }
    }
}

fn is_true(b: &bool) -> bool {
    *b
}

impl OutlierDetectionParams {
    /// `max_ejection_time`, or its default `max(300s, base_ejection_time)`.
    pub fn max_ejection_time(&self) -> SimDuration {
        self.max_ejection_time
            .unwrap_or(SimDuration::from_secs(300).max(self.base_ejection_time))
    }
}

impl PolicyParams for OutlierDetectionParams {
    fn label(&self) -> String {
        "outlier_detection".into()
    }

    fn healthy_panic_threshold(&self) -> Option<f64> {
        Some(self.healthy_panic_threshold)
    }

    fn build(&self, _scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(OutlierDetection::new(self, nodes))
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let err = |f: &str, r: String| Err((f.to_string(), r));
        if self.interval.is_zero() {
            return err("interval", "must be positive".into());
        }
        if self.max_ejection_time() < self.base_ejection_time {
            // DetectorImpl::create rejects this configuration.
            return err(
                "max_ejection_time",
                format!(
                    "cannot be smaller than base_ejection_time ({})",
                    self.base_ejection_time
                ),
            );
        }
        for (f, v) in [
            ("enforcing_consecutive_5xx", self.enforcing_consecutive_5xx),
            (
                "enforcing_consecutive_gateway_failure",
                self.enforcing_consecutive_gateway_failure,
            ),
            (
                "enforcing_consecutive_local_origin_failure",
                self.enforcing_consecutive_local_origin_failure,
            ),
            ("enforcing_success_rate", self.enforcing_success_rate),
            (
                "enforcing_local_origin_success_rate",
                self.enforcing_local_origin_success_rate,
            ),
            (
                "enforcing_failure_percentage",
                self.enforcing_failure_percentage,
            ),
            (
                "enforcing_failure_percentage_local_origin",
                self.enforcing_failure_percentage_local_origin,
            ),
            ("max_ejection_percent", self.max_ejection_percent),
            (
                "failure_percentage_threshold",
                self.failure_percentage_threshold,
            ),
        ] {
            if v > 100 {
                return err(f, format!("is a percentage (0..=100), found {v}"));
            }
        }
        if !(0.0..=100.0).contains(&self.healthy_panic_threshold) {
            return err(
                "healthy_panic_threshold",
                format!(
                    "is a percentage (0..=100), found {}",
                    self.healthy_panic_threshold
                ),
            );
        }
        Ok(())
    }
}

/// Istio's `DestinationRule.trafficPolicy.outlierDetection`, mapped to
/// Envoy's settings as istiod's `applyOutlierDetection`
/// (`pilot/pkg/networking/core/cluster_traffic_policy.go`) does: success-rate
/// ejection is always off, failure percentage is not exposed, the deprecated
/// `consecutiveErrors` is not read at all (since Istio 1.7), and
/// `minHealthPercent` (default 0) becomes the panic threshold, so panic is
/// off unless it is set — and forced to 0 when the service sends unhealthy
/// endpoints (`Service.SupportsUnhealthyEndpoints`).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct IstioParams {
    /// → `consecutive_5xx` with enforcing 100 (0 if the value is 0); unset: Envoy's 5 / 100.
    #[serde(
        rename = "consecutive5xxErrors",
        skip_serializing_if = "Option::is_none"
    )]
    pub consecutive_5xx_errors: Option<u32>,
    /// → `consecutive_gateway_failure` with enforcing 100 if > 0; unset: off.
    #[serde(
        rename = "consecutiveGatewayErrors",
        skip_serializing_if = "Option::is_none"
    )]
    pub consecutive_gateway_errors: Option<u32>,
    /// Deprecated `consecutiveErrors`: accepted, and ignored as istiod
    /// ignores it since 1.7 (Envoy's defaults apply: consecutive 5xx 5,
    /// enforced); a warning says so.
    #[serde(rename = "consecutiveErrors", skip_serializing_if = "Option::is_none")]
    pub consecutive_errors: Option<u32>,
    #[serde(rename = "splitExternalLocalOriginErrors")]
    pub split_external_local_origin_errors: bool,
    /// → `consecutive_local_origin_failure` with enforcing 100 if > 0 (split mode).
    #[serde(
        rename = "consecutiveLocalOriginFailures",
        skip_serializing_if = "Option::is_none"
    )]
    pub consecutive_local_origin_failures: Option<u32>,
    #[serde(rename = "interval", skip_serializing_if = "Option::is_none")]
    pub interval: Option<SimDuration>,
    #[serde(rename = "baseEjectionTime", skip_serializing_if = "Option::is_none")]
    pub base_ejection_time: Option<SimDuration>,
    #[serde(rename = "maxEjectionPercent", skip_serializing_if = "Option::is_none")]
    pub max_ejection_percent: Option<u32>,
    /// → the load balancer's `healthy_panic_threshold`. Default 0 (panic off).
    #[serde(rename = "minHealthPercent")]
    pub min_health_percent: u32,
    /// Not an Istio field: which Envoy rule the sidecar applies. Default `strict`.
    pub max_ejection_percent_mode: MaxEjectionPercentMode,
    /// Not an Istio field: Envoy ≥ 1.31's switch. Default false.
    pub always_eject_one_host: bool,
    /// Not an Istio field: istiod sends the service's not-ready endpoints
    /// (`Service.SupportsUnhealthyEndpoints`: `PILOT_SEND_UNHEALTHY_ENDPOINTS`
    /// mesh-wide, or a service with `publishNotReadyAddresses` /
    /// `trafficDistribution` in recent istiod) and then forces the panic
    /// threshold to 0 whatever `minHealthPercent` says. Default false.
    #[serde(skip_serializing_if = "is_false")]
    pub send_unhealthy_endpoints: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl IstioParams {
    /// `healthy_panic_threshold` as `applyOutlierDetection` sets it:
    /// `minHealthPercent`, or 0 if the service supports unhealthy endpoints.
    fn panic_threshold(&self) -> f64 {
        if self.send_unhealthy_endpoints {
            0.0
        } else {
            self.min_health_percent as f64
        }
    }

    /// The Envoy settings istiod generates.
    pub fn to_envoy(&self) -> OutlierDetectionParams {
        let mut p = OutlierDetectionParams {
            enforcing_success_rate: 0,
            max_ejection_percent_mode: self.max_ejection_percent_mode,
            always_eject_one_host: self.always_eject_one_host,
            healthy_panic_threshold: self.panic_threshold(),
            ..Default::default()
        };
        // `consecutiveErrors` is not read: since Istio 1.7
        // `applyOutlierDetection` maps only `consecutive5xxErrors` and
        // `consecutiveGatewayErrors`.
        if let Some(v) = self.consecutive_gateway_errors {
            p.consecutive_gateway_failure = v;
            p.enforcing_consecutive_gateway_failure = if v > 0 { 100 } else { 0 };
        }
        if let Some(v) = self.consecutive_5xx_errors {
            p.consecutive_5xx = v;
            p.enforcing_consecutive_5xx = if v > 0 { 100 } else { 0 };
        }
        if self.split_external_local_origin_errors {
            p.split_external_local_origin_errors = true;
            p.enforcing_local_origin_success_rate = 0;
            if let Some(v) = self.consecutive_local_origin_failures.filter(|&v| v > 0) {
                p.consecutive_local_origin_failure = v;
                p.enforcing_consecutive_local_origin_failure = 100;
            }
        }
        if let Some(v) = self.interval {
            p.interval = v;
        }
        if let Some(v) = self.base_ejection_time {
            p.base_ejection_time = v;
        }
        // istiod cannot tell 0 from unset: 0 leaves Envoy's default (10).
        if let Some(v) = self.max_ejection_percent.filter(|&v| v > 0) {
            p.max_ejection_percent = v;
        }
        p
    }
}

impl PolicyParams for IstioParams {
    fn label(&self) -> String {
        "istio".into()
    }

    fn healthy_panic_threshold(&self) -> Option<f64> {
        Some(self.panic_threshold())
    }

    fn build(&self, _scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(OutlierDetection::new(&self.to_envoy(), nodes))
    }

    fn warnings(&self) -> Vec<(String, String)> {
        let mut w = vec![];
        if self.consecutive_errors.is_some() {
            w.push((
                "consecutiveErrors".into(),
                "is deprecated and ignored by istiod since 1.7: Envoy's defaults apply \
                 (consecutive 5xx 5, enforced); use consecutive5xxErrors or \
                 consecutiveGatewayErrors"
                    .into(),
            ));
        }
        if self.send_unhealthy_endpoints && self.min_health_percent > 0 {
            w.push((
                "minHealthPercent".into(),
                "has no effect: istiod forces the panic threshold to 0 when it sends \
                 unhealthy endpoints (send_unhealthy_endpoints)"
                    .into(),
            ));
        }
        w
    }

    fn validate(&self) -> Result<(), (String, String)> {
        if self.min_health_percent > 100 {
            return Err((
                "minHealthPercent".into(),
                format!(
                    "is a percentage (0..=100), found {}",
                    self.min_health_percent
                ),
            ));
        }
        self.to_envoy().validate().map_err(|(f, r)| {
            let istio = match f.as_str() {
                "interval" => "interval",
                "max_ejection_percent" => "maxEjectionPercent",
                "max_ejection_time" => "baseEjectionTime",
                other => other,
            };
            (istio.to_string(), r)
        })
    }
}

/// Why a host is ejected (Envoy's `OutlierEjectionType`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EjectionType {
    Consecutive5xx = 0,
    ConsecutiveGatewayFailure = 1,
    ConsecutiveLocalOriginFailure = 2,
    SuccessRate = 3,
    SuccessRateLocalOrigin = 4,
    FailurePercentage = 5,
    FailurePercentageLocalOrigin = 6,
}

impl EjectionType {
    /// The name in Envoy's `OutlierEjectionType` (outlier_detection_event.proto).
    pub fn proto_name(self) -> &'static str {
        match self {
            EjectionType::Consecutive5xx => "CONSECUTIVE_5XX",
            EjectionType::ConsecutiveGatewayFailure => "CONSECUTIVE_GATEWAY_FAILURE",
            EjectionType::ConsecutiveLocalOriginFailure => "CONSECUTIVE_LOCAL_ORIGIN_FAILURE",
            EjectionType::SuccessRate => "SUCCESS_RATE",
            EjectionType::SuccessRateLocalOrigin => "SUCCESS_RATE_LOCAL_ORIGIN",
            EjectionType::FailurePercentage => "FAILURE_PERCENTAGE",
            EjectionType::FailurePercentageLocalOrigin => "FAILURE_PERCENTAGE_LOCAL_ORIGIN",
        }
    }
}

/// Detector counters, as Envoy's `outlier_detection.*` stats.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DetectorStats {
    /// `ejections_detected_<type>`, indexed by [`EjectionType`].
    pub detected: [u64; 7],
    /// `ejections_enforced_<type>`.
    pub enforced: [u64; 7],
    /// `ejections_overflow`: refused by the `max_ejection_percent` cap.
    pub overflow: u64,
}

/// What every response touches in one host's detector state: the external
/// success-rate bucket being written and the consecutive counters, 16 bytes,
/// four hosts per cache line. A large cluster (or a fleet of sidecars, each with its own
/// detector) reads each host rarely, so each read is a miss, and the fewer
/// lines these take, the more of them stay cached.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(16))]
struct HostHot {
    /// External-origin success rate: the interval being written
    /// (`SuccessRateAccumulator::current_success_rate_bucket_`).
    ext: Counts,
    c5: u32,
    gw: u32,
}

/// Calls and failures of one host in one interval (a
/// `SuccessRateAccumulatorBucket`, as total and failed requests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    calls: u32,
    failures: u32,
}

impl Counts {
    #[inline]
    fn add(&mut self, failed: bool) {
        self.calls += 1;
        self.failures += failed as u32;
    }
}

/// The rest of one host's detector state.
#[derive(Clone, Debug)]
struct Host {
    /// Envoy's ejection lifecycle (`support::ejection`).
    ej: Ejection,
    clo: u32,
    /// External-origin counts of the interval that ended last
    /// (`backup_success_rate_bucket_`, what the analysis reads).
    ext_prev: Counts,
    /// Local-origin success rate (split mode): the current and the last interval.
    lo: Counts,
    lo_prev: Counts,
    /// Enforced ejections so far (`numEjections`, for the event log).
    ejections: u32,
}

/// Which success-rate accumulator an analysis reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Origin {
    External,
    Local,
}

/// Envoy's outlier detector for one cluster.
pub struct OutlierDetection {
    p: OutlierDetectionParams,
    max_ejection_time: SimDuration,
    hosts: Vec<Host>,
    hot: Vec<HostHot>,
    /// `ejections_active`.
    active: u32,
    stats: DetectorStats,
    /// Scratch lists of (host, success rate) for the analysis, kept to avoid allocating.
    sr_hosts: Vec<(usize, f64)>,
    fp_hosts: Vec<(usize, f64)>,
    /// The analysis behind the ejection being tried, for the event log:
    /// the host's success rate, and the cluster's average and threshold.
    why: Option<(f64, Option<(f64, f64)>)>,
}

impl OutlierDetection {
    pub fn new(p: &OutlierDetectionParams, nodes: usize) -> Self {
        let host = Host {
            clo: 0,
            ext_prev: Counts::default(),
            lo: Counts::default(),
            lo_prev: Counts::default(),
            ej: Ejection::default(),
            ejections: 0,
        };
        OutlierDetection {
            max_ejection_time: p.max_ejection_time(),
            p: p.clone(),
            hosts: vec![host; nodes],
            hot: vec![HostHot::default(); nodes],
            active: 0,
            stats: DetectorStats::default(),
            sr_hosts: Vec::with_capacity(nodes),
            fp_hosts: Vec::with_capacity(nodes),
            why: None,
        }
    }

    pub fn stats(&self) -> &DetectorStats {
        &self.stats
    }

    /// `ejections_active`.
    pub fn ejections_active(&self) -> u32 {
        self.active
    }

    /// The ejection-time multiplier of a host (`eject_time_backoff`).
    pub fn backoff(&self, node: NodeId) -> u32 {
        self.hosts[node.index()].ej.backoff
    }

    /// The consecutive counters of a host: (5xx, gateway, local origin).
    pub fn counters(&self, node: NodeId) -> (u32, u32, u32) {
        let (h, hot) = (&self.hosts[node.index()], &self.hot[node.index()]);
        (hot.c5, hot.gw, h.clo)
    }

    fn enforcing(&self, t: EjectionType) -> u32 {
        let p = &self.p;
        match t {
            EjectionType::Consecutive5xx => p.enforcing_consecutive_5xx,
            EjectionType::ConsecutiveGatewayFailure => p.enforcing_consecutive_gateway_failure,
            EjectionType::ConsecutiveLocalOriginFailure => {
                p.enforcing_consecutive_local_origin_failure
            }
            EjectionType::SuccessRate => p.enforcing_success_rate,
            EjectionType::SuccessRateLocalOrigin => p.enforcing_local_origin_success_rate,
            EjectionType::FailurePercentage => p.enforcing_failure_percentage,
            EjectionType::FailurePercentageLocalOrigin => {
                p.enforcing_failure_percentage_local_origin
            }
        }
    }

    /// `DetectorHostMonitorImpl::putHttpResponseCode`.
    fn put_http_code(&mut self, cx: &mut PolicyCx, i: usize, code: u16) {
        let (c5_thr, gw_thr) = (self.p.consecutive_5xx, self.p.consecutive_gateway_failure);
        let h = &mut self.hot[i];
        let is_5xx = (500..600).contains(&code);
        h.ext.add(is_5xx);
        if !is_5xx {
            h.c5 = 0;
            h.gw = 0;
            return;
        }
        let mut gateway_hit = false;
        if matches!(code, 502..=504) {
            h.gw += 1;
            gateway_hit = h.gw == gw_thr;
        } else {
            h.gw = 0;
        }
        h.c5 += 1;
        let c5_hit = h.c5 == c5_thr;
        // Both detections are posted to the main thread in this order.
        if gateway_hit {
            self.on_consecutive(cx, i, EjectionType::ConsecutiveGatewayFailure);
        }
        if c5_hit {
            self.on_consecutive(cx, i, EjectionType::Consecutive5xx);
        }
    }

    /// `localOriginFailure` (split mode).
    fn local_origin_failure(&mut self, cx: &mut PolicyCx, i: usize) {
        let h = &mut self.hosts[i];
        h.lo.add(true);
        h.clo += 1;
        if h.clo == self.p.consecutive_local_origin_failure {
            self.on_consecutive(cx, i, EjectionType::ConsecutiveLocalOriginFailure);
        }
    }

    /// `localOriginNoFailure` (split mode).
    fn local_origin_success(&mut self, i: usize) {
        let h = &mut self.hosts[i];
        h.lo.add(false);
        h.clo = 0;
    }

    /// `onConsecutiveErrorWorker`: ignore ejected hosts; else try to eject
    /// and reset that counter whatever came of it.
    fn on_consecutive(&mut self, cx: &mut PolicyCx, i: usize, t: EjectionType) {
        if self.hosts[i].ej.ejected {
            return;
        }
        self.stats.detected[t as usize] += 1;
        self.eject_host(cx, i, t);
        match t {
            EjectionType::Consecutive5xx => self.hot[i].c5 = 0,
            EjectionType::ConsecutiveGatewayFailure => self.hot[i].gw = 0,
            _ => self.hosts[i].clo = 0,
        }
    }

    /// `DetectorImpl::ejectHost`: the cap, the enforcement roll, the ejection.
    fn eject_host(&mut self, cx: &mut PolicyCx, i: usize, t: EjectionType) {
        let cap = match self.p.max_ejection_percent_mode {
            MaxEjectionPercentMode::Strict => Cap::Strict,
            MaxEjectionPercentMode::Legacy => Cap::Legacy,
        };
        let (n, pct) = (self.hosts.len(), self.p.max_ejection_percent);
        if !may_eject(self.active, n, pct, cap, self.p.always_eject_one_host) {
            self.stats.overflow += 1;
            return;
        }
        // `featureEnabled(key, enforcing)`: `random % 100 < enforcing`.
        let roll: u32 = cx.rng().random_range(0..100);
        if roll >= self.enforcing(t) {
            // Detected but not enforced: logged with `enforced: false`.
            self.log(cx, i, t, true, false);
            return;
        }
        self.stats.enforced[t as usize] += 1;
        self.active += 1;
        let now = cx.now().t;
        let jitter_ms = self.p.max_ejection_time_jitter.as_micros() / 1000;
        let jitter = SimDuration::from_millis(cx.rng().random_range(0..=jitter_ms));
        let times = self.times();
        let h = &mut self.hosts[i];
        let was_ejected = h.ej.eject(now, times, jitter);
        h.ejections += 1;
        if !was_ejected {
            cx.ejected(ScopeSel::All, NodeId(i as u32));
        }
        self.log(cx, i, t, true, true);
    }

    /// `EventLoggerImpl::logEject` / `logUneject` (`setCommonEventParams`):
    /// the event of host `i`, when the gateway keeps a log.
    fn log(&self, cx: &mut PolicyCx, i: usize, t: EjectionType, eject: bool, enforced: bool) {
        if !cx.logs() {
            return;
        }
        let h = &self.hosts[i];
        let now = cx.now().t;
        let last = if eject {
            h.ej.last_unejection
        } else {
            Some(h.ej.last_ejection)
        };
        cx.log(LogEvent::EnvoyOutlier {
            node: NodeId(i as u32),
            kind: t.proto_name(),
            eject,
            enforced,
            num_ejections: h.ejections,
            secs_since_last_action: last.map(|l| now.saturating_since(l).as_micros() / 1_000_000),
            success_rate: if eject { self.why } else { None },
        });
    }

    /// `checkHostForUneject`.
    fn check_uneject(&mut self, cx: &mut PolicyCx, i: usize, now: SimTime) {
        if self.hosts[i].ej.due(now, self.times()) {
            self.uneject_host(cx, i, now);
        }
    }

    fn times(&self) -> Times {
        Times {
            base: self.p.base_ejection_time,
            max: self.max_ejection_time,
        }
    }

    /// `unejectHost`: the consecutive counters restart and the un-ejection
    /// time is kept (the backoff decays from it); the multiplier stays.
    fn uneject_host(&mut self, cx: &mut PolicyCx, i: usize, now: SimTime) {
        let h = &mut self.hosts[i];
        self.active -= 1;
        h.ej.uneject(now);
        h.clo = 0;
        self.hot[i].c5 = 0;
        self.hot[i].gw = 0;
        cx.readmitted(ScopeSel::All, NodeId(i as u32));
        // logUneject sets no type: proto3 JSON prints the default, CONSECUTIVE_5XX.
        self.log(cx, i, EjectionType::Consecutive5xx, false, false);
    }

    /// `processSuccessRateEjections` over the bucket of the interval that just ended.
    fn analyse(&mut self, cx: &mut PolicyCx, origin: Origin) {
        let n = self.hosts.len() as u64;
        let p = &self.p;
        let (sr_min, sr_vol) = (
            p.success_rate_minimum_hosts as u64,
            p.success_rate_request_volume as u64,
        );
        let (fp_min, fp_vol) = (
            p.failure_percentage_minimum_hosts as u64,
            p.failure_percentage_request_volume as u64,
        );
        if n < sr_min && n < fp_min {
            return;
        }
        self.sr_hosts.clear();
        self.fp_hosts.clear();
        let mut sum = 0.0;
        for (i, h) in self.hosts.iter().enumerate() {
            if h.ej.ejected {
                continue;
            }
            let b = match origin {
                Origin::External => h.ext_prev,
                Origin::Local => h.lo_prev,
            };
            if b.calls == 0 {
                continue;
            }
            let sr = (b.calls - b.failures) as f64 * 100.0 / b.calls as f64;
            let vol = b.calls as u64;
            if vol >= sr_vol {
                self.sr_hosts.push((i, sr));
                sum += sr;
            }
            if vol >= fp_vol {
                self.fp_hosts.push((i, sr));
            }
        }
        if !self.sr_hosts.is_empty() && self.sr_hosts.len() as u64 >= sr_min {
            let threshold = success_rate_threshold(
                sum,
                &self.sr_hosts,
                self.p.success_rate_stdev_factor as f64 / 1000.0,
            );
            let t = match origin {
                Origin::External => EjectionType::SuccessRate,
                Origin::Local => EjectionType::SuccessRateLocalOrigin,
            };
            for k in 0..self.sr_hosts.len() {
                let (i, sr) = self.sr_hosts[k];
                if sr < threshold {
                    self.stats.detected[t as usize] += 1;
                    let average = sum / self.sr_hosts.len() as f64;
                    self.why = Some((sr, Some((average, threshold))));
                    self.eject_host(cx, i, t);
                    self.why = None;
                }
            }
        }
        if !self.fp_hosts.is_empty() && self.fp_hosts.len() as u64 >= fp_min {
            let threshold = self.p.failure_percentage_threshold as f64;
            let t = match origin {
                Origin::External => EjectionType::FailurePercentage,
                Origin::Local => EjectionType::FailurePercentageLocalOrigin,
            };
            for k in 0..self.fp_hosts.len() {
                let (i, sr) = self.fp_hosts[k];
                if 100.0 - sr >= threshold {
                    self.stats.detected[t as usize] += 1;
                    self.why = Some((sr, None));
                    self.eject_host(cx, i, t);
                    self.why = None;
                }
            }
        }
    }

    /// `onIntervalTimer`.
    fn on_tick(&mut self, cx: &mut PolicyCx) {
        let now = cx.now().t;
        for i in 0..self.hosts.len() {
            self.check_uneject(cx, i, now);
        }
        // `updateCurrentSuccessRateBucket`: every host's current bucket
        // becomes the one the analysis reads, and a new one starts.
        for (h, hot) in self.hosts.iter_mut().zip(&mut self.hot) {
            h.ext_prev = std::mem::take(&mut hot.ext);
            h.lo_prev = std::mem::take(&mut h.lo);
        }
        self.analyse(cx, Origin::External);
        self.analyse(cx, Origin::Local);
        let interval = self.p.interval;
        for h in &mut self.hosts {
            h.ej.decay(now, interval);
        }
        arm_tick(cx, now, interval);
    }
}

/// `successRateEjectionThreshold`: mean − factor × population stdev.
pub fn success_rate_threshold(sum: f64, hosts: &[(usize, f64)], factor: f64) -> f64 {
    let n = hosts.len() as f64;
    let mean = sum / n;
    let variance = hosts
        .iter()
        .map(|&(_, sr)| (sr - mean).powi(2))
        .sum::<f64>()
        / n;
    mean - factor * variance.sqrt()
}

impl HealthPolicy for OutlierDetection {
    fn on_start(&mut self, cx: &mut PolicyCx) {
        let now = cx.now().t;
        arm_tick(cx, now, self.p.interval);
    }

    fn is_routable(&self, _scope: Scope, node: NodeId, _now: Now) -> bool {
        !self.hosts[node.index()].ej.ejected
    }

    fn interests(&self) -> Interests {
        Interests {
            selections: false,
            // Only split mode counts a connection's success (`on_connected`).
            connections: self.p.split_external_local_origin_errors,
            host_checks: true,
            // `ejected` flips only in `ejectHost` and `checkHostForUneject`,
            // each with its notice.
            routes_by_notices: true,
            ..Interests::DEFAULT
        }
    }

    fn on_connected(&mut self, _cx: &mut PolicyCx, _scope: Scope, node: NodeId) {
        // `onPoolReady` reports LocalOriginConnectSuccess; only split mode counts it.
        if self.p.split_external_local_origin_errors {
            self.local_origin_success(node.index());
        }
    }

    fn on_attempt(&mut self, cx: &mut PolicyCx, r: &AttemptReport) {
        let i = r.node.index();
        let split = self.p.split_external_local_origin_errors;
        match r.result {
            AttemptResult::Status(code) => self.put_http_code(cx, i, code),
            // The router's own answers: a timeout is 504, connect failures and resets 503.
            AttemptResult::ReadTimeout if !split => self.put_http_code(cx, i, 504),
            AttemptResult::Refused | AttemptResult::ConnectTimeout | AttemptResult::Reset
                if !split =>
            {
                self.put_http_code(cx, i, 503)
            }
            AttemptResult::ReadTimeout
            | AttemptResult::Refused
            | AttemptResult::ConnectTimeout
            | AttemptResult::Reset => self.local_origin_failure(cx, i),
            // A downstream reset is reported to nobody; a request another
            // layer rejected never reached the router.
            AttemptResult::ClientAbort | AttemptResult::Rejected => {}
        }
    }

    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        if timer.tag == TICK {
            self.on_tick(cx);
        }
    }

    /// The callback `DetectorImpl::initialize` adds to the cluster's health
    /// checker when `successful_active_health_check_uneject_host` is on: a
    /// check with result `Healthy` on a host that is not FAILED_ACTIVE_HC
    /// but is FAILED_OUTLIER_CHECK un-ejects it (`unejectHost`) at once.
    fn on_host_checked(&mut self, cx: &mut PolicyCx, node: NodeId, healthy: bool) {
        let i = node.index();
        if self.p.successful_active_health_check_uneject_host && healthy && self.hosts[i].ej.ejected
        {
            let now = cx.now().t;
            self.uneject_host(cx, i, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two hosts' response-path state per 64-byte cache line.
    #[test]
    fn the_response_path_state_of_a_host_is_a_quarter_cache_line() {
        assert_eq!(std::mem::size_of::<HostHot>(), 16);
    }
    use crate::policy::testkit::{Harness, ms};

    const OK: AttemptResult = AttemptResult::Status(200);
    const E503: AttemptResult = AttemptResult::Status(503);
    const E500: AttemptResult = AttemptResult::Status(500);

    fn od(p: OutlierDetectionParams, nodes: usize) -> Harness<OutlierDetection> {
        Harness::new(OutlierDetection::new(&p, nodes))
    }

    /// Consecutive 5xx only, one host of `nodes` may go.
    fn c5(n: u32) -> OutlierDetectionParams {
        OutlierDetectionParams {
            consecutive_5xx: n,
            max_ejection_percent: 100,
            ..Default::default()
        }
    }

    #[test]
    fn consecutive_5xx_ejects_on_the_failure_that_reaches_the_threshold() {
        let mut h = od(c5(5), 4);
        for k in 0..4 {
            h.attempt(ms(100 + k), 0, E503);
        }
        assert!(h.routable(0), "four 503s: not yet");
        h.attempt(ms(104), 0, E503);
        assert!(
            !h.routable(0),
            "the fifth 503 ejects at once, not at the tick"
        );
        assert_eq!(h.history(0), vec![(ms(104), true)]);
        assert_eq!(
            h.policy.counters(NodeId(0)).0,
            0,
            "counter reset after detection"
        );
    }

    #[test]
    fn a_success_or_a_4xx_resets_the_consecutive_counters() {
        let mut h = od(c5(3), 4);
        h.attempt(ms(1), 0, E503);
        h.attempt(ms(2), 0, E503);
        h.attempt(ms(3), 0, AttemptResult::Status(404));
        h.attempt(ms(4), 0, E503);
        h.attempt(ms(5), 0, E503);
        assert!(h.routable(0));
        assert_eq!(h.policy.counters(NodeId(0)), (2, 2, 0));
    }

    #[test]
    fn a_500_resets_only_the_gateway_counter_and_timeouts_count_as_504() {
        let p = OutlierDetectionParams {
            consecutive_5xx: 10,
            consecutive_gateway_failure: 3,
            enforcing_consecutive_gateway_failure: 100,
            max_ejection_percent: 100,
            ..Default::default()
        };
        let mut h = od(p, 4);
        h.attempt(ms(1), 0, AttemptResult::ReadTimeout); // 504
        h.attempt(ms(2), 0, AttemptResult::Refused); // 503
        h.attempt(ms(3), 0, E500);
        assert_eq!(h.policy.counters(NodeId(0)), (3, 0, 0));
        h.attempt(ms(4), 0, AttemptResult::Reset);
        h.attempt(ms(5), 0, AttemptResult::ConnectTimeout);
        assert!(h.routable(0));
        h.attempt(ms(6), 0, AttemptResult::Status(502));
        assert!(!h.routable(0), "third consecutive gateway error");
        let s = h.policy.stats();
        assert_eq!(
            s.enforced[EjectionType::ConsecutiveGatewayFailure as usize],
            1
        );
        // A client abort is reported to nobody.
        h.attempt(ms(7), 1, AttemptResult::ClientAbort);
        assert_eq!(h.policy.counters(NodeId(1)), (0, 0, 0));
    }

    #[test]
    fn gateway_detection_is_stats_only_by_default_and_resets_its_counter() {
        let mut h = od(
            OutlierDetectionParams {
                consecutive_5xx: 100,
                max_ejection_percent: 100,
                ..Default::default()
            },
            4,
        );
        for k in 0..5 {
            h.attempt(ms(k + 1), 0, E503);
        }
        assert!(
            h.routable(0),
            "enforcing_consecutive_gateway_failure defaults to 0"
        );
        let s = h.policy.stats();
        assert_eq!(
            s.detected[EjectionType::ConsecutiveGatewayFailure as usize],
            1
        );
        assert_eq!(
            s.enforced[EjectionType::ConsecutiveGatewayFailure as usize],
            0
        );
        assert_eq!(
            h.policy.counters(NodeId(0)).1,
            0,
            "reset although not enforced"
        );
    }

    #[test]
    fn split_mode_counts_local_origin_errors_apart() {
        let p = OutlierDetectionParams {
            split_external_local_origin_errors: true,
            consecutive_local_origin_failure: 3,
            max_ejection_percent: 100,
            ..Default::default()
        };
        let mut h = od(p, 4);
        for k in 0..2 {
            h.attempt(ms(k + 1), 0, AttemptResult::Refused);
        }
        assert_eq!(
            h.policy.counters(NodeId(0)),
            (0, 0, 2),
            "5xx counters untouched"
        );
        // A connection that succeeds resets the local-origin counter, even if
        // the request then times out.
        h.connect(ms(10), 0);
        h.complete(ms(20), 0, AttemptResult::ReadTimeout, SimDuration::ZERO);
        assert_eq!(h.policy.counters(NodeId(0)).2, 1);
        h.attempt(ms(21), 0, AttemptResult::ConnectTimeout);
        h.attempt(ms(22), 0, AttemptResult::Refused);
        assert!(!h.routable(0), "third consecutive local-origin failure");
        assert_eq!(
            h.policy.stats().enforced[EjectionType::ConsecutiveLocalOriginFailure as usize],
            1
        );
    }

    /// `DetectorImpl::initialize`'s host-check-complete callback: a passing
    /// active check of an ejected host that is not FAILED_ACTIVE_HC
    /// un-ejects it at once and clears its counters; the multiplier stays,
    /// so the next ejection is longer.
    #[test]
    fn a_passing_active_check_unejects_at_once() {
        let mut h = od(c5(2), 4);
        h.attempt(ms(5_000), 0, E503);
        h.attempt(ms(5_001), 0, E503);
        assert!(!h.routable(0));
        h.host_checked(ms(5_500), 0, false);
        assert!(
            !h.routable(0),
            "a failed check (or FAILED_ACTIVE_HC) does not un-eject"
        );
        h.host_checked(ms(6_000), 1, true);
        assert!(
            !h.routable(0),
            "a check of another host does nothing to this one"
        );
        h.host_checked(ms(6_000), 0, true);
        assert!(h.routable(0), "un-ejected 1 s after, not at the 40 s tick");
        assert_eq!(h.history(0), vec![(ms(5_001), true), (ms(6_000), false)]);
        assert_eq!(h.policy.ejections_active(), 0);
        assert_eq!(h.policy.counters(NodeId(0)), (0, 0, 0));
        assert_eq!(
            h.policy.backoff(NodeId(0)),
            1,
            "unejectHost keeps the multiplier"
        );
        // A passing check of a host that is not ejected changes nothing.
        h.host_checked(ms(7_000), 0, true);
        assert_eq!(h.ejections(0), 1);
        assert_eq!(h.history(0).len(), 2);
    }

    #[test]
    fn the_uneject_on_active_check_can_be_turned_off() {
        let p = OutlierDetectionParams {
            successful_active_health_check_uneject_host: false,
            ..c5(1)
        };
        let mut h = od(p, 4);
        h.attempt(ms(5_000), 0, E503);
        h.host_checked(ms(6_000), 0, true);
        assert!(!h.routable(0), "the ejection runs its full time");
        h.advance_to(ms(40_000));
        assert!(h.routable(0));
    }

    #[test]
    fn ejection_time_grows_with_each_ejection_and_is_quantised_to_ticks() {
        // base 30 s, interval 10 s: the first ejection lasts [30, 40) s.
        let mut h = od(c5(1), 4);
        h.attempt(ms(5_000), 0, E503);
        assert!(!h.routable(0));
        h.advance_to(ms(34_999));
        assert!(!h.routable(0), "tick at 30 s: only 25 s elapsed");
        h.advance_to(ms(40_000));
        assert!(h.routable(0), "un-ejected at the 40 s tick");
        assert_eq!(h.policy.backoff(NodeId(0)), 1);
        // Re-ejected at once: multiplier 2 → 60 s, un-ejected at the first tick
        // at least 60 s later.
        h.attempt(ms(40_001), 0, E503);
        assert_eq!(h.policy.backoff(NodeId(0)), 2);
        h.advance_to(ms(100_000));
        assert!(!h.routable(0), "tick at 100 s: 59.999 s elapsed");
        h.advance_to(ms(110_000));
        assert!(h.routable(0));
        let hist = h.history(0);
        assert_eq!(
            hist,
            vec![
                (ms(5_000), true),
                (ms(40_000), false),
                (ms(40_001), true),
                (ms(110_000), false)
            ]
        );
    }

    #[test]
    fn backoff_decrements_once_per_healthy_tick_and_caps_at_max() {
        let mut h = od(c5(1), 4);
        // Re-eject at each un-ejection: 30, 60, ... the multiplier saturates at 11.
        let mut t = 1_000;
        for _ in 0..13 {
            h.attempt(ms(t), 0, E503);
            while !h.routable(0) {
                t += 10_000;
                h.advance_to(ms(t));
            }
            t += 1;
        }
        assert_eq!(
            h.policy.backoff(NodeId(0)),
            11,
            "30 s × 11 ≥ 300 s + 30 s stops growth"
        );
        // Healthy ticks lower it by one each, starting one interval after un-ejection.
        let start = h.now();
        h.advance_to(start + SimDuration::from_secs(10));
        let b0 = h.policy.backoff(NodeId(0));
        h.advance_to(start + SimDuration::from_secs(50));
        assert_eq!(h.policy.backoff(NodeId(0)), b0 - 4);
        h.advance_to(start + SimDuration::from_secs(200));
        assert_eq!(h.policy.backoff(NodeId(0)), 0);
    }

    #[test]
    fn the_capped_ejection_lasts_max_ejection_time() {
        let p = OutlierDetectionParams {
            consecutive_5xx: 1,
            max_ejection_percent: 100,
            base_ejection_time: SimDuration::from_secs(30),
            max_ejection_time: Some(SimDuration::from_secs(60)),
            ..Default::default()
        };
        let mut h = od(p, 4);
        for _ in 0..4 {
            let t = h.now() + SimDuration::from_millis(1);
            h.attempt(t, 0, E503);
            while !h.routable(0) {
                let t = h.now() + SimDuration::from_secs(10);
                h.advance_to(t);
            }
        }
        // multiplier 1, 2, 3 (30 × 2 < 60 + 30), then stays 3; time = min(90, 60) = 60
        assert_eq!(h.policy.backoff(NodeId(0)), 3);
        let hist = h.history(0);
        let last = hist.len();
        let dur = hist[last - 1].0.saturating_since(hist[last - 2].0);
        assert!(
            dur >= SimDuration::from_secs(60) && dur < SimDuration::from_secs(70),
            "{dur}"
        );
    }

    #[test]
    fn success_rate_threshold_arithmetic() {
        // 100,100,100,100,90: mean 98, population stdev 4, 98 − 1.9 × 4 = 90.4.
        let hosts: Vec<(usize, f64)> = [100.0, 100.0, 100.0, 100.0, 90.0]
            .into_iter()
            .enumerate()
            .collect();
        let thr = success_rate_threshold(490.0, &hosts, 1.9);
        assert!((thr - 90.4).abs() < 1e-9, "{thr}");
        // Envoy's own example: {50,100,100,100,100} → mean 90, stdev 20, threshold 52.
        let hosts: Vec<(usize, f64)> = [50.0, 100.0, 100.0, 100.0, 100.0]
            .into_iter()
            .enumerate()
            .collect();
        assert!((success_rate_threshold(450.0, &hosts, 1.9) - 52.0).abs() < 1e-9);
    }

    /// Drives `n` hosts through one interval with the given success counts
    /// out of `vol`: every millisecond from `start_ms`, one attempt per host.
    fn interval(h: &mut Harness<OutlierDetection>, start_ms: u64, ok: &[u32], vol: u32) {
        for k in 0..vol {
            for (node, &good) in ok.iter().enumerate() {
                let r = if k < good { OK } else { E500 };
                h.attempt(ms(start_ms + k as u64), node as u32, r);
            }
        }
    }

    fn sr_only() -> OutlierDetectionParams {
        OutlierDetectionParams {
            consecutive_5xx: 0, // `++c == 0` never holds: off
            max_ejection_percent: 100,
            ..Default::default()
        }
    }

    #[test]
    fn success_rate_ejects_strictly_below_the_threshold_at_the_tick() {
        let mut h = od(sr_only(), 5);
        interval(&mut h, 1_000, &[100, 100, 100, 100, 90], 100);
        assert!(h.routable(4), "nothing happens before the tick");
        h.advance_to(ms(10_000));
        assert!(!h.routable(4), "90 % < 90.4 %");
        assert!((0..4).all(|n| h.routable(n)));
        // mean 99.8, stdev 0.4, threshold 99.04: 99 % is an outlier.
        let mut h = od(sr_only(), 5);
        interval(&mut h, 1_000, &[100, 100, 100, 100, 99], 100);
        h.advance_to(ms(10_000));
        assert!(
            !h.routable(4),
            "any shortfall against 4 perfect peers is an outlier"
        );
        // Strict: with factor 0 the threshold is the mean; equal hosts stay.
        let mut h = od(
            OutlierDetectionParams {
                success_rate_stdev_factor: 0,
                ..sr_only()
            },
            5,
        );
        interval(&mut h, 1_000, &[100; 5], 100);
        h.advance_to(ms(10_000));
        assert!(
            (0..5).all(|n| h.routable(n)),
            "sr == threshold is not below it"
        );
    }

    #[test]
    fn success_rate_needs_volume_and_minimum_hosts() {
        // 99 requests per host: below the volume of 100, nothing is evaluated.
        let mut h = od(sr_only(), 5);
        interval(&mut h, 1_000, &[99, 99, 99, 99, 0], 99);
        h.advance_to(ms(10_000));
        assert!(h.routable(4));
        // Four hosts: fewer than success_rate_minimum_hosts.
        let mut h = od(sr_only(), 4);
        interval(&mut h, 1_000, &[100, 100, 100, 0], 100);
        h.advance_to(ms(10_000));
        assert!(h.routable(3));
        // Only the interval that just ended counts: data of the one before is gone.
        let mut h = od(sr_only(), 5);
        interval(&mut h, 1_000, &[100, 100, 100, 100, 0], 100);
        h.advance_to(ms(9_999));
        h.policy.p.enforcing_success_rate = 0; // observe the detection only
        h.advance_to(ms(10_000));
        assert_eq!(
            h.policy.stats().detected[EjectionType::SuccessRate as usize],
            1
        );
        h.advance_to(ms(20_000));
        assert_eq!(
            h.policy.stats().detected[EjectionType::SuccessRate as usize],
            1,
            "the second tick sees an empty interval"
        );
    }

    #[test]
    fn failure_percentage_is_non_strict() {
        let p = OutlierDetectionParams {
            consecutive_5xx: 0,
            enforcing_success_rate: 0,
            failure_percentage_threshold: 5,
            failure_percentage_request_volume: 100,
            failure_percentage_minimum_hosts: 4,
            enforcing_failure_percentage: 100,
            max_ejection_percent: 100,
            ..Default::default()
        };
        let mut h = od(p, 4);
        // node 0: exactly 5 % failures (ejected, `>=`); node 1: 4 % (kept).
        interval(&mut h, 1_000, &[95, 96, 100, 100], 100);
        h.advance_to(ms(10_000));
        assert!(!h.routable(0));
        assert!(h.routable(1));
    }

    #[test]
    fn max_ejection_percent_strict_mode() {
        // 3 hosts at 50 %: (0+1)/3 = 33 % ≤ 50 → first allowed; (1+1)/3 = 67 % → refused.
        let p = OutlierDetectionParams {
            consecutive_5xx: 1,
            max_ejection_percent: 50,
            ..Default::default()
        };
        let mut h = od(p, 3);
        h.attempt(ms(1), 0, E503);
        h.attempt(ms(2), 1, E503);
        h.attempt(ms(3), 2, E503);
        assert_eq!(h.policy.ejections_active(), 1);
        assert_eq!(h.policy.stats().overflow, 2);
        // Default 10 % on 9 hosts: 1/9 = 11 % > 10 → nothing can ever be ejected.
        let mut h = od(c5_default_cap(), 9);
        h.attempt(ms(1), 0, E503);
        assert!(h.routable(0));
        assert_eq!(h.policy.stats().overflow, 1);
        // ... unless always_eject_one_host (Envoy ≥ 1.31).
        let mut h = od(
            OutlierDetectionParams {
                always_eject_one_host: true,
                ..c5_default_cap()
            },
            9,
        );
        h.attempt(ms(1), 0, E503);
        h.attempt(ms(2), 1, E503);
        assert!(!h.routable(0));
        assert!(h.routable(1), "only the first ejection bypasses the cap");
    }

    fn c5_default_cap() -> OutlierDetectionParams {
        OutlierDetectionParams {
            consecutive_5xx: 1,
            ..Default::default()
        }
    }

    #[test]
    fn max_ejection_percent_legacy_mode() {
        // 3 hosts at 50 %: 0/3 < 50 → eject; 1/3 = 33 % < 50 → eject; 2/3 = 67 % → refused.
        let p = OutlierDetectionParams {
            consecutive_5xx: 1,
            max_ejection_percent: 50,
            max_ejection_percent_mode: MaxEjectionPercentMode::Legacy,
            ..Default::default()
        };
        let mut h = od(p, 3);
        h.attempt(ms(1), 0, E503);
        h.attempt(ms(2), 1, E503);
        h.attempt(ms(3), 2, E503);
        assert_eq!(
            h.policy.ejections_active(),
            2,
            "overshoots 50 % by one host"
        );
        // The default 10 % still lets the first host go in a small cluster.
        let p = OutlierDetectionParams {
            max_ejection_percent_mode: MaxEjectionPercentMode::Legacy,
            ..c5_default_cap()
        };
        let mut h = od(p, 4);
        h.attempt(ms(1), 0, E503);
        h.attempt(ms(2), 1, E503);
        assert!(!h.routable(0));
        assert!(h.routable(1));
    }

    #[test]
    fn a_capped_host_is_reconsidered_only_after_another_full_run_of_errors() {
        let p = OutlierDetectionParams {
            consecutive_5xx: 3,
            max_ejection_percent: 25,
            ..Default::default()
        };
        let mut h = od(p, 4);
        for k in 0..3 {
            h.attempt(ms(k + 1), 0, E503);
        }
        assert!(!h.routable(0));
        for k in 0..3 {
            h.attempt(ms(k + 10), 1, E503);
        }
        assert!(h.routable(1), "capped");
        assert_eq!(
            h.policy.counters(NodeId(1)).0,
            0,
            "and the counter was reset anyway"
        );
    }

    #[test]
    fn enforcement_is_a_roll_per_detection() {
        let p = OutlierDetectionParams {
            consecutive_5xx: 1,
            enforcing_consecutive_5xx: 50,
            max_ejection_percent: 100,
            ..Default::default()
        };
        let mut h = od(p, 1000);
        for n in 0..1000 {
            h.attempt(ms(1), n, E503);
        }
        let ejected = h.policy.ejections_active();
        assert!((420..580).contains(&ejected), "about half: {ejected}");
    }

    #[test]
    fn jitter_extends_the_ejection_within_bounds() {
        let p = OutlierDetectionParams {
            consecutive_5xx: 1,
            max_ejection_percent: 100,
            interval: SimDuration::from_secs(1),
            max_ejection_time_jitter: SimDuration::from_secs(5),
            ..Default::default()
        };
        let mut h = od(p, 200);
        for n in 0..200 {
            h.attempt(ms(1), n, E503);
        }
        h.advance_to(ms(40_000));
        let mut durations: Vec<u64> = (0..200)
            .map(|n| {
                let hist = h.history(n);
                hist[1].0.saturating_since(hist[0].0).as_micros() / 1_000_000
            })
            .collect();
        durations.sort();
        assert!(durations[0] >= 30 && durations[199] <= 35, "{durations:?}");
        assert!(durations[0] < durations[199], "jitter spreads un-ejections");
    }

    #[test]
    fn sr_and_fp_in_one_tick_eject_twice_like_a_release_build() {
        let p = OutlierDetectionParams {
            consecutive_5xx: 0,
            enforcing_failure_percentage: 100,
            failure_percentage_threshold: 50,
            max_ejection_percent: 100,
            ..Default::default()
        };
        let mut h = od(p, 5);
        interval(&mut h, 1_000, &[100, 100, 100, 100, 0], 100);
        h.advance_to(ms(10_000));
        assert!(!h.routable(4));
        assert_eq!(h.policy.ejections_active(), 2, "one host, counted twice");
        assert_eq!(h.ejections(4), 1, "but one ejection in the metrics");
        assert_eq!(h.policy.backoff(NodeId(4)), 2);
    }

    #[test]
    fn istio_mapping() {
        let i: IstioParams = serde_json::from_value(serde_json::json!({
            "consecutive5xxErrors": 3, "interval": "5s", "baseEjectionTime": "15s",
            "maxEjectionPercent": 50, "minHealthPercent": 30
        }))
        .unwrap();
        let e = i.to_envoy();
        assert_eq!(e.consecutive_5xx, 3);
        assert_eq!(e.enforcing_consecutive_5xx, 100);
        assert_eq!(e.enforcing_success_rate, 0);
        assert_eq!(e.enforcing_failure_percentage, 0);
        assert_eq!(e.enforcing_consecutive_gateway_failure, 0);
        assert_eq!(e.interval, SimDuration::from_secs(5));
        assert_eq!(e.base_ejection_time, SimDuration::from_secs(15));
        assert_eq!(e.max_ejection_percent, 50);
        assert_eq!(e.healthy_panic_threshold, 30.0);
        // Defaults: panic off; 0 disables consecutive 5xx enforcement.
        let d = IstioParams::default().to_envoy();
        assert_eq!(d.healthy_panic_threshold, 0.0);
        assert_eq!(d.consecutive_5xx, 5);
        let off = IstioParams {
            consecutive_5xx_errors: Some(0),
            consecutive_gateway_errors: Some(4),
            ..Default::default()
        }
        .to_envoy();
        assert_eq!(off.enforcing_consecutive_5xx, 0);
        assert_eq!(
            (
                off.consecutive_gateway_failure,
                off.enforcing_consecutive_gateway_failure
            ),
            (4, 100)
        );
        // istiod cannot tell 0 from unset: maxEjectionPercent 0 leaves Envoy's 10.
        let zero = IstioParams {
            max_ejection_percent: Some(0),
            ..Default::default()
        }
        .to_envoy();
        assert_eq!(zero.max_ejection_percent, 10);
        // Deprecated consecutiveErrors: `applyOutlierDetection` does not read
        // it (Istio ≥ 1.7), so Envoy's defaults apply, with a warning.
        let legacy = IstioParams {
            consecutive_errors: Some(7),
            ..Default::default()
        };
        assert_eq!(legacy.to_envoy(), IstioParams::default().to_envoy());
        assert_eq!(
            (
                legacy.to_envoy().consecutive_5xx,
                legacy.to_envoy().enforcing_consecutive_5xx
            ),
            (5, 100)
        );
        assert_eq!(legacy.warnings()[0].0, "consecutiveErrors");
        // `if service.SupportsUnhealthyEndpoints() { minHealthPercent = 0 }`.
        let unready = IstioParams {
            min_health_percent: 60,
            send_unhealthy_endpoints: true,
            ..Default::default()
        };
        assert_eq!(unready.to_envoy().healthy_panic_threshold, 0.0);
        assert_eq!(unready.healthy_panic_threshold(), Some(0.0));
        assert_eq!(unready.warnings()[0].0, "minHealthPercent");
        let bad = serde_json::from_value::<IstioParams>(serde_json::json!({"consecutive5xx": 3}));
        assert!(bad.is_err(), "Istio spelling only");
    }

    #[test]
    fn validation() {
        let p = OutlierDetectionParams {
            base_ejection_time: SimDuration::from_secs(400),
            max_ejection_time: Some(SimDuration::from_secs(300)),
            ..Default::default()
        };
        assert_eq!(p.validate().unwrap_err().0, "max_ejection_time");
        let p = OutlierDetectionParams {
            base_ejection_time: SimDuration::from_secs(400),
            ..Default::default()
        };
        assert_eq!(p.max_ejection_time(), SimDuration::from_secs(400));
        assert!(p.validate().is_ok());
        let p = OutlierDetectionParams {
            enforcing_success_rate: 101,
            ..Default::default()
        };
        assert_eq!(p.validate().unwrap_err().0, "enforcing_success_rate");
    }
}
