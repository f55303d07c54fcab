//! The discrete-event engine: virtual time, the event queue and seeded random streams.
//! It knows nothing about gateways, nodes or policies.

pub mod queue;
pub mod rng;
pub mod time;

pub use queue::EventQueue;
pub use rng::SimRng;
pub use time::{SimDuration, SimTime};
