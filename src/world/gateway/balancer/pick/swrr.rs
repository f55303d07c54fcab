//! nginx's smooth weighted round-robin (`ngx_http_upstream_get_peer`) over a
//! set of peers whose membership changes, in O(log n) per pick.
//!
//! nginx, on every pick, adds each eligible peer's effective weight to its
//! current weight, picks the highest current weight (the first in list order
//! on a tie: strict `>`), and takes the total back from the winner; an
//! effective weight below the weight grows by one per pick. Every eligible
//! peer changes on every pick, so the direct loop is O(n).
//!
//! Here the members are split by state. A *steady* member (effective weight =
//! weight) of weight `w` gains exactly `w` per pick, like every other steady
//! member of its weight: within one weight class the order never changes
//! without a pick taking the total back, so the class keeps `cw − w × picks`
//! as a key in a heap and the class's best is its top. A *recovering* member
//! (its effective weight was cut by a failure) is updated directly; there are
//! few, and each becomes steady after at most `weight` picks. A peer that is
//! not eligible (ejected, `down`, at `max_conns`, already tried by this
//! request) is *out*: its current and effective weights stay as they are,
//! exactly as nginx leaves a skipped peer alone.
//!
//! A steady member that is picked drops below every member of its class not
//! picked since, so with no one joining a class turns as a rotation: the
//! winner goes to the back of the class's queue (`queue.rs`) in O(1), and
//! only members that joined or cannot go to the back sit in the heap.
//!
//! The cost per pick is O(classes + recovering + log n), O(1) for equal
//! weights in a steady cluster; the sequence is the direct loop's, which
//! `tests` checks on random operations.

use super::heap::{NONE, PosHeap, Slot};
use super::queue::{QUEUED, RotQueue, Stamped};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum St {
    Out,
    Steady,
    Recovering,
}

/// Members picked together: all of them gain on each of the group's picks.
/// Round-robin has one group per set; `least_conn` one per load level.
#[derive(Clone, Debug, Default)]
struct Group {
    /// Per weight class, the steady members: those in pick order in a
    /// queue, the others in a heap.
    heaps: Vec<PosHeap>,
    queues: Vec<RotQueue>,
    recovering: Vec<u32>,
    picks: i64,
    members: u32,
}

/// A peer's hot state: what a steady pick reads and writes (its key and
/// where it sits), 16 bytes in one cache line, so that a pick touches one
/// line per member it looks at (a fleet holds thousands of these).
#[derive(Clone, Copy, Debug)]
#[repr(align(16))]
struct Member {
    /// The current weight; for a steady member, `cw − w × picks` of its group (its key).
    cw: i64,
    /// Where it sits in its heap, or `QUEUED`.
    at: u32,
    /// Tells a queued member's current entry from stale ones.
    stamp: u32,
}

impl Slot for Member {
    fn at(&self) -> u32 {
        self.at
    }
    fn set_at(&mut self, h: u32) {
        self.at = h;
    }
}

impl Stamped for Member {
    fn stamp(&self) -> u32 {
        self.stamp
    }
    fn set_stamp(&mut self, s: u32) {
        self.stamp = s;
    }
}

/// Smooth WRR state of the peers `0..n` of one set (positions in list order).
#[derive(Clone, Debug)]
pub(crate) struct Swrr {
    m: Vec<Member>,
    st: Vec<St>,
    class: Vec<u16>,
    group: Vec<u32>,
    /// Weights and effective weights: read when a member joins, leaves or
    /// recovers, not on a steady pick.
    w: Vec<i64>,
    ew: Vec<i64>,
    class_w: Vec<i64>,
    groups: Vec<Group>,
    free: Vec<u32>,
}

/// Heap order within a class: higher key first, then lower position.
fn before(m: &[Member], a: u32, b: u32) -> bool {
    let (ka, kb) = (m[a as usize].cw, m[b as usize].cw);
    ka > kb || (ka == kb && a < b)
}

impl Swrr {
    /// All peers out, current weights 0, effective weights = weights; one
    /// group (0).
    pub(crate) fn new(weights: &[i64]) -> Self {
        let mut distinct: Vec<i64> = weights.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let n = weights.len();
        let class = weights
            .iter()
            .map(|w| distinct.binary_search(w).unwrap() as u16)
            .collect();
        let mut s = Swrr {
            m: vec![
                Member {
                    cw: 0,
                    at: NONE,
                    stamp: 0,
                };
                n
            ],
            st: vec![St::Out; n],
            class,
            group: vec![0; n],
            w: weights.to_vec(),
            ew: weights.to_vec(),
            class_w: distinct,
            groups: Vec::new(),
            free: Vec::new(),
        };
        s.new_group();
        s
    }

    /// A new, empty group.
    pub(crate) fn new_group(&mut self) -> u32 {
        let g = Group {
            heaps: vec![PosHeap::default(); self.class_w.len()],
            queues: vec![RotQueue::default(); self.class_w.len()],
            ..Default::default()
        };
        match self.free.pop() {
            Some(i) => {
                self.groups[i as usize] = g;
                i
            }
            None => {
                self.groups.push(g);
                (self.groups.len() - 1) as u32
            }
        }
    }

    /// Gives back an empty group's slot.
    pub(crate) fn free_group(&mut self, g: u32) {
        debug_assert_eq!(self.groups[g as usize].members, 0);
        self.free.push(g);
    }

    #[cfg(test)]
    pub(crate) fn is_member(&self, i: u32) -> bool {
        self.st[i as usize] != St::Out
    }

    pub(crate) fn group_of(&self, i: u32) -> u32 {
        self.group[i as usize]
    }

    pub(crate) fn members(&self, g: u32) -> u32 {
        self.groups[g as usize].members
    }

    /// The member of a group of one.
    pub(crate) fn sole(&self, g: u32) -> Option<u32> {
        let gr = &self.groups[g as usize];
        gr.recovering
            .first()
            .copied()
            .or_else(|| gr.heaps.iter().find_map(PosHeap::top))
            .or_else(|| gr.queues.iter().find_map(|q| q.peek(&self.m)))
    }

    /// `i` becomes eligible again, in group `g`.
    pub(crate) fn join(&mut self, i: u32, g: u32) {
        let u = i as usize;
        if self.st[u] != St::Out {
            return;
        }
        self.group[u] = g;
        let gr = &mut self.groups[g as usize];
        gr.members += 1;
        if self.ew[u] >= self.w[u] {
            self.st[u] = St::Steady;
            self.m[u].cw -= self.w[u] * gr.picks;
            gr.heaps[self.class[u] as usize].push(&mut self.m, i, before);
        } else {
            self.st[u] = St::Recovering;
            gr.recovering.push(i);
        }
    }

    /// `i` is no longer eligible: its weights stay as they are.
    pub(crate) fn leave(&mut self, i: u32) {
        let u = i as usize;
        let gr = &mut self.groups[self.group[u] as usize];
        match self.st[u] {
            St::Out => return,
            St::Steady => {
                let c = self.class[u] as usize;
                if self.m[u].at == QUEUED {
                    gr.queues[c].remove(&mut self.m, i);
                } else {
                    gr.heaps[c].remove(&mut self.m, i, before);
                }
                self.m[u].cw += self.w[u] * gr.picks;
            }
            St::Recovering => {
                let k = gr.recovering.iter().position(|&r| r == i).unwrap();
                gr.recovering.swap_remove(k);
            }
        }
        gr.members -= 1;
        self.st[u] = St::Out;
    }

    /// A failed attempt cuts `i`'s effective weight (never below 0).
    pub(crate) fn cut(&mut self, i: u32, by: i64) {
        let u = i as usize;
        if by <= 0 {
            return;
        }
        let member = self.st[u] != St::Out;
        self.leave(i);
        self.ew[u] = (self.ew[u] - by).max(0);
        if member {
            self.join(i, self.group[u]);
        }
    }

    /// The best steady member of class `c` of group `g`: the better of the
    /// queue's front and the heap's top.
    fn class_best(&mut self, g: u32, c: usize) -> Option<u32> {
        let gr = &mut self.groups[g as usize];
        let q = gr.queues[c].front(&self.m);
        match (q, gr.heaps[c].top()) {
            (Some(a), Some(b)) => Some(if before(&self.m, a, b) { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// Steady member `i` (the best of its class) was picked and its key
    /// lowered: to the back of the class's queue if it fits there, else
    /// (back) into the heap. `c` is its class.
    fn requeue(&mut self, g: u32, c: usize, i: u32) {
        let Member { cw, at, .. } = self.m[i as usize];
        let gr = &mut self.groups[g as usize];
        let fits = gr.queues[c].fits(cw, i);
        if at == QUEUED {
            gr.queues[c].pop_front(&mut self.m);
            if fits {
                gr.queues[c].push(&mut self.m, i, cw);
            } else {
                gr.heaps[c].push(&mut self.m, i, before);
            }
        } else if fits {
            gr.heaps[c].remove(&mut self.m, i, before);
            gr.queues[c].push(&mut self.m, i, cw);
        } else {
            gr.heaps[c].update(&mut self.m, i, before);
        }
    }

    /// One pick among the members of group `g`; `None` when it has none.
    pub(crate) fn pick(&mut self, g: u32) -> Option<u32> {
        let gr = &mut self.groups[g as usize];
        gr.picks += 1;
        let p = gr.picks;
        if gr.recovering.is_empty() && gr.heaps.len() == 1 {
            // Equal weights, none recovering: the best, then the total back.
            // Every member is steady: all of them are in class 0's heap or queue.
            let members = gr.members;
            debug_assert_eq!(members as usize, gr.heaps[0].len() + gr.queues[0].len());
            let top = self.class_best(g, 0)?;
            self.m[top as usize].cw -= self.class_w[0] * members as i64;
            self.requeue(g, 0, top);
            return Some(top);
        }
        let mut total = 0;
        let mut best: Option<(i64, u32)> = None;
        let mut consider = |cw: i64, i: u32| {
            if best.is_none_or(|(bc, bi)| cw > bc || (cw == bc && i < bi)) {
                best = Some((cw, i));
            }
        };
        for c in 0..self.class_w.len() {
            let w = self.class_w[c];
            let gr = &self.groups[g as usize];
            total += w * (gr.heaps[c].len() + gr.queues[c].len()) as i64;
            if let Some(top) = self.class_best(g, c) {
                consider(self.m[top as usize].cw + w * p, top);
            }
        }
        let gr = &mut self.groups[g as usize];
        let mut grown = false;
        for &i in &gr.recovering {
            let u = i as usize;
            self.m[u].cw += self.ew[u];
            total += self.ew[u];
            if self.ew[u] < self.w[u] {
                self.ew[u] += 1;
            }
            grown |= self.ew[u] >= self.w[u];
            consider(self.m[u].cw, i);
        }
        let (_, chosen) = best?;
        if grown {
            // Recovered members become steady with their current weight.
            let done: Vec<u32> = gr
                .recovering
                .iter()
                .copied()
                .filter(|&i| self.ew[i as usize] >= self.w[i as usize])
                .collect();
            for i in done {
                self.leave(i);
                self.join(i, g);
            }
        }
        let u = chosen as usize;
        self.m[u].cw -= total;
        if self.st[u] == St::Steady {
            self.requeue(g, self.class[u] as usize, chosen);
        }
        Some(chosen)
    }

    /// `(current, effective)` weight of `i`, as nginx would hold them.
    #[cfg(test)]
    pub(crate) fn weights(&self, i: u32) -> (i64, i64) {
        let u = i as usize;
        match self.st[u] {
            St::Steady => (
                self.m[u].cw + self.w[u] * self.groups[self.group[u] as usize].picks,
                self.ew[u],
            ),
            _ => (self.m[u].cw, self.ew[u]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The direct loop of `ngx_http_upstream_get_peer`.
    struct Direct {
        w: Vec<i64>,
        cw: Vec<i64>,
        ew: Vec<i64>,
        member: Vec<bool>,
    }

    impl Direct {
        fn pick(&mut self) -> Option<u32> {
            let mut best: Option<usize> = None;
            let mut total = 0;
            for i in 0..self.w.len() {
                if !self.member[i] {
                    continue;
                }
                self.cw[i] += self.ew[i];
                total += self.ew[i];
                if self.ew[i] < self.w[i] {
                    self.ew[i] += 1;
                }
                if best.is_none_or(|b| self.cw[i] > self.cw[b]) {
                    best = Some(i);
                }
            }
            let b = best?;
            self.cw[b] -= total;
            Some(b as u32)
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Pick,
        Join(u32),
        Leave(u32),
        Cut(u32, i64),
    }

    fn op(n: u32) -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => Just(Op::Pick),
            2 => (0..n).prop_map(Op::Join),
            2 => (0..n).prop_map(Op::Leave),
            1 => (0..n, 1i64..6).prop_map(|(i, c)| Op::Cut(i, c)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn picks_the_same_peers_as_the_direct_loop(
            weights in prop_oneof![
                prop::collection::vec(1i64..5, 1..12),
                // Equal weights: the rotation queue's fast path.
                (1usize..12, 1i64..4).prop_map(|(n, w)| vec![w; n]),
            ],
            ops in prop::collection::vec(op(12), 1..300),
        ) {
            let n = weights.len() as u32;
            let mut fast = Swrr::new(&weights);
            let mut direct = Direct {
                w: weights.clone(),
                cw: vec![0; weights.len()],
                ew: weights.clone(),
                member: vec![false; weights.len()],
            };
            for i in 0..n {
                fast.join(i, 0);
                direct.member[i as usize] = true;
            }
            for o in ops {
                match o {
                    Op::Pick => prop_assert_eq!(fast.pick(0), direct.pick()),
                    Op::Join(i) if i < n => {
                        fast.join(i, 0);
                        direct.member[i as usize] = true;
                    }
                    Op::Leave(i) if i < n => {
                        fast.leave(i);
                        direct.member[i as usize] = false;
                    }
                    Op::Cut(i, c) if i < n => {
                        fast.cut(i, c);
                        let e = &mut direct.ew[i as usize];
                        *e = (*e - c).max(0);
                    }
                    _ => {}
                }
                for i in 0..n {
                    let u = i as usize;
                    prop_assert_eq!(fast.weights(i), (direct.cw[u], direct.ew[u]));
                    prop_assert_eq!(fast.is_member(i), direct.member[u]);
                }
            }
        }
    }

    #[test]
    fn weights_5_1_1_give_nginx_smooth_sequence() {
        // The sequence from the comment in ngx_http_upstream_round_robin.c's
        // commit introducing smooth WRR: a a b a c a a for weights 5, 1, 1.
        let mut s = Swrr::new(&[5, 1, 1]);
        (0..3).for_each(|i| s.join(i, 0));
        let seq: Vec<u32> = (0..7).map(|_| s.pick(0).unwrap()).collect();
        assert_eq!(seq, [0, 0, 1, 0, 2, 0, 0]);
    }
}
