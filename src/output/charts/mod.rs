//! Charts of a finished run or sweep, drawn from its output files only
//! (`summary.json`, `timeline.csv`, `ejections.csv`; `results.json`), so
//! `hcsim plot DIR` redraws them without re-simulating. The drawing itself
//! lives in [`crate::plot`]; what to draw is the `charts` of the model or
//! sweep ([`crate::spec::ChartSpec`]), or the defaults here. Every title,
//! axis and legend names metrics and parameters as
//! [`super::vocabulary`] does, and every footer says where the chart comes
//! from (model or sweep, seed, replications, overrides).

mod run;
mod sweep;
mod timeline;

pub use run::{default_charts, draw_run, provenance as run_provenance};
pub use sweep::{
    default_sweep_charts, draw_sweep, provenance as sweep_provenance, sweep_chart_specs,
};

use super::vocabulary::{self, Shown};
use crate::error::Error;
use crate::plot::{self, AxisScale, DistributionSpec};
use crate::spec::charts::{DistStyle, ScaleName};
use std::path::{Path, PathBuf};

/// A chart that was drawn: `<stem>.png` and `<stem>.svg`.
#[derive(Clone, Debug)]
pub struct Drawn {
    pub title: String,
    pub stem: PathBuf,
    /// The metric it shows (a column of `points.csv`, or a run metric), if one.
    pub metric: Option<String>,
}

fn plot_err(e: plot::PlotError) -> Error {
    Error::Write {
        path: e.path().to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    }
}

fn axis_scale(s: ScaleName) -> AxisScale {
    match s {
        ScaleName::Auto => AxisScale::Auto,
        ScaleName::Linear => AxisScale::Linear,
        ScaleName::Log => AxisScale::Log,
    }
}

/// `time until ejected` -> `Time until ejected`.
fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `1 run`, `20 runs`.
fn runs(n: usize) -> String {
    format!("{n} run{}", if n == 1 { "" } else { "s" })
}

/// A file name part from free text: `nodes.A.share` -> `nodes-A-share`.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// Samples of one metric in groups, scaled for display: the value label
/// with its unit, and the samples multiplied by the unit's factor.
fn shown_groups(
    metric: &str,
    groups: Vec<(String, Vec<f64>)>,
) -> (String, Shown, Vec<(String, Vec<f64>)>) {
    let term = vocabulary::metric(metric);
    let shown = term
        .unit
        .shown(groups.iter().flat_map(|g| g.1.iter().copied()));
    let scaled = groups
        .into_iter()
        .map(|(n, v)| (n, v.into_iter().map(|x| x * shown.factor).collect()))
        .collect();
    (term.label(&shown), shown, scaled)
}

/// Draws a box plot or CDF as `<charts_dir>/distribution-<name>.{png,svg}`.
fn draw_distribution(
    d: DistributionSpec,
    style: DistStyle,
    charts_dir: &Path,
    metric: &str,
) -> Result<Drawn, Error> {
    let stem = charts_dir.join(format!("distribution-{}", slug(metric)));
    let d = DistributionSpec {
        integer: vocabulary::metric(metric).unit == vocabulary::Unit::Count,
        ..d
    };
    match style {
        DistStyle::Box => plot::distribution(&d, &stem),
        DistStyle::Cdf => plot::distribution_cdf(&d, &stem),
    }
    .map_err(plot_err)?;
    Ok(Drawn {
        title: d.title,
        stem,
        metric: Some(metric.to_string()),
    })
}
