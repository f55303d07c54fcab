//! linkerd2-proxy's `ExponentialBackoff` (`linkerd/exp-backoff/src/lib.rs`),
//! exactly: iteration `n` (0-based) of a stream waits `base + jitter` with
//! `base = min(min × 2ⁿ, max)` (`checked_mul`, `max` on overflow) and
//! `jitter` drawn as `Duration::new(secs as u64, nanos as u32)` from
//! `base.as_secs() × r` and `base.subsec_nanos() × r`, `r = U[0, 1) ×
//! jitter_ratio`, capped at `max − base`. The whole seconds and the
//! nanoseconds of the base are scaled and truncated apart, so a base of
//! whole seconds gets whole seconds of jitter: 1 s with ratio 0.5 never
//! gets any (⌊U[0, 0.5)⌋ = 0), 4 s gets 0 or 1 s.

use crate::engine::{SimDuration, SimRng};
use rand::RngExt;

/// `ExponentialBackoff { min, max, jitter }`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ExponentialBackoff {
    pub min: SimDuration,
    pub max: SimDuration,
    pub jitter: f64,
}

impl ExponentialBackoff {
    /// `base(iterations)`.
    pub fn base(&self, iterations: u32) -> SimDuration {
        let factor = 2u32.saturating_pow(iterations) as u64;
        match self.min.as_micros().checked_mul(factor) {
            Some(us) => SimDuration::from_micros(us).min(self.max),
            None => self.max,
        }
    }

    /// `jitter(base, rng)`, in microseconds (nanoseconds truncated).
    fn jitter(&self, base: SimDuration, rng: &mut SimRng) -> SimDuration {
        if self.jitter == 0.0 {
            return SimDuration::ZERO;
        }
        let r: f64 = rng.random::<f64>() * self.jitter;
        let us = base.as_micros();
        let secs = ((us / 1_000_000) as f64 * r) as u64;
        let nanos = (((us % 1_000_000) * 1_000) as f64 * r) as u64;
        let jitter = SimDuration::from_micros(secs * 1_000_000 + nanos / 1_000);
        jitter.min(self.max - base)
    }

    /// The `n`-th wait of a stream (`ExponentialBackoffStream::poll_next`).
    pub fn delay(&self, n: u32, rng: &mut SimRng) -> SimDuration {
        let base = self.base(n);
        base + self.jitter(base, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng;

    const S: fn(u64) -> SimDuration = SimDuration::from_secs;

    #[test]
    fn doubling_from_min_capped_at_max() {
        let b = ExponentialBackoff {
            min: S(1),
            max: S(60),
            jitter: 0.0,
        };
        let mut r = rng::stream(1, crate::policy::RNG_STREAM);
        let d: Vec<u64> = (0..8)
            .map(|n| b.delay(n, &mut r).as_micros() / 1_000_000)
            .collect();
        assert_eq!(d, vec![1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(b.base(40), S(60), "2^40 overflows u32: saturates, capped");
    }

    #[test]
    fn whole_second_bases_get_whole_seconds_of_jitter() {
        // Linkerd's defaults: 1 s .. 60 s, ratio 0.5.
        let b = ExponentialBackoff {
            min: S(1),
            max: S(60),
            jitter: 0.5,
        };
        let mut r = rng::stream(7, crate::policy::RNG_STREAM);
        let mut seen4 = std::collections::BTreeSet::new();
        for _ in 0..200 {
            assert_eq!(b.delay(0, &mut r), S(1), "⌊1 × U[0, 0.5)⌋ = 0");
            assert_eq!(b.delay(1, &mut r), S(2), "⌊2 × U[0, 0.5)⌋ = 0");
            seen4.insert(b.delay(2, &mut r).as_micros() / 1_000_000);
            let d = b.delay(6, &mut r);
            assert_eq!(d, S(60), "60 s: no room left under max");
        }
        assert_eq!(seen4.into_iter().collect::<Vec<_>>(), vec![4, 5]);
        // A base with a fraction of a second scales that part continuously.
        let b = ExponentialBackoff {
            min: SimDuration::from_millis(100),
            max: S(60),
            jitter: 0.5,
        };
        let d = b.delay(0, &mut r);
        assert!(
            d >= SimDuration::from_millis(100) && d < SimDuration::from_millis(150),
            "{d}"
        );
    }
}
