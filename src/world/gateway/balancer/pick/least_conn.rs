//! nginx's `least_conn` (`ngx_http_upstream_get_least_conn_peer`) over
//! members that come and go, in O(log n) per pick.
//!
//! The direct loop finds the fewest `conns / weight` (first in list order);
//! when several peers tie at that load, it runs smooth WRR over just those,
//! changing only their current and effective weights. Here the members are
//! grouped by load level (the reduced fraction `conns / weight`): the lowest
//! level is the tie set, and smooth WRR over one group is exactly what
//! [`Swrr`] does for a group. A peer moves between levels when its
//! connections change, carrying its weights.

use super::swrr::Swrr;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// `conns / weight`, reduced, ordered by value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Load {
    num: u64,
    den: u64,
}

impl Load {
    fn new(conns: u64, weight: u64) -> Self {
        let (mut a, mut b) = (conns, weight.max(1));
        while b != 0 {
            (a, b) = (b, a % b);
        }
        let g = a.max(1);
        Load {
            num: conns / g,
            den: weight.max(1) / g,
        }
    }
}

impl Ord for Load {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.num as u128 * o.den as u128).cmp(&(o.num as u128 * self.den as u128))
    }
}

impl PartialOrd for Load {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// `least_conn` over the peers `0..n` of one set.
#[derive(Clone, Debug)]
pub(crate) struct LeastConn {
    swrr: Swrr,
    weight: Vec<u64>,
    /// Each load level with members, and its group in `swrr`.
    levels: BTreeMap<Load, u32>,
    level: Vec<Load>,
    member: Vec<bool>,
}

impl LeastConn {
    pub(crate) fn new(weights: &[i64]) -> Self {
        let mut swrr = Swrr::new(weights);
        swrr.free_group(0);
        LeastConn {
            swrr,
            weight: weights.iter().map(|&w| w as u64).collect(),
            levels: BTreeMap::new(),
            level: vec![Load::new(0, 1); weights.len()],
            member: vec![false; weights.len()],
        }
    }

    /// `i` becomes eligible with `conns` connections.
    pub(crate) fn join(&mut self, i: u32, conns: u32) {
        let u = i as usize;
        if self.member[u] {
            return;
        }
        let load = Load::new(conns as u64, self.weight[u]);
        let g = match self.levels.get(&load) {
            Some(&g) => g,
            None => {
                let g = self.swrr.new_group();
                self.levels.insert(load, g);
                g
            }
        };
        self.swrr.join(i, g);
        self.level[u] = load;
        self.member[u] = true;
    }

    pub(crate) fn leave(&mut self, i: u32) {
        let u = i as usize;
        if !self.member[u] {
            return;
        }
        let g = self.swrr.group_of(i);
        self.swrr.leave(i);
        if self.swrr.members(g) == 0 {
            self.levels.remove(&self.level[u]);
            self.swrr.free_group(g);
        }
        self.member[u] = false;
    }

    /// `i`'s connections changed.
    pub(crate) fn relevel(&mut self, i: u32, conns: u32) {
        if self.member[i as usize] {
            self.leave(i);
            self.join(i, conns);
        }
    }

    pub(crate) fn cut(&mut self, i: u32, by: i64) {
        self.swrr.cut(i, by);
    }

    /// The least loaded member; smooth WRR among a tie.
    pub(crate) fn pick(&mut self) -> Option<u32> {
        let (_, &g) = self.levels.first_key_value()?;
        if self.swrr.members(g) == 1 {
            // No tie: nginx changes no weight.
            return self.swrr.sole(g);
        }
        self.swrr.pick(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The direct loop of `ngx_http_upstream_get_least_conn_peer`.
    struct Direct {
        w: Vec<i64>,
        cw: Vec<i64>,
        ew: Vec<i64>,
        conns: Vec<i64>,
        member: Vec<bool>,
    }

    impl Direct {
        fn pick(&mut self) -> Option<u32> {
            let n = self.w.len();
            let mut best: Option<usize> = None;
            let mut many = false;
            for i in (0..n).filter(|&i| self.member[i]) {
                match best {
                    None => best = Some(i),
                    Some(b) => {
                        let (l, r) = (self.conns[i] * self.w[b], self.conns[b] * self.w[i]);
                        if l < r {
                            best = Some(i);
                            many = false;
                        } else if l == r {
                            many = true;
                        }
                    }
                }
            }
            let first = best?;
            let mut chosen = first;
            if many {
                let mut total = 0;
                for i in (first..n).filter(|&i| self.member[i]) {
                    if self.conns[i] * self.w[first] != self.conns[first] * self.w[i] {
                        continue;
                    }
                    self.cw[i] += self.ew[i];
                    total += self.ew[i];
                    if self.ew[i] < self.w[i] {
                        self.ew[i] += 1;
                    }
                    if self.cw[i] > self.cw[chosen] {
                        chosen = i;
                    }
                }
                self.cw[chosen] -= total;
            }
            Some(chosen as u32)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn picks_the_same_peers_as_the_direct_loop(
            weights in prop::collection::vec(1i64..4, 1..10),
            ops in prop::collection::vec((0u8..12, 0u32..10, 1i64..4), 1..300),
        ) {
            let n = weights.len();
            let mut fast = LeastConn::new(&weights);
            let mut d = Direct {
                w: weights.clone(),
                cw: vec![0; n],
                ew: weights.clone(),
                conns: vec![0; n],
                member: vec![true; n],
            };
            (0..n as u32).for_each(|i| fast.join(i, 0));
            for (op, i, c) in ops {
                let (ok, u) = ((i as usize) < n, i as usize);
                match op {
                    0 if ok => { fast.leave(i); d.member[u] = false; }
                    1 if ok => { fast.join(i, d.conns[u] as u32); d.member[u] = true; }
                    2 if ok => {
                        fast.cut(i, c);
                        d.ew[u] = (d.ew[u] - c).max(0);
                    }
                    3 | 4 if ok && d.conns[u] > 0 => {
                        d.conns[u] -= 1;
                        fast.relevel(i, d.conns[u] as u32);
                    }
                    _ => {
                        let got = fast.pick();
                        prop_assert_eq!(got, d.pick());
                        if let Some(g) = got {
                            d.conns[g as usize] += 1;
                            fast.relevel(g, d.conns[g as usize] as u32);
                        }
                    }
                }
            }
        }
    }
}
