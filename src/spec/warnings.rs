//! What `hcsim check` and `hcsim run` warn about: settings that are legal
//! but suspicious, each with the JSON path it concerns.

use super::haproxy::KERNEL_CONNECT_TIMEOUT;
use super::model::Model;
use super::model_spec::*;
use super::validate::policy_field;
use crate::engine::SimDuration;
use crate::policy::PolicySpec;

impl Model {
    /// Legal but suspicious settings, as `(field, message)` with the JSON
    /// path of the field. Callers print them as `warning: file: field: message`.
    pub fn warnings(&self) -> Vec<(String, String)> {
        let mut w = self.client_timeout_warnings();
        w.extend(super::flavor_checks::warnings(&self.spec));
        let words = &self.gateway.proxy_next_upstream;
        if words.contains(&NextUpstream::Off) && words.len() > 1 {
            w.push((
                "gateway.proxy_next_upstream".into(),
                "`off` turns off every other condition listed: no request is retried".into(),
            ));
        }
        for (i, f) in self.spec.faults.iter().enumerate() {
            let (at, for_) = f.window();
            let (_, latest) = at.range();
            if latest.is_none_or(|l| l >= self.duration) && at.fixed().is_none() {
                w.push((
                    format!("faults[{i}].at"),
                    format!(
                        "{at} may start after the run ({}): in a replication that draws \
                         such a start, the fault does not happen",
                        self.duration
                    ),
                ));
            }
            if let Some(at) = at.fixed()
                && let Some(d) = for_
                && at + d > self.duration
            {
                w.push((
                    format!("faults[{i}].for"),
                    format!(
                        "the fault would end at {}, after the run ({}); it lasts to the end \
                         (leave out `for` to say so)",
                        at + d,
                        self.duration
                    ),
                ));
            }
        }
        w.extend(super::connection_checks::warnings(&self.spec));
        w.extend(super::pods::warnings(&self.spec));
        if let Some(p) = &self.pods {
            w.extend(super::pods::rollout_warnings(&self.spec, p));
        }
        for (i, p) in self.policies.iter().enumerate() {
            let base = policy_field(&self.spec, i);
            for (field, msg) in p.warnings() {
                w.push((format!("{base}.{field}"), msg));
            }
        }
        w
    }

    /// Clients that give up before the gateway's attempt ends abort it (499),
    /// which no passive check counts.
    fn client_timeout_warnings(&self) -> Vec<(String, String)> {
        let g = &self.gateway;
        let Some(t) = self.clients.timeout() else {
            return vec![];
        };
        if !self.policies.iter().any(PolicySpec::counts_client_requests) {
            return vec![];
        }
        // When a waiting attempt ends: (field, its value as written, when it fires).
        let waits: Vec<(String, String, Option<SimDuration>)> = match g.flavor {
            GatewayFlavor::Linkerd => super::flavour_checks::client_waits(g),
            GatewayFlavor::Nginx | GatewayFlavor::Kong => vec![
                (
                    "gateway.proxy_connect_timeout".into(),
                    g.proxy_connect_timeout.to_string(),
                    Some(g.proxy_connect_timeout),
                ),
                (
                    "gateway.proxy_read_timeout".into(),
                    g.proxy_read_timeout.to_string(),
                    Some(g.rtt + g.proxy_read_timeout),
                ),
            ],
            GatewayFlavor::Haproxy => {
                let h = g.haproxy();
                vec![
                    (
                        "gateway.haproxy.timeout_connect".into(),
                        h.timeout_connect.map_or_else(
                            || format!("unset: the kernel's {KERNEL_CONNECT_TIMEOUT}"),
                            |d| d.to_string(),
                        ),
                        Some(h.timeout_connect.unwrap_or(KERNEL_CONNECT_TIMEOUT)),
                    ),
                    (
                        "gateway.haproxy.timeout_server".into(),
                        h.timeout_server
                            .map_or_else(|| "unset: never".into(), |d| d.to_string()),
                        h.timeout_server.map(|d| g.rtt + d),
                    ),
                ]
            }
            GatewayFlavor::Caddy => {
                let c = g.caddy();
                vec![(
                    "gateway.caddy.response_header_timeout".into(),
                    c.response_header_timeout
                        .map_or_else(|| "unset: never".into(), |d| d.to_string()),
                    c.response_header_timeout.map(|d| g.rtt + d),
                )]
            }
            GatewayFlavor::Traefik => {
                let t = g.traefik().forwarding_timeouts;
                vec![(
                    "gateway.traefik.forwardingTimeouts.responseHeaderTimeout".into(),
                    t.response_header_timeout
                        .map_or_else(|| "unset: never".into(), |d| d.to_string()),
                    t.response_header_timeout.map(|d| g.rtt + d),
                )]
            }
        };
        let longer: Vec<String> = waits
            .iter()
            .filter(|(_, _, fires)| fires.is_none_or(|f| t <= f))
            .map(|(name, value, _)| format!("{name} ({value})"))
            .collect();
        if longer.is_empty() {
            return vec![];
        }
        vec![(
            "clients.timeout".into(),
            format!(
                "clients give up after {t}, no later than {}: a waiting attempt ends as a \
                 client abort (499), which passive health checks never count as a \
                 failure, so they may never eject a node that stops answering",
                longer.join(" and ")
            ),
        )]
    }
}
