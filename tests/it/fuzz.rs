//! Fuzzing the model reader and the simulation with arbitrary input: no
//! panic, no hang, bounded memory.
//!
//! Each input is JSON text (and sometimes `--set` overrides). [`fuzz_one`]
//! parses it, validates it, checks the `hcsim check` round trip and, when it
//! is a model that may run, simulates it under an event budget and checks
//! that requests are conserved. Inputs come from three generators: byte
//! mutations of seed files, structural mutations of valid models (values
//! drawn from the schema's names and from edge cases such as `u32::MAX`,
//! `"999999999h"`, deep nesting), random JSON over the same vocabulary,
//! and the inputs that once broke hcsim: `--set` paths and sweep `set`
//! keys tens of thousands of segments deep, float ranges with
//! astronomically many values, models with many faults, huge counts (more
//! nodes, workers, replicas, clients or thresholds than a model may have:
//! refused before they are allocated) and numbers that wrap (seconds whose
//! microseconds overflow 64 bits).
//!
//! - `fuzz_output_paths` (`fuzz_outputs.rs`): writes through `hcsim::atomic` to targets of
//!   every kind (regular files, symbolic link chains, dangling and looping
//!   links, FIFOs with a reader, private null-like and full-like device
//!   nodes, directories, names up to 255 bytes): the content reaches the
//!   file the path names, a node is never replaced, no temporary is left.
//!
//! - `fuzz_corpus_replays_cleanly`: every file in `tests/fuzz-corpus/` (plus
//!   the shipped and malformed models).
//! - `fuzz_smoke`: 2,000 generated inputs from a fixed seed.
//! - `fuzz_long` (ignored): generated inputs for `HCSIM_FUZZ_SECS` seconds
//!   (default 600) from `HCSIM_FUZZ_SEED` (default: the clock; printed):
//!
//!   ```text
//!   HCSIM_FUZZ_SECS=600 cargo test --test it fuzz_long -- --ignored --nocapture
//!   ```
//!
//!   It runs in the test profile (optimised, with debug and overflow
//!   assertions). An input that panics or hangs (no progress for 30 s) is
//!   written to `target/fuzz-findings/`; once fixed, add it to
//!   `tests/fuzz-corpus/`.

use crate::{assert_conserved, root};
use hcsim::spec::{self, Model};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value, json};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Events per simulated fuzz input: bounds the time and memory of one case.
const BUDGET: u64 = 200_000;

/// One fuzz input: a file's text and `--set PATH=VALUE` overrides.
#[derive(Clone, Debug)]
struct Input {
    text: String,
    sets: Vec<(String, String)>,
}

/// How far an input got.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// Not JSON.
    Syntax,
    /// A `--set` could not be applied.
    Set,
    /// Not a valid model.
    Invalid,
    /// Valid, but refused before running (too large).
    Refused,
    /// A valid sweep (sweeps are expanded and checked, not run).
    Sweep,
    /// Simulated (possibly cut short by the budget).
    Simulated,
}

/// Runs one input through everything a user's file goes through.
fn fuzz_one(input: &Input) -> Outcome {
    let path = Path::new("fuzz.json");
    // As `read_document` reads a file: a top-level `nodes` list over the
    // cap is refused while it is read.
    let caps = [("nodes", hcsim::spec::limits::MAX_NODES)];
    let mut doc = match hcsim::diagnostics::parse_json_capped(&input.text, &caps) {
        Ok(d) => d,
        Err(hcsim::diagnostics::JsonError::TooLong { key, found }) => {
            assert_eq!(key, "nodes");
            assert!(found > hcsim::spec::limits::MAX_NODES as u64);
            return Outcome::Invalid;
        }
        Err(hcsim::diagnostics::JsonError::Syntax(e)) => {
            let _ = hcsim::diagnostics::json_hint(&input.text, e.line(), e.column());
            assert!(!e.to_string().is_empty());
            return Outcome::Syntax;
        }
    };
    for (key, value) in &input.sets {
        let _ = spec::canonical_path(&doc, key);
        let set = spec::Override::parse(&format!("{key}={value}"));
        if set.and_then(|o| o.apply(&mut doc)).is_err() {
            return Outcome::Set;
        }
    }
    if hcsim::spec::file_kind(&doc) == hcsim::spec::FileKind::Sweep {
        return fuzz_sweep(&doc);
    }
    let sc = match Model::from_document(&doc, path) {
        Ok(sc) => sc,
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("fuzz.json"), "{msg}");
            // What stderr shows is readable, however large the input.
            assert!(
                hcsim::diagnostics::clip_message(&msg).chars().count() <= 2_100,
                "{} characters",
                msg.len()
            );
            if !doc.to_string().contains("\\u0001") {
                assert!(!msg.contains('\u{1}'), "a path marker leaked: {msg:?}");
            }
            return Outcome::Invalid;
        }
    };
    let _ = sc.warnings();
    if hcsim::run::cost::preflight(&sc, None).is_err() {
        return Outcome::Refused;
    }
    // `hcsim check` prints a valid model that checks to itself
    let eff = serde_json::to_value(sc.effective_spec()).unwrap();
    let again = Model::from_document(&eff, path)
        .unwrap_or_else(|e| panic!("the effective model does not validate: {e}\n{eff:#}"));
    let eff2 = serde_json::to_value(again.effective_spec()).unwrap();
    assert_eq!(eff, eff2, "the effective model is not a fixed point");
    let (s, _cut) = hcsim::world::run_budgeted(&sc, sc.seed, BUDGET, None);
    assert_conserved(&s);
    Outcome::Simulated
}

/// A sweep document: read, expanded and every point validated, as `hcsim
/// check` and `hcsim sweep` do before running (it is not run). Its model
/// path is resolved from `sweeps/`.
fn fuzz_sweep(doc: &Value) -> Outcome {
    let path = root().join("sweeps/fuzz.json");
    let spec: hcsim::spec::SweepSpec = match spec::from_document(doc, &path) {
        Ok(s) => s,
        Err(_) => return Outcome::Invalid,
    };
    match hcsim::sweep::Plan::from_spec(spec, doc.clone(), &path) {
        Ok(plan) => {
            for sc in plan.models.iter().take(20) {
                let _ = sc.warnings();
                let _ = hcsim::run::cost::preflight(sc, None);
            }
            Outcome::Sweep
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            Outcome::Invalid
        }
    }
}

// ------------------------------------------------------------- generation

/// Names and words a model file may contain, read from the schema.
fn vocabulary() -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k == "properties"
                        && let Value::Object(props) = x
                    {
                        out.extend(props.keys().cloned());
                    }
                    if k == "const"
                        && let Value::String(s) = x
                    {
                        out.push(s.clone());
                    }
                    walk(x, out);
                }
            }
            Value::Array(items) => {
                for x in items {
                    if let Value::String(s) = x {
                        out.push(s.clone());
                    }
                    walk(x, out);
                }
            }
            _ => {}
        }
    }
    let mut out = vec![];
    walk(&hcsim::spec::schema::model(), &mut out);
    out.extend(["A", "B", "C", "n0", "a", "nginx"].map(String::from));
    out.sort();
    out.dedup();
    out
}

struct Gen {
    rng: Xoshiro256PlusPlus,
    vocab: Vec<String>,
    seeds: Vec<String>,
    models: Vec<Value>,
}

const NUMBERS: &[f64] = &[
    0.0,
    1.0,
    -1.0,
    2.0,
    0.5,
    1e-300,
    1e300,
    -1e300,
    4294967295.0,
    4294967296.0,
    18446744073709551615.0,
    18446744073709551616.0,
    9223372036854775807.0,
    // × 10⁶ wraps a u64 to 5 s and to 1 s
    288230376151711749.0,
    288230376151711745.0,
    9007199254740993.0,
    65535.0,
    65536.0,
    1023.0,
    1024.0,
    1025.0,
    4096.0,
    4097.0,
    99999.0,
    100000.0,
    100001.0,
    1e7,
    1.0000001e7,
    99.0,
    100.0,
    599.0,
    600.0,
    10.0,
    10.5,
];

const STRINGS: &[&str] = &[
    "",
    "0s",
    "1us",
    "0.5us",
    "1ms",
    "999ms",
    "1s",
    "1.5s",
    "59s",
    "60s",
    "1h",
    "999999999h",
    "277777777h",
    "1e3s",
    "-1s",
    "18446744073709551615us",
    "18446744073709551616us",
    "288230376151711749s",
    "18446744073709551615s",
    "18446744073709551615ms",
    "5124095576030431h",
    "1e30s",
    ".nan",
    ".inf",
    "9007199254740993us",
    "0.0000001s",
    "1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h",
    "µs",
    "5µs",
    "1min",
    "1..2s",
    ".5s",
    "5.s",
    " 5s ",
    "../x",
    "/",
    "x\u{0}y",
    "\u{1}p\u{1}fake marker",
    "GET",
    "POST",
];

const UNITS: &[&str] = &["h", "m", "min", "s", "ms", "us", "µs", "", "d", "sec"];

impl Gen {
    fn new(seed: u64) -> Gen {
        let mut seeds = vec![];
        let mut models = vec![];
        for dir in [
            "models",
            "sweeps",
            "tests/bad-models",
            "tests/bad-sweeps",
            "tests/fuzz-corpus",
        ] {
            for p in files(dir) {
                let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).to_string();
                if dir == "models" || dir == "sweeps" {
                    models.push(serde_json::from_str(&text).unwrap());
                }
                seeds.push(text);
            }
        }
        models.push(json!({
            "name": "small", "duration": "2s",
            "clients": {"kind": "closed", "concurrency": 2, "think_time": "0s"},
            "gateway": {"workers": 2, "balancer": "random_two"},
            "nodes": [{"name": "A", "backup": true}, {"name": "B"}, {"name": "C", "max_conns": 1}],
            "faults": [{"kind": "crash", "node": "B", "at": "0.5s", "for": "1s"},
                       {"kind": "flaky", "node": "C", "p": 0.5}],
            "policies": [{"kind": "max_fails", "max_fails": 1, "fail_timeout": "1s"}, {"kind": "none"}]
        }));
        Gen {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            vocab: vocabulary(),
            seeds,
            models,
        }
    }

    fn below(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n.max(1))
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random::<f64>() < p
    }

    fn word(&mut self) -> String {
        let i = self.below(self.vocab.len());
        self.vocab[i].clone()
    }

    fn number(&mut self) -> Value {
        match self.below(4) {
            0 => json!(self.rng.random_range(-5i64..=70)),
            1 => json!(self.rng.random::<u64>() >> self.below(64)),
            2 => json!(self.rng.random::<f64>() * 10f64.powi(self.rng.random_range(-8..12))),
            _ => {
                let x = NUMBERS[self.below(NUMBERS.len())];
                if x.fract() == 0.0 && x.abs() < 1.8e19 {
                    if x >= 0.0 {
                        json!(x as u64)
                    } else {
                        json!(x as i64)
                    }
                } else {
                    json!(x)
                }
            }
        }
    }

    fn string(&mut self) -> String {
        match self.below(5) {
            0 => STRINGS[self.below(STRINGS.len())].to_string(),
            1 => self.word(),
            2 => {
                let n = match self.number() {
                    Value::Number(n) => n.to_string(),
                    _ => "1".into(),
                };
                let n = n.trim_start_matches('-').to_string();
                format!("{n}{}", UNITS[self.below(UNITS.len())])
            }
            3 => format!(
                "{}{}",
                self.rng.random_range(0u64..5000),
                UNITS[self.below(UNITS.len())]
            ),
            _ => "x".repeat(self.below(3) * 5000 + 1),
        }
    }

    fn value(&mut self, depth: u32) -> Value {
        let k = if depth >= 4 {
            self.below(4)
        } else {
            self.below(7)
        };
        match k {
            0 => Value::Null,
            1 => json!(self.chance(0.5)),
            2 => self.number(),
            3 => json!(self.string()),
            4 => (0..self.below(5)).map(|_| self.value(depth + 1)).collect(),
            5 => {
                let mut m = Map::new();
                for _ in 0..self.below(6) {
                    let k = self.word();
                    m.insert(k, self.value(depth + 1));
                }
                Value::Object(m)
            }
            _ => {
                // nested far deeper than any model
                let mut v = json!(1);
                for _ in 0..self.below(200) {
                    v = json!([v]);
                }
                v
            }
        }
    }

    /// JSON pointers of every value in a document.
    fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    Self::pointers(
                        x,
                        format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                        out,
                    );
                }
            }
            Value::Array(items) => {
                for (i, x) in items.iter().enumerate() {
                    Self::pointers(x, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
        out.push(at);
    }

    fn mutate_tree(&mut self, doc: &mut Value) {
        for _ in 0..1 + self.below(4) {
            let mut ptrs = vec![];
            Self::pointers(doc, String::new(), &mut ptrs);
            let p = ptrs[self.below(ptrs.len())].clone();
            let op = self.below(7);
            let new = self.value(1);
            let word = self.word();
            let Some(target) = doc.pointer_mut(&p) else {
                continue;
            };
            match (op, target) {
                (0 | 1, t) => *t = new,
                (2, Value::Object(m)) if !m.is_empty() => {
                    let k = m
                        .keys()
                        .nth(self.rng.random_range(0..m.len()))
                        .unwrap()
                        .clone();
                    m.remove(&k);
                }
                (3, Value::Object(m)) => {
                    m.insert(word, new);
                }
                (4, Value::Array(items)) if !items.is_empty() => {
                    let i = self.rng.random_range(0..items.len());
                    let dup = items[i].clone();
                    for _ in 0..1 + self.rng.random_range(0..3) {
                        items.push(dup.clone());
                    }
                }
                (5, Value::Number(n)) => {
                    let x = n.as_f64().unwrap_or(0.0);
                    *n = serde_json::Number::from_f64(match self.below(4) {
                        0 => x + 1.0,
                        1 => x - 1.0,
                        2 => -x,
                        _ => x * 1000.0,
                    })
                    .unwrap_or_else(|| 0.into());
                }
                (6, Value::String(s)) => {
                    *s = self.string();
                }
                (_, t) => *t = new,
            }
        }
    }

    fn mutate_bytes(&mut self, text: &str) -> String {
        let mut b = text.as_bytes().to_vec();
        for _ in 0..1 + self.below(4) {
            let len = b.len();
            match self.below(7) {
                0 if len > 0 => {
                    let i = self.below(len);
                    b[i] ^= 1 << self.below(8);
                }
                1 => {
                    let i = self.below(len + 1);
                    let c = b"{}[]\",:0123456789.-eEsmhu \n\\tnfl"[self.below(32)];
                    b.insert(i, c);
                }
                2 if len > 0 => {
                    let i = self.below(len);
                    let j = (i + 1 + self.below(16)).min(len);
                    b.drain(i..j);
                }
                3 if len > 0 => {
                    let i = self.below(len);
                    let j = (i + 1 + self.below(64)).min(len);
                    let piece = b[i..j].to_vec();
                    let at = self.below(len + 1);
                    b.splice(at..at, piece);
                }
                4 => {
                    let k = self.below(self.seeds.len());
                    let other = self.seeds[k].as_bytes().to_vec();
                    let i = self.below(len + 1);
                    let j = self.below(other.len() + 1);
                    b.truncate(i);
                    b.extend_from_slice(&other[j..]);
                }
                5 if len > 0 => {
                    // replace a number with an interesting one
                    let i = self.below(len);
                    if let Some(start) = (i..len).find(|&k| b[k].is_ascii_digit()) {
                        let end = (start..len)
                            .find(|&k| !b[k].is_ascii_digit())
                            .unwrap_or(len);
                        let n = self.number().to_string();
                        b.splice(start..end, n.into_bytes());
                    }
                }
                _ => b.truncate(self.below(len + 1)),
            }
        }
        String::from_utf8_lossy(&b).to_string()
    }

    /// Changes that mostly keep a model valid, to reach the simulation:
    /// plausible numbers and durations, other names from the schema, flipped
    /// flags, extra faults.
    fn tweak(&mut self, doc: &mut Value) {
        for _ in 0..1 + self.below(5) {
            let mut ptrs = vec![];
            Self::pointers(doc, String::new(), &mut ptrs);
            let p = ptrs[self.below(ptrs.len())].clone();
            let names: Vec<String> = doc["nodes"]
                .as_array()
                .map(|ns| {
                    ns.iter()
                        .filter_map(|n| n["name"].as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            let word = self.word();
            let roll = self.below(100);
            let dur = format!(
                "{}{}",
                self.below(3000),
                ["ms", "ms", "s", "us"][self.below(4)]
            );
            let Some(target) = doc.pointer_mut(&p) else {
                continue;
            };
            match target {
                Value::Number(n) => {
                    let x = n.as_f64().unwrap_or(1.0);
                    let y = (x * 2.0 + 5.0) * (roll as f64 / 100.0);
                    *target = if n.is_f64() {
                        json!(y)
                    } else {
                        json!(y.round() as u64)
                    };
                }
                Value::String(s)
                    if s.ends_with('s') && s.chars().next().is_some_and(|c| c.is_ascii_digit()) =>
                {
                    *s = dur;
                }
                Value::String(s) if roll < 50 => *s = word,
                Value::Bool(b) => *b = !*b,
                Value::Array(items) if p == "/faults" && !names.is_empty() => {
                    let kind = ["crash", "hang", "stop", "partition", "flaky", "slow"][roll % 6];
                    let mut f = json!({"kind": kind, "node": names[roll % names.len()], "at": format!("{}ms", roll * 37)});
                    if roll % 2 == 0 {
                        f["for"] = json!(format!("{}ms", 1 + roll * 13));
                    }
                    if kind == "flaky" {
                        f["p"] = json!(roll as f64 / 100.0);
                    }
                    items.push(f);
                }
                _ => {}
            }
        }
        // keep runs short
        if self.chance(0.9) {
            doc["duration"] = json!(format!("{}ms", 1 + self.below(5000)));
            if let Some(m) = doc.as_object_mut() {
                m.remove("measure");
            }
        }
    }

    /// A dotted path far deeper than any model's (`--set`, a sweep's `set`
    /// or axis path), at the top level or under a free-form field.
    fn deep_path(&mut self) -> String {
        let prefix = ["", "$schema.", "description.", "policy.", "nodes.A."][self.below(5)];
        let depth = [33, 129, 1_000, 65_000, 100_000][self.below(5)];
        format!("{prefix}{}", vec!["x"; depth].join("."))
    }

    /// A float range with astronomically many values.
    fn huge_range(&mut self) -> Value {
        let (from, to, step) = [
            (0.0, 1.0, 1e-300),
            (-1e308, 1e308, 1e307),
            (0.0, 1e40, 1.0),
            (1e300, -1e300, -1e299),
            (0.0, 1.0, 5e-324),
            (0.0, 10000.5, 1.0),
        ][self.below(6)];
        json!({"from": from, "to": to, "step": step})
    }

    /// Sweep-specific inputs: huge float ranges, deep `set` keys and axis paths.
    fn sweep_input(&mut self) -> Value {
        let sweeps: Vec<Value> = self
            .models
            .iter()
            .filter(|m| m.get("axes").is_some())
            .cloned()
            .collect();
        let mut doc = sweeps[self.below(sweeps.len())].clone();
        match self.below(3) {
            0 => doc["axes"][0] = json!({"path": "clients.rate_per_s", "range": self.huge_range()}),
            1 => {
                let key = self.deep_path();
                doc["set"] = json!({ key: 1 });
            }
            _ => doc["axes"][0]["path"] = json!(self.deep_path()),
        }
        doc
    }

    /// A model with many faults (back to back, one overlapping sometimes):
    /// their overlap check must stay O(n log n).
    fn many_faults(&mut self) -> Value {
        let n = [100, 1_000, 20_000][self.below(3)];
        let overlap = self.chance(0.5);
        let faults: Vec<Value> = (0..n)
            .map(|i| {
                let len = if overlap && i == n / 2 { 25 } else { 10 };
                let (kind, node) = (["crash", "hang", "slow"][i % 3], ["A", "B"][i % 2]);
                json!({"kind": kind, "node": node,
                       "at": format!("{}ms", i * 10), "for": format!("{len}ms"), "factor": 2.0})
            })
            .map(|mut f| {
                if f["kind"] != "slow" {
                    f.as_object_mut().unwrap().remove("factor");
                }
                f
            })
            .collect();
        json!({
            "name": "many-faults", "duration": format!("{}ms", n * 10 + 10),
            "clients": {"kind": "open", "rate_per_s": 10.0},
            "nodes": [{"name": "A"}, {"name": "B"}],
            "faults": faults
        })
    }

    /// A small model with one count far beyond what may be allocated:
    /// more nodes than the cap (each cheap to write), workers, replicas,
    /// closed-loop clients, latency thresholds, timeline rows. Each is
    /// refused before it is allocated, quickly and in bounded memory.
    fn huge_count(&mut self) -> Value {
        let mut doc = json!({
            "name": "huge", "duration": "1s",
            "clients": {"kind": "open", "rate_per_s": 10.0},
            "nodes": [{"name": "A"}, {"name": "B"}]
        });
        let big = [
            u32::MAX as u64,
            u64::MAX,
            5_000_000,
            1 << 32,
            100_001,
            1_000_001,
        ][self.below(6)];
        match self.below(7) {
            0 => {
                let n = [20_001, 50_000, 250_000][self.below(3)];
                doc["nodes"] = (0..n).map(|i| json!({"name": format!("n{i}")})).collect();
            }
            1 => doc["nodes"][0]["workers"] = json!(big),
            2 => doc["gateway"] = json!({"replicas": big}),
            3 => doc["clients"] = json!({"kind": "closed", "concurrency": big}),
            4 => {
                let n = [17, 1_000, 100_000][self.below(3)];
                doc["latency_thresholds"] = (0..n).map(|i| json!(format!("{}ms", i + 1))).collect();
            }
            5 => {
                doc["duration"] = json!(["1000000000s", "1000s", "277777h"][self.below(3)]);
                doc["timeline_bucket"] = json!("1us");
            }
            _ => doc["gateway"] = json!({"workers": big, "zone": false}),
        }
        doc
    }

    /// A model whose durations or counts are numbers that wrap when
    /// scaled to microseconds (or sit at the edge of their type).
    fn wrapping_numbers(&mut self) -> Value {
        let k = self.below(self.models.len());
        let mut doc = self.models[k].clone();
        // Models only (not sweeps or tune files): a node to patch.
        if doc["nodes"].as_array().is_none_or(|n| n.is_empty()) {
            return doc;
        }
        let durations = [
            "288230376151711749s",
            "18446744073709551615us",
            "18446744073709551616us",
            "5124095576030431h",
            "307445734561825861m",
            "1000000000.000001s",
            "1000000000s",
        ];
        let d = json!(durations[self.below(durations.len())]);
        let n = json!([u64::MAX, 288_230_376_151_711_749, 1 << 63, u32::MAX as u64][self.below(4)]);
        match self.below(8) {
            0 => doc["duration"] = d,
            1 => doc["gateway"]["proxy_connect_timeout"] = d,
            2 => doc["clients"]["timeout"] = d,
            // A schedule step at a wrapping time, or Poisson at the most
            // the clock takes from a step on.
            6 if doc["clients"]["kind"] == "open" => {
                doc["clients"]["arrivals"] = json!("poisson");
                let steps = [
                    json!({"at": d, "rate_per_s": 10}),
                    json!({"at": "10ms", "rate_per_s": 1e7}),
                ];
                doc["clients"]["schedule"] = Value::Array(steps[self.below(2)..].to_vec());
            }
            7 => doc["gateway"]["proxy_read_timeout"] = d,
            3 => {
                doc["faults"] = json!([{"kind": "crash", "node": doc["nodes"][0]["name"], "at": "0s", "for": d}])
            }
            4 => doc["policy"] = json!({"kind": "max_fails", "max_fails": n, "fail_timeout": d}),
            _ => doc["nodes"][0]["weight"] = n,
        }
        doc
    }

    fn set_path(&mut self) -> String {
        if self.chance(0.05) {
            return self.deep_path();
        }
        let mut parts = vec![];
        for _ in 0..1 + self.below(3) {
            parts.push(match self.below(6) {
                0 => format!("{}[{}]", self.word(), self.below(4)),
                1 => self.string(),
                _ => self.word(),
            });
        }
        let mut p = parts.join(".");
        if self.chance(0.1) {
            p.push_str(["[", "]", "..", "[99999999999999999999]", "[-1]"][self.below(5)]);
        }
        p
    }

    fn next(&mut self) -> Input {
        let mut sets = vec![];
        let text = match self.below(18) {
            17 => {
                // Or the wrapping duration given by --set.
                if self.chance(0.3) {
                    let path = [
                        "duration",
                        "gateway.proxy_connect_timeout",
                        "clients.timeout",
                    ][self.below(3)];
                    let d =
                        ["288230376151711749s", "18446744073709551615us", "1e30s"][self.below(3)];
                    sets.push((path.to_string(), d.to_string()));
                }
                self.wrapping_numbers().to_string()
            }
            16 => self.huge_count().to_string(),
            14 => self.sweep_input().to_string(),
            15 => self.many_faults().to_string(),
            10..=13 => {
                let k = self.below(self.models.len());
                let mut doc = self.models[k].clone();
                self.tweak(&mut doc);
                doc.to_string()
            }
            0..=3 => {
                let k = self.below(self.seeds.len());
                let s = self.seeds[k].clone();
                self.mutate_bytes(&s)
            }
            4..=8 => {
                let k = self.below(self.models.len());
                let mut doc = self.models[k].clone();
                self.mutate_tree(&mut doc);
                if self.chance(0.2) {
                    for _ in 0..1 + self.below(3) {
                        let v = self.value(2).to_string();
                        let v = if self.chance(0.5) { self.string() } else { v };
                        sets.push((self.set_path(), v));
                    }
                }
                if self.chance(0.5) {
                    serde_json::to_string_pretty(&doc).unwrap()
                } else {
                    doc.to_string()
                }
            }
            _ => {
                let mut m = Map::new();
                for _ in 0..self.below(10) {
                    let k = self.word();
                    m.insert(k, self.value(1));
                }
                Value::Object(m).to_string()
            }
        };
        Input { text, sets }
    }
}

fn files(dir: &str) -> Vec<PathBuf> {
    if dir == "models" {
        return crate::shipped_models();
    }
    let Ok(rd) = std::fs::read_dir(root().join(dir)) else {
        return vec![];
    };
    let mut v: Vec<_> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

/// Peak resident memory of this process, MiB (Linux).
fn peak_rss_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

/// Writes an input that panicked or hung where it can be picked up.
fn save_finding(kind: &str, input: &Input) -> PathBuf {
    let dir = root().join("target/fuzz-findings");
    let _ = std::fs::create_dir_all(&dir);
    let n = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
    let path = dir.join(format!("{kind}-{n:04}.json"));
    let _ = std::fs::write(&path, &input.text);
    if !input.sets.is_empty() {
        let sets: Vec<String> = input.sets.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = std::fs::write(path.with_extension("sets"), sets.join("\n"));
    }
    path
}

/// Runs generated inputs until `deadline` or `max` executions; returns the
/// counts by outcome and the inputs that panicked.
fn campaign(seed: u64, max: u64, time: Duration) -> (Vec<(Outcome, u64)>, u64, Vec<PathBuf>) {
    let mut g = Gen::new(seed);
    let start = Instant::now();
    let progress = Arc::new(AtomicU64::new(0));
    let current = Arc::new(Mutex::new(None::<Input>));
    let watchdog = {
        let (progress, current) = (progress.clone(), current.clone());
        std::thread::spawn(move || {
            let mut last = (u64::MAX, Instant::now());
            loop {
                std::thread::sleep(Duration::from_secs(1));
                let now = progress.load(Ordering::Relaxed);
                if now == u64::MAX {
                    return;
                }
                if now != last.0 {
                    last = (now, Instant::now());
                } else if last.1.elapsed() > Duration::from_secs(30) {
                    let input = current.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    if let Some(input) = input {
                        let p = save_finding("hang", &input);
                        eprintln!("fuzz: no progress for 30 s; input saved to {}", p.display());
                    }
                    std::process::abort();
                }
            }
        })
    };
    let mut counts = std::collections::BTreeMap::new();
    let mut findings = vec![];
    let mut n = 0;
    while n < max && start.elapsed() < time {
        let input = g.next();
        *current.lock().unwrap() = Some(input.clone());
        match catch_unwind(AssertUnwindSafe(|| fuzz_one(&input))) {
            Ok(o) => *counts.entry(o).or_insert(0u64) += 1,
            Err(_) => findings.push(save_finding("panic", &input)),
        }
        n += 1;
        progress.store(n, Ordering::Relaxed);
    }
    progress.store(u64::MAX, Ordering::Relaxed);
    let _ = watchdog.join();
    (counts.into_iter().collect(), n, findings)
}

#[test]
fn fuzz_corpus_replays_cleanly() {
    let mut n = 0;
    let mut outcomes = std::collections::BTreeSet::new();
    for dir in [
        "tests/fuzz-corpus",
        "models",
        "tests/bad-models",
        "sweeps",
        "tests/bad-sweeps",
    ] {
        for p in files(dir) {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).to_string();
            // `NAME.sets`: `--set PATH=VALUE` overrides, one a line.
            let sets = std::fs::read_to_string(p.with_extension("sets"))
                .map(|t| {
                    t.lines()
                        .filter_map(|l| l.split_once('='))
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                })
                .unwrap_or_default();
            let r = catch_unwind(AssertUnwindSafe(|| fuzz_one(&Input { text, sets })));
            let o = r.unwrap_or_else(|_| panic!("{} panicked", p.display()));
            outcomes.insert(o);
            n += 1;
        }
    }
    assert!(n >= 100, "{n}");
    for o in [
        Outcome::Syntax,
        Outcome::Invalid,
        Outcome::Refused,
        Outcome::Simulated,
    ] {
        assert!(outcomes.contains(&o), "no corpus file reaches {o:?}");
    }
}

#[test]
fn fuzz_smoke() {
    let (counts, n, findings) = campaign(8, 2000, Duration::from_secs(120));
    assert!(findings.is_empty(), "inputs that panicked: {findings:?}");
    assert_eq!(n, 2000);
    // every stage is reached
    for o in [Outcome::Syntax, Outcome::Invalid, Outcome::Simulated] {
        assert!(
            counts.iter().any(|(k, c)| *k == o && *c > 0),
            "{o:?} never reached: {counts:?}"
        );
    }
}

#[test]
#[ignore = "long: HCSIM_FUZZ_SECS=600 cargo test --test it fuzz_long -- --ignored --nocapture"]
fn fuzz_long() {
    let secs: u64 = std::env::var("HCSIM_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let seed: u64 = std::env::var("HCSIM_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_secs())
        });
    let start = Instant::now();
    let (counts, n, findings) = campaign(seed, u64::MAX, Duration::from_secs(secs));
    let took = start.elapsed().as_secs_f64();
    eprintln!(
        "fuzz: seed {seed}: {n} executions in {took:.0} s ({:.0}/s); {counts:?}; peak RSS {} MiB; {} finding(s)",
        n as f64 / took,
        peak_rss_mib().unwrap_or(0),
        findings.len()
    );
    assert!(findings.is_empty(), "inputs that panicked: {findings:?}");
    if let Some(mib) = peak_rss_mib() {
        assert!(mib < 4096, "peak RSS {mib} MiB");
    }
}
