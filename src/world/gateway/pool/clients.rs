//! The clients' connections to an HAProxy gateway (`clients.connection:
//! keepalive`): whether a request is the first of its client connection
//! (`TX_NOT_FIRST`), which `http-reuse safe` depends on. A closed-loop
//! client keeps one connection per gateway replica; open-loop requests take
//! the most recently idle connection of the replica, or a new one. HAProxy
//! closes a connection idle longer than `timeout http-keep-alive`
//! (`h1_set_idle_expiration`, src/mux_h1.c).

use crate::engine::{SimDuration, SimTime};
use crate::spec::Model;
use std::collections::BTreeMap;

pub(super) struct ClientConns {
    /// Tracked at all (HAProxy with keep-alive clients).
    on: bool,
    /// Per replica: since when each idle open-loop connection is idle, in
    /// the order they went idle.
    open_idle: Vec<Vec<SimTime>>,
    /// Per (replica, closed-loop client): since when its connection is idle.
    closed_idle: BTreeMap<(u32, u32), SimTime>,
}

impl ClientConns {
    pub(super) fn new(model: &Model, on: bool) -> Self {
        ClientConns {
            on,
            open_idle: vec![Vec::new(); if on { model.replicas() } else { 0 }],
            closed_idle: BTreeMap::new(),
        }
    }

    /// A request of `client` (`None`: open loop) reaches `replica`: on a
    /// connection that served a request before (`true`), or a new one.
    pub(super) fn begin(
        &mut self,
        replica: usize,
        client: Option<u32>,
        timeout: Option<SimDuration>,
        now: SimTime,
    ) -> bool {
        if !self.on {
            return false;
        }
        let alive = |since: SimTime| timeout.is_none_or(|t| now < since + t);
        match client {
            Some(c) => self
                .closed_idle
                .remove(&(replica as u32, c))
                .is_some_and(alive),
            None => {
                let idle = &mut self.open_idle[replica];
                match idle.pop() {
                    // The most recent went idle last: if it expired, so did the others.
                    Some(since) if alive(since) => true,
                    Some(_) => {
                        idle.clear();
                        false
                    }
                    None => false,
                }
            }
        }
    }

    /// The request of `client` at `replica` ended; its connection stays
    /// open for the next one (`keeps`) or is closed.
    pub(super) fn end(&mut self, replica: usize, client: Option<u32>, keeps: bool, now: SimTime) {
        if !self.on || !keeps {
            return;
        }
        match client {
            Some(c) => {
                self.closed_idle.insert((replica as u32, c), now);
            }
            None => self.open_idle[replica].push(now),
        }
    }
}
