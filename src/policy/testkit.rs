//! The one harness for policy unit tests. It drives a policy through a
//! script of attempts, probe results, heartbeats and timers at given times,
//! through a real [`PolicyCx`], and keeps what the policy asked for and
//! reported: timers, probes in flight, heartbeat plans, and every notice with
//! its time.
//!
//! Time only moves forward, as in the engine. Before a scripted event at `t`,
//! the timers due at or before `t` fire, in `(time, request order)` order, as
//! the engine fires events in `(time, insertion order)` order. Probes stay in
//! flight until [`Harness::answer`] answers them.
//!
//! The parts policies are made of (a gateway view, a prober pool) are driven
//! the same way: [`Harness::part`] holds one, and [`Harness::call`] runs any
//! of its methods with a context at a given time.

use super::{
    Action, AttemptReport, AttemptResult, Charge, HealthPolicy, HeartbeatPlan, LogEvent, Notice,
    PolicyCx, PolicyTimer, ProbeOutcome, ProbeRequest, ProbeResult, WallClock,
};
use crate::engine::{SimDuration, SimRng, SimTime, rng};
use crate::ids::NodeId;

/// `v` milliseconds after the start.
pub(crate) fn ms(v: u64) -> SimTime {
    SimTime::from_micros(v * 1000)
}

/// A node as a test names it: `NodeId(1)`, or just `1`.
pub(crate) trait Node: Copy {
    fn id(self) -> NodeId;
}

impl Node for u32 {
    fn id(self) -> NodeId {
        NodeId(self)
    }
}

impl Node for NodeId {
    fn id(self) -> NodeId {
        self
    }
}

/// A probe the policy sent that has not been answered.
#[derive(Copy, Clone, Debug)]
pub(crate) struct InFlight {
    pub sent_at: SimTime,
    pub node: NodeId,
    pub req: ProbeRequest,
}

/// A policy (or a part of one) under test, and what it asked for so far.
pub(crate) struct Harness<P> {
    pub policy: P,
    rng: SimRng,
    clock: WallClock,
    now: SimTime,
    /// Timers asked for and not fired yet: (time, request order, timer).
    timers: Vec<(SimTime, u64, PolicyTimer)>,
    seq: u64,
    /// Every notice so far, with its time.
    notices: Vec<(SimTime, Notice)>,
    in_flight: Vec<InFlight>,
    heartbeats: Vec<HeartbeatPlan>,
    /// Completed checks the policy reported to the other policies.
    checked: Vec<(SimTime, NodeId, bool)>,
    /// When the policy reported it finished warming.
    warmed: Vec<SimTime>,
    /// Verdicts the policy published to the other gateway replicas.
    published: Vec<(SimTime, NodeId, bool, SimTime)>,
    /// The gateway keeps an event log: the policy's log lines, with their time.
    pub logging: bool,
    pub logs: Vec<(SimTime, LogEvent)>,
}

impl<P> Harness<P> {
    /// `part` at time zero with nothing called yet, its random numbers drawn
    /// from `seed`'s policy stream and nginx's wall clock at phase zero.
    pub(crate) fn part(part: P, seed: u64) -> Self {
        Harness {
            policy: part,
            rng: rng::stream(seed, crate::policy::RNG_STREAM),
            clock: WallClock::new(SimDuration::ZERO),
            now: SimTime::ZERO,
            timers: vec![],
            seq: 0,
            notices: vec![],
            in_flight: vec![],
            heartbeats: vec![],
            checked: vec![],
            warmed: vec![],
            published: vec![],
            logging: false,
            logs: vec![],
        }
    }

    /// Runs `f` with a context at `t` (not before the current time) and
    /// keeps the timers, notices, probes and heartbeat plans it asked for.
    /// Fires no timer.
    pub(crate) fn call<R>(&mut self, t: SimTime, f: impl FnOnce(&mut P, &mut PolicyCx) -> R) -> R {
        assert!(
            t >= self.now,
            "the script goes back in time: {t} < {}",
            self.now
        );
        self.now = t;
        let (mut timers, mut notices, mut actions) = (vec![], vec![], vec![]);
        let now = self.clock.now(t);
        let buffers = (&mut timers, &mut notices, &mut actions);
        let mut cx = PolicyCx::logged(now, &mut self.rng, buffers, self.logging);
        let r = f(&mut self.policy, &mut cx);
        for a in actions {
            match a {
                Action::Probe { node, req } => self.in_flight.push(InFlight {
                    sent_at: t,
                    node,
                    req,
                }),
                Action::StartHeartbeats(plan) => self.heartbeats.push(plan),
                Action::HostChecked { node, healthy } => self.checked.push((t, node, healthy)),
                Action::Warmed => self.warmed.push(t),
                Action::Log(ev) => self.logs.push((t, ev)),
                Action::Publish { node, routable, at } => {
                    self.published.push((t, node, routable, at))
                }
            }
        }
        for (at, timer) in timers {
            self.timers.push((at, self.seq, timer));
            self.seq += 1;
        }
        self.notices.extend(notices.into_iter().map(|n| (t, n)));
        r
    }

    /// The current time: the last event's, or the last `advance_to`.
    pub(crate) fn now(&self) -> SimTime {
        self.now
    }

    /// Timers asked for and not fired yet, in the order they were asked for.
    pub(crate) fn pending_timers(&self) -> Vec<(SimTime, PolicyTimer)> {
        self.timers.iter().map(|&(at, _, t)| (at, t)).collect()
    }

    /// The times of the pending timers, in the order they were asked for.
    pub(crate) fn timer_times(&self) -> Vec<SimTime> {
        self.timers.iter().map(|&(at, _, _)| at).collect()
    }

    /// Every notice so far, in order.
    pub(crate) fn notices(&self) -> impl Iterator<Item = &Notice> {
        self.notices.iter().map(|(_, n)| n)
    }

    /// Times `node` was reported ejected.
    pub(crate) fn ejections(&self, node: impl Node) -> usize {
        self.history(node).iter().filter(|&&(_, out)| out).count()
    }

    /// The time of every ejection or readmission of `node`: (time, ejected?).
    pub(crate) fn history(&self, node: impl Node) -> Vec<(SimTime, bool)> {
        let node = node.id();
        self.notices
            .iter()
            .filter_map(|(t, n)| match n {
                Notice::Ejected { node: x, .. } if *x == node => Some((*t, true)),
                Notice::Readmitted { node: x, .. } if *x == node => Some((*t, false)),
                _ => None,
            })
            .collect()
    }

    /// The durations of the probing rounds reported so far.
    pub(crate) fn probe_rounds(&self) -> Vec<SimDuration> {
        self.notices()
            .filter_map(|n| match n {
                Notice::ProbeRound { duration } => Some(*duration),
                _ => None,
            })
            .collect()
    }

    /// Probes sent and not answered yet, oldest first.
    pub(crate) fn in_flight(&self) -> &[InFlight] {
        &self.in_flight
    }

    /// Takes the probes in flight: the test answers them itself, or only
    /// looks at what was sent since the last time.
    pub(crate) fn take_in_flight(&mut self) -> Vec<InFlight> {
        std::mem::take(&mut self.in_flight)
    }

    /// The times at which the probes in flight to `node` were sent.
    pub(crate) fn sent_to(&self, node: impl Node) -> Vec<SimTime> {
        let node = node.id();
        self.in_flight
            .iter()
            .filter(|p| p.node == node)
            .map(|p| p.sent_at)
            .collect()
    }

    /// The completed checks reported to the other policies: (time, node, healthy).
    pub(crate) fn checked(&self) -> &[(SimTime, NodeId, bool)] {
        &self.checked
    }

    /// When the policy reported it finished warming.
    pub(crate) fn warmed(&self) -> &[SimTime] {
        &self.warmed
    }

    /// The verdicts published to the other gateway replicas: (time, node,
    /// routable, when it leaves the server).
    pub(crate) fn published(&self) -> &[(SimTime, NodeId, bool, SimTime)] {
        &self.published
    }

    /// The heartbeat plans the policy asked the engine to start.
    pub(crate) fn heartbeat_plans(&self) -> &[HeartbeatPlan] {
        &self.heartbeats
    }
}

impl<P: HealthPolicy> Harness<P> {
    /// `policy`, started at time zero (`on_start`), with seed 1 and nginx's
    /// wall clock at phase zero.
    pub(crate) fn new(policy: P) -> Self {
        Self::seeded(policy, 1)
    }

    /// `policy`, started at time zero, drawing from `seed`'s policy stream.
    pub(crate) fn seeded(policy: P, seed: u64) -> Self {
        let mut h = Self::part(policy, seed);
        h.call(SimTime::ZERO, |p, cx| p.on_start(cx));
        h
    }

    /// `policy`, started at time zero, the run starting `phase` into a
    /// wall-clock second.
    pub(crate) fn with_wall_phase(policy: P, phase: SimDuration) -> Self {
        let mut h = Self::part(policy, 1);
        h.clock = WallClock::new(phase);
        h.call(SimTime::ZERO, |p, cx| p.on_start(cx));
        h
    }

    /// Fires the earliest pending timer if it is due at or before `until`;
    /// returns its time.
    pub(crate) fn fire_next(&mut self, until: SimTime) -> Option<SimTime> {
        let i = (0..self.timers.len()).min_by_key(|&i| (self.timers[i].0, self.timers[i].1))?;
        let (at, _, timer) = self.timers[i];
        if at > until {
            return None;
        }
        self.timers.remove(i);
        self.call(at.max(self.now), |p, cx| p.on_timer(cx, timer));
        Some(at)
    }

    /// Moves time to `t`, firing every timer due at or before it.
    pub(crate) fn advance_to(&mut self, t: SimTime) {
        while self.fire_next(t).is_some() {}
        self.now = self.now.max(t);
    }

    /// The balancer selects `node` at `t`.
    pub(crate) fn select(&mut self, t: SimTime, node: impl Node) {
        self.advance_to(t);
        self.call(t, |p, cx| p.on_selected(cx, 0, node.id()));
    }

    /// The connection of an attempt on `node` is established at `t`.
    pub(crate) fn connect(&mut self, t: SimTime, node: impl Node) {
        self.advance_to(t);
        self.call(t, |p, cx| p.on_connected(cx, 0, node.id()));
    }

    /// An attempt on `node` ends at `t` with `result`, `elapsed` after it
    /// started; statuses below 500 and client aborts are charged as successes.
    pub(crate) fn complete(
        &mut self,
        t: SimTime,
        node: impl Node,
        result: AttemptResult,
        elapsed: SimDuration,
    ) {
        let charge = match result {
            AttemptResult::Status(s) if s < 500 => Charge::Success,
            AttemptResult::ClientAbort => Charge::Success,
            _ => Charge::Failed,
        };
        let report = AttemptReport {
            scope: 0,
            node: node.id(),
            result,
            charge,
            elapsed,
        };
        self.report(t, report);
    }

    /// An active health checker of the same gateway reports at `t` that a
    /// check of `node` completed (`healthy`: passed, host not failed).
    pub(crate) fn host_checked(&mut self, t: SimTime, node: impl Node, healthy: bool) {
        self.advance_to(t);
        self.call(t, |p, cx| p.on_host_checked(cx, node.id(), healthy));
    }

    /// Selection and completion at the same instant.
    pub(crate) fn attempt(&mut self, t: SimTime, node: impl Node, result: AttemptResult) {
        self.select(t, node);
        self.complete(t, node, result, SimDuration::ZERO);
    }

    /// An attempt ends at `t` and the gateway reports `report` as it is
    /// (no selection first).
    pub(crate) fn report(&mut self, t: SimTime, report: AttemptReport) {
        self.advance_to(t);
        self.call(t, |p, cx| p.on_attempt(cx, &report));
    }

    /// Answers the oldest probe in flight to `node` at `t` with `result`;
    /// returns the request it answered.
    pub(crate) fn answer(
        &mut self,
        t: SimTime,
        node: impl Node,
        result: ProbeResult,
    ) -> ProbeRequest {
        let node = node.id();
        self.advance_to(t);
        let i = self
            .in_flight
            .iter()
            .position(|p| p.node == node)
            .unwrap_or_else(|| panic!("no probe in flight to node {}", node.0));
        let probe = self.in_flight.remove(i);
        let outcome = ProbeOutcome {
            result,
            latency: t.saturating_since(probe.sent_at),
            tag: probe.req.tag,
        };
        self.call(t, |p, cx| p.on_probe_result(cx, node, &outcome));
        probe.req
    }

    /// A heartbeat from `node` reaches the registry at `t`.
    pub(crate) fn heartbeat(&mut self, t: SimTime, node: impl Node) {
        self.advance_to(t);
        self.call(t, |p, cx| p.on_heartbeat(cx, node.id()));
    }

    /// Is `node` routable now?
    pub(crate) fn routable(&self, node: impl Node) -> bool {
        self.routable_at(node, self.now)
    }

    /// Would `node` be routable at `t`, with nothing happening until then
    /// (no timer fired)? For policies whose verdict depends on the time
    /// alone, such as nginx's lazy `fail_timeout`.
    pub(crate) fn routable_at(&self, node: impl Node, t: SimTime) -> bool {
        self.policy.is_routable(0, node.id(), self.clock.now(t))
    }
}
