//! Seed 004's prober: every `interval` a round sends one probe to each node
//! (through the pool of `threads`); `fall` failures in a row eject a node and
//! `rise` successes in a row readmit it. A node whose previous probe is still
//! waiting or in flight is skipped by the next round.

use super::defaults::{http, one, three};
use super::{Flavor, Prober, TAG_ROUND, at_least_one, positive, threads_valid};
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::policy::{PolicyCx, PolicyTimer, ProbeKind, ProbeOutcome};
use rand::RngExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// When rounds start.
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Schedule {
    /// On a grid: `phase + k·interval`, whatever the rounds take (a timer).
    #[default]
    FixedRate,
    /// `interval` after the previous round's last result (`probe all; sleep`).
    FixedDelay,
}

/// Parameters of the generic prober.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GenericParams {
    /// `http` (default: through the node's worker pool, 200–399 passes) or `tcp`.
    #[serde(default = "http")]
    pub probe: ProbeKind,
    /// Time between rounds (I).
    pub interval: SimDuration,
    /// A probe without a result by then fails.
    pub timeout: SimDuration,
    /// Consecutive failures that eject (K). Default 3.
    #[serde(default = "three")]
    pub fall: u32,
    /// Consecutive successes that readmit. Default 1 (seed 004 does not say).
    #[serde(default = "one")]
    pub rise: u32,
    /// Prober threads (P); omitted: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// `fixed_rate` (default) or `fixed_delay`.
    #[serde(default)]
    pub schedule: Schedule,
}

impl GenericParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        positive("interval", self.interval)?;
        positive("timeout", self.timeout)?;
        at_least_one("fall", self.fall)?;
        at_least_one("rise", self.rise)?;
        threads_valid(self.threads)
    }
}

struct Round {
    id: u32,
    start: SimTime,
    left: u32,
}

pub(super) struct Generic {
    p: GenericParams,
    nodes: usize,
    up: Vec<bool>,
    fails: Vec<u32>,
    oks: Vec<u32>,
    rounds: VecDeque<Round>,
    next_id: u32,
}

impl Generic {
    pub(super) fn new(p: &GenericParams, nodes: usize) -> Self {
        Generic {
            p: p.clone(),
            nodes,
            up: vec![true; nodes],
            fails: vec![0; nodes],
            oks: vec![0; nodes],
            rounds: VecDeque::new(),
            next_id: 0,
        }
    }

    fn arm(&self, cx: &mut PolicyCx, at: SimTime) {
        cx.at(
            at,
            PolicyTimer {
                tag: TAG_ROUND,
                node: 0,
                generation: 0,
            },
        );
    }

    fn start_round(&mut self, pr: &mut Prober, cx: &mut PolicyCx) {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let mut left = 0;
        for i in 0..self.nodes {
            let node = NodeId(i as u32);
            if pr.pool.is_pending(node) {
                continue;
            }
            pr.send(cx, node, self.p.timeout, self.p.timeout, None, id);
            left += 1;
        }
        let now = cx.now().t;
        match self.p.schedule {
            Schedule::FixedRate => self.arm(cx, now + self.p.interval),
            Schedule::FixedDelay if left == 0 => self.arm(cx, now + self.p.interval),
            Schedule::FixedDelay => {}
        }
        if left > 0 {
            self.rounds.push_back(Round {
                id,
                start: now,
                left,
            });
        }
    }
}

impl Flavor for Generic {
    fn start(&mut self, _pr: &mut Prober, cx: &mut PolicyCx) {
        // The prober started at an arbitrary moment relative to the faults.
        let phase = cx.rng().random_range(0..self.p.interval.as_micros());
        let at = cx.now().t + SimDuration::from_micros(phase);
        self.arm(cx, at);
    }

    fn on_timer(&mut self, pr: &mut Prober, cx: &mut PolicyCx, timer: PolicyTimer) {
        if timer.tag == TAG_ROUND {
            self.start_round(pr, cx);
        }
    }

    fn on_result(&mut self, pr: &mut Prober, cx: &mut PolicyCx, node: NodeId, o: &ProbeOutcome) {
        let i = node.index();
        if o.result.passes(pr.kind, 200, 399) {
            self.fails[i] = 0;
            self.oks[i] += 1;
            if !self.up[i] && self.oks[i] >= self.p.rise {
                self.up[i] = true;
                pr.publish(cx, node, true);
            }
        } else {
            self.oks[i] = 0;
            self.fails[i] += 1;
            if self.up[i] && self.fails[i] >= self.p.fall {
                self.up[i] = false;
                pr.publish(cx, node, false);
            }
        }
        let now = cx.now().t;
        if let Some(k) = self.rounds.iter().position(|r| r.id == o.tag) {
            let r = &mut self.rounds[k];
            r.left -= 1;
            if r.left == 0 {
                let duration = now.saturating_since(r.start);
                let last = k + 1 == self.rounds.len();
                self.rounds.remove(k);
                cx.probe_round(duration);
                if self.p.schedule == Schedule::FixedDelay && last {
                    self.arm(cx, now + self.p.interval);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testkit::{Harness, ms};
    use crate::policy::{ActiveProbe, ActiveProbeSpec, ProbeResult};

    const A: NodeId = NodeId(0);
    const B: NodeId = NodeId(1);

    fn policy(fall: u32, rise: u32, threads: Option<u32>, schedule: Schedule) -> ActiveProbe {
        let p = GenericParams {
            probe: ProbeKind::Http,
            interval: SimDuration::from_millis(500),
            timeout: SimDuration::from_millis(300),
            fall,
            rise,
            threads,
            schedule,
        };
        ActiveProbe::new(&ActiveProbeSpec::Generic(p), 2)
    }

    /// Runs the first round and returns its start time.
    fn first_round(h: &mut Harness<ActiveProbe>) -> SimTime {
        h.fire_next(ms(10_000)).expect("a first round")
    }

    #[test]
    fn rounds_are_on_a_grid_with_a_random_phase() {
        let mut h = Harness::seeded(policy(3, 1, None, Schedule::FixedRate), 5);
        let t0 = first_round(&mut h);
        assert!(t0 < ms(500), "phase within one interval: {t0}");
        assert_eq!(h.sent_to(A), [t0]);
        assert_eq!(h.sent_to(B), [t0]);
        h.answer(
            t0 + SimDuration::from_millis(5),
            A,
            ProbeResult::Status(200),
        );
        h.answer(
            t0 + SimDuration::from_millis(5),
            B,
            ProbeResult::Status(200),
        );
        let t1 = h.fire_next(ms(10_000)).unwrap();
        assert_eq!(t1, t0 + SimDuration::from_millis(500), "fixed rate");
        assert_eq!(h.probe_rounds(), [SimDuration::from_millis(5)]);
    }

    #[test]
    fn fall_failures_in_a_row_eject_and_a_success_resets_the_count() {
        let mut h = Harness::seeded(policy(3, 2, None, Schedule::FixedRate), 1);
        let mut t = first_round(&mut h);
        let step = SimDuration::from_millis(500);
        let results = [
            ProbeResult::Refused,
            ProbeResult::Timeout,
            ProbeResult::Status(200), // resets the failure count
            ProbeResult::Status(503),
            ProbeResult::Reset,
        ];
        for r in results {
            h.answer(t, A, r);
            h.answer(t, B, ProbeResult::Status(200));
            assert!(h.routable(A), "still in after {r:?}");
            t = h.fire_next(t + step).unwrap();
        }
        h.answer(t, A, ProbeResult::ConnectTimeout);
        assert!(!h.routable(A), "third failure in a row");
        assert!(h.routable(B));
        h.answer(t, B, ProbeResult::Status(200));
        t = h.fire_next(t + step).unwrap();
        h.answer(t, A, ProbeResult::Status(200));
        assert!(!h.routable(A), "rise=2 needs two successes");
        h.answer(t, B, ProbeResult::Status(200));
        t = h.fire_next(t + step).unwrap();
        h.answer(t, A, ProbeResult::Status(302));
        assert!(h.routable(A), "3xx passes");
    }

    #[test]
    fn a_node_still_pending_is_skipped_and_threads_bound_concurrency() {
        let mut h = Harness::seeded(policy(1, 1, Some(1), Schedule::FixedRate), 2);
        let t0 = first_round(&mut h);
        assert_eq!(h.sent_to(A), [t0], "one thread: B waits");
        assert!(h.sent_to(B).is_empty());
        let timeout = t0 + SimDuration::from_millis(300);
        h.answer(timeout, A, ProbeResult::Timeout);
        assert!(!h.routable(A));
        assert_eq!(h.sent_to(B), [timeout], "B took the freed thread");
        // B hangs past the next round: the round skips B and probes A.
        let t1 = h.fire_next(ms(10_000)).unwrap();
        assert_eq!(t1, t0 + SimDuration::from_millis(500));
        assert_eq!(h.sent_to(B), [timeout], "still one probe to B");
        assert!(h.sent_to(A).is_empty(), "A waits for the thread B holds");
        h.answer(t1 + SimDuration::from_millis(100), B, ProbeResult::Timeout);
        assert_eq!(h.sent_to(A), [t1 + SimDuration::from_millis(100)]);
    }

    #[test]
    fn fixed_delay_waits_for_the_round_to_finish() {
        let mut h = Harness::seeded(policy(3, 1, None, Schedule::FixedDelay), 3);
        let t0 = first_round(&mut h);
        assert!(
            h.fire_next(ms(10_000)).is_none(),
            "nothing armed until the round ends"
        );
        h.answer(
            t0 + SimDuration::from_millis(1),
            B,
            ProbeResult::Status(200),
        );
        assert!(h.fire_next(ms(10_000)).is_none(), "A is still out");
        h.answer(t0 + SimDuration::from_millis(300), A, ProbeResult::Timeout);
        let t1 = h.fire_next(ms(10_000)).unwrap();
        assert_eq!(t1, t0 + SimDuration::from_millis(800));
    }
}
