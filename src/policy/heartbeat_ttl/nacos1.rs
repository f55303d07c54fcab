//! Nacos 1.x ephemeral instances: HTTP beats; the server's beat-check task
//! scans every `check_interval` and marks an instance unhealthy when its
//! last beat is more than `heart_beat_timeout` old; the UDP push reaches the
//! gateway `push_delay` after the change (`PushService.onApplicationEvent`
//! schedules it 1000 ms later; `serviceChanged` adds no push while one is
//! scheduled, and the push carries the service as it is when sent).

use super::generic::TtlRegistry;
use super::{SelfCheckSpec, Setup, positive, positive_if_set, refresh, self_check_valid};
use crate::engine::SimDuration;
use crate::policy::support::gateway_view::Propagation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Nacos1Params {
    /// `preserved.heart.beat.interval`. Default 5s.
    #[serde(default = "five_s")]
    pub heart_beat_interval: SimDuration,
    /// `preserved.heart.beat.timeout`: unhealthy when the last beat is older. Default 15s.
    #[serde(default = "fifteen_s")]
    pub heart_beat_timeout: SimDuration,
    /// `preserved.ip.delete.timeout`: the instance is deleted (a later beat
    /// re-registers it; routing is the same as unhealthy). Default 30s.
    #[serde(default = "thirty_s")]
    pub ip_delete_timeout: SimDuration,
    /// The server's beat-check task period (fixed delay). Default 5s.
    #[serde(default = "five_s")]
    pub check_interval: SimDuration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check: Option<SelfCheckSpec>,
    /// The UDP push's delay after a change (`PushService`: 1000 ms,
    /// hard-coded). Default 1s.
    #[serde(default = "one_s")]
    pub push_delay: SimDuration,
    /// Omitted: the UDP push reaches the client; with push off, the client
    /// polls (`cacheMillis`, 10 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_interval: Option<SimDuration>,
}

fn one_s() -> SimDuration {
    SimDuration::from_secs(1)
}

fn five_s() -> SimDuration {
    SimDuration::from_secs(5)
}
fn fifteen_s() -> SimDuration {
    SimDuration::from_secs(15)
}
fn thirty_s() -> SimDuration {
    SimDuration::from_secs(30)
}

impl Nacos1Params {
    pub(super) fn label(&self) -> String {
        format!(
            "nacos1 beat={} timeout={}",
            self.heart_beat_interval, self.heart_beat_timeout
        )
    }

    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        positive("heart_beat_interval", self.heart_beat_interval)?;
        positive("heart_beat_timeout", self.heart_beat_timeout)?;
        positive("check_interval", self.check_interval)?;
        positive_if_set("refresh_interval", self.refresh_interval)?;
        self_check_valid(&self.self_check)
    }

    pub(super) fn setup(&self, nodes: usize) -> Setup {
        let registry = TtlRegistry::new(
            self.heart_beat_timeout,
            Some(self.check_interval),
            true,
            nodes,
        );
        Setup {
            interval: self.heart_beat_interval,
            self_check: self.self_check,
            initially: true,
            propagation: match self.refresh_interval {
                Some(_) => refresh(self.refresh_interval),
                None => Propagation::Push(self.push_delay),
            },
            server_layers: 0,
            registry: Box::new(registry),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::started;
    use crate::engine::SimDuration;
    use crate::ids::NodeId;
    use crate::policy::testkit::ms;

    const A: NodeId = NodeId(0);

    #[test]
    fn nacos1_marks_unhealthy_15_to_20_s_after_the_last_beat() {
        let mut h = started(serde_json::json!({"registry": "nacos1"}), 1);
        assert_eq!(h.heartbeat_plans()[0].interval, SimDuration::from_secs(5));
        h.heartbeat(ms(2_000), A);
        let mut ejected = None;
        for t in (2_000..40_000).step_by(100) {
            h.advance_to(ms(t));
            if ejected.is_none() && !h.routable(A) {
                ejected = Some(t);
            }
        }
        let e = ejected.expect("ejected") as f64 / 1000.0 - 2.0;
        assert!(
            e > 16.0 && e <= 21.1,
            "{e}: 15–20 s, then the push 1 s later"
        );
    }

    #[test]
    fn the_push_reaches_the_gateway_one_second_after_the_scan() {
        // `PushService.onApplicationEvent`: `scheduleUdpSender(…, 1000,
        // MILLISECONDS)`. Same seed, same scan phase: the gateway hears of
        // the change exactly `push_delay` after the scan that found it.
        let ejected_at = |json| {
            let mut h = started(json, 1);
            h.heartbeat(ms(2_000), A);
            h.advance_to(ms(40_000));
            h.history(A)[0]
        };
        let (t_push, out) = ejected_at(serde_json::json!({"registry": "nacos1"}));
        let (t_now, _) = ejected_at(serde_json::json!({"registry": "nacos1", "push_delay": "1us"}));
        assert!(out);
        assert_eq!(
            t_push.saturating_since(t_now),
            SimDuration::from_micros(999_999)
        );
    }
}
