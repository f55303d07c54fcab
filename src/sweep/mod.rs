//! Parameter sweeps: a [`SweepSpec`](crate::spec::SweepSpec) (`sweeps/*.json`),
//! or a model and `--param PATH=LIST` arguments ([`params`]), expands into a
//! [`Plan`] of points × replications ([`axes`], [`plan`]); runs
//! go in parallel and are checkpointed as they finish ([`runner`],
//! [`journal`]); one shard of a distributed sweep ([`shard`]) writes a
//! `runs.jsonl` that [`merge`] combines. [`table`] flattens the runs'
//! metrics into the columns that the output layer writes (`output::sweep`).
//!
//! Determinism: run `i` of a sweep is point `i / reps`, replication `i % reps`,
//! and its seed depends only on the sweep's seed, the point and the
//! replication. Results are tagged with `i` and sorted before anything is
//! written, so outputs are byte-identical whatever `--jobs`, `--shard` or
//! `--resume` did.

pub mod axes;
pub mod journal;
pub mod lock;
pub mod merge;
pub mod params;
pub mod plan;
pub mod runner;
pub mod shard;
pub mod table;

pub use axes::{Axis, Column, MAX_AXIS_VALUES, cell_text, fmt_f64, fmt_number};
pub use journal::{RUNS_FILE, RunRecord, RunSource};
pub use lock::DirLock;
pub use plan::{MAX_POINTS, Overrides, Plan, PlanHeader};
pub use runner::Session;
pub use shard::Shard;
pub use table::{ColumnSet, Columns, FlatRun, MetricTable, flatten_run, metric_table};
