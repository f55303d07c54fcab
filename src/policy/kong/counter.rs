//! One target's health in lua-resty-healthcheck 3.1.2
//! (`lib/resty/healthcheck.lua`): the 32-bit multi-counter and the four
//! internal states, as `incr_counter` moves them.
//!
//! The shm keeps, per target, one 32-bit integer holding four 8-bit
//! counters (`CTR_SUCCESS` 0x01, `CTR_HTTP` 0x100, `CTR_TCP` 0x10000,
//! `CTR_TIMEOUT` 0x1000000) and the state. `incr_counter(health_report,
//! limit, ctr_type)`:
//!
//! 1. a limit of 0 disables the counter: nothing happens;
//! 2. a report towards the state the target is already fully in (a success
//!    while `healthy`, a failure while `unhealthy`) is not counted;
//! 3. `shm:incr(counter, ctr_type)`; the counter read is that byte
//!    (`ctr_get`);
//! 4. a success keeps only the success byte (`MASK_SUCCESS`: every failure
//!    counter is cleared); a failure keeps only the failure bytes
//!    (`MASK_FAILURE`: the success counter is cleared) — so the three
//!    failure kinds accumulate independently, each against its own limit;
//! 5. `ctr >= limit` → the reported state; otherwise `healthy` with a
//!    failure byte set → `mostly_healthy`, `unhealthy` with the success
//!    byte set → `mostly_unhealthy`.
//!
//! The counter is never cleared by a state change; only the opposite kind
//! of report clears it. The limits are the reporter's: active and passive
//! checks share one counter and one state, each compared with its own
//! thresholds.

/// `INTERNAL_STATES`: the four states a target can be in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Health {
    Healthy,
    /// A failure was counted while healthy: still taking traffic.
    MostlyHealthy,
    /// A success was counted while unhealthy: still taking no traffic.
    MostlyUnhealthy,
    Unhealthy,
}

impl Health {
    /// `get_target_status`, and what Kong's balancer makes of the
    /// `healthy` / `unhealthy` events (it ignores the two `mostly_*` ones):
    /// does the target take traffic?
    pub fn routable(self) -> bool {
        matches!(self, Health::Healthy | Health::MostlyHealthy)
    }

    /// The name Kong's events and logs use.
    pub fn name(self) -> &'static str {
        match self {
            Health::Healthy => "healthy",
            Health::MostlyHealthy => "mostly_healthy",
            Health::MostlyUnhealthy => "mostly_unhealthy",
            Health::Unhealthy => "unhealthy",
        }
    }
}

/// Which of the four counters a report increments (`CTR_*`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ctr {
    Success,
    Http,
    Tcp,
    Timeout,
}

impl Ctr {
    /// The counter's unit in the 32-bit integer.
    fn unit(self) -> u32 {
        match self {
            Ctr::Success => 0x0000_0001,
            Ctr::Http => 0x0000_0100,
            Ctr::Tcp => 0x0001_0000,
            Ctr::Timeout => 0x0100_0000,
        }
    }
}

const MASK_FAILURE: u32 = 0xffff_ff00;
const MASK_SUCCESS: u32 = 0x0000_00ff;

/// One target's shm entries: the state and the multi-counter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub health: Health,
    multictr: u32,
}

impl Default for Target {
    /// `add_target(..., is_healthy = true)`: Kong adds every target healthy.
    fn default() -> Self {
        Target {
            health: Health::Healthy,
            multictr: 0,
        }
    }
}

impl Target {
    /// The value of counter `c` (`ctr_get`).
    pub fn count(&self, c: Ctr) -> u32 {
        (self.multictr / c.unit()) & 0xff
    }

    /// `incr_counter`: a report of kind `c` against `limit`. Returns the
    /// new state if it changed (Kong raises an event then).
    pub fn incr(&mut self, c: Ctr, limit: u8) -> Option<Health> {
        if limit == 0 {
            return None;
        }
        let report = if c == Ctr::Success {
            Health::Healthy
        } else {
            Health::Unhealthy
        };
        if report == self.health {
            return None;
        }
        // `shm:incr` on a Lua number: a byte at 255 carries into the next.
        let multictr = self.multictr.wrapping_add(c.unit());
        let ctr = (multictr / c.unit()) & 0xff;
        self.multictr = if c == Ctr::Success {
            multictr & MASK_SUCCESS
        } else {
            multictr & MASK_FAILURE
        };
        let new = if ctr >= limit as u32 {
            Some(report)
        } else if self.health == Health::Healthy && self.multictr & MASK_FAILURE > 0 {
            Some(Health::MostlyHealthy)
        } else if self.health == Health::Unhealthy && self.multictr & MASK_SUCCESS > 0 {
            Some(Health::MostlyUnhealthy)
        } else {
            None
        };
        match new {
            Some(h) if h != self.health => {
                self.health = h;
                Some(h)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_makes_a_healthy_target_mostly_healthy_and_still_routable() {
        let mut t = Target::default();
        assert_eq!(t.incr(Ctr::Http, 3), Some(Health::MostlyHealthy));
        assert!(t.health.routable());
        assert_eq!(t.incr(Ctr::Http, 3), None);
        assert_eq!(t.incr(Ctr::Http, 3), Some(Health::Unhealthy));
        assert!(!t.health.routable());
    }

    #[test]
    fn the_failure_kinds_count_apart_and_a_success_clears_them_all() {
        let mut t = Target::default();
        t.incr(Ctr::Http, 2);
        t.incr(Ctr::Tcp, 2);
        t.incr(Ctr::Timeout, 3);
        assert_eq!(
            (t.count(Ctr::Http), t.count(Ctr::Tcp), t.count(Ctr::Timeout)),
            (1, 1, 1)
        );
        assert_eq!(t.health, Health::MostlyHealthy, "no kind at its limit");
        // `MASK_SUCCESS`: one success (limit 5, not reached) clears every
        // failure counter but leaves the state mostly_healthy.
        assert_eq!(t.incr(Ctr::Success, 5), None);
        assert_eq!(t.health, Health::MostlyHealthy);
        assert_eq!(
            (t.count(Ctr::Http), t.count(Ctr::Tcp), t.count(Ctr::Success)),
            (0, 0, 1)
        );
        // A second TCP failure after the success is the first again.
        t.incr(Ctr::Tcp, 2);
        assert_eq!(t.health, Health::MostlyHealthy);
        assert_eq!(t.incr(Ctr::Tcp, 2), Some(Health::Unhealthy));
    }

    #[test]
    fn unhealthy_ignores_failures_and_a_failure_resets_the_way_back() {
        let mut t = Target::default();
        t.incr(Ctr::Tcp, 1);
        assert_eq!(t.health, Health::Unhealthy);
        assert_eq!(t.incr(Ctr::Tcp, 1), None, "not counted while unhealthy");
        assert_eq!(t.incr(Ctr::Success, 3), Some(Health::MostlyUnhealthy));
        assert!(!t.health.routable(), "mostly_unhealthy takes no traffic");
        t.incr(Ctr::Success, 3);
        // A 404 (an HTTP failure, limit 5 not reached) clears the successes.
        assert_eq!(t.incr(Ctr::Http, 5), None);
        assert_eq!(t.health, Health::MostlyUnhealthy);
        assert_eq!(t.count(Ctr::Success), 0);
        t.incr(Ctr::Success, 3);
        t.incr(Ctr::Success, 3);
        assert_eq!(t.incr(Ctr::Success, 3), Some(Health::Healthy));
        assert_eq!(t.incr(Ctr::Success, 3), None, "not counted while healthy");
    }

    #[test]
    fn a_zero_limit_disables_that_report() {
        let mut t = Target::default();
        assert_eq!(t.incr(Ctr::Timeout, 0), None);
        assert_eq!(t.count(Ctr::Timeout), 0);
        assert_eq!(t.health, Health::Healthy);
    }

    #[test]
    fn limits_are_the_reporters_own_on_one_shared_counter() {
        // Passive http_failures 5, active http_failures 2: two passive
        // failures, then one active failure reaches the active limit.
        let mut t = Target::default();
        t.incr(Ctr::Http, 5);
        t.incr(Ctr::Http, 5);
        assert_eq!(t.incr(Ctr::Http, 2), Some(Health::Unhealthy));
        assert_eq!(t.count(Ctr::Http), 3);
    }
}
