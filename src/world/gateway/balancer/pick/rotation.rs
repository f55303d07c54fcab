//! HAProxy's `balance roundrobin` as a weighted rotation (see
//! `World::pick_haproxy_rr`), over members that come and go, in O(log n).
//!
//! The direct rule: among the eligible servers, the lowest `max(position,
//! cursor)` wins, config order breaking ties; the winner's position becomes
//! that value plus its step, and the cursor moves to it. Servers whose
//! position is at or behind the cursor all tie at the cursor, so they are
//! kept in a heap by config order (`behind`); the others in a heap by
//! (position, config order) (`ahead`). The cursor only moves forward, so a
//! server moves from `ahead` to `behind` at most once per pick of its own.

use super::heap::{NONE, PosHeap};

/// The rotation of one set of servers (positions in config order). The
/// cursor is shared by the sets of a backend and passed in.
#[derive(Clone, Debug)]
pub(crate) struct Rotation {
    pos: Vec<u64>,
    step: Vec<u64>,
    ahead: PosHeap,
    behind: PosHeap,
    /// Where each member sits in its heap; which heap: `in_behind`.
    at: Vec<u32>,
    in_behind: Vec<bool>,
}

fn by_pos(pos: &[u64]) -> impl Fn(&[u32], u32, u32) -> bool + '_ {
    move |_, a, b| (pos[a as usize], a) < (pos[b as usize], b)
}

fn by_order(_: &[u32], a: u32, b: u32) -> bool {
    a < b
}

impl Rotation {
    /// Every server out of the rotation, at position 0.
    pub(crate) fn new(steps: Vec<u64>) -> Self {
        let n = steps.len();
        Rotation {
            pos: vec![0; n],
            step: steps,
            ahead: PosHeap::default(),
            behind: PosHeap::default(),
            at: vec![NONE; n],
            in_behind: vec![false; n],
        }
    }

    fn is_member(&self, i: u32) -> bool {
        self.at[i as usize] != NONE
    }

    pub(crate) fn join(&mut self, i: u32) {
        if !self.is_member(i) {
            self.in_behind[i as usize] = false;
            self.ahead.push(&mut self.at, i, by_pos(&self.pos));
        }
    }

    pub(crate) fn leave(&mut self, i: u32) {
        if !self.is_member(i) {
        } else if self.in_behind[i as usize] {
            self.behind.remove(&mut self.at, i, by_order);
        } else {
            self.ahead.remove(&mut self.at, i, by_pos(&self.pos));
        }
    }

    /// The next server, moving `cursor`; `None` when there are no members.
    pub(crate) fn pick(&mut self, cursor: &mut u64) -> Option<u32> {
        while let Some(i) = self.ahead.top() {
            if self.pos[i as usize] > *cursor {
                break;
            }
            self.ahead.remove(&mut self.at, i, by_pos(&self.pos));
            self.behind.push(&mut self.at, i, by_order);
            self.in_behind[i as usize] = true;
        }
        let (i, at) = match self.behind.top() {
            Some(i) => {
                self.behind.remove(&mut self.at, i, by_order);
                (i, *cursor)
            }
            None => {
                let i = self.ahead.top()?;
                self.ahead.remove(&mut self.at, i, by_pos(&self.pos));
                (i, self.pos[i as usize])
            }
        };
        *cursor = at;
        self.pos[i as usize] = at + self.step[i as usize];
        self.in_behind[i as usize] = false;
        self.ahead.push(&mut self.at, i, by_pos(&self.pos));
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The direct scan of `pick_haproxy_rr`.
    fn direct(pos: &mut [u64], step: &[u64], member: &[bool], cur: &mut u64) -> Option<u32> {
        let mut best: Option<(u64, usize)> = None;
        for i in 0..pos.len() {
            if !member[i] {
                continue;
            }
            let p = pos[i].max(*cur);
            if best.is_none_or(|(b, _)| p < b) {
                best = Some((p, i));
            }
        }
        let (p, i) = best?;
        *cur = p;
        pos[i] = p + step[i];
        Some(i as u32)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn picks_the_same_servers_as_the_direct_scan(
            weights in prop::collection::vec(1u64..5, 1..10),
            ops in prop::collection::vec((0u8..10, 0u32..10), 1..300),
        ) {
            let n = weights.len();
            let total: u64 = weights.iter().sum();
            let steps: Vec<u64> = weights.iter().map(|w| total * 1_000_000 / w).collect();
            let mut fast = Rotation::new(steps.clone());
            let (mut pos, mut member) = (vec![0u64; n], vec![false; n]);
            let (mut c1, mut c2) = (0u64, 0u64);
            for i in 0..n as u32 {
                fast.join(i);
                member[i as usize] = true;
            }
            for (o, i) in ops {
                let ok = (i as usize) < n;
                match o {
                    0 | 1 if ok => { fast.leave(i); member[i as usize] = false; }
                    2 | 3 if ok => { fast.join(i); member[i as usize] = true; }
                    _ => prop_assert_eq!(
                        fast.pick(&mut c1),
                        direct(&mut pos, &steps, &member, &mut c2)
                    ),
                }
                prop_assert_eq!(c1, c2);
            }
        }
    }
}
