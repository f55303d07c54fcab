//! One integration binary: every module below runs scenarios in-process.

mod policies;
