//! Every shipped model runs and conserves requests (random models: `properties.rs`).

use crate::{assert_conserved, root};
use hcsim::spec::{self as sc_mod, Model};
use hcsim::world;
use serde_json::json;

fn shipped_models() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(root().join("models"))
        .expect("models/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_shipped_model_validates_runs_and_conserves_requests() {
    let models = shipped_models();
    assert!(models.len() >= 14);
    for path in models {
        let mut doc = sc_mod::read_document(&path).unwrap();
        // Keep CI fast: at most 30 s of virtual time after the last fault
        // starts, at most 2000 rps.
        let secs = |v: &serde_json::Value| {
            v.as_str()
                .and_then(|d| hcsim::engine::time::parse_duration(d).ok())
                .map_or(0.0, |d| d.as_secs_f64())
        };
        let last_fault = doc["faults"].as_array().map_or(0.0, |fs| {
            fs.iter().map(|f| secs(&f["at"])).fold(0.0, f64::max)
        });
        let cap = (last_fault + 30.0).max(30.0);
        if secs(&doc["duration"]) > cap {
            sc_mod::set_path(&mut doc, "duration", json!(format!("{cap}s"))).unwrap();
            doc.as_object_mut().unwrap().remove("measure");
        }
        if let Some(r) = doc["clients"]["rate_per_s"].as_f64()
            && r > 2000.0
        {
            sc_mod::set_path(&mut doc, "clients.rate_per_s", json!(2000.0)).unwrap();
        }
        let sc = Model::from_document(&doc, &path).unwrap_or_else(|e| panic!("{e}"));
        for seed in 0..3 {
            let s = world::run(&sc, seed);
            assert_conserved(&s);
            assert_eq!(
                s,
                world::run(&sc, seed),
                "{} not deterministic",
                path.display()
            );
        }
    }
}
