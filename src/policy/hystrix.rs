//! Hystrix 1.5's `HystrixCircuitBreakerImpl`, one command key per node.
//!
//! - Health counts: a rolling window of `rolling_stats_time` in buckets of
//!   `health_snapshot_interval` (10 s of 500 ms: 20 buckets). A snapshot —
//!   the sum of the last 20 *completed* buckets — is emitted each time a
//!   bucket closes, and only then is the breaker evaluated: trips are
//!   quantised to bucket boundaries.
//! - On a snapshot: `total ≥ request_volume_threshold` and
//!   `error% ≥ error_threshold_percentage`, with `error% = (int)(100.0 ×
//!   errors / total)`, open a CLOSED breaker (`circuitOpened = now`).
//! - OPEN: the first request strictly after `circuitOpened + sleep_window`
//!   flips OPEN → HALF_OPEN and is the single trial; every other request is
//!   short-circuited (the node is not routable).
//! - Any success while HALF_OPEN closes the breaker and resets the stream
//!   (a new window whose buckets start now); any failure, timeout or
//!   unsubscription while HALF_OPEN reopens it with `circuitOpened = now`
//!   (no back-off growth).
//!
//! - Execution timeout (`AbstractCommand.HystrixObservableTimeoutOperator`:
//!   a `HystrixTimer` listener fires `execution_timeout` after the command
//!   starts): the command is a TIMEOUT then. The gateway ends the attempt
//!   at that moment ([`HealthPolicy::attempt_timeout`]) as a timeout, so the
//!   caller gets its error (or the gateway's retry) and the breaker counts
//!   the TIMEOUT at the timeout, not when the gateway's own timeout would
//!   have ended the attempt.
//! - Thread pool (`HystrixThreadPoolProperties`: `coreSize` 10,
//!   `maxQueueSize` -1, i.e. a `SynchronousQueue`): a command that finds
//!   `core_size` commands of its node running is rejected at once
//!   (`RejectedExecutionException` → `handleThreadPoolRejectionViaFallback`):
//!   the attempt ends before anything is sent ([`AttemptResult::Rejected`]),
//!   `handleFallback` marks the breaker non-success, and the
//!   THREAD_POOL_REJECTED event counts in the health counts as an error
//!   (`HystrixCommandMetrics.HealthCounts.plus`: total and errors both add
//!   FAILURE, TIMEOUT, THREAD_POOL_REJECTED and SEMAPHORE_REJECTED). A
//!   timed-out command's thread is taken as free at the timeout
//!   (`interruptOnTimeout`, default true, with an interruptible client); a
//!   client blocked in a socket read would hold it until its own timeout.
//!
//! Decisions: errors are [`Outcome::of`]'s failures (rejections included),
//! plus any attempt longer than `execution_timeout`; a client abort is
//! counted nowhere but, like an unsubscription, reopens a HALF_OPEN
//! breaker. Buckets are aligned to the start of the run (Hystrix: the
//! stream's first subscription). One breaker and one thread pool per node
//! (a thread-pool key per command key), shared by all gateway workers.

use super::support::window::{BucketWindow, Outcome};
use super::{
    AttemptReport, HealthPolicy, Interests, Now, PolicyCx, PolicyParams, PolicyTimer, Readmit,
    Scope, ScopeSel,
};
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Hystrix command properties (the circuit breaker's and its metrics').
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HystrixParams {
    /// `circuitBreaker.requestVolumeThreshold`. Default 20.
    pub request_volume_threshold: u32,
    /// `circuitBreaker.errorThresholdPercentage`. Default 50.
    pub error_threshold_percentage: u32,
    /// `circuitBreaker.sleepWindowInMilliseconds`. Default 5s.
    pub sleep_window: SimDuration,
    /// `metrics.rollingStats.timeInMilliseconds`. Default 10s.
    pub rolling_stats_time: SimDuration,
    /// `metrics.healthSnapshot.intervalInMilliseconds`: the health bucket. Default 500ms.
    pub health_snapshot_interval: SimDuration,
    /// `execution.isolation.thread.timeoutInMilliseconds`: the command (the
    /// attempt, from the peer's selection) ends as a TIMEOUT this long after
    /// it started; `null` turns the timeout off (`execution.timeout.enabled`
    /// false). Default 1s.
    pub execution_timeout: Option<SimDuration>,
    /// The thread pool's `coreSize` (= `maximumSize`): commands of a node
    /// running at once; one more is rejected (THREAD_POOL_REJECTED). `null`
    /// lifts the limit (not a Hystrix setting). Default 10.
    pub core_size: Option<u32>,
    /// The thread pool's `maxQueueSize`. Only Hystrix's default -1 (a
    /// `SynchronousQueue`: no queue, reject when every thread is busy) is
    /// modelled. Default -1.
    pub max_queue_size: i32,
}

impl Default for HystrixParams {
    fn default() -> Self {
        HystrixParams {
            request_volume_threshold: 20,
            error_threshold_percentage: 50,
            sleep_window: SimDuration::from_secs(5),
            rolling_stats_time: SimDuration::from_secs(10),
            health_snapshot_interval: SimDuration::from_millis(500),
            execution_timeout: Some(SimDuration::from_secs(1)),
            core_size: Some(10),
            max_queue_size: -1,
        }
    }
}

impl PolicyParams for HystrixParams {
    fn label(&self) -> String {
        "hystrix".into()
    }

    fn build(&self, _scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(Hystrix::new(self, nodes))
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let err = |f: &str, r: &str| Err((f.to_string(), r.to_string()));
        let (w, b) = (
            self.rolling_stats_time.as_micros(),
            self.health_snapshot_interval.as_micros(),
        );
        if b == 0 || w == 0 {
            return err("health_snapshot_interval", "must be positive");
        }
        if w % b != 0 {
            return err(
                "health_snapshot_interval",
                "must divide rolling_stats_time evenly",
            );
        }
        if self.error_threshold_percentage > 100 {
            return err("error_threshold_percentage", "is a percentage (0..=100)");
        }
        if self.execution_timeout.is_some_and(|t| t.is_zero()) {
            return err(
                "execution_timeout",
                "must be positive (null turns the timeout off)",
            );
        }
        if self.core_size == Some(0) {
            return err("core_size", "must be at least 1 (null lifts the limit)");
        }
        if self.max_queue_size != -1 {
            return err(
                "max_queue_size",
                "only -1 (Hystrix's default: no queue, reject when every thread is busy) is modelled",
            );
        }
        Ok(())
    }
}

impl HystrixParams {
    fn buckets(&self) -> usize {
        (self.rolling_stats_time.as_micros() / self.health_snapshot_interval.as_micros().max(1))
            as usize
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    Closed,
    Open { opened_at: SimTime },
    HalfOpen,
}

#[derive(Clone, Debug)]
struct Command {
    state: State,
    /// The completed buckets plus the one being written.
    window: BucketWindow,
    /// Where the health stream's buckets start.
    origin: SimTime,
    generation: u32,
    /// Commands selected and not ended: the pool's busy threads, plus the
    /// one being admitted.
    running: u32,
}

/// A Hystrix circuit breaker per node.
pub struct Hystrix {
    p: HystrixParams,
    bucket_us: u64,
    commands: Vec<Command>,
}

impl Hystrix {
    pub fn new(p: &HystrixParams, nodes: usize) -> Self {
        Hystrix {
            bucket_us: p.health_snapshot_interval.as_micros().max(1),
            commands: vec![
                Command {
                    state: State::Closed,
                    window: BucketWindow::new(p.buckets() + 1),
                    origin: SimTime::ZERO,
                    generation: 0,
                    running: 0,
                };
                nodes
            ],
            p: p.clone(),
        }
    }

    fn bucket(&self, i: usize, t: SimTime) -> i64 {
        (t.saturating_since(self.commands[i].origin).as_micros() / self.bucket_us) as i64
    }

    /// Arms the snapshot at the end of the current bucket.
    fn arm(&self, cx: &mut PolicyCx, i: usize) {
        let c = &self.commands[i];
        let next = self.bucket(i, cx.now().t) as u64 + 1;
        let at = c.origin + SimDuration::from_micros(next * self.bucket_us);
        let timer = PolicyTimer {
            tag: 0,
            node: i as u32,
            generation: c.generation,
        };
        cx.at(at, timer);
    }

    fn open(&mut self, cx: &mut PolicyCx, i: usize) {
        self.commands[i].state = State::Open {
            opened_at: cx.now().t,
        };
        cx.ejected(ScopeSel::All, NodeId(i as u32));
    }

    /// The breaker's state name, for tests and traces.
    pub fn state_name(&self, node: NodeId) -> &'static str {
        match self.commands[node.index()].state {
            State::Closed => "CLOSED",
            State::Open { .. } => "OPEN",
            State::HalfOpen => "HALF_OPEN",
        }
    }

    fn after_sleep(&self, opened_at: SimTime, now: SimTime) -> bool {
        now > opened_at + self.p.sleep_window
    }
}

impl HealthPolicy for Hystrix {
    fn on_start(&mut self, cx: &mut PolicyCx) {
        for i in 0..self.commands.len() {
            self.arm(cx, i);
        }
    }

    fn is_routable(&self, _: Scope, node: NodeId, now: Now) -> bool {
        match self.commands[node.index()].state {
            State::Closed => true,
            State::Open { opened_at } => self.after_sleep(opened_at, now.t),
            State::HalfOpen => false,
        }
    }

    fn readmits_at(&self, _: Scope, node: NodeId, _: Now) -> Option<Readmit> {
        match self.commands[node.index()].state {
            State::Open { opened_at } => Some(Readmit::At(
                opened_at + self.p.sleep_window + SimDuration::from_micros(1),
            )),
            _ => None,
        }
    }

    fn attempt_timeout(&self) -> Option<SimDuration> {
        self.p.execution_timeout
    }

    fn interests(&self) -> Interests {
        Interests {
            rejects_attempts: self.p.core_size.is_some(),
            ..Interests::DEFAULT
        }
    }

    /// `ThreadPoolExecutor.execute` with a `SynchronousQueue` and
    /// `coreSize` threads: rejected when every thread runs a command (the
    /// command asking is already in `running`).
    fn admits(&self, _: Scope, node: NodeId) -> bool {
        self.p
            .core_size
            .is_none_or(|c| self.commands[node.index()].running <= c)
    }

    fn on_selected(&mut self, cx: &mut PolicyCx, _scope: Scope, node: NodeId) {
        let i = node.index();
        self.commands[i].running += 1;
        if let State::Open { opened_at } = self.commands[i].state
            && self.after_sleep(opened_at, cx.now().t)
        {
            // `attemptExecution`: the CAS OPEN → HALF_OPEN lets exactly this request through.
            self.commands[i].state = State::HalfOpen;
            cx.readmitted(ScopeSel::All, node);
        }
    }

    fn on_attempt(&mut self, cx: &mut PolicyCx, r: &AttemptReport) {
        let i = r.node.index();
        let c = &mut self.commands[i];
        c.running = c.running.saturating_sub(1);
        let timed_out = self.p.execution_timeout.is_some_and(|t| r.elapsed > t);
        let outcome = if timed_out {
            Outcome::Failure
        } else {
            Outcome::of(r.result)
        };
        let half_open = self.commands[i].state == State::HalfOpen;
        match outcome {
            Outcome::Ignored => {
                if half_open {
                    self.open(cx, i); // unsubscribed: markNonSuccess
                }
            }
            Outcome::Success => {
                let b = self.bucket(i, cx.now().t);
                self.commands[i].window.record(b, false, false);
                if half_open {
                    // markSuccess: CLOSED, and the health stream starts over.
                    let c = &mut self.commands[i];
                    c.state = State::Closed;
                    c.window.clear();
                    c.origin = cx.now().t;
                    c.generation = c.generation.wrapping_add(1);
                    self.arm(cx, i);
                }
            }
            Outcome::Failure => {
                let b = self.bucket(i, cx.now().t);
                self.commands[i].window.record(b, true, false);
                if half_open {
                    self.open(cx, i); // markNonSuccess
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) {
        let i = timer.node as usize;
        if self.commands[i].generation != timer.generation {
            return;
        }
        // A bucket closed: the snapshot is the sum of the completed buckets.
        let b = self.bucket(i, cx.now().t);
        let c = &mut self.commands[i];
        c.window.advance(b);
        let all = c.window.tally();
        let current = c.window.bucket(b);
        let (total, errors) = (all.calls - current.calls, all.failures - current.failures);
        if c.state == State::Closed && total >= self.p.request_volume_threshold && total > 0 {
            let error_pct = (errors as f64 / total as f64 * 100.0) as u32;
            if error_pct >= self.p.error_threshold_percentage {
                self.open(cx, i);
            }
        }
        self.arm(cx, i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::AttemptResult;
    use crate::policy::testkit::{Harness, ms};

    const OK: AttemptResult = AttemptResult::Status(200);
    const BAD: AttemptResult = AttemptResult::Status(503);

    fn hystrix() -> Harness<Hystrix> {
        Harness::new(Hystrix::new(&HystrixParams::default(), 2))
    }

    #[test]
    fn trips_only_at_the_next_bucket_boundary() {
        let mut h = hystrix();
        for k in 0..20 {
            h.attempt(ms(600 + k), 0, if k < 10 { BAD } else { OK });
        }
        assert!(h.routable(0), "50 % of 20 seen, but no snapshot yet");
        h.advance_to(ms(999));
        assert!(h.routable(0));
        h.advance_to(ms(1_000));
        assert!(!h.routable(0), "the bucket closing at 1.0 s trips it");
        assert_eq!(h.history(0), vec![(ms(1_000), true)]);
    }

    #[test]
    fn volume_and_truncated_percentage() {
        // 19 requests, all failing: below the volume.
        let mut h = hystrix();
        for k in 0..19 {
            h.attempt(ms(100 + k), 0, BAD);
        }
        h.advance_to(ms(5_000));
        assert!(h.routable(0));
        // 99 of 199 = 49.7 % → (int) 49 < 50: stays closed.
        let mut h = hystrix();
        for k in 0..199 {
            h.attempt(ms(100 + k), 0, if k < 99 { BAD } else { OK });
        }
        h.advance_to(ms(1_000));
        assert!(h.routable(0));
    }

    #[test]
    fn the_window_rolls_off_after_ten_seconds() {
        let mut h = hystrix();
        for k in 0..30 {
            h.attempt(ms(100 + k), 0, if k < 10 { BAD } else { OK });
        }
        // 10 of 30 failed. Ten seconds later the bucket is gone, and 20 fresh
        // failures are 100 %.
        for k in 0..20 {
            h.attempt(ms(10_600 + k), 0, BAD);
        }
        h.advance_to(ms(10_999));
        assert!(
            h.routable(0),
            "the old bucket (0–0.5 s) left at 10.5 s; new one not closed"
        );
        h.advance_to(ms(11_000));
        assert!(!h.routable(0));
    }

    #[test]
    fn one_trial_request_after_the_sleep_window() {
        let mut h = hystrix();
        for k in 0..20 {
            h.attempt(ms(100 + k), 0, BAD);
        }
        h.advance_to(ms(500)); // opened at 0.5 s
        assert!(!h.routable(0));
        h.advance_to(ms(5_500));
        assert!(!h.routable(0), "not strictly after the sleep window");
        h.advance_to(ms(5_501));
        assert!(h.routable(0));
        h.select(ms(5_501), 0);
        assert_eq!(h.policy.state_name(NodeId(0)), "HALF_OPEN");
        assert!(!h.routable(0), "exactly one trial");
        // The trial fails: OPEN again, sleep restarts from now, no growth.
        h.complete(ms(6_000), 0, BAD, SimDuration::ZERO);
        assert_eq!(h.policy.state_name(NodeId(0)), "OPEN");
        h.advance_to(ms(11_000));
        assert!(!h.routable(0));
        h.advance_to(ms(11_001));
        assert!(h.routable(0));
        // The next trial succeeds: CLOSED, with a fresh window.
        h.select(ms(11_001), 0);
        h.complete(ms(11_010), 0, OK, SimDuration::ZERO);
        assert_eq!(h.policy.state_name(NodeId(0)), "CLOSED");
        h.advance_to(ms(20_000));
        assert!(h.routable(0));
        let hist: Vec<bool> = h.history(0).into_iter().map(|(_, e)| e).collect();
        assert_eq!(hist, vec![true, false, true, false]);
    }

    #[test]
    fn slow_attempts_count_as_timeouts() {
        let mut h = hystrix();
        for k in 0..20 {
            h.select(ms(k), 0);
        }
        for k in 0..20 {
            h.complete(ms(k + 1_100), 0, OK, SimDuration::from_millis(1_100));
        }
        h.advance_to(ms(1_500));
        assert!(!h.routable(0), "20 successes, each after the 1 s timeout");
    }

    #[test]
    fn the_command_times_out_at_the_execution_timeout() {
        // `HystrixObservableTimeoutOperator`: the timer listener fires
        // `execution.isolation.thread.timeoutInMilliseconds` after the start,
        // so the gateway must end the attempt then, not at its own timeout.
        let p = HystrixParams::default();
        let h = Hystrix::new(&p, 1);
        assert_eq!(h.attempt_timeout(), Some(SimDuration::from_secs(1)));
        let off = HystrixParams {
            execution_timeout: None,
            ..HystrixParams::default()
        };
        assert_eq!(Hystrix::new(&off, 1).attempt_timeout(), None);
        // Twenty hung commands started in [0, 20) ms time out at 1.000–1.019 s:
        // the TIMEOUTs land in the bucket [1.0, 1.5) s, whose close trips it.
        let mut h = hystrix();
        for k in 0..20 {
            h.select(ms(k), 0);
        }
        for k in 0..20 {
            let t = SimDuration::from_secs(1);
            h.complete(ms(1_000 + k), 0, AttemptResult::ReadTimeout, t);
        }
        h.advance_to(ms(1_499));
        assert!(h.routable(0));
        h.advance_to(ms(1_500));
        assert!(!h.routable(0), "open at the bucket after the timeouts");
    }

    #[test]
    fn the_eleventh_concurrent_command_is_rejected_and_counts_as_an_error() {
        // coreSize 10, maxQueueSize -1 (`SynchronousQueue`): with ten
        // commands running, `ThreadPoolExecutor.execute` rejects the next.
        let mut h = hystrix();
        for k in 0..10 {
            h.select(ms(k), 0);
            assert!(h.policy.admits(0, NodeId(0)), "thread {k} of 10");
        }
        h.select(ms(10), 0);
        assert!(!h.policy.admits(0, NodeId(0)), "the 11th is rejected");
        assert!(h.policy.admits(0, NodeId(1)), "node B has its own pool");
        h.complete(ms(10), 0, AttemptResult::Rejected, SimDuration::ZERO);
        // One command ends: its thread takes the next.
        h.complete(ms(20), 0, OK, SimDuration::from_millis(20));
        h.select(ms(21), 0);
        assert!(h.policy.admits(0, NodeId(0)));
        // THREAD_POOL_REJECTED is an error in `HealthCounts.plus`: 20
        // rejections alone open the breaker at the next snapshot.
        for k in 0..20 {
            h.select(ms(100 + k), 0);
            assert!(!h.policy.admits(0, NodeId(0)));
            h.complete(ms(100 + k), 0, AttemptResult::Rejected, SimDuration::ZERO);
        }
        h.advance_to(ms(500));
        assert!(!h.routable(0), "rejections trip the breaker");
        assert!(
            Hystrix::new(&HystrixParams::default(), 1)
                .interests()
                .rejects_attempts
        );
    }

    #[test]
    fn a_rejected_trial_reopens() {
        // `handleFallback` calls `circuitBreaker.markNonSuccess()` first,
        // for a rejection as for any other failure.
        let mut h = hystrix();
        for k in 0..20 {
            h.attempt(ms(100 + k), 0, BAD);
        }
        h.advance_to(ms(5_501));
        h.select(ms(5_501), 0);
        assert_eq!(h.policy.state_name(NodeId(0)), "HALF_OPEN");
        h.complete(ms(5_501), 0, AttemptResult::Rejected, SimDuration::ZERO);
        assert_eq!(h.policy.state_name(NodeId(0)), "OPEN");
    }

    #[test]
    fn only_the_default_queue_is_modelled() {
        let bad = HystrixParams {
            max_queue_size: 5,
            ..HystrixParams::default()
        };
        assert_eq!(bad.validate().unwrap_err().0, "max_queue_size");
        let zero = HystrixParams {
            core_size: Some(0),
            ..HystrixParams::default()
        };
        assert_eq!(zero.validate().unwrap_err().0, "core_size");
    }

    #[test]
    fn a_client_abort_of_the_trial_reopens() {
        let mut h = hystrix();
        for k in 0..20 {
            h.attempt(ms(100 + k), 0, BAD);
        }
        h.select(ms(5_600), 0);
        h.complete(ms(5_700), 0, AttemptResult::ClientAbort, SimDuration::ZERO);
        assert_eq!(h.policy.state_name(NodeId(0)), "OPEN");
    }
}
