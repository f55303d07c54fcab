//! Back-off sequences shared by the policies: plain exponential growth
//! (Resilience4j `IntervalFunction.ofExponentialBackoff`, the ratio
//! ejector), linkerd2-proxy's jittered exponential back-off, and Finagle's
//! `Backoff.equalJittered` stream.

use crate::engine::{SimDuration, SimRng};
use rand::RngExt;

/// `initial`, then each delay the previous one times `multiplier`, capped at
/// `max` (Resilience4j iterates `x -> min(x * multiplier, max)`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Exponential {
    pub initial: SimDuration,
    pub multiplier: f64,
    pub max: SimDuration,
}

impl Exponential {
    /// The delay before attempt `attempt` (1-based): `initial` for the first.
    pub fn delay(&self, attempt: u32) -> SimDuration {
        let mut d = self.initial.min(self.max);
        for _ in 1..attempt {
            let next = d.mul_f64(self.multiplier).min(self.max);
            if next == d {
                break; // capped (or a multiplier of 1): it stays there
            }
            d = next;
        }
        d
    }
}

/// linkerd2-proxy's `ExponentialBackoff`: iteration `k` (0-based) waits
/// `base = min(min_delay * 2^k, max)` plus a jitter drawn uniformly from
/// `[0, jitter_ratio * base)`, the total never above `max`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct JitteredExponential {
    pub min: SimDuration,
    pub max: SimDuration,
    pub jitter_ratio: f64,
}

impl JitteredExponential {
    pub fn base(&self, iteration: u32) -> SimDuration {
        let factor = 1u64.checked_shl(iteration.min(63)).unwrap_or(u64::MAX);
        let us = self.min.as_micros().saturating_mul(factor);
        SimDuration::from_micros(us).min(self.max)
    }

    pub fn delay(&self, iteration: u32, rng: &mut SimRng) -> SimDuration {
        let base = self.base(iteration);
        if self.jitter_ratio <= 0.0 {
            return base;
        }
        let f: f64 = rng.random();
        let jitter = base.mul_f64(f * self.jitter_ratio).min(self.max - base);
        base + jitter
    }
}

/// Finagle's `Backoff.equalJittered(start, maximum)`: `start` first, then
/// for attempt `k = 1, 2, ...` a delay `h + U[0, h)` with `h = start * 2^(k-1)`;
/// once `h` reaches `maximum`, or `h + jitter` would, every later delay is
/// `maximum` (the stream turns into `Backoff.const(maximum)`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct EqualJittered {
    pub start: SimDuration,
    pub max: SimDuration,
}

/// A position in an [`EqualJittered`] stream (Finagle's immutable `Backoff`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EqualJitteredCursor {
    duration: SimDuration,
    attempt: u32,
    constant: bool,
}

impl EqualJitteredCursor {
    /// The current delay of the stream.
    pub fn duration(&self) -> SimDuration {
        self.duration
    }
}

impl EqualJittered {
    pub fn first(&self) -> EqualJitteredCursor {
        EqualJitteredCursor {
            duration: self.start,
            attempt: 1,
            constant: self.start >= self.max,
        }
    }

    /// `Backoff.next`: the next position of the stream.
    pub fn next(&self, c: EqualJitteredCursor, rng: &mut SimRng) -> EqualJitteredCursor {
        if c.constant {
            return c;
        }
        let shift = 1u64 << (c.attempt - 1).min(62);
        let (start, max) = (self.start.as_micros(), self.max.as_micros());
        let half_exp = if start >= max / shift {
            max
        } else {
            start * shift
        };
        let random = rng.random_range(0..half_exp.max(1));
        if half_exp == max || half_exp >= max.saturating_sub(random) {
            EqualJitteredCursor {
                duration: self.max,
                attempt: c.attempt + 1,
                constant: true,
            }
        } else {
            EqualJitteredCursor {
                duration: SimDuration::from_micros(half_exp + random),
                attempt: c.attempt + 1,
                constant: false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng;

    const S: fn(u64) -> SimDuration = SimDuration::from_secs;

    #[test]
    fn finagle_equal_jittered_bounds_5s_to_300s() {
        // Reference §3.3: 5, [5,10), [10,20), [20,40), [40,80), [80,160),
        // [160,300) or 300, then 300 for ever.
        let b = EqualJittered {
            start: S(5),
            max: S(300),
        };
        let bounds = [
            (5, 5),
            (5, 10),
            (10, 20),
            (20, 40),
            (40, 80),
            (80, 160),
            (160, 300),
        ];
        let mut saw_cap_early = false;
        for seed in 0..200 {
            let mut r = rng::stream(seed, crate::policy::RNG_STREAM);
            let mut c = b.first();
            for (k, &(lo, hi)) in bounds.iter().enumerate() {
                let d = c.duration();
                if k == 6 && d == S(300) {
                    saw_cap_early = true;
                } else if lo == hi {
                    assert_eq!(d, S(lo));
                } else {
                    assert!(d >= S(lo) && d < S(hi), "seed {seed} step {k}: {d}");
                }
                c = b.next(c, &mut r);
            }
            for _ in 0..5 {
                assert_eq!(c.duration(), S(300), "seed {seed}: constant after the cap");
                c = b.next(c, &mut r);
            }
        }
        assert!(saw_cap_early, "160 + U[0,160) reaches 300 in some runs");
    }

    #[test]
    fn linkerd_doubles_from_min_and_stays_under_max() {
        let b = JitteredExponential {
            min: S(1),
            max: S(60),
            jitter_ratio: 0.5,
        };
        let mut r = rng::stream(3, crate::policy::RNG_STREAM);
        for k in 0..10 {
            let base = b.base(k);
            assert_eq!(base, S((1u64 << k).min(60)));
            let d = b.delay(k, &mut r);
            assert!(d >= base && d <= S(60));
            assert!(d.as_secs_f64() < base.as_secs_f64() * 1.5 + 1e-9);
        }
    }

    #[test]
    fn exponential_is_capped() {
        let e = Exponential {
            initial: S(30),
            multiplier: 2.0,
            max: S(300),
        };
        let got: Vec<_> = (1..=6).map(|k| e.delay(k).whole_secs().unwrap()).collect();
        assert_eq!(got, vec![30, 60, 120, 240, 300, 300]);
    }
}
