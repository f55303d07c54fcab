//! The future-event list: a two-level timing wheel, a binary heap for what
//! lies beyond both, and FIFO lanes for timers whose delay is a constant; all
//! ordered by `(time, insertion sequence)`.
//!
//! Most events of a busy model are a few milliseconds ahead (a service
//! completion, a network hop). They go into a wheel of [`BUCKETS`] buckets of
//! `2^BUCKET_SHIFT` µs each: pushing one is a list push, and the bucket
//! about to run is sorted once when the wheel reaches it (a handful of
//! entries). Unlike a heap, the wheel does no unpredictable comparisons per
//! push or pop, which is where a heap of a few dozen events spends its time.
//!
//! Events beyond the first level's horizon (policy timers, probe timeouts,
//! faults) go into a second level of [`L2_SLOTS`] slots of `2^L2_SHIFT` µs,
//! unsorted too. Once a second-level slot's whole range lies within the first
//! level's horizon, its entries move down into the first level's buckets (a
//! relink of each list node, no copy). A fleet of gateway replicas arms
//! thousands of probe timers a second 1 to 5 s ahead; in a heap each of them
//! would cost a push and a pop of `log n` cache misses. Only events beyond the
//! second level's horizon (268 s) wait in the heap.
//!
//! A timer armed with the same delay every time (a read timeout, a client
//! timeout, a one-way network delay) fires in the order it was armed, so a
//! plain FIFO keeps those events sorted at O(1) per event. At 10k requests/s a
//! 60 s read timeout keeps 600k timers pending: in a heap every push and pop
//! would walk 20 levels of cache misses; in a lane they cost a queue push.
//!
//! Every entry draws its sequence number from one counter, and every part
//! yields its entries in `(time, seq)` order, so the order of events is
//! exactly the one a single sorted list would give.

use super::time::SimTime;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// A wheel bucket spans `2^BUCKET_SHIFT` µs (32 µs: at 10k requests/s
/// most buckets hold one event or none, so that the sort of the bucket
/// about to run, whose comparisons no branch predictor can guess, is short).
pub const BUCKET_SHIFT: u32 = 5;
/// Buckets in the wheel: its horizon is `BUCKETS << BUCKET_SHIFT` µs (262 ms).
pub const BUCKETS: usize = 8192;
const SLOT_MASK: usize = BUCKETS - 1;
/// A second-level slot spans `2^L2_SHIFT` µs (65.5 ms, 2,048 buckets).
pub const L2_SHIFT: u32 = 16;
/// Second-level slots: their horizon is `L2_SLOTS << L2_SHIFT` µs (268 s).
pub const L2_SLOTS: usize = 4096;
const L2_MASK: usize = L2_SLOTS - 1;
/// Buckets per second-level slot, as a shift.
const PER_SLOT: u32 = L2_SHIFT - BUCKET_SHIFT;

struct Entry<E> {
    /// Time, then insertion sequence: orders by time, then FIFO.
    key: Key,
    event: E,
}

/// An entry's place in the order: its time in µs, then its insertion
/// sequence (the derived order compares them in that order). Two words
/// rather than one `u128`: a `u128` made of two words was written to the
/// stack as two 8-byte stores and read back by one 16-byte load, which the
/// store buffer cannot forward (a stall on every push and every refill).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    us: u64,
    seq: u64,
}

impl Key {
    const MAX: Key = Key {
        us: u64::MAX,
        seq: u64::MAX,
    };
}

fn key(time: SimTime, seq: u64) -> Key {
    Key {
        us: time.as_micros(),
        seq,
    }
}

fn time_of(key: Key) -> SimTime {
    SimTime::from_micros(key.us)
}

/// The wheel bucket (absolute, not modulo the wheel) holding `key`.
fn bucket(key: Key) -> u64 {
    key.us >> BUCKET_SHIFT
}

/// The second-level slot (absolute) holding `key`.
fn slot2(key: Key) -> u64 {
    key.us >> L2_SHIFT
}

/// The first set bit at or after position `start` of a ring of bits,
/// counted from `start` on as an absolute number. Requires a set bit.
#[inline]
fn next_set<const N: usize>(bits: &[u64; N], start: u64) -> u64 {
    let mask = N * 64 - 1;
    let mut s = start as usize & mask;
    let mut off = 0u64;
    loop {
        let word = bits[s / 64] >> (s % 64);
        if word != 0 {
            return start + off + word.trailing_zeros() as u64;
        }
        let step = 64 - s % 64;
        off += step as u64;
        s = (s + step) & mask;
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest entry;
    /// equal times pop in insertion order (FIFO).
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// Events at arbitrary times: a timing wheel over the next [`BUCKETS`]
/// buckets, its current bucket kept sorted, a second level of coarser slots
/// beyond it, and a heap beyond both.
///
/// Invariant (in time order, each strictly before the next): `run`, the
/// first-level slots, the second-level slots, `far`. `run` holds the
/// entries of buckets up to `cur`, sorted; slot `b % BUCKETS` holds those of
/// bucket `b` for `cur < b < l2_next << PER_SLOT` (within `BUCKETS` of
/// `cur`); second-level slot `c % L2_SLOTS` holds those of slot `c` for
/// `l2_next <= c < l2_next + L2_SLOTS`; `far` holds the rest. `l2_next` is
/// `(cur + BUCKETS) >> PER_SLOT`: the first second-level slot not wholly
/// within the first level's horizon. Slots are unsorted lists linked
/// through `nodes`.
struct Wheel<E> {
    /// Absolute bucket number of `run`.
    cur: u64,
    run: VecDeque<Entry<E>>,
    /// First node of each slot's list, or `NIL`.
    heads: Vec<u32>,
    /// Slot entries of both levels. Freed nodes are reused last-in
    /// first-out, so the few dozen a busy run keeps pending stay in cache.
    nodes: Vec<Node<E>>,
    /// First free node, or `NIL`.
    free: u32,
    /// Bit `s` set: slot `s` is not empty.
    occupied: [u64; BUCKETS / 64],
    /// Entries in the slots.
    in_slots: usize,
    /// Absolute number of the first second-level slot not moved down.
    l2_next: u64,
    /// First node of each second-level slot's list, or `NIL`.
    heads2: Vec<u32>,
    /// Bit `s` set: second-level slot `s` is not empty.
    occupied2: [u64; L2_SLOTS / 64],
    /// Entries in the second-level slots.
    in_l2: usize,
    far: BinaryHeap<Entry<E>>,
}

const NIL: u32 = u32::MAX;

struct Node<E> {
    key: Key,
    /// Next node of the same slot (or of the free list).
    next: u32,
    /// The event (stale while the node is free: events are `Copy`, so a
    /// node is read in place, never taken out of an `Option`, whose copy
    /// through the stack in odd-sized pieces stalled the store buffer).
    event: E,
}

impl<E: Copy> Wheel<E> {
    fn new() -> Self {
        Wheel {
            cur: 0,
            run: VecDeque::with_capacity(64),
            heads: vec![NIL; BUCKETS],
            nodes: Vec::with_capacity(256),
            free: NIL,
            occupied: [0; BUCKETS / 64],
            in_slots: 0,
            l2_next: (BUCKETS >> PER_SLOT) as u64,
            heads2: vec![NIL; L2_SLOTS],
            occupied2: [0; L2_SLOTS / 64],
            in_l2: 0,
            far: BinaryHeap::new(),
        }
    }

    fn len(&self) -> usize {
        self.run.len() + self.in_slots + self.in_l2 + self.far.len()
    }

    /// The first bucket the first level does not cover.
    #[inline]
    fn limit(&self) -> u64 {
        self.l2_next << PER_SLOT
    }

    /// Adds the event `make` makes at `key`; `now` is the queue's clock.
    /// The common case (a bucket of the first level ahead) writes the key
    /// and the event straight into their node, the event made in the
    /// branch that stores it: built once for every branch, it lived on the
    /// stack, and its 16-byte copy waited on the narrower stores that wrote
    /// it, which the store buffer cannot forward (a stall per push; so did
    /// the key as one `u128`).
    #[inline(always)]
    fn push_with(&mut self, key: Key, make: impl FnOnce() -> E, now: SimTime) {
        let b = bucket(key);
        if b > self.cur && b < self.limit() {
            self.put_in_slot(b, key, make);
        } else {
            self.push_other(Entry { key, event: make() }, now);
        }
    }

    /// [`push_with`](Self::push_with) into the run or beyond the first level.
    #[inline(never)]
    fn push_other(&mut self, e: Entry<E>, now: SimTime) {
        if bucket(e.key) <= self.cur {
            self.insert_into_run(e);
        } else {
            self.push_beyond(e, now);
        }
    }

    /// Beyond the first level's horizon. An empty first level does not turn
    /// by itself (lane events may have moved the clock on), so first bring
    /// it to `now`.
    fn push_beyond(&mut self, e: Entry<E>, now: SimTime) {
        let now_b = bucket(key(now, 0));
        if self.run.is_empty() && self.in_slots == 0 && now_b > self.cur {
            self.rebase(now_b);
            self.push_with(e.key, || e.event, now);
        } else if slot2(e.key) < self.l2_next + L2_SLOTS as u64 {
            self.put_in_l2(slot2(e.key), e);
        } else {
            self.far.push(e);
        }
    }

    /// A node holding `key` and `event`, followed by `next`.
    #[inline(always)]
    fn alloc(&mut self, key: Key, make: impl FnOnce() -> E, next: u32) -> u32 {
        let i = self.free;
        if i == NIL {
            return self.alloc_new(key, make(), next);
        }
        let node = &mut self.nodes[i as usize];
        self.free = node.next;
        node.key = key;
        node.next = next;
        node.event = make();
        i
    }

    /// [`alloc`](Self::alloc) with no free node: a new one.
    #[cold]
    #[inline(never)]
    fn alloc_new(&mut self, key: Key, event: E, next: u32) -> u32 {
        self.nodes.push(Node { key, next, event });
        (self.nodes.len() - 1) as u32
    }

    #[inline(always)]
    fn put_in_slot(&mut self, b: u64, key: Key, make: impl FnOnce() -> E) {
        let s = b as usize & SLOT_MASK;
        self.heads[s] = self.alloc(key, make, self.heads[s]);
        self.occupied[s / 64] |= 1 << (s % 64);
        self.in_slots += 1;
    }

    #[inline]
    fn put_in_l2(&mut self, c: u64, e: Entry<E>) {
        let s = c as usize & L2_MASK;
        self.heads2[s] = self.alloc(e.key, || e.event, self.heads2[s]);
        self.occupied2[s / 64] |= 1 << (s % 64);
        self.in_l2 += 1;
    }

    /// Inserts into the sorted run; a same-time burst appends at O(1).
    fn insert_into_run(&mut self, e: Entry<E>) {
        if self.run.back().is_none_or(|b| b.key < e.key) {
            self.run.push_back(e);
        } else {
            let i = self.run.partition_point(|x| x.key < e.key);
            self.run.insert(i, e);
        }
    }

    /// The earliest key, turning the wheel to the next non-empty bucket if
    /// the run is used up.
    #[inline]
    fn front_key(&mut self) -> Option<Key> {
        if let Some(e) = self.run.front() {
            return Some(e.key);
        }
        if self.in_slots > 0 || self.in_l2 > 0 {
            self.refill();
            return self.run.front().map(|e| e.key);
        }
        self.far.peek().map(|e| e.key)
    }

    /// The smallest key of the list starting at node `i`.
    fn list_min(&self, mut i: u32) -> Option<Key> {
        let mut min = None;
        while i != NIL {
            let node = &self.nodes[i as usize];
            min = Some(min.map_or(node.key, |m: Key| m.min(node.key)));
            i = node.next;
        }
        min
    }

    /// Like `front_key`, without turning the wheel.
    fn peek_key(&self) -> Option<Key> {
        if let Some(e) = self.run.front() {
            return Some(e.key);
        }
        if self.in_slots > 0 {
            let s = next_set(&self.occupied, self.cur + 1) as usize & SLOT_MASK;
            return self.list_min(self.heads[s]);
        }
        if self.in_l2 > 0 {
            let s = next_set(&self.occupied2, self.l2_next) as usize & L2_MASK;
            return self.list_min(self.heads2[s]);
        }
        self.far.peek().map(|e| e.key)
    }

    /// Removes the earliest entry (the one `front_key` returned).
    #[inline]
    fn pop_front(&mut self) -> Option<Entry<E>> {
        if let Some(e) = self.run.pop_front() {
            return Some(e);
        }
        if self.in_slots > 0 || self.in_l2 > 0 {
            self.refill();
            return self.run.pop_front();
        }
        // Wheel empty: the earliest entry is in the heap.
        let e = self.far.pop()?;
        self.rebase(bucket(e.key));
        Some(e)
    }

    /// The run is used up and a slot of either level is not: turn the
    /// wheel to the next non-empty bucket. With the first level empty, first
    /// jump to where the first non-empty second-level slot `c` moves down:
    /// bucket `c << PER_SLOT` less the first level's reach beyond one slot,
    /// which is after `cur` (`c >= l2_next`) and before every entry of `c`.
    #[cold]
    fn refill(&mut self) {
        if self.in_slots == 0 {
            let c = next_set(&self.occupied2, self.l2_next);
            self.turn_to((c << PER_SLOT) - (BUCKETS as u64 - (1 << PER_SLOT)));
        }
        self.advance();
    }

    /// The run is used up: move to the next non-empty bucket and sort it.
    /// Requires `in_slots > 0`.
    fn advance(&mut self) {
        let b = next_set(&self.occupied, self.cur + 1);
        let s = b as usize & SLOT_MASK;
        // Entries moved down from the second level are after `b`.
        self.turn_to(b);
        self.occupied[s / 64] &= !(1 << (s % 64));
        let mut i = std::mem::replace(&mut self.heads[s], NIL);
        while i != NIL {
            let node = &mut self.nodes[i as usize];
            let next = node.next;
            self.run.push_back(Entry {
                key: node.key,
                event: node.event,
            });
            node.next = self.free;
            self.free = i;
            self.in_slots -= 1;
            i = next;
        }
        if self.run.len() > 1 {
            self.run.make_contiguous().sort_unstable_by_key(|e| e.key);
        }
    }

    /// The wheel's first level (run and slots) is empty and time has reached
    /// bucket `b`: move the horizon there.
    #[inline]
    fn rebase(&mut self, b: u64) {
        debug_assert!(self.run.is_empty() && self.in_slots == 0);
        if b > self.cur {
            self.turn_to(b);
        }
    }

    /// Makes `b` (after `cur`, before every pending bucket but the run's)
    /// the current bucket, and moves down what the horizon now covers.
    #[inline]
    fn turn_to(&mut self, b: u64) {
        debug_assert!(b > self.cur);
        self.cur = b;
        let next = (b + BUCKETS as u64) >> PER_SLOT;
        if next > self.l2_next {
            self.cascade(next);
        }
    }

    /// Moves the second-level slots before `next` into the first level, and
    /// the heap entries the second level now covers into the wheel.
    #[cold]
    fn cascade(&mut self, next: u64) {
        while self.in_l2 > 0 {
            let c = next_set(&self.occupied2, self.l2_next);
            if c >= next {
                break;
            }
            self.move_down(c);
        }
        self.l2_next = next;
        if !self.far.is_empty() {
            self.pull_far();
        }
    }

    /// Relinks the nodes of second-level slot `c` (now wholly within the
    /// first level's horizon) into the first level's slots, or into the run
    /// for those at or before `cur` (only after a rebase).
    fn move_down(&mut self, c: u64) {
        let s2 = c as usize & L2_MASK;
        self.occupied2[s2 / 64] &= !(1 << (s2 % 64));
        let mut i = std::mem::replace(&mut self.heads2[s2], NIL);
        while i != NIL {
            let node = &mut self.nodes[i as usize];
            let next = node.next;
            let b = bucket(node.key);
            self.in_l2 -= 1;
            if b > self.cur {
                let s = b as usize & SLOT_MASK;
                node.next = self.heads[s];
                self.heads[s] = i;
                self.occupied[s / 64] |= 1 << (s % 64);
                self.in_slots += 1;
            } else {
                let (key, event) = (node.key, node.event);
                node.next = self.free;
                self.free = i;
                self.insert_into_run(Entry { key, event });
            }
            i = next;
        }
    }

    /// Moves heap entries that the second level now covers into the wheel.
    fn pull_far(&mut self) {
        let end = self.l2_next + L2_SLOTS as u64;
        while let Some(e) = self.far.peek() {
            if slot2(e.key) >= end {
                return;
            }
            let Some(e) = self.far.pop() else { return };
            let b = bucket(e.key);
            if b <= self.cur {
                self.insert_into_run(e);
            } else if b < self.limit() {
                self.put_in_slot(b, e.key, || e.event);
            } else {
                self.put_in_l2(slot2(e.key), e);
            }
        }
    }
}

/// Lanes, numbered `0..MAX_LANES`.
pub const MAX_LANES: usize = 64;

/// A FIFO of events armed with one constant delay.
struct Lane<E> {
    queue: VecDeque<Entry<E>>,
    /// The time of the lane's last event: lanes must be monotonic.
    last: SimTime,
}

/// Scheduling into the past is an engine bug.
#[cold]
#[track_caller]
fn refuse_past_event(time: SimTime, now: SimTime) -> ! {
    panic!("event scheduled in the past: {time} < now {now}");
}

#[cold]
#[track_caller]
fn refuse_lane_event(lane: usize, time: SimTime, now: SimTime, last: SimTime) -> ! {
    if time < now {
        refuse_past_event(time, now);
    }
    panic!("lane {lane} is not monotonic: {time} after {last}");
}

/// Pending events. Same-time events run in the order they were scheduled.
pub struct EventQueue<E> {
    wheel: Wheel<E>,
    lanes: Vec<Lane<E>>,
    /// Bit `i` set: lane `i` is not empty (so `pop` looks only at those).
    busy_lanes: u64,
    seq: u64,
    now: SimTime,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

/// Where the earliest event is.
#[derive(Copy, Clone)]
enum From {
    Wheel,
    Lane(usize),
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            wheel: Wheel::new(),
            lanes: Vec::new(),
            busy_lanes: 0,
            seq: 0,
            now: SimTime::ZERO,
            popped: 0,
        }
    }

    /// The time of the event being processed (or of the last one popped).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Number of events popped so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        self.wheel.len() + self.lanes.iter().map(|l| l.queue.len()).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedules `event` at `time`. Scheduling into the past is an engine bug.
    #[inline(always)]
    pub fn schedule(&mut self, time: SimTime, event: E) {
        self.schedule_with(time, || event);
    }

    /// [`schedule`](Self::schedule) with the event made where it is
    /// stored (see `Wheel::push_with`): for the hottest events, built from
    /// their fields at the call.
    #[inline(always)]
    pub fn schedule_with(&mut self, time: SimTime, make: impl FnOnce() -> E) {
        if time < self.now {
            refuse_past_event(time, self.now);
        }
        self.seq += 1;
        self.wheel.push_with(key(time, self.seq), make, self.now);
    }

    /// Schedules `event` at `time` in lane `lane` when that keeps the lane in
    /// time order, else as [`EventQueue::schedule`] does. Events come out in
    /// the same order either way (each is keyed by its time and sequence
    /// number); only where one waits differs. For a delay that is constant
    /// but for exceptions (a read deadline cut by a retry budget, a request
    /// on a kept connection that skips the connect).
    #[inline(always)]
    pub fn schedule_in_lane_or_wheel(&mut self, lane: usize, time: SimTime, event: E) {
        if lane < self.lanes.len() && time < self.lanes[lane].last {
            self.schedule(time, event);
        } else {
            self.schedule_in_lane(lane, time, event);
        }
    }

    /// Schedules `event` at `time` in FIFO lane `lane`. Every event of a lane
    /// must be at or after the lane's previous one (a constant delay from now).
    #[inline(always)]
    pub fn schedule_in_lane(&mut self, lane: usize, time: SimTime, event: E) {
        if lane >= self.lanes.len() {
            self.open_lane(lane);
        }
        let l = &mut self.lanes[lane];
        if time < self.now || time < l.last {
            refuse_lane_event(lane, time, self.now, l.last);
        }
        l.last = time;
        self.seq += 1;
        l.queue.push_back(Entry {
            key: key(time, self.seq),
            event,
        });
        self.busy_lanes |= 1 << lane;
    }

    #[cold]
    fn open_lane(&mut self, lane: usize) {
        assert!(lane < MAX_LANES, "at most {MAX_LANES} lanes");
        self.lanes.resize_with(lane + 1, || Lane {
            queue: VecDeque::new(),
            last: SimTime::ZERO,
        });
    }

    /// The earliest lane entry with a key below `bound`, if any.
    #[inline]
    fn earliest_lane(&self, mut bound: Key) -> Option<(usize, Key)> {
        let mut best = None;
        let mut busy = self.busy_lanes;
        while busy != 0 {
            let i = busy.trailing_zeros() as usize;
            busy &= busy - 1;
            if let Some(e) = self.lanes[i].queue.front()
                && e.key < bound
            {
                bound = e.key;
                best = Some((i, e.key));
            }
        }
        best
    }

    /// The time of the next event, if any.
    pub fn peek_time(&self) -> Option<SimTime> {
        let w = self.wheel.peek_key();
        let k = match self.earliest_lane(w.unwrap_or(Key::MAX)) {
            Some((_, k)) => k,
            None => w?,
        };
        Some(time_of(k))
    }

    /// Where the earliest event is, and its key.
    #[inline]
    fn earliest(&mut self) -> Option<(From, Key)> {
        let w = self.wheel.front_key();
        match self.earliest_lane(w.unwrap_or(Key::MAX)) {
            Some((lane, k)) => Some((From::Lane(lane), k)),
            None => w.map(|k| (From::Wheel, k)),
        }
    }

    /// Removes the earliest event if it is before `end`, advancing `now`.
    #[inline]
    pub fn pop_before(&mut self, end: SimTime) -> Option<(SimTime, E)> {
        let (from, k) = self.earliest()?;
        if time_of(k) >= end {
            return None;
        }
        self.take(from)
    }

    /// Removes the earliest event and advances `now` to its time.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let (from, _) = self.earliest()?;
        self.take(from)
    }

    #[inline]
    fn take(&mut self, from: From) -> Option<(SimTime, E)> {
        let e = match from {
            From::Wheel => self.wheel.pop_front()?,
            From::Lane(lane) => {
                let q = &mut self.lanes[lane].queue;
                let e = q.pop_front()?;
                if q.is_empty() {
                    self.busy_lanes &= !(1 << lane);
                }
                e
            }
        };
        let time = time_of(e.key);
        self.now = time;
        self.popped += 1;
        Some((time, e.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn pops_in_time_order_and_fifo_within_a_time() {
        let mut q = EventQueue::new();
        q.schedule(SimTime::from_micros(20), "c");
        q.schedule(SimTime::from_micros(10), "a");
        q.schedule(SimTime::from_micros(20), "d");
        q.schedule(SimTime::from_micros(10), "b");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["a", "b", "c", "d"]);
        assert_eq!(q.now(), SimTime::from_micros(20));
        assert_eq!(q.popped(), 4);
    }

    #[test]
    fn lanes_interleave_with_the_heap_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule_in_lane(0, SimTime::from_micros(10), "lane a");
        q.schedule(SimTime::from_micros(10), "heap b");
        q.schedule_in_lane(1, SimTime::from_micros(5), "lane c");
        q.schedule_in_lane(0, SimTime::from_micros(30), "lane d");
        q.schedule(SimTime::from_micros(20), "heap e");
        q.schedule_in_lane(1, SimTime::from_micros(10), "lane f");
        assert_eq!(q.len(), 6);
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(
            order,
            ["lane c", "lane a", "heap b", "lane f", "heap e", "lane d"]
        );
    }

    #[test]
    #[should_panic(expected = "not monotonic")]
    fn a_lane_refuses_an_earlier_event() {
        let mut q = EventQueue::new();
        q.schedule_in_lane(0, SimTime::from_micros(10), ());
        q.schedule_in_lane(0, SimTime::from_micros(5), ());
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn refuses_to_schedule_into_the_past() {
        let mut q = EventQueue::new();
        q.schedule(SimTime::from_micros(10), ());
        q.pop();
        q.schedule(SimTime::from_micros(5), ());
    }

    #[test]
    fn an_event_before_its_lane_s_last_waits_in_the_wheel_in_the_same_order() {
        let mut q: EventQueue<u32> = EventQueue::new();
        let t = |ms: u64| SimTime::ZERO + crate::engine::SimDuration::from_millis(ms);
        q.schedule_in_lane_or_wheel(0, t(10), 1);
        q.schedule_in_lane_or_wheel(0, t(5), 2); // before the lane's last: the wheel
        q.schedule_in_lane_or_wheel(0, t(10), 3);
        q.schedule(t(7), 4);
        q.schedule_in_lane_or_wheel(0, t(12), 5);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec![2, 4, 1, 3, 5]);
    }

    #[test]
    fn pop_before_leaves_later_events_and_peek_agrees() {
        let mut q = EventQueue::new();
        q.schedule(SimTime::from_micros(2_000_000), 'b');
        q.schedule(SimTime::from_micros(300), 'a');
        q.schedule_in_lane(3, SimTime::from_micros(5_000_000), 'c');
        assert_eq!(q.peek_time(), Some(SimTime::from_micros(300)));
        let end = SimTime::from_micros(1_000_000);
        assert_eq!(q.pop_before(end), Some((SimTime::from_micros(300), 'a')));
        assert_eq!(q.pop_before(end), None);
        assert_eq!(q.peek_time(), Some(SimTime::from_micros(2_000_000)));
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop().map(|(_, e)| e), Some('b'));
        assert_eq!(q.pop().map(|(_, e)| e), Some('c'));
        assert_eq!(q.pop(), None);
        assert_eq!(q.peek_time(), None);
        assert!(q.is_empty());
    }

    #[test]
    fn events_at_the_end_of_time_still_pop() {
        let mut q = EventQueue::new();
        q.schedule(SimTime::MAX, 2);
        q.schedule(SimTime::from_micros(1), 1);
        q.schedule(SimTime::MAX, 3);
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, [1, 2, 3]);
    }

    /// The reference: one sorted list of `(time, seq)`, as a plain heap gives.
    struct Reference(BinaryHeap<Entry<u64>>, u64);

    /// Random pushes (now, near, within the wheel, far beyond it, in lanes)
    /// and pops: the wheel, heap and lanes give exactly the reference order.
    #[test]
    fn matches_a_single_heap_on_random_workloads() {
        for seed in 0..20u64 {
            let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut q = EventQueue::new();
            let mut reference = Reference(BinaryHeap::new(), 0);
            let mut lane_last = [0u64; 4];
            // The last lane's delay varies around the wheel's horizon.
            let lane_delay = [0u64, 1_000, 60_000_000, 0];
            let mut id = 0u64;
            for _ in 0..20_000 {
                let now = q.now().as_micros();
                if rng.random_range(0..100) < 52 || q.is_empty() {
                    id += 1;
                    let (t, lane) = match rng.random_range(0..6) {
                        0 => (now, None),
                        1 => (now + rng.random_range(0..300), None),
                        2 => (now + rng.random_range(0..300_000), None),
                        3 => (now + rng.random_range(0..100_000_000), None),
                        _ => {
                            let l = rng.random_range(0..4);
                            let d = match l {
                                3 => rng.random_range(200_000..320_000),
                                _ => lane_delay[l],
                            };
                            ((now + d).max(lane_last[l]), Some(l))
                        }
                    };
                    match lane {
                        Some(l) => {
                            lane_last[l] = t;
                            q.schedule_in_lane(l * 20, SimTime::from_micros(t), id);
                        }
                        _ => q.schedule(SimTime::from_micros(t), id),
                    }
                    reference.1 += 1;
                    reference.0.push(Entry {
                        key: key(SimTime::from_micros(t), reference.1),
                        event: id,
                    });
                } else {
                    let want = reference.0.pop().map(|e| (time_of(e.key), e.event));
                    assert_eq!(q.peek_time(), want.map(|w| w.0), "seed {seed}");
                    assert_eq!(q.pop(), want, "seed {seed}");
                }
                assert_eq!(q.len(), reference.0.len());
            }
            while let Some(e) = reference.0.pop() {
                assert_eq!(q.pop(), Some((time_of(e.key), e.event)), "seed {seed}");
            }
            assert_eq!(q.pop(), None);
        }
    }

    /// A time for the two-level test: around the first level's horizon, on
    /// and beside second-level slot boundaries, 0.3 s to 300 s ahead, and
    /// beyond the second level's horizon.
    fn far_time(rng: &mut rand::rngs::Xoshiro256PlusPlus, now: u64) -> u64 {
        let edge = |x: u64, d: u64| (x + d).saturating_sub(2).max(now);
        match rng.random_range(0..9) {
            0 => now,
            1 => now + rng.random_range(0..300),
            2 => now + rng.random_range(0..300_000),
            3 | 4 => now + rng.random_range(300_000..300_000_000),
            5 => now + rng.random_range(260_000_000..2_000_000_000),
            6 => {
                // Near a second-level slot boundary, up to past its horizon.
                let c = (now >> L2_SHIFT) + rng.random_range(0..L2_SLOTS as u64 + 8);
                edge(c << L2_SHIFT, rng.random_range(0..5))
            }
            7 => {
                // Near the first level's reach, bucket-aligned or not.
                let reach = BUCKETS as u64;
                let b = (now >> BUCKET_SHIFT) + rng.random_range(reach - 324..reach + 76);
                edge(
                    b << BUCKET_SHIFT,
                    rng.random_range(0..(1 << BUCKET_SHIFT) + 4),
                )
            }
            _ => now + rng.random_range(0..5) * 1_000_000 + rng.random_range(0..3),
        }
    }

    /// Random pushes over both wheel levels and the heap, lanes that move
    /// the clock on while the wheel is idle, and pops, `pop_before` and
    /// `peek_time`: exactly the reference order.
    #[test]
    fn matches_a_single_heap_across_both_levels_and_the_heap() {
        for seed in 0..200u64 {
            let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut q = EventQueue::new();
            let mut reference = Reference(BinaryHeap::new(), 0);
            let mut lane_last = [0u64; 3];
            let lane_delay = [1_000_000u64, 5_000_000, 0];
            // Some seeds mostly push, some drain the queue now and then.
            let push_pct = rng.random_range(35..75);
            let mut id = 0u64;
            for _ in 0..4_000 {
                let now = q.now().as_micros();
                if rng.random_range(0..100) < push_pct || q.is_empty() {
                    id += 1;
                    let (t, lane) = if rng.random_range(0..5) == 0 {
                        let l = rng.random_range(0..3);
                        let d = match l {
                            2 => rng.random_range(100_000..70_000_000),
                            _ => lane_delay[l],
                        };
                        ((now + d).max(lane_last[l]), Some(l))
                    } else {
                        (far_time(&mut rng, now), None)
                    };
                    match lane {
                        Some(l) => {
                            lane_last[l] = t;
                            q.schedule_in_lane(l, SimTime::from_micros(t), id);
                        }
                        _ => q.schedule(SimTime::from_micros(t), id),
                    }
                    reference.1 += 1;
                    reference.0.push(Entry {
                        key: key(SimTime::from_micros(t), reference.1),
                        event: id,
                    });
                } else if rng.random_range(0..3) == 0 {
                    let end = SimTime::from_micros(now + rng.random_range(0..400_000_000));
                    let want = match reference.0.peek() {
                        Some(e) if time_of(e.key) < end => {
                            reference.0.pop().map(|e| (time_of(e.key), e.event))
                        }
                        _ => None,
                    };
                    assert_eq!(q.pop_before(end), want, "seed {seed}");
                } else {
                    let want = reference.0.pop().map(|e| (time_of(e.key), e.event));
                    assert_eq!(q.peek_time(), want.map(|w| w.0), "seed {seed}");
                    assert_eq!(q.pop(), want, "seed {seed}");
                }
                assert_eq!(q.len(), reference.0.len(), "seed {seed}");
            }
            while let Some(e) = reference.0.pop() {
                assert_eq!(q.peek_time(), Some(time_of(e.key)), "seed {seed}");
                assert_eq!(q.pop(), Some((time_of(e.key), e.event)), "seed {seed}");
            }
            assert_eq!(q.pop(), None);
        }
    }

    /// Entries pushed into the second level, moved down when a lane event
    /// before them is popped, then joined by pushes into their own bucket
    /// and the next: one order by time, then by push.
    #[test]
    fn pushes_after_a_move_down_join_the_moved_entries_in_order() {
        let mut q = EventQueue::new();
        let slot = 1u64 << L2_SHIFT;
        q.schedule(SimTime::from_micros(10 * slot + 300), "c");
        q.schedule(SimTime::from_micros(10 * slot + 5), "b");
        q.schedule(SimTime::from_micros(10 * slot + 5000), "e");
        q.schedule_in_lane(0, SimTime::from_micros(10 * slot), "a");
        assert_eq!(q.pop(), Some((SimTime::from_micros(10 * slot), "a")));
        q.schedule(SimTime::from_micros(10 * slot + 400), "d");
        q.schedule(SimTime::from_micros(10 * slot + 5), "b2");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["b", "b2", "c", "d", "e"]);
    }
}
