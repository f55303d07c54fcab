//! Sweep files (`sweeps/*.json`) as written: the model to start from, the
//! axes to vary and the replications. The sweep layer expands them into a plan.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A sweep file.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// Names the output directory (`output/<name>/`).
    pub name: String,
    /// Free text for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The model to start from, relative to the directory of the sweep file.
    pub model: PathBuf,
    /// Replications per point. Default 1.
    #[serde(default = "one")]
    pub reps: u32,
    /// Base seed. Default: the model's `seed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// How replications are seeded across points. Default `common`.
    #[serde(default)]
    pub seeds: SeedMode,
    /// Overrides applied to the model before the axes, in key order (so
    /// `policy` is applied before `policy.max_fails`). Values are JSON.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, Value>,
    /// The axes of the grid; points are their cartesian product, the last axis varying fastest.
    #[serde(default)]
    pub axes: Vec<AxisSpec>,
    /// Charts drawn at the end (heatmap, lines, distribution); default:
    /// heatmaps over the first two axes, or lines over the only one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub charts: Vec<super::ChartSpec>,
}

fn one() -> u32 {
    1
}

/// How the seed of replication `r` of point `p` is chosen.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SeedMode {
    /// Every point uses the seeds of `hcsim run --seed S --reps N` (common
    /// random numbers): differences between points come from the parameters, not the draws.
    #[default]
    Common,
    /// Each (point, replication) gets its own seed, `derive_seed(S, [p, r])`.
    Independent,
}

impl SeedMode {
    /// The name in files (`common`, `independent`).
    pub fn name(self) -> &'static str {
        match self {
            SeedMode::Common => "common",
            SeedMode::Independent => "independent",
        }
    }
}

/// One axis as written. Either `path` with `values` or `range` (and optional
/// `labels`), or `zip`: a list of such axes that vary together.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AxisSpec {
    /// A dotted path into the model document: `policy.max_fails`,
    /// `nodes.A.weight`, `faults[0].for`, or a whole section such as `policy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The values, as JSON (durations are strings with units, as in models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<Value>>,
    /// `from`, `to` (inclusive) and `step`: all numbers or all durations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<RangeSpec>,
    /// Names for the values in outputs (useful when values are whole sections).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<String>>,
    /// Axes that take their i-th values together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zip: Option<Vec<AxisSpec>>,
}

/// `{"from": 1, "to": 10, "step": 1}` or `{"from": "1s", "to": "10s", "step": "1s"}`.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RangeSpec {
    pub from: Value,
    pub to: Value,
    pub step: Value,
}
