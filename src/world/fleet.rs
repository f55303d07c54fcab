//! The gateway's replicas (`gateway.replicas`): each has its own wall clock
//! (nginx's whole seconds at its own phase), its own instance of every
//! policy and its own copies of peer state. How the flat tables are laid out
//! is [`FleetLayout`]'s; this part adds the clocks and which replica a
//! request reaches (`gateway.spread`).

use super::streams::Stream;
use crate::engine::{SimDuration, SimRng, SimTime};
use crate::ids::{FleetLayout, Scope};
use crate::policy::{Now, WallClock};
use crate::spec::{Arrivals, Clients as ClientsSpec, Model, Spread};
use rand::RngExt;
use std::ops::Range;

pub(crate) struct Fleet {
    layout: FleetLayout,
    /// Per replica: its wall clock.
    clocks: Vec<WallClock>,
    /// The next replica in turn (`gateway.spread: round_robin`).
    next: u64,
}

impl Fleet {
    /// Replica 0's clock phase is the single gateway's; the others continue
    /// the clock stream.
    pub(crate) fn new(model: &Model, seed: u64) -> Self {
        let mut clock_rng = Stream::Clock.of(seed);
        let clocks = (0..model.replicas())
            .map(|_| {
                WallClock::new(match model.gateway.clock_phase {
                    Some(p) => p,
                    None => SimDuration::from_micros(clock_rng.random_range(0..1_000_000)),
                })
            })
            .collect();
        Fleet {
            layout: model.fleet_layout(),
            clocks,
            next: 0,
        }
    }

    #[inline]
    pub(crate) fn layout(&self) -> FleetLayout {
        self.layout
    }

    pub(crate) fn replicas(&self) -> usize {
        self.layout.replicas()
    }

    /// More than one replica.
    #[inline]
    pub(crate) fn is_fleet(&self) -> bool {
        self.layout.is_fleet()
    }

    /// The replica of global scope `s`.
    #[inline]
    pub(crate) fn replica_of(&self, s: Scope) -> usize {
        self.layout.replica_of(s)
    }

    /// The replica of policy instance `i`.
    #[inline]
    pub(crate) fn replica_of_policy(&self, i: usize) -> usize {
        self.layout.replica_of_policy(i)
    }

    /// Global scope `s` within its replica: what that replica's policies call it.
    #[inline]
    pub(crate) fn local(&self, s: Scope) -> Scope {
        self.layout.local(s)
    }

    /// The policy instances of the replica of global scope `s`.
    #[inline]
    pub(crate) fn policies_of(&self, s: Scope) -> Range<usize> {
        self.layout.policies_of_scope(s)
    }

    /// Replica `r`'s clock.
    #[inline]
    pub(crate) fn clock(&self, r: usize) -> &WallClock {
        &self.clocks[r]
    }

    /// `t` on the clock of replica `r`.
    #[inline]
    pub(crate) fn now(&self, r: usize, t: SimTime) -> Now {
        self.clocks[r].now(t)
    }

    /// `t` on the clock of the replica of global scope `s`.
    #[inline]
    pub(crate) fn now_in(&self, s: Scope, t: SimTime) -> Now {
        self.clocks[self.replica_of(s)].now(t)
    }

    /// `t` on the clock of the replica of policy instance `i`.
    #[inline]
    pub(crate) fn now_of_policy(&self, i: usize, t: SimTime) -> Now {
        self.clocks[self.replica_of_policy(i)].now(t)
    }

    /// The gateway replica a request of `client` (closed loop) reaches, by
    /// `gateway.spread`; 0 with a single gateway (no draw).
    pub(crate) fn pick(&mut self, model: &Model, client: Option<u32>, rng: &mut SimRng) -> usize {
        if !self.is_fleet() {
            return 0;
        }
        let replicas = self.replicas();
        let mut in_turn = || {
            let r = (self.next % replicas as u64) as usize;
            self.next += 1;
            r
        };
        match (model.gateway.spread, client, &model.clients) {
            (Spread::RoundRobin, ..) => in_turn(),
            (Spread::Random, ..) => rng.random_range(0..replicas),
            (Spread::PerClient, Some(c), _) => c as usize % replicas,
            (
                Spread::PerClient,
                None,
                ClientsSpec::Open {
                    arrivals: Arrivals::Constant,
                    ..
                },
            ) => in_turn(),
            (Spread::PerClient, None, _) => rng.random_range(0..replicas),
        }
    }
}
