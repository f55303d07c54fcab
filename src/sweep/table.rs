//! Runs × metrics: every numeric leaf of the run summaries flattened into
//! named columns (`nodes.A.share`, `client.status.503`) for `runs.csv`,
//! `points.csv` and `results.json`.

use rayon::prelude::*;
use serde_json::{Number, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Fields of a run summary that describe the run rather than measure it.
const NOT_METRICS: &[&str] = &[
    "model",
    "seed",
    "duration_s",
    "measure_from_s",
    "measure_to_s",
];

/// A segment of a metric's path; list items are named (`nodes.A`) but keep their order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Seg {
    Key(String),
    Item(usize, String),
}

/// Every numeric leaf of a run summary (nulls included: a metric that a run
/// lacks), under its path.
fn flatten(v: &Value, path: &mut Vec<Seg>, out: &mut Vec<(Vec<Seg>, Option<Number>)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if path.is_empty() && NOT_METRICS.contains(&k.as_str()) {
                    continue;
                }
                path.push(Seg::Key(k.clone()));
                flatten(x, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                let name = x
                    .get("name")
                    .and_then(Value::as_str)
                    .map_or_else(|| i.to_string(), str::to_string);
                path.push(Seg::Item(i, name));
                flatten(x, path, out);
                path.pop();
            }
        }
        Value::Number(n) => out.push((path.clone(), Some(n.clone()))),
        Value::Null => out.push((path.clone(), None)),
        Value::String(_) | Value::Bool(_) => {}
    }
}

fn seg_name(path: &[Seg]) -> String {
    path.iter()
        .map(|s| match s {
            Seg::Key(k) => k.as_str(),
            Seg::Item(_, name) => name.as_str(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// Runs × metrics: the metric names (dotted, e.g. `nodes.A.share`,
/// `client.status.503`) in a fixed order, and one row of values per run.
pub struct MetricTable {
    pub names: Vec<String>,
    pub rows: Vec<Vec<Option<Number>>>,
}

/// Flattens run summaries. Columns are the union over all runs (a status code
/// seen in one run only still gets a column), sorted by path with list items
/// in their order, so the order never depends on which runs came first.
pub fn metric_table<'a>(summaries: impl Iterator<Item = &'a Value>) -> MetricTable {
    // Flattening and filling rows are per-run work: done on the worker
    // threads, so the serial end of a sweep stays short (it bounds --jobs scaling).
    let summaries: Vec<&Value> = summaries.collect();
    let flat: Vec<Vec<(Vec<Seg>, Option<Number>)>> = summaries
        .par_iter()
        .map(|s| {
            let mut out = Vec::new();
            flatten(s, &mut Vec::new(), &mut out);
            out
        })
        .collect();
    // Most runs have the same metrics in the same order: collect the key set
    // from the distinct shapes only.
    let mut keys: BTreeSet<&Vec<Seg>> = BTreeSet::new();
    let mut last: Option<&Vec<(Vec<Seg>, Option<Number>)>> = None;
    for run in &flat {
        let same = last.is_some_and(|l| {
            l.len() == run.len() && l.iter().zip(run).all(|((a, _), (b, _))| a == b)
        });
        if !same {
            keys.extend(run.iter().map(|(k, _)| k));
        }
        last = Some(run);
    }
    let index: BTreeMap<&Vec<Seg>, usize> = keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    let names = keys.iter().map(|k| seg_name(k)).collect();
    let rows = flat
        .par_iter()
        .map(|run| {
            let mut row = vec![None; index.len()];
            for (k, v) in run {
                row[index[k]] = v.clone();
            }
            row
        })
        .collect();
    MetricTable { names, rows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::axes::fmt_number;
    use serde_json::json;

    #[test]
    fn metric_columns_use_node_names_and_keep_node_order() {
        let runs = [
            json!({"model": "m", "seed": 1, "events": 10, "client": {"status": {"200": 5}, "ok": 5},
                   "nodes": [{"name": "b", "share": 0.5, "delay": null}, {"name": "a", "share": 0.5, "delay": 1.5}]}),
            json!({"model": "m", "seed": 2, "events": 11, "client": {"status": {"200": 4, "503": 1}, "ok": 4},
                   "nodes": [{"name": "b", "share": 1.0, "delay": null}, {"name": "a", "share": 0.0, "delay": null}]}),
        ];
        let t = metric_table(runs.iter());
        assert_eq!(
            t.names,
            [
                "client.ok",
                "client.status.200",
                "client.status.503",
                "events",
                "nodes.b.delay",
                "nodes.b.share",
                "nodes.a.delay",
                "nodes.a.share"
            ]
        );
        assert_eq!(t.rows[0][2], None, "a status a run did not see is absent");
        assert_eq!(t.rows[1][2], Some(Number::from(1)));
        assert_eq!(fmt_number(t.rows[1][5].as_ref().unwrap()), "1");
    }
}
