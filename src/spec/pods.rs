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
pub use crate::spec::model::{KubeProbe, PodParams, Pods, Rollout};
use crate::spec::model_spec::{
    DurationDist, KubeProbeSpec, LatencySpec, ModelSpec, NodeSpec, PodSpec, RollingUpdateSpec,
};

type Invalid = (String, String);

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Invalid {
    (field.into(), reason.into())
}

/// `d` as a distribution to draw from (a fixed duration exactly), checked.
fn drawn(d: &DurationDist, field: &str) -> Result<LatencySpec, Invalid> {
    super::distribution::drawn(d, field, false)
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
        kind: p.kind,
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
        strategy: base.strategy,
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
        if n.pod.as_ref().is_some_and(|p| p.strategy.is_some()) {
            return Err(invalid(
                format!("nodes[{i}].pod.strategy"),
                "the Deployment's strategy is one for all its pods: give it in `pods`",
            ));
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
        let (surge, unavailable) = r.budgets(spec.pods.as_ref().and_then(|p| p.strategy.as_ref()));
        if surge.written() == 0 && unavailable.written() == 0 {
            return Err(invalid(
                field("max_unavailable"),
                "may not be 0 when max_surge is 0: the update could never take a pod down \
                 nor add one (the API server refuses it)",
            ));
        }
        let max_surge = surge.scaled(replicas, true);
        let mut max_unavailable = unavailable.scaled(replicas, false);
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
        let (surge, unavailable) = s.budgets(spec.pods.as_ref().and_then(|p| p.strategy.as_ref()));
        if surge.scaled(p.replicas, true) == 0 && unavailable.scaled(p.replicas, false) == 0 {
            w.push((
                format!("faults[{}].max_unavailable", r.fault),
                format!(
                    "max_surge {} and max_unavailable {} both come to 0 pods of {}: the \
                     controller takes 1 pod down at a time instead{}",
                    surge,
                    unavailable,
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
    use crate::spec::IntOrPercent;

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
