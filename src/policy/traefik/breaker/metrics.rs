//! The counters the breaker's condition reads: `vulcand/oxy`
//! `memmetrics.RTMetrics` (roundtrip.go) with its defaults.
//!
//! - `RollingCounter` (counter.go): 10 buckets of 1 s, keyed by the
//!   wall-clock second (`Unix() % 10`); `cleanup` zeroes the buckets of the
//!   seconds since the last update, so a count covers the current second and
//!   the nine before it. One counter for all answers, one for network
//!   errors (502 and 504), one per status.
//! - `RollingHDRHistogram` (histogram.go): 6 HDR histograms (1 µs to 1 h,
//!   2 significant figures), the current one rotated when a record comes 10 s
//!   or more after the last rotation (once, however long it was); the
//!   quantile is read from all six merged (`hdrhistogram-go`
//!   `ValueAtPercentile`). Kept only when the condition asks for a latency.

use super::expression::{Metric, Values};
use crate::engine::{SimDuration, SimTime};

/// `RollingCounter` with 10 buckets of a second.
#[derive(Clone, Debug, Default)]
pub struct Rolling {
    counts: [u64; 10],
    /// The wall-clock second each bucket holds.
    second: [i64; 10],
}

impl Rolling {
    fn bucket(s: i64) -> usize {
        s.rem_euclid(10) as usize
    }

    pub fn inc(&mut self, now_s: i64) {
        let b = Self::bucket(now_s);
        if self.second[b] != now_s || self.counts[b] == 0 {
            self.second[b] = now_s;
            self.counts[b] = 0;
        }
        self.counts[b] += 1;
    }

    /// `Count()`: the buckets of the last 10 seconds.
    pub fn count(&self, now_s: i64) -> u64 {
        (0..10)
            .filter(|&b| {
                self.counts[b] > 0 && self.second[b] > now_s - 10 && self.second[b] <= now_s
            })
            .map(|b| self.counts[b])
            .sum()
    }
}

/// An HDR histogram of microseconds from 1 to 3.6e9 with 2 significant
/// figures (`hdrhistogram.New(1, 3600000000, 2)`): 256 sub-buckets, the
/// upper 128 of each further power of two.
#[derive(Clone, Debug, Default)]
pub struct Hdr {
    /// (counts index, count), sorted by index.
    counts: Vec<(u32, u64)>,
    total: u64,
}

const SUB_HALF_MAG: u32 = 7;
const SUB_MASK: u64 = 255;
const HIGHEST: u64 = 3_600_000_000;

impl Hdr {
    fn index_of(v: u64) -> u32 {
        let bucket = (64 - (v | SUB_MASK).leading_zeros()) - (SUB_HALF_MAG + 1);
        let sub = (v >> bucket) as u32;
        ((bucket + 1) << SUB_HALF_MAG) + sub - (1 << SUB_HALF_MAG)
    }

    /// The highest value equivalent to those counted at `idx`.
    fn highest_at(idx: u32) -> u64 {
        let (bucket, sub) = if idx < 256 {
            (0, idx)
        } else {
            let b = idx / 128 - 1;
            (b, idx - b * 128)
        };
        ((sub as u64) << bucket) + (1u64 << bucket) - 1
    }

    pub fn record(&mut self, us: u64) {
        if us > HIGHEST {
            return; // "value is too large to be recorded"
        }
        let idx = Self::index_of(us);
        match self.counts.binary_search_by_key(&idx, |&(i, _)| i) {
            Ok(k) => self.counts[k].1 += 1,
            Err(k) => self.counts.insert(k, (idx, 1)),
        }
        self.total += 1;
    }

    fn merge(&mut self, o: &Hdr) {
        for &(idx, c) in &o.counts {
            match self.counts.binary_search_by_key(&idx, |&(i, _)| i) {
                Ok(k) => self.counts[k].1 += c,
                Err(k) => self.counts.insert(k, (idx, c)),
            }
        }
        self.total += o.total;
    }

    /// `ValueAtPercentile(q)`, q in percent.
    pub fn value_at(&self, q: f64) -> u64 {
        let q = q.min(100.0);
        let target = ((q / 100.0) * self.total as f64 + 0.5) as u64;
        let mut seen = 0;
        let mut at = 0;
        for &(idx, c) in &self.counts {
            if seen >= target {
                break;
            }
            seen += c;
            at = idx;
        }
        if target == 0 {
            // The loop never ran: value 0 (also for q = 0).
            return 0;
        }
        Self::highest_at(at)
    }
}

/// `RollingHDRHistogram`: 6 histograms rotated every 10 s.
#[derive(Clone, Debug)]
pub struct RollingHdr {
    buckets: Vec<Hdr>,
    idx: usize,
    /// `None`: never rotated (Go's zero time, long ago).
    last_roll: Option<SimTime>,
}

const HIST_PERIOD: SimDuration = SimDuration::from_secs(10);

impl Default for RollingHdr {
    fn default() -> Self {
        RollingHdr {
            buckets: vec![Hdr::default(); 6],
            idx: 0,
            last_roll: None,
        }
    }
}

impl RollingHdr {
    pub fn record(&mut self, now: SimTime, us: u64) {
        if self
            .last_roll
            .is_none_or(|r| now.saturating_since(r) >= HIST_PERIOD)
        {
            self.idx = (self.idx + 1) % self.buckets.len();
            self.buckets[self.idx] = Hdr::default();
            self.last_roll = Some(now);
        }
        self.buckets[self.idx].record(us);
    }

    pub fn merged(&self) -> Hdr {
        let mut m = Hdr::default();
        for b in &self.buckets {
            m.merge(b);
        }
        m
    }

    pub fn reset(&mut self, now: SimTime) {
        *self = RollingHdr::default();
        self.last_roll = Some(now);
    }
}

/// `RTMetrics`: the counters of one breaker.
#[derive(Clone, Debug, Default)]
pub struct RtMetrics {
    total: Rolling,
    net_errors: Rolling,
    /// Per status seen: its counter (oxy's map, created on first use).
    statuses: Vec<(u16, Rolling)>,
    /// Only when the condition reads a latency.
    histogram: Option<RollingHdr>,
}

impl RtMetrics {
    pub fn new(latency: bool) -> Self {
        RtMetrics {
            histogram: latency.then(RollingHdr::default),
            ..Default::default()
        }
    }

    /// `Record(code, duration)`.
    pub fn record(&mut self, now: SimTime, now_s: i64, status: u16, latency: SimDuration) {
        self.total.inc(now_s);
        if status == 502 || status == 504 {
            self.net_errors.inc(now_s);
        }
        match self.statuses.iter_mut().find(|(s, _)| *s == status) {
            Some((_, c)) => c.inc(now_s),
            None => {
                let mut c = Rolling::default();
                c.inc(now_s);
                self.statuses.push((status, c));
            }
        }
        if let Some(h) = &mut self.histogram {
            h.record(now, latency.as_micros());
        }
    }

    /// `Reset()`.
    pub fn reset(&mut self, now: SimTime) {
        self.total = Rolling::default();
        self.net_errors = Rolling::default();
        self.statuses.clear();
        if let Some(h) = &mut self.histogram {
            h.reset(now);
        }
    }

    pub fn total(&self, now_s: i64) -> u64 {
        self.total.count(now_s)
    }

    /// `NetworkErrorRatio()`.
    pub fn network_error_ratio(&self, now_s: i64) -> f64 {
        let t = self.total.count(now_s);
        if t == 0 {
            return 0.0;
        }
        self.net_errors.count(now_s) as f64 / t as f64
    }

    /// `ResponseCodeRatio(a, b, c, d)`.
    pub fn response_code_ratio(&self, now_s: i64, a: u16, b: u16, c: u16, d: u16) -> f64 {
        let (mut x, mut y) = (0, 0);
        for (s, r) in &self.statuses {
            let n = r.count(now_s);
            if (a..b).contains(s) {
                x += n;
            }
            if (c..d).contains(s) {
                y += n;
            }
        }
        if y == 0 { 0.0 } else { x as f64 / y as f64 }
    }

    /// `LatencyAtQuantileMS(q)`: whole milliseconds.
    pub fn latency_ms(&self, q: f64) -> i64 {
        self.histogram
            .as_ref()
            .map_or(0, |h| (h.merged().value_at(q) / 1000) as i64)
    }

    /// The metrics as the condition reads them at wall-clock second `now_s`.
    pub fn at(&self, now_s: i64) -> At<'_> {
        At { m: self, now_s }
    }
}

/// [`RtMetrics`] read at one instant.
pub struct At<'a> {
    m: &'a RtMetrics,
    now_s: i64,
}

impl Values for At<'_> {
    fn float(&mut self, m: Metric) -> f64 {
        match m {
            Metric::NetworkErrorRatio => self.m.network_error_ratio(self.now_s),
            Metric::ResponseCodeRatio(a, b, c, d) => {
                self.m.response_code_ratio(self.now_s, a, b, c, d)
            }
            _ => self.int(m) as f64,
        }
    }

    fn int(&mut self, m: Metric) -> i64 {
        match m {
            Metric::LatencyAtQuantileMs(q) => self.m.latency_ms(q),
            Metric::RequestThreshold => self.m.total(self.now_s) as i64,
            _ => self.float(m) as i64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rolling_counter_covers_this_second_and_the_nine_before() {
        let mut r = Rolling::default();
        r.inc(100);
        r.inc(100);
        r.inc(105);
        assert_eq!(r.count(105), 3);
        assert_eq!(r.count(109), 3);
        assert_eq!(r.count(110), 1, "second 100 left the window");
        assert_eq!(r.count(115), 0);
        r.inc(110);
        assert_eq!(r.count(110), 2, "bucket 0 reused for second 110");
    }

    #[test]
    fn hdr_quantiles_are_the_highest_equivalent_value_of_their_bucket() {
        let mut h = Hdr::default();
        for v in 1..=100u64 {
            h.record(v * 1000); // 1 ms .. 100 ms
        }
        // 50 % of 100 values: the 50th, 50 ms, in a bucket of 256 µs
        // (50000 >> 8 = 195 → 195·256 .. +255).
        assert_eq!(h.value_at(50.0), 195 * 256 + 255);
        assert_eq!(h.value_at(100.0) / 1000, 100);
        assert_eq!(Hdr::default().value_at(99.0), 0, "empty: 0");
        let mut small = Hdr::default();
        small.record(7);
        assert_eq!(small.value_at(50.0), 7, "unit resolution below 256 µs");
    }

    #[test]
    fn rtmetrics_ratios_over_the_window() {
        let mut m = RtMetrics::new(false);
        let t = SimTime::ZERO;
        for (s, status) in [(0, 200), (0, 502), (1, 504), (2, 500), (3, 200)] {
            m.record(t, s, status, SimDuration::ZERO);
        }
        assert!((m.network_error_ratio(3) - 0.4).abs() < 1e-12);
        assert!((m.response_code_ratio(3, 500, 600, 0, 600) - 0.6).abs() < 1e-12);
        assert_eq!(
            m.response_code_ratio(3, 500, 600, 0, 100),
            0.0,
            "no denominator"
        );
        assert_eq!(m.total(10), 3, "second 0 gone at 10");
        m.reset(t);
        assert_eq!(m.total(3), 0);
    }
}
