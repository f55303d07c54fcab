//! Everything a run or a sweep writes, one writer per file: `summary.json`
//! ([`summary`]), the CSV files ([`csv`], [`sweep`]), the table on stdout
//! ([`table`]), the summary at the end of a sweep ([`sweep_summary`]), the
//! charts ([`charts`]) and `report.html` ([`html`]). Files
//! are written atomically (a temporary file, then a rename), so a reader
//! never sees half a file.

pub mod charts;
pub mod compare;
pub mod csv;
pub mod html;
pub mod summary;
pub mod sweep;
pub mod sweep_summary;
pub mod table;
pub mod whatif;

use crate::error::Error;
use crate::world::TraceLine;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use summary::Summary;

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// reader never sees a half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let err = |source| Error::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir).map_err(|source| Error::Write {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(err)
}

/// Creates the output directory and checks that files can be written in it,
/// so that a bad `--out` fails before the runs rather than after them.
pub fn prepare_dir(dir: &Path) -> Result<(), Error> {
    let err = |source| Error::Write {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    let probe = dir.join(format!(".hcsim-probe{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(err)?;
    std::fs::remove_file(&probe).map_err(err)
}

/// Writes a run's files into `dir`: `summary.json`, `timeline.csv`,
/// `ejections.csv`, and `attempts.csv` when the runs were traced.
pub fn write_run(
    dir: &Path,
    summary: &Summary,
    traces: Option<&[Vec<TraceLine>]>,
) -> Result<(), Error> {
    let csv_err = |path: PathBuf| {
        move |e: ::csv::Error| Error::Write {
            path: path.clone(),
            source: std::io::Error::other(e.to_string()),
        }
    };
    let runs = &summary.runs;
    write_atomic(&dir.join("summary.json"), summary.to_json().as_bytes())?;
    let p = dir.join("timeline.csv");
    write_atomic(&p, &csv::timeline_csv(runs).map_err(csv_err(p.clone()))?)?;
    let p = dir.join("ejections.csv");
    write_atomic(&p, &csv::ejections_csv(runs).map_err(csv_err(p.clone()))?)?;
    if let Some(traces) = traces {
        let p = dir.join("attempts.csv");
        let bytes = csv::trace_csv(runs, traces).map_err(csv_err(p.clone()))?;
        write_atomic(&p, &bytes)?;
    }
    Ok(())
}

/// Draws the charts of an output directory (a run's or a sweep's) and its report.html.
pub fn plot(dir: &Path) -> Result<(), Error> {
    if dir.join("results.json").exists() {
        let drawn = charts::draw_sweep(dir)?;
        html::sweep_report(dir, &drawn)
    } else {
        let drawn = charts::draw_run(dir)?;
        html::run_report(dir, &drawn)
    }
}
