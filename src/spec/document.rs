//! Reading model and sweep documents: JSON with line and column in errors,
//! deserialization that names the JSON path of an error, and the dotted paths
//! (`policy.fail_timeout`, `nodes.A.weight`, `faults[0].for`) that `--set`
//! and sweep axes patch.

use super::Model;
use super::overrides::{FieldPath, Override};
use crate::diagnostics;
pub use crate::diagnostics::{shorten, shorten_to};
use crate::error::Error;
use serde_json::Value;
use std::path::Path;

/// The largest model or sweep file hcsim reads.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Reads a text file that is `what` (named in the error). A device or a
/// pipe (`/dev/zero`) would never end, a huge file would fill memory: only
/// regular files of at most [`MAX_FILE_BYTES`] are read.
pub fn read_capped(path: &Path, what: &str) -> Result<String, Error> {
    let err = |source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(|e| match nearest_file(path) {
        Some(near) if e.kind() == std::io::ErrorKind::NotFound => err(std::io::Error::other(
            format!("{e} (did you mean {}?)", near.display()),
        )),
        _ => err(e),
    })?;
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
    parse_document(&text, path)
}

/// [`read_document`] of text already read from `path`.
fn parse_document(text: &str, path: &Path) -> Result<Value, Error> {
    let caps = [("nodes", super::limits::MAX_NODES)];
    diagnostics::parse_json_capped(text, &caps).map_err(|e| match e {
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
                + diagnostics::json_hint(text, e.line(), e.column())
                + config_hint(path, text),
        },
    })
}

/// The file beside `path` whose name is a typo away from it, if one is.
fn nearest_file(path: &Path) -> Option<std::path::PathBuf> {
    let name = path.file_name()?.to_str()?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let near = diagnostics::suggest(name, names.iter().map(String::as_str))?;
    Some(path.with_file_name(near))
}

/// A gateway config given where a model belongs: say how to turn it into one.
fn config_hint(path: &Path, text: &str) -> &'static str {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let head = text.trim_start();
    let config = matches!(ext, "conf" | "cfg" | "yaml" | "yml" | "toml" | "caddyfile")
        || [
            "upstream", "http", "events", "global", "defaults", "backend", "frontend",
        ]
        .iter()
        .any(|w| head.starts_with(w));
    if config {
        " (this looks like a gateway config, not a model: `hcsim import FILE > model.json` \
         turns it into one)"
    } else {
        ""
    }
}

fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// Deserializes a document into `T`, naming the JSON path of any error.
pub fn from_document<T: serde::de::DeserializeOwned>(doc: &Value, path: &Path) -> Result<T, Error> {
    // Tracking the path of every value costs a third of reading a model of
    // many nodes: read without it, and again with it only to say where an
    // error is (the same `Deserialize`, so the same error).
    if let Ok(v) = diagnostics::untracked(|| T::deserialize(doc)) {
        return Ok(v);
    }
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
pub fn load_with_overrides(path: &Path, sets: &[Override]) -> Result<Model, Error> {
    let text = read_capped(path, "a model or sweep file")?;
    if sets.is_empty()
        && let Some(spec) = spec_from_text(&text)
    {
        return Model::from_spec(spec, path);
    }
    load_parsed(&text, path, sets)
}

/// [`load_with_overrides`] by way of the parsed document: what names every
/// error.
fn load_parsed(text: &str, path: &Path, sets: &[Override]) -> Result<Model, Error> {
    let mut doc = parse_document(text, path)?;
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

/// A model deserialized straight from its text, without a [`Value`]
/// between: a model of many nodes reads in a fraction of the time. `None`
/// for anything [`read_document`] and [`Model::from_document`] might refuse
/// (or that is not a model); the caller then reads it that way, and its
/// error is theirs. What this accepts, they accept as the same spec:
///
/// - a document that is not an object is left to them (a struct would
///   also read from a list of its fields);
/// - a repeated key is an error here too: the spec's structs refuse a
///   repeated field, and its maps are read with
///   [`diagnostics::unique_keys`];
/// - `nodes` is capped while it is read ([`diagnostics::direct`]);
/// - tune and sweep files have keys a model has not (`space`, `axes`,
///   `model`): refused by the spec's unknown fields;
/// - JSON text holds no non-finite numbers (serde_json refuses `1e999`).
fn spec_from_text(text: &str) -> Option<super::model_spec::ModelSpec> {
    use serde::Deserialize;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if !text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
    {
        return None;
    }
    let read = || {
        let mut de = serde_json::Deserializer::from_str(text);
        let spec = super::model_spec::ModelSpec::deserialize(&mut de).ok()?;
        de.end().ok()?;
        Some(spec)
    };
    diagnostics::untracked(|| diagnostics::direct(super::limits::MAX_NODES, read))
}

/// Applies overrides to the model document read from `path`, in order.
/// Returns each override's field, spelled as errors spell it, with its
/// argument (for [`note_sets`]).
pub fn apply_sets(
    doc: &mut Value,
    path: &Path,
    sets: &[Override],
) -> Result<Vec<(String, String)>, Error> {
    let mut set_fields = vec![];
    for o in sets {
        o.apply(doc).map_err(|reason| Error::Invalid {
            path: path.to_path_buf(),
            field: shorten(o.path().as_str()),
            reason: format!("{reason} (in --set {})", shorten(o.text())),
        })?;
        if let Some(field) = o.path().canonical(doc) {
            set_fields.push((field, o.text().to_string()));
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
/// `nodes.a.weight` by node name) in a model document ([`FieldPath::set`]).
pub fn set_path(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    FieldPath::parse(path)?.set(doc, value)
}

/// Reads the value at a dotted path, if it exists.
pub fn get_path<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    FieldPath::parse(path).ok()?.get(doc)
}

/// Spells a path the way errors do: `nodes.A.weight` (a list item
/// addressed by name) becomes `nodes[0].weight`. `None` if it is malformed or
/// names a list item that does not exist.
pub fn canonical_path(doc: &Value, path: &str) -> Option<String> {
    FieldPath::parse(path).ok()?.canonical(doc)
}

/// Checks that a dotted path is well formed and at most
/// [`MAX_PATH_SEGMENTS`](super::MAX_PATH_SEGMENTS) deep.
pub fn check_path_depth(path: &str) -> Result<(), String> {
    FieldPath::parse(path).map(|_| ())
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
        assert_eq!(
            canonical_path(&d, "nodes.b.weight").as_deref(),
            Some("nodes[1].weight")
        );
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
        let ok = vec!["x"; super::super::MAX_PATH_SEGMENTS - 1].join(".");
        let mut d = minimal();
        set_path(&mut d, &format!("description2.{ok}"), json!(1)).unwrap();
    }

    /// Every JSON file of the repository's models, sweeps and test corpora.
    fn corpus() -> Vec<std::path::PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "json") {
                    out.push(p);
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = vec![];
        for d in ["models", "sweeps", "tests", "calibration", "docs"] {
            walk(&root.join(d), &mut files);
        }
        files.sort();
        files
    }

    /// What `load_with_overrides` and the parsed path it falls back to make
    /// of `text`: the model or the error, as a run would show it.
    fn both_ways(text: &str, path: &Path) -> (String, String) {
        let show = |r: Result<Model, Error>| match r {
            Ok(m) => format!("{m:?}"),
            Err(e) => format!("error: {e} ({e:?})"),
        };
        let direct = match spec_from_text(text) {
            Some(spec) => show(Model::from_spec(spec, path)),
            None => show(load_parsed(text, path, &[])),
        };
        (direct, show(load_parsed(text, path, &[])))
    }

    #[test]
    fn the_direct_read_agrees_with_the_parsed_one_on_every_file() {
        let (mut direct, mut models) = (0, 0);
        for path in corpus() {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let (fast, parsed) = both_ways(&text, &path);
            assert_eq!(fast, parsed, "{}", path.display());
            models += usize::from(!parsed.starts_with("error:"));
            direct += usize::from(spec_from_text(&text).is_some());
            // What the direct read takes, the parsed one takes.
            if spec_from_text(&text).is_some() {
                assert!(read_document(&path).is_ok_and(|d| file_kind(&d) == FileKind::Model));
            }
        }
        assert!(
            models > 150 && direct >= models,
            "{direct} read directly of {models}"
        );
    }

    /// `v` as JSON text, with object number `target` (in document order)
    /// given `extra` entries first: the text a `Value` cannot hold.
    fn with_entries(v: &Value, target: usize, extra: &dyn Fn(&Map) -> String) -> String {
        fn emit(
            v: &Value,
            target: usize,
            n: &mut usize,
            extra: &dyn Fn(&Map) -> String,
            out: &mut String,
        ) {
            match v {
                Value::Object(m) => {
                    let mut parts = vec![];
                    if *n == target {
                        parts.push(extra(m));
                    }
                    *n += 1;
                    for (k, x) in m {
                        let mut s = serde_json::to_string(k).unwrap() + ": ";
                        emit(x, target, n, extra, &mut s);
                        parts.push(s);
                    }
                    parts.retain(|p| !p.is_empty());
                    out.push('{');
                    out.push_str(&parts.join(", "));
                    out.push('}');
                }
                Value::Array(a) => {
                    out.push('[');
                    for (i, x) in a.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        emit(x, target, n, extra, out);
                    }
                    out.push(']');
                }
                _ => out.push_str(&serde_json::to_string(v).unwrap()),
            }
        }
        let mut out = String::new();
        emit(v, target, &mut 0, extra, &mut out);
        out
    }
    type Map = serde_json::Map<String, Value>;

    #[test]
    fn a_repeated_key_anywhere_in_a_model_is_never_read_directly() {
        let objects = |v: &Value| {
            fn count(v: &Value) -> usize {
                match v {
                    Value::Object(m) => 1 + m.values().map(count).sum::<usize>(),
                    Value::Array(a) => a.iter().map(count).sum(),
                    _ => 0,
                }
            }
            count(v)
        };
        let first_again = |m: &Map| match m.iter().next() {
            Some((k, v)) => format!("{}: {v}", serde_json::to_string(k).unwrap()),
            None => String::new(),
        };
        // A key no struct has, twice: a map takes it, a struct refuses it.
        let unknown_twice = |m: &Map| {
            let v = m.values().next().cloned().unwrap_or(json!("x"));
            format!("\"zz\": {v}, \"zz\": {v}")
        };
        let mut checked = 0;
        for path in corpus() {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            if spec_from_text(&text).is_none() {
                continue;
            }
            let doc = read_document(&path).unwrap();
            // Some hundred objects of each file: a model of many nodes
            // repeats one shape.
            let n = objects(&doc);
            for target in (0..n).step_by(n.div_ceil(100).max(1)) {
                for extra in [&first_again as &dyn Fn(&Map) -> String, &unknown_twice] {
                    let bad = with_entries(&doc, target, extra);
                    if bad == with_entries(&doc, usize::MAX, extra) {
                        continue; // an empty object: nothing to repeat
                    }
                    assert!(spec_from_text(&bad).is_none(), "{}: {bad}", path.display());
                    assert!(diagnostics::parse_json(&bad).is_err());
                    checked += 1;
                }
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    fn write_tmp(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("hcsim-direct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const HEAD: &str =
        r#""name": "t", "duration": "10s", "clients": {"kind": "open", "rate_per_s": 10}"#;

    #[test]
    fn a_repeated_cookie_value_is_refused_with_the_parsed_message() {
        let text = r#"{"name": "t", "duration": "10s", "clients": {"kind": "open", "rate_per_s": 10, "keys": 10}, "gateway": {"flavor": "haproxy", "haproxy": {"cookie": {"values": {"a": "x", "a": "y"}}}}, "nodes": [{"name": "a"}]}"#.to_string();
        assert!(spec_from_text(&text).is_none());
        let p = write_tmp("cookie.json", &text);
        let e = load_with_overrides(&p, &[]).unwrap_err().to_string();
        assert!(
            e.contains("duplicate key `a` (only one value can count)"),
            "{e}"
        );
        assert_eq!(e, load_parsed(&text, &p, &[]).unwrap_err().to_string());
        // Once each, the map reads the same both ways.
        let once = text.replace(r#""a": "x", "#, "");
        let (fast, parsed) = both_ways(&once, &p);
        assert!(
            spec_from_text(&once).is_some() && !fast.starts_with("error"),
            "{fast}"
        );
        assert_eq!(fast, parsed);
    }

    #[test]
    fn nodes_past_the_limit_are_refused_as_they_are_read() {
        let max = super::super::limits::MAX_NODES;
        let nodes = vec![r#"{"name": "n"}"#; max + 1].join(", ");
        let text = format!(r#"{{{HEAD}, "nodes": [{nodes}]}}"#);
        assert!(spec_from_text(&text).is_none());
        let p = write_tmp("many.json", &text);
        let e = load_with_overrides(&p, &[]).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "at most {max} nodes are supported, found {}",
                max + 1
            )),
            "{e}"
        );
        // The items past the cap are never made.
        thread_local!(static MADE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) });
        struct Counted;
        impl<'de> serde::Deserialize<'de> for Counted {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                serde::de::IgnoredAny::deserialize(d)?;
                MADE.with(|m| m.set(m.get() + 1));
                Ok(Counted)
            }
        }
        let read = |text: &str| {
            let mut de = serde_json::Deserializer::from_str(text);
            diagnostics::capped_list::<_, Counted>(&mut de).map(|v| v.len())
        };
        assert_eq!(diagnostics::direct(3, || read("[1, 2, 3]")).unwrap(), 3);
        MADE.with(|m| m.set(0));
        assert!(diagnostics::direct(3, || read("[1, 2, 3, 4, 5, 6]")).is_err());
        assert_eq!(MADE.with(std::cell::Cell::get), 4);
        assert_eq!(
            read("[1, 2, 3, 4, 5, 6]").unwrap(),
            6,
            "no cap outside `direct`"
        );
    }

    #[test]
    fn tune_sweep_and_non_object_files_get_their_messages() {
        let cases = [
            (
                "tune.json",
                r#"{"model": "m.json", "space": {}, "scenarios": []}"#,
                "this is a tune file",
            ),
            (
                "sweep.json",
                r#"{"model": "m.json", "axes": []}"#,
                "this is a sweep",
            ),
            ("list.json", "[1, 2]", "a model is a JSON object"),
        ];
        for (name, text, want) in cases {
            assert!(spec_from_text(text).is_none(), "{name}");
            let p = write_tmp(name, text);
            let e = load_with_overrides(&p, &[]).unwrap_err().to_string();
            assert!(e.contains(want), "{name}: {e}");
        }
        // A model's fields in a list read as the struct itself would: the
        // direct read must leave a list to the parsed one.
        let list = r#"[null, "t", "", 1, "10s", null, null, ["1s"], {"kind": "open", "rate_per_s": 1}, {}, [{"name": "a"}]]"#;
        let mut de = serde_json::Deserializer::from_str(list);
        assert!(<super::super::ModelSpec as serde::Deserialize>::deserialize(&mut de).is_ok());
        assert!(spec_from_text(list).is_none());
        let e = load_parsed(list, Path::new("l.json"), &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("a model is a JSON object"), "{e}");
    }

    #[test]
    fn numbers_read_the_same_both_ways() {
        let p = Path::new("n.json");
        let policy = r#""policy": {"kind": "resilience4j", "failure_rate_threshold": 1.00000017881393432617187499}"#;
        let docs = [
            // An integer for an f64, a float for an integer, -0, a huge one.
            format!(
                r#"{{{HEAD}, "nodes": [{{"name": "a", "service_time": {{"dist": "lognormal", "median": "5ms", "sigma": 1}}}}]}}"#
            ),
            format!(r#"{{{HEAD}, "nodes": [{{"name": "a", "weight": 2.0}}]}}"#),
            format!(r#"{{{HEAD}, "nodes": [{{"name": "a", "weight": -0}}]}}"#),
            format!(r#"{{{HEAD}, "nodes": [{{"name": "a", "weight": 1e999}}]}}"#),
            format!(r#"{{{HEAD}, "seed": 18446744073709551616, "nodes": [{{"name": "a"}}]}}"#),
            // An f32 that rounds differently straight from text than by f64.
            format!(r#"{{{HEAD}, "nodes": [{{"name": "a"}}], {policy}}}"#),
            // `dist` not first, a BOM, a duration with a fraction.
            format!(
                "\u{feff}{{{HEAD}, \"nodes\": [{{\"name\": \"a\", \"service_time\": {{\"mean\": \"1.5ms\", \"dist\": \"exponential\"}}}}]}}"
            ),
        ];
        for d in &docs {
            let (fast, parsed) = both_ways(d, p);
            assert_eq!(fast, parsed, "{d}");
        }
        assert!(spec_from_text(&docs[0]).is_some() && spec_from_text(&docs[5]).is_some());
        assert!(
            both_ways(&docs[5], p)
                .0
                .contains("failure_rate_threshold: 1.0000002")
        );
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
