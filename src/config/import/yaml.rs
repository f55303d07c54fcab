//! YAML (and JSON) documents for the Envoy, Istio and Kubernetes readers,
//! read with `serde_yaml_ng` into `serde_json::Value`, and the lines their
//! keys are on (serde gives values without positions, so a key's line is
//! found in the text: the first line at or after its parent's that
//! writes it as a key).

use super::Loc;
use crate::error::Error;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// One document of a (multi-document) YAML file.
#[derive(Debug)]
pub(super) struct Doc {
    pub value: Value,
    /// The line its content starts on.
    pub line: usize,
}

/// Every non-empty document of the file.
pub(super) fn documents(path: &Path, text: &str) -> Result<Vec<Doc>, Error> {
    // Where each document starts: after each `---` line.
    let mut starts = vec![1];
    for (i, l) in text.lines().enumerate() {
        if l.starts_with("---") {
            if i == 0
                || text
                    .lines()
                    .take(i)
                    .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
            {
                starts[0] = i + 2;
            } else {
                starts.push(i + 2);
            }
        }
    }
    let mut out = vec![];
    for (k, de) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(de).map_err(|e| {
            let line = e.location().map_or(1, |l| l.line());
            let msg = e.to_string();
            let msg = match msg.rfind(" at line ") {
                Some(i) => msg[..i].to_string(),
                None => msg,
            };
            Loc::new(path, line).error(format!("not valid YAML: {msg}"))
        })?;
        if !value.is_null() {
            out.push(Doc {
                value,
                line: starts.get(k).copied().unwrap_or(1),
            });
        }
    }
    Ok(out)
}

/// Finds where keys are written in the text of one file.
pub(super) struct Lines<'a> {
    lines: Vec<&'a str>,
    path: &'a Path,
}

impl<'a> Lines<'a> {
    pub(super) fn new(path: &'a Path, text: &'a str) -> Lines<'a> {
        Lines {
            lines: text.lines().collect(),
            path,
        }
    }

    /// The first line at or after `from` writing `key` as a key (`key:`
    /// or `"key":`); `from` if there is none.
    pub(super) fn key(&self, from: usize, key: &str) -> usize {
        self.find(from, |l| {
            let t = l.trim_start().trim_start_matches("- ").trim_start();
            let t = t.trim_start_matches(['{', ',']).trim_start();
            t.starts_with(&format!("{key}:"))
                || t.starts_with(&format!("\"{key}\":"))
                || l.contains(&format!(" \"{key}\":"))
                || l.contains(&format!("{{\"{key}\":"))
                || l.contains(&format!(", {key}:"))
                || l.contains(&format!("{{{key}:"))
        })
        .unwrap_or(from)
    }

    /// The line of a path of keys, each searched after the previous one.
    pub(super) fn path(&self, from: usize, keys: &[&str]) -> usize {
        keys.iter().fold(from, |at, k| self.key(at, k))
    }

    /// The first line at or after `from` where `key` has the value `value`.
    pub(super) fn key_value(&self, from: usize, key: &str, value: &str) -> usize {
        self.find(from, |l| {
            let t = l.trim_start().trim_start_matches("- ").trim();
            let t = t.trim_end_matches(',');
            [
                format!("{key}: {value}"),
                format!("{key}: \"{value}\""),
                format!("{key}: '{value}'"),
                format!("\"{key}\": \"{value}\""),
            ]
            .iter()
            .any(|p| t == p || t.contains(&format!("{p},")) || t.ends_with(p.as_str()))
        })
        .unwrap_or(from)
    }

    fn find(&self, from: usize, pred: impl Fn(&str) -> bool) -> Option<usize> {
        let start = from.max(1) - 1;
        self.lines
            .iter()
            .enumerate()
            .skip(start)
            .find(|(_, l)| pred(l))
            .map(|(i, _)| i + 1)
    }

    pub(super) fn at(&self, line: usize) -> Loc {
        Loc::new(self.path, line)
    }
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
                (Some(s), Some(n)) => Ok(SimDuration::from_micros(s * 1_000_000 + n / 1_000)),
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
