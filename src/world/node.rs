//! Nodes (backends): a pool of workers with a FIFO accept queue, a service
//! time distribution, and the state that faults change.

use super::{Event, NodeId, Reply, World, lane};
use crate::engine::{SimDuration, SimRng, SimTime};
use crate::policy::ProbeResult;
use crate::spec::{FlakyError, LatencySpec, NodeSpec};
use rand::RngExt;
use rand_distr::{Distribution, Exp, LogNormal};
use std::collections::VecDeque;

/// A compiled service-time distribution.
#[derive(Clone, Debug)]
pub(crate) enum Sampler {
    Constant(SimDuration),
    Exponential(Exp<f64>),
    LogNormal(LogNormal<f64>),
    Uniform(u64, u64),
}

impl Sampler {
    pub(crate) fn new(spec: &LatencySpec) -> Self {
        match *spec {
            LatencySpec::Constant { value } => Sampler::Constant(value),
            LatencySpec::Exponential { mean } => match Exp::new(1.0 / mean.as_secs_f64()) {
                Ok(e) => Sampler::Exponential(e),
                Err(_) => Sampler::Constant(mean),
            },
            LatencySpec::Lognormal { median, sigma } => {
                match LogNormal::new(median.as_secs_f64().ln(), sigma) {
                    Ok(d) => Sampler::LogNormal(d),
                    Err(_) => Sampler::Constant(median),
                }
            }
            LatencySpec::Uniform { min, max } => Sampler::Uniform(min.as_micros(), max.as_micros()),
        }
    }

    #[inline]
    pub(crate) fn sample(&self, rng: &mut SimRng) -> SimDuration {
        match self {
            Sampler::Constant(d) => *d,
            Sampler::Exponential(e) => SimDuration::from_secs_f64(e.sample(rng)),
            Sampler::LogNormal(d) => SimDuration::from_secs_f64(d.sample(rng)),
            Sampler::Uniform(lo, hi) => SimDuration::from_micros(if lo == hi {
                *lo
            } else {
                rng.random_range(*lo..=*hi)
            }),
        }
    }
}

/// Work in a node's accept queue or on a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Job {
    /// A gateway attempt: (request slot, attempt generation); `kept`: on a
    /// connection the node accepted before (it holds no backlog slot).
    Request {
        slot: u32,
        generation: u32,
        kept: bool,
    },
    /// An HTTP probe.
    Probe { probe: u32, generation: u32 },
    /// A TCP probe's connection: accepted, then closed; no work.
    Accept,
    /// A heartbeat thread's self-check through the worker pool.
    SelfCheck { policy: u16, generation: u32 },
}

#[derive(Clone, Copy, Debug)]
struct InService {
    job: Job,
    done_at: SimTime,
    /// Service left when the process was frozen (hang/stop).
    remaining: SimDuration,
}

pub(crate) struct Node {
    backlog: usize,
    service: Sampler,
    /// By worker: its job. Workers are handed out lowest first and the
    /// table grows as they are (a node of 64 workers that never has more
    /// than 3 busy holds 3 slots: a cluster of 10,000 such nodes would
    /// otherwise fill 25 MB it never reads).
    busy: Vec<Option<InService>>,
    /// Workers that have served and are free again, the last freed on top
    /// (taken before any worker not yet used, as from one stack of all).
    idle_workers: Vec<u32>,
    /// `workers`: how many `busy` may grow to.
    workers: u32,
    /// Accepted connections waiting for a worker.
    queue: VecDeque<Job>,
    /// Of `queue`, the requests on kept connections (`Job::Request::kept`),
    /// which the accept queue's `backlog` does not count.
    kept_waiting: usize,
    /// `stop_accepting`: the listening socket is closed (world/node_conn.rs).
    pub(crate) not_listening: bool,
    /// Bumped when in-service completions are invalidated (crash, freeze).
    epoch: u32,
    pub(crate) crashed: bool,
    /// Crashes so far: a pending end of a start-up (`Event::Listening`)
    /// from before the last crash is stale.
    pub(crate) restarts: u32,
    pub(crate) hung: bool,
    pub(crate) stopped: bool,
    pub(crate) partitioned: bool,
    pub(crate) flaky: Option<(f64, FlakyError, u16)>,
    pub(crate) slow: Option<(f64, SimDuration)>,
    /// How many of its faults are active now: each is counted from its
    /// `FaultStart` to its `FaultEnd` (see `world/fault.rs`).
    pub(crate) active_faults: u32,
    /// A pod's process finishing its requests after SIGTERM (`pods/`): it
    /// exits when it holds none.
    pub(crate) draining: bool,
    /// A pod's crash fault is active: every container started exits.
    pub(crate) crash_fault: bool,
}

impl Node {
    pub(crate) fn new(spec: &NodeSpec) -> Self {
        Node {
            backlog: spec.backlog as usize,
            service: Sampler::new(&spec.service_time),
            busy: Vec::new(),
            idle_workers: Vec::new(),
            workers: spec.workers,
            queue: VecDeque::new(),
            kept_waiting: 0,
            not_listening: false,
            epoch: 0,
            crashed: false,
            restarts: 0,
            hung: false,
            stopped: false,
            partitioned: false,
            flaky: None,
            slow: None,
            active_faults: 0,
            draining: false,
            crash_fault: false,
        }
    }

    /// Connection refused: nothing listens.
    pub(crate) fn refuses_connections(&self) -> bool {
        self.crashed || self.not_listening
    }

    /// The SYN is lost: the link is cut, or the accept queue is full.
    pub(crate) fn drops_syn(&self) -> bool {
        self.partitioned || self.accept_queue_full()
    }

    /// The accept queue is full: new connections, even local ones, are not accepted.
    pub(crate) fn accept_queue_full(&self) -> bool {
        self.queue.len() - self.kept_waiting >= self.backlog
    }

    /// Is a worker free?
    #[inline]
    fn has_idle_worker(&self) -> bool {
        !self.idle_workers.is_empty() || self.busy.len() < self.workers as usize
    }

    /// A free worker, if any: the last freed, else the lowest never used.
    #[inline]
    fn take_worker(&mut self) -> Option<u32> {
        if let Some(w) = self.idle_workers.pop() {
            return Some(w);
        }
        let w = self.busy.len() as u32;
        (w < self.workers).then(|| {
            self.busy.push(None);
            w
        })
    }

    /// Workers occupied by a job (a frozen one included).
    fn busy_workers(&self) -> u32 {
        (self.busy.len() - self.idle_workers.len()) as u32
    }

    fn runnable(&self) -> bool {
        !(self.crashed || self.hung || self.stopped)
    }

    /// Is one of its faults active? Fault events come first at their instant
    /// (they are scheduled before any other event), so everything else at
    /// time `t` sees the faults of the windows `[start, end)` holding `t`.
    pub(crate) fn in_fault(&self) -> bool {
        self.active_faults > 0
    }

    /// Requests it holds: in service or waiting for a worker.
    pub(crate) fn requests_held(&self) -> u64 {
        let queued = self
            .queue
            .iter()
            .filter(|j| matches!(j, Job::Request { .. }));
        let busy = self
            .busy
            .iter()
            .flatten()
            .filter(|j| matches!(j.job, Job::Request { .. }));
        (queued.count() + busy.count()) as u64
    }

    /// Nothing in service and nothing waiting.
    pub(crate) fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.idle_workers.len() == self.busy.len()
    }

    /// Does its heartbeat thread run? (A hang blocks only the workers.)
    pub(crate) fn beats(&self) -> bool {
        !(self.crashed || self.stopped)
    }
}

impl World<'_> {
    /// An attempt's request arrives: reset by a crashed process, lost in a
    /// partition, else queued for a worker. While it may wait past its read
    /// deadline, the gateway's read timeout is armed.
    pub(crate) fn on_request_at_node(&mut self, slot: u32, generation: u32, node: NodeId) {
        let n = &mut self.nodes[node.index()];
        if n.crashed {
            self.send_reply(slot, generation, Reply::Reset);
            return;
        }
        if n.partitioned {
            // lost on the wire; the gateway's read timeout will fire
            self.arm_read_timeout(slot, generation, true);
            return;
        }
        let kept = self.pool.as_ref().is_some_and(|p| p.is_kept(slot));
        let job = Job::Request {
            slot,
            generation,
            kept,
        };
        if n.queue.is_empty() && n.runnable() && n.has_idle_worker() {
            // The common case: a worker is free and no one waits; the accept
            // queue is not touched.
            self.serve(node, job);
            return;
        }
        let n = &mut self.nodes[node.index()];
        n.kept_waiting += kept as usize;
        n.queue.push_back(job);
        self.start_work(node);
        let waiting = self.nodes[node.index()].queue.len();
        if waiting > 0 {
            self.rec.queue_len(self.q.now(), node, waiting);
            // still waiting (FIFO: the request just queued is the last one)
            self.arm_read_timeout(slot, generation, true);
        }
    }

    /// Queues `job` behind the node's accepted connections and serves what it can.
    pub(crate) fn enqueue(&mut self, node: NodeId, job: Job) {
        self.nodes[node.index()].queue.push_back(job);
        self.start_work(node);
        let waiting = self.nodes[node.index()].queue.len();
        if waiting > 0 {
            self.rec.queue_len(self.q.now(), node, waiting);
        }
    }

    /// Hands queued requests to idle workers while the process runs.
    #[inline]
    fn start_work(&mut self, node: NodeId) {
        loop {
            let n = &mut self.nodes[node.index()];
            if !n.runnable() || !n.has_idle_worker() || n.queue.is_empty() {
                return;
            }
            let Some(job) = n.queue.pop_front() else {
                return;
            };
            if let Job::Request { kept: true, .. } = job {
                n.kept_waiting -= 1;
            }
            self.serve(node, job);
        }
    }

    /// An idle worker of a running process takes `job`.
    fn serve(&mut self, node: NodeId, job: Job) {
        let now = self.q.now();
        let n = &mut self.nodes[node.index()];
        let rng = match job {
            Job::Request { .. } => &mut self.rng.service,
            Job::Probe { .. } | Job::SelfCheck { .. } => &mut self.rng.probe,
            Job::Accept => return, // accept() and close: no work
        };
        let Some(w) = n.take_worker() else {
            return;
        };
        let busy = n.busy_workers();
        self.rec.workers_busy(now, node, busy);
        let mut svc = n.service.sample(rng);
        if let Some((factor, extra)) = n.slow {
            svc = svc.mul_f64(factor) + extra;
        }
        let done_at = now + svc;
        if let Job::Probe { .. } = job {
            self.rec.probe_work(node, now, done_at);
        }
        let n = &mut self.nodes[node.index()];
        n.busy[w as usize] = Some(InService {
            job,
            done_at,
            remaining: SimDuration::ZERO,
        });
        let epoch = n.epoch;
        self.q.schedule_with(done_at, || Event::ServiceDone {
            node,
            worker: w,
            epoch,
        });
        if let Job::Request {
            slot, generation, ..
        } = job
        {
            let answer_at = done_at + self.model.gateway.rtt.half();
            if self
                .read_deadline(slot, generation)
                .is_some_and(|d| answer_at >= d)
            {
                self.arm_read_timeout(slot, generation, false);
            }
        }
    }

    /// A worker finished: the reply (a `flaky` fault may spoil it) goes back
    /// to whoever sent the job, and the worker takes the next one.
    pub(crate) fn on_service_done(&mut self, node: NodeId, worker: u32, epoch: u32) {
        let n = &mut self.nodes[node.index()];
        if n.epoch != epoch {
            return;
        }
        let Some(job) = n.busy[worker as usize].take() else {
            return;
        };
        n.idle_workers.push(worker);
        let busy = n.busy_workers();
        self.rec.workers_busy(self.q.now(), node, busy);
        let rng = match job.job {
            Job::Request { .. } => &mut self.rng.faults,
            _ => &mut self.rng.probe,
        };
        let reply = match n.flaky {
            Some((p, error, status)) if rng.random_bool(p) => match error {
                FlakyError::Status => Reply::Status(status),
                FlakyError::Reset => Reply::Reset,
            },
            _ => Reply::Status(200),
        };
        let partitioned = n.partitioned;
        let draining = n.draining;
        // Serve the next queued job first: with a zero round trip the answer
        // is handled inline and may start new work.
        self.start_work(node);
        let half = self.model.gateway.rtt.half();
        match job.job {
            Job::Request {
                slot, generation, ..
            } => {
                if partitioned {
                    self.arm_read_timeout(slot, generation, false);
                } else if half.is_zero() {
                    self.on_response(slot, generation, reply);
                } else {
                    self.send_reply(slot, generation, reply);
                }
            }
            Job::Probe { probe, generation } => {
                if !partitioned {
                    let result = match reply {
                        Reply::Status(s) => ProbeResult::Status(s),
                        Reply::Reset => ProbeResult::Reset,
                    };
                    self.send_probe_result(probe, generation, result);
                }
            }
            Job::SelfCheck { policy, generation } => {
                let ok = matches!(reply, Reply::Status(s) if (200..300).contains(&s));
                self.self_check_done(policy, node, generation, ok);
            }
            Job::Accept => {}
        }
        if draining {
            self.pod_drain_check(node);
        }
    }

    /// The node's reply to an attempt (or its reset) leaves for the gateway,
    /// where [`World::on_response`] handles it half a round trip from now.
    fn send_reply(&mut self, slot: u32, generation: u32, reply: Reply) {
        let at = self.q.now() + self.model.gateway.rtt.half();
        self.q.schedule_in_lane(
            lane::HALF_RTT,
            at,
            Event::Response {
                slot,
                generation,
                reply,
            },
        );
    }

    /// An HTTP probe's result (or its reset) leaves for the prober, where
    /// [`World::on_probe_done`] handles it half a round trip from now.
    fn send_probe_result(&mut self, probe: u32, generation: u32, result: ProbeResult) {
        let at = self.q.now() + self.model.gateway.rtt.half();
        self.q.schedule_in_lane(
            lane::HALF_RTT,
            at,
            Event::ProbeDone {
                probe,
                generation,
                result,
            },
        );
    }

    /// The process dies: every accepted connection is reset.
    pub(crate) fn crash_node(&mut self, node: NodeId) {
        let n = &mut self.nodes[node.index()];
        n.crashed = true;
        n.draining = false;
        n.restarts = n.restarts.wrapping_add(1);
        n.epoch = n.epoch.wrapping_add(1);
        let mut victims: Vec<Job> = n.queue.drain(..).collect();
        n.kept_waiting = 0;
        for (w, b) in n.busy.iter_mut().enumerate() {
            if let Some(job) = b.take() {
                victims.push(job.job);
                n.idle_workers.push(w as u32);
            }
        }
        let busy = n.busy_workers();
        self.rec.workers_busy(self.q.now(), node, busy);
        if self.pool.is_some() {
            // Its kernel closes the kept connections too (node_conn.rs).
            self.pool_node_crashed(node);
        }
        self.reset_jobs(victims);
    }

    /// The kernel resets the connections of `jobs`: requests and probes get
    /// a reset half a round trip later. (A heartbeat thread's self-check
    /// ends by its own timeout.)
    fn reset_jobs(&mut self, jobs: Vec<Job>) {
        for job in jobs {
            match job {
                Job::Request {
                    slot, generation, ..
                } => self.send_reply(slot, generation, Reply::Reset),
                Job::Probe { probe, generation } => {
                    self.send_probe_result(probe, generation, ProbeResult::Reset)
                }
                Job::SelfCheck { .. } | Job::Accept => {}
            }
        }
    }

    /// The process closes its listening socket (a graceful shutdown's first
    /// step): new connects are refused, and the connections still in the
    /// kernel's accept queue are reset; the requests on connections it had
    /// accepted (kept ones) stay and are served. It also closes its idle
    /// kept-alive connections.
    pub(crate) fn close_listener(&mut self, node: NodeId) {
        let n = &mut self.nodes[node.index()];
        n.not_listening = true;
        let mut reset = Vec::new();
        n.queue.retain(|j| {
            let kept = matches!(j, Job::Request { kept: true, .. });
            if !kept {
                reset.push(*j);
            }
            kept
        });
        if self.pool.is_some() {
            self.pool_node_crashed(node);
        }
        self.reset_jobs(reset);
    }

    /// Workers stop making progress (hang or SIGSTOP): freeze what is in service.
    pub(crate) fn freeze_node(&mut self, node: NodeId) {
        let now = self.q.now();
        let n = &mut self.nodes[node.index()];
        n.epoch = n.epoch.wrapping_add(1);
        let mut frozen = Vec::new();
        for job in n.busy.iter_mut().flatten() {
            job.remaining = job.done_at.saturating_since(now);
            if let Job::Request {
                slot, generation, ..
            } = job.job
            {
                frozen.push((slot, generation));
            }
        }
        for (slot, generation) in frozen {
            self.arm_read_timeout(slot, generation, false);
        }
    }

    /// The process runs again: in-service work continues where it stopped,
    /// then queued work is served.
    pub(crate) fn thaw_node(&mut self, node: NodeId) {
        let now = self.q.now();
        let n = &mut self.nodes[node.index()];
        if !n.runnable() {
            return;
        }
        n.epoch = n.epoch.wrapping_add(1);
        let epoch = n.epoch;
        for (w, job) in n.busy.iter_mut().enumerate() {
            if let Some(job) = job {
                job.done_at = now + job.remaining;
                self.q.schedule(
                    job.done_at,
                    Event::ServiceDone {
                        node,
                        worker: w as u32,
                        epoch,
                    },
                );
            }
        }
        self.start_work(node);
    }
}
