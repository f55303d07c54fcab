//! Tune files (`sweeps/tune-*.json`) as written: the model to start from,
//! the search space of policy settings, the scenarios every candidate
//! faces, the objectives to minimize and the constraints to meet. The tune
//! layer turns them into sweep plans and a recommendation.

use super::sweep::AxisSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A tune file.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TuneSpec {
    /// Names the output directory (`output/<name>/`).
    pub name: String,
    /// Free text for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The model to start from, relative to the directory of the tune file.
    /// Give either `model` or `import`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<PathBuf>,
    /// A gateway config to start from instead of a model: imported as
    /// `hcsim import` does, the imported model written to the output
    /// directory as `model.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<TuneImportSpec>,
    /// Base seed of the search; the verification's seeds are derived from it
    /// on a stream of their own. Default: the model's `seed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Replications per candidate and scenario: of the whole grid, or of the
    /// last rung of successive halving. Default 5.
    #[serde(default = "five")]
    pub reps: u32,
    /// How the space is searched. Default: a grid up to `grid_limit`
    /// candidates, successive halving above.
    #[serde(default)]
    pub search: SearchSpec,
    /// The re-simulation of the frontier on fresh seeds.
    #[serde(default)]
    pub verify: VerifySpec,
    /// The search space: one or more alternatives (e.g. one per policy
    /// kind); the candidates are the union of their grids.
    pub space: Vec<AlternativeSpec>,
    /// What every candidate must face: each a name and overrides of the model.
    pub scenarios: Vec<ScenarioSpec>,
    /// What to minimize (or maximize), each a metric of one scenario. The
    /// Pareto set is taken over all of them.
    pub objectives: Vec<ObjectiveSpec>,
    /// What a candidate must meet to be considered at all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<ConstraintSpec>,
    /// How one recommendation is chosen on the Pareto set. Default `weighted`.
    #[serde(default)]
    pub recommend: Recommend,
    /// The frontier chart's axes: objective names. Default: the first two objectives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<TuneChartSpec>,
}

fn five() -> u32 {
    5
}

/// A gateway config as a tune's base: `hcsim import FILE --format F
/// --target T --nodes N --rps R --duration D`.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TuneImportSpec {
    /// The config file (nginx.conf, haproxy.cfg, Envoy or Istio YAML, a
    /// Kubernetes manifest), relative to the directory of the tune file.
    pub file: PathBuf,
    /// Its format; detected from the content when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<ImportFormat>,
    /// The upstream / backend / cluster / host / workload, when it has several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Nodes to create when the config does not list them. Default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
    /// Open-loop request rate. Default 100 req/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
    /// Simulated time of each run, e.g. `"60s"`. Default 60s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
}

/// A gateway config's format.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportFormat {
    Nginx,
    Haproxy,
    Envoy,
    Istio,
    Kubernetes,
}

/// How the search space is explored.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SearchSpec {
    /// `grid`, `halving` or `auto` (a grid up to `grid_limit` candidates).
    pub method: SearchMethod,
    /// Above this many candidates, `auto` uses successive halving. Default 32.
    pub grid_limit: usize,
    /// Successive halving: replications of the first rung. Default 1.
    pub min_reps: u32,
    /// Successive halving: each rung keeps 1/eta of the candidates and runs
    /// eta times the replications. Default 3.
    pub eta: u32,
}

impl Default for SearchSpec {
    fn default() -> Self {
        SearchSpec {
            method: SearchMethod::Auto,
            grid_limit: 32,
            min_reps: 1,
            eta: 3,
        }
    }
}

#[derive(
    Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SearchMethod {
    /// A grid up to `grid_limit` candidates, successive halving above.
    #[default]
    Auto,
    /// Every candidate with `reps` replications.
    Grid,
    /// Successive halving: every candidate with `min_reps`, then the best
    /// 1/eta (by Pareto rank among the feasible) with eta times as many, up to `reps`.
    Halving,
}

/// The verification on fresh seeds.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct VerifySpec {
    /// Replications of each frontier candidate per scenario. Default 10.
    pub reps: u32,
}

impl Default for VerifySpec {
    fn default() -> Self {
        VerifySpec { reps: 10 }
    }
}

/// One alternative of the search space: fixed overrides (e.g. a policy
/// kind) and the parameters that vary within it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AlternativeSpec {
    /// A name for outputs (default: `alternative <i>`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
    /// Overrides applied to the model before the parameters, in key order
    /// (so `policy` is applied before `policy.max_fails`). Values are JSON.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, Value>,
    /// The parameters: model paths with `values` or a `range`, as sweep
    /// axes; the alternative's candidates are their cartesian product.
    #[serde(default)]
    pub params: Vec<AxisSpec>,
}

/// A scenario: what the base model becomes for it.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// Names the scenario in objectives, constraints and outputs.
    pub name: String,
    /// Free text for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Replaces the model's `faults` (the same objects as in a model file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<Vec<Value>>,
    /// `--set` overrides, `PATH=VALUE` as on the command line, applied after
    /// the candidate's settings and `faults`, e.g. `clients.rate_per_s=10000`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
}

/// A statistic over the replications.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Stat {
    #[default]
    Mean,
    Median,
    Min,
    Max,
}

impl Stat {
    pub fn name(self) -> &'static str {
        match self {
            Stat::Mean => "mean",
            Stat::Median => "median",
            Stat::Min => "min",
            Stat::Max => "max",
        }
    }
}

/// Minimize or maximize.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Goal {
    #[default]
    Minimize,
    Maximize,
}

/// One objective: a statistic of a metric in one scenario.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectiveSpec {
    /// Names it in outputs (default: `<metric>@<scenario>`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// A metric of a run, as a column of runs.csv (`client.errors`,
    /// `client.latency_ms.p999`, `nodes.A.first_ejection_delay_s`), or
    /// `nodes.*.<field>`: the sum over the nodes.
    pub metric: String,
    /// The scenario it is measured in.
    pub scenario: String,
    /// The statistic over the replications. Default `mean`.
    #[serde(default)]
    pub stat: Stat,
    /// Default `minimize`.
    #[serde(default)]
    pub goal: Goal,
    /// The value of a replication that has none (a node never ejected has
    /// no `first_ejection_delay_s`), e.g. the fault's length. Default: such
    /// replications are left out, and a candidate with none counts as the worst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<f64>,
    /// Its weight in the `weighted` recommendation. Default 1.
    #[serde(default = "one_f64")]
    pub weight: f64,
}

fn one_f64() -> f64 {
    1.0
}

/// A comparison.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub enum Op {
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = "==")]
    Eq,
}

impl Op {
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Eq => "==",
        }
    }

    pub fn holds(self, x: f64, bound: f64) -> bool {
        match self {
            Op::Le => x <= bound,
            Op::Lt => x < bound,
            Op::Ge => x >= bound,
            Op::Gt => x > bound,
            Op::Eq => x == bound,
        }
    }
}

/// A constraint: `metric op bound` in one scenario, either in at least
/// `fraction` of the replications or, with `stat`, for that statistic.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConstraintSpec {
    /// A metric, as in objectives.
    pub metric: String,
    /// The scenario it is measured in.
    pub scenario: String,
    pub op: Op,
    pub bound: f64,
    /// The share of replications in which it must hold (without `stat`).
    /// Default 1: every replication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<f64>,
    /// Compare this statistic over the replications instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<Stat>,
    /// The value of a replication that has none. Default: such a
    /// replication does not meet the constraint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<f64>,
}

/// How one candidate is picked on the Pareto set.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Recommend {
    /// The lowest weighted sum of the objectives, each scaled to 0..1 over the Pareto set.
    #[default]
    Weighted,
    /// The best first objective; ties go to the second, and so on.
    Lexicographic,
}

/// Which objectives the frontier chart plots.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TuneChartSpec {
    /// An objective's name, on the x axis.
    pub x: String,
    /// An objective's name, on the y axis.
    pub y: String,
}
