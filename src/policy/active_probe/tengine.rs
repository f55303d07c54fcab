//! tengine / nginx_upstream_check_module `check interval= rise= fall=
//! timeout= default_down= type=` (reference §4.1; yaoweibin
//! `ngx_http_upstream_check_module.c`: `add_timers`, `begin_handler`,
//! `status_update`).
//!
//! - State per peer is shared by all nginx workers: `down`, `rise_count`,
//!   `fall_count`, `access_time` (end of the last check), `owner`.
//! - Each worker arms a timer per peer at `random() % max(interval, 1000)` ms
//!   and re-arms it every `interval / 2` ms. On a fire it starts a check if
//!   no worker owns one and `now - access_time >= interval`.
//! - A success: `rise_count += 1`, `fall_count = 0`; a down peer comes up at
//!   `rise`. A failure (connect error, timeout, unexpected status):
//!   `rise_count = 0`, `fall_count += 1`; an up peer goes down at `fall`.
//! - Peers start down by default (`default_down=true`).
//!
//! Not modelled: the stale-owner takeover after `16 × interval` (reachable only
//! when `timeout` exceeds 16 intervals); keepalive check connections.

use super::defaults::{five, one, one_s, tcp, thirty_s, two};
use super::{Flavor, Prober, TAG_CHECK, at_least_one, positive, threads_valid};
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::policy::{PolicyCx, PolicyTimer, ProbeKind, ProbeOutcome, ProbeResult};
use rand::RngExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A class of HTTP status for `check_http_expect_alive`.
#[derive(Copy, Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusClass {
    Http2xx,
    Http3xx,
    Http4xx,
    Http5xx,
}

impl StatusClass {
    fn contains(self, s: u16) -> bool {
        let lo = match self {
            StatusClass::Http2xx => 200,
            StatusClass::Http3xx => 300,
            StatusClass::Http4xx => 400,
            StatusClass::Http5xx => 500,
        };
        (lo..lo + 100).contains(&s)
    }
}

/// `check ...` and `check_http_expect_alive` of one upstream.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TengineParams {
    /// `type=tcp` (default) or `type=http`.
    #[serde(default = "tcp", alias = "type")]
    pub probe: ProbeKind,
    /// Default 30s (the directive's 30000 ms).
    #[serde(default = "thirty_s")]
    pub interval: SimDuration,
    /// Default 2.
    #[serde(default = "two")]
    pub rise: u32,
    /// Default 5.
    #[serde(default = "five")]
    pub fall: u32,
    /// Covers connect and response. Default 1s.
    #[serde(default = "one_s")]
    pub timeout: SimDuration,
    /// Peers start down. Default true.
    #[serde(default = "yes")]
    pub default_down: bool,
    /// `check_http_expect_alive`. Default `["http_2xx", "http_3xx"]`.
    #[serde(default = "alive")]
    pub expect_alive: Vec<StatusClass>,
    /// nginx `worker_processes`: each polls every peer. Default 1.
    #[serde(default = "one")]
    pub workers: u32,
    /// Omitted: no limit (the module's checks are event-driven).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
}

fn yes() -> bool {
    true
}
fn alive() -> Vec<StatusClass> {
    vec![StatusClass::Http2xx, StatusClass::Http3xx]
}

impl TengineParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        positive("interval", self.interval)?;
        positive("timeout", self.timeout)?;
        at_least_one("rise", self.rise)?;
        at_least_one("fall", self.fall)?;
        at_least_one("workers", self.workers)?;
        if self.interval.as_micros() % 1000 != 0 || self.timeout.as_micros() % 1000 != 0 {
            return Err((
                "interval".into(),
                "the check module takes whole milliseconds".into(),
            ));
        }
        threads_valid(self.threads)
    }
}

fn ms(d: SimDuration) -> u64 {
    d.as_micros() / 1000
}

pub(super) struct TengineCheck {
    p: TengineParams,
    nodes: usize,
    down: Vec<bool>,
    rise_count: Vec<u32>,
    fall_count: Vec<u32>,
    /// End of the last check; `None`: never checked (shm starts at 0).
    access_time: Vec<Option<SimTime>>,
    /// The worker running a check for the peer.
    owner: Vec<Option<u32>>,
}

impl TengineCheck {
    pub(super) fn new(p: &TengineParams, nodes: usize) -> Self {
        TengineCheck {
            p: p.clone(),
            nodes,
            down: vec![p.default_down; nodes],
            rise_count: vec![0; nodes],
            fall_count: vec![0; nodes],
            access_time: vec![None; nodes],
            owner: vec![None; nodes],
        }
    }

    fn arm(cx: &mut PolicyCx, node: usize, worker: u32, delay_ms: u64) {
        let at = cx.now().t + SimDuration::from_millis(delay_ms);
        cx.at(
            at,
            PolicyTimer {
                tag: TAG_CHECK,
                node: node as u32,
                generation: worker,
            },
        );
    }

    fn passes(&self, kind: ProbeKind, r: ProbeResult) -> bool {
        match (kind, r) {
            (ProbeKind::Tcp, ProbeResult::Connected) => true,
            (ProbeKind::Http, ProbeResult::Status(s)) => {
                self.p.expect_alive.iter().any(|c| c.contains(s))
            }
            _ => false,
        }
    }
}

impl Flavor for TengineCheck {
    fn start(&mut self, _pr: &mut Prober, cx: &mut PolicyCx) {
        let delay = ms(self.p.interval).max(1000);
        for w in 0..self.p.workers {
            for i in 0..self.nodes {
                let d = cx.rng().random::<u64>() % delay;
                Self::arm(cx, i, w, d);
            }
        }
    }

    fn on_timer(&mut self, pr: &mut Prober, cx: &mut PolicyCx, timer: PolicyTimer) {
        if timer.tag != TAG_CHECK {
            return;
        }
        let (i, w) = (timer.node as usize, timer.generation);
        Self::arm(cx, i, w, ms(self.p.interval) / 2);
        if self.owner[i].is_some() {
            return; // this worker's check, or another's, is running
        }
        let now = cx.now().t;
        let due = self.access_time[i].is_none_or(|a| now.saturating_since(a) >= self.p.interval);
        if due {
            self.owner[i] = Some(w);
            pr.send(
                cx,
                NodeId(i as u32),
                self.p.timeout,
                self.p.timeout,
                None,
                w,
            );
        }
    }

    fn on_result(&mut self, pr: &mut Prober, cx: &mut PolicyCx, node: NodeId, o: &ProbeOutcome) {
        let i = node.index();
        if self.passes(pr.kind, o.result) {
            self.rise_count[i] += 1;
            self.fall_count[i] = 0;
            if self.down[i] && self.rise_count[i] >= self.p.rise {
                self.down[i] = false;
                pr.publish(cx, node, true);
            }
        } else {
            self.rise_count[i] = 0;
            self.fall_count[i] += 1;
            if !self.down[i] && self.fall_count[i] >= self.p.fall {
                self.down[i] = true;
                pr.publish(cx, node, false);
            }
        }
        self.access_time[i] = Some(cx.now().t);
        self.owner[i] = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testkit::{Harness, ms as at};
    use crate::policy::{ActiveProbe, ActiveProbeSpec};

    const A: NodeId = NodeId(0);

    fn params(json: serde_json::Value) -> TengineParams {
        serde_json::from_value(json).unwrap()
    }

    fn harness(p: TengineParams, nodes: usize) -> Harness<ActiveProbe> {
        Harness::seeded(ActiveProbe::new(&ActiveProbeSpec::Tengine(p), nodes), 4)
    }

    #[test]
    fn defaults_are_the_modules() {
        let p = params(serde_json::json!({}));
        assert_eq!(p.interval, SimDuration::from_secs(30));
        assert_eq!((p.rise, p.fall, p.default_down), (2, 5, true));
        assert_eq!(p.timeout, SimDuration::from_secs(1));
        assert_eq!(p.probe, ProbeKind::Tcp);
        let p = params(serde_json::json!({"type": "http"}));
        assert_eq!(p.probe, ProbeKind::Http, "`type` as in the directive");
    }

    #[test]
    fn peers_start_down_until_rise_successes() {
        let mut h = harness(params(serde_json::json!({"interval": "3s"})), 1);
        assert!(!h.routable(A), "default_down");
        let t = h.fire_next(at(10_000)).unwrap();
        assert!(t < at(3_000), "first poll within max(interval, 1 s)");
        assert_eq!(h.sent_to(A), [t], "never checked: checks at the first poll");
        h.answer(t, A, ProbeResult::Connected);
        assert!(!h.routable(A), "rise=2");
        h.advance_to(t + SimDuration::from_millis(2_999));
        assert!(
            h.in_flight().is_empty(),
            "not before interval since the last check ended"
        );
        let t2 = h.fire_next(at(100_000)).unwrap();
        assert_eq!(h.sent_to(A), [t2]);
        let gap = t2.saturating_since(t);
        assert_eq!(
            gap,
            SimDuration::from_millis(3_000),
            "polls every 1.5 s: the 2nd poll"
        );
        h.answer(t2, A, ProbeResult::Connected);
        assert!(h.routable(A));
    }

    #[test]
    fn default_down_false_and_fall_in_a_row() {
        let p = params(serde_json::json!({
            "interval": "3000ms", "rise": 2, "fall": 3, "timeout": "5000ms",
            "type": "tcp", "default_down": false
        }));
        let mut h = harness(p, 1);
        assert!(h.routable(A));
        let mut t = h.fire_next(at(10_000)).unwrap();
        for k in 0..3 {
            assert_eq!(h.in_flight().len(), 1);
            // A timeout: the check ends 5 s after it started.
            let end = t + SimDuration::from_secs(5);
            h.advance_to(end);
            assert!(h.routable(A), "{k} failures so far");
            h.answer(end, A, ProbeResult::ConnectTimeout);
            // Next check at the first poll at least 3 s after `end`.
            let next = loop {
                let f = h.fire_next(at(1_000_000)).unwrap();
                if !h.in_flight().is_empty() {
                    break f;
                }
            };
            let gap = next.saturating_since(end);
            assert!(
                gap >= SimDuration::from_secs(3) && gap < SimDuration::from_millis(4_500),
                "period in [interval, 1.5 interval) after the end: {gap}"
            );
            t = next;
        }
        assert!(!h.routable(A), "three failures in a row");
    }

    #[test]
    fn http_statuses_follow_expect_alive() {
        let p = params(serde_json::json!({"type": "http", "default_down": false, "fall": 1}));
        let mut h = harness(p, 1);
        let t = h.fire_next(at(100_000)).unwrap();
        h.answer(t, A, ProbeResult::Status(302));
        assert!(h.routable(A), "3xx is alive by default");
        let t = loop {
            let f = h.fire_next(at(1_000_000)).unwrap();
            if !h.in_flight().is_empty() {
                break f;
            }
        };
        h.answer(t, A, ProbeResult::Status(404));
        assert!(!h.routable(A));
    }

    #[test]
    fn several_workers_share_one_state_and_one_check_at_a_time() {
        let p = params(serde_json::json!({"interval": "2s", "workers": 4, "default_down": false}));
        let mut h = harness(p, 1);
        assert_eq!(h.timer_times().len(), 4, "one timer per worker");
        let t = h.fire_next(at(10_000)).unwrap();
        assert_eq!(h.in_flight().len(), 1);
        // The other workers' polls while the check runs do nothing.
        h.advance_to(t + SimDuration::from_millis(900));
        assert_eq!(h.in_flight().len(), 1);
        h.answer(t + SimDuration::from_millis(900), A, ProbeResult::Connected);
        h.advance_to(t + SimDuration::from_millis(2_899));
        assert!(h.in_flight().is_empty());
        let next = loop {
            let f = h.fire_next(at(1_000_000)).unwrap();
            if !h.in_flight().is_empty() {
                break f;
            }
        };
        let gap = next.saturating_since(t + SimDuration::from_millis(900));
        assert!(
            gap >= SimDuration::from_secs(2) && gap < SimDuration::from_secs(3),
            "{gap}"
        );
    }
}
