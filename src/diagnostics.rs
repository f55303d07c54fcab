//! Messages for bad model files: full JSON paths through tagged enums, and
//! "did you mean" suggestions for unknown names.
//!
//! serde deserializes an internally tagged enum (`{"kind": "flaky", ...}`) by
//! buffering the object, reading the tag, then deserializing the variant from
//! the buffer, so a path tracker outside sees only `faults[0]`. Each variant of
//! such an enum therefore reads its body through [`tracked`] (or [`no_fields`]
//! for a variant without fields): it runs a tracker of its own and passes the
//! relative path (`p`) up inside the error, and [`describe`] joins the two
//! paths back together: `faults[0].p: invalid type: string "x", expected f64`.
//!
//! ```text
//! #[serde(tag = "kind", rename_all = "snake_case")]
//! pub enum FaultSpec {
//!     #[serde(deserialize_with = "crate::diagnostics::tracked")]
//!     Flaky(FlakySpec),
//! }
//! ```
//!
//! A variant without the attribute still works, with a shorter path
//! (`faults[0]`); `tests/it/schema.rs` finds such variants.

use serde::de::{Deserialize, Deserializer, Error as _, IgnoredAny};
use std::collections::BTreeMap;

/// Separates the relative path from the message inside a tracked error.
const MARK: char = '\u{1}';

/// Deserializes a tagged enum's variant body, keeping the JSON path of an
/// error inside it (see the module docs). Use with `deserialize_with` on
/// newtype variants; struct variants wrap a mirror struct with it.
pub fn tracked<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let mut track = serde_path_to_error::Track::new();
    T::deserialize(serde_path_to_error::Deserializer::new(d, &mut track)).map_err(|e| {
        let (path, msg) = join(&track.path().to_string(), &e.to_string());
        D::Error::custom(format!("{MARK}{}{MARK}{msg}", without_mark(&path)))
    })
}

/// The body of a tagged variant that has no fields: anything besides the tag
/// is an unknown field (serde alone would ignore it).
pub fn no_fields<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    let rest = BTreeMap::<String, IgnoredAny>::deserialize(d)?;
    match rest.keys().next() {
        None => Ok(()),
        Some(k) => Err(D::Error::custom(format!(
            "{MARK}{}{MARK}unknown field `{k}`, there are no fields",
            without_mark(k)
        ))),
    }
}

/// A key from the file may contain anything, even the marker.
fn without_mark(path: &str) -> String {
    path.replace(MARK, "\\u0001")
}

/// Joins an outer path (serde_path_to_error's display: `.` for the root,
/// `faults[0]`) with the relative path a tracked variant put in `msg`.
/// Returns the full path (empty for the root) and the bare message.
pub fn join(outer: &str, msg: &str) -> (String, String) {
    let mut path = if outer == "." {
        String::new()
    } else {
        outer.to_string()
    };
    let mut msg = msg;
    while let Some(rest) = msg.strip_prefix(MARK) {
        let Some((inner, tail)) = rest.split_once(MARK) else {
            break;
        };
        if !inner.is_empty() && inner != "." {
            if !path.is_empty() && !inner.starts_with('[') {
                path.push('.');
            }
            path.push_str(inner);
        }
        msg = tail;
    }
    (path, msg.to_string())
}

/// The full path and message of a path-tracked serde error, with a
/// suggestion for an unknown name.
pub fn describe<E: std::fmt::Display>(e: &serde_path_to_error::Error<E>) -> (String, String) {
    let (path, msg) = join(&e.path().to_string(), &e.inner().to_string());
    (path, with_number_hint(&with_suggestion(&msg)))
}

/// Appends "(did you mean 10000?)" to serde's `invalid type: string "10k",
/// expected f64` (or any number type) when the string is a number with a
/// k, M or G suffix: JSON numbers take none.
pub fn with_number_hint(msg: &str) -> String {
    if let Some(rest) = msg.strip_prefix("invalid type: floating point `") {
        return with_integer_hint(msg, rest);
    }
    let Some(rest) = msg.strip_prefix("invalid type: string \"") else {
        return msg.to_string();
    };
    let Some((text, expected)) = rest.split_once("\", expected ") else {
        return msg.to_string();
    };
    let numeric = [
        "f64", "f32", "u64", "u32", "u16", "u8", "usize", "i64", "i32",
    ];
    if !numeric.iter().any(|t| expected.starts_with(t)) {
        return msg.to_string();
    }
    let t = text.trim();
    let (digits, factor) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'M' | 'm')) => (&t[..i], 1e6),
        Some((i, 'G' | 'g')) => (&t[..i], 1e9),
        _ => (t, 1.0),
    };
    match digits.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => {
            let v = x * factor;
            let v = if v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{v:.0}")
            } else {
                v.to_string()
            };
            let why = if factor == 1.0 {
                "write numbers without quotes"
            } else {
                "numbers take no k, M or G suffix"
            };
            format!("{msg} (did you mean {v}? {why})")
        }
        _ => msg.to_string(),
    }
}

/// Says why a number JSON reads as floating point is not the integer
/// expected: `-0` (write 0), a number beyond the type's range (its maximum),
/// or a fraction. `rest` follows "invalid type: floating point `".
fn with_integer_hint(msg: &str, rest: &str) -> String {
    let Some((text, expected)) = rest.split_once("`, expected ") else {
        return msg.to_string();
    };
    let max: u64 = match expected.split([' ', ',']).next().unwrap_or("") {
        "u8" => u8::MAX.into(),
        "u16" => u16::MAX.into(),
        "u32" => u32::MAX.into(),
        "u64" | "usize" => u64::MAX,
        "i32" => i32::MAX as u64,
        "i64" => i64::MAX as u64,
        _ => return msg.to_string(),
    };
    let Ok(x) = text.parse::<f64>() else {
        return msg.to_string();
    };
    let why = if x == 0.0 {
        "JSON reads -0 as a floating-point number: write 0".to_string()
    } else if x.fract() != 0.0 {
        "a whole number is expected".to_string()
    } else if x < 0.0 {
        "a number of at least 0 is expected".to_string()
    } else if x > max as f64 || (max == u64::MAX && x >= 18_446_744_073_709_551_616.0) {
        format!("a whole number of at most {max} is expected")
    } else {
        return msg.to_string();
    };
    format!("{msg} ({why})")
}

/// Appends ``(did you mean `x`?)`` to serde's ``unknown field `y`, expected
/// ...`` and ``unknown variant `y`, expected ...`` when an expected name is close.
pub fn with_suggestion(msg: &str) -> String {
    let Some(rest) = msg
        .strip_prefix("unknown field `")
        .or_else(|| msg.strip_prefix("unknown variant `"))
    else {
        return msg.to_string();
    };
    let Some((unknown, expected)) = rest.split_once('`') else {
        return msg.to_string();
    };
    // Names are the odd pieces between backticks: "`a`, `b` or `c`".
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    match suggest(unknown, names) {
        Some(s) => format!("{msg} (did you mean `{s}`?)"),
        None => msg.to_string(),
    }
}

/// The candidate nearest to `unknown` by edit distance (transpositions count
/// once, case is ignored), if it is close enough to be a typo.
pub fn suggest<'a>(
    unknown: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let u = unknown.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = strsim::osa_distance(&u, &c.to_lowercase());
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    let (d, c) = best?;
    // A third of the name, at least one edit, and never the whole name ("c" is not "a").
    let allowed = (c.chars().count() / 3).clamp(1, 3);
    (d <= allowed && d < u.chars().count() && c != unknown).then_some(c)
}

/// Parses JSON text like `serde_json::from_str::<Value>`, except that a key
/// repeated in one object is an error (serde_json would keep the last one
/// silently) and a leading byte-order mark is skipped.
pub fn parse_json(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str::<Strict>(text).map(|s| s.0)
}

/// A hint for a JSON syntax error at `line`:`column` (1-based) caused by
/// something people write in other formats: comments, single quotes.
pub fn json_hint(text: &str, line: usize, column: usize) -> &'static str {
    let Some(l) = text.lines().nth(line.saturating_sub(1)) else {
        return "";
    };
    let at: String = l.chars().skip(column.saturating_sub(1)).collect();
    if at.starts_with("//") || at.starts_with("/*") {
        " (JSON has no comments; a model's `description` can hold notes)"
    } else if at.starts_with('\'') {
        " (JSON strings and keys take double quotes)"
    } else {
        ""
    }
}

struct Strict(serde_json::Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(items.into())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut m = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if m.contains_key(&k) {
                return Err(A::Error::custom(format!(
                    "duplicate key `{k}` (only one value can count)"
                )));
            }
            let Strict(v) = map.next_value()?;
            m.insert(k, v);
        }
        Ok(m.into())
    }
}

/// Lets a tagged enum's schema accept a `#[serde(alias)]` of a variant
/// (schemars lists only the main name): `{"const": name}` becomes
/// `{"enum": [name, alias]}` on the tag property.
pub struct AcceptAlias {
    pub tag: &'static str,
    pub name: &'static str,
    pub alias: &'static str,
}

impl schemars::transform::Transform for AcceptAlias {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        let pointer = format!("/properties/{}", self.tag);
        if let Some(tag) = schema
            .pointer_mut(&pointer)
            .and_then(serde_json::Value::as_object_mut)
            && tag.get("const").and_then(serde_json::Value::as_str) == Some(self.name)
        {
            tag.remove("const");
            tag.insert("enum".into(), serde_json::json!([self.name, self.alias]));
        }
        schemars::transform::transform_subschemas(self, schema);
    }
}

/// Paths and arguments longer than this are cut short in messages.
const MAX_SHOWN_CHARS: usize = 80;

/// `text`, cut short for a message if it is long: `x.x.x.x… (131071 characters)`.
pub fn shorten(text: &str) -> String {
    shorten_to(text, MAX_SHOWN_CHARS)
}

/// `text` cut to about `max` characters, saying how long it was.
pub fn shorten_to(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max.saturating_sub(20).max(1)).collect();
    format!("{head}… ({} characters)", text.chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixed_numbers_get_their_value() {
        assert_eq!(
            with_number_hint(r#"invalid type: string "10k", expected f64"#),
            r#"invalid type: string "10k", expected f64 (did you mean 10000? numbers take no k, M or G suffix)"#
        );
        assert_eq!(
            with_number_hint(r#"invalid type: string "1.5M", expected u64"#),
            r#"invalid type: string "1.5M", expected u64 (did you mean 1500000? numbers take no k, M or G suffix)"#
        );
        let fast = r#"invalid type: string "fast", expected f64"#;
        assert_eq!(with_number_hint(fast), fast);
        let dur = r#"invalid type: string "10k", expected a duration"#;
        assert_eq!(with_number_hint(dur), dur);
    }

    #[test]
    fn joins_relative_paths() {
        let m = format!("{MARK}p{MARK}bad");
        assert_eq!(join("faults[0]", &m), ("faults[0].p".into(), "bad".into()));
        assert_eq!(join(".", &m), ("p".into(), "bad".into()));
        let m = format!("{MARK}[2].x{MARK}bad");
        assert_eq!(join("a", &m), ("a[2].x".into(), "bad".into()));
        let m = format!("{MARK}.{MARK}missing field `p`");
        assert_eq!(join("faults[1]", &m).0, "faults[1]");
        // nested tracked variants
        let m = format!("{MARK}a{MARK}{MARK}b{MARK}bad");
        assert_eq!(join("x", &m), ("x.a.b".into(), "bad".into()));
        assert_eq!(join("x.y", "plain"), ("x.y".into(), "plain".into()));
    }

    #[test]
    fn parses_json_refusing_repeated_keys() {
        let v = parse_json("\u{feff}{\"a\": [1, -2, 2.5, null, true, {\"b\": \"c\"}]}").unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": [1, -2, 2.5, null, true, {"b": "c"}]})
        );
        let e = parse_json("{\"a\": 1,\n \"b\": {\"c\": 1, \"c\": 2}}").unwrap_err();
        assert_eq!(e.line(), 2);
        assert!(e.to_string().starts_with("duplicate key `c`"), "{e}");
        assert!(parse_json("[1,]").is_err());
    }

    #[test]
    fn suggests_near_names_only() {
        let fields = ["max_fails", "fail_timeout"];
        assert_eq!(suggest("fail_timout", fields), Some("fail_timeout"));
        assert_eq!(suggest("max_fials", fields), Some("max_fails"));
        assert_eq!(suggest("magic", ["none", "max_fails"]), None);
        assert_eq!(suggest("get", ["GET", "HEAD"]), Some("GET"));
        assert_eq!(suggest("x", ["y"]), None);
        assert_eq!(suggest("a", ["A", "B"]), Some("A"));
        assert_eq!(suggest("abc", []), None);
    }

    #[test]
    fn appends_suggestions_to_serde_messages() {
        assert_eq!(
            with_suggestion("unknown field `fail_timout`, expected `max_fails` or `fail_timeout`"),
            "unknown field `fail_timout`, expected `max_fails` or `fail_timeout` (did you mean `fail_timeout`?)"
        );
        assert_eq!(
            with_suggestion("unknown variant `crsh`, expected one of `crash`, `hang`, `stop`"),
            "unknown variant `crsh`, expected one of `crash`, `hang`, `stop` (did you mean `crash`?)"
        );
        let far = "unknown variant `magic`, expected one of `none`, `max_fails`";
        assert_eq!(with_suggestion(far), far);
        let none = "unknown field `x`, there are no fields";
        assert_eq!(with_suggestion(none), none);
        assert_eq!(with_suggestion("invalid type"), "invalid type");
    }
}
