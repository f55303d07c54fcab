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
//!    (gateway/balancer.rs): Envoy's panic check, then the configured
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
//!    (gateway/balancer.rs): the connection count, the attempt trace line,
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
pub mod events;
mod fault;
mod gateway;
mod heartbeat;
mod node;
mod node_conn;
mod probe;

use crate::engine::rng::{self, Stream};
use crate::engine::{EventQueue, SimDuration, SimRng, SimTime};
pub use crate::ids::NodeId;
use crate::ids::Scope;
use crate::metrics::{Recorder, RunSummary};
use crate::policy::{
    self, Action, AttemptResult, Charge, FleetRole, HealthPolicy, Now, PolicyCx, PolicyTimer,
    ProbeResult, WallClock,
};
use crate::spec::Model;
use rand::RngExt;

pub use gateway::Reply;

/// FIFO lanes of the event queue, one per constant delay (see [`EventQueue`]).
pub(crate) mod lane {
    /// `clients.timeout` after a request starts.
    pub const CLIENT_TIMEOUT: usize = 0;
    /// `proxy_connect_timeout` after a connect.
    pub const CONNECT_TIMEOUT: usize = 1;
    /// One round trip after a connect (a refusal comes back).
    pub const RTT: usize = 2;
    /// One and a half round trips after a connect (the request reaches the node).
    pub const AT_NODE: usize = 3;
    /// Half a round trip after a node answers or resets.
    pub const HALF_RTT: usize = 4;
    /// A closed-loop client's think time after its request ended.
    pub const THINK: usize = 5;
    /// `proxy_read_timeout` of requests that reach a node and must wait
    /// (armed at arrival, one and a half round trips after the request was
    /// sent, so deadlines come in arming order).
    pub const READ_TIMEOUT_AT_NODE: usize = 6;
    /// The next open-loop arrival (one pending at a time).
    pub const ARRIVAL: usize = 7;
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

/// The state of one run.
pub struct World<'s> {
    pub(crate) model: &'s Model,
    pub(crate) q: EventQueue<Event>,
    /// Per gateway replica: its wall clock (nginx's whole seconds, its own phase).
    pub(crate) clocks: Vec<WallClock>,
    /// Policies per replica (`policies` holds replica 0's, then replica 1's, …)
    /// and peer-state scopes per replica (global scope `r × sloc + s`).
    pub(crate) npol: usize,
    pub(crate) sloc: usize,
    /// More than one replica.
    pub(crate) fleet: bool,
    /// Spreads requests over the replicas (`gateway.spread: random`), and
    /// the next replica in turn.
    pub(crate) rng_spread: SimRng,
    pub(crate) spread_next: u64,
    pub(crate) rng_arrivals: SimRng,
    pub(crate) rng_service: SimRng,
    pub(crate) rng_faults: SimRng,
    pub(crate) rng_gateway: SimRng,
    pub(crate) rng_policy: SimRng,
    pub(crate) rng_probe: SimRng,
    pub(crate) rng_heartbeat: SimRng,
    /// Start-up times of restarted processes (`restart_delay`).
    pub(crate) rng_restart: SimRng,
    /// Send delays of open-loop requests (`clients.send_jitter`), and
    /// their distribution.
    pub(crate) rng_jitter: SimRng,
    pub(crate) jitter: Option<Box<node::Sampler>>,
    /// Each fault's window in this run (drawn starts included).
    pub(crate) fault_windows: Vec<(SimTime, Option<SimTime>)>,
    pub(crate) clients: client::Clients,
    pub(crate) gw: gateway::Gateway,
    /// Connections kept for reuse (`gateway.pool`), if any.
    pub(crate) pool: Option<Box<gateway::Pool>>,
    pub(crate) nodes: Vec<node::Node>,
    pub(crate) policies: Vec<Box<dyn HealthPolicy>>,
    /// The policies that listen to `on_connected`, by index within a replica.
    pub(crate) hear_connections: Vec<usize>,
    /// The policies that listen to `on_selected`, by index within a replica.
    pub(crate) hear_selections: Vec<usize>,
    /// The policies that listen to `on_attempt`, by index within a replica.
    pub(crate) hear_attempts: Vec<usize>,
    /// The policies that listen to `on_host_checked`, likewise.
    hear_checks: Vec<usize>,
    /// The policies that may refuse an attempt (`admits`), likewise.
    pub(crate) admitters: Vec<usize>,
    /// Per policy: ask it again about a node after every call about that node
    /// (`false`: on its ejection and readmission notices only).
    refresh_after_call: Vec<bool>,
    pub(crate) probes: probe::Probes,
    /// Per policy that asked for them, per node: heartbeat threads.
    pub(crate) heartbeats: Vec<Vec<heartbeat::Thread>>,
    pub(crate) timers_buf: Vec<(SimTime, PolicyTimer)>,
    pub(crate) notices_buf: Vec<policy::Notice>,
    pub(crate) rec: Recorder,
    pub(crate) trace: Option<TraceSink<'s>>,
    /// The gateway's event log (`--events`), if kept.
    pub(crate) events: Option<Box<events::Logger>>,
    /// A trace or an event log is kept: every attempt is observed.
    pub(crate) observed: bool,
    pub(crate) seed: u64,
    /// Stop (keeping the metrics so far) once this many events were processed.
    pub(crate) max_events: u64,
}

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
    let (summary, cut, _) = run_logged(model, seed, max_events, trace, per_replica, None);
    (summary, cut)
}

/// Like [`run_with`]; `events`: also keep the gateway's event log, at most
/// that many lines (see [`events`]).
pub fn run_logged<'s>(
    model: &'s Model,
    seed: u64,
    max_events: u64,
    trace: Option<TraceSink<'s>>,
    per_replica: bool,
    events: Option<usize>,
) -> (RunSummary, Option<Truncated>, Option<events::EventLog>) {
    let mut w = World::new(model, seed, trace);
    w.max_events = max_events;
    if per_replica {
        w.rec.track_replicas();
    }
    w.events = events.map(|cap| Box::new(events::Logger::new(model, cap)));
    w.observed = w.trace.is_some() || w.events.is_some();
    let (summary, cut, log) = w.run_to_end_or_budget();
    (summary, cut.map(|at| Truncated { max_events, at }), log)
}

/// The indices (within a replica) of the policies for which `hears` holds.
fn listeners(
    policies: &[Box<dyn HealthPolicy>],
    hears: impl Fn(&dyn HealthPolicy) -> bool,
) -> Vec<usize> {
    (0..policies.len())
        .filter(|&i| hears(policies[i].as_ref()))
        .collect()
}

impl<'s> World<'s> {
    pub fn new(model: &'s Model, seed: u64, trace: Option<TraceSink<'s>>) -> Self {
        // Replica 0's phase is the single gateway's; the others continue the stream.
        let mut clock_rng = rng::stream(seed, Stream::Clock);
        let clocks: Vec<WallClock> = (0..model.replicas())
            .map(|_| {
                WallClock::new(match model.gateway.clock_phase {
                    Some(p) => p,
                    None => SimDuration::from_micros(clock_rng.random_range(0..1_000_000)),
                })
            })
            .collect();
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
        rec.fleet(model.replicas());
        let mut policies: Vec<_> = (0..model.replicas())
            .flat_map(|_| &model.policies)
            .map(|p| policy::build(p, model.scopes_per_replica(), model.nodes.len()))
            .collect();
        let npol = model.policies.len();
        if model.replicas() > 1 {
            // A server the replicas share (a registry) runs in replica 0's instance.
            for (i, p) in policies.iter_mut().enumerate() {
                p.join_fleet(if i < npol {
                    FleetRole::Owner
                } else {
                    FleetRole::Subscriber
                });
            }
        }
        let mut gw = gateway::Gateway::new(model, policies.len());
        gw.attempt_cap = policies[..npol]
            .iter()
            .filter_map(|p| p.attempt_timeout())
            .min();
        gw.guarded =
            gw.attempt_cap.is_some() || policies[..npol].iter().any(|p| p.rejects_attempts());
        let warming = policies[..npol].iter().filter(|p| p.warms()).count() as u32;
        gw.warming.fill(warming);
        World {
            model,
            q: EventQueue::new(),
            clocks,
            npol,
            sloc: model.scopes_per_replica(),
            fleet: model.replicas() > 1,
            rng_spread: rng::stream(seed, Stream::Spread),
            spread_next: 0,
            rng_arrivals: rng::stream(seed, Stream::Arrivals),
            rng_service: rng::stream(seed, Stream::Service),
            rng_faults: rng::stream(seed, Stream::Faults),
            rng_gateway: rng::stream(seed, Stream::Gateway),
            rng_policy: rng::stream(seed, Stream::Policy),
            rng_probe: rng::stream(seed, Stream::Probe),
            rng_heartbeat: rng::stream(seed, Stream::Heartbeat),
            rng_restart: rng::stream(seed, Stream::Restart),
            rng_jitter: rng::stream(seed, Stream::Jitter),
            jitter: model
                .send_jitter
                .as_ref()
                .map(|j| Box::new(node::Sampler::new(j))),
            fault_windows,
            clients: client::Clients::new(model),
            gw,
            pool: gateway::Pool::of(model).map(Box::new),
            hear_connections: listeners(&policies[..npol], |p| p.hears_connections()),
            hear_selections: listeners(&policies[..npol], |p| p.hears_selections()),
            hear_attempts: listeners(&policies[..npol], |p| p.hears_attempts()),
            hear_checks: listeners(&policies[..npol], |p| p.hears_host_checks()),
            admitters: listeners(&policies[..npol], |p| p.rejects_attempts()),
            refresh_after_call: policies.iter().map(|p| !p.routes_by_notices()).collect(),
            nodes: model.nodes.iter().map(node::Node::new).collect(),
            policies,
            probes: probe::Probes::default(),
            heartbeats: Vec::new(),
            timers_buf: Vec::new(),
            notices_buf: Vec::new(),
            rec,
            events: None,
            observed: trace.is_some(),
            trace,
            seed,
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
    fn run_to_end_or_budget(mut self) -> (RunSummary, Option<SimTime>, Option<events::EventLog>) {
        let mut cut = None;
        let end = self.model.end();
        self.begin();
        loop {
            if self.q.popped() >= self.max_events {
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
        let log = self.events.take().map(|l| l.log);
        let unfinished = self.gw.in_flight_counted() as u64;
        let seed_phase = self.clocks[0].phase();
        let events = self.q.popped();
        let name = self.model.name.clone();
        let seed = self.seed;
        let mut summary = self.rec.finish(&name, seed, seed_phase, events, unfinished);
        if let Some(p) = &self.pool {
            p.summarize(&mut summary);
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
        for i in 0..self.policies.len() {
            self.with_policy(i, None, |p, cx| p.on_start(cx));
        }
        self.refresh_all();
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
        }
    }

    /// Calls policy `i` with a fresh context, then turns its requests into
    /// events and its notices into metrics.
    pub(crate) fn with_policy<R>(
        &mut self,
        i: usize,
        about: Option<NodeId>,
        f: impl FnOnce(&mut dyn HealthPolicy, &mut PolicyCx) -> R,
    ) -> R {
        let now = self.clocks[self.replica_of_policy(i)].now(self.q.now());
        let mut cx = PolicyCx::logged(
            now,
            &mut self.rng_policy,
            &mut self.timers_buf,
            &mut self.notices_buf,
            self.events.is_some(),
        );
        let r = f(self.policies[i].as_mut(), &mut cx);
        let actions = cx.take_actions();
        // Most calls ask for nothing: keep the draining out of the hot path.
        if !self.timers_buf.is_empty() || !self.notices_buf.is_empty() {
            self.apply_policy_requests(i, now.t);
        }
        if let Some(node) = about
            && !self.gw.direct
            && self.refresh_after_call[i]
        {
            self.refresh_node(i, node, now);
        }
        for a in actions {
            match a {
                Action::Probe { node, req } => self.send_probe(i as u16, node, req),
                Action::StartHeartbeats(plan) => self.start_heartbeats(i as u16, plan),
                Action::HostChecked { node, healthy } => self.host_checked(i, node, healthy),
                Action::Warmed => self.on_warmed(self.replica_of_policy(i)),
                Action::Log(ev) => self.log_policy_event(i, ev),
                Action::Publish { node, routable, at } => {
                    self.publish_to_replicas(i, node, routable, at)
                }
            }
        }
        r
    }

    /// Policy instance `i` owns a server the replicas share (a registry)
    /// and published a verdict on `node`: the same policy of every other
    /// replica hears it now, in replica order.
    #[cold]
    fn publish_to_replicas(&mut self, i: usize, node: NodeId, routable: bool, at: SimTime) {
        let p = i % self.npol;
        for r in 0..self.model.replicas() {
            let j = r * self.npol + p;
            if j != i {
                self.with_policy(j, Some(node), |pol, cx| {
                    pol.on_published(cx, node, routable, at)
                });
            }
        }
    }

    /// Policy `i` completed a check of `node`: the other policies of its
    /// replica that listen hear it.
    #[cold]
    fn host_checked(&mut self, i: usize, node: NodeId, healthy: bool) {
        let first = self.replica_of_policy(i) * self.npol;
        for k in 0..self.hear_checks.len() {
            let j = first + self.hear_checks[k];
            if j != i {
                self.with_policy(j, Some(node), |p, cx| p.on_host_checked(cx, node, healthy));
            }
        }
    }

    /// Turns the timers and notices a policy queued into events and metrics.
    #[cold]
    fn apply_policy_requests(&mut self, i: usize, now: SimTime) {
        for (at, timer) in self.timers_buf.drain(..) {
            self.q.schedule(
                at,
                Event::Policy {
                    policy: i as u16,
                    timer,
                },
            );
        }
        let mut named = Vec::new();
        let first_scope = self.replica_of_policy(i) * self.sloc;
        for n in self.notices_buf.drain(..) {
            self.rec.notice(now, n, first_scope);
            if let policy::Notice::Ejected { node, .. } | policy::Notice::Readmitted { node, .. } =
                n
            {
                named.push(node);
            }
        }
        let now = self.clocks[self.replica_of_policy(i)].now(now);
        if self.gw.direct {
            return;
        }
        for node in named {
            self.refresh_node(i, node, now);
        }
    }

    /// The replica of global scope `s`. (A single gateway skips the
    /// division: these are on every attempt's path.)
    #[inline]
    pub(crate) fn replica_of(&self, s: Scope) -> usize {
        if self.fleet {
            s as usize / self.sloc
        } else {
            0
        }
    }

    /// The replica of policy instance `i`.
    #[inline]
    pub(crate) fn replica_of_policy(&self, i: usize) -> usize {
        if self.fleet { i / self.npol } else { 0 }
    }

    /// Global scope `s` within its replica: what that replica's policies call it.
    #[inline]
    pub(crate) fn local(&self, s: Scope) -> Scope {
        if self.fleet {
            (s as usize % self.sloc) as Scope
        } else {
            s
        }
    }

    /// The policy instances of the replica of global scope `s`.
    #[inline]
    pub(crate) fn policies_of(&self, s: Scope) -> std::ops::Range<usize> {
        let r = self.replica_of(s);
        r * self.npol..(r + 1) * self.npol
    }

    /// Now, on the clock of the replica of global scope `s`.
    #[inline]
    pub(crate) fn now_in(&self, s: Scope) -> Now {
        self.clocks[self.replica_of(s)].now(self.q.now())
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
        if self.events.is_some() {
            self.log_attempt_error(scope, node, result);
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
        if let Some(sink) = self.trace.as_mut() {
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
