//! What several policies are made of: outcome windows, back-off sequences,
//! Finagle's moving average and windowed counter,
//! a prober's thread pool, and the gateway's view of health verdicts.

pub mod backoff;
pub mod ejection;
pub mod ema;
pub mod gateway_view;
pub mod prober_pool;
pub mod window;
