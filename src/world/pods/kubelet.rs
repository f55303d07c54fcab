//! The kubelet's side of a pod: its probes (`pkg/kubelet/prober/worker.go`)
//! and the kill of a container (`pkg/kubelet/kuberuntime/
//! kuberuntime_container.go`, `killContainer`).
//!
//! **Probes.** Each probe of a pod has a worker with a ticker of `period`
//! from the pod's creation (the pods running at the start were created
//! earlier: their tickers have a phase drawn once). At each tick
//! (`doProbe`): nothing while the container is not running; a deleted pod's
//! liveness and startup probes stop; none before `initial_delay` since the
//! container started (whole seconds, as `int32(time.Since(...).Seconds())`
//! truncates); until the startup probe succeeds only it runs; a liveness or
//! startup probe that has just failed is on hold until a new container. A
//! probe is an HTTP GET through the node's accept queue and workers; it
//! passes on a status in 200..400 (`prober/http`), fails on anything else,
//! a refused or reset connection, or `timeout`. A `tcp` probe passes once
//! the kernel accepts the connection (`prober/tcp`), which a hung process
//! does not prevent. One probe at a time: a
//! probe that outlasts the period delays the next to its end (Go's ticker
//! keeps one tick). `failure_threshold` results in a row turn the result
//! to Failure, `success_threshold` to Success; results start afresh in each
//! container (readiness Failure, liveness Success, startup Unknown).
//!
//! **Kill.** The grace period is the pod's `terminationGracePeriodSeconds`;
//! the preStop hook runs first (here: a sleep, cut at the grace period:
//! `executePreStopHook` stops waiting then), its whole seconds come off the
//! grace period, which is at least `minimumGracePeriodInSeconds` (2 s)
//! after it; then the runtime's StopContainer sends SIGTERM and SIGKILL at
//! the end of what is left. SIGTERM to a SIGSTOPped process waits (only
//! SIGKILL acts on it).

use super::{Container, KUBELET, KillReason, PodStep};
use crate::engine::{SimDuration, SimRng, SimTime};
use crate::ids::NodeId;
use crate::policy::{ProbeRequest, ProbeResult};
use crate::spec::Shutdown;
use crate::spec::pods::{KubeProbe, PodParams};
use crate::world::World;
use rand::RngExt;

/// `minimumGracePeriodInSeconds`.
const MIN_GRACE: SimDuration = SimDuration::from_secs(2);

/// Which of a pod's probes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum ProbeKind {
    Readiness = 0,
    Liveness = 1,
    Startup = 2,
}

const KINDS: [ProbeKind; 3] = [
    ProbeKind::Readiness,
    ProbeKind::Liveness,
    ProbeKind::Startup,
];

/// One probe worker.
#[derive(Clone, Debug)]
struct Prober {
    spec: KubeProbe,
    /// The ticker's origin: ticks at `origin + k × period`, `k ≥ 0`.
    origin: SimTime,
    /// A probe is in flight, sent at this instant.
    sent: Option<SimTime>,
    /// The result run: its value and length.
    last: Option<bool>,
    run: u32,
    on_hold: bool,
}

impl Prober {
    /// The first tick strictly after `t`.
    fn tick_after(&self, t: SimTime) -> SimTime {
        let p = self.spec.period.as_micros().max(1);
        let since = t.saturating_since(self.origin).as_micros();
        if t < self.origin {
            return self.origin;
        }
        self.origin + SimDuration::from_micros((since / p + 1) * p)
    }

    /// Counts a result; `Some(result)` when the run reaches its threshold.
    fn count(&mut self, ok: bool) -> Option<bool> {
        if self.last == Some(ok) {
            self.run = self.run.saturating_add(1);
        } else {
            self.last = Some(ok);
            self.run = 1;
        }
        let threshold = if ok {
            self.spec.success_threshold
        } else {
            self.spec.failure_threshold
        };
        (self.run >= threshold).then_some(ok)
    }
}

/// A pod's probe workers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Probers {
    p: [Option<Prober>; 3],
}

impl Probers {
    /// The workers of `params`, each ticker from its own origin.
    fn of(params: &PodParams, origins: [SimTime; 3]) -> Probers {
        let make = |spec: &Option<KubeProbe>, origin: SimTime| {
            spec.map(|spec| Prober {
                spec,
                origin,
                sent: None,
                last: None,
                run: 0,
                on_hold: false,
            })
        };
        Probers {
            p: [
                make(&params.readiness, origins[0]),
                make(&params.liveness, origins[1]),
                make(&params.startup, origins[2]),
            ],
        }
    }

    /// The workers of a pod running at the start, each ticker with its
    /// own phase in `[0, period)`; its startup probe succeeded long ago.
    pub(super) fn running(params: &PodParams, rng: &mut SimRng) -> Probers {
        let mut origins = [SimTime::ZERO; 3];
        for (k, spec) in [&params.readiness, &params.liveness, &params.startup]
            .iter()
            .enumerate()
        {
            if let Some(s) = spec {
                let p = s.period.as_micros().max(1);
                origins[k] = SimTime::from_micros(rng.random_range(0..p));
            }
        }
        let mut probers = Probers::of(params, origins);
        probers.p[ProbeKind::Startup as usize] = None;
        probers
    }

    /// The workers of a pod created at `at`: tickers from then.
    pub(super) fn created(params: &PodParams, at: SimTime) -> Probers {
        Probers::of(params, [at; 3])
    }

    pub(super) fn has(&self, kind: ProbeKind) -> bool {
        self.p[kind as usize].is_some()
    }

    /// Each worker's first tick.
    pub(super) fn first_ticks(&self) -> Vec<(ProbeKind, SimTime)> {
        KINDS
            .iter()
            .filter_map(|&k| Some((k, self.p[k as usize].as_ref()?.origin)))
            .collect()
    }

    /// A new container: results start afresh, nothing is on hold.
    pub(super) fn container_started(&mut self) {
        for p in self.p.iter_mut().flatten() {
            p.last = None;
            p.run = 0;
            p.on_hold = false;
        }
    }
}

/// A kubelet probe's tag: its kind and the slot's pod generation.
fn tag(kind: ProbeKind, pod_gen: u32) -> u32 {
    (pod_gen << 2) | kind as u32
}

impl World<'_> {
    /// A probe worker's tick: a probe, or nothing until the next tick.
    pub(super) fn probe_tick(&mut self, node: NodeId, kind: ProbeKind) {
        let now = self.q.now();
        let Some(pods) = self.pods.as_deref() else {
            return;
        };
        let pod_gen = pods.pod_gen[node.index()];
        let Some(pod) = pods.slots[node.index()].as_ref() else {
            return;
        };
        let Some(pr) = pod.probes.p[kind as usize].as_ref() else {
            return;
        };
        if pr.sent.is_some() {
            return;
        }
        if pod.deleted.is_some() && kind != ProbeKind::Readiness {
            // `doProbe`: a terminating pod's liveness and startup stop.
            return;
        }
        let elapsed_s = now.saturating_since(pod.started_at).as_micros() / 1_000_000;
        let skip = pod.container == Container::Exited
            || elapsed_s * 1_000_000 < pr.spec.initial_delay.as_micros()
            || (kind == ProbeKind::Startup) == pod.started
            || pr.on_hold;
        if skip {
            let next = pr.tick_after(now);
            self.probe_event(node, next, kind);
            return;
        }
        let req = ProbeRequest {
            kind: match pr.spec.kind {
                crate::spec::KubeProbeKind::Http => crate::policy::ProbeKind::Http,
                crate::spec::KubeProbeKind::Tcp => crate::policy::ProbeKind::Tcp,
            },
            connect_timeout: pr.spec.timeout,
            timeout: pr.spec.timeout,
            timeout_after_connect: None,
            tag: tag(kind, pod_gen),
        };
        let epoch = pods.epoch[node.index()];
        if let Some(pr) = self
            .pod_mut(node)
            .and_then(|p| p.probes.p[kind as usize].as_mut())
        {
            pr.sent = Some(now);
        }
        if let Some(p) = self.pods.as_deref_mut() {
            p.probe_epoch[node.index()][kind as usize] = epoch;
        }
        self.send_probe(KUBELET, node, req);
    }

    /// Schedules a probe worker's tick (it survives container restarts;
    /// a new pod in the slot makes it stale).
    pub(super) fn probe_event(&mut self, node: NodeId, at: SimTime, kind: ProbeKind) {
        let pod_gen = self.pods.as_ref().map_or(0, |p| p.pod_gen[node.index()]);
        self.q.schedule(
            at,
            crate::world::Event::Pod {
                node: node.0,
                epoch: pod_gen,
                step: PodStep::Probe(kind),
            },
        );
    }

    /// A kubelet probe ended: its result counts if its container still
    /// runs; the worker's next tick follows.
    pub(crate) fn kubelet_probe_done(&mut self, node: NodeId, tag: u32, result: ProbeResult) {
        let now = self.q.now();
        let kind = KINDS[(tag & 3) as usize];
        let Some(pods) = self.pods.as_deref_mut() else {
            return;
        };
        if pods.pod_gen[node.index()] != tag >> 2 {
            return;
        }
        let same_container =
            pods.probe_epoch[node.index()][kind as usize] == pods.epoch[node.index()];
        let Some(pod) = pods.slots[node.index()].as_mut() else {
            return;
        };
        let Some(pr) = pod.probes.p[kind as usize].as_mut() else {
            return;
        };
        let Some(sent) = pr.sent.take() else {
            return;
        };
        let next = pr.tick_after(sent).max(now);
        let ok = match result {
            ProbeResult::Status(s) => (200..400).contains(&s),
            ProbeResult::Connected => true,
            _ => false,
        };
        let reached = if same_container && pod.container != Container::Exited {
            pr.count(ok)
        } else {
            None
        };
        if let Some(r) = reached {
            match kind {
                ProbeKind::Readiness => pod.readiness_ok = r,
                ProbeKind::Startup if r => pod.started = true,
                ProbeKind::Liveness | ProbeKind::Startup if !r => {
                    pr.on_hold = true;
                    pr.run = 0;
                }
                _ => {}
            }
        }
        self.probe_event(node, next, kind);
        match (kind, reached) {
            (ProbeKind::Readiness, Some(_)) | (ProbeKind::Startup, Some(true)) => {
                self.publish_ready(node)
            }
            (ProbeKind::Liveness, Some(false)) => self.kill(node, KillReason::Liveness),
            (ProbeKind::Startup, Some(false)) => self.kill(node, KillReason::Startup),
            _ => {}
        }
    }

    /// The kubelet kills `node`'s container (`killContainer`): preStop,
    /// then SIGTERM, then SIGKILL at the end of the grace period.
    pub(super) fn kill(&mut self, node: NodeId, why: KillReason) {
        let now = self.q.now();
        let Some(params) = self.pod_params(node) else {
            return;
        };
        let (grace, pre_stop) = (params.grace, params.pre_stop);
        let Some(pod) = self.pod_mut(node) else {
            return;
        };
        if pod.killing.is_some() || pod.container == Container::Exited {
            return;
        }
        pod.killing = Some(why);
        let pre = if pre_stop.is_zero() || grace.is_zero() {
            SimDuration::ZERO
        } else {
            pre_stop.min(grace)
        };
        // `gracePeriod - executePreStopHook(...)` (whole seconds), at least 2 s.
        let whole = SimDuration::from_secs(pre.as_micros() / 1_000_000);
        let left = SimDuration::from_micros(grace.as_micros().saturating_sub(whole.as_micros()))
            .max(MIN_GRACE);
        pod.sigkill_at = now + pre + left;
        let sigkill_at = pod.sigkill_at;
        if let Some(p) = self.pods.as_deref_mut() {
            p.log.killed(now, node, why);
        }
        self.pod_event(node, sigkill_at, PodStep::Sigkill);
        if pre.is_zero() {
            self.sigterm(node);
        } else {
            self.pod_event(node, now + pre, PodStep::Sigterm);
        }
    }

    /// SIGTERM reaches `node`'s process.
    pub(super) fn sigterm(&mut self, node: NodeId) {
        let Some(shutdown) = self.pod_params(node).map(|p| p.shutdown) else {
            return;
        };
        let Some(pod) = self.pod(node) else {
            return;
        };
        if pod.killing.is_none() || pod.container == Container::Exited {
            return;
        }
        if self.nodes[node.index()].stopped {
            // SIGSTOPped: the signal waits; SIGKILL will end it.
            return;
        }
        match shutdown {
            Shutdown::Immediate => self.container_exited(node),
            Shutdown::Graceful => {
                if let Some(p) = self.pod_mut(node) {
                    p.draining = true;
                }
                self.close_listener(node);
                self.nodes[node.index()].draining = true;
                self.pod_drain_check(node);
            }
        }
    }

    /// SIGKILL: the container exits now, whatever it was doing.
    pub(super) fn sigkill(&mut self, node: NodeId) {
        if self
            .pod(node)
            .is_some_and(|p| p.killing.is_some() && p.container != Container::Exited)
        {
            self.container_exited(node);
        }
    }

    /// A draining process exits once it holds no request and no probe.
    pub(crate) fn pod_drain_check(&mut self, node: NodeId) {
        if self.nodes[node.index()].is_idle() {
            self.container_exited(node);
        } else if let Some(p) = self.pool.as_deref_mut() {
            // It closes the connections that went idle.
            p.node_closes_all(node, self.q.now());
        }
    }
}
