//! `hcsim check FILE`: validate a model, a sweep or a tune file and print it as it will
//! run, every default filled in (as `nginx -T` prints its configuration).

use super::{CheckArgs, emit, print_warnings};
use crate::error::Error;
use crate::run::cost::preflight;
use crate::spec::{FileKind, file_kind, read_document};
use crate::sweep::Plan;
use serde_json::Value;
use std::path::Path;
use std::process::ExitCode;

pub(super) fn run(args: CheckArgs) -> Result<ExitCode, Error> {
    let doc = read_document(&args.file)?;
    let json = match file_kind(&doc) {
        FileKind::Model => {
            let (model, warnings) =
                crate::run::load_checked(&args.file, &args.overrides.set, None)?;
            print_warnings(&args.file, &warnings);
            serde_json::to_string_pretty(&model.effective_spec())
        }
        FileKind::Sweep => {
            if !args.overrides.set.is_empty() {
                return Err(Error::Usage(
                    "--set applies to models; a sweep sets fields with its own `set`".into(),
                ));
            }
            let (plan, warnings) = sweep(&args.file)?;
            print_warnings(&args.file, &warnings);
            serde_json::to_string_pretty(&plan)
        }
        FileKind::Tune => {
            if !args.overrides.set.is_empty() {
                return Err(Error::Usage(
                    "--set applies to models; a tune file's scenarios set their own fields".into(),
                ));
            }
            serde_json::to_string_pretty(&tune(&args.file)?)
        }
    }
    .map_err(|e| Error::Usage(e.to_string()))?;
    emit(&format!("{json}\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// Checks a tune file as `hcsim tune` does before it runs anything, and
/// describes it: the candidates, scenarios, the search's rungs and runs.
fn tune(path: &Path) -> Result<Value, Error> {
    let setup = crate::tune::Setup::load(path)?;
    let rungs = crate::tune::schedule(&setup);
    let candidates: Vec<Value> = setup
        .candidates
        .iter()
        .map(|c| serde_json::json!({"index": c.index, "label": c.label, "set": c.set_args()}))
        .collect();
    let scenarios: Vec<Value> = setup
        .scenarios
        .iter()
        .map(|s| serde_json::json!({"name": s.name, "set": s.set}))
        .collect();
    Ok(serde_json::json!({
        "name": setup.name,
        "model_file": setup.model_file,
        "seed": setup.seed,
        "rungs_reps": rungs,
        "first_rung_runs": setup.candidates.len() * setup.scenarios.len() * rungs[0] as usize,
        "verify_reps": setup.verify_reps,
        "candidates": candidates,
        "scenarios": scenarios,
        "objectives": setup.objectives.iter().map(|o| o.name.clone()).collect::<Vec<_>>(),
        "constraints": setup.constraints.iter().map(|c| c.text.clone()).collect::<Vec<_>>(),
    }))
}

/// Checks a sweep file as `hcsim sweep` would before running it (every point
/// patched and validated, charts naming real axes) and describes it: the
/// points, the runs, and the first point's model with every default written
/// out. Also returns the warnings of every point, each once, with the first
/// point that has it.
fn sweep(path: &Path) -> Result<(Value, Vec<(String, String)>), Error> {
    let plan = Plan::load(path, &Default::default())?;
    let h = &plan.header;
    // One warning per field, from the first point that has it.
    let mut by_field: Vec<(String, String, usize, usize)> = vec![];
    for (i, model) in plan.models.iter().enumerate() {
        let mut found = model.warnings();
        found.extend(preflight(model, None).unwrap_or_else(|reason| vec![(String::new(), reason)]));
        for (field, msg) in found {
            match by_field.iter_mut().find(|(f, ..)| *f == field) {
                Some(w) => w.3 += 1,
                None => by_field.push((field, msg, i, 1)),
            }
        }
    }
    let n = plan.models.len();
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
        .models
        .first()
        .map(|m| serde_json::to_value(m.effective_spec()));
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
