//! Runs × metrics: every metric of the run summaries ([`crate::metrics::path`])
//! as a named column (`nodes.A.share`, `client.status.503`) for `runs.csv`,
//! `points.csv` and `results.json`.

use crate::metrics::path::{self, MetricPath};
use rayon::prelude::*;
use serde_json::{Number, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One run's metrics: every numeric leaf of its summary under its path.
pub struct FlatRun(Vec<(MetricPath, Option<Number>)>);

/// Flattens one run summary.
pub fn flatten_run(summary: &Value) -> FlatRun {
    FlatRun(path::metrics(summary))
}

/// The union of the runs' metric paths, built one run at a time (so a
/// sweep never holds all its runs): a status code seen in one run only
/// still gets a column.
#[derive(Default)]
pub struct ColumnSet {
    keys: BTreeSet<MetricPath>,
    /// The paths of the last run added: most runs have the same metrics in
    /// the same order, and only a new shape is merged into `keys`.
    last: Vec<MetricPath>,
}

impl ColumnSet {
    pub fn add(&mut self, run: &FlatRun) {
        let same = self.last.len() == run.0.len()
            && self.last.iter().zip(&run.0).all(|(a, (b, _))| a == b);
        if !same {
            self.keys.extend(run.0.iter().map(|(k, _)| k.clone()));
            self.last = run.0.iter().map(|(k, _)| k.clone()).collect();
        }
    }

    /// The columns, sorted by path with list items in their order, so the
    /// order never depends on which runs came first.
    pub fn columns(self) -> Columns {
        let names: Vec<String> = self.keys.iter().map(MetricPath::name).collect();
        let fleet = names.iter().any(|n| n.ends_with(path::LAST_EJECTION));
        let index = self
            .keys
            .into_iter()
            .enumerate()
            .map(|(i, k)| (k, i))
            .collect();
        Columns {
            names,
            index,
            fleet,
        }
    }
}

/// The metric columns of a sweep: their names (dotted, e.g.
/// `nodes.A.share`, `client.status.503`) and where each path goes in a row.
pub struct Columns {
    pub names: Vec<String>,
    index: BTreeMap<MetricPath, usize>,
    /// Some run is a fleet's: a single gateway's runs get the fleet's
    /// ejection delay as a fleet of one ([`path::fleet_of_one`]).
    fleet: bool,
}

impl Columns {
    /// A run's row: its value in each column, `None` where it has none.
    pub fn row(&self, run: &FlatRun) -> Vec<Option<Number>> {
        let mut row = vec![None; self.names.len()];
        let one = match self.fleet {
            true => path::fleet_of_one(&run.0),
            false => vec![],
        };
        for (k, v) in run.0.iter().chain(&one) {
            if let Some(&i) = self.index.get(k) {
                row[i].clone_from(v);
            }
        }
        row
    }
}

/// Runs × metrics: the metric names in a fixed order, and one row of
/// values per run.
pub struct MetricTable {
    pub names: Vec<String>,
    pub rows: Vec<Vec<Option<Number>>>,
}

/// Flattens run summaries held in memory (see [`ColumnSet`] and
/// [`Columns`] for a sweep's runs, read one at a time).
pub fn metric_table<'a>(summaries: impl Iterator<Item = &'a Value>) -> MetricTable {
    let summaries: Vec<&Value> = summaries.collect();
    let flat: Vec<FlatRun> = summaries.par_iter().map(|s| flatten_run(s)).collect();
    let mut set = ColumnSet::default();
    for run in &flat {
        set.add(run);
    }
    let columns = set.columns();
    let rows = flat.par_iter().map(|run| columns.row(run)).collect();
    MetricTable {
        names: columns.names,
        rows,
    }
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
