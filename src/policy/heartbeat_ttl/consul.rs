//! A Consul service with a TTL check: each beat (`PUT
//! /v1/agent/check/pass/...`) restarts a one-shot `ttl` timer; the check
//! starts `critical` unless registered `passing`; blocking queries show the
//! change to the gateway at once.

use super::generic::TtlRegistry;
use super::{SelfCheckSpec, Setup, positive, positive_if_set, refresh, self_check_valid};
use crate::engine::SimDuration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A check's status when it is registered.
#[derive(Copy, Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InitialStatus {
    /// Consul's default: not served until the first beat.
    #[default]
    Critical,
    Passing,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsulParams {
    /// How often the service calls `PUT /v1/agent/check/pass/...`.
    pub interval: SimDuration,
    /// The check's `ttl`.
    pub ttl: SimDuration,
    /// The check's `status` at registration. Default `critical`.
    #[serde(default)]
    pub initial_status: InitialStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check: Option<SelfCheckSpec>,
    /// Omitted: blocking queries see changes at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_interval: Option<SimDuration>,
}

impl ConsulParams {
    pub(super) fn label(&self) -> String {
        format!("consul ttl={} interval={}", self.ttl, self.interval)
    }

    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        positive("interval", self.interval)?;
        positive("ttl", self.ttl)?;
        positive_if_set("refresh_interval", self.refresh_interval)?;
        self_check_valid(&self.self_check)
    }

    pub(super) fn setup(&self, nodes: usize) -> Setup {
        let passing = self.initial_status == InitialStatus::Passing;
        Setup {
            interval: self.interval,
            self_check: self.self_check,
            initially: passing,
            propagation: refresh(self.refresh_interval),
            registry: Box::new(TtlRegistry::new(self.ttl, None, passing, nodes)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::started;
    use crate::ids::NodeId;
    use crate::policy::testkit::ms;

    const A: NodeId = NodeId(0);

    #[test]
    fn consul_checks_start_critical() {
        let mut h = started(
            serde_json::json!({"registry": "consul", "interval": "10s", "ttl": "30s"}),
            1,
        );
        assert!(!h.routable(A));
        h.heartbeat(ms(7_000), A);
        assert!(h.routable(A));
        h.advance_to(ms(36_999));
        assert!(h.routable(A));
        h.advance_to(ms(37_000));
        assert!(!h.routable(A), "critical exactly ttl after the update");
    }
}
