//! What the log says, gathered in one pass in bounded memory: the
//! requests' arrivals and answers per time bin, and per node its attempts
//! in start order (a reorder buffer puts the completion-ordered lines back
//! in order), which become runs of hard failures, stalls, gaps in its
//! traffic and per-bin counts of answers, 5xx statuses and latencies.
//!
//! Memory: the bins double their width when there are more than
//! [`MAX_BINS`] (so a log of any length keeps at most that many per node);
//! the reorder buffer holds the attempts that started within the longest
//! request time seen (at most [`MAX_PENDING`]); the runs, stalls and gaps
//! grow with the number of incidents, not of lines.

use super::chain::{Attempt, Outcome, Request, Server};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// The narrowest time bin, seconds.
pub const BIN_S: f64 = 0.1;
/// Bins per series before their width doubles.
pub const MAX_BINS: usize = 4096;
/// Attempts waiting in the reorder buffer at most.
pub const MAX_PENDING: usize = 1 << 21;
/// Incidents (runs, stalls, gaps) kept per node at most.
pub const MAX_INCIDENTS: usize = 100_000;
/// An answer slower than this (and than [`STALL_FACTOR`] × the node's
/// median so far) means the node was not answering: a stall.
pub const STALL_MIN_S: f64 = 1.0;
pub const STALL_FACTOR: f64 = 20.0;

/// Global counts in one bin.
#[derive(Clone, Copy, Debug, Default)]
pub struct GlobalBin {
    pub arrivals: u32,
}

/// One node's counts in one bin (attempts by start time).
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeBin {
    pub attempts: u32,
    /// Answered without stalling (any status).
    pub answered: u32,
    /// Of those, 5xx: 500, 502, 503, 504 and others.
    pub s5xx: [u32; 5],
    pub hard: u32,
    pub stalled: u32,
    /// Sum and count of ln(latency) of the answers (slow windows).
    pub ln_sum: f64,
    pub ln_n: u32,
}

impl NodeBin {
    fn merge(&mut self, o: &NodeBin) {
        self.attempts += o.attempts;
        self.answered += o.answered;
        for i in 0..5 {
            self.s5xx[i] += o.s5xx[i];
        }
        self.hard += o.hard;
        self.stalled += o.stalled;
        self.ln_sum += o.ln_sum;
        self.ln_n += o.ln_n;
    }
    pub fn errors(&self) -> u32 {
        self.s5xx.iter().sum()
    }
}

/// Consecutive hard failures of one kind (no answer between them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HardRun {
    pub kind: Outcome,
    /// Starts of the first and last failure (seconds since the origin).
    pub first: f64,
    pub last: f64,
    pub n: u32,
    /// End of the last answer before, start of the first answer after.
    pub before: Option<f64>,
    pub after: Option<f64>,
}

/// A time the node did not answer: attempts that waited for it overlap.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stall {
    /// First waiting attempt's start; latest end of a wait.
    pub from: f64,
    pub to: f64,
    pub n: u32,
    /// Waits that ended in an answer: the earliest and latest such end
    /// (together, the node's release).
    pub answered: u32,
    pub release_lo: f64,
    pub release_hi: f64,
    pub before: Option<f64>,
    pub after: Option<f64>,
}

/// A time no attempt went to the node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gap {
    /// End of the attempt before; start of the attempt after.
    pub from: f64,
    pub to: f64,
    /// The attempt before failed (hard or 5xx).
    pub after_failure: bool,
    /// The attempt after was answered with a non-5xx status.
    pub ended_by_answer: bool,
}

/// Everything gathered about one node.
#[derive(Clone, Debug, Default)]
pub struct NodeTrack {
    pub bins: Vec<NodeBin>,
    /// Answer latencies, log-spaced buckets.
    pub latency: crate::stats::Histogram,
    pub attempts: u64,
    pub answered_2xx: u64,
    pub runs: Vec<HardRun>,
    pub stalls: Vec<Stall>,
    pub gaps: Vec<Gap>,
    /// Health checks seen (HAProxy): (time, outcome).
    pub checks: Vec<(f64, Outcome)>,
    /// `Server be/A is DOWN|UP` lines: (time, up).
    pub states: Vec<(f64, bool)>,
    /// The first attempt's start, the last attempt's start and end.
    pub first_start: Option<f64>,
    pub last_start: f64,
    pub last_end: f64,
    last_failed: bool,
    last_answer_end: Option<f64>,
    run: Option<HardRun>,
    stall: Option<Stall>,
    /// Incidents not kept past [`MAX_INCIDENTS`].
    pub dropped: u64,
    /// The median answer latency so far (refreshed now and then).
    median_ms: Option<f64>,
}

/// One attempt waiting in the reorder buffer.
#[derive(Clone, Copy, Debug)]
struct Pending {
    start: f64,
    seq: u64,
    node: usize,
    duration: f64,
    outcome: Outcome,
    probe: bool,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    /// Reversed: the heap pops the earliest start.
    fn cmp(&self, o: &Self) -> Ordering {
        o.start
            .total_cmp(&self.start)
            .then_with(|| o.seq.cmp(&self.seq))
    }
}

/// The one-pass collector.
#[derive(Debug)]
pub struct Collector {
    /// Epoch seconds of t = 0.
    pub origin: f64,
    pub width: f64,
    pub global: Vec<GlobalBin>,
    pub nodes: Vec<NodeTrack>,
    heap: BinaryHeap<Pending>,
    seq: u64,
    /// The latest end seen, and the longest request time (the reorder horizon).
    latest_end: f64,
    horizon: f64,
    /// Attempts that came out of order by more than the horizon.
    pub late: u64,
    /// Requests that started before the origin (counted at 0).
    pub before_origin: u64,
}

impl Collector {
    pub fn new(origin: f64) -> Collector {
        Collector {
            origin,
            width: BIN_S,
            global: vec![],
            nodes: vec![],
            heap: BinaryHeap::new(),
            seq: 0,
            latest_end: f64::NEG_INFINITY,
            horizon: 1.0,
            late: 0,
            before_origin: 0,
        }
    }

    fn rel(&mut self, t: f64) -> f64 {
        t - self.origin
    }

    fn bin_of(&mut self, t: f64) -> usize {
        let mut i = (t.max(0.0) / self.width) as usize;
        while i >= MAX_BINS {
            self.coarsen();
            i = (t.max(0.0) / self.width) as usize;
        }
        i
    }

    /// Halves the number of bins of every series (doubling their width).
    fn coarsen(&mut self) {
        self.width *= 2.0;
        let g = std::mem::take(&mut self.global);
        self.global = g
            .chunks(2)
            .map(|c| GlobalBin {
                arrivals: c.iter().map(|b| b.arrivals).sum(),
            })
            .collect();
        for n in &mut self.nodes {
            let b = std::mem::take(&mut n.bins);
            n.bins = b
                .chunks(2)
                .map(|c| {
                    let mut m = c[0];
                    if let Some(x) = c.get(1) {
                        m.merge(x);
                    }
                    m
                })
                .collect();
        }
    }

    fn node(&mut self, i: usize) -> &mut NodeTrack {
        while self.nodes.len() <= i {
            self.nodes.push(NodeTrack::default());
        }
        &mut self.nodes[i]
    }

    /// A request: its arrival counted, its attempts queued for their node.
    pub fn request(&mut self, r: &Request) {
        let start = self.rel(r.start);
        if start < 0.0 {
            self.before_origin += 1;
        }
        let i = self.bin_of(start);
        if self.global.len() <= i {
            self.global.resize(i + 1, GlobalBin::default());
        }
        self.global[i].arrivals += 1;
        let end = self.rel(r.end);
        self.horizon = self.horizon.max(r.end - r.start + 1.0).min(600.0);
        self.latest_end = self.latest_end.max(end);
        for a in &r.attempts {
            if let Server::Node(n) = a.server {
                self.push(n, a, false);
            }
        }
        self.release(false);
    }

    /// A health check's result at `at` (epoch seconds).
    pub fn check(&mut self, node: usize, at: f64, outcome: Outcome) {
        let t = self.rel(at);
        self.node(node).checks.push((t, outcome));
        let a = Attempt {
            server: Server::Node(node),
            start: at,
            duration: 0.0,
            outcome,
        };
        self.push(node, &a, true);
    }

    /// A server state line (HAProxy).
    pub fn state(&mut self, node: usize, at: f64, up: bool) {
        let t = self.rel(at);
        self.node(node).states.push((t, up));
    }

    fn push(&mut self, node: usize, a: &Attempt, probe: bool) {
        self.seq += 1;
        let p = Pending {
            start: a.start - self.origin,
            seq: self.seq,
            node,
            duration: a.duration,
            outcome: a.outcome,
            probe,
        };
        self.heap.push(p);
    }

    /// Hands the attempts that can no longer be preceded by a later line
    /// (or all of them, at the end) to their nodes, in start order.
    pub fn release(&mut self, all: bool) {
        let until = self.latest_end - self.horizon;
        while let Some(p) = self.heap.peek() {
            if !(all || p.start < until || self.heap.len() > MAX_PENDING) {
                break;
            }
            let p = self.heap.pop().expect("peeked");
            self.attempt(p);
        }
    }

    fn attempt(&mut self, p: Pending) {
        let i = self.bin_of(p.start);
        let n = self.node(p.node);
        let late = p.start < n.last_start - 1e-9 && n.first_start.is_some();
        if late {
            // Out of order beyond the horizon.
            self.late += 1;
        }
        let n = self.node(p.node);
        if n.attempts.is_power_of_two() || n.attempts % 4096 == 0 {
            n.median_ms = n.latency.quantile_us(0.5).map(|us| us / 1000.0);
        }
        let median_ms = n.median_ms;
        n.track(p, i, median_ms);
    }
}

impl NodeTrack {
    fn bin(&mut self, i: usize) -> &mut NodeBin {
        if self.bins.len() <= i {
            self.bins.resize(i + 1, NodeBin::default());
        }
        &mut self.bins[i]
    }

    fn keep<T>(list: &mut Vec<T>, x: T, dropped: &mut u64) {
        if list.len() < MAX_INCIDENTS {
            list.push(x);
        } else {
            *dropped += 1;
        }
    }

    fn close_run(&mut self, after: Option<f64>) {
        if let Some(mut r) = self.run.take() {
            r.after = after;
            Self::keep(&mut self.runs, r, &mut self.dropped);
        }
    }

    fn close_stall(&mut self, after: Option<f64>) {
        if let Some(mut s) = self.stall.take() {
            s.after = after;
            Self::keep(&mut self.stalls, s, &mut self.dropped);
        }
    }

    /// Closes what is open at the end of the log.
    pub fn finish(&mut self) {
        self.close_run(None);
        self.close_stall(None);
    }

    fn track(&mut self, p: Pending, bin: usize, median_ms: Option<f64>) {
        let (start, end) = (p.start, p.start + p.duration);
        let stall_s = STALL_MIN_S.max(median_ms.map_or(0.0, |m| STALL_FACTOR * m / 1000.0));
        let waited = match p.outcome {
            Outcome::ReadTimeout => true,
            Outcome::Answered(_) | Outcome::Aborted => p.duration >= stall_s,
            _ => false,
        };
        if !p.probe {
            if let Some(_first) = self.first_start {
                let gap = start - self.last_end;
                let rate = self.attempts as f64 / (start - _first).max(1e-3);
                if gap > 0.25_f64.max(8.0 / rate.max(1e-9)) {
                    let g = Gap {
                        from: self.last_end,
                        to: start,
                        after_failure: self.last_failed,
                        ended_by_answer: matches!(p.outcome, Outcome::Answered(c) if c < 500),
                    };
                    Self::keep(&mut self.gaps, g, &mut self.dropped);
                }
            } else {
                self.first_start = Some(start);
            }
            self.attempts += 1;
            self.last_start = self.last_start.max(start);
            self.last_end = self.last_end.max(end);
            self.last_failed = p.outcome.is_hard_failure()
                || waited
                || matches!(p.outcome, Outcome::Answered(c) if c >= 500);
            let b = self.bin(bin);
            b.attempts += 1;
        }
        if waited {
            if !p.probe {
                self.bin(bin).stalled += 1;
                if matches!(p.outcome, Outcome::Answered(c) if (200..300).contains(&c)) {
                    self.answered_2xx += 1;
                }
            }
            let answered = matches!(p.outcome, Outcome::Answered(_));
            let answered_since = self
                .stall
                .is_some_and(|s| self.last_answer_end.is_some_and(|e| e > s.from));
            match &mut self.stall {
                Some(s) if start <= s.to + 0.5 || !answered_since => {
                    s.to = s.to.max(end);
                    s.n += 1;
                    if answered {
                        if s.answered == 0 {
                            s.release_lo = end;
                            s.release_hi = end;
                        }
                        s.answered += 1;
                        s.release_lo = s.release_lo.min(end);
                        s.release_hi = s.release_hi.max(end);
                    }
                }
                _ => {
                    self.close_stall(Some(start));
                    self.stall = Some(Stall {
                        from: start,
                        to: end,
                        n: 1,
                        answered: u32::from(answered),
                        release_lo: end,
                        release_hi: end,
                        before: self.last_answer_end,
                        after: None,
                    });
                }
            }
            return;
        }
        match p.outcome {
            Outcome::Answered(code) => {
                if !p.probe {
                    let b = self.bin(bin);
                    b.answered += 1;
                    if code >= 500 {
                        let k = match code {
                            500 => 0,
                            502 => 1,
                            503 => 2,
                            504 => 3,
                            _ => 4,
                        };
                        b.s5xx[k] += 1;
                    }
                    if p.duration > 0.0 {
                        b.ln_sum += p.duration.ln();
                        b.ln_n += 1;
                    }
                    self.latency
                        .record(crate::engine::SimDuration::from_secs_f64(p.duration));
                    if (200..300).contains(&code) {
                        self.answered_2xx += 1;
                    }
                }
                self.close_run(Some(start));
                if self.stall.is_some_and(|s| start > s.from) {
                    self.close_stall(Some(start));
                }
                self.last_answer_end = Some(self.last_answer_end.map_or(end, |e| e.max(end)));
            }
            Outcome::Aborted => {}
            kind => {
                if !p.probe {
                    self.bin(bin).hard += 1;
                }
                match &mut self.run {
                    Some(r) if r.kind == kind => {
                        r.last = r.last.max(start);
                        r.n += 1;
                    }
                    _ => {
                        self.close_run(Some(start));
                        self.run = Some(HardRun {
                            kind,
                            first: start,
                            last: start,
                            n: 1,
                            before: self.last_answer_end,
                            after: None,
                        });
                    }
                }
            }
        }
    }
}
