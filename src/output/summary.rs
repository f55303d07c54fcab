//! `summary.json`: what `hcsim run` writes and prints with `--format json`,
//! as a typed document. The table, the charts and report.html read it back
//! through [`Summary`], so renaming a field is a compile error, not a silently
//! empty chart.

use crate::engine::SimDuration;
use crate::error::Error;
use crate::metrics::{LatencySummary, NodeSummary, RunSummary, Warning, overload_warnings};
use crate::spec::{Fault, Model, ModelSpec, Override};
use crate::stats::{Spread, round6};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The document `hcsim run` writes to `summary.json`. Every metric of
/// [`RunSummary`] appears under the same name as a [`Spread`] over the
/// replications; `runs` holds each replication's own summary.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Summary {
    pub hcsim_version: String,
    pub model: String,
    pub file: String,
    /// The command that reproduces this report (options that change results only).
    pub command: String,
    pub seed: u64,
    pub reps: usize,
    pub set: Vec<String>,
    pub client: ClientStats,
    pub nodes: Vec<NodeStats>,
    /// When nodes are pods: restarts, and each rolling update's errors by cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<super::pods::PodStats>,
    /// With a hash balancer: the answers off their client key's home node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<KeyStats>,
    /// With HAProxy's queues (`flavor: haproxy` and some node's
    /// `max_conns`): the requests that waited for a connection slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queues: Option<QueueStats>,
    /// With `--per-replica`: per gateway replica, its node table over the
    /// replications (that replica's own attempts, answers and ejections).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_replica: Vec<Vec<NodeStats>>,
    pub clock_phase_s: Spread,
    pub events: Spread,
    /// Fault windows, for charts.
    pub faults: Vec<FaultWindow>,
    /// The model as simulated, every default filled in.
    #[serde(serialize_with = "sorted_model")]
    pub model_spec: std::sync::Arc<ModelSpec>,
    pub probe_rounds: RoundStats,
    /// Overload and other reasons to doubt the figures, over the replications.
    #[serde(default)]
    pub warnings: Vec<Warning>,
    pub runs: Vec<RunSummary>,
}

/// [`KeysSummary`](crate::metrics::KeysSummary) over the replications: how
/// many answers came from another node than their key's home (the node the
/// hash picks with every node up).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct KeyStats {
    pub answered: Spread,
    pub off_home: Spread,
    pub off_home_share: Spread,
}

impl KeyStats {
    fn of(runs: &[RunSummary]) -> Option<KeyStats> {
        runs.first()?.keys?;
        let k = |f: fn(&crate::metrics::KeysSummary) -> f64| {
            over_some(runs, |r| r.keys.as_ref().map(f))
        };
        Some(KeyStats {
            answered: k(|k| k.answered as f64),
            off_home: k(|k| k.off_home as f64),
            off_home_share: k(|k| k.off_home_share),
        })
    }
}

/// [`QueueSummary`](crate::metrics::QueueSummary) over the replications:
/// HAProxy's backend and server queues.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct QueueStats {
    pub queued: Spread,
    pub served: Spread,
    pub timeouts: Spread,
    pub abandoned: Spread,
    pub max_wait_s: Spread,
}

impl QueueStats {
    fn of(runs: &[RunSummary]) -> Option<QueueStats> {
        runs.first()?.queues?;
        let q = |f: fn(&crate::metrics::QueueSummary) -> f64| {
            over_some(runs, |r| r.queues.as_ref().map(f))
        };
        Some(QueueStats {
            queued: q(|q| q.queued as f64),
            served: q(|q| q.served as f64),
            timeouts: q(|q| q.timeouts as f64),
            abandoned: q(|q| q.abandoned as f64),
            max_wait_s: q(|q| q.max_wait_s),
        })
    }
}

/// What the clients saw, over the replications (fields in the file's order).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct ClientStats {
    pub errors: Spread,
    pub latency_ms: LatencyStats,
    pub ok: Spread,
    pub requests: Spread,
    /// Requests slower than each latency threshold (`100ms`, `1s`).
    #[serde(default)]
    pub slower_than: BTreeMap<String, Spread>,
    /// By status code; a code missing in a replication counts as absent, not zero.
    pub status: BTreeMap<String, Spread>,
    pub timeouts: Spread,
    pub unfinished: Spread,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct LatencyStats {
    pub max: Spread,
    pub mean: Spread,
    pub p50: Spread,
    pub p90: Spread,
    pub p99: Spread,
    #[serde(default)]
    pub p999: Spread,
}

/// One node over the replications (fields in the file's order). Written by
/// the `Serialize` below, read back by the derived `Deserialize`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct NodeStats {
    pub answered: Spread,
    pub attempts: Spread,
    #[serde(default)]
    pub backlog_refused: Spread,
    /// With `gateway.pool`: connections opened, reused, failures by cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // Boxed, as `fleet`: a run without them keeps 800 bytes a node less
    // (a summary of 10,000 nodes, 8 MB less to touch).
    pub connections: Option<Box<super::connections::ConnStats>>,
    pub ejected_time_s: Spread,
    pub ejections: Spread,
    pub failures: Spread,
    pub false_ejections: Spread,
    pub fault_attempts: Spread,
    pub fault_attempts_ok: Spread,
    pub first_ejection_delay_s: Spread,
    pub name: String,
    #[serde(default)]
    pub peak_queue: Spread,
    pub probe_load_per_s: Spread,
    /// Absent when no run probed the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_share: Option<Spread>,
    pub probes: Spread,
    pub recovery_delay_s: Spread,
    pub share: Spread,
    #[serde(default)]
    pub utilization: Spread,
    /// With `gateway.slow_start`: its share of the picks while it warmed
    /// up, over the runs in which it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_share: Option<Spread>,
    /// With `gateway.slow_start`: the ramps it began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmups: Option<Spread>,
    /// With gateway replicas: the fleet's view, over the runs.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<Box<FleetStats>>,
}

/// The fields in the order the struct declares them, `fleet`'s inline: the
/// text serde's derive writes, as a struct rather than a map (see
/// `NodeSummary`'s `Serialize`).
impl Serialize for NodeStats {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let len = 17
            + usize::from(self.connections.is_some())
            + usize::from(self.probe_share.is_some())
            + 3 * usize::from(self.fleet.is_some())
            + usize::from(self.warmup_share.is_some())
            + usize::from(self.warmups.is_some());
        let mut st = s.serialize_struct("NodeStats", len)?;
        st.serialize_field("answered", &self.answered)?;
        st.serialize_field("attempts", &self.attempts)?;
        st.serialize_field("backlog_refused", &self.backlog_refused)?;
        if let Some(c) = &self.connections {
            st.serialize_field("connections", c)?;
        }
        st.serialize_field("ejected_time_s", &self.ejected_time_s)?;
        st.serialize_field("ejections", &self.ejections)?;
        st.serialize_field("failures", &self.failures)?;
        st.serialize_field("false_ejections", &self.false_ejections)?;
        st.serialize_field("fault_attempts", &self.fault_attempts)?;
        st.serialize_field("fault_attempts_ok", &self.fault_attempts_ok)?;
        st.serialize_field("first_ejection_delay_s", &self.first_ejection_delay_s)?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field("peak_queue", &self.peak_queue)?;
        st.serialize_field("probe_load_per_s", &self.probe_load_per_s)?;
        if let Some(p) = &self.probe_share {
            st.serialize_field("probe_share", p)?;
        }
        st.serialize_field("probes", &self.probes)?;
        st.serialize_field("recovery_delay_s", &self.recovery_delay_s)?;
        st.serialize_field("share", &self.share)?;
        st.serialize_field("utilization", &self.utilization)?;
        if let Some(w) = &self.warmup_share {
            st.serialize_field("warmup_share", w)?;
        }
        if let Some(w) = &self.warmups {
            st.serialize_field("warmups", w)?;
        }
        if let Some(f) = &self.fleet {
            st.serialize_field("ejected_replica_s", &f.ejected_replica_s)?;
            st.serialize_field("last_ejection_delay_s", &f.last_ejection_delay_s)?;
            st.serialize_field("replicas_ejected", &f.replicas_ejected)?;
        }
        st.end()
    }
}

/// [`NodeFleet`](crate::metrics::NodeFleet) over the runs.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct FleetStats {
    pub ejected_replica_s: Spread,
    /// Over the runs in which every replica ejected the node.
    pub last_ejection_delay_s: Spread,
    pub replicas_ejected: Spread,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct RoundStats {
    pub max_s: Spread,
    pub median_s: Spread,
    pub min_s: Spread,
    pub rounds: Spread,
}

/// One fault window as it appears in `summary.json`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FaultWindow {
    pub node: String,
    pub kind: String,
    pub start_s: f64,
    /// `None`: to the end of the run.
    pub end_s: Option<f64>,
    /// A fault whose `at` is a distribution: its start over the
    /// replications, seconds (each run's is in its `fault_start_s`);
    /// `start_s` and `end_s` are then those of the median start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_drawn_s: Option<Spread>,
}

/// Fault `i` as `summary.json` lists it: as the model gives it, or with
/// the median of the starts the runs drew.
fn fault_window(model: &Model, runs: &[RunSummary], i: usize, f: &Fault) -> FaultWindow {
    let node = model.nodes[f.node.index()].name.clone();
    let kind = f.kind.name().to_string();
    if f.phase.is_none() {
        return FaultWindow {
            node,
            kind,
            start_s: round6(f.start.as_secs_f64()),
            end_s: f.end.map(|e| round6(e.as_secs_f64())),
            start_drawn_s: None,
        };
    }
    let drawn = over_some(runs, |r| r.fault_start_s.get(i).copied());
    let median = drawn.median.unwrap_or(f.start.as_secs_f64());
    let (start, end) = f.window_at(SimDuration::from_secs_f64(median), model.end());
    FaultWindow {
        node,
        kind,
        start_s: round6(start.as_secs_f64()),
        end_s: end.map(|e| round6(e.as_secs_f64())),
        start_drawn_s: Some(drawn),
    }
}

/// A metric of every run, as a spread.
fn over<T>(runs: &[T], f: impl Fn(&T) -> f64) -> Spread {
    Spread::of_iter(runs.iter().map(f))
}

/// A metric that some runs lack, as a spread of those that have it.
fn over_some<T>(runs: &[T], f: impl Fn(&T) -> Option<f64>) -> Spread {
    Spread::of_options(runs.iter().map(f))
}

impl ClientStats {
    fn of(runs: &[RunSummary]) -> Self {
        let clients: Vec<_> = runs.iter().map(|r| &r.client).collect();
        let mut codes: Vec<&String> = clients.iter().flat_map(|c| c.status.keys()).collect();
        codes.sort();
        codes.dedup();
        let latency: Vec<&LatencySummary> = clients.iter().map(|c| &c.latency_ms).collect();
        ClientStats {
            errors: over(&clients, |c| c.errors as f64),
            latency_ms: LatencyStats {
                max: over_some(&latency, |l| l.max),
                mean: over_some(&latency, |l| l.mean),
                p50: over_some(&latency, |l| l.p50),
                p90: over_some(&latency, |l| l.p90),
                p99: over_some(&latency, |l| l.p99),
                p999: over_some(&latency, |l| l.p999),
            },
            ok: over(&clients, |c| c.ok as f64),
            requests: over(&clients, |c| c.requests as f64),
            slower_than: clients[0]
                .slower_than
                .keys()
                .map(|k| {
                    let spread = over_some(&clients, |c| c.slower_than.get(k).map(|&n| n as f64));
                    (k.clone(), spread)
                })
                .collect(),
            status: codes
                .into_iter()
                .map(|k| {
                    let spread = over_some(&clients, |c| c.status.get(k).map(|&n| n as f64));
                    (k.clone(), spread)
                })
                .collect(),
            timeouts: over(&clients, |c| c.timeouts as f64),
            unfinished: over(&clients, |c| c.unfinished as f64),
        }
    }
}

impl NodeStats {
    /// Node `i` over the runs.
    fn of(runs: &[RunSummary], i: usize) -> Self {
        let nodes: Vec<&NodeSummary> = runs.iter().map(|r| &r.nodes[i]).collect();
        Self::over(&nodes)
    }

    /// One node's summaries (one per run) over the runs.
    fn over(nodes: &[&NodeSummary]) -> Self {
        let count = |f: fn(&NodeSummary) -> u64| over(nodes, |n| f(n) as f64);
        NodeStats {
            answered: count(|n| n.answered),
            attempts: count(|n| n.attempts),
            backlog_refused: count(|n| n.backlog_refused),
            connections: super::connections::ConnStats::over(nodes).map(Box::new),
            ejected_time_s: over(nodes, |n| n.ejected_time_s),
            ejections: count(|n| n.ejections),
            failures: count(|n| n.failures),
            false_ejections: count(|n| n.false_ejections),
            fault_attempts: count(|n| n.fault_attempts),
            fault_attempts_ok: count(|n| n.fault_attempts_ok),
            first_ejection_delay_s: over_some(nodes, |n| n.first_ejection_delay_s),
            name: nodes[0].name.clone(),
            peak_queue: count(|n| n.peak_queue),
            probe_load_per_s: over(nodes, |n| n.probe_load_per_s),
            probe_share: Some(over(nodes, |n| n.probe_share)).filter(|s| !s.is_zero()),
            probes: count(|n| n.probes),
            recovery_delay_s: over_some(nodes, |n| n.recovery_delay_s),
            share: over(nodes, |n| n.share),
            utilization: over(nodes, |n| n.utilization),
            warmup_share: nodes
                .iter()
                .any(|n| n.warmup_share.is_some())
                .then(|| over_some(nodes, |n| n.warmup_share)),
            warmups: nodes
                .iter()
                .any(|n| n.warmups > 0)
                .then(|| count(|n| n.warmups)),
            fleet: nodes[0].fleet.is_some().then(|| {
                let fleets: Vec<_> = nodes.iter().filter_map(|n| n.fleet.as_ref()).collect();
                Box::new(FleetStats {
                    ejected_replica_s: over(&fleets, |f| f.ejected_replica_s),
                    last_ejection_delay_s: over_some(&fleets, |f| f.last_ejection_delay_s),
                    replicas_ejected: over(&fleets, |f| f.replicas_ejected),
                })
            }),
        }
    }
}

/// `model_spec` as written: every object's keys sorted, the model's own
/// given in that order to begin with.
fn sorted_model<S: serde::Serializer>(m: &ModelSpec, s: S) -> Result<S::Ok, S::Error> {
    super::json::sorted(&crate::spec::SortedModel::of(m), s)
}

impl Summary {
    /// The summary of `runs`, replications of `model` from `file` with
    /// `--seed seed` and the `--set` overrides `set`.
    pub fn new(
        model: &Model,
        file: &Path,
        seed: u64,
        set: &[Override],
        runs: Vec<RunSummary>,
    ) -> Self {
        assert!(!runs.is_empty(), "a summary needs at least one run");
        let mut command = format!(
            "hcsim run {} --seed {seed} --reps {}",
            file.display(),
            runs.len()
        );
        for s in set {
            command.push_str(&format!(" --set '{}'", s.text()));
        }
        let rounds: Vec<_> = runs.iter().map(|r| &r.probe_rounds).collect();
        Summary {
            hcsim_version: env!("CARGO_PKG_VERSION").to_string(),
            model: model.name.clone(),
            file: file.display().to_string(),
            command,
            seed,
            reps: runs.len(),
            set: Override::texts(set),
            client: ClientStats::of(&runs),
            nodes: (0..runs[0].nodes.len())
                .map(|i| NodeStats::of(&runs, i))
                .collect(),
            pods: super::pods::PodStats::of(&runs),
            keys: KeyStats::of(&runs),
            queues: QueueStats::of(&runs),
            per_replica: (0..runs[0].replicas.len())
                .map(|r| {
                    (0..runs[0].replicas[r].len())
                        .map(|i| {
                            let nodes: Vec<&NodeSummary> =
                                runs.iter().map(|run| &run.replicas[r][i]).collect();
                            NodeStats::over(&nodes)
                        })
                        .collect()
                })
                .collect(),
            clock_phase_s: over(&runs, |r| r.clock_phase_s),
            events: over(&runs, |r| r.events as f64),
            faults: model
                .faults
                .iter()
                .enumerate()
                .map(|(i, f)| fault_window(model, &runs, i, f))
                .collect(),
            model_spec: model.spec.clone(),
            probe_rounds: RoundStats {
                max_s: over_some(&rounds, |r| r.max_s),
                median_s: over_some(&rounds, |r| r.median_s),
                min_s: over_some(&rounds, |r| r.min_s),
                rounds: over(&rounds, |r| r.rounds as f64),
            },
            warnings: overload_warnings(&runs),
            runs,
        }
    }

    /// The document as written: pretty JSON and a final newline.
    pub fn to_json(&self) -> String {
        // About 3 KB per node; a buffer of the right size is not regrown.
        let capacity = 16 * 1024 + 3 * 1024 * self.nodes.len() * (1 + self.runs.len());
        let mut json = super::json::to_string_pretty_with_capacity(self, capacity)
            .expect("a summary serializes");
        json.push('\n');
        json
    }

    /// [`Summary::to_json`]'s text, written to `sink` as it is made.
    pub fn write_json(&self, sink: &mut dyn std::io::Write) -> std::io::Result<()> {
        super::json::to_writer_pretty(self, sink)?;
        sink.write_all(b"\n")
    }

    /// Reads `summary.json` back (for charts and reports).
    pub fn read(path: &Path) -> Result<Summary, Error> {
        let doc = crate::spec::read_document(path)?;
        crate::spec::from_document(&doc, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn keys(v: &Value) -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    }

    /// Every metric of a run summary has its spread in `summary.json`: a field
    /// added to `RunSummary` must be added here too.
    #[test]
    fn every_run_metric_is_summarized() {
        let model = crate::spec::Model::from_document(
            &serde_json::json!({
                "name": "t", "duration": "2s",
                "clients": {"kind": "open", "rate_per_s": 50.0},
                "nodes": [{"name": "a"}, {"name": "b"}],
                "faults": [{"kind": "flaky", "node": "a", "p": 0.5}]
            }),
            Path::new("t.json"),
        )
        .unwrap();
        let runs: Vec<RunSummary> = (0..3).map(|s| crate::world::run(&model, s)).collect();
        let run = serde_json::to_value(&runs[0]).unwrap();
        let summary = Summary::new(&model, Path::new("t.json"), 0, &[], runs);
        let doc = serde_json::to_value(&summary).unwrap();
        for section in ["client", "probe_rounds"] {
            assert_eq!(keys(&doc[section]), keys(&run[section]), "{section}");
        }
        assert_eq!(keys(&doc["nodes"][0]), keys(&run["nodes"][0]));
        assert_eq!(
            keys(&doc["client"]["latency_ms"]),
            keys(&run["client"]["latency_ms"])
        );
        assert_eq!(doc["client"]["status"]["503"]["n"], 3);
        let back: Summary = serde_json::from_str(&summary.to_json()).unwrap();
        assert_eq!(back.nodes, summary.nodes);
        // the timeline and ejection log are not in summary.json (they have CSV files)
        assert_eq!(back.to_json(), summary.to_json());
    }

    /// `NodeStats`'s hand-written `Serialize` writes every field under its
    /// own name, in the file's (sorted) order with the fleet's fields last,
    /// as `#[serde(flatten)]` placed them; the derived `Deserialize` reads it
    /// back. (A field added to the struct breaks this literal.)
    #[test]
    fn node_stats_round_trip_with_every_field_in_order() {
        let s = |n: usize| Spread {
            max: Some(n as f64),
            mean: None,
            median: Some(0.5),
            min: Some(0.0),
            n,
        };
        let n = NodeStats {
            answered: s(1),
            attempts: s(2),
            backlog_refused: s(3),
            connections: Some(Default::default()),
            ejected_time_s: s(4),
            ejections: s(5),
            failures: s(6),
            false_ejections: s(7),
            fault_attempts: s(8),
            fault_attempts_ok: s(9),
            first_ejection_delay_s: s(10),
            name: "a".into(),
            peak_queue: s(11),
            probe_load_per_s: s(12),
            probe_share: Some(s(13)),
            probes: s(14),
            recovery_delay_s: s(15),
            share: s(16),
            utilization: s(17),
            warmup_share: Some(s(21)),
            warmups: Some(s(22)),
            fleet: Some(Box::new(FleetStats {
                ejected_replica_s: s(18),
                last_ejection_delay_s: s(19),
                replicas_ejected: s(20),
            })),
        };
        let text = crate::output::json::to_string_pretty(&n).unwrap();
        assert_eq!(text, serde_json::to_string_pretty(&n).unwrap());
        let back: NodeStats = serde_json::from_str(&text).unwrap();
        assert_eq!(back, n);
        let keys = [
            "answered",
            "attempts",
            "backlog_refused",
            "connections",
            "ejected_time_s",
            "ejections",
            "failures",
            "false_ejections",
            "fault_attempts",
            "fault_attempts_ok",
            "first_ejection_delay_s",
            "name",
            "peak_queue",
            "probe_load_per_s",
            "probe_share",
            "probes",
            "recovery_delay_s",
            "share",
            "utilization",
            "warmup_share",
            "warmups",
            "ejected_replica_s",
            "last_ejection_delay_s",
            "replicas_ejected",
        ];
        let at: Vec<usize> = keys
            .iter()
            .map(|k| {
                text.find(&format!("\n  \"{k}\":"))
                    .unwrap_or_else(|| panic!("{k}"))
            })
            .collect();
        assert!(at.is_sorted(), "{text}");
        let bare = NodeStats::default();
        let text = serde_json::to_string(&bare).unwrap();
        for absent in ["probe_share", "replicas_ejected", "connections", "warmup"] {
            assert!(!text.contains(absent), "{text}");
        }
    }
}
