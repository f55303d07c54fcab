//! The runtime [`Model`]: a model file checked and resolved (`validate.rs`
//! makes it from a [`ModelSpec`]), with its clients, faults and retry rules
//! in the forms a run reads, and what follows from them (the run's end, the
//! fleet's layout, the spec as it will run).

use super::model_spec::*;
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::policy::PolicySpec;

/// A validated model, ready to run.
#[derive(Clone, Debug)]
pub struct Model {
    pub spec: std::sync::Arc<ModelSpec>,
    pub name: String,
    pub seed: u64,
    pub duration: SimDuration,
    pub measure_from: SimTime,
    pub measure_to: SimTime,
    pub bucket: SimDuration,
    /// `latency_thresholds`, validated.
    pub latency_thresholds: Vec<SimDuration>,
    pub clients: Clients,
    /// `clients.send_jitter` (open loop): each request's delay after its
    /// scheduled arrival.
    pub send_jitter: Option<LatencySpec>,
    pub gateway: GatewaySpec,
    pub next_upstream: NextUpstreamMask,
    pub nodes: Vec<NodeSpec>,
    pub faults: Vec<Fault>,
    pub policies: Vec<PolicySpec>,
    /// The nodes that are pods (`pods`, `nodes[].pod`) and the rolling
    /// updates; `None` when no node is one. With rolling updates, `nodes`
    /// ends with the surge slots ([`Pods::surge_slots`]).
    pub pods: Option<Pods>,
    /// `clients.keys`: each request draws its client key from 0..keys.
    pub keys: Option<u32>,
}

#[derive(Clone, Debug)]
pub enum Clients {
    Open {
        rate_per_s: f64,
        arrivals: Arrivals,
        timeout: Option<SimDuration>,
        method: Method,
        /// `clients.schedule`: (from, rate) steps, in time order.
        schedule: Vec<(SimTime, f64)>,
    },
    Closed {
        concurrency: u32,
        think_time: SimDuration,
        timeout: Option<SimDuration>,
        method: Method,
    },
}

impl Clients {
    pub fn timeout(&self) -> Option<SimDuration> {
        match self {
            Clients::Open { timeout, .. } | Clients::Closed { timeout, .. } => *timeout,
        }
    }
    /// Requests an open loop sends in `duration` (the schedule's rates
    /// over their spans); `None` for closed loops.
    pub fn open_requests(&self, duration: SimDuration) -> Option<f64> {
        match self {
            Clients::Open {
                rate_per_s,
                schedule,
                ..
            } => Some(super::schedule::requests(*rate_per_s, schedule, duration)),
            Clients::Closed { .. } => None,
        }
    }
    pub fn method(&self) -> Method {
        match self {
            Clients::Open { method, .. } | Clients::Closed { method, .. } => *method,
        }
    }
}

/// `proxy_next_upstream` as a bit mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NextUpstreamMask(u32);

impl NextUpstreamMask {
    pub fn from_words(words: &[NextUpstream]) -> Self {
        if words.contains(&NextUpstream::Off) {
            return NextUpstreamMask(0);
        }
        NextUpstreamMask(words.iter().fold(0, |m, w| m | (1 << *w as u32)))
    }
    pub fn contains(self, w: NextUpstream) -> bool {
        self.0 & (1 << w as u32) != 0
    }
}

/// What a fault does while it is active.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FaultKind {
    Crash,
    Hang,
    Stop,
    Partition,
    /// The listening socket is closed; open connections are served.
    StopAccepting,
    Flaky {
        p: f64,
        error: FlakyError,
        status: u16,
    },
    Slow {
        factor: f64,
        extra: SimDuration,
    },
}

impl FaultKind {
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Crash => "crash",
            FaultKind::Hang => "hang",
            FaultKind::Stop => "stop",
            FaultKind::Partition => "partition",
            FaultKind::StopAccepting => "stop_accepting",
            FaultKind::Flaky { .. } => "flaky",
            FaultKind::Slow { .. } => "slow",
        }
    }
    /// Crash, hang, stop and partition exclude one another on a node.
    pub(super) fn is_availability(&self) -> bool {
        matches!(
            self,
            FaultKind::Crash
                | FaultKind::Hang
                | FaultKind::Stop
                | FaultKind::Partition
                | FaultKind::StopAccepting
        )
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Fault {
    pub node: NodeId,
    pub kind: FaultKind,
    /// Its start; with a drawn `at` ([`Fault::phase`]), the earliest start
    /// it can draw.
    pub start: SimTime,
    /// `None`: to the end of the run. With a drawn `at`, the latest end it
    /// can draw (`None` also when that has no bound).
    pub end: Option<SimTime>,
    /// `for`.
    pub length: Option<SimDuration>,
    /// A drawn `at`: each replication draws its start from this.
    pub phase: Option<LatencySpec>,
    /// A crash's `restart_delay` (none: listening at once after `for`).
    pub restart_delay: Option<LatencySpec>,
}

impl Fault {
    /// The window `[start, end)` of a fault that starts `at` after the
    /// beginning of a run ending at `run_end` (`None`: to the end).
    pub fn window_at(&self, at: SimDuration, run_end: SimTime) -> (SimTime, Option<SimTime>) {
        let start = SimTime::ZERO + at;
        let end = self.length.map(|d| start + d).filter(|&e| e < run_end);
        (start, end)
    }
}

impl Model {
    pub fn end(&self) -> SimTime {
        SimTime::ZERO + self.duration
    }

    /// Copies of peer state in one gateway replica (nginx workers without
    /// `zone`): what each policy instance keeps per node.
    pub fn scopes_per_replica(&self) -> usize {
        if self.gateway.zone {
            1
        } else {
            self.gateway.workers as usize
        }
    }

    /// Policy instances per gateway replica: the model's policies, then
    /// the Service's endpoints as that replica sees them when nodes are pods
    /// (`policy::endpoints`).
    pub fn policy_instances(&self) -> usize {
        self.policies.len() + self.pods.is_some() as usize
    }

    /// The nodes the model file lists (without the surge slots of rolling
    /// updates): what an export writes.
    pub fn declared_nodes(&self) -> &[NodeSpec] {
        let surge = self.pods.as_ref().map_or(0, |p| p.surge_slots as usize);
        &self.nodes[..self.nodes.len() - surge]
    }

    /// Gateway replicas (each with its own policies and peer state).
    pub fn replicas(&self) -> usize {
        self.gateway.replicas as usize
    }

    /// How the fleet's replicas lay out their scopes and policy instances.
    pub fn fleet_layout(&self) -> crate::ids::FleetLayout {
        crate::ids::FleetLayout::new(
            self.replicas(),
            self.scopes_per_replica(),
            self.policy_instances(),
        )
    }

    /// Copies of peer state in the whole fleet.
    pub fn scopes(&self) -> usize {
        self.fleet_layout().scopes()
    }

    /// The model as it will run: the policy default, the measurement window and
    /// every field's default written out; optional settings that are off are
    /// `null` (`clients.timeout`: never; `gateway.clock_phase`: drawn from the
    /// seed; `faults[].for`: to the end). What is derived from the duration
    /// (the measurement window, the timeline bucket) is left out unless set. The result is itself a valid model
    /// that checks to the same document (what `hcsim check` prints).
    pub fn effective_spec(&self) -> ModelSpec {
        let mut spec = ModelSpec::clone(&self.spec);
        spec.schema = None;
        // A derived window stays derived: written out only where it differs
        // from the whole run, so `--set duration=…` still moves its end.
        let end = SimTime::ZERO + spec.duration;
        spec.measure =
            (self.measure_from != SimTime::ZERO || self.measure_to != end).then(|| MeasureSpec {
                from: self.measure_from.since_start(),
                to: (self.measure_to != end).then(|| self.measure_to.since_start()),
            });
        match spec.gateway.flavor {
            GatewayFlavor::Haproxy => spec.gateway.haproxy = Some(spec.gateway.haproxy()),
            GatewayFlavor::Kong => spec.gateway.kong = Some(spec.gateway.kong()),
            GatewayFlavor::Linkerd => spec.gateway.linkerd = Some(spec.gateway.linkerd()),
            GatewayFlavor::Caddy => spec.gateway.caddy = Some(spec.gateway.caddy()),
            GatewayFlavor::Traefik => spec.gateway.traefik = Some(spec.gateway.traefik()),
            GatewayFlavor::Nginx => {}
        }
        if spec.policies.is_empty() {
            spec.policy = self.policies.first().cloned();
        } else {
            spec.policies = self.policies.clone();
        }
        spec
    }
}

/// A probe checked, as the kubelet runs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KubeProbe {
    pub kind: crate::spec::KubeProbeKind,
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
