//! The time as a policy sees it: virtual time, and nginx's whole-second wall clock.

use crate::engine::{SimDuration, SimTime};

/// The time as a policy sees it: virtual time and nginx's whole-second wall clock.
#[derive(Copy, Clone, Debug)]
pub struct Now {
    pub t: SimTime,
    /// `ngx_time()`: whole wall-clock seconds (see [`WallClock`]).
    pub wall_s: i64,
}

/// nginx's `ngx_time()`: whole wall-clock seconds. The run starts `phase`
/// into a wall-clock second, at an arbitrary epoch (so that peers' initial
/// `checked = 0` is, as in nginx, long ago).
#[derive(Copy, Clone, Debug)]
pub struct WallClock {
    phase_us: u64,
}

/// The wall-clock second at which every run starts.
pub const WALL_EPOCH_S: i64 = 1_700_000_000;

impl WallClock {
    pub fn new(phase: SimDuration) -> Self {
        WallClock {
            phase_us: phase.as_micros() % 1_000_000,
        }
    }
    pub fn phase(&self) -> SimDuration {
        SimDuration::from_micros(self.phase_us)
    }
    pub fn secs(&self, t: SimTime) -> i64 {
        WALL_EPOCH_S + ((t.as_micros() + self.phase_us) / 1_000_000) as i64
    }
    /// The first instant whose wall-clock second is `s` or later.
    pub fn second_starts(&self, s: i64) -> SimTime {
        let us = (s - WALL_EPOCH_S).saturating_mul(1_000_000) - self.phase_us as i64;
        SimTime::ZERO + SimDuration::from_micros(us.max(0) as u64)
    }
    pub fn now(&self, t: SimTime) -> Now {
        Now {
            t,
            wall_s: self.secs(t),
        }
    }
}
