//! What several policies are made of: outcome windows, back-off sequences,
//! a prober's thread pool, and the gateway's view of health verdicts.

pub mod backoff;
pub mod gateway_view;
pub mod prober_pool;
pub mod window;
