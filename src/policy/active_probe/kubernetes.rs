//! A Kubernetes readiness probe and the endpoint change it drives (reference
//! §4.2; kubernetes `pkg/kubelet/prober/worker.go`: `run`, `doProbe`).
//!
//! - The pod starts NotReady. Each worker probes as soon as the container
//!   runs, then on every tick of a fixed-rate Go ticker; a probe that
//!   overruns a tick finds it buffered (one at most) and probes again at
//!   once. `run` sleeps `U[0, period)` first only if the kubelet itself
//!   started less than a period ago (`kubelet_start: restarted`).
//! - A Ready → NotReady change makes the kubelet sync the pod, and
//!   `UpdatePodStatus` (`prober_manager.go`) sends the worker a manual
//!   trigger for a readiness that is not Success: one extra probe at once,
//!   off the ticker's grid.
//! - Before `initial_delay` (whole seconds since the container started) a
//!   tick does nothing.
//! - Run-length counting: a result is published once the same result came
//!   `failure_threshold` (failure) or `success_threshold` (success) times in
//!   a row. HTTP 200–399 passes.
//! - The proxy sees a published change `propagation_delay` later (kubelet →
//!   API server → EndpointSlice → kube-proxy resync; about 1 s at best).

use super::defaults::{http, one, one_s, ten_s, three};
use super::{Flavor, Prober, TAG_CHECK, TAG_START, at_least_one, threads_valid};
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::policy::{PolicyCx, PolicyTimer, ProbeKind, ProbeOutcome};
use rand::RngExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A container's `readinessProbe` (durations in whole seconds, as Kubernetes takes them).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadinessParams {
    /// `http` (`httpGet`, default) or `tcp` (`tcpSocket`).
    #[serde(default = "http")]
    pub probe: ProbeKind,
    /// `periodSeconds`. Default 10s.
    #[serde(default = "ten_s")]
    pub period: SimDuration,
    /// `timeoutSeconds`. Default 1s.
    #[serde(default = "one_s")]
    pub timeout: SimDuration,
    /// `failureThreshold`. Default 3.
    #[serde(default = "three")]
    pub failure_threshold: u32,
    /// `successThreshold`. Default 1.
    #[serde(default = "one")]
    pub success_threshold: u32,
    /// `initialDelaySeconds`. Default 0s.
    #[serde(default)]
    pub initial_delay: SimDuration,
    /// From the kubelet's verdict to the proxy's rules. Default 1s
    /// (kube-proxy's `--iptables-min-sync-period`; a typical figure, not measured).
    #[serde(default = "one_s")]
    pub propagation_delay: SimDuration,
    /// Omitted: no limit (one goroutine per probe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// `running` (default): a new pod on a node whose kubelet runs: the
    /// first probe when the container starts. `restarted`: the kubelet
    /// started less than a period ago, so each worker first sleeps
    /// `U[0, period)` (`worker.run`).
    #[serde(default, skip_serializing_if = "KubeletStart::is_running")]
    pub kubelet_start: KubeletStart,
}

/// Whether the kubelet started with the pod (`worker.run`'s initial sleep).
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KubeletStart {
    /// The kubelet runs for longer than a period: no initial sleep.
    #[default]
    Running,
    /// The kubelet (re)started less than a period ago: `U[0, period)` sleep.
    Restarted,
}

impl KubeletStart {
    fn is_running(&self) -> bool {
        *self == KubeletStart::Running
    }
}

impl ReadinessParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        for (f, d, min) in [
            ("period", self.period, 1),
            ("timeout", self.timeout, 1),
            ("initial_delay", self.initial_delay, 0),
        ] {
            match d.whole_secs() {
                Some(s) if s >= min => {}
                _ => {
                    return Err((
                        f.into(),
                        format!("Kubernetes takes whole seconds (at least {min}s), found \"{d}\""),
                    ));
                }
            }
        }
        at_least_one("failure_threshold", self.failure_threshold)?;
        at_least_one("success_threshold", self.success_threshold)?;
        threads_valid(self.threads)
    }
}

pub(super) struct Readiness {
    p: ReadinessParams,
    nodes: usize,
    /// Per node: the ticker's start and the index of the next tick not yet delivered.
    ticker_start: Vec<SimTime>,
    next_tick: Vec<u64>,
    last_result: Vec<Option<bool>>,
    run: Vec<u32>,
    ready: Vec<bool>,
}

impl Readiness {
    pub(super) fn new(p: &ReadinessParams, nodes: usize) -> Self {
        Readiness {
            p: p.clone(),
            nodes,
            ticker_start: vec![SimTime::ZERO; nodes],
            next_tick: vec![1; nodes],
            last_result: vec![None; nodes],
            run: vec![0; nodes],
            ready: vec![false; nodes],
        }
    }

    fn tick_time(&self, i: usize, m: u64) -> SimTime {
        self.ticker_start[i] + SimDuration::from_micros(m * self.p.period.as_micros())
    }

    /// `doProbe`: probes, or (before `initial_delay`) waits for the next tick.
    fn do_probe(&mut self, pr: &mut Prober, cx: &mut PolicyCx, i: usize) {
        let since_start = cx.now().t.since_start().as_micros() / 1_000_000;
        if since_start < self.p.initial_delay.as_micros() / 1_000_000 {
            self.wait_for_tick(cx, i);
            return;
        }
        pr.send(
            cx,
            NodeId(i as u32),
            self.p.timeout,
            self.p.timeout,
            None,
            0,
        );
    }

    /// Waits on the ticker's channel: a tick already delivered is taken at
    /// once; later ones were dropped.
    fn wait_for_tick(&mut self, cx: &mut PolicyCx, i: usize) {
        let now = cx.now().t;
        let next = self.tick_time(i, self.next_tick[i]);
        let at = if next <= now {
            let elapsed = now.saturating_since(self.ticker_start[i]).as_micros();
            self.next_tick[i] = elapsed / self.p.period.as_micros() + 1;
            now
        } else {
            self.next_tick[i] += 1;
            next
        };
        cx.at(
            at,
            PolicyTimer {
                tag: TAG_CHECK,
                node: i as u32,
                generation: 0,
            },
        );
    }
}

impl Flavor for Readiness {
    fn start(&mut self, _pr: &mut Prober, cx: &mut PolicyCx) {
        for i in 0..self.nodes {
            // `if probeTickerPeriod > time.Since(w.probeManager.start)`.
            let d = match self.p.kubelet_start {
                KubeletStart::Running => SimDuration::ZERO,
                KubeletStart::Restarted => {
                    let sleep: f64 = cx.rng().random();
                    SimDuration::from_secs_f64(sleep * self.p.period.as_secs_f64())
                }
            };
            let at = cx.now().t + d;
            cx.at(
                at,
                PolicyTimer {
                    tag: TAG_START,
                    node: i as u32,
                    generation: 0,
                },
            );
        }
    }

    fn on_timer(&mut self, pr: &mut Prober, cx: &mut PolicyCx, timer: PolicyTimer) {
        let i = timer.node as usize;
        match timer.tag {
            TAG_START => {
                self.ticker_start[i] = cx.now().t;
                self.do_probe(pr, cx, i);
            }
            TAG_CHECK => self.do_probe(pr, cx, i),
            _ => {}
        }
    }

    fn on_result(&mut self, pr: &mut Prober, cx: &mut PolicyCx, node: NodeId, o: &ProbeOutcome) {
        let i = node.index();
        let ok = o.result.passes(pr.kind, 200, 399);
        if self.last_result[i] == Some(ok) {
            self.run[i] += 1;
        } else {
            self.last_result[i] = Some(ok);
            self.run[i] = 1;
        }
        let threshold = if ok {
            self.p.success_threshold
        } else {
            self.p.failure_threshold
        };
        if self.run[i] >= threshold && self.ready[i] != ok {
            self.ready[i] = ok;
            pr.publish(cx, node, ok);
            if !ok {
                // The pod sync after the change calls `UpdatePodStatus`,
                // which triggers the worker (`manualTriggerCh`): the select
                // in `run` takes it before the next tick.
                let now = cx.now().t;
                cx.at(
                    now,
                    PolicyTimer {
                        tag: TAG_CHECK,
                        node: i as u32,
                        generation: 0,
                    },
                );
                return;
            }
        }
        self.wait_for_tick(cx, i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testkit::{Harness, ms as at};
    use crate::policy::{ActiveProbe, ActiveProbeSpec, ProbeResult};

    const A: NodeId = NodeId(0);

    fn params(json: serde_json::Value) -> ReadinessParams {
        serde_json::from_value(json).unwrap()
    }

    fn harness(p: ReadinessParams) -> Harness<ActiveProbe> {
        Harness::seeded(ActiveProbe::new(&ActiveProbeSpec::Kubernetes(p), 1), 2)
    }

    /// Fires timers until a probe is sent; returns when.
    fn next_probe(h: &mut Harness<ActiveProbe>) -> SimTime {
        loop {
            let t = h.fire_next(at(10_000_000)).expect("a timer");
            if !h.in_flight().is_empty() {
                return t;
            }
        }
    }

    /// `worker.run` sleeps `U[0, period)` only if the kubelet started less
    /// than a period ago; a new pod on a running node is probed at once.
    #[test]
    fn the_first_probe_waits_only_after_a_kubelet_restart() {
        let mut h = harness(params(serde_json::json!({"propagation_delay": "0s"})));
        assert_eq!(
            next_probe(&mut h),
            SimTime::ZERO,
            "probed when the container starts"
        );
        let mut h = harness(params(
            serde_json::json!({"propagation_delay": "0s", "kubelet_start": "restarted"}),
        ));
        let t0 = next_probe(&mut h);
        assert!(t0 > SimTime::ZERO && t0 < at(10_000), "U[0, period): {t0}");
    }

    /// `UpdatePodStatus` triggers an extra probe (`manualTriggerCh`) when
    /// the pod turns NotReady; the ticker's grid is unchanged after it.
    #[test]
    fn turning_not_ready_triggers_an_immediate_probe() {
        let mut h = harness(params(serde_json::json!({
            "period": "10s", "failure_threshold": 1, "propagation_delay": "0s"
        })));
        let t0 = next_probe(&mut h);
        h.answer(
            t0 + SimDuration::from_millis(5),
            A,
            ProbeResult::Status(200),
        );
        let t1 = next_probe(&mut h);
        assert_eq!(t1, t0 + SimDuration::from_secs(10));
        let failed = t1 + SimDuration::from_millis(5);
        h.answer(failed, A, ProbeResult::Status(503));
        assert!(!h.routable(A));
        let t2 = next_probe(&mut h);
        assert_eq!(t2, failed, "the manual trigger probes at once");
        h.answer(
            t2 + SimDuration::from_millis(5),
            A,
            ProbeResult::Status(200),
        );
        assert!(h.routable(A), "Ready again 10 ms after, not a period later");
        let t3 = next_probe(&mut h);
        assert_eq!(t3, t0 + SimDuration::from_secs(20), "back on the grid");
    }

    #[test]
    fn starts_not_ready_then_probes_on_a_fixed_rate_grid() {
        let mut h = harness(params(serde_json::json!({"propagation_delay": "0s"})));
        assert!(!h.routable(A), "readiness starts as Failure");
        let t0 = next_probe(&mut h);
        h.answer(
            t0 + SimDuration::from_millis(700),
            A,
            ProbeResult::Status(200),
        );
        assert!(h.routable(A), "successThreshold 1");
        let t1 = next_probe(&mut h);
        assert_eq!(
            t1,
            t0 + SimDuration::from_secs(10),
            "ticks do not drift by probe time"
        );
    }

    #[test]
    fn run_length_counting_and_propagation_delay() {
        let mut h = harness(params(serde_json::json!({
            "period": "1s", "timeout": "1s", "failure_threshold": 3, "success_threshold": 2,
            "propagation_delay": "2s"
        })));
        let mut t = next_probe(&mut h);
        h.answer(t, A, ProbeResult::Status(200));
        t = next_probe(&mut h);
        h.answer(t, A, ProbeResult::Status(200));
        assert!(!h.routable(A), "published, but not at the proxy yet");
        let published = t;
        for _ in 0..3 {
            t = next_probe(&mut h);
            h.answer(t, A, ProbeResult::Timeout);
        }
        // The readmission landed 2 s after it was published.
        assert!(
            h.notices()
                .any(|n| matches!(n, crate::policy::Notice::Readmitted { .. }))
        );
        assert!(t >= published + SimDuration::from_secs(2));
        assert!(h.routable(A), "failure published now, visible 2 s later");
        h.advance_to(t + SimDuration::from_millis(1_999));
        assert!(h.routable(A));
        h.fire_next(t + SimDuration::from_secs(2));
        h.advance_to(t + SimDuration::from_secs(2));
        assert!(!h.routable(A));
    }

    #[test]
    fn an_overrunning_probe_finds_one_buffered_tick() {
        let mut h = harness(params(serde_json::json!({
            "period": "1s", "timeout": "3s", "propagation_delay": "0s"
        })));
        let t0 = next_probe(&mut h);
        // The probe takes 2.5 s: ticks at +1 and +2 s; one is buffered.
        let end = t0 + SimDuration::from_millis(2_500);
        h.answer(end, A, ProbeResult::Timeout);
        let t1 = next_probe(&mut h);
        assert_eq!(t1, end, "probes again at once");
        h.answer(
            t1 + SimDuration::from_millis(10),
            A,
            ProbeResult::Status(200),
        );
        let t2 = next_probe(&mut h);
        assert_eq!(t2, t0 + SimDuration::from_secs(3), "back on the grid");
    }

    #[test]
    fn initial_delay_is_counted_in_whole_seconds() {
        let mut h = harness(params(serde_json::json!({
            "period": "1s", "initial_delay": "5s", "propagation_delay": "0s"
        })));
        let t = next_probe(&mut h);
        assert!(
            t >= at(5_000) && t < at(6_000),
            "first probe at the first tick past 5 s: {t}"
        );
    }

    #[test]
    fn fractional_seconds_are_rejected() {
        let p = params(serde_json::json!({"period": "500ms"}));
        let (field, reason) = p.validate().unwrap_err();
        assert_eq!(field, "period");
        assert!(reason.contains("whole seconds"), "{reason}");
    }
}
