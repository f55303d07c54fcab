//! Traefik's circuit-breaker middleware (`pkg/middlewares/circuitbreaker`),
//! which wraps `vulcand/oxy` `cbreaker.CircuitBreaker` (cbreaker.go,
//! ratio.go): one breaker per middleware of a router, in front of the whole
//! service, not per server.
//!
//! - **Standby**: every request is served. After each served request,
//!   `checkAndSet` evaluates the condition at most once per `checkPeriod`
//!   (when `now` is after the last check + `checkPeriod`); true → **tripped**
//!   until now + `fallbackDuration`, and `metrics.Reset()`.
//! - **Tripped**: every request gets the fallback (`responseCode`, 503 by
//!   default) and is not recorded. The first request at or after the end of
//!   the fallback turns the breaker **recovering** for `recoveryDuration`
//!   from that moment (`setRecovering`, lazily in `activateFallback`).
//! - **Recovering**: `ratioController.allowRequest` serves a request if
//!   `(allowed + 1) / (allowed + 1 + denied)` stays below
//!   `0.5 · (now − start) / recoveryDuration`: a pass fraction ramping from
//!   0 to 1. Denied requests get the fallback. Served ones are recorded and
//!   checked as in standby, **so the breaker can trip again while
//!   recovering**. The first request after the recovery's end turns it
//!   standby.
//! - The counters are oxy's rolling ones ([`metrics`]): 10 buckets of a
//!   wall-clock second, a latency histogram of 6 × 10 s.

pub mod expression;
pub mod metrics;

use crate::engine::{SimDuration, SimTime};
use crate::policy::Now;
use expression::{Expr, Metric};
use metrics::RtMetrics;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `circuitBreaker` middleware settings, with Traefik's names and defaults
/// (`CircuitBreaker.SetDefaults`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CircuitBreakerParams {
    /// The trip condition: `NetworkErrorRatio()`, `ResponseCodeRatio(a, b,
    /// c, d)`, `LatencyAtQuantileMS(q)` and `RequestThreshold()` compared
    /// with numbers, joined by `&&` and `||`
    /// (`"NetworkErrorRatio() > 0.30"`).
    pub expression: String,
    /// The least time between two evaluations. Default 100ms.
    #[serde(default = "default_check_period")]
    pub check_period: SimDuration,
    /// How long the breaker answers with the fallback once tripped. Default 10s.
    #[serde(default = "ten_s")]
    pub fallback_duration: SimDuration,
    /// How long traffic ramps back once the fallback ends. Default 10s.
    #[serde(default = "ten_s")]
    pub recovery_duration: SimDuration,
    /// The fallback's status. Default 503.
    #[serde(default = "default_code")]
    pub response_code: u16,
}

fn default_check_period() -> SimDuration {
    SimDuration::from_millis(100)
}
fn ten_s() -> SimDuration {
    SimDuration::from_secs(10)
}
fn default_code() -> u16 {
    503
}

impl CircuitBreakerParams {
    /// The condition, parsed (errors name the column).
    pub fn condition(&self) -> Result<Expr, expression::ExprError> {
        expression::parse(&self.expression)
    }

    /// Checks with the field names relative to the middleware.
    pub fn validate(&self) -> Result<(), (String, String)> {
        self.condition().map_err(|e| {
            (
                "expression".to_string(),
                format!(
                    "does not parse: {e} in \"{}\" (Traefik: `vulcand/oxy` cbreaker)",
                    self.expression
                ),
            )
        })?;
        for (f, d) in [
            ("checkPeriod", self.check_period),
            ("fallbackDuration", self.fallback_duration),
            ("recoveryDuration", self.recovery_duration),
        ] {
            if d.is_zero() {
                return Err((f.into(), "must be positive".into()));
            }
        }
        if !(100..=599).contains(&self.response_code) {
            return Err((
                "responseCode".into(),
                format!("is an HTTP status (100–599), found {}", self.response_code),
            ));
        }
        Ok(())
    }
}

/// The breaker's state (`cbState`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum State {
    Standby,
    Tripped,
    Recovering,
}

/// A change of state, for the gateway's metrics and log.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Tripped,
    Recovering,
    Standby,
}

/// `ratioController`.
#[derive(Clone, Debug)]
struct Ratio {
    start: SimTime,
    allowed: u64,
    denied: u64,
}

/// One breaker.
#[derive(Clone, Debug)]
pub struct CircuitBreaker {
    condition: Expr,
    check_period: SimDuration,
    fallback: SimDuration,
    recovery: SimDuration,
    pub response_code: u16,
    state: State,
    until: SimTime,
    ratio: Ratio,
    /// `lastCheck`: `None` is Go's zero time (the first record checks).
    last_check: Option<SimTime>,
    metrics: RtMetrics,
}

impl CircuitBreaker {
    /// The breaker of `p`, whose expression must parse (validated models do).
    pub fn new(p: &CircuitBreakerParams) -> Result<Self, expression::ExprError> {
        let condition = p.condition()?;
        let latency = condition
            .metrics()
            .iter()
            .any(|m| matches!(m, Metric::LatencyAtQuantileMs(_)));
        Ok(CircuitBreaker {
            condition,
            check_period: p.check_period,
            fallback: p.fallback_duration,
            recovery: p.recovery_duration,
            response_code: p.response_code,
            state: State::Standby,
            until: SimTime::ZERO,
            ratio: Ratio {
                start: SimTime::ZERO,
                allowed: 0,
                denied: 0,
            },
            last_check: None,
            metrics: RtMetrics::new(latency),
        })
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// `activateFallback`, negated: is this request served? Also returns
    /// the change of state it made, if any.
    pub fn admit(&mut self, now: Now) -> (bool, Option<Change>) {
        let t = now.t;
        let mut change = None;
        if self.state == State::Standby {
            return (true, None);
        }
        if self.state == State::Tripped {
            if t < self.until {
                return (false, None);
            }
            // setRecovering: the ramp starts with this request.
            self.state = State::Recovering;
            self.until = t + self.recovery;
            self.ratio = Ratio {
                start: t,
                allowed: 0,
                denied: 0,
            };
            change = Some(Change::Recovering);
        }
        if t > self.until {
            self.state = State::Standby;
            return (true, Some(Change::Standby));
        }
        (self.allow(t), change)
    }

    /// `ratioController.allowRequest`.
    fn allow(&mut self, t: SimTime) -> bool {
        let r = &mut self.ratio;
        let target = 0.5 * t.saturating_since(r.start).as_micros() as f64
            / self.recovery.as_micros().max(1) as f64;
        let e = (r.allowed + 1) as f64 / (r.allowed + 1 + r.denied) as f64;
        if e < target {
            r.allowed += 1;
            true
        } else {
            r.denied += 1;
            false
        }
    }

    /// A served request ended with `status` after `latency` (`serve`:
    /// `metrics.Record`, then `checkAndSet`); returns the trip it caused.
    pub fn record(&mut self, now: Now, status: u16, latency: SimDuration) -> Option<Change> {
        self.metrics.record(now.t, now.wall_s, status, latency);
        self.check_and_set(now)
    }

    fn check_and_set(&mut self, now: Now) -> Option<Change> {
        if self.last_check.is_some_and(|l| now.t <= l) {
            return None;
        }
        self.last_check = Some(now.t + self.check_period);
        if self.state == State::Tripped {
            return None;
        }
        if !self.condition.eval(&mut self.metrics.at(now.wall_s)) {
            return None;
        }
        self.state = State::Tripped;
        self.until = now.t + self.fallback;
        self.metrics.reset(now.t);
        Some(Change::Tripped)
    }
}

#[cfg(test)]
mod tests;
