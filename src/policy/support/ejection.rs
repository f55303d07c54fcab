//! Envoy's ejection lifecycle (`source/extensions/outlier_detection/`
//! `detector_impl.cc`), which both outlier detection and latency ejection
//! follow: a host ejected at `last_ejection` stays out for `base ×
//! multiplier` capped at `max` (plus its jitter), checked on each interval
//! tick (`checkHostForUneject`); each ejection raises the multiplier while
//! `base × multiplier < max + base` (`ejectHost`); each interval a host
//! spends readmitted lowers it by one (`onIntervalTimer`); and
//! `max_ejection_percent` caps how many hosts may be out at once.

use crate::engine::{SimDuration, SimTime};
use crate::policy::{PolicyCx, PolicyTimer};

/// The timer tag of a detector's interval tick.
pub const TICK: u32 = 0;

/// Arms the next interval tick, `interval` after `now`.
pub fn arm_tick(cx: &mut PolicyCx, now: SimTime, interval: SimDuration) {
    cx.at(
        now + interval,
        PolicyTimer {
            tag: TICK,
            node: 0,
            generation: 0,
        },
    );
}

/// One host's ejection state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ejection {
    pub ejected: bool,
    /// The ejection-time multiplier (`eject_time_backoff`).
    pub backoff: u32,
    pub last_ejection: SimTime,
    pub last_unejection: Option<SimTime>,
    /// This ejection's jitter (`max_ejection_time_jitter`), added to its time.
    pub jitter: SimDuration,
}

/// The ejection times: `base_ejection_time` and `max_ejection_time`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Times {
    pub base: SimDuration,
    pub max: SimDuration,
}

impl Ejection {
    /// `ejectHost`: out from `now`; the multiplier grows while `base ×
    /// multiplier < max + base`. Returns whether the host was out already
    /// (an ejection of an ejected host only restarts its time).
    pub fn eject(&mut self, now: SimTime, t: Times, jitter: SimDuration) -> bool {
        let was = self.ejected;
        self.ejected = true;
        self.last_ejection = now;
        self.jitter = jitter;
        let (base, max) = (t.base.as_micros(), t.max.as_micros());
        if base.saturating_mul(self.backoff as u64) < max.saturating_add(base) {
            self.backoff += 1;
        }
        was
    }

    /// `checkHostForUneject`: an ejected host whose time is up at `now`.
    pub fn due(&self, now: SimTime, t: Times) -> bool {
        if !self.ejected {
            return false;
        }
        let time = SimDuration::from_micros(
            t.base
                .as_micros()
                .saturating_mul(self.backoff as u64)
                .min(t.max.as_micros()),
        ) + self.jitter;
        time <= now.saturating_since(self.last_ejection)
    }

    /// `unejectHost`: back in at `now` (the multiplier stays; it decays).
    pub fn uneject(&mut self, now: SimTime) {
        self.ejected = false;
        self.last_unejection = Some(now);
    }

    /// The end of an interval at `now`: a host readmitted at least an
    /// interval ago has its multiplier lowered by one.
    pub fn decay(&mut self, now: SimTime, interval: SimDuration) {
        if !self.ejected
            && self
                .last_unejection
                .is_some_and(|u| now.saturating_since(u) >= interval)
        {
            self.backoff = self.backoff.saturating_sub(1);
        }
    }
}

/// How `max_ejection_percent` caps ejections; Envoy changed the rule.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Cap {
    /// Envoy ≥ 1.28 (PRs #27624, #27909): `100 × (active + 1) / hosts ≤ max`.
    Strict,
    /// Envoy ≤ 1.27: `100 × active / hosts < max` (the cap can be overshot by one).
    Legacy,
}

/// May one more of `hosts` be ejected while `active` are out, under
/// `max_percent`? `always_one`: one host may always be ejected (Envoy ≥
/// 1.31's `always_eject_one_host`). In integers: the same verdicts as
/// Envoy's doubles, whose quotients of such small integers are exact.
pub fn may_eject(active: u32, hosts: usize, max_percent: u32, cap: Cap, always_one: bool) -> bool {
    let (a, n, max) = (active as u64, hosts as u64, max_percent.min(100) as u64);
    let allowed = match cap {
        Cap::Strict => 100 * (a + 1) <= max * n,
        Cap::Legacy => 100 * a < max * n,
    };
    allowed || (always_one && active == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Times = Times {
        base: SimDuration::from_secs(30),
        max: SimDuration::from_secs(300),
    };

    fn s(x: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_secs(x)
    }

    #[test]
    fn the_ejection_time_grows_with_each_ejection_up_to_max() {
        // detector_impl.cc `ejectHost`: `if (base * backoff < max + base) ++backoff`.
        let mut e = Ejection::default();
        let mut times = vec![];
        let mut t = 0;
        for _ in 0..12 {
            e.eject(s(t), T, SimDuration::ZERO);
            let out = (1..).find(|&d| e.due(s(t + d), T)).unwrap();
            times.push(out);
            e.uneject(s(t + out));
            t += out;
        }
        assert_eq!(&times[..4], [30, 60, 90, 120]);
        assert_eq!(times[9], 300, "capped at max_ejection_time");
        assert_eq!(e.backoff, 11, "the multiplier stops at (max + base) / base");
    }

    #[test]
    fn a_healthy_interval_lowers_the_multiplier() {
        let mut e = Ejection::default();
        e.eject(s(0), T, SimDuration::ZERO);
        e.eject(s(30), T, SimDuration::ZERO);
        e.uneject(s(90));
        e.decay(s(95), SimDuration::from_secs(10));
        assert_eq!(e.backoff, 2, "not yet an interval since readmission");
        e.decay(s(100), SimDuration::from_secs(10));
        assert_eq!(e.backoff, 1);
    }

    #[test]
    fn the_cap_in_both_modes() {
        // 3 hosts at 50 %: strict allows 1, legacy 2 (issue #26877).
        assert!(may_eject(0, 3, 50, Cap::Strict, false));
        assert!(!may_eject(1, 3, 50, Cap::Strict, false));
        assert!(may_eject(1, 3, 50, Cap::Legacy, false));
        assert!(!may_eject(2, 3, 50, Cap::Legacy, false));
        // The default 10 % never ejects a host of fewer than 10, but for always_one.
        assert!(!may_eject(0, 9, 10, Cap::Strict, false));
        assert!(may_eject(0, 9, 10, Cap::Strict, true));
        assert!(!may_eject(1, 9, 10, Cap::Strict, true));
    }
}
