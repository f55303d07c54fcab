//! A metric of a run is a numeric leaf of its [`RunSummary`](super::RunSummary)
//! as JSON, named by its dotted path: `client.errors`,
//! `client.latency_ms.p99`, `client.status.503`, `nodes.A.share` (list items
//! by their `name`). This is the one vocabulary: runs.csv and points.csv
//! columns, `hcsim compare` rows, tune objectives and chart metrics all
//! enumerate or look up metrics here, so they agree on which exist.
//!
//! A name is a [`FieldPath`]: a node whose name holds a dot, a bracket or a
//! quote is written quoted (`nodes["10.1.0.11:8080"].share`), so every
//! name reads back to the metric it names.

use crate::spec::FieldPath;
use serde_json::{Number, Value};

/// Top-level fields of a run summary that describe the run rather than
/// measure it: no metric.
pub const DESCRIBES_RUN: &[&str] = &[
    "model",
    "seed",
    "duration_s",
    "measure_from_s",
    "measure_to_s",
];

/// A segment of a metric's path; list items are named (`nodes.A`) but keep
/// their order (so sorting keeps the nodes in model order).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Seg {
    Key(String),
    Item(usize, String),
}

/// A metric of a run summary: its path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MetricPath(Vec<Seg>);

/// A name that reads back as one segment.
fn plain(name: &str) -> bool {
    !name.is_empty() && !name.contains(['.', '[', ']', '"', '='])
}

impl MetricPath {
    /// The metric's name: `nodes.A.share`, `nodes["10.1.0.11:8080"].share`.
    pub fn name(&self) -> String {
        let mut out = String::new();
        for s in &self.0 {
            match s {
                Seg::Key(k) | Seg::Item(_, k) if plain(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Seg::Key(k) | Seg::Item(_, k) => {
                    out.push('[');
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(']');
                }
            }
        }
        out
    }

    /// The list item (node) this metric belongs to, if any, and the
    /// metric's field below it: (`A`, `share`) for `nodes.A.share`.
    pub fn item(&self) -> Option<(&str, String)> {
        let at = self.0.iter().position(|s| matches!(s, Seg::Item(..)))?;
        let Seg::Item(_, name) = &self.0[at] else {
            return None;
        };
        let rest = MetricPath(self.0[at + 1..].to_vec()).name();
        Some((name.as_str(), rest))
    }
}

/// Every metric of a run summary (as JSON) with its value, nulls included (a
/// metric that this run lacks, such as the ejection delay of a node never
/// ejected), in the summary's order.
pub fn metrics(summary: &Value) -> Vec<(MetricPath, Option<Number>)> {
    let mut out = Vec::new();
    leaves(summary, &mut Vec::new(), &mut out);
    out
}

fn leaves(v: &Value, path: &mut Vec<Seg>, out: &mut Vec<(MetricPath, Option<Number>)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if path.is_empty() && DESCRIBES_RUN.contains(&k.as_str()) {
                    continue;
                }
                path.push(Seg::Key(k.clone()));
                leaves(x, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                let name = x
                    .get("name")
                    .and_then(Value::as_str)
                    .map_or_else(|| i.to_string(), str::to_string);
                path.push(Seg::Item(i, name));
                leaves(x, path, out);
                path.pop();
            }
        }
        Value::Number(n) => out.push((MetricPath(path.clone()), Some(n.clone()))),
        Value::Null => out.push((MetricPath(path.clone()), None)),
        Value::String(_) | Value::Bool(_) => {}
    }
}

/// The name of node `node`'s metric `field`: `nodes.A.share`,
/// `nodes["10.1.0.11:8080"].share`.
pub fn node_metric(node: &str, field: &str) -> String {
    MetricPath(vec![
        Seg::Key("nodes".into()),
        Seg::Item(0, node.to_string()),
        Seg::Key(field.to_string()),
    ])
    .name()
}

/// A fleet's metric that a single gateway's run does not write.
pub const LAST_EJECTION: &str = "last_ejection_delay_s";

impl MetricPath {
    /// The last segment's key: `share` for `nodes.A.share`.
    fn field(&self) -> Option<&str> {
        match self.0.last()? {
            Seg::Key(k) => Some(k),
            Seg::Item(..) => None,
        }
    }
}

/// A single gateway is a fleet of one, whose last replica to eject a node is
/// its only one: for a run without fleet fields, each node's
/// `last_ejection_delay_s` as its `first_ejection_delay_s`. A sweep over
/// `gateway.replicas` from 1 then has the point at 1 replica (a run of one
/// gateway writes no fleet fields, so that `replicas: 1` changes no output).
/// Empty for a fleet's run.
pub fn fleet_of_one(metrics: &[(MetricPath, Option<Number>)]) -> Vec<(MetricPath, Option<Number>)> {
    if metrics
        .iter()
        .any(|(p, _)| p.field() == Some(LAST_EJECTION))
    {
        return vec![];
    }
    metrics
        .iter()
        .filter_map(|(p, v)| match p.0.as_slice() {
            [Seg::Key(nodes), item @ Seg::Item(..), Seg::Key(field)]
                if nodes == "nodes" && field == "first_ejection_delay_s" =>
            {
                let last = vec![
                    Seg::Key("nodes".into()),
                    item.clone(),
                    Seg::Key(LAST_EJECTION.into()),
                ];
                Some((MetricPath(last), v.clone()))
            }
            _ => None,
        })
        .collect()
}

/// A node's metric split into the node's name and the field below it:
/// (`A`, `share`) for `nodes.A.share`, (`10.1.0.11:8080`, `fleet.x`) for
/// `nodes["10.1.0.11:8080"].fleet.x`; `None` for any other metric.
pub fn split_node_metric(name: &str) -> Option<(String, String)> {
    let path = FieldPath::parse(name).ok()?;
    match path.segments().as_slice() {
        ["nodes", node, field @ ..] if !field.is_empty() => {
            Some((node.to_string(), field.join(".")))
        }
        _ => None,
    }
}

/// The value of the metric named `name` in a run summary (as JSON); `None`
/// if the name is malformed or the run has no such metric.
pub fn lookup<'a>(summary: &'a Value, name: &str) -> Option<&'a Value> {
    if DESCRIBES_RUN.contains(&name) {
        return None;
    }
    FieldPath::parse(name).ok()?.get(summary)
}

/// The metric `name` of a run summary as a number.
pub fn value(summary: &Value, name: &str) -> Option<f64> {
    lookup(summary, name).and_then(Value::as_f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_single_gateway_is_a_fleet_of_one() {
        let one = json!({"nodes": [{"name": "A", "first_ejection_delay_s": 5.1},
                                   {"name": "B", "first_ejection_delay_s": null}]});
        let filled: Vec<(String, Option<f64>)> = fleet_of_one(&metrics(&one))
            .into_iter()
            .map(|(p, v)| (p.name(), v.and_then(|n| n.as_f64())))
            .collect();
        assert_eq!(
            filled,
            [
                ("nodes.A.last_ejection_delay_s".to_string(), Some(5.1)),
                ("nodes.B.last_ejection_delay_s".to_string(), None)
            ]
        );
        let fleet = json!({"nodes": [{"name": "A", "first_ejection_delay_s": 5.1,
                                      "last_ejection_delay_s": 7.0}]});
        assert!(fleet_of_one(&metrics(&fleet)).is_empty());
    }

    #[test]
    fn names_read_back_to_the_metric_they_name() {
        let run = json!({
            "model": "m", "seed": 3, "events": 10,
            "client": {"errors": 2, "status": {"503": 1}},
            "nodes": [
                {"name": "A", "share": 0.5, "delay": null},
                {"name": "10.1.0.11:8080", "share": 0.25}
            ]
        });
        let all = metrics(&run);
        let names: Vec<String> = all.iter().map(|(p, _)| p.name()).collect();
        assert_eq!(
            names,
            [
                "client.errors",
                "client.status.503",
                "events",
                "nodes.A.delay",
                "nodes.A.share",
                "nodes[\"10.1.0.11:8080\"].share"
            ]
        );
        for (path, v) in &all {
            let back = lookup(&run, &path.name()).unwrap();
            assert_eq!(
                back.as_f64(),
                v.as_ref().and_then(Number::as_f64),
                "{}",
                path.name()
            );
        }
        assert_eq!(value(&run, "nodes.10.1.0.11:8080.share"), Some(0.25));
        assert!(fleet_of_one(&all).is_empty(), "no ejection delay to take");
        assert_eq!(value(&run, "seed"), None, "a field that describes the run");
        assert_eq!(
            all[5].0.item(),
            Some(("10.1.0.11:8080", "share".to_string()))
        );
        let name = node_metric("10.1.0.11:8080", "share");
        assert_eq!(name, all[5].0.name());
        assert_eq!(
            split_node_metric(&name),
            Some(("10.1.0.11:8080".into(), "share".into()))
        );
        assert_eq!(
            split_node_metric("nodes.A.fleet.replicas_ejected"),
            Some(("A".into(), "fleet.replicas_ejected".into()))
        );
        assert_eq!(split_node_metric("client.errors"), None);
    }
}
