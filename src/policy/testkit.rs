//! A fake `PolicyCx` for policy unit tests: drives one policy through a
//! script of attempts at given times, firing the timers it asked for in
//! `(time, request order)` order, as the engine would.

use super::{AttemptReport, AttemptResult, Charge, HealthPolicy, Notice, PolicyCx, PolicyTimer};
use crate::engine::{SimDuration, SimRng, SimTime, Stream, rng};
use crate::ids::NodeId;
use crate::policy::WallClock;

pub struct Harness<P: HealthPolicy> {
    pub policy: P,
    pub rng: SimRng,
    clock: WallClock,
    pub now: SimTime,
    /// Timers asked for and not fired yet: (time, request order, timer).
    pending: Vec<(SimTime, u64, PolicyTimer)>,
    seq: u64,
    /// Every notice so far, with its time.
    pub notices: Vec<(SimTime, Notice)>,
}

pub fn ms(v: u64) -> SimTime {
    SimTime::from_micros(v * 1000)
}

impl<P: HealthPolicy> Harness<P> {
    /// Starts `policy` at time zero (`on_start`).
    pub fn new(policy: P) -> Self {
        let mut h = Harness {
            policy,
            rng: rng::stream(1, Stream::Policy),
            clock: WallClock::new(SimDuration::ZERO),
            now: SimTime::ZERO,
            pending: vec![],
            seq: 0,
            notices: vec![],
        };
        h.call(|p, cx| p.on_start(cx));
        h
    }

    fn call(&mut self, f: impl FnOnce(&mut P, &mut PolicyCx)) {
        let mut timers = vec![];
        let mut notices = vec![];
        let now = self.clock.now(self.now);
        let mut cx = PolicyCx::new(now, &mut self.rng, &mut timers, &mut notices);
        f(&mut self.policy, &mut cx);
        for (at, t) in timers {
            self.pending.push((at, self.seq, t));
            self.seq += 1;
        }
        let t = self.now;
        self.notices.extend(notices.into_iter().map(|n| (t, n)));
    }

    /// Moves time to `t`, firing every timer due at or before it.
    pub fn advance_to(&mut self, t: SimTime) {
        loop {
            let next = self
                .pending
                .iter()
                .enumerate()
                .filter(|(_, (at, _, _))| *at <= t)
                .min_by_key(|(_, (at, seq, _))| (*at, *seq))
                .map(|(i, _)| i);
            let Some(i) = next else { break };
            let (at, _, timer) = self.pending.remove(i);
            self.now = at.max(self.now);
            self.call(|p, cx| p.on_timer(cx, timer));
        }
        self.now = t.max(self.now);
    }

    /// The balancer selects `node` at `t`.
    pub fn select(&mut self, t: SimTime, node: u32) {
        self.advance_to(t);
        self.call(|p, cx| p.on_selected(cx, 0, NodeId(node)));
    }

    /// The connection of an attempt on `node` is established at `t`.
    pub fn connect(&mut self, t: SimTime, node: u32) {
        self.advance_to(t);
        self.call(|p, cx| p.on_connected(cx, 0, NodeId(node)));
    }

    /// An attempt on `node` ends at `t` with `result`, `elapsed` after it started.
    pub fn complete(&mut self, t: SimTime, node: u32, result: AttemptResult, elapsed: SimDuration) {
        self.advance_to(t);
        let charge = match result {
            AttemptResult::Status(s) if s < 500 => Charge::Success,
            AttemptResult::ClientAbort => Charge::Success,
            _ => Charge::Failed,
        };
        let report = AttemptReport {
            scope: 0,
            node: NodeId(node),
            result,
            charge,
            elapsed,
        };
        self.call(|p, cx| p.on_attempt(cx, &report));
    }

    /// Selection and completion at the same instant.
    pub fn attempt(&mut self, t: SimTime, node: u32, result: AttemptResult) {
        self.select(t, node);
        self.complete(t, node, result, SimDuration::ZERO);
    }

    /// Is `node` routable at the current time?
    pub fn routable(&self, node: u32) -> bool {
        self.policy
            .is_routable(0, NodeId(node), self.clock.now(self.now))
    }

    /// Times `node` was reported ejected.
    pub fn ejections(&self, node: u32) -> usize {
        self.notices
            .iter()
            .filter(|(_, n)| matches!(n, Notice::Ejected { node: x, .. } if x.0 == node))
            .count()
    }

    /// The time of every notice about `node`: (time, ejected?).
    pub fn history(&self, node: u32) -> Vec<(SimTime, bool)> {
        self.notices
            .iter()
            .filter_map(|(t, n)| match n {
                Notice::Ejected { node: x, .. } if x.0 == node => Some((*t, true)),
                Notice::Readmitted { node: x, .. } if x.0 == node => Some((*t, false)),
                _ => None,
            })
            .collect()
    }
}
