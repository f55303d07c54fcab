//! Members of a smooth-WRR weight class that are already in pick order: a
//! FIFO beside the class's heap.
//!
//! In a weight class every steady member gains the same amount per pick, so
//! the winner (the highest key) takes the total back and drops below every
//! member that has not been picked since. With no one joining, a round is a
//! rotation: the winner goes to the back. Appending it to a queue costs O(1)
//! where re-keying it in a heap sifts it down through every level, one cache
//! miss per level on a large cluster. A member that cannot go to the back
//! (a key above the last one appended, e.g. after the class shrank) stays in
//! the heap; the class's best is the better of the two fronts.
//!
//! Leaving is lazy: the entry stays in the queue, stale, and is skipped when
//! it reaches the front (a stamp per member tells a stale entry from the
//! member's current one); the queue is compacted when stale entries
//! outnumber the live ones.

use super::heap::Slot;
use std::collections::VecDeque;

/// A peer's record as the queues see it: where it sits, and a stamp that
/// tells its current queue entry from stale ones.
pub(crate) trait Stamped: Slot {
    fn stamp(&self) -> u32;
    fn set_stamp(&mut self, s: u32);
}

/// `at[i]` of a member that sits in a queue (not in a heap).
pub(crate) const QUEUED: u32 = u32::MAX - 1;

#[derive(Clone, Debug, Default)]
pub(crate) struct RotQueue {
    /// (position, stamp when queued), in pick order; stale entries included.
    q: VecDeque<(u32, u32)>,
    live: u32,
    /// Key and position of the last member appended: the next one must come after.
    back: Option<(i64, u32)>,
}

impl RotQueue {
    /// Live members.
    pub(crate) fn len(&self) -> usize {
        self.live as usize
    }

    fn valid<S: Stamped>(slots: &[S], (i, s): (u32, u32)) -> bool {
        let m = &slots[i as usize];
        m.at() == QUEUED && m.stamp() == s
    }

    /// The first live member, dropping stale entries before it.
    pub(crate) fn front<S: Stamped>(&mut self, slots: &[S]) -> Option<u32> {
        while let Some(&e) = self.q.front() {
            if Self::valid(slots, e) {
                return Some(e.0);
            }
            self.q.pop_front();
        }
        None
    }

    /// The first live member, without cleaning.
    pub(crate) fn peek<S: Stamped>(&self, slots: &[S]) -> Option<u32> {
        self.q.iter().find(|&&e| Self::valid(slots, e)).map(|e| e.0)
    }

    /// Whether a member with `key` at position `i` may go to the back: it
    /// comes after the last one appended (lower key, or the same key and a
    /// later position), or the queue has no live member.
    pub(crate) fn fits(&self, key: i64, i: u32) -> bool {
        self.live == 0
            || self
                .back
                .is_none_or(|(bk, bi)| key < bk || (key == bk && i > bi))
    }

    /// Appends `i` (the caller checked `fits`).
    pub(crate) fn push<S: Stamped>(&mut self, slots: &mut [S], i: u32, key: i64) {
        debug_assert!(self.fits(key, i));
        let m = &mut slots[i as usize];
        let stamp = m.stamp().wrapping_add(1);
        m.set_stamp(stamp);
        m.set_at(QUEUED);
        self.q.push_back((i, stamp));
        self.back = Some((key, i));
        self.live += 1;
    }

    /// Removes the front member (the one `front` returned).
    pub(crate) fn pop_front<S: Stamped>(&mut self, slots: &mut [S]) {
        let (i, _) = self.q.pop_front().expect("a live front");
        slots[i as usize].set_at(super::heap::NONE);
        self.live -= 1;
    }

    /// Removes live member `i` wherever it is: its entry goes stale.
    pub(crate) fn remove<S: Stamped>(&mut self, slots: &mut [S], i: u32) {
        debug_assert_eq!(slots[i as usize].at(), QUEUED);
        slots[i as usize].set_at(super::heap::NONE);
        self.live -= 1;
        if self.q.len() > 2 * self.live as usize + 64 {
            let slots = &*slots;
            self.q.retain(|&e| Self::valid(slots, e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::gateway::balancer::pick::heap::NONE;

    #[derive(Clone, Copy)]
    struct M {
        at: u32,
        stamp: u32,
    }

    impl Slot for M {
        fn at(&self) -> u32 {
            self.at
        }
        fn set_at(&mut self, h: u32) {
            self.at = h;
        }
    }

    impl Stamped for M {
        fn stamp(&self) -> u32 {
            self.stamp
        }
        fn set_stamp(&mut self, s: u32) {
            self.stamp = s;
        }
    }

    #[test]
    fn stale_entries_are_skipped_and_a_requeued_member_is_not_seen_twice() {
        let mut m = vec![M { at: NONE, stamp: 0 }; 4];
        let mut q = RotQueue::default();
        for (i, k) in [(0, 9), (1, 8), (2, 8), (3, 1)] {
            assert!(q.fits(k, i));
            q.push(&mut m, i, k);
        }
        assert!(!q.fits(5, 0) && !q.fits(1, 2) && q.fits(1, 3 + 1) && q.fits(0, 0));
        q.remove(&mut m, 1);
        q.remove(&mut m, 0);
        // 0 comes back at the back: its old entry at the front is stale.
        q.push(&mut m, 0, 0);
        assert_eq!(q.len(), 3);
        let mut order = vec![];
        while let Some(i) = q.front(&m) {
            assert_eq!(q.peek(&m), Some(i));
            order.push(i);
            q.pop_front(&mut m);
        }
        assert_eq!(order, [2, 3, 0]);
        assert_eq!(q.len(), 0);
        assert!(m.iter().all(|x| x.at == NONE));
    }
}
