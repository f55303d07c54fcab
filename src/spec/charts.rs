//! The charts a model or a sweep asks for (`charts` in the file): what to
//! draw, not how. The output layer draws them (`output::charts`).

use crate::engine::SimDuration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A chart a model (or sweep) asks for; `kind` is the tag.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ChartSpec {
    /// A run over time: share per node, ejections against injected faults,
    /// client latency (p50, p99) and client errors and timeouts, per bucket.
    #[serde(deserialize_with = "chart_body::timeline")]
    Timeline {
        /// Draw this replication (0-based) alone. Default: the median over
        /// the replications, with a band.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rep: Option<usize>,
        /// Width of a bucket, a multiple of the model's `timeline_bucket`.
        /// Default: wide enough for about 20 answers per node per bucket.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bucket: Option<SimDuration>,
    },
    /// A metric over the replications: one box (or CDF curve) per node in a
    /// run, per point in a sweep.
    #[serde(deserialize_with = "chart_body::distribution")]
    Distribution {
        /// In a run: a node metric (`share`, `first_ejection_delay_s`,
        /// `recovery_delay_s`, `ejected_time_s`, `ejections`, ...) or a client
        /// metric path (`client.latency_ms.p99`). In a sweep: a column of
        /// `runs.csv` (`nodes.A.first_ejection_delay_s`).
        metric: String,
        /// `box` (default) or `cdf`.
        #[serde(default)]
        style: DistStyle,
        /// The value axis: `auto` (default: logarithmic when the values span
        /// more than two decades), `linear` or `log`.
        #[serde(default, skip_serializing_if = "ScaleName::is_auto")]
        scale: ScaleName,
    },
    /// Sweeps: a metric over two axes, the value printed in each cell.
    #[serde(deserialize_with = "chart_body::heatmap")]
    Heatmap {
        /// A column of `points.csv` without its statistic (`nodes.A.share`).
        metric: String,
        /// Axis paths (as in the sweep file) for columns and rows.
        x: String,
        y: String,
        /// Which statistic over the replications. Default `median`.
        #[serde(default)]
        stat: StatName,
        /// The colour scale: `auto` (default: logarithmic when the values
        /// span more than two decades), `linear` or `log`.
        #[serde(default, skip_serializing_if = "ScaleName::is_auto")]
        scale: ScaleName,
    },
    /// Sweeps: a metric against one axis, one line per value of another, with
    /// a band over the replications.
    #[serde(deserialize_with = "chart_body::lines")]
    Lines {
        metric: String,
        x: String,
        /// The axis whose values make the lines; omitted: one line.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        series: Option<String>,
        /// `p5_p95` (default) or `min_max`.
        #[serde(default)]
        band: Band,
        /// The x axis: `auto` (default: logarithmic when the values span
        /// more than two decades), `linear` or `log`.
        #[serde(default, skip_serializing_if = "ScaleName::is_auto")]
        scale: ScaleName,
        /// The y axis, as `scale`.
        #[serde(default, skip_serializing_if = "ScaleName::is_auto")]
        y_scale: ScaleName,
    },
}

/// How a numeric axis (or a colour scale) is scaled.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScaleName {
    /// Logarithmic when the values are positive and span more than two decades.
    #[default]
    Auto,
    Linear,
    Log,
}

impl ScaleName {
    pub fn is_auto(&self) -> bool {
        *self == ScaleName::Auto
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatName {
    #[default]
    Median,
    Mean,
    Min,
    Max,
    P5,
    P95,
}

impl StatName {
    pub fn key(self) -> &'static str {
        match self {
            StatName::Median => "median",
            StatName::Mean => "mean",
            StatName::Min => "min",
            StatName::Max => "max",
            StatName::P5 => "p5",
            StatName::P95 => "p95",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Band {
    #[default]
    P5P95,
    MinMax,
}

/// The bodies of `ChartSpec`'s variants, read with their own path tracker
/// (see [`crate::diagnostics`]) so that errors name the field.
mod chart_body {
    use super::{Band, DistStyle, ScaleName, StatName};
    use crate::diagnostics::tracked;
    use crate::engine::SimDuration;
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Timeline {
        #[serde(default)]
        rep: Option<usize>,
        #[serde(default)]
        bucket: Option<SimDuration>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Distribution {
        metric: String,
        #[serde(default)]
        style: DistStyle,
        #[serde(default)]
        scale: ScaleName,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Heatmap {
        metric: String,
        x: String,
        y: String,
        #[serde(default)]
        stat: StatName,
        #[serde(default)]
        scale: ScaleName,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Lines {
        metric: String,
        x: String,
        #[serde(default)]
        series: Option<String>,
        #[serde(default)]
        band: Band,
        #[serde(default)]
        scale: ScaleName,
        #[serde(default)]
        y_scale: ScaleName,
    }

    type HeatmapBody = (String, String, String, StatName, ScaleName);
    type LinesBody = (String, String, Option<String>, Band, ScaleName, ScaleName);

    pub(super) fn heatmap<'de, D: Deserializer<'de>>(d: D) -> Result<HeatmapBody, D::Error> {
        tracked::<_, Heatmap>(d).map(|b| (b.metric, b.x, b.y, b.stat, b.scale))
    }
    pub(super) fn lines<'de, D: Deserializer<'de>>(d: D) -> Result<LinesBody, D::Error> {
        tracked::<_, Lines>(d).map(|b| (b.metric, b.x, b.series, b.band, b.scale, b.y_scale))
    }
    pub(super) fn timeline<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<(Option<usize>, Option<SimDuration>), D::Error> {
        tracked::<_, Timeline>(d).map(|b| (b.rep, b.bucket))
    }
    pub(super) fn distribution<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<(String, DistStyle, ScaleName), D::Error> {
        tracked::<_, Distribution>(d).map(|b| (b.metric, b.style, b.scale))
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DistStyle {
    #[default]
    Box,
    Cdf,
}

/// Checks that a sweep's charts name existing axes (their metrics are known
/// only once runs exist); `Err((field, reason))`.
pub fn check_sweep_axes(charts: &[ChartSpec], axes: &[String]) -> Result<(), (String, String)> {
    for (i, c) in charts.iter().enumerate() {
        let named: Vec<(&str, &String)> = match c {
            ChartSpec::Heatmap { x, y, .. } => vec![("x", x), ("y", y)],
            ChartSpec::Lines { x, series, .. } => {
                let mut v = vec![("x", x)];
                if let Some(s) = series {
                    v.push(("series", s));
                }
                v
            }
            ChartSpec::Timeline { .. } => {
                return Err((
                    format!("charts[{i}]"),
                    "a timeline shows one run: name it in a model, not a sweep".into(),
                ));
            }
            ChartSpec::Distribution { .. } => vec![],
        };
        for (field, a) in named {
            if !axes.iter().any(|x| x == a) {
                return Err((
                    format!("charts[{i}].{field}"),
                    format!("no axis `{a}` (axes are {})", axes.join(", ")),
                ));
            }
        }
    }
    Ok(())
}
