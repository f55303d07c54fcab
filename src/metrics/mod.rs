//! Metrics: the [`Recorder`] counts during a run (memory does not grow
//! with the number of requests) and yields a [`RunSummary`] afterwards;
//! [`path`] names a metric of a run summary, the one vocabulary of runs.csv,
//! points.csv, `hcsim compare`, tune objectives and charts.

pub mod connections;
pub mod path;
pub mod pods;
mod recorder;
mod replicas;
mod summary;

pub use connections::NodeConnections;
pub use recorder::Recorder;
pub use summary::*;
