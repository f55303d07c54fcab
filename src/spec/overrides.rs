//! Overrides of a model: `--set PATH=VALUE` on the command line, a sweep's or
//! a tune file's `set`, a tune candidate's parameters. Each is parsed once,
//! where it enters, into an [`Override`]; everything inside uses the type:
//! it applies itself to a model document, says which field it changed the
//! way errors spell it, and names itself by one rule ([`Override::short`])
//! in run directories, sweep grids, compare labels and tune candidates.
//!
//! A path ([`FieldPath`]) is dotted: `clients.rate_per_s`, `nodes[0].weight`
//! (a list item by index), `nodes.A.weight` (by the item's `name`),
//! `nodes["10.1.0.11:8080"].weight` (a name quoted as JSON, for names with
//! dots or brackets). A bare name with dots (`nodes.10.1.0.11:8080.weight`)
//! is found too: at a list, the longest run of segments that names an item
//! wins, then a number is an index.

use crate::diagnostics;
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// The most segments a dotted path (`--set`, a sweep's `set` and axes) may
/// have: deeper than any field of a model, and shallow enough that a patched
/// document stays within the nesting the JSON parser allows (128 levels),
/// so nothing that walks, serializes or drops it can exhaust the stack.
pub const MAX_PATH_SEGMENTS: usize = 32;

/// One segment of a [`FieldPath`].
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seg {
    /// As written after a dot: a field, a list index, or (part of) a list
    /// item's name.
    Bare(String),
    /// `[…]`: a list index or an item's name, never joined with others.
    Bracket(String),
    /// `["…"]`: a list item's name (or a field), never an index.
    Quoted(String),
}

impl Seg {
    fn text(&self) -> &str {
        match self {
            Seg::Bare(s) | Seg::Bracket(s) | Seg::Quoted(s) => s,
        }
    }
}

/// A dotted path into a model document, as `--set`, `--param` and sweep
/// axes write it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath {
    segs: Vec<Seg>,
    text: String,
}

/// At most this many characters of a user's text are quoted in a message.
const MAX_QUOTED: usize = 80;

fn quoted(text: &str) -> String {
    crate::diagnostics::shorten_to(text, MAX_QUOTED)
}

impl FieldPath {
    /// Parses `path`; refuses more than [`MAX_PATH_SEGMENTS`] segments
    /// before building any (a path of a million segments is refused at
    /// once).
    pub fn parse(path: &str) -> Result<FieldPath, String> {
        let text = path.trim();
        let bound = text.bytes().filter(|&b| b == b'.' || b == b'[').count() + 1;
        if bound > MAX_PATH_SEGMENTS && text.split(['.', '[']).count() > MAX_PATH_SEGMENTS {
            return Err(format!(
                "the path has {} segments, more than the {MAX_PATH_SEGMENTS} any field of a model needs",
                text.split(['.', '[']).count()
            ));
        }
        let malformed = || format!("malformed path `{}`", quoted(text));
        let mut segs = vec![];
        let mut rest = text;
        let mut after_dot = true;
        while !rest.is_empty() {
            if let Some(inner) = rest.strip_prefix('[') {
                let (seg, len) = if inner.starts_with('"') {
                    let mut de = serde_json::Deserializer::from_str(inner).into_iter::<String>();
                    let name = match de.next() {
                        Some(Ok(s)) => s,
                        _ => return Err(malformed()),
                    };
                    (Seg::Quoted(name), de.byte_offset())
                } else {
                    let close = inner.find(']').ok_or_else(malformed)?;
                    (Seg::Bracket(inner[..close].trim().to_string()), close)
                };
                let after = inner[len..].strip_prefix(']').ok_or_else(malformed)?;
                if seg.text().is_empty() && matches!(seg, Seg::Bracket(_)) {
                    return Err(malformed());
                }
                segs.push(seg);
                rest = after;
                after_dot = false;
            } else if let Some(after) = rest.strip_prefix('.') {
                if after_dot {
                    return Err(malformed());
                }
                rest = after;
                after_dot = true;
            } else {
                if !after_dot {
                    return Err(malformed());
                }
                let end = rest.find(['.', '[']).unwrap_or(rest.len());
                segs.push(Seg::Bare(rest[..end].trim().to_string()));
                rest = &rest[end..];
                after_dot = false;
            }
            if segs.len() > MAX_PATH_SEGMENTS {
                return Err(format!(
                    "the path has more than the {MAX_PATH_SEGMENTS} segments any field of a model needs"
                ));
            }
        }
        if segs.is_empty() || after_dot {
            return Err(malformed());
        }
        Ok(FieldPath {
            segs,
            text: text.to_string(),
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The segments as written (a quoted name without its quotes).
    pub fn segments(&self) -> Vec<&str> {
        self.segs.iter().map(Seg::text).collect()
    }

    /// The path's last segment (`fail_timeout` of `policy.fail_timeout`).
    pub fn last(&self) -> &str {
        self.segs.last().map_or("", Seg::text)
    }

    /// How many segments at `i` name a list item of `items`, the longest
    /// run of bare segments first; `None` if none does.
    fn named_run(&self, items: &[Value], i: usize) -> Option<(usize, usize)> {
        let name_of = |it: &Value| it.get("name").and_then(Value::as_str).map(str::to_string);
        if let Seg::Quoted(name) | Seg::Bracket(name) = &self.segs[i] {
            let at = items
                .iter()
                .position(|it| name_of(it).as_deref() == Some(name))?;
            return Some((at, 1));
        }
        let bare_run = self.segs[i..]
            .iter()
            .take_while(|s| matches!(s, Seg::Bare(_)))
            .count();
        (1..=bare_run).rev().find_map(|k| {
            let name = self.segs[i..i + k]
                .iter()
                .map(Seg::text)
                .collect::<Vec<_>>()
                .join(".");
            items
                .iter()
                .position(|it| name_of(it).as_deref() == Some(name.as_str()))
                .map(|at| (at, k))
        })
    }

    /// The list item segment `i` (and how many segments it took) addresses.
    fn item(&self, items: &[Value], i: usize) -> Result<(usize, usize), String> {
        if let Some(found) = self.named_run(items, i) {
            return Ok(found);
        }
        match &self.segs[i] {
            Seg::Bare(s) | Seg::Bracket(s) => {
                s.parse::<usize>().map(|at| (at, 1)).map_err(|_| s.clone())
            }
            Seg::Quoted(s) => Err(s.clone()),
        }
    }

    /// What segment `i` (`seg`) was meant to name when no item has it: a
    /// number is an index, unless the bare segments after it up to the
    /// path's last (its field) make a dotted name (`nodes.10.0.0.9:80.weight`).
    fn meant_name(&self, i: usize, seg: String) -> String {
        let last = self.segs.len().saturating_sub(1);
        let bare = self.segs[i..last]
            .iter()
            .take_while(|s| matches!(s, Seg::Bare(_)))
            .count();
        if bare >= 2 && seg.parse::<usize>().is_ok() {
            let name: Vec<&str> = self.segs[i..i + bare].iter().map(Seg::text).collect();
            return name.join(".");
        }
        seg
    }

    /// Sets `value` at this path in `doc`. Sections the document leaves to
    /// their defaults (e.g. `gateway`) are created; a list item must exist;
    /// the last key may be new only if its parent is an object.
    pub fn set(&self, doc: &mut Value, value: Value) -> Result<(), String> {
        let mut cur = doc;
        let mut walked = String::new();
        let mut i = 0;
        while i < self.segs.len() {
            let last = i + 1 == self.segs.len();
            match cur {
                Value::Object(map) => {
                    let key = self.segs[i].text().to_string();
                    push_key(&mut walked, &key);
                    if last {
                        map.insert(key, value);
                        return Ok(());
                    }
                    cur = map
                        .entry(key)
                        .or_insert_with(|| Value::Object(Default::default()));
                    i += 1;
                }
                Value::Array(items) => {
                    let (at, took) = self
                        .item(items, i)
                        .map_err(|seg| missing_item(&walked, items, &self.meant_name(i, seg)))?;
                    if at >= items.len() {
                        let meant = self.meant_name(i, at.to_string());
                        return Err(missing_item(&walked, items, &meant));
                    }
                    let slot = &mut items[at];
                    walked.push_str(&format!("[{at}]"));
                    i += took;
                    if i == self.segs.len() {
                        *slot = value;
                        return Ok(());
                    }
                    cur = slot;
                }
                _ => return Err(format!("`{walked}` is not an object")),
            }
        }
        unreachable!("a path has at least one segment")
    }

    /// The value at this path in `doc`, if there is one.
    pub fn get<'a>(&self, doc: &'a Value) -> Option<&'a Value> {
        self.walk(doc).map(|(v, _)| v)
    }

    /// The path as errors spell it: list items by index (`nodes[0].weight`
    /// for `nodes.A.weight`). `None` if a list item does not exist.
    pub fn canonical(&self, doc: &Value) -> Option<String> {
        self.walk(doc).map(|(_, c)| c).or_else(|| {
            // The last key of an object may be new (a field left to its default).
            let (parent, key) = self.split_last()?;
            let (p, c) = parent.walk(doc)?;
            p.is_object().then(|| {
                let mut c = c;
                push_key(&mut c, key);
                c
            })
        })
    }

    fn split_last(&self) -> Option<(FieldPath, &str)> {
        let (last, rest) = self.segs.split_last()?;
        (!rest.is_empty()).then(|| {
            (
                FieldPath {
                    segs: rest.to_vec(),
                    text: String::new(),
                },
                last.text(),
            )
        })
    }

    /// The value at this path and its canonical spelling.
    fn walk<'a>(&self, doc: &'a Value) -> Option<(&'a Value, String)> {
        let mut cur = doc;
        let mut canon = String::new();
        let mut i = 0;
        while i < self.segs.len() {
            match cur {
                Value::Object(map) => {
                    let key = self.segs[i].text();
                    cur = map.get(key)?;
                    push_key(&mut canon, key);
                    i += 1;
                }
                Value::Array(items) => {
                    let (at, took) = self.item(items, i).ok()?;
                    cur = items.get(at)?;
                    canon.push_str(&format!("[{at}]"));
                    i += took;
                }
                _ => return None,
            }
        }
        Some((cur, canon))
    }

    /// The path's short name (see [`Override::short`]).
    pub fn short(&self) -> String {
        let texts: Vec<&str> = self.segs.iter().map(Seg::text).collect();
        match texts.as_slice() {
            [] => String::new(),
            [one] => one.to_string(),
            [first, index, rest @ ..]
                if !rest.is_empty()
                    && matches!(self.segs[1], Seg::Bracket(_))
                    && index.bytes().all(|b| b.is_ascii_digit()) =>
            {
                format!("{first}{index}.{}", rest.join("."))
            }
            [_, rest @ ..] => rest.join("."),
        }
    }
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// "`nodes` has no item named "X" (nodes are "a", "b"; did you mean "a"?)",
/// or the index range when `seg` is a number.
fn missing_item(list: &str, items: &[Value], seg: &str) -> String {
    if let Ok(i) = seg.parse::<usize>() {
        return format!(
            "index {i} is out of range: `{list}` has {} item(s)",
            items.len()
        );
    }
    let names: Vec<&str> = items
        .iter()
        .filter_map(|it| it.get("name").and_then(Value::as_str))
        .collect();
    let seg = quoted(seg);
    if names.is_empty() {
        return format!("`{list}` has no item named \"{seg}\" (index it with a number)");
    }
    let shown: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let hint = diagnostics::suggest(&seg, names.iter().copied())
        .map(|s| format!("; did you mean \"{s}\"?"))
        .unwrap_or_default();
    format!(
        "`{list}` has no item named \"{seg}\" ({list} are {}{hint})",
        shown.join(", ")
    )
}

/// What every malformed `--set` says.
pub const EXPECTED: &str = "expected PATH=VALUE, e.g. clients.rate_per_s=10000";

/// One override of a model: a path and the value to put there, with the
/// text it was given as (what `summary.json` keeps and outputs show).
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    path: FieldPath,
    value: Value,
    text: String,
}

/// The `=` between PATH and VALUE: the first one outside brackets and
/// quoted names.
fn split_assignment(arg: &str) -> Option<(&str, &str)> {
    let (mut depth, mut in_str, mut escaped) = (0u32, false, false);
    for (i, c) in arg.char_indices() {
        match c {
            _ if in_str && escaped => escaped = false,
            '\\' if in_str => escaped = true,
            '"' if depth > 0 => in_str = !in_str,
            _ if in_str => {}
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            '=' if depth == 0 => return Some((&arg[..i], &arg[i + 1..])),
            _ => {}
        }
    }
    None
}

/// The value of `PATH=VALUE`: JSON if it parses, else a string; text that
/// starts like JSON (`{`, `[`, `"`) must be JSON, so that a missing brace
/// does not turn an object into a string.
pub fn parse_value(text: &str) -> Result<Value, String> {
    let text = text.trim();
    if text.starts_with(['{', '[', '"']) {
        return serde_json::from_str(text).map_err(|e| format!("VALUE is not valid JSON: {e}"));
    }
    Ok(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string())))
}

impl Override {
    /// Parses `PATH=VALUE`; `Err` is the reason.
    pub fn parse(arg: &str) -> Result<Override, String> {
        let (path, value) = split_assignment(arg).ok_or_else(|| EXPECTED.to_string())?;
        if path.trim().is_empty() {
            return Err(format!("PATH is empty: {EXPECTED}"));
        }
        Ok(Override {
            path: FieldPath::parse(path)?,
            value: parse_value(value)?,
            text: arg.to_string(),
        })
    }

    /// The override that puts `value` at `path`, written as `PATH=VALUE`
    /// that reads back the same: plain where it parses back (`5s`, `3`),
    /// JSON otherwise (`"1"`, objects).
    pub fn new(path: &str, value: Value) -> Result<Override, String> {
        let plain = match &value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let text = if !plain.starts_with(['{', '[', '"'])
            && parse_value(&plain).ok().as_ref() == Some(&value)
        {
            format!("{path}={plain}")
        } else {
            format!("{path}={value}")
        };
        Ok(Override {
            path: FieldPath::parse(path)?,
            value,
            text,
        })
    }

    pub fn path(&self) -> &FieldPath {
        &self.path
    }

    pub fn value(&self) -> &Value {
        &self.value
    }

    /// `PATH=VALUE` as it was given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Applies the override to a model document.
    pub fn apply(&self, doc: &mut Value) -> Result<(), String> {
        self.path.set(doc, self.value.clone())
    }

    /// The override's short name, the one rule every output names it by:
    /// the path without its section (`clients.rate_per_s` → `rate_per_s`;
    /// `nodes.A.weight` and `nodes["A"].weight` → `A.weight`; a list index
    /// stays with its list, `faults[0].at` → `faults0.at`), then `=` and the
    /// value as written (`rate_per_s=10000`). An index in brackets stays
    /// with its list; a bare dotted name is one name (`nodes.10.0.0.1:80.weight`
    /// → `10.0.0.1:80.weight`).
    pub fn short(&self) -> String {
        let value = split_assignment(&self.text).map_or("", |(_, v)| v.trim());
        format!("{}={value}", self.path.short())
    }

    /// The shown form of several overrides, joined by `,`: the name of a
    /// what-if run's directory (after `<model>--`) and of a tune candidate.
    pub fn label(sets: &[Override]) -> String {
        sets.iter()
            .map(Override::short)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `--set A --set B`: the overrides as a command line writes them,
    /// quoted for a shell where needed.
    pub fn command_line(sets: &[Override]) -> String {
        sets.iter()
            .map(|s| format!("--set {}", shell_word(s.text())))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The overrides as given (`summary.json`'s `set`).
    pub fn texts(sets: &[Override]) -> Vec<String> {
        sets.iter().map(|s| s.text.clone()).collect()
    }
}

/// Overrides as given (`summary.json`'s `set`) as every output shows them:
/// `--set A --set B`, or `none`.
pub fn shown(texts: &[String]) -> String {
    if texts.is_empty() {
        return "none".into();
    }
    texts
        .iter()
        .map(|t| format!("--set {t}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `w` quoted for a POSIX shell when it needs it.
fn shell_word(w: &str) -> String {
    let plain = !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+%@".contains(&b));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

impl fmt::Display for Override {
    /// `PATH=VALUE` as given.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl serde::Serialize for Override {
    /// As given (`summary.json` and `tune.json` keep the text).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl FromStr for Override {
    type Err = String;
    fn from_str(s: &str) -> Result<Override, String> {
        Override::parse(s)
    }
}

/// A name safe as a file name: letters, digits and `._=+,-` kept, every
/// other run of characters one `-`; a name that had to be rewritten or is
/// longer than `max` bytes is cut and ends with 8 hex digits of a hash of
/// `identity`, so that different inputs never share a name.
pub fn safe_name(raw: &str, identity: &str, max: usize) -> String {
    let mut safe = String::new();
    let mut dash = false;
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() || "._=+,-".contains(c) {
            safe.push(c);
            dash = false;
        } else if !dash {
            safe.push('-');
            dash = true;
        }
    }
    let trimmed = safe.trim_matches('-');
    if trimmed == raw && raw.len() <= max {
        return raw.to_string();
    }
    let mut cut = max.saturating_sub(9).min(trimmed.len());
    while !trimmed.is_char_boundary(cut) {
        cut -= 1;
    }
    let head = trimmed[..cut].trim_end_matches(['-', ',']);
    format!("{head}-{:08x}", fnv1a(identity.as_bytes()) as u32)
}

/// 64-bit FNV-1a: a stable content hash (the same on every machine and
/// version; not for security).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({
            "name": "t", "duration": "10s",
            "clients": {"kind": "open", "rate_per_s": 10.0},
            "nodes": [{"name": "a"}, {"name": "10.1.0.11:8080"}]
        })
    }

    fn set(d: &mut Value, arg: &str) -> Result<(), String> {
        Override::parse(arg)?.apply(d)
    }

    #[test]
    fn paths_address_fields_items_and_names() {
        let mut d = doc();
        set(&mut d, "clients.rate_per_s=10000").unwrap();
        set(&mut d, "nodes[1].weight=3").unwrap();
        set(&mut d, "nodes.a.weight=2").unwrap();
        set(&mut d, "gateway.workers=2").unwrap();
        assert_eq!(d["clients"]["rate_per_s"], json!(10000));
        assert_eq!(d["nodes"][1]["weight"], json!(3));
        assert_eq!(d["nodes"][0]["weight"], json!(2));
        assert_eq!(d["gateway"]["workers"], json!(2));
        let e = set(&mut d, "nodes[7].weight=2").unwrap_err();
        assert!(
            e.contains("index 7 is out of range: `nodes` has 2 item(s)"),
            "{e}"
        );
    }

    #[test]
    fn a_name_with_dots_is_found_quoted_or_bare() {
        for arg in [
            r#"nodes["10.1.0.11:8080"].weight=4"#,
            "nodes.10.1.0.11:8080.weight=4",
        ] {
            let mut d = doc();
            let o = Override::parse(arg).unwrap();
            o.apply(&mut d).unwrap();
            assert_eq!(d["nodes"][1]["weight"], json!(4), "{arg}");
            assert_eq!(o.short(), "10.1.0.11:8080.weight=4", "{arg}");
            assert_eq!(
                o.path().canonical(&d).as_deref(),
                Some("nodes[1].weight"),
                "{arg}"
            );
        }
        let e = set(&mut doc(), "nodes.10.1.0.12:8080.weight=4").unwrap_err();
        assert!(e.contains("no item named \"10.1.0.12:8080\""), "{e}");
        assert!(e.contains("did you mean \"10.1.0.11:8080\""), "{e}");
        let e = set(&mut doc(), "nodes.7.weight=4").unwrap_err();
        assert!(e.contains("index 7 is out of range"), "{e}");
    }

    #[test]
    fn the_short_name_drops_the_section_and_keeps_an_index_with_its_list() {
        let short = |a: &str| Override::parse(a).unwrap().short();
        assert_eq!(short("clients.rate_per_s=10000"), "rate_per_s=10000");
        assert_eq!(short("policy.fail_timeout=30s"), "fail_timeout=30s");
        assert_eq!(short("nodes.A.weight=5"), "A.weight=5");
        assert_eq!(short(r#"nodes["A"].weight=5"#), "A.weight=5");
        assert_eq!(short("faults[0].at=1.5s"), "faults0.at=1.5s");
        assert_eq!(short("duration=5s"), "duration=5s");
        assert_eq!(short("policy.probe.interval=1s"), "probe.interval=1s");
    }

    #[test]
    fn values_read_as_json_or_text_and_typed_overrides_read_back() {
        let v = |a: &str| Override::parse(a).unwrap().value().clone();
        assert_eq!(v("a=5s"), json!("5s"));
        assert_eq!(v("a=3"), json!(3));
        assert_eq!(v(r#"a={"kind":"none"}"#), json!({"kind": "none"}));
        assert!(Override::parse(r#"policy={"kind": "none""#).is_err());
        for value in [json!("5s"), json!(3), json!("1"), json!({"kind": "none"})] {
            let o = Override::new("policy.x", value.clone()).unwrap();
            assert_eq!(Override::parse(o.text()).unwrap().value(), &value);
        }
        assert_eq!(
            Override::new("description", json!("1")).unwrap().text(),
            "description=\"1\""
        );
    }

    #[test]
    fn malformed_and_deep_paths_are_refused_at_once() {
        assert!(
            Override::parse("clients.rate_per_s")
                .unwrap_err()
                .contains(EXPECTED)
        );
        assert!(Override::parse("=3").is_err());
        assert!(Override::parse("a..b=3").unwrap_err().contains("malformed"));
        assert!(Override::parse("a[=3").is_err());
        let deep = vec!["x"; 1_000_000].join(".");
        let e = Override::parse(&format!("{deep}=1")).unwrap_err();
        assert!(e.contains("more than the 32"), "{e}");
        assert!(FieldPath::parse(&vec!["x"; MAX_PATH_SEGMENTS].join(".")).is_ok());
    }

    #[test]
    fn an_equals_sign_inside_a_quoted_name_is_part_of_the_path() {
        let o = Override::parse(r#"nodes["a=b"].weight=2"#).unwrap();
        assert_eq!(o.value(), &json!(2));
        assert_eq!(o.path().last(), "weight");
    }

    #[test]
    fn safe_names_are_kept_or_cut_with_a_hash() {
        assert_eq!(safe_name("rate_per_s=10000", "x", 60), "rate_per_s=10000");
        let a = safe_name(r#"policy={"kind":"none"}"#, "a", 60);
        assert!(a.starts_with("policy=-kind-none-"), "{a}");
        assert_ne!(a, safe_name(r#"policy={"kind":"none"}"#, "b", 60));
        assert!(safe_name(&"x".repeat(200), "x", 60).len() <= 60);
    }
}
