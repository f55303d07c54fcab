//! Charts of a finished run or sweep, drawn from its output files only
//! (`summary.json`, `timeline.csv`, `ejections.csv`; `results.json`), so
//! `hcsim plot DIR` redraws them without re-simulating. The drawing itself
//! lives in [`crate::plot`]; what to draw is the `charts` of the model or
//! sweep ([`crate::spec::ChartSpec`]), or the defaults here.

mod run;
mod sweep;

pub use run::{default_charts, draw_run};
pub use sweep::{default_sweep_charts, draw_sweep, sweep_chart_specs};

use crate::error::Error;
use crate::plot::{self, DistributionSpec};
use crate::spec::charts::DistStyle;
use std::path::{Path, PathBuf};

/// A chart that was drawn: `<stem>.png` and `<stem>.svg`.
#[derive(Clone, Debug)]
pub struct Drawn {
    pub title: String,
    pub stem: PathBuf,
}

fn plot_err(e: plot::PlotError) -> Error {
    Error::Write {
        path: e.path().to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// Units for axis labels.
fn metric_label(metric: &str) -> String {
    let unit = if metric.ends_with("_s") {
        " (s)"
    } else if metric.contains("latency_ms") {
        " (ms)"
    } else if metric == "share" {
        " (fraction of 2xx answers)"
    } else {
        ""
    };
    format!("{metric}{unit}")
}

/// A sweep metric's label: the whole path, with the unit of its last part.
fn metric_title(metric: &str) -> String {
    metric_label(metric.rsplit('.').next().unwrap_or(metric)).replacen(
        metric.rsplit('.').next().unwrap_or(metric),
        metric,
        1,
    )
}

/// Draws a box plot or CDF as `<charts_dir>/distribution-<metric>.{png,svg}`.
fn draw_distribution(
    d: DistributionSpec,
    style: DistStyle,
    charts_dir: &Path,
    metric: &str,
) -> Result<Drawn, Error> {
    let stem = charts_dir.join(format!("distribution-{}", metric.replace('.', "-")));
    match style {
        DistStyle::Box => plot::distribution(&d, &stem),
        DistStyle::Cdf => plot::distribution_cdf(&d, &stem),
    }
    .map_err(plot_err)?;
    Ok(Drawn {
        title: d.title,
        stem,
    })
}
