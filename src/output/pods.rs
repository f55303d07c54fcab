//! A pod model's figures over the replications (`pods`, `nodes[].pod`):
//! `summary.json`'s `pods` section and the table's block for it.

use crate::metrics::RunSummary;
use crate::metrics::pods::{AttemptCauses, DeploySummary, RestartErrors, RunPods};
use crate::stats::Spread;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// [`RunPods`] over the runs (fields in the file's order).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct PodStats {
    pub deploys: Vec<DeployStats>,
    /// While containers restarted ([`RestartErrors`]).
    pub during_restarts: RestartStats,
    /// Per node slot: container restarts.
    pub nodes: Vec<NodePodStats>,
    pub restarts: Spread,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct NodePodStats {
    pub name: String,
    pub restarts: Spread,
}

/// [`RestartErrors`] over the runs.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct RestartStats {
    pub attempts_failed: BTreeMap<String, Spread>,
    pub client_errors: Spread,
    pub client_timeouts: Spread,
    pub in_flight_cut: Spread,
    pub status: BTreeMap<String, Spread>,
    pub window_s: Spread,
}

/// Failed attempts by cause, over the runs.
fn causes(c: &[&AttemptCauses]) -> BTreeMap<String, Spread> {
    let a = |f: fn(&AttemptCauses) -> u64| spread(c.iter().map(|x| f(x) as f64));
    [
        ("connect_timeout", a(|x| x.connect_timeout)),
        ("error_status", a(|x| x.error_status)),
        ("read_timeout", a(|x| x.read_timeout)),
        ("refused", a(|x| x.refused)),
        ("reset", a(|x| x.reset)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Counts by status, over the runs (0 where a run had none).
fn statuses(s: &[&BTreeMap<String, u64>]) -> BTreeMap<String, Spread> {
    let mut codes: Vec<&String> = s.iter().flat_map(|x| x.keys()).collect();
    codes.sort();
    codes.dedup();
    codes
        .into_iter()
        .map(|c| {
            let v = spread(s.iter().map(|x| *x.get(c).unwrap_or(&0) as f64));
            (c.clone(), v)
        })
        .collect()
}

/// One rolling update over the runs ([`DeploySummary`]).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct DeployStats {
    pub attempts_failed: BTreeMap<String, Spread>,
    pub client_errors: Spread,
    pub client_timeouts: Spread,
    pub duration_s: Spread,
    pub in_flight_cut: Spread,
    pub start_s: Spread,
    pub status: BTreeMap<String, Spread>,
    pub window_s: Spread,
}

fn spread(xs: impl Iterator<Item = f64>) -> Spread {
    Spread::of(&xs.collect::<Vec<_>>())
}

impl PodStats {
    /// The runs' pods; `None` when the model has none.
    pub fn of(runs: &[RunSummary]) -> Option<PodStats> {
        let pods: Vec<&RunPods> = runs.iter().filter_map(|r| r.pods.as_ref()).collect();
        let first = pods.first()?;
        let deploys = (0..first.deploys.len())
            .map(|i| {
                let d: Vec<&DeploySummary> = pods.iter().filter_map(|p| p.deploys.get(i)).collect();
                let a = |f: fn(&DeploySummary) -> u64| spread(d.iter().map(|x| f(x) as f64));
                DeployStats {
                    attempts_failed: causes(
                        &d.iter().map(|x| &x.attempts_failed).collect::<Vec<_>>(),
                    ),
                    client_errors: a(|x| x.client_errors),
                    client_timeouts: a(|x| x.client_timeouts),
                    duration_s: Spread::of_options(d.iter().map(|x| x.duration_s)),
                    in_flight_cut: a(|x| x.in_flight_cut),
                    start_s: spread(d.iter().map(|x| x.start_s)),
                    status: statuses(&d.iter().map(|x| &x.status).collect::<Vec<_>>()),
                    window_s: spread(d.iter().map(|x| x.window_s)),
                }
            })
            .collect();
        let nodes = (0..first.nodes.len())
            .map(|i| NodePodStats {
                name: first.nodes[i].name.clone(),
                restarts: spread(pods.iter().map(|p| p.nodes[i].restarts as f64)),
            })
            .collect();
        let r: Vec<&RestartErrors> = pods.iter().map(|p| &p.during_restarts).collect();
        let a = |f: fn(&RestartErrors) -> u64| spread(r.iter().map(|x| f(x) as f64));
        let during_restarts = RestartStats {
            attempts_failed: causes(&r.iter().map(|x| &x.attempts_failed).collect::<Vec<_>>()),
            client_errors: a(|x| x.client_errors),
            client_timeouts: a(|x| x.client_timeouts),
            in_flight_cut: a(|x| x.in_flight_cut),
            status: statuses(&r.iter().map(|x| &x.status).collect::<Vec<_>>()),
            window_s: spread(r.iter().map(|x| x.window_s)),
        };
        Some(PodStats {
            deploys,
            during_restarts,
            nodes,
            restarts: spread(pods.iter().map(|p| p.restarts as f64)),
        })
    }
}
