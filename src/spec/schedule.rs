//! `clients.schedule`: an open loop's rate changing over time, checked
//! into (from, rate) steps, and the requests it sends.

use super::model_spec::RateStep;
use crate::engine::{SimDuration, SimTime};

/// The most steps a schedule may have (each is a few bytes; a day of
/// one-second steps fits).
pub const MAX_STEPS: usize = 100_000;

/// The steps in time order, each rate finite and at most 10,000,000 per
/// second; `Err((field, reason))` names the step.
pub fn steps(spec: &[RateStep]) -> Result<Vec<(SimTime, f64)>, (String, String)> {
    if spec.len() > MAX_STEPS {
        return Err((
            "clients.schedule".into(),
            format!("has {} steps, more than {MAX_STEPS}", spec.len()),
        ));
    }
    let mut out: Vec<(SimTime, f64)> = Vec::with_capacity(spec.len());
    for (i, s) in spec.iter().enumerate() {
        let at = SimTime::ZERO + s.at;
        if !(s.rate_per_s.is_finite() && (0.0..=10_000_000.0).contains(&s.rate_per_s)) {
            return Err((
                format!("clients.schedule[{i}].rate_per_s"),
                format!(
                    "must be a number of requests per second from 0 to 10,000,000, found {}",
                    s.rate_per_s
                ),
            ));
        }
        if let Some(&(prev, _)) = out.last()
            && at <= prev
        {
            return Err((
                format!("clients.schedule[{i}].at"),
                format!(
                    "{} is not after the step before ({}): steps go in time order",
                    s.at,
                    prev.since_start()
                ),
            ));
        }
        out.push((at, s.rate_per_s));
    }
    Ok(out)
}

/// Requests sent in `[0, duration)` at `rate` then the steps' rates.
pub fn requests(rate: f64, steps: &[(SimTime, f64)], duration: SimDuration) -> f64 {
    let end = SimTime::ZERO + duration;
    let mut total = 0.0;
    let (mut from, mut r) = (SimTime::ZERO, rate);
    for &(at, next) in steps {
        let to = at.min(end);
        if to > from {
            total += r * to.saturating_since(from).as_secs_f64();
        }
        from = at;
        r = next;
    }
    if end > from {
        total += r * end.saturating_since(from).as_secs_f64();
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(at_ms: u64, rate: f64) -> RateStep {
        RateStep {
            at: SimDuration::from_millis(at_ms),
            rate_per_s: rate,
        }
    }

    #[test]
    fn steps_must_go_forward_with_sane_rates() {
        assert!(steps(&[step(1000, 5.0), step(2000, 0.0)]).is_ok());
        let (f, r) = steps(&[step(2000, 5.0), step(2000, 1.0)]).unwrap_err();
        assert_eq!(f, "clients.schedule[1].at");
        assert!(r.contains("time order"), "{r}");
        let (f, _) = steps(&[step(1000, -1.0)]).unwrap_err();
        assert_eq!(f, "clients.schedule[0].rate_per_s");
    }

    #[test]
    fn requests_add_up_each_step_over_its_span() {
        let s = steps(&[step(1000, 20.0), step(3000, 0.0)]).unwrap();
        // 10/s for 1 s, 20/s for 2 s, then nothing.
        assert_eq!(requests(10.0, &s, SimDuration::from_secs(5)), 50.0);
        assert_eq!(requests(10.0, &s, SimDuration::from_secs(2)), 30.0);
        assert_eq!(requests(10.0, &[], SimDuration::from_secs(2)), 20.0);
    }
}
