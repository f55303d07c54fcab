//! Statistics over replications, in one place: the median, quantiles and the
//! `{median, min, max, mean, n}` that `summary.json`, `points.csv` and
//! `hcsim reproduce` report. Values are rounded to 6 decimals so that output
//! files are stable and readable.

pub mod mann_whitney;

use crate::engine::SimDuration;
use serde::{Deserialize, Serialize};

/// Rounds to 6 decimals so that JSON output is stable and readable.
pub fn round6(x: f64) -> f64 {
    // A whole number (most figures are counts) is its own rounding: below
    // 9e9, x * 1e6 is exact and so is its quotient by 1e6. `round` is a
    // library call on x86-64 without SSE4.1; this test is two instructions.
    if x.abs() < 9.0e9 && (x as i64) as f64 == x {
        return x;
    }
    (x * 1e6).round() / 1e6
}

/// The median (the mean of the middle two for an even count); `None` if empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    median_of_sorted(&v)
}

fn median_of_sorted(v: &[f64]) -> Option<f64> {
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The quantile `q` with linear interpolation between order statistics (R's
/// type 7, numpy's default), so that `quantile(0.5)` is the median.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// One metric over the replications of a run: how `summary.json` writes
/// every metric. The fields are in the file's (alphabetical) order. A
/// replication without a value (a node never ejected has no ejection delay)
/// is left out of `n`. Its `Serialize` (those five fields, in this order)
/// is beside the JSON writer of the output layer, which writes a spread
/// without serde's per-field calls.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
pub struct Spread {
    pub max: Option<f64>,
    pub mean: Option<f64>,
    pub median: Option<f64>,
    pub min: Option<f64>,
    /// Replications that had a value.
    pub n: usize,
}

impl Spread {
    /// Every value was 0 (or there was none): a metric that did not apply.
    pub fn is_zero(&self) -> bool {
        self.max.is_none_or(|m| m == 0.0) && self.min.is_none_or(|m| m == 0.0)
    }

    pub fn of(xs: &[f64]) -> Spread {
        Spread::of_iter(xs.iter().copied())
    }

    /// The spread of `xs`, sorted on the stack when they are few (one per
    /// replication: a summary of 10,000 nodes computes 200,000 spreads).
    pub fn of_iter(xs: impl IntoIterator<Item = f64>) -> Spread {
        // One replication (the common case): nothing to sort or to keep.
        let mut xs = xs.into_iter();
        let Some(first) = xs.next() else {
            return Spread::default();
        };
        let Some(second) = xs.next() else {
            return Spread::of_sorted(&[first]);
        };
        const STACK: usize = 32;
        let mut stack = [0.0; STACK];
        stack[..2].copy_from_slice(&[first, second]);
        let mut n = 2;
        let mut heap: Vec<f64> = Vec::new();
        for x in xs {
            if n < STACK {
                stack[n] = x;
                n += 1;
            } else {
                if heap.is_empty() {
                    heap.extend_from_slice(&stack);
                }
                heap.push(x);
            }
        }
        let v: &mut [f64] = if heap.is_empty() {
            &mut stack[..n]
        } else {
            &mut heap
        };
        v.sort_by(f64::total_cmp);
        Spread::of_sorted(v)
    }

    fn of_sorted(v: &[f64]) -> Spread {
        let Some(median) = median_of_sorted(v) else {
            return Spread::default();
        };
        let n = v.len();
        Spread {
            max: Some(round6(v[n - 1])),
            mean: Some(round6(v.iter().sum::<f64>() / n as f64)),
            median: Some(round6(median)),
            min: Some(round6(v[0])),
            n,
        }
    }

    /// The values that are present, as one spread.
    pub fn of_options(xs: impl IntoIterator<Item = Option<f64>>) -> Spread {
        Spread::of_iter(xs.into_iter().flatten())
    }

    /// Did the replications disagree?
    pub fn varies(&self) -> bool {
        matches!((self.min, self.max), (Some(lo), Some(hi)) if (hi - lo).abs() > 1e-9)
    }
}

/// One metric over the replications of a sweep's point: a [`Spread`] and the
/// 5th and 95th percentiles, as `points.csv` and `results.json` write them.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Stats {
    pub median: Option<f64>,
    pub mean: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub p5: Option<f64>,
    pub p95: Option<f64>,
    /// Runs that had a value.
    pub n: usize,
}

impl Stats {
    /// The columns of `points.csv`, in order.
    pub const FIELDS: [&'static str; 7] = ["median", "mean", "min", "max", "p5", "p95", "n"];

    /// Median, mean, min and max exactly as `hcsim run` computes them (so a
    /// point equals `hcsim run --reps` on its model), plus p5 and p95.
    pub fn of(xs: &[f64]) -> Stats {
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        let s = Spread::of_sorted(&sorted);
        Stats {
            median: s.median,
            mean: s.mean,
            min: s.min,
            max: s.max,
            p5: quantile(&sorted, 0.05).map(round6),
            p95: quantile(&sorted, 0.95).map(round6),
            n: xs.len(),
        }
    }

    /// The median, min, max, mean and n, as a run's summary has them.
    pub fn spread(&self) -> Spread {
        Spread {
            max: self.max,
            mean: self.mean,
            median: self.median,
            min: self.min,
            n: self.n,
        }
    }

    /// A statistic by the name a chart uses (`median`, `p95`, ...).
    pub fn get(&self, name: &str) -> Option<f64> {
        match name {
            "median" => self.median,
            "mean" => self.mean,
            "min" => self.min,
            "max" => self.max,
            "p5" => self.p5,
            "p95" => self.p95,
            _ => None,
        }
    }
}

/// A log-linear latency histogram over microseconds: 32 sub-buckets per
/// power of two, so quantiles are within 1.6% (half a bucket).
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    n: u64,
    sum_us: u128,
    min_us: u64,
    max_us: u64,
}

const SUB: u64 = 32;
const SUB_BITS: u32 = 5;

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; 64 * SUB as usize],
            n: 0,
            sum_us: 0,
            min_us: u64::MAX,
            max_us: 0,
        }
    }
}

impl Histogram {
    fn index(v: u64) -> usize {
        if v < SUB {
            v as usize
        } else {
            let msb = 63 - v.leading_zeros();
            let shift = msb - SUB_BITS;
            ((shift as u64 + 1) * SUB + ((v >> shift) & (SUB - 1))) as usize
        }
    }

    /// The smallest value that falls in bucket `i`, and the bucket's width.
    fn bounds(i: usize) -> (u64, u64) {
        let i = i as u64;
        if i < SUB {
            (i, 1)
        } else {
            let shift = i / SUB - 1;
            let low = (SUB + i % SUB) << shift;
            (low, 1 << shift)
        }
    }

    #[inline]
    pub fn record(&mut self, d: SimDuration) {
        let v = d.as_micros();
        self.counts[Self::index(v)] += 1;
        self.n += 1;
        self.sum_us += v as u128;
        self.min_us = self.min_us.min(v);
        self.max_us = self.max_us.max(v);
    }

    /// Adds every value of `other`, as if each had been recorded here.
    pub fn merge(&mut self, other: &Histogram) {
        if other.n == 0 {
            return;
        }
        let used = Self::index(other.max_us) + 1;
        for (c, o) in self.counts[..used].iter_mut().zip(&other.counts[..used]) {
            *c += o;
        }
        self.n += other.n;
        self.sum_us += other.sum_us;
        self.min_us = self.min_us.min(other.min_us);
        self.max_us = self.max_us.max(other.max_us);
    }

    /// Forgets every value (keeps the memory). Only the buckets up to the
    /// max's can be non-zero: a histogram of short latencies clears fast.
    pub fn clear(&mut self) {
        let used = if self.n == 0 {
            0
        } else {
            Self::index(self.max_us) + 1
        };
        self.counts[..used].fill(0);
        self.n = 0;
        self.sum_us = 0;
        self.min_us = u64::MAX;
        self.max_us = 0;
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// The `q`-quantile in microseconds: its bucket's midpoint, kept within
    /// the smallest and largest value recorded (so values that are all alike,
    /// such as client timeouts, come out exact).
    pub fn quantile_us(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        let used = Self::index(self.max_us) + 1;
        for (i, &c) in self.counts[..used].iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (low, width) = Self::bounds(i);
                let mid = low as f64 + (width as f64 - 1.0) / 2.0;
                return Some(mid.clamp(self.min_us as f64, self.max_us as f64));
            }
        }
        Some(self.max_us as f64)
    }

    pub fn mean_us(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum_us as f64 / self.n as f64)
    }

    pub fn max_us(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merged_histogram_is_the_histogram_of_all_values() {
        let us = |v: u64| SimDuration::from_micros(v);
        let (mut all, mut a, mut b) = (
            Histogram::default(),
            Histogram::default(),
            Histogram::default(),
        );
        for (i, v) in [3u64, 5_400, 1_000_000, 17, 5_400, 250_000, 9]
            .into_iter()
            .enumerate()
        {
            all.record(us(v));
            if i % 2 == 0 {
                a.record(us(v))
            } else {
                b.record(us(v))
            }
        }
        a.merge(&b);
        a.merge(&Histogram::default());
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(a.quantile_us(q), all.quantile_us(q), "q = {q}");
        }
        assert_eq!((a.count(), a.max_us()), (all.count(), all.max_us()));
    }

    #[test]
    fn whole_numbers_round_to_themselves_as_the_general_rule_rounds_them() {
        let general = |x: f64| (x * 1e6).round() / 1e6;
        for x in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            3.0,
            1e6,
            123_456_789.0,
            8_999_999_999.0,
            -8.5e9,
            2.0e9,
        ] {
            assert_eq!(round6(x).to_bits(), general(x).to_bits(), "{x}");
        }
        for x in [0.1234565, 2.5e-7, -0.0000005, 9.5e9, 1e300, f64::NAN] {
            assert_eq!(round6(x).to_bits(), general(x).to_bits(), "{x}");
        }
    }

    #[test]
    fn a_spread_of_many_values_is_that_of_the_sorted_values() {
        // Past the 32 kept on the stack the values move to the heap; the
        // spread must not notice.
        for n in [0usize, 1, 2, 31, 32, 33, 64, 100] {
            let xs: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64 / 7.0).collect();
            let mut sorted = xs.clone();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(Spread::of(&xs), Spread::of_sorted(&sorted), "n = {n}");
            assert_eq!(Spread::of(&xs).n, n);
        }
    }

    #[test]
    fn quantiles_interpolate_and_match_the_median() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&xs, 0.5), Some(2.5));
        assert_eq!(quantile(&xs, 0.5), median(&xs));
        assert_eq!(quantile(&xs, 0.0), Some(1.0));
        assert_eq!(quantile(&xs, 1.0), Some(4.0));
        assert!((quantile(&xs, 0.05).unwrap() - 1.15).abs() < 1e-12);
        let s = Stats::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(
            (s.median, s.min, s.max, s.n),
            (Some(2.5), Some(1.0), Some(4.0), 4)
        );
        assert_eq!(Stats::of(&[]).median, None);
    }

    #[test]
    fn spreads_leave_out_missing_values() {
        let s = Spread::of_options([Some(0.2), None, Some(0.4), Some(0.3)]);
        assert_eq!(s.n, 3);
        assert_eq!(s.median, Some(0.3));
        assert_eq!(s.min, Some(0.2));
        assert!(s.varies());
        assert_eq!(Spread::of(&[]), Spread::default());
        let json = serde_json::to_string(&Spread::of(&[1.0, 2.0])).unwrap();
        assert_eq!(
            json,
            r#"{"max":2.0,"mean":1.5,"median":1.5,"min":1.0,"n":2}"#
        );
    }

    #[test]
    fn histogram_quantiles_are_close() {
        let mut h = Histogram::default();
        for us in 1..=100_000u64 {
            h.record(SimDuration::from_micros(us));
        }
        let p50 = h.quantile_us(0.5).unwrap();
        let p99 = h.quantile_us(0.99).unwrap();
        assert!((p50 / 50_000.0 - 1.0).abs() < 0.03, "p50 {p50}");
        assert!((p99 / 99_000.0 - 1.0).abs() < 0.03, "p99 {p99}");
        assert_eq!(h.max_us(), Some(100_000));
        assert_eq!(h.count(), 100_000);
        h.clear();
        assert_eq!((h.count(), h.quantile_us(0.5), h.max_us()), (0, None, None));
        h.record(SimDuration::from_micros(7));
        assert_eq!(h.quantile_us(0.99), Some(7.0));
        for v in [0u64, 1, 31, 32, 33, 1000, 1 << 40] {
            let (low, width) = Histogram::bounds(Histogram::index(v));
            assert!(v >= low && v < low + width, "{v} not in [{low}, +{width})");
        }
    }
}
