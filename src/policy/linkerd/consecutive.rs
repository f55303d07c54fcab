//! The open state of linkerd2-proxy's consecutive-failures breaker
//! (`ConsecutiveFailures::open`,
//! `linkerd/app/outbound/src/http/breaker/consecutive_failures.rs`): a
//! success resets the count, a failure adds one, and the breaker trips
//! when the count *equals* `max_failures` (so 0 never trips). Its
//! probation is lenient: any response the classifier calls a success
//! reopens, a 429 included (`closed`: `class.is_success()`).

use super::Class;

/// The count of one endpoint's breaker while open.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct Count {
    failures: u64,
}

impl Count {
    /// One response while open; `true` if the breaker trips.
    pub(super) fn on_response(&mut self, class: Class, max_failures: u32) -> bool {
        if class.is_success() {
            self.failures = 0;
            false
        } else {
            self.failures = self.failures.saturating_add(1);
            self.failures == max_failures as u64
        }
    }
}

/// The probe's verdict: the classifier's.
pub(super) fn probe_recovers(class: Class) -> bool {
    class.is_success()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trips_on_the_nth_failure_in_a_row_and_never_with_zero() {
        let mut c = Count::default();
        for _ in 0..6 {
            assert!(!c.on_response(Class::Failure, 7));
        }
        assert!(
            !c.on_response(Class::RateLimited, 7),
            "429 is a success here"
        );
        for _ in 0..6 {
            assert!(!c.on_response(Class::Failure, 7));
        }
        assert!(c.on_response(Class::Failure, 7));
        let mut c = Count::default();
        for _ in 0..100 {
            assert!(!c.on_response(Class::Failure, 0));
        }
        assert!(probe_recovers(Class::RateLimited));
        assert!(!probe_recovers(Class::Failure));
    }
}
