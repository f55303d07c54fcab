//! The timeline of a run, read from `timeline.csv` and `ejections.csv`: the
//! median over the replications with a band (or one replication), in
//! buckets wide enough for the request rate.

use super::{Drawn, plot_err, runs};
use crate::engine::SimDuration;
use crate::error::Error;
use crate::output::summary::Summary;
use crate::plot::{self, NodeTrack, TimelineSpec};
use crate::spec::model_spec::ClientsSpec;
use std::collections::BTreeMap;
use std::path::Path;

/// Answers per node per bucket the automatic bucket width aims for: below
/// that, a node's share jumps between 0% and 100% from one bucket to the next.
const ANSWERS_PER_NODE: f64 = 20.0;
/// The automatic bucket width leaves at least this many buckets.
const MIN_BUCKETS: usize = 12;

fn csv_err(path: &Path) -> impl Fn(csv::Error) -> Error + '_ {
    move |e| Error::Parse {
        path: path.to_path_buf(),
        field: String::new(),
        msg: e.to_string(),
    }
}

/// One replication's buckets.
#[derive(Clone, Debug, Default)]
struct Rep {
    t: Vec<f64>,
    requests: Vec<f64>,
    errors: Vec<f64>,
    timeouts: Vec<f64>,
    /// Latency p50 and p99 (ms) per bucket; `None` where no request ended.
    p50: Vec<Option<f64>>,
    p99: Vec<Option<f64>>,
    /// Per node, per bucket: 2xx answers, and the fraction of the bucket ejected.
    answered: Vec<Vec<f64>>,
    ejected: Vec<Vec<f64>>,
}

impl Rep {
    fn new(nodes: usize) -> Rep {
        Rep {
            answered: vec![vec![]; nodes],
            ejected: vec![vec![]; nodes],
            ..Rep::default()
        }
    }

    /// Buckets merged `k` at a time: counts summed, the ejected fraction
    /// averaged, the median of the medians and the highest p99.
    fn merged(&self, k: usize) -> Rep {
        if k <= 1 {
            return self.clone();
        }
        let n = self.t.len();
        let chunks = |v: &[f64]| -> Vec<f64> { v.chunks(k).map(|c| c.iter().sum()).collect() };
        let mean = |v: &[f64]| -> Vec<f64> {
            v.chunks(k)
                .map(|c| c.iter().sum::<f64>() / c.len() as f64)
                .collect()
        };
        let p50 = self
            .p50
            .chunks(k)
            .map(|c| {
                let v: Vec<f64> = c.iter().flatten().copied().collect();
                crate::stats::median(&v)
            })
            .collect();
        let p99 = self
            .p99
            .chunks(k)
            .map(|c| c.iter().flatten().copied().reduce(f64::max))
            .collect();
        Rep {
            t: (0..n).step_by(k).map(|i| self.t[i]).collect(),
            requests: chunks(&self.requests),
            errors: chunks(&self.errors),
            timeouts: chunks(&self.timeouts),
            p50,
            p99,
            answered: self.answered.iter().map(|v| chunks(v)).collect(),
            ejected: self.ejected.iter().map(|v| mean(v)).collect(),
        }
    }

    /// Each node's share of the answers per bucket; `None` where there was none.
    fn shares(&self) -> Vec<Vec<Option<f64>>> {
        let at = |a: &[f64], k: usize| a.get(k).copied().unwrap_or(0.0);
        let totals: Vec<f64> = (0..self.t.len())
            .map(|k| self.answered.iter().map(|a| at(a, k)).sum())
            .collect();
        self.answered
            .iter()
            .map(|a| {
                totals
                    .iter()
                    .enumerate()
                    .map(|(k, t)| (*t > 0.0).then(|| at(a, k) / t))
                    .collect()
            })
            .collect()
    }
}

/// Every replication's buckets from `timeline.csv`, by replication.
fn read_timeline(path: &Path, names: &[String]) -> Result<BTreeMap<usize, Rep>, Error> {
    let mut rdr = csv::Reader::from_path(path).map_err(csv_err(path))?;
    let headers = rdr.headers().map_err(csv_err(path))?.clone();
    let col = |name: &str| headers.iter().position(|h| h == name);
    let (Some(c_rep), Some(c_t), Some(c_req), Some(c_err), Some(c_to)) = (
        col("rep"),
        col("t_s"),
        col("requests"),
        col("errors"),
        col("timeouts"),
    ) else {
        return Err(Error::Parse {
            path: path.to_path_buf(),
            field: String::new(),
            msg: "missing columns rep, t_s, requests, errors or timeouts".into(),
        });
    };
    let (c_p50, c_p99) = (col("latency_p50_ms"), col("latency_p99_ms"));
    let node_cols: Vec<(Option<usize>, Option<usize>)> = names
        .iter()
        .map(|n| (col(&format!("{n}.answered")), col(&format!("{n}.ejected"))))
        .collect();
    let mut reps: BTreeMap<usize, Rep> = BTreeMap::new();
    for rec in rdr.records() {
        let rec = rec.map_err(csv_err(path))?;
        let Some(rep) = rec.get(c_rep).and_then(|x| x.parse::<usize>().ok()) else {
            continue;
        };
        let b = reps.entry(rep).or_insert_with(|| Rep::new(names.len()));
        let opt = |c: Option<usize>| c.and_then(|c| rec.get(c)?.parse::<f64>().ok());
        let num = |c: usize| opt(Some(c)).unwrap_or(0.0);
        b.t.push(num(c_t));
        b.requests.push(num(c_req));
        b.errors.push(num(c_err));
        b.timeouts.push(num(c_to));
        b.p50.push(opt(c_p50));
        b.p99.push(opt(c_p99));
        for (i, (a, e)) in node_cols.iter().enumerate() {
            b.answered[i].push(opt(*a).unwrap_or(0.0));
            b.ejected[i].push(opt(*e).unwrap_or(0.0));
        }
    }
    Ok(reps)
}

/// One replication's ejection intervals from `ejections.csv`, by node name
/// (an interval still open at the end runs to infinity).
fn read_ejections(path: &Path, rep: usize) -> Result<BTreeMap<String, Vec<(f64, f64)>>, Error> {
    let mut ejections: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    if !path.exists() {
        return Ok(ejections);
    }
    let mut rdr = csv::Reader::from_path(path).map_err(csv_err(path))?;
    for rec in rdr.records() {
        let rec = rec.map_err(csv_err(path))?;
        if rec.get(0).and_then(|x| x.parse::<usize>().ok()) != Some(rep) {
            continue;
        }
        let num = |i: usize| rec.get(i).and_then(|x| x.parse::<f64>().ok());
        ejections
            .entry(rec.get(2).unwrap_or("").to_string())
            .or_default()
            .push((num(4).unwrap_or(0.0), num(5).unwrap_or(f64::INFINITY)));
    }
    Ok(ejections)
}

/// A window drawn on a node's lane: (start, end, what).
type Window = (f64, f64, String);

/// One replication's pod windows from `pods.csv`, by node name, drawn
/// with the fault windows: a restart (the container's exit until the
/// gateway lists the pod again), an old pod of a rolling update (deleted
/// until gone) and a new one (created until listed). Empty without pods.
fn read_pod_windows(
    path: &Path,
    rep: usize,
    end: f64,
) -> Result<BTreeMap<String, Vec<Window>>, Error> {
    let mut out: BTreeMap<String, Vec<Window>> = BTreeMap::new();
    if !path.exists() {
        return Ok(out);
    }
    // Per node: the window open now (start, kind).
    let mut open: BTreeMap<String, (f64, &'static str)> = BTreeMap::new();
    let mut rdr = csv::Reader::from_path(path).map_err(csv_err(path))?;
    for rec in rdr.records() {
        let rec = rec.map_err(csv_err(path))?;
        if rec.get(0).and_then(|x| x.parse::<usize>().ok()) != Some(rep) {
            continue;
        }
        let t = rec
            .get(2)
            .and_then(|x| x.parse::<f64>().ok())
            .unwrap_or(0.0);
        let node = rec.get(3).unwrap_or("").to_string();
        let (opens, closes) = match rec.get(4).unwrap_or("") {
            "exited" => (Some("restart"), false),
            "deleted" => (Some("deploy: old pod"), false),
            "created" => (Some("deploy: new pod"), false),
            "listed" | "gone" => (None, true),
            _ => (None, false),
        };
        if closes && let Some((s, kind)) = open.remove(&node) {
            out.entry(node.clone())
                .or_default()
                .push((s, t, kind.to_string()));
        }
        if let Some(kind) = opens {
            open.entry(node).or_insert((t, kind));
        }
    }
    for (node, (s, kind)) in open {
        out.entry(node)
            .or_default()
            .push((s, end, kind.to_string()));
    }
    Ok(out)
}

/// How many recorded buckets make one drawn bucket: the chart's `bucket`
/// if given, else the fewest (1, 2, 5, 10, 20, …) that give each node about
/// [`ANSWERS_PER_NODE`] requests, leaving at least [`MIN_BUCKETS`] buckets.
fn merge_factor(reps: &[&Rep], nodes: usize, base_s: f64, wanted: Option<SimDuration>) -> usize {
    if let Some(w) = wanted {
        return ((w.as_secs_f64() / base_s).round() as usize).max(1);
    }
    let buckets: usize = reps.iter().map(|r| r.t.len()).sum();
    let requests: f64 = reps.iter().flat_map(|r| r.requests.iter()).sum();
    if buckets == 0 || requests <= 0.0 {
        return 1;
    }
    let per_node = requests / buckets as f64 / nodes.max(1) as f64;
    let needed = (ANSWERS_PER_NODE / per_node).ceil() as usize;
    let most = (reps[0].t.len() / MIN_BUCKETS).max(1);
    let nice = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];
    nice.iter()
        .copied()
        .find(|k| *k >= needed && *k <= most)
        .or_else(|| nice.iter().copied().rfind(|k| *k <= most))
        .unwrap_or(1)
}

/// The median of each bucket's values over the replications, and their
/// spread (min–max under 10 replications, p5–p95 from 10).
/// Per bucket: a value (`None`: a gap), and a band `(lo, hi)`.
type Banded = (Vec<Option<f64>>, Vec<Option<(f64, f64)>>);

fn across(series: &[Vec<Option<f64>>], len: usize) -> Banded {
    let mut med = vec![];
    let mut band = vec![];
    for k in 0..len {
        let mut v: Vec<f64> = series
            .iter()
            .filter_map(|s| s.get(k).copied().flatten())
            .filter(|x| x.is_finite())
            .collect();
        v.sort_by(f64::total_cmp);
        med.push(crate::stats::median(&v));
        let (lo, hi) = if series.len() >= 10 {
            (0.05, 0.95)
        } else {
            (0.0, 1.0)
        };
        band.push(if series.len() > 1 && !v.is_empty() {
            crate::stats::quantile(&v, lo).zip(crate::stats::quantile(&v, hi))
        } else {
            None
        });
    }
    (med, band)
}

fn some(v: &[f64]) -> Vec<Option<f64>> {
    v.iter().map(|x| Some(*x)).collect()
}

/// Draws the timeline of a run directory: replication `rep` alone, or the
/// median over the replications.
pub(super) fn timeline_chart(
    dir: &Path,
    summary: &Summary,
    rep: Option<usize>,
    bucket: Option<SimDuration>,
    caption: &str,
) -> Result<Drawn, Error> {
    let names: Vec<String> = summary.nodes.iter().map(|n| n.name.clone()).collect();
    let path = dir.join("timeline.csv");
    let all = read_timeline(&path, &names)?;
    let chosen: Vec<&Rep> = match rep {
        Some(r) => all.get(&r).into_iter().collect(),
        None => all.values().collect(),
    };
    if let (Some(r), true) = (rep, chosen.is_empty()) {
        return Err(Error::Invalid {
            path,
            field: "charts[].rep".into(),
            reason: format!("no replication {r} (the run has {})", all.len()),
        });
    }
    let base_s = summary.model_spec.bucket().as_secs_f64();
    let k = match chosen.first() {
        Some(_) => merge_factor(&chosen, names.len(), base_s, bucket),
        None => 1,
    };
    let merged: Vec<Rep> = chosen.iter().map(|r| r.merged(k)).collect();
    let len = merged.iter().map(|r| r.t.len()).min().unwrap_or(0);
    let one = merged.len() == 1;
    let shares: Vec<Vec<Vec<Option<f64>>>> = merged.iter().map(Rep::shares).collect();
    // Exact ejection intervals when one replication is drawn.
    let exact_rep = match rep {
        Some(r) => Some(r),
        None if one => all.keys().next().copied(),
        None => None,
    };
    let mut exact = match exact_rep {
        Some(r) => read_ejections(&dir.join("ejections.csv"), r)?,
        None => BTreeMap::new(),
    };
    let duration = summary.runs.first().map_or(0.0, |r| r.duration_s);
    let mut pod_windows =
        read_pod_windows(&dir.join("pods.csv"), exact_rep.unwrap_or(0), duration)?;
    let nodes = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let per_rep: Vec<Vec<Option<f64>>> = shares.iter().map(|s| s[i].clone()).collect();
            let (share, share_band) = across(&per_rep, len);
            let ejected = (0..len)
                .map(|b| merged.iter().map(|r| r.ejected[i][b]).sum::<f64>() / merged.len() as f64)
                .collect();
            NodeTrack {
                name: name.clone(),
                share,
                share_band,
                ejections: exact.remove(name).unwrap_or_default(),
                ejected,
                faults: summary
                    .faults
                    .iter()
                    .filter(|f| f.node == *name)
                    .map(|f| (f.start_s, f.end_s.unwrap_or(duration), f.kind.clone()))
                    .chain(pod_windows.remove(name).unwrap_or_default())
                    .collect(),
            }
        })
        .collect();
    let series = |f: fn(&Rep) -> Vec<Option<f64>>| -> Vec<Vec<Option<f64>>> {
        merged.iter().map(f).collect()
    };
    let (errors, _) = across(&series(|r| some(&r.errors)), len);
    let (timeouts, _) = across(&series(|r| some(&r.timeouts)), len);
    let (p50, _) = across(&series(|r| r.p50.clone()), len);
    let (p99, p99_band) = across(&series(|r| r.p99.clone()), len);
    let client_timeout = match &summary.model_spec.clients {
        ClientsSpec::Open(o) => o.timeout,
        ClientsSpec::Closed(c) => c.timeout,
    };
    let n = merged.len();
    let band_label = match n {
        0 | 1 => String::new(),
        2..=9 => format!("min–max of {n} runs"),
        _ => format!("p5–p95 of {n} runs"),
    };
    let width = base_s * k as f64;
    let (title, stem) = match rep {
        Some(r) => {
            let seed = summary.runs.get(r).map_or(0, |x| x.seed);
            (
                format!(
                    "{}: replication {r} (seed {seed}) — share, ejections, latency and errors over time",
                    summary.model
                ),
                format!("timeline-rep{r}"),
            )
        }
        None if one => (
            format!(
                "{}: share, ejections, latency and errors over time",
                summary.model
            ),
            "timeline".to_string(),
        ),
        None => (
            format!(
                "{}: share, ejections, latency and errors over time — median of {}",
                summary.model,
                runs(n)
            ),
            "timeline".to_string(),
        ),
    };
    let t = TimelineSpec {
        title,
        caption: format!("{caption} · buckets of {}", fmt_seconds(width)),
        bucket_s: width,
        t: merged
            .first()
            .map(|r| r.t[..len].to_vec())
            .unwrap_or_default(),
        nodes,
        errors: errors.iter().map(|v| v.unwrap_or(0.0)).collect(),
        timeouts: timeouts.iter().map(|v| v.unwrap_or(0.0)).collect(),
        latency_p50_ms: p50,
        latency_p99_ms: p99,
        latency_p99_band: p99_band,
        client_timeout_ms: client_timeout.map(|d| d.as_secs_f64() * 1000.0),
        band_label,
        latency_note: if k > 1 {
            format!(
                "per {} bucket: median of the {} medians, highest {} p99",
                fmt_seconds(width),
                fmt_seconds(base_s),
                fmt_seconds(base_s)
            )
        } else {
            String::new()
        },
        size: None,
    };
    let stem = dir.join("charts").join(stem);
    plot::timeline(&t, &stem).map_err(plot_err)?;
    Ok(Drawn {
        title: t.title,
        stem,
        metric: None,
    })
}

/// `0.5` -> `500 ms`, `5` -> `5 s`.
fn fmt_seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{} ms", crate::plot::fmt_sig(Some(s * 1000.0)))
    } else {
        format!(
            "{} s",
            crate::plot::fmt_sig(Some(s)).trim_end_matches(".00")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(requests: f64, buckets: usize) -> Rep {
        Rep {
            t: (0..buckets).map(|i| i as f64).collect(),
            requests: vec![requests; buckets],
            ..Rep::new(4)
        }
    }

    #[test]
    fn buckets_widen_at_low_rates() {
        // 10 req/s over 4 nodes: 2.5 answers per node per second; 20 need 8 s, so 10 s.
        assert_eq!(merge_factor(&[&rep(10.0, 120)], 4, 1.0, None), 10);
        // 1,000 req/s: 1 s buckets are plenty.
        assert_eq!(merge_factor(&[&rep(1000.0, 60)], 4, 1.0, None), 1);
        // Never fewer than 12 buckets: 60 s allow 5 s buckets at most.
        assert_eq!(merge_factor(&[&rep(1.0, 60)], 4, 1.0, None), 5);
        // Asked for: 5 s of 1 s buckets.
        let five = SimDuration::from_secs(5);
        assert_eq!(merge_factor(&[&rep(1.0, 60)], 4, 1.0, Some(five)), 5);
    }

    #[test]
    fn merged_buckets_sum_counts_and_keep_gaps() {
        let mut r = rep(1.0, 4);
        r.errors = vec![1.0, 2.0, 0.0, 0.0];
        r.p99 = vec![Some(5.0), Some(9.0), None, None];
        r.answered[0] = vec![1.0, 0.0, 0.0, 0.0];
        let m = r.merged(2);
        assert_eq!(m.t, [0.0, 2.0]);
        assert_eq!(m.errors, [3.0, 0.0]);
        assert_eq!(m.p99, [Some(9.0), None]);
        // No answers in the second bucket: a gap, not 0%.
        assert_eq!(m.shares()[0], [Some(1.0), None]);
    }

    #[test]
    fn replications_give_a_median_and_a_band() {
        let s = vec![
            vec![Some(1.0), None],
            vec![Some(3.0), None],
            vec![Some(2.0), Some(4.0)],
        ];
        let (med, band) = across(&s, 2);
        assert_eq!(med, [Some(2.0), Some(4.0)]);
        assert_eq!(band[0], Some((1.0, 3.0)));
    }
}
