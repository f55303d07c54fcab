//! The shape of the source tree, as ARCHITECTURE.md describes it: the
//! top-level modules of `src/` form layers without import cycles, no file
//! is over 1,200 lines outside its tests, no function over 150 lines.

use crate::root;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom first. A module may use those of its own layer and
/// of the layers below; a use of a higher layer is a back-edge.
const LAYERS: &[&[&str]] = &[
    &[
        "ids",
        "engine",
        "stats",
        "error",
        "diagnostics",
        "atomic",
        "plot",
    ],
    &["policy"],
    &["spec"],
    &["config"],
    &["metrics", "world"],
    &["run"],
    &["sweep"],
    &["output"],
    &["replay"],
    &["tune"],
    &["reproduce"],
    &["cli"],
];

const MAX_FILE_LINES: usize = 1200;
const MAX_FN_LINES: usize = 150;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The part of a file before its unit tests.
fn body(text: &str) -> &str {
    let marker = "\n#[cfg(test)]\nmod tests";
    text.find(marker).map_or(text, |i| &text[..i])
}

/// `crate::<module>` references in `text`.
fn crate_refs(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `hcsim_crate::`, not ours
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

/// Top-level module → the top-level modules it uses (tests excluded).
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = root().join("src");
    let mut files = vec![];
    rust_files(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = fs::read_to_string(&f).unwrap();
        let deps = graph.entry(module.clone()).or_default();
        deps.extend(crate_refs(body(&text)).into_iter().filter(|d| *d != module));
    }
    graph
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

#[test]
fn top_level_modules_form_layers_without_cycles() {
    let graph = module_graph();
    let mut problems = vec![];
    for (m, deps) in &graph {
        let Some(lm) = layer_of(m) else {
            problems.push(format!(
                "src/{m} is in no layer: add it to LAYERS here and to ARCHITECTURE.md"
            ));
            continue;
        };
        for d in deps {
            match layer_of(d) {
                Some(ld) if ld > lm => problems.push(format!(
                    "{m} (layer {lm}) uses {d} (layer {ld}): a layer uses only those below it"
                )),
                None if graph.contains_key(d) => {}
                _ => {}
            }
        }
    }
    // cycles, also within a layer
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&String> = graph[start].iter().collect();
        while let Some(n) = todo.pop() {
            if n == start {
                problems.push(format!("{start} is in an import cycle"));
                break;
            }
            if seen.insert(n.clone())
                && let Some(next) = graph.get(n)
            {
                todo.extend(next.iter());
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // the check itself sees real edges
    assert!(graph["cli"].contains("output") && graph["world"].contains("policy"));
}

/// Functions (`fn` items, at any depth) and their length in lines, for
/// rustfmt-formatted code: a body ends at the first `}` line at the
/// indentation of its `fn`.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = vec![];
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let after_vis = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|v| trimmed.strip_prefix(v))
            .unwrap_or(trimmed);
        let after_qual = ["const ", "unsafe ", "async "]
            .iter()
            .fold(after_vis, |s, q| s.strip_prefix(q).unwrap_or(s));
        let Some(sig) = after_qual.strip_prefix("fn ") else {
            continue;
        };
        let name: String = sig
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let end = lines[i..].iter().position(|l| {
            let t = l.trim_end();
            t.starts_with(indent)
                && (t == format!("{indent}}}")
                    || t.ends_with(';') && !t[indent.len()..].starts_with(' '))
        });
        if let Some(e) = end {
            out.push((name, i + 1, e + 1));
        }
    }
    out
}

#[test]
fn no_long_files_or_functions() {
    let src = root().join("src");
    let mut files = vec![];
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = vec![];
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        let n = body(&text).lines().count();
        if n > MAX_FILE_LINES {
            problems.push(format!(
                "{rel}: {n} lines outside its tests (at most {MAX_FILE_LINES})"
            ));
        }
        for (name, line, len) in functions(&text) {
            if len > MAX_FN_LINES {
                problems.push(format!(
                    "{rel}:{line}: fn {name} has {len} lines (at most {MAX_FN_LINES})"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn function_lengths_are_measured() {
    let text = "fn a() {\n    x();\n}\n\npub(crate) fn b(\n    y: u8,\n) -> u8 {\n    y\n}\ntrait T {\n    fn c(&self);\n}\n";
    let f = functions(text);
    assert_eq!(
        f,
        vec![
            ("a".to_string(), 1, 3),
            ("b".to_string(), 5, 5),
            ("c".to_string(), 11, 1)
        ]
    );
}

/// The sibling files (and subfolders) of `dir` under `src/` that each file of
/// `dir` uses: `super::X` or `crate::<dir>::X` for a sibling `X`.
fn sibling_graph(src: &Path, dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let rel = dir.strip_prefix(src).unwrap();
    let prefix: String = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned() + "::")
        .collect();
    let mut names = BTreeSet::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if p.is_dir() || (p.extension().is_some_and(|x| x == "rs") && name != "mod") {
            names.insert(name);
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for name in &names {
        let mut texts = vec![];
        let file = dir.join(format!("{name}.rs"));
        if file.is_file() {
            texts.push(fs::read_to_string(&file).unwrap());
        } else {
            let mut inner = vec![];
            rust_files(&dir.join(name), &mut inner);
            for f in inner {
                texts.push(fs::read_to_string(f).unwrap());
            }
        }
        let uses = graph.entry(name.clone()).or_default();
        for text in &texts {
            let text = body(text);
            for other in &names {
                if other == name {
                    continue;
                }
                let direct = format!("super::{other}::");
                let braced = format!("super::{{{other}");
                let full = format!("crate::{prefix}{other}::");
                // A subfolder's own files reach their parent's siblings with
                // `super::super::`: counted through `crate::` paths only.
                if (file.is_file() && (text.contains(&direct) || text.contains(&braced)))
                    || (!prefix.is_empty() && text.contains(&full))
                {
                    uses.insert(other.clone());
                }
            }
        }
    }
    graph
}

/// A cycle in `graph`, if any, as the path that closes it.
fn a_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut cycle = path[i..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut vec![], &mut done))
}

#[test]
fn files_of_a_folder_form_no_cycle() {
    let src = root().join("src");
    let mut dirs = vec![src.clone()];
    let mut problems = vec![];
    while let Some(d) = dirs.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                dirs.push(e.path());
            }
        }
        if d == src {
            continue; // the top level is the layer test's
        }
        if let Some(c) = a_cycle(&sibling_graph(&src, &d)) {
            let rel = d.strip_prefix(root()).unwrap().display().to_string();
            problems.push(format!(
                "{rel}: {} use each other in a circle",
                c.join(" → ")
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The check sees real edges.
    let plot = sibling_graph(&src, &src.join("plot"));
    assert!(plot["heatmap"].contains("theme"), "{plot:?}");
}

/// The most fields `World` may have: it is made of a few typed parts.
const MAX_WORLD_FIELDS: usize = 16;
/// The most `World` methods one file may hold.
const MAX_WORLD_METHODS_PER_FILE: usize = 20;

/// The bodies of `impl … World … {` blocks in `text`.
fn world_impls(text: &str) -> Vec<&str> {
    let mut out = vec![];
    let mut rest = text;
    while let Some(i) = rest.find("\nimpl") {
        let line_end = rest[i + 1..].find('\n').map_or(rest.len(), |e| i + 1 + e);
        let line = &rest[i + 1..line_end];
        rest = &rest[line_end..];
        if !(line.contains(" World<") || line.contains(" World {")) || !line.ends_with('{') {
            continue;
        }
        let end = rest.find("\n}\n").map_or(rest.len(), |e| e + 1);
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

#[test]
fn the_world_stays_a_few_typed_parts() {
    let world = root().join("src/world");
    let text = fs::read_to_string(world.join("mod.rs")).unwrap();
    let start = text
        .find("pub struct World<'s> {")
        .expect("World is in world/mod.rs");
    let end = start + text[start..].find("\n}\n").unwrap();
    let fields = text[start..end]
        .lines()
        .skip(1)
        .filter(|l| {
            let t = l.trim_start();
            !t.starts_with("//") && !t.starts_with('#') && t.contains(':')
        })
        .count();
    assert!(
        fields <= MAX_WORLD_FIELDS,
        "World has {fields} fields (at most {MAX_WORLD_FIELDS}): give new state a part of its own"
    );
    let mut files = vec![];
    rust_files(&world, &mut files);
    let mut problems = vec![];
    for f in files {
        let text = fs::read_to_string(&f).unwrap();
        let methods: usize = world_impls(body(&text))
            .iter()
            .map(|b| functions(b).iter().filter(|(_, _, len)| *len > 0).count())
            .sum();
        if methods > MAX_WORLD_METHODS_PER_FILE {
            problems.push(format!(
                "{}: {methods} World methods (at most {MAX_WORLD_METHODS_PER_FILE})",
                f.strip_prefix(root()).unwrap().display()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn only_the_fleet_knows_how_replicas_lay_out_their_tables() {
    // Replica × per-replica count (`r * npol + p`, `r * sloc + s`) and its
    // inverse belong to `ids::FleetLayout` (and `world/fleet.rs`, which holds it).
    let allowed = ["src/ids.rs", "src/world/fleet.rs"];
    let words = [
        "npol",
        "sloc",
        "first_scope",
        "/ scopes_per_replica",
        "% scopes_per_replica",
        "/ self.scopes_per_replica",
        "% self.scopes_per_replica",
        "fn replica_of",
        "fn policies_of",
    ];
    let src = root().join("src");
    let mut files = vec![];
    rust_files(&src, &mut files);
    let mut problems = vec![];
    for f in files {
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        if allowed.contains(&rel.as_str()) {
            continue;
        }
        let text = fs::read_to_string(&f).unwrap();
        for (n, line) in body(&text).lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            if let Some(w) = words.iter().find(|w| line.contains(*w)) {
                problems.push(format!("{rel}:{}: `{w}`: ask FleetLayout", n + 1));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
