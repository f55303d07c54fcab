//! The model file as written: the serde `*Spec` types that mirror
//! `models/*.json`, section by section. [`super::validate`] turns a
//! [`ModelSpec`] into the [`super::Model`] a run simulates.
//!
//! Defaults are nginx's defaults (`proxy_next_upstream error timeout`, 60 s
//! timeouts, `max_fails=1 fail_timeout=10s`). Durations are strings with units.

pub use super::balancer::{Balancer, HashBalancer, SourceBalancer};
use super::charts::ChartSpec;
use super::connections::{ClientConnection, PoolSpec};
use super::haproxy::HaproxySpec;
use crate::diagnostics::tracked;
use crate::engine::SimDuration;
use crate::policy::PolicySpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A whole model file.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
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
    /// Width of one row of `timeline.csv`. Default: derived from `duration`,
    /// 1s up to 10 minutes, then the first of 2s, 5s, 10s, 15s, 30s, 1m, 2m,
    /// 5m, 10m, 15m, 30m, 1h, 2h, 6h, 12h, 1d that gives at most 600 rows
    /// (not written out unless set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline_bucket: Option<SimDuration>,
    /// Latencies to count the requests slower than, in `summary.json`'s
    /// `client.slower_than` (a client timeout counts at the client timeout).
    /// Default `["100ms", "1s"]`; at most 16, each positive and different.
    #[serde(default = "default_latency_thresholds")]
    pub latency_thresholds: Vec<SimDuration>,
    pub clients: ClientsSpec,
    #[serde(default)]
    pub gateway: GatewaySpec,
    // Capped as it is read straight from text (`document::spec_from_text`).
    #[serde(deserialize_with = "crate::diagnostics::capped_list")]
    pub nodes: Vec<NodeSpec>,
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    /// Every node is a Kubernetes pod with this lifecycle (`nodes[].pod`
    /// overrides it per node): start-up, graceful shutdown, probes, and
    /// endpoints that reach the gateway late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<PodSpec>,
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

/// Rows a derived timeline bucket cuts a run into at most.
pub const DERIVED_TIMELINE_ROWS: u64 = 600;

/// The widths a derived timeline bucket is chosen from, in seconds.
const BUCKET_STEPS_S: [u64; 17] = [
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400,
];

/// The timeline bucket of a run of `duration` when the model sets none: the
/// narrowest of [`BUCKET_STEPS_S`] that gives at most
/// [`DERIVED_TIMELINE_ROWS`] rows (1s up to 10 minutes), whole days beyond.
pub fn derived_bucket(duration: SimDuration) -> SimDuration {
    let rows = |step_s: u64| duration.as_micros().div_ceil(step_s * 1_000_000);
    let step_s = BUCKET_STEPS_S
        .iter()
        .copied()
        .find(|s| rows(*s) <= DERIVED_TIMELINE_ROWS)
        .unwrap_or_else(|| rows(86_400).div_ceil(DERIVED_TIMELINE_ROWS) * 86_400);
    SimDuration::from_secs(step_s)
}

impl ModelSpec {
    /// The width of one timeline row: `timeline_bucket`, or the one derived
    /// from `duration` ([`derived_bucket`]).
    pub fn bucket(&self) -> SimDuration {
        self.timeline_bucket
            .unwrap_or_else(|| derived_bucket(self.duration))
    }
}
fn default_latency_thresholds() -> Vec<SimDuration> {
    vec![SimDuration::from_millis(100), SimDuration::from_secs(1)]
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeasureSpec {
    #[serde(default)]
    pub from: SimDuration,
    /// Default: the end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    /// Each request leaves this long after its scheduled arrival, as a
    /// real load generator's timer and scheduling delay it: a duration (the
    /// most, drawn uniformly from 0 up to it) or a distribution. Default:
    /// none (requests leave on schedule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_jitter: Option<DurationDist>,
    /// The rate changing over time: from each step's `at` on, requests
    /// arrive at its `rate_per_s` (0 = none), until the next step;
    /// `rate_per_s` holds before the first. Constant arrivals restart their
    /// spacing at each step. Default: none (one rate throughout). `hcsim
    /// replay` writes the workload of an access log this way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<RateStep>,
    /// `close` (default: one request per connection) or `keepalive`
    /// (see [`ClientConnection`](super::connections::ClientConnection)).
    #[serde(default, skip_serializing_if = "ClientConnection::is_default")]
    pub connection: ClientConnection,
    /// Distinct client identities (1..=16,777,216): each request's key is
    /// drawn uniformly from 0..keys; `ip_hash`, `hash` and `source` choose
    /// the peer from it, and `summary.json`'s `keys` says how many answers
    /// came from another node than the key's home. Default: none (no key is
    /// drawn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<u32>,
}

/// One step of `clients.schedule`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    pub at: SimDuration,
    pub rate_per_s: f64,
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
    /// `close` (default) or `keepalive`: each client keeps its connection.
    #[serde(default, skip_serializing_if = "ClientConnection::is_default")]
    pub connection: ClientConnection,
    /// Distinct client identities, as for open loops (each request draws
    /// its key, whichever client sends it). Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<u32>,
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
    /// `round_robin` (smooth weighted, default), `least_conn`, `random_two`,
    /// `ip_hash`, `{"hash": {"key": "$request_uri", "consistent": true}}`
    /// or HAProxy's `{"source": {"consistent": true, "avalanche": true}}`
    /// (the hash balancers need `clients.keys`).
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
    /// Whose request path: `nginx` (default), `haproxy`, `kong`, `linkerd`, `caddy` or
    /// `traefik`.
    pub flavor: GatewayFlavor,
    /// HAProxy backend settings; only with `flavor: haproxy` (defaults if omitted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub haproxy: Option<HaproxySpec>,
    /// Kong Service and upstream settings; only with `flavor: kong` (defaults if omitted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kong: Option<super::flavours::KongSpec>,
    /// Linkerd proxy settings; only with `flavor: linkerd` (defaults if omitted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub linkerd: Option<super::flavours::LinkerdSpec>,
    /// Caddy `reverse_proxy` settings; only with `flavor: caddy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caddy: Option<super::gateway_flavors::CaddyGatewaySpec>,
    /// Traefik router and transport settings; only with `flavor: traefik`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traefik: Option<super::gateway_flavors::TraefikGatewaySpec>,
    /// Independent gateways in front of the same nodes (ingress replicas,
    /// service-mesh sidecars): each has its own copy of every policy's state,
    /// its own probes, balancer position, nginx workers and clock phase. A
    /// registry (`heartbeat_ttl`) is one for the fleet: one set of beats,
    /// each replica a client with its own caches. Default 1.
    #[serde(skip_serializing_if = "is_one")]
    pub replicas: u32,
    /// How client requests reach the replicas: `round_robin` (default, an L4
    /// load balancer), `random`, or `per_client` (each closed-loop client
    /// pinned to replica `client mod replicas`, as a sidecar is; open-loop
    /// arrivals are split into `replicas` equal streams: in turn for
    /// `constant` arrivals, at random for `poisson`).
    #[serde(skip_serializing_if = "Spread::is_default")]
    pub spread: Spread,
    /// Envoy's `healthy_panic_threshold`, percent: while fewer than this
    /// share of the non-`down` primary nodes is routable, selection ignores
    /// the policies (ejected nodes get traffic again). Default: the policy's
    /// own (50 with `outlier_detection` and Envoy active health checks,
    /// `minHealthPercent` with `istio`), else 0 = off, as in nginx.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthy_panic_threshold: Option<f64>,
    /// Idle connections to the nodes kept for reuse, by the rules of
    /// `kind` (`nginx`, `haproxy` or `envoy`). Default: none, every
    /// attempt opens its own connection (HAProxy: its `http-reuse safe`
    /// applies to keep-alive clients).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolSpec>,
    /// A node's weight ramps up after it returns to service: HAProxy's
    /// `slowstart` with `flavor: haproxy`, else Envoy's `slow_start_config`.
    /// Default: none, a returning node takes its full weight at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_start: Option<super::slow_start::SlowStartSpec>,
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// How client requests reach the gateway replicas.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Spread {
    /// In turn, as an L4 load balancer spreads connections.
    #[default]
    RoundRobin,
    /// Each request to a replica drawn at random.
    Random,
    /// Each client keeps its replica (a sidecar in the client's pod).
    PerClient,
}

impl Spread {
    fn is_default(&self) -> bool {
        *self == Spread::RoundRobin
    }
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
    /// An HAProxy backend (`back_handle_st_cer` in HAProxy's backend.c): only
    /// failed connects are retried, `retries` times, on the same server
    /// unless redispatched.
    Haproxy,
    /// Kong (OpenResty): nginx's pipeline with Kong's balancer — a shuffled
    /// round-robin wheel, `retries` more tries on errors and timeouts, 503
    /// when no target takes traffic — and Kong's passive reporting.
    Kong,
    /// A Linkerd 2.x outbound proxy: P2C over peak-EWMA among the ready
    /// endpoints, no retries, requests queued while none is ready and failed
    /// fast after `failfast_timeout` (504 for those queued, 503 for the new
    /// ones until an endpoint is ready).
    Linkerd,
    /// Caddy's `reverse_proxy` (`gateway.caddy`): random selection, no
    /// retry unless `lb_retries` or `lb_try_duration`, 503 "no upstreams
    /// available", no response timeout by default.
    Caddy,
    /// Traefik's router and load balancer (`gateway.traefik`): weighted
    /// round robin, the retry and circuit-breaker middlewares, 503 "no
    /// available server".
    Traefik,
}

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
            kong: None,
            linkerd: None,
            caddy: None,
            traefik: None,
            replicas: 1,
            spread: Spread::RoundRobin,
            healthy_panic_threshold: None,
            pool: None,
            slow_start: None,
        }
    }
}

impl GatewaySpec {
    /// The HAProxy settings in force (defaults when the section is omitted).
    pub fn haproxy(&self) -> HaproxySpec {
        self.haproxy.clone().unwrap_or_default()
    }

    /// The Kong settings in force (defaults when the section is omitted).
    pub fn kong(&self) -> super::flavours::KongSpec {
        self.kong.clone().unwrap_or_default()
    }

    /// The Linkerd settings in force (defaults when the section is omitted).
    pub fn linkerd(&self) -> super::flavours::LinkerdSpec {
        self.linkerd.clone().unwrap_or_default()
    }

    /// The Caddy settings in force (defaults when the section is omitted).
    pub fn caddy(&self) -> super::gateway_flavors::CaddyGatewaySpec {
        self.caddy.clone().unwrap_or_default()
    }

    /// The Traefik settings in force (defaults when the section is omitted).
    pub fn traefik(&self) -> super::gateway_flavors::TraefikGatewaySpec {
        self.traefik.clone().unwrap_or_default()
    }
}

impl ClientsSpec {
    /// `clients.keys`.
    pub fn keys(&self) -> Option<u32> {
        match self {
            ClientsSpec::Open(c) => c.keys,
            ClientsSpec::Closed(c) => c.keys,
        }
    }
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

// Written by `node_order.rs` (in this order, or sorted by key), whose two
// views skip what the `skip_serializing_if`s below say.
/// A backend server and how the gateway's upstream lists it.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
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
    /// HAProxy's `maxqueue`: requests sent to this server by their cookie
    /// that may wait in its queue while it is at `max_conns`; one more
    /// fails (503, or is redispatched with `redispatch`). 0 = unlimited.
    /// Only with `"flavor": "haproxy"`.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub max_queue: u32,
    /// Worker threads serving requests. Default 64.
    #[serde(default = "default_workers")]
    pub workers: u32,
    /// Connections the kernel accepts while all workers are busy (or the
    /// process is stopped); beyond it, connects time out. Default 511.
    #[serde(default = "default_backlog")]
    pub backlog: u32,
    /// Time a worker spends on one request. Default constant 5ms.
    #[serde(
        default = "default_service",
        deserialize_with = "latency_body::service_time"
    )]
    pub service_time: LatencySpec,
    /// The node closes a kept-alive connection idle this long (Node.js 5s,
    /// gunicorn 2s). Default: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keepalive_timeout: Option<SimDuration>,
    /// The node closes a connection after this many requests (answering
    /// the last with `Connection: close`). Default: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keepalive_requests: Option<u32>,
    /// The port its health checks go to when it is not the traffic's
    /// (HAProxy's server `check port N`): a separate endpoint on the same
    /// host, which answers a check at once. A crash or partition of the
    /// node (its host) fails the checks; a hang, stop, slowdown, errors or
    /// a full accept queue of the traffic port do not, so a check can pass
    /// while the traffic fails. Default: none, the checks go where the
    /// traffic goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_port: Option<u16>,
    /// The address its health checks go to when it is not the traffic's
    /// (HAProxy's server `addr`): another host, so none of this node's
    /// faults (a crash, a partition, a hang, errors) fails a check; hcsim
    /// has that host always answer. A check can then pass for a node whose
    /// traffic all fails. Default: none, the checks go to the node's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub check_addr: Option<std::net::IpAddr>,
    /// HAProxy's `on-marked-down shutdown-sessions`: the requests in flight
    /// on this node are killed when its checks mark it DOWN. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_marked_down: Option<super::haproxy::OnMarkedDown>,
    /// HAProxy's `on-marked-up shutdown-backup-sessions`: when its checks
    /// mark this node UP, the requests in flight on the backups are killed.
    /// Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_marked_up: Option<super::haproxy::OnMarkedUp>,
    /// This node is a Kubernetes pod: its lifecycle, over the model's `pods`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodSpec>,
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
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
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

impl LatencySpec {
    /// The mean of the distribution, seconds.
    pub fn mean_secs(&self) -> f64 {
        match *self {
            LatencySpec::Constant { value } => value.as_secs_f64(),
            LatencySpec::Exponential { mean } => mean.as_secs_f64(),
            LatencySpec::Lognormal { median, sigma } => {
                median.as_secs_f64() * (sigma * sigma / 2.0).exp()
            }
            LatencySpec::Uniform { min, max } => (min.as_secs_f64() + max.as_secs_f64()) / 2.0,
        }
    }
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

    pub(super) fn constant<'de, D: Deserializer<'de>>(d: D) -> Result<SimDuration, D::Error> {
        tracked::<_, Constant>(d).map(|b| b.value)
    }
    pub(super) fn exponential<'de, D: Deserializer<'de>>(d: D) -> Result<SimDuration, D::Error> {
        tracked::<_, Exponential>(d).map(|b| b.mean)
    }
    pub(super) fn lognormal<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<(SimDuration, f64), D::Error> {
        tracked::<_, Lognormal>(d).map(|b| (b.median, b.sigma))
    }
    pub(super) fn uniform<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<(SimDuration, SimDuration), D::Error> {
        tracked::<_, Uniform>(d).map(|b| (b.min, b.max))
    }

    /// The tag of a distribution, as `LatencySpec` names its variants.
    #[derive(Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Dist {
        Constant,
        Exponential,
        Lognormal,
        Uniform,
    }

    /// A node's `service_time`: straight from text ([`crate::diagnostics::direct`])
    /// an object with `dist` first is read in one pass, not buffered as
    /// serde reads a tagged enum (half a node's cost); any other is an error,
    /// and the document is read the buffered way. Else `LatencySpec`'s own.
    pub(super) fn service_time<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<super::LatencySpec, D::Error> {
        use super::LatencySpec;
        use serde::de::{Error, MapAccess, Visitor, value::MapAccessDeserializer};
        if !crate::diagnostics::is_direct() {
            return LatencySpec::deserialize(d);
        }
        struct IsDist;
        impl<'de> serde::de::DeserializeSeed<'de> for IsDist {
            type Value = bool;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
                d.deserialize_str(self)
            }
        }
        impl Visitor<'_> for IsDist {
            type Value = bool;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<bool, E> {
                Ok(v == "dist")
            }
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LatencySpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a distribution that gives `dist` first")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LatencySpec, A::Error> {
                if map.next_key_seed(IsDist)? != Some(true) {
                    return Err(A::Error::custom("`dist` is not first"));
                }
                let body = |map| MapAccessDeserializer::new(map);
                Ok(match map.next_value::<Dist>()? {
                    Dist::Constant => LatencySpec::Constant {
                        value: Constant::deserialize(body(map))?.value,
                    },
                    Dist::Exponential => LatencySpec::Exponential {
                        mean: Exponential::deserialize(body(map))?.mean,
                    },
                    Dist::Lognormal => {
                        let b = Lognormal::deserialize(body(map))?;
                        LatencySpec::Lognormal {
                            median: b.median,
                            sigma: b.sigma,
                        }
                    }
                    Dist::Uniform => {
                        let b = Uniform::deserialize(body(map))?;
                        LatencySpec::Uniform {
                            min: b.min,
                            max: b.max,
                        }
                    }
                })
            }
        }
        d.deserialize_map(V)
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
    /// The process closes its listening socket and keeps serving the
    /// connections it has (the first step of a graceful shutdown): new
    /// connects are refused; `for` ends it. Needs a gateway that keeps
    /// connections (`gateway.pool`).
    #[serde(deserialize_with = "tracked")]
    StopAccepting(WindowSpec),
    /// Each request fails with probability `p`.
    #[serde(deserialize_with = "tracked")]
    Flaky(FlakySpec),
    /// Service times are multiplied by `factor` and extended by `extra`.
    #[serde(deserialize_with = "tracked")]
    Slow(SlowSpec),
    /// The Deployment's pods are replaced as its controller does
    /// (`max_surge`, `max_unavailable`); needs nodes that are pods.
    #[serde(deserialize_with = "tracked")]
    RollingUpdate(RollingUpdateSpec),
}

impl FaultSpec {
    /// `at` and `for`, whatever the kind.
    pub fn window(&self) -> (&DurationDist, Option<SimDuration>) {
        match self {
            FaultSpec::Crash(w)
            | FaultSpec::Hang(w)
            | FaultSpec::Stop(w)
            | FaultSpec::Partition(w)
            | FaultSpec::StopAccepting(w) => (&w.at, w.for_),
            FaultSpec::Flaky(x) => (&x.at, x.for_),
            FaultSpec::Slow(x) => (&x.at, x.for_),
            FaultSpec::RollingUpdate(r) => (&r.at, None),
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WindowSpec {
    pub node: String,
    /// When it starts: a duration (default 0s), or a distribution drawn
    /// once per replication from its seed (`{"dist": "uniform", "min":
    /// "10s", "max": "11s"}`): the fault's phase against probe schedules
    /// and nginx's clock varies as in a real test.
    #[serde(default)]
    pub at: DurationDist,
    #[serde(rename = "for", default)]
    pub for_: Option<SimDuration>,
    /// `crash` only: after `for` the process restarts, and refuses
    /// connections (a closed port) for this start-up time: a duration or
    /// a distribution, drawn at each restart. Default 0s (listening at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_delay: Option<DurationDist>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlakySpec {
    pub node: String,
    /// A duration (default 0s) or a distribution drawn per replication.
    #[serde(default)]
    pub at: DurationDist,
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
    /// A duration (default 0s) or a distribution drawn per replication.
    #[serde(default)]
    pub at: DurationDist,
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

/// A duration that is fixed (`"2s"`) or drawn from a distribution
/// (`{"dist": "uniform", "min": "1s", "max": "3s"}`, the forms of a node's
/// `service_time`).
#[derive(Clone, Debug, PartialEq)]
pub enum DurationDist {
    Fixed(SimDuration),
    Drawn(LatencySpec),
}

impl Default for DurationDist {
    fn default() -> Self {
        DurationDist::Fixed(SimDuration::ZERO)
    }
}

impl From<SimDuration> for DurationDist {
    fn from(d: SimDuration) -> Self {
        DurationDist::Fixed(d)
    }
}

impl DurationDist {
    /// The value when it is a fixed duration (or a constant distribution).
    pub fn fixed(&self) -> Option<SimDuration> {
        match *self {
            DurationDist::Fixed(d) | DurationDist::Drawn(LatencySpec::Constant { value: d }) => {
                Some(d)
            }
            _ => None,
        }
    }

    /// The least and the greatest value it can take (`None`: no bound).
    pub fn range(&self) -> (SimDuration, Option<SimDuration>) {
        match *self {
            DurationDist::Fixed(d) | DurationDist::Drawn(LatencySpec::Constant { value: d }) => {
                (d, Some(d))
            }
            DurationDist::Drawn(LatencySpec::Uniform { min, max }) => (min, Some(max)),
            DurationDist::Drawn(LatencySpec::Lognormal { median, sigma: 0.0 }) => {
                (median, Some(median))
            }
            DurationDist::Drawn(_) => (SimDuration::ZERO, None),
        }
    }
}

impl std::fmt::Display for DurationDist {
    /// `2s`, or the distribution as JSON.
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            DurationDist::Fixed(d) => write!(f, "{d}"),
            DurationDist::Drawn(l) => {
                write!(
                    f,
                    "{}",
                    serde_json::to_string(l).map_err(|_| std::fmt::Error)?
                )
            }
        }
    }
}

impl Serialize for DurationDist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            DurationDist::Fixed(d) => d.serialize(s),
            DurationDist::Drawn(l) => l.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for DurationDist {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = DurationDist;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a duration string with a unit, such as \"5s\", or a distribution such as \
                     {\"dist\": \"uniform\", \"min\": \"1s\", \"max\": \"2s\"}",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<DurationDist, E> {
                crate::engine::time::parse_duration(v)
                    .map(DurationDist::Fixed)
                    .map_err(E::custom)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<DurationDist, A::Error> {
                LatencySpec::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(DurationDist::Drawn)
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for DurationDist {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DurationOrDistribution".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A fixed duration (\"2s\"), or a distribution of durations ({\"dist\": \"uniform\", \"min\": \"1s\", \"max\": \"3s\"}).",
            "anyOf": [g.subschema_for::<SimDuration>(), g.subschema_for::<LatencySpec>()]
        })
    }
}

/// A pod's lifecycle: `pods` holds every node's defaults, `nodes[].pod` one
/// node's own values (each field given there wins).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PodSpec {
    /// From the container's start until the process listens: a duration or
    /// a distribution, drawn at every start. Default 0s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<DurationDist>,
    /// `terminationGracePeriodSeconds`: from the start of the preStop hook
    /// (or of SIGTERM, without one) until SIGKILL. Default 30s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period: Option<SimDuration>,
    /// `lifecycle.preStop` as a sleep (`exec: sleep N` or the `sleep`
    /// action): the process keeps serving, SIGTERM comes after. Default 0s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_stop: Option<SimDuration>,
    /// What the process does on SIGTERM. Default `immediate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown: Option<Shutdown>,
    /// From a change of the pod's readiness (or its deletion) until a gateway
    /// replica routes by it (EndpointSlice → watch → the controller's sync),
    /// drawn for every change and every replica. Default 0s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_propagation: Option<DurationDist>,
    /// `readinessProbe`: without one the pod is ready as soon as its
    /// container runs (before the process listens, when `start_time` > 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness: Option<KubeProbeSpec>,
    /// `livenessProbe`: `failure_threshold` failures in a row restart the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liveness: Option<KubeProbeSpec>,
    /// `startupProbe`: liveness and readiness wait until it succeeds;
    /// `failure_threshold` failures in a row restart the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup: Option<KubeProbeSpec>,
    /// The Deployment's `strategy.rollingUpdate`: what a `rolling_update`
    /// fault that gives no `max_surge` or `max_unavailable` uses (the model's
    /// `pods` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<StrategySpec>,
}

/// A Deployment's `strategy.rollingUpdate`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StrategySpec {
    /// `maxSurge`. Default "25%".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrPercent>,
    /// `maxUnavailable`. Default "25%".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrPercent>,
}

/// What the process does on SIGTERM.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Shutdown {
    /// It exits at once: connections open to it are reset, requests in
    /// flight are cut.
    #[default]
    Immediate,
    /// It stops accepting (new connects are refused), finishes the requests
    /// it has, closes its idle keep-alive connections, and exits.
    Graceful,
}

/// A kubelet probe (`prober/worker.go`): an HTTP GET through the node's
/// workers, like any request, so a hung or saturated process fails it
/// (`kind: tcp`: a connect, which the kernel accepts even for a hung one).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KubeProbeSpec {
    /// `http` (`httpGet`, the default) or `tcp` (`tcpSocket`).
    #[serde(default)]
    pub kind: KubeProbeKind,
    /// `initialDelaySeconds`, from the container's start. Default 0s.
    #[serde(default)]
    pub initial_delay: SimDuration,
    /// `periodSeconds`. Default 10s.
    #[serde(default = "ten_seconds")]
    pub period: SimDuration,
    /// `timeoutSeconds`. Default 1s.
    #[serde(default = "one_second")]
    pub timeout: SimDuration,
    /// `failureThreshold`. Default 3.
    #[serde(default = "three")]
    pub failure_threshold: u32,
    /// `successThreshold` (1 for liveness and startup probes). Default 1.
    #[serde(default = "one")]
    pub success_threshold: u32,
}

/// How a kubelet probe checks.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KubeProbeKind {
    /// An HTTP GET through the workers: it passes on 200..399.
    #[default]
    Http,
    /// A TCP connect: it passes once the kernel accepts.
    Tcp,
}

impl Default for KubeProbeSpec {
    fn default() -> Self {
        KubeProbeSpec {
            kind: KubeProbeKind::Http,
            initial_delay: SimDuration::ZERO,
            period: ten_seconds(),
            timeout: one_second(),
            failure_threshold: 3,
            success_threshold: 1,
        }
    }
}

fn ten_seconds() -> SimDuration {
    SimDuration::from_secs(10)
}
fn one_second() -> SimDuration {
    SimDuration::from_secs(1)
}
fn three() -> u32 {
    3
}

/// `{"kind": "rolling_update", ...}` in `faults`: the Deployment's pods are
/// replaced by new ones as its controller does (`maxSurge`, `maxUnavailable`).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RollingUpdateSpec {
    /// When the new revision is applied.
    #[serde(default)]
    pub at: DurationDist,
    /// `maxSurge`: pods above the replica count during the update, a
    /// count or a percentage of the replicas rounded up. Default:
    /// `pods.strategy.max_surge`, else "25%".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrPercent>,
    /// `maxUnavailable`: pods below the replica count, a count or a
    /// percentage rounded down. Default: `pods.strategy.max_unavailable`,
    /// else "25%".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrPercent>,
}

const QUARTER: IntOrPercent = IntOrPercent::Percent(25);

impl RollingUpdateSpec {
    /// `max_surge` and `max_unavailable`, the Deployment's strategy filling
    /// in what the fault leaves out.
    pub fn budgets(&self, strategy: Option<&StrategySpec>) -> (IntOrPercent, IntOrPercent) {
        let s = strategy.copied().unwrap_or_default();
        (
            self.max_surge.or(s.max_surge).unwrap_or(QUARTER),
            self.max_unavailable
                .or(s.max_unavailable)
                .unwrap_or(QUARTER),
        )
    }
}

/// A count (`1`) or a percentage (`"25%"`), Kubernetes' `IntOrString`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOrPercent {
    Int(u32),
    Percent(u32),
}

impl IntOrPercent {
    /// The number written, a count or a percentage (`getIntOrPercentValue`).
    pub fn written(self) -> u32 {
        match self {
            IntOrPercent::Int(n) | IntOrPercent::Percent(n) => n,
        }
    }

    /// The value against `total` (`intstr.GetScaledValueFromIntOrPercent`):
    /// a percentage rounded up or down.
    pub fn scaled(self, total: u32, round_up: bool) -> u32 {
        match self {
            IntOrPercent::Int(n) => n,
            IntOrPercent::Percent(p) => {
                let x = p as u64 * total as u64;
                (if round_up { x.div_ceil(100) } else { x / 100 }) as u32
            }
        }
    }
}

impl std::fmt::Display for IntOrPercent {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            IntOrPercent::Int(n) => write!(f, "{n}"),
            IntOrPercent::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl Serialize for IntOrPercent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            IntOrPercent::Int(n) => s.serialize_u32(*n),
            IntOrPercent::Percent(_) => s.serialize_str(&self.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for IntOrPercent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = IntOrPercent;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a count (1) or a percentage (\"25%\")")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<IntOrPercent, E> {
                u32::try_from(v)
                    .map(IntOrPercent::Int)
                    .map_err(|_| E::custom(format!("{v} is too large a count")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<IntOrPercent, E> {
                Err(E::custom(format!("must not be negative, found {v}")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<IntOrPercent, E> {
                let bad = || {
                    E::custom(format!(
                        "expected a percentage such as \"25%\", found {v:?}"
                    ))
                };
                let p = v.strip_suffix('%').ok_or_else(bad)?;
                let p: u32 = p.trim().parse().map_err(|_| bad())?;
                if p > 100 {
                    return Err(E::custom(format!(
                        "a percentage is at most 100%, found {v:?}"
                    )));
                }
                Ok(IntOrPercent::Percent(p))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for IntOrPercent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "IntOrPercent".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A count (1) or a percentage of the replicas (\"25%\").",
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": "^[0-9]+%$"}
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_duration_or_distribution_reads_both_forms_and_writes_them_back() {
        let fixed: DurationDist = serde_json::from_value(json!("1.5s")).unwrap();
        assert_eq!(fixed, DurationDist::Fixed(SimDuration::from_millis(1500)));
        assert_eq!(serde_json::to_value(&fixed).unwrap(), json!("1.5s"));
        let doc = json!({"dist": "uniform", "min": "1s", "max": "2s"});
        let drawn: DurationDist = serde_json::from_value(doc.clone()).unwrap();
        assert_eq!(
            drawn.range(),
            (SimDuration::from_secs(1), Some(SimDuration::from_secs(2)))
        );
        assert_eq!(drawn.fixed(), None);
        assert_eq!(serde_json::to_value(&drawn).unwrap(), doc);
        let e = serde_json::from_value::<DurationDist>(json!(5)).unwrap_err();
        assert!(e.to_string().contains("or a distribution"), "{e}");
        let exp: DurationDist =
            serde_json::from_value(json!({"dist": "exponential", "mean": "1s"})).unwrap();
        assert_eq!(exp.range(), (SimDuration::ZERO, None));
    }

    #[test]
    fn a_derived_bucket_keeps_a_timeline_under_600_rows() {
        let b = |s: u64| derived_bucket(SimDuration::from_secs(s)).as_micros() / 1_000_000;
        assert_eq!(b(20), 1);
        assert_eq!(b(600), 1);
        assert_eq!(b(601), 2);
        assert_eq!(b(3600), 10);
        assert_eq!(b(86_400), 300);
        assert_eq!(b(30 * 86_400), 7200);
        assert_eq!(b(600 * 86_400), 86_400);
        assert_eq!(b(601 * 86_400), 2 * 86_400);
        assert_eq!(
            derived_bucket(SimDuration::from_millis(1)).to_string(),
            "1s"
        );
    }
}
