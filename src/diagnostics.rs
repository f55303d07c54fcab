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

/// Characters of user text a message quotes whole; longer text is cut to
/// an [`excerpt`] of this many.
pub const EXCERPT_CHARS: usize = 80;
/// A quoted run (`"..."` or `` `...` ``) longer than this in a message is
/// cut to an excerpt by [`clip_message`].
const MAX_QUOTED_CHARS: usize = 200;
/// The longest message [`clip_message`] leaves whole.
const MAX_MESSAGE_CHARS: usize = 2_000;

/// `text` as a message quotes it: whole if at most `max` characters, else
/// its start, `…` and its length: `xxxx… (1000000 characters)`. For names,
/// values and lines a user wrote, which may be a megabyte long.
pub fn excerpt(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    let mut chars = text.char_indices();
    if chars.nth(max).is_none() {
        return text.into();
    }
    let keep = max.saturating_sub(20).max(1);
    let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    format!("{}… ({} characters)", &text[..end], text.chars().count()).into()
}

/// `msg` with every quoted run (between `"` or `` ` `` and the next of the
/// same) longer than 200 characters cut to an [`excerpt`], and the whole
/// cut in the middle if it is still over 2,000 characters: no error or
/// warning ever echoes a huge input whole. Linear in `msg`.
pub fn clip_message(msg: &str) -> std::borrow::Cow<'_, str> {
    if msg.len() <= MAX_QUOTED_CHARS {
        return msg.into();
    }
    let mut out = String::with_capacity(msg.len().min(4 * MAX_MESSAGE_CHARS));
    let mut rest = msg;
    while let Some(open) = rest.find(['"', '`']) {
        let q = rest.as_bytes()[open] as char;
        out.push_str(&rest[..=open]);
        let body = &rest[open + 1..];
        let Some(close) = body.find(q) else {
            rest = body;
            break;
        };
        let inner = &body[..close];
        if inner.len() > MAX_QUOTED_CHARS && inner.chars().nth(MAX_QUOTED_CHARS).is_some() {
            out.push_str(&excerpt(inner, EXCERPT_CHARS));
        } else {
            out.push_str(inner);
        }
        out.push(q);
        rest = &body[close + 1..];
    }
    out.push_str(rest);
    let n = out.chars().count();
    if n <= MAX_MESSAGE_CHARS {
        return out.into();
    }
    let head_end = out.char_indices().nth(1_500).map_or(out.len(), |(i, _)| i);
    let tail_start = out
        .char_indices()
        .nth(n - 300)
        .map_or(out.len(), |(i, _)| i);
    format!(
        "{} … ({} characters left out) … {}",
        &out[..head_end],
        n - 1_800,
        &out[tail_start..]
    )
    .into()
}

/// Deserializes a tagged enum's variant body, keeping the JSON path of an
/// error inside it (see the module docs). Use with `deserialize_with` on
/// newtype variants; struct variants wrap a mirror struct with it.
pub fn tracked<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    if UNTRACKED.with(std::cell::Cell::get) {
        return T::deserialize(d);
    }
    let mut track = serde_path_to_error::Track::new();
    T::deserialize(serde_path_to_error::Deserializer::new(d, &mut track)).map_err(|e| {
        let (path, msg) = join(&track.path().to_string(), &e.to_string());
        D::Error::custom(format!("{MARK}{}{MARK}{msg}", without_mark(&path)))
    })
}

thread_local! {
    /// Set by [`untracked`]: [`tracked`] then reads without a tracker.
    static UNTRACKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with [`tracked`] reading variant bodies without their path: for a
/// first attempt whose error is thrown away (a second one, tracked, names
/// the path), as a model of 1,000 nodes reads 1,000 tagged service times.
pub fn untracked<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            UNTRACKED.with(|u| u.set(self.0));
        }
    }
    let _restore = Restore(UNTRACKED.with(|u| u.replace(true)));
    f()
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
    let msg = with_number_hint(&with_suggestion(&msg));
    (
        excerpt(&path, EXCERPT_CHARS).into_owned(),
        clip_message(&msg).into_owned(),
    )
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
    let yaml_special = [".nan", ".inf", "+.inf", "-.inf"];
    if yaml_special.iter().any(|y| t.eq_ignore_ascii_case(y))
        || t.parse::<f64>().is_ok_and(|x| !x.is_finite())
    {
        return format!(
            "{msg} (a number here must be finite: NaN and infinity are not numbers a model can hold)"
        );
    }
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
    parse_json_capped(text, &[]).map_err(|e| match e {
        JsonError::Syntax(e) => e,
        JsonError::TooLong { .. } => unreachable!("no caps were given"),
    })
}

/// A list at the top level of a document that may not grow past `max`
/// items while it is read: `("nodes", 20_000)`.
pub type ListCap = (&'static str, usize);

/// Why [`parse_json_capped`] failed.
#[derive(Debug)]
pub enum JsonError {
    /// Not JSON (or a repeated key), with its line and column.
    Syntax(serde_json::Error),
    /// The top-level list `key` has `found` items, more than its cap.
    TooLong { key: &'static str, found: u64 },
}

/// [`parse_json`], refusing a capped top-level list as soon as it grows
/// past its cap: the items beyond it are counted, not kept, so a 56 MB
/// file of 2.9 million nodes costs no more memory than 20,000 of them.
pub fn parse_json_capped(text: &str, caps: &[ListCap]) -> Result<serde_json::Value, JsonError> {
    use serde::de::DeserializeSeed;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let over = std::cell::Cell::new(None);
    let level = if caps.is_empty() {
        Level::Inner
    } else {
        Level::Top(caps, &over)
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = StrictVisitor(level)
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
    match (parsed, over.get()) {
        (_, Some((key, found))) => Err(JsonError::TooLong { key, found }),
        (Ok(v), None) => Ok(v),
        (Err(e), None) => Err(JsonError::Syntax(e)),
    }
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

/// A JSON value read by [`StrictVisitor`] at the inner level.
struct Strict(serde_json::Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor(Level::Inner)).map(Strict)
    }
}

/// Where the count of a capped list over its cap is kept: its key, its items.
type Over = std::cell::Cell<Option<(&'static str, u64)>>;

/// Where a value is in a document being read.
#[derive(Clone, Copy)]
enum Level<'a> {
    /// Anywhere without a cap.
    Inner,
    /// The top level: these keys' lists are capped.
    Top(&'a [ListCap], &'a Over),
    /// A capped list: `key`, at most `max` items.
    List(&'static str, usize, &'a Over),
}

/// Reads a JSON value refusing repeated keys and non-finite numbers, and
/// (at [`Level::List`]) a list longer than its cap.
struct StrictVisitor<'a>(Level<'a>);

impl<'de> serde::de::DeserializeSeed<'de> for StrictVisitor<'_> {
    type Value = serde_json::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for StrictVisitor<'_> {
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
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        // Never `null` in its place: a model holds finite numbers only.
        serde_json::Number::from_f64(v)
            .map(Into::into)
            .ok_or_else(|| E::custom(format!("{v} is not a finite number")))
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
            if let Level::List(key, max, over) = self.0
                && items.len() == max
            {
                let mut found = items.len() as u64 + 1;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    found += 1;
                }
                over.set(Some((key, found)));
                return Err(A::Error::custom(format!(
                    "`{key}` has {found} items, more than {max}"
                )));
            }
            items.push(v);
        }
        Ok(items.into())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut m = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            // One search of the map for both the test and the insertion.
            let slot = match m.entry(k) {
                serde_json::map::Entry::Vacant(slot) => slot,
                serde_json::map::Entry::Occupied(o) => {
                    return Err(A::Error::custom(format!(
                        "duplicate key `{}` (only one value can count)",
                        o.key()
                    )));
                }
            };
            let k = slot.key();
            let level = match self.0 {
                Level::Top(caps, over) => caps
                    .iter()
                    .find(|(key, _)| *key == k)
                    .map_or(Level::Inner, |&(key, max)| Level::List(key, max, over)),
                _ => Level::Inner,
            };
            slot.insert(map.next_value_seed(StrictVisitor(level))?);
        }
        Ok(m.into())
    }
}

thread_local! {
    /// Set by [`direct`]: the most items a [`capped_list`] may read.
    static DIRECT: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Runs `f`, a deserialization straight from JSON text (no `Value` read
/// first), with every [`capped_list`] refusing more than `max_items` items
/// as it reads them: no capped parse ([`parse_json_capped`]) has counted
/// them. Readers that have a quicker way for text ask [`is_direct`].
pub fn direct<R>(max_items: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            DIRECT.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(DIRECT.with(|c| c.replace(Some(max_items))));
    f()
}

/// Whether this is inside [`direct`].
pub fn is_direct() -> bool {
    DIRECT.with(std::cell::Cell::get).is_some()
}

/// A list that, inside [`direct`], is refused as soon as it grows past the
/// cap (the items beyond it are never made); elsewhere a plain `Vec`. Use
/// with `deserialize_with`.
pub fn capped_list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let Some(max) = DIRECT.with(std::cell::Cell::get) else {
        return Vec::deserialize(d);
    };
    struct V<T>(usize, std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            // What `Vec`'s own visitor says.
            f.write_str("a sequence")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element()? {
                if items.len() == self.0 {
                    return Err(A::Error::custom(format!("more than {} items", self.0)));
                }
                items.push(item);
            }
            Ok(items)
        }
    }
    d.deserialize_seq(V(max, std::marker::PhantomData))
}

/// A map whose keys must differ: a map read straight from JSON text keeps
/// the last of a repeated key silently, as [`parse_json`] would not. Use
/// with `deserialize_with`; a map from a parsed document, whose keys are
/// already unique, reads as a plain `BTreeMap`.
pub fn unique_keys<'de, D, V>(d: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Unique<V>(std::marker::PhantomData<V>);
    impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Unique<V> {
        type Value = BTreeMap<String, V>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            // What `BTreeMap`'s own visitor says.
            f.write_str("a map")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut m = BTreeMap::new();
            while let Some(k) = map.next_key::<String>()? {
                match m.entry(k) {
                    std::collections::btree_map::Entry::Vacant(slot) => {
                        slot.insert(map.next_value()?);
                    }
                    std::collections::btree_map::Entry::Occupied(o) => {
                        return Err(A::Error::custom(format!(
                            "duplicate key `{}` (only one value can count)",
                            o.key()
                        )));
                    }
                }
            }
            Ok(m)
        }
    }
    d.deserialize_map(Unique(std::marker::PhantomData))
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
    excerpt(text, MAX_SHOWN_CHARS).into_owned()
}

/// `text` cut to about `max` characters, saying how long it was.
pub fn shorten_to(text: &str, max: usize) -> String {
    excerpt(text, max).into_owned()
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
        for special in [".nan", ".inf", "-.Inf", "NaN", "inf", "Infinity", "1e999"] {
            let m = format!("invalid type: string \"{special}\", expected f64");
            assert!(
                with_number_hint(&m).ends_with("(a number here must be finite: NaN and infinity are not numbers a model can hold)"),
                "{special}"
            );
        }
    }

    #[test]
    fn huge_quoted_input_is_cut_to_an_excerpt() {
        let big = "x".repeat(1_000_000);
        assert_eq!(excerpt("short", 80), "short");
        let e = excerpt(&big, 80);
        assert!(
            e.ends_with("… (1000000 characters)") && e.len() < 100,
            "{e}"
        );
        let wide = "é".repeat(100);
        assert!(excerpt(&wide, 80).starts_with(&"é".repeat(60)));
        let msg = format!("unknown field `{big}`, expected `a` or `b` (did you mean `a`?)");
        let c = clip_message(&msg);
        assert!(c.len() < 300, "{c}");
        assert!(
            c.starts_with("unknown field `xxxx")
                && c.ends_with("`, expected `a` or `b` (did you mean `a`?)"),
            "{c}"
        );
        let msg = format!("no node named \"{big}\" (nodes are \"A\", \"B\")");
        assert!(clip_message(&msg).ends_with("characters)\" (nodes are \"A\", \"B\")"));
        // Short quoted runs are left alone; a long message is cut in its middle.
        let list: Vec<String> = (0..5000).map(|i| format!("`n{i}`")).collect();
        let msg = format!("expected one of {}", list.join(", "));
        let c = clip_message(&msg);
        assert!(c.chars().count() < 1_900 && c.ends_with("`n4999`"), "{c}");
        assert!(c.contains("characters left out"), "{c}");
        let fine = "unknown field `x`, expected `a`";
        assert_eq!(clip_message(fine), fine);
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
