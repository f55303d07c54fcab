//! A run's pods (`pods`, `nodes[].pod` in the model): `summary.json`'s
//! `pods` section per run, and the events of `pods.csv`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The pods of one run.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct RunPods {
    /// Container restarts in all (liveness, startup, crashes).
    pub restarts: u64,
    /// One per rolling update of the model, in the model's order.
    pub deploys: Vec<DeploySummary>,
    /// While some container restarts: from its kill (or its exit, for a
    /// crash) until the gateway lists its pod again.
    pub during_restarts: RestartErrors,
    /// Per node slot.
    pub nodes: Vec<NodePods>,
    /// What happened to each pod, in time order (`pods.csv`).
    #[serde(skip)]
    pub events: Vec<PodEvent>,
}

/// One node slot's pods.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct NodePods {
    pub name: String,
    /// Container restarts in this slot.
    pub restarts: u64,
}

/// One rolling update, from its start until it is complete and no gateway
/// replica routes to its old pods any more (its window).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct DeploySummary {
    pub start_s: f64,
    /// Until the update was complete (`null`: not within the run).
    pub duration_s: Option<f64>,
    /// The window the figures below count in, seconds.
    pub window_s: f64,
    /// Requests that ended in the window with an error status.
    pub client_errors: u64,
    /// Requests the client gave up on in the window.
    pub client_timeouts: u64,
    /// `client_errors` by status.
    pub status: BTreeMap<String, u64>,
    /// Upstream attempts that failed in the window, by cause.
    pub attempts_failed: AttemptCauses,
    /// Requests a killed process held (in service or waiting for a worker).
    pub in_flight_cut: u64,
    pub pods_created: u64,
    pub pods_deleted: u64,
}

/// What the clients and the gateway saw while containers restarted
/// (windows of several restarts that overlap count once).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct RestartErrors {
    pub attempts_failed: AttemptCauses,
    pub client_errors: u64,
    pub client_timeouts: u64,
    pub in_flight_cut: u64,
    pub status: BTreeMap<String, u64>,
    /// The time some restart window was open, seconds.
    pub window_s: f64,
}

/// Failed upstream attempts by cause.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct AttemptCauses {
    pub refused: u64,
    pub reset: u64,
    pub connect_timeout: u64,
    pub read_timeout: u64,
    /// Answered with a status of 500 or more.
    pub error_status: u64,
}

/// A line of `pods.csv`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodEvent {
    pub t_s: f64,
    /// The node slot.
    pub node: u32,
    pub what: &'static str,
    pub detail: String,
}
