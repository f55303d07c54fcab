//! `hcsim check`: what kind of file this is, and the model as it will be
//! simulated, every default filled in (as `nginx -T` prints its configuration).

use crate::error::Error;
use crate::scenario::{GatewayFlavor, MeasureSpec, Scenario, ScenarioSpec};
use serde_json::Value;
use std::path::Path;

/// What a JSON file describes, judged by its top-level shape.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A model: `name`, `duration`, `clients`, `nodes`, ...
    Model,
    /// A sweep: names a `model` file and the `axes` to vary.
    Sweep,
}

/// A sweep names its model and axes; anything else is read as a model (and
/// a malformed one gets the model's error messages).
pub fn file_kind(doc: &Value) -> FileKind {
    match doc.as_object() {
        Some(m) if m.contains_key("axes") || m.get("model").is_some_and(Value::is_string) => {
            FileKind::Sweep
        }
        _ => FileKind::Model,
    }
}

/// Checks a sweep file as `hcsim sweep` would before running it (every point
/// patched and validated, charts naming real axes) and describes it: the
/// points, the runs, and the first point's model with every default written
/// out. Also returns the warnings of every point, each once, with the first
/// point that has it.
pub fn sweep(path: &Path) -> Result<(Value, Vec<(String, String)>), Error> {
    let plan = crate::sweep::Plan::load(path)?;
    let h = &plan.header;
    if let Some(charts) = h.definition.get("charts") {
        let charts: Vec<crate::charts::ChartSpec> = crate::scenario::from_document(charts, path)?;
        crate::charts::check_sweep_axes(&charts, &h.axes).map_err(|(field, reason)| {
            Error::Invalid {
                path: path.to_path_buf(),
                field,
                reason,
            }
        })?;
    }
    // One warning per field, from the first point that has it.
    let mut by_field: Vec<(String, String, usize, usize)> = vec![];
    for (i, sc) in plan.scenarios.iter().enumerate() {
        let mut found = sc.warnings();
        found.extend(
            crate::limits::preflight(sc, None)
                .unwrap_or_else(|reason| vec![(String::new(), reason)]),
        );
        for (field, msg) in found {
            match by_field.iter_mut().find(|(f, ..)| *f == field) {
                Some(w) => w.3 += 1,
                None => by_field.push((field, msg, i, 1)),
            }
        }
    }
    let n = plan.scenarios.len();
    let warnings = by_field
        .into_iter()
        .map(|(field, msg, first, count)| {
            let field = match field.as_str() {
                "" => format!("model {}", h.model_file),
                f => format!("model {}: {f}", h.model_file),
            };
            let at = format!("point {first} ({})", h.describe_point(first));
            let at = if count == 1 {
                format!("at {at}")
            } else {
                format!("at {count} of {n} points, first {at}")
            };
            (field, format!("{msg} ({at})"))
        })
        .collect();
    let points: Vec<Value> = h
        .points
        .iter()
        .map(|cells| Value::Object(h.axes.iter().cloned().zip(cells.iter().cloned()).collect()))
        .collect();
    let first = plan
        .scenarios
        .first()
        .map(|sc| serde_json::to_value(effective_spec(sc)));
    let described = serde_json::json!({
        "name": h.name,
        "model_file": h.model_file,
        "seed": h.seed,
        "seeds": h.seeds,
        "reps": h.reps,
        "runs": h.runs(),
        "axes": h.axes,
        "points": points,
        "first_point_model": first.transpose().map_err(|e| Error::Usage(e.to_string()))?,
    });
    Ok((described, warnings))
}

/// The model as it will run: the policy default, the measurement window and
/// every field's default written out; optional settings that are off are
/// `null` (`clients.timeout`: never; `gateway.clock_phase`: drawn from the
/// seed; `faults[].for`: to the end). The result is itself a valid model
/// that checks to the same document.
pub fn effective_spec(sc: &Scenario) -> ScenarioSpec {
    let mut spec = sc.spec.clone();
    spec.schema = None;
    spec.measure = Some(MeasureSpec {
        from: sc.measure_from.since_start(),
        to: Some(sc.measure_to.since_start()),
    });
    if spec.gateway.flavor == GatewayFlavor::Haproxy {
        spec.gateway.haproxy = Some(spec.gateway.haproxy());
    }
    if spec.policies.is_empty() {
        spec.policy = sc.policies.first().cloned();
    } else {
        spec.policies = sc.policies.clone();
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tells_models_from_sweeps() {
        assert_eq!(
            file_kind(&json!({"name": "x", "nodes": []})),
            FileKind::Model
        );
        assert_eq!(
            file_kind(&json!({"model": "models/a.json", "axes": []})),
            FileKind::Sweep
        );
        assert_eq!(file_kind(&json!([1, 2])), FileKind::Model);
    }

    #[test]
    fn the_effective_model_is_a_fixed_point() {
        let doc = json!({
            "name": "t", "duration": "10s",
            "clients": {"kind": "open", "rate_per_s": 10.0},
            "nodes": [{"name": "a"}, {"name": "b"}],
            "faults": [{"kind": "crash", "node": "a", "at": "1s"}]
        });
        let sc = Scenario::from_document(&doc, Path::new("m.json")).unwrap();
        let eff = serde_json::to_value(effective_spec(&sc)).unwrap();
        assert_eq!(
            eff["policy"],
            json!({"kind": "max_fails", "max_fails": 1, "fail_timeout": "10s"})
        );
        assert_eq!(eff["measure"], json!({"from": "0s", "to": "10s"}));
        assert_eq!(eff["clients"]["timeout"], Value::Null);
        assert_eq!(eff["clients"]["arrivals"], "poisson");
        assert_eq!(eff["faults"][0]["for"], Value::Null);
        assert_eq!(eff["gateway"]["proxy_read_timeout"], "60s");
        assert_eq!(
            eff["nodes"][1]["service_time"],
            json!({"dist": "constant", "value": "5ms"})
        );
        let again = Scenario::from_document(&eff, Path::new("m.json")).unwrap();
        assert_eq!(serde_json::to_value(effective_spec(&again)).unwrap(), eff);
    }
}
