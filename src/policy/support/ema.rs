//! Finagle's success-rate bookkeeping, as twitter's sources write it:
//! [`Ema`] (`com.twitter.finagle.util.Ema`), an exponentially weighted
//! moving average over time, and [`WindowedAdder`]
//! (`com.twitter.util.WindowedAdder`), a counter over the last few slices
//! of a time range. Both take integer milliseconds, as
//! `Stopwatch.systemMillis` gives them.

/// `Ema(window)`: each update weighs the new value by `1 − e^(−Δt/window)`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Ema {
    window: i64,
    /// `None`: no observation yet (Finagle's `Long.MinValue`).
    time: Option<i64>,
    ema: f64,
}

impl Ema {
    pub fn new(window_ms: i64) -> Self {
        Ema {
            window: window_ms,
            time: None,
            ema: 0.0,
        }
    }

    /// `update(stamp, x)`: the first observation is the average; later ones
    /// decay the old average by `exp(−(stamp − time) / window)`.
    pub fn update(&mut self, stamp: i64, x: f64) -> f64 {
        let Some(time) = self.time else {
            self.time = Some(stamp);
            self.ema = x;
            return x;
        };
        let td = (stamp - time).max(0);
        self.time = Some(stamp);
        let w = if self.window == 0 {
            0.0
        } else {
            (-(td as f64) / self.window as f64).exp()
        };
        self.ema = x * (1.0 - w) + self.ema * w;
        self.ema
    }

    /// `last`: the current average.
    pub fn last(&self) -> f64 {
        self.ema
    }

    /// `reset`: back to no observation.
    pub fn reset(&mut self) {
        self.time = None;
        self.ema = 0.0;
    }
}

/// `WindowedAdder(range, slices, now)`: `slices − 1` completed slices of
/// `range / slices` each plus the one being written. A slice ends at the
/// first add or sum at least a slice after the previous end, and the next
/// one starts *then* (`old = now()`), so slices drift with the traffic.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowedAdder {
    window: i64,
    buf: Vec<i64>,
    i: usize,
    old: i64,
    writer: i64,
}

impl WindowedAdder {
    /// Built at `now_ms`; `slices` > 1 and `range_ms / slices` > 0.
    pub fn new(range_ms: i64, slices: usize, now_ms: i64) -> Self {
        assert!(slices > 1 && range_ms / slices as i64 > 0);
        WindowedAdder {
            window: range_ms / slices as i64,
            buf: vec![0; slices - 1],
            i: 0,
            old: now_ms,
            writer: 0,
        }
    }

    /// `expired()`: the slice being written joins the completed ones, and
    /// slices skipped without traffic are zeroed.
    fn expired(&mut self, now: i64) {
        let n = self.buf.len();
        self.buf[self.i] = std::mem::take(&mut self.writer);
        self.i = (self.i + 1) % n;
        let nskip = ((now - self.old) / self.window - 1).min(n as i64);
        if nskip > 0 {
            let nskip = nskip as usize;
            let r = nskip.min(n - self.i);
            self.buf[self.i..self.i + r].fill(0);
            self.buf[..nskip - r].fill(0);
            self.i = (self.i + nskip) % n;
        }
        self.old = now;
    }

    /// `incr()`.
    pub fn incr(&mut self, now: i64) {
        if now - self.old >= self.window {
            self.expired(now);
        }
        self.writer += 1;
    }

    /// `sum()`: the slice being written plus the completed ones.
    pub fn sum(&mut self, now: i64) -> i64 {
        if now - self.old >= self.window {
            self.expired(now);
        }
        self.writer + self.buf.iter().sum::<i64>()
    }

    /// `reset()`.
    pub fn reset(&mut self, now: i64) {
        self.buf.fill(0);
        self.writer = 0;
        self.old = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ema_is_the_first_value_then_decays_over_time() {
        // EmaTest: "updates are time-weighted".
        let mut e = Ema::new(30_000);
        assert_eq!(e.update(0, 1.0), 1.0);
        // After one window of failures the average is e^(-1) of the old one.
        let v = e.update(30_000, 0.0);
        assert!((v - (-1.0f64).exp()).abs() < 1e-12, "{v}");
        // All failures from 1.0: below 0.8 after -30 s × ln 0.8 = 6.69 s.
        let mut e = Ema::new(30_000);
        e.update(0, 1.0);
        assert!(e.update(6_694, 0.0) > 0.8);
        let mut e = Ema::new(30_000);
        e.update(0, 1.0);
        assert!(e.update(6_695, 0.0) < 0.8);
        e.reset();
        assert_eq!(e.update(7_000, 0.0), 0.0);
        assert_eq!(e.last(), 0.0);
    }

    #[test]
    fn windowed_adder_keeps_four_completed_slices_of_six_seconds() {
        // WindowedAdder(30000, 5, now): slices of 6 s, four kept.
        let mut w = WindowedAdder::new(30_000, 5, 0);
        for t in [0, 1_000, 5_999] {
            w.incr(t);
        }
        assert_eq!(w.sum(5_999), 3);
        w.incr(6_500); // the first slice ends at 6.5 s, the next starts then
        assert_eq!(w.sum(6_500), 4);
        // 6.5 + 4 × 6 = 30.5 s: the first slice (3 requests) is still kept
        // until the slice started at 30.5 s... ends.
        w.incr(12_500);
        w.incr(18_500);
        w.incr(24_500);
        assert_eq!(w.sum(24_500), 7);
        assert_eq!(w.sum(30_500), 4, "the first slice dropped out");
        // A long silence zeroes the skipped slices.
        assert_eq!(w.sum(200_000), 0);
        w.incr(200_001);
        w.reset(200_002);
        assert_eq!(w.sum(200_002), 0);
    }
}
