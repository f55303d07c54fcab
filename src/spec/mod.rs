//! What is read from files: model files (`models/*.json`), sweep and tune files
//! (`sweeps/*.json`) as written (`*Spec` types), the dotted paths that
//! `--set` and sweep axes patch, the size limits, and the validation that
//! turns a [`ModelSpec`] into the [`Model`] a run simulates.

pub mod charts;
pub mod document;
pub mod gateway_flavors;
pub mod limits;
pub mod model;
pub mod schema;
pub mod sweep;
pub mod tune;
pub mod validate;

pub use charts::ChartSpec;
pub use document::{
    FileKind, MAX_FILE_BYTES, MAX_PATH_SEGMENTS, apply_sets, canonical_path, check_path_depth,
    file_kind, from_document, get_path, json_kind, load_with_overrides, note_sets, parse_set_value,
    read_document, set_path, shorten,
};
pub use model::*;
pub use sweep::{AxisSpec, RangeSpec, SeedMode, SweepSpec};
pub use tune::TuneSpec;
pub use validate::{Clients, Fault, FaultKind, Model, NextUpstreamMask};
