//! What is read from files: model files (`models/*.json`), sweep and tune files
//! (`sweeps/*.json`) as written (`*Spec` types), the dotted paths that
//! `--set` and sweep axes patch, the size limits, and the validation that
//! turns a [`ModelSpec`] into the [`Model`] a run simulates.

pub mod balancer;
pub mod charts;
pub mod connection_checks;
pub mod connections;
pub mod distribution;
pub mod document;
pub mod flavor_checks;
mod flavour_checks;
pub mod flavours;
pub mod gateway_flavors;
pub mod haproxy;
pub mod limits;
pub mod model;
pub mod model_spec;
mod node_order;
pub mod overrides;
pub mod pods;
pub mod schedule;
pub mod schema;
pub mod slow_start;
pub mod sweep;
pub mod tune;
pub mod validate;
mod warnings;

pub use charts::ChartSpec;
pub use connections::{ClientConnection, PoolSpec};
pub use document::{
    FileKind, MAX_FILE_BYTES, apply_sets, canonical_path, check_path_depth, file_kind,
    from_document, get_path, json_kind, load_with_overrides, note_sets, read_document, set_path,
    shorten, shorten_to,
};
pub use flavours::{KongSpec, LinkerdSpec};
pub use haproxy::{
    HaproxyCookie, HaproxySpec, KERNEL_CONNECT_TIMEOUT, OnMarkedDown, OnMarkedUp, Redispatch,
};
pub use model::{Clients, Fault, FaultKind, Model, NextUpstreamMask};
pub use model_spec::*;
pub use node_order::{PRESORTED, SortedModel, with_sorted_keys};
pub use overrides::{FieldPath, MAX_PATH_SEGMENTS, Override};
pub use pods::Pods;
pub use slow_start::SlowStartSpec;
pub use sweep::{AxisSpec, RangeSpec, SeedMode, SweepSpec};
pub use tune::TuneSpec;
