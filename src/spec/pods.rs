//! Pods as the model file writes them: the model-level `pods` block (the
//! defaults of every node), `nodes[].pod` (one node's own values, field by
//! field over the block), the kubelet's probes, and the `rolling_update`
//! entry of `faults`; then the same checked and resolved per node slot
//! ([`Pods`]), as a run reads them.
//!
//! The defaults are Kubernetes' own (`pkg/apis/core/v1/defaults.go`,
//! `SetDefaults_Pod`, `SetDefaults_Probe`, `SetDefaults_Deployment`):
//! `terminationGracePeriodSeconds` 30, no preStop hook, probes with period
//! 10 s, timeout 1 s, `failureThreshold` 3, `successThreshold` 1, no initial
//! delay; a rolling update's `maxSurge` and `maxUnavailable` 25 %. What
//! Kubernetes cannot know is hcsim's to default, and defaults to nothing:
//! a process listening at once (`start_time` 0 s), endpoints reaching the
//! gateway at once (`endpoint_propagation` 0 s), and `shutdown: immediate`
//! (a process without a SIGTERM handler exits at once, as most do).

use crate::engine::SimDuration;
use crate::spec::model_spec::{DurationDist, LatencySpec, ModelSpec, NodeSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A pod's lifecycle: `pods` holds every node's defaults, `nodes[].pod` one
/// node's own values (each field given there wins).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PodSpec {
    /// From the container's start until the process listens: a duration or
    /// a distribution, drawn at every start. Default 0s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<DurationDist>,
    /// `terminationGracePeriodSeconds`: from the start of the preStop hook
    /// (or of SIGTERM, without one) until SIGKILL. Default 30s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period: Option<SimDuration>,
    /// `lifecycle.preStop` as a sleep (`exec: sleep N` or the `sleep`
    /// action): the process keeps serving, SIGTERM comes after. Default 0s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_stop: Option<SimDuration>,
    /// What the process does on SIGTERM. Default `immediate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown: Option<Shutdown>,
    /// From a change of the pod's readiness (or its deletion) until a gateway
    /// replica routes by it (EndpointSlice → watch → the controller's sync),
    /// drawn for every change and every replica. Default 0s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_propagation: Option<DurationDist>,
    /// `readinessProbe`: without one the pod is ready as soon as its
    /// container runs (before the process listens, when `start_time` > 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness: Option<KubeProbeSpec>,
    /// `livenessProbe`: `failure_threshold` failures in a row restart the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liveness: Option<KubeProbeSpec>,
    /// `startupProbe`: liveness and readiness wait until it succeeds;
    /// `failure_threshold` failures in a row restart the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup: Option<KubeProbeSpec>,
}

/// What the process does on SIGTERM.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Shutdown {
    /// It exits at once: connections open to it are reset, requests in
    /// flight are cut.
    #[default]
    Immediate,
    /// It stops accepting (new connects are refused), finishes the requests
    /// it has, closes its idle keep-alive connections, and exits.
    Graceful,
}

/// A kubelet probe (`prober/worker.go`): an HTTP GET through the node's
/// workers, like any request, so a hung or saturated process fails it.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KubeProbeSpec {
    /// `initialDelaySeconds`, from the container's start. Default 0s.
    #[serde(default)]
    pub initial_delay: SimDuration,
    /// `periodSeconds`. Default 10s.
    #[serde(default = "ten_seconds")]
    pub period: SimDuration,
    /// `timeoutSeconds`. Default 1s.
    #[serde(default = "one_second")]
    pub timeout: SimDuration,
    /// `failureThreshold`. Default 3.
    #[serde(default = "three")]
    pub failure_threshold: u32,
    /// `successThreshold` (1 for liveness and startup probes). Default 1.
    #[serde(default = "one")]
    pub success_threshold: u32,
}

impl Default for KubeProbeSpec {
    fn default() -> Self {
        KubeProbeSpec {
            initial_delay: SimDuration::ZERO,
            period: ten_seconds(),
            timeout: one_second(),
            failure_threshold: 3,
            success_threshold: 1,
        }
    }
}

fn ten_seconds() -> SimDuration {
    SimDuration::from_secs(10)
}
fn one_second() -> SimDuration {
    SimDuration::from_secs(1)
}
fn three() -> u32 {
    3
}
fn one() -> u32 {
    1
}

/// `{"kind": "rolling_update", ...}` in `faults`: the Deployment's pods are
/// replaced by new ones as its controller does (`maxSurge`, `maxUnavailable`).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RollingUpdateSpec {
    /// When the new revision is applied.
    #[serde(default)]
    pub at: DurationDist,
    /// `maxSurge`: pods above the replica count during the update, a
    /// count or a percentage of the replicas rounded up. Default "25%".
    #[serde(default = "quarter")]
    pub max_surge: IntOrPercent,
    /// `maxUnavailable`: pods below the replica count, a count or a
    /// percentage rounded down. Default "25%".
    #[serde(default = "quarter")]
    pub max_unavailable: IntOrPercent,
}

fn quarter() -> IntOrPercent {
    IntOrPercent::Percent(25)
}

/// A count (`1`) or a percentage (`"25%"`), Kubernetes' `IntOrString`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOrPercent {
    Int(u32),
    Percent(u32),
}

impl IntOrPercent {
    /// The number written, a count or a percentage (`getIntOrPercentValue`).
    pub fn written(self) -> u32 {
        match self {
            IntOrPercent::Int(n) | IntOrPercent::Percent(n) => n,
        }
    }

    /// The value against `total` (`intstr.GetScaledValueFromIntOrPercent`):
    /// a percentage rounded up or down.
    pub fn scaled(self, total: u32, round_up: bool) -> u32 {
        match self {
            IntOrPercent::Int(n) => n,
            IntOrPercent::Percent(p) => {
                let x = p as u64 * total as u64;
                (if round_up { x.div_ceil(100) } else { x / 100 }) as u32
            }
        }
    }
}

impl std::fmt::Display for IntOrPercent {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            IntOrPercent::Int(n) => write!(f, "{n}"),
            IntOrPercent::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl Serialize for IntOrPercent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            IntOrPercent::Int(n) => s.serialize_u32(*n),
            IntOrPercent::Percent(_) => s.serialize_str(&self.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for IntOrPercent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = IntOrPercent;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a count (1) or a percentage (\"25%\")")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<IntOrPercent, E> {
                u32::try_from(v)
                    .map(IntOrPercent::Int)
                    .map_err(|_| E::custom(format!("{v} is too large a count")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<IntOrPercent, E> {
                Err(E::custom(format!("must not be negative, found {v}")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<IntOrPercent, E> {
                let bad = || {
                    E::custom(format!(
                        "expected a percentage such as \"25%\", found {v:?}"
                    ))
                };
                let p = v.strip_suffix('%').ok_or_else(bad)?;
                let p: u32 = p.trim().parse().map_err(|_| bad())?;
                if p > 100 {
                    return Err(E::custom(format!(
                        "a percentage is at most 100%, found {v:?}"
                    )));
                }
                Ok(IntOrPercent::Percent(p))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for IntOrPercent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "IntOrPercent".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A count (1) or a percentage of the replicas (\"25%\").",
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": "^[0-9]+%$"}
            ]
        })
    }
}

/// A probe checked, as the kubelet runs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KubeProbe {
    pub initial_delay: SimDuration,
    pub period: SimDuration,
    pub timeout: SimDuration,
    pub failure_threshold: u32,
    pub success_threshold: u32,
}

/// One node slot's pod lifecycle, its fields resolved (`nodes[].pod` over
/// `pods` over the defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct PodParams {
    pub start_time: LatencySpec,
    pub grace: SimDuration,
    pub pre_stop: SimDuration,
    pub shutdown: Shutdown,
    pub propagation: LatencySpec,
    pub readiness: Option<KubeProbe>,
    pub liveness: Option<KubeProbe>,
    pub startup: Option<KubeProbe>,
}

/// A rolling update, resolved against the replica count (`ResolveFenceposts`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rollout {
    /// Its entry in `faults`.
    pub fault: usize,
    pub at: SimDuration,
    pub max_surge: u32,
    pub max_unavailable: u32,
}

/// The pods of a model, as a run reads them.
#[derive(Clone, Debug, PartialEq)]
pub struct Pods {
    /// Per node slot (the model's nodes, then the surge slots): its pod's
    /// lifecycle; `None` for a node that is not a pod.
    pub slots: Vec<Option<PodParams>>,
    /// The Deployment's replicas: the model's nodes that are pods.
    pub replicas: u32,
    /// The slots after the model's nodes, empty at the start, where rolling
    /// updates put their new pods: `max_surge` + the replicas.
    pub surge_slots: u32,
    pub rollouts: Vec<Rollout>,
}

impl Pods {
    /// The slot of a model node that is a pod, or of a surge pod.
    pub fn is_pod(&self, node: usize) -> bool {
        self.slots.get(node).is_some_and(|s| s.is_some())
    }
}

type Invalid = (String, String);

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Invalid {
    (field.into(), reason.into())
}

/// `d` as a distribution to draw from (a fixed duration exactly), checked.
fn drawn(d: &DurationDist, field: &str) -> Result<LatencySpec, Invalid> {
    super::validate::drawn(d, field, false)
}

fn probe(p: &KubeProbeSpec, field: &str) -> Result<KubeProbe, Invalid> {
    if p.period.is_zero() {
        return Err(invalid(format!("{field}.period"), "must be positive"));
    }
    if p.timeout.is_zero() {
        return Err(invalid(format!("{field}.timeout"), "must be positive"));
    }
    if p.failure_threshold == 0 {
        return Err(invalid(
            format!("{field}.failure_threshold"),
            "must be at least 1 (the kubelet's minimum)",
        ));
    }
    if p.success_threshold == 0 {
        return Err(invalid(
            format!("{field}.success_threshold"),
            "must be at least 1 (the kubelet's minimum)",
        ));
    }
    Ok(KubeProbe {
        initial_delay: p.initial_delay,
        period: p.period,
        timeout: p.timeout,
        failure_threshold: p.failure_threshold,
        success_threshold: p.success_threshold,
    })
}

/// `node` over `model` (each field given in `nodes[].pod` wins).
fn merged(model: Option<&PodSpec>, node: Option<&PodSpec>) -> PodSpec {
    let base = model.cloned().unwrap_or_default();
    let Some(n) = node else {
        return base;
    };
    PodSpec {
        start_time: n.start_time.clone().or(base.start_time),
        termination_grace_period: n.termination_grace_period.or(base.termination_grace_period),
        pre_stop: n.pre_stop.or(base.pre_stop),
        shutdown: n.shutdown.or(base.shutdown),
        endpoint_propagation: n.endpoint_propagation.clone().or(base.endpoint_propagation),
        readiness: n.readiness.or(base.readiness),
        liveness: n.liveness.or(base.liveness),
        startup: n.startup.or(base.startup),
    }
}

/// One slot's lifecycle, checked; `field` is where it was written.
fn params(p: &PodSpec, field: &str) -> Result<PodParams, Invalid> {
    let at = |f: &str| format!("{field}.{f}");
    let zero = DurationDist::Fixed(SimDuration::ZERO);
    let params = PodParams {
        start_time: drawn(p.start_time.as_ref().unwrap_or(&zero), &at("start_time"))?,
        grace: p
            .termination_grace_period
            .unwrap_or(SimDuration::from_secs(30)),
        pre_stop: p.pre_stop.unwrap_or(SimDuration::ZERO),
        shutdown: p.shutdown.unwrap_or_default(),
        propagation: drawn(
            p.endpoint_propagation.as_ref().unwrap_or(&zero),
            &at("endpoint_propagation"),
        )?,
        readiness: p
            .readiness
            .as_ref()
            .map(|x| probe(x, &at("readiness")))
            .transpose()?,
        liveness: p
            .liveness
            .as_ref()
            .map(|x| probe(x, &at("liveness")))
            .transpose()?,
        startup: p
            .startup
            .as_ref()
            .map(|x| probe(x, &at("startup")))
            .transpose()?,
    };
    for (name, pr) in [("liveness", &params.liveness), ("startup", &params.startup)] {
        if let Some(pr) = pr
            && pr.success_threshold != 1
        {
            return Err(invalid(
                at(&format!("{name}.success_threshold")),
                format!(
                    "must be 1 for a {name} probe (the API server refuses other values), found {}",
                    pr.success_threshold
                ),
            ));
        }
    }
    Ok(params)
}

/// The name of surge slot `i` (from 1): `new-1`, … (with a suffix when a
/// model node already has that name).
fn surge_name(nodes: &[NodeSpec], i: u32) -> String {
    let mut name = format!("new-{i}");
    while nodes.iter().any(|n| n.name == name) {
        name.push('\'');
    }
    name
}

/// The model's pods, checked: `None` when no node is a pod. Also returns
/// the surge slots' node specs to append to the model's nodes (copies of
/// the first pod node, which a Deployment's pods all are).
pub(crate) fn pods(spec: &ModelSpec) -> Result<Option<(Pods, Vec<NodeSpec>)>, Invalid> {
    let any_node_pod = spec.nodes.iter().any(|n| n.pod.is_some());
    let rollouts_in: Vec<(usize, &RollingUpdateSpec)> = spec
        .faults
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match f {
            super::FaultSpec::RollingUpdate(r) => Some((i, r)),
            _ => None,
        })
        .collect();
    if spec.pods.is_none() && !any_node_pod {
        if let Some((i, _)) = rollouts_in.first() {
            return Err(invalid(
                format!("faults[{i}]"),
                "a rolling update replaces pods, and no node is one: add a `pods` block \
                 (every node a pod) or `nodes[].pod`",
            ));
        }
        return Ok(None);
    }
    let mut slots = Vec::with_capacity(spec.nodes.len());
    for (i, n) in spec.nodes.iter().enumerate() {
        if spec.pods.is_none() && n.pod.is_none() {
            slots.push(None);
            continue;
        }
        let field = if n.pod.is_some() {
            format!("nodes[{i}].pod")
        } else {
            "pods".to_string()
        };
        slots.push(Some(params(
            &merged(spec.pods.as_ref(), n.pod.as_ref()),
            &field,
        )?));
    }
    let first = slots.iter().position(|s| s.is_some());
    let replicas = slots.iter().filter(|s| s.is_some()).count() as u32;
    let mut rollouts = Vec::with_capacity(rollouts_in.len());
    for (i, r) in &rollouts_in {
        let field = |f: &str| format!("faults[{i}].{f}");
        let Some(at) = r.at.fixed() else {
            return Err(invalid(
                field("at"),
                "a rolling update starts at a fixed time (a duration such as \"30s\")",
            ));
        };
        if at >= spec.duration {
            return Err(invalid(
                field("at"),
                format!(
                    "starts at {at}, not before the end of the run ({})",
                    spec.duration
                ),
            ));
        }
        // `ResolveFenceposts` (deployment_util.go): surge rounds up,
        // unavailable down; both zero is refused by the API server when
        // written so, and made unavailable = 1 when percentages round so.
        // `ValidateRollingUpdateDeployment`: "may not be 0 when `maxSurge` is 0".
        if r.max_surge.written() == 0 && r.max_unavailable.written() == 0 {
            return Err(invalid(
                field("max_unavailable"),
                "may not be 0 when max_surge is 0: the update could never take a pod down \
                 nor add one (the API server refuses it)",
            ));
        }
        let max_surge = r.max_surge.scaled(replicas, true);
        let mut max_unavailable = r.max_unavailable.scaled(replicas, false);
        if max_surge == 0 && max_unavailable == 0 {
            max_unavailable = 1;
        }
        rollouts.push(Rollout {
            fault: *i,
            at,
            max_surge,
            max_unavailable,
        });
    }
    // Room for the surge pods and for a replacement of every old pod while
    // the old one drains or its endpoint is still listed somewhere: a slot
    // is reused only once no gateway replica lists its old pod.
    let surge_slots = match rollouts.iter().map(|r| r.max_surge).max() {
        Some(s) => s + replicas,
        None => 0,
    };
    let mut extra = Vec::with_capacity(surge_slots as usize);
    if let Some(first) = first {
        let template = slots[first].clone();
        for k in 1..=surge_slots {
            let mut n = spec.nodes[first].clone();
            n.name = surge_name(&spec.nodes, k);
            n.pod = None;
            n.down = false;
            extra.push(n);
            slots.push(template.clone());
        }
    }
    Ok(Some((
        Pods {
            slots,
            replicas,
            surge_slots,
            rollouts,
        },
        extra,
    )))
}

/// Legal but suspicious pod settings, as `(field, message)`: a preStop
/// longer than the grace period (the kubelet allows it, and cuts it), a
/// probe whose timeout is not shorter than its period.
pub(crate) fn warnings(spec: &ModelSpec) -> Vec<(String, String)> {
    let mut w = Vec::new();
    let mut blocks: Vec<(String, &PodSpec, PodSpec)> = Vec::new();
    if let Some(p) = &spec.pods {
        blocks.push(("pods".into(), p, p.clone()));
    }
    for (i, n) in spec.nodes.iter().enumerate() {
        if let Some(p) = &n.pod {
            blocks.push((
                format!("nodes[{i}].pod"),
                p,
                merged(spec.pods.as_ref(), Some(p)),
            ));
        }
    }
    for (field, own, m) in blocks {
        let grace = m
            .termination_grace_period
            .unwrap_or(SimDuration::from_secs(30));
        let mentions = own.pre_stop.is_some() || own.termination_grace_period.is_some();
        if mentions
            && let Some(pre) = m.pre_stop
            && pre > grace
        {
            let at = if own.pre_stop.is_some() {
                "pre_stop"
            } else {
                "termination_grace_period"
            };
            w.push((
                format!("{field}.{at}"),
                format!(
                    "the preStop sleep ({pre}) is longer than the termination grace period \
                     ({grace}): the kubelet stops waiting for it at {grace}, sends SIGTERM, \
                     and SIGKILL 2s later"
                ),
            ));
        }
        for (name, pr) in [
            ("readiness", &own.readiness),
            ("liveness", &own.liveness),
            ("startup", &own.startup),
        ] {
            if let Some(pr) = pr
                && pr.timeout >= pr.period
            {
                w.push((
                    format!("{field}.{name}.timeout"),
                    format!(
                        "{} is not shorter than the period ({}): the kubelet runs one probe \
                         at a time, so probes that time out run back to back and the next \
                         tick waits for them",
                        pr.timeout, pr.period
                    ),
                ));
            }
        }
    }
    w
}

/// What the rest of the model must agree with when nodes are pods: a
/// crash of a pod is restarted by the kubelet (no `restart_delay`: the
/// pod's `start_time` says how long it takes).
pub(crate) fn check_with_faults(spec: &ModelSpec, p: &Pods) -> Result<(), Invalid> {
    for (i, f) in spec.faults.iter().enumerate() {
        if let super::FaultSpec::Crash(w) = f
            && w.restart_delay.is_some()
            && let Some(n) = spec.nodes.iter().position(|n| n.name == w.node)
            && p.is_pod(n)
        {
            return Err(invalid(
                format!("faults[{i}].restart_delay"),
                format!(
                    "node \"{}\" is a pod: the kubelet restarts its container (after its \
                     back-off), and the pod's `start_time` is how long it takes to listen",
                    w.node
                ),
            ));
        }
    }
    Ok(())
}

/// A rolling update whose percentages both round to zero: the controller
/// then takes one pod down at a time (`ResolveFenceposts`), which for a
/// single replica means no pod for a while.
pub(crate) fn rollout_warnings(spec: &ModelSpec, p: &Pods) -> Vec<(String, String)> {
    let mut w = Vec::new();
    for r in &p.rollouts {
        let super::FaultSpec::RollingUpdate(s) = &spec.faults[r.fault] else {
            continue;
        };
        if s.max_surge.scaled(p.replicas, true) == 0
            && s.max_unavailable.scaled(p.replicas, false) == 0
        {
            w.push((
                format!("faults[{}].max_unavailable", r.fault),
                format!(
                    "max_surge {} and max_unavailable {} both come to 0 pods of {}: the \
                     controller takes 1 pod down at a time instead{}",
                    s.max_surge,
                    s.max_unavailable,
                    p.replicas,
                    if p.replicas == 1 {
                        ", so the service has no pod until the new one is ready"
                    } else {
                        ""
                    }
                ),
            ));
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_as_resolve_fenceposts_does() {
        // deployment_util.go ResolveFenceposts: surge rounds up, unavailable down.
        assert_eq!(IntOrPercent::Percent(25).scaled(3, true), 1);
        assert_eq!(IntOrPercent::Percent(25).scaled(3, false), 0);
        assert_eq!(IntOrPercent::Percent(25).scaled(10, true), 3);
        assert_eq!(IntOrPercent::Percent(25).scaled(10, false), 2);
        assert_eq!(IntOrPercent::Int(2).scaled(10, true), 2);
    }

    #[test]
    fn counts_and_percentages_read_both_forms() {
        let a: IntOrPercent = serde_json::from_value(serde_json::json!(1)).unwrap();
        assert_eq!(a, IntOrPercent::Int(1));
        let b: IntOrPercent = serde_json::from_value(serde_json::json!("30%")).unwrap();
        assert_eq!(b, IntOrPercent::Percent(30));
        assert_eq!(serde_json::to_value(b).unwrap(), serde_json::json!("30%"));
        for bad in [
            serde_json::json!("30"),
            serde_json::json!(-1),
            serde_json::json!("120%"),
        ] {
            assert!(serde_json::from_value::<IntOrPercent>(bad).is_err());
        }
    }
}
