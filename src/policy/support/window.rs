//! Shared bookkeeping of the ratio policies: how an attempt counts
//! ([`Outcome`]), running counts ([`Tally`]), and the two sliding windows
//! every ratio detector and breaker is built from — the last N outcomes
//! ([`CountWindow`]) and N time buckets ([`BucketWindow`]).
//!
//! Windows are fixed ring buffers sized at construction: recording an
//! outcome never allocates, and totals are kept running (O(1) per record).

use crate::policy::AttemptResult;

/// How a breaker or ratio ejector counts one attempt.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Failure,
    /// Counted as neither (the client went away first).
    Ignored,
}

impl Outcome {
    /// The common classification of the breakers and the ratio ejector: a
    /// 5xx status, a read or connect timeout, a refused connect and a reset
    /// are failures; any other status is a success; a client abort is
    /// neither (nginx logs 499 and the upstream's answer is never seen).
    pub fn of(result: AttemptResult) -> Outcome {
        match result {
            AttemptResult::Status(s) if s >= 500 => Outcome::Failure,
            AttemptResult::Status(_) => Outcome::Success,
            AttemptResult::Refused
            | AttemptResult::ConnectTimeout
            | AttemptResult::ReadTimeout
            | AttemptResult::Reset
            | AttemptResult::Rejected => Outcome::Failure,
            AttemptResult::ClientAbort => Outcome::Ignored,
        }
    }
}

/// Counts over a window: calls, failed calls and slow calls.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub calls: u32,
    pub failures: u32,
    pub slow: u32,
}

impl Tally {
    fn add(&mut self, failed: bool, slow: bool) {
        self.calls += 1;
        self.failures += failed as u32;
        self.slow += slow as u32;
    }

    fn remove(&mut self, other: Tally) {
        self.calls -= other.calls;
        self.failures -= other.failures;
        self.slow -= other.slow;
    }

    /// Successful calls (`calls - failures`).
    pub fn successes(&self) -> u32 {
        self.calls - self.failures
    }
}

const FAILED: u8 = 1;
const SLOW: u8 = 2;

/// The last `size` outcomes (Resilience4j `FixedSizeSlidingWindowMetrics`):
/// a ring where each new outcome evicts the oldest once the ring is full.
#[derive(Clone, Debug)]
pub struct CountWindow {
    slots: Vec<u8>,
    next: usize,
    filled: usize,
    tally: Tally,
}

impl CountWindow {
    pub fn new(size: usize) -> Self {
        CountWindow {
            slots: vec![0; size.max(1)],
            next: 0,
            filled: 0,
            tally: Tally::default(),
        }
    }

    /// Records one outcome and returns the window's counts after it.
    pub fn record(&mut self, failed: bool, slow: bool) -> Tally {
        if self.filled == self.slots.len() {
            let old = self.slots[self.next];
            self.tally.remove(Tally {
                calls: 1,
                failures: (old & FAILED != 0) as u32,
                slow: (old & SLOW != 0) as u32,
            });
        } else {
            self.filled += 1;
        }
        self.slots[self.next] = (failed as u8 * FAILED) | (slow as u8 * SLOW);
        self.tally.add(failed, slow);
        self.next = (self.next + 1) % self.slots.len();
        self.tally
    }

    pub fn tally(&self) -> Tally {
        self.tally
    }

    pub fn clear(&mut self) {
        self.next = 0;
        self.filled = 0;
        self.tally = Tally::default();
    }
}

/// `len` consecutive time buckets identified by an integer index (epoch
/// second, interval number, ...): the newest bucket and the `len - 1` before
/// it. Moving to a newer index evicts the buckets that fall out, lazily, as
/// Resilience4j's `SlidingTimeWindowMetrics` and Hystrix's rolling counters do.
#[derive(Clone, Debug)]
pub struct BucketWindow {
    slots: Vec<(i64, Tally)>,
    newest: i64,
    tally: Tally,
}

/// No bucket has this index: marks an empty slot.
const NO_BUCKET: i64 = i64::MIN / 4;

impl BucketWindow {
    pub fn new(len: usize) -> Self {
        BucketWindow {
            slots: vec![(NO_BUCKET, Tally::default()); len.max(1)],
            newest: NO_BUCKET,
            tally: Tally::default(),
        }
    }

    fn slot(&self, bucket: i64) -> usize {
        bucket.rem_euclid(self.slots.len() as i64) as usize
    }

    /// Makes `bucket` the newest bucket, evicting those older than
    /// `bucket - len + 1`. An older index than the newest is a no-op.
    pub fn advance(&mut self, bucket: i64) {
        if bucket <= self.newest {
            return;
        }
        let len = self.slots.len() as i64;
        if bucket - self.newest >= len {
            self.slots.fill((NO_BUCKET, Tally::default()));
            self.tally = Tally::default();
        } else {
            for b in self.newest + 1..=bucket {
                let i = self.slot(b);
                let old = self.slots[i].1;
                self.tally.remove(old);
                self.slots[i] = (b, Tally::default());
            }
        }
        let i = self.slot(bucket);
        self.slots[i].0 = bucket;
        self.newest = bucket;
    }

    /// Records one outcome in `bucket` (advancing to it first) and returns the
    /// counts over the whole window. An outcome for a bucket that has already
    /// left the window is dropped.
    pub fn record(&mut self, bucket: i64, failed: bool, slow: bool) -> Tally {
        self.advance(bucket);
        let i = self.slot(bucket);
        if self.slots[i].0 == bucket {
            self.slots[i].1.add(failed, slow);
            self.tally.add(failed, slow);
        }
        self.tally
    }

    /// Counts over the window as of the last `advance`/`record`.
    pub fn tally(&self) -> Tally {
        self.tally
    }

    /// Counts of one bucket (zero if it is not in the window).
    pub fn bucket(&self, bucket: i64) -> Tally {
        let (b, t) = self.slots[self.slot(bucket)];
        if b == bucket { t } else { Tally::default() }
    }

    pub fn clear(&mut self) {
        self.slots.fill((NO_BUCKET, Tally::default()));
        self.newest = NO_BUCKET;
        self.tally = Tally::default();
    }
}

/// A count- or time-based sliding window, as Resilience4j and the ratio
/// ejector configure them. The caller names the time bucket of each record
/// (epoch second for Resilience4j, `t / width` for the ratio ejector).
#[derive(Clone, Debug)]
pub enum SlidingWindow {
    Count(CountWindow),
    Time(BucketWindow),
}

impl SlidingWindow {
    pub fn record(&mut self, bucket: i64, failed: bool, slow: bool) -> Tally {
        match self {
            SlidingWindow::Count(w) => w.record(failed, slow),
            SlidingWindow::Time(w) => w.record(bucket, failed, slow),
        }
    }

    pub fn clear(&mut self) {
        match self {
            SlidingWindow::Count(w) => w.clear(),
            SlidingWindow::Time(w) => w.clear(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_window_evicts_the_oldest_outcome() {
        let mut w = CountWindow::new(3);
        w.record(true, false);
        w.record(false, true);
        let t = w.record(false, false);
        assert_eq!(
            t,
            Tally {
                calls: 3,
                failures: 1,
                slow: 1
            }
        );
        let t = w.record(false, false); // evicts the failure
        assert_eq!(
            t,
            Tally {
                calls: 3,
                failures: 0,
                slow: 1
            }
        );
        w.clear();
        assert_eq!(w.record(true, false).calls, 1);
    }

    #[test]
    fn bucket_window_keeps_the_last_len_buckets() {
        let mut w = BucketWindow::new(3);
        w.record(10, true, false);
        w.record(11, false, false);
        w.record(12, false, false);
        assert_eq!(w.tally().calls, 3);
        assert_eq!(w.tally().failures, 1);
        w.advance(13); // bucket 10 leaves
        assert_eq!(w.tally().calls, 2);
        assert_eq!(w.tally().failures, 0);
        assert_eq!(w.bucket(11).calls, 1);
        assert_eq!(w.bucket(10).calls, 0);
        w.advance(100); // a long gap empties everything
        assert_eq!(w.tally(), Tally::default());
        // a late record for a bucket that left is dropped
        assert_eq!(w.record(90, true, false).calls, 0);
    }

    #[test]
    fn classification() {
        assert_eq!(Outcome::of(AttemptResult::Status(503)), Outcome::Failure);
        assert_eq!(Outcome::of(AttemptResult::Status(404)), Outcome::Success);
        assert_eq!(Outcome::of(AttemptResult::ReadTimeout), Outcome::Failure);
        assert_eq!(Outcome::of(AttemptResult::ClientAbort), Outcome::Ignored);
    }
}
