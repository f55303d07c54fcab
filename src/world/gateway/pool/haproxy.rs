//! HAProxy 2.6's idle server connections (src/server.c): which released
//! connection is kept (`srv_add_to_idle_list`), and the purge task that
//! closes those beyond recent need (`srv_cleanup_idle_conns`). One HAProxy
//! process (a gateway scope) with one thread; file descriptors are taken to
//! be plentiful (below `tune.pool-low-fd-ratio`).

use super::super::super::{Event, World};
use super::{ConnTimer, Pool, Rules};
use crate::engine::SimTime;

impl Pool {
    /// `srv_use_conn`: a connection of (scope, node) `k` is in use.
    pub(super) fn use_server_conn(&mut self, k: usize) {
        let s = &mut self.servers[k];
        s.used += 1;
        s.max_used = s.max_used.max(s.used);
        s.est_need = s.est_need.max(s.used);
    }

    /// `srv_add_to_idle_list` for connection `conn` of (scope, node) `k`,
    /// still counted as used: kept if the server's idle connections stay
    /// under `pool-max-conn`, and either this thread has no `safe`
    /// connection (and no `idle` one unless this one is safe) or the
    /// connections stay within the estimated need plus `pool-low-conn`.
    /// A connection that carried a request after its first goes to `safe`.
    pub(super) fn admit_idle(&mut self, k: usize, conn: u32, now: SimTime) -> bool {
        let Rules::Haproxy {
            max_idle, low_idle, ..
        } = self.rules
        else {
            return false;
        };
        self.prune(k, now);
        let safe = self.conns[conn as usize].requests >= 2;
        let list = &self.idle[k];
        let has_safe = list.iter().any(|&c| self.conns[c as usize].safe);
        let has_idle = list.iter().any(|&c| !self.conns[c as usize].safe);
        let idle = list.len() as u32;
        let s = &self.servers[k];
        let room = max_idle.is_none_or(|m| m > idle);
        let first_here = !has_safe && (safe || !has_idle);
        let within_need = s.used + idle <= s.used.max(s.est_need) + low_idle;
        let kept = room && (first_here || within_need);
        if kept {
            self.conns[conn as usize].safe = safe;
        }
        kept
    }
}

impl World<'_> {
    /// The purge task of (scope, node) `k` runs `pool-purge-delay` after its
    /// first idle connection, and again while some remain.
    pub(super) fn arm_purge(&mut self, k: usize) {
        let now = self.q.now();
        let Some(pool) = self.pool.as_deref_mut() else {
            return;
        };
        let Rules::Haproxy { purge, .. } = pool.rules else {
            return;
        };
        if std::mem::replace(&mut pool.servers[k].purge_armed, true) {
            return;
        }
        self.q.schedule(
            now + purge,
            Event::Conn {
                id: k as u32,
                what: ConnTimer::Purge,
            },
        );
    }

    /// `srv_cleanup_idle_conns` for (scope, node) `k`: closes half (rounded
    /// up) of the connections beyond `max(max_used, est_need)`, plus one
    /// (`srv_migrate_conns_to_remove` takes up to `max_conn`), from the
    /// `idle` list first, then `safe`, oldest first; moves the estimate
    /// halfway to the most used since the last run.
    pub(super) fn purge(&mut self, k: usize) {
        let now = self.q.now();
        let Some(pool) = self.pool.as_deref_mut() else {
            return;
        };
        pool.servers[k].purge_armed = false;
        pool.prune(k, now);
        let idle = pool.idle[k].len() as i64;
        if idle == 0 {
            return;
        }
        let s = &mut pool.servers[k];
        let exceed = s.used as i64 + idle - s.max_used.max(s.est_need) as i64;
        s.est_need = ((s.est_need + s.max_used) / 2).max(s.max_used);
        s.max_used = s.used;
        if exceed > 0 {
            // One thread: `max_conn = exceed_conns * curr_idle_thr / curr_idle + 1`.
            let mut kill = (exceed / 2 + (exceed & 1)) as usize + 1;
            for safe in [false, true] {
                let mut i = 0;
                while kill > 0 && i < pool.idle[k].len() {
                    let id = pool.idle[k][i];
                    if pool.conns[id as usize].safe == safe {
                        pool.idle[k].remove(i);
                        pool.close(id);
                        kill -= 1;
                    } else {
                        i += 1;
                    }
                }
            }
        }
        if !pool.idle[k].is_empty() {
            self.arm_purge(k);
        }
    }
}
