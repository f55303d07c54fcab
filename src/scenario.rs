//! Model files: the serde `*Spec` types that mirror `models/*.json`, and
//! `Scenario::from_spec`, which checks what serde cannot and builds the
//! validated runtime description.
//!
//! Defaults are nginx's defaults (`proxy_next_upstream error timeout`, 60 s
//! timeouts, `max_fails=1 fail_timeout=10s`). Durations are strings with units.

use crate::charts::ChartSpec;
use crate::diagnostics::{self, tracked};
use crate::engine::{SimDuration, SimTime};
use crate::error::Error;
use crate::model::NodeId;
use crate::policy::PolicySpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

// ---------------------------------------------------------------- spec types

/// A whole model file.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// The JSON Schema the file follows, for editors (`hcsim schema model`); ignored.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Identifies the model in outputs (`output/<name>/`).
    pub name: String,
    /// Free text for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Base seed of the run; `--seed` overrides it. Default 1.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Virtual time simulated.
    pub duration: SimDuration,
    /// Restricts request-based metrics to requests sent in `[from, to)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<MeasureSpec>,
    /// Width of one timeline bucket. Default 1s.
    #[serde(default = "default_bucket")]
    pub timeline_bucket: SimDuration,
    pub clients: ClientsSpec,
    #[serde(default)]
    pub gateway: GatewaySpec,
    pub nodes: Vec<NodeSpec>,
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    /// The gateway's health policy. Default: nginx `max_fails=1 fail_timeout=10s`
    /// (none with the HAProxy gateway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicySpec>,
    /// Several policies at once: a node is routable only if none ejects it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<PolicySpec>,
    /// Charts `hcsim run` draws; default: a timeline, and distributions over replications.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub charts: Vec<ChartSpec>,
}

fn default_seed() -> u64 {
    1
}
fn default_bucket() -> SimDuration {
    SimDuration::from_secs(1)
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeasureSpec {
    #[serde(default)]
    pub from: SimDuration,
    /// Default: the end of the run.
    #[serde(default)]
    pub to: Option<SimDuration>,
}

/// Who sends requests. `kind` is the tag.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientsSpec {
    /// Open loop: requests arrive at `rate_per_s` whatever the answers.
    #[serde(deserialize_with = "tracked")]
    Open(OpenClientsSpec),
    /// Closed loop: `concurrency` clients, each sending its next request
    /// `think_time` after the previous one ended (a `curl` loop).
    #[serde(deserialize_with = "tracked")]
    Closed(ClosedClientsSpec),
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenClientsSpec {
    pub rate_per_s: f64,
    /// `poisson` (default) or `constant` spacing (first request at 0).
    #[serde(default)]
    pub arrivals: Arrivals,
    /// The client gives up after this long (curl `-m`). Default: never.
    #[serde(default)]
    pub timeout: Option<SimDuration>,
    #[serde(default)]
    pub method: Method,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClosedClientsSpec {
    pub concurrency: u32,
    /// Pause between a response and the next request. Default 0s.
    #[serde(default)]
    pub think_time: SimDuration,
    #[serde(default)]
    pub timeout: Option<SimDuration>,
    #[serde(default)]
    pub method: Method,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    #[default]
    Poisson,
    Constant,
}

/// The HTTP method; POST, PATCH and LOCK are non-idempotent for nginx.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    #[default]
    Get,
    Head,
    Put,
    Delete,
    Post,
    Patch,
    Lock,
}

impl Method {
    pub fn is_non_idempotent(self) -> bool {
        matches!(self, Method::Post | Method::Patch | Method::Lock)
    }
}

/// The gateway: nginx's upstream request pipeline and its settings.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct GatewaySpec {
    /// `round_robin` (smooth weighted, default), `least_conn` or `random_two`.
    pub balancer: Balancer,
    /// nginx worker processes; each has its own peer state unless `zone`. Default 1.
    pub workers: u32,
    /// The upstream has a `zone`: workers share one peer state. Default false.
    pub zone: bool,
    /// Where the run starts within a wall-clock second (nginx's `ngx_time()` is
    /// whole seconds). Default: drawn from the seed, so replications vary it.
    pub clock_phase: Option<SimDuration>,
    /// Conditions that retry on the next server: `error`, `timeout`,
    /// `invalid_header`, `http_500`, `http_502`, `http_503`, `http_504`,
    /// `http_403`, `http_404`, `http_429`, `non_idempotent`, or `off`.
    /// Default `["error", "timeout"]`.
    pub proxy_next_upstream: Vec<NextUpstream>,
    /// Attempts per request, 0 = unlimited (the number of servers). Default 0.
    pub proxy_next_upstream_tries: u32,
    /// Time limit for retries, 0s = unlimited. Default 0s.
    pub proxy_next_upstream_timeout: SimDuration,
    /// Default 60s.
    pub proxy_connect_timeout: SimDuration,
    /// Time to the response header after the request was sent. Default 60s.
    pub proxy_read_timeout: SimDuration,
    /// Network round-trip time between gateway and nodes. Default 0.2ms.
    pub rtt: SimDuration,
    /// Whose request path: `nginx` (default) or `haproxy`.
    pub flavor: GatewayFlavor,
    /// HAProxy backend settings; only with `flavor: haproxy` (defaults if omitted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub haproxy: Option<HaproxySpec>,
    /// Envoy's `healthy_panic_threshold`, percent: while fewer than this
    /// share of the non-`down` primary nodes is routable, selection ignores
    /// the policies (ejected nodes get traffic again). Default: the policy's
    /// own (50 with `outlier_detection`, `minHealthPercent` with `istio`),
    /// else 0 = off, as in nginx.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthy_panic_threshold: Option<f64>,
}

/// Which proxy's request path the gateway follows. Both share one pipeline
/// (select a server, connect, wait for the response); they differ in the
/// settings that decide retries and the status the client sees.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GatewayFlavor {
    /// nginx `proxy_pass` to an upstream: `proxy_next_upstream` retries at once.
    #[default]
    Nginx,
    /// An HAProxy backend (reference Part B §B5): only failed connects are
    /// retried, `retries` times, on the same server unless redispatched.
    Haproxy,
}

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
}

impl Default for HaproxySpec {
    fn default() -> Self {
        HaproxySpec {
            retries: 3,
            redispatch: Redispatch::Flag(false),
            timeout_connect: None,
            timeout_server: None,
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

impl Default for GatewaySpec {
    fn default() -> Self {
        GatewaySpec {
            balancer: Balancer::RoundRobin,
            workers: 1,
            zone: false,
            clock_phase: None,
            proxy_next_upstream: vec![NextUpstream::Error, NextUpstream::Timeout],
            proxy_next_upstream_tries: 0,
            proxy_next_upstream_timeout: SimDuration::ZERO,
            proxy_connect_timeout: SimDuration::from_secs(60),
            proxy_read_timeout: SimDuration::from_secs(60),
            rtt: SimDuration::from_micros(200),
            flavor: GatewayFlavor::Nginx,
            haproxy: None,
            healthy_panic_threshold: None,
        }
    }
}

impl GatewaySpec {
    /// The HAProxy settings in force (defaults when the section is omitted).
    pub fn haproxy(&self) -> HaproxySpec {
        self.haproxy.clone().unwrap_or_default()
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Balancer {
    #[default]
    RoundRobin,
    LeastConn,
    RandomTwo,
}

/// One word of `proxy_next_upstream`.
#[derive(
    Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum NextUpstream {
    Error,
    Timeout,
    InvalidHeader,
    #[serde(rename = "http_500")]
    Http500,
    #[serde(rename = "http_502")]
    Http502,
    #[serde(rename = "http_503")]
    Http503,
    #[serde(rename = "http_504")]
    Http504,
    #[serde(rename = "http_403")]
    Http403,
    #[serde(rename = "http_404")]
    Http404,
    #[serde(rename = "http_429")]
    Http429,
    NonIdempotent,
    Off,
}

/// A backend server and how the gateway's upstream lists it.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    /// `server ... weight=`. Default 1.
    #[serde(default = "one")]
    pub weight: u32,
    /// `server ... backup`: used only when no primary is available.
    #[serde(default)]
    pub backup: bool,
    /// `server ... down`: never used.
    #[serde(default)]
    pub down: bool,
    /// `server ... max_conns=`, 0 = unlimited (per worker without `zone`).
    #[serde(default)]
    pub max_conns: u32,
    /// Worker threads serving requests. Default 64.
    #[serde(default = "default_workers")]
    pub workers: u32,
    /// Connections the kernel accepts while all workers are busy (or the
    /// process is stopped); beyond it, connects time out. Default 511.
    #[serde(default = "default_backlog")]
    pub backlog: u32,
    /// Time a worker spends on one request. Default constant 5ms.
    #[serde(default = "default_service")]
    pub service_time: LatencySpec,
}

fn one() -> u32 {
    1
}
fn default_workers() -> u32 {
    64
}
fn default_backlog() -> u32 {
    511
}
fn default_service() -> LatencySpec {
    LatencySpec::Constant {
        value: SimDuration::from_millis(5),
    }
}

/// A distribution of durations; `dist` is the tag.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum LatencySpec {
    #[serde(deserialize_with = "latency_body::constant")]
    Constant { value: SimDuration },
    #[serde(deserialize_with = "latency_body::exponential")]
    Exponential { mean: SimDuration },
    #[serde(deserialize_with = "latency_body::lognormal")]
    Lognormal { median: SimDuration, sigma: f64 },
    #[serde(deserialize_with = "latency_body::uniform")]
    Uniform { min: SimDuration, max: SimDuration },
}

/// The bodies of `LatencySpec`'s struct variants, read with their own path
/// tracker (see [`crate::diagnostics`]) so that errors name the field.
mod latency_body {
    use crate::diagnostics::tracked;
    use crate::engine::SimDuration;
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Constant {
        value: SimDuration,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Exponential {
        mean: SimDuration,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Lognormal {
        median: SimDuration,
        sigma: f64,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Uniform {
        min: SimDuration,
        max: SimDuration,
    }

    pub fn constant<'de, D: Deserializer<'de>>(d: D) -> Result<SimDuration, D::Error> {
        tracked::<_, Constant>(d).map(|b| b.value)
    }
    pub fn exponential<'de, D: Deserializer<'de>>(d: D) -> Result<SimDuration, D::Error> {
        tracked::<_, Exponential>(d).map(|b| b.mean)
    }
    pub fn lognormal<'de, D: Deserializer<'de>>(d: D) -> Result<(SimDuration, f64), D::Error> {
        tracked::<_, Lognormal>(d).map(|b| (b.median, b.sigma))
    }
    pub fn uniform<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<(SimDuration, SimDuration), D::Error> {
        tracked::<_, Uniform>(d).map(|b| (b.min, b.max))
    }
}

/// Something that happens to a node; `kind` is the tag. `at` defaults to 0s;
/// without `for` the fault lasts to the end of the run.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultSpec {
    /// The process dies: connects are refused, in-flight requests are reset.
    #[serde(deserialize_with = "tracked")]
    Crash(WindowSpec),
    /// Workers are stuck: requests are accepted and queued, never answered
    /// until it ends; a separate heartbeat thread keeps running.
    #[serde(deserialize_with = "tracked")]
    Hang(WindowSpec),
    /// SIGSTOP: the kernel still accepts into the backlog; nothing runs.
    #[serde(deserialize_with = "tracked")]
    Stop(WindowSpec),
    /// The network between gateway and node drops packets.
    #[serde(deserialize_with = "tracked")]
    Partition(WindowSpec),
    /// Each request fails with probability `p`.
    #[serde(deserialize_with = "tracked")]
    Flaky(FlakySpec),
    /// Service times are multiplied by `factor` and extended by `extra`.
    #[serde(deserialize_with = "tracked")]
    Slow(SlowSpec),
}

impl FaultSpec {
    /// `at` and `for`, whatever the kind.
    pub fn window(&self) -> (SimDuration, Option<SimDuration>) {
        match self {
            FaultSpec::Crash(w)
            | FaultSpec::Hang(w)
            | FaultSpec::Stop(w)
            | FaultSpec::Partition(w) => (w.at, w.for_),
            FaultSpec::Flaky(x) => (x.at, x.for_),
            FaultSpec::Slow(x) => (x.at, x.for_),
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WindowSpec {
    pub node: String,
    #[serde(default)]
    pub at: SimDuration,
    #[serde(rename = "for", default)]
    pub for_: Option<SimDuration>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlakySpec {
    pub node: String,
    #[serde(default)]
    pub at: SimDuration,
    #[serde(rename = "for", default)]
    pub for_: Option<SimDuration>,
    /// Probability that a request fails, in [0, 1].
    pub p: f64,
    /// `status` (answer with `status`, default) or `reset` (close the connection).
    #[serde(default)]
    pub error: FlakyError,
    /// The status of a failed answer. Default 503.
    #[serde(default = "default_status")]
    pub status: u16,
}

fn default_status() -> u16 {
    503
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlakyError {
    #[default]
    Status,
    Reset,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlowSpec {
    pub node: String,
    #[serde(default)]
    pub at: SimDuration,
    #[serde(rename = "for", default)]
    pub for_: Option<SimDuration>,
    /// Multiplies the service time. Default 1.
    #[serde(default = "one_f64")]
    pub factor: f64,
    /// Added to the service time. Default 0s.
    #[serde(default)]
    pub extra: SimDuration,
}

fn one_f64() -> f64 {
    1.0
}

// ------------------------------------------------------------ runtime types

/// A validated model, ready to run.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub spec: ScenarioSpec,
    pub name: String,
    pub seed: u64,
    pub duration: SimDuration,
    pub measure_from: SimTime,
    pub measure_to: SimTime,
    pub bucket: SimDuration,
    pub clients: Clients,
    pub gateway: GatewaySpec,
    pub next_upstream: NextUpstreamMask,
    pub nodes: Vec<NodeSpec>,
    pub faults: Vec<Fault>,
    pub policies: Vec<PolicySpec>,
}

#[derive(Clone, Debug)]
pub enum Clients {
    Open {
        rate_per_s: f64,
        arrivals: Arrivals,
        timeout: Option<SimDuration>,
        method: Method,
    },
    Closed {
        concurrency: u32,
        think_time: SimDuration,
        timeout: Option<SimDuration>,
        method: Method,
    },
}

impl Clients {
    pub fn timeout(&self) -> Option<SimDuration> {
        match self {
            Clients::Open { timeout, .. } | Clients::Closed { timeout, .. } => *timeout,
        }
    }
    pub fn method(&self) -> Method {
        match self {
            Clients::Open { method, .. } | Clients::Closed { method, .. } => *method,
        }
    }
}

/// `proxy_next_upstream` as a bit mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NextUpstreamMask(u32);

impl NextUpstreamMask {
    pub fn from_words(words: &[NextUpstream]) -> Self {
        if words.contains(&NextUpstream::Off) {
            return NextUpstreamMask(0);
        }
        NextUpstreamMask(words.iter().fold(0, |m, w| m | (1 << *w as u32)))
    }
    pub fn contains(self, w: NextUpstream) -> bool {
        self.0 & (1 << w as u32) != 0
    }
}

/// What a fault does while it is active.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FaultKind {
    Crash,
    Hang,
    Stop,
    Partition,
    Flaky {
        p: f64,
        error: FlakyError,
        status: u16,
    },
    Slow {
        factor: f64,
        extra: SimDuration,
    },
}

impl FaultKind {
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Crash => "crash",
            FaultKind::Hang => "hang",
            FaultKind::Stop => "stop",
            FaultKind::Partition => "partition",
            FaultKind::Flaky { .. } => "flaky",
            FaultKind::Slow { .. } => "slow",
        }
    }
    /// Crash, hang, stop and partition exclude one another on a node.
    fn is_availability(&self) -> bool {
        matches!(
            self,
            FaultKind::Crash | FaultKind::Hang | FaultKind::Stop | FaultKind::Partition
        )
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Fault {
    pub node: NodeId,
    pub kind: FaultKind,
    pub start: SimTime,
    /// `None`: to the end of the run.
    pub end: Option<SimTime>,
}

// ------------------------------------------------------------ loading

/// The largest model or sweep file hcsim reads.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Reads a JSON document, reporting syntax errors with line and column.
pub fn read_document(path: &Path) -> Result<Value, Error> {
    let err = |source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    };
    // A device or a pipe (`/dev/zero`) would never end, a huge file would
    // fill memory: only regular files of a sane size are models.
    let meta = std::fs::metadata(path).map_err(err)?;
    if !meta.is_file() {
        return Err(err(std::io::Error::other("not a regular file")));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(err(std::io::Error::other(format!(
            "{} MiB is more than the {} MiB a model or sweep file may have",
            meta.len() / (1 << 20),
            MAX_FILE_BYTES >> 20
        ))));
    }
    let text = std::fs::read_to_string(path).map_err(err)?;
    diagnostics::parse_json(&text).map_err(|e| Error::Json {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        msg: strip_position(&e.to_string()) + diagnostics::json_hint(&text, e.line(), e.column()),
    })
}

fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// Deserializes a document into `T`, naming the JSON path of any error.
pub fn from_document<T: serde::de::DeserializeOwned>(doc: &Value, path: &Path) -> Result<T, Error> {
    serde_path_to_error::deserialize(doc).map_err(|e| {
        let (field, msg) = diagnostics::describe(&e);
        Error::Parse {
            path: path.to_path_buf(),
            field,
            msg: strip_position(&msg),
        }
    })
}

/// "a list", "a string", ...: how a JSON value is described in messages.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Loads and validates a model file.
pub fn load(path: &Path) -> Result<Scenario, Error> {
    let doc = read_document(path)?;
    Scenario::from_document(&doc, path)
}

impl Scenario {
    pub fn from_document(doc: &Value, path: &Path) -> Result<Scenario, Error> {
        if !doc.is_object() {
            return Err(Error::Parse {
                path: path.to_path_buf(),
                field: String::new(),
                msg: format!(
                    "a model is a JSON object ({{\"name\": ..., \"duration\": ..., ...}}), found {}",
                    json_kind(doc)
                ),
            });
        }
        let spec: ScenarioSpec = from_document(doc, path)?;
        Scenario::from_spec(spec, path)
    }

    /// Checks what serde cannot: names, ranges, references between sections.
    pub fn from_spec(spec: ScenarioSpec, path: &Path) -> Result<Scenario, Error> {
        let invalid = |field: String, reason: String| Error::Invalid {
            path: path.to_path_buf(),
            field,
            reason,
        };
        if spec.name.trim().is_empty() {
            return Err(invalid("name".into(), "must not be empty".into()));
        }
        if spec.name.contains(['/', '\\', '\0']) || spec.name == "." || spec.name == ".." {
            return Err(invalid(
                "name".into(),
                format!(
                    "names the output directory output/<name>/, so it cannot be \".\", \"..\" \
                     or contain `/` or `\\`, found {:?}",
                    spec.name
                ),
            ));
        }
        if spec.duration.is_zero() {
            return Err(invalid("duration".into(), "must be positive".into()));
        }
        if spec.timeline_bucket.is_zero() {
            return Err(invalid("timeline_bucket".into(), "must be positive".into()));
        }
        let end = SimTime::ZERO + spec.duration;
        let (measure_from, measure_to) = match &spec.measure {
            None => (SimTime::ZERO, end),
            Some(m) => {
                let to = m.to.map(|d| SimTime::ZERO + d).unwrap_or(end);
                let from = SimTime::ZERO + m.from;
                if from >= to {
                    return Err(invalid(
                        "measure.from".into(),
                        format!(
                            "must be before measure.to ({}), found {}",
                            to.since_start(),
                            m.from
                        ),
                    ));
                }
                if to > end {
                    return Err(invalid(
                        "measure.to".into(),
                        format!("must not be after the end of the run ({})", spec.duration),
                    ));
                }
                (from, to)
            }
        };

        let clients = match &spec.clients {
            ClientsSpec::Open(c) => {
                if !(c.rate_per_s.is_finite() && c.rate_per_s > 0.0) {
                    return Err(invalid(
                        "clients.rate_per_s".into(),
                        format!(
                            "must be a positive number of requests per second, found {}",
                            c.rate_per_s
                        ),
                    ));
                }
                if c.rate_per_s > 10_000_000.0 {
                    return Err(invalid(
                        "clients.rate_per_s".into(),
                        "is above 10,000,000 requests per second".into(),
                    ));
                }
                Clients::Open {
                    rate_per_s: c.rate_per_s,
                    arrivals: c.arrivals,
                    timeout: c.timeout,
                    method: c.method,
                }
            }
            ClientsSpec::Closed(c) => {
                if c.concurrency == 0 {
                    return Err(invalid(
                        "clients.concurrency".into(),
                        "must be at least 1".into(),
                    ));
                }
                Clients::Closed {
                    concurrency: c.concurrency,
                    think_time: c.think_time,
                    timeout: c.timeout,
                    method: c.method,
                }
            }
        };
        if clients.timeout().is_some_and(|t| t.is_zero()) {
            return Err(invalid("clients.timeout".into(), "must be positive".into()));
        }

        let g = &spec.gateway;
        if g.workers == 0 || g.workers > 1024 {
            return Err(invalid(
                "gateway.workers".into(),
                format!("must be between 1 and 1024, found {}", g.workers),
            ));
        }
        if let Some(p) = g.clock_phase
            && p >= SimDuration::from_secs(1)
        {
            return Err(invalid(
                "gateway.clock_phase".into(),
                format!("must be below 1s (a phase within one wall-clock second), found \"{p}\""),
            ));
        }
        if g.proxy_next_upstream.is_empty() {
            return Err(invalid(
                "gateway.proxy_next_upstream".into(),
                "must list at least one condition (nginx needs one), or be [\"off\"]".into(),
            ));
        }
        if let Some(t) = g.healthy_panic_threshold
            && !(0.0..=100.0).contains(&t)
        {
            return Err(invalid(
                "gateway.healthy_panic_threshold".into(),
                format!("is a percentage (0..=100), found {t}"),
            ));
        }
        for (field, d) in [
            ("proxy_connect_timeout", g.proxy_connect_timeout),
            ("proxy_read_timeout", g.proxy_read_timeout),
        ] {
            if d.is_zero() {
                return Err(invalid(
                    format!("gateway.{field}"),
                    "must be positive".into(),
                ));
            }
        }

        match (g.flavor, &g.haproxy) {
            (GatewayFlavor::Nginx, Some(_)) => {
                return Err(invalid(
                    "gateway.haproxy".into(),
                    "HAProxy settings need `\"flavor\": \"haproxy\"`".into(),
                ));
            }
            (GatewayFlavor::Haproxy, Some(h)) => {
                for (field, d) in [
                    ("timeout_connect", h.timeout_connect),
                    ("timeout_server", h.timeout_server),
                ] {
                    if d.is_some_and(|d| d.is_zero()) {
                        return Err(invalid(
                            format!("gateway.haproxy.{field}"),
                            "must be positive (omit it for none)".into(),
                        ));
                    }
                }
            }
            _ => {}
        }
        if g.flavor == GatewayFlavor::Haproxy && g.workers > 1 {
            return Err(invalid(
                "gateway.workers".into(),
                "HAProxy's threads share one state per server: leave `workers` at 1".into(),
            ));
        }

        if spec.nodes.is_empty() {
            return Err(invalid(
                "nodes".into(),
                "the upstream needs at least one node".into(),
            ));
        }
        if spec.nodes.len() > 4096 {
            return Err(invalid(
                "nodes".into(),
                "at most 4096 nodes are supported".into(),
            ));
        }
        let mut names = BTreeSet::new();
        for (i, n) in spec.nodes.iter().enumerate() {
            let at = |f: &str| format!("nodes[{i}].{f}");
            if n.name.trim().is_empty() {
                return Err(invalid(at("name"), "must not be empty".into()));
            }
            if !names.insert(n.name.as_str()) {
                return Err(invalid(
                    at("name"),
                    format!("duplicate node name \"{}\"", n.name),
                ));
            }
            if n.weight == 0 {
                return Err(invalid(at("weight"), "must be at least 1".into()));
            }
            if n.workers == 0 {
                return Err(invalid(at("workers"), "must be at least 1".into()));
            }
            validate_latency(&n.service_time)
                .map_err(|(f, r)| invalid(at(&format!("service_time.{f}")), r))?;
        }
        if spec.nodes.iter().all(|n| n.down || n.backup) {
            return Err(invalid(
                "nodes".into(),
                "every node is `down` or `backup`: the upstream has no usable primary server"
                    .into(),
            ));
        }
        crate::limits::check_size(&spec).map_err(|(f, r)| invalid(f, r))?;
        let node_id = |name: &str| spec.nodes.iter().position(|n| n.name == name);

        let mut faults = Vec::with_capacity(spec.faults.len());
        for (i, f) in spec.faults.iter().enumerate() {
            let at = |field: &str| format!("faults[{i}].{field}");
            let (node, start, for_, kind) = match f {
                FaultSpec::Crash(w) => (&w.node, w.at, w.for_, FaultKind::Crash),
                FaultSpec::Hang(w) => (&w.node, w.at, w.for_, FaultKind::Hang),
                FaultSpec::Stop(w) => (&w.node, w.at, w.for_, FaultKind::Stop),
                FaultSpec::Partition(w) => (&w.node, w.at, w.for_, FaultKind::Partition),
                FaultSpec::Flaky(x) => {
                    if !(0.0..=1.0).contains(&x.p) {
                        return Err(invalid(
                            at("p"),
                            format!("must be a probability in [0, 1], found {}", x.p),
                        ));
                    }
                    if !(100..=599).contains(&x.status) {
                        return Err(invalid(
                            at("status"),
                            format!("must be an HTTP status in 100..=599, found {}", x.status),
                        ));
                    }
                    (
                        &x.node,
                        x.at,
                        x.for_,
                        FaultKind::Flaky {
                            p: x.p,
                            error: x.error,
                            status: x.status,
                        },
                    )
                }
                FaultSpec::Slow(x) => {
                    if !(x.factor.is_finite() && x.factor > 0.0) {
                        return Err(invalid(
                            at("factor"),
                            format!("must be a positive number, found {}", x.factor),
                        ));
                    }
                    (
                        &x.node,
                        x.at,
                        x.for_,
                        FaultKind::Slow {
                            factor: x.factor,
                            extra: x.extra,
                        },
                    )
                }
            };
            let Some(idx) = node_id(node) else {
                let known: Vec<_> = spec
                    .nodes
                    .iter()
                    .map(|n| format!("\"{}\"", n.name))
                    .collect();
                let hint = diagnostics::suggest(node, spec.nodes.iter().map(|n| n.name.as_str()))
                    .map(|s| format!("; did you mean \"{s}\"?"))
                    .unwrap_or_default();
                return Err(invalid(
                    at("node"),
                    format!(
                        "no node named \"{node}\" (nodes are {}{hint})",
                        known.join(", ")
                    ),
                ));
            };
            if start >= spec.duration {
                return Err(invalid(
                    at("at"),
                    format!(
                        "starts at {start}, not before the end of the run ({})",
                        spec.duration
                    ),
                ));
            }
            if let Some(d) = for_
                && d.is_zero()
            {
                return Err(invalid(at("for"), "must be positive".into()));
            }
            faults.push(Fault {
                node: NodeId(idx as u32),
                kind,
                start: SimTime::ZERO + start,
                end: for_.map(|d| SimTime::ZERO + start + d).filter(|&e| e < end),
            });
        }
        // Overlapping windows of exclusive kinds on one node are ambiguous.
        for (i, a) in faults.iter().enumerate() {
            for (j, b) in faults.iter().enumerate().skip(i + 1) {
                let same_class = a.kind.name() == b.kind.name()
                    || (a.kind.is_availability() && b.kind.is_availability());
                let overlap = a.start < b.end.unwrap_or(SimTime::MAX)
                    && b.start < a.end.unwrap_or(SimTime::MAX);
                if a.node == b.node && same_class && overlap {
                    return Err(invalid(
                        format!("faults[{j}]"),
                        format!(
                            "overlaps faults[{i}] on node \"{}\" ({} and {} cannot be active at once)",
                            spec.nodes[a.node.index()].name,
                            a.kind.name(),
                            b.kind.name()
                        ),
                    ));
                }
            }
        }

        if spec.policy.is_some() && !spec.policies.is_empty() {
            return Err(invalid(
                "policies".into(),
                "give either `policy` or `policies`, not both".into(),
            ));
        }
        let policies = match (&spec.policy, spec.policies.is_empty()) {
            (Some(p), _) => vec![p.clone()],
            (None, false) => spec.policies.clone(),
            // HAProxy has no passive check of its own (`observe` belongs to `check`).
            (None, true) if g.flavor == GatewayFlavor::Haproxy => vec![PolicySpec::None],
            (None, true) => vec![PolicySpec::MaxFails(Default::default())],
        };
        for (i, p) in policies.iter().enumerate() {
            let base = if spec.policy.is_some() {
                "policy".to_string()
            } else {
                format!("policies[{i}]")
            };
            p.validate()
                .map_err(|(f, r)| invalid(format!("{base}.{f}"), r))?;
        }

        Ok(Scenario {
            name: spec.name.clone(),
            seed: spec.seed,
            duration: spec.duration,
            measure_from,
            measure_to,
            bucket: spec.timeline_bucket,
            clients,
            gateway: spec.gateway.clone(),
            next_upstream: NextUpstreamMask::from_words(&spec.gateway.proxy_next_upstream),
            nodes: spec.nodes.clone(),
            faults,
            policies,
            spec,
        })
    }

    pub fn end(&self) -> SimTime {
        SimTime::ZERO + self.duration
    }

    /// Number of independent copies of peer state (nginx workers without `zone`).
    pub fn scopes(&self) -> usize {
        if self.gateway.zone {
            1
        } else {
            self.gateway.workers as usize
        }
    }

    /// Legal but suspicious settings, as `(field, message)` with the JSON
    /// path of the field. Callers print them as `warning: file: field: message`.
    pub fn warnings(&self) -> Vec<(String, String)> {
        let mut w = vec![];
        let g = &self.gateway;
        if let Some(t) = self.clients.timeout()
            && self.policies.iter().any(PolicySpec::counts_client_requests)
        {
            // When a waiting attempt ends: (field, its value as written, when it fires).
            let waits: Vec<(String, String, Option<SimDuration>)> = match g.flavor {
                GatewayFlavor::Nginx => vec![
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
            };
            let longer: Vec<String> = waits
                .iter()
                .filter(|(_, _, fires)| fires.is_none_or(|f| t <= f))
                .map(|(name, value, _)| format!("{name} ({value})"))
                .collect();
            if !longer.is_empty() {
                w.push((
                    "clients.timeout".into(),
                    format!(
                        "clients give up after {t}, no later than {}: a waiting attempt ends as a \
                         client abort (499), which passive health checks never count as a \
                         failure, so they may never eject a node that stops answering",
                        longer.join(" and ")
                    ),
                ));
            }
        }
        let words = &g.proxy_next_upstream;
        if words.contains(&NextUpstream::Off) && words.len() > 1 {
            w.push((
                "gateway.proxy_next_upstream".into(),
                "`off` turns off every other condition listed: no request is retried".into(),
            ));
        }
        for (i, f) in self.spec.faults.iter().enumerate() {
            let (at, for_) = f.window();
            if let Some(d) = for_
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
        for (i, p) in self.policies.iter().enumerate() {
            let base = if self.spec.policy.is_some() {
                "policy".to_string()
            } else {
                format!("policies[{i}]")
            };
            for (field, msg) in p.warnings() {
                w.push((format!("{base}.{field}"), msg));
            }
        }
        w
    }
}

fn validate_latency(l: &LatencySpec) -> Result<(), (String, String)> {
    match l {
        LatencySpec::Constant { .. } => Ok(()),
        LatencySpec::Exponential { mean } => {
            if mean.is_zero() {
                Err(("mean".into(), "must be positive".into()))
            } else {
                Ok(())
            }
        }
        LatencySpec::Lognormal { median, sigma } => {
            if median.is_zero() {
                Err(("median".into(), "must be positive".into()))
            } else if !(sigma.is_finite() && *sigma >= 0.0 && *sigma <= 10.0) {
                Err(("sigma".into(), format!("must be in [0, 10], found {sigma}")))
            } else {
                Ok(())
            }
        }
        LatencySpec::Uniform { min, max } => {
            if min > max {
                Err(("min".into(), format!("\"{min}\" is above max \"{max}\"")))
            } else {
                Ok(())
            }
        }
    }
}

/// Sets `value` at a dotted path (`clients.rate_per_s`, `nodes[0].weight`,
/// `nodes.a.weight` by node name) in a model document. The parent must exist;
/// the last key may be new only if the parent is an object.
pub fn set_path(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    let parts = split_path(path)?;
    let (last, parents) = parts.split_last().ok_or("empty path")?;
    let mut cur = doc;
    let mut walked = String::new();
    for p in parents {
        // A section the file leaves to its defaults (e.g. `gateway`) is created.
        if let Value::Object(map) = cur
            && !map.contains_key(p.as_str())
        {
            map.insert(p.clone(), Value::Object(Default::default()));
        }
        let missing = match &*cur {
            Value::Array(items) => match p.parse::<usize>() {
                Ok(i) => format!(
                    "index {i} is out of range: `{walked}` has {} item(s)",
                    items.len()
                ),
                Err(_) => format!("`{walked}` has no item named \"{p}\""),
            },
            _ => format!(
                "no field `{p}` under `{}`",
                if walked.is_empty() {
                    "(top level)"
                } else {
                    &walked
                }
            ),
        };
        cur = step(cur, p).ok_or(missing)?;
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(p);
    }
    match cur {
        Value::Object(map) => {
            map.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(items) => {
            let i: usize = last.parse().map_err(|_| {
                format!("`{walked}` is a list: index it with a number, not `{last}`")
            })?;
            let len = items.len();
            let slot = items
                .get_mut(i)
                .ok_or_else(|| format!("index {i} is out of range: `{walked}` has {len} items"))?;
            *slot = value;
            Ok(())
        }
        _ => Err(format!("`{walked}` is not an object")),
    }
}

/// Reads the value at a dotted path, if it exists.
pub fn get_path<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    let parts = split_path(path).ok()?;
    let mut cur = doc;
    for p in &parts {
        cur = step_ref(cur, p)?;
    }
    Some(cur)
}

/// Spells a `--set` path the way errors do: `nodes.A.weight` (a list item
/// addressed by name) becomes `nodes[0].weight`. `None` if it is malformed or
/// names a list item that does not exist.
pub fn canonical_path(doc: &Value, path: &str) -> Option<String> {
    let mut out = String::new();
    let mut cur = Some(doc);
    for p in split_path(path).ok()? {
        if let Some(Value::Array(items)) = cur {
            let i = match p.parse::<usize>() {
                Ok(i) => i,
                Err(_) => items
                    .iter()
                    .position(|it| it.get("name").and_then(Value::as_str) == Some(p.as_str()))?,
            };
            out.push_str(&format!("[{i}]"));
            cur = items.get(i);
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&p);
            cur = cur.and_then(|v| v.get(p.as_str()));
        }
    }
    Some(out)
}

fn split_path(path: &str) -> Result<Vec<String>, String> {
    let mut out = vec![];
    for seg in path.split('.') {
        if seg.is_empty() {
            return Err(format!("malformed path `{path}`"));
        }
        // `nodes[0]` -> `nodes`, `0`
        let mut rest = seg;
        if let Some(b) = rest.find('[') {
            out.push(rest[..b].to_string());
            rest = &rest[b..];
            while let Some(stripped) = rest.strip_prefix('[') {
                let close = stripped
                    .find(']')
                    .ok_or_else(|| format!("malformed path `{path}`"))?;
                out.push(stripped[..close].to_string());
                rest = &stripped[close + 1..];
            }
            if !rest.is_empty() {
                return Err(format!("malformed path `{path}`"));
            }
        } else {
            out.push(rest.to_string());
        }
    }
    out.retain(|s| !s.is_empty());
    Ok(out)
}

fn step<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    match v {
        Value::Object(m) => m.get_mut(key),
        Value::Array(items) => match key.parse::<usize>() {
            Ok(i) => items.get_mut(i),
            // a list of named things (nodes) can be addressed by name
            Err(_) => items
                .iter_mut()
                .find(|it| it.get("name").and_then(Value::as_str) == Some(key)),
        },
        _ => None,
    }
}

fn step_ref<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m.get(key),
        Value::Array(items) => match key.parse::<usize>() {
            Ok(i) => items.get(i),
            Err(_) => items
                .iter()
                .find(|it| it.get("name").and_then(Value::as_str) == Some(key)),
        },
        _ => None,
    }
}

/// Parses the value of `--set PATH=VALUE`: JSON if it parses, else a string.
pub fn parse_set_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn minimal() -> Value {
        json!({
            "name": "t", "duration": "10s",
            "clients": {"kind": "open", "rate_per_s": 10.0},
            "nodes": [{"name": "a"}, {"name": "b"}]
        })
    }

    fn check(doc: Value) -> Result<Scenario, String> {
        Scenario::from_document(&doc, Path::new("m.json")).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_nginx_defaults() {
        let s = check(minimal()).unwrap();
        assert_eq!(s.policies, vec![PolicySpec::MaxFails(Default::default())]);
        assert!(s.next_upstream.contains(NextUpstream::Error));
        assert!(s.next_upstream.contains(NextUpstream::Timeout));
        assert!(!s.next_upstream.contains(NextUpstream::Http503));
        assert_eq!(s.gateway.proxy_read_timeout, SimDuration::from_secs(60));
        assert_eq!(s.gateway.proxy_connect_timeout, SimDuration::from_secs(60));
    }

    #[test]
    fn unknown_fields_are_rejected_with_their_path() {
        let mut d = minimal();
        d["policy"] = json!({"kind": "max_fails", "fail_timout": "5s"});
        let e = check(d).unwrap_err();
        assert_eq!(
            e,
            "m.json: policy.fail_timout: unknown field `fail_timout`, expected `max_fails` \
             or `fail_timeout` (did you mean `fail_timeout`?)"
        );
        let mut d = minimal();
        d["nodes"][1]["wieght"] = json!(2);
        let e = check(d).unwrap_err();
        assert!(
            e.contains("nodes[1].wieght: unknown field `wieght`, expected one of `name`, `weight`"),
            "{e}"
        );
    }

    #[test]
    fn errors_inside_tagged_variants_name_the_full_path() {
        let cases = [
            (
                "/clients/rate_per_s",
                json!("x"),
                "clients.rate_per_s: invalid type: string \"x\", expected f64",
            ),
            (
                "/clients/timeot",
                json!("1s"),
                "clients.timeot: unknown field `timeot`",
            ),
            (
                "/faults",
                json!([{"kind": "flaky", "node": "a", "p": "x"}]),
                "faults[0].p: invalid type: string \"x\", expected f64",
            ),
            (
                "/faults",
                json!([{"kind": "crash", "node": "a", "at": 5}]),
                "faults[0].at: invalid type: integer `5`, expected a duration",
            ),
            (
                "/faults",
                json!([{"kind": "flaky", "node": "a"}]),
                "faults[0]: missing field `p`",
            ),
            (
                "/faults",
                json!([{"kind": "crsh", "node": "a"}]),
                "faults[0].kind: unknown variant `crsh`",
            ),
            (
                "/faults",
                json!([{"node": "a"}]),
                "faults[0]: missing field `kind`",
            ),
            (
                "/policy",
                json!({"kind": "none", "max_fails": 3}),
                "policy.max_fails: unknown field `max_fails`, there are no fields",
            ),
            (
                "/policy",
                json!({"kind": "nginx", "max_fails": -1}),
                "policy.max_fails: invalid value: integer `-1`, expected u32",
            ),
            (
                "/nodes/0/service_time",
                json!({"dist": "lognormal", "median": "1ms", "sigma": "x"}),
                "nodes[0].service_time.sigma: invalid type: string",
            ),
            (
                "/nodes/0/service_time",
                json!({"dist": "constant", "valeu": "1ms"}),
                "nodes[0].service_time.valeu: unknown field `valeu`, expected `value` (did you mean `value`?)",
            ),
            (
                "/nodes/1/service_time",
                json!({"dist": "uniform", "min": "1ms"}),
                "nodes[1].service_time: missing field `max`",
            ),
        ];
        for (ptr, value, want) in cases {
            let mut d = minimal();
            let (parent, key) = ptr.rsplit_once('/').unwrap();
            let target = if parent.is_empty() {
                &mut d
            } else {
                d.pointer_mut(parent).unwrap()
            };
            match target {
                Value::Object(m) => {
                    m.insert(key.to_string(), value);
                }
                other => *other.get_mut(key.parse::<usize>().unwrap()).unwrap() = value,
            }
            let e = check(d).unwrap_err();
            assert!(
                e.starts_with(&format!("m.json: {want}")),
                "{ptr}: got {e:?}, want {want:?}"
            );
        }
    }

    #[test]
    fn a_client_timeout_before_the_upstream_ones_warns_only_for_passive_checks() {
        let mut d = minimal();
        d["clients"]["timeout"] = json!("5s");
        let w = check(d.clone()).unwrap().warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].1.starts_with(
            "clients give up after 5s, no later than gateway.proxy_connect_timeout (60s) and \
             gateway.proxy_read_timeout (60s)"
        ));
        d["gateway"] = json!({"proxy_connect_timeout": "2s", "proxy_read_timeout": "4s"});
        assert_eq!(check(d.clone()).unwrap().warnings(), vec![]);
        d["gateway"] = json!({"flavor": "haproxy", "haproxy": {"timeout_connect": "1s"}});
        // HAProxy's own default is no passive policy
        assert_eq!(check(d.clone()).unwrap().warnings(), vec![]);
        d["policy"] = json!({"kind": "ratio_ejection"});
        let w = check(d.clone()).unwrap().warnings();
        assert!(
            w[0].1
                .contains("no later than gateway.haproxy.timeout_server (unset: never)"),
            "{w:?}"
        );
        d["gateway"] = json!({});
        d["policy"] =
            json!({"kind": "active_probe", "flavor": "generic", "interval": "1s", "timeout": "1s"});
        let w = check(d).unwrap().warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].0, "policy.timeout");
    }

    #[test]
    fn fault_on_unknown_node_names_the_path() {
        let mut d = minimal();
        d["faults"] = json!([{"kind": "crash", "node": "c", "at": "1s"}]);
        let e = check(d).unwrap_err();
        assert!(
            e.contains("m.json: faults[0].node: no node named \"c\""),
            "{e}"
        );
    }

    #[test]
    fn durations_need_units() {
        let mut d = minimal();
        d["duration"] = json!(10);
        let e = check(d).unwrap_err();
        assert!(e.contains("duration: invalid type"), "{e}");
        let mut d = minimal();
        d["duration"] = json!("10 sec");
        let e = check(d).unwrap_err();
        assert!(e.contains("expected a duration with a unit"), "{e}");
    }

    #[test]
    fn overlapping_exclusive_faults_are_rejected() {
        let mut d = minimal();
        d["faults"] = json!([
            {"kind": "crash", "node": "a", "at": "1s", "for": "3s"},
            {"kind": "hang", "node": "a", "at": "2s"}
        ]);
        let e = check(d).unwrap_err();
        assert!(e.contains("faults[1]: overlaps faults[0]"), "{e}");
    }

    #[test]
    fn set_path_patches_by_index_and_by_name() {
        let mut d = minimal();
        set_path(&mut d, "clients.rate_per_s", json!(10000)).unwrap();
        set_path(&mut d, "nodes[1].weight", json!(3)).unwrap();
        set_path(&mut d, "nodes.a.weight", json!(2)).unwrap();
        assert_eq!(d["clients"]["rate_per_s"], json!(10000));
        assert_eq!(d["nodes"][1]["weight"], json!(3));
        assert_eq!(d["nodes"][0]["weight"], json!(2));
        assert!(set_path(&mut d, "nodes[7].weight", json!(2)).is_err());
        set_path(&mut d, "gateway.workers", json!(2)).unwrap();
        assert_eq!(d["gateway"]["workers"], json!(2));
        assert_eq!(get_path(&d, "nodes[1].name"), Some(&json!("b")));
        assert_eq!(parse_set_value("5s"), json!("5s"));
        assert_eq!(parse_set_value("3"), json!(3));
    }
}
