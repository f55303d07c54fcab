//! Nodes that are Kubernetes pods (`pods`, `nodes[].pod`): containers that
//! start, listen, are probed by the kubelet, are killed and restarted, and
//! pods that a rolling update deletes and creates; the gateway routes by the
//! Service's endpoints as each replica sees them (`policy::endpoints`).
//!
//! A node is a *slot*: a place for one pod at a time, with its row in the
//! metrics. The model's nodes hold the pods running when the run starts;
//! a rolling update puts its new pods in free slots (the surge slots after
//! the model's nodes, or the slot of an old pod that is gone). Per slot:
//!
//! - **container start** (`start_container`): the process refuses
//!   connections until `start_time` has passed (`PodStep::Listen`); the
//!   probes' results start afresh (`prober/worker.go`: readiness Failure,
//!   liveness Success, startup Unknown);
//! - **probes** (`kubelet.rs`): each kind on its own ticker from the pod's
//!   creation, one probe at a time, through the node's workers;
//! - **kill** (`kubelet.rs`, `killContainer`): the preStop sleep, SIGTERM,
//!   SIGKILL at the end of the grace period;
//! - **exit** (`container_exited`): the kernel resets what the process had;
//!   a deleted pod is gone, any other container restarts after the kubelet's
//!   back-off (`backoff.rs`);
//! - **readiness** (`publish_ready`): the pod's Ready condition, which the
//!   EndpointSlice turns into the endpoint's `ready`, and each gateway
//!   replica applies after its own `endpoint_propagation`.
//!
//! `rollout.rs` is the Deployment controller; `record.rs` what the run
//! reports.

mod backoff;
mod kubelet;
mod record;
mod rollout;

use super::node::Sampler;
use super::streams::Stream;
use super::{Event, World};
use crate::engine::{SimRng, SimTime};
use crate::ids::NodeId;
use crate::spec::{Model, Pods as PodsSpec};
use backoff::BackOff;
pub(crate) use kubelet::ProbeKind;
pub(crate) use record::Log;

/// The policy id the kubelet's probes carry (no policy sends them).
pub(crate) const KUBELET: u16 = u16::MAX;

/// What a pod's event is about.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum PodStep {
    /// The container's process listens (its `start_time` has passed).
    Listen,
    /// A probe's ticker.
    Probe(ProbeKind),
    /// The preStop hook ended: SIGTERM.
    Sigterm,
    /// The grace period ended: SIGKILL.
    Sigkill,
    /// The back-off ended: the container starts again.
    Start,
}

/// Where a container is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Container {
    /// Exited, waiting out its back-off (or gone).
    Exited,
    /// Running, its process not listening yet.
    Starting,
    Running,
}

/// Why a container is killed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum KillReason {
    /// The pod was deleted (a rolling update's scale-down).
    Deleted,
    Liveness,
    Startup,
}

/// One pod in a slot.
#[derive(Clone, Debug)]
pub(crate) struct Pod {
    /// The Deployment's revision it belongs to (0: the pods of the start).
    revision: u32,
    created: SimTime,
    container: Container,
    /// When its container last started.
    started_at: SimTime,
    /// The startup probe succeeded (or there is none).
    started: bool,
    /// The readiness probe's result (true without one).
    readiness_ok: bool,
    /// The pod's Ready condition as last published.
    ready: bool,
    /// When it last turned ready (the Deployment's scale-down ranks by it).
    ready_since: SimTime,
    /// Deleted (terminating) since.
    deleted: Option<SimTime>,
    /// A kill is under way (preStop or after SIGTERM), and why.
    killing: Option<KillReason>,
    /// After SIGTERM with `shutdown: graceful`: finishing its requests.
    draining: bool,
    /// The SIGKILL deadline of the kill under way.
    sigkill_at: SimTime,
    probes: kubelet::Probers,
    restarts: u32,
    backoff: BackOff,
}

/// The pods of a run.
pub(crate) struct Pods {
    /// Per slot: the pod in it, if any.
    slots: Vec<Option<Pod>>,
    /// Per slot: bumped at every container start and exit, so that the
    /// container's pending events from before are stale.
    epoch: Vec<u32>,
    /// Per slot: bumped for every new pod in it; the probe workers' ticks
    /// and results carry it (they outlive a container).
    pod_gen: Vec<u32>,
    /// Per slot and probe kind: the container epoch its probe in flight was sent in.
    probe_epoch: Vec<[u32; 3]>,
    start_time: Vec<Option<Sampler>>,
    propagation: Vec<Option<Sampler>>,
    rng: SimRng,
    /// Per gateway replica: (instant, arrival) of the last change of the
    /// Service's endpoints it was sent. Changes made at one instant are one
    /// update of the EndpointSlice: they arrive together; a replica's watch
    /// delivers updates in order.
    arrives: Vec<(SimTime, SimTime)>,
    /// Per slot: when the last replica applies its last endpoint change.
    listed_until: Vec<SimTime>,
    replicas: usize,
    /// The endpoints policy's index within a replica.
    endpoints_policy: usize,
    rollout: rollout::Controller,
    log: Log,
}

impl Pods {
    /// The pods of `model` at the start: running, ready and listed; the
    /// surge slots empty.
    pub(crate) fn of(model: &Model, seed: u64) -> Option<Pods> {
        let spec: &PodsSpec = model.pods.as_ref()?;
        let mut rng = Stream::Pods.of(seed);
        let declared = model.declared_nodes().len();
        let slots = spec
            .slots
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let p = p.as_ref()?;
                if i >= declared {
                    return None;
                }
                // Created before the run: each prober's ticker has its own
                // phase, drawn once.
                Some(Pod::new(
                    0,
                    SimTime::ZERO,
                    kubelet::Probers::running(p, &mut rng),
                ))
            })
            .collect();
        let sampler = |f: fn(&crate::spec::pods::PodParams) -> &crate::spec::LatencySpec| {
            spec.slots
                .iter()
                .map(|p| p.as_ref().map(|p| Sampler::new(f(p))))
                .collect::<Vec<_>>()
        };
        let n = model.nodes.len();
        Some(Pods {
            slots,
            epoch: vec![0; n],
            pod_gen: vec![0; n],
            probe_epoch: vec![[0; 3]; n],
            start_time: sampler(|p| &p.start_time),
            propagation: sampler(|p| &p.propagation),
            rng,
            arrives: vec![(SimTime::MAX, SimTime::ZERO); model.replicas()],
            listed_until: vec![SimTime::ZERO; n],
            replicas: model.replicas(),
            endpoints_policy: model.policies.len(),
            rollout: rollout::Controller::new(spec),
            log: Log::new(n, spec.rollouts.iter().map(|r| SimTime::ZERO + r.at)),
        })
    }

    /// A pod is in `node`'s slot.
    pub(crate) fn has_pod(&self, node: NodeId) -> bool {
        self.slots[node.index()].is_some()
    }

    pub(crate) fn log(&self) -> &Log {
        &self.log
    }

    /// An upstream attempt ended (`World::observe_attempt`).
    pub(crate) fn attempt(&mut self, t: SimTime, result: crate::policy::AttemptResult) {
        self.log.attempt(t, result);
    }

    /// A request ended with `status` (`None`: the client gave up).
    pub(crate) fn request_ended(&mut self, t: SimTime, status: Option<u16>) {
        if status.is_none_or(|s| s >= 500) {
            self.log.request_failed(t, status);
        }
    }
}

impl Pod {
    fn new(revision: u32, created: SimTime, probes: kubelet::Probers) -> Pod {
        Pod {
            revision,
            created,
            container: Container::Running,
            started_at: created,
            started: true,
            readiness_ok: true,
            ready: true,
            ready_since: created,
            deleted: None,
            killing: None,
            draining: false,
            sigkill_at: SimTime::MAX,
            probes,
            restarts: 0,
            backoff: BackOff::default(),
        }
    }
}

impl<'s> World<'s> {
    /// Time zero: the probers' tickers and the rolling updates.
    pub(crate) fn pods_begin(&mut self) {
        let Some(p) = self.pods.as_deref() else {
            return;
        };
        let firsts: Vec<(usize, Vec<(ProbeKind, SimTime)>)> = p
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((i, s.as_ref()?.probes.first_ticks())))
            .collect();
        for (i, ticks) in firsts {
            for (kind, at) in ticks {
                self.probe_event(NodeId(i as u32), at, kind);
            }
        }
        self.rollouts_begin();
    }

    /// Schedules `step` of the pod in `node`'s slot at `at`.
    fn pod_event(&mut self, node: NodeId, at: SimTime, step: PodStep) {
        let epoch = self.pods.as_ref().map_or(0, |p| p.epoch[node.index()]);
        self.q.schedule(
            at,
            Event::Pod {
                node: node.0,
                epoch,
                step,
            },
        );
    }

    /// A pod event; stale when the slot's container or pod changed since.
    pub(crate) fn on_pod_event(&mut self, node: NodeId, epoch: u32, step: PodStep) {
        let Some(p) = self.pods.as_deref() else {
            return;
        };
        let current = match step {
            PodStep::Probe(_) => p.pod_gen[node.index()],
            _ => p.epoch[node.index()],
        };
        if current != epoch || p.slots[node.index()].is_none() {
            return;
        }
        match step {
            PodStep::Listen => self.container_listens(node),
            PodStep::Probe(kind) => self.probe_tick(node, kind),
            PodStep::Sigterm => self.sigterm(node),
            PodStep::Sigkill => self.sigkill(node),
            PodStep::Start => self.start_container(node),
        }
    }

    /// A pod is in `node`'s slot.
    pub(crate) fn is_pod(&self, node: NodeId) -> bool {
        self.pods.as_ref().is_some_and(|p| p.has_pod(node))
    }

    /// The lifecycle of `node`'s slot, as the model gives it.
    fn pod_params(&self, node: NodeId) -> Option<&'s crate::spec::pods::PodParams> {
        let model: &'s Model = self.model;
        model.pods.as_ref()?.slots[node.index()].as_ref()
    }

    fn pod(&self, node: NodeId) -> Option<&Pod> {
        self.pods.as_deref()?.slots[node.index()].as_ref()
    }

    fn pod_mut(&mut self, node: NodeId) -> Option<&mut Pod> {
        self.pods.as_deref_mut()?.slots[node.index()].as_mut()
    }

    /// The container of `node`'s pod starts: nothing listens for its
    /// `start_time`, the probes' results start afresh.
    fn start_container(&mut self, node: NodeId) {
        let now = self.q.now();
        let Some(pods) = self.pods.as_deref_mut() else {
            return;
        };
        pods.epoch[node.index()] = pods.epoch[node.index()].wrapping_add(1);
        let delay = match &pods.start_time[node.index()] {
            Some(s) => s.sample(&mut pods.rng),
            None => crate::engine::SimDuration::ZERO,
        };
        let Some(pod) = pods.slots[node.index()].as_mut() else {
            return;
        };
        pod.container = Container::Starting;
        pod.started_at = now;
        pod.probes.container_started();
        pod.started = !pod.probes.has(ProbeKind::Startup);
        pod.readiness_ok = !pod.probes.has(ProbeKind::Readiness);
        pod.killing = None;
        pod.draining = false;
        pod.sigkill_at = SimTime::MAX;
        let n = &mut self.nodes[node.index()];
        n.crashed = true;
        n.hung = false;
        n.stopped = false;
        self.pod_event(node, now + delay, PodStep::Listen);
        self.publish_ready(node);
    }

    /// The process of `node`'s container listens: it takes connections,
    /// unless a crash fault is active, which makes every new process exit
    /// as it starts (a crash loop).
    fn container_listens(&mut self, node: NodeId) {
        let crash = self.nodes[node.index()].crash_fault;
        let Some(pod) = self.pod_mut(node) else {
            return;
        };
        if pod.container != Container::Starting {
            return;
        }
        if crash {
            self.container_exited(node);
            return;
        }
        pod.container = Container::Running;
        let n = &mut self.nodes[node.index()];
        n.not_listening = false;
        self.restarted(node);
    }

    /// The container of `node` exits: its kernel resets the connections and
    /// requests the process had. A deleted pod is gone; any other container
    /// restarts after the kubelet's back-off.
    pub(crate) fn container_exited(&mut self, node: NodeId) {
        let now = self.q.now();
        let cut = self.nodes[node.index()].requests_held();
        if !self.nodes[node.index()].crashed {
            self.crash_node(node);
        }
        let n = &mut self.nodes[node.index()];
        n.not_listening = false;
        n.hung = false;
        n.stopped = false;
        let Some(pods) = self.pods.as_deref_mut() else {
            return;
        };
        pods.epoch[node.index()] = pods.epoch[node.index()].wrapping_add(1);
        pods.log.cut(now, node, cut);
        let Some(pod) = pods.slots[node.index()].as_mut() else {
            return;
        };
        pod.container = Container::Exited;
        pod.killing = None;
        pod.draining = false;
        if pod.deleted.is_some() {
            let revision = pod.revision;
            pods.slots[node.index()] = None;
            pods.log.gone(now, node, revision);
            self.publish_ready(node);
            self.reconcile();
            return;
        }
        pod.restarts += 1;
        let start = pod.backoff.restart_at(now);
        pods.log.restart(now, node, start.saturating_since(now));
        self.publish_ready(node);
        self.pod_event(node, start, PodStep::Start);
    }

    /// Publishes `node`'s pod's Ready condition if it changed: every gateway
    /// replica applies it after its own `endpoint_propagation`. The
    /// Deployment controller hears it at once.
    fn publish_ready(&mut self, node: NodeId) {
        let now = self.q.now();
        let Some(pods) = self.pods.as_deref_mut() else {
            return;
        };
        let ready = pods.slots[node.index()].as_ref().is_some_and(|p| {
            p.container != Container::Exited && p.started && p.readiness_ok && p.deleted.is_none()
        });
        let was = match pods.slots[node.index()].as_mut() {
            Some(p) => {
                let was = p.ready;
                if ready && !was {
                    p.ready_since = now;
                }
                p.ready = ready;
                was
            }
            // A slot whose pod is gone was unlisted when the pod was deleted.
            None => return,
        };
        if was == ready {
            return;
        }
        let mut arrivals = Vec::with_capacity(pods.replicas);
        for r in 0..pods.replicas {
            let (made, arrives) = pods.arrives[r];
            let at = if made == now {
                arrives
            } else {
                let d = match &pods.propagation[node.index()] {
                    Some(s) => s.sample(&mut pods.rng),
                    None => crate::engine::SimDuration::ZERO,
                };
                (now + d).max(arrives)
            };
            pods.arrives[r] = (now, at);
            arrivals.push(at);
        }
        let last = arrivals.iter().copied().max().unwrap_or(now);
        pods.listed_until[node.index()] = pods.listed_until[node.index()].max(last);
        pods.log.endpoint(node, ready, &arrivals);
        let p = pods.endpoints_policy;
        let layout = self.fleet.layout();
        for (r, at) in arrivals.into_iter().enumerate() {
            self.with_policy(layout.policy(r, p), Some(node), |pol, cx| {
                pol.on_endpoint(cx, node, ready, at)
            });
        }
        self.reconcile();
    }
}

#[cfg(test)]
mod tests;
