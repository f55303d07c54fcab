//! Whole runs through the library: `Model::from_document` + `world::run`.
//!
//! - `canonical_60s`: `models/bench-canonical.json` as shipped (2 nodes,
//!   Poisson 10k rps for 60 s, about 600k requests and 1.2M events).
//! - `canonical_2s`: the same for 2 s of virtual time (20k requests).
//! - `e2_100rps_20s`: `models/e2-p02-flaky-2pct.json`, the seed experiments' scale.
//!
//! `cargo bench --bench scenario`; under `cargo test --all-targets` each runs once.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hcsim::spec::{Model, read_document};
use serde_json::Value;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

fn load(path: &str, duration: Option<&str>) -> Model {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let mut doc = read_document(&path).expect("shipped model");
    if let Some(d) = duration {
        doc["duration"] = Value::from(d);
    }
    Model::from_document(&doc, &path).expect("valid model")
}

fn bench(c: &mut Criterion, name: &str, sc: &Model) {
    let requests = hcsim::world::run(sc, 1).client.requests;
    let mut g = c.benchmark_group("scenario");
    g.throughput(Throughput::Elements(requests));
    if requests > 100_000 {
        g.sample_size(10).measurement_time(Duration::from_secs(8));
    }
    g.bench_function(name, |b| b.iter(|| black_box(hcsim::world::run(sc, 1))));
    g.finish();
}

fn scenarios(c: &mut Criterion) {
    let canonical = "models/bench-canonical.json";
    bench(c, "canonical_60s", &load(canonical, None));
    bench(c, "canonical_2s", &load(canonical, Some("2s")));
    bench(
        c,
        "e2_100rps_20s",
        &load("models/e2-p02-flaky-2pct.json", None),
    );
}

criterion_group!(benches, scenarios);
criterion_main!(benches);
