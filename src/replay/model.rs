//! The inferred model: a normal hcsim model document (`replay-model.json`)
//! made of the gateway settings (from `hcsim import`'s reading of the
//! config, or hcsim's defaults and `--actual`), the nodes with their
//! service times, the log's workload as `clients` with a `schedule`, and
//! the faults as hcsim's fault kinds. A censored fault boundary takes the
//! middle of its [`Bound`]; [`Variant::Shortest`] and
//! [`Variant::Longest`] take the ends the log allows.

use super::infer::{Behaviour, Bound, FaultWindow, Inference};
use crate::engine::SimDuration;
use crate::spec::Arrivals;
use serde_json::{Value, json};

/// Which fault windows: the middle of each censored boundary, or the
/// shortest or longest faults the log allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Mid,
    Shortest,
    Longest,
}

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::Mid => "mid",
            Variant::Shortest => "shortest",
            Variant::Longest => "longest",
        }
    }
}

fn dur(s: f64) -> Value {
    json!(SimDuration::from_micros((s.max(0.0) * 1e6).round() as u64))
}

/// The fault's `[start, end)` under a variant (`None`: to the end).
pub fn window(f: &FaultWindow, v: Variant) -> (f64, Option<f64>) {
    let pick = |b: &Bound, early: bool| match v {
        Variant::Mid => b.mid(),
        Variant::Shortest => {
            if early {
                b.hi
            } else {
                b.lo
            }
        }
        Variant::Longest => {
            if early {
                b.lo
            } else {
                b.hi
            }
        }
    };
    let start = pick(&f.start, true);
    let end = f.end.as_ref().map(|e| pick(e, false).max(start + 0.001));
    (start, end)
}

/// The windows of every fault under a variant, with those hcsim may not
/// run at once on one node (two availability faults — crash, hang, stop,
/// partition — or two of one kind) cut where the next begins: the log
/// puts the next failure there, so the one before had ended. A window cut
/// to nothing is dropped.
fn windows(faults: &[FaultWindow], v: Variant) -> Vec<(usize, f64, Option<f64>)> {
    let class = |b: &Behaviour| match b {
        Behaviour::Crash | Behaviour::Partition | Behaviour::Hang => 0,
        Behaviour::Flaky { .. } => 1,
        Behaviour::Slow { .. } => 2,
    };
    let mut w: Vec<(usize, f64, Option<f64>)> = faults
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (s, e) = window(f, v);
            (i, s, e)
        })
        .collect();
    w.sort_by(|a, b| {
        let (fa, fb) = (&faults[a.0], &faults[b.0]);
        (fa.node.as_str(), class(&fa.behaviour))
            .cmp(&(fb.node.as_str(), class(&fb.behaviour)))
            .then(a.1.total_cmp(&b.1))
    });
    for k in 1..w.len() {
        let (a, b) = (&faults[w[k - 1].0], &faults[w[k].0]);
        if a.node == b.node && class(&a.behaviour) == class(&b.behaviour) {
            let next = w[k].1;
            if w[k - 1].2.is_none_or(|e| e > next) {
                w[k - 1].2 = Some(next);
            }
        }
    }
    w.retain(|&(_, s, e)| e.is_none_or(|e| e - s >= 0.001));
    w.sort_by_key(|x| x.0);
    w
}

fn fault_doc(f: &FaultWindow, (start, end): (f64, Option<f64>)) -> Value {
    let mut d = match f.behaviour {
        Behaviour::Crash => json!({"kind": "crash"}),
        Behaviour::Partition => json!({"kind": "partition"}),
        Behaviour::Hang => json!({"kind": "hang"}),
        Behaviour::Flaky { p, status, reset } => {
            if reset {
                json!({"kind": "flaky", "p": p, "error": "reset"})
            } else {
                json!({"kind": "flaky", "p": p, "status": status})
            }
        }
        Behaviour::Slow { factor } => json!({"kind": "slow", "factor": factor}),
    };
    d["node"] = json!(f.node);
    d["at"] = dur(start);
    if let Some(e) = end {
        d["for"] = dur(e - start);
    }
    d
}

/// Whether any boundary is censored (the variants differ).
pub fn censored(inf: &Inference) -> bool {
    inf.faults
        .iter()
        .any(|f| f.start.width() > 1e-6 || f.end.as_ref().is_some_and(|e| e.width() > 1e-6))
}

/// The model document: `base` (the gateway, nodes and policies in force)
/// with the inferred workload, service times and faults.
pub fn document(
    base: &Value,
    inf: &Inference,
    name: &str,
    origin: f64,
    description: &str,
    v: Variant,
) -> Value {
    let mut doc = base.clone();
    let w = &inf.workload;
    doc["name"] = json!(name);
    doc["description"] = json!(description);
    doc["duration"] = dur(w.duration_s);
    let mut clients = json!({
        "kind": "open",
        "rate_per_s": (w.rate_per_s * 1e6).round() / 1e6,
        "arrivals": match w.arrivals { Arrivals::Constant => "constant", Arrivals::Poisson => "poisson" },
        "method": w.method,
    });
    if let Some(t) = w.timeout_s {
        clients["timeout"] = dur(t);
    }
    clients["schedule"] = Value::Array(
        w.schedule
            .iter()
            .map(|(at, r)| json!({"at": dur(*at), "rate_per_s": (r * 1e6).round() / 1e6}))
            .collect(),
    );
    doc["clients"] = clients;
    if !doc["gateway"].is_object() {
        doc["gateway"] = json!({});
    }
    // nginx's clock is whole seconds: t = 0 lies this far into its second.
    doc["gateway"]["clock_phase"] = dur(origin - origin.floor());
    if let Some(nodes) = doc["nodes"].as_array_mut() {
        for n in nodes {
            let name = n["name"].as_str().unwrap_or("").to_string();
            if let Some(info) = inf.nodes.iter().find(|i| i.name == name) {
                n["service_time"] = json!(info.service_time);
            }
        }
    }
    doc["faults"] = Value::Array(
        windows(&inf.faults, v)
            .into_iter()
            .map(|(i, s, e)| fault_doc(&inf.faults[i], (s, e)))
            .collect(),
    );
    doc.as_object_mut().map(|o| o.remove("measure"));
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(end: Option<Bound>) -> FaultWindow {
        FaultWindow {
            node: "a".into(),
            behaviour: Behaviour::Crash,
            start: Bound { lo: 2.0, hi: 2.2 },
            end,
            evidence: String::new(),
        }
    }

    #[test]
    fn variants_take_the_middle_or_the_ends_of_each_bound() {
        let f = fault(Some(Bound { lo: 5.0, hi: 7.0 }));
        assert_eq!(window(&f, Variant::Mid), (2.1, Some(6.0)));
        assert_eq!(window(&f, Variant::Shortest), (2.2, Some(5.0)));
        assert_eq!(window(&f, Variant::Longest), (2.0, Some(7.0)));
        assert_eq!(window(&fault(None), Variant::Mid).1, None);
        let d = fault_doc(&f, window(&f, Variant::Mid));
        assert_eq!(
            d,
            json!({"kind": "crash", "node": "a", "at": "2.1s", "for": "3.9s"})
        );
    }

    #[test]
    fn availability_faults_of_a_node_are_cut_where_the_next_begins() {
        let crash = fault(Some(Bound { lo: 5.0, hi: 7.0 }));
        let hang = FaultWindow {
            behaviour: Behaviour::Hang,
            start: Bound { lo: 1.0, hi: 6.0 },
            end: None,
            ..fault(None)
        };
        let flaky = FaultWindow {
            behaviour: Behaviour::Flaky {
                p: 0.5,
                status: 503,
                reset: false,
            },
            ..fault(None)
        };
        let w = windows(&[crash, hang, flaky], Variant::Mid);
        // The crash (2.1 to 6.0) is cut at the hang's start (3.5); the
        // flaky window, another class, is left as it is.
        assert_eq!(w, vec![(0, 2.1, Some(3.5)), (1, 3.5, None), (2, 2.1, None)]);
    }
}
