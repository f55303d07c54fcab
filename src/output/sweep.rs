//! The outputs of a sweep: `runs.csv` (one row per run), `points.csv` (one
//! row per point, each metric's statistics over its replications; in both,
//! a duration axis is followed by `<path>_s`, its value in seconds) and
//! `results.json` (both, with the definition and the base model), and
//! [`SweepResults`], which charts and report.html read back.

use crate::atomic::Staged;
use crate::error::Error;
use crate::spec::SeedMode;
use crate::stats::Stats;
use crate::sweep::{
    ColumnSet, Columns, PlanHeader, RunRecord, RunSource, cell_text, flatten_run, fmt_f64,
    fmt_number,
};
use rayon::prelude::*;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Number, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write as _;
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
    points: LazyPoints<'a>,
    runs: LazyRuns<'a>,
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

/// Runs read and parsed at a time (whole points): the memory of writing a
/// sweep's outputs is bounded by this, not by the sweep's runs.
const BATCH_RUNS: usize = 1024;

/// One run as the output files need it.
struct RunRow {
    run: usize,
    point: usize,
    rep: u32,
    seed: u64,
    overloaded: bool,
    metrics: Vec<Option<Number>>,
}

/// What writing a sweep's outputs reads from: its runs in index order and
/// the shape of the grid.
struct Ctx<'a> {
    runs: &'a RunSource,
    reps: usize,
    points: usize,
    columns: Columns,
    axis_names: Vec<String>,
    axis_cells: Vec<Vec<Value>>,
}

impl Ctx<'_> {
    /// Reads the runs in index order, a batch at a time (lines read in
    /// order, parsed in parallel), and calls `f` with each batch's runs
    /// mapped by `map`.
    fn batches<T: Send>(
        &self,
        map: impl Fn(RunRecord) -> T + Sync,
        mut f: impl FnMut(Vec<T>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let total = self.runs.len();
        for first in (0..total).step_by(BATCH_RUNS) {
            let lines = (first..(first + BATCH_RUNS).min(total))
                .map(|i| self.runs.line(i).map(|l| (i, l)))
                .collect::<Result<Vec<_>, Error>>()?;
            let batch = lines
                .into_par_iter()
                .map(|(i, l)| self.runs.parse(i, &l).map(&map))
                .collect::<Result<Vec<T>, Error>>()?;
            f(batch)?;
        }
        Ok(())
    }

    /// Reads the runs in index order, calling `on_run` with each and
    /// `on_point` with each point once its last replication was read.
    fn points(
        &self,
        mut on_run: impl FnMut(&RunRow) -> Result<(), Error>,
        mut on_point: impl FnMut(usize, PointAcc) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let metrics = self.columns.names.len();
        let mut acc = PointAcc::new(metrics, self.reps);
        self.batches(
            |r| self.row(r),
            |rows| {
                for r in &rows {
                    on_run(r)?;
                    acc.push(r);
                    if acc.seeds.len() == self.reps {
                        let done = std::mem::replace(&mut acc, PointAcc::new(metrics, self.reps));
                        on_point(r.point, done)?;
                    }
                }
                Ok(())
            },
        )
    }

    fn row(&self, r: RunRecord) -> RunRow {
        RunRow {
            run: r.run,
            point: r.point,
            rep: r.rep,
            seed: r.seed,
            overloaded: overloaded(&r.summary),
            metrics: self.columns.row(&flatten_run(&r.summary)),
        }
    }

    fn point_out<'b>(&'b self, p: usize, acc: PointAcc, stats: &'b [Stats]) -> PointOut<'b> {
        PointOut {
            point: p,
            values: Ordered(&self.axis_names, &self.axis_cells[p]),
            overloaded: acc.overloaded,
            seeds: acc.seeds,
            stats: Ordered(&self.columns.names, stats),
        }
    }
}

/// One point's replications as they are read: of each metric only the
/// numbers its statistics need, the seeds and the overloaded runs (bounded
/// by the replications, not by the sweep's runs).
struct PointAcc {
    values: Vec<Vec<f64>>,
    seeds: Vec<u64>,
    overloaded: usize,
}

impl PointAcc {
    fn new(metrics: usize, reps: usize) -> PointAcc {
        PointAcc {
            values: vec![Vec::new(); metrics],
            seeds: Vec::with_capacity(reps),
            overloaded: 0,
        }
    }

    fn push(&mut self, r: &RunRow) {
        self.seeds.push(r.seed);
        self.overloaded += usize::from(r.overloaded);
        for (xs, v) in self.values.iter_mut().zip(&r.metrics) {
            if let Some(x) = v.as_ref().and_then(Number::as_f64) {
                xs.push(x);
            }
        }
    }

    /// Each metric's statistics over the point's replications.
    fn stats(&self) -> Vec<Stats> {
        self.values.iter().map(|xs| Stats::of(xs)).collect()
    }
}

/// Passes a read error out of a serializer: kept in `failed`, reported by
/// the serializer as its message.
fn fail<E: serde::ser::Error>(failed: &RefCell<Option<Error>>, e: Error) -> E {
    let msg = e.to_string();
    *failed.borrow_mut() = Some(e);
    E::custom(msg)
}

/// `results.json`'s points, each computed as it is written; a read error
/// goes to the cell.
struct LazyPoints<'a>(&'a Ctx<'a>, &'a RefCell<Option<Error>>);

impl Serialize for LazyPoints<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ctx = self.0;
        let mut seq = s.serialize_seq(Some(ctx.points))?;
        let mut inner = None;
        let read = ctx.points(
            |_| Ok(()),
            |p, acc| {
                let stats = acc.stats();
                if let Err(e) = seq.serialize_element(&ctx.point_out(p, acc, &stats)) {
                    inner = Some(e);
                    return Err(Error::Usage(String::new()));
                }
                Ok(())
            },
        );
        if let Some(e) = inner {
            return Err(e);
        }
        read.map_err(|e| fail(self.1, e))?;
        seq.end()
    }
}

/// `results.json`'s runs, read as they are written; a read error goes to the cell.
struct LazyRuns<'a>(&'a Ctx<'a>, &'a RefCell<Option<Error>>);

impl Serialize for LazyRuns<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ctx = self.0;
        let mut seq = s.serialize_seq(Some(ctx.runs.len()))?;
        let mut inner = None;
        let read = ctx.batches(
            |r| ctx.row(r),
            |rows| {
                for r in &rows {
                    let out = RunOut {
                        run: r.run,
                        point: r.point,
                        rep: r.rep,
                        seed: r.seed,
                        overloaded: r.overloaded,
                        metrics: Ordered(&ctx.columns.names, &r.metrics),
                    };
                    if let Err(e) = seq.serialize_element(&out) {
                        inner = Some(e);
                        return Err(Error::Usage(String::new()));
                    }
                }
                Ok(())
            },
        );
        if let Some(e) = inner {
            return Err(e);
        }
        read.map_err(|e| fail(self.1, e))?;
        seq.end()
    }
}

/// Writes `runs.csv` and `points.csv` in one pass over the runs.
fn write_csvs(ctx: &Ctx, runs_csv: &mut Staged, points_csv: &mut Staged) -> Result<(), Error> {
    let (runs_path, points_path) = (
        runs_csv.path().to_path_buf(),
        points_csv.path().to_path_buf(),
    );
    let werr = |path: &Path| {
        let path = path.to_path_buf();
        move |e: csv::Error| Error::Write {
            path: path.clone(),
            source: std::io::Error::other(e.to_string()),
        }
    };
    let mut rw = csv::Writer::from_writer(runs_csv.writer());
    let mut pw = csv::Writer::from_writer(points_csv.writer());
    let mut head = vec!["point".to_string(), "rep".into()];
    head.extend(ctx.axis_names.iter().cloned());
    head.push("seed".into());
    head.push("overloaded".into());
    head.extend(ctx.columns.names.iter().cloned());
    rw.write_record(&head).map_err(werr(&runs_path))?;
    let mut head = vec!["point".to_string()];
    head.extend(ctx.axis_names.iter().cloned());
    head.push("overloaded".into());
    for m in &ctx.columns.names {
        head.extend(Stats::FIELDS.iter().map(|f| format!("{m}.{f}")));
    }
    pw.write_record(&head).map_err(werr(&points_path))?;
    ctx.points(
        |r| {
            let mut rec = vec![r.point.to_string(), r.rep.to_string()];
            rec.extend(ctx.axis_cells[r.point].iter().map(cell_text));
            rec.push(r.seed.to_string());
            rec.push(u8::from(r.overloaded).to_string());
            rec.extend(
                r.metrics
                    .iter()
                    .map(|v| v.as_ref().map(fmt_number).unwrap_or_default()),
            );
            rw.write_record(&rec).map_err(werr(&runs_path))
        },
        |p, acc| {
            let mut rec = vec![p.to_string()];
            rec.extend(ctx.axis_cells[p].iter().map(cell_text));
            rec.push(acc.overloaded.to_string());
            for s in acc.stats() {
                rec.extend(stat_cells(&s));
            }
            pw.write_record(&rec).map_err(werr(&points_path))
        },
    )?;
    rw.flush().map_err(|source| Error::Write {
        path: runs_path,
        source,
    })?;
    pw.flush().map_err(|source| Error::Write {
        path: points_path,
        source,
    })
}

/// Writes `runs.csv`, `points.csv` and `results.json` into `out`: streamed
/// from `runs` (every run of the sweep, in index order) a batch of points
/// at a time, so memory is bounded by the points and metrics, not the runs;
/// each file staged and all three renamed into place together.
pub fn write_outputs(out: &Path, h: &PlanHeader, runs: &RunSource) -> Result<(), Error> {
    debug_assert!((0..runs.len()).all(|i| runs.run(i) == i));
    let reps = h.reps as usize;
    let points = h.points.len();
    if runs.len() != points * reps {
        return Err(Error::Usage(format!(
            "sweep {} has {} runs but {} were given",
            h.name,
            points * reps,
            runs.len()
        )));
    }
    // The axes, each duration axis followed by its value in seconds.
    let (axis_names, axis_cells) = h.output_columns();
    let mut ctx = Ctx {
        runs,
        reps,
        points,
        columns: ColumnSet::default().columns(),
        axis_names,
        axis_cells,
    };
    // First pass: the metric columns, the union over all runs.
    let mut set = ColumnSet::default();
    ctx.batches(
        |r| flatten_run(&r.summary),
        |flat| {
            flat.iter().for_each(|f| set.add(f));
            Ok(())
        },
    )?;
    ctx.columns = set.columns();

    let stage = |name: &str| {
        let path = out.join(name);
        Staged::create(&path).map_err(|source| Error::Write { path, source })
    };
    let mut runs_csv = stage("runs.csv")?;
    let mut points_csv = stage("points.csv")?;
    write_csvs(&ctx, &mut runs_csv, &mut points_csv)?;

    let mut json = stage("results.json")?;
    let failed = RefCell::new(None);
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
        metrics: &ctx.columns.names,
        points: LazyPoints(&ctx, &failed),
        runs: LazyRuns(&ctx, &failed),
        definition: &h.definition,
        model: &h.model,
    };
    let json_path = json.path().to_path_buf();
    let written = serde_json::to_writer_pretty(json.writer(), &results)
        .map_err(std::io::Error::from)
        .and_then(|()| json.writer().write_all(b"\n"));
    if let Some(e) = failed.take() {
        return Err(e);
    }
    written.map_err(|source| Error::Write {
        path: json_path,
        source,
    })?;
    crate::atomic::commit_all(vec![runs_csv, points_csv, json])
        .map_err(|(path, source)| Error::Write { path, source })
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
    /// How many runs the file lists. The runs themselves are not held (a
    /// sweep may have millions): [`SweepResults::run_values`] reads one
    /// metric of each.
    #[serde(rename = "runs")]
    pub run_count: RunCount,
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

/// The number of runs in `results.json`, counted without keeping them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunCount(pub usize);

impl<'de> Deserialize<'de> for RunCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Count;
        impl<'de> Visitor<'de> for Count {
            type Value = RunCount;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of runs")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RunCount, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(RunCount(n))
            }
        }
        d.deserialize_seq(Count)
    }
}

/// Reads `results.json`'s runs and keeps, of each, its point and the value
/// of one metric (`None` where the run has none).
struct PickRuns<'m>(&'m str);

impl<'de> DeserializeSeed<'de> for PickRuns<'_> {
    type Value = Vec<(usize, Option<f64>)>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PickRuns<'_> {
    type Value = Vec<(usize, Option<f64>)>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sweep's results")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = vec![];
        while let Some(key) = map.next_key::<String>()? {
            if key == "runs" {
                out = map.next_value_seed(RunList(self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(out)
    }
}

/// The list of runs, one metric of each.
struct RunList<'m>(&'m str);

impl<'de> DeserializeSeed<'de> for RunList<'_> {
    type Value = Vec<(usize, Option<f64>)>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RunList<'_> {
    type Value = Vec<(usize, Option<f64>)>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of runs")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = vec![];
        while let Some(run) = seq.next_element_seed(OneRun(self.0))? {
            out.push(run);
        }
        Ok(out)
    }
}

/// One run: its point and one metric.
struct OneRun<'m>(&'m str);

impl<'de> DeserializeSeed<'de> for OneRun<'_> {
    type Value = (usize, Option<f64>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for OneRun<'_> {
    type Value = (usize, Option<f64>);
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a run")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut point, mut value) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "point" => point = Some(map.next_value::<usize>()?),
                "metrics" => {
                    let metrics: BTreeMap<String, MetricValue> = map.next_value()?;
                    value = metrics.get(self.0).and_then(|v| v.0);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let point = point.ok_or_else(|| serde::de::Error::missing_field("point"))?;
        Ok((point, value))
    }
}

/// A metric's value, kept as a number (null and anything else are `None`).
struct MetricValue(Option<f64>);

impl<'de> Deserialize<'de> for MetricValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Option::<f64>::deserialize(d)?;
        Ok(MetricValue(v))
    }
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
    /// Reads `results.json` as a stream, counting its runs without keeping
    /// them: memory does not grow with the sweep's runs.
    pub fn read(path: &Path) -> Result<SweepResults, Error> {
        let file = std::fs::File::open(path).map_err(|source| Error::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
        let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(file));
        let results: SweepResults = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let (field, msg) = crate::diagnostics::describe(&e);
            Error::Parse {
                path: path.to_path_buf(),
                field,
                msg,
            }
        })?;
        de.end().map_err(|e| Error::Parse {
            path: path.to_path_buf(),
            field: String::new(),
            msg: e.to_string(),
        })?;
        Ok(results)
    }

    /// The point of each run in `results.json` and its value of `metric`,
    /// in run order, read as a stream.
    pub fn run_values(path: &Path, metric: &str) -> Result<Vec<(usize, Option<f64>)>, Error> {
        let file = std::fs::File::open(path).map_err(|source| Error::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
        let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(file));
        PickRuns(metric)
            .deserialize(&mut de)
            .map_err(|e| Error::Parse {
                path: path.to_path_buf(),
                field: "runs".into(),
                msg: e.to_string(),
            })
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
