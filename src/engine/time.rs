//! Virtual time: `SimTime` (an instant) and `SimDuration` (a span), integer microseconds.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// Microseconds per second.
pub const MICROS_PER_SEC: u64 = 1_000_000;

/// An instant of virtual time, in microseconds since the start of the run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(u64);

/// A span of virtual time, in microseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_micros(us: u64) -> Self {
        SimTime(us)
    }
    pub const fn as_micros(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / MICROS_PER_SEC as f64
    }
    /// The span from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
    /// The span since the start of the run.
    pub fn since_start(self) -> SimDuration {
        SimDuration(self.0)
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);
    pub const MAX: SimDuration = SimDuration(u64::MAX);

    pub const fn from_micros(us: u64) -> Self {
        SimDuration(us)
    }
    /// For constants: saturates rather than wraps. A number read from a
    /// user's file goes through [`SimDuration::try_from_millis`].
    pub const fn from_millis(ms: u64) -> Self {
        SimDuration(ms.saturating_mul(1_000))
    }
    /// For constants: saturates rather than wraps. A number read from a
    /// user's file goes through [`SimDuration::try_from_secs`].
    pub const fn from_secs(s: u64) -> Self {
        SimDuration(s.saturating_mul(MICROS_PER_SEC))
    }
    /// `us` microseconds of a user's number: at most [`MAX_DURATION_US`],
    /// else the reason, quoting the number as given.
    pub fn try_from_micros(us: u64) -> Result<Self, String> {
        Self::scaled(us as u128, 1, us, "us")
    }
    /// `ms` milliseconds of a user's number (see [`SimDuration::try_from_micros`]).
    pub fn try_from_millis(ms: u64) -> Result<Self, String> {
        Self::scaled(ms as u128, 1_000, ms, "ms")
    }
    /// `s` seconds of a user's number (`periodSeconds: 5`): at most 10⁹ s,
    /// else the reason, quoting `s` (never a product that wrapped).
    pub fn try_from_secs(s: u64) -> Result<Self, String> {
        Self::scaled(s as u128, MICROS_PER_SEC as u128, s, "s")
    }
    /// Whole seconds and nanoseconds, as protobuf's `Duration` and Go's
    /// `time.Duration` write them (`{seconds: 5, nanos: 500000000}`); the
    /// nanoseconds must be whole microseconds and below a second.
    pub fn try_from_secs_nanos(secs: u64, nanos: u64) -> Result<Self, String> {
        if nanos >= 1_000_000_000 {
            return Err(format!(
                "nanos must be below 1000000000 (a second), found {nanos}"
            ));
        }
        if nanos % 1_000 != 0 {
            return Err(format!(
                "{nanos} nanoseconds is finer than the simulator's 1us resolution"
            ));
        }
        let us = secs as u128 * MICROS_PER_SEC as u128 + nanos as u128 / 1_000;
        if us > MAX_DURATION_US as u128 {
            return Err(too_large(&format!("{secs}s {nanos}ns")));
        }
        Ok(SimDuration(us as u64))
    }
    /// Seconds of a user's number that may have a fraction: finite, not
    /// negative, at most 10⁹ s; rounded to the nearest microsecond.
    pub fn try_from_secs_f64(s: f64) -> Result<Self, String> {
        if !s.is_finite() || s < 0.0 {
            return Err(format!(
                "expected a finite, non-negative number of seconds, found {s}"
            ));
        }
        if s * MICROS_PER_SEC as f64 > MAX_DURATION_US as f64 {
            return Err(too_large(&format!("{s}s")));
        }
        Ok(Self::from_secs_f64(s))
    }
    fn scaled(n: u128, scale: u128, shown: u64, unit: &str) -> Result<Self, String> {
        match n.checked_mul(scale) {
            Some(us) if us <= MAX_DURATION_US as u128 => Ok(SimDuration(us as u64)),
            _ => Err(too_large(&format!("{shown}{unit}"))),
        }
    }
    /// Rounds to the nearest microsecond; negative and NaN inputs give zero.
    #[inline]
    pub fn from_secs_f64(s: f64) -> Self {
        // `+ 0.5` then truncation rounds a positive value like `round()`,
        // without a libm call on this hot path (every sampled duration). No
        // branch is needed for the rest: `as` maps NaN and anything below
        // 0.5 µs (so every negative input) to 0, and saturates at the top.
        SimDuration((s * MICROS_PER_SEC as f64 + 0.5) as u64)
    }
    pub const fn as_micros(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / MICROS_PER_SEC as f64
    }
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    /// Whole seconds if the span is an exact number of seconds.
    pub fn whole_secs(self) -> Option<u64> {
        (self.0 % MICROS_PER_SEC == 0).then_some(self.0 / MICROS_PER_SEC)
    }
    pub fn mul_f64(self, k: f64) -> Self {
        Self::from_secs_f64(self.as_secs_f64() * k)
    }
    pub fn saturating_add(self, other: SimDuration) -> Self {
        SimDuration(self.0.saturating_add(other.0))
    }
    pub fn half(self) -> Self {
        SimDuration(self.0 / 2)
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}
impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, d: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(d.0))
    }
}
impl Sub for SimDuration {
    type Output = SimDuration;
    fn sub(self, d: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(d.0))
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}

/// Writes the shortest exact form: `"5s"`, `"300ms"`, `"1.5s"`, `"250us"`.
impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.0;
        if us == 0 {
            f.write_str("0s")
        } else if us % MICROS_PER_SEC == 0 {
            write!(f, "{}s", us / MICROS_PER_SEC)
        } else if us % 1_000 == 0 && us < MICROS_PER_SEC {
            write!(f, "{}ms", us / 1_000)
        } else if us % 1_000 == 0 {
            let ms = format!("{:03}", (us % MICROS_PER_SEC) / 1_000);
            write!(f, "{}.{}s", us / MICROS_PER_SEC, ms.trim_end_matches('0'))
        } else {
            write!(f, "{us}us")
        }
    }
}

/// Parses a duration as nginx and Envoy write them: a sequence of
/// `<number><unit>` parts, units `h`, `m`, `s`, `ms`, `us`; e.g. `"5s"`,
/// `"300ms"`, `"1.5s"`, `"1m30s"`. A bare number is rejected: units are never implicit.
pub fn parse_duration(text: &str) -> Result<SimDuration, String> {
    if let Some(d) = whole_number_and_unit(text) {
        return Ok(d);
    }
    let s = text.trim();
    if s.is_empty() {
        return Err(
            "expected a duration such as \"5s\" or \"300ms\", found an empty string".into(),
        );
    }
    if s.starts_with('-') {
        return Err(format!("durations cannot be negative, found \"{text}\""));
    }
    let bad = || {
        format!(
            "expected a duration with a unit such as \"5s\", \"300ms\" or \"1m30s\", found \"{text}\""
        )
    };
    let too_large = || too_large(text);
    // Exact decimal arithmetic: a duration written by `Display` reads back
    // as the same number of microseconds, however large.
    let mut total: u128 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..num_len];
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let scale: u128 = match unit {
            "h" => 3_600_000_000,
            "m" | "min" => 60_000_000,
            "s" => 1_000_000,
            "ms" => 1_000,
            "us" | "µs" => 1,
            _ => return Err(bad()),
        };
        let (int, frac) = number.split_once('.').unwrap_or((number, ""));
        if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
            return Err(bad());
        }
        let int = int.trim_start_matches('0');
        let frac = frac.trim_end_matches('0');
        if int.len() > 20 {
            return Err(too_large());
        }
        if frac.len() > 20 {
            return Err(format!(
                "duration \"{text}\" is finer than the simulator's 1us resolution"
            ));
        }
        let whole: u128 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| bad())?
        };
        let part: u128 = if frac.is_empty() {
            0
        } else {
            frac.parse().map_err(|_| bad())?
        };
        let denominator = 10u128.pow(frac.len() as u32);
        if (part * scale) % denominator != 0 {
            return Err(format!(
                "duration \"{text}\" is finer than the simulator's 1us resolution"
            ));
        }
        total = total
            .saturating_add(whole.saturating_mul(scale))
            .saturating_add(part * scale / denominator);
    }
    if total > MAX_DURATION_US as u128 {
        return Err(too_large());
    }
    Ok(SimDuration(total as u64))
}

/// The form most durations take, a whole number of at most 12 digits and
/// one unit (`5ms`, `60s`), read without the general loop's u128
/// arithmetic: a model of many nodes reads one per node. `None` for
/// anything else (and for too large a duration), which [`parse_duration`]
/// then reads the general way, to the same value.
fn whole_number_and_unit(text: &str) -> Option<SimDuration> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 12 {
        return None;
    }
    let scale: u64 = match &text[digits..] {
        "h" => 3_600_000_000,
        "m" | "min" => 60_000_000,
        "s" => 1_000_000,
        "ms" => 1_000,
        "us" | "µs" => 1,
        _ => return None,
    };
    let n = text.as_bytes()[..digits]
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    let us = n.checked_mul(scale)?;
    (us <= MAX_DURATION_US).then_some(SimDuration(us))
}

/// Why a duration the user wrote as `text` is refused for its size.
fn too_large(text: &str) -> String {
    format!(
        "duration \"{text}\" is too large: at most \"{}s\" (about 31 years)",
        MAX_DURATION_US / 1_000_000
    )
}

/// The longest duration a model may write, in µs: 10⁹ s.
pub const MAX_DURATION_US: u64 = 1_000_000_000_000_000;

/// What [`parse_duration`] accepts, as a JSON Schema (ECMA 262) pattern.
pub const DURATION_PATTERN: &str =
    r"^\s*(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:h|min|ms|us|µs|m|s))+\s*$";

impl schemars::JsonSchema for SimDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": DURATION_PATTERN,
            "description": "A duration with a unit, as nginx and Envoy write them: h, m (or min), s, ms, us; parts add up (\"1m30s\"). Resolution 1us.",
            "examples": ["5s", "300ms", "1.5s", "1m30s"]
        })
    }
}

impl Serialize for SimDuration {
    /// The text of `Display`. A whole number of one unit (`"5ms"`, `"60s"`:
    /// nearly every duration in a model) is made without the formatting
    /// machinery: a model of 1,000 nodes writes 1,000 service times.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let us = self.0;
        let (n, unit) = if us % MICROS_PER_SEC == 0 {
            (us / MICROS_PER_SEC, "s")
        } else if us % 1_000 != 0 {
            (us, "us")
        } else if us < MICROS_PER_SEC {
            (us / 1_000, "ms")
        } else {
            return s.collect_str(self);
        };
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(n);
        let mut text = [0u8; 24];
        text[..digits.len()].copy_from_slice(digits.as_bytes());
        text[digits.len()..digits.len() + unit.len()].copy_from_slice(unit.as_bytes());
        let text = std::str::from_utf8(&text[..digits.len() + unit.len()])
            .expect("digits and a unit are ASCII");
        s.serialize_str(text)
    }
}

impl<'de> Deserialize<'de> for SimDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = SimDuration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration string with a unit, such as \"5s\" or \"300ms\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SimDuration, E> {
                parse_duration(v).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_serializes_as_it_displays() {
        let mut us = vec![
            0, 1, 7, 999, 1_000, 5_000, 999_000, 1_000_000, 1_001_000, 1_500_000,
        ];
        us.extend([60_000_000, 1_000_001, 123_456_789, u64::MAX, u64::MAX - 615]);
        us.extend((0..2_000).map(|i| i * 997));
        for us in us {
            let d = SimDuration::from_micros(us);
            let json = serde_json::to_string(&d).unwrap();
            assert_eq!(json, format!("\"{d}\""), "{us} us");
        }
    }

    #[test]
    fn the_short_form_reads_as_the_general_one() {
        let general = |t: &str| {
            // The general loop alone: a leading space skips the short form.
            parse_duration(&format!(" {t}"))
        };
        let mut cases = vec![];
        for n in [
            "0",
            "5",
            "007",
            "60",
            "999999999999",
            "1000000000",
            "1000000001",
        ] {
            for u in [
                "h", "m", "min", "s", "ms", "us", "µs", "", "x", "sm", "s ", "mss",
            ] {
                cases.push(format!("{n}{u}"));
            }
        }
        cases.extend(
            ["9999999999999s", "1000000000000000us", "1000000000000001us"].map(String::from),
        );
        for t in cases {
            let short = whole_number_and_unit(&t);
            assert_eq!(parse_duration(&t).ok(), general(&t).ok(), "{t}");
            if let Some(d) = short {
                assert_eq!(Ok(d), general(&t), "{t}");
            }
        }
        assert_eq!(
            whole_number_and_unit("5ms"),
            Some(SimDuration::from_millis(5))
        );
        assert_eq!(whole_number_and_unit("1.5s"), None);
        assert_eq!(whole_number_and_unit("1000000001s"), None, "too large");
    }

    #[test]
    fn parses_nginx_style_durations() {
        assert_eq!(parse_duration("5s").unwrap(), SimDuration::from_secs(5));
        assert_eq!(
            parse_duration("300ms").unwrap(),
            SimDuration::from_millis(300)
        );
        assert_eq!(
            parse_duration("1.5s").unwrap(),
            SimDuration::from_millis(1500)
        );
        assert_eq!(parse_duration("1m30s").unwrap(), SimDuration::from_secs(90));
        assert_eq!(
            parse_duration("250us").unwrap(),
            SimDuration::from_micros(250)
        );
        assert_eq!(parse_duration("0s").unwrap(), SimDuration::ZERO);
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("0.1us").is_err());
    }

    #[test]
    fn displays_shortest_exact_form_and_round_trips() {
        for s in [
            "5s",
            "300ms",
            "1.5s",
            "250us",
            "0s",
            "1.001s",
            "1.01s",
            "134525566.131s",
        ] {
            let d = parse_duration(s).unwrap();
            assert_eq!(d.to_string(), s);
        }
        // every value up to the limit reads back exactly
        let mut x: u64 = 1;
        while x <= 1_000_000_000_000_000 {
            for us in [x, x * 7 / 3, x - 1, x + 999].map(|us| us.min(1_000_000_000_000_000)) {
                let d = SimDuration::from_micros(us);
                assert_eq!(parse_duration(&d.to_string()), Ok(d), "{us}us");
            }
            x *= 10;
        }
    }

    #[test]
    fn parses_decimals_exactly() {
        assert_eq!(
            parse_duration("0.000001s").unwrap(),
            SimDuration::from_micros(1)
        );
        assert_eq!(
            parse_duration(".5s").unwrap(),
            SimDuration::from_millis(500)
        );
        assert_eq!(parse_duration("5.s").unwrap(), SimDuration::from_secs(5));
        assert_eq!(
            parse_duration("1.0000000000000000000000000000s").unwrap(),
            SimDuration::from_secs(1)
        );
        assert_eq!(
            parse_duration("0.0000005h").unwrap(),
            SimDuration::from_micros(1800)
        );
        assert!(parse_duration("0.0000001s").unwrap_err().contains("finer"));
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration(".s").is_err());
        assert!(
            parse_duration("99999999999999999999999h")
                .unwrap_err()
                .contains("too large")
        );
        assert!(
            parse_duration("1000000001s")
                .unwrap_err()
                .contains("too large")
        );
        assert_eq!(
            parse_duration("1000000000s").unwrap(),
            SimDuration::from_secs(1_000_000_000)
        );
    }

    #[test]
    fn seconds_round_to_the_nearest_microsecond() {
        let us = |s: f64| SimDuration::from_secs_f64(s).as_micros();
        assert_eq!(us(1.5e-6), 2);
        assert_eq!(us(1.4999e-6), 1);
        assert_eq!(us(0.0049999), 5000);
        assert_eq!(us(4.9e-7), 0);
        assert_eq!(us(0.0), 0);
        assert_eq!(us(-0.0), 0);
        assert_eq!(us(-1e-7), 0);
        assert_eq!(us(-3.0), 0);
        assert_eq!(us(f64::NAN), 0);
        assert_eq!(us(f64::NEG_INFINITY), 0);
        assert_eq!(us(f64::INFINITY), u64::MAX);
    }

    #[test]
    fn user_numbers_are_checked_and_quoted_as_given() {
        assert_eq!(SimDuration::try_from_secs(5), Ok(SimDuration::from_secs(5)));
        assert_eq!(
            SimDuration::try_from_secs(1_000_000_000),
            Ok(SimDuration::from_secs(1_000_000_000))
        );
        // 288230376151711749 × 10⁶ wraps to 5 s in u64 arithmetic.
        let wraps = 288_230_376_151_711_749u64;
        assert_eq!(
            wraps.wrapping_mul(MICROS_PER_SEC),
            SimDuration::from_secs(5).as_micros()
        );
        let e = SimDuration::try_from_secs(wraps).unwrap_err();
        assert!(e.contains("\"288230376151711749s\" is too large"), "{e}");
        assert!(
            SimDuration::try_from_secs(u64::MAX)
                .unwrap_err()
                .contains(&u64::MAX.to_string())
        );
        assert!(SimDuration::try_from_millis(u64::MAX).is_err());
        assert_eq!(
            SimDuration::try_from_millis(1500),
            Ok(SimDuration::from_millis(1500))
        );
        assert!(SimDuration::try_from_micros(MAX_DURATION_US + 1).is_err());
        // Envoy's `{seconds: 288230376151711745}` wraps to 1 s.
        let e = SimDuration::try_from_secs_nanos(288_230_376_151_711_745, 0).unwrap_err();
        assert!(e.contains("288230376151711745s"), "{e}");
        assert_eq!(
            SimDuration::try_from_secs_nanos(1, 500_000_000),
            Ok(SimDuration::from_millis(1500))
        );
        assert!(SimDuration::try_from_secs_nanos(1, 1_000_000_000).is_err());
        assert!(SimDuration::try_from_secs_nanos(0, 1).is_err());
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1e300] {
            assert!(SimDuration::try_from_secs_f64(bad).is_err(), "{bad}");
        }
        assert_eq!(
            SimDuration::try_from_secs_f64(0.25),
            Ok(SimDuration::from_millis(250))
        );
        // Constants saturate instead of wrapping.
        assert_eq!(SimDuration::from_secs(u64::MAX), SimDuration::MAX);
        assert_eq!(SimDuration::from_millis(u64::MAX), SimDuration::MAX);
    }

    #[test]
    fn time_arithmetic_saturates() {
        let t = SimTime::from_micros(10) + SimDuration::from_micros(5);
        assert_eq!(t.as_micros(), 15);
        assert_eq!(
            SimTime::from_micros(3).saturating_since(SimTime::from_micros(5)),
            SimDuration::ZERO
        );
        assert_eq!((SimTime::MAX + SimDuration::from_secs(1)), SimTime::MAX);
        assert_eq!(SimDuration::from_secs(7).whole_secs(), Some(7));
        assert_eq!(SimDuration::from_millis(7500).whole_secs(), None);
    }
}
