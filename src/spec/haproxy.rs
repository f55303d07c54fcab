//! `gateway.haproxy`: an HAProxy backend's request-path settings, with its
//! `option redispatch` and `cookie` persistence.

use crate::engine::SimDuration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An HAProxy backend's request-path settings.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HaproxySpec {
    /// `retries`: connection attempts after the first. Default 3.
    pub retries: u32,
    /// `option redispatch [interval]`: `false` (default: off), `true` (the
    /// last retry, HAProxy's -1), or the interval (N > 0: every Nth retry;
    /// N < 0: the |N|th retry before the last; 0: off). Whatever the value,
    /// with `round_robin` or `random_two` and more than one server up every
    /// retry is redispatched.
    pub redispatch: Redispatch,
    /// `timeout connect`. Default: unset, which leaves it to the kernel's
    /// SYN retries (Linux `tcp_syn_retries=6`: 127 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_connect: Option<SimDuration>,
    /// `timeout server`: waiting for the response. Default: unset (never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_server: Option<SimDuration>,
    /// `timeout queue`: how long a request waits in a queue (the backend's,
    /// when every usable server is at its `max_conns`, or its cookie's
    /// server's) before a 503 (`sQ`). Default: unset, which is `timeout
    /// connect`; with neither set, the request waits until its client
    /// gives up (HAProxy's `TICK_ETERNITY`). Queues exist only for nodes
    /// with `max_conns`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_queue: Option<SimDuration>,
    /// `cookie NAME insert` persistence, with each server's `cookie VALUE`.
    /// Needs `clients.keys`: each client key holds one cookie. Default:
    /// unset (no persistence).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cookie: Option<HaproxyCookie>,
}

/// HAProxy's `cookie NAME insert` (`manage_client_side_cookies`,
/// `http_manage_server_side_cookies`, src/http_ana.c): a client whose cookie
/// names a server that is not DOWN goes there without balancing; any other
/// client is balanced, and the answering server's cookie is set on the
/// response unless the request went to its cookie's server.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HaproxyCookie {
    /// The cookie's name (`cookie NAME`). Default `SERVERID`.
    pub name: String,
    /// `option persist`: a cookie naming a DOWN server still sends the
    /// request there. Default false.
    pub persist: bool,
    /// Each server's `cookie VALUE`, by node name. Empty (the default):
    /// every node's value is its name. When some are given, a node not
    /// listed has no cookie (its answers remove the client's cookie).
    #[serde(
        skip_serializing_if = "std::collections::BTreeMap::is_empty",
        deserialize_with = "crate::diagnostics::unique_keys"
    )]
    pub values: std::collections::BTreeMap<String, String>,
}

impl Default for HaproxyCookie {
    fn default() -> Self {
        HaproxyCookie {
            name: "SERVERID".into(),
            persist: false,
            values: Default::default(),
        }
    }
}

impl HaproxyCookie {
    /// Node `name`'s cookie value, if it has one.
    pub fn value_of<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        if self.values.is_empty() {
            Some(name)
        } else {
            self.values.get(name).map(String::as_str)
        }
    }
}

impl Default for HaproxySpec {
    fn default() -> Self {
        HaproxySpec {
            retries: 3,
            redispatch: Redispatch::Flag(false),
            timeout_connect: None,
            timeout_server: None,
            timeout_queue: None,
            cookie: None,
        }
    }
}

/// `option redispatch`: a flag or an interval.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(untagged)]
pub enum Redispatch {
    Flag(bool),
    Interval(i32),
}

impl HaproxySpec {
    /// The queue timeout in effect: `timeout queue`, else `timeout connect`
    /// (`cfgparse.c` copies it when unset), else none.
    pub fn queue_timeout(&self) -> Option<SimDuration> {
        self.timeout_queue.or(self.timeout_connect)
    }
}

impl Redispatch {
    /// HAProxy's `redispatch_after`: `None` when the option is off.
    pub fn after(self) -> Option<i32> {
        match self {
            Redispatch::Flag(false) | Redispatch::Interval(0) => None,
            Redispatch::Flag(true) => Some(-1),
            Redispatch::Interval(n) => Some(n),
        }
    }
}

/// What an unset HAProxy `timeout connect` amounts to: Linux gives up a
/// connect after 6 SYN retransmissions (1+2+4+8+16+32+64 s).
pub const KERNEL_CONNECT_TIMEOUT: SimDuration = SimDuration::from_secs(127);

/// A server's `on-marked-down` action (`srv_parse_on_marked_down`,
/// src/server.c).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnMarkedDown {
    /// `shutdown-sessions`: when the checks mark the server DOWN, every
    /// request in flight on it is killed at once (`srv_update_status` calls
    /// `srv_shutdown_streams` with `SF_ERR_DOWN`). A request still waiting
    /// for its response header is answered 502 (termination flags `DH`,
    /// measured on 2.6.12), or, not the first of a kept-alive client
    /// connection, closed without an answer; it is not retried.
    ShutdownSessions,
}

/// A server's `on-marked-up` action (`srv_parse_on_marked_up`, src/server.c).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnMarkedUp {
    /// `shutdown-backup-sessions`: when the checks mark this non-backup
    /// server UP, the requests in flight on every backup server are killed
    /// as `shutdown_sessions` kills them (`srv_shutdown_backup_streams`,
    /// `SF_ERR_UP`). On a backup server it does nothing, as in HAProxy.
    ShutdownBackupSessions,
}

/// `nodes[].on_marked_down` and `on_marked_up` need an HAProxy gateway
/// whose checks mark servers DOWN and UP (`active_probe` of flavor
/// `haproxy`).
pub fn check_marked(
    gateway: &super::GatewaySpec,
    nodes: &[super::NodeSpec],
    policies: &[crate::policy::PolicySpec],
) -> Result<(), (String, String)> {
    use crate::policy::{ActiveProbeSpec, PolicySpec};
    let checks = policies
        .iter()
        .any(|p| matches!(p, PolicySpec::ActiveProbe(ActiveProbeSpec::Haproxy(_))));
    for (i, n) in nodes.iter().enumerate() {
        for (field, set) in [
            ("on_marked_down", n.on_marked_down.is_some()),
            ("on_marked_up", n.on_marked_up.is_some()),
        ] {
            if !set {
                continue;
            }
            let why = if gateway.flavor != super::GatewayFlavor::Haproxy {
                "is HAProxy's server keyword: it needs `\"flavor\": \"haproxy\"`"
            } else if !checks {
                "acts when HAProxy's checks mark the server DOWN or UP: it needs an \
                 `active_probe` policy of flavor `haproxy`"
            } else {
                continue;
            };
            return Err((format!("nodes[{i}].{field}"), why.into()));
        }
    }
    Ok(())
}
