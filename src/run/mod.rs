//! Running a model: seeded replications, in parallel, each within an event
//! budget and optionally traced ([`Replications`]); what a run would cost
//! before it starts ([`cost`]).
//!
//! The seeding contract: replication `r` of a run with base seed `S` uses
//! [`rep_seed(S, r)`](crate::engine::rng::rep_seed) (`S` itself for the
//! first), so `--seed S --reps 1` reproduces any replication whose seed is
//! `S`, and a sweep's point with common seeds equals `hcsim run --reps`.

pub mod ceiling;
pub mod cost;

use crate::engine::rng::rep_seed;
use crate::error::Error;
use crate::metrics::RunSummary;
use crate::spec::Model;
use crate::world::event_log::{EventLog, MAX_EVENT_LINES};
use crate::world::{self, TraceLine, Truncated};
use rayon::prelude::*;
use std::path::Path;
use std::sync::atomic::AtomicU64;

/// Replications of one model: a builder (turmoil's `Builder` in spirit).
#[derive(Clone, Copy, Debug)]
pub struct Replications<'m> {
    model: &'m Model,
    seed: u64,
    reps: u64,
    max_events: u64,
    trace: bool,
    per_replica: bool,
    events: bool,
    progress: Option<&'m AtomicU64>,
}

/// What the replications produced, in replication order.
#[derive(Debug, Default)]
pub struct Outcome {
    pub runs: Vec<RunSummary>,
    /// Each replication's attempts (empty unless traced).
    pub traces: Vec<Vec<TraceLine>>,
    /// Each replication's gateway event log (empty unless kept).
    pub events: Vec<EventLog>,
    /// Replications the event budget cut short: their seed and where they stopped.
    pub cut: Vec<(u64, Truncated)>,
}

impl<'m> Replications<'m> {
    /// One replication of `model` with its own seed, no budget, no trace.
    pub fn of(model: &'m Model) -> Self {
        Replications {
            model,
            seed: model.seed,
            reps: 1,
            max_events: u64::MAX,
            trace: false,
            per_replica: false,
            events: false,
            progress: None,
        }
    }
    /// The seed of the first replication (the others derive from it).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
    pub fn reps(mut self, reps: u64) -> Self {
        self.reps = reps;
        self
    }
    /// Stop each replication after this many engine events (`--max-events`).
    pub fn max_events(mut self, max_events: Option<u64>) -> Self {
        self.max_events = max_events.unwrap_or(u64::MAX);
        self
    }
    /// Record every upstream attempt (`--trace`).
    pub fn trace(mut self, trace: bool) -> Self {
        self.trace = trace;
        self
    }

    /// Keep the gateway's event log (`--events`): each replication keeps
    /// its share of [`MAX_EVENT_LINES`].
    pub fn events(mut self, on: bool) -> Self {
        self.events = on;
        self
    }

    /// The most event-log lines each replication keeps.
    pub fn events_cap(&self) -> usize {
        (MAX_EVENT_LINES / self.reps.max(1) as usize).max(1)
    }

    /// Keep each gateway replica's node table (`--per-replica`).
    pub fn per_replica(mut self, on: bool) -> Self {
        self.per_replica = on;
        self
    }

    /// Add the virtual microseconds simulated to `counter` as the
    /// replications go (a progress bar reads it; the runs do not).
    pub fn progress(mut self, counter: &'m AtomicU64) -> Self {
        self.progress = Some(counter);
        self
    }

    /// The seed of each replication.
    pub fn seeds(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.reps).map(|r| rep_seed(self.seed, r))
    }

    /// Runs the replications on the current rayon pool (install one to
    /// choose the thread count); the outcome does not depend on it.
    pub fn run(&self) -> Outcome {
        Self::gather(
            (0..self.reps)
                .into_par_iter()
                .map(|r| self.one(rep_seed(self.seed, r)))
                .collect(),
        )
    }

    /// [`Replications::run`] one after the other on this thread.
    pub fn run_here(&self) -> Outcome {
        Self::gather(
            (0..self.reps)
                .map(|r| self.one(rep_seed(self.seed, r)))
                .collect(),
        )
    }

    fn gather(results: Vec<One>) -> Outcome {
        let mut out = Outcome::default();
        for (s, t, cut, log) in results {
            if let Some(c) = cut {
                out.cut.push((s.seed, c));
            }
            out.runs.push(s);
            out.traces.push(t);
            out.events.extend(log);
        }
        out
    }

    fn one(&self, seed: u64) -> One {
        let events = self.events.then(|| self.events_cap());
        let (m, e, r, p) = (self.model, self.max_events, self.per_replica, self.progress);
        if self.trace {
            let mut lines = Vec::new();
            let mut sink = |l: &TraceLine| lines.push(l.clone());
            let (s, cut, log) = world::run_logged(m, seed, e, Some(&mut sink), r, events, p);
            (s, lines, cut, log)
        } else {
            let (s, cut, log) = world::run_logged(m, seed, e, None, r, events, p);
            (s, Vec::new(), cut, log)
        }
    }
}

/// One replication's summary, trace, cut and event log.
type One = (
    RunSummary,
    Vec<TraceLine>,
    Option<Truncated>,
    Option<EventLog>,
);

/// Worker threads per core above which `--jobs` is lowered: more threads
/// than that only add memory (each holds a run) and scheduling.
pub const MAX_JOBS_PER_CORE: usize = 4;

/// The number of worker threads for `jobs` (`--jobs`) and `work` runs:
/// at most [`MAX_JOBS_PER_CORE`] × the cores and at most the runs (at least
/// one). Returns the count and, when `jobs` was lowered below what was
/// asked for beyond the cores' limit, a note saying so.
pub fn clamp_jobs(jobs: Option<usize>, work: usize) -> (Option<usize>, Option<String>) {
    let Some(j) = jobs else {
        return (None, None);
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let most = MAX_JOBS_PER_CORE * cores;
    // 0 stays 0: `thread_pool` refuses it.
    let clamped = j.min(most).min(work.max(1));
    let note = (j > most).then(|| {
        format!(
            "--jobs {j} is more than {MAX_JOBS_PER_CORE} × the {cores} core(s): using {clamped} worker threads"
        )
    });
    (Some(clamped), note)
}

/// A pool of `jobs` worker threads (default: all cores).
pub fn thread_pool(jobs: Option<usize>) -> Result<rayon::ThreadPool, Error> {
    let mut b = rayon::ThreadPoolBuilder::new();
    if let Some(j) = jobs {
        if j == 0 {
            return Err(Error::Usage("--jobs must be at least 1".into()));
        }
        b = b.num_threads(j);
    }
    b.build()
        .map_err(|e| Error::Usage(format!("cannot start worker threads: {e}")))
}

/// Loads a model with its `--set` overrides and checks what it would cost.
/// Returns it with its warnings (the model's, then the cost's); a cost that
/// must be refused is an error.
pub fn load_checked(
    path: &Path,
    sets: &[crate::spec::Override],
    max_events: Option<u64>,
) -> Result<(Model, Vec<(String, String)>), Error> {
    let model = crate::spec::load_with_overrides(path, sets)?;
    let mut warnings = model.warnings();
    let cost = cost::preflight(&model, max_events).map_err(|reason| Error::Limit {
        path: path.to_path_buf(),
        reason,
    })?;
    warnings.extend(cost);
    Ok((model, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replications_do_not_depend_on_the_thread_count() {
        let model = Model::from_document(
            &serde_json::json!({
                "name": "t", "duration": "3s",
                "clients": {"kind": "open", "rate_per_s": 100.0},
                "nodes": [{"name": "a"}, {"name": "b"}],
                "faults": [{"kind": "flaky", "node": "a", "p": 0.2}]
            }),
            Path::new("t.json"),
        )
        .unwrap();
        let reps = Replications::of(&model).seed(9).reps(4).trace(true);
        let one = thread_pool(Some(1)).unwrap().install(|| reps.run());
        let two = thread_pool(Some(2)).unwrap().install(|| reps.run());
        assert_eq!(one.runs, two.runs);
        assert_eq!(one.runs[0].seed, 9);
        assert_eq!(
            one.runs.iter().map(|r| r.seed).collect::<Vec<_>>(),
            reps.seeds().collect::<Vec<_>>()
        );
        assert!(one.traces.iter().all(|t| !t.is_empty()));
    }
}
