//! Clients: open-loop arrivals (generated lazily, one pending at a time) and
//! closed-loop clients that send again after a think time; client timeouts
//! are armed here and handled by the gateway (`on_client_timeout`,
//! gateway/mod.rs), which sees the client close its connection.

use super::{Event, World, lane};
use crate::engine::{SimDuration, SimTime};
use crate::spec::{Arrivals, Model};
use rand::RngExt;
use rand_distr::{Distribution, Exp};

/// Client-side state.
pub(crate) struct Clients {
    mode: Mode,
    /// Open loop: each request's send delay (`clients.send_jitter`).
    jitter: Option<Box<super::node::Sampler>>,
}

/// Open or closed loop, with its state.
enum Mode {
    Open {
        arrivals: Arrivals,
        rate_per_s: f64,
        /// Constant spacing: index of the next arrival.
        next_k: u64,
        exp: Option<Exp<f64>>,
        /// Poisson above [`ROUNDED_GAPS_UP_TO`] (or since a schedule's
        /// first step above it): the fraction of a microsecond the arrival
        /// times so far were rounded by.
        carry: Option<f64>,
        /// With `clients.schedule`: the step in force (0 = before the
        /// first step) and when it began; `None` without a schedule.
        step: Option<(usize, SimTime)>,
    },
    Closed {
        concurrency: u32,
        think_time: SimDuration,
        /// When each client last sent a request.
        last_sent: Vec<SimTime>,
    },
}

/// Poisson arrivals up to this rate (per second) round each gap to the
/// microsecond, at least 1 µs: the gaps that round to zero (one in 200 at
/// this rate) then send slightly fewer requests than asked, 0.005% at
/// 10,000/s (3 of 600,000 in a minute, far inside the Poisson noise of
/// ±775), 0.44% at 10⁵/s and 26% at 10⁶/s. Above this rate each arrival is
/// instead the running sum of the drawn gaps rounded to the microsecond,
/// so several may share one and none is lost: exact at any rate the model
/// takes (10⁷/s). The rounded gaps are kept below so that every result of
/// such a model stays what it was.
pub(super) const ROUNDED_GAPS_UP_TO: f64 = 10_000.0;

/// The shortest closed-loop cycle, the simulator's resolution: a gateway that
/// answers at once (no live upstreams) to clients with `think_time: 0s`
/// would otherwise make them loop forever at one instant.
const MIN_CYCLE: SimDuration = SimDuration::from_micros(1);

impl Clients {
    pub(crate) fn new(model: &Model) -> Self {
        let mode = match model.clients {
            crate::spec::Clients::Open {
                rate_per_s,
                arrivals,
                ref schedule,
                ..
            } => Mode::Open {
                arrivals,
                rate_per_s,
                next_k: 0,
                exp: Exp::new(rate_per_s).ok(),
                carry: (rate_per_s > ROUNDED_GAPS_UP_TO).then_some(0.5),
                step: (!schedule.is_empty()).then_some((0, SimTime::ZERO)),
            },
            crate::spec::Clients::Closed {
                concurrency,
                think_time,
                ..
            } => Mode::Closed {
                concurrency,
                think_time,
                last_sent: vec![SimTime::ZERO; concurrency as usize],
            },
        };
        Clients {
            mode,
            jitter: model
                .send_jitter
                .as_ref()
                .map(|j| Box::new(super::node::Sampler::new(j))),
        }
    }
}

impl World<'_> {
    pub(crate) fn start_clients(&mut self) {
        match &self.clients.mode {
            Mode::Open { .. } => {
                if let Some(t) = self.next_arrival_time() {
                    let ev = match self.clients.jitter {
                        None => Event::Arrival,
                        Some(_) => Event::JitteredArrival,
                    };
                    self.q.schedule_in_lane(lane::ARRIVAL, t, ev);
                }
            }
            Mode::Closed { concurrency, .. } => {
                for c in 0..*concurrency {
                    self.q.schedule(SimTime::ZERO, Event::ClientWake(c));
                }
            }
        }
    }

    /// The time of the next open-loop arrival (constant: `k / rate`, exact;
    /// Poisson: now + Exp(rate), see [`ROUNDED_GAPS_UP_TO`]).
    fn next_arrival_time(&mut self) -> Option<SimTime> {
        let now = self.q.now();
        if let Mode::Open { step: Some(_), .. } = self.clients.mode {
            return self.next_scheduled_arrival(now);
        }
        match &mut self.clients.mode {
            Mode::Open {
                arrivals: Arrivals::Constant,
                rate_per_s,
                next_k,
                ..
            } => {
                let t = SimTime::ZERO + SimDuration::from_secs_f64(*next_k as f64 / *rate_per_s);
                *next_k += 1;
                Some(t.max(now))
            }
            Mode::Open {
                arrivals: Arrivals::Poisson,
                exp,
                carry,
                ..
            } => {
                let gap: f64 = exp.as_ref()?.sample(&mut self.rng.arrivals);
                match carry {
                    None => {
                        Some(now + SimDuration::from_secs_f64(gap).max(SimDuration::from_micros(1)))
                    }
                    Some(c) => {
                        // `c` starts at 0.5: arrival k is at round(Σ gaps), in µs.
                        *c += gap * 1e6;
                        let whole = c.floor();
                        *c -= whole;
                        Some(now + SimDuration::from_micros(whole as u64))
                    }
                }
            }
            Mode::Closed { .. } => None,
        }
    }

    /// The next arrival under `clients.schedule`: constant spacing from
    /// the start of the step in force, or Poisson at its rate (memoryless,
    /// so a draw that crosses a step is drawn again from the step's start
    /// at the new rate); `None` after the last step if its rate is 0.
    fn next_scheduled_arrival(&mut self, now: SimTime) -> Option<SimTime> {
        let crate::spec::Clients::Open {
            rate_per_s: base,
            schedule,
            ..
        } = &self.model.clients
        else {
            return None;
        };
        let Mode::Open {
            arrivals,
            next_k,
            carry,
            step: Some((i, from)),
            ..
        } = &mut self.clients.mode
        else {
            return None;
        };
        loop {
            let rate = if *i == 0 { *base } else { schedule[*i - 1].1 };
            let until = schedule.get(*i).map(|s| s.0);
            let t = if rate <= 0.0 {
                None
            } else {
                match arrivals {
                    Arrivals::Constant => {
                        let t = *from + SimDuration::from_secs_f64(*next_k as f64 / rate);
                        Some(t.max(now))
                    }
                    Arrivals::Poisson => {
                        let gap: f64 = Exp::new(rate).ok()?.sample(&mut self.rng.arrivals);
                        let start = now.max(*from);
                        if rate > ROUNDED_GAPS_UP_TO {
                            // As without a schedule: the running sum of the
                            // gaps rounded, so that none is lost to the µs.
                            let c = carry.get_or_insert(0.5);
                            *c += gap * 1e6;
                            let whole = c.floor();
                            *c -= whole;
                            Some(start + SimDuration::from_micros(whole as u64))
                        } else {
                            Some(
                                start
                                    + SimDuration::from_secs_f64(gap)
                                        .max(SimDuration::from_micros(1)),
                            )
                        }
                    }
                }
            };
            match (t, until) {
                (Some(t), None) => {
                    *next_k += 1;
                    return Some(t);
                }
                (Some(t), Some(u)) if t < u => {
                    *next_k += 1;
                    return Some(t);
                }
                (None, None) => return None,
                (_, Some(u)) => {
                    *i += 1;
                    *from = u;
                    *next_k = 0;
                }
            }
        }
    }

    /// An open-loop arrival: the next one is scheduled, and the request
    /// leaves now.
    pub(crate) fn on_arrival(&mut self) {
        if let Some(t) = self.next_arrival_time() {
            self.q.schedule_in_lane(lane::ARRIVAL, t, Event::Arrival);
        }
        self.start_request(None);
    }

    /// An open-loop arrival with `send_jitter`: the next one is scheduled,
    /// and the request leaves after its drawn delay (`Event::Send`; the
    /// schedule of arrivals is not moved by it, as a load generator's timer
    /// is not). A separate event, so that arrivals without jitter pay
    /// nothing for it.
    pub(crate) fn on_jittered_arrival(&mut self) {
        if let Some(t) = self.next_arrival_time() {
            self.q
                .schedule_in_lane(lane::ARRIVAL, t, Event::JitteredArrival);
        }
        let delay = match &self.clients.jitter {
            Some(j) => j.sample(&mut self.rng.jitter),
            None => crate::engine::SimDuration::ZERO,
        };
        let at = self.q.now() + delay;
        self.q.schedule(at, Event::Send);
    }

    /// A jittered open-loop request leaves.
    pub(crate) fn on_send(&mut self) {
        self.start_request(None);
    }

    pub(crate) fn on_client_wake(&mut self, client: u32) {
        let now = self.q.now();
        if let Mode::Closed { last_sent, .. } = &mut self.clients.mode {
            last_sent[client as usize] = now;
        }
        self.start_request(Some(client));
    }

    /// A request ended (answered or timed out): a closed-loop client thinks,
    /// then sends again (at least [`MIN_CYCLE`] after its previous request).
    pub(crate) fn client_done(&mut self, client: Option<u32>) {
        if let (
            Some(c),
            Mode::Closed {
                think_time,
                last_sent,
                ..
            },
        ) = (client, &self.clients.mode)
        {
            let at = self.q.now() + *think_time;
            let floor = last_sent[c as usize] + MIN_CYCLE;
            if at >= floor {
                self.q
                    .schedule_in_lane(lane::THINK, at, Event::ClientWake(c));
            } else {
                // Off the lane: its times must not go backwards.
                self.q.schedule(floor, Event::ClientWake(c));
            }
        }
    }

    /// Draws the gateway worker a new client connection lands on.
    pub(crate) fn pick_worker(&mut self) -> u16 {
        let workers = self.model.gateway.workers;
        if workers <= 1 {
            0
        } else {
            self.rng.gateway.random_range(0..workers) as u16
        }
    }

    /// `clients.timeout` after a request starts, the client gives up on it
    /// (`Event::ClientTimeout`, handled by `on_client_timeout` in gateway/mod.rs
    /// unless the request ended first).
    pub(crate) fn arm_client_timeout(&mut self, slot: u32, generation: u32) {
        if let Some(t) = self.model.clients.timeout() {
            let at = self.q.now() + t;
            self.q.schedule_in_lane(
                lane::CLIENT_TIMEOUT,
                at,
                Event::ClientTimeout { slot, generation },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::Model;
    use std::path::Path;

    fn run(arrivals: &str) -> crate::metrics::RunSummary {
        let m = Model::from_document(
            &serde_json::json!({
                "name": "s", "duration": "4s", "timeline_bucket": "1s",
                "clients": {"kind": "open", "rate_per_s": 10.0, "arrivals": arrivals,
                            "schedule": [{"at": "1s", "rate_per_s": 30.0}, {"at": "2s", "rate_per_s": 0.0},
                                         {"at": "3s", "rate_per_s": 5.0}]},
                "nodes": [{"name": "a"}]
            }),
            Path::new("s.json"),
        )
        .unwrap();
        crate::world::run(&m, 3)
    }

    #[test]
    fn a_schedule_changes_the_rate_at_each_step() {
        // Constant spacing restarts at each step: 10, 30, 0 and 5 per second.
        let s = run("constant");
        let per_s: Vec<u64> = s.timeline.rows.iter().map(|r| r.requests).collect();
        assert_eq!(per_s, [10, 30, 0, 5]);
        assert_eq!(s.client.requests, 45);
        // Poisson: about the same counts, none while the rate is 0.
        let s = run("poisson");
        let per_s: Vec<u64> = s.timeline.rows.iter().map(|r| r.requests).collect();
        assert_eq!(per_s[2], 0);
        assert!((15..=45).contains(&per_s[1]), "{per_s:?}");
    }
}
