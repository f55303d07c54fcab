//! The kubelet's container restart back-off (CrashLoopBackOff), as
//! `doBackOff` (`pkg/kubelet/kuberuntime/kuberuntime_manager.go`) runs it
//! over client-go's `flowcontrol.Backoff` (`util/flowcontrol/backoff.go`)
//! with the kubelet's settings (`pkg/kubelet/kubelet.go`,
//! `newCrashLoopBackOff`):
//!
//! - a container that exited for the first time restarts at once: there is
//!   no entry yet, `Next` creates one of 10 s (`initialCrashLoopBackOff`);
//! - a later exit at `finished` waits until `finished + backoff`
//!   (`IsInBackOffSince(key, FinishedAt)`: `now - finished < backoff`), then
//!   `Next` doubles the entry, up to 300 s (`MaxCrashLoopBackOff`); no jitter
//!   (`NewBackOff` has a zero jitter factor);
//! - the entry expires when an exit comes more than 600 s after its last
//!   update (the kubelet's `HasExpiredFunc`): a container that ran 10
//!   minutes restarts at once again.
//!
//! So the delays after each exit are 0, 10, 20, 40, 80, 160, 300, 300, … s.
//! `ReduceDefaultCrashLoopBackOffDecay` (alpha since 1.33, off by default)
//! would make them 1 s … 60 s, and `KubeletCrashLoopBackOffMax` (beta and on
//! since 1.35) takes the cap from the kubelet's configuration, whose default
//! is the 300 s above: hcsim follows the defaults.

use crate::engine::{SimDuration, SimTime};

/// `initialCrashLoopBackOff`.
pub(crate) const INITIAL: SimDuration = SimDuration::from_secs(10);
/// `MaxCrashLoopBackOff` (`v1beta1.MaxContainerBackOff`).
pub(crate) const MAX: SimDuration = SimDuration::from_secs(300);
/// The kubelet's `HasExpiredFunc`: an entry older than this is forgotten.
pub(crate) const RESET_AFTER: SimDuration = SimDuration::from_secs(600);

/// One container's back-off entry.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct BackOff {
    /// (back-off, last update), once the container exited.
    entry: Option<(SimDuration, SimTime)>,
}

impl BackOff {
    /// The container exited at `finished` (the kubelet handles it then):
    /// when its restart starts. Updates the entry as `doBackOff` does when
    /// the restart goes ahead.
    pub(crate) fn restart_at(&mut self, finished: SimTime) -> SimTime {
        match self.entry {
            Some((backoff, last)) if finished.saturating_since(last) <= RESET_AFTER => {
                // In back-off until `finished + backoff`; `Next` at the
                // restart doubles the entry.
                let start = finished + backoff;
                let next = SimDuration::from_micros(backoff.as_micros().saturating_mul(2)).min(MAX);
                self.entry = Some((next, start));
                start
            }
            _ => {
                // No entry, or an expired one: `Next` creates it; no wait.
                self.entry = Some((INITIAL, finished));
                finished
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_secs(v)
    }

    #[test]
    fn restarts_follow_the_kubelets_crash_loop_schedule() {
        // A container that exits 2 s after every start: restarts after
        // 0, 10, 20, 40, 80, 160, 300, 300 s (doBackOff over
        // flowcontrol.Backoff with 10 s initial, 300 s max).
        let mut b = BackOff::default();
        let mut t = s(100);
        let mut delays = Vec::new();
        for _ in 0..8 {
            let start = b.restart_at(t);
            delays.push(start.saturating_since(t).as_micros() / 1_000_000);
            t = start + SimDuration::from_secs(2);
        }
        assert_eq!(delays, [0, 10, 20, 40, 80, 160, 300, 300]);
    }

    #[test]
    fn a_container_that_ran_ten_minutes_restarts_at_once() {
        let mut b = BackOff::default();
        assert_eq!(b.restart_at(s(0)), s(0));
        assert_eq!(b.restart_at(s(5)), s(15));
        // Its last update was the restart at 15 s; exiting more than 600 s
        // later forgets the entry (HasExpiredFunc: > 600 s).
        assert_eq!(b.restart_at(s(616)), s(616));
        assert_eq!(b.restart_at(s(620)), s(630));
        // Exactly 600 s is not more than 600 s: still in back-off (20 s).
        let mut c = BackOff::default();
        c.restart_at(s(0));
        assert_eq!(c.restart_at(s(600)), s(610));
    }
}
