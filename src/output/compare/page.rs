//! `compare.html`: the comparison table, the runs' timelines overlaid (each
//! node's share, nodes ejected, client errors and timeouts, and any other
//! per-bucket column of `timeline.csv`, such as latency), and the
//! distributions over the replications of the metrics a what-if is read for.
//! Self-contained like `report.html`: charts inline as SVG (the PNG and SVG
//! files are also kept in `charts/`).

use super::{Comparison, RunDir};
use crate::error::Error;
use crate::output::charts::Drawn;
use crate::output::html::{Block, chart_blocks, render};
use crate::output::vocabulary::{self, Term, Unit};
use crate::plot::{self, DistributionSpec, LinesSpec, Point, Series};
use crate::spec::overrides::shown;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// At most this many charts of each kind (a model with many nodes).
const MAX_CHARTS: usize = 16;

fn plot_err(e: plot::PlotError) -> Error {
    Error::Write {
        path: e.path().to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// One run's `timeline.csv`: per column, per bucket start, the replications' values.
struct Timeline {
    node_names: Vec<String>,
    /// Columns that are not per node and not bookkeeping (`errors`, latency columns...).
    run_columns: Vec<String>,
    /// column -> bucket start (µs, for ordering) -> values over replications
    cols: BTreeMap<String, BTreeMap<i64, Vec<f64>>>,
}

fn read_timeline(dir: &Path, node_names: &[String]) -> Result<Timeline, Error> {
    let path = dir.join("timeline.csv");
    let parse_err = |e: ::csv::Error| Error::Parse {
        path: path.clone(),
        field: String::new(),
        msg: e.to_string(),
    };
    let mut rdr = ::csv::Reader::from_path(&path).map_err(parse_err)?;
    let headers = rdr.headers().map_err(parse_err)?.clone();
    let Some(c_t) = headers.iter().position(|h| h == "t_s") else {
        return Err(Error::Parse {
            path: path.clone(),
            field: String::new(),
            msg: "no column t_s".into(),
        });
    };
    let is_node_col = |h: &str| node_names.iter().any(|n| h.starts_with(&format!("{n}.")));
    let run_columns = headers
        .iter()
        .filter(|h| !matches!(*h, "rep" | "seed" | "t_s" | "requests" | "ok") && !is_node_col(h))
        .map(str::to_string)
        .collect();
    let mut cols: BTreeMap<String, BTreeMap<i64, Vec<f64>>> = BTreeMap::new();
    for rec in rdr.records() {
        let rec = rec.map_err(parse_err)?;
        let Some(t) = rec.get(c_t).and_then(|x| x.parse::<f64>().ok()) else {
            continue;
        };
        let key = (t * 1e6).round() as i64;
        for (i, h) in headers.iter().enumerate() {
            if let Some(v) = rec.get(i).and_then(|x| x.parse::<f64>().ok()) {
                cols.entry(h.to_string())
                    .or_default()
                    .entry(key)
                    .or_default()
                    .push(v);
            }
        }
    }
    Ok(Timeline {
        node_names: node_names.to_vec(),
        run_columns,
        cols,
    })
}

impl Timeline {
    /// Per bucket, a value per replication computed from that replication's
    /// columns (`get(column)`), summarized over the replications.
    fn derived(&self, f: impl Fn(&dyn Fn(&str) -> f64) -> f64) -> Vec<Point> {
        let Some(t_col) = self.cols.get("t_s") else {
            return vec![];
        };
        t_col
            .iter()
            .map(|(&key, reps)| {
                let vals: Vec<f64> = (0..reps.len())
                    .map(|rep| {
                        let get = |col: &str| {
                            self.cols
                                .get(col)
                                .and_then(|c| c.get(&key))
                                .and_then(|v| v.get(rep))
                                .copied()
                                .unwrap_or(0.0)
                        };
                        f(&get)
                    })
                    .filter(|v| v.is_finite())
                    .collect();
                summarize(key as f64 / 1e6, &vals)
            })
            .collect()
    }

    fn column(&self, col: &str) -> Vec<Point> {
        self.derived(|get| get(col))
    }

    fn share(&self, node: &str) -> Vec<Point> {
        let names = self.node_names.clone();
        self.derived(move |get| {
            let total: f64 = names.iter().map(|n| get(&format!("{n}.answered"))).sum();
            if total > 0.0 {
                get(&format!("{node}.answered")) / total
            } else {
                f64::NAN
            }
        })
    }

    fn ejected(&self) -> Vec<Point> {
        let names = self.node_names.clone();
        self.derived(move |get| names.iter().map(|n| get(&format!("{n}.ejected"))).sum())
    }
}

/// The mean over replications, with the min–max band.
fn summarize(t: f64, vals: &[f64]) -> Point {
    if vals.is_empty() {
        return Point::new(t, f64::NAN, f64::NAN, f64::NAN);
    }
    let mean = vals.iter().sum::<f64>() / vals.len() as f64;
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Point::new(t, mean, lo, hi)
}

struct Charts<'a> {
    c: &'a Comparison,
    dir: PathBuf,
    caption: String,
    drawn: Vec<Drawn>,
}

impl Charts<'_> {
    fn series_name(&self, i: usize) -> String {
        format!("[{}] {}", i + 1, self.c.runs[i].label)
    }

    /// Per-bucket series of `term`, shown in the unit that fits their values
    /// (a share in %, a latency in ms or s); `title` follows the name.
    fn lines(
        &mut self,
        stem: &str,
        term: &Term,
        title: &str,
        series: Vec<Vec<Point>>,
    ) -> Result<(), Error> {
        if series
            .iter()
            .all(|s| s.iter().all(|p| !p.median.is_finite() || p.hi == 0.0))
        {
            return Ok(());
        }
        let shown = term
            .unit
            .shown(series.iter().flatten().flat_map(|p| [p.median, p.lo, p.hi]));
        let scale = |p: Point| Point {
            median: p.median * shown.factor,
            lo: p.lo * shown.factor,
            hi: p.hi * shown.factor,
            ..p
        };
        let spec = LinesSpec {
            title: title.to_string(),
            caption: self.caption.clone(),
            x_label: "time (s)".into(),
            y_label: term.label(&shown),
            series: series
                .into_iter()
                .enumerate()
                .map(|(i, points)| Series {
                    name: self.series_name(i),
                    points: points.into_iter().map(scale).collect(),
                })
                .collect(),
            y_from_zero: true,
            y_integer: term.unit == Unit::Count,
            band_label: "min–max over replications".into(),
            x_scale: plot::AxisScale::Linear,
            y_scale: plot::AxisScale::Linear,
            ..LinesSpec::default()
        };
        let stem = self.dir.join("charts").join(stem);
        plot::lines(&spec, &stem).map_err(plot_err)?;
        self.drawn.push(Drawn {
            title: spec.title,
            stem,
            metric: None,
        });
        Ok(())
    }

    fn distribution(&mut self, metric: &str, groups: Vec<(String, Vec<f64>)>) -> Result<(), Error> {
        let term = vocabulary::metric(metric);
        let shown = term
            .unit
            .shown(groups.iter().flat_map(|(_, v)| v.iter().copied()));
        let groups = groups
            .into_iter()
            .map(|(g, v)| (g, v.into_iter().map(|x| x * shown.factor).collect()))
            .collect();
        let spec = DistributionSpec {
            title: format!("{} over the replications", term.full()),
            caption: self.caption.clone(),
            group_label: "run".into(),
            value_label: term.label(&shown),
            groups,
            integer: term.unit == Unit::Count,
            ..DistributionSpec::default()
        };
        let stem = self
            .dir
            .join("charts")
            .join(format!("distribution-{}", file_part(metric)));
        plot::distribution(&spec, &stem).map_err(plot_err)?;
        self.drawn.push(Drawn {
            title: spec.title,
            stem,
            metric: None,
        });
        Ok(())
    }
}

/// Metrics whose distributions the page shows (when they have data).
fn distribution_wanted(metric: &str) -> bool {
    const CLIENT: [&str; 7] = [
        "client.errors",
        "client.timeouts",
        "client.unfinished",
        "client.latency_ms.p50",
        "client.latency_ms.p99",
        "client.latency_ms.p999",
        "client.latency_ms.max",
    ];
    const NODE: [&str; 4] = [
        ".share",
        ".ejections",
        ".first_ejection_delay_s",
        ".ejected_time_s",
    ];
    CLIENT.contains(&metric)
        || crate::metrics::path::split_node_metric(metric)
            .is_some_and(|(_, f)| NODE.iter().any(|s| s.strip_prefix('.') == Some(f.as_str())))
}

/// Draws the charts into `out/charts/`: the timelines, then the
/// distributions; returns them and how many are timelines.
fn draw(out: &Path, c: &Comparison, runs: &[RunDir]) -> Result<(Vec<Drawn>, usize), Error> {
    let legend: Vec<String> = c
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let set = if r.set.is_empty() {
                String::new()
            } else {
                format!(" ({})", shown(&r.set))
            };
            format!("[{}] {}{set}", i + 1, r.label)
        })
        .collect();
    let mut charts = Charts {
        c,
        dir: out.to_path_buf(),
        caption: format!(
            "{} · hcsim {}",
            legend.join(" · "),
            env!("CARGO_PKG_VERSION")
        ),
        drawn: vec![],
    };
    let timelines: Vec<Timeline> = runs
        .iter()
        .map(|r| {
            let names: Vec<String> = r.summary.nodes.iter().map(|n| n.name.clone()).collect();
            read_timeline(&r.dir, &names)
        })
        .collect::<Result<_, _>>()?;
    let mut nodes: Vec<String> = vec![];
    for t in &timelines {
        for n in &t.node_names {
            if !nodes.contains(n) {
                nodes.push(n.clone());
            }
        }
    }
    for node in nodes.iter().take(MAX_CHARTS) {
        let series = timelines.iter().map(|t| t.share(node)).collect();
        let term = vocabulary::metric(&crate::metrics::path::node_metric(node, "share"));
        charts.lines(
            &format!("timeline-share-{}", file_part(node)),
            &term,
            &format!("{} of the 2xx answers per bucket", term.full()),
            series,
        )?;
    }
    let series = timelines.iter().map(Timeline::ejected).collect();
    let ejected = Term::new("nodes ejected", Unit::None);
    charts.lines(
        "timeline-ejected",
        &ejected,
        "Nodes ejected (per bucket, the sum over nodes of the fraction of it ejected)",
        series,
    )?;
    let mut columns: Vec<String> = vec![];
    for t in &timelines {
        for col in &t.run_columns {
            if !columns.contains(col) {
                columns.push(col.clone());
            }
        }
    }
    for col in columns.iter().take(MAX_CHARTS) {
        let series = timelines.iter().map(|t| t.column(col)).collect();
        let term = vocabulary::timeline_column(col);
        charts.lines(
            &format!("timeline-{}", file_part(col)),
            &term,
            &format!("{} per bucket", term.full()),
            series,
        )?;
    }
    let timeline_charts = charts.drawn.len();
    if c.runs.iter().any(|r| r.reps >= 2) {
        let wanted: Vec<_> = c
            .metrics
            .iter()
            .filter(|m| {
                distribution_wanted(&m.metric) && m.values.iter().flatten().any(|&v| v != 0.0)
            })
            .take(MAX_CHARTS)
            .collect();
        for m in wanted {
            let groups = m
                .values
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("[{}]", i + 1), v.clone()))
                .collect();
            charts.distribution(&m.metric, groups)?;
        }
    }
    Ok((charts.drawn, timeline_charts))
}

/// Draws the charts into `out/charts/` and writes `out/compare.html`.
pub fn write(out: &Path, c: &Comparison, runs: &[RunDir]) -> Result<PathBuf, Error> {
    let (drawn, timeline_charts) = draw(out, c, runs)?;
    let mut blocks = vec![Block::Heading("Runs".into())];
    blocks.push(Block::Table(
        [
            "",
            "directory",
            "model",
            "seed",
            "reps",
            "overrides (--set)",
        ]
        .map(String::from)
        .to_vec(),
        c.runs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                vec![
                    format!("[{}]", i + 1),
                    r.dir.clone(),
                    r.model.clone(),
                    r.seed.to_string(),
                    r.reps.to_string(),
                    shown(&r.set),
                ]
            })
            .collect(),
    ));
    blocks.push(Block::Heading("Metrics".into()));
    let mut rows = super::render::rows(c);
    let mut head = rows.remove(0);
    head[0] = "metric (median [min–max])".into();
    for (row, m) in rows.iter_mut().zip(&c.metrics) {
        row[0] = vocabulary::metric(&m.metric).full();
    }
    blocks.push(Block::Table(head, rows));
    blocks.push(Block::Paragraph(format!(
        "Each cell: median [min–max] over the replications; Δ: median minus run [1]'s (shares and utilizations in percentage points). Noise: {}.",
        c.test
    )));
    let all = chart_blocks(&drawn)?;
    let mut all = all.into_iter();
    blocks.push(Block::Heading("Timelines".into()));
    blocks.push(Block::Paragraph(
        "Per bucket: the mean over each run's replications, shaded from their minimum to their maximum.".into(),
    ));
    blocks.extend(all.by_ref().take(timeline_charts));
    let rest: Vec<Block> = all.collect();
    if !rest.is_empty() {
        blocks.push(Block::Heading("Distributions over the replications".into()));
        blocks.extend(rest);
    }
    blocks.push(Block::Heading("Provenance".into()));
    blocks.push(Block::Table(
        vec![String::new(), String::new()],
        c.runs
            .iter()
            .enumerate()
            .zip(runs)
            .map(|((i, _), r)| vec![format!("[{}] command", i + 1), r.summary.command.clone()])
            .chain(std::iter::once(vec![
                "hcsim".into(),
                env!("CARGO_PKG_VERSION").into(),
            ]))
            .collect(),
    ));
    let labels: Vec<&str> = c.runs.iter().map(|r| r.label.as_str()).collect();
    let page = render(&format!("hcsim compare: {}", labels.join(" vs ")), &blocks);
    let path = out.join("compare.html");
    crate::output::write_atomic(&path, page.as_bytes())?;
    Ok(path)
}

/// A metric or node name as part of a file name: `.` and `/` as `-`, and
/// whatever a node name may hold that a file name should not (`:` of
/// `10.1.0.11:8080`, quotes, brackets) as `-` too, with a hash to keep two
/// names apart when anything was replaced.
fn file_part(name: &str) -> String {
    crate::spec::overrides::safe_name(&name.replace(['.', '/'], "-"), name, 100)
}
