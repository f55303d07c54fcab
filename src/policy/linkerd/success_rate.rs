//! linkerd2-proxy's `SuccessRateWindow`
//! (`linkerd/app/outbound/src/http/breaker/success_rate.rs`, added with the
//! unified breaker by #4561, proxy v2.358.0, 2026-06): the exact success
//! ratio over a trailing window, in `BUCKETS` = 10 fixed slices of
//! `max(window, 10 ms) / 10` each, kept in nanoseconds as the proxy does.
//!
//! `record` first rolls the ring to now (`roll`: the whole slices elapsed
//! since the current one began are cleared, all ten after a gap of a whole
//! window; the anchor moves by whole slices), then counts the response in
//! the current slice. `should_trip`: at least `min_requests` samples (and
//! one at all) and a ratio below the threshold. The slices are anchored at
//! the breaker's start or its last reopening (`reset`), not at the clock.

use crate::engine::SimTime;

/// `BUCKETS`.
const BUCKETS: usize = 10;
/// `MIN_WINDOW`: ten slices of `MIN_BUCKET_WIDTH` (1 ms), in nanoseconds.
const MIN_WINDOW_NS: u64 = 10_000_000;

#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    successes: u32,
    total: u32,
}

/// The window of one endpoint's breaker.
#[derive(Clone, Debug)]
pub(super) struct SuccessRateWindow {
    buckets: [Bucket; BUCKETS],
    width_ns: u64,
    current: usize,
    last_roll_ns: u64,
}

fn ns(t: SimTime) -> u64 {
    t.as_micros().saturating_mul(1_000)
}

impl SuccessRateWindow {
    /// `new(window, now)`, `window` in microseconds.
    pub(super) fn new(window_us: u64, now: SimTime) -> Self {
        SuccessRateWindow {
            buckets: [Bucket::default(); BUCKETS],
            width_ns: (window_us.saturating_mul(1_000)).max(MIN_WINDOW_NS) / BUCKETS as u64,
            current: 0,
            last_roll_ns: ns(now),
        }
    }

    fn roll(&mut self, now: SimTime) {
        let elapsed = ns(now).saturating_sub(self.last_roll_ns);
        let width = self.width_ns.max(1);
        let steps = elapsed / width;
        if steps == 0 {
            return;
        }
        if steps >= BUCKETS as u64 {
            self.buckets = [Bucket::default(); BUCKETS];
        } else {
            for i in 1..=steps as usize {
                self.buckets[(self.current + i) % BUCKETS] = Bucket::default();
            }
        }
        self.current = ((self.current as u64 + steps) % BUCKETS as u64) as usize;
        self.last_roll_ns += elapsed - elapsed % width;
    }

    /// `record(success, now)`.
    pub(super) fn record(&mut self, success: bool, now: SimTime) {
        self.roll(now);
        let b = &mut self.buckets[self.current];
        b.total = b.total.saturating_add(1);
        if success {
            b.successes = b.successes.saturating_add(1);
        }
    }

    /// `(successes, total)` as of the last roll.
    pub(super) fn totals(&self) -> (u64, u64) {
        self.buckets.iter().fold((0, 0), |(s, t), b| {
            (s + b.successes as u64, t + b.total as u64)
        })
    }

    /// The ratio, `None` without samples.
    pub(super) fn ratio(&self) -> Option<f64> {
        let (s, t) = self.totals();
        (t != 0).then(|| s as f64 / t as f64)
    }

    /// `should_trip(min_requests, threshold)`.
    pub(super) fn should_trip(&self, min_requests: u64, threshold: f64) -> bool {
        let (s, t) = self.totals();
        t != 0 && t >= min_requests && (s as f64 / t as f64) < threshold
    }

    /// `reset(now)`: every slice cleared, anchored at `now`.
    pub(super) fn reset(&mut self, now: SimTime) {
        self.buckets = [Bucket::default(); BUCKETS];
        self.current = 0;
        self.last_roll_ns = ns(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testkit::ms;

    #[test]
    fn slices_age_out_one_width_at_a_time() {
        // The proxy's `buckets_roll_and_expire_in_order`: 10 s, 1 s slices.
        let mut w = SuccessRateWindow::new(10_000_000, ms(0));
        w.record(false, ms(0));
        w.record(true, ms(5_000));
        assert_eq!(w.ratio(), Some(0.5));
        w.record(true, ms(10_500));
        assert_eq!(w.ratio(), Some(1.0), "the t = 0 failure aged out");
        assert_eq!(w.totals(), (2, 2));
    }

    #[test]
    fn the_floor_and_the_minimum_sample() {
        let mut w = SuccessRateWindow::new(100, ms(0));
        assert_eq!(w.width_ns, 1_000_000, "10 ms floor: 1 ms slices");
        for _ in 0..4 {
            w.record(false, ms(0));
        }
        assert!(!w.should_trip(5, 0.5), "4 < min_requests 5");
        w.record(false, ms(0));
        assert!(w.should_trip(5, 0.5));
        assert!(!w.should_trip(5, 0.0), "a threshold of 0 never trips");
        w.reset(ms(3));
        assert_eq!(w.ratio(), None);
        assert!(!w.should_trip(0, 1.0), "no samples never trips");
    }

    #[test]
    fn slices_are_anchored_at_the_start_not_the_clock() {
        // Started at 0.7 s: slice boundaries at 1.7 s, 2.7 s, ...
        let mut w = SuccessRateWindow::new(10_000_000, ms(700));
        w.record(false, ms(1_600));
        w.record(true, ms(10_699));
        assert_eq!(
            w.totals(),
            (1, 2),
            "the slice [0.7, 1.7) s is still in the ring"
        );
        w.record(true, ms(10_700));
        assert_eq!(
            w.totals(),
            (2, 2),
            "at 10.7 s its slice is reused: 9.1 s after the failure"
        );
    }
}
