//! The port the world drives: the [`HealthPolicy`] trait, the [`PolicyCx`]
//! a policy acts through, and the reports, notices and requests that cross
//! between them.
//!
//! A policy decides; the gateway acts on its decisions. It sees attempts the
//! gateway reports, answers whether a node is routable, and may ask for
//! timers, probes ([`PolicyCx::probe`]) and heartbeats
//! ([`PolicyCx::start_heartbeats`]), whose results come back in
//! `on_probe_result` and `on_heartbeat`. It never touches the event queue, the
//! nodes or the metrics directly: it queues requests in a [`PolicyCx`], which
//! the world turns into events and records.

use super::clock::Now;
use crate::engine::{SimDuration, SimRng, SimTime};
use crate::ids::{NodeId, Scope};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What happened to one upstream attempt, as the gateway observed it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AttemptResult {
    /// An HTTP response header arrived with this status.
    Status(u16),
    /// `connect()` refused (RST) or unreachable.
    Refused,
    /// `proxy_connect_timeout` expired.
    ConnectTimeout,
    /// No response header within `proxy_read_timeout`.
    ReadTimeout,
    /// The connection was reset or closed before the response header.
    Reset,
    /// The client closed its connection first (nginx logs 499).
    ClientAbort,
    /// A policy of the gateway refused to start the attempt: nothing was
    /// sent (Hystrix's thread pool was full, `THREAD_POOL_REJECTED`).
    Rejected,
}

/// How the gateway freed the peer after the attempt (nginx `free_peer` state).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Charge {
    /// `NGX_PEER_FAILED`: counted as a failure.
    Failed,
    /// `NGX_PEER_NEXT`: 403/404 retried; takes the success path.
    Next,
    /// State 0: a success as far as passive accounting is concerned.
    Success,
}

/// One attempt's report to the policies.
#[derive(Copy, Clone, Debug)]
pub struct AttemptReport {
    pub scope: Scope,
    pub node: NodeId,
    pub result: AttemptResult,
    pub charge: Charge,
    /// From the peer's selection to the end of the attempt (a call's duration).
    pub elapsed: SimDuration,
}

/// A timer a policy asked for; it comes back unchanged in `on_timer`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PolicyTimer {
    pub tag: u32,
    pub node: u32,
    pub generation: u32,
}

/// Which scopes an ejection notice covers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ScopeSel {
    One(Scope),
    All,
}

/// A change of a node's routability, reported for the metrics.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    Ejected {
        scope: ScopeSel,
        node: NodeId,
    },
    Readmitted {
        scope: ScopeSel,
        node: NodeId,
    },
    /// A prober finished one round over all nodes; `duration` runs from the
    /// round's scheduled start to its last probe's result.
    ProbeRound {
        duration: SimDuration,
    },
}

/// What an active probe does once connected.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    /// Connect only: passes when the node's kernel accepts the connection,
    /// so a hung or stopped process passes while its backlog has room.
    Tcp,
    /// A request through the node's worker pool, in FIFO order with real
    /// work: a hung or stopped process fails it by timeout.
    Http,
}

/// One probe a policy asks the engine to send.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ProbeRequest {
    pub kind: ProbeKind,
    /// The connection must be established within this, from the start.
    pub connect_timeout: SimDuration,
    /// The whole probe must finish within this, from the start.
    pub timeout: SimDuration,
    /// Once connected, how the deadline moves (HAProxy's `timeout check`).
    pub timeout_after_connect: Option<AfterConnect>,
    /// Returned unchanged in the [`ProbeOutcome`].
    pub tag: u32,
}

/// How the deadline of a probe that connected moves (HAProxy's `timeout check`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AfterConnect {
    /// Connect time + this, instead of `timeout` (as documented, and as
    /// HAProxy does since "BUG/MEDIUM: check: Requeue healthchecks on I/O
    /// events to handle check timeout", 2025).
    Replace(SimDuration),
    /// The later of `timeout` from the start and connect time + this
    /// (stock HAProxy 2.6: the lowered deadline is not requeued, a later
    /// one is honoured when the old one fires).
    Later(SimDuration),
}

/// How a probe ended, as the prober saw it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ProbeResult {
    /// A TCP probe's connection was established.
    Connected,
    /// An HTTP probe got a response with this status.
    Status(u16),
    /// The connection was refused (nothing listens).
    Refused,
    /// The connection was not established in time (SYN lost or accept queue full).
    ConnectTimeout,
    /// Connected, but no response in time.
    Timeout,
    /// Connected, then reset or closed before a response.
    Reset,
}

impl ProbeResult {
    /// Did the node answer at all (TCP connect, or any HTTP status)?
    pub fn is_answer(self) -> bool {
        matches!(self, ProbeResult::Connected | ProbeResult::Status(_))
    }
    /// Passed for `kind` with statuses in `lo..=hi` accepted (HTTP).
    pub fn passes(self, kind: ProbeKind, lo: u16, hi: u16) -> bool {
        match (kind, self) {
            (ProbeKind::Tcp, ProbeResult::Connected) => true,
            (ProbeKind::Http, ProbeResult::Status(s)) => (lo..=hi).contains(&s),
            _ => false,
        }
    }
}

/// The result of one probe, delivered to [`HealthPolicy::on_probe_result`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ProbeOutcome {
    pub result: ProbeResult,
    /// From the moment the probe was sent to its result.
    pub latency: SimDuration,
    pub tag: u32,
}

/// Heartbeats a registry policy asks every node to send from its own thread.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatPlan {
    /// Time between beats (between the end of one and the start of the next
    /// when a self-check precedes each beat).
    pub interval: SimDuration,
    /// Beat only if a check through the node's worker pool answers 2xx
    /// within this long.
    pub self_check: Option<SimDuration>,
}

/// When a node a policy ejects becomes routable by the passage of time alone,
/// with no callback in between (see [`HealthPolicy::readmits_at`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Readmit {
    /// From the first moment the wall clock reads this whole second.
    WallSecond(i64),
    /// From this virtual time on.
    At(SimTime),
}

/// A request a policy queues for the engine during a callback.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Action {
    /// Send one probe now; its result comes back in `on_probe_result`.
    Probe { node: NodeId, req: ProbeRequest },
    /// Start every node's heartbeat thread; beats arrive in `on_heartbeat`.
    StartHeartbeats(HeartbeatPlan),
    /// An active health checker completed a check of `node` (Envoy's
    /// host-check-complete callback): `healthy` if the check passed and the
    /// checker holds the host healthy (not `FAILED_ACTIVE_HC`). The world
    /// tells the other policies of the same gateway through
    /// [`HealthPolicy::on_host_checked`].
    HostChecked { node: NodeId, healthy: bool },
    /// A policy whose [`HealthPolicy::warms`] is true finished warming: the
    /// gateway may take traffic once every such policy has.
    Warmed,
    /// A line the real product writes to its log (`hcsim run --events`).
    Log(LogEvent),
    /// A server the gateway replicas share (a registry) changed its verdict
    /// on `node`: the world passes it to the same policy of every other
    /// replica ([`HealthPolicy::on_published`]) at once. `at`: when the
    /// change leaves the server for the replicas' own caches (later than now
    /// when the server caches its answers, as Eureka's response cache does).
    /// Queued only by a [`FleetRole::Owner`].
    Publish {
        node: NodeId,
        routable: bool,
        at: SimTime,
    },
}

/// A policy instance's part in a fleet of gateway replicas
/// (`gateway.replicas` above 1) when the policy models a server they all
/// share, such as a service registry: one instance runs it, the others only
/// hear its verdicts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FleetRole {
    /// Replica 0's instance: it runs the shared server and publishes its
    /// verdicts ([`PolicyCx::publish`]).
    Owner,
    /// Another replica's instance: it starts nothing shared and learns the
    /// verdicts through [`HealthPolicy::on_published`].
    Subscriber,
}

/// What a policy reports for the gateway's event log, in the terms of the
/// product it models; the world words it as that product does. Queued only
/// while the log is on ([`PolicyCx::logs`]).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum LogEvent {
    /// nginx `ngx_http_upstream_free_round_robin_peer`: a failure left the
    /// peer with `fails >= max_fails` ("upstream server temporarily
    /// disabled", at `warn`).
    NginxDisabled { scope: Scope, node: NodeId },
    /// HAProxy's check changed a server's state (`srv_set_stopped` /
    /// `srv_set_running`), with the check that decided it.
    HaproxyCheck {
        node: NodeId,
        up: bool,
        kind: ProbeKind,
        result: ProbeResult,
        duration: SimDuration,
    },
    /// HAProxy's `observe` marked a server DOWN (`__health_adjust`) after
    /// `errors` consecutive errors, the last one `last`.
    HaproxyAnalyze {
        node: NodeId,
        errors: u32,
        last: AttemptResult,
    },
    /// Envoy's outlier detection event (`EventLoggerImpl::logEject`,
    /// `logUneject`).
    EnvoyOutlier {
        node: NodeId,
        /// `OutlierEjectionType`'s name (`CONSECUTIVE_5XX`, ...).
        kind: &'static str,
        eject: bool,
        enforced: bool,
        num_ejections: u32,
        /// Whole seconds since the last un-ejection (eject) or ejection
        /// (uneject), if there was one.
        secs_since_last_action: Option<u64>,
        /// Success-rate ejections: the host's rate, the cluster's average
        /// and the ejection threshold; failure-percentage: the host's rate.
        success_rate: Option<(f64, Option<(f64, f64)>)>,
    },
}

/// The buffers a [`PolicyCx`] fills: timers asked for, notices, actions.
pub type Buffers<'a> = (
    &'a mut Vec<(SimTime, PolicyTimer)>,
    &'a mut Vec<Notice>,
    &'a mut Vec<Action>,
);

/// What a policy may do during a callback: read the time, draw random numbers,
/// ask for timers, and report ejections.
pub struct PolicyCx<'a> {
    pub(crate) now: Now,
    pub(crate) rng: &'a mut SimRng,
    pub(crate) timers: &'a mut Vec<(SimTime, PolicyTimer)>,
    pub(crate) notices: &'a mut Vec<Notice>,
    /// What it asked of the engine, in order (the caller's buffer, like
    /// `timers` and `notices`: empty on most calls, and allocated once).
    pub(crate) actions: &'a mut Vec<Action>,
    /// The gateway keeps an event log: [`PolicyCx::log`] queues lines.
    pub(crate) logging: bool,
}

impl<'a> PolicyCx<'a> {
    /// A context at `now` whose timers, notices and actions go to the
    /// caller's buffers, queueing log lines if `logging` (see
    /// [`PolicyCx::log`]).
    pub fn logged(
        now: Now,
        rng: &'a mut SimRng,
        (timers, notices, actions): Buffers<'a>,
        logging: bool,
    ) -> Self {
        PolicyCx {
            now,
            rng,
            timers,
            notices,
            actions,
            logging,
        }
    }
    /// Does the gateway keep an event log? (Build a [`LogEvent`] only then.)
    #[inline]
    pub fn logs(&self) -> bool {
        self.logging
    }
    /// Reports a line for the gateway's event log (ignored when it is off).
    pub fn log(&mut self, event: LogEvent) {
        if self.logging {
            self.actions.push(Action::Log(event));
        }
    }
    pub fn now(&self) -> Now {
        self.now
    }
    pub fn rng(&mut self) -> &mut SimRng {
        self.rng
    }
    /// Asks for `on_timer(timer)` at `at` (not before now).
    pub fn at(&mut self, at: SimTime, timer: PolicyTimer) {
        self.timers.push((at.max(self.now.t), timer));
    }
    pub fn ejected(&mut self, scope: ScopeSel, node: NodeId) {
        self.notices.push(Notice::Ejected { scope, node });
    }
    pub fn readmitted(&mut self, scope: ScopeSel, node: NodeId) {
        self.notices.push(Notice::Readmitted { scope, node });
    }
    /// Asks the engine to send a probe to `node` now.
    pub fn probe(&mut self, node: NodeId, req: ProbeRequest) {
        self.actions.push(Action::Probe { node, req });
    }
    /// Asks the engine to start every node's heartbeat thread.
    pub fn start_heartbeats(&mut self, plan: HeartbeatPlan) {
        self.actions.push(Action::StartHeartbeats(plan));
    }
    /// Tells the gateway's other policies that a check of `node` completed
    /// (see [`Action::HostChecked`]).
    pub fn host_checked(&mut self, node: NodeId, healthy: bool) {
        self.actions.push(Action::HostChecked { node, healthy });
    }
    /// Reports that this policy finished warming (see [`HealthPolicy::warms`]).
    pub fn warmed(&mut self) {
        self.actions.push(Action::Warmed);
    }
    /// Passes a shared server's verdict on `node` to the other gateway
    /// replicas, for their caches from `at` on (see [`Action::Publish`]).
    pub fn publish(&mut self, node: NodeId, routable: bool, at: SimTime) {
        self.actions.push(Action::Publish { node, routable, at });
    }
    /// Reports the duration of one probing round (for the metrics).
    pub fn probe_round(&mut self, duration: SimDuration) {
        self.notices.push(Notice::ProbeRound { duration });
    }
}

/// What a policy hears (the gateway calls only these hooks) and how the
/// gateway treats it. [`HealthPolicy::interests`] returns it once, when the
/// world is built.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Interests {
    /// [`HealthPolicy::on_selected`] does something (one call per attempt).
    pub selections: bool,
    /// [`HealthPolicy::on_connected`] does something.
    pub connections: bool,
    /// [`HealthPolicy::on_attempt`] does something (one call per attempt).
    pub attempts: bool,
    /// [`HealthPolicy::on_host_checked`] does something.
    pub host_checks: bool,
    /// [`HealthPolicy::is_routable`] changes only together with an `ejected`
    /// or `readmitted` notice about that node (never by the passing of
    /// time): the gateway asks again on those notices only, not after every
    /// call about the node.
    pub routes_by_notices: bool,
    /// The gateway takes no traffic until this policy reports
    /// [`PolicyCx::warmed`] (Envoy's cluster warming): requests that arrive
    /// before then wait at the gateway.
    pub warms: bool,
    /// nginx ignores `max_fails` entirely for a one-server upstream.
    pub bypassed_for_single_server: bool,
    /// [`HealthPolicy::admits`] may refuse an attempt (Hystrix's thread pool).
    pub rejects_attempts: bool,
}

impl Interests {
    /// A passive policy: it hears selections and attempts, nothing else.
    pub const DEFAULT: Interests = Interests {
        selections: true,
        connections: false,
        attempts: true,
        host_checks: false,
        routes_by_notices: false,
        warms: false,
        bypassed_for_single_server: false,
        rejects_attempts: false,
    };
}

impl Default for Interests {
    fn default() -> Self {
        Interests::DEFAULT
    }
}

/// A gateway health-check policy. It decides; the engine acts on its decisions.
pub trait HealthPolicy: Send {
    /// What this policy hears and how the gateway treats it; asked once,
    /// when the world is built (the gateway skips the calls a policy does
    /// not hear: they are on every attempt's path).
    fn interests(&self) -> Interests {
        Interests::DEFAULT
    }
    /// Called once at time zero.
    fn on_start(&mut self, _cx: &mut PolicyCx) {}
    /// May the gateway worker `scope` select `node` now?
    ///
    /// The gateway keeps the answers and asks again only after a callback
    /// about `node` (any scope), after a timer whose `node` it is, after a
    /// notice naming it, and at the time [`readmits_at`](Self::readmits_at)
    /// gives: an answer must not change otherwise.
    fn is_routable(&self, scope: Scope, node: NodeId, now: Now) -> bool;
    /// For a node this policy ejects now: the time from which
    /// `is_routable` turns true if no callback intervenes (a `fail_timeout`
    /// or an open circuit's wait that expires); `None` if only a callback can
    /// readmit it.
    fn readmits_at(&self, _scope: Scope, _node: NodeId, _now: Now) -> Option<Readmit> {
        None
    }
    /// The balancer selected `node` for an attempt (nginx moves `checked` here).
    fn on_selected(&mut self, _cx: &mut PolicyCx, _scope: Scope, _node: NodeId) {}
    /// The attempt's connection to `node` was established (Envoy's `onPoolReady`).
    /// Called only if [`Interests::connections`] says so.
    fn on_connected(&mut self, _cx: &mut PolicyCx, _scope: Scope, _node: NodeId) {}
    /// An attempt ended and the peer was freed.
    fn on_attempt(&mut self, _cx: &mut PolicyCx, _report: &AttemptReport) {}
    /// How much the balancer's effective weight drops on a failed attempt.
    fn weight_cut(&self, _node: NodeId, _weight: u32) -> u32 {
        0
    }
    /// A timer asked for with [`PolicyCx::at`] fired.
    fn on_timer(&mut self, _cx: &mut PolicyCx, _timer: PolicyTimer) {}
    /// A probe asked for with [`PolicyCx::probe`] ended.
    fn on_probe_result(&mut self, _cx: &mut PolicyCx, _node: NodeId, _outcome: &ProbeOutcome) {}
    /// A heartbeat from `node` reached the registry.
    fn on_heartbeat(&mut self, _cx: &mut PolicyCx, _node: NodeId) {}
    /// An active health checker of the same gateway completed a check of
    /// `node` (see [`Action::HostChecked`]); only Envoy's outlier detector
    /// listens.
    fn on_host_checked(&mut self, _cx: &mut PolicyCx, _node: NodeId, _healthy: bool) {}
    /// The longest an attempt may take, from the peer's selection, before
    /// this policy's client gives up on it (Hystrix's execution timeout):
    /// the gateway ends the attempt then as a timeout, whatever its own
    /// timeouts say. Asked once, when the world is built.
    fn attempt_timeout(&self) -> Option<SimDuration> {
        None
    }
    /// May the attempt just selected (`on_selected` has been called) start?
    /// `false` ends it at once as [`AttemptResult::Rejected`], reported to
    /// every policy through `on_attempt` like any other attempt.
    fn admits(&self, _scope: Scope, _node: NodeId) -> bool {
        true
    }
    /// The process of `node` started again after a crash (a restarted
    /// service registers itself anew with its registry).
    fn on_restarted(&mut self, _cx: &mut PolicyCx, _node: NodeId) {}
    /// In a fleet of gateway replicas, told once, before `on_start`, which
    /// part this instance plays if the policy models a server the replicas
    /// share (a registry). Policies whose state is each gateway's own
    /// ignore it: every replica keeps its own copy.
    fn join_fleet(&mut self, _role: FleetRole) {}
    /// A subscriber hears the verdict the owner's shared server published
    /// on `node` ([`Action::Publish`]), at the instant it was published;
    /// its own caches can see it from `at` on.
    fn on_published(&mut self, _cx: &mut PolicyCx, _node: NodeId, _routable: bool, _at: SimTime) {}
    /// The pod of `node` turned `ready` (or not) in the Service's
    /// EndpointSlice; this gateway replica applies the change at `at`
    /// (only `endpoints.rs` listens: a gateway routes by its endpoints).
    fn on_endpoint(&mut self, _cx: &mut PolicyCx, _node: NodeId, _ready: bool, _at: SimTime) {}
}
