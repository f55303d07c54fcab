//! Real gateway configurations in and out. [`import`] reads an nginx,
//! HAProxy, Envoy, Istio or Kubernetes file into a model document (the
//! gateway, the nodes and the health policies; the workload and the faults
//! are not in a config and get plain defaults); [`export`] writes the
//! gateway part of a model back as nginx, HAProxy, Envoy or Istio config.
//!
//! Every directive that matters for health or routing but that hcsim does
//! not model becomes a [`Warning`] naming its file and line; a malformed
//! config is an [`crate::Error`] naming the file and line and what was
//! expected.

pub mod export;
pub mod import;
mod source;

pub use source::{Loc, Warning};
