//! The canonical scenario as a bare Rust event loop: the limit hcsim's event
//! loop is measured against (`scripts/bench.py compare` runs it beside hcsim
//! and the Python heapq model, in one run, on one machine).
//!
//! It is `scripts/bench/heapq_model.py` line for line: two nodes, Poisson
//! clients, smooth round-robin with nginx's `max_fails`/`fail_timeout`
//! (`ngx_http_upstream_get_peer`, `ngx_http_upstream_free_round_robin_peer`),
//! 64 workers per node with a FIFO queue, exponential service with a mean of
//! 5 ms, node A answering 503 with p = 2% and the attempt retried once on the
//! other node. Events are kept in a `std::collections::BinaryHeap` in
//! integer nanoseconds, drawn from the generator hcsim uses
//! (Xoshiro256++, seeded like the Python model: arrivals from `seed`,
//! attempts from `seed + 1`). Nothing is recorded beyond the counts printed:
//! no histograms, no timeline, no policy objects; what hcsim does beyond
//! this is what it costs over the limit.
//!
//! `cargo build --release --bench bare_loop` (its path: `cargo build
//! --message-format=json`); run it with `--rps 10000 --seconds 60 --json`.
//! Without arguments (as `cargo test --benches` runs it) it simulates one
//! second and prints its counts.

use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;
use rand_distr::{Distribution, Exp, StandardUniform};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

const MAX_FAILS: u32 = 3;
const FAIL_TIMEOUT_NS: u64 = 5_000_000_000;
const SLOTS: u32 = 64;
const SERVICE_MEAN_S: f64 = 0.005;
const P_FAIL_A: f64 = 0.02;

#[derive(Default)]
struct Peer {
    current_weight: i64,
    fails: u32,
    checked: u64,
    accessed: u64,
    busy: u32,
    queue: VecDeque<(u64, u64, bool)>,
    attempts: u64,
    n5xx: u64,
    disables: u64,
}

/// An event: its time, a sequence number (FIFO among equal times), and
/// what it is: an arrival (`node == u8::MAX`) or an attempt done at `node`.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    at: u64,
    seq: u64,
    node: u8,
    t0: u64,
    failed: bool,
}

const ARRIVAL: u8 = u8::MAX;

struct Sim {
    peers: [Peer; 2],
    heap: BinaryHeap<Reverse<Event>>,
    seq: u64,
    rng_att: Xoshiro256PlusPlus,
    service: Exp<f64>,
}

fn ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

impl Sim {
    fn push(&mut self, at: u64, node: u8, t0: u64, failed: bool) {
        self.seq += 1;
        let seq = self.seq;
        self.heap.push(Reverse(Event {
            at,
            seq,
            node,
            t0,
            failed,
        }));
    }

    /// Smooth weighted round-robin over the peers not failed and not `exclude`.
    fn select(&mut self, now: u64, exclude: Option<usize>) -> Option<usize> {
        let mut best: Option<usize> = None;
        let mut total = 0;
        for i in 0..2 {
            let p = &self.peers[i];
            if Some(i) == exclude
                || (p.fails >= MAX_FAILS && now.saturating_sub(p.checked) <= FAIL_TIMEOUT_NS)
            {
                continue;
            }
            self.peers[i].current_weight += 1;
            total += 1;
            let w = self.peers[i].current_weight;
            if best.is_none_or(|b| w > self.peers[b].current_weight) {
                best = Some(i);
            }
        }
        if let Some(b) = best {
            let p = &mut self.peers[b];
            p.current_weight -= total;
            if now.saturating_sub(p.checked) > FAIL_TIMEOUT_NS {
                p.checked = now;
            }
        }
        best
    }

    fn dispatch(&mut self, now: u64, i: usize, t0: u64) {
        let svc = ns(self.service.sample(&mut self.rng_att));
        let failed =
            i == 0 && Distribution::<f64>::sample(&StandardUniform, &mut self.rng_att) < P_FAIL_A;
        let p = &mut self.peers[i];
        p.attempts += 1;
        if p.busy < SLOTS {
            p.busy += 1;
            self.push(now + svc, i as u8, t0, failed);
        } else {
            p.queue.push_back((svc, t0, failed));
        }
    }
}

fn arg(args: &[String], name: &str) -> Option<f64> {
    let at = args.iter().position(|a| a == name)?;
    let v = args.get(at + 1)?;
    Some(
        v.parse()
            .unwrap_or_else(|_| panic!("{name} takes a number, not {v}")),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rps = arg(&args, "--rps").unwrap_or(10_000.0);
    let seconds = arg(&args, "--seconds").unwrap_or(1.0);
    let seed = arg(&args, "--seed").unwrap_or(1.0) as u64;
    let json = args.iter().any(|a| a == "--json");

    let mut rng_arr = Xoshiro256PlusPlus::seed_from_u64(seed);
    let arrivals = Exp::new(rps).expect("a positive rate");
    let mut sim = Sim {
        peers: Default::default(),
        heap: BinaryHeap::new(),
        seq: 0,
        rng_att: Xoshiro256PlusPlus::seed_from_u64(seed + 1),
        service: Exp::new(1.0 / SERVICE_MEAN_S).expect("a positive rate"),
    };
    let end = ns(seconds);
    let (mut arrived, mut done, mut retries, mut client5xx) = (0u64, 0u64, 0u64, 0u64);
    let mut lat_sum_ns = 0u64;
    let mut events = 0u64;
    let t_start = Instant::now();
    let first = ns(arrivals.sample(&mut rng_arr));
    sim.push(first, ARRIVAL, 0, false);
    while let Some(Reverse(ev)) = sim.heap.pop() {
        let now = ev.at;
        if now >= end {
            break;
        }
        events += 1;
        if ev.node == ARRIVAL {
            let next = now + ns(arrivals.sample(&mut rng_arr));
            sim.push(next, ARRIVAL, 0, false);
            arrived += 1;
            match sim.select(now, None) {
                None => client5xx += 1,
                Some(j) => sim.dispatch(now, j, now),
            }
            continue;
        }
        let i = ev.node as usize;
        let next = sim.peers[i].queue.pop_front();
        match next {
            Some((svc, qt0, qf)) => sim.push(now + svc, i as u8, qt0, qf),
            None => sim.peers[i].busy -= 1,
        }
        let p = &mut sim.peers[i];
        if ev.failed {
            p.n5xx += 1;
            p.fails += 1;
            p.accessed = now;
            p.checked = now;
            if p.fails == MAX_FAILS {
                p.disables += 1;
            }
            if i == 0 {
                retries += 1;
                match sim.select(now, Some(i)) {
                    None => client5xx += 1,
                    Some(j) => sim.dispatch(now, j, ev.t0),
                }
            } else {
                client5xx += 1;
            }
            continue;
        }
        if p.accessed < p.checked {
            p.fails = 0;
        }
        done += 1;
        lat_sum_ns += now - ev.t0;
    }
    let wall = t_start.elapsed().as_secs_f64();
    let [a, b] = &sim.peers;
    let att = a.attempts + b.attempts;
    let share_a = if att > 0 {
        (a.attempts as f64 / att as f64 * 1e6).round() / 1e6
    } else {
        0.0
    };
    let fields = [
        ("model", "\"bare-rust\"".to_string()),
        ("rps", format!("{rps}")),
        ("seconds", format!("{seconds}")),
        ("seed", format!("{seed}")),
        ("requests", format!("{arrived}")),
        ("completed", format!("{done}")),
        ("retries", format!("{retries}")),
        ("client_5xx", format!("{client5xx}")),
        ("attempts_A", format!("{}", a.attempts)),
        ("attempts_B", format!("{}", b.attempts)),
        ("share_A", format!("{share_a}")),
        ("A_5xx", format!("{}", a.n5xx)),
        ("A_disables", format!("{}", a.disables)),
        (
            "mean_latency_ms",
            format!("{:.4}", lat_sum_ns as f64 / 1e6 / done.max(1) as f64),
        ),
        ("model_events", format!("{events}")),
        ("wall_s", format!("{wall:.6}")),
        ("model_events_per_s", format!("{:.0}", events as f64 / wall)),
    ];
    if json {
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("\"{k}\": {v}"))
            .collect();
        println!("{{{}}}", body.join(", "));
    } else {
        for (k, v) in fields {
            println!("{k:20} {}", v.trim_matches('"'));
        }
    }
}
