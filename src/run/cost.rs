//! What a run would cost before it starts (requests, events, memory), and
//! the thresholds for warning and refusing: above [`WARN_EVENTS`] events or
//! [`WARN_BYTES`] of memory it is a warning; above [`REFUSE_EVENTS`] or
//! [`REFUSE_BYTES`] it is refused unless the run is capped with
//! `--max-events`, which bounds both (every request in flight took an event).

use crate::spec::{Clients, GatewayFlavor, KERNEL_CONNECT_TIMEOUT, Model};

/// Engine events per client request: arrival, attempt reaching the node,
/// service done, response, and the odd timeout (measured 2.0–6.7, median 4.0,
/// on the shipped models; retries add more). Policies add their own probes
/// and beats ([`crate::policy::PolicySpec::events_per_s`]).
pub const EVENTS_PER_REQUEST: f64 = 6.0;
/// Events one core processes per second, rounded down from the slowest case
/// `scripts/measure-cost.sh` measured (5.9–6.9 million, with 1.7 million
/// requests piling up; 10–32 million otherwise).
pub const EVENTS_PER_SEC: f64 = 5.0e6;
/// Memory per request in flight: its gateway slot and pending events
/// (measured 192 bytes; rounded up).
pub const BYTES_PER_REQUEST_IN_FLIGHT: f64 = 250.0;
/// Memory per timer still pending after its request ended: a client that
/// gave up leaves its attempt's connect or read timeout in the queue until
/// it expires (measured 32 bytes each by `scripts/measure-cost.sh`: 1e5
/// requests/s abandoned into a 200 s connect timeout; doubled, as the
/// queue's lanes grow by doubling).
pub const BYTES_PER_PENDING_TIMER: f64 = 64.0;

/// Estimated events per replication above which a run is announced (~1 min).
pub const WARN_EVENTS: f64 = 3e8;
/// Estimated events per replication above which a run is refused without
/// `--max-events` (~3 h).
pub const REFUSE_EVENTS: f64 = 5e10;
/// Estimated peak memory above which a run is announced.
pub const WARN_BYTES: f64 = 2.0 * GIB;
/// Estimated peak memory above which a run is refused without `--max-events`.
pub const REFUSE_BYTES: f64 = 16.0 * GIB;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// What one replication of a model is expected to cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    /// Client requests sent.
    pub requests: f64,
    /// Engine events (`requests × EVENTS_PER_REQUEST` and the policies' own).
    pub events: f64,
    /// Requests in flight at once if nodes stop answering (an upper bound).
    pub in_flight: f64,
    /// Timers of attempts whose request already ended (a client timeout
    /// shorter than the connect or read timeout), pending at once beyond
    /// the requests in flight.
    pub timers: f64,
    /// Peak memory for those requests and the up-front tables, bytes.
    pub bytes: f64,
    /// The up-front tables alone (timeline, workers, peer state), bytes.
    pub fixed_bytes: f64,
}

impl Cost {
    /// The cost of a replication stopped after `max_events` events: every
    /// request in flight took at least one event, so the cap bounds them too.
    pub fn capped(self, max_events: Option<u64>) -> Cost {
        let Some(cap) = max_events else {
            return self;
        };
        // Every pending timer was scheduled by an event too.
        let in_flight = self.in_flight.min(cap as f64);
        let timers = self.timers.min(cap as f64);
        Cost {
            requests: self.requests.min(cap as f64),
            events: self.events.min(cap as f64),
            in_flight,
            timers,
            bytes: memory(in_flight, timers, self.fixed_bytes),
            fixed_bytes: self.fixed_bytes,
        }
    }

    /// The largest `--max-events` cap whose memory fits in `bytes`.
    fn largest_cap(self, bytes: f64) -> u64 {
        let room = (bytes - self.fixed_bytes).max(0.0);
        // Below both counts, every event may hold a request and a timer.
        let both = BYTES_PER_REQUEST_IN_FLIGHT + BYTES_PER_PENDING_TIMER;
        let (low, low_price, high_price) = if self.timers < self.in_flight {
            (self.timers, both, BYTES_PER_REQUEST_IN_FLIGHT)
        } else {
            (self.in_flight, both, BYTES_PER_PENDING_TIMER)
        };
        let cap = if room <= low * low_price {
            room / low_price
        } else {
            low + (room - low * low_price) / high_price
        };
        cap.floor() as u64
    }
}

/// The memory of `in_flight` requests and `timers` pending timers over the
/// fixed tables.
fn memory(in_flight: f64, timers: f64, fixed: f64) -> f64 {
    in_flight * BYTES_PER_REQUEST_IN_FLIGHT + timers * BYTES_PER_PENDING_TIMER + fixed
}

/// Estimates the cost of one replication from its load.
pub fn estimate(model: &Model) -> Cost {
    let duration_s = model.duration.as_secs_f64();
    let g = &model.gateway;
    let (requests, in_flight, timers) = match &model.clients {
        Clients::Open { rate_per_s, .. } => {
            let usable = model.nodes.iter().filter(|n| !n.down).count().max(1) as f64;
            // `timer`: the longest one attempt's connect or read timeout waits.
            let (tries, attempt_s, timer) = match g.flavor {
                GatewayFlavor::Nginx => (
                    match g.proxy_next_upstream_tries {
                        0 => usable,
                        t => (t as f64).min(usable),
                    },
                    (g.proxy_connect_timeout + g.rtt + g.proxy_read_timeout).as_secs_f64(),
                    g.proxy_connect_timeout
                        .max(g.rtt + g.proxy_read_timeout)
                        .as_secs_f64(),
                ),
                GatewayFlavor::Haproxy => {
                    let h = g.haproxy();
                    let connect = h.timeout_connect.unwrap_or(KERNEL_CONNECT_TIMEOUT);
                    // without `timeout server` an attempt may wait to the end
                    let server = h.timeout_server.unwrap_or(model.duration);
                    // ... but arms no read timer
                    let read = h.timeout_server.map_or(connect, |t| connect.max(g.rtt + t));
                    (
                        h.retries as f64 + 1.0,
                        (connect + g.rtt + server).as_secs_f64(),
                        read.as_secs_f64(),
                    )
                }
                GatewayFlavor::Kong => (
                    g.kong().retries as f64 + 1.0,
                    (g.proxy_connect_timeout + g.rtt + g.proxy_read_timeout).as_secs_f64(),
                    g.proxy_connect_timeout
                        .max(g.rtt + g.proxy_read_timeout)
                        .as_secs_f64(),
                ),
                GatewayFlavor::Linkerd => {
                    let l = g.linkerd();
                    // queued at most `failfast_timeout`; without a response
                    // timeout an attempt may wait to the end
                    let response = l.response_timeout.unwrap_or(model.duration);
                    // without a response timeout no read timer is armed
                    let read = l
                        .response_timeout
                        .map_or(l.connect_timeout, |t| l.connect_timeout.max(g.rtt + t));
                    (
                        1.0,
                        (l.failfast_timeout + l.connect_timeout + g.rtt + response).as_secs_f64(),
                        read.as_secs_f64(),
                    )
                }
                GatewayFlavor::Caddy => {
                    let c = g.caddy();
                    let server = c.response_header_timeout.unwrap_or(model.duration);
                    let tries = if c.lb_try_duration.is_zero() {
                        c.lb_retries as f64 + 1.0
                    } else {
                        // At most one try per interval over the duration.
                        (c.lb_try_duration.as_secs_f64() / c.try_interval().as_secs_f64().max(1e-3))
                            .ceil()
                            .max(c.lb_retries as f64 + 1.0)
                    };
                    let read = c
                        .response_header_timeout
                        .map_or(c.dial_timeout, |t| c.dial_timeout.max(g.rtt + t));
                    (
                        tries,
                        (c.dial_timeout + g.rtt + server).as_secs_f64(),
                        read.as_secs_f64(),
                    )
                }
                GatewayFlavor::Traefik => {
                    let t = g.traefik();
                    let f = &t.forwarding_timeouts;
                    let server = f.response_header_timeout.unwrap_or(model.duration);
                    let read = f
                        .response_header_timeout
                        .map_or(f.dial_timeout, |t| f.dial_timeout.max(g.rtt + t));
                    (
                        t.retry.as_ref().map_or(1.0, |r| r.attempts as f64),
                        (f.dial_timeout + g.rtt + server).as_secs_f64(),
                        read.as_secs_f64(),
                    )
                }
            };
            let mut lifetime_s = tries * attempt_s;
            if let Some(t) = model.clients.timeout() {
                lifetime_s = lifetime_s.min(t.as_secs_f64());
            }
            let in_flight = rate_per_s * lifetime_s.min(duration_s);
            // Each request's attempt arms at most one timer at a time; when
            // its client gives up first, the timer stays until it expires.
            let timers = (rate_per_s * timer.min(duration_s) - in_flight).max(0.0);
            let requests = model
                .clients
                .open_requests(model.duration)
                .unwrap_or(rate_per_s * duration_s);
            (requests, in_flight, timers)
        }
        Clients::Closed {
            concurrency,
            think_time,
            ..
        } => {
            // One cycle: think, connect (one RTT), request and response (one more).
            let service_s = mean_service_s(model);
            let cycle_s =
                (think_time.as_secs_f64() + 2.0 * g.rtt.as_secs_f64() + service_s).max(1e-6);
            let c = *concurrency as f64;
            (c * duration_s / cycle_s, c, 0.0)
        }
    };
    let nodes = model.nodes.len() as f64;
    let rows = (model.duration.as_micros() as f64 / model.bucket.as_micros().max(1) as f64).ceil();
    let workers: f64 = model.nodes.iter().map(|n| n.workers as f64).sum();
    let fixed = rows * (128.0 + 56.0 * nodes)
        + workers * 40.0
        + model.scopes() as f64 * nodes * 64.0 * model.policies.len().max(1) as f64;
    let policy_events: f64 = model
        .policies
        .iter()
        .map(|p| p.events_per_s(model.nodes.len()))
        .sum::<f64>()
        * duration_s;
    Cost {
        requests,
        events: requests * EVENTS_PER_REQUEST + policy_events,
        in_flight,
        timers,
        bytes: memory(in_flight, timers, fixed),
        fixed_bytes: fixed,
    }
}

/// Mean service time over the primary nodes, weighted, seconds.
fn mean_service_s(model: &Model) -> f64 {
    let (mut sum, mut weights) = (0.0, 0.0);
    for n in model.nodes.iter().filter(|n| !n.down && !n.backup) {
        let mean = n.service_time.mean_secs();
        sum += mean * n.weight as f64;
        weights += n.weight as f64;
    }
    if weights > 0.0 { sum / weights } else { 0.0 }
}

/// Checks the estimated cost of a run before it starts. Returns warnings as
/// `(field, message)` (the field is empty: they concern the whole model), or
/// the reason to refuse it. `max_events` is the `--max-events` cap, if any;
/// a cap lifts the refusals, since it bounds both time and memory.
pub fn preflight(model: &Model, max_events: Option<u64>) -> Result<Vec<(String, String)>, String> {
    preflight_within(model, max_events, super::ceiling::memory_ceiling())
}

/// [`preflight`] under `ceiling`, the memory the system still gives the
/// process and what limits it ([`super::ceiling::memory_ceiling`]): below
/// [`REFUSE_BYTES`], a run whose memory passes it is refused too.
pub fn preflight_within(
    model: &Model,
    max_events: Option<u64>,
    ceiling: Option<(f64, &str)>,
) -> Result<Vec<(String, String)>, String> {
    let cost = estimate(model);
    let (limit, what) = match ceiling {
        Some((room, what)) if room < REFUSE_BYTES => (room, what),
        _ => (REFUSE_BYTES, "hcsim runs"),
    };
    let mut warnings = vec![];
    let probes = cost.events - cost.requests * EVENTS_PER_REQUEST;
    let events = format!(
        "about {} events per replication ({} requests × ~{EVENTS_PER_REQUEST} events{}), {} of CPU \
         at ~{} events/s",
        sci(cost.events),
        sci(cost.requests),
        if probes >= 1.0 {
            format!(" + {} from the policies' probes and beats", sci(probes))
        } else {
            String::new()
        },
        human_secs(cost.events / EVENTS_PER_SEC),
        sci(EVENTS_PER_SEC)
    );
    let memory = pile_up(&cost, "");
    match max_events {
        None if cost.events > REFUSE_EVENTS => {
            return Err(format!(
                "{events}: shorten `duration`, lower the load, or cap the run with --max-events N"
            ));
        }
        None if cost.bytes > REFUSE_BYTES => {
            return Err(format!(
                "{memory}: lower the load or the timeouts, or cap the run with --max-events N"
            ));
        }
        None if cost.bytes > limit => {
            return Err(format!(
                "{memory}, more than the {} {what}: lower the load or the timeouts, or cap the \
                 run with --max-events {} or less",
                human_bytes(limit),
                cost.largest_cap(limit)
            ));
        }
        Some(cap) if cost.capped(max_events).bytes > limit => {
            let capped = cost.capped(max_events);
            // Past hcsim's own bound the message is the same on every machine.
            let (limit, what) = if capped.bytes > REFUSE_BYTES {
                (REFUSE_BYTES, "hcsim runs")
            } else {
                (limit, what)
            };
            let timers = if capped.timers >= 1.0 {
                format!(" and {} timers be pending", sci(capped.timers))
            } else {
                String::new()
            };
            return Err(format!(
                "{memory}; --max-events {cap} still lets {} requests be in flight{timers}, about \
                 {}, more than the {} {what}: lower the load or the timeouts, or cap the run \
                 with --max-events {} or less",
                sci(capped.in_flight),
                human_bytes(capped.bytes),
                human_bytes(limit),
                cost.largest_cap(limit)
            ));
        }
        Some(cap) if cost.events > cap as f64 => warnings.push((
            String::new(),
            format!("{events}: the run will probably stop at --max-events {cap}"),
        )),
        _ => {}
    }
    if cost.events > WARN_EVENTS && max_events.is_none_or(|cap| cost.events <= cap as f64) {
        warnings.push((String::new(), events));
    }
    let capped = cost.capped(max_events);
    if capped.bytes > WARN_BYTES {
        let within = if max_events.is_some() {
            ", within --max-events"
        } else {
            ""
        };
        warnings.push((String::new(), pile_up(&capped, within)));
    }
    Ok(warnings)
}

/// What may pile up if nodes stop answering: the requests in flight and,
/// when clients give up before the gateway's timeouts, the timers their
/// attempts leave pending; `within` qualifies the requests' bound.
fn pile_up(c: &Cost, within: &str) -> String {
    let timers = if c.timers >= 1.0 {
        format!(
            ", and {} timers of attempts whose clients gave up stay pending (the load × the \
             connect or read timeout)",
            sci(c.timers)
        )
    } else {
        String::new()
    };
    format!(
        "if nodes stop answering, up to {} requests can be in flight at once (the load × the \
         time a request may wait{within}){timers}, about {}",
        sci(c.in_flight),
        human_bytes(c.bytes)
    )
}

/// `3.2e10`, or a plain integer below a million.
fn sci(x: f64) -> String {
    if x < 1e6 {
        format!("{}", x.round() as u64)
    } else {
        format!("{x:.1e}")
    }
}

/// The whole of `reps` replications run `threads` at a time, when it is
/// worth a word (more than [`WARN_EVENTS`] events in all): their events, CPU
/// and wall time, and the memory of the replications in flight together.
pub fn replications_note(
    model: &Model,
    reps: u64,
    threads: usize,
    max_events: Option<u64>,
) -> Option<String> {
    let one = estimate(model).capped(max_events);
    let events = one.events * reps as f64;
    if reps < 2 || events <= WARN_EVENTS {
        return None;
    }
    let together = threads.clamp(1, reps as usize) as f64;
    let cpu = events / EVENTS_PER_SEC;
    Some(format!(
        "{reps} replications: about {} events in all, {} of CPU ({} on {} thread(s)), \
         about {} of memory while {} run together",
        sci(events),
        human_secs(cpu),
        human_secs(cpu / together),
        together as u64,
        human_bytes(one.bytes * together),
        together as u64
    ))
}

fn human_secs(s: f64) -> String {
    if s < 120.0 {
        format!("~{} s", s.ceil() as u64)
    } else if s < 7200.0 {
        format!("~{} min", (s / 60.0).round() as u64)
    } else {
        format!("~{} h", (s / 3600.0).round() as u64)
    }
}

fn human_bytes(b: f64) -> String {
    if b >= GIB {
        format!("{:.1} GiB", b / GIB)
    } else {
        format!("{} MiB", (b / 1024.0 / 1024.0).ceil() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    /// The checks on their own, whatever this machine's memory.
    fn preflight(model: &Model, max_events: Option<u64>) -> Result<Vec<(String, String)>, String> {
        preflight_within(model, max_events, None)
    }

    fn model_of(clients: serde_json::Value, duration: &str) -> Model {
        let doc = json!({
            "name": "t", "duration": duration, "clients": clients,
            "nodes": [{"name": "a"}, {"name": "b"}]
        });
        Model::from_document(&doc, Path::new("m.json")).unwrap()
    }

    #[test]
    fn estimates_scale_with_load() {
        let model = model_of(json!({"kind": "open", "rate_per_s": 1000.0}), "10s");
        let c = estimate(&model);
        assert_eq!(c.requests, 10_000.0);
        assert_eq!(c.events, 60_000.0);
        // no client timeout: two tries of 60s + 0.2ms + 60s, cut at the run's 10 s
        assert_eq!(c.in_flight, 10_000.0);
        let model = model_of(
            json!({"kind": "closed", "concurrency": 2, "think_time": "95ms"}),
            "10s",
        );
        // cycle = 95ms + 2 × 0.2ms + 5ms = 100.4ms
        let c = estimate(&model);
        assert!((c.requests - 2.0 * 10.0 / 0.1004).abs() < 1e-6, "{c:?}");
        assert_eq!(c.in_flight, 2.0);
    }

    #[test]
    fn refuses_hours_unless_capped_and_warns_minutes() {
        let model = model_of(json!({"kind": "open", "rate_per_s": 1e6}), "3h");
        let e = preflight(&model, None).unwrap_err();
        assert!(
            e.starts_with("about 6.5e10 events per replication (1.1e10 requests"),
            "{e}"
        );
        assert!(e.contains("~4 h of CPU at ~5.0e6 events/s"), "{e}");
        assert!(e.ends_with("cap the run with --max-events N"), "{e}");
        let w = preflight(&model, Some(1_000_000)).unwrap();
        assert!(
            w[0].1
                .ends_with("will probably stop at --max-events 1000000"),
            "{w:?}"
        );
        let model = model_of(json!({"kind": "open", "rate_per_s": 1e5}), "10m");
        let w = preflight(&model, None).unwrap();
        assert!(
            w.iter().any(|(_, m)| m.starts_with("about 3.6e8 events")),
            "{w:?}"
        );
        let model = model_of(json!({"kind": "open", "rate_per_s": 100.0}), "10m");
        assert_eq!(preflight(&model, None).unwrap(), vec![]);
    }

    #[test]
    fn counts_the_events_of_probes() {
        let doc = json!({
            "name": "t", "duration": "1h",
            "clients": {"kind": "open", "rate_per_s": 1.0},
            "nodes": (0..1000).map(|i| json!({"name": format!("n{i}")})).collect::<Vec<_>>(),
            "policy": {"kind": "active_probe", "flavor": "generic", "interval": "10ms", "timeout": "5ms"}
        });
        let model = Model::from_document(&doc, Path::new("m.json")).unwrap();
        // 1000 nodes × 100 probes/s × 4 events × 3600 s
        let c = estimate(&model);
        assert_eq!(c.events, 3600.0 * 6.0 + 1.44e9);
        let w = preflight(&model, None).unwrap();
        assert!(
            w[0].1.starts_with(
                "about 1.4e9 events per replication (3600 requests × ~6 events + 1.4e9 from \
                 the policies' probes and beats)"
            ),
            "{w:?}"
        );
    }

    #[test]
    fn refuses_a_pile_up_that_cannot_fit_in_memory() {
        // 1e7 rps that may wait 2 × 120 s for answers: 1e8 in flight by the end of a 10 s run
        let model = model_of(json!({"kind": "open", "rate_per_s": 1e7}), "10s");
        let e = preflight(&model, None).unwrap_err();
        assert!(
            e.starts_with("if nodes stop answering, up to 1.0e8 requests can be in flight"),
            "{e}"
        );
        assert!(preflight(&model, Some(1_000_000)).is_ok());
        // a cap does not lift the refusal when it still lets the pile-up through
        let e = preflight(&model, Some(100_000_000)).unwrap_err();
        assert!(
            e.contains("--max-events 100000000 still lets 1.0e8 requests be in flight"),
            "{e}"
        );
        assert!(
            e.contains("with --max-events 687") && e.ends_with(" or less"),
            "{e}"
        );
        // a 1 s client timeout bounds the pile-up to 1e7 requests: a warning only
        let model = model_of(
            json!({"kind": "open", "rate_per_s": 1e7, "timeout": "1s"}),
            "2s",
        );
        let w = preflight(&model, None).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].1.contains("up to 1.0e7 requests"), "{w:?}");
    }

    /// A partitioned upstream with a long connect timeout and clients that
    /// give up first: their attempts' timers stay in the queue after them.
    fn abandoned(rate: f64, connect: &str, duration: &str) -> Model {
        let doc = json!({
            "name": "t", "duration": duration,
            "clients": {"kind": "open", "rate_per_s": rate, "timeout": "1s"},
            "gateway": {"proxy_connect_timeout": connect},
            "nodes": [{"name": "a"}, {"name": "b"}],
            "faults": [{"kind": "partition", "node": "a"}, {"kind": "partition", "node": "b"}]
        });
        Model::from_document(&doc, Path::new("m.json")).unwrap()
    }

    #[test]
    fn counts_the_timers_that_outlive_abandoned_requests() {
        // 10⁶ requests/s give up after 1 s; each leaves a 200 s connect
        // timeout pending: 2×10⁸ timers, not the 10⁶ requests in flight.
        let c = estimate(&abandoned(1e6, "200s", "10m"));
        assert_eq!(c.in_flight, 1e6);
        assert_eq!(c.timers, 2e8 - 1e6);
        let w = preflight(&abandoned(1e6, "200s", "10m"), None).unwrap();
        let memory = w
            .iter()
            .find(|(_, m)| m.starts_with("if nodes stop answering"))
            .unwrap_or_else(|| panic!("no memory warning: {w:?}"));
        assert!(
            memory.1.contains(
                "up to 1.0e6 requests can be in flight at once (the load × the time a request \
                 may wait), and 2.0e8 timers of attempts whose clients gave up stay pending"
            ) && memory.1.ends_with("about 12.1 GiB"),
            "{memory:?}"
        );
        // Twice the load does not fit: refused before anything is allocated.
        let e = preflight(&abandoned(2e6, "200s", "10m"), None).unwrap_err();
        assert!(
            e.contains("and 4.0e8 timers") && e.contains("24.2 GiB"),
            "{e}"
        );
        // A cap bounds the timers too (each was scheduled by an event).
        let capped = estimate(&abandoned(2e6, "200s", "10m")).capped(Some(1_000_000));
        assert_eq!(capped.timers, 1e6);
        let e = preflight(&abandoned(2e6, "200s", "10m"), Some(300_000_000)).unwrap_err();
        let most: u64 = e
            .rsplit("--max-events ")
            .next()
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{e}"));
        assert!(
            preflight(&abandoned(2e6, "200s", "10m"), Some(most)).is_ok(),
            "--max-events {most} is said to fit"
        );
        assert!(preflight(&abandoned(2e6, "200s", "10m"), Some(most + 1000)).is_err());
        // A hung node arms the read timeout instead: 60 s by default.
        let c = estimate(&abandoned(1e6, "500ms", "10m"));
        assert_eq!(c.timers, 1e6 * 60.0002 - 1e6);
        // Timeouts shorter than the client's leave no timer behind.
        let mut quick = abandoned(1e6, "500ms", "10m");
        quick.gateway.proxy_read_timeout = crate::engine::SimDuration::from_millis(500);
        assert_eq!(estimate(&quick).timers, 0.0);
    }

    #[test]
    fn refuses_what_passes_the_memory_the_system_gives() {
        // 10⁶ requests/s into a partition with a 200 s connect timeout: about
        // 12.1 GiB, under the 16 GiB hcsim runs, but not under a 4 GiB limit.
        let m = abandoned(1e6, "200s", "10m");
        let room = Some((4.0 * GIB, "this process may take (ulimit -v)"));
        let e = preflight_within(&m, None, room).unwrap_err();
        assert!(
            e.contains("about 12.1 GiB, more than the 4.0 GiB this process may take (ulimit -v)")
                && e.contains("cap the run with --max-events"),
            "{e}"
        );
        let most: u64 = e
            .rsplit("--max-events ")
            .next()
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{e}"));
        assert!(preflight_within(&m, Some(most), room).is_ok());
        assert!(preflight_within(&m, Some(most + 1000), room).is_err());
        // Past the 16 GiB hcsim runs, the message does not depend on the machine.
        let capped = Some(300_000_000);
        assert_eq!(
            preflight_within(&abandoned(2e6, "200s", "10m"), capped, room),
            preflight(&abandoned(2e6, "200s", "10m"), capped)
        );
        // Room enough: the warning as before; a ceiling above 16 GiB changes nothing.
        assert!(preflight_within(&m, None, Some((13.0 * GIB, "x"))).is_ok());
        let big = abandoned(2e6, "200s", "10m");
        assert_eq!(
            preflight_within(&big, None, Some((64.0 * GIB, "x"))),
            preflight(&big, None)
        );
    }
}
