//! The random streams of one run: one portable generator per concern, each
//! derived from the run's seed (`engine::rng::stream`), so that switching the
//! policy (which draws from `Policy`) leaves arrivals and service times
//! untouched (common random numbers across compared policies).

use crate::engine::SimRng;
use crate::engine::rng;

/// What a random stream is used for; the discriminant is the stream's id.
/// The ids are part of the seeding contract: changing one changes every
/// output.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u64)]
pub(crate) enum Stream {
    Arrivals = 1,
    Service = 2,
    Faults = 3,
    Gateway = 4,
    Policy = crate::policy::RNG_STREAM,
    /// Each gateway replica's wall-clock phase.
    Clock = 6,
    Heartbeat = 7,
    /// Probes' service times and fault draws at the node, so that probing
    /// leaves the requests' streams untouched.
    Probe = 8,
    /// Which gateway replica a request reaches (`gateway.spread`).
    Spread = 9,
    /// Fault starts drawn per replication (a fault's `at` as a distribution).
    Phase = 10,
    /// A crashed process's start-up time (`restart_delay`).
    Restart = 11,
    /// Open-loop clients' send delays (`clients.send_jitter`).
    Jitter = 12,
    /// Pods: start-up times, endpoint propagation, probe phases.
    Pods = 13,
    /// Each request's client key (`clients.keys`), drawn only when the
    /// model has keys.
    Keys = 14,
}

impl Stream {
    /// The generator of this concern in the run seeded `seed`.
    pub(crate) fn of(self, seed: u64) -> SimRng {
        rng::stream(seed, self as u64)
    }
}

/// The streams the event handlers draw from while the run goes on (the
/// clock phases and drawn fault starts are drawn once, when the world is
/// built).
pub(crate) struct Streams {
    /// Which gateway replica a request reaches (`gateway.spread: random`).
    pub(crate) spread: SimRng,
    pub(crate) arrivals: SimRng,
    pub(crate) service: SimRng,
    pub(crate) faults: SimRng,
    /// The gateway worker a request lands on; the random balancers.
    pub(crate) gateway: SimRng,
    pub(crate) policy: SimRng,
    pub(crate) probe: SimRng,
    pub(crate) heartbeat: SimRng,
    /// Start-up times of restarted processes (`restart_delay`).
    pub(crate) restart: SimRng,
    /// Send delays of open-loop requests (`clients.send_jitter`).
    pub(crate) jitter: SimRng,
    /// Client keys (`clients.keys`).
    pub(crate) keys: SimRng,
    /// The run's seed.
    pub(crate) seed: u64,
}

impl Streams {
    pub(crate) fn new(seed: u64) -> Self {
        Streams {
            spread: Stream::Spread.of(seed),
            arrivals: Stream::Arrivals.of(seed),
            service: Stream::Service.of(seed),
            faults: Stream::Faults.of(seed),
            gateway: Stream::Gateway.of(seed),
            policy: Stream::Policy.of(seed),
            probe: Stream::Probe.of(seed),
            heartbeat: Stream::Heartbeat.of(seed),
            restart: Stream::Restart.of(seed),
            jitter: Stream::Jitter.of(seed),
            keys: Stream::Keys.of(seed),
            seed,
        }
    }
}
