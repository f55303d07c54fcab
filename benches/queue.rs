//! Micro-benchmarks of the event queue at the sizes a run produces.
//!
//! - `hold/*`: the classic hold model. `n` events are pending; each step pops
//!   the earliest and schedules one an exponential 5 ms later (a service
//!   completion). The canonical scenario keeps about 50 pending; 500 and 5000
//!   stand for 100k rps or many nodes. `binary_heap` is the plain
//!   `BinaryHeap` over `(time, seq)` that the engine used before the wheel.
//! - `constant_delay/*`: timers armed with one constant delay (a read or
//!   client timeout): in a FIFO lane versus in the general queue, with
//!   `n` pending (60 s at 10k/s would be 600k).
//!
//! `cargo bench --bench queue`; under `cargo test --all-targets` each runs once.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hcsim::engine::{EventQueue, SimTime};
use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;
use rand_distr::{Distribution, Exp};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;

/// An event as small as the model's (slot, generation, node).
#[derive(Copy, Clone)]
struct Ev {
    slot: u32,
    generation: u32,
    node: u32,
}

/// `(time, seq, slot, generation, node)`, ordered by time then seq.
type PlainEntry = (u64, u64, u32, u32, u32);

/// The reference: one binary heap ordered by `(time, seq)`.
#[derive(Default)]
struct PlainHeap {
    heap: BinaryHeap<Reverse<PlainEntry>>,
    seq: u64,
}

impl PlainHeap {
    fn schedule(&mut self, t: SimTime, e: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((
            t.as_micros(),
            self.seq,
            e.slot,
            e.generation,
            e.node,
        )));
    }
    fn pop(&mut self) -> Option<(SimTime, Ev)> {
        let Reverse((t, _, slot, generation, node)) = self.heap.pop()?;
        Some((
            SimTime::from_micros(t),
            Ev {
                slot,
                generation,
                node,
            },
        ))
    }
}

/// The two queues behind one interface, for the hold model.
trait Queue {
    fn schedule(&mut self, t: SimTime, e: Ev);
    fn pop(&mut self) -> Option<(SimTime, Ev)>;
}
impl Queue for PlainHeap {
    fn schedule(&mut self, t: SimTime, e: Ev) {
        PlainHeap::schedule(self, t, e)
    }
    fn pop(&mut self) -> Option<(SimTime, Ev)> {
        PlainHeap::pop(self)
    }
}
impl Queue for EventQueue<Ev> {
    fn schedule(&mut self, t: SimTime, e: Ev) {
        EventQueue::schedule(self, t, e)
    }
    fn pop(&mut self) -> Option<(SimTime, Ev)> {
        EventQueue::pop(self)
    }
}

const STEPS: u64 = 100_000;

/// `n` pending, `STEPS` times: pop the earliest, schedule one Exp(5 ms) later.
fn hold<Q: Queue>(q: &mut Q, n: u32) -> u64 {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let exp = Exp::new(1.0 / 5000.0).unwrap();
    let later = |now: SimTime, rng: &mut Xoshiro256PlusPlus| {
        SimTime::from_micros(now.as_micros() + exp.sample(rng) as u64)
    };
    for i in 0..n {
        let e = Ev {
            slot: i,
            generation: 0,
            node: i % 2,
        };
        q.schedule(later(SimTime::ZERO, &mut rng), e);
    }
    let mut acc = 0u64;
    for _ in 0..STEPS {
        let (now, mut e) = q.pop().expect("pending events");
        acc = acc.wrapping_add(e.slot as u64);
        e.generation += 1;
        q.schedule(later(now, &mut rng), e);
    }
    acc
}

fn bench_hold(c: &mut Criterion) {
    let mut g = c.benchmark_group("hold");
    g.throughput(Throughput::Elements(STEPS));
    for n in [50u32, 500, 5000] {
        g.bench_with_input(BenchmarkId::new("binary_heap", n), &n, |b, &n| {
            b.iter(|| black_box(hold(&mut PlainHeap::default(), n)))
        });
        g.bench_with_input(BenchmarkId::new("event_queue", n), &n, |b, &n| {
            b.iter(|| black_box(hold(&mut EventQueue::new(), n)))
        });
    }
    g.finish();
}

/// `n` timers pending at a constant delay, 10 µs apart; `STEPS` times: pop
/// the earliest, arm the next. `lane`: in a FIFO lane, else in the general queue.
fn constant_delay(n: u64, lane: bool) -> u64 {
    let mut q = EventQueue::new();
    let delay = n * 10;
    let arm = |q: &mut EventQueue<Ev>, t: u64, i: u64| {
        let e = Ev {
            slot: i as u32,
            generation: 0,
            node: 0,
        };
        let at = SimTime::from_micros(t + delay);
        if lane {
            q.schedule_in_lane(0, at, e)
        } else {
            q.schedule(at, e)
        }
    };
    for i in 0..n {
        arm(&mut q, i * 10, i);
    }
    let mut acc = 0u64;
    for i in 0..STEPS {
        let (now, e) = q.pop().expect("pending timers");
        acc = acc.wrapping_add(e.slot as u64);
        arm(&mut q, now.as_micros(), n + i);
    }
    acc
}

fn bench_constant_delay(c: &mut Criterion) {
    let mut g = c.benchmark_group("constant_delay");
    g.throughput(Throughput::Elements(STEPS));
    for n in [1_000u64, 100_000] {
        g.bench_with_input(BenchmarkId::new("queue", n), &n, |b, &n| {
            b.iter(|| black_box(constant_delay(n, false)))
        });
        g.bench_with_input(BenchmarkId::new("lane", n), &n, |b, &n| {
            b.iter(|| black_box(constant_delay(n, true)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_hold, bench_constant_delay);
criterion_main!(benches);
