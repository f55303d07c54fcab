//! YAML (and JSON) documents for the Envoy, Istio and Kubernetes readers,
//! read with `serde_yaml_ng` into `serde_json::Value`, and the lines their
//! keys are on (serde gives values without positions, so a key's line is
//! found in the text: the first line at or after its parent's that
//! writes it as a key).

use super::Loc;
use crate::error::Error;
use serde::Deserialize;
use serde::de::{self, Visitor};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// One document of a (multi-document) YAML file.
#[derive(Debug)]
pub(super) struct Doc {
    pub value: Value,
    /// The line its content starts on.
    pub line: usize,
}

/// Flow collections (`[`, `{`) nested deeper than this are refused before
/// the YAML library sees them: its scanner checks every open level at each
/// token (quadratic in the depth) and its loader stops at 128 levels.
pub(super) const MAX_FLOW_DEPTH: usize = 100;

/// Every non-empty document of the file (the items of a `kind: List`
/// each a document). A key written twice in one
/// mapping, `.nan`/`.inf` and nesting beyond [`MAX_FLOW_DEPTH`] are errors
/// naming their line.
pub(super) fn documents(path: &Path, text: &str) -> Result<Vec<Doc>, Error> {
    check_depth(path, text)?;
    // Where each document starts: after each `---` line.
    let mut starts = vec![1];
    let mut only_comments = true;
    for (i, l) in text.lines().enumerate() {
        if l.starts_with("---") {
            if only_comments {
                starts[0] = i + 2;
            } else {
                starts.push(i + 2);
            }
        }
        only_comments &= l.trim().is_empty() || l.trim_start().starts_with('#');
    }
    let mut out = vec![];
    let mut index: Option<Lines> = None;
    for (k, de) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let value = Tree::deserialize(de)
            .map_err(|e| yaml_error(path, text, &e))?
            .0;
        let line = starts.get(k).copied().unwrap_or(1);
        match value {
            Value::Null => {}
            // `kind: List` (what `kubectl get -o yaml` writes): its items.
            Value::Object(mut m)
                if m.get("kind").and_then(Value::as_str) == Some("List")
                    && m.get("items").is_some_and(Value::is_array) =>
            {
                let Some(Value::Array(items)) = m.remove("items") else {
                    continue;
                };
                // Each item starts at its `apiVersion` or `kind`, after the previous one.
                let lines = index.get_or_insert_with(|| Lines::new(path, text));
                let mut cursor = lines.key(line, "items");
                for value in items {
                    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
                    let k = lines.find_value(cursor, "kind", kind).unwrap_or(cursor);
                    let api = first_from(lines.keys.get("apiVersion"), cursor).unwrap_or(k);
                    let at = api.min(k);
                    cursor = k + 1;
                    out.push(Doc { value, line: at });
                }
            }
            value => out.push(Doc { value, line }),
        }
    }
    Ok(out)
}

/// The error of the YAML library as `file:line: not valid YAML: …`; a
/// duplicate key is named at its second line.
fn yaml_error(path: &Path, text: &str, e: &serde_yaml_ng::Error) -> Error {
    let mut line = e.location().map_or(1, |l| l.line());
    let msg = e.to_string();
    let mut msg = match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    // serde_yaml_ng puts the path of the mapping first (`spec: duplicate key …`).
    if let Some(rest) = msg.find(DUPLICATE).map(|i| &msg[i + DUPLICATE.len()..]) {
        let key = rest.split(DUPLICATE_END).next().unwrap_or("").to_string();
        let key = key.as_str();
        let lines = Lines::new(path, text);
        let first = lines.key(line, key);
        line = lines.key(first + 1, key).max(first);
        msg = format!(
            "the key `{}` is written twice in one mapping (first at line {first}): YAML \
             keeps only one of them; remove or rename one",
            crate::diagnostics::excerpt(key, crate::diagnostics::EXCERPT_CHARS)
        );
        return Loc::new(path, line).error(msg);
    }
    if msg.starts_with("recursion limit exceeded") {
        msg = "nested more than 128 levels deep: hcsim reads at most 128 levels".into();
    }
    Loc::new(path, line).error(format!("not valid YAML: {msg}"))
}

const DUPLICATE: &str = "duplicate key `";
const DUPLICATE_END: &str = "`\u{1}";

/// A YAML value as JSON, refusing what `serde_json::Value` would take in
/// silence: a repeated key (the last one would win), `.nan` and `.inf`
/// (which would become `null`).
struct Tree(Value);

impl<'de> Deserialize<'de> for Tree {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Tree, D::Error> {
        d.deserialize_any(TreeVisitor).map(Tree)
    }
}

struct TreeVisitor;

impl<'de> Visitor<'de> for TreeVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| {
                let what = if v.is_nan() { ".nan" } else { ".inf" };
                E::custom(format!(
                    "found {what}, which is not a number hcsim can use: expected a finite number"
                ))
            })
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.into()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Tree::deserialize(d).map(|t| t.0)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = vec![];
        while let Some(Tree(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if out.contains_key(&k) {
                return Err(de::Error::custom(format!("{DUPLICATE}{k}{DUPLICATE_END}")));
            }
            let Tree(v) = map.next_value()?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

/// Refuses flow collections nested deeper than [`MAX_FLOW_DEPTH`], in one
/// pass over the text (strings and comments skipped).
fn check_depth(path: &Path, text: &str) -> Result<(), Error> {
    let (mut depth, mut line) = (0usize, 1usize);
    let mut quote: Option<u8> = None;
    let mut prev = b'\n';
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            line += 1;
        }
        match quote {
            Some(b'\'') if c == b'\'' => quote = None,
            Some(b'"') if c == b'\\' => i += 1,
            Some(b'"') if c == b'"' => quote = None,
            Some(_) => {}
            None => match c {
                b'#' if prev.is_ascii_whitespace() => {
                    while i < bytes.len() && bytes[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                b'"' | b'\''
                    if matches!(prev, b' ' | b'\t' | b'\n' | b'[' | b'{' | b',' | b':') =>
                {
                    quote = Some(c)
                }
                b'[' | b'{' => {
                    depth += 1;
                    if depth > MAX_FLOW_DEPTH {
                        return Err(Loc::new(path, line).error(format!(
                            "not valid YAML here: collections nested more than {MAX_FLOW_DEPTH} \
                             levels deep (`[` or `{{` opened on this line): hcsim reads at most \
                             {MAX_FLOW_DEPTH}"
                        )));
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        prev = c;
        i += 1;
    }
    Ok(())
}

/// Finds where keys are written in the text of one file, through an index
/// built in one pass: each key and each `key: value` pair → the lines that
/// write it, so that a look-up is a binary search, not a scan.
pub(super) struct Lines<'a> {
    keys: HashMap<&'a str, Vec<u32>>,
    pairs: HashMap<(&'a str, &'a str), Vec<u32>>,
    path: &'a Path,
}

impl<'a> Lines<'a> {
    pub(super) fn new(path: &'a Path, text: &'a str) -> Lines<'a> {
        let mut keys: HashMap<&str, Vec<u32>> = HashMap::new();
        let mut pairs: HashMap<(&str, &str), Vec<u32>> = HashMap::new();
        for (i, l) in text.lines().enumerate() {
            let n = (i + 1) as u32;
            line_keys(l, &mut |k| push(keys.entry(k).or_default(), n));
            line_pairs(l, &mut |k, v| push(pairs.entry((k, v)).or_default(), n));
        }
        Lines { keys, pairs, path }
    }

    /// The first line at or after `from` writing `key` as a key (`key:`
    /// or `"key":`); `from` if there is none.
    pub(super) fn key(&self, from: usize, key: &str) -> usize {
        let snake = first_from(self.keys.get(key), from);
        // proto3 JSON spells Envoy's `load_assignment` `loadAssignment`.
        let camel = key
            .contains('_')
            .then(|| first_from(self.keys.get(json_name(key).as_str()), from))
            .flatten();
        match (snake, camel) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(from),
        }
    }

    /// The line of a path of keys, each searched after the previous one.
    pub(super) fn path(&self, from: usize, keys: &[&str]) -> usize {
        keys.iter().fold(from, |at, k| self.key(at, k))
    }

    /// The first line at or after `from` where `key` has the value `value`
    /// (`key: value`, quoted or not); `from` if there is none.
    pub(super) fn key_value(&self, from: usize, key: &str, value: &str) -> usize {
        self.find_value(from, key, value).unwrap_or(from)
    }

    /// The first line at or after `from` where `key` has the value `value`.
    pub(super) fn find_value(&self, from: usize, key: &str, value: &str) -> Option<usize> {
        first_from(self.pairs.get(&(key, value)), from)
    }

    pub(super) fn at(&self, line: usize) -> Loc {
        Loc::new(self.path, line)
    }
}

/// A protobuf field's JSON name, as protoc derives it (`json_name`): each
/// `_` dropped and the character after it upper-cased
/// (`consecutive_5xx` → `consecutive5xx`, `load_assignment` → `loadAssignment`).
pub(super) fn json_name(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut up = false;
    for c in snake.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn push(v: &mut Vec<u32>, n: u32) {
    if v.last() != Some(&n) {
        v.push(n);
    }
}

fn first_from(lines: Option<&Vec<u32>>, from: usize) -> Option<usize> {
    let lines = lines?;
    let from = from.max(1) as u64;
    let i = lines.partition_point(|&l| (l as u64) < from);
    lines.get(i).map(|&l| l as usize)
}

/// The keys a line writes: the leading one (after `- `, `{` and `,`), and
/// each `"k":` after a space or `{` and `k:` after `, ` or `{`.
fn line_keys<'a>(l: &'a str, out: &mut impl FnMut(&'a str)) {
    let t = l.trim_start();
    let t = t.strip_prefix("- ").unwrap_or(t).trim_start();
    let t = t.trim_start_matches(['{', ',']).trim_start();
    if let Some(i) = t.find(':') {
        let k = &t[..i];
        match k.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
            Some(q) => out(q),
            None => out(k),
        }
    }
    let b = l.as_bytes();
    for (i, _) in l.match_indices(':') {
        if i == 0 {
            continue;
        }
        if b[i - 1] == b'"' {
            // `"k":` after a space or `{`.
            if let Some(open) = l[..i - 1].rfind('"')
                && open > 0
                && matches!(b[open - 1], b' ' | b'{')
            {
                out(&l[open + 1..i - 1]);
            }
        } else {
            // `k:` after `, ` or `{`.
            let before = &l[..i];
            let comma = before.rfind(", ").map(|j| j + 2);
            let brace = before.rfind('{').map(|j| j + 1);
            if let Some(s) = comma.max(brace)
                && !before[s..].is_empty()
            {
                out(&before[s..]);
            }
        }
    }
}

/// The `key: value` pairs a line writes: at the start (after `- `), and
/// each `k: v` (or `"k": "v"`) followed by `,` or ending the line.
fn line_pairs<'a>(l: &'a str, out: &mut impl FnMut(&'a str, &'a str)) {
    let t = l.trim_start();
    let t = t.strip_prefix("- ").unwrap_or(t).trim();
    let t = t.trim_end_matches(',');
    for (i, _) in t.match_indices(": ") {
        let before = &t[..i];
        let start = before.rfind([' ', '{', ',', '[']).map_or(0, |j| j + 1);
        let mut key = &before[start..];
        if let Some(q) = key.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
            key = q;
        } else if key.contains('"') {
            continue;
        }
        if key.is_empty() {
            continue;
        }
        let rest = &t[i + 2..];
        // To the end of the line, and to the first `,` after the value.
        let mut candidates = vec![rest];
        if let Some(c) = rest.find(',') {
            candidates.push(&rest[..c]);
        }
        for v in candidates {
            let v = v.trim_end_matches(['}', ']', ' ']);
            let unq = ['"', '\'']
                .iter()
                .find_map(|q| v.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)));
            out(key, unq.unwrap_or(v));
        }
    }
}

/// The documents of `docs` whose `kind` is one of `kinds`, each with the
/// string at `pointer` (its name, or `""`) and the line where `key` gives it.
pub(super) fn named<'d>(
    docs: &'d [Doc],
    lines: &Lines,
    kinds: &[&str],
    pointer: &str,
    key: &str,
) -> (Vec<&'d Doc>, Vec<(String, Loc)>) {
    let picked: Vec<&Doc> = docs
        .iter()
        .filter(|d| {
            d.value
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| kinds.contains(&k))
        })
        .collect();
    let names = picked
        .iter()
        .map(|d| {
            let name = d
                .value
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or("");
            (
                name.to_string(),
                lines.at(lines.key_value(d.line, key, name)),
            )
        })
        .collect();
    (picked, names)
}

/// A duration in proto3 JSON (`"5s"`, `"0.25s"`, `{seconds, nanos}`) or
/// Kubernetes/Istio/Go spelling (`"1m30s"`, `"100ms"`).
pub(super) fn duration(v: &Value) -> Result<crate::engine::SimDuration, String> {
    use crate::engine::SimDuration;
    match v {
        Value::String(s) => crate::engine::time::parse_duration(s),
        Value::Object(m) => {
            let secs = m.get("seconds").map_or(Some(0), |s| {
                s.as_u64()
                    .or_else(|| s.as_str().and_then(|s| s.parse().ok()))
            });
            let nanos = m.get("nanos").map_or(Some(0), Value::as_u64);
            match (secs, nanos) {
                // Checked: seconds × 10⁶ must not wrap (a sub-µs rest is dropped).
                (Some(s), Some(n)) => SimDuration::try_from_secs_nanos(s, n - n % 1_000),
                _ => Err(format!("expected a duration {{seconds, nanos}}, found {v}")),
            }
        }
        _ => Err(format!("expected a duration such as \"5s\", found {v}")),
    }
}

/// A whole number, possibly wrapped (`{"value": 5}`).
pub(super) fn uint(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.get("value").and_then(Value::as_u64))
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_document_files_keep_their_start_lines() {
        let text = "a: 1\n---\nb: 2\n---\n# c\nc: 3\n";
        let docs = documents(Path::new("x.yaml"), text).unwrap();
        assert_eq!(docs.len(), 3);
        assert_eq!(docs[1].value["b"], 2);
        assert_eq!(docs[1].line, 3);
        assert_eq!(docs[2].line, 5);
        let l = Lines::new(Path::new("x.yaml"), text);
        assert_eq!(l.key(1, "c"), 6);
        assert_eq!(l.key_value(1, "b", "2"), 3);
    }

    #[test]
    fn bad_yaml_names_the_line() {
        let e = documents(Path::new("x.yaml"), "a: 1\nb: [1, 2\n").unwrap_err();
        assert!(e.to_string().starts_with("x.yaml:"), "{e}");
        assert!(e.to_string().contains("not valid YAML"), "{e}");
    }

    #[test]
    fn duplicate_keys_non_finite_numbers_and_deep_flows_are_refused() {
        let p = Path::new("x.yaml");
        let e = documents(p, "a: 1\nb:\n  c: 1\n  c: 2\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("x.yaml:4: the key `c` is written twice"),
            "{e}"
        );
        let e = documents(p, "a: .nan\n").unwrap_err().to_string();
        assert!(e.starts_with("x.yaml:1: not valid YAML: "), "{e}");
        assert!(e.contains("found .nan, which is not a number"), "{e}");
        let deep = format!("a: {}1{}\n", "[".repeat(101), "]".repeat(101));
        let e = documents(p, &deep).unwrap_err().to_string();
        assert!(e.contains("nested more than 100 levels deep"), "{e}");
        // Brackets in strings and comments do not count.
        let fine = format!(
            "a: \"{}\" # {}\nb: '{}'\n",
            "[".repeat(200),
            "{".repeat(200),
            "{".repeat(200)
        );
        assert_eq!(documents(p, &fine).unwrap().len(), 1);
    }

    #[test]
    fn the_line_index_finds_keys_and_pairs_as_the_text_writes_them() {
        let text = "- name: a\n  x: {address: 10.0.0.1, port_value: 80}\n\"q\": \"v\",\n";
        let l = Lines::new(Path::new("x.yaml"), text);
        assert_eq!(l.key(1, "name"), 1);
        assert_eq!(l.key(1, "port_value"), 2);
        assert_eq!(l.key(1, "q"), 3);
        assert_eq!(l.find_value(1, "address", "10.0.0.1"), Some(2));
        assert_eq!(l.find_value(3, "address", "10.0.0.1"), None);
        assert_eq!(l.find_value(1, "q", "v"), Some(3));
        assert_eq!(l.key(2, "nope"), 2);
    }

    #[test]
    fn proto_durations_that_would_wrap_are_errors() {
        let e = duration(&serde_json::json!({"seconds": 288230376151711745u64})).unwrap_err();
        assert!(e.contains("288230376151711745s"), "{e}");
    }

    #[test]
    fn durations_in_proto_and_go_spellings() {
        use crate::engine::SimDuration;
        assert_eq!(
            duration(&"0.25s".into()).unwrap(),
            SimDuration::from_millis(250)
        );
        assert_eq!(
            duration(&"1m30s".into()).unwrap(),
            SimDuration::from_secs(90)
        );
        assert_eq!(
            duration(&serde_json::json!({"seconds": 2, "nanos": 500000000})).unwrap(),
            SimDuration::from_millis(2500)
        );
        assert!(duration(&serde_json::json!(5)).is_err());
    }
}
