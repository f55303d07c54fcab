//! The open state of linkerd2-proxy's unified breaker (`UnifiedBreaker`,
//! `linkerd/app/outbound/src/http/breaker/unified.rs`, added by #4561 in
//! proxy v2.358.0 / Linkerd edge-26.6.2, 2026-06; the annotations read by
//! the policy controller's `parse_accrual_config`, linkerd2 #15374).
//!
//! Per response while open (`open`): a failure the classifier counts (5xx,
//! errors) adds one to the consecutive count and anything else resets it —
//! a 429 included, since rate-limit signals are not hard failures; the
//! windowed success rate ([`SuccessRateWindow`]) counts the response as a
//! failure if it is a failure *or* a 429 (`is_rate_limit_signal`). Then
//! `should_trip`: the consecutive count at `max_failures` (0 turns it off;
//! checked first, so a response crossing both is charged to it), else the
//! window at `min_requests` samples with a ratio below the threshold (0
//! turns it off). The threshold is quantized to basis points
//! (`SuccessRateThreshold::from_fraction`). The probe must be a success and
//! not a 429 (`is_probe_success`). On reopening the count and the window
//! start cold (`OpenState::reset`).

use super::Class;
use super::success_rate::SuccessRateWindow;
use crate::engine::SimTime;

/// `TripReason`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TripReason {
    ConsecutiveFailures,
    LowSuccessRate,
}

/// The unified breaker's settings, as the proxy holds them.
#[derive(Copy, Clone, Debug)]
pub(super) struct Unified {
    pub max_failures: u32,
    /// The threshold in basis points (0..=10000); 0 turns the window off.
    pub threshold_bp: u32,
    pub window_us: u64,
    pub min_requests: u64,
}

/// `SuccessRateThreshold::from_fraction`.
pub(super) fn basis_points(f: f64) -> u32 {
    (f.clamp(0.0, 1.0) * 10000.0).round() as u32
}

/// `OpenState`.
#[derive(Clone, Debug)]
pub(super) struct OpenState {
    consecutive: u64,
    window: Option<SuccessRateWindow>,
}

impl Unified {
    /// `OpenState::new`: the window exists only with a non-zero threshold.
    pub(super) fn state(&self, now: SimTime) -> OpenState {
        OpenState {
            consecutive: 0,
            window: (self.threshold_bp > 0).then(|| SuccessRateWindow::new(self.window_us, now)),
        }
    }

    /// One response while open; the reason if the breaker trips.
    pub(super) fn on_response(
        &self,
        s: &mut OpenState,
        class: Class,
        now: SimTime,
    ) -> Option<TripReason> {
        if self.max_failures > 0 {
            s.consecutive = if class == Class::Failure {
                s.consecutive.saturating_add(1)
            } else {
                0
            };
        }
        if let Some(w) = s.window.as_mut() {
            w.record(class == Class::Success, now);
        }
        if self.max_failures > 0 && s.consecutive >= self.max_failures as u64 {
            return Some(TripReason::ConsecutiveFailures);
        }
        let threshold = self.threshold_bp as f64 / 10000.0;
        match &s.window {
            Some(w) if w.should_trip(self.min_requests, threshold) => {
                Some(TripReason::LowSuccessRate)
            }
            _ => None,
        }
    }

    /// `OpenState::reset` on reopening.
    pub(super) fn reset(&self, s: &mut OpenState, now: SimTime) {
        s.consecutive = 0;
        if let Some(w) = s.window.as_mut() {
            w.reset(now);
        }
    }

    /// The windowed ratio, for tests and traces.
    pub(super) fn ratio(s: &OpenState) -> Option<f64> {
        s.window.as_ref().and_then(SuccessRateWindow::ratio)
    }
}

/// `is_probe_success`: the classifier's success, and not a rate-limit signal.
pub(super) fn probe_recovers(class: Class) -> bool {
    class == Class::Success
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testkit::ms;

    fn u(max_failures: u32, threshold: f64, min_requests: u64) -> Unified {
        Unified {
            max_failures,
            threshold_bp: basis_points(threshold),
            window_us: 10_000_000,
            min_requests,
        }
    }

    #[test]
    fn a_429_degrades_the_rate_but_resets_the_consecutive_count() {
        let b = u(3, 0.0, 1);
        let mut s = b.state(ms(0));
        assert!(s.window.is_none(), "threshold 0: no window at all");
        b.on_response(&mut s, Class::Failure, ms(1));
        b.on_response(&mut s, Class::Failure, ms(2));
        assert_eq!(b.on_response(&mut s, Class::RateLimited, ms(3)), None);
        b.on_response(&mut s, Class::Failure, ms(4));
        b.on_response(&mut s, Class::Failure, ms(5));
        assert_eq!(
            b.on_response(&mut s, Class::Failure, ms(6)),
            Some(TripReason::ConsecutiveFailures)
        );
        // The rate alone: 429s only, never a hard failure.
        let b = u(7, 0.8, 5);
        let mut s = b.state(ms(0));
        for k in 0..4 {
            assert_eq!(b.on_response(&mut s, Class::RateLimited, ms(k)), None);
        }
        assert_eq!(
            b.on_response(&mut s, Class::RateLimited, ms(4)),
            Some(TripReason::LowSuccessRate),
            "5 samples, ratio 0 < 0.8"
        );
        assert!(
            !probe_recovers(Class::RateLimited),
            "a 429 probe keeps it shut"
        );
    }

    #[test]
    fn a_response_crossing_both_is_charged_to_the_consecutive_count() {
        let b = u(2, 0.8, 2);
        let mut s = b.state(ms(0));
        b.on_response(&mut s, Class::Failure, ms(1));
        assert_eq!(
            b.on_response(&mut s, Class::Failure, ms(2)),
            Some(TripReason::ConsecutiveFailures)
        );
    }

    #[test]
    fn twenty_percent_failing_trips_the_rate_and_never_the_count() {
        // One failure in five: ratio exactly 0.8 is not below 0.8 ...
        let b = u(7, 0.8, 5);
        let mut s = b.state(ms(0));
        for k in 0..50 {
            let c = if k % 5 == 4 {
                Class::Failure
            } else {
                Class::Success
            };
            assert_eq!(b.on_response(&mut s, c, ms(k * 10)), None, "response {k}");
        }
        // ... one in four is.
        let mut s = b.state(ms(0));
        let mut tripped = None;
        for k in 0..50 {
            let c = if k % 4 == 3 {
                Class::Failure
            } else {
                Class::Success
            };
            if let Some(r) = b.on_response(&mut s, c, ms(k * 10)) {
                tripped = Some((k, r));
                break;
            }
        }
        // The 4th response (3/4) has only 4 samples of the 5 needed; the
        // 8th is 6/8 < 0.8.
        assert_eq!(tripped, Some((7, TripReason::LowSuccessRate)));
        assert_eq!(Unified::ratio(&s), Some(0.75));
        b.reset(&mut s, ms(1000));
        assert_eq!(Unified::ratio(&s), None, "reopened cold");
    }

    #[test]
    fn thresholds_are_whole_basis_points() {
        assert_eq!(basis_points(0.8), 8000);
        assert_eq!(basis_points(0.99995), 10000);
        assert_eq!(basis_points(1.5), 10000);
    }
}
