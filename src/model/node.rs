//! Nodes (backends): a pool of workers with a FIFO accept queue, a service
//! time distribution, and the state that faults change.

use super::{Event, NodeId, Reply, World, lane};
use crate::engine::{SimDuration, SimRng, SimTime};
use crate::scenario::{FlakyError, LatencySpec, NodeSpec};
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

#[derive(Clone, Copy, Debug)]
struct InService {
    slot: u32,
    generation: u32,
    done_at: SimTime,
    /// Service left when the process was frozen (hang/stop).
    remaining: SimDuration,
}

pub(crate) struct Node {
    backlog: usize,
    service: Sampler,
    busy: Vec<Option<InService>>,
    idle_workers: Vec<u32>,
    /// Accepted connections waiting for a worker: (request slot, attempt generation).
    queue: VecDeque<(u32, u32)>,
    /// Bumped when in-service completions are invalidated (crash, freeze).
    epoch: u32,
    pub(crate) crashed: bool,
    pub(crate) hung: bool,
    pub(crate) stopped: bool,
    pub(crate) partitioned: bool,
    pub(crate) flaky: Option<(f64, FlakyError, u16)>,
    pub(crate) slow: Option<(f64, SimDuration)>,
}

impl Node {
    pub(crate) fn new(spec: &NodeSpec) -> Self {
        Node {
            backlog: spec.backlog as usize,
            service: Sampler::new(&spec.service_time),
            busy: vec![None; spec.workers as usize],
            idle_workers: (0..spec.workers).rev().collect(),
            queue: VecDeque::new(),
            epoch: 0,
            crashed: false,
            hung: false,
            stopped: false,
            partitioned: false,
            flaky: None,
            slow: None,
        }
    }

    /// Connection refused: nothing listens.
    pub(crate) fn refuses_connections(&self) -> bool {
        self.crashed
    }

    /// The SYN is lost: the link is cut, or the accept queue is full.
    pub(crate) fn drops_syn(&self) -> bool {
        self.partitioned || self.queue.len() >= self.backlog
    }

    fn runnable(&self) -> bool {
        !(self.crashed || self.hung || self.stopped)
    }
}

impl World<'_> {
    pub(crate) fn on_request_at_node(&mut self, slot: u32, generation: u32, node: NodeId) {
        let now = self.q.now();
        let half = self.sc.gateway.rtt.half();
        let n = &mut self.nodes[node.index()];
        if n.crashed {
            let reply = Reply::Reset;
            self.q.schedule_in_lane(
                lane::HALF_RTT,
                now + half,
                Event::Response {
                    slot,
                    generation,
                    reply,
                },
            );
            return;
        }
        if n.partitioned {
            // lost on the wire; the gateway's read timeout will fire
            self.arm_read_timeout(slot, generation, true);
            return;
        }
        n.queue.push_back((slot, generation));
        self.start_work(node);
        if !self.nodes[node.index()].queue.is_empty() {
            // still waiting (FIFO: the request just queued is the last one)
            self.arm_read_timeout(slot, generation, true);
        }
    }

    /// Hands queued requests to idle workers while the process runs.
    fn start_work(&mut self, node: NodeId) {
        let now = self.q.now();
        loop {
            let n = &mut self.nodes[node.index()];
            if !n.runnable() || n.idle_workers.is_empty() || n.queue.is_empty() {
                return;
            }
            let (Some(w), Some((slot, generation))) = (n.idle_workers.pop(), n.queue.pop_front())
            else {
                return;
            };
            let mut svc = n.service.sample(&mut self.rng_service);
            if let Some((factor, extra)) = n.slow {
                svc = svc.mul_f64(factor) + extra;
            }
            let done_at = now + svc;
            n.busy[w as usize] = Some(InService {
                slot,
                generation,
                done_at,
                remaining: SimDuration::ZERO,
            });
            let epoch = n.epoch;
            self.q.schedule(
                done_at,
                Event::ServiceDone {
                    node,
                    worker: w,
                    epoch,
                },
            );
            let answer_at = done_at + self.sc.gateway.rtt.half();
            if self
                .read_deadline(slot, generation)
                .is_some_and(|d| answer_at >= d)
            {
                self.arm_read_timeout(slot, generation, false);
            }
        }
    }

    pub(crate) fn on_service_done(&mut self, node: NodeId, worker: u32, epoch: u32) {
        let now = self.q.now();
        let n = &mut self.nodes[node.index()];
        if n.epoch != epoch {
            return;
        }
        let Some(job) = n.busy[worker as usize].take() else {
            return;
        };
        n.idle_workers.push(worker);
        let reply = match n.flaky {
            Some((p, error, status)) if self.rng_faults.random_bool(p) => match error {
                FlakyError::Status => Reply::Status(status),
                FlakyError::Reset => Reply::Reset,
            },
            _ => Reply::Status(200),
        };
        let partitioned = n.partitioned;
        self.start_work(node);
        let half = self.sc.gateway.rtt.half();
        if partitioned {
            self.arm_read_timeout(job.slot, job.generation, false);
        } else if half.is_zero() {
            self.on_response(job.slot, job.generation, reply);
        } else {
            self.q.schedule_in_lane(
                lane::HALF_RTT,
                now + half,
                Event::Response {
                    slot: job.slot,
                    generation: job.generation,
                    reply,
                },
            );
        }
    }

    /// The process dies: every accepted connection is reset.
    pub(crate) fn crash_node(&mut self, node: NodeId) {
        let at = self.q.now() + self.sc.gateway.rtt.half();
        let n = &mut self.nodes[node.index()];
        n.crashed = true;
        n.epoch = n.epoch.wrapping_add(1);
        let mut victims: Vec<(u32, u32)> = n.queue.drain(..).collect();
        for (w, b) in n.busy.iter_mut().enumerate() {
            if let Some(job) = b.take() {
                victims.push((job.slot, job.generation));
                n.idle_workers.push(w as u32);
            }
        }
        for (slot, generation) in victims {
            let reply = Reply::Reset;
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
    }

    /// Workers stop making progress (hang or SIGSTOP): freeze what is in service.
    pub(crate) fn freeze_node(&mut self, node: NodeId) {
        let now = self.q.now();
        let n = &mut self.nodes[node.index()];
        n.epoch = n.epoch.wrapping_add(1);
        let mut frozen = Vec::new();
        for job in n.busy.iter_mut().flatten() {
            job.remaining = job.done_at.saturating_since(now);
            frozen.push((job.slot, job.generation));
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
