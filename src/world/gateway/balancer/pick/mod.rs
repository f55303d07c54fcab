//! The balancers' incremental structures: picks in O(log n) that make the
//! same choices as the direct scans over every peer.

mod heap;
mod least_conn;
mod queue;
mod rotation;
mod swrr;

pub(crate) use least_conn::LeastConn;
pub(crate) use rotation::Rotation;
pub(crate) use swrr::Swrr;

/// Where a node sits: its set (primary or backup) and its position in it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SetPos {
    pub backup: bool,
    pub pos: u32,
}

/// The balancer's structure over the members of each set.
pub(crate) enum Pickers {
    /// nginx round-robin (also random's fallback and backup set): one per
    /// (scope, set), at `scope × 2 + backup`.
    Smooth(Vec<Swrr>),
    /// HAProxy `roundrobin`: one per (scope, set), at `scope × 2 + backup`
    /// (HAProxy has one scope per replica).
    Rotation(Vec<Rotation>),
    /// `least_conn`: one per (scope, set), at `scope × 2 + backup`.
    Least(Vec<LeastConn>),
}

impl Pickers {
    /// `at` in scope `scope` joins or leaves the members; `conns`: its
    /// connections now.
    pub(crate) fn set_member(&mut self, scope: u16, at: SetPos, member: bool, conns: u32) {
        let i = scope as usize * 2 + at.backup as usize;
        match self {
            Pickers::Smooth(v) if member => v[i].join(at.pos, 0),
            Pickers::Smooth(v) => v[i].leave(at.pos),
            Pickers::Rotation(v) if member => v[i].join(at.pos),
            Pickers::Rotation(v) => v[i].leave(at.pos),
            Pickers::Least(v) if member => v[i].join(at.pos, conns),
            Pickers::Least(v) => v[i].leave(at.pos),
        }
    }

    /// The connections of `at` in scope `scope` changed.
    pub(crate) fn conns_changed(&mut self, scope: u16, at: SetPos, conns: u32) {
        if let Pickers::Least(v) = self {
            v[scope as usize * 2 + at.backup as usize].relevel(at.pos, conns);
        }
    }

    /// A failed attempt cuts the effective weight of `at` in scope `scope`.
    pub(crate) fn cut(&mut self, scope: u16, at: SetPos, by: i64) {
        let i = scope as usize * 2 + at.backup as usize;
        match self {
            Pickers::Smooth(v) => v[i].cut(at.pos, by),
            Pickers::Least(v) => v[i].cut(at.pos, by),
            Pickers::Rotation(_) => {}
        }
    }
}
