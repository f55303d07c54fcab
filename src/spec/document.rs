//! Reading model and sweep documents: JSON with line and column in errors,
//! deserialization that names the JSON path of an error, and the dotted paths
//! (`policy.fail_timeout`, `nodes.A.weight`, `faults[0].for`) that `--set`
//! and sweep axes patch.

use super::Model;
use crate::diagnostics;
use crate::error::Error;
use serde_json::Value;
use std::path::Path;

/// The largest model or sweep file hcsim reads.
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// The most segments a dotted path (`--set`, a sweep's `set` and axes) may
/// have: deeper than any field of a model, and shallow enough that a patched
/// document stays within the nesting the JSON parser allows (128 levels),
/// so nothing that walks, serializes or drops it can exhaust the stack.
pub const MAX_PATH_SEGMENTS: usize = 32;
/// Paths and arguments longer than this are cut short in messages.
const MAX_SHOWN_CHARS: usize = 80;

/// `text`, cut short for a message if it is long: `x.x.x.x… (131071 characters)`.
pub fn shorten(text: &str) -> String {
    diagnostics::excerpt(text, MAX_SHOWN_CHARS).into_owned()
}

/// Reads a text file that is `what` (named in the error). A device or a
/// pipe (`/dev/zero`) would never end, a huge file would fill memory: only
/// regular files of at most [`MAX_FILE_BYTES`] are read.
pub fn read_capped(path: &Path, what: &str) -> Result<String, Error> {
    let err = |source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(err)?;
    if !meta.is_file() {
        return Err(err(std::io::Error::other("not a regular file")));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(err(std::io::Error::other(format!(
            "{} MiB is more than the {} MiB {what} may have",
            meta.len() / (1 << 20),
            MAX_FILE_BYTES >> 20
        ))));
    }
    std::fs::read_to_string(path).map_err(err)
}

/// Reads a JSON document, reporting syntax errors with line and column.
/// A model's `nodes` beyond the limit are refused while the file is read,
/// before they take memory.
pub fn read_document(path: &Path) -> Result<Value, Error> {
    let text = read_capped(path, "a model or sweep file")?;
    let caps = [("nodes", super::limits::MAX_NODES)];
    diagnostics::parse_json_capped(&text, &caps).map_err(|e| match e {
        diagnostics::JsonError::TooLong { key, found } => Error::Invalid {
            path: path.to_path_buf(),
            field: key.into(),
            reason: super::limits::check_node_count(found).unwrap_err(),
        },
        diagnostics::JsonError::Syntax(e) => Error::Json {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            msg: strip_position(&e.to_string())
                + diagnostics::json_hint(&text, e.line(), e.column()),
        },
    })
}

fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// Deserializes a document into `T`, naming the JSON path of any error.
pub fn from_document<T: serde::de::DeserializeOwned>(doc: &Value, path: &Path) -> Result<T, Error> {
    serde_path_to_error::deserialize(doc).map_err(|e| {
        let (field, msg) = diagnostics::describe(&e);
        Error::Parse {
            path: path.to_path_buf(),
            field,
            msg: strip_position(&msg),
        }
    })
}

/// "a list", "a string", ...: how a JSON value is described in messages.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// What a JSON file describes, judged by its top-level shape.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A model: `name`, `duration`, `clients`, `nodes`, ...
    Model,
    /// A sweep: names a `model` file and the `axes` to vary.
    Sweep,
    /// A tune file: names a `model` file, the `space` to search and the `scenarios`.
    Tune,
}

/// A tune file names its space and scenarios, a sweep its model and axes;
/// anything else is read as a model (and
/// a malformed one gets the model's error messages).
pub fn file_kind(doc: &Value) -> FileKind {
    match doc.as_object() {
        Some(m) if m.contains_key("scenarios") && m.contains_key("space") => FileKind::Tune,
        Some(m) if m.contains_key("axes") || m.get("model").is_some_and(Value::is_string) => {
            FileKind::Sweep
        }
        _ => FileKind::Model,
    }
}

/// Loads a model document and applies `--set PATH=VALUE` overrides. An error
/// in a field that a `--set` changed says so.
pub fn load_with_overrides(path: &Path, sets: &[String]) -> Result<Model, Error> {
    let mut doc = read_document(path)?;
    if file_kind(&doc) == FileKind::Tune {
        return Err(Error::Parse {
            path: path.to_path_buf(),
            field: String::new(),
            msg: format!(
                "this is a tune file (it names a `space` and `scenarios`), not a model: use `hcsim tune {}`",
                path.display()
            ),
        });
    }
    if file_kind(&doc) == FileKind::Sweep {
        return Err(Error::Parse {
            path: path.to_path_buf(),
            field: String::new(),
            msg: format!(
                "this is a sweep (it names a `model` and `axes`), not a model: use `hcsim sweep {}`",
                path.display()
            ),
        });
    }
    let set_fields = apply_sets(&mut doc, path, sets)?;
    Model::from_document(&doc, path).map_err(|e| note_sets(e, &set_fields))
}

/// Applies `--set PATH=VALUE` overrides to the model document read from
/// `path`, in order. Returns each override's field, spelled as errors spell
/// it, with its argument (for [`note_sets`]).
pub fn apply_sets(
    doc: &mut Value,
    path: &Path,
    sets: &[String],
) -> Result<Vec<(String, String)>, Error> {
    let mut set_fields = vec![];
    for arg in sets {
        let err = |reason: String| Error::Set {
            arg: shorten(arg),
            reason,
        };
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| err("expected PATH=VALUE, e.g. clients.rate_per_s=10000".into()))?;
        let (key, value) = (key.trim(), value.trim());
        // Text that starts like JSON must be JSON: a missing brace should not
        // turn an object into a string.
        if value.starts_with(['{', '[', '"'])
            && let Err(e) = serde_json::from_str::<Value>(value)
        {
            return Err(err(format!("VALUE is not valid JSON: {e}")));
        }
        set_path(doc, key, parse_set_value(value)).map_err(|reason| Error::Invalid {
            path: path.to_path_buf(),
            field: shorten(key),
            reason: format!("{reason} (in --set {})", shorten(arg)),
        })?;
        if let Some(field) = canonical_path(doc, key) {
            set_fields.push((field, arg.clone()));
        }
    }
    Ok(set_fields)
}

/// Notes "set by --set ARG" on an error in a field that an override changed.
pub fn note_sets(e: Error, set_fields: &[(String, String)]) -> Error {
    set_fields.iter().rev().fold(e, |e, (field, arg)| {
        e.note_under(field, &format!("set by --set {arg}"))
    })
}

/// Sets `value` at a dotted path (`clients.rate_per_s`, `nodes[0].weight`,
/// `nodes.a.weight` by node name) in a model document. The parent must exist;
/// the last key may be new only if the parent is an object.
pub fn set_path(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    let parts = split_path(path)?;
    let (last, parents) = parts.split_last().ok_or("empty path")?;
    let mut cur = doc;
    let mut walked = String::new();
    for p in parents {
        // A section the file leaves to its defaults (e.g. `gateway`) is created.
        if let Value::Object(map) = cur
            && !map.contains_key(p.as_str())
        {
            map.insert(p.clone(), Value::Object(Default::default()));
        }
        // The message is built only when it is needed: building it at every
        // segment would make long paths quadratic.
        if step_ref(cur, p).is_none() {
            return Err(missing_segment(cur, p, &walked));
        }
        cur = step(cur, p).expect("the segment was just found");
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(p);
    }
    match cur {
        Value::Object(map) => {
            map.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(items) => {
            let i: usize = last.parse().map_err(|_| {
                format!("`{walked}` is a list: index it with a number, not `{last}`")
            })?;
            let len = items.len();
            let slot = items
                .get_mut(i)
                .ok_or_else(|| format!("index {i} is out of range: `{walked}` has {len} items"))?;
            *slot = value;
            Ok(())
        }
        _ => Err(format!("`{walked}` is not an object")),
    }
}

/// Why segment `p` cannot be followed from `cur`, reached by `walked`.
fn missing_segment(cur: &Value, p: &str, walked: &str) -> String {
    match cur {
        Value::Array(items) => match p.parse::<usize>() {
            Ok(i) => format!(
                "index {i} is out of range: `{walked}` has {} item(s)",
                items.len()
            ),
            Err(_) => no_item_named(walked, items, p),
        },
        _ => format!(
            "no field `{p}` under `{}`",
            if walked.is_empty() {
                "(top level)"
            } else {
                walked
            }
        ),
    }
}

/// "`nodes` has no item named "X" (they are "a", "b"; did you mean "a"?)":
/// the names a list item can be addressed by.
fn no_item_named(list: &str, items: &[Value], name: &str) -> String {
    let names: Vec<&str> = items
        .iter()
        .filter_map(|it| it.get("name").and_then(Value::as_str))
        .collect();
    if names.is_empty() {
        return format!("`{list}` has no item named \"{name}\" (index it with a number)");
    }
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let hint = diagnostics::suggest(name, names.iter().copied())
        .map(|s| format!("; did you mean \"{s}\"?"))
        .unwrap_or_default();
    format!(
        "`{list}` has no item named \"{name}\" ({list} are {}{hint})",
        quoted.join(", ")
    )
}

/// Reads the value at a dotted path, if it exists.
pub fn get_path<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    let parts = split_path(path).ok()?;
    let mut cur = doc;
    for p in &parts {
        cur = step_ref(cur, p)?;
    }
    Some(cur)
}

/// Spells a `--set` path the way errors do: `nodes.A.weight` (a list item
/// addressed by name) becomes `nodes[0].weight`. `None` if it is malformed or
/// names a list item that does not exist.
pub fn canonical_path(doc: &Value, path: &str) -> Option<String> {
    let mut out = String::new();
    let mut cur = Some(doc);
    for p in split_path(path).ok()? {
        if let Some(Value::Array(items)) = cur {
            let i = match p.parse::<usize>() {
                Ok(i) => i,
                Err(_) => items
                    .iter()
                    .position(|it| it.get("name").and_then(Value::as_str) == Some(p.as_str()))?,
            };
            out.push_str(&format!("[{i}]"));
            cur = items.get(i);
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&p);
            cur = cur.and_then(|v| v.get(p.as_str()));
        }
    }
    Some(out)
}

/// Checks that a dotted path is at most [`MAX_PATH_SEGMENTS`] deep.
pub fn check_path_depth(path: &str) -> Result<(), String> {
    let segments = path.split(['.', '[']).count();
    if segments > MAX_PATH_SEGMENTS {
        return Err(format!(
            "the path has {segments} segments, more than the {MAX_PATH_SEGMENTS} any field of a model needs"
        ));
    }
    Ok(())
}

fn split_path(path: &str) -> Result<Vec<String>, String> {
    check_path_depth(path)?;
    let mut out = vec![];
    for seg in path.split('.') {
        if seg.is_empty() {
            return Err(format!("malformed path `{path}`"));
        }
        // `nodes[0]` -> `nodes`, `0`
        let mut rest = seg;
        if let Some(b) = rest.find('[') {
            out.push(rest[..b].to_string());
            rest = &rest[b..];
            while let Some(stripped) = rest.strip_prefix('[') {
                let close = stripped
                    .find(']')
                    .ok_or_else(|| format!("malformed path `{path}`"))?;
                out.push(stripped[..close].to_string());
                rest = &stripped[close + 1..];
            }
            if !rest.is_empty() {
                return Err(format!("malformed path `{path}`"));
            }
        } else {
            out.push(rest.to_string());
        }
    }
    out.retain(|s| !s.is_empty());
    Ok(out)
}

fn step<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    match v {
        Value::Object(m) => m.get_mut(key),
        Value::Array(items) => match key.parse::<usize>() {
            Ok(i) => items.get_mut(i),
            // a list of named things (nodes) can be addressed by name
            Err(_) => items
                .iter_mut()
                .find(|it| it.get("name").and_then(Value::as_str) == Some(key)),
        },
        _ => None,
    }
}

fn step_ref<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m.get(key),
        Value::Array(items) => match key.parse::<usize>() {
            Ok(i) => items.get(i),
            Err(_) => items
                .iter()
                .find(|it| it.get("name").and_then(Value::as_str) == Some(key)),
        },
        _ => None,
    }
}

/// Parses the value of `--set PATH=VALUE`: JSON if it parses, else a string.
pub fn parse_set_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn minimal() -> Value {
        json!({
            "name": "t", "duration": "10s",
            "clients": {"kind": "open", "rate_per_s": 10.0},
            "nodes": [{"name": "a"}, {"name": "b"}]
        })
    }

    #[test]
    fn set_path_patches_by_index_and_by_name() {
        let mut d = minimal();
        set_path(&mut d, "clients.rate_per_s", json!(10000)).unwrap();
        set_path(&mut d, "nodes[1].weight", json!(3)).unwrap();
        set_path(&mut d, "nodes.a.weight", json!(2)).unwrap();
        assert_eq!(d["clients"]["rate_per_s"], json!(10000));
        assert_eq!(d["nodes"][1]["weight"], json!(3));
        assert_eq!(d["nodes"][0]["weight"], json!(2));
        assert!(set_path(&mut d, "nodes[7].weight", json!(2)).is_err());
        set_path(&mut d, "gateway.workers", json!(2)).unwrap();
        assert_eq!(d["gateway"]["workers"], json!(2));
        assert_eq!(get_path(&d, "nodes[1].name"), Some(&json!("b")));
        assert_eq!(parse_set_value("5s"), json!("5s"));
        assert_eq!(parse_set_value("3"), json!(3));
    }

    #[test]
    fn deep_paths_are_refused_in_linear_time() {
        let deep = vec!["x"; 1_000_000].join(".");
        for prefix in ["", "$schema.", "description."] {
            let mut d = minimal();
            let path = format!("{prefix}{deep}");
            let e = set_path(&mut d, &path, json!(1)).unwrap_err();
            assert!(e.contains("more than the 32"), "{e}");
            assert_eq!(d, minimal(), "nothing was added");
            assert_eq!(get_path(&d, &path), None);
            assert_eq!(canonical_path(&d, &path), None);
        }
        assert!(shorten(&deep).ends_with("… (1999999 characters)"));
        let ok = vec!["x"; MAX_PATH_SEGMENTS - 1].join(".");
        let mut d = minimal();
        set_path(&mut d, &format!("description2.{ok}"), json!(1)).unwrap();
    }

    #[test]
    fn tells_models_from_sweeps() {
        assert_eq!(
            file_kind(&json!({"name": "x", "nodes": []})),
            FileKind::Model
        );
        assert_eq!(
            file_kind(&json!({"model": "models/a.json", "axes": []})),
            FileKind::Sweep
        );
        assert_eq!(file_kind(&json!([1, 2])), FileKind::Model);
    }
}
