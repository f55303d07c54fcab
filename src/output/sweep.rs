//! The outputs of a sweep: `runs.csv` (one row per run), `points.csv` (one
//! row per point, each metric's statistics over its replications; in both,
//! a duration axis is followed by `<path>_s`, its value in seconds) and
//! `results.json` (both, with the definition and the base model), and
//! [`SweepResults`], which charts and report.html read back.

use crate::error::Error;
use crate::spec::SeedMode;
use crate::stats::Stats;
use crate::sweep::{PlanHeader, RunRecord, cell_text, fmt_f64, fmt_number, metric_table};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Number, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// `points.csv`'s cells of one metric's statistics, in [`Stats::FIELDS`] order.
fn stat_cells(s: &Stats) -> [String; 7] {
    let f = |x: Option<f64>| x.map(fmt_f64).unwrap_or_default();
    [
        f(s.median),
        f(s.mean),
        f(s.min),
        f(s.max),
        f(s.p5),
        f(s.p95),
        s.n.to_string(),
    ]
}

/// Serializes parallel name and value lists as one JSON object, in list order.
struct Ordered<'a, V>(&'a [String], &'a [V]);

impl<V: Serialize> Serialize for Ordered<'_, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0.iter().zip(self.1) {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// `results.json`.
#[derive(Serialize)]
struct Results<'a> {
    hcsim_version: &'a str,
    sweep: &'a str,
    /// The command that reproduces these results (`--jobs`, `--shard`,
    /// `--resume` and `--out` do not change them).
    command: String,
    sweep_file: &'a str,
    model_file: &'a str,
    fingerprint: &'a str,
    seed: u64,
    seeds: SeedMode,
    reps: u32,
    axes: &'a [String],
    metrics: &'a [String],
    points: Vec<PointOut<'a>>,
    runs: Vec<RunOut<'a>>,
    definition: &'a Value,
    model: &'a Value,
}

#[derive(Serialize)]
struct PointOut<'a> {
    point: usize,
    values: Ordered<'a, Value>,
    overloaded: usize,
    seeds: Vec<u64>,
    stats: Ordered<'a, Stats>,
}

#[derive(Serialize)]
struct RunOut<'a> {
    run: usize,
    point: usize,
    rep: u32,
    seed: u64,
    overloaded: bool,
    metrics: Ordered<'a, Option<Number>>,
}

/// Did the run (its summary as recorded) have an `overload` warning?
fn overloaded(summary: &Value) -> bool {
    summary["warnings"]
        .as_array()
        .is_some_and(|w| w.iter().any(|w| w["code"] == "overload"))
}

fn csv_bytes(
    path: &Path,
    fill: impl FnOnce(&mut csv::Writer<Vec<u8>>) -> Result<(), csv::Error>,
) -> Result<Vec<u8>, Error> {
    let werr = |e: csv::Error| Error::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    };
    let mut w = csv::Writer::from_writer(vec![]);
    fill(&mut w).map_err(werr)?;
    w.into_inner().map_err(|e| werr(e.into_error().into()))
}

/// Writes `runs.csv`, `points.csv` and `results.json` into `out`, each
/// atomically. `records` must hold every run of the sweep, sorted by run index.
pub fn write_outputs(out: &Path, h: &PlanHeader, records: &[RunRecord]) -> Result<(), Error> {
    debug_assert!(records.iter().enumerate().all(|(i, r)| r.run == i));
    let table = metric_table(records.iter().map(|r| &r.summary));
    // The axes, each duration axis followed by its value in seconds.
    let (axis_names, axis_cells) = h.output_columns();
    let reps = h.reps as usize;
    let run_overloaded: Vec<bool> = records.iter().map(|r| overloaded(&r.summary)).collect();
    let point_overloaded = |p: usize| {
        run_overloaded[p * reps..(p + 1) * reps]
            .iter()
            .filter(|&&o| o)
            .count()
    };
    let stats: Vec<Vec<Stats>> = (0..h.points.len())
        .map(|p| {
            let rows = &table.rows[p * reps..(p + 1) * reps];
            (0..table.names.len())
                .map(|m| {
                    let xs: Vec<f64> = rows
                        .iter()
                        .filter_map(|row| row[m].as_ref().and_then(Number::as_f64))
                        .collect();
                    Stats::of(&xs)
                })
                .collect()
        })
        .collect();

    let path = out.join("runs.csv");
    let runs_csv = csv_bytes(&path, |w| {
        let mut head = vec!["point".to_string(), "rep".into()];
        head.extend(axis_names.iter().cloned());
        head.push("seed".into());
        head.push("overloaded".into());
        head.extend(table.names.iter().cloned());
        w.write_record(&head)?;
        for ((r, row), o) in records.iter().zip(&table.rows).zip(&run_overloaded) {
            let mut rec = vec![r.point.to_string(), r.rep.to_string()];
            rec.extend(axis_cells[r.point].iter().map(cell_text));
            rec.push(r.seed.to_string());
            rec.push(u8::from(*o).to_string());
            rec.extend(
                row.iter()
                    .map(|v| v.as_ref().map(fmt_number).unwrap_or_default()),
            );
            w.write_record(&rec)?;
        }
        Ok(())
    })?;
    super::write_atomic(&path, &runs_csv)?;

    let path = out.join("points.csv");
    let points_csv = csv_bytes(&path, |w| {
        let mut head = vec!["point".to_string()];
        head.extend(axis_names.iter().cloned());
        head.push("overloaded".into());
        for m in &table.names {
            head.extend(Stats::FIELDS.iter().map(|f| format!("{m}.{f}")));
        }
        w.write_record(&head)?;
        for (p, point_stats) in stats.iter().enumerate() {
            let mut rec = vec![p.to_string()];
            rec.extend(axis_cells[p].iter().map(cell_text));
            rec.push(point_overloaded(p).to_string());
            for s in point_stats {
                rec.extend(stat_cells(s));
            }
            w.write_record(&rec)?;
        }
        Ok(())
    })?;
    super::write_atomic(&path, &points_csv)?;

    let results = Results {
        hcsim_version: &h.hcsim_version,
        sweep: &h.name,
        command: h.command(),
        sweep_file: &h.sweep_file,
        model_file: &h.model_file,
        fingerprint: &h.fingerprint,
        seed: h.seed,
        seeds: h.seeds,
        reps: h.reps,
        axes: &h.axes,
        metrics: &table.names,
        points: (0..h.points.len())
            .map(|p| PointOut {
                point: p,
                values: Ordered(&axis_names, &axis_cells[p]),
                overloaded: point_overloaded(p),
                seeds: records[p * reps..(p + 1) * reps]
                    .iter()
                    .map(|r| r.seed)
                    .collect(),
                stats: Ordered(&table.names, &stats[p]),
            })
            .collect(),
        runs: records
            .iter()
            .zip(&table.rows)
            .zip(&run_overloaded)
            .map(|((r, row), &overloaded)| RunOut {
                run: r.run,
                point: r.point,
                rep: r.rep,
                seed: r.seed,
                overloaded,
                metrics: Ordered(&table.names, row),
            })
            .collect(),
        definition: &h.definition,
        model: &h.model,
    };
    let json = serde_json::to_string_pretty(&results).expect("results serialize") + "\n";
    super::write_atomic(&out.join("results.json"), json.as_bytes())
}

/// `results.json` as read back: the typed view charts and report.html use.
/// [`write_outputs`] writes it; a test keeps the two in step.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepResults {
    pub hcsim_version: String,
    pub sweep: String,
    pub command: String,
    pub sweep_file: String,
    pub model_file: String,
    pub fingerprint: String,
    pub seed: u64,
    pub seeds: SeedMode,
    pub reps: u32,
    /// Axis columns (model paths), in order.
    pub axes: Vec<String>,
    /// Metric columns (`nodes.A.share`, `client.errors`), in order.
    pub metrics: Vec<String>,
    pub points: Vec<PointResult>,
    pub runs: Vec<RunResult>,
    /// The sweep file's content.
    pub definition: Value,
    /// The base model document every point patches.
    pub model: Value,
}

/// One point: its axis values and each metric's statistics.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointResult {
    pub point: usize,
    /// By axis path; a duration axis also has `<path>_s`, in seconds.
    pub values: BTreeMap<String, Value>,
    /// Replications with an `overload` warning (see `metrics::overload_warnings`).
    #[serde(default)]
    pub overloaded: usize,
    pub seeds: Vec<u64>,
    pub stats: BTreeMap<String, Stats>,
}

/// One run: its point, replication, seed and metrics.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunResult {
    pub run: usize,
    pub point: usize,
    pub rep: u32,
    pub seed: u64,
    /// The run had an `overload` warning.
    #[serde(default)]
    pub overloaded: bool,
    pub metrics: BTreeMap<String, Option<f64>>,
}

impl PointResult {
    /// The value of axis `axis` (null if the point has none).
    pub fn value(&self, axis: &str) -> &Value {
        self.values.get(axis).unwrap_or(&Value::Null)
    }
    /// An axis value as text: strings bare, anything else as JSON.
    pub fn value_text(&self, axis: &str) -> String {
        match self.value(axis) {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        }
    }
}

impl SweepResults {
    pub fn read(path: &Path) -> Result<SweepResults, Error> {
        let doc = crate::spec::read_document(path)?;
        crate::spec::from_document(&doc, path)
    }
    /// The values of `axis` in the order they first appear among the points.
    pub fn axis_values(&self, axis: &str) -> Vec<Value> {
        let mut out: Vec<Value> = vec![];
        for p in &self.points {
            let v = p.value(axis);
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
        out
    }
}
