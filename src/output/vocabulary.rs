//! Display names and units of metrics and model parameters: what charts,
//! report.html and report.md print instead of internal paths. One table for
//! every metric of `summary.json`, `points.csv` and `runs.csv`, and for the
//! parameter paths sweeps vary; anything else falls back to its last path
//! segment with the unit suffix (`_s`, `_ms`, `_per_s`) turned into a unit.

use crate::plot::ValueFormat;

/// The unit a metric or parameter is recorded in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Seconds; shown in ms when every value is under 1 s.
    Seconds,
    /// Milliseconds; shown in s when a value reaches 10 s.
    Millis,
    /// A fraction 0–1, shown in %.
    Fraction,
    /// A count, shown as whole numbers.
    Count,
    /// Events per second.
    PerSecond,
    /// Requests per second.
    RequestsPerSecond,
    /// No unit (a name, a factor).
    None,
}

/// How values of one unit are shown in one chart or table: multiplied by
/// `factor`, followed by `unit`, printed as `format` says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shown {
    pub factor: f64,
    pub unit: &'static str,
    pub format: ValueFormat,
}

impl Shown {
    /// A value as shown, with its unit: `12.3 ms`, `42.1%`, `258`.
    pub fn text(&self, v: Option<f64>) -> String {
        let s = self.format.format(v.map(|v| v * self.factor));
        match (v, self.unit) {
            (None, _) | (_, "" | "%") => s,
            (Some(_), u) => format!("{s} {u}"),
        }
    }
}

impl Unit {
    /// How `values` (in this unit) are best shown together.
    pub fn shown(self, values: impl IntoIterator<Item = f64>) -> Shown {
        let max = values
            .into_iter()
            .filter(|v| v.is_finite())
            .map(f64::abs)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        let plain = |unit| Shown {
            factor: 1.0,
            unit,
            format: ValueFormat::Sig,
        };
        match self {
            Unit::Seconds if max.is_some_and(|m| m < 1.0) => Shown {
                factor: 1000.0,
                ..plain("ms")
            },
            Unit::Seconds => plain("s"),
            Unit::Millis if max.is_some_and(|m| m >= 10_000.0) => Shown {
                factor: 0.001,
                ..plain("s")
            },
            Unit::Millis => plain("ms"),
            Unit::Fraction => Shown {
                factor: 100.0,
                unit: "%",
                format: ValueFormat::Percent,
            },
            Unit::Count => Shown {
                format: ValueFormat::Integer,
                ..plain("")
            },
            Unit::PerSecond => plain("/s"),
            Unit::RequestsPerSecond => plain("req/s"),
            Unit::None => plain(""),
        }
    }
}

/// A metric or parameter as people call it.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    /// Whose metric: `Node A`, `Clients`, `Probe rounds`; empty for parameters.
    pub subject: String,
    /// What it is: `time until ejected`, `max_fails`, `request rate`.
    pub name: String,
    pub unit: Unit,
    /// Whether the table knows it (`false`: a name made from the path).
    pub known: bool,
}

impl Term {
    pub fn new(name: &str, unit: Unit) -> Term {
        Term {
            subject: String::new(),
            name: name.to_string(),
            unit,
            known: true,
        }
    }

    /// `Node A: time until ejected` (or just the name).
    pub fn full(&self) -> String {
        if self.subject.is_empty() {
            self.name.clone()
        } else {
            format!("{}: {}", self.subject, self.name)
        }
    }

    /// The name with the unit as shown: `time until ejected (ms)`.
    pub fn label(&self, shown: &Shown) -> String {
        with_unit(&self.name, shown.unit)
    }

    /// The full name with the unit as shown: `Node A: traffic share (%)`.
    pub fn full_label(&self, shown: &Shown) -> String {
        with_unit(&self.full(), shown.unit)
    }
}

fn with_unit(name: &str, unit: &str) -> String {
    if unit.is_empty() {
        name.to_string()
    } else {
        format!("{name} ({unit})")
    }
}

/// A node's metrics: `(field, name, unit)`.
const NODE_METRICS: &[(&str, &str, Unit)] = &[
    ("answered", "answered requests (2xx)", Unit::Count),
    ("attempts", "upstream attempts", Unit::Count),
    (
        "backlog_refused",
        "connections refused (backlog full)",
        Unit::Count,
    ),
    (
        "ejected_replica_s",
        "time ejected per replica",
        Unit::Seconds,
    ),
    ("ejected_time_s", "time ejected", Unit::Seconds),
    ("ejections", "ejections", Unit::Count),
    ("failures", "attempts counted as failures", Unit::Count),
    ("false_ejections", "ejections while healthy", Unit::Count),
    ("fault_attempts", "attempts during its faults", Unit::Count),
    (
        "fault_attempts_ok",
        "attempts during its faults answered 2xx",
        Unit::Count,
    ),
    (
        "first_ejection_delay_s",
        "time until ejected",
        Unit::Seconds,
    ),
    (
        "last_ejection_delay_s",
        "time until the last replica ejected it",
        Unit::Seconds,
    ),
    ("peak_queue", "peak accept queue", Unit::Count),
    ("probe_load_per_s", "probe load", Unit::PerSecond),
    ("probe_share", "share of the probes", Unit::Fraction),
    ("probes", "probes", Unit::Count),
    (
        "warmup_share",
        "share of the picks while warming up",
        Unit::Fraction,
    ),
    ("warmups", "slow starts", Unit::Count),
    (
        "recovery_delay_s",
        "time until serving again after its fault",
        Unit::Seconds,
    ),
    (
        "replicas_ejected",
        "replicas that ejected it",
        Unit::Fraction,
    ),
    ("share", "traffic share", Unit::Fraction),
    ("utilization", "utilization", Unit::Fraction),
];

/// The clients' metrics.
const CLIENT_METRICS: &[(&str, &str, Unit)] = &[
    ("errors", "errors (non-2xx answers)", Unit::Count),
    ("ok", "2xx answers", Unit::Count),
    ("requests", "requests", Unit::Count),
    ("timeouts", "timeouts", Unit::Count),
    ("unfinished", "unfinished requests", Unit::Count),
];

/// Client latency statistics (`client.latency_ms.<stat>`).
const LATENCY_STATS: &[(&str, &str)] = &[
    ("max", "max latency"),
    ("mean", "mean latency"),
    ("p50", "median latency"),
    ("p90", "p90 latency"),
    ("p99", "p99 latency"),
    ("p999", "p99.9 latency"),
];

/// Probe rounds (`probe_rounds.<field>`).
const ROUND_METRICS: &[(&str, &str, Unit)] = &[
    ("max_s", "longest round", Unit::Seconds),
    ("median_s", "median round", Unit::Seconds),
    ("min_s", "shortest round", Unit::Seconds),
    ("rounds", "rounds", Unit::Count),
];

/// Run-wide metrics.
const RUN_METRICS: &[(&str, &str, Unit)] = &[
    ("clock_phase_s", "clock phase", Unit::Seconds),
    ("events", "simulated events", Unit::Count),
];

fn lookup(table: &[(&str, &str, Unit)], key: &str) -> Option<Term> {
    table
        .iter()
        .find(|(k, ..)| *k == key)
        .map(|(_, name, unit)| Term::new(name, *unit))
}

/// A metric by its column (`nodes.A.first_ejection_delay_s`,
/// `client.latency_ms.p99`, `client.slower_than.1s`, `probe_rounds.median_s`)
/// or, in a run, a node metric alone (`share`).
pub fn metric(column: &str) -> Term {
    // A fleet's fields are flattened into the node's.
    if let Some((node, field)) = crate::metrics::path::split_node_metric(column) {
        let field = field.strip_prefix("fleet.").unwrap_or(&field);
        let mut t = lookup(NODE_METRICS, field).unwrap_or_else(|| fallback(field));
        t.subject = format!("Node {node}");
        return t;
    }
    if let Some(field) = column.strip_prefix("client.") {
        let mut t = client_metric(field);
        t.subject = "Clients".into();
        return t;
    }
    if let Some(field) = column.strip_prefix("pods.") {
        return pod_metric(field);
    }
    if let Some(field) = column.strip_prefix("probe_rounds.") {
        let mut t = lookup(ROUND_METRICS, field).unwrap_or_else(|| fallback(field));
        t.subject = "Probe rounds".into();
        return t;
    }
    lookup(NODE_METRICS, column)
        .or_else(|| lookup(RUN_METRICS, column))
        .unwrap_or_else(|| fallback(column))
}

/// A rolling update's metrics: `(field, name, unit)`.
const DEPLOY_METRICS: &[(&str, &str, Unit)] = &[
    ("client_errors", "client errors", Unit::Count),
    ("client_timeouts", "client timeouts", Unit::Count),
    ("duration_s", "time to complete", Unit::Seconds),
    ("in_flight_cut", "requests cut in flight", Unit::Count),
    ("start_s", "start", Unit::Seconds),
    ("window_s", "window counted", Unit::Seconds),
];

/// `restarts`, `nodes.A.restarts`, `deploys.0.client_errors`, … of `pods.`
fn pod_metric(field: &str) -> Term {
    let restarts = || Term::new("container restarts", Unit::Count);
    if field == "restarts" {
        let mut t = restarts();
        t.subject = "Pods".into();
        return t;
    }
    if let Some(rest) = field.strip_prefix("nodes.")
        && let Some(node) = rest.strip_suffix(".restarts")
    {
        let mut t = restarts();
        t.subject = format!("Node {node}");
        return t;
    }
    if let Some(rest) = field.strip_prefix("deploys.")
        && let Some((i, f)) = rest.split_once('.')
    {
        let mut t = if let Some(cause) = f.strip_prefix("attempts_failed.") {
            Term::new(
                &format!("failed attempts: {}", cause.replace('_', " ")),
                Unit::Count,
            )
        } else if let Some(code) = f.strip_prefix("status.") {
            Term::new(&format!("answers with status {code}"), Unit::Count)
        } else {
            lookup(DEPLOY_METRICS, f).unwrap_or_else(|| fallback(f))
        };
        t.subject = match i.parse::<usize>() {
            Ok(k) => format!("Deploy {}", k + 1),
            Err(_) => format!("Deploy {i}"),
        };
        return t;
    }
    fallback(field)
}

fn client_metric(field: &str) -> Term {
    if let Some(stat) = field.strip_prefix("latency_ms.") {
        return match LATENCY_STATS.iter().find(|(k, _)| *k == stat) {
            Some((_, name)) => Term::new(name, Unit::Millis),
            None => Term {
                known: false,
                ..Term::new(&format!("latency {stat}"), Unit::Millis)
            },
        };
    }
    if let Some(limit) = field.strip_prefix("slower_than.") {
        return Term::new(&format!("requests slower than {limit}"), Unit::Count);
    }
    if let Some(code) = field.strip_prefix("status.") {
        return Term::new(&format!("answers with status {code}"), Unit::Count);
    }
    lookup(CLIENT_METRICS, field).unwrap_or_else(|| fallback(field))
}

/// The run-wide columns of `timeline.csv` (per bucket).
const TIMELINE_COLUMNS: &[(&str, &str, Unit)] = &[
    ("errors", "errors (non-2xx answers)", Unit::Count),
    ("latency_p50_ms", "median latency", Unit::Millis),
    ("latency_p99_ms", "p99 latency", Unit::Millis),
    ("ok", "2xx answers", Unit::Count),
    ("requests", "requests", Unit::Count),
    ("timeouts", "timeouts", Unit::Count),
];

/// A run-wide column of `timeline.csv` (`errors`, `latency_p99_ms`): the
/// clients' per-bucket figures.
pub fn timeline_column(column: &str) -> Term {
    let mut t = lookup(TIMELINE_COLUMNS, column).unwrap_or_else(|| fallback(column));
    t.subject = "Clients".into();
    t
}

/// Parameters by path, with `[i]` written as `[]`: `(path, name, unit)`.
const PARAMS: &[(&str, &str, Unit)] = &[
    ("clients.concurrency", "concurrent clients", Unit::Count),
    (
        "clients.rate_per_s",
        "request rate",
        Unit::RequestsPerSecond,
    ),
    ("clients.think_time", "client think time", Unit::Seconds),
    ("clients.timeout", "client timeout", Unit::Seconds),
    ("duration", "simulated time", Unit::Seconds),
    ("faults[].at", "fault start", Unit::Seconds),
    ("faults[].factor", "slowdown factor", Unit::None),
    ("faults[].for", "fault duration", Unit::Seconds),
    ("faults[].kind", "fault", Unit::None),
    ("faults[].node", "faulty node", Unit::None),
    ("faults[].p", "failure probability", Unit::Fraction),
    ("gateway.balancer", "balancer", Unit::None),
    (
        "gateway.proxy_connect_timeout",
        "proxy_connect_timeout",
        Unit::Seconds,
    ),
    (
        "gateway.proxy_next_upstream_tries",
        "proxy_next_upstream_tries",
        Unit::Count,
    ),
    (
        "gateway.proxy_read_timeout",
        "proxy_read_timeout",
        Unit::Seconds,
    ),
    ("gateway.replicas", "gateway replicas", Unit::Count),
    ("gateway.workers", "gateway workers", Unit::Count),
    (
        "pods.endpoint_propagation",
        "endpoint propagation",
        Unit::Seconds,
    ),
    (
        "pods.endpoint_propagation.max",
        "endpoint propagation (max)",
        Unit::Seconds,
    ),
    (
        "pods.endpoint_propagation.min",
        "endpoint propagation (min)",
        Unit::Seconds,
    ),
    ("pods.pre_stop", "preStop sleep", Unit::Seconds),
    ("pods.shutdown", "shutdown", Unit::None),
    ("pods.start_time", "start-up time", Unit::Seconds),
    (
        "pods.termination_grace_period",
        "termination grace period",
        Unit::Seconds,
    ),
    ("policies[]", "policy", Unit::None),
    ("policy", "policy", Unit::None),
    ("seed", "seed", Unit::None),
    ("timeline_bucket", "timeline bucket", Unit::Seconds),
];

/// `faults[0].p` -> `faults[].p`.
fn generic_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push('[');
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

/// A model parameter by its path (`policy.max_fails`, `faults[0].p`,
/// `clients.rate_per_s`). A policy's own parameters keep the product's name
/// (`max_fails`, `interval`, `fall`), which is what reviewers know them by.
pub fn param(path: &str) -> Term {
    let generic = generic_path(path);
    if let Some(t) = lookup(PARAMS, &generic) {
        return t;
    }
    // A pod's probes: `pods.liveness.timeout` is the liveness timeout.
    if let Some(rest) = generic.strip_prefix("pods.")
        && let Some((probe, field)) = rest.split_once('.')
        && matches!(probe, "liveness" | "readiness" | "startup")
    {
        let unit = if matches!(field, "failure_threshold" | "success_threshold") {
            Unit::Count
        } else {
            Unit::Seconds
        };
        return Term::new(&format!("{probe} {}", field.replace('_', " ")), unit);
    }
    let policy_field = generic
        .strip_prefix("policy.")
        .or_else(|| generic.strip_prefix("policies[]."));
    if let Some(field) = policy_field {
        let mut t = fallback(field);
        t.known = true;
        return t;
    }
    fallback(&generic)
}

/// A name from the last path segment: `foo_bar_s` -> `foo_bar` in seconds.
fn fallback(path: &str) -> Term {
    let last = path.rsplit('.').next().unwrap_or(path);
    let last = last.trim_end_matches("[]");
    let (name, unit) = if let Some(n) = last.strip_suffix("_per_s") {
        (n, Unit::PerSecond)
    } else if let Some(n) = last.strip_suffix("_ms") {
        (n, Unit::Millis)
    } else if let Some(n) = last.strip_suffix("_s") {
        (n, Unit::Seconds)
    } else {
        (last, Unit::None)
    };
    Term {
        known: false,
        ..Term::new(name, unit)
    }
}

/// A statistic over replications as a phrase: `median`, `p95`.
pub fn stat(key: &str) -> &'static str {
    match key {
        "median" => "median",
        "mean" => "mean",
        "min" => "minimum",
        "max" => "maximum",
        "p5" => "5th percentile",
        "p95" => "95th percentile",
        _ => "value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_columns_have_names_and_units() {
        let t = timeline_column("latency_p99_ms");
        assert_eq!(t.full(), "Clients: p99 latency");
        assert_eq!(t.label(&t.unit.shown([12.0])), "p99 latency (ms)");
        assert_eq!(t.label(&t.unit.shown([12_000.0])), "p99 latency (s)");
        assert!(timeline_column("errors").known);
        assert_eq!(timeline_column("errors").unit, Unit::Count);
        assert!(!timeline_column("queue_depth").known);
    }

    #[test]
    fn metrics_have_names_and_units() {
        let t = metric("nodes.A.first_ejection_delay_s");
        assert_eq!(t.full(), "Node A: time until ejected");
        assert_eq!(t.label(&t.unit.shown([0.00983])), "time until ejected (ms)");
        assert_eq!(t.unit.shown([0.00983]).text(Some(0.00983)), "9.83 ms");
        assert_eq!(t.label(&t.unit.shown([0.5, 3.0])), "time until ejected (s)");
        let share = metric("share");
        assert!(share.known);
        assert_eq!(share.unit.shown([0.25]).text(Some(0.25)), "25.0%");
        assert_eq!(
            metric("client.errors")
                .unit
                .shown([258.0])
                .text(Some(258.0)),
            "258"
        );
        assert_eq!(
            metric("client.latency_ms.p99").full(),
            "Clients: p99 latency"
        );
        assert_eq!(
            metric("client.slower_than.1s").name,
            "requests slower than 1s"
        );
        assert_eq!(
            metric("probe_rounds.median_s").full(),
            "Probe rounds: median round"
        );
        assert!(metric("nodes.a.last_ejection_delay_s").known);
        assert!(!metric("nodes.a.something_new_s").known);
        assert_eq!(metric("nodes.a.something_new_s").name, "something_new");
    }

    #[test]
    fn parameters_have_names_and_units() {
        assert_eq!(param("policy.max_fails").name, "max_fails");
        assert_eq!(param("policies[0].interval").name, "interval");
        let rate = param("clients.rate_per_s");
        assert_eq!(rate.label(&rate.unit.shown([10.0])), "request rate (req/s)");
        let p = param("faults[0].p");
        assert_eq!(p.label(&p.unit.shown([0.5])), "failure probability (%)");
        assert_eq!(param("faults[2].kind").name, "fault");
        assert!(param("gateway.replicas").known);
        let odd = param("nodes[3].service_time.median_ms");
        assert!(!odd.known);
        assert_eq!((odd.name.as_str(), odd.unit), ("median", Unit::Millis));
    }
}
