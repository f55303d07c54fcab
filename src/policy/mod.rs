//! Health policies: the `HealthPolicy` trait, the `PolicySpec` a model names, and `build`.
//!
//! A policy decides; the gateway acts on its decisions. It sees attempts the
//! gateway reports, answers whether a node is routable, and may ask for timers.
//! It never touches the event queue, the nodes or the metrics directly: it
//! queues requests in a [`PolicyCx`], which the model turns into events and
//! records.

pub mod max_fails;

use crate::engine::{SimRng, SimTime};
use crate::model::NodeId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use max_fails::{MaxFails, MaxFailsParams};

/// Which copy of the gateway's peer state a decision concerns: the nginx
/// worker process (each has its own state unless the upstream has a `zone`).
pub type Scope = u16;

/// The time as a policy sees it: virtual time and nginx's whole-second wall clock.
#[derive(Copy, Clone, Debug)]
pub struct Now {
    pub t: SimTime,
    /// `ngx_time()`: whole wall-clock seconds (see [`crate::model::WallClock`]).
    pub wall_s: i64,
}

/// What happened to one upstream attempt, as the gateway observed it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AttemptResult {
    /// An HTTP response header arrived with this status.
    Status(u16),
    /// `connect()` refused (RST) or unreachable.
    Refused,
    /// `proxy_connect_timeout` expired.
    ConnectTimeout,
    /// No response header within `proxy_read_timeout`.
    ReadTimeout,
    /// The connection was reset or closed before the response header.
    Reset,
    /// The client closed its connection first (nginx logs 499).
    ClientAbort,
}

/// How the gateway freed the peer after the attempt (nginx `free_peer` state).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Charge {
    /// `NGX_PEER_FAILED`: counted as a failure.
    Failed,
    /// `NGX_PEER_NEXT`: 403/404 retried; takes the success path.
    Next,
    /// State 0: a success as far as passive accounting is concerned.
    Success,
}

/// One attempt's report to the policies.
#[derive(Copy, Clone, Debug)]
pub struct AttemptReport {
    pub scope: Scope,
    pub node: NodeId,
    pub result: AttemptResult,
    pub charge: Charge,
}

/// A timer a policy asked for; it comes back unchanged in `on_timer`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PolicyTimer {
    pub tag: u32,
    pub node: u32,
    pub generation: u32,
}

/// Which scopes an ejection notice covers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ScopeSel {
    One(Scope),
    All,
}

/// A change of a node's routability, reported for the metrics.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    Ejected { scope: ScopeSel, node: NodeId },
    Readmitted { scope: ScopeSel, node: NodeId },
}

/// What a policy may do during a callback: read the time, draw random numbers,
/// ask for timers, and report ejections.
pub struct PolicyCx<'a> {
    pub(crate) now: Now,
    pub(crate) rng: &'a mut SimRng,
    pub(crate) timers: &'a mut Vec<(SimTime, PolicyTimer)>,
    pub(crate) notices: &'a mut Vec<Notice>,
}

impl<'a> PolicyCx<'a> {
    pub fn new(
        now: Now,
        rng: &'a mut SimRng,
        timers: &'a mut Vec<(SimTime, PolicyTimer)>,
        notices: &'a mut Vec<Notice>,
    ) -> Self {
        PolicyCx {
            now,
            rng,
            timers,
            notices,
        }
    }
    pub fn now(&self) -> Now {
        self.now
    }
    pub fn rng(&mut self) -> &mut SimRng {
        self.rng
    }
    /// Asks for `on_timer(timer)` at `at` (not before now).
    pub fn at(&mut self, at: SimTime, timer: PolicyTimer) {
        self.timers.push((at.max(self.now.t), timer));
    }
    pub fn ejected(&mut self, scope: ScopeSel, node: NodeId) {
        self.notices.push(Notice::Ejected { scope, node });
    }
    pub fn readmitted(&mut self, scope: ScopeSel, node: NodeId) {
        self.notices.push(Notice::Readmitted { scope, node });
    }
}

/// A gateway health-check policy. It decides; the engine acts on its decisions.
pub trait HealthPolicy: Send {
    /// Called once at time zero.
    fn on_start(&mut self, _cx: &mut PolicyCx) {}
    /// May the gateway worker `scope` select `node` now?
    fn is_routable(&self, scope: Scope, node: NodeId, now: Now) -> bool;
    /// The balancer selected `node` for an attempt (nginx moves `checked` here).
    fn on_selected(&mut self, _cx: &mut PolicyCx, _scope: Scope, _node: NodeId) {}
    /// An attempt ended and the peer was freed.
    fn on_attempt(&mut self, _cx: &mut PolicyCx, _report: &AttemptReport) {}
    /// How much the balancer's effective weight drops on a failed attempt.
    fn weight_cut(&self, _node: NodeId, _weight: u32) -> u32 {
        0
    }
    /// A timer asked for with [`PolicyCx::at`] fired.
    fn on_timer(&mut self, _cx: &mut PolicyCx, _timer: PolicyTimer) {}
    /// nginx ignores `max_fails` entirely for a one-server upstream.
    fn bypassed_for_single_server(&self) -> bool {
        false
    }
}

/// The baseline: every node is always routable.
pub struct NoPolicy;

impl HealthPolicy for NoPolicy {
    fn is_routable(&self, _: Scope, _: NodeId, _: Now) -> bool {
        true
    }
}

/// A health policy as written in a model file; `kind` is the tag.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(transform = crate::schema::AcceptAlias { tag: "kind", name: "max_fails", alias: "nginx" })]
pub enum PolicySpec {
    /// No health checking: the baseline.
    #[serde(deserialize_with = "crate::diagnostics::no_fields")]
    None,
    /// nginx passive counting: `max_fails` / `fail_timeout` on each `server`.
    #[serde(alias = "nginx", deserialize_with = "crate::diagnostics::tracked")]
    MaxFails(MaxFailsParams),
}

impl PolicySpec {
    /// A short name for tables and file names.
    pub fn label(&self) -> String {
        match self {
            PolicySpec::None => "none".into(),
            PolicySpec::MaxFails(p) => {
                format!("max_fails={} fail_timeout={}", p.max_fails, p.fail_timeout)
            }
        }
    }

    /// Checks that serde cannot do; `Err((field, reason))` names the field
    /// relative to the policy object.
    pub fn validate(&self) -> Result<(), (String, String)> {
        match self {
            PolicySpec::None => Ok(()),
            PolicySpec::MaxFails(p) => p.validate(),
        }
    }
}

impl PolicySpec {
    /// Legal but suspicious settings, as `(field, message)` with the field
    /// relative to the policy object. They are printed as warnings
    /// (`warning: file: policy.field: message`) and never stop a run.
    pub fn warnings(&self) -> Vec<(String, String)> {
        match self {
            PolicySpec::None => vec![],
            PolicySpec::MaxFails(p) => p.warnings(),
        }
    }
}

/// Builds the runtime policy. `scopes` is the number of independent copies of
/// peer state (nginx workers without `zone`), `nodes` the number of nodes.
pub fn build(spec: &PolicySpec, scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
    match spec {
        PolicySpec::None => Box::new(NoPolicy),
        PolicySpec::MaxFails(p) => Box::new(MaxFails::new(p, scopes, nodes)),
    }
}
