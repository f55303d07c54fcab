//! HAProxy 2.6 `server ... check` and passive `observe`, after HAProxy
//! 2.6's `src/check.c`: `set_server_check_status` (the health counter),
//! `check_notify_failure` / `check_notify_success` (DOWN and UP),
//! `chk_report_conn_err` (a refused or timed-out connection fails the
//! check), `process_chk_conn` (the next check and `spread-checks`),
//! `start_checks` / `start_check_task` (the first checks' offsets),
//! `__health_adjust` (`observe`, `error-limit`, `on-error`) and
//! `srv_parse_check_rise` (the initial health); `src/server.c`:
//! `srv_getinter`; `src/tcpcheck.c`: `tcpcheck_eval_connect` (the check
//! timeouts).
//!
//! - One health counter per server in `[0, rise+fall-1]`; below `rise` is
//!   DOWN. It starts at `rise`: UP, but one failed check marks it DOWN.
//! - The next check is scheduled when the previous one completes, after
//!   `inter` (fully UP), `downinter` (fully DOWN) or `fastinter` (in between),
//!   each falling back to `inter`, plus `spread-checks` jitter.
//! - The first check of the server at position `i` of `n` runs at
//!   `max(mininter, own interval) · i / n` ms after start.
//! - A check must finish within `inter` of its start; with `timeout check`
//!   and `timeout connect`, the connect within `min(inter, timeout connect)`
//!   (the connect window), then `timeout check` from the connection. Stock
//!   2.6 moves the task's deadline to connect + `timeout check` from the I/O
//!   callback without requeueing the task, so the task wakes at the connect
//!   window's end; `process_chk_conn` then sees the moved deadline: past (a
//!   shorter `timeout check`) it fails the check there, later (a longer one)
//!   the task is requeued and the check lasts to connect + `timeout check`.
//!   Measured on 2.6.12 (docs/calibration.md): a check ends at the later of
//!   the two, the first failing check and the later ones alike.
//! - `observe layer4|layer7` counts consecutive errors of real traffic; at
//!   `error_limit` the `on_error` action runs.
//!
//! Not modelled: an `on_error` reschedule while a check is running (HAProxy
//! then cuts the running check short as a timeout); with several threads
//! (`nbthread` > 1, the default on a multi-core machine), a check overdue on
//! its shorter `timeout check` that another thread's wake-up reaches first
//! ends then, between connect + `timeout check` and the connect window's end
//! (2.6.12 ended about half of such checks at another server's check time);
//! agent checks; slowstart; `disable-on-404`.

use super::defaults::{tcp, ten, three, two, two_s};
use super::statuses::{HaproxyExpect, StatusSet, haproxy_passing};
use super::{Flavor, Prober, TAG_CHECK, at_least_one, positive, threads_valid};
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::policy::{
    AfterConnect, AttemptReport, AttemptResult, LogEvent, PolicyCx, PolicyTimer, ProbeKind,
    ProbeOutcome, ProbeResult,
};
use rand::RngExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which HAProxy behaviour of `timeout check` to reproduce.
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
pub enum HaproxyVersion {
    /// Stock 2.6.x: a check ends at the later of `min(inter, timeout
    /// connect)` from its start and `timeout check` from its connection.
    #[default]
    #[serde(rename = "2.6")]
    V2_6,
    /// With "BUG/MEDIUM: check: Requeue healthchecks on I/O events" (June
    /// 2025): `timeout check` runs from the connection.
    #[serde(rename = "fixed")]
    Fixed,
}

/// `observe layer4|layer7`.
#[derive(Copy, Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Observe {
    Layer4,
    Layer7,
}

/// `on-error`.
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OnError {
    /// Only brings the next check forward to now + `fastinter`.
    Fastinter,
    /// One synthetic failed check (default).
    #[default]
    FailCheck,
    /// Leaves the server one failure from DOWN.
    SuddenDeath,
    /// Marks it DOWN at once.
    MarkDown,
}

/// Parameters of `server ... check` (the same for every server), the
/// backend's `timeout check`/`timeout connect`, and `observe`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HaproxyCheckParams {
    /// `tcp` (plain `check`, default) or `http` (`option httpchk`; 200–399
    /// passes unless `expect` says otherwise).
    #[serde(default = "tcp")]
    pub probe: ProbeKind,
    /// `http-check expect [!] status|rstatus` rules of an HTTP check, every
    /// one of which must pass: `[{"status": ["200-399", "404"]}]`,
    /// `[{"rstatus": "^[23]"}]`, `[{"status": ["500-599"], "negate": true}]`.
    /// Default: none, HAProxy's implicit `http-check expect status 200-399`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<HaproxyExpect>,
    /// Default 2s.
    #[serde(default = "two_s")]
    pub inter: SimDuration,
    /// Interval while going up or down, and before the first result. Default: `inter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fastinter: Option<SimDuration>,
    /// Interval while fully DOWN. Default: `inter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downinter: Option<SimDuration>,
    /// Default 2.
    #[serde(default = "two")]
    pub rise: u32,
    /// Default 3.
    #[serde(default = "three")]
    pub fall: u32,
    /// The backend's `timeout check`. Default: unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_check: Option<SimDuration>,
    /// The backend's `timeout connect`, as checks use it. Default: unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_connect: Option<SimDuration>,
    /// `2.6` (default) or `fixed`: see [`HaproxyVersion`].
    #[serde(default)]
    pub version: HaproxyVersion,
    /// Global `spread-checks`, percent (0–50). Default 0.
    #[serde(default)]
    pub spread_checks: u32,
    /// Global `max-spread-checks`: caps the start-up spreading interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_spread_checks: Option<SimDuration>,
    /// `observe layer4|layer7`. Default: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: Option<Observe>,
    /// `error-limit`. Default 10.
    #[serde(default = "ten")]
    pub error_limit: u32,
    /// `on-error`. Default `fail-check`.
    #[serde(default)]
    pub on_error: OnError,
    /// Omitted: no limit (HAProxy's checks are event-driven).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
}

impl HaproxyCheckParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        positive("inter", self.inter)?;
        for (f, d) in [
            ("fastinter", self.fastinter),
            ("downinter", self.downinter),
            ("timeout_check", self.timeout_check),
            ("timeout_connect", self.timeout_connect),
        ] {
            if let Some(d) = d {
                positive(f, d)?;
            }
        }
        at_least_one("rise", self.rise)?;
        at_least_one("fall", self.fall)?;
        at_least_one("error_limit", self.error_limit)?;
        haproxy_passing(&self.expect)?;
        if self.spread_checks > 50 {
            return Err((
                "spread_checks".into(),
                format!("must be 0 to 50 (percent), found {}", self.spread_checks),
            ));
        }
        threads_valid(self.threads)
    }
}

/// Whole milliseconds, HAProxy's tick unit.
fn ms(d: SimDuration) -> u64 {
    d.as_micros() / 1000
}

pub(super) struct HaproxyCheck {
    p: HaproxyCheckParams,
    /// The statuses that pass an HTTP check (`expect`).
    passing: StatusSet,
    nodes: usize,
    health: Vec<u32>,
    /// The server is DOWN (`next_state == STOPPED`).
    down: Vec<bool>,
    consecutive_errors: Vec<u32>,
    /// Per node: the pending check timer's generation and time (None while a check runs).
    generation: Vec<u32>,
    next_at: Vec<Option<SimTime>>,
}

impl HaproxyCheck {
    pub(super) fn new(p: &HaproxyCheckParams, nodes: usize) -> Self {
        HaproxyCheck {
            p: p.clone(),
            // Validated with the model; an invalid rule cannot get here.
            passing: haproxy_passing(&p.expect).unwrap_or_else(|_| StatusSet::range(200, 399)),
            nodes,
            health: vec![p.rise; nodes],
            down: vec![false; nodes],
            consecutive_errors: vec![0; nodes],
            generation: vec![0; nodes],
            next_at: vec![None; nodes],
        }
    }

    fn full(&self) -> u32 {
        self.p.rise + self.p.fall - 1
    }

    /// `srv_getinter`, from the current health.
    fn getinter(&self, i: usize) -> SimDuration {
        if self.health[i] == self.full() {
            self.p.inter
        } else if self.down[i] && self.health[i] == 0 {
            self.p.downinter.unwrap_or(self.p.inter)
        } else {
            self.p.fastinter.unwrap_or(self.p.inter)
        }
    }

    fn schedule(&mut self, cx: &mut PolicyCx, i: usize, at: SimTime) {
        self.generation[i] = self.generation[i].wrapping_add(1);
        self.next_at[i] = Some(at);
        cx.at(
            at,
            PolicyTimer {
                tag: TAG_CHECK,
                node: i as u32,
                generation: self.generation[i],
            },
        );
    }

    /// A failed check (real or synthetic, `check_notify_failure`).
    fn fail(&mut self, pr: &mut Prober, cx: &mut PolicyCx, i: usize) {
        if self.health[i] > 0 {
            self.health[i] -= 1;
            if self.health[i] < self.p.rise {
                self.health[i] = 0;
            }
        }
        if self.health[i] == 0 && !self.down[i] {
            self.down[i] = true;
            pr.publish(cx, NodeId(i as u32), false);
        }
    }

    /// A passed check (`check_notify_success`).
    fn pass(&mut self, pr: &mut Prober, cx: &mut PolicyCx, i: usize) {
        if self.health[i] < self.full() {
            self.health[i] += 1;
            if self.health[i] >= self.p.rise {
                self.health[i] = self.full();
            }
        }
        self.consecutive_errors[i] = 0;
        if self.health[i] >= self.p.rise && self.down[i] {
            self.down[i] = false;
            pr.publish(cx, NodeId(i as u32), true);
        }
    }

    /// `observe`: is this attempt an error (Some(true)), a success that
    /// clears the count (Some(false)), or not observed (None)?
    fn classify(observe: Observe, r: AttemptResult) -> Option<bool> {
        use AttemptResult::*;
        match (observe, r) {
            // Each failed connection attempt, retries included.
            (_, Refused | ConnectTimeout) => Some(true),
            // Nothing reached the server.
            (_, ClientAbort | Rejected) => None,
            // The connection was established.
            (Observe::Layer4, Status(_) | ReadTimeout | Reset) => Some(false),
            (Observe::Layer7, Status(s)) => Some(matches!(s, 500 | 502 | 503 | 504) || s >= 506),
            // `timeout server` before the response, or closed before it.
            (Observe::Layer7, ReadTimeout | Reset) => Some(true),
        }
    }
}

impl Flavor for HaproxyCheck {
    fn start(&mut self, _pr: &mut Prober, cx: &mut PolicyCx) {
        // start_checks: mininter is the smallest interval >= 1000 ms.
        let n = self.nodes as u64;
        let mininter = (0..self.nodes)
            .map(|i| ms(self.getinter(i)))
            .filter(|&v| v >= 1000)
            .min()
            .unwrap_or(0);
        let now = cx.now().t;
        for i in 0..self.nodes {
            let mut m = mininter.max(ms(self.getinter(i)));
            if let Some(cap) = self.p.max_spread_checks {
                m = m.min(ms(cap).max(1));
            }
            let offset = SimDuration::from_millis(m * i as u64 / n);
            self.schedule(cx, i, now + offset);
        }
    }

    fn on_timer(&mut self, pr: &mut Prober, cx: &mut PolicyCx, timer: PolicyTimer) {
        let i = timer.node as usize;
        if timer.tag != TAG_CHECK || timer.generation != self.generation[i] {
            return;
        }
        self.next_at[i] = None;
        let p = &self.p;
        let connect = match (p.timeout_check, p.timeout_connect) {
            (Some(_), Some(tc)) => p.inter.min(tc),
            _ => p.inter,
        };
        // tcpcheck_eval_connect sets the connect window; once connected,
        // tcpcheck_main moves t->expire to now + timeout check. 2.6 does not
        // requeue the task: process_chk_conn runs when the old deadline
        // fires, fails the check if the moved one has passed, and otherwise
        // returns the task, which the scheduler queues at the later deadline.
        let after_connect = p.timeout_check.map(|d| match p.version {
            HaproxyVersion::V2_6 => AfterConnect::Later(d),
            HaproxyVersion::Fixed => AfterConnect::Replace(d),
        });
        pr.send(cx, NodeId(timer.node), connect, connect, after_connect, 0);
    }

    fn on_result(&mut self, pr: &mut Prober, cx: &mut PolicyCx, node: NodeId, o: &ProbeOutcome) {
        let i = node.index();
        let was_down = self.down[i];
        // tcpcheck_eval_expect_http: each expect rule on the status.
        let passed = match (pr.kind, o.result) {
            (ProbeKind::Http, ProbeResult::Status(s)) => self.passing.contains(s),
            (kind, r) => r.passes(kind, 200, 399),
        };
        if passed {
            self.pass(pr, cx, i);
        } else {
            self.fail(pr, cx, i);
        }
        if self.down[i] != was_down {
            // srv_set_stopped / srv_set_running log the check that decided.
            cx.log(LogEvent::HaproxyCheck {
                node,
                up: !self.down[i],
                kind: pr.kind,
                result: o.result,
                duration: o.latency,
            });
        }
        let base = ms(self.getinter(i));
        let mut delay = base as i64;
        if self.p.spread_checks > 0 {
            let rv = (base * self.p.spread_checks as u64 / 100) as i64;
            let u: f64 = cx.rng().random::<u32>() as f64 / u32::MAX as f64;
            delay += rv - (2.0 * rv as f64 * u) as i64;
        }
        let at = cx.now().t + SimDuration::from_millis(delay.max(0) as u64);
        self.schedule(cx, i, at);
    }

    fn hears_attempts(&self) -> bool {
        // `observe` passes each attempt's outcome to the check.
        self.p.observe.is_some()
    }

    fn on_attempt(&mut self, pr: &mut Prober, cx: &mut PolicyCx, r: &AttemptReport) {
        let Some(observe) = self.p.observe else {
            return;
        };
        let Some(error) = Self::classify(observe, r.result) else {
            return;
        };
        let i = r.node.index();
        if !error {
            self.consecutive_errors[i] = 0;
            return;
        }
        self.consecutive_errors[i] += 1;
        if self.consecutive_errors[i] < self.p.error_limit {
            return;
        }
        let was_down = self.down[i];
        match self.p.on_error {
            OnError::Fastinter => {}
            OnError::SuddenDeath => {
                if self.health[i] > self.p.rise {
                    self.health[i] = self.p.rise + 1;
                }
                self.fail(pr, cx, i);
            }
            OnError::FailCheck => self.fail(pr, cx, i),
            OnError::MarkDown => {
                self.health[i] = self.p.rise;
                self.fail(pr, cx, i);
            }
        }
        if self.down[i] && !was_down {
            // __health_adjust: set_server_check_status(HCHK_STATUS_HANA, ...)
            cx.log(LogEvent::HaproxyAnalyze {
                node: r.node,
                errors: self.consecutive_errors[i],
                last: r.result,
            });
        }
        self.consecutive_errors[i] = 0;
        if let (Some(f), Some(next)) = (self.p.fastinter, self.next_at[i]) {
            let expire = cx.now().t + SimDuration::from_millis(ms(f));
            if expire < next {
                self.schedule(cx, i, expire);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testkit::{Harness, ms as at_ms};
    use crate::policy::{ActiveProbe, ActiveProbeSpec, Charge, ProbeResult};

    fn params() -> HaproxyCheckParams {
        serde_json::from_value(serde_json::json!({})).unwrap()
    }

    fn harness(p: HaproxyCheckParams, nodes: usize) -> Harness<ActiveProbe> {
        Harness::seeded(ActiveProbe::new(&ActiveProbeSpec::Haproxy(p), nodes), 1)
    }

    const A: NodeId = NodeId(0);

    #[test]
    fn defaults_are_haproxys() {
        let p = params();
        assert_eq!((p.inter, p.rise, p.fall), (SimDuration::from_secs(2), 2, 3));
        assert_eq!(
            (p.fastinter, p.downinter, p.timeout_check),
            (None, None, None)
        );
        assert_eq!((p.error_limit, p.on_error), (10, OnError::FailCheck));
        assert_eq!(p.version, HaproxyVersion::V2_6);
        assert_eq!(p.probe, ProbeKind::Tcp);
    }

    #[test]
    fn a_server_starts_one_failure_from_down() {
        // Reference D9: a server dead at start is "0/2 DOWN" after the first check.
        let mut h = harness(params(), 1);
        h.fire_next(at_ms(0)).unwrap();
        assert!(h.routable(A));
        h.answer(at_ms(1), A, ProbeResult::Refused);
        assert!(!h.routable(A), "one failure at start");
    }

    #[test]
    fn from_full_health_it_takes_fall_failures_and_a_success_restores_it() {
        let mut p = params();
        p.inter = SimDuration::from_secs(1);
        let mut h = harness(p, 1);
        let mut t = h.fire_next(at_ms(0)).unwrap();
        h.answer(t, A, ProbeResult::Connected); // 2 -> full health 4
        for (k, r) in [ProbeResult::Refused, ProbeResult::Refused]
            .into_iter()
            .enumerate()
        {
            t = h.fire_next(at_ms(100_000)).unwrap();
            h.answer(t, A, r);
            assert!(h.routable(A), "failure {} of 3", k + 1);
        }
        t = h.fire_next(at_ms(100_000)).unwrap();
        h.answer(t, A, ProbeResult::Connected); // one success: back to full
        for _ in 0..2 {
            t = h.fire_next(at_ms(100_000)).unwrap();
            h.answer(t, A, ProbeResult::ConnectTimeout);
        }
        assert!(h.routable(A), "the success cleared the run");
        t = h.fire_next(at_ms(100_000)).unwrap();
        h.answer(t, A, ProbeResult::ConnectTimeout);
        assert!(!h.routable(A), "third failure in a row");
        // Going up: one failure drops straight back to 0.
        t = h.fire_next(at_ms(100_000)).unwrap();
        h.answer(t, A, ProbeResult::Connected);
        assert!(!h.routable(A), "1/2");
        t = h.fire_next(at_ms(100_000)).unwrap();
        h.answer(t, A, ProbeResult::Refused);
        t = h.fire_next(at_ms(100_000)).unwrap();
        h.answer(t, A, ProbeResult::Connected);
        assert!(!h.routable(A), "the run restarted");
        t = h.fire_next(at_ms(100_000)).unwrap();
        h.answer(t, A, ProbeResult::Connected);
        assert!(h.routable(A), "rise successes in a row");
    }

    #[test]
    fn next_check_is_scheduled_from_completion_with_the_state_interval() {
        // Reference D9: inter 1s fastinter 500ms downinter 3s rise 2 fall 3.
        let mut p = params();
        p.inter = SimDuration::from_secs(1);
        p.fastinter = Some(SimDuration::from_millis(500));
        p.downinter = Some(SimDuration::from_secs(3));
        let mut h = harness(p, 1);
        let t0 = h.fire_next(at_ms(0)).unwrap();
        assert_eq!(t0, at_ms(0));
        h.answer(at_ms(1), A, ProbeResult::Refused); // DOWN, health 0
        assert_eq!(
            h.fire_next(at_ms(100_000)),
            Some(at_ms(3_001)),
            "downinter after completion"
        );
        h.answer(at_ms(3_001), A, ProbeResult::Connected); // 1/2: transitional
        assert_eq!(h.fire_next(at_ms(100_000)), Some(at_ms(3_501)), "fastinter");
        // A check that hangs for the whole inter: period = inter + duration.
        h.answer(at_ms(4_501), A, ProbeResult::Timeout); // back to 0
        assert_eq!(h.fire_next(at_ms(100_000)), Some(at_ms(7_501)));
        h.answer(at_ms(7_502), A, ProbeResult::Connected);
        assert_eq!(h.fire_next(at_ms(100_000)), Some(at_ms(8_002)));
        h.answer(at_ms(8_002), A, ProbeResult::Connected); // UP, full health
        assert_eq!(
            h.fire_next(at_ms(100_000)),
            Some(at_ms(9_002)),
            "inter when fully up"
        );
    }

    #[test]
    fn start_offsets_are_deterministic() {
        // Reference D10 used intervals 500/1000/2000 ms; with one interval for
        // every server the spread is inter * pos / n.
        let mut p = params();
        p.inter = SimDuration::from_millis(1500);
        let h = harness(p.clone(), 3);
        let mut starts: Vec<_> = h.timer_times();
        starts.sort();
        assert_eq!(starts, [at_ms(0), at_ms(500), at_ms(1000)]);
        // Below 1000 ms an interval does not set mininter: own interval used.
        p.inter = SimDuration::from_millis(500);
        let h = harness(p.clone(), 3);
        let starts: Vec<_> = h.timer_times();
        assert_eq!(starts, [at_ms(0), at_ms(166), at_ms(333)]);
        p.max_spread_checks = Some(SimDuration::from_millis(300));
        let h = harness(p, 3);
        let starts: Vec<_> = h.timer_times();
        assert_eq!(starts, [at_ms(0), at_ms(100), at_ms(200)]);
    }

    #[test]
    fn spread_checks_jitter_stays_within_bounds() {
        let mut p = params();
        p.inter = SimDuration::from_secs(1);
        p.spread_checks = 20;
        let mut h = harness(p, 1);
        let mut t = h.fire_next(at_ms(0)).unwrap();
        let mut gaps = vec![];
        for _ in 0..200 {
            h.answer(t, A, ProbeResult::Connected);
            let next = h.fire_next(at_ms(10_000_000)).unwrap();
            gaps.push(next.saturating_since(t).as_micros() / 1000);
            t = next;
        }
        let (lo, hi) = (*gaps.iter().min().unwrap(), *gaps.iter().max().unwrap());
        assert!(lo >= 800 && hi <= 1200, "{lo}..{hi}");
        assert!(lo < 850 && hi > 1150, "jitter spans the range: {lo}..{hi}");
    }

    #[test]
    fn timeout_check_in_2_6_ends_a_check_at_the_later_deadline() {
        // tcpcheck_eval_connect (window min(inter, timeout connect)) and
        // process_chk_conn (the moved deadline, seen when the old one
        // fires); measured on 2.6.12 with an HTTP check of a hung server:
        // inter 1s, timeout check 300ms: 1002 ms (D11); inter 2s, timeout
        // connect 500ms, timeout check 3s: 3002 ms, every check.
        let mut p = params();
        p.probe = ProbeKind::Http;
        p.inter = SimDuration::from_secs(1);
        p.timeout_check = Some(SimDuration::from_millis(300));
        let mut h = harness(p.clone(), 1);
        h.fire_next(at_ms(0));
        let req = h.in_flight()[0].req;
        assert_eq!(req.timeout, SimDuration::from_secs(1), "D11: 1002 ms");
        assert_eq!(
            req.timeout_after_connect,
            Some(AfterConnect::Later(SimDuration::from_millis(300)))
        );
        p.inter = SimDuration::from_secs(2);
        p.timeout_connect = Some(SimDuration::from_millis(500));
        p.timeout_check = Some(SimDuration::from_secs(3));
        let mut h = harness(p.clone(), 1);
        h.fire_next(at_ms(0));
        let req = h.in_flight()[0].req;
        assert_eq!(req.connect_timeout, SimDuration::from_millis(500));
        assert_eq!(req.timeout, SimDuration::from_millis(500), "the window");
        assert_eq!(
            req.timeout_after_connect,
            Some(AfterConnect::Later(SimDuration::from_secs(3))),
            "a longer timeout check is honoured: 3002 ms, not 500"
        );
        p.version = HaproxyVersion::Fixed;
        p.timeout_check = Some(SimDuration::from_millis(300));
        let mut h = harness(p, 1);
        h.fire_next(at_ms(0));
        let req = h.in_flight()[0].req;
        assert_eq!(
            req.timeout_after_connect,
            Some(AfterConnect::Replace(SimDuration::from_millis(300)))
        );
    }

    /// `tcpcheck_eval_expect_http`: a status passes when every expect rule
    /// accepts it; with none, 200–399 (`check_proxy_tcpcheck`'s implicit
    /// `http-check expect status 200-399`).
    #[test]
    fn http_check_expect_decides_which_statuses_pass() {
        let run = |expect: serde_json::Value, status: u16| {
            let mut p: HaproxyCheckParams =
                serde_json::from_value(serde_json::json!({"probe": "http", "expect": expect}))
                    .unwrap();
            p.validate().unwrap();
            p.rise = 1;
            p.fall = 1;
            let mut h = harness(p, 1);
            let t = h.fire_next(at_ms(0)).unwrap();
            h.answer(t, A, ProbeResult::Status(status));
            h.routable(A)
        };
        let none = serde_json::json!([]);
        assert!(run(none.clone(), 302) && !run(none.clone(), 404) && !run(none, 503));
        let list = serde_json::json!([{"status": ["200-399", "503"]}]);
        assert!(run(list.clone(), 503) && run(list.clone(), 200) && !run(list, 500));
        let re = serde_json::json!([{"rstatus": "^[23]"}]);
        assert!(run(re.clone(), 204) && run(re.clone(), 399) && !run(re, 503));
        let not5 = serde_json::json!([{"status": ["500-599"], "negate": true}]);
        assert!(run(not5.clone(), 404) && !run(not5, 503));
        // A TCP check ignores the rules.
        let mut p: HaproxyCheckParams =
            serde_json::from_value(serde_json::json!({"expect": [{"status": ["500"]}]})).unwrap();
        p.fall = 1;
        let mut h = harness(p, 1);
        let t = h.fire_next(at_ms(0)).unwrap();
        h.answer(t, A, ProbeResult::Connected);
        assert!(h.routable(A));
    }

    #[test]
    fn bad_expect_rules_name_their_field() {
        for (expect, field) in [
            (
                serde_json::json!([{"status": ["300-200"]}]),
                "expect[0].status[0]",
            ),
            (
                serde_json::json!([{"status": ["200", "700"]}]),
                "expect[0].status[1]",
            ),
            (serde_json::json!([{"status": []}]), "expect[0].status"),
            (
                serde_json::json!([{}, {"rstatus": "^[23"}]),
                "expect[0].status",
            ),
            (
                serde_json::json!([{"status": ["200"]}, {"rstatus": "^[23"}]),
                "expect[1].rstatus",
            ),
        ] {
            let p: HaproxyCheckParams =
                serde_json::from_value(serde_json::json!({"probe": "http", "expect": expect}))
                    .unwrap();
            assert_eq!(p.validate().unwrap_err().0, field);
        }
    }

    fn report(result: AttemptResult) -> AttemptReport {
        AttemptReport {
            scope: 0,
            node: A,
            result,
            charge: Charge::Failed,
            elapsed: SimDuration::ZERO,
        }
    }

    #[test]
    fn observe_layer7_mark_down_and_fastinter() {
        // Reference D14: error-limit 3 on-error mark-down fastinter 1s.
        let mut p = params();
        p.observe = Some(Observe::Layer7);
        p.error_limit = 3;
        p.on_error = OnError::MarkDown;
        p.fastinter = Some(SimDuration::from_secs(1));
        p.inter = SimDuration::from_secs(10);
        let mut h = harness(p, 1);
        let t = h.fire_next(at_ms(0)).unwrap();
        h.answer(t, A, ProbeResult::Connected); // full health, next check at 10 s
        h.report(at_ms(100), report(AttemptResult::Status(502)));
        h.report(at_ms(200), report(AttemptResult::Status(404))); // OK: resets
        h.report(at_ms(300), report(AttemptResult::Status(502)));
        h.report(at_ms(400), report(AttemptResult::Status(503)));
        assert!(h.routable(A));
        h.report(at_ms(500), report(AttemptResult::ReadTimeout));
        assert!(!h.routable(A), "third consecutive error marks it down");
        assert_eq!(
            h.fire_next(at_ms(100_000)),
            Some(at_ms(1_500)),
            "now + fastinter"
        );
        h.answer(at_ms(1_500), A, ProbeResult::Connected);
        assert_eq!(h.fire_next(at_ms(100_000)), Some(at_ms(2_500)));
        h.answer(at_ms(2_500), A, ProbeResult::Connected);
        assert!(h.routable(A), "up after rise checks at fastinter");
    }

    #[test]
    fn observe_fail_check_is_undone_by_a_passing_check() {
        let mut p = params();
        p.observe = Some(Observe::Layer4);
        p.error_limit = 2;
        let mut h = harness(p, 1);
        let t = h.fire_next(at_ms(0)).unwrap();
        h.answer(t, A, ProbeResult::Connected); // health 4
        for k in 0..4 {
            h.report(at_ms(10 + k), report(AttemptResult::Refused));
        }
        assert!(h.routable(A), "two synthetic failures: health 2");
        h.report(at_ms(20), report(AttemptResult::Status(503))); // layer4: connected = OK
        h.report(at_ms(21), report(AttemptResult::Refused));
        assert!(h.routable(A), "the OK reset the count");
        let t = h.fire_next(at_ms(100_000)).unwrap();
        h.answer(t, A, ProbeResult::Connected);
        for k in 0..4 {
            h.report(
                t + SimDuration::from_millis(k + 1),
                report(AttemptResult::ConnectTimeout),
            );
        }
        assert!(h.routable(A), "the passing check restored full health");
        h.report(
            t + SimDuration::from_millis(9),
            report(AttemptResult::ConnectTimeout),
        );
        h.report(
            t + SimDuration::from_millis(9),
            report(AttemptResult::ConnectTimeout),
        );
        assert!(
            !h.routable(A),
            "fall x error_limit errors without a passing check"
        );
    }

    #[test]
    fn sudden_death_leaves_one_failure_to_go() {
        let mut p = params();
        p.observe = Some(Observe::Layer7);
        p.error_limit = 1;
        p.on_error = OnError::SuddenDeath;
        let mut h = harness(p, 1);
        let t = h.fire_next(at_ms(0)).unwrap();
        h.answer(t, A, ProbeResult::Connected);
        h.report(at_ms(10), report(AttemptResult::Status(500)));
        assert!(h.routable(A));
        let t = h.fire_next(at_ms(100_000)).unwrap();
        h.answer(t, A, ProbeResult::Refused);
        assert!(!h.routable(A), "the next failure of any kind marks it down");
    }

    #[test]
    fn observe_layer7_ignores_client_aborts_and_4xx_are_ok() {
        assert_eq!(
            HaproxyCheck::classify(Observe::Layer7, AttemptResult::Status(404)),
            Some(false)
        );
        assert_eq!(
            HaproxyCheck::classify(Observe::Layer7, AttemptResult::Status(501)),
            Some(false)
        );
        assert_eq!(
            HaproxyCheck::classify(Observe::Layer7, AttemptResult::Status(505)),
            Some(false)
        );
        assert_eq!(
            HaproxyCheck::classify(Observe::Layer7, AttemptResult::Status(507)),
            Some(true)
        );
        assert_eq!(
            HaproxyCheck::classify(Observe::Layer7, AttemptResult::ClientAbort),
            None
        );
        assert_eq!(
            HaproxyCheck::classify(Observe::Layer4, AttemptResult::Status(503)),
            Some(false)
        );
    }
}
