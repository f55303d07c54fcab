//! From what the log says to what happened: the workload (the arrival
//! rate over time, constant or Poisson spacing, the clients' timeout and
//! method), each node's service time, its faults as time windows of
//! hcsim's fault kinds, and the gateway's ejections.
//!
//! - refused connects → `crash`; connect timeouts → `partition`; attempts
//!   that waited for the node (read timeouts, answers or client give-ups
//!   after [`STALL_MIN_S`](super::collect::STALL_MIN_S) and 20× its median)
//!   → `hang`; resets → `flaky` with `error: reset`; 5xx answers →
//!   `flaky` with their rate per window (binary segmentation of the
//!   node's bins, binomial likelihood, a BIC-like penalty); answers
//!   [`SLOW_RATIO`] × slower than the node's median → `slow`.
//! - Censoring: while the gateway sent a node nothing, its behaviour is
//!   unknown. A fault's start lies between the end of the last answer
//!   before its first failure and that failure; its end between its last
//!   failure and the first answer after (or the end of the log). Both are
//!   kept as a [`Bound`]; the model takes the middle, and the shortest and
//!   longest faults the log allows are replayed too.
//! - Ejections: HAProxy's `is DOWN`/`is UP` lines when the log has them;
//!   else the gaps in a node's attempts right after a failure that are too
//!   long for its share of the traffic (at least [`GAP_ATTEMPTS`]
//!   attempts' worth), chained while the attempt ending a gap fails again
//!   (nginx's one probe per `fail_timeout`), confirmed by nginx's error
//!   log's "upstream server temporarily disabled" lines when given.

use super::chain::Outcome;
use super::collect::{NodeBin, NodeTrack};
use super::scan::Scan;
use crate::spec::{Arrivals, LatencySpec, Method};
use serde::Serialize;

/// Answers this many times slower than a node's median make a slow window.
pub const SLOW_RATIO: f64 = 3.0;
/// A gap is an ejection if the node would have had this many attempts in it.
pub const GAP_ATTEMPTS: f64 = 5.0;

/// An instant the log pins down only to an interval (seconds since t = 0).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Bound {
    pub lo: f64,
    pub hi: f64,
}

impl Bound {
    pub fn exact(t: f64) -> Bound {
        Bound { lo: t, hi: t }
    }
    pub fn mid(&self) -> f64 {
        (self.lo + self.hi) / 2.0
    }
    pub fn width(&self) -> f64 {
        self.hi - self.lo
    }
}

/// What a node did in a fault window, as hcsim's fault kinds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Behaviour {
    Crash,
    Partition,
    Hang,
    Flaky { p: f64, status: u16, reset: bool },
    Slow { factor: f64 },
}

/// One inferred fault.
#[derive(Clone, Debug, Serialize)]
pub struct FaultWindow {
    pub node: String,
    #[serde(flatten)]
    pub behaviour: Behaviour,
    pub start: Bound,
    /// `None`: still going at the end of the log.
    pub end: Option<Bound>,
    /// What in the log shows it.
    pub evidence: String,
}

/// An ejection the log shows.
#[derive(Clone, Debug, Serialize)]
pub struct Episode {
    pub node: String,
    pub start_s: f64,
    pub end_s: Option<f64>,
    /// `gap` (no traffic after a failure), `error_log`, `haproxy` (DOWN/UP lines).
    pub source: &'static str,
}

/// The clients' load.
#[derive(Clone, Debug, Serialize)]
pub struct Workload {
    pub requests: u64,
    /// Before the first step.
    pub rate_per_s: f64,
    /// (from, rate) steps, seconds since t = 0; the last is the drain (rate 0).
    pub schedule: Vec<(f64, f64)>,
    #[serde(serialize_with = "arrivals_name")]
    pub arrivals: Arrivals,
    /// Variance over mean of the arrivals per bin (1 for Poisson, 0 for constant spacing).
    pub dispersion: f64,
    pub timeout_s: Option<f64>,
    #[serde(serialize_with = "method_name")]
    pub method: Method,
    /// Share of requests with another method than `method`.
    pub other_methods: f64,
    /// Seconds: the last arrival, and the run's end (after a drain).
    pub arrivals_end_s: f64,
    pub duration_s: f64,
}

fn arrivals_name<S: serde::Serializer>(a: &Arrivals, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match a {
        Arrivals::Constant => "constant",
        Arrivals::Poisson => "poisson",
    })
}

fn method_name<S: serde::Serializer>(m: &Method, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(m, s)
}

/// A node's steady behaviour.
#[derive(Clone, Debug, Serialize)]
pub struct NodeInfo {
    pub name: String,
    pub attempts: u64,
    pub answered_2xx: u64,
    /// Answer latency quantiles, ms.
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub service_time: LatencySpec,
}

/// Everything inferred.
#[derive(Clone, Debug, Serialize)]
pub struct Inference {
    pub workload: Workload,
    pub nodes: Vec<NodeInfo>,
    pub faults: Vec<FaultWindow>,
    pub episodes: Vec<Episode>,
}

/// Poisson log-likelihood of `c` events over `t` (up to a constant).
fn pois_ll(c: f64, t: f64) -> f64 {
    if c <= 0.0 || t <= 0.0 {
        0.0
    } else {
        c * (c / t).ln() - c
    }
}

/// Binomial log-likelihood of `k` of `n` (up to a constant).
fn binom_ll(k: f64, n: f64) -> f64 {
    let mut ll = 0.0;
    if k > 0.0 {
        ll += k * (k / n).ln();
    }
    if n - k > 0.0 {
        ll += (n - k) * ((n - k) / n).ln();
    }
    ll
}

/// Binary segmentation of a series of bins: splits `[lo, hi)` where the
/// gain in log-likelihood beats `penalty`, at most `depth` levels deep.
fn segment(
    lo: usize,
    hi: usize,
    ll: &dyn Fn(usize, usize) -> f64,
    penalty: f64,
    depth: u32,
    out: &mut Vec<usize>,
) {
    if depth == 0 || hi - lo < 2 {
        return;
    }
    let whole = ll(lo, hi);
    let mut best = (0.0, lo);
    for m in lo + 1..hi {
        let g = ll(lo, m) + ll(m, hi) - whole;
        if g > best.0 {
            best = (g, m);
        }
    }
    if best.0 > penalty {
        segment(lo, best.1, ll, penalty, depth - 1, out);
        out.push(best.1);
        segment(best.1, hi, ll, penalty, depth - 1, out);
    }
}

/// Cuts of a series into segments (bin indices), with a prefix sum over
/// `value` for each of two counts.
fn cuts(n: usize, penalty: f64, ll: &dyn Fn(usize, usize) -> f64) -> Vec<usize> {
    let mut out = vec![0];
    segment(0, n, ll, penalty, 6, &mut out);
    out.push(n);
    out
}

fn prefix(xs: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut p = vec![0.0];
    for x in xs {
        let last = *p.last().expect("non-empty");
        p.push(last + x);
    }
    p
}

/// The workload of the scan.
fn workload(s: &Scan) -> Workload {
    let c = &s.client;
    let w = s.collector.width;
    let n = c.requests;
    let last = c.last_start.max(0.0);
    let nb = ((last / w).floor() as usize + 1)
        .min(s.collector.global.len())
        .max(1);
    let counts: Vec<f64> = (0..nb)
        .map(|i| s.collector.global.get(i).map_or(0.0, |b| b.arrivals as f64))
        .collect();
    let pc = prefix(counts.iter().copied());
    let span = |a: usize, b: usize| {
        // the last bin only up to the last arrival
        let hi = if b == nb {
            last.max(w * (nb - 1) as f64) + 1e-3
        } else {
            b as f64 * w
        };
        (hi - a as f64 * w).max(w * 0.5)
    };
    let ll = |a: usize, b: usize| pois_ll(pc[b] - pc[a], span(a, b));
    let penalty = 8.0 + 2.0 * (n.max(2) as f64).ln();
    let cut = cuts(nb, penalty, &ll);
    // Dispersion of the bins inside each segment (the last bin is partial).
    let (mut num, mut den) = (0.0, 0.0);
    for seg in cut.windows(2) {
        let (a, b) = (seg[0], seg[1].min(nb.saturating_sub(1)).max(seg[0]));
        if b <= a + 1 {
            continue;
        }
        let mean = (pc[b] - pc[a]) / (b - a) as f64;
        if mean <= 0.0 {
            continue;
        }
        for x in &counts[a..b] {
            num += (x - mean).powi(2) / mean;
            den += 1.0;
        }
    }
    let dispersion = if den > 1.0 { num / (den - 1.0) } else { 1.0 };
    let arrivals = if dispersion < 0.3 && n >= 10 {
        Arrivals::Constant
    } else {
        Arrivals::Poisson
    };
    let mut steps: Vec<(f64, f64)> = cut
        .windows(2)
        .map(|seg| {
            (
                seg[0] as f64 * w,
                (pc[seg[1]] - pc[seg[0]]) / span(seg[0], seg[1]),
            )
        })
        .collect();
    if steps.len() == 1 && n > 1 && last > 0.0 {
        // One rate: (n - 1) gaps from the first arrival to the last.
        steps[0].1 = (n - 1) as f64 / last;
    }
    let rate = steps.first().map_or(1.0, |s| s.1).max(1e-6);
    let last_rate = steps.last().map_or(rate, |s| s.1).max(1e-6);
    let arrivals_end = last + 0.5 / last_rate;
    let longest = c.latency.max_us().map_or(0.0, |us| us as f64 / 1e6);
    let drain = longest.clamp(1.0, 120.0) + 0.5;
    let duration = ((arrivals_end + drain) * 10.0).ceil() / 10.0;
    let mut schedule: Vec<(f64, f64)> = steps.into_iter().skip(1).collect();
    schedule.push((arrivals_end, 0.0));
    let timeout_s = {
        let g = &c.gave_up;
        match (g.quantile_us(0.1), g.quantile_us(0.5), g.quantile_us(0.9)) {
            (Some(p10), Some(p50), Some(p90)) if g.count() >= 3 && p10 >= 0.9 * p90 => {
                Some((p50 / 1000.0).round() / 1000.0)
            }
            _ => None,
        }
    };
    let (method, top) = c
        .methods
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(m, n)| (m.clone(), *n))
        .unwrap_or(("GET".into(), 0));
    let method = serde_json::from_value(serde_json::json!(method)).unwrap_or(Method::Get);
    Workload {
        requests: n,
        rate_per_s: rate,
        schedule,
        arrivals,
        dispersion,
        timeout_s,
        method,
        other_methods: if n > 0 {
            1.0 - top as f64 / n as f64
        } else {
            0.0
        },
        arrivals_end_s: arrivals_end,
        duration_s: duration,
    }
}

/// A node's service time from its answers' latencies (less the round trip).
fn service(t: &NodeTrack, rtt_ms: f64) -> (Option<f64>, Option<f64>, LatencySpec) {
    let q = |x| t.latency.quantile_us(x).map(|us| us / 1000.0);
    let (p50, p90) = (q(0.5), q(0.9));
    let ms = |x: f64| {
        crate::engine::SimDuration::from_micros(((x - rtt_ms).max(0.05) * 1000.0).round() as u64)
    };
    let spec = match (p50, p90) {
        (Some(a), Some(b)) if b > 1.1 * a && a > rtt_ms => LatencySpec::Lognormal {
            median: ms(a),
            sigma: (((b - rtt_ms) / (a - rtt_ms)).ln() / 1.2816).clamp(0.01, 3.0),
        },
        (Some(a), _) => LatencySpec::Constant { value: ms(a) },
        _ => LatencySpec::Constant {
            value: crate::engine::SimDuration::from_millis(5),
        },
    };
    (p50, p90, spec)
}

fn hard_faults(
    name: &str,
    t: &NodeTrack,
    end_of_log: f64,
    check_every: Option<f64>,
    out: &mut Vec<FaultWindow>,
) {
    for (k, r) in t.runs.iter().enumerate() {
        // A reset right before refused connects is the crash killing a
        // request in flight (a crash resets those itself).
        if r.kind == Outcome::Reset
            && t.runs
                .get(k + 1)
                .is_some_and(|n| n.kind == Outcome::Refused && n.first - r.last < 0.5)
        {
            continue;
        }
        // A periodic check (HAProxy's `downinter`, else `inter`) that
        // first succeeded at `a` failed one interval before: failed
        // checks of a server already down are not logged.
        let after_lo = match (r.after, check_every) {
            (Some(a), Some(every))
                if t.checks
                    .iter()
                    .any(|&(at, o)| at == a && matches!(o, Outcome::Answered(_))) =>
            {
                (a - every).max(r.last)
            }
            _ => r.last,
        };
        let behaviour = match r.kind {
            Outcome::Refused => Behaviour::Crash,
            Outcome::ConnectTimeout => Behaviour::Partition,
            _ => Behaviour::Flaky {
                p: 1.0,
                status: 502,
                reset: true,
            },
        };
        let what = match r.kind {
            Outcome::Refused => "refused connect",
            Outcome::ConnectTimeout => "connect timeout",
            _ => "reset",
        };
        out.push(FaultWindow {
            node: name.to_string(),
            behaviour,
            start: Bound {
                lo: r.before.unwrap_or(0.0).min(r.first),
                hi: r.first,
            },
            end: r.after.map(|a| Bound {
                lo: after_lo.min(a),
                hi: a.min(end_of_log),
            }),
            evidence: format!(
                "{} {what}{} from {:.3} s to {:.3} s",
                r.n,
                if r.n == 1 { "" } else { "s" },
                r.first,
                r.last
            ),
        });
    }
    for s in &t.stalls {
        if s.n < 2 && s.answered == s.n {
            continue; // one slow answer
        }
        let end = if s.answered > 0 {
            Some(Bound::exact(s.release_lo))
        } else {
            s.after.map(|a| Bound {
                lo: s.to.min(a),
                hi: a.min(end_of_log),
            })
        };
        out.push(FaultWindow {
            node: name.to_string(),
            behaviour: Behaviour::Hang,
            start: Bound {
                lo: s.before.unwrap_or(0.0).min(s.from),
                hi: s.from,
            },
            end,
            evidence: format!(
                "{} attempt(s) waited from {:.3} s ({} answered{})",
                s.n,
                s.from,
                s.answered,
                if s.answered > 0 {
                    format!(", all released from {:.3} s", s.release_lo)
                } else {
                    String::new()
                }
            ),
        });
    }
}

/// `[a, b)` in seconds of a bin range.
fn covered(faults: &[FaultWindow], node: &str, t: f64) -> bool {
    faults
        .iter()
        .any(|f| f.node == node && t >= f.start.lo && f.end.is_none_or(|e| t <= e.hi))
}

fn soft_faults(
    name: &str,
    t: &NodeTrack,
    width: f64,
    hard: &[FaultWindow],
    ejections: &[Episode],
    out: &mut Vec<FaultWindow>,
) {
    let bins = &t.bins;
    let n = bins.len();
    if n == 0 {
        return;
    }
    let pn = prefix(bins.iter().map(|b| b.answered as f64));
    let pk = prefix(bins.iter().map(|b| b.errors() as f64));
    let ll = |a: usize, b: usize| {
        let (k, m) = (pk[b] - pk[a], pn[b] - pn[a]);
        if m > 0.0 { binom_ll(k, m) } else { 0.0 }
    };
    let penalty = 4.0 + 1.5 * (pn[n].max(2.0)).ln();
    let cut = cuts(n, penalty, &ll);
    for seg in cut.windows(2) {
        let (a, b) = (seg[0], seg[1]);
        let (k, m) = (pk[b] - pk[a], pn[b] - pn[a]);
        if m <= 0.0 || k < 3.0 || k / m < 0.01 {
            continue;
        }
        let mut by = [0u32; 5];
        for x in &bins[a..b] {
            for (i, c) in x.s5xx.iter().enumerate() {
                by[i] += c;
            }
        }
        let top = (0..5).max_by_key(|&i| by[i]).unwrap_or(2);
        let status = [500, 502, 503, 504, 500][top];
        let (from, to) = (a as f64 * width, b as f64 * width);
        // Each ejection stopped the node's sampling on a failure: the
        // answers are an inverse binomial sample, whose k/m overstates p.
        // Haldane's unbiased estimator (r-1)/(m-1) for sampling until r
        // failures, applied once per stopping (ejection) in the window.
        let e = ejections
            .iter()
            .filter(|x| x.start_s >= from - width && x.start_s < to)
            .count() as f64;
        let p = if e > 0.0 && k - e >= 1.0 && m - e > 0.0 {
            (k - e) / (m - e)
        } else {
            k / m
        };
        out.push(FaultWindow {
            node: name.to_string(),
            behaviour: Behaviour::Flaky {
                p: (p * 1e4).round() / 1e4,
                status,
                reset: false,
            },
            start: Bound::exact(from),
            end: (b < n).then(|| Bound::exact(to)),
            evidence: format!(
                "{k} of {m} answers were 5xx from {from:.1} s to {to:.1} s{}",
                if e > 0.0 {
                    format!(", {e} of them ending an ejection's sampling")
                } else {
                    String::new()
                }
            ),
        });
    }
    // Slow windows: bins whose answers are SLOW_RATIO × the median, outside hard windows.
    let Some(median) = t.latency.quantile_us(0.5).map(|us| us / 1e6) else {
        return;
    };
    let ratio = |x: &NodeBin| (x.ln_n >= 3).then(|| (x.ln_sum / x.ln_n as f64).exp() / median);
    let mut i = 0;
    while i < n {
        let slow = |j: usize| {
            ratio(&bins[j]).is_some_and(|r| r >= SLOW_RATIO)
                && !covered(hard, name, j as f64 * width)
        };
        if !slow(i) {
            i += 1;
            continue;
        }
        let mut j = i;
        let (mut sum, mut cnt) = (0.0, 0.0);
        while j < n && (slow(j) || bins[j].ln_n < 3) {
            if let Some(r) = ratio(&bins[j]) {
                sum += r * bins[j].ln_n as f64;
                cnt += bins[j].ln_n as f64;
            }
            j += 1;
        }
        if cnt >= 5.0 {
            out.push(FaultWindow {
                node: name.to_string(),
                behaviour: Behaviour::Slow {
                    factor: (sum / cnt * 100.0).round() / 100.0,
                },
                start: Bound::exact(i as f64 * width),
                end: (j < n).then(|| Bound::exact(j as f64 * width)),
                evidence: format!(
                    "{cnt} answers {:.1}× slower than the median from {:.1} s",
                    sum / cnt,
                    i as f64 * width
                ),
            });
        }
        i = j;
    }
}

/// The node's share of the arrivals while it was healthy.
fn healthy_share(s: &Scan, t: &NodeTrack) -> f64 {
    let (mut mine, mut all) = (0.0, 0.0);
    for (i, b) in t.bins.iter().enumerate() {
        if b.attempts > 0 && b.hard == 0 && b.stalled == 0 && b.errors() == 0 {
            mine += b.attempts as f64;
            all += s.collector.global.get(i).map_or(0.0, |g| g.arrivals as f64);
        }
    }
    if all > 0.0 {
        (mine / all).min(1.0)
    } else {
        0.0
    }
}

/// Arrivals expected in `[a, b)` seconds from the global bins.
fn arrivals_in(s: &Scan, a: f64, b: f64) -> f64 {
    let w = s.collector.width;
    let mut total = 0.0;
    let (i0, i1) = (
        (a / w).floor().max(0.0) as usize,
        (b / w).ceil().max(0.0) as usize,
    );
    for i in i0..i1.min(s.collector.global.len()) {
        let (lo, hi) = (i as f64 * w, (i + 1) as f64 * w);
        let overlap = (hi.min(b) - lo.max(a)).max(0.0) / w;
        total += overlap * s.collector.global[i].arrivals as f64;
    }
    total
}

fn episodes(s: &Scan, name: &str, t: &NodeTrack, disabled: &[f64], out: &mut Vec<Episode>) {
    if !t.states.is_empty() {
        let mut open: Option<f64> = None;
        for &(at, up) in &t.states {
            match (up, open) {
                (false, None) => open = Some(at),
                (true, Some(st)) => {
                    out.push(Episode {
                        node: name.into(),
                        start_s: st,
                        end_s: Some(at),
                        source: "haproxy",
                    });
                    open = None;
                }
                _ => {}
            }
        }
        if let Some(st) = open {
            out.push(Episode {
                node: name.into(),
                start_s: st,
                end_s: None,
                source: "haproxy",
            });
        }
        return;
    }
    let share = healthy_share(s, t);
    let mut cur: Option<(f64, f64)> = None;
    let mut mine = vec![];
    for g in &t.gaps {
        let expected = share * arrivals_in(s, g.from, g.to);
        let ejected = g.after_failure && expected >= GAP_ATTEMPTS;
        if !ejected {
            continue;
        }
        cur = match cur {
            Some((st, _)) => Some((st, g.to)),
            None => Some((g.from, g.to)),
        };
        if g.ended_by_answer {
            let (st, en) = cur.take().expect("set above");
            mine.push(Episode {
                node: name.into(),
                start_s: st,
                end_s: Some(en),
                source: "gap",
            });
        }
    }
    if let Some((st, en)) = cur {
        mine.push(Episode {
            node: name.into(),
            start_s: st,
            end_s: Some(en),
            source: "gap",
        });
    }
    // The error log's lines confirm the gaps, or add the episodes it names alone.
    for &d in disabled {
        let near = mine
            .iter_mut()
            .find(|e| d >= e.start_s - 1.5 && e.end_s.is_none_or(|x| d <= x + 1.0));
        match near {
            Some(e) => e.source = "error_log",
            None => mine.push(Episode {
                node: name.into(),
                start_s: d,
                end_s: None,
                source: "error_log",
            }),
        }
    }
    mine.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    out.extend(mine);
}

/// Infers everything from a scan. `disabled` are the error log's
/// "temporarily disabled" times per node (seconds since t = 0);
/// `check_every` the interval of the logged health checks of a server that
/// is down (HAProxy's `downinter`, else `inter`).
pub fn infer(s: &Scan, rtt_ms: f64, disabled: &[Vec<f64>], check_every: Option<f64>) -> Inference {
    let workload = workload(s);
    let end_of_log = s.client.last_end;
    let mut nodes = vec![];
    let mut faults = vec![];
    let mut eps = vec![];
    for (i, name) in s.servers.names.iter().enumerate() {
        let t = &s.collector.nodes[i];
        let (p50, p90, spec) = service(t, rtt_ms);
        nodes.push(NodeInfo {
            name: name.clone(),
            attempts: t.attempts,
            answered_2xx: t.answered_2xx,
            p50_ms: p50,
            p90_ms: p90,
            service_time: spec,
        });
        let mut mine = vec![];
        hard_faults(name, t, end_of_log, check_every, &mut mine);
        let hard = mine.clone();
        let mut ej = vec![];
        episodes(
            s,
            name,
            t,
            disabled.get(i).map_or(&[], Vec::as_slice),
            &mut ej,
        );
        soft_faults(name, t, s.collector.width, &hard, &ej, &mut mine);
        faults.extend(mine);
        eps.extend(ej);
    }
    faults.sort_by(|a, b| a.start.hi.total_cmp(&b.start.hi).then(a.node.cmp(&b.node)));
    Inference {
        workload,
        nodes,
        faults,
        episodes: eps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segmentation_finds_a_change_of_rate_and_nothing_in_noise() {
        let counts: Vec<f64> = (0..100).map(|i| if i < 60 { 4.0 } else { 12.0 }).collect();
        let p = prefix(counts.iter().copied());
        let ll = |a: usize, b: usize| pois_ll(p[b] - p[a], (b - a) as f64);
        assert_eq!(cuts(100, 20.0, &ll), vec![0, 60, 100]);
        let flat: Vec<f64> = (0..100).map(|i| [3.0, 5.0, 4.0, 4.0][i % 4]).collect();
        let p = prefix(flat.iter().copied());
        let ll = |a: usize, b: usize| pois_ll(p[b] - p[a], (b - a) as f64);
        assert_eq!(cuts(100, 20.0, &ll), vec![0, 100]);
    }

    #[test]
    fn bounds_take_their_middle() {
        let b = Bound { lo: 2.0, hi: 3.0 };
        assert_eq!((b.mid(), b.width()), (2.5, 1.0));
    }
}
