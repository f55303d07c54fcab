//! What a run's pods report: restarts per slot, and per rolling update the
//! client errors by cause while it lasts (`summary.json`'s `pods`), and the
//! log of what happened to each pod (`pods.csv`).
//!
//! A rolling update's window runs from its start until it is complete and
//! every gateway replica has dropped the endpoint of its last old pod
//! (a replica that lags still sends there after the pod is gone). Within
//! it are counted the requests that ended with an error (by status, and
//! the client timeouts), the upstream attempts that failed (refused, reset,
//! timed out, an error status), and the requests a killed process held
//! (in service or waiting for a worker): cut.

use super::KillReason;
use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::metrics::pods::{
    AttemptCauses, DeploySummary, NodePods, PodEvent, RestartErrors, RunPods,
};
use crate::policy::AttemptResult;
use crate::stats::round6;
use std::collections::BTreeMap;

/// One rolling update's figures so far.
#[derive(Clone, Debug, Default)]
struct Deploy {
    /// Its start, as the model gives it.
    start: SimTime,
    started: bool,
    done: Option<SimTime>,
    /// The window's end, once the update is complete (it may lie ahead:
    /// a replica applies the last removal later).
    until: Option<SimTime>,
    /// The latest instant a replica drops an old pod's endpoint.
    last_removal: SimTime,
    client_errors: u64,
    client_timeouts: u64,
    by_status: BTreeMap<u16, u64>,
    attempts: AttemptCauses,
    cut: u64,
    created: u64,
    deleted: u64,
}

impl Deploy {
    fn covers(&self, t: SimTime) -> bool {
        self.started && t >= self.start && self.until.is_none_or(|u| t <= u)
    }
}

/// One restart: from the kill (or a crash's exit) of `node`'s container
/// until the gateway lists the pod again, and the figures in that window.
#[derive(Clone, Debug)]
struct Window {
    node: NodeId,
    start: SimTime,
    end: Option<SimTime>,
    acc: Deploy,
}

impl Window {
    fn covers(&self, t: SimTime) -> bool {
        self.start <= t && self.end.is_none_or(|e| t <= e)
    }
}

/// The pods' record of one run.
pub(crate) struct Log {
    restarts: Vec<u64>,
    deploys: Vec<Deploy>,
    events: Vec<PodEvent>,
    /// The update under way (its index in `deploys`).
    open: Option<usize>,
    /// The figures while containers restart (its window: `restarts_open`).
    during_restarts: Deploy,
    /// Each restart's window and what happened in it.
    windows: Vec<Window>,
}

impl Log {
    /// One deploy per rolling update of the model (a run that stops before
    /// one starts still reports it, with nothing counted: every run has the
    /// same metrics).
    pub(super) fn new(nodes: usize, starts: impl Iterator<Item = SimTime>) -> Log {
        Log {
            restarts: vec![0; nodes],
            deploys: starts
                .map(|start| Deploy {
                    start,
                    ..Deploy::default()
                })
                .collect(),
            events: Vec::new(),
            open: None,
            during_restarts: Deploy {
                started: true,
                ..Deploy::default()
            },
            windows: Vec::new(),
        }
    }

    fn event(&mut self, t: SimTime, node: NodeId, what: &'static str, detail: String) {
        self.events.push(PodEvent {
            t_s: t.as_secs_f64(),
            node: node.0,
            what,
            detail,
        });
    }

    /// The deploys whose window holds `t`, and the restarts' figures if a
    /// restart window does.
    fn covering(&mut self, t: SimTime) -> impl Iterator<Item = &mut Deploy> {
        let restarting = self.windows.iter().any(|w| w.covers(t));
        self.deploys
            .iter_mut()
            .filter(move |d| d.covers(t))
            .chain(restarting.then_some(&mut self.during_restarts))
            .chain(
                self.windows
                    .iter_mut()
                    .filter(move |w| w.covers(t))
                    .map(|w| &mut w.acc),
            )
    }

    /// A restart window of `node` opens at `t`, unless one is open.
    fn restart_window(&mut self, t: SimTime, node: NodeId) {
        if !self
            .windows
            .iter()
            .any(|w| w.node == node && w.end.is_none())
        {
            self.windows.push(Window {
                node,
                start: t,
                end: None,
                acc: Deploy::default(),
            });
        }
    }

    pub(super) fn deploy_start(&mut self, t: SimTime, k: usize) {
        if let Some(i) = self.open.take() {
            // A newer revision replaces the update under way: its window ends.
            let d = &mut self.deploys[i];
            d.until = Some(t);
        }
        let d = &mut self.deploys[k];
        d.started = true;
        d.start = t;
        self.open = Some(k);
    }

    /// The open update is complete (first time only).
    pub(super) fn deploy_done(&mut self, t: SimTime) {
        if let Some(i) = self.open {
            let d = &mut self.deploys[i];
            d.done.get_or_insert(t);
        }
    }

    pub(super) fn is_done(&self) -> bool {
        self.open.is_some_and(|i| self.deploys[i].done.is_some())
    }

    /// The open update's last old pod is gone: its window ends when the
    /// last replica has dropped it.
    pub(super) fn deploy_drained(&mut self, t: SimTime) {
        if let Some(i) = self.open.take() {
            let d = &mut self.deploys[i];
            d.until = Some(t.max(d.last_removal));
        }
    }

    pub(super) fn created(&mut self, t: SimTime, node: NodeId) {
        if let Some(i) = self.open {
            self.deploys[i].created += 1;
        }
        self.event(t, node, "created", String::new());
    }

    pub(super) fn deleted(&mut self, t: SimTime, node: NodeId) {
        if let Some(i) = self.open {
            self.deploys[i].deleted += 1;
        }
        self.event(t, node, "deleted", String::new());
    }

    pub(super) fn gone(&mut self, t: SimTime, node: NodeId, revision: u32) {
        self.event(t, node, "gone", format!("revision {revision}"));
    }

    pub(super) fn killed(&mut self, t: SimTime, node: NodeId, why: KillReason) {
        if why != KillReason::Deleted {
            self.restart_window(t, node);
        }
        let why = match why {
            KillReason::Deleted => "deleted",
            KillReason::Liveness => "liveness probe failed",
            KillReason::Startup => "startup probe failed",
        };
        self.event(t, node, "killed", why.to_string());
    }

    pub(super) fn restart(&mut self, t: SimTime, node: NodeId, back_off: SimDuration) {
        self.restarts[node.index()] += 1;
        self.restart_window(t, node);
        self.event(t, node, "exited", format!("restart after {back_off}"));
    }

    /// A killed process held `cut` requests.
    pub(super) fn cut(&mut self, t: SimTime, node: NodeId, cut: u64) {
        if cut == 0 {
            return;
        }
        for d in self.covering(t) {
            d.cut += cut;
        }
        self.event(t, node, "cut", format!("{cut} requests"));
    }

    /// `node`'s pod turned `ready` (or not); replica `r` applies it at `arrivals[r]`.
    pub(super) fn endpoint(&mut self, node: NodeId, ready: bool, arrivals: &[SimTime]) {
        let last = arrivals.iter().copied().max().unwrap_or(SimTime::ZERO);
        if !ready && let Some(i) = self.open {
            let d = &mut self.deploys[i];
            d.last_removal = d.last_removal.max(last);
        }
        if ready {
            for w in self
                .windows
                .iter_mut()
                .filter(|w| w.node == node && w.end.is_none())
            {
                w.end = Some(last);
            }
        }
        let first = arrivals.iter().copied().min().unwrap_or(SimTime::ZERO);
        self.event(
            first,
            node,
            if ready { "listed" } else { "unlisted" },
            format!("last replica at {:.6}s", last.as_secs_f64()),
        );
    }

    /// A request ended at `t`: an error `status`, or a client timeout (`None`).
    pub(crate) fn request_failed(&mut self, t: SimTime, status: Option<u16>) {
        for d in self.covering(t) {
            match status {
                Some(s) => {
                    d.client_errors += 1;
                    *d.by_status.entry(s).or_default() += 1;
                }
                None => d.client_timeouts += 1,
            }
        }
    }

    /// An upstream attempt ended at `t` with `result`.
    pub(crate) fn attempt(&mut self, t: SimTime, result: AttemptResult) {
        for d in self.covering(t) {
            let a = &mut d.attempts;
            match result {
                AttemptResult::Refused => a.refused += 1,
                AttemptResult::Reset => a.reset += 1,
                AttemptResult::ConnectTimeout => a.connect_timeout += 1,
                AttemptResult::ReadTimeout => a.read_timeout += 1,
                AttemptResult::Status(s) if s >= 500 => a.error_status += 1,
                _ => {}
            }
        }
    }

    /// The figures while containers restarted, over the run to `end`.
    fn restart_errors(&self, end: SimTime) -> RestartErrors {
        let d = &self.during_restarts;
        // The union of the windows, cut at the end of the run.
        let mut spans: Vec<(SimTime, SimTime)> = self
            .windows
            .iter()
            .map(|w| (w.start.min(end), w.end.unwrap_or(end).min(end)))
            .collect();
        spans.sort();
        let (mut total, mut reach) = (0u64, SimTime::ZERO);
        for (s, e) in spans {
            let s = s.max(reach);
            if e > s {
                total += e.saturating_since(s).as_micros();
                reach = e;
            }
        }
        RestartErrors {
            attempts_failed: d.attempts,
            client_errors: d.client_errors,
            client_timeouts: d.client_timeouts,
            in_flight_cut: d.cut,
            status: d
                .by_status
                .iter()
                .map(|(s, n)| (s.to_string(), *n))
                .collect(),
            window_s: round6(total as f64 / 1e6),
        }
    }

    /// The run's figures; the events go to `pods.csv`.
    pub(crate) fn summarize(&self, end: SimTime, names: &[String]) -> RunPods {
        RunPods {
            restarts: self.restarts.iter().sum(),
            deploys: self
                .deploys
                .iter()
                .map(|d| DeploySummary {
                    start_s: round6(d.start.as_secs_f64()),
                    duration_s: d
                        .done
                        .map(|t| round6(t.saturating_since(d.start).as_secs_f64())),
                    window_s: if d.started {
                        round6(
                            d.until
                                .unwrap_or(end)
                                .min(end)
                                .saturating_since(d.start)
                                .as_secs_f64(),
                        )
                    } else {
                        0.0
                    },
                    client_errors: d.client_errors,
                    client_timeouts: d.client_timeouts,
                    status: d
                        .by_status
                        .iter()
                        .map(|(s, n)| (s.to_string(), *n))
                        .collect(),
                    attempts_failed: d.attempts,
                    in_flight_cut: d.cut,
                    pods_created: d.created,
                    pods_deleted: d.deleted,
                })
                .collect(),
            during_restarts: self.restart_errors(end),
            nodes: names
                .iter()
                .zip(&self.restarts)
                .map(|(name, &restarts)| NodePods {
                    name: name.clone(),
                    restarts,
                })
                .collect(),
            events: self.events_with_windows(end),
        }
    }

    /// The events, and a line per restart with what happened in its window.
    fn events_with_windows(&self, end: SimTime) -> Vec<PodEvent> {
        let mut events = self.events.clone();
        for w in &self.windows {
            let a = &w.acc;
            let statuses: Vec<String> = a
                .by_status
                .iter()
                .map(|(s, n)| format!("{s}: {n}"))
                .collect();
            let f = &a.attempts;
            events.push(PodEvent {
                t_s: w.start.as_secs_f64(),
                node: w.node.0,
                what: "restart",
                detail: format!(
                    "until {:.6}s: client errors {}{}, client timeouts {}, failed attempts refused {} reset {} connect timeout {} read timeout {} error status {}, requests cut {}",
                    w.end.unwrap_or(end).min(end).as_secs_f64(),
                    a.client_errors,
                    if statuses.is_empty() { String::new() } else { format!(" ({})", statuses.join(", ")) },
                    a.client_timeouts,
                    f.refused,
                    f.reset,
                    f.connect_timeout,
                    f.read_timeout,
                    f.error_status,
                    a.cut
                ),
            });
        }
        events
    }
}
