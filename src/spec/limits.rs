//! The sizes a model may have: what is allocated before the first event
//! (timeline rows, node workers, closed-loop clients, per-worker peer tables)
//! is bounded here, as a validation error. What a run would cost (events,
//! memory) is estimated before it starts, in the run layer (`run::cost`).

use super::model_spec::{ClientsSpec, ModelSpec};
use crate::engine::SimDuration;

/// Latency thresholds a model may name (`latency_thresholds`).
pub const MAX_LATENCY_THRESHOLDS: usize = 16;

/// Rows of `timeline.csv` (run duration / `timeline_bucket`).
pub const MAX_TIMELINE_ROWS: u64 = 1_000_000;
/// Timeline rows × nodes: each row holds four numbers per node.
pub const MAX_TIMELINE_CELLS: u64 = 20_000_000;
/// Worker threads of one node.
pub const MAX_NODE_WORKERS: u32 = 100_000;
/// Worker threads of all nodes together.
pub const MAX_TOTAL_NODE_WORKERS: u64 = 1_000_000;
/// Nodes of one upstream. Each request in flight keeps a bitmap of the nodes
/// it tried (2.5 KB at this size), and a pick costs O(log nodes).
pub const MAX_NODES: usize = 20_000;
/// Closed-loop clients.
pub const MAX_CONCURRENCY: u32 = 100_000;
/// Gateway replicas (`gateway.replicas`).
pub const MAX_REPLICAS: u32 = 10_000;
/// Gateway peer-state copies (replicas × nginx workers without `zone`) × nodes.
pub const MAX_PEER_STATES: u64 = 1 << 20;

/// Checks a number of nodes against [`MAX_NODES`] before any is made (a
/// model file is checked while it is read, an imported config's
/// `replicas` before one node per replica is built). `Err(reason)`.
pub fn check_node_count(n: u64) -> Result<(), String> {
    if n > MAX_NODES as u64 {
        return Err(format!(
            "at most {MAX_NODES} nodes are supported, found {n}"
        ));
    }
    Ok(())
}

/// Checks the sizes that are allocated before the first event. `Err((field,
/// reason))` names the field to change.
pub fn check_size(spec: &ModelSpec) -> Result<(), (String, String)> {
    let bucket_us = spec.bucket().as_micros().max(1);
    let rows = spec.duration.as_micros().div_ceil(bucket_us);
    let nodes = spec.nodes.len() as u64;
    if rows > MAX_TIMELINE_ROWS || rows.saturating_mul(nodes) > MAX_TIMELINE_CELLS {
        let min_rows = MAX_TIMELINE_ROWS.min(MAX_TIMELINE_CELLS / nodes.max(1));
        let min_bucket = SimDuration::from_micros(spec.duration.as_micros().div_ceil(min_rows));
        return Err((
            "timeline_bucket".into(),
            format!(
                "\"{}\" cuts the {} run into {rows} timeline rows of {nodes} node(s); at most \
                 {MAX_TIMELINE_ROWS} rows and {MAX_TIMELINE_CELLS} row × node cells fit: use a \
                 bucket of at least \"{}\"",
                spec.bucket(),
                spec.duration,
                round_up_duration(min_bucket)
            ),
        ));
    }
    let mut total: u64 = 0;
    for (i, n) in spec.nodes.iter().enumerate() {
        if n.workers > MAX_NODE_WORKERS {
            return Err((
                format!("nodes[{i}].workers"),
                format!(
                    "at most {MAX_NODE_WORKERS} workers per node, found {}",
                    n.workers
                ),
            ));
        }
        total += n.workers as u64;
    }
    if total > MAX_TOTAL_NODE_WORKERS {
        return Err((
            "nodes".into(),
            format!(
                "{total} workers in all; at most {MAX_TOTAL_NODE_WORKERS} are simulated at once"
            ),
        ));
    }
    if let ClientsSpec::Closed(c) = &spec.clients
        && c.concurrency > MAX_CONCURRENCY
    {
        return Err((
            "clients.concurrency".into(),
            format!(
                "at most {MAX_CONCURRENCY} closed-loop clients, found {} (for more load use an \
                 open loop: {{\"kind\": \"open\", \"rate_per_s\": ...}})",
                c.concurrency
            ),
        ));
    }
    let scopes = if spec.gateway.zone {
        1
    } else {
        spec.gateway.workers as u64
    };
    let replicas = spec.gateway.replicas.max(1) as u64;
    if replicas > 1 && replicas * scopes * nodes > MAX_PEER_STATES {
        return Err((
            "gateway.replicas".into(),
            format!(
                "{replicas} replicas × {scopes} peer-state copies × {nodes} nodes = {} copies of \
                 peer state; at most {MAX_PEER_STATES}",
                replicas * scopes * nodes
            ),
        ));
    }
    if scopes * nodes > MAX_PEER_STATES {
        return Err((
            "gateway.workers".into(),
            format!(
                "{scopes} workers without `zone` × {nodes} nodes = {} copies of peer state; at \
                 most {MAX_PEER_STATES} (set \"zone\": true to share one)",
                scopes * nodes
            ),
        ));
    }
    Ok(())
}

/// Checks that the timelines of `reps` replications, all kept until their
/// files are written, fit the caps of one: rows × reps at most
/// [`MAX_TIMELINE_ROWS`], rows × nodes × reps at most [`MAX_TIMELINE_CELLS`].
/// `Err(reason)` says which bucket would fit.
pub fn check_reps(model: &super::Model, reps: u64) -> Result<(), String> {
    let bucket_us = model.bucket.as_micros().max(1);
    let rows = model.duration.as_micros().div_ceil(bucket_us);
    let nodes = (model.nodes.len() as u64).max(1);
    let all_rows = rows.saturating_mul(reps);
    if all_rows <= MAX_TIMELINE_ROWS && all_rows.saturating_mul(nodes) <= MAX_TIMELINE_CELLS {
        return Ok(());
    }
    let min_rows = (MAX_TIMELINE_ROWS.min(MAX_TIMELINE_CELLS / nodes) / reps.max(1)).max(1);
    let min_bucket = SimDuration::from_micros(model.duration.as_micros().div_ceil(min_rows));
    Err(format!(
        "{reps} replications × {rows} timeline rows (\"{}\" buckets of a {} run) of {nodes} \
         node(s) are {all_rows} rows, all kept until the files are written; at most \
         {MAX_TIMELINE_ROWS} rows and {MAX_TIMELINE_CELLS} row × node cells fit: use fewer \
         --reps or a timeline_bucket of at least \"{}\"",
        model.bucket,
        model.duration,
        round_up_duration(min_bucket)
    ))
}

/// Rounds a suggested bucket up to a readable value (1, 2 or 5 × a power of ten µs).
fn round_up_duration(d: SimDuration) -> SimDuration {
    let us = d.as_micros().max(1);
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            if step.saturating_mul(m) >= us {
                return SimDuration::from_micros(step.saturating_mul(m));
            }
        }
        step = step.saturating_mul(10);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggested_buckets_are_round() {
        assert_eq!(
            round_up_duration(SimDuration::from_micros(3600)).to_string(),
            "5ms"
        );
        assert_eq!(
            round_up_duration(SimDuration::from_micros(1)).to_string(),
            "1us"
        );
        assert_eq!(
            round_up_duration(SimDuration::from_micros(101)).to_string(),
            "200us"
        );
    }
}
