//! The simulated system: clients → gateway (balancer + health policies) → nodes,
//! with faults acting on nodes. `World` holds the state; handlers live in the
//! submodule of the component they belong to (`on_<what happened>`), and
//! `World::dispatch` routes each `Event` to its handler.
//!
//! # The path of one request
//!
//! Every step that waits is an event in the queue; an attempt's events carry
//! its request slot and attempt generation, and are ignored once the attempt
//! is over (`attempt_of`, gateway/mod.rs). Files are under `src/world/`.
//!
//! 1. **Arrival** — `on_arrival` (open loop; it also schedules the next
//!    arrival) or `on_client_wake` (closed loop), client.rs, calls
//!    `start_request` (gateway/mod.rs): a request slot, the gateway worker
//!    it lands on (`pick_worker`, client.rs), and the **client timeout** armed
//!    by `arm_client_timeout` (client.rs) as `Event::ClientTimeout`,
//!    `clients.timeout` from now.
//! 2. **Select a peer** — `connect` (gateway/mod.rs) calls `select_peer`
//!    (gateway/balancer/mod.rs): Envoy's panic check, then the configured
//!    balancer among the eligible peers (not tried, not `down`, under
//!    `max_conns`, routable for every policy), then the backup set;
//!    `take_peer` counts the connection and tells the policies
//!    (`on_selected`). No peer: `finalize` at once, 502 (nginx) or 503
//!    (HAProxy).
//! 3. **Connect** — `start_attempt` (gateway/mod.rs): a crashed node refuses
//!    (`Event::AttemptFailed`, one round trip later); a partitioned node or a
//!    full accept queue drops the SYN, which arms the **connect timeout**
//!    (`AttemptFailed` after `proxy_connect_timeout`, or HAProxy's `timeout
//!    connect`, else the kernel's SYN retries); otherwise the policies hear
//!    `on_connected`, the request is sent one round trip after the connect,
//!    and its **read deadline** (`proxy_read_timeout` / `timeout server`) is
//!    set but not yet armed.
//! 4. **The request reaches the node** — `Event::AtNode`, one and a half
//!    round trips after the connect (inline with a zero round trip), runs
//!    `on_request_at_node` (node.rs): a crashed node answers with a reset
//!    (step 6); in a partition the request is lost; otherwise it joins the
//!    accept queue. Lost, or left waiting for a worker: the **read timeout**
//!    is armed (`arm_read_timeout`, gateway/mod.rs).
//! 5. **Service** — `start_work` (node.rs) hands it to an idle worker, draws
//!    the service time (a `slow` fault stretches it) and schedules
//!    `Event::ServiceDone`; if the answer would reach the gateway at or
//!    after the read deadline, it arms the read timeout. A hang or stop
//!    freezes the work (`freeze_node`, which arms the read timeouts), a
//!    crash resets it (`crash_node`). `on_service_done` (node.rs) makes the
//!    reply (a `flaky` fault may turn it into an error status or a reset);
//!    in a partition the reply is lost and the read timeout is armed.
//! 6. **Response** — `send_reply` (node.rs) schedules `Event::Response` half
//!    a round trip later (inline with a zero round trip): `on_response`
//!    (gateway/mod.rs). nginx asks `test_next` whether the status is a
//!    failure to retry (`proxy_next_upstream`); HAProxy relays any status
//!    (`haproxy_response`, gateway/haproxy.rs). An attempt that gets no
//!    response ends in `on_attempt_failed` (gateway/mod.rs), which **handles
//!    the connect and read timeouts** and refusals (HAProxy:
//!    `haproxy_failed`, gateway/haproxy.rs).
//! 7. **Free the peer, report to the policies** — `free_peer`
//!    (gateway/balancer/mod.rs): the connection count, the attempt trace line,
//!    nginx's accounting (the attempt uses up a try, a failure lowers the
//!    effective weight; none of it for a single server) and `on_attempt` to
//!    every policy: this is what passive health checks see.
//! 8. **Retry or finalize** — nginx: `next_upstream` (gateway/mod.rs) goes
//!    back to step 2 while tries, `proxy_next_upstream` and
//!    `proxy_next_upstream_timeout` allow, else `finalize` with the status
//!    nginx maps the failure to. HAProxy: `haproxy_failed`
//!    (gateway/haproxy.rs) retries a failed connect on the same server
//!    (`retry`: `take_peer`, step 3) or redispatched (step 2); a refused
//!    connect that is not redispatched at once first waits out the
//!    turn-around pause (`Event::Retry`, handled by `on_retry`). 503 when the
//!    retries run out, 504 on `timeout server`.
//! 9. **Client** — `finalize` (gateway/mod.rs) records the answer and
//!    `release`s the slot (later events for it are stale); `client_done`
//!    (client.rs) lets a closed-loop client think and send again
//!    (`Event::ClientWake`). If the client timeout fires first,
//!    `on_client_timeout` (gateway/mod.rs) **handles it** as nginx does when
//!    the client closes: the peer is freed as not failed (`ClientAbort`),
//!    the request counts as timed out, and the slot is released.
//!
//! Probes (probe.rs) and heartbeats (heartbeat.rs) share the nodes' accept
//! queues and workers with requests; faults (fault.rs) change node state at
//! the start and end of their windows.

mod client;
pub mod event_log;
mod fault;
mod fleet;
mod gateway;
mod heartbeat;
mod node;
mod node_conn;
mod pods;
mod policies;
mod probe;
mod streams;

use crate::engine::{EventQueue, SimTime};
pub use crate::ids::NodeId;
use crate::metrics::{Recorder, RunSummary};
use crate::policy::{AttemptResult, Charge, PolicyTimer, ProbeResult};
use crate::spec::Model;
use fleet::Fleet;
use policies::PolicyBank;
use std::sync::atomic::{AtomicU64, Ordering};
use streams::Streams;

pub use gateway::Reply;

/// FIFO lanes of the event queue, one per constant delay (see [`EventQueue`]).
pub(crate) mod lane {
    /// `clients.timeout` after a request starts.
    pub(crate) const CLIENT_TIMEOUT: usize = 0;
    /// `proxy_connect_timeout` after a connect.
    pub(crate) const CONNECT_TIMEOUT: usize = 1;
    /// One round trip after a connect (a refusal comes back).
    pub(crate) const RTT: usize = 2;
    /// One and a half round trips after a connect (the request reaches the node).
    pub(crate) const AT_NODE: usize = 3;
    /// Half a round trip after a node answers or resets.
    pub(crate) const HALF_RTT: usize = 4;
    /// A closed-loop client's think time after its request ended.
    pub(crate) const THINK: usize = 5;
    /// `proxy_read_timeout` of requests that reach a node and must wait
    /// (armed at arrival, one and a half round trips after the request was
    /// sent, so deadlines come in arming order).
    pub(crate) const READ_TIMEOUT_AT_NODE: usize = 6;
    /// The next open-loop arrival (one pending at a time).
    pub(crate) const ARRIVAL: usize = 7;
    /// HAProxy's `timeout queue` after a request joins a queue.
    pub(crate) const QUEUE_TIMEOUT: usize = 8;
}

/// Why an attempt failed without a response.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fail {
    Refused,
    ConnectTimeout,
    ReadTimeout,
    /// A policy did not admit the attempt (`HealthPolicy::admits`).
    Rejected,
}

/// Everything that can happen. Attempt events carry the request slot and the
/// attempt's generation; a stale generation means the attempt is over and
/// the event is ignored.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Event {
    /// The next open-loop request arrives.
    Arrival,
    /// The next open-loop request arrives; it leaves after its `send_jitter`.
    JitteredArrival,
    /// An open-loop request leaves after its `send_jitter`.
    Send,
    /// A closed-loop client sends its next request.
    ClientWake(u32),
    /// The client gives up on its request (step 9 above).
    ClientTimeout {
        slot: u32,
        generation: u32,
    },
    /// An attempt ends without a response: refused, connect or read timeout.
    AttemptFailed {
        slot: u32,
        generation: u32,
        why: Fail,
    },
    /// An attempt's request reached its node.
    AtNode {
        slot: u32,
        generation: u32,
        node: NodeId,
    },
    /// A node's answer (or reset) reached the gateway.
    Response {
        slot: u32,
        generation: u32,
        reply: Reply,
    },
    /// A worker finished its job (unless its node's epoch moved on).
    ServiceDone {
        node: NodeId,
        worker: u32,
        epoch: u32,
    },
    /// Fault `i` of the model starts, or ends.
    FaultStart(u32),
    FaultEnd(u32),
    /// A restarted process listens again after its `restart_delay`.
    Listening {
        node: NodeId,
        generation: u32,
    },
    /// A timer a policy asked for.
    Policy {
        policy: u16,
        timer: PolicyTimer,
    },
    /// A timer of the connection pool (`gateway.pool`).
    Conn {
        id: u32,
        what: gateway::ConnTimer,
    },
    /// HAProxy retries a failed connect after its turn-around pause.
    Retry {
        slot: u32,
        generation: u32,
    },
    /// HAProxy's `timeout queue` of a queued request.
    QueueTimeout {
        slot: u32,
        generation: u32,
    },
    /// An HTTP probe's request reached the node.
    ProbeAtNode {
        probe: u32,
        generation: u32,
    },
    /// A probe ended.
    ProbeDone {
        probe: u32,
        generation: u32,
        result: ProbeResult,
    },
    /// A node's heartbeat thread wakes up.
    HeartbeatTick {
        policy: u16,
        node: u32,
    },
    /// A heartbeat reached the registry.
    HeartbeatArrive {
        policy: u16,
        node: u32,
    },
    /// A heartbeat thread stops waiting for its self-check.
    SelfCheckTimeout {
        policy: u16,
        node: u32,
        generation: u32,
    },
    /// A Linkerd proxy's balancer queue enters failfast (`gateway/linkerd.rs`).
    LinkerdFailfast {
        replica: u32,
        generation: u32,
    },
    /// A Linkerd proxy's balancer queue looks for a ready endpoint again.
    LinkerdDrain {
        replica: u32,
    },
    /// A step of the pod in a node's slot (`pods/`); `epoch` tells a stale one.
    Pod {
        node: u32,
        epoch: u32,
        step: pods::PodStep,
    },
    /// Rolling update `i` of the model starts.
    Rollout(u32),
}

/// One line of the attempt trace (an access log of upstream attempts).
#[derive(Clone, Debug, serde::Serialize)]
pub struct TraceLine {
    pub t_s: f64,
    pub request: u64,
    pub scope: u16,
    pub node: String,
    pub result: String,
    pub charge: &'static str,
}

/// Receives trace lines when tracing is on.
pub type TraceSink<'a> = &'a mut dyn FnMut(&TraceLine);

/// The state of one run: a few parts, each with its own type and file.
/// Handlers (`on_<what happened>`) live in the file of the part they
/// concern and take what they need of the others.
pub struct World<'s> {
    pub(crate) model: &'s Model,
    pub(crate) q: EventQueue<Event>,
    /// The gateway's replicas: clocks, and how scopes and policy instances
    /// are laid out per replica (`fleet.rs`).
    pub(crate) fleet: Fleet,
    /// The random streams (`streams.rs`).
    pub(crate) rng: Streams,
    /// Each fault's window in this run (drawn starts included).
    pub(crate) fault_windows: Vec<(SimTime, Option<SimTime>)>,
    pub(crate) clients: client::Clients,
    pub(crate) gw: gateway::Gateway,
    /// Connections kept for reuse (`gateway.pool`), if any.
    pub(crate) pool: Option<Box<gateway::Pool>>,
    pub(crate) nodes: Vec<node::Node>,
    /// Every policy instance and what it hears (`policies.rs`).
    pub(crate) bank: PolicyBank,
    pub(crate) probes: probe::Probes,
    /// Per policy that asked for them, per node: heartbeat threads.
    pub(crate) heartbeats: Vec<Vec<heartbeat::Thread>>,
    pub(crate) rec: Recorder,
    /// The attempt trace and the gateway's event log, if kept.
    pub(crate) obs: Observers<'s>,
    /// When nodes are pods: their lifecycles (`pods/`).
    pub(crate) pods: Option<Box<pods::Pods>>,
    /// Stop (keeping the metrics so far) once this many events were processed.
    pub(crate) max_events: u64,
}

/// What watches a run from outside: the attempt trace (`--trace`) and the
/// gateway's event log (`--events`).
pub(crate) struct Observers<'s> {
    pub(crate) trace: Option<TraceSink<'s>>,
    /// The gateway's event log, if kept.
    pub(crate) events: Option<Box<event_log::Logger>>,
    /// A trace or an event log is kept: every attempt is observed.
    pub(crate) any: bool,
    /// Where the run adds the virtual microseconds it has simulated, every
    /// [`PROGRESS_EVERY`] events (`hcsim run`'s progress bar).
    pub(crate) progress: Option<&'s AtomicU64>,
}

/// Events between two progress reports: rare enough to cost nothing, often
/// enough (a few ms of CPU) for a smooth bar.
const PROGRESS_EVERY: u64 = 1 << 16;

/// Runs `model` with `seed` (the model's own seed is ignored) and returns its metrics.
pub fn run(model: &Model, seed: u64) -> RunSummary {
    World::new(model, seed, None).run()
}

/// Like [`run`], calling `sink` for every upstream attempt.
pub fn run_traced<'s>(model: &'s Model, seed: u64, sink: TraceSink<'s>) -> RunSummary {
    World::new(model, seed, Some(sink)).run()
}

/// A run stopped by its event budget before the end of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Truncated {
    /// The budget (`--max-events`).
    pub max_events: u64,
    /// Virtual time of the first event left unprocessed; the summary covers
    /// `[0, at)` (its `duration_s` and `measure_to_s` say so).
    pub at: SimTime,
}

/// Like [`run`] (or [`run_traced`] with a sink), processing at most
/// `max_events` events. A run cut short still yields its metrics so far.
pub fn run_budgeted<'s>(
    model: &'s Model,
    seed: u64,
    max_events: u64,
    trace: Option<TraceSink<'s>>,
) -> (RunSummary, Option<Truncated>) {
    run_with(model, seed, max_events, trace, false)
}

/// Like [`run_budgeted`]; `per_replica`: also keep each gateway replica's
/// node table ([`RunSummary::replicas`], `--per-replica`).
pub fn run_with<'s>(
    model: &'s Model,
    seed: u64,
    max_events: u64,
    trace: Option<TraceSink<'s>>,
    per_replica: bool,
) -> (RunSummary, Option<Truncated>) {
    let (summary, cut, _) = run_logged(model, seed, max_events, trace, per_replica, None, None);
    (summary, cut)
}

/// Like [`run_with`]; `events`: also keep the gateway's event log, at most
/// that many lines (see [`event_log`]).
pub fn run_logged<'s>(
    model: &'s Model,
    seed: u64,
    max_events: u64,
    trace: Option<TraceSink<'s>>,
    per_replica: bool,
    events: Option<usize>,
    progress: Option<&'s AtomicU64>,
) -> (RunSummary, Option<Truncated>, Option<event_log::EventLog>) {
    let mut w = World::new(model, seed, trace);
    w.max_events = max_events;
    w.obs.progress = progress;
    if per_replica {
        w.rec.track_replicas();
    }
    w.obs.events = events.map(|cap| Box::new(event_log::Logger::new(model, cap)));
    w.obs.any = w.obs.trace.is_some() || w.obs.events.is_some() || w.pods.is_some();
    let (summary, cut, log) = w.run_to_end_or_budget();
    (summary, cut.map(|at| Truncated { max_events, at }), log)
}

impl<'s> World<'s> {
    pub fn new(model: &'s Model, seed: u64, trace: Option<TraceSink<'s>>) -> Self {
        let fleet = Fleet::new(model, seed);
        let names = model.nodes.iter().map(|n| n.name.clone()).collect();
        let mut rec = Recorder::new(
            names,
            model.scopes(),
            model.end(),
            (model.measure_from, model.measure_to),
            model.bucket,
        );
        let fault_windows = fault::fault_windows(model, seed);
        for (f, &(start, end)) in model.faults.iter().zip(&fault_windows) {
            // A drawn start past the end: no fault in this run.
            if start < model.end() {
                rec.fault_window(f.node, start, end);
            }
        }
        for (i, n) in model.nodes.iter().enumerate() {
            rec.node_workers(NodeId(i as u32), n.workers);
        }
        rec.latency_thresholds(&model.latency_thresholds);
        rec.fleet(fleet.layout());
        let bank = PolicyBank::new(model, fleet.layout());
        let pool = gateway::Pool::of(model).map(Box::new);
        let mut gw = gateway::Gateway::new(model, &bank);
        let pods = pods::Pods::of(model, seed).map(Box::new);
        // A pod model's requests and attempts are counted per rolling update.
        gw.end_hooks |= pool.is_some() || pods.is_some();
        World {
            model,
            q: EventQueue::new(),
            gw,
            bank,
            fleet,
            rng: Streams::new(seed),
            fault_windows,
            clients: client::Clients::new(model),
            pool,
            nodes: model.nodes.iter().map(node::Node::new).collect(),
            probes: probe::Probes::default(),
            heartbeats: Vec::new(),
            rec,
            obs: Observers {
                any: trace.is_some() || pods.is_some(),
                trace,
                events: None,
                progress: None,
            },
            pods,
            max_events: u64::MAX,
        }
    }

    pub fn now(&self) -> SimTime {
        self.q.now()
    }

    /// Runs to the end of the scenario and summarises.
    pub fn run(self) -> RunSummary {
        self.run_to_end_or_budget().0
    }

    /// Runs to the end, or until `max_events` were processed (then also
    /// returns the time it stopped at), and summarises.
    fn run_to_end_or_budget(
        mut self,
    ) -> (RunSummary, Option<SimTime>, Option<event_log::EventLog>) {
        let mut cut = None;
        let end = self.model.end();
        self.begin();
        // One comparison per event whether or not progress is reported:
        // `max_events` is the budget, or the next progress report before it.
        let budget = self.max_events;
        let mut reported = SimTime::ZERO;
        self.max_events = self.next_stop(budget);
        loop {
            if self.q.popped() >= self.max_events {
                if self.max_events < budget {
                    reported = self.progress_tick(reported, budget);
                    continue;
                }
                if let Some(t) = self.q.peek_time().filter(|&t| t < end) {
                    self.rec.cut_at(t);
                    cut = Some(t);
                }
                break;
            }
            let Some((_, ev)) = self.q.pop_before(end) else {
                break;
            };
            self.dispatch(ev);
        }
        self.max_events = budget;
        if self.obs.progress.is_some() {
            self.report_progress(reported, cut.unwrap_or(end));
        }
        let log = self.obs.events.take().map(|l| l.log);
        let unfinished = self.gw.in_flight_counted() as u64;
        let seed_phase = self.fleet.clock(0).phase();
        let events = self.q.popped();
        let name = self.model.name.clone();
        let seed = self.rng.seed;
        let mut summary = self.rec.finish(&name, seed, seed_phase, events, unfinished);
        if let Some(p) = &self.pool {
            p.summarize(&mut summary);
        }
        summary.keys = self.gw.hash.summary();
        summary.queues = self.gw.pending.as_ref().map(|p| p.summary());
        if let Some(w) = &self.gw.warm {
            w.summarize(&mut summary);
        }
        if let Some(p) = &self.pods {
            let names: Vec<String> = self.model.nodes.iter().map(|n| n.name.clone()).collect();
            summary.pods = Some(p.log().summarize(cut.unwrap_or(end), &names));
        }
        if self.model.faults.iter().any(|f| f.phase.is_some()) {
            summary.fault_start_s = self
                .fault_windows
                .iter()
                .map(|&(s, _)| crate::stats::round6(s.as_secs_f64()))
                .collect();
        }
        (summary, cut, log)
    }

    /// The event count at which the loop next looks up from its work: the
    /// `budget`, or the next progress report before it.
    fn next_stop(&self, budget: u64) -> u64 {
        match self.obs.progress {
            Some(_) => budget.min(self.q.popped().saturating_add(PROGRESS_EVERY)),
            None => budget,
        }
    }

    /// A progress report in the middle of the run, out of the event loop's
    /// way: reports, sets the next stop, returns the new mark.
    #[cold]
    #[inline(never)]
    fn progress_tick(&mut self, reported: SimTime, budget: u64) -> SimTime {
        let mark = self.report_progress(reported, self.q.now());
        self.max_events = self.next_stop(budget);
        mark
    }

    /// Adds the virtual time simulated since `reported` to the progress
    /// counter; returns the new mark.
    fn report_progress(&self, reported: SimTime, now: SimTime) -> SimTime {
        if let Some(p) = self.obs.progress
            && now > reported
        {
            p.fetch_add(
                now.saturating_since(reported).as_micros(),
                Ordering::Relaxed,
            );
            return now;
        }
        reported
    }

    /// Time zero: the faults' windows, the clients, the policies' `on_start`.
    fn begin(&mut self) {
        // Faults first: at any instant their events then run before every
        // other (same time: insertion order), which `Node::in_fault` relies on.
        for (i, &(start, end)) in self.fault_windows.iter().enumerate() {
            self.q.schedule(start, Event::FaultStart(i as u32));
            if let Some(e) = end {
                self.q.schedule(e, Event::FaultEnd(i as u32));
            }
        }
        self.start_clients();
        self.with_every_policy(None, |p, cx| p.on_start(cx));
        self.refresh_all();
        if self.pods.is_some() {
            self.pods_begin();
        }
    }

    #[inline(always)]
    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::Arrival => self.on_arrival(),
            Event::JitteredArrival => self.on_jittered_arrival(),
            Event::Send => self.on_send(),
            Event::ClientWake(c) => self.on_client_wake(c),
            Event::ClientTimeout { slot, generation } => self.on_client_timeout(slot, generation),
            Event::AttemptFailed {
                slot,
                generation,
                why,
            } => self.on_attempt_failed(slot, generation, why),
            Event::AtNode {
                slot,
                generation,
                node,
            } => self.on_request_at_node(slot, generation, node),
            Event::Response {
                slot,
                generation,
                reply,
            } => self.on_response(slot, generation, reply),
            Event::ServiceDone {
                node,
                worker,
                epoch,
            } => self.on_service_done(node, worker, epoch),
            Event::FaultStart(i) => self.on_fault_start(i as usize),
            Event::FaultEnd(i) => self.on_fault_end(i as usize),
            Event::Listening { node, generation } => self.on_listening(node, generation),
            Event::Policy { policy, timer } => {
                self.with_policy(policy as usize, Some(NodeId(timer.node)), |p, cx| {
                    p.on_timer(cx, timer)
                })
            }
            Event::Retry { slot, generation } => self.on_retry(slot, generation),
            Event::QueueTimeout { slot, generation } => self.on_queue_timeout(slot, generation),
            Event::Conn { id, what } => self.on_conn_timer(id, what),
            Event::ProbeAtNode { probe, generation } => self.on_probe_at_node(probe, generation),
            Event::ProbeDone {
                probe,
                generation,
                result,
            } => self.on_probe_done(probe, generation, result),
            Event::HeartbeatTick { policy, node } => self.on_heartbeat_tick(policy, NodeId(node)),
            Event::HeartbeatArrive { policy, node } => {
                self.on_heartbeat_arrive(policy, NodeId(node))
            }
            Event::SelfCheckTimeout {
                policy,
                node,
                generation,
            } => self.on_self_check_timeout(policy, NodeId(node), generation),
            Event::LinkerdFailfast {
                replica,
                generation,
            } => self.on_linkerd_failfast(replica, generation),
            Event::LinkerdDrain { replica } => self.linkerd_drain(replica as usize),
            Event::Pod { node, epoch, step } => self.on_pod_event(NodeId(node), epoch, step),
            Event::Rollout(k) => self.on_rollout(k as usize),
        }
    }

    /// A finished attempt, to the trace and the event log (those kept).
    #[cold]
    #[inline(never)]
    pub(crate) fn observe_attempt(
        &mut self,
        request: u64,
        scope: u16,
        node: NodeId,
        result: AttemptResult,
        charge: Charge,
    ) {
        self.trace_attempt(request, scope, node, result, charge);
        if self.obs.events.is_some() {
            self.log_attempt_error(scope, node, result);
        }
        if let Some(p) = self.pods.as_deref_mut() {
            p.attempt(self.q.now(), result);
        }
    }

    /// Reports a finished attempt to the trace, if any.
    fn trace_attempt(
        &mut self,
        request: u64,
        scope: u16,
        node: NodeId,
        result: AttemptResult,
        charge: Charge,
    ) {
        if let Some(sink) = self.obs.trace.as_mut() {
            let line = TraceLine {
                t_s: self.q.now().as_secs_f64(),
                request,
                scope,
                node: self.model.nodes[node.index()].name.clone(),
                result: match result {
                    AttemptResult::Status(s) => s.to_string(),
                    AttemptResult::Refused => "refused".into(),
                    AttemptResult::ConnectTimeout => "connect_timeout".into(),
                    AttemptResult::ReadTimeout => "read_timeout".into(),
                    AttemptResult::Reset => "reset".into(),
                    AttemptResult::ClientAbort => "client_abort".into(),
                    AttemptResult::Rejected => "rejected".into(),
                },
                charge: match charge {
                    Charge::Failed => "failed",
                    Charge::Next => "next",
                    Charge::Success => "ok",
                },
            };
            sink(&line);
        }
    }
}
