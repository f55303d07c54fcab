//! # hcsim — a discrete-event simulator of gateway health-check policies
//!
//! hcsim answers "what does this health-check configuration do when a node
//! fails?" in virtual time: a model describes clients, a gateway (balancer,
//! retries, health policies) and nodes with faults; a run replays it event
//! by event and reports ejection delays, recovery delays, traffic shares and
//! what the clients saw.
//!
//! ```text
//!   clients ──► gateway ─────────────────────────────► nodes
//!  (open or     │ balancer (smooth WRR, least_conn,    (workers, accept queue,
//!   closed       │   random two; HAProxy roundrobin)    service time)
//!   loop,        │ nginx or HAProxy retries                 ▲   │ heartbeat
//!   timeouts)    │ health policies: is_routable? ◄── attempts │   │ threads
//!                │   ◄── probes (TCP / HTTP) ─────────────────┤   ▼
//!                └── ◄── registry view (TTL, caches) ◄── beats   faults: crash,
//!                                                        hang, stop, partition,
//!                                                        flaky, slow
//! ```
//!
//! ## Layers
//! Each layer uses only those below it (`tests/it/layout.rs` checks it;
//! ARCHITECTURE.md draws it):
//!
//! ```text
//! cli          one file per subcommand: arguments → library calls → stdout
//! reproduce    the seed experiments beside hcsim's figures
//! tune         settings recommended from simulation: candidates × scenarios, Pareto set
//! replay       an incident's access log → inferred model, its fit, what-ifs (hcsim replay)
//! output       every file a run or sweep writes: summary.json, CSVs, charts, report.html
//! sweep        grids of model variants × replications: axes, plan, checkpoint, shards
//! run          replications of one model, seeded; the cost estimate before a run
//! world        the simulated system: a few typed parts (fleet, policies, streams,
//!              clients, gateway, nodes) and the event loop
//! metrics      the Recorder during a run → RunSummary after it; metric names
//! config       gateway configs in and out: nginx, HAProxy, Envoy, Istio, Kubernetes
//! spec         what is read from files: ModelSpec → validated Model, overrides, sweeps
//! policy       health policies: the HealthPolicy port and each implementation
//! engine, ids, stats, error, diagnostics, atomic, plot: no knowledge of the layers above
//! ```
//!
//! ## Concepts
//! - [`engine`]: virtual time ([`engine::SimTime`], integer microseconds), the
//!   [`engine::EventQueue`] and seeded random streams. It knows nothing of gateways.
//! - [`spec`]: the model file as written ([`spec::ModelSpec`] and its
//!   sections) and its validation into the [`spec::Model`] a run simulates;
//!   sweep and chart specs; [`spec::Override`], a `--set PATH=VALUE` parsed
//!   once, and the dotted paths it and sweep axes patch.
//! - [`config`]: `hcsim import` (an nginx, HAProxy, Envoy, Istio or
//!   Kubernetes config → a model, with warnings naming file:line for what is
//!   not modelled) and `hcsim export` (a model's gateway → config).
//! - [`world`]: the `World` — clients, the gateway's request pipeline (nginx
//!   or HAProxy settings), nodes, faults, and the probes and heartbeats that
//!   policies ask for.
//! - [`policy`]: the [`policy::HealthPolicy`] trait and its implementations:
//!   nginx `max_fails`/`fail_timeout`, active probing (generic, HAProxy,
//!   Envoy, tengine, Kubernetes), heartbeat/TTL registries (generic, Consul,
//!   Nacos 1.x, Eureka), Envoy outlier detection (and Istio's names for it),
//!   a generic ratio ejector, and the Resilience4j, Hystrix and
//!   Finagle/Linkerd breakers; `docs/policies.md` compares them. Several run
//!   at once: a node is routable only if none ejects it.
//! - [`metrics`]: the streaming `Recorder` and the [`metrics::RunSummary`] it
//!   yields; [`metrics::path`], the names of a run's metrics that sweeps,
//!   `hcsim compare`, tune objectives and charts all use.
//! - [`run`]: [`run::Replications`] of a model and what a run would cost.
//! - [`sweep`]: grids of model variants × seeded replications, run in
//!   parallel, checkpointed, sharded across machines; the outputs never depend
//!   on how many threads or machines ran them.
//! - [`output`]: the typed [`output::summary::Summary`] (`summary.json`),
//!   the CSV files, the table, charts and report.html.
//! - [`tune`]: settings recommended from simulation: candidates × scenarios
//!   run through the sweep engine, the Pareto set of those meeting the
//!   constraints, one recommendation, verified on fresh seeds.
//!
//! ## Ordering and seeding contract
//! Events are processed in `(time, insertion sequence)` order, so events at the
//! same instant run first-in first-out. Each run has one seed; every concern
//! (arrivals, service times, faults, gateway, policy, clock phase) draws from
//! its own stream derived from it, so switching the policy leaves the workload
//! unchanged. Nothing reads the wall clock or the OS entropy: the same model
//! and seed give byte-identical output.
//!
//! ## Example
//! ```
//! use hcsim::spec::Model;
//! let doc = serde_json::json!({
//!     "name": "two-nodes", "duration": "20s",
//!     "clients": {"kind": "open", "rate_per_s": 100.0},
//!     "gateway": {"proxy_next_upstream": ["error", "timeout", "http_503"]},
//!     "nodes": [{"name": "a"}, {"name": "b"}],
//!     "faults": [{"kind": "flaky", "node": "a", "p": 0.1}],
//!     "policy": {"kind": "max_fails", "max_fails": 3, "fail_timeout": "5s"}
//! });
//! let model = Model::from_document(&doc, "inline.json".as_ref()).unwrap();
//! let summary = hcsim::world::run(&model, 7);
//! assert_eq!(summary.client.errors, 0); // 503s are retried on b
//! assert!(summary.nodes[0].share < 0.25); // a is ejected most of the time
//! ```

#![warn(unreachable_pub)]

pub mod atomic;
pub mod cli;
pub mod config;
pub mod diagnostics;
pub mod engine;
pub mod error;
pub mod ids;
pub mod metrics;
pub mod output;
pub mod plot;
pub mod policy;
pub mod replay;
pub mod reproduce;
pub mod run;
pub mod spec;
pub mod stats;
pub mod sweep;
pub mod tune;
pub mod world;

pub use error::Error;
