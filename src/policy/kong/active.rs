//! lua-resty-healthcheck's active checker (3.1.2, `lib/resty/healthcheck.lua`),
//! as one Kong node runs it.
//!
//! - **The tick.** `_M.new` starts one recurring `resty.timer` per worker,
//!   `interval = CHECK_INTERVAL` (0.1 s) with `jitter = CHECK_JITTER`
//!   (0.01 s): the first expiry comes 0.1 s + U[0, 0.01) s after the start
//!   and the later ones every 0.1 s on that schedule (lua-resty-timer
//!   clears the jitter after the first run and re-arms from the planned
//!   expiry, `self.expire + interval - t`). Only the worker holding the
//!   periodic lock checks; one Kong node checks once.
//! - **Due.** On each tick, each mode whose `last_run + interval <= now`
//!   (`ngx.now()`, whole milliseconds) sets `last_run = now` and calls
//!   `checker_callback(mode)`. `start()` sets `last_run` to the start, so
//!   the first round comes on the first tick at least one `interval` later,
//!   and an interval that is not a multiple of 0.1 s is rounded up to the
//!   next tick. Here the timer is armed for that tick directly (the ticks in
//!   between do nothing).
//! - **The round.** `checker_callback` skips the round while the mode's
//!   callback lock exists (`get_callback_lock`: the previous round still
//!   runs, `ttl = 2 × (max(active intervals) + timeout)`); `last_run` has
//!   moved all the same, so a hanging target stretches the period. It lists
//!   the targets whose state belongs to the mode (`healthy` mode: healthy and
//!   mostly_healthy; `unhealthy` mode: unhealthy and mostly_unhealthy), in
//!   the order they were added, and if there is none removes the lock at
//!   once. Otherwise `active_check_targets` deals them in turn into
//!   `concurrency` work packages, each checked one target after the other
//!   (`run_work_package`), all packages at once; the lock is removed when the
//!   last package ends (`remove_callback_lock` deletes the key, whichever
//!   round set it).
//! - **One check** (`run_single_check`): `sock:settimeout(timeout)` bounds
//!   the connect and, separately, the wait for the status line.

use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::policy::{AfterConnect, PolicyCx, PolicyTimer, ProbeKind, ProbeRequest};
use rand::RngExt;
use std::collections::VecDeque;

/// `CHECK_INTERVAL`: the checker's tick.
pub(super) const CHECK_INTERVAL: SimDuration = SimDuration::from_millis(100);

/// The two modes, in the order the tick runs them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Healthy = 0,
    Unhealthy = 1,
}

/// One mode's schedule and callback lock.
#[derive(Clone, Debug)]
struct Schedule {
    /// `checks.active.<mode>.interval`; zero: the mode is off.
    interval: SimDuration,
    last_run: SimTime,
    /// The callback lock's expiry, while the key exists.
    lock_until: Option<SimTime>,
    /// Bumped when the mode's timer is re-armed (stale timers are ignored).
    generation: u32,
}

/// A work package of a round: the targets still to check, one at a time.
#[derive(Clone, Debug)]
struct Package {
    round: u32,
    queue: VecDeque<NodeId>,
}

/// A round in progress: its packages still running.
#[derive(Clone, Debug)]
struct Round {
    id: u32,
    mode: Mode,
    scheduled: SimTime,
    open_packages: u32,
}

/// The active checker of one Kong node.
#[derive(Clone, Debug)]
pub(super) struct Checker {
    kind: ProbeKind,
    timeout: SimDuration,
    concurrency: u32,
    ttl: SimDuration,
    /// The first tick (0.1 s plus the jitter after the start).
    first_tick: SimTime,
    modes: [Schedule; 2],
    /// Packages by probe tag; `None`: a free slot.
    packages: Vec<Option<Package>>,
    rounds: Vec<Round>,
    next_round: u32,
}

/// Timer tags: the mode's index; every timer of the policy is the
/// checker's, and the node field (which no verdict depends on) is 0.
const NO_NODE: u32 = 0;

impl Checker {
    /// A checker with `healthy` and `unhealthy` intervals (zero: off); `None`
    /// if both are off.
    pub(super) fn new(
        kind: ProbeKind,
        timeout: SimDuration,
        concurrency: u32,
        healthy: SimDuration,
        unhealthy: SimDuration,
    ) -> Option<Checker> {
        if healthy.is_zero() && unhealthy.is_zero() {
            return None;
        }
        let mode = |interval| Schedule {
            interval,
            last_run: SimTime::ZERO,
            lock_until: None,
            generation: 0,
        };
        Some(Checker {
            kind,
            timeout,
            concurrency: concurrency.max(1),
            ttl: SimDuration::from_micros(2 * (healthy.max(unhealthy) + timeout).as_micros()),
            first_tick: SimTime::ZERO + CHECK_INTERVAL,
            modes: [mode(healthy), mode(unhealthy)],
            packages: Vec::new(),
            rounds: Vec::new(),
            next_round: 0,
        })
    }

    /// `_M.new` and `start()` at time zero: the tick's jitter (whole
    /// milliseconds, as nginx's timers), then each mode's first due tick.
    pub(super) fn start(&mut self, cx: &mut PolicyCx) {
        let jitter_ms = cx.rng().random_range(0..10u64);
        self.first_tick = SimTime::ZERO + CHECK_INTERVAL + SimDuration::from_millis(jitter_ms);
        for m in [Mode::Healthy, Mode::Unhealthy] {
            self.arm(cx, m);
        }
    }

    /// The first tick at or after `t`.
    fn tick_at_or_after(&self, t: SimTime) -> SimTime {
        if t <= self.first_tick {
            return self.first_tick;
        }
        let step = CHECK_INTERVAL.as_micros();
        let k = (t.as_micros() - self.first_tick.as_micros()).div_ceil(step);
        SimTime::from_micros(self.first_tick.as_micros() + k * step)
    }

    /// Arms mode `m`'s timer for its next due tick.
    fn arm(&mut self, cx: &mut PolicyCx, m: Mode) {
        let s = &mut self.modes[m as usize];
        if s.interval.is_zero() {
            return;
        }
        s.generation = s.generation.wrapping_add(1);
        let (due, generation) = (s.last_run + s.interval, s.generation);
        let at = self.tick_at_or_after(due);
        cx.at(
            at,
            PolicyTimer {
                tag: m as u32,
                node: NO_NODE,
                generation,
            },
        );
    }

    /// Is this timer one of the checker's (and still current)? Returns its mode.
    pub(super) fn due(&self, timer: PolicyTimer) -> Option<Mode> {
        let m = match timer.tag {
            0 => Mode::Healthy,
            1 => Mode::Unhealthy,
            _ => return None,
        };
        (self.modes[m as usize].generation == timer.generation).then_some(m)
    }

    /// The tick found mode `m` due: `checker_callback(m)` over `targets`
    /// (those in the mode's states, in order), then the next due tick.
    pub(super) fn run(
        &mut self,
        cx: &mut PolicyCx,
        m: Mode,
        targets: impl Iterator<Item = NodeId>,
    ) {
        let now = cx.now().t;
        let s = &mut self.modes[m as usize];
        s.last_run = now;
        let locked = s.lock_until.is_some_and(|until| now < until);
        if !locked {
            let list: Vec<NodeId> = targets.collect();
            if list.is_empty() {
                self.modes[m as usize].lock_until = None;
            } else {
                self.modes[m as usize].lock_until = Some(now + self.ttl);
                self.start_round(cx, m, now, list);
            }
        }
        self.arm(cx, m);
    }

    /// `active_check_targets`: deals `list` into work packages and starts
    /// each package's first check.
    fn start_round(&mut self, cx: &mut PolicyCx, m: Mode, now: SimTime, list: Vec<NodeId>) {
        let id = self.next_round;
        self.next_round = self.next_round.wrapping_add(1);
        let n = (self.concurrency as usize).min(list.len());
        let mut queues: Vec<VecDeque<NodeId>> = vec![VecDeque::new(); n];
        for (i, node) in list.into_iter().enumerate() {
            queues[i % n].push_back(node);
        }
        self.rounds.push(Round {
            id,
            mode: m,
            scheduled: now,
            open_packages: n as u32,
        });
        for mut queue in queues {
            let first = queue.pop_front().expect("a package has a target");
            let tag = self.store(Package { round: id, queue });
            cx.probe(first, self.request(tag));
        }
    }

    fn store(&mut self, p: Package) -> u32 {
        match self.packages.iter().position(Option::is_none) {
            Some(i) => {
                self.packages[i] = Some(p);
                i as u32
            }
            None => {
                self.packages.push(Some(p));
                (self.packages.len() - 1) as u32
            }
        }
    }

    fn request(&self, tag: u32) -> ProbeRequest {
        ProbeRequest {
            kind: self.kind,
            connect_timeout: self.timeout,
            timeout: self.timeout,
            // `settimeout` bounds each socket operation: the status line
            // gets its own `timeout` once connected.
            timeout_after_connect: Some(AfterConnect::Replace(self.timeout)),
            tag,
        }
    }

    /// The check with probe tag `tag` ended: the package checks its next
    /// target; the last package of a round removes the mode's lock.
    pub(super) fn checked(&mut self, cx: &mut PolicyCx, tag: u32) {
        let Some(slot) = self.packages.get_mut(tag as usize) else {
            return;
        };
        let Some(p) = slot.as_mut() else {
            return;
        };
        if let Some(next) = p.queue.pop_front() {
            cx.probe(next, self.request(tag));
            return;
        }
        let round = p.round;
        *slot = None;
        let Some(i) = self.rounds.iter().position(|r| r.id == round) else {
            return;
        };
        let r = &mut self.rounds[i];
        r.open_packages -= 1;
        if r.open_packages == 0 {
            let (mode, scheduled) = (r.mode, r.scheduled);
            self.rounds.swap_remove(i);
            self.modes[mode as usize].lock_until = None;
            cx.probe_round(cx.now().t.saturating_since(scheduled));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testkit::{Harness, ms};

    fn checker(healthy_ms: u64, unhealthy_ms: u64, concurrency: u32) -> Checker {
        Checker::new(
            ProbeKind::Http,
            SimDuration::from_secs(1),
            concurrency,
            SimDuration::from_millis(healthy_ms),
            SimDuration::from_millis(unhealthy_ms),
        )
        .unwrap()
    }

    #[test]
    fn both_intervals_zero_is_no_checker() {
        assert!(
            Checker::new(
                ProbeKind::Http,
                SimDuration::from_secs(1),
                10,
                SimDuration::ZERO,
                SimDuration::ZERO
            )
            .is_none()
        );
    }

    #[test]
    fn an_interval_is_rounded_up_to_the_tenth_of_a_second_tick() {
        let mut h = Harness::part(checker(250, 0, 10), 3);
        h.call(ms(0), |c, cx| c.start(cx));
        let first = h.policy.first_tick;
        assert!(first >= ms(100) && first < ms(110), "{first}");
        // Due at 250 ms: the first tick at or after it is the third.
        let t = h.timer_times();
        assert_eq!(t, vec![first + SimDuration::from_millis(200)]);
    }

    #[test]
    fn a_round_still_running_skips_the_next_one_but_moves_last_run() {
        let mut h = Harness::part(checker(1000, 0, 10), 1);
        h.call(ms(0), |c, cx| c.start(cx));
        let tick = h.policy.first_tick + SimDuration::from_millis(900);
        let (timer, _) = (h.pending_timers()[0].1, ());
        let m = h.policy.due(timer).unwrap();
        h.call(tick, |c, cx| {
            c.run(cx, m, [NodeId(0), NodeId(1)].into_iter())
        });
        assert_eq!(h.take_in_flight().len(), 2, "one package per target");
        // Neither answers; one interval later the lock (ttl 4 s) still holds.
        let next = h.pending_timers().last().unwrap().1;
        let m = h.policy.due(next).unwrap();
        h.call(tick + SimDuration::from_secs(1), |c, cx| {
            c.run(cx, m, [NodeId(0), NodeId(1)].into_iter())
        });
        assert!(
            h.take_in_flight().is_empty(),
            "skipped: the round holds the lock"
        );
        assert_eq!(
            h.timer_times().last().copied(),
            Some(tick + SimDuration::from_secs(2)),
            "last_run moved to the skipped tick"
        );
    }

    #[test]
    fn work_packages_check_their_targets_one_after_the_other() {
        let mut h = Harness::part(checker(1000, 0, 2), 1);
        h.call(ms(0), |c, cx| c.start(cx));
        let nodes = [0, 1, 2, 3, 4].map(NodeId);
        h.call(ms(1000), |c, cx| {
            c.run(cx, Mode::Healthy, nodes.into_iter())
        });
        // Packages {0, 2, 4} and {1, 3}: 0 and 1 first.
        let sent: Vec<u32> = h.take_in_flight().iter().map(|p| p.node.0).collect();
        assert_eq!(sent, vec![0, 1]);
        h.call(ms(1010), |c, cx| c.checked(cx, 0));
        let sent: Vec<u32> = h.take_in_flight().iter().map(|p| p.node.0).collect();
        assert_eq!(sent, vec![2], "package 0 goes on with its next target");
        for (t, tag) in [(1020, 1), (1030, 0), (1040, 1)] {
            h.call(ms(t), |c, cx| c.checked(cx, tag));
        }
        assert!(
            h.policy.modes[0].lock_until.is_some(),
            "node 4 still to check"
        );
        let sent: Vec<u32> = h.take_in_flight().iter().map(|p| p.node.0).collect();
        assert_eq!(sent, vec![3, 4]);
        h.call(ms(1050), |c, cx| c.checked(cx, 0));
        assert!(
            h.policy.modes[0].lock_until.is_none(),
            "the last package removes the lock"
        );
        assert_eq!(h.probe_rounds(), vec![SimDuration::from_millis(50)]);
    }
}
