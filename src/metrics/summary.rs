//! The metrics of one run as it ended ([`RunSummary`]: the client's, each
//! node's, the timeline and the ejection log), and the overload warnings a
//! reader of them must see. The [`Recorder`](super::Recorder) makes them.

use crate::engine::SimDuration;
use crate::stats::{Histogram, round6};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Latency percentiles in milliseconds, over every request that ended: an
/// answer at the time the client got it (errors included), a client timeout
/// at the client's timeout. Requests still in flight at the end are not in
/// them; [`ClientSummary::unfinished`] counts those.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct LatencySummary {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    /// The 99.9th percentile.
    #[serde(default)]
    pub p999: Option<f64>,
    pub max: Option<f64>,
}

/// Microseconds to milliseconds, rounded for output.
pub(super) fn us_to_ms(us: f64) -> f64 {
    round6(us / 1000.0)
}

impl LatencySummary {
    pub(super) fn from_hist(h: &Histogram) -> Self {
        let ms = |v: Option<f64>| v.map(us_to_ms);
        LatencySummary {
            mean: ms(h.mean_us()),
            p50: ms(h.quantile_us(0.50)),
            p90: ms(h.quantile_us(0.90)),
            p99: ms(h.quantile_us(0.99)),
            p999: ms(h.quantile_us(0.999)),
            max: ms(h.max_us().map(|v| v as f64)),
        }
    }
}

/// The name of a latency threshold in `client.slower_than`: whole seconds,
/// else whole milliseconds, else microseconds (`"1s"`, `"100ms"`,
/// `"1500ms"`, `"250us"`), never with a dot, so that it is one segment of a
/// metric's dotted path.
pub fn threshold_label(d: SimDuration) -> String {
    let us = d.as_micros();
    if us > 0 && us % 1_000_000 == 0 {
        format!("{}s", us / 1_000_000)
    } else if us % 1_000 == 0 {
        format!("{}ms", us / 1_000)
    } else {
        format!("{us}us")
    }
}

/// What the clients saw (requests sent inside the measurement window).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct ClientSummary {
    pub requests: u64,
    /// Answered with a 2xx status.
    pub ok: u64,
    /// Answered with any other status (the gateway's 502/504, or a passed-through upstream status).
    pub errors: u64,
    /// The client gave up first (`clients.timeout`).
    pub timeouts: u64,
    /// Still in flight when the run ended.
    pub unfinished: u64,
    /// Answers by status code.
    pub status: BTreeMap<String, u64>,
    /// Latency of every request that ended (answers, errors and client
    /// timeouts), milliseconds.
    pub latency_ms: LatencySummary,
    /// Requests that ended and took longer than each of the model's
    /// `latency_thresholds` (by [`threshold_label`]); a client timeout counts
    /// at the client timeout.
    #[serde(default)]
    pub slower_than: BTreeMap<String, u64>,
}

fn is_nought(x: &u64) -> bool {
    *x == 0
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// One node as a fleet of gateway replicas saw it. `first_ejection_delay_s`
/// is then the first replica's; each replica keeps its own ejections.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct NodeFleet {
    /// From the start of its first fault until the last replica ejected it
    /// (each replica's first ejection after the fault); `None` when some
    /// replica never did.
    pub last_ejection_delay_s: Option<f64>,
    /// Share of the replicas that ejected it at least once.
    pub replicas_ejected: f64,
    /// Time it spent ejected, summed over replicas (averaged over each
    /// replica's nginx workers), seconds.
    pub ejected_replica_s: f64,
}

/// What happened to one node. Written by the `Serialize` below (the fleet's
/// fields inline, as `#[serde(flatten)]` would place them) and read back by
/// the derived `Deserialize`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct NodeSummary {
    pub name: String,
    /// Upstream attempts the gateway made to it (first tries and retries).
    pub attempts: u64,
    /// Successful (2xx) answers from it that reached a client.
    pub answered: u64,
    /// `answered` / all successful answers.
    pub share: f64,
    /// Attempts the gateway charged as failures (nginx `NGX_PEER_FAILED`).
    pub failures: u64,
    /// Times it went from routable to ejected (summed over nginx workers).
    /// A node out of rotation from the start (a check whose nodes start
    /// down) is not counted.
    pub ejections: u64,
    /// Ejections that began while none of its faults was active.
    pub false_ejections: u64,
    /// Time it spent ejected, averaged over gateway workers, seconds.
    pub ejected_time_s: f64,
    /// From the start of its first fault to its first ejection after it.
    pub first_ejection_delay_s: Option<f64>,
    /// From the end of its last fault to its first successful answer after it.
    pub recovery_delay_s: Option<f64>,
    /// Attempts the gateway sent it while one of its faults was active.
    pub fault_attempts: u64,
    /// Of `fault_attempts`, those it answered with a 2xx that reached a client.
    pub fault_attempts_ok: u64,
    /// Active probes sent to it (all policies).
    pub probes: u64,
    /// `probes` per second of the measurement window: the load probing puts on it.
    pub probe_load_per_s: f64,
    /// Share of its worker capacity (workers × measurement window) spent
    /// serving probes (each HTTP probe's service time); absent without probes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub probe_share: f64,
    /// Busy workers / workers, averaged over the measurement window (a hung
    /// worker is busy): 1 means every worker was always occupied.
    #[serde(default)]
    pub utilization: f64,
    /// The longest its accept queue (connections waiting for a worker) grew
    /// during the measurement window.
    #[serde(default)]
    pub peak_queue: u64,
    /// Attempts whose connection its full accept queue (`backlog`) dropped;
    /// the gateway then waits for its connect timeout.
    #[serde(default)]
    pub backlog_refused: u64,
    /// With `gateway.replicas` above 1: how the fleet of gateways saw it.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<NodeFleet>,
    /// With connections kept for reuse (`gateway.pool`): opened, reused,
    /// failures by cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<super::NodeConnections>,
    /// With `gateway.slow_start`: the ramps it began (returns to service,
    /// summed over gateway scopes' views, one per readmission notice).
    #[serde(default, skip_serializing_if = "is_nought")]
    pub warmups: u64,
    /// With `gateway.slow_start`: its share of the picks made (of counted
    /// requests, in its replica's scopes) while it was warming up; absent
    /// if it never was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_share: Option<f64>,
}

/// The fields in the order the struct declares them, `fleet`'s inline: the
/// text serde's derive writes, as a struct rather than a map (a flattened
/// field makes the derive write a map, whose keys a writer must treat as
/// arbitrary strings: a third of the cost of a 1,000-node `summary.json`).
impl Serialize for NodeSummary {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let len = 17
            + usize::from(!is_zero(&self.probe_share))
            + 3 * usize::from(self.fleet.is_some())
            + usize::from(self.connections.is_some())
            + usize::from(!is_nought(&self.warmups))
            + usize::from(self.warmup_share.is_some());
        let mut st = s.serialize_struct("NodeSummary", len)?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field("attempts", &self.attempts)?;
        st.serialize_field("answered", &self.answered)?;
        st.serialize_field("share", &self.share)?;
        st.serialize_field("failures", &self.failures)?;
        st.serialize_field("ejections", &self.ejections)?;
        st.serialize_field("false_ejections", &self.false_ejections)?;
        st.serialize_field("ejected_time_s", &self.ejected_time_s)?;
        st.serialize_field("first_ejection_delay_s", &self.first_ejection_delay_s)?;
        st.serialize_field("recovery_delay_s", &self.recovery_delay_s)?;
        st.serialize_field("fault_attempts", &self.fault_attempts)?;
        st.serialize_field("fault_attempts_ok", &self.fault_attempts_ok)?;
        st.serialize_field("probes", &self.probes)?;
        st.serialize_field("probe_load_per_s", &self.probe_load_per_s)?;
        if !is_zero(&self.probe_share) {
            st.serialize_field("probe_share", &self.probe_share)?;
        }
        st.serialize_field("utilization", &self.utilization)?;
        st.serialize_field("peak_queue", &self.peak_queue)?;
        st.serialize_field("backlog_refused", &self.backlog_refused)?;
        if let Some(f) = &self.fleet {
            st.serialize_field("last_ejection_delay_s", &f.last_ejection_delay_s)?;
            st.serialize_field("replicas_ejected", &f.replicas_ejected)?;
            st.serialize_field("ejected_replica_s", &f.ejected_replica_s)?;
        }
        if let Some(c) = &self.connections {
            st.serialize_field("connections", c)?;
        }
        if !is_nought(&self.warmups) {
            st.serialize_field("warmups", &self.warmups)?;
        }
        if let Some(w) = &self.warmup_share {
            st.serialize_field("warmup_share", w)?;
        }
        st.end()
    }
}

/// Durations of probing rounds (a prober that probes all nodes in rounds).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct RoundSummary {
    /// Rounds that finished during the run.
    pub rounds: u64,
    pub min_s: Option<f64>,
    pub median_s: Option<f64>,
    pub max_s: Option<f64>,
}

/// The metrics of one run.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct RunSummary {
    pub model: String,
    pub seed: u64,
    /// Where the run started within nginx's wall-clock second.
    pub clock_phase_s: f64,
    pub duration_s: f64,
    pub measure_from_s: f64,
    pub measure_to_s: f64,
    /// Events processed by the engine.
    pub events: u64,
    pub client: ClientSummary,
    pub nodes: Vec<NodeSummary>,
    /// From each round's start to its last probe's result.
    pub probe_rounds: RoundSummary,
    /// What makes the run's figures suspect ([`overload_warnings`]).
    #[serde(default)]
    pub warnings: Vec<Warning>,
    /// When a model has a fault whose `at` is a distribution: each fault's
    /// start in this run, seconds (a start past `duration_s` did not happen).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fault_start_s: Vec<f64>,
    /// When nodes are pods: restarts, and each rolling update's errors by cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<super::pods::RunPods>,
    /// With a hash balancer (`ip_hash`, `hash`, `source`): how many answers
    /// came from a node other than their client key's home.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<KeysSummary>,
    /// With HAProxy's queues (`flavor: haproxy` and some node's
    /// `max_conns`): requests that waited for a connection slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queues: Option<QueueSummary>,
    /// Per-bucket counts over the whole run (written to `timeline.csv`).
    #[serde(skip)]
    pub timeline: Timeline,
    /// Every ejection interval (written to `ejections.csv`).
    #[serde(skip)]
    pub ejection_log: Vec<EjectionRecord>,
    /// With `--per-replica`: each gateway replica's node table (its own
    /// attempts, answers, failures and ejections; written to `replicas.csv`).
    #[serde(skip)]
    pub replicas: Vec<Vec<NodeSummary>>,
}

/// What an ejection costs in stickiness: of the requests answered by a node
/// in the measurement window, those answered by another node than their
/// client key's home (the node the hash picks with every node up).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct KeysSummary {
    /// Requests answered by a node (any status it sent).
    pub answered: u64,
    /// Of those, answered by another node than their key's home.
    pub off_home: u64,
    /// `off_home / answered` (0 with no answer).
    pub off_home_share: f64,
}

/// HAProxy's backend and server queues over the run: requests sent inside
/// the measurement window.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct QueueSummary {
    /// Times a request joined a queue (all its servers full, or its
    /// cookie's server full).
    pub queued: u64,
    /// Of those, requests that left it with a connection slot.
    pub served: u64,
    /// Requests answered 503 when `timeout queue` expired (`sQ`).
    pub timeouts: u64,
    /// Requests whose client gave up while they were queued.
    pub abandoned: u64,
    /// The longest time a request spent queued, seconds.
    pub max_wait_s: f64,
}

/// Something a reader of the figures must know, as `summary.json` lists it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Warning {
    /// `overload`: a node's workers or accept queue, or the run's in-flight
    /// requests, were past what the model can measure faithfully.
    pub code: String,
    pub message: String,
}

/// A node whose workers are busy more than this share of the measured time is overloaded.
pub const BUSY_LIMIT: f64 = 0.95;
/// A run that ends with more than this share of its requests in flight is overloaded.
pub const UNFINISHED_LIMIT: f64 = 0.01;

/// The `overload` warnings of `runs` (replications of one model): a node
/// whose utilization exceeds [`BUSY_LIMIT`], a node whose accept queue
/// overflowed, more than [`UNFINISHED_LIMIT`] of the requests unfinished at
/// the end. Over several runs a message gives the worst run's figure and in
/// how many runs it happened.
pub fn overload_warnings(runs: &[RunSummary]) -> Vec<Warning> {
    let Some(first) = runs.first() else {
        return vec![];
    };
    let n = runs.len();
    let of_runs = |k: usize| {
        if n == 1 {
            String::new()
        } else {
            format!(" (in {k} of {n} runs)")
        }
    };
    let mut out = vec![];
    let mut warn = |message: String| {
        out.push(Warning {
            code: "overload".into(),
            message,
        })
    };
    for (i, node) in first.nodes.iter().enumerate() {
        let nodes = || runs.iter().filter_map(|r| r.nodes.get(i));
        let busy: Vec<f64> = nodes()
            .map(|x| x.utilization)
            .filter(|&u| u > BUSY_LIMIT)
            .collect();
        if let Some(worst) = busy.iter().copied().reduce(f64::max) {
            warn(format!(
                "node {}: workers busy {:.1}% of the measured time (over {:.0}%){}",
                node.name,
                worst * 100.0,
                BUSY_LIMIT * 100.0,
                of_runs(busy.len())
            ));
        }
        let full: Vec<(u64, u64)> = nodes()
            .filter(|x| x.backlog_refused > 0)
            .map(|x| (x.backlog_refused, x.peak_queue))
            .collect();
        if let Some(&(dropped, peak)) = full.iter().max() {
            warn(format!(
                "node {}: accept queue full ({peak} waiting): {dropped} connections dropped{}",
                node.name,
                of_runs(full.len())
            ));
        }
    }
    let unfinished: Vec<(u64, f64)> = runs
        .iter()
        .filter(|r| r.client.requests > 0)
        .map(|r| {
            let c = &r.client;
            (c.unfinished, c.unfinished as f64 / c.requests as f64)
        })
        .filter(|&(_, share)| share > UNFINISHED_LIMIT)
        .collect();
    if let Some(&(count, share)) = unfinished.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
        warn(format!(
            "{:.1}% of requests ({count}) still unfinished at the end (over {:.0}%){}",
            share * 100.0,
            UNFINISHED_LIMIT * 100.0,
            of_runs(unfinished.len())
        ));
    }
    out
}

/// One ejection interval of one node in one gateway scope.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct EjectionRecord {
    pub node: String,
    pub scope: u16,
    pub start_s: f64,
    /// `None`: still ejected when the run ended.
    pub end_s: Option<f64>,
}

/// Per-bucket counts: the data behind timeline charts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    pub bucket_s: f64,
    pub node_names: Vec<String>,
    pub rows: Vec<TimelineRow>,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct TimelineRow {
    pub t_s: f64,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub timeouts: u64,
    /// Median and 99th percentile latency (ms) of the requests that ended in
    /// the bucket (answers, errors, client timeouts); `None` if none did.
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    /// Per node: successful answers in the bucket.
    pub answered: Vec<u64>,
    /// Per node: attempts started in the bucket.
    pub attempts: Vec<u64>,
    /// Per node: attempts charged as failures in the bucket.
    pub failures: Vec<u64>,
    /// Per node: fraction of the bucket it was ejected, mean over scopes (with
    /// `gateway.replicas`: the share of replicas, and of their nginx workers,
    /// that kept it out).
    pub ejected: Vec<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where each key first appears in `text`, in order of appearance.
    fn key_order(text: &str, keys: &[&str]) -> Vec<usize> {
        keys.iter()
            .map(|k| {
                text.find(&format!("\"{k}\":"))
                    .unwrap_or_else(|| panic!("{k} missing"))
            })
            .collect()
    }

    /// `NodeSummary`'s hand-written `Serialize` writes every field, under its
    /// own name, in declaration order with the fleet's fields where
    /// `#[serde(flatten)]` put them; the derived `Deserialize` reads it back.
    /// (A field added to the struct breaks this literal, and the round trip
    /// fails until `Serialize` writes it.)
    #[test]
    fn a_node_summary_round_trips_with_every_field_in_order() {
        let n = NodeSummary {
            name: "a".into(),
            attempts: 1,
            answered: 2,
            share: 0.3,
            failures: 4,
            ejections: 5,
            false_ejections: 6,
            ejected_time_s: 0.7,
            first_ejection_delay_s: Some(0.8),
            recovery_delay_s: Some(0.9),
            fault_attempts: 10,
            fault_attempts_ok: 11,
            probes: 12,
            probe_load_per_s: 1.3,
            probe_share: 0.14,
            utilization: 0.15,
            peak_queue: 16,
            backlog_refused: 17,
            fleet: Some(NodeFleet {
                last_ejection_delay_s: Some(1.8),
                replicas_ejected: 0.19,
                ejected_replica_s: 2.0,
            }),
            connections: Some(Default::default()),
            warmups: 21,
            warmup_share: Some(0.22),
        };
        let text = serde_json::to_string(&n).unwrap();
        let back: NodeSummary = serde_json::from_str(&text).unwrap();
        assert_eq!(back, n);
        let order = key_order(
            &text,
            &[
                "name",
                "attempts",
                "answered",
                "share",
                "failures",
                "ejections",
                "false_ejections",
                "ejected_time_s",
                "first_ejection_delay_s",
                "recovery_delay_s",
                "fault_attempts",
                "fault_attempts_ok",
                "probes",
                "probe_load_per_s",
                "probe_share",
                "utilization",
                "peak_queue",
                "backlog_refused",
                "last_ejection_delay_s",
                "replicas_ejected",
                "ejected_replica_s",
                "connections",
                "warmups",
                "warmup_share",
            ],
        );
        assert!(order.is_sorted(), "{text}");
        let bare = NodeSummary {
            name: "b".into(),
            ..Default::default()
        };
        let text = serde_json::to_string(&bare).unwrap();
        for absent in ["probe_share", "replicas_ejected", "connections", "warmup"] {
            assert!(!text.contains(absent), "{text}");
        }
        assert_eq!(serde_json::from_str::<NodeSummary>(&text).unwrap(), bare);
    }
}
