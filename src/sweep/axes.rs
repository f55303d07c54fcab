//! Sweep axes: a list or a range of values for one model path, or a zip
//! of such axes that vary together, expanded into columns of cells. Ranges
//! expand by index (`from + i*step`), never by repeated addition.

use crate::engine::SimDuration;
use crate::engine::time::parse_duration;
use crate::spec::{AxisSpec, RangeSpec};
use serde_json::{Number, Value};
use std::collections::BTreeSet;
use std::fmt;

/// At most this many values per axis (a `range` that expands to more is refused).
pub const MAX_AXIS_VALUES: u64 = 10_000;

/// One column of the grid: a model path and its values in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub path: String,
    /// What is written into the model document.
    pub values: Vec<Value>,
    /// What the outputs show: the label, or the value itself.
    pub cells: Vec<Value>,
}

/// An axis after expansion: one column, or several (a zip) that take their
/// i-th values together.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub columns: Vec<Column>,
}

impl Axis {
    pub fn len(&self) -> usize {
        self.columns[0].values.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Expands an axis. `Err((field, reason))` names the field relative to the axis.
pub fn expand_axis(a: &AxisSpec) -> Result<Axis, (String, String)> {
    let Some(members) = &a.zip else {
        return Ok(Axis {
            columns: vec![expand_column(a)?],
        });
    };
    if a.path.is_some() || a.values.is_some() || a.range.is_some() || a.labels.is_some() {
        return Err((
            "zip".into(),
            "a zipped axis holds only `zip`; give `path`, `values` or `range`, and `labels` in each of its members".into(),
        ));
    }
    if members.is_empty() {
        return Err(("zip".into(), "must list at least one axis".into()));
    }
    let mut columns = Vec::with_capacity(members.len());
    for (j, m) in members.iter().enumerate() {
        if m.zip.is_some() {
            return Err((format!("zip[{j}].zip"), "zips do not nest".into()));
        }
        let col = expand_column(m).map_err(|(f, r)| (format!("zip[{j}].{f}"), r))?;
        columns.push(col);
    }
    let n = columns[0].values.len();
    for (j, c) in columns.iter().enumerate().skip(1) {
        if c.values.len() != n {
            return Err((
                format!("zip[{j}]"),
                format!(
                    "has {} values but zip[0] has {n}: zipped axes vary together and need as many values",
                    c.values.len()
                ),
            ));
        }
    }
    Ok(Axis { columns })
}

fn expand_column(a: &AxisSpec) -> Result<Column, (String, String)> {
    let path = a.path.clone().ok_or_else(|| {
        (
            "path".to_string(),
            "missing: name the model field to vary, e.g. \"policy.max_fails\" (or give `zip`)"
                .to_string(),
        )
    })?;
    if path.trim().is_empty() {
        return Err(("path".into(), "must not be empty".into()));
    }
    if path == "seed" {
        return Err((
            "path".into(),
            "a sweep does not vary the model's `seed`: runs are seeded from the sweep's `seed`, `seeds` and `reps`".into(),
        ));
    }
    let values = match (&a.values, &a.range) {
        (Some(_), Some(_)) => {
            return Err((
                "range".into(),
                "give either `values` or `range`, not both".into(),
            ));
        }
        (None, None) => {
            return Err((
                "values".into(),
                "missing: give `values` (a list) or `range` ({\"from\", \"to\", \"step\"})".into(),
            ));
        }
        (Some(v), None) => {
            if v.is_empty() {
                return Err(("values".into(), "must not be empty".into()));
            }
            if v.len() as u64 > MAX_AXIS_VALUES {
                return Err((
                    "values".into(),
                    format!("has {} values, more than {MAX_AXIS_VALUES}", v.len()),
                ));
            }
            v.clone()
        }
        (None, Some(r)) => expand_range(r).map_err(|(f, r)| (format!("range{f}"), r))?,
    };
    let cells = match &a.labels {
        None => values.clone(),
        Some(labels) => {
            if labels.len() != values.len() {
                return Err((
                    "labels".into(),
                    format!(
                        "has {} labels for {} values: give one label per value",
                        labels.len(),
                        values.len()
                    ),
                ));
            }
            let mut seen = BTreeSet::new();
            for l in labels {
                if l.trim().is_empty() {
                    return Err(("labels".into(), "a label must not be empty".into()));
                }
                if !seen.insert(l.as_str()) {
                    return Err(("labels".into(), format!("duplicate label \"{l}\"")));
                }
            }
            labels.iter().cloned().map(Value::String).collect()
        }
    };
    Ok(Column {
        path,
        values,
        cells,
    })
}

/// Expands a range by index (`from + i*step`, never by repeated addition), `to`
/// included when a step lands on it. `Err((field, reason))`, field being
/// `""`, `".from"`, `".to"` or `".step"`.
pub fn expand_range(r: &RangeSpec) -> Result<Vec<Value>, (String, String)> {
    match (&r.from, &r.to, &r.step) {
        (Value::Number(f), Value::Number(t), Value::Number(s)) => {
            match (f.as_i64(), t.as_i64(), s.as_i64()) {
                (Some(f), Some(t), Some(s)) => int_range(f, t, s),
                _ => float_range(f, t, s),
            }
        }
        (Value::String(f), Value::String(t), Value::String(s)) => duration_range(f, t, s),
        _ => Err((
            String::new(),
            "`from`, `to` and `step` must be all numbers or all durations such as \"5s\"".into(),
        )),
    }
}

fn check_count(n: u128) -> Result<usize, (String, String)> {
    if n > MAX_AXIS_VALUES as u128 {
        return Err((
            String::new(),
            format!("expands to {n} values, more than {MAX_AXIS_VALUES} per axis"),
        ));
    }
    Ok(n as usize)
}

fn empty_range(
    from: impl fmt::Display,
    to: impl fmt::Display,
    step: impl fmt::Display,
) -> (String, String) {
    (
        String::new(),
        format!("is empty: from {from} never reaches {to} by steps of {step}"),
    )
}

fn zero_step() -> (String, String) {
    (".step".into(), "must not be zero".into())
}

fn int_range(from: i64, to: i64, step: i64) -> Result<Vec<Value>, (String, String)> {
    if step == 0 {
        return Err(zero_step());
    }
    let span = to as i128 - from as i128;
    if span != 0 && span.signum() != (step as i128).signum() {
        return Err(empty_range(from, to, step));
    }
    let n = check_count((span / step as i128) as u128 + 1)?;
    Ok((0..n as i128)
        .map(|i| Value::from((from as i128 + i * step as i128) as i64))
        .collect())
}

/// Digits after the decimal point in a number's shortest form (`0.25` → 2).
fn decimals(n: &Number) -> Option<u32> {
    let s = n.to_string();
    if s.contains(['e', 'E']) {
        return None;
    }
    Some(s.split_once('.').map_or(0, |(_, frac)| frac.len() as u32))
}

fn float_range(f: &Number, t: &Number, s: &Number) -> Result<Vec<Value>, (String, String)> {
    let (from, to, step) = match (f.as_f64(), t.as_f64(), s.as_f64()) {
        (Some(a), Some(b), Some(c)) if a.is_finite() && b.is_finite() && c.is_finite() => (a, b, c),
        _ => return Err((String::new(), "must be finite numbers".into())),
    };
    if step == 0.0 {
        return Err(zero_step());
    }
    // `to - from` overflows to infinity for ranges across most of the f64
    // range (-1e308 to 1e308); each end over the step does not.
    let steps = match (to - from) / step {
        s if s.is_finite() => s,
        _ => to / step - from / step,
    };
    if steps < -1e-9 {
        return Err(empty_range(f, t, s));
    }
    // `to - from` may overflow to infinity, and a tiny step gives a count no
    // integer holds: compare as a float before converting.
    if !steps.is_finite() || steps >= MAX_AXIS_VALUES as f64 {
        return Err((
            String::new(),
            format!(
                "expands to {} values, more than {MAX_AXIS_VALUES} per axis",
                if steps.is_finite() {
                    format!("about {:.1e}", steps + 1.0)
                } else {
                    "infinitely many".into()
                }
            ),
        ));
    }
    let n = check_count((steps + 1e-9).floor() as u128 + 1)?;
    // Round to the precision the user wrote, so 0.1 steps give 0.3, not 0.30000000000000004.
    let digits = match (decimals(f), decimals(s)) {
        (Some(a), Some(b)) => a.max(b).min(15),
        _ => 15,
    };
    let scale = 10f64.powi(digits as i32);
    (0..n)
        .map(|i| {
            let mut x = from + i as f64 * step;
            if !x.is_finite() {
                // `i × step` alone may overflow while the value does not.
                x = 2.0 * (from / 2.0 + i as f64 * (step / 2.0));
            }
            // Beyond about 1e293, scaling overflows; such numbers have no decimals to round.
            let rounded = (x * scale).round() / scale;
            let x = if rounded.is_finite() { rounded } else { x };
            Number::from_f64(x)
                .map(Value::Number)
                .ok_or_else(|| (String::new(), "must be finite numbers".into()))
        })
        .collect()
}

fn duration_range(f: &str, t: &str, s: &str) -> Result<Vec<Value>, (String, String)> {
    let parse =
        |field: &str, text: &str| parse_duration(text).map_err(|e| (format!(".{field}"), e));
    let from = parse("from", f)?.as_micros();
    let to = parse("to", t)?.as_micros();
    let step = parse("step", s)?.as_micros();
    if step == 0 {
        return Err(zero_step());
    }
    if to < from {
        return Err(empty_range(f, t, s));
    }
    let n = check_count(((to - from) / step) as u128 + 1)?;
    Ok((0..n as u64)
        .map(|i| Value::String(SimDuration::from_micros(from + i * step).to_string()))
        .collect())
}

/// The per-axis value indices of point `p`, the last axis varying fastest.
pub fn point_indices(lens: &[usize], mut p: usize) -> Vec<usize> {
    let mut idx = vec![0; lens.len()];
    for (slot, &len) in idx.iter_mut().zip(lens).rev() {
        *slot = p % len;
        p /= len;
    }
    idx
}

/// Numbers as people write them: `3`, `0.25`, never `3.0` or `-0`.
pub fn fmt_f64(x: f64) -> String {
    if x == 0.0 { "0".into() } else { format!("{x}") }
}

pub fn fmt_number(n: &Number) -> String {
    match (n.as_u64(), n.as_i64(), n.as_f64()) {
        (Some(u), _, _) => u.to_string(),
        (_, Some(i), _) => i.to_string(),
        (_, _, Some(f)) => fmt_f64(f),
        _ => n.to_string(),
    }
}

/// An axis value in a CSV cell: strings bare, numbers as numbers, sections as compact JSON.
pub fn cell_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => fmt_number(n),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn range(from: Value, to: Value, step: Value) -> Result<Vec<Value>, (String, String)> {
        expand_range(&RangeSpec { from, to, step })
    }

    #[test]
    fn astronomically_long_float_ranges_are_refused() {
        for (from, to, step) in [
            (json!(0), json!(1), json!(1e-300)),
            (json!(-1e308), json!(1e308), json!(1e300)),
            (json!(0), json!(1e40), json!(1)),
            (json!(0.0), json!(1.0), json!(5e-5)),
        ] {
            let e = range(from.clone(), to, step).unwrap_err();
            assert!(e.1.contains("more than 10000 per axis"), "{from}: {e:?}");
        }
        assert_eq!(range(json!(0), json!(1), json!(0.25)).unwrap().len(), 5);
        // Across the whole f64 range without overflowing: 21 values.
        let v = range(json!(-1e308), json!(1e308), json!(1e307)).unwrap();
        assert_eq!(v.len(), 21);
        assert_eq!(v[20], json!(1e308));
    }

    #[test]
    fn integer_ranges_include_their_end_and_go_both_ways() {
        assert_eq!(
            range(json!(1), json!(5), json!(2)).unwrap(),
            vec![json!(1), json!(3), json!(5)]
        );
        assert_eq!(
            range(json!(1), json!(6), json!(2)).unwrap(),
            vec![json!(1), json!(3), json!(5)]
        );
        assert_eq!(
            range(json!(3), json!(1), json!(-1)).unwrap(),
            vec![json!(3), json!(2), json!(1)]
        );
        assert_eq!(range(json!(4), json!(4), json!(1)).unwrap(), vec![json!(4)]);
    }

    #[test]
    fn float_ranges_are_expanded_by_index_not_by_addition() {
        let v = range(json!(0.0), json!(1.0), json!(0.1)).unwrap();
        assert_eq!(v.len(), 11, "1.0 is reached despite 0.1 not being exact");
        assert_eq!(v[3], json!(0.3));
        assert_eq!(v[10], json!(1.0));
        let v = range(json!(0.001), json!(0.01), json!(0.003)).unwrap();
        assert_eq!(
            v,
            vec![json!(0.001), json!(0.004), json!(0.007), json!(0.01)]
        );
        let v = range(json!(1.0), json!(0.0), json!(-0.25)).unwrap();
        assert_eq!(v.len(), 5);
        assert_eq!(v[4], json!(0.0));
    }

    #[test]
    fn duration_ranges_use_units() {
        let v = range(json!("1s"), json!("3s"), json!("500ms")).unwrap();
        assert_eq!(
            v,
            vec![
                json!("1s"),
                json!("1.5s"),
                json!("2s"),
                json!("2.5s"),
                json!("3s")
            ]
        );
    }

    #[test]
    fn bad_ranges_are_refused() {
        let e = range(json!(1), json!(5), json!(0)).unwrap_err();
        assert_eq!(e.0, ".step");
        assert!(e.1.contains("zero"), "{e:?}");
        let e = range(json!(5), json!(1), json!(1)).unwrap_err();
        assert!(e.1.contains("is empty"), "{e:?}");
        let e = range(json!(0), json!(1_000_000), json!(1)).unwrap_err();
        assert!(e.1.contains("more than 10000"), "{e:?}");
        let e = range(json!("1s"), json!("1h"), json!("1ms")).unwrap_err();
        assert!(e.1.contains("more than 10000"), "{e:?}");
        let e = range(json!("1s"), json!(10), json!("1s")).unwrap_err();
        assert!(e.1.contains("all numbers or all durations"), "{e:?}");
        let e = range(json!("1s"), json!("10"), json!("1s")).unwrap_err();
        assert_eq!(e.0, ".to");
        let e = range(json!("0s"), json!("10s"), json!("0s")).unwrap_err();
        assert_eq!(e.0, ".step");
    }

    fn axis(v: Value) -> Result<Axis, (String, String)> {
        expand_axis(&serde_json::from_value(v).unwrap())
    }

    #[test]
    fn zipped_axes_vary_together() {
        let a = axis(json!({"zip": [
            {"path": "gateway.proxy_connect_timeout", "values": ["1s", "5s"]},
            {"path": "gateway.proxy_read_timeout", "range": {"from": "10s", "to": "50s", "step": "40s"}}
        ]}))
        .unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a.columns[1].values, vec![json!("10s"), json!("50s")]);
        let e = axis(json!({"zip": [
            {"path": "a", "values": [1, 2]},
            {"path": "b", "values": [1, 2, 3]}
        ]}))
        .unwrap_err();
        assert_eq!(e.0, "zip[1]");
        assert!(e.1.contains("has 3 values but zip[0] has 2"), "{e:?}");
        let e = axis(json!({"path": "a", "zip": [{"path": "b", "values": [1]}]})).unwrap_err();
        assert!(e.1.contains("holds only `zip`"), "{e:?}");
        let e = axis(json!({"zip": [{"zip": []}]})).unwrap_err();
        assert_eq!(e.0, "zip[0].zip");
    }

    #[test]
    fn labels_name_section_values() {
        let a = axis(json!({"path": "policy", "values": [{"kind": "none"}, {"kind": "max_fails"}], "labels": ["off", "nginx"]})).unwrap();
        assert_eq!(a.columns[0].cells, vec![json!("off"), json!("nginx")]);
        assert_eq!(a.columns[0].values[0], json!({"kind": "none"}));
        let e = axis(json!({"path": "policy", "values": [1, 2], "labels": ["x"]})).unwrap_err();
        assert_eq!(e.0, "labels");
        let e =
            axis(json!({"path": "policy", "values": [1, 2], "labels": ["x", "x"]})).unwrap_err();
        assert!(e.1.contains("duplicate label"), "{e:?}");
        let e = axis(json!({"path": "p", "values": [1], "range": {"from": 1, "to": 2, "step": 1}}))
            .unwrap_err();
        assert!(e.1.contains("not both"), "{e:?}");
        let e = axis(json!({"path": "seed", "values": [1]})).unwrap_err();
        assert!(e.1.contains("does not vary the model's `seed`"), "{e:?}");
    }

    #[test]
    fn points_are_row_major_with_the_last_axis_fastest() {
        let lens = [2, 3];
        let all: Vec<Vec<usize>> = (0..6).map(|p| point_indices(&lens, p)).collect();
        assert_eq!(
            all,
            vec![
                vec![0, 0],
                vec![0, 1],
                vec![0, 2],
                vec![1, 0],
                vec![1, 1],
                vec![1, 2]
            ]
        );
        assert_eq!(point_indices(&[], 0), Vec::<usize>::new());
    }
}
