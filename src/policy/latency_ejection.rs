//! Latency-based outlier ejection: every `interval`, a node whose latency
//! quantile over the interval that just ended is more than `factor` times
//! the median of the other nodes' is ejected for `base_ejection_time` × its
//! ejection count.
//!
//! Envoy users have asked for this since 2016 (envoyproxy/envoy#1296 and its
//! successors); no proxy ships it. hcsim's design follows Envoy's
//! success-rate ejection (`DetectorImpl::processSuccessRateEjections` in
//! `source/common/upstream/outlier_detection_impl.cc`) wherever it applies,
//! so the two compare like for like:
//!
//! - Each node's attempts during an interval go into a latency histogram of
//!   that interval (quantiles within about 3 %); the analysis at a tick
//!   looks at the interval that just ended and starts a fresh one.
//! - A node counts only with at least `minimum_requests` attempts in the
//!   interval, and the analysis runs only when at least `minimum_hosts`
//!   nodes count (Envoy: `success_rate_request_volume`,
//!   `success_rate_minimum_hosts`). Ejected nodes do not count.
//! - Node `i` is an outlier when `q_i > factor × median(q_j, j ≠ i)`: the
//!   median of the others, so that one slow node cannot raise its own bar.
//! - Ejection time is `base_ejection_time × n`, capped at
//!   `max_ejection_time`, where `n` grows by one at each ejection and drops
//!   by one after each interval the node spends readmitted (Envoy's
//!   `eject_time_backoff`); un-ejection happens at ticks, as in Envoy.
//! - `max_ejection_percent` caps ejected nodes as Envoy ≥ 1.28 does
//!   (`100 × (ejected + 1) / nodes ≤ max_ejection_percent`), except that one
//!   node may always be ejected (Envoy ≥ 1.31's `always_eject_one_host`),
//!   so the default 10 % does not disable the policy below 10 nodes.
//!
//! What counts as an attempt's latency: the time from the peer's selection
//! to its response (any status), or to the read timeout or the client's
//! abort, which are lower bounds of the latency a hung node would have
//! shown. Connection failures and resets are fast failures, not latencies;
//! status-based policies see those.

use super::support::ejection::{Cap, Ejection, TICK, Times, arm_tick, may_eject};
use super::{
    AttemptReport, AttemptResult, HealthPolicy, Interests, Now, PolicyCx, PolicyParams,
    PolicyTimer, Scope, ScopeSel,
};
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::stats::{Histogram, median};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `latency_ejection` settings. Every field is optional.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LatencyEjectionParams {
    /// Time between analyses (ejections and un-ejections happen only then). Default 10s.
    pub interval: SimDuration,
    /// Which latency quantile of each node is compared, in (0, 1]. Default 0.99.
    pub quantile: f64,
    /// A node is an outlier when its quantile exceeds `factor` × the median
    /// of the other nodes' quantiles. Default 2.
    pub factor: f64,
    /// Attempts a node needs in the interval to be judged. Default 100.
    pub minimum_requests: u32,
    /// Nodes with enough attempts needed for any analysis. Default 3.
    pub minimum_hosts: u32,
    /// Ejection time = base × the node's ejection count. Default 30s.
    pub base_ejection_time: SimDuration,
    /// Cap on the ejection time. Default 300s.
    pub max_ejection_time: SimDuration,
    /// Cap on simultaneously ejected nodes, percent of all nodes; one node
    /// may always be ejected. Default 10.
    pub max_ejection_percent: u32,
}

impl Default for LatencyEjectionParams {
    fn default() -> Self {
        LatencyEjectionParams {
            interval: SimDuration::from_secs(10),
            quantile: 0.99,
            factor: 2.0,
            minimum_requests: 100,
            minimum_hosts: 3,
            base_ejection_time: SimDuration::from_secs(30),
            max_ejection_time: SimDuration::from_secs(300),
            max_ejection_percent: 10,
        }
    }
}

impl PolicyParams for LatencyEjectionParams {
    fn label(&self) -> String {
        format!(
            "latency_ejection p{} > {}× others",
            self.quantile * 100.0,
            self.factor
        )
    }

    fn build(&self, _scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(LatencyEjection::new(self, nodes))
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let err = |f: &str, r: String| Err((f.to_string(), r));
        if self.interval.is_zero() {
            return err("interval", "must be positive".into());
        }
        if !(self.quantile > 0.0 && self.quantile <= 1.0) {
            return err(
                "quantile",
                format!("must be in (0, 1] (0.99 is p99), found {}", self.quantile),
            );
        }
        if !(self.factor.is_finite() && self.factor >= 1.0) {
            return err(
                "factor",
                format!(
                    "must be a number of at least 1 (a node is ejected when its latency \
                     exceeds factor × the others'), found {}",
                    self.factor
                ),
            );
        }
        if self.minimum_requests == 0 {
            return err("minimum_requests", "must be at least 1".into());
        }
        if self.minimum_hosts < 2 {
            return err(
                "minimum_hosts",
                format!(
                    "must be at least 2 (a node is compared with the others), found {}",
                    self.minimum_hosts
                ),
            );
        }
        if self.base_ejection_time.is_zero() {
            return err("base_ejection_time", "must be positive".into());
        }
        if self.max_ejection_time < self.base_ejection_time {
            return err(
                "max_ejection_time",
                format!(
                    "cannot be smaller than base_ejection_time ({})",
                    self.base_ejection_time
                ),
            );
        }
        if self.max_ejection_percent > 100 {
            return err(
                "max_ejection_percent",
                format!(
                    "is a percentage (0..=100), found {}",
                    self.max_ejection_percent
                ),
            );
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
struct Node {
    /// Latencies of the interval in progress.
    latency: Histogram,
    /// Envoy's ejection lifecycle (`support::ejection`).
    ej: Ejection,
}

/// The latency detector for one upstream (shared by all gateway workers).
pub struct LatencyEjection {
    p: LatencyEjectionParams,
    nodes: Vec<Node>,
    ejected: u32,
    /// Scratch: (node, quantile in µs) of the nodes judged at a tick.
    judged: Vec<(usize, f64)>,
}

impl LatencyEjection {
    pub fn new(p: &LatencyEjectionParams, nodes: usize) -> Self {
        let node = Node {
            latency: Histogram::default(),
            ej: Ejection::default(),
        };
        LatencyEjection {
            p: p.clone(),
            nodes: vec![node; nodes],
            ejected: 0,
            judged: Vec::with_capacity(nodes),
        }
    }

    /// The ejection-time multiplier of a node.
    pub fn backoff(&self, node: NodeId) -> u32 {
        self.nodes[node.index()].ej.backoff
    }

    fn times(&self) -> Times {
        Times {
            base: self.p.base_ejection_time,
            max: self.p.max_ejection_time,
        }
    }

    /// Readmits a node whose ejection time is up.
    fn check_uneject(&mut self, cx: &mut PolicyCx, i: usize, now: SimTime) {
        let t = self.times();
        let n = &mut self.nodes[i];
        if n.ej.due(now, t) {
            n.ej.uneject(now);
            self.ejected -= 1;
            cx.readmitted(ScopeSel::All, NodeId(i as u32));
        }
    }

    /// The cap as Envoy ≥ 1.28 has it (strict), with one node always
    /// ejectable; Envoy's legacy rule is deliberately not offered here (this
    /// detector never existed in an Envoy that had it).
    fn may_eject(&self) -> bool {
        let pct = self.p.max_ejection_percent;
        may_eject(self.ejected, self.nodes.len(), pct, Cap::Strict, true)
    }

    fn eject(&mut self, cx: &mut PolicyCx, i: usize, now: SimTime) {
        let t = self.times();
        self.nodes[i].ej.eject(now, t, SimDuration::ZERO);
        self.ejected += 1;
        cx.ejected(ScopeSel::All, NodeId(i as u32));
    }

    /// Judges the interval that just ended and starts the next.
    fn analyse(&mut self, cx: &mut PolicyCx, now: SimTime) {
        self.judged.clear();
        for (i, n) in self.nodes.iter().enumerate() {
            if !n.ej.ejected && n.latency.count() >= self.p.minimum_requests as u64 {
                if let Some(q) = n.latency.quantile_us(self.p.quantile) {
                    self.judged.push((i, q));
                }
            }
        }
        for n in &mut self.nodes {
            n.latency.clear();
        }
        if self.judged.len() < self.p.minimum_hosts as usize {
            return;
        }
        // Every node against the others of the same interval, decided
        // before any is ejected (as Envoy computes its threshold first).
        let outliers: Vec<usize> = (0..self.judged.len())
            .filter_map(|k| {
                let (i, q) = self.judged[k];
                let others: Vec<f64> = self
                    .judged
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != k)
                    .map(|(_, &(_, q))| q)
                    .collect();
                let bar = median(&others)? * self.p.factor;
                (q > bar).then_some(i)
            })
            .collect();
        for i in outliers {
            if self.may_eject() {
                self.eject(cx, i, now);
            }
        }
    }

    fn on_tick(&mut self, cx: &mut PolicyCx) {
        let now = cx.now().t;
        for i in 0..self.nodes.len() {
            self.check_uneject(cx, i, now);
        }
        self.analyse(cx, now);
        let interval = self.p.interval;
        for n in &mut self.nodes {
            n.ej.decay(now, interval);
        }
        arm_tick(cx, now, interval);
    }
}

impl HealthPolicy for LatencyEjection {
    fn interests(&self) -> Interests {
        Interests {
            selections: false,
            ..Interests::DEFAULT
        }
    }

    fn on_start(&mut self, cx: &mut PolicyCx) {
        let now = cx.now().t;
        arm_tick(cx, now, self.p.interval);
    }

    fn is_routable(&self, _scope: Scope, node: NodeId, _now: Now) -> bool {
        !self.nodes[node.index()].ej.ejected
    }

    fn on_attempt(&mut self, _cx: &mut PolicyCx, r: &AttemptReport) {
        match r.result {
            AttemptResult::Status(_) | AttemptResult::ReadTimeout | AttemptResult::ClientAbort => {
                self.nodes[r.node.index()].latency.record(r.elapsed)
            }
            AttemptResult::Refused
            | AttemptResult::ConnectTimeout
            | AttemptResult::Reset
            | AttemptResult::Rejected => {}
        }
    }

    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        if timer.tag == TICK {
            self.on_tick(cx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testkit::{Harness, ms};

    const OK: AttemptResult = AttemptResult::Status(200);

    fn le(p: LatencyEjectionParams, nodes: usize) -> Harness<LatencyEjection> {
        Harness::new(LatencyEjection::new(&p, nodes))
    }

    /// Every node answers `per_node` attempts spread over the 10 s interval
    /// starting at `start_ms`, node `i` taking `latency_ms[i]`.
    fn interval(
        h: &mut Harness<LatencyEjection>,
        start_ms: u64,
        per_node: u32,
        latency_ms: &[u64],
    ) {
        for k in 0..per_node as u64 {
            let t = ms(start_ms + 1 + k * 9_000 / per_node as u64);
            for (i, &l) in latency_ms.iter().enumerate() {
                h.complete(t, i as u32, OK, SimDuration::from_millis(l));
            }
        }
    }

    #[test]
    fn a_slow_node_is_ejected_at_the_tick_that_ends_its_interval() {
        let mut h = le(LatencyEjectionParams::default(), 4);
        interval(&mut h, 0, 100, &[50, 5, 5, 6]);
        h.advance_to(ms(9_999));
        assert!(h.routable(0), "nothing is decided before the tick");
        h.advance_to(ms(10_000));
        assert!(!h.routable(0));
        assert!(h.routable(1) && h.routable(2) && h.routable(3));
        assert_eq!(h.history(0), vec![(ms(10_000), true)]);
        // 30 s later, at a tick
        h.advance_to(ms(39_999));
        assert!(!h.routable(0));
        h.advance_to(ms(40_000));
        assert!(h.routable(0));
        assert_eq!(h.history(0)[1], (ms(40_000), false));
    }

    #[test]
    fn the_bar_is_factor_times_the_median_of_the_others() {
        // 9 ms is below 2 × the others' median of 5 ms
        let mut h = le(LatencyEjectionParams::default(), 4);
        interval(&mut h, 0, 100, &[9, 5, 5, 6]);
        h.advance_to(ms(10_000));
        assert_eq!(h.ejections(0), 0);
        // the median of the others, not of all: 13 ms > 2 × median(5, 7) = 12 ms,
        // though 13 ms < 2 × median(13, 5, 7) = 14 ms
        let mut h = le(LatencyEjectionParams::default(), 3);
        interval(&mut h, 0, 100, &[13, 5, 7]);
        h.advance_to(ms(10_000));
        assert_eq!(h.ejections(0), 1);
        let p = LatencyEjectionParams {
            factor: 3.0,
            ..Default::default()
        };
        let mut h = le(p, 4);
        interval(&mut h, 0, 100, &[12, 5, 5, 6]);
        h.advance_to(ms(10_000));
        assert_eq!(h.ejections(0), 0, "12 ms is within 3 × 5 ms");
    }

    #[test]
    fn the_quantile_is_the_one_compared() {
        // one attempt in 50 takes 100 ms: p99 sees it, p50 does not
        let run = |quantile: f64| {
            let p = LatencyEjectionParams {
                quantile,
                ..Default::default()
            };
            let mut h = le(p, 3);
            for k in 0..200u64 {
                let slow = if k % 50 == 0 { 100 } else { 5 };
                for (i, l) in [slow, 5, 5].into_iter().enumerate() {
                    h.complete(ms(1 + k * 40), i as u32, OK, SimDuration::from_millis(l));
                }
            }
            h.advance_to(ms(10_000));
            h.ejections(0)
        };
        assert_eq!(run(0.99), 1);
        assert_eq!(run(0.5), 0);
    }

    #[test]
    fn volume_and_hosts_are_needed() {
        let mut h = le(LatencyEjectionParams::default(), 4);
        interval(&mut h, 0, 99, &[50, 5, 5, 5]);
        h.advance_to(ms(10_000));
        assert_eq!(h.ejections(0), 0, "99 attempts are below minimum_requests");
        // only two nodes with enough attempts: below minimum_hosts 3
        interval(&mut h, 10_000, 100, &[50, 5]);
        h.advance_to(ms(20_000));
        assert_eq!(h.ejections(0), 0);
        // each interval starts afresh
        interval(&mut h, 20_000, 100, &[50, 5, 5]);
        h.advance_to(ms(30_000));
        assert_eq!(h.ejections(0), 1);
    }

    #[test]
    fn timeouts_and_aborts_count_fast_failures_do_not() {
        let mut h = le(LatencyEjectionParams::default(), 3);
        for k in 0..100u64 {
            let t = ms(1 + k * 90);
            h.complete(t, 0, AttemptResult::ReadTimeout, SimDuration::from_secs(1));
            h.complete(t, 1, OK, SimDuration::from_millis(5));
            h.complete(t, 2, OK, SimDuration::from_millis(5));
        }
        h.advance_to(ms(10_000));
        assert_eq!(h.ejections(0), 1, "read timeouts are slow answers");
        let mut h = le(LatencyEjectionParams::default(), 3);
        for k in 0..100u64 {
            let t = ms(1 + k * 90);
            h.complete(t, 0, AttemptResult::Refused, SimDuration::from_secs(1));
            h.complete(t, 0, AttemptResult::Reset, SimDuration::from_secs(1));
            h.complete(t, 1, OK, SimDuration::from_millis(5));
            h.complete(t, 2, OK, SimDuration::from_millis(5));
        }
        h.advance_to(ms(10_000));
        assert_eq!(h.ejections(0), 0, "refusals and resets are not latencies");
    }

    #[test]
    fn ejection_time_grows_with_each_ejection_and_shrinks_when_healthy() {
        let p = LatencyEjectionParams {
            base_ejection_time: SimDuration::from_secs(10),
            ..Default::default()
        };
        let mut h = le(p, 3);
        interval(&mut h, 0, 100, &[50, 5, 5]);
        h.advance_to(ms(10_000));
        assert_eq!(h.policy.backoff(NodeId(0)), 1);
        h.advance_to(ms(20_000)); // 10 s × 1: back at the next tick
        assert!(h.routable(0));
        interval(&mut h, 20_000, 100, &[50, 5, 5]);
        h.advance_to(ms(30_000));
        assert_eq!(h.policy.backoff(NodeId(0)), 2);
        h.advance_to(ms(40_000));
        assert!(!h.routable(0), "20 s this time");
        h.advance_to(ms(50_000));
        assert!(h.routable(0));
        // healthy for an interval after its return: the multiplier drops
        interval(&mut h, 50_000, 100, &[5, 5, 5]);
        h.advance_to(ms(60_000));
        assert_eq!(h.policy.backoff(NodeId(0)), 1);
    }

    #[test]
    fn the_cap_allows_one_node_then_a_share_of_the_nodes() {
        // 6 nodes, 10 %: only one may be out at a time
        let mut h = le(LatencyEjectionParams::default(), 6);
        interval(&mut h, 0, 100, &[50, 60, 5, 5, 5, 5]);
        h.advance_to(ms(10_000));
        assert_eq!((h.ejections(0), h.ejections(1)), (1, 0));
        // 50 % of 6: three may be out
        let p = LatencyEjectionParams {
            max_ejection_percent: 50,
            ..Default::default()
        };
        let mut h = le(p, 6);
        interval(&mut h, 0, 100, &[50, 60, 5, 5, 5, 5]);
        h.advance_to(ms(10_000));
        assert_eq!((h.ejections(0), h.ejections(1)), (1, 1));
    }

    #[test]
    fn validation() {
        let bad = |p: LatencyEjectionParams| p.validate().unwrap_err().0;
        let d = LatencyEjectionParams::default;
        assert!(d().validate().is_ok());
        assert_eq!(
            bad(LatencyEjectionParams {
                quantile: 0.0,
                ..d()
            }),
            "quantile"
        );
        assert_eq!(
            bad(LatencyEjectionParams {
                quantile: 1.5,
                ..d()
            }),
            "quantile"
        );
        assert_eq!(bad(LatencyEjectionParams { factor: 0.5, ..d() }), "factor");
        assert_eq!(
            bad(LatencyEjectionParams {
                factor: f64::NAN,
                ..d()
            }),
            "factor"
        );
        assert_eq!(
            bad(LatencyEjectionParams {
                minimum_hosts: 1,
                ..d()
            }),
            "minimum_hosts"
        );
        assert_eq!(
            bad(LatencyEjectionParams {
                minimum_requests: 0,
                ..d()
            }),
            "minimum_requests"
        );
        assert_eq!(
            bad(LatencyEjectionParams {
                interval: SimDuration::ZERO,
                ..d()
            }),
            "interval"
        );
        assert_eq!(
            bad(LatencyEjectionParams {
                max_ejection_time: SimDuration::from_secs(1),
                ..d()
            }),
            "max_ejection_time"
        );
        assert_eq!(
            bad(LatencyEjectionParams {
                max_ejection_percent: 101,
                ..d()
            }),
            "max_ejection_percent"
        );
    }
}
