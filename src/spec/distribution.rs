//! Durations drawn from a distribution, checked where the model reads
//! them (`service_time`, a drawn `at`, `restart_delay`, `send_jitter`, a
//! pod's `start_time` and `endpoint_propagation`).

use crate::engine::SimDuration;
use crate::spec::model_spec::{DurationDist, LatencySpec};

/// A field (JSON path) and why its value is refused.
type Invalid = (String, String);

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Invalid {
    (field.into(), reason.into())
}

/// A duration or distribution as the distribution to draw from, checked
/// (`field` names it in errors). `upto`: a fixed duration means "up to it"
/// (uniform from 0), else exactly it.
pub(super) fn drawn(d: &DurationDist, field: &str, upto: bool) -> Result<LatencySpec, Invalid> {
    match *d {
        DurationDist::Fixed(v) if upto => Ok(LatencySpec::Uniform {
            min: SimDuration::ZERO,
            max: v,
        }),
        DurationDist::Fixed(value) => Ok(LatencySpec::Constant { value }),
        DurationDist::Drawn(l) => {
            check_latency(&l).map_err(|(f, r)| (format!("{field}.{f}"), r))?;
            Ok(l)
        }
    }
}

pub(super) fn check_latency(l: &LatencySpec) -> Result<(), Invalid> {
    match l {
        LatencySpec::Constant { .. } => Ok(()),
        LatencySpec::Exponential { mean } => {
            if mean.is_zero() {
                Err(invalid("mean", "must be positive"))
            } else {
                Ok(())
            }
        }
        LatencySpec::Lognormal { median, sigma } => {
            if median.is_zero() {
                Err(invalid("median", "must be positive"))
            } else if !(sigma.is_finite() && *sigma >= 0.0 && *sigma <= 10.0) {
                Err(invalid(
                    "sigma",
                    format!("must be in [0, 10], found {sigma}"),
                ))
            } else {
                Ok(())
            }
        }
        LatencySpec::Uniform { min, max } => {
            if min > max {
                Err(invalid("min", format!("\"{min}\" is above max \"{max}\"")))
            } else {
                Ok(())
            }
        }
    }
}
