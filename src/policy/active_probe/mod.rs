//! Active probing: a prober sends probes to every node on a schedule and
//! ejects a node after consecutive failures, whether or not clients send it
//! traffic. One mechanism — a [`ProberPool`] that sends probes, a flavour's
//! schedule and state machine, a [`GatewayView`] that publishes verdicts —
//! with the flavours users run:
//!
//! | `flavor` | schedule | state machine | starts |
//! |---|---|---|---|
//! | `generic` (seed 004) | rounds over all nodes on a fixed grid | `fall` failures / `rise` successes in a row | up |
//! | `haproxy` (`check`) | per server, next check `inter`/`fastinter`/`downinter` after the previous one ends; fixed start offsets | health counter in `[0, rise+fall-1]`, starts at `rise` | up, one failure from down |
//! | `envoy` (active HC) | per host, next check after the previous one ends; jitter; 60 s while the cluster has no traffic | thresholds; an unexpected HTTP status ejects at once | unhealthy; first success makes it healthy |
//! | `tengine` (`check`) | per worker, polls every `interval/2` from a random phase; checks when `interval` passed since the last one ended | `fall` / `rise` in a row | down (`default_down`) |
//! | `kubernetes` (readiness) | fixed-rate ticker from the container's start (a random initial sleep after a kubelet restart); an extra probe when the pod turns NotReady | run-length: `failure_threshold` / `success_threshold` | NotReady; endpoint change reaches the proxy after `propagation_delay` |

mod defaults;
mod envoy;
mod generic;
mod haproxy;
mod kubernetes;
pub mod statuses;
mod tengine;

pub use envoy::{ClusterStart, EnvoyParams};
pub use generic::{GenericParams, Schedule};
pub use haproxy::{HaproxyCheckParams, HaproxyVersion, Observe, OnError};
pub use kubernetes::{KubeletStart, ReadinessParams};
pub use statuses::{HaproxyExpect, StatusRange, StatusSet};
pub use tengine::{StatusClass, TengineParams};

use super::{
    AttemptReport, HealthPolicy, Interests, Now, PolicyCx, PolicyParams, PolicyTimer, ProbeKind,
    ProbeOutcome, ProbeRequest, Scope, periodic_events_per_s,
};
use crate::engine::SimDuration;
use crate::ids::NodeId;
use crate::policy::support::gateway_view::{GatewayView, Propagation};
use crate::policy::support::prober_pool::ProberPool;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An active probe policy as written in a model file; `flavor` is the tag.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(tag = "flavor", rename_all = "snake_case", deny_unknown_fields)]
pub enum ActiveProbeSpec {
    /// Seed 004's prober: rounds over all nodes every `interval`.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Generic(GenericParams),
    /// HAProxy 2.6 `server ... check` (with `option httpchk` for `probe: http`).
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Haproxy(HaproxyCheckParams),
    /// Envoy's active health checking of a cluster.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Envoy(EnvoyParams),
    /// tengine / nginx_upstream_check_module `check`.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Tengine(TengineParams),
    /// A Kubernetes readiness probe, seen by a proxy through endpoints.
    #[serde(deserialize_with = "crate::diagnostics::tracked")]
    Kubernetes(ReadinessParams),
}

impl ActiveProbeSpec {
    /// The time between two probes of a node.
    pub fn period(&self) -> SimDuration {
        match self {
            ActiveProbeSpec::Generic(p) => p.interval,
            ActiveProbeSpec::Haproxy(p) => p.inter,
            ActiveProbeSpec::Envoy(p) => p.interval,
            ActiveProbeSpec::Tengine(p) => p.interval,
            ActiveProbeSpec::Kubernetes(p) => p.period,
        }
    }

    fn threads(&self) -> Option<u32> {
        match self {
            ActiveProbeSpec::Generic(p) => p.threads,
            ActiveProbeSpec::Haproxy(p) => p.threads,
            ActiveProbeSpec::Envoy(p) => p.threads,
            ActiveProbeSpec::Tengine(p) => p.threads,
            ActiveProbeSpec::Kubernetes(p) => p.threads,
        }
    }
}

impl PolicyParams for ActiveProbeSpec {
    /// Envoy's load balancer applies `common_lb_config.healthy_panic_threshold`
    /// (default 50 %) to every cluster, whatever marks its hosts unhealthy:
    /// `LoadBalancerBase::recalculatePerPriorityPanic` knows nothing of the
    /// detector. A cluster with only active health checking panics too.
    fn healthy_panic_threshold(&self) -> Option<f64> {
        matches!(self, ActiveProbeSpec::Envoy(_)).then_some(50.0)
    }

    fn label(&self) -> String {
        match self {
            ActiveProbeSpec::Generic(p) => format!(
                "probe {} interval={} timeout={} fall={} rise={}",
                kind_name(p.probe),
                p.interval,
                p.timeout,
                p.fall,
                p.rise
            ),
            ActiveProbeSpec::Haproxy(p) => format!(
                "haproxy check {} inter={} rise={} fall={}",
                kind_name(p.probe),
                p.inter,
                p.rise,
                p.fall
            ),
            ActiveProbeSpec::Envoy(p) => format!(
                "envoy hc {} interval={} timeout={} unhealthy={} healthy={}",
                kind_name(p.probe),
                p.interval,
                p.timeout,
                p.unhealthy_threshold,
                p.healthy_threshold
            ),
            ActiveProbeSpec::Tengine(p) => format!(
                "tengine check type={} interval={} rise={} fall={} timeout={}",
                kind_name(p.probe),
                p.interval,
                p.rise,
                p.fall,
                p.timeout
            ),
            ActiveProbeSpec::Kubernetes(p) => format!(
                "k8s readiness {} period={} timeout={} failure={} success={}",
                kind_name(p.probe),
                p.period,
                p.timeout,
                p.failure_threshold,
                p.success_threshold
            ),
        }
    }

    fn validate(&self) -> Result<(), (String, String)> {
        match self {
            ActiveProbeSpec::Generic(p) => p.validate(),
            ActiveProbeSpec::Haproxy(p) => p.validate(),
            ActiveProbeSpec::Envoy(p) => p.validate(),
            ActiveProbeSpec::Tengine(p) => p.validate(),
            ActiveProbeSpec::Kubernetes(p) => p.validate(),
        }
    }

    /// Legal but suspicious settings, as `(field, message)`: a probe timeout
    /// that is not shorter than the time between probes; status rules on a
    /// TCP check, which never sees a status.
    fn warnings(&self) -> Vec<(String, String)> {
        let status_rules = match self {
            ActiveProbeSpec::Haproxy(p) if p.probe == ProbeKind::Tcp && !p.expect.is_empty() => {
                Some("expect")
            }
            ActiveProbeSpec::Envoy(p)
                if p.probe == ProbeKind::Tcp && !p.expected_statuses.is_empty() =>
            {
                Some("expected_statuses")
            }
            ActiveProbeSpec::Envoy(p)
                if p.probe == ProbeKind::Tcp && !p.retriable_statuses.is_empty() =>
            {
                Some("retriable_statuses")
            }
            _ => None,
        };
        if let Some(f) = status_rules {
            return vec![(
                f.into(),
                "has no effect: the check is a TCP check (`probe: tcp`), which sees no status"
                    .into(),
            )];
        }
        let (timeout, every, name) = match self {
            ActiveProbeSpec::Generic(p) => (p.timeout, p.interval, "interval"),
            ActiveProbeSpec::Envoy(p) => (p.timeout, p.interval, "interval"),
            ActiveProbeSpec::Tengine(p) => (p.timeout, p.interval, "interval"),
            ActiveProbeSpec::Kubernetes(p) => (p.timeout, p.period, "period"),
            // HAProxy bounds a check by `inter` itself.
            ActiveProbeSpec::Haproxy(_) => return vec![],
        };
        if timeout < every {
            return vec![];
        }
        vec![(
            "timeout".into(),
            format!(
                "{timeout} is not shorter than `{name}` ({every}): a probe of a node that stops \
                 answering is still waiting when the next one is due, so detection takes longer \
                 than `{name}` suggests"
            ),
        )]
    }

    fn events_per_s(&self, nodes: usize) -> f64 {
        periodic_events_per_s(nodes, self.period(), 4.0)
    }

    fn counts_client_requests(&self) -> bool {
        false
    }

    fn build(&self, _scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(ActiveProbe::new(self, nodes))
    }
}

fn kind_name(k: ProbeKind) -> &'static str {
    match k {
        ProbeKind::Tcp => "tcp",
        ProbeKind::Http => "http",
    }
}

pub(super) fn positive(field: &str, d: SimDuration) -> Result<(), (String, String)> {
    if d.is_zero() {
        Err((field.into(), "must be positive".into()))
    } else {
        Ok(())
    }
}

pub(super) fn at_least_one(field: &str, n: u32) -> Result<(), (String, String)> {
    if n == 0 {
        Err((field.into(), "must be at least 1".into()))
    } else {
        Ok(())
    }
}

pub(super) fn threads_valid(threads: Option<u32>) -> Result<(), (String, String)> {
    match threads {
        Some(0) => Err((
            "threads".into(),
            "must be at least 1 (omit it for no limit)".into(),
        )),
        _ => Ok(()),
    }
}

/// Timer tags. The view owns one; flavours use the others.
pub(super) const TAG_VIEW: u32 = 1;
pub(super) const TAG_CHECK: u32 = 2;
pub(super) const TAG_ROUND: u32 = 3;
pub(super) const TAG_START: u32 = 4;

/// What every flavour shares: the thread pool that sends probes and the
/// gateway's view of the verdicts.
pub(crate) struct Prober {
    pub(super) kind: ProbeKind,
    pub(super) pool: ProberPool,
    pub(super) view: GatewayView,
}

impl Prober {
    /// Sends (or queues) a probe of this prober's kind.
    pub(super) fn send(
        &mut self,
        cx: &mut PolicyCx,
        node: NodeId,
        timeout: SimDuration,
        connect_timeout: SimDuration,
        timeout_after_connect: Option<crate::policy::AfterConnect>,
        tag: u32,
    ) {
        let req = ProbeRequest {
            kind: self.kind,
            connect_timeout,
            timeout,
            timeout_after_connect,
            tag,
        };
        self.pool.submit(cx, node, req);
    }

    /// The flavour's verdict on `node` changed.
    pub(super) fn publish(&mut self, cx: &mut PolicyCx, node: NodeId, healthy: bool) {
        self.view.publish(cx, node, healthy);
    }
}

/// One flavour's schedule and state machine.
pub(crate) trait Flavor: Send {
    fn start(&mut self, pr: &mut Prober, cx: &mut PolicyCx);
    fn on_timer(&mut self, pr: &mut Prober, cx: &mut PolicyCx, timer: PolicyTimer);
    fn on_result(&mut self, pr: &mut Prober, cx: &mut PolicyCx, node: NodeId, o: &ProbeOutcome);
    /// The gateway made an attempt (HAProxy `observe`).
    fn on_attempt(&mut self, _pr: &mut Prober, _cx: &mut PolicyCx, _r: &AttemptReport) {}
    /// `on_attempt` does something.
    fn hears_attempts(&self) -> bool {
        false
    }
    /// The gateway selected a node for the first time (Envoy: the cluster
    /// has carried traffic).
    fn on_selected(&mut self) {}
    /// `on_selected` does something.
    fn hears_selections(&self) -> bool {
        false
    }
    /// The gateway waits for this flavour's first round (Envoy's warming).
    fn warms(&self) -> bool {
        false
    }
}

/// The active probe policy.
pub struct ActiveProbe {
    prober: Prober,
    flavor: Box<dyn Flavor>,
    /// The gateway has selected a node: the flavour heard it once, which
    /// is all it needs (every selection after the first is a no-op).
    selected: bool,
}

impl ActiveProbe {
    pub fn new(spec: &ActiveProbeSpec, nodes: usize) -> Self {
        let (kind, initially, propagation, flavor): (_, _, _, Box<dyn Flavor>) = match spec {
            ActiveProbeSpec::Generic(p) => (
                p.probe,
                true,
                Propagation::Immediate,
                Box::new(generic::Generic::new(p, nodes)),
            ),
            ActiveProbeSpec::Haproxy(p) => (
                p.probe,
                true,
                Propagation::Immediate,
                Box::new(haproxy::HaproxyCheck::new(p, nodes)),
            ),
            ActiveProbeSpec::Envoy(p) => (
                p.probe,
                false,
                Propagation::Immediate,
                Box::new(envoy::EnvoyHc::new(p, nodes)),
            ),
            ActiveProbeSpec::Tengine(p) => (
                p.probe,
                !p.default_down,
                Propagation::Immediate,
                Box::new(tengine::TengineCheck::new(p, nodes)),
            ),
            ActiveProbeSpec::Kubernetes(p) => (
                p.probe,
                false,
                if p.propagation_delay.is_zero() {
                    Propagation::Immediate
                } else {
                    Propagation::Delay(p.propagation_delay)
                },
                Box::new(kubernetes::Readiness::new(p, nodes)),
            ),
        };
        ActiveProbe {
            prober: Prober {
                kind,
                pool: ProberPool::new(spec.threads(), nodes),
                view: GatewayView::new(nodes, initially, propagation, TAG_VIEW),
            },
            flavor,
            selected: false,
        }
    }
}

impl HealthPolicy for ActiveProbe {
    fn on_start(&mut self, cx: &mut PolicyCx) {
        self.prober.view.start(cx);
        self.flavor.start(&mut self.prober, cx);
    }

    fn is_routable(&self, _scope: Scope, node: NodeId, _now: Now) -> bool {
        self.prober.view.is_routable(node)
    }

    fn on_selected(&mut self, _cx: &mut PolicyCx, _scope: Scope, _node: NodeId) {
        if !self.selected {
            self.selected = true;
            self.flavor.on_selected();
        }
    }

    fn on_attempt(&mut self, cx: &mut PolicyCx, report: &AttemptReport) {
        self.flavor.on_attempt(&mut self.prober, cx, report);
    }

    fn interests(&self) -> Interests {
        Interests {
            selections: self.flavor.hears_selections(),
            attempts: self.flavor.hears_attempts(),
            warms: self.flavor.warms(),
            // The verdicts live in the gateway view, whose `apply` is the only
            // place they change, each time with its notice.
            routes_by_notices: true,
            ..Interests::DEFAULT
        }
    }

    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        if !self.prober.view.on_timer(cx, timer) {
            self.flavor.on_timer(&mut self.prober, cx, timer);
        }
    }

    fn on_probe_result(&mut self, cx: &mut PolicyCx, node: NodeId, outcome: &ProbeOutcome) {
        self.flavor.on_result(&mut self.prober, cx, node, outcome);
        self.prober.pool.on_result(cx, node);
    }
}

#[cfg(test)]
mod tests {
    use crate::policy::PolicySpec;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<PolicySpec, String> {
        serde_json::from_value::<PolicySpec>(v).map_err(|e| e.to_string())
    }

    #[test]
    fn every_flavor_rejects_unknown_fields() {
        for flavor in ["generic", "haproxy", "envoy", "tengine", "kubernetes"] {
            let e = parse(json!({"kind": "active_probe", "flavor": flavor, "intervl": "1s"}))
                .unwrap_err();
            assert!(e.contains("unknown field `intervl`"), "{flavor}: {e}");
        }
        let e =
            parse(json!({"kind": "heartbeat_ttl", "registry": "eureka", "ttl": "1s"})).unwrap_err();
        assert!(e.contains("unknown field `ttl`"), "{e}");
    }

    #[test]
    fn status_rules_on_a_tcp_check_are_a_warning() {
        use crate::policy::PolicyParams;
        for (v, field) in [
            (
                json!({"kind": "active_probe", "flavor": "haproxy", "expect": [{"status": ["200"]}]}),
                "expect",
            ),
            (
                json!({"kind": "active_probe", "flavor": "envoy", "probe": "tcp", "timeout": "1s",
                       "interval": "5s", "unhealthy_threshold": 2, "healthy_threshold": 2,
                       "expected_statuses": [{"start": 200, "end": 400}]}),
                "expected_statuses",
            ),
        ] {
            let PolicySpec::ActiveProbe(p) = parse(v).unwrap() else {
                panic!("an active probe")
            };
            assert_eq!(p.warnings()[0].0, field);
        }
    }

    #[test]
    fn envoy_requires_what_its_proto_requires() {
        let e = parse(json!({"kind": "active_probe", "flavor": "envoy", "interval": "5s"}))
            .unwrap_err();
        assert!(e.contains("missing field `timeout`"), "{e}");
    }
}
