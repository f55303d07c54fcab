//! Envoy active health checking (reference §2; envoy
//! `health_checker_base_impl.cc`: `handleSuccess`, `setUnhealthy`, `interval`).
//!
//! - Hosts start unhealthy; the first check fires at once (or after
//!   `U[0, initial_jitter)`), and the first success makes a host healthy
//!   whatever `healthy_threshold` says.
//! - A network failure or timeout counts toward `unhealthy_threshold`; an
//!   unexpected HTTP status (outside `expected_statuses`, default only 200)
//!   makes the host unhealthy at once, unless it is in `retriable_statuses`,
//!   which counts like a network failure (`HttpHealthCheckerImpl::
//!   HttpActiveHealthCheckSession::healthCheckResult`, `setUnhealthy`).
//! - The next check is armed when the result arrives, after an interval that
//!   depends on whether the cluster ever carried traffic, the result and
//!   whether a transition is pending, plus jitter; at least 1 ms.
//! - Every completed check runs the host-check-complete callbacks: Envoy's
//!   outlier detector un-ejects a host whose check passed
//!   (`DetectorImpl::initialize`, see [`crate::policy::OutlierDetection`]),
//!   and the cluster finishes warming once as many checks completed as it has
//!   hosts (`ClusterImplBase::onPreInitComplete` counts
//!   `pending_initialize_health_checks_` down, then `finishInitialization`):
//!   the gateway takes no traffic before.

use super::defaults::http;
use super::statuses::{StatusRange, StatusSet, envoy_ranges};
use super::{Flavor, Prober, TAG_CHECK, at_least_one, positive, threads_valid};
use crate::engine::SimDuration;
use crate::ids::NodeId;
use crate::policy::{PolicyCx, PolicyTimer, ProbeKind, ProbeOutcome, ProbeResult};
use rand::RngExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `HealthCheck` fields of an Envoy cluster.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvoyParams {
    /// `http` (default; only 200 passes unless `expected_statuses` says
    /// otherwise) or `tcp` (connect only).
    #[serde(default = "http")]
    pub probe: ProbeKind,
    /// `http_health_check.expected_statuses`: the statuses that pass, as
    /// `{start, end}` ranges, `end` excluded (`[{"start": 200, "end": 400}]`
    /// is 200–399). Default: only 200.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected_statuses: Vec<StatusRange>,
    /// `http_health_check.retriable_statuses`: unexpected statuses that
    /// count toward `unhealthy_threshold` like a network failure instead of
    /// making the host unhealthy at once. Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retriable_statuses: Vec<StatusRange>,
    /// Required.
    pub timeout: SimDuration,
    /// Required.
    pub interval: SimDuration,
    /// Required.
    pub unhealthy_threshold: u32,
    /// Required.
    pub healthy_threshold: u32,
    /// First check after `U[0, initial_jitter)`. Default 0s.
    #[serde(default)]
    pub initial_jitter: SimDuration,
    /// Adds `U[0, interval_jitter)` to each interval. Default 0s.
    #[serde(default)]
    pub interval_jitter: SimDuration,
    /// Adds `U[0, percent · interval / 100)`. Default 0.
    #[serde(default)]
    pub interval_jitter_percent: u32,
    /// Interval while the cluster never carried traffic. Default 60s.
    #[serde(default = "sixty_s")]
    pub no_traffic_interval: SimDuration,
    /// Default: `no_traffic_interval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_traffic_healthy_interval: Option<SimDuration>,
    /// Default: `interval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy_interval: Option<SimDuration>,
    /// Default: `unhealthy_interval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy_edge_interval: Option<SimDuration>,
    /// Default: `interval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_edge_interval: Option<SimDuration>,
    /// Omitted: no limit (Envoy's checks are event-driven).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// `warming` (default): the gateway takes no traffic until every host's
    /// first check completed, as a starting Envoy; `running`: the run starts
    /// in a long-running Envoy, traffic flows from the start.
    #[serde(default, skip_serializing_if = "ClusterStart::is_warming")]
    pub cluster_start: ClusterStart,
}

/// How the cluster starts.
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClusterStart {
    /// Envoy's cluster warming: requests wait until the first round of
    /// checks completed (`ClusterImplBase::onPreInitComplete`); a host that
    /// failed its first check then gets none.
    #[default]
    Warming,
    /// Already initialised (a long-running Envoy, e.g. a fleet of sidecars
    /// studied in steady state): no wait.
    Running,
}

impl ClusterStart {
    fn is_warming(&self) -> bool {
        *self == ClusterStart::Warming
    }
}

fn sixty_s() -> SimDuration {
    SimDuration::from_secs(60)
}

impl EnvoyParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        positive("timeout", self.timeout)?;
        positive("interval", self.interval)?;
        positive("no_traffic_interval", self.no_traffic_interval)?;
        at_least_one("unhealthy_threshold", self.unhealthy_threshold)?;
        at_least_one("healthy_threshold", self.healthy_threshold)?;
        self.statuses()?;
        threads_valid(self.threads)
    }

    /// The statuses that pass and those that are retriable
    /// (`HttpStatusChecker`'s constructor and `validateRange`).
    fn statuses(&self) -> Result<(StatusSet, StatusSet), (String, String)> {
        Ok((
            envoy_ranges(
                "expected_statuses",
                &self.expected_statuses,
                StatusSet::range(200, 200),
            )?,
            envoy_ranges(
                "retriable_statuses",
                &self.retriable_statuses,
                StatusSet::EMPTY,
            )?,
        ))
    }
}

/// `HealthTransition`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Transition {
    Unchanged,
    Changed,
    ChangePending,
}

fn ms(d: SimDuration) -> u64 {
    d.as_micros() / 1000
}

pub(super) struct EnvoyHc {
    p: EnvoyParams,
    /// `expected_statuses` and `retriable_statuses`.
    expected: StatusSet,
    retriable: StatusSet,
    nodes: usize,
    unhealthy: Vec<bool>,
    num_healthy: Vec<u32>,
    num_unhealthy: Vec<u32>,
    first_check: Vec<bool>,
    /// `upstream_cx_total.used()`: the cluster ever opened a connection.
    had_traffic: bool,
    /// `pending_initialize_health_checks_`: checks left before the cluster
    /// finishes warming.
    pending_init: usize,
}

impl EnvoyHc {
    pub(super) fn new(p: &EnvoyParams, nodes: usize) -> Self {
        // Validated with the model; an invalid range cannot get here.
        let (expected, retriable) = p
            .statuses()
            .unwrap_or((StatusSet::range(200, 200), StatusSet::EMPTY));
        EnvoyHc {
            p: p.clone(),
            expected,
            retriable,
            nodes,
            unhealthy: vec![true; nodes],
            num_healthy: vec![0; nodes],
            num_unhealthy: vec![0; nodes],
            first_check: vec![true; nodes],
            had_traffic: false,
            pending_init: match p.cluster_start {
                ClusterStart::Warming => nodes,
                ClusterStart::Running => 0,
            },
        }
    }

    fn check_now(&self, pr: &mut Prober, cx: &mut PolicyCx, node: NodeId) {
        pr.send(cx, node, self.p.timeout, self.p.timeout, None, 0);
    }

    fn arm(cx: &mut PolicyCx, node: NodeId, delay: SimDuration) {
        let at = cx.now().t + delay;
        cx.at(
            at,
            PolicyTimer {
                tag: TAG_CHECK,
                node: node.0,
                generation: 0,
            },
        );
    }

    fn handle_success(&mut self, pr: &mut Prober, cx: &mut PolicyCx, i: usize) -> Transition {
        self.num_unhealthy[i] = 0;
        let mut t = Transition::Unchanged;
        if self.unhealthy[i] {
            self.num_healthy[i] += 1;
            if self.first_check[i] || self.num_healthy[i] == self.p.healthy_threshold {
                self.unhealthy[i] = false;
                pr.publish(cx, NodeId(i as u32), true);
                t = Transition::Changed;
            } else {
                t = Transition::ChangePending;
            }
        }
        self.first_check[i] = false;
        t
    }

    /// `immediate`: an unexpected status (an ACTIVE, non-retriable failure).
    fn set_unhealthy(
        &mut self,
        pr: &mut Prober,
        cx: &mut PolicyCx,
        i: usize,
        immediate: bool,
    ) -> Transition {
        self.num_healthy[i] = 0;
        let mut t = Transition::Unchanged;
        if !self.unhealthy[i] {
            self.num_unhealthy[i] += 1;
            if immediate || self.num_unhealthy[i] == self.p.unhealthy_threshold {
                self.unhealthy[i] = true;
                pr.publish(cx, NodeId(i as u32), false);
                t = Transition::Changed;
            } else {
                t = Transition::ChangePending;
            }
        }
        self.first_check[i] = false;
        t
    }

    /// `HealthCheckerImplBase::interval`, in whole milliseconds.
    fn interval(&self, cx: &mut PolicyCx, healthy: bool, t: Transition) -> SimDuration {
        let p = &self.p;
        let unhealthy_interval = p.unhealthy_interval.unwrap_or(p.interval);
        let pending = t == Transition::ChangePending;
        let mut base = if self.had_traffic {
            match (healthy, pending) {
                (true, true) => ms(p.healthy_edge_interval.unwrap_or(p.interval)),
                (true, false) => ms(p.interval),
                (false, true) => ms(p.unhealthy_edge_interval.unwrap_or(unhealthy_interval)),
                (false, false) => ms(unhealthy_interval),
            }
        } else if healthy && !pending {
            ms(p.no_traffic_healthy_interval
                .unwrap_or(p.no_traffic_interval))
        } else {
            ms(p.no_traffic_interval)
        };
        if p.interval_jitter_percent > 0 {
            let m = p.interval_jitter_percent as u64 * base / 100;
            if m > 0 {
                base += cx.rng().random::<u64>() % m;
            }
        }
        let j = ms(p.interval_jitter);
        if j > 0 {
            base += cx.rng().random::<u64>() % j;
        }
        SimDuration::from_millis(base.max(1))
    }
}

impl Flavor for EnvoyHc {
    fn start(&mut self, pr: &mut Prober, cx: &mut PolicyCx) {
        let jitter = ms(self.p.initial_jitter);
        for i in 0..self.nodes {
            let node = NodeId(i as u32);
            if jitter > 0 {
                let d = cx.rng().random::<u64>() % jitter;
                Self::arm(cx, node, SimDuration::from_millis(d));
            } else {
                self.check_now(pr, cx, node);
            }
        }
    }

    fn on_timer(&mut self, pr: &mut Prober, cx: &mut PolicyCx, timer: PolicyTimer) {
        if timer.tag == TAG_CHECK {
            self.check_now(pr, cx, NodeId(timer.node));
        }
    }

    fn on_result(&mut self, pr: &mut Prober, cx: &mut PolicyCx, node: NodeId, o: &ProbeOutcome) {
        let i = node.index();
        let ok = match (pr.kind, o.result) {
            (ProbeKind::Http, ProbeResult::Status(s)) => self.expected.contains(s),
            (kind, r) => r.passes(kind, 200, 200),
        };
        let t = if ok {
            self.handle_success(pr, cx, i)
        } else {
            // An ACTIVE failure ejects at once unless it is retriable.
            let immediate =
                matches!(o.result, ProbeResult::Status(s) if !self.retriable.contains(s));
            self.set_unhealthy(pr, cx, i, immediate)
        };
        // The host-check-complete callbacks (`runCallbacks` after
        // `handleSuccess` / `handleFailure`): `Healthy` only for a passing
        // check of a host that is not FAILED_ACTIVE_HC after it.
        cx.host_checked(node, ok && !self.unhealthy[i]);
        // `ClusterImplBase::onPreInitComplete`'s callback: any completed
        // check counts, and the last one finishes initialization.
        if self.pending_init > 0 {
            self.pending_init -= 1;
            if self.pending_init == 0 {
                cx.warmed();
            }
        }
        let d = self.interval(cx, ok, t);
        Self::arm(cx, node, d);
    }

    fn on_selected(&mut self) {
        self.had_traffic = true;
    }

    fn hears_selections(&self) -> bool {
        true
    }

    fn warms(&self) -> bool {
        self.p.cluster_start == ClusterStart::Warming
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SimTime;
    use crate::policy::testkit::{Harness, ms as at};
    use crate::policy::{ActiveProbe, ActiveProbeSpec, HealthPolicy};

    const A: NodeId = NodeId(0);

    fn params() -> EnvoyParams {
        serde_json::from_value(serde_json::json!({
            "timeout": "1s", "interval": "5s",
            "unhealthy_threshold": 3, "healthy_threshold": 2
        }))
        .unwrap()
    }

    fn harness(p: EnvoyParams) -> Harness<ActiveProbe> {
        Harness::seeded(ActiveProbe::new(&ActiveProbeSpec::Envoy(p), 1), 1)
    }

    /// Answers the probe in flight at `t` and fires the next check; returns its time.
    fn step(h: &mut Harness<ActiveProbe>, t: SimTime, r: ProbeResult) -> SimTime {
        h.answer(t, A, r);
        h.fire_next(at(100_000_000)).unwrap()
    }

    #[test]
    fn hosts_start_unhealthy_and_the_first_success_makes_them_healthy() {
        let mut h = harness(params());
        assert!(!h.routable(A));
        assert_eq!(h.sent_to(A), [SimTime::ZERO], "first check at once");
        h.answer(at(3), A, ProbeResult::Status(200));
        assert!(
            h.routable(A),
            "healthy_threshold=2 does not apply to the first check"
        );
    }

    #[test]
    fn a_bad_status_ejects_at_once_but_timeouts_count() {
        let mut h = harness(params());
        h.select(SimTime::ZERO, A); // the cluster carries traffic
        let t = step(&mut h, at(1), ProbeResult::Status(200));
        assert_eq!(t, at(5_001), "interval after completion");
        let t = step(&mut h, t + SimDuration::from_secs(1), ProbeResult::Timeout);
        assert!(h.routable(A), "1 of 3");
        assert_eq!(t, at(11_001), "pending: unhealthy_edge_interval = interval");
        let t = step(&mut h, t, ProbeResult::Refused);
        assert!(h.routable(A), "2 of 3");
        let t = step(&mut h, t, ProbeResult::Status(200));
        let t = step(&mut h, t, ProbeResult::Timeout);
        let t = step(&mut h, t, ProbeResult::Timeout);
        assert!(h.routable(A), "the success reset the count");
        let t = step(&mut h, t, ProbeResult::Timeout);
        assert!(!h.routable(A), "three network failures in a row");
        let t = step(&mut h, t, ProbeResult::Status(200));
        assert!(!h.routable(A), "healthy_threshold 2 now applies");
        let t = step(&mut h, t, ProbeResult::Status(200));
        assert!(h.routable(A));
        step(&mut h, t, ProbeResult::Status(503));
        assert!(!h.routable(A), "an unexpected status ejects at once");
    }

    /// `HttpActiveHealthCheckSession::healthCheckResult`: a status outside
    /// `expected_statuses` fails, at once (`setUnhealthy`, ACTIVE and not
    /// retriable) or, in `retriable_statuses`, counting toward
    /// `unhealthy_threshold`.
    #[test]
    fn expected_and_retriable_statuses() {
        let mut p = params();
        p.expected_statuses = vec![StatusRange {
            start: 200,
            end: 400,
        }];
        p.retriable_statuses = vec![StatusRange {
            start: 503,
            end: 504,
        }];
        p.validate().unwrap();
        let mut h = harness(p);
        h.select(SimTime::ZERO, A);
        let t = step(&mut h, at(1), ProbeResult::Status(302));
        assert!(h.routable(A), "302 is in [200, 400)");
        let t = step(&mut h, t, ProbeResult::Status(503));
        let t = step(&mut h, t, ProbeResult::Status(503));
        assert!(h.routable(A), "503 is retriable: 2 of 3");
        let t = step(&mut h, t, ProbeResult::Status(399));
        let t = step(&mut h, t, ProbeResult::Status(400));
        assert!(!h.routable(A), "400 is past the excluded end: at once");
        let t = step(&mut h, t, ProbeResult::Status(200));
        step(&mut h, t, ProbeResult::Status(204));
        assert!(h.routable(A));
        // The default: only 200.
        let mut h = harness(params());
        h.answer(at(1), A, ProbeResult::Status(204));
        assert!(!h.routable(A));
    }

    #[test]
    fn bad_status_ranges_name_their_field() {
        for (start, end) in [(200, 200), (400, 200), (0, 200), (200, 601)] {
            let mut p = params();
            p.expected_statuses = vec![StatusRange { start, end }];
            assert_eq!(p.validate().unwrap_err().0, "expected_statuses[0]");
            let mut p = params();
            p.retriable_statuses = vec![StatusRange { start, end }];
            assert_eq!(p.validate().unwrap_err().0, "retriable_statuses[0]");
        }
    }

    #[test]
    fn no_traffic_interval_until_the_cluster_carries_traffic() {
        let mut h = harness(params());
        let t = step(&mut h, at(2), ProbeResult::Status(200));
        assert_eq!(t, at(60_002));
        h.select(t, A);
        let t2 = step(
            &mut h,
            t + SimDuration::from_millis(2),
            ProbeResult::Status(200),
        );
        assert_eq!(t2, t + SimDuration::from_millis(5_002));
    }

    #[test]
    fn interval_jitter_stays_within_bounds() {
        let mut p = params();
        p.interval_jitter = SimDuration::from_millis(1000);
        p.interval_jitter_percent = 10;
        let mut h = harness(p);
        h.select(SimTime::ZERO, A);
        let mut t = SimTime::ZERO;
        let (mut lo, mut hi) = (u64::MAX, 0);
        for _ in 0..300 {
            let next = step(&mut h, t, ProbeResult::Status(200));
            let gap = next.saturating_since(t).as_micros() / 1000;
            lo = lo.min(gap);
            hi = hi.max(gap);
            t = next;
        }
        // base 5000 + U[0, 500) + U[0, 1000)
        assert!(lo >= 5000 && hi < 6500, "{lo}..{hi}");
        assert!(lo < 5200 && hi > 6200, "{lo}..{hi}");
    }

    /// Every completed check runs the host-check-complete callbacks, with
    /// `Healthy` only for a pass that leaves the host not FAILED_ACTIVE_HC;
    /// the cluster warms after as many completed checks as it has hosts
    /// (`ClusterImplBase::onPreInitComplete`, `finishInitialization`).
    #[test]
    fn checks_report_to_the_outlier_detector_and_the_first_round_warms() {
        let p = params();
        let mut h = Harness::seeded(ActiveProbe::new(&ActiveProbeSpec::Envoy(p), 3), 1);
        assert!(h.policy.interests().warms);
        assert_eq!(h.in_flight().len(), 3, "one check per host at once");
        h.answer(at(2), NodeId(0), ProbeResult::Status(200));
        h.answer(at(3), NodeId(1), ProbeResult::Timeout);
        assert!(h.warmed().is_empty(), "two of three hosts checked");
        h.answer(at(4), NodeId(2), ProbeResult::Status(200));
        assert_eq!(
            h.warmed(),
            [at(4)],
            "the third completed check warms the cluster"
        );
        assert_eq!(
            h.checked(),
            [
                (at(2), NodeId(0), true),
                (at(3), NodeId(1), false),
                (at(4), NodeId(2), true)
            ]
        );
        // Host 1 is FAILED_ACTIVE_HC: with healthy_threshold 2, its first
        // pass leaves it failed, so the detector hears `Unhealthy`.
        h.select(at(5), NodeId(0));
        while h.fire_next(at(200_000)).is_some() && h.sent_to(NodeId(1)).is_empty() {}
        let t = h.sent_to(NodeId(1))[0];
        h.answer(t, NodeId(1), ProbeResult::Status(200));
        assert_eq!(*h.checked().last().unwrap(), (t, NodeId(1), false));
        assert_eq!(h.warmed().len(), 1, "warming happens once");
    }
}
