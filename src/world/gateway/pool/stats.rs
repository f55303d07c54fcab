//! What the pool counts per node (`summary.json`'s `nodes[].connections`),
//! and the trace and event-log lines of the attempts only a pool has: a
//! circuit-breaker overflow (Envoy) and a reset on a reused connection.

use super::super::super::{NodeId, TraceLine, World};
use super::{Cause, Pool, Rules};
use crate::metrics::{NodeConnections, RunSummary};
use crate::policy::AttemptResult;
use crate::stats::round6;

/// One node's counts during a run (attempts sent in the measurement window).
#[derive(Clone, Debug, Default)]
pub(crate) struct ConnCounts {
    pub opened: u64,
    pub reused: u64,
    pub refused: u64,
    pub reset_on_reuse: u64,
    pub closed_before_response: u64,
    pub timed_out: u64,
    pub overflow: u64,
}

impl Pool {
    /// Counts how an attempt to `node` ended (`reused`: on a kept connection).
    pub(super) fn count_result(
        &mut self,
        node: NodeId,
        result: AttemptResult,
        reused: bool,
        counted: bool,
    ) {
        if !counted {
            return;
        }
        let c = &mut self.counts[node.index()];
        match result {
            AttemptResult::Refused => c.refused += 1,
            AttemptResult::ConnectTimeout | AttemptResult::ReadTimeout => c.timed_out += 1,
            AttemptResult::Reset if reused => c.reset_on_reuse += 1,
            AttemptResult::Reset => c.closed_before_response += 1,
            AttemptResult::Status(_) | AttemptResult::ClientAbort | AttemptResult::Rejected => {}
        }
    }

    /// Writes each node's counts into the run's summary.
    pub(crate) fn summarize(&self, summary: &mut RunSummary) {
        for (n, c) in summary.nodes.iter_mut().zip(&self.counts) {
            n.connections = Some(NodeConnections {
                opened: c.opened,
                reused: c.reused,
                reused_share: if n.attempts > 0 {
                    round6(c.reused as f64 / n.attempts as f64)
                } else {
                    0.0
                },
                refused: c.refused,
                reset_on_reuse: c.reset_on_reuse,
                closed_before_response: c.closed_before_response,
                timed_out: c.timed_out,
                overflow: c.overflow,
            });
        }
    }
}

impl World<'_> {
    /// An Envoy circuit-breaker overflow, to the trace and the event log
    /// (Envoy's router debug line, `Filter::onUpstreamReset`).
    #[cold]
    pub(super) fn observe_overflow(&mut self, request: u64, scope: u16, node: NodeId) {
        if let Some(sink) = self.obs.trace.as_mut() {
            sink(&TraceLine {
                t_s: self.q.now().as_secs_f64(),
                request,
                scope,
                node: self.model.nodes[node.index()].name.clone(),
                result: "overflow".into(),
                charge: "none",
            });
        }
        if self.obs.events.is_some() {
            let line = "[debug][router] upstream reset: reset reason: overflow, transport failure \
                        reason: "
                .to_string();
            self.log_line(self.fleet.replica_of(scope), Some(node), "envoy", line);
        }
    }

    /// The event-log line of a reset on a reused connection, for the gateways
    /// whose failed attempts nginx's error log does not describe: Envoy's
    /// router debug line and HAProxy's log line with its termination state.
    #[cold]
    pub(in crate::world) fn log_pool_reset(&mut self, scope: u16, node: NodeId, cause: Cause) {
        let Some(pool) = self.pool.as_deref() else {
            return;
        };
        let line = match (&pool.rules, cause) {
            (_, Cause::None) => return,
            (Rules::Envoy { .. }, _) => "[debug][router] upstream reset: reset reason: \
                                         connection termination, transport failure reason: "
                .to_string(),
            (Rules::Haproxy { .. }, _) => {
                let Some(l) = self.obs.events.as_ref() else {
                    return;
                };
                // The `%b/%s %ST %tsc` fields of HAProxy's HTTP log line.
                format!("{}/{} 502 SH--", l.upstream_name(), l.server_name(node))
            }
            (Rules::Nginx { .. }, _) => return,
        };
        let source = match pool.rules {
            Rules::Envoy { .. } => "envoy",
            _ => "haproxy",
        };
        self.log_line(self.fleet.replica_of(scope), Some(node), source, line);
    }
}
