//! The gateway's event log (`hcsim run --events`, `events.csv`): the lines
//! the real product would write to its own log at each step, in its own
//! wording, so that a user can set hcsim's log beside theirs.
//!
//! - nginx (error log): `connect() failed (111: Connection refused)`,
//!   `upstream timed out (110: Connection timed out)` and `recv() failed
//!   (104: Connection reset by peer)` with the phase (`while connecting to
//!   upstream`, `while reading response header from upstream`), as
//!   `ngx_http_upstream_next` and the event handlers of
//!   `ngx_http_upstream.c` log them; `no live upstreams` when selection
//!   finds no peer (`ngx_http_upstream_connect`); `upstream server
//!   temporarily disabled` (`warn`) at every failure that leaves a peer at
//!   `max_fails` (`ngx_http_upstream_free_round_robin_peer`).
//! - HAProxy 2.6: `Server be/A is DOWN, reason: ..., check duration: ...`
//!   and `is UP`, and `backend be has no server available!`, worded as
//!   haproxy 2.6.12 writes them (measured on the binary).
//! - Envoy: the outlier detection event log's JSON (`EventLoggerImpl::
//!   logEject` / `logUneject`, proto field names, primitive fields always
//!   printed), without `timestamp` (the log's `t_s` is the virtual time).
//!
//! The log is bounded: past its cap, lines are counted, not kept.

use super::World;
use crate::config::export::{self, haproxy::server_names};
use crate::ids::{NodeId, Scope};
use crate::policy::{ActiveProbeSpec, PolicySpec};
use crate::policy::{AttemptResult, LogEvent, ProbeKind, ProbeResult};
use crate::spec::{GatewayFlavor, Model};

/// Lines kept over all the replications of a run (each keeps its share):
/// about 200 MB of log at most.
pub const MAX_EVENT_LINES: usize = 1_000_000;

/// One line of the event log.
#[derive(Clone, Debug, PartialEq)]
pub struct EventLine {
    /// Virtual time, seconds.
    pub t_s: f64,
    /// The gateway replica that wrote it.
    pub replica: u32,
    /// The node it is about (empty for a line about the whole upstream).
    pub node: String,
    /// Whose wording: `nginx`, `haproxy` or `envoy`.
    pub source: &'static str,
    pub line: String,
}

/// One replication's event log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventLog {
    pub lines: Vec<EventLine>,
    /// The most lines kept.
    pub cap: usize,
    /// Lines past the cap, not kept.
    pub dropped: u64,
}

impl EventLog {
    pub fn new(cap: usize) -> Self {
        EventLog {
            lines: Vec::new(),
            cap,
            dropped: 0,
        }
    }

    fn push(&mut self, line: EventLine) {
        if self.lines.len() < self.cap {
            self.lines.push(line);
        } else {
            self.dropped += 1;
        }
    }
}

/// The log being written and the names the products would use: the
/// upstream, backend or cluster is the model's name, nodes are their
/// exported addresses and HAProxy server names (as `hcsim export` writes
/// the config).
pub(crate) struct Logger {
    pub(crate) log: EventLog,
    /// nginx's phase of the attempt freed last (`r->connection->log->action`),
    /// which a `temporarily disabled` warning during its free is logged in.
    phase: &'static str,
    upstream: String,
    addresses: Vec<String>,
    servers: Vec<String>,
    /// The gateway is nginx (its request path, and no Envoy policy): its
    /// error log's lines about attempts are written.
    pub(crate) nginx: bool,
}

impl Logger {
    pub(crate) fn new(model: &Model, cap: usize) -> Self {
        Logger {
            log: EventLog::new(cap),
            phase: CONNECTING,
            upstream: export::ident(&model.name),
            addresses: export::Options::of(model).addresses,
            servers: server_names(model),
            nginx: model.gateway.flavor == GatewayFlavor::Nginx
                && !model.policies.iter().any(is_envoy)
                && !matches!(model.gateway.pool, Some(crate::spec::PoolSpec::Envoy(_))),
        }
    }
}

impl Logger {
    /// The upstream, backend or cluster as the product names it.
    pub(crate) fn upstream_name(&self) -> &str {
        &self.upstream
    }

    /// HAProxy's name of the server of `node`.
    pub(crate) fn server_name(&self, node: NodeId) -> &str {
        &self.servers[node.index()]
    }
}

const CONNECTING: &str = "connecting to upstream";
const READING: &str = "reading response header from upstream";

/// A policy that makes the gateway an Envoy (or an Istio sidecar).
fn is_envoy(p: &PolicySpec) -> bool {
    matches!(
        p,
        PolicySpec::OutlierDetection(_)
            | PolicySpec::Istio(_)
            | PolicySpec::ActiveProbe(ActiveProbeSpec::Envoy(_))
    )
}

/// nginx's error-log message for an attempt that failed without a
/// response (`None`: nginx writes nothing at `error` for it).
pub fn nginx_attempt_error(result: AttemptResult) -> Option<&'static str> {
    Some(match result {
        AttemptResult::Refused => {
            "connect() failed (111: Connection refused) while connecting to upstream"
        }
        AttemptResult::ConnectTimeout => {
            "upstream timed out (110: Connection timed out) while connecting to upstream"
        }
        AttemptResult::ReadTimeout => {
            "upstream timed out (110: Connection timed out) while reading response header from upstream"
        }
        AttemptResult::Reset => {
            "upstream prematurely closed connection while reading response header from upstream"
        }
        // A Hystrix rejection sends nothing: nginx has no line for it.
        AttemptResult::Status(_) | AttemptResult::ClientAbort | AttemptResult::Rejected => {
            return None;
        }
    })
}

/// The reason phrase HAProxy prints as a wrong status's `info`.
fn reason_phrase(code: u16) -> &'static str {
    match code {
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// HAProxy's `reason: ...` for a check result (`check_statuses[]` of
/// check.c, with the `info` haproxy 2.6.12 adds); `up`: the check that
/// decided brought the server up, so a status passed `http-check expect`.
pub fn haproxy_reason(kind: ProbeKind, result: ProbeResult, up: bool) -> String {
    match (kind, result) {
        (_, ProbeResult::Refused) => {
            "Layer4 connection problem, info: \"Connection refused\"".into()
        }
        (_, ProbeResult::ConnectTimeout) => "Layer4 timeout".into(),
        (ProbeKind::Tcp, _) => "Layer4 check passed".into(),
        (ProbeKind::Http, ProbeResult::Connected) => "Layer4 check passed".into(),
        (ProbeKind::Http, ProbeResult::Timeout) => "Layer7 timeout".into(),
        (ProbeKind::Http, ProbeResult::Reset) => {
            "Socket error, info: \"Connection reset by peer\"".into()
        }
        (ProbeKind::Http, ProbeResult::Status(s)) if up => {
            format!("Layer7 check passed, code: {s}")
        }
        (ProbeKind::Http, ProbeResult::Status(s)) => {
            format!(
                "Layer7 wrong status, code: {s}, info: \"{}\"",
                reason_phrase(s)
            )
        }
    }
}

/// `analyze_statuses[]` of check.c: what `observe` saw of an attempt.
fn haproxy_analyze_status(r: AttemptResult) -> &'static str {
    match r {
        AttemptResult::Refused | AttemptResult::ConnectTimeout => "L4 unsuccessful connection",
        AttemptResult::Status(_) => "Wrong http response",
        AttemptResult::ReadTimeout => "Read timeout (http)",
        AttemptResult::Reset => "Close from server (http)",
        AttemptResult::ClientAbort | AttemptResult::Rejected => "Unknown",
    }
}

/// A JSON number as Envoy's proto3 printer writes a double.
fn json_f64(x: f64) -> String {
    serde_json::to_string(&x).unwrap_or_else(|_| "0".into())
}

impl World<'_> {
    pub(crate) fn log_line(
        &mut self,
        replica: usize,
        node: Option<NodeId>,
        source: &'static str,
        line: String,
    ) {
        let t_s = self.q.now().as_secs_f64();
        let name = node.map_or_else(String::new, |n| self.model.nodes[n.index()].name.clone());
        if let Some(l) = self.obs.events.as_mut() {
            l.log.push(EventLine {
                t_s,
                replica: replica as u32,
                node: name,
                source,
                line,
            });
        }
    }

    /// nginx: an attempt to `node` ended; if without a response, the
    /// error line.
    #[cold]
    pub(crate) fn log_attempt_error(&mut self, scope: Scope, node: NodeId, result: AttemptResult) {
        let Some(l) = self.obs.events.as_mut().filter(|l| l.nginx) else {
            return;
        };
        l.phase = match result {
            AttemptResult::Refused | AttemptResult::ConnectTimeout => CONNECTING,
            _ => READING,
        };
        // A reset on a connection the node had closed unseen (pool/).
        let cause = self.pool.as_ref().map(|p| p.last_cause);
        let Some(msg) = super::gateway::nginx_reuse_error(cause, result)
            .or_else(|| nginx_attempt_error(result))
        else {
            return;
        };
        let line = format!(
            "[error] {msg}, upstream: \"http://{}/\"",
            l.addresses[node.index()]
        );
        self.log_line(self.fleet.replica_of(scope), Some(node), "nginx", line);
    }

    /// nginx: selection found no peer.
    #[cold]
    pub(crate) fn log_no_live_upstreams(&mut self, scope: Scope) {
        let Some(l) = self.obs.events.as_ref().filter(|l| l.nginx) else {
            return;
        };
        let line = format!(
            "[error] no live upstreams while connecting to upstream, upstream: \"http://{}/\"",
            l.upstream
        );
        self.log_line(self.fleet.replica_of(scope), None, "nginx", line);
    }

    /// What policy instance `i` reported for the log.
    #[cold]
    pub(crate) fn log_policy_event(&mut self, i: usize, ev: LogEvent) {
        let replica = self.fleet.replica_of_policy(i);
        let Some(l) = self.obs.events.as_ref() else {
            return;
        };
        match ev {
            LogEvent::NginxDisabled { node, .. } => {
                let line = format!(
                    "[warn] upstream server temporarily disabled while {}, upstream: \"http://{}/\"",
                    l.phase,
                    l.addresses[node.index()]
                );
                self.log_line(replica, Some(node), "nginx", line);
            }
            LogEvent::HaproxyCheck {
                node,
                up,
                kind,
                result,
                duration,
            } => {
                let reason = haproxy_reason(kind, result, up);
                let ms = duration.as_micros() / 1000;
                self.log_haproxy_check(i, node, up, format!("{reason}, check duration: {ms}ms"));
            }
            LogEvent::HaproxyAnalyze { node, errors, last } => {
                // HCHK_STATUS_HANA: its duration is -1, so none is printed.
                let reason = format!(
                    "Health analyze, info: \"Detected {errors} consecutive errors, last one was: {}\"",
                    haproxy_analyze_status(last)
                );
                self.log_haproxy_check(i, node, false, reason);
            }
            LogEvent::EnvoyOutlier {
                node,
                kind,
                eject,
                enforced,
                num_ejections,
                secs_since_last_action,
                success_rate,
            } => {
                let mut line = format!("{{\"type\":\"{kind}\"");
                if let Some(s) = secs_since_last_action {
                    line += &format!(",\"secs_since_last_action\":\"{s}\"");
                }
                line += &format!(
                    ",\"cluster_name\":\"{}\",\"upstream_url\":\"{}\",\"action\":\"{}\",\
                     \"num_ejections\":{num_ejections},\"enforced\":{enforced}",
                    l.upstream,
                    l.addresses[node.index()],
                    if eject { "EJECT" } else { "UNEJECT" }
                );
                if eject {
                    line += &match success_rate {
                        Some((host, Some((average, threshold)))) => format!(
                            ",\"eject_success_rate_event\":{{\"host_success_rate\":{},\
                             \"cluster_average_success_rate\":{},\
                             \"cluster_success_rate_ejection_threshold\":{}}}",
                            json_f64(host),
                            json_f64(average),
                            json_f64(threshold)
                        ),
                        Some((host, None)) => format!(
                            ",\"eject_failure_percentage_event\":{{\"host_success_rate\":{}}}",
                            json_f64(host)
                        ),
                        None => ",\"eject_consecutive_event\":{}".into(),
                    };
                }
                line.push('}');
                self.log_line(replica, Some(node), "envoy", line);
            }
        }
    }

    /// HAProxy: `Server be/A is DOWN` or `is UP` (`srv_set_stopped`,
    /// `srv_set_running`, `srv_append_status`), counting the servers policy
    /// `i` holds up after the change; `backend be has no server available!`
    /// when none is left.
    fn log_haproxy_check(&mut self, i: usize, node: NodeId, up: bool, reason: String) {
        let replica = self.fleet.replica_of_policy(i);
        let now = self.fleet.now(replica, self.q.now());
        let (mut active, mut backup) = (0, 0);
        for (k, n) in self.model.nodes.iter().enumerate() {
            if !n.down && self.bank.get(i).is_routable(0, NodeId(k as u32), now) {
                if n.backup {
                    backup += 1;
                } else {
                    active += 1;
                }
            }
        }
        let Some(l) = self.obs.events.as_ref() else {
            return;
        };
        let (be, sv) = (l.upstream.clone(), l.servers[node.index()].clone());
        let line = if up {
            format!(
                "Server {be}/{sv} is UP, reason: {reason}. {active} active and {backup} backup servers online. 0 sessions requeued, 0 total in queue."
            )
        } else {
            let scopes = self.fleet.layout().scopes_of(replica);
            let sessions = self.gw.conns_of(scopes, node);
            format!(
                "Server {be}/{sv} is DOWN, reason: {reason}. {active} active and {backup} backup servers left. {sessions} sessions active, 0 requeued, \
                 0 remaining in queue."
            )
        };
        self.log_line(replica, Some(node), "haproxy", line);
        if !up && active + backup == 0 {
            self.log_line(
                replica,
                None,
                "haproxy",
                format!("backend {be} has no server available!"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn haproxy_reasons_are_haproxy_2_6_wording() {
        // Measured on haproxy 2.6.12 (`option httpchk`, servers refusing,
        // answering 503, hanging past `timeout check`, resetting).
        use ProbeResult::*;
        let http = |r| haproxy_reason(ProbeKind::Http, r, matches!(r, Status(200)));
        assert_eq!(
            http(Refused),
            "Layer4 connection problem, info: \"Connection refused\""
        );
        assert_eq!(
            http(Status(503)),
            "Layer7 wrong status, code: 503, info: \"Service Unavailable\""
        );
        assert_eq!(http(Timeout), "Layer7 timeout");
        assert_eq!(
            http(Reset),
            "Socket error, info: \"Connection reset by peer\""
        );
        assert_eq!(http(Status(200)), "Layer7 check passed, code: 200");
        // What `http-check expect` accepts passes, whatever the code.
        assert_eq!(
            haproxy_reason(ProbeKind::Http, Status(503), true),
            "Layer7 check passed, code: 503"
        );
        assert_eq!(http(ConnectTimeout), "Layer4 timeout");
        assert_eq!(
            haproxy_reason(ProbeKind::Tcp, Connected, true),
            "Layer4 check passed"
        );
        assert_eq!(
            haproxy_analyze_status(AttemptResult::Status(503)),
            "Wrong http response"
        );
    }

    #[test]
    fn nginx_writes_errors_only_for_attempts_without_a_response() {
        assert_eq!(
            nginx_attempt_error(AttemptResult::ConnectTimeout),
            Some("upstream timed out (110: Connection timed out) while connecting to upstream")
        );
        assert_eq!(nginx_attempt_error(AttemptResult::Status(502)), None);
        assert_eq!(nginx_attempt_error(AttemptResult::ClientAbort), None);
    }

    #[test]
    fn the_log_keeps_its_cap_and_counts_the_rest() {
        let mut log = EventLog::new(2);
        for i in 0..5 {
            log.push(EventLine {
                t_s: i as f64,
                replica: 0,
                node: "a".into(),
                source: "nginx",
                line: format!("line {i}"),
            });
        }
        assert_eq!(log.lines.len(), 2);
        assert_eq!(log.dropped, 3);
        assert_eq!(log.lines[1].line, "line 1");
    }
}
