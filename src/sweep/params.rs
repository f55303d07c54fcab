//! Command-line grids, `hcsim sweep MODEL --param PATH=LIST ...`: each
//! argument is one axis, a list (`1,2,3`, `1s,5s`) or a range
//! (`FROM..TO[:STEP]`: `1..10`, `1s..10s:1s`), and the grid's name (its
//! output directory) is derived from the model and the arguments.

use super::axes::{MAX_AXIS_VALUES, expand_range};
use crate::engine::time::parse_duration;
use crate::spec::overrides::{FieldPath, Override, parse_value, safe_name};
use crate::spec::{AxisSpec, RangeSpec};
use serde_json::Value;

/// What every `--param` error ends with.
pub const EXPECTED: &str = "expected PATH=LIST, a list a,b,c or a range FROM..TO[:STEP], e.g. policy.max_fails=1,2,3 or policy.fail_timeout=1s..10s:1s";

/// The longest name a command-line grid gets (its output directory).
const MAX_NAME: usize = 120;

/// Parses `--param PATH=LIST` into an axis. `Err` is the reason, without
/// the argument (the caller names it).
pub fn parse_param(arg: &str) -> Result<AxisSpec, String> {
    let (path, list) = arg
        .split_once('=')
        .ok_or_else(|| format!("no `=` between PATH and LIST: {EXPECTED}"))?;
    let (path, list) = (path.trim(), list.trim());
    if path.is_empty() {
        return Err(format!("PATH is empty: {EXPECTED}"));
    }
    FieldPath::parse(path)?;
    if list.is_empty() {
        return Err(format!("the list of values is empty: {EXPECTED}"));
    }
    let items = split_top_level(list);
    let is_range = |s: &str| !s.starts_with(['{', '[', '"']) && s.contains("..");
    let mut axis = AxisSpec {
        path: Some(path.to_string()),
        ..AxisSpec::default()
    };
    if items.len() == 1 && is_range(items[0]) {
        axis.range = Some(parse_range(items[0])?);
        return Ok(axis);
    }
    if items.iter().any(|s| is_range(s.trim())) {
        return Err(format!(
            "mixes a range and a list: give either values a,b,c or one range FROM..TO[:STEP] ({EXPECTED})"
        ));
    }
    if items.len() as u64 > MAX_AXIS_VALUES {
        return Err(format!(
            "has {} values, more than the {MAX_AXIS_VALUES} an axis may have",
            items.len()
        ));
    }
    let mut values = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!("value {} of the list is empty: {EXPECTED}", i + 1));
        }
        // Text that starts like JSON must be JSON, as with --set.
        let value = parse_value(item).map_err(|e| {
            format!(
                "value {} `{item}` is not valid JSON: {}",
                i + 1,
                e.trim_start_matches("VALUE is not valid JSON: ")
            )
        })?;
        values.push(value);
    }
    axis.values = Some(values);
    Ok(axis)
}

/// Splits at the commas that are not inside brackets, braces or a JSON
/// string, so that `{"kind":"none"},{"kind":"max_fails"}` is two values.
fn split_top_level(list: &str) -> Vec<&str> {
    let (mut depth, mut in_str, mut escaped) = (0i32, false, false);
    let mut start = 0;
    let mut out = vec![];
    for (i, c) in list.char_indices() {
        if in_str {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&list[start..]);
    out
}

/// A range bound: a number or a duration.
#[derive(Clone, Debug, PartialEq)]
enum Bound {
    Number(Value),
    Duration(String),
}

impl Bound {
    fn parse(which: &str, text: &str) -> Result<Bound, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err(format!(
                "{which} is missing: expected FROM..TO[:STEP], e.g. 1..10 or 1s..10s:1s"
            ));
        }
        if let Ok(v @ Value::Number(_)) = serde_json::from_str::<Value>(text) {
            return Ok(Bound::Number(v));
        }
        match parse_duration(text) {
            Ok(_) => Ok(Bound::Duration(text.to_string())),
            // A duration past the clock's range says so, not that it is none.
            Err(e) if e.contains("too large") => Err(format!("{which}: {e}")),
            Err(_) => Err(format!(
                "{which} `{text}` is neither a number nor a duration such as 5s or 300ms"
            )),
        }
    }
    fn value(&self) -> Value {
        match self {
            Bound::Number(v) => v.clone(),
            Bound::Duration(s) => Value::String(s.clone()),
        }
    }
    fn is_integer(&self) -> bool {
        matches!(self, Bound::Number(Value::Number(n)) if n.is_i64() || n.is_u64())
    }
    fn same_kind(&self, other: &Bound) -> bool {
        matches!(
            (self, other),
            (Bound::Number(_), Bound::Number(_)) | (Bound::Duration(_), Bound::Duration(_))
        )
    }
}

/// `FROM..TO[:STEP]`: the step defaults to 1 for integers and is required
/// otherwise. The range is expanded here once, so that its errors speak of
/// FROM, TO and STEP rather than of a sweep file's fields.
fn parse_range(text: &str) -> Result<RangeSpec, String> {
    let (from, rest) = text.split_once("..").expect("a range holds `..`");
    let (to, step) = match rest.split_once(':') {
        Some((to, step)) => (to, Some(step)),
        None => (rest, None),
    };
    let from = Bound::parse("FROM", from)?;
    let to = Bound::parse("TO", to)?;
    if !from.same_kind(&to) {
        return Err(format!(
            "FROM and TO must be both numbers or both durations, e.g. 1..10 or 1s..10s:1s; found `{}`",
            text.trim()
        ));
    }
    let step = match step {
        Some(s) => {
            let step = Bound::parse("STEP", s)?;
            if !step.same_kind(&from) {
                return Err(format!(
                    "STEP must be a {} like FROM and TO; found `{}`",
                    if matches!(from, Bound::Number(_)) {
                        "number"
                    } else {
                        "duration"
                    },
                    s.trim()
                ));
            }
            step
        }
        None if from.is_integer() && to.is_integer() => Bound::Number(Value::from(1)),
        None => {
            return Err(format!(
                "a range of {} needs a STEP: FROM..TO:STEP, e.g. {}",
                if matches!(from, Bound::Number(_)) {
                    "decimal numbers"
                } else {
                    "durations"
                },
                if matches!(from, Bound::Number(_)) {
                    "0.1..0.5:0.1"
                } else {
                    "1s..10s:1s"
                }
            ));
        }
    };
    let range = RangeSpec {
        from: from.value(),
        to: to.value(),
        step: step.value(),
    };
    expand_range(&range).map_err(|(field, reason)| match field.as_str() {
        ".from" => format!("FROM {reason}"),
        ".to" => format!("TO {reason}"),
        ".step" => format!("STEP {reason}"),
        _ if reason.starts_with("is empty") && matches!(from, Bound::Number(_)) => {
            format!("the range {reason}; a negative STEP counts down, e.g. 10..1:-1 ({EXPECTED})")
        }
        _ => format!("the range {reason}"),
    })?;
    Ok(range)
}

/// The name of a command-line grid and of its output directory:
/// `<model>-sweep-<param>-<param>...[-with-<set>...]`, each `--param` and
/// `--set` by the short name every output gives an override
/// ([`Override::short`]: `max_fails=1,2,3`, `A.weight=5`; the whole path when
/// two share it). Characters other than letters, digits and `. , = + - _`
/// become `-`; a name that had to be rewritten or is longer than 120 bytes
/// ends with a hash of the arguments, so different grids keep different
/// names.
pub fn grid_name(model: &str, params: &[String], sets: &[Override]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.text().to_string()).collect();
    let mut name = format!("{model}-sweep-{}", describe_args(params));
    if !sets.is_empty() {
        name += &format!("-with-{}", describe_args(&sets));
    }
    let identity = [params, &sets[..]].concat().join("\n");
    safe_name(&name, &identity, MAX_NAME)
}

/// `max_fails=1,2,3-fail_timeout=1s..10s_by_1s`.
fn describe_args(args: &[String]) -> String {
    let split: Vec<(&str, &str)> = args
        .iter()
        .map(|a| a.split_once('=').unwrap_or((a, "")))
        .map(|(p, v)| (p.trim(), v.trim()))
        .collect();
    let short = |p: &str| FieldPath::parse(p).map_or_else(|_| p.to_string(), |f| f.short());
    split
        .iter()
        .map(|(path, value)| {
            let mine = short(path);
            let shared = split.iter().filter(|(p, _)| short(p) == mine).count() > 1;
            let key = if shared { path.to_string() } else { mine };
            let mut value: String = value.split_whitespace().collect();
            if !value.starts_with(['{', '[', '"']) && value.contains("..") {
                value = value.replace(':', "_by_");
            }
            format!("{key}={value}")
        })
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values(arg: &str) -> Vec<Value> {
        parse_param(arg).unwrap().values.unwrap()
    }
    fn range(arg: &str) -> (Value, Value, Value) {
        let r = parse_param(arg).unwrap().range.unwrap();
        (r.from, r.to, r.step)
    }

    #[test]
    fn lists_read_json_values_and_strings() {
        assert_eq!(
            values("policy.max_fails=1,2, 3"),
            [json!(1), json!(2), json!(3)]
        );
        assert_eq!(
            values("policy.fail_timeout=1s,5s"),
            [json!("1s"), json!("5s")]
        );
        assert_eq!(
            values(r#"policy={"kind":"none"},{"kind":"max_fails","max_fails":2}"#),
            [
                json!({"kind": "none"}),
                json!({"kind": "max_fails", "max_fails": 2})
            ]
        );
        assert_eq!(values("faults[0].p=0.1,0.5"), [json!(0.1), json!(0.5)]);
        let a = parse_param(" policy.max_fails = 4 ").unwrap();
        assert_eq!(a.path.as_deref(), Some("policy.max_fails"));
    }

    #[test]
    fn ranges_take_numbers_or_durations() {
        assert_eq!(range("a=1..5"), (json!(1), json!(5), json!(1)));
        assert_eq!(range("a=10..1:-3"), (json!(10), json!(1), json!(-3)));
        assert_eq!(
            range("a=0.1..0.5:0.1"),
            (json!(0.1), json!(0.5), json!(0.1))
        );
        assert_eq!(
            range("a=1s..10s:500ms"),
            (json!("1s"), json!("10s"), json!("500ms"))
        );
    }

    #[test]
    fn bad_params_say_what_was_expected() {
        let cases = [
            ("policy.max_fails", "no `=`"),
            ("=1,2", "PATH is empty"),
            ("policy.max_fails=", "the list of values is empty"),
            ("policy.max_fails=1,,3", "value 2 of the list is empty"),
            ("policy={\"kind\":1", "is not valid JSON"),
            ("a=1..5,7", "mixes a range and a list"),
            (
                "a=5..1",
                "the range is empty: from 5 never reaches 1 by steps of 1; a negative STEP counts down",
            ),
            (
                "a=1..100000",
                "the range expands to 100000 values, more than 10000 per axis",
            ),
            ("a=1..5:0", "STEP must not be zero"),
            (
                "a=1s..10",
                "FROM and TO must be both numbers or both durations",
            ),
            ("a=1s..10s:1", "STEP must be a duration like FROM and TO"),
            ("a=1s..10s", "a range of durations needs a STEP"),
            ("a=0.1..0.5", "a range of decimal numbers needs a STEP"),
            ("a=x..5", "FROM `x` is neither a number nor a duration"),
            (
                "a=1s..288230376151711749s:1s",
                "TO: duration \"288230376151711749s\" is too large: at most",
            ),
            ("a=1..", "TO is missing"),
            ("a=10s..1s:1s", "the range is empty"),
        ];
        for (arg, want) in cases {
            let e = parse_param(arg).unwrap_err();
            assert!(e.contains(want), "{arg}: {e}");
        }
        assert!(parse_param("a").unwrap_err().ends_with(EXPECTED));
    }

    #[test]
    fn grid_names_are_short_safe_and_deterministic() {
        let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            grid_name(
                "crash-10s-of-3",
                &p(&["policy.max_fails=1,2,3", "policy.fail_timeout=1s..10s:1s"]),
                &[]
            ),
            "crash-10s-of-3-sweep-max_fails=1,2,3-fail_timeout=1s..10s_by_1s"
        );
        let set = [Override::parse("clients.rate_per_s=10000").unwrap()];
        assert_eq!(
            grid_name("m", &p(&["nodes.A.weight=1,2", "nodes.B.weight=3"]), &set),
            "m-sweep-A.weight=1,2-B.weight=3-with-rate_per_s=10000"
        );
        assert_eq!(
            grid_name("m", &p(&["nodes.A.weight=1,2", "gateway.A.weight=3"]), &[]),
            "m-sweep-nodes.A.weight=1,2-gateway.A.weight=3",
            "two that share a short name keep their paths"
        );
        let json = grid_name("m", &p(&[r#"policy={"kind": "none"}"#]), &[]);
        assert!(json.starts_with("m-sweep-policy=-kind-none-"), "{json}");
        let long: Vec<String> = (0..40).map(|i| format!("a{i}=1,2")).collect();
        let n = grid_name("m", &long, &[]);
        assert_eq!(n.len(), MAX_NAME);
        assert_eq!(n, grid_name("m", &long, &[]));
        let mut other = long.clone();
        other[39] = "a39=1,3".into();
        assert_ne!(n, grid_name("m", &other, &[]), "the hash tells them apart");
    }
}
