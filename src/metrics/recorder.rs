//! The [`Recorder`]: streaming counters while a run goes on (memory does
//! not grow with the number of requests), turned into a [`RunSummary`] at
//! the end.

use super::replicas::ReplicaTally;
use super::summary::*;
use crate::engine::{SimDuration, SimTime};
use crate::ids::{FleetLayout, NodeId, Scope};
use crate::policy::{Notice, ScopeSel};
use crate::stats::{Histogram, round6};
use std::collections::BTreeMap;

const MAX_INTERVALS: usize = 100_000;
const COLS_FIXED: usize = 4;
const COLS_PER_NODE: usize = 3;

/// Collects counts while a run goes on.
pub struct Recorder {
    from: SimTime,
    to: SimTime,
    end: SimTime,
    bucket_us: u64,
    scopes: usize,
    names: Vec<String>,
    requests: u64,
    ok: u64,
    errors: u64,
    timeouts: u64,
    /// Answers by status: `status[code]` below [`STATUS_SLOTS`], a map above.
    status: Vec<u64>,
    status_other: BTreeMap<u16, u64>,
    /// Latency of every counted request that ended.
    latency: Histogram,
    /// `latency_thresholds`, and the counted requests slower than each;
    /// `fastest_threshold`: the smallest (most requests are faster: one
    /// comparison).
    thresholds: Vec<(SimDuration, u64)>,
    fastest_threshold: SimDuration,
    /// Latency of every request that ended in the current timeline bucket
    /// (the one `row` points at), and each bucket's (p50, p99) in ms.
    /// The current bucket's counted requests (folded into `latency` when
    /// the bucket closes) and the others: each request is recorded once.
    bucket_latency: Histogram,
    bucket_uncounted: Histogram,
    timeline_latency: Vec<(Option<f64>, Option<f64>)>,
    /// Per node: what every request touches, one cache line per node.
    hot: Vec<NodeHot>,
    peak_queue: Vec<u64>,
    /// Per node: worker-µs spent on probes inside the measurement window.
    probe_busy_us: Vec<u64>,
    backlog_refused: Vec<u64>,
    /// How the gateway's replicas lay out their scopes, and per (node,
    /// replica): its first ejection after the node's first fault started,
    /// and whether it ever ejected the node.
    layout: FleetLayout,
    replicas: usize,
    replica_first: Vec<Option<SimTime>>,
    replica_ejected: Vec<bool>,
    /// With `--per-replica`: each replica's node table.
    per_replica: Option<ReplicaTally>,
    /// Per (node, scope): how many policies eject it now, and since when.
    holders: Vec<u16>,
    since: Vec<Option<SimTime>>,
    ejections: Vec<u64>,
    ejected_us: Vec<u64>,
    intervals: Vec<(u32, u16, SimTime, Option<SimTime>)>,
    /// Per (timeline bucket, node): ejected µs summed over scopes, from
    /// every interval (the log above keeps at most `MAX_INTERVALS`).
    ejected_buckets: Vec<u64>,
    fault_first_start: Vec<Option<SimTime>>,
    fault_last_end: Vec<Option<SimTime>>,
    /// Per node: every fault window `[start, end)`.
    fault_windows: Vec<Vec<(SimTime, Option<SimTime>)>>,
    false_ejections: Vec<u64>,
    fault_attempts_ok: Vec<u64>,
    probes: Vec<u64>,
    rounds: Vec<SimDuration>,
    first_ejection_after_fault: Vec<Option<SimTime>>,
    recovered_at: Vec<Option<SimTime>>,
    /// Timeline counts: one row of `cols` counters per bucket.
    timeline: Vec<u64>,
    cols: usize,
    /// The bucket `row` returned last: `[row_from, row_from + bucket_us)` µs,
    /// at offset `row_at` of `timeline`.
    row_from: u64,
    row_at: usize,
}

/// A node's counters that every request updates, together in one cache
/// line: a large cluster touches each node rarely, so each touch is a miss.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct NodeHot {
    /// Workers busy since `busy_since`; `busy_us`: worker-µs busy inside
    /// the measurement window.
    busy_since: SimTime,
    busy_us: u64,
    attempts: u64,
    answered: u64,
    failures: u64,
    fault_attempts: u64,
    busy: u32,
    workers: u32,
    /// A fault window has ended and the node has not answered since
    /// (`recovered_at` is still to be set).
    awaits_recovery: bool,
}

/// Status codes counted in a flat array (HTTP statuses are 100..=599).
const STATUS_SLOTS: usize = 600;

impl Recorder {
    pub fn new(
        names: Vec<String>,
        scopes: usize,
        end: SimTime,
        window: (SimTime, SimTime),
        bucket: SimDuration,
    ) -> Self {
        let n = names.len();
        Recorder {
            from: window.0,
            to: window.1,
            end,
            bucket_us: bucket.as_micros().max(1),
            scopes,
            names,
            requests: 0,
            ok: 0,
            errors: 0,
            timeouts: 0,
            status: vec![0; STATUS_SLOTS],
            status_other: BTreeMap::new(),
            latency: Histogram::default(),
            thresholds: Vec::new(),
            fastest_threshold: SimDuration::MAX,
            bucket_latency: Histogram::default(),
            bucket_uncounted: Histogram::default(),
            timeline_latency: Vec::new(),
            hot: vec![NodeHot::default(); n],
            peak_queue: vec![0; n],
            probe_busy_us: vec![0; n],
            backlog_refused: vec![0; n],
            layout: FleetLayout::new(1, scopes, 0),
            replicas: 1,
            replica_first: Vec::new(),
            replica_ejected: Vec::new(),
            per_replica: None,
            holders: vec![0; n * scopes],
            since: vec![None; n * scopes],
            ejections: vec![0; n],
            ejected_us: vec![0; n],
            intervals: Vec::new(),
            ejected_buckets: Vec::new(),
            fault_first_start: vec![None; n],
            fault_last_end: vec![None; n],
            fault_windows: vec![Vec::new(); n],
            false_ejections: vec![0; n],
            fault_attempts_ok: vec![0; n],
            probes: vec![0; n],
            rounds: Vec::new(),
            first_ejection_after_fault: vec![None; n],
            recovered_at: vec![None; n],
            timeline: vec![0; COLS_FIXED + COLS_PER_NODE * n],
            cols: COLS_FIXED + COLS_PER_NODE * n,
            row_from: 0,
            row_at: 0,
        }
    }

    /// Sets the latency thresholds `client.slower_than` counts (before the run starts).
    pub fn latency_thresholds(&mut self, thresholds: &[SimDuration]) {
        self.thresholds = thresholds.iter().map(|&d| (d, 0)).collect();
        self.fastest_threshold = thresholds.iter().copied().min().unwrap_or(SimDuration::MAX);
    }

    /// Declares the gateway replicas (before the run starts): the layout's
    /// scopes are those the recorder was made for.
    pub fn fleet(&mut self, layout: FleetLayout) {
        debug_assert_eq!(layout.scopes(), self.scopes);
        self.layout = layout;
        self.replicas = layout.replicas();
        if self.replicas > 1 {
            self.replica_first = vec![None; self.names.len() * self.replicas];
            self.replica_ejected = vec![false; self.names.len() * self.replicas];
        }
    }

    /// Keeps each replica's node table too (`--per-replica`; after [`Self::fleet`]).
    pub fn track_replicas(&mut self) {
        self.per_replica = Some(ReplicaTally::new(self.layout, self.names.len()));
    }

    /// Whether [`Self::track_replicas`] is on: then the gateway also calls
    /// the `replica_*` methods with the request's global scope.
    #[inline]
    pub fn tracks_replicas(&self) -> bool {
        self.per_replica.is_some()
    }

    /// [`Self::attempt`], as the replica of `scope` saw it.
    pub fn replica_attempt(&mut self, scope: u16, node: NodeId, counted: bool, during_fault: bool) {
        if let (Some(t), true) = (&mut self.per_replica, counted) {
            t.attempt(scope as usize, node, during_fault);
        }
    }

    /// [`Self::failure`], as the replica of `scope` saw it.
    pub fn replica_failure(&mut self, scope: u16, node: NodeId, counted: bool) {
        if let (Some(t), true) = (&mut self.per_replica, counted) {
            t.failure(scope as usize, node);
        }
    }

    /// A 2xx answer from `by` through the replica of `scope`; `fault_ok`:
    /// its attempt started during one of the node's faults.
    pub fn replica_answered(
        &mut self,
        t: SimTime,
        scope: u16,
        by: NodeId,
        counted: bool,
        fault_ok: bool,
    ) {
        let end = self.fault_last_end[by.index()];
        if let Some(tally) = &mut self.per_replica {
            tally.answered(t, scope as usize, by, counted, fault_ok, end);
        }
    }

    /// Declares a node's worker count (before the run starts).
    pub fn node_workers(&mut self, node: NodeId, workers: u32) {
        self.hot[node.index()].workers = workers;
    }

    /// `node` has `busy` workers occupied from `t` on.
    #[inline]
    pub fn workers_busy(&mut self, t: SimTime, node: NodeId, busy: u32) {
        let i = node.index();
        self.add_busy_time(i, t);
        self.hot[i].busy = busy;
    }

    /// Adds the busy worker-time of node `i` from `busy_since` to `t`,
    /// clipped to the measurement window.
    #[inline]
    fn add_busy_time(&mut self, i: usize, t: SimTime) {
        let a = self.hot[i].busy_since.max(self.from);
        let b = t.min(self.to);
        if b > a {
            self.hot[i].busy_us += u64::from(self.hot[i].busy) * (b.as_micros() - a.as_micros());
        }
        self.hot[i].busy_since = t;
    }

    /// `node`'s accept queue holds `len` connections waiting for a worker.
    #[inline]
    pub fn queue_len(&mut self, t: SimTime, node: NodeId, len: usize) {
        let in_window = self.in_window(t);
        let p = &mut self.peak_queue[node.index()];
        if len as u64 > *p && in_window {
            *p = len as u64;
        }
    }

    /// An attempt's connection to `node` was dropped by its full accept queue.
    pub fn backlog_refused(&mut self, node: NodeId, counted: bool) {
        self.backlog_refused[node.index()] += counted as u64;
    }

    /// Declares a fault window (before the run starts).
    pub fn fault_window(&mut self, node: NodeId, start: SimTime, end: Option<SimTime>) {
        let i = node.index();
        let first = self.fault_first_start[i].get_or_insert(start);
        *first = (*first).min(start);
        if let Some(e) = end {
            let last = self.fault_last_end[i].get_or_insert(e);
            *last = (*last).max(e);
            self.hot[i].awaits_recovery = self.recovered_at[i].is_none();
        }
        self.fault_windows[i].push((start, end));
    }

    /// Node `i` as the replicas saw it.
    fn node_fleet(&self, i: usize) -> NodeFleet {
        let r = self.replicas;
        let firsts = &self.replica_first[i * r..(i + 1) * r];
        let last = firsts
            .iter()
            .try_fold(SimTime::ZERO, |m, f| f.map(|f| m.max(f)));
        NodeFleet {
            last_ejection_delay_s: last
                .zip(self.fault_first_start[i])
                .map(|(e, f)| round6(e.saturating_since(f).as_secs_f64())),
            replicas_ejected: round6(
                self.replica_ejected[i * r..(i + 1) * r]
                    .iter()
                    .filter(|&&e| e)
                    .count() as f64
                    / r as f64,
            ),
            ejected_replica_s: round6(
                self.ejected_us[i] as f64 / 1e6 / self.layout.scopes_per_replica() as f64,
            ),
        }
    }

    /// Is one of `node`'s faults active at `t`? (For the ejections' metrics;
    /// the simulation keeps its own count on each node.)
    fn in_fault(&self, node: NodeId, t: SimTime) -> bool {
        self.fault_windows[node.index()]
            .iter()
            .any(|&(s, e)| s <= t && e.is_none_or(|e| t < e))
    }

    /// An attempt that started during a fault of `node` was answered 2xx by it.
    pub fn fault_answered(&mut self, node: NodeId, counted: bool) {
        if counted {
            self.fault_attempts_ok[node.index()] += 1;
        }
    }

    /// A worker of `node` serves a probe over `[from, to)`.
    pub fn probe_work(&mut self, node: NodeId, from: SimTime, to: SimTime) {
        let (a, b) = (from.max(self.from), to.min(self.to));
        if b > a {
            self.probe_busy_us[node.index()] += b.as_micros() - a.as_micros();
        }
    }

    /// A probe was sent to `node`.
    pub fn probe_sent(&mut self, t: SimTime, node: NodeId) {
        if self.in_window(t) {
            self.probes[node.index()] += 1;
        }
    }

    /// Whether a request sent at `t` counts towards request metrics.
    #[inline]
    pub fn in_window(&self, t: SimTime) -> bool {
        t >= self.from && t < self.to
    }

    /// The timeline row of the bucket holding `t`. Time only moves
    /// forward, so nearly every call hits the current bucket: one comparison.
    #[inline]
    fn row(&mut self, t: SimTime) -> &mut [u64] {
        if t.as_micros().wrapping_sub(self.row_from) >= self.bucket_us {
            self.move_row(t);
        }
        &mut self.timeline[self.row_at..self.row_at + self.cols]
    }

    #[cold]
    fn move_row(&mut self, t: SimTime) {
        self.flush_bucket_latency();
        let b = t.as_micros() / self.bucket_us;
        self.row_from = b * self.bucket_us;
        self.row_at = b as usize * self.cols;
        let need = self.row_at + self.cols;
        if self.timeline.len() < need {
            self.timeline.resize(need, 0);
        }
    }

    /// Closes the current bucket's latency percentiles (time only moves
    /// forward: no request ends in it after the row moved on).
    fn flush_bucket_latency(&mut self) {
        self.latency.merge(&self.bucket_latency);
        let h = &mut self.bucket_latency;
        if self.bucket_uncounted.count() > 0 {
            h.merge(&self.bucket_uncounted);
            self.bucket_uncounted.clear();
        }
        if h.count() == 0 {
            return;
        }
        let b = (self.row_from / self.bucket_us) as usize;
        if self.timeline_latency.len() <= b {
            self.timeline_latency.resize(b + 1, (None, None));
        }
        let ms = |v: Option<f64>| v.map(us_to_ms);
        self.timeline_latency[b] = (ms(h.quantile_us(0.5)), ms(h.quantile_us(0.99)));
        h.clear();
    }

    /// A request ended after `latency` (answered or timed out), in the
    /// current timeline bucket. Always inlined: on every answer's path, and
    /// left out of line by some partitions of the crate into codegen units
    /// (8.7 M more instructions on the canonical model when it was).
    #[inline(always)]
    fn ended(&mut self, latency: SimDuration, counted: bool) {
        if counted {
            self.bucket_latency.record(latency);
            if latency > self.fastest_threshold {
                self.count_slow(latency);
            }
        } else {
            self.bucket_uncounted.record(latency);
        }
    }

    #[cold]
    fn count_slow(&mut self, latency: SimDuration) {
        for (th, n) in &mut self.thresholds {
            *n += (latency > *th) as u64;
        }
    }

    #[inline]
    pub fn request_sent(&mut self, t: SimTime, counted: bool) {
        self.requests += counted as u64;
        self.row(t)[0] += 1;
    }

    /// The gateway sent an attempt to `node`; `during_fault`: while one of
    /// its faults was active.
    #[inline]
    pub fn attempt(&mut self, t: SimTime, node: NodeId, counted: bool, during_fault: bool) {
        if counted {
            self.hot[node.index()].attempts += 1;
            self.hot[node.index()].fault_attempts += during_fault as u64;
        }
        self.row(t)[COLS_FIXED + COLS_PER_NODE * node.index() + 1] += 1;
    }

    pub fn failure(&mut self, t: SimTime, node: NodeId, counted: bool) {
        let i = node.index();
        self.hot[i].failures += counted as u64;
        self.row(t)[COLS_FIXED + COLS_PER_NODE * i + 2] += 1;
    }

    /// The gateway answered the client.
    #[inline]
    pub fn answered(
        &mut self,
        t: SimTime,
        status: u16,
        latency: SimDuration,
        by: Option<NodeId>,
        counted: bool,
    ) {
        let ok = (200..300).contains(&status);
        if counted {
            match self.status.get_mut(status as usize) {
                Some(c) => *c += 1,
                None => *self.status_other.entry(status).or_insert(0) += 1,
            }
            self.ok += ok as u64;
            self.errors += !ok as u64;
        }
        let by = if ok { by } else { None };
        let row = self.row(t);
        row[if ok { 1 } else { 2 }] += 1;
        if let Some(n) = by {
            let i = n.index();
            row[COLS_FIXED + COLS_PER_NODE * i] += 1;
            self.hot[i].answered += counted as u64;
            if self.hot[i].awaits_recovery
                && let Some(end) = self.fault_last_end[i]
                && t >= end
            {
                self.recovered_at[i] = Some(t);
                self.hot[i].awaits_recovery = false;
            }
        }
        // after `row(t)`, which closes the previous bucket's latencies
        self.ended(latency, counted);
    }

    /// The client gave up after `latency` (its timeout).
    pub fn timed_out(&mut self, t: SimTime, latency: SimDuration, counted: bool) {
        self.timeouts += counted as u64;
        self.row(t)[3] += 1;
        self.ended(latency, counted);
    }

    /// Applies a policy's notice; `scopes` expands `ScopeSel::All`.
    /// A policy's notice; its scopes are those of the replica whose first
    /// (global) scope is `first_scope`.
    pub fn notice(&mut self, t: SimTime, notice: Notice, replica: usize) {
        let (sel, node, up) = match notice {
            Notice::Ejected { scope, node } => (scope, node, true),
            Notice::Readmitted { scope, node } => (scope, node, false),
            Notice::ProbeRound { duration } => {
                if self.rounds.len() < MAX_INTERVALS {
                    self.rounds.push(duration);
                }
                return;
            }
        };
        let in_fault = self.in_fault(node, t);
        let range = match sel {
            ScopeSel::One(s) => {
                let g = self.layout.scope(replica, s) as usize;
                g..g + 1
            }
            ScopeSel::All => self.layout.scopes_of(replica),
        };
        for s in range {
            let k = node.index() * self.scopes + s;
            if up {
                self.holders[k] += 1;
                if self.holders[k] == 1 {
                    self.since[k] = Some(t);
                    if t == SimTime::ZERO {
                        continue; // out of rotation from the start
                    }
                    self.ejections[node.index()] += 1;
                    let i = node.index();
                    if !in_fault {
                        self.false_ejections[i] += 1;
                    }
                    if self.first_ejection_after_fault[i].is_none()
                        && self.fault_first_start[i].is_some_and(|f| t >= f)
                    {
                        self.first_ejection_after_fault[i] = Some(t);
                    }
                    if let Some(tally) = &mut self.per_replica {
                        let after = self.fault_first_start[i].is_some_and(|f| t >= f);
                        tally.ejected(t, s, node, in_fault, after);
                    }
                    if self.replicas > 1 {
                        let rk = i * self.replicas + self.layout.replica_of(s as Scope);
                        self.replica_ejected[rk] = true;
                        if self.replica_first[rk].is_none()
                            && self.fault_first_start[i].is_some_and(|f| t >= f)
                        {
                            self.replica_first[rk] = Some(t);
                        }
                    }
                }
            } else if self.holders[k] > 0 {
                self.holders[k] -= 1;
                if self.holders[k] == 0
                    && let Some(start) = self.since[k].take()
                {
                    self.close_interval(node, s as u16, start, Some(t));
                }
            }
        }
    }

    fn close_interval(&mut self, node: NodeId, scope: u16, start: SimTime, end: Option<SimTime>) {
        let stop = end.unwrap_or(self.end);
        self.add_ejected_buckets(node, start, stop.min(self.end));
        let a = start.max(self.from);
        let b = stop.min(self.to);
        if b > a {
            self.ejected_us[node.index()] += b.as_micros() - a.as_micros();
            if let Some(tally) = &mut self.per_replica {
                tally.ejected_time(scope as usize, node, b.as_micros() - a.as_micros());
            }
        }
        if self.intervals.len() < MAX_INTERVALS {
            self.intervals.push((node.0, scope, start, end));
        }
    }

    /// Adds `[start, stop)` to `node`'s ejected time in each timeline bucket.
    fn add_ejected_buckets(&mut self, node: NodeId, start: SimTime, stop: SimTime) {
        let (s, e) = (start.as_micros(), stop.as_micros());
        if e <= s {
            return;
        }
        let n = self.names.len();
        let last = ((e - 1) / self.bucket_us) as usize;
        if self.ejected_buckets.len() < (last + 1) * n {
            self.ejected_buckets.resize((last + 1) * n, 0);
        }
        for b in (s / self.bucket_us) as usize..=last {
            let lo = (b as u64 * self.bucket_us).max(s);
            let hi = ((b as u64 + 1) * self.bucket_us).min(e);
            self.ejected_buckets[b * n + node.index()] += hi - lo;
        }
    }

    /// Is `node` ejected by some policy in `scope` right now?
    pub fn is_ejected(&self, node: NodeId, scope: u16) -> bool {
        self.holders[node.index() * self.scopes + scope as usize] > 0
    }

    /// Ends the run early at `t` (an event budget ran out): metrics, the
    /// measurement window and the timeline stop there.
    pub fn cut_at(&mut self, t: SimTime) {
        self.end = self.end.min(t);
        self.to = self.to.min(self.end);
        self.from = self.from.min(self.to);
    }

    pub fn finish(
        mut self,
        model: &str,
        seed: u64,
        clock_phase: SimDuration,
        events: u64,
        unfinished: u64,
    ) -> RunSummary {
        // Close ejections still open at the end.
        for k in 0..self.since.len() {
            if let Some(start) = self.since[k].take() {
                let node = NodeId((k / self.scopes) as u32);
                self.close_interval(node, (k % self.scopes) as u16, start, None);
            }
        }
        self.flush_bucket_latency();
        let end = self.end;
        for i in 0..self.names.len() {
            self.add_busy_time(i, end);
        }
        let total_ok: u64 = self.hot.iter().map(|h| h.answered).sum();
        let window_us = self.to.as_micros() - self.from.as_micros();
        let window_s = window_us as f64 / 1e6;
        let nodes = (0..self.names.len())
            .map(|i| NodeSummary {
                name: self.names[i].clone(),
                attempts: self.hot[i].attempts,
                answered: self.hot[i].answered,
                share: if total_ok > 0 {
                    round6(self.hot[i].answered as f64 / total_ok as f64)
                } else {
                    0.0
                },
                failures: self.hot[i].failures,
                ejections: self.ejections[i],
                ejected_time_s: round6(self.ejected_us[i] as f64 / 1e6 / self.scopes as f64),
                first_ejection_delay_s: self.first_ejection_after_fault[i]
                    .zip(self.fault_first_start[i])
                    .map(|(e, f)| round6(e.saturating_since(f).as_secs_f64())),
                recovery_delay_s: self.recovered_at[i]
                    .zip(self.fault_last_end[i])
                    .map(|(r, f)| round6(r.saturating_since(f).as_secs_f64())),
                false_ejections: self.false_ejections[i],
                fault_attempts: self.hot[i].fault_attempts,
                fault_attempts_ok: self.fault_attempts_ok[i],
                probes: self.probes[i],
                probe_load_per_s: if window_s > 0.0 {
                    round6(self.probes[i] as f64 / window_s)
                } else {
                    0.0
                },
                utilization: match u64::from(self.hot[i].workers) * window_us {
                    0 => 0.0,
                    capacity => round6(self.hot[i].busy_us as f64 / capacity as f64),
                },
                probe_share: match u64::from(self.hot[i].workers) * window_us {
                    0 => 0.0,
                    capacity => round6(self.probe_busy_us[i] as f64 / capacity as f64),
                },
                peak_queue: self.peak_queue[i],
                backlog_refused: self.backlog_refused[i],
                fleet: (self.replicas > 1).then(|| self.node_fleet(i)),
                connections: None,
                warmups: 0,
                warmup_share: None,
            })
            .collect();
        let probe_rounds = {
            let mut v: Vec<u64> = self.rounds.iter().map(|d| d.as_micros()).collect();
            v.sort_unstable();
            let s = |us: u64| round6(us as f64 / 1e6);
            let median = match v.len() {
                0 => None,
                n if n % 2 == 1 => Some(s(v[n / 2])),
                n => Some(round6((v[n / 2 - 1] + v[n / 2]) as f64 / 2e6)),
            };
            RoundSummary {
                rounds: v.len() as u64,
                min_s: v.first().map(|&x| s(x)),
                median_s: median,
                max_s: v.last().map(|&x| s(x)),
            }
        };
        let client = ClientSummary {
            requests: self.requests,
            ok: self.ok,
            errors: self.errors,
            timeouts: self.timeouts,
            unfinished,
            status: (0..STATUS_SLOTS)
                .filter(|&code| self.status[code] > 0)
                .map(|code| (code as u16, self.status[code]))
                .chain(self.status_other.iter().map(|(&k, &v)| (k, v)))
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            latency_ms: LatencySummary::from_hist(&self.latency),
            slower_than: self
                .thresholds
                .iter()
                .map(|&(d, n)| (threshold_label(d), n))
                .collect(),
        };
        let ejection_log = self
            .intervals
            .iter()
            .map(|&(n, scope, s, e)| EjectionRecord {
                node: self.names[n as usize].clone(),
                scope,
                start_s: round6(s.as_secs_f64()),
                end_s: e.map(|e| round6(e.as_secs_f64())),
            })
            .collect();
        let mut timeline = self.build_timeline();
        let replicas = self.per_replica.as_ref().map_or_else(Vec::new, |t| {
            t.finish(&self.names, &self.fault_first_start, &self.fault_last_end)
        });
        // Their last use: the timeline's columns take the names themselves.
        timeline.node_names = std::mem::take(&mut self.names);
        let mut summary = RunSummary {
            model: model.to_string(),
            seed,
            clock_phase_s: round6(clock_phase.as_secs_f64()),
            duration_s: round6(self.end.as_secs_f64()),
            measure_from_s: round6(self.from.as_secs_f64()),
            measure_to_s: round6(self.to.as_secs_f64()),
            events,
            client,
            nodes,
            probe_rounds,
            warnings: vec![],
            fault_start_s: vec![],
            pods: None,
            keys: None,
            queues: None,
            timeline,
            ejection_log,
            replicas,
        };
        summary.warnings = overload_warnings(std::slice::from_ref(&summary));
        summary
    }

    fn build_timeline(&self) -> Timeline {
        let n = self.names.len();
        let cols = COLS_FIXED + COLS_PER_NODE * n;
        let buckets = self.end.as_micros().div_ceil(self.bucket_us) as usize;
        let mut rows: Vec<TimelineRow> = (0..buckets)
            .map(|b| {
                let get = |c: usize| self.timeline.get(b * cols + c).copied().unwrap_or(0);
                TimelineRow {
                    t_s: round6((b as u64 * self.bucket_us) as f64 / 1e6),
                    requests: get(0),
                    ok: get(1),
                    errors: get(2),
                    timeouts: get(3),
                    latency_p50_ms: self.timeline_latency.get(b).and_then(|l| l.0),
                    latency_p99_ms: self.timeline_latency.get(b).and_then(|l| l.1),
                    answered: (0..n)
                        .map(|i| get(COLS_FIXED + COLS_PER_NODE * i))
                        .collect(),
                    attempts: (0..n)
                        .map(|i| get(COLS_FIXED + COLS_PER_NODE * i + 1))
                        .collect(),
                    failures: (0..n)
                        .map(|i| get(COLS_FIXED + COLS_PER_NODE * i + 2))
                        .collect(),
                    ejected: vec![0.0; n],
                }
            })
            .collect();
        let per_bucket = (self.bucket_us * self.scopes as u64) as f64;
        for (b, row) in rows.iter_mut().enumerate() {
            for (i, v) in row.ejected.iter_mut().enumerate() {
                let us = self.ejected_buckets.get(b * n + i).copied().unwrap_or(0);
                *v = round6(us as f64 / per_bucket);
            }
        }
        Timeline {
            bucket_s: self.bucket_us as f64 / 1e6,
            // Given by `finish`, which owns them.
            node_names: Vec::new(),
            rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(m: u64) -> SimTime {
        SimTime::from_micros(m * 1000)
    }

    fn recorder(nodes: usize, end_ms: u64) -> Recorder {
        let names = (0..nodes).map(|i| format!("n{i}")).collect();
        Recorder::new(
            names,
            1,
            ms(end_ms),
            (SimTime::ZERO, ms(end_ms)),
            SimDuration::from_secs(1),
        )
    }

    #[test]
    fn a_timed_out_request_counts_at_the_client_timeout() {
        let mut r = recorder(1, 3000);
        r.latency_thresholds(&[SimDuration::from_millis(100), SimDuration::from_secs(1)]);
        let timeout = SimDuration::from_millis(1500);
        // 998 quick answers and 2 client timeouts, all sent at 0
        for k in 0..998 {
            r.request_sent(SimTime::ZERO, true);
            let lat = SimDuration::from_millis(5);
            r.answered(ms(5), if k % 2 == 0 { 200 } else { 503 }, lat, None, true);
        }
        for _ in 0..2 {
            r.request_sent(SimTime::ZERO, true);
            r.timed_out(ms(1500), timeout, true);
        }
        let s = r.finish("m", 1, SimDuration::ZERO, 0, 0);
        let l = &s.client.latency_ms;
        assert_eq!(l.max, Some(1500.0), "the timeouts are in the percentiles");
        let p999 = l.p999.unwrap();
        assert!((p999 / 1500.0 - 1.0).abs() < 0.02, "p99.9 {p999}");
        assert!((l.p99.unwrap() / 5.0 - 1.0).abs() < 0.02, "p99 {:?}", l.p99);
        assert_eq!(s.client.timeouts, 2);
        assert_eq!(s.client.errors, 499, "an error counts at its answer");
        assert_eq!(s.client.slower_than["100ms"], 2);
        assert_eq!(s.client.slower_than["1s"], 2);
        // per bucket: the answers end in second 0, the timeouts in second 1
        let rows = &s.timeline.rows;
        assert_eq!(rows[0].latency_p99_ms, Some(5.0));
        assert_eq!(rows[1].latency_p50_ms, Some(1500.0));
        assert_eq!(rows[2].latency_p50_ms, None, "nothing ended in second 2");
    }

    #[test]
    fn slower_than_is_strict_and_labels_have_no_dot() {
        let mut r = recorder(1, 1000);
        r.latency_thresholds(&[
            SimDuration::from_millis(1500),
            SimDuration::from_millis(100),
        ]);
        for lat in [100, 101, 1500, 1501] {
            r.answered(ms(1), 200, SimDuration::from_millis(lat), None, true);
        }
        let s = r.finish("m", 1, SimDuration::ZERO, 0, 0);
        assert_eq!(s.client.slower_than["100ms"], 3);
        assert_eq!(s.client.slower_than["1500ms"], 1);
        assert_eq!(threshold_label(SimDuration::from_micros(250)), "250us");
        assert_eq!(threshold_label(SimDuration::from_secs(2)), "2s");
    }

    #[test]
    fn utilization_is_busy_worker_time_over_the_window() {
        let mut r = Recorder::new(
            vec!["a".into(), "b".into()],
            1,
            ms(10_000),
            (ms(2000), ms(10_000)),
            SimDuration::from_secs(1),
        );
        let (a, b) = (NodeId(0), NodeId(1));
        r.node_workers(a, 4);
        r.node_workers(b, 4);
        // a: all 4 workers busy from 1 s to the end (saturated in the window)
        r.workers_busy(ms(1000), a, 4);
        // b: 2 of 4 busy from 4 s to 8 s
        r.workers_busy(ms(4000), b, 2);
        r.workers_busy(ms(8000), b, 0);
        r.queue_len(ms(1500), a, 900); // before the window: not a peak
        r.queue_len(ms(3000), a, 511);
        r.backlog_refused(a, true);
        r.backlog_refused(a, false);
        let s = r.finish("m", 1, SimDuration::ZERO, 0, 0);
        assert_eq!(s.nodes[0].utilization, 1.0);
        assert_eq!(s.nodes[1].utilization, 0.25);
        assert_eq!(s.nodes[0].peak_queue, 511);
        assert_eq!(s.nodes[0].backlog_refused, 1);
        let codes: Vec<&str> = s.warnings.iter().map(|w| w.code.as_str()).collect();
        assert_eq!(codes, ["overload", "overload"], "{:?}", s.warnings);
        assert!(
            s.warnings[0]
                .message
                .contains("node a: workers busy 100.0%")
        );
        assert!(s.warnings[1].message.contains("1 connections dropped"));
    }

    #[test]
    fn unfinished_requests_over_one_percent_warn() {
        let run = |unfinished: u64| {
            let mut r = recorder(1, 1000);
            for _ in 0..1000 {
                r.request_sent(ms(1), true);
            }
            r.finish("m", 1, SimDuration::ZERO, 0, unfinished)
        };
        assert!(run(10).warnings.is_empty(), "1% is not over 1%");
        let runs = [run(11), run(0), run(500)];
        assert_eq!(runs[0].warnings.len(), 1);
        let w = overload_warnings(&runs);
        assert_eq!(w.len(), 1);
        assert_eq!(
            w[0].message,
            "50.0% of requests (500) still unfinished at the end (over 1%) (in 2 of 3 runs)"
        );
    }

    #[test]
    fn ejection_intervals_nest_across_policies_and_clip_to_the_window() {
        let names = vec!["a".to_string()];
        let mut r = Recorder::new(
            names,
            1,
            ms(10_000),
            (ms(1000), ms(9000)),
            SimDuration::from_secs(1),
        );
        let a = NodeId(0);
        r.fault_window(a, ms(500), Some(ms(2000)));
        r.notice(
            ms(600),
            Notice::Ejected {
                scope: ScopeSel::All,
                node: a,
            },
            0,
        );
        r.notice(
            ms(700),
            Notice::Ejected {
                scope: ScopeSel::One(0),
                node: a,
            },
            0,
        );
        r.notice(
            ms(800),
            Notice::Readmitted {
                scope: ScopeSel::All,
                node: a,
            },
            0,
        );
        assert!(r.is_ejected(a, 0), "still held by the second policy");
        r.notice(
            ms(3000),
            Notice::Readmitted {
                scope: ScopeSel::One(0),
                node: a,
            },
            0,
        );
        let s = r.finish("m", 1, SimDuration::ZERO, 0, 0);
        assert_eq!(s.nodes[0].ejections, 1);
        assert_eq!(s.nodes[0].ejected_time_s, 2.0, "clipped to [1s, 3s)");
        assert_eq!(s.nodes[0].first_ejection_delay_s, Some(0.1));
        assert_eq!(s.timeline.rows[0].ejected[0], 0.4);
        assert_eq!(s.timeline.rows[2].ejected[0], 1.0);
    }

    /// The ejection log keeps at most `MAX_INTERVALS` intervals; the
    /// timeline's ejected fraction counts every one (a fleet ejects often).
    #[test]
    fn timeline_counts_ejections_beyond_the_log_cap() {
        let mut r = recorder(1, 200_000);
        let a = NodeId(0);
        // 150,000 ejections of 1 ms, one every 4/3 ms over 200 s.
        let ejections = MAX_INTERVALS + 50_000;
        for k in 0..ejections as u64 {
            let t = ms(1 + k * 1000 / 750);
            let scope = ScopeSel::All;
            r.notice(t, Notice::Ejected { scope, node: a }, 0);
            r.notice(
                t + SimDuration::from_millis(1),
                Notice::Readmitted { scope, node: a },
                0,
            );
        }
        let s = r.finish("m", 1, SimDuration::ZERO, 0, 0);
        assert_eq!(s.ejection_log.len(), MAX_INTERVALS);
        let total: f64 = s.timeline.rows.iter().map(|row| row.ejected[0]).sum();
        // 1 ms each, in 1 s buckets: the total of fractions is ejections / 1000.
        assert!((total - ejections as f64 / 1000.0).abs() < 1e-3, "{total}");
    }
}
