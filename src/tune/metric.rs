//! The metrics objectives and constraints name: a column of a run's
//! summary (`client.errors`, `nodes.A.first_ejection_delay_s`) or a sum over
//! the nodes (`nodes.*.ejections`), read from each run's summary; and the
//! statistics over replications, computed as `summary.json` computes its
//! spreads so that `hcsim run` at the same seeds gives the same figures.

use crate::metrics::path;
use crate::spec::Model;
use crate::spec::tune::Stat;
use crate::stats::Spread;
use serde_json::Value;

/// A metric of one run.
#[derive(Clone, Debug, PartialEq)]
pub enum Metric {
    /// A dotted path into the run summary (`nodes.A.share`: nodes by name).
    Path(String),
    /// `nodes.*.<field>`: the sum of the field over the nodes that have it.
    NodesSum(String),
}

impl Metric {
    /// Checks `text` against the metric columns a run of `model` has
    /// (`names`, from `sweep::plan::metric_names`).
    pub fn parse(text: &str, names: &[String], model: &Model) -> Result<Metric, String> {
        let text = text.trim();
        if let Some(field) = text.strip_prefix("nodes.*.") {
            let first = model.nodes.first().map_or("", |n| n.name.as_str());
            if names.iter().any(|n| *n == path::node_metric(first, field)) {
                return Ok(Metric::NodesSum(field.to_string()));
            }
            let fields: Vec<String> = names
                .iter()
                .filter_map(|n| path::split_node_metric(n).filter(|(node, _)| node == first))
                .map(|(_, f)| f)
                .collect();
            let hint = crate::diagnostics::suggest(field, fields.iter().map(String::as_str))
                .map(|s| format!("; did you mean `nodes.*.{s}`?"))
                .unwrap_or_default();
            return Err(format!("nodes have no metric `{field}`{hint}"));
        }
        if names.iter().any(|n| n == text) || text.starts_with("client.status.") {
            return Ok(Metric::Path(text.to_string()));
        }
        let hint = crate::diagnostics::suggest(text, names.iter().map(String::as_str))
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        Err(format!(
            "no run has a metric `{text}` (metrics are columns of runs.csv such as `client.errors`, `client.latency_ms.p999` or `nodes.<name>.first_ejection_delay_s`, or `nodes.*.<field>` for the sum over the nodes){hint}"
        ))
    }

    pub fn name(&self) -> String {
        match self {
            Metric::Path(p) => p.clone(),
            Metric::NodesSum(f) => format!("nodes.*.{f}"),
        }
    }

    /// The metric's value in one run's summary; `None` where the run has
    /// none (a node never ejected has no ejection delay). A status code the
    /// run never saw counts 0.
    pub fn value(&self, summary: &Value) -> Option<f64> {
        match self {
            Metric::Path(p) => match path::lookup(summary, p) {
                Some(v) => v.as_f64(),
                None if p.starts_with("client.status.") => Some(0.0),
                None => None,
            },
            Metric::NodesSum(field) => {
                let nodes = summary.get("nodes")?.as_array()?;
                let present: Vec<f64> = nodes
                    .iter()
                    .filter_map(|n| n.get(field).and_then(Value::as_f64))
                    .collect();
                (!present.is_empty()).then(|| present.iter().sum())
            }
        }
    }
}

/// A statistic of per-replication values: those present, with `missing`
/// standing in for the absent ones when given; rounded as `summary.json`
/// rounds (so without `missing`, `mean` is the spread's `mean`).
pub fn statistic(values: &[Option<f64>], stat: Stat, missing: Option<f64>) -> Option<f64> {
    let spread = Spread::of_options(values.iter().map(|v| v.or(missing)));
    match stat {
        Stat::Mean => spread.mean,
        Stat::Median => spread.median,
        Stat::Min => spread.min,
        Stat::Max => spread.max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_read_by_path_or_summed_over_nodes() {
        let run = json!({
            "client": {"errors": 4, "status": {"502": 3}},
            "nodes": [
                {"name": "A", "ejections": 2, "first_ejection_delay_s": 0.5},
                {"name": "B", "ejections": 1, "first_ejection_delay_s": null}
            ]
        });
        assert_eq!(Metric::Path("client.errors".into()).value(&run), Some(4.0));
        assert_eq!(
            Metric::Path("client.status.503".into()).value(&run),
            Some(0.0)
        );
        assert_eq!(
            Metric::Path("nodes.A.first_ejection_delay_s".into()).value(&run),
            Some(0.5)
        );
        assert_eq!(
            Metric::Path("nodes.B.first_ejection_delay_s".into()).value(&run),
            None
        );
        assert_eq!(Metric::NodesSum("ejections".into()).value(&run), Some(3.0));
        assert_eq!(
            Metric::NodesSum("first_ejection_delay_s".into()).value(&run),
            Some(0.5)
        );
    }

    #[test]
    fn statistics_fill_missing_values_when_told() {
        let v = [Some(1.0), None, Some(3.0)];
        assert_eq!(statistic(&v, Stat::Mean, None), Some(2.0));
        assert_eq!(statistic(&v, Stat::Mean, Some(5.0)), Some(3.0));
        assert_eq!(statistic(&v, Stat::Max, Some(5.0)), Some(5.0));
        assert_eq!(statistic(&[None, None], Stat::Median, None), None);
    }
}
