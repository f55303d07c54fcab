//! Axis ranges shared by all charts: numeric (plain or percent) and categorical, plus number formatting.

use std::ops::Range;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;

/// How numeric tick labels are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumFmt {
    /// `0.25` -> `0.25`
    Plain,
    /// `0.25` -> `25%`
    Percent,
    /// Values are base-10 logarithms; ticks at whole powers of ten (and at 2
    /// and 5 times them when the axis spans under three decades), labelled
    /// with the value itself (`2` -> `100`): a log-scale axis.
    Log10,
    /// Counts: ticks only at whole numbers.
    Int,
}

/// How a numeric axis is scaled: linear, logarithmic, or logarithmic when the
/// values span more than two decades (and are all positive).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AxisScale {
    #[default]
    Auto,
    Linear,
    Log,
}

impl AxisScale {
    /// Whether `values` are drawn on a log axis: only positive values can be,
    /// `Auto` when the largest is over 100 times the smallest.
    pub fn is_log(self, values: impl IntoIterator<Item = f64>) -> bool {
        let mut any = false;
        let mut bounds = None;
        for v in values.into_iter().filter(|v| v.is_finite()) {
            if v <= 0.0 {
                return false;
            }
            any = true;
            bounds = Some(match bounds {
                None => (v, v),
                Some((lo, hi)) => (v.min(lo), v.max(hi)),
            });
        }
        match (self, bounds) {
            (AxisScale::Linear, _) | (_, None) => false,
            (AxisScale::Log, _) => any,
            (AxisScale::Auto, Some((lo, hi))) => hi / lo > 100.0,
        }
    }
}

/// Ticks of a log axis from `lo` to `hi` (base-10 logarithms): the whole
/// powers of ten, with 2× and 5× when there are fewer than three.
pub(crate) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let decades: Vec<f64> = (lo.ceil() as i32..=hi.floor() as i32)
        .map(f64::from)
        .collect();
    if decades.len() >= 3 {
        return decades;
    }
    let mut out = vec![];
    for d in (lo.floor() as i32)..=(hi.ceil() as i32) {
        for m in [1.0f64, 2.0, 5.0] {
            let v = f64::from(d) + m.log10();
            if v >= lo - 1e-9 && v <= hi + 1e-9 {
                out.push(v);
            }
        }
    }
    out
}

/// Round linear ticks (steps of 1, 2 or 5 × 10^k) from `lo` to `hi`, about `n` of them.
pub(crate) fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    // The round step nearest the raw one.
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .min_by(|a, b| (a / raw).ln().abs().total_cmp(&(b / raw).ln().abs()))
        .unwrap_or(mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last)
        .map(|k| {
            let v = k as f64 * step;
            // Round away float noise (0.30000000000000004).
            let digits = (-step.log10().floor()).max(0.0) as i32 + 1;
            let f = 10f64.powi(digits);
            (v * f).round() / f
        })
        .collect()
}

/// One chart axis. Both variants use `f64` values so chart code is written once:
/// a categorical axis places category `i` at value `i as f64` (cells span `i ± 0.5`).
#[derive(Debug, Clone)]
pub(crate) enum Axis {
    Num { range: Range<f64>, fmt: NumFmt },
    Cat { names: Vec<String>, reversed: bool },
}

impl Axis {
    pub(crate) fn num(range: Range<f64>) -> Self {
        Axis::Num {
            range,
            fmt: NumFmt::Plain,
        }
    }

    pub(crate) fn percent(range: Range<f64>) -> Self {
        Axis::Num {
            range,
            fmt: NumFmt::Percent,
        }
    }

    /// A log-scale axis over `range`, given as base-10 logarithms of the values.
    pub(crate) fn log10(range: Range<f64>) -> Self {
        Axis::Num {
            range,
            fmt: NumFmt::Log10,
        }
    }

    /// A count axis: ticks at whole numbers only.
    pub(crate) fn int(range: Range<f64>) -> Self {
        Axis::Num {
            range,
            fmt: NumFmt::Int,
        }
    }

    /// A numeric axis, logarithmic (`range` in base-10 logarithms) or not.
    pub(crate) fn linear_or_log(range: Range<f64>, log: bool) -> Self {
        if log {
            Axis::log10(range)
        } else {
            Axis::num(range)
        }
    }

    /// Categories left-to-right (x) or bottom-to-top (y).
    pub(crate) fn cat(names: &[String]) -> Self {
        Axis::Cat {
            names: names.to_vec(),
            reversed: false,
        }
    }

    /// Categories top-to-bottom when used as a y axis (reading order, like a table).
    pub(crate) fn cat_top_down(names: &[String]) -> Self {
        Axis::Cat {
            names: names.to_vec(),
            reversed: true,
        }
    }

    fn cat_len(names: &[String]) -> f64 {
        names.len().max(1) as f64
    }
}

impl Ranged for Axis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        match self {
            Axis::Num { range, .. } => RangedCoordf64::from(range.clone()).map(value, limit),
            Axis::Cat { names, reversed } => {
                let n = Self::cat_len(names);
                let v = if *reversed { n - 1.0 - value } else { *value };
                let frac = (v + 0.5) / n;
                let span = f64::from(limit.1 - limit.0);
                limit.0 + (frac * span).round() as i32
            }
        }
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match self {
            Axis::Num {
                range,
                fmt: NumFmt::Log10,
            } => {
                let ticks = log_ticks(range.start, range.end);
                if ticks.len() >= 2 && hint.max_num_points() > 1 {
                    ticks
                } else {
                    RangedCoordf64::from(range.clone()).key_points(hint)
                }
            }
            Axis::Num {
                range,
                fmt: NumFmt::Int,
            } => {
                let points: Vec<f64> = RangedCoordf64::from(range.clone())
                    .key_points(hint)
                    .into_iter()
                    .filter(|v| v.fract() == 0.0)
                    .collect();
                if points.len() >= 2 {
                    points
                } else {
                    nice_ticks(range.start, range.end, 4)
                        .into_iter()
                        .map(f64::round)
                        .collect()
                }
            }
            Axis::Num { range, .. } => RangedCoordf64::from(range.clone()).key_points(hint),
            Axis::Cat { names, .. } => {
                let max = hint.max_num_points();
                if names.is_empty() || max == 0 {
                    return Vec::new();
                }
                let step = names.len().div_ceil(max);
                (0..names.len()).step_by(step).map(|i| i as f64).collect()
            }
        }
    }

    fn range(&self) -> Range<f64> {
        match self {
            Axis::Num { range, .. } => range.clone(),
            Axis::Cat { names, .. } => -0.5..Self::cat_len(names) - 0.5,
        }
    }
}

impl ValueFormatter<f64> for Axis {
    fn format_ext(&self, value: &f64) -> String {
        match self {
            Axis::Num {
                fmt: NumFmt::Plain | NumFmt::Int,
                ..
            } => fmt_tick(*value),
            Axis::Num {
                fmt: NumFmt::Percent,
                ..
            } => format!("{}%", fmt_tick(*value * 100.0)),
            Axis::Num {
                fmt: NumFmt::Log10, ..
            } => fmt_tick(10f64.powf(*value)),
            Axis::Cat { names, .. } => {
                let i = value.round();
                if (value - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            }
        }
    }
}

/// Tick label: shortest decimal form without float noise (`0.30000000000000004` -> `0.3`).
pub(crate) fn fmt_tick(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if v != 0.0 && (v.abs() >= 1e7 || v.abs() < 1e-4) {
        return format!("{v:.2e}");
    }
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// Value label with about 3 significant digits: `0.01234` -> `0.0123`, `12.345` -> `12.3`,
/// `123.4` -> `123`, `12345` -> `12.3k`, `1.5e6` -> `1.50M`; `None`/non-finite -> `–`.
pub fn fmt_sig(v: Option<f64>) -> String {
    let Some(v) = v.filter(|v| v.is_finite()) else {
        return "\u{2013}".to_string();
    };
    if v == 0.0 {
        return "0".to_string();
    }
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let a = scaled.abs();
    if a < 1e-3 {
        return format!("{v:.2e}");
    }
    let digits = a.log10().floor() as i32; // 0 for 1..10, -1 for 0.1..1
    let decimals = (2 - digits).clamp(0, 6) as usize;
    format!("{scaled:.decimals$}{suffix}")
}

/// How a value printed in a chart (a heatmap cell, a colour-bar tick) reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ValueFormat {
    /// About three significant digits ([`fmt_sig`]).
    #[default]
    Sig,
    /// Counts: whole numbers without decimals (a median of two counts may be `.5`).
    Integer,
    /// Values already in percent: `42.3` -> `42.3%`.
    Percent,
}

impl ValueFormat {
    pub fn format(self, v: Option<f64>) -> String {
        match (self, v.filter(|v| v.is_finite())) {
            (_, None) => fmt_sig(None),
            (ValueFormat::Integer, Some(v)) if v.fract() == 0.0 && v.abs() < 1e4 => {
                format!("{v:.0}")
            }
            (ValueFormat::Percent, Some(v)) => format!("{}%", fmt_sig(Some(v))),
            (_, v) => fmt_sig(v),
        }
    }

    /// A tick label: the shortest exact form of a round value (`0.04`, `25%`).
    pub fn tick(self, v: f64) -> String {
        match self {
            ValueFormat::Percent => format!("{}%", fmt_tick(v)),
            _ => fmt_tick(v),
        }
    }
}

/// Finite min/max of the values, or `None` if there is none.
pub fn finite_bounds(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

/// A padded plotting range around `bounds` (default `0..1` when there is no data);
/// never empty, optionally forced to include zero.
pub(crate) fn padded_range(bounds: Option<(f64, f64)>, include_zero: bool, pad: f64) -> Range<f64> {
    let (mut lo, mut hi) = bounds.unwrap_or((0.0, 1.0));
    if include_zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        lo -= d;
        hi += d;
    }
    let p = (hi - lo) * pad;
    let new_lo = if include_zero && lo >= 0.0 {
        lo
    } else {
        lo - p
    };
    let new_hi = if include_zero && hi <= 0.0 {
        hi
    } else {
        hi + p
    };
    new_lo..new_hi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sig_formatting() {
        assert_eq!(fmt_sig(Some(0.012345)), "0.0123");
        assert_eq!(fmt_sig(Some(12.345)), "12.3");
        assert_eq!(fmt_sig(Some(123.45)), "123");
        assert_eq!(fmt_sig(Some(1234.4)), "1234");
        assert_eq!(fmt_sig(Some(12345.0)), "12.3k");
        assert_eq!(fmt_sig(Some(-0.5)), "-0.500");
        assert_eq!(fmt_sig(Some(0.0)), "0");
        assert_eq!(fmt_sig(None), "\u{2013}");
        assert_eq!(fmt_sig(Some(f64::NAN)), "\u{2013}");
    }

    #[test]
    fn tick_formatting() {
        assert_eq!(fmt_tick(0.1 + 0.2), "0.3");
        assert_eq!(fmt_tick(100.0), "100");
        assert_eq!(fmt_tick(-0.0), "0");
        let log = Axis::log10(-0.3..3.2);
        assert_eq!(log.format_ext(&2.0), "100");
        assert_eq!(log.key_points(5), [0.0, 1.0, 2.0, 3.0]);
        // Under three decades: 1, 2 and 5 times the powers of ten.
        let short = Axis::log10(-3.0..-0.3);
        let labels: Vec<String> = short
            .key_points(10)
            .iter()
            .map(|v| short.format_ext(v))
            .collect();
        assert_eq!(labels, ["0.001", "0.01", "0.1"]);
        let two = log_ticks(0.0, 1.5);
        let labels: Vec<String> = two.iter().map(|v| fmt_tick(10f64.powf(*v))).collect();
        assert_eq!(labels, ["1", "2", "5", "10", "20"]);
        // Counts never get a 0.5 tick.
        let counts = Axis::int(0.0..1.12);
        assert!(counts.key_points(6).iter().all(|v| v.fract() == 0.0));
        assert_eq!(nice_ticks(0.0, 0.0822, 4), [0.0, 0.02, 0.04, 0.06, 0.08]);
        assert!(AxisScale::Auto.is_log([0.001, 0.5]));
        assert!(!AxisScale::Auto.is_log([0.01, 0.5]));
        assert!(!AxisScale::Log.is_log([0.0, 0.5]));
    }

    #[test]
    fn ranges_never_empty() {
        let r = padded_range(None, false, 0.05);
        assert!(r.end > r.start);
        let r = padded_range(Some((5.0, 5.0)), false, 0.05);
        assert!(r.end > r.start);
        let r = padded_range(Some((2.0, 3.0)), true, 0.05);
        assert_eq!(r.start, 0.0);
        assert!(finite_bounds([f64::NAN, f64::INFINITY]).is_none());
    }
}
