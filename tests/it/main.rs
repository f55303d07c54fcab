//! One integration binary (see the style guide): each module is a group of
//! end-to-end checks that run models in-process.

mod haproxy;
mod probes;
