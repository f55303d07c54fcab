//! Everything a run or a sweep writes, one writer per file: `summary.json`
//! ([`summary`]), the CSV files ([`csv`], [`sweep`]), the table on stdout
//! ([`table`]), the summary at the end of a sweep ([`sweep_summary`]), the
//! charts ([`charts`]) and `report.html` ([`html`]). Files
//! are written atomically (a temporary file, then a rename), so a reader
//! never sees half a file.

pub mod charts;
pub mod compare;
pub mod connections;
pub mod csv;
pub mod html;
pub mod json;
pub mod pods;
pub mod summary;
pub mod sweep;
pub mod sweep_summary;
pub mod table;
pub mod vocabulary;
pub mod whatif;

use crate::error::Error;
use crate::world::TraceLine;
use crate::world::event_log::EventLog;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use summary::Summary;

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// reader never sees a half-written file; a path that is not a regular
/// file (a device, a FIFO, `/dev/stdout`) is written directly, a symbolic
/// link followed, and `-` is stdout (see [`crate::atomic`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    crate::atomic::write(path, bytes).map_err(|source| {
        if path.as_os_str() == "-" {
            Error::Stdout(source)
        } else {
            Error::Write {
                path: path.to_path_buf(),
                source,
            }
        }
    })
}

/// Files only a run writes, and files only a sweep writes: writing one kind
/// into a directory removes the other's, so that a reused `--out` never
/// mixes the outputs of two models (`plot` would take the stale kind).
const RUN_FILES: [&str; 7] = [
    "summary.json",
    "timeline.csv",
    "ejections.csv",
    "attempts.csv",
    "replicas.csv",
    "events.csv",
    "pods.csv",
];
const SWEEP_FILES: [&str; 4] = ["results.json", "runs.csv", "points.csv", "runs.jsonl"];

/// Removes `names` from `dir` (those that are there).
fn remove_stale(dir: &Path, names: &[&str]) -> Result<(), Error> {
    for name in names {
        let path = dir.join(name);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::Write { path, source: e });
            }
            _ => {}
        }
    }
    Ok(())
}

/// Removes a run's files from a sweep's output directory.
pub fn remove_run_files(dir: &Path) -> Result<(), Error> {
    remove_stale(dir, &RUN_FILES)
}

/// Creates the output directory and checks that files can be written in it,
/// so that a bad `--out` fails before the runs rather than after them.
pub fn prepare_dir(dir: &Path) -> Result<(), Error> {
    let err = |source| Error::Write {
        path: dir.to_path_buf(),
        source,
    };
    if dir.exists() && !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{}: is a file, not a directory: the outputs need a directory (name another with --out DIR)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(err)?;
    let probe = dir.join(format!(".hcsim-probe{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(err)?;
    std::fs::remove_file(&probe).map_err(err)
}

/// Writes a run's files into `dir`: `summary.json`, `timeline.csv`,
/// `ejections.csv`, `attempts.csv` when the runs were traced,
/// `replicas.csv` when they kept each gateway replica's node table and
/// `events.csv` when they kept the gateway's event log. All are
/// written before any replaces its predecessor, so a failure (a full disk)
/// leaves the previous set, not a mix; a sweep's files left in `dir` are
/// removed. With `text`, returns the text of `summary.json` (what
/// `--format json` prints: a summary of many nodes is not serialized
/// twice); without, the summary is written as it is made, never held whole.
pub fn write_run(
    dir: &Path,
    summary: &Summary,
    traces: Option<&[Vec<TraceLine>]>,
    events: Option<&[EventLog]>,
    text: bool,
) -> Result<Option<String>, Error> {
    let csv_err = |path: PathBuf| {
        move |e: ::csv::Error| Error::Write {
            path: path.clone(),
            source: std::io::Error::other(e.to_string()),
        }
    };
    let runs = &summary.runs;
    let json = text.then(|| summary.to_json());
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let p = dir.join("timeline.csv");
    files.push((p, csv::timeline_csv(runs)));
    let p = dir.join("ejections.csv");
    files.push((p.clone(), csv::ejections_csv(runs).map_err(csv_err(p))?));
    if let Some(traces) = traces {
        let p = dir.join("attempts.csv");
        files.push((p.clone(), csv::trace_csv(runs, traces).map_err(csv_err(p))?));
    }
    if let Some(events) = events {
        let p = dir.join("events.csv");
        files.push((
            p.clone(),
            csv::events_csv(runs, events).map_err(csv_err(p))?,
        ));
    }
    let pods = runs.iter().any(|r| r.pods.is_some());
    if pods {
        let p = dir.join("pods.csv");
        files.push((p.clone(), csv::pods_csv(runs).map_err(csv_err(p))?));
    }
    let per_replica = runs.iter().any(|r| !r.replicas.is_empty());
    if per_replica {
        let p = dir.join("replicas.csv");
        files.push((p.clone(), csv::replicas_csv(runs).map_err(csv_err(p))?));
    }
    let summary_path = dir.join("summary.json");
    let mut staged = Vec::with_capacity(files.len() + 1);
    let all = std::iter::once((&summary_path, json.as_ref().map(String::as_bytes))).chain(
        files
            .iter()
            .map(|(path, bytes)| (path, Some(bytes.as_slice()))),
    );
    for (path, bytes) in all {
        let write_err = |source| Error::Write {
            path: path.clone(),
            source,
        };
        let mut f = crate::atomic::Staged::create(path).map_err(write_err)?;
        match bytes {
            Some(bytes) => f.writer().write_all(bytes),
            None => summary.write_json(f.writer()),
        }
        .map_err(write_err)?;
        staged.push(f);
    }
    crate::atomic::commit_all(staged).map_err(|(path, source)| Error::Write { path, source })?;
    if traces.is_none() {
        remove_stale(dir, &["attempts.csv"])?;
    }
    if events.is_none() {
        remove_stale(dir, &["events.csv"])?;
    }
    if !per_replica {
        remove_stale(dir, &["replicas.csv"])?;
    }
    if !pods {
        remove_stale(dir, &["pods.csv"])?;
    }
    remove_stale(dir, &SWEEP_FILES)?;
    Ok(json)
}

/// Removes the charts in `dir/charts` that were not just drawn (a reused
/// directory's charts of another model or sweep).
fn remove_stale_charts(dir: &Path, drawn: &[charts::Drawn]) -> Result<(), Error> {
    let Ok(entries) = std::fs::read_dir(dir.join("charts")) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let path = e.path();
        let chart = path.extension().is_some_and(|x| x == "png" || x == "svg");
        let kept = drawn.iter().any(|d| path.with_extension("") == d.stem);
        if chart && !kept {
            std::fs::remove_file(&path).map_err(|source| Error::Write { path, source })?;
        }
    }
    Ok(())
}

/// Draws the charts of an output directory (a run's or a sweep's) and its report.html.
pub fn plot(dir: &Path) -> Result<usize, Error> {
    if dir.join("results.json").exists() {
        let drawn = charts::draw_sweep(dir)?;
        remove_stale_charts(dir, &drawn)?;
        html::sweep_report(dir, &drawn)?;
        Ok(drawn.len())
    } else {
        let drawn = charts::draw_run(dir)?;
        remove_stale_charts(dir, &drawn)?;
        html::run_report(dir, &drawn)?;
        Ok(drawn.len())
    }
}
