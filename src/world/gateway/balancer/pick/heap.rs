//! Binary heaps of peer positions whose order comes from outside (the
//! balancer's own per-peer arrays), with removal and re-keying of any member
//! in O(log n). A peer sits in at most one heap of a structure at a time, so
//! the heaps of one structure share one position index (`at`).

/// Not in any heap.
pub(crate) const NONE: u32 = u32::MAX;

/// A peer's record as the heaps see it: where it sits (`at`). The record
/// may hold the peer's key and the rest of its state too, so that comparing
/// and moving a peer touch one cache line.
pub(crate) trait Slot {
    fn at(&self) -> u32;
    fn set_at(&mut self, h: u32);
}

impl Slot for u32 {
    fn at(&self) -> u32 {
        *self
    }
    fn set_at(&mut self, h: u32) {
        *self = h;
    }
}

/// Children per node: a 4-ary heap is half as deep as a binary one, and a
/// pick's sift-down (the winner's key drops to the bottom) is most of its cost.
const D: usize = 4;

/// One heap; `slots[i].at()` is where position `i` sits in it (shared with
/// the other heaps of the same structure). `before(slots, a, b)` says
/// whether `a` belongs above `b`; the caller passes the same order to every
/// call and re-keys a member (`update`) whenever its key changes.
#[derive(Clone, Debug, Default)]
pub(crate) struct PosHeap {
    heap: Vec<u32>,
}

impl PosHeap {
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    pub(crate) fn top(&self) -> Option<u32> {
        self.heap.first().copied()
    }

    pub(crate) fn push<S: Slot>(
        &mut self,
        at: &mut [S],
        i: u32,
        before: impl Fn(&[S], u32, u32) -> bool,
    ) {
        debug_assert!(at[i as usize].at() == NONE);
        self.heap.push(i);
        let h = self.heap.len() - 1;
        at[i as usize].set_at(h as u32);
        self.up(at, h, &before);
    }

    pub(crate) fn remove<S: Slot>(
        &mut self,
        at: &mut [S],
        i: u32,
        before: impl Fn(&[S], u32, u32) -> bool,
    ) {
        let h = at[i as usize].at();
        debug_assert!(h != NONE && self.heap[h as usize] == i);
        let h = h as usize;
        let last = self.heap.len() - 1;
        self.swap(at, h, last);
        self.heap.pop();
        at[i as usize].set_at(NONE);
        if h < self.heap.len() {
            self.update_at(at, h, &before);
        }
    }

    /// `i`'s key changed: restore the order.
    pub(crate) fn update<S: Slot>(
        &mut self,
        at: &mut [S],
        i: u32,
        before: impl Fn(&[S], u32, u32) -> bool,
    ) {
        let h = at[i as usize].at();
        debug_assert!(h != NONE && self.heap[h as usize] == i);
        self.update_at(at, h as usize, &before);
    }

    fn update_at<S: Slot>(
        &mut self,
        at: &mut [S],
        h: usize,
        before: &impl Fn(&[S], u32, u32) -> bool,
    ) {
        if h > 0 && before(at, self.heap[h], self.heap[(h - 1) / D]) {
            self.up(at, h, before);
        } else {
            self.down(at, h, before);
        }
    }

    fn swap<S: Slot>(&mut self, at: &mut [S], a: usize, b: usize) {
        self.heap.swap(a, b);
        at[self.heap[a] as usize].set_at(a as u32);
        at[self.heap[b] as usize].set_at(b as u32);
    }

    fn up<S: Slot>(
        &mut self,
        at: &mut [S],
        mut h: usize,
        before: &impl Fn(&[S], u32, u32) -> bool,
    ) {
        while h > 0 {
            let parent = (h - 1) / D;
            if !before(at, self.heap[h], self.heap[parent]) {
                break;
            }
            self.swap(at, h, parent);
            h = parent;
        }
    }

    fn down<S: Slot>(
        &mut self,
        at: &mut [S],
        mut h: usize,
        before: &impl Fn(&[S], u32, u32) -> bool,
    ) {
        let n = self.heap.len();
        loop {
            let first = D * h + 1;
            let mut m = h;
            for c in first..(first + D).min(n) {
                if before(at, self.heap[c], self.heap[m]) {
                    m = c;
                }
            }
            if m == h {
                break;
            }
            self.swap(at, h, m);
            h = m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Two heaps sharing one index, against sorted vectors: pushes,
        /// removals and re-keys in any order.
        #[test]
        fn the_top_is_always_the_first_in_order(
            ops in prop::collection::vec((0u32..16, -50i64..50, 0u8..3, any::<bool>()), 1..200)
        ) {
            let mut key = [0i64; 16];
            let mut side = [false; 16];
            let mut at = [NONE; 16];
            let mut heaps = [PosHeap::default(), PosHeap::default()];
            for (i, k, op, h) in ops {
                let present = at[i as usize] != NONE;
                if (op == 0 && !present) || (op >= 2 && present) {
                    key[i as usize] = k;
                }
                if op == 0 && !present {
                    side[i as usize] = h;
                }
                let before = |_: &[u32], a: u32, b: u32| (key[a as usize], a) < (key[b as usize], b);
                let heap = &mut heaps[side[i as usize] as usize];
                match (op, present) {
                    (0, false) => heap.push(&mut at, i, before),
                    (1, true) => heap.remove(&mut at, i, before),
                    (2.., true) => heap.update(&mut at, i, before),
                    _ => {}
                }
                for s in [false, true] {
                    let want = (0..16u32)
                        .filter(|&j| at[j as usize] != NONE && side[j as usize] == s)
                        .min_by_key(|&j| (key[j as usize], j));
                    prop_assert_eq!(heaps[s as usize].top(), want);
                }
            }
        }
    }
}
