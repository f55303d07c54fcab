//! A generic ratio ejector, for reasoning about ratio-based ejection without
//! any product's quirks: a node is ejected as soon as its failure percentage
//! over a sliding window (time- or count-based) reaches a threshold with at
//! least a minimum number of requests in the window.
//!
//! - Evaluated on every attempt that ends (no ticks), failures as
//!   [`Outcome::of`] classifies them.
//! - Ejection time: `ejection_time`, multiplied by `backoff_multiplier` for
//!   each re-ejection, capped at `max_ejection_time`; the back-off starts over
//!   once a node stayed routable for `backoff_reset` after a readmission.
//! - Readmission at the end of the ejection time (a timer), with an empty
//!   window, so that the failures that ejected a node do not eject it again.
//!   Attempts still in flight when a node is ejected are not counted.
//! - At most `max_ejected_percent` of the nodes are ejected at once:
//!   an ejection is allowed iff `100 × (ejected + 1) ≤ max_ejected_percent × nodes`.
//! - One ejector for the whole gateway (all workers share it).

use super::support::backoff::Exponential;
use super::support::window::{BucketWindow, CountWindow, Outcome, SlidingWindow};
use super::{
    AttemptReport, HealthPolicy, Interests, Now, PolicyCx, PolicyParams, PolicyTimer, Scope,
    ScopeSel,
};
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The window the ratio is computed over; `kind` is the tag.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RatioWindowSpec {
    /// The last `length` of time, in `buckets` equal buckets (the oldest
    /// bucket leaves whole).
    #[serde(deserialize_with = "window_body::time")]
    Time { length: SimDuration, buckets: u32 },
    /// The last `size` attempts.
    #[serde(deserialize_with = "window_body::count")]
    Count { size: u32 },
}

/// The bodies of `RatioWindowSpec`'s variants, read with their own path
/// tracker (see [`crate::diagnostics`]) so that errors name the field.
mod window_body {
    use crate::diagnostics::tracked;
    use crate::engine::SimDuration;
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Time {
        length: SimDuration,
        buckets: u32,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Count {
        size: u32,
    }

    pub(super) fn time<'de, D: Deserializer<'de>>(d: D) -> Result<(SimDuration, u32), D::Error> {
        tracked::<_, Time>(d).map(|b| (b.length, b.buckets))
    }
    pub(super) fn count<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        tracked::<_, Count>(d).map(|b| b.size)
    }
}

/// Parameters of the ratio ejector.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RatioEjectionParams {
    /// Default: time, 10s in 10 buckets.
    pub window: RatioWindowSpec,
    /// Eject when `100 × failures / requests ≥` this. Default 50.
    pub failure_percentage_threshold: f64,
    /// Requests in the window before the ratio is considered. Default 20.
    pub minimum_requests: u32,
    /// First ejection time. Default 30s.
    pub ejection_time: SimDuration,
    /// Each re-ejection lasts this many times the previous one. Default 2.
    pub backoff_multiplier: f64,
    /// Cap on the ejection time. Default 300s.
    pub max_ejection_time: SimDuration,
    /// Routable this long after a readmission: the back-off starts over. Default 60s.
    pub backoff_reset: SimDuration,
    /// Percent of the nodes that may be ejected at once. Default 50.
    pub max_ejected_percent: u32,
}

impl Default for RatioEjectionParams {
    fn default() -> Self {
        RatioEjectionParams {
            window: RatioWindowSpec::Time {
                length: SimDuration::from_secs(10),
                buckets: 10,
            },
            failure_percentage_threshold: 50.0,
            minimum_requests: 20,
            ejection_time: SimDuration::from_secs(30),
            backoff_multiplier: 2.0,
            max_ejection_time: SimDuration::from_secs(300),
            backoff_reset: SimDuration::from_secs(60),
            max_ejected_percent: 50,
        }
    }
}

impl PolicyParams for RatioEjectionParams {
    fn label(&self) -> String {
        format!(
            "ratio_ejection threshold={}% min={}",
            self.failure_percentage_threshold, self.minimum_requests
        )
    }

    fn build(&self, _scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(RatioEjection::new(self, nodes))
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let err = |f: &str, r: &str| Err((f.to_string(), r.to_string()));
        match self.window {
            RatioWindowSpec::Time { length, buckets } => {
                if buckets == 0 || length.is_zero() {
                    return err("window", "needs a positive length and at least one bucket");
                }
                if length.as_micros() % buckets as u64 != 0 {
                    return err("window.buckets", "must divide the window length evenly");
                }
            }
            RatioWindowSpec::Count { size } => {
                if size == 0 {
                    return err("window.size", "must be at least 1");
                }
            }
        }
        if !(self.failure_percentage_threshold > 0.0 && self.failure_percentage_threshold <= 100.0)
        {
            return err(
                "failure_percentage_threshold",
                "is a percentage in (0, 100]",
            );
        }
        if self.ejection_time.is_zero() {
            return err("ejection_time", "must be positive");
        }
        if self.max_ejection_time < self.ejection_time {
            return err("max_ejection_time", "cannot be smaller than ejection_time");
        }
        if !(self.backoff_multiplier.is_finite() && self.backoff_multiplier >= 1.0) {
            return err("backoff_multiplier", "must be at least 1");
        }
        if self.max_ejected_percent > 100 {
            return err("max_ejected_percent", "is a percentage (0..=100)");
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Default)]
struct NodeState {
    ejected: bool,
    generation: u32,
    /// Ejections in the current back-off run.
    level: u32,
    readmitted_at: Option<SimTime>,
}

/// The generic ratio ejector.
pub struct RatioEjection {
    p: RatioEjectionParams,
    backoff: Exponential,
    bucket_us: u64,
    windows: Vec<SlidingWindow>,
    nodes: Vec<NodeState>,
    ejected: u32,
}

impl RatioEjection {
    pub fn new(p: &RatioEjectionParams, nodes: usize) -> Self {
        let (window, bucket_us) = match p.window {
            RatioWindowSpec::Time { length, buckets } => (
                SlidingWindow::Time(BucketWindow::new(buckets as usize)),
                (length.as_micros() / buckets.max(1) as u64).max(1),
            ),
            RatioWindowSpec::Count { size } => {
                (SlidingWindow::Count(CountWindow::new(size as usize)), 1)
            }
        };
        RatioEjection {
            backoff: Exponential {
                initial: p.ejection_time,
                multiplier: p.backoff_multiplier,
                max: p.max_ejection_time,
            },
            p: p.clone(),
            bucket_us,
            windows: vec![window; nodes],
            nodes: vec![NodeState::default(); nodes],
            ejected: 0,
        }
    }

    fn try_eject(&mut self, cx: &mut PolicyCx, i: usize) {
        let n = self.nodes.len() as u64;
        if (self.ejected as u64 + 1) * 100 > self.p.max_ejected_percent as u64 * n {
            return;
        }
        let now = cx.now().t;
        let reset = self.p.backoff_reset;
        let s = &mut self.nodes[i];
        if s.readmitted_at
            .is_some_and(|r| now.saturating_since(r) >= reset)
        {
            s.level = 0;
        }
        s.level += 1;
        s.ejected = true;
        s.generation = s.generation.wrapping_add(1);
        self.ejected += 1;
        let timer = PolicyTimer {
            tag: 0,
            node: i as u32,
            generation: s.generation,
        };
        cx.at(now + self.backoff.delay(s.level), timer);
        cx.ejected(ScopeSel::All, NodeId(i as u32));
    }
}

impl HealthPolicy for RatioEjection {
    fn interests(&self) -> Interests {
        Interests {
            selections: false,
            ..Interests::DEFAULT
        }
    }

    fn is_routable(&self, _: Scope, node: NodeId, _: Now) -> bool {
        !self.nodes[node.index()].ejected
    }

    fn on_attempt(&mut self, cx: &mut PolicyCx, r: &AttemptReport) {
        let i = r.node.index();
        if self.nodes[i].ejected {
            return;
        }
        let failed = match Outcome::of(r.result) {
            Outcome::Ignored => return,
            o => o == Outcome::Failure,
        };
        let bucket = (cx.now().t.as_micros() / self.bucket_us) as i64;
        let t = self.windows[i].record(bucket, failed, false);
        if t.calls >= self.p.minimum_requests
            && t.calls > 0
            && t.failures as f64 * 100.0 / t.calls as f64 >= self.p.failure_percentage_threshold
        {
            self.try_eject(cx, i);
        }
    }

    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        let i = timer.node as usize;
        let s = &mut self.nodes[i];
        if !s.ejected || s.generation != timer.generation {
            return;
        }
        s.ejected = false;
        s.readmitted_at = Some(cx.now().t);
        self.ejected -= 1;
        self.windows[i].clear();
        cx.readmitted(ScopeSel::All, NodeId(i as u32));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::AttemptResult;
    use crate::policy::testkit::{Harness, ms};

    const OK: AttemptResult = AttemptResult::Status(200);
    const BAD: AttemptResult = AttemptResult::Status(503);

    fn ratio(p: RatioEjectionParams, nodes: usize) -> Harness<RatioEjection> {
        Harness::new(RatioEjection::new(&p, nodes))
    }

    #[test]
    fn ejects_on_the_attempt_that_reaches_the_ratio_with_enough_volume() {
        let p = RatioEjectionParams {
            minimum_requests: 10,
            failure_percentage_threshold: 30.0,
            ..Default::default()
        };
        let mut h = ratio(p, 4);
        // 3 failures in 9: volume too low.
        for k in 0..9 {
            h.attempt(ms(k * 10), 0, if k < 3 { BAD } else { OK });
        }
        assert!(h.routable(0));
        // 10th: 3/10 = 30 % ≥ 30 % → ejected now.
        h.attempt(ms(100), 0, OK);
        assert!(!h.routable(0));
        assert_eq!(h.history(0), vec![(ms(100), true)]);
    }

    #[test]
    fn time_window_forgets_old_buckets() {
        let p = RatioEjectionParams {
            window: RatioWindowSpec::Time {
                length: SimDuration::from_secs(2),
                buckets: 2,
            },
            minimum_requests: 4,
            ..Default::default()
        };
        let mut h = ratio(p, 4);
        h.attempt(ms(100), 0, BAD);
        h.attempt(ms(200), 0, BAD);
        h.attempt(ms(300), 0, BAD);
        // two seconds later the first bucket has left: 1 of 1.
        h.attempt(ms(2_100), 0, OK);
        h.attempt(ms(2_200), 0, OK);
        h.attempt(ms(2_300), 0, OK);
        h.attempt(ms(2_400), 0, BAD);
        assert!(h.routable(0), "1 failure in 4 within the window");
    }

    #[test]
    fn back_off_doubles_and_resets_after_a_healthy_spell() {
        let p = RatioEjectionParams {
            window: RatioWindowSpec::Count { size: 2 },
            minimum_requests: 2,
            ejection_time: SimDuration::from_secs(10),
            backoff_reset: SimDuration::from_secs(60),
            max_ejected_percent: 100,
            ..Default::default()
        };
        let mut h = ratio(p, 1);
        let mut t = 1_000;
        let mut lengths = vec![];
        for _ in 0..3 {
            h.attempt(ms(t), 0, BAD);
            h.attempt(ms(t + 1), 0, BAD);
            let start = h.now();
            while !h.routable(0) {
                t += 100;
                h.advance_to(ms(t));
            }
            lengths.push(h.now().saturating_since(start).as_micros() / 1_000_000);
        }
        assert_eq!(lengths, vec![10, 20, 40]);
        // A minute of health: back to 10 s.
        t += 60_000;
        h.attempt(ms(t), 0, BAD);
        h.attempt(ms(t + 1), 0, BAD);
        let start = h.now();
        h.advance_to(start + SimDuration::from_secs(10));
        assert!(h.routable(0));
    }

    #[test]
    fn max_ejected_percent_caps_simultaneous_ejections() {
        let p = RatioEjectionParams {
            window: RatioWindowSpec::Count { size: 1 },
            minimum_requests: 1,
            max_ejected_percent: 50,
            ..Default::default()
        };
        let mut h = ratio(p, 4);
        for n in 0..4 {
            h.attempt(ms(1), n, BAD);
        }
        let out = (0..4).filter(|&n| !h.routable(n)).count();
        assert_eq!(out, 2, "half of four");
    }

    #[test]
    fn client_aborts_do_not_count() {
        let p = RatioEjectionParams {
            window: RatioWindowSpec::Count { size: 4 },
            minimum_requests: 2,
            ..Default::default()
        };
        let mut h = ratio(p, 2);
        h.attempt(ms(1), 0, BAD);
        h.attempt(ms(2), 0, AttemptResult::ClientAbort);
        h.attempt(ms(3), 0, AttemptResult::ClientAbort);
        assert!(h.routable(0), "one counted request: below the volume");
    }
}
