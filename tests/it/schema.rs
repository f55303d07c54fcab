//! The JSON Schema (`hcsim schema model`) agrees with what hcsim accepts:
//! shipped models pass it, malformed ones fail it, the published copy is
//! current, and every tagged variant reports errors with their full path.

use crate::{hcsim, root};
use hcsim::spec::{self, Model};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&hcsim::spec::schema::model()).expect("the schema compiles")
}

fn json_files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn every_shipped_model_validates_against_the_schema() {
    let v = validator();
    let models = json_files("models");
    assert!(!models.is_empty());
    for path in models {
        let doc = spec::read_document(&path).unwrap();
        let errs = errors(&v, &doc);
        assert!(errs.is_empty(), "{}: {errs:?}", path.display());
        // and so does what `hcsim check` prints for it
        let sc = spec::Model::load(&path).unwrap();
        let eff = serde_json::to_value(sc.effective_spec()).unwrap();
        let errs = errors(&v, &eff);
        assert!(errs.is_empty(), "effective {}: {errs:?}", path.display());
    }
}

/// Whether a file of `sweeps/` is a tune file (`hcsim tune`), not a sweep.
fn is_tune(doc: &Value) -> bool {
    spec::file_kind(doc) == spec::FileKind::Tune
}

#[test]
fn every_shipped_tune_file_validates_against_the_tune_schema_and_checks() {
    let v = jsonschema::validator_for(&hcsim::spec::schema::tune()).expect("the schema compiles");
    let mut files = json_files("sweeps");
    files.extend(json_files("tests/tune"));
    let mut n = 0;
    for path in files {
        let doc = spec::read_document(&path).unwrap();
        if !is_tune(&doc) {
            continue;
        }
        n += 1;
        let errs = errors(&v, &doc);
        assert!(errs.is_empty(), "{}: {errs:?}", path.display());
        let o = hcsim(&["check", path.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert!(n >= 3, "only {n} tune files");
    // The schema sees a misspelt field and a missing one.
    let mut doc = spec::read_document(&root().join("tests/tune/tiny.json")).unwrap();
    doc["objective"] = json!([]);
    assert!(!v.is_valid(&doc));
    doc.as_object_mut().unwrap().remove("objective");
    doc.as_object_mut().unwrap().remove("scenarios");
    assert!(!v.is_valid(&doc));
}

#[test]
fn every_shipped_sweep_validates_against_the_sweep_schema() {
    let v = jsonschema::validator_for(&hcsim::spec::schema::sweep()).expect("the schema compiles");
    let sweeps = json_files("sweeps");
    assert!(!sweeps.is_empty());
    for path in sweeps {
        let doc = spec::read_document(&path).unwrap();
        if is_tune(&doc) {
            continue;
        }
        let errs = errors(&v, &doc);
        assert!(errs.is_empty(), "{}: {errs:?}", path.display());
        let o = hcsim(&["check", path.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    for path in json_files("tests/bad-sweeps") {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let category = name.split_once('-').map_or("", |(_, rest)| rest);
        if category.starts_with("unknown-") || category.starts_with("missing-") {
            let doc = spec::read_document(&path).unwrap();
            assert!(!v.is_valid(&doc), "{name} passes the sweep schema");
        }
    }
}

#[test]
fn malformed_models_fail_the_schema_too() {
    let v = validator();
    // The corpus cases the schema can see: types, names, required fields,
    // duration syntax. Ranges and cross-references are hcsim's alone.
    let schema_visible = [
        "type-",
        "unknown-",
        "missing-",
        "duration-negative",
        "duration-no-unit",
        "duration-bad-unit",
    ];
    let mut n = 0;
    for path in json_files("tests/bad-models") {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        // NN-<category>-...
        let category = name.split_once('-').map_or("", |(_, rest)| rest);
        if !schema_visible.iter().any(|k| category.starts_with(k)) {
            continue;
        }
        let doc = spec::read_document(&path).unwrap();
        assert!(!v.is_valid(&doc), "{name} passes the schema");
        n += 1;
    }
    assert!(
        n >= 30,
        "only {n} malformed models checked against the schema"
    );
}

#[test]
fn the_duration_pattern_accepts_what_the_parser_accepts() {
    let v = jsonschema::validator_for(&json!({
        "type": "string", "pattern": hcsim::engine::time::DURATION_PATTERN
    }))
    .unwrap();
    for s in [
        "5s", "300ms", "1.5s", "1m30s", "250us", "0s", "2h", "1min", " 5s ", ".5s", "1.s", "3µs",
        "5", "5 s", "-1s", "", "s", "1e3s", "5sec", "1..5s", "1.2.3s", "ms", "5S", "1h 30m",
    ] {
        let parsed = hcsim::engine::time::parse_duration(s).is_ok();
        assert_eq!(
            v.is_valid(&json!(s)),
            parsed,
            "{s:?}: pattern and parser disagree"
        );
    }
}

#[test]
fn the_published_schemas_are_current() {
    for (kind, schema) in [
        ("model", hcsim::spec::schema::model()),
        ("sweep", hcsim::spec::schema::sweep()),
        ("tune", hcsim::spec::schema::tune()),
    ] {
        let path = root().join(format!("docs/{kind}.schema.json"));
        let now = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        if std::env::var_os("HCSIM_BLESS").is_some() {
            std::fs::write(&path, &now).unwrap();
        }
        let published = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            published == now,
            "docs/{kind}.schema.json is stale: run `cargo run -- schema {kind} > docs/{kind}.schema.json`"
        );
        let o = hcsim(&["schema", kind]);
        assert!(o.status.success());
        assert_eq!(String::from_utf8_lossy(&o.stdout), now);
    }
}

#[test]
fn a_model_may_name_its_schema_for_editors() {
    let doc = json!({
        "$schema": "../docs/model.schema.json",
        "name": "t", "duration": "1s",
        "clients": {"kind": "open", "rate_per_s": 10.0},
        "nodes": [{"name": "a"}]
    });
    assert!(validator().is_valid(&doc));
    Model::from_document(&doc, Path::new("m.json")).unwrap();
}

/// Where each internally tagged enum sits in a model: its schema name, the
/// JSON pointer of a value of it, and what the document needs around it.
const TAGGED: &[(&str, &str, &str)] = &[
    ("ClientsSpec", "/clients", "{}"),
    ("FaultSpec", "/faults/0", "{}"),
    ("PolicySpec", "/policy", "{}"),
    ("LatencySpec", "/nodes/0/service_time", "{}"),
    (
        "ChartSpec",
        "/charts/0",
        r#"{"charts": [{"kind": "timeline"}]}"#,
    ),
    (
        "RatioWindowSpec",
        "/policy/window",
        r#"{"policy": {"kind": "ratio_ejection"}}"#,
    ),
];

fn pointer_to_path(p: &str) -> String {
    let mut out = String::new();
    for seg in p.split('/').skip(1) {
        if seg.parse::<usize>().is_ok() {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(seg);
        }
    }
    out
}

/// A variant's tag values and its other fields with their schemas.
type Variant = (Map<String, Value>, Vec<(String, Value)>);

/// The variants of a tagged enum's schema, nested ones flattened: the tag
/// values that select each, and its other fields.
fn variants(schema: &Value, tags: &Map<String, Value>, out: &mut Vec<Variant>) {
    for v in schema["oneOf"].as_array().expect("a oneOf") {
        let mut tags = tags.clone();
        let mut fields = vec![];
        for (k, s) in v["properties"].as_object().into_iter().flatten() {
            let value = s
                .get("const")
                .or_else(|| s.get("enum").and_then(|e| e.get(0)));
            match value {
                Some(c)
                    if s["type"] == "string"
                        && !tags.contains_key(k)
                        && s.get("default").is_none() =>
                {
                    tags.insert(k.clone(), c.clone());
                }
                _ => fields.push((k.clone(), s.clone())),
            }
        }
        if v.get("oneOf").is_some() {
            variants(v, &tags, out);
        } else {
            out.push((tags, fields));
        }
    }
}

/// Every field of every variant of the tagged enums, read from the schema
/// (so new variants are covered): a wrong type and an unknown field next to
/// it are reported at their full JSON path. A variant that fails here lacks
/// `#[serde(deserialize_with = "crate::diagnostics::tracked")]`.
#[test]
fn errors_in_every_tagged_variant_name_the_full_path() {
    let schema = hcsim::spec::schema::model();
    let base = json!({
        "name": "t", "duration": "10s",
        "clients": {"kind": "open", "rate_per_s": 10.0},
        "nodes": [{"name": "a"}, {"name": "b"}],
        "faults": [{"kind": "crash", "node": "a"}],
        "policy": {"kind": "none"}
    });
    let mut checked = 0;
    for (def, at, around) in TAGGED {
        let mut list = vec![];
        variants(&schema["$defs"][def], &Map::new(), &mut list);
        assert!(!list.is_empty(), "{def} has no variants in the schema");
        for (tags, fields) in list {
            let mut cases: Vec<(String, Value)> = fields
                .iter()
                .map(|(k, s)| {
                    let wrong = if s["type"] == "boolean" {
                        json!("x")
                    } else {
                        json!(true)
                    };
                    (k.clone(), wrong)
                })
                .collect();
            cases.push(("zz_not_a_field".into(), json!(1)));
            for (field, wrong) in cases {
                let mut doc = base.clone();
                let around: Value = serde_json::from_str(around).unwrap();
                for (k, v) in around.as_object().unwrap() {
                    doc[k] = v.clone();
                }
                let mut body = tags.clone();
                body.insert(field.clone(), wrong.clone());
                let (parent, key) = at.rsplit_once('/').unwrap();
                match doc.pointer_mut(parent).unwrap() {
                    Value::Array(items) => {
                        items[key.parse::<usize>().unwrap()] = Value::Object(body)
                    }
                    parent => {
                        parent[key] = Value::Object(body);
                    }
                }
                let e = Model::from_document(&doc, Path::new("m.json"))
                    .err()
                    .unwrap_or_else(|| panic!("{def} {tags:?}: {field} = {wrong} accepted"));
                let want = format!("m.json: {}.{field}: ", pointer_to_path(at));
                assert!(
                    e.to_string().starts_with(&want),
                    "{def} variant {tags:?}: got {e}, want the path {want:?}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 200, "{checked}");
}
