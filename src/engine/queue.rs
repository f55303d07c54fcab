//! The future-event list: a binary heap ordered by `(time, insertion sequence)`,
//! plus FIFO lanes for timers whose delay is a constant.
//!
//! A timer armed with the same delay every time (a read timeout, a client
//! timeout, a one-way network delay) fires in the order it was armed, so a
//! plain FIFO keeps those events sorted at O(1) per event. At 10k requests/s a
//! 60 s read timeout keeps 600k timers pending: in the heap every push and pop
//! would walk 20 levels of cache misses; in a lane they cost a queue push. Lane
//! entries draw their sequence number from the same counter as heap entries, so
//! the order of events is exactly what one heap would give.

use super::time::SimTime;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

struct Entry<E> {
    /// `(time << 64) | seq`: one comparison orders by time, then FIFO.
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    fn new(time: SimTime, seq: u64, event: E) -> Self {
        Entry {
            key: ((time.as_micros() as u128) << 64) | seq as u128,
            event,
        }
    }
    fn time(&self) -> SimTime {
        SimTime::from_micros((self.key >> 64) as u64)
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

/// Pending events. Same-time events run in the order they were scheduled.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    lanes: Vec<VecDeque<Entry<E>>>,
    /// Bit `i` set: lane `i` is not empty (so `pop` looks only at those).
    busy_lanes: u64,
    seq: u64,
    now: SimTime,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
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
        self.heap.len() + self.lanes.iter().map(VecDeque::len).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedules `event` at `time`. Scheduling into the past is an engine bug.
    pub fn schedule(&mut self, time: SimTime, event: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past: {time} < now {}",
            self.now
        );
        self.seq += 1;
        self.heap.push(Entry::new(time, self.seq, event));
    }

    /// Schedules `event` at `time` in FIFO lane `lane`. Every event of a lane
    /// must be at or after the lane's previous one (a constant delay from now).
    pub fn schedule_in_lane(&mut self, lane: usize, time: SimTime, event: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past: {time} < now {}",
            self.now
        );
        assert!(lane < 64, "at most 64 lanes");
        if lane >= self.lanes.len() {
            self.lanes.resize_with(lane + 1, VecDeque::new);
        }
        let q = &mut self.lanes[lane];
        assert!(
            q.back().is_none_or(|b| b.time() <= time),
            "lane {lane} is not monotonic: {time} after {}",
            q.back().map(|b| b.time()).unwrap_or_default()
        );
        self.seq += 1;
        q.push_back(Entry::new(time, self.seq, event));
        self.busy_lanes |= 1 << lane;
    }

    /// Where the earliest event is: `None` for the heap, `Some(lane)`.
    fn earliest(&self) -> Option<(Option<usize>, SimTime)> {
        let mut best = self.heap.peek().map(|e| (None, e.key));
        let mut busy = self.busy_lanes;
        while busy != 0 {
            let i = busy.trailing_zeros() as usize;
            busy &= busy - 1;
            if let Some(e) = self.lanes[i].front()
                && best.is_none_or(|(_, k)| e.key < k)
            {
                best = Some((Some(i), e.key));
            }
        }
        best.map(|(w, k)| (w, SimTime::from_micros((k >> 64) as u64)))
    }

    /// The time of the next event, if any.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.earliest().map(|(_, t)| t)
    }

    /// Removes the earliest event if it is before `end`, advancing `now`.
    pub fn pop_before(&mut self, end: SimTime) -> Option<(SimTime, E)> {
        let (w, t) = self.earliest()?;
        if t >= end {
            return None;
        }
        self.take(w)
    }

    /// Removes the earliest event and advances `now` to its time.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let w = self.earliest()?.0;
        self.take(w)
    }

    fn take(&mut self, from: Option<usize>) -> Option<(SimTime, E)> {
        let e = match from {
            None => self.heap.pop()?,
            Some(lane) => {
                let e = self.lanes[lane].pop_front()?;
                if self.lanes[lane].is_empty() {
                    self.busy_lanes &= !(1 << lane);
                }
                e
            }
        };
        let time = e.time();
        self.now = time;
        self.popped += 1;
        Some((time, e.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
