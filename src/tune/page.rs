//! What `hcsim tune` writes besides `tune.json`'s data: the frontier chart
//! (one point per candidate, the frontier joined, the recommendation
//! ringed), the recommended settings as a config snippet for the model's
//! gateway (through `config::export`), and `report.html`.

use super::result::TuneResult;
use super::setup::Setup;
use crate::config::export;
use crate::error::Error;
use crate::output::html::{Block, render};
use crate::output::write_atomic;
use crate::plot::{PointKind, ScatterPoint, ScatterSpec, scatter};
use crate::spec::GatewayFlavor;
use crate::sweep::fmt_f64;
use std::path::{Path, PathBuf};

/// The chart's file stem under the output directory.
pub const CHART: &str = "frontier";
/// The snippet files, one per gateway format.
pub const SNIPPETS: [&str; 3] = [
    "recommended.nginx.conf",
    "recommended.haproxy.cfg",
    "recommended.envoy.yaml",
];

/// Writes tune.json, the chart, the snippet and report.html; returns the
/// snippet's file name (if the gateway's config can say the settings) or why not.
pub fn write_outputs(
    out: &Path,
    setup: &Setup,
    r: &TuneResult,
) -> Result<Result<String, String>, Error> {
    let json = serde_json::to_string_pretty(r).expect("a tune result serializes") + "\n";
    write_atomic(&out.join("tune.json"), json.as_bytes())?;
    chart(out, setup, r)?;
    let snippet = match &r.recommended {
        Some(rec) => snippet(setup, rec.candidate)?,
        None => Err("no recommendation".to_string()),
    };
    if let Ok((name, text)) = &snippet {
        write_atomic(&out.join(name), text.as_bytes())?;
    }
    let page = report(out, r, snippet.as_ref().map(|(_, t)| t.as_str()).ok())?;
    write_atomic(&out.join("report.html"), page.as_bytes())?;
    Ok(snippet.map(|(name, _)| name))
}

/// The frontier chart: the chart objectives of every candidate.
fn chart(out: &Path, setup: &Setup, r: &TuneResult) -> Result<(), Error> {
    let (x, y) = setup.chart;
    let (xo, yo) = (&r.objectives[x], &r.objectives[y]);
    let rec = r.recommended.as_ref().map(|x| x.candidate);
    let points = r
        .candidates
        .iter()
        .filter_map(|c| {
            let px = c.objectives[&xo.name]?;
            let py = c.objectives[&yo.name]?;
            let kind = match (c.feasible, c.pareto, rec == Some(c.index)) {
                (_, true, true) => PointKind::Chosen,
                (_, true, false) => PointKind::Frontier,
                (true, false, _) => PointKind::Other,
                (false, _, _) => PointKind::Excluded,
            };
            let label = if c.pareto {
                format!("#{} {}", c.index, c.label)
            } else {
                String::new()
            };
            Some(ScatterPoint {
                x: px,
                y: py,
                kind,
                label,
            })
        })
        .collect();
    let describe = |o: &super::result::ObjectiveReport| {
        format!(
            "{} of {} in {} ({})",
            o.stat.name(),
            o.metric,
            o.scenario,
            o.name
        )
    };
    let spec = ScatterSpec {
        title: format!(
            "{}: the frontier of {} candidates",
            r.name,
            r.candidates.len()
        ),
        caption: format!(
            "One point per candidate at its last rung of the search; the frontier is taken over all {} objectives, so in two of them it need not look convex. Ringed: the recommendation.",
            r.objectives.len()
        ),
        x_label: describe(xo),
        y_label: describe(yo),
        points,
        size: None,
    };
    scatter(&spec, out.join(CHART)).map_err(|e| Error::Write {
        path: e.path().to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    })
}

/// The recommended settings in the words of the model's gateway: HAProxy
/// for an HAProxy gateway, else nginx if it can say them, else Envoy.
/// `Err` says why none can.
fn snippet(setup: &Setup, candidate: usize) -> Result<Result<(String, String), String>, Error> {
    let model = setup.candidate_model(candidate)?;
    let head = format!(
        "# recommended by `hcsim tune {}` (candidate #{candidate}): {}\n",
        setup.file.display(),
        setup.candidates[candidate].set_args().join(" ")
    );
    let tries: Vec<(&str, export::Unsupported)> = if model.gateway.flavor == GatewayFlavor::Haproxy
    {
        match export::haproxy::write(&model) {
            Ok(t) => return Ok(Ok((SNIPPETS[1].into(), head + &t))),
            Err(e) => vec![("HAProxy", e)],
        }
    } else {
        let nginx = match export::nginx::write(&model) {
            Ok(t) => return Ok(Ok((SNIPPETS[0].into(), head + &t))),
            Err(e) => e,
        };
        match export::envoy::write(&model) {
            Ok(t) => return Ok(Ok((SNIPPETS[2].into(), head + &t))),
            Err(e) => vec![("nginx", nginx), ("Envoy", e)],
        }
    };
    let why: Vec<String> = tries.iter().map(|(f, e)| format!("{f}: {e}")).collect();
    Ok(Err(why.join("; ")))
}

fn cell(v: Option<f64>) -> String {
    v.map_or("–".into(), fmt_f64)
}

/// report.html: what was searched, the frontier with its verification, the
/// chart, the recommendation as config and the commands that reproduce it.
fn report(out: &Path, r: &TuneResult, snippet: Option<&str>) -> Result<String, Error> {
    let mut blocks = vec![];
    if !r.description.is_empty() {
        blocks.push(Block::Paragraph(r.description.clone()));
    }
    let rungs: Vec<String> = r
        .search
        .rungs
        .iter()
        .map(|g| format!("{} candidates × {} reps", g.candidates, g.reps))
        .collect();
    blocks.push(Block::Paragraph(format!(
        "{} candidates × {} scenarios, searched by {} ({}); {} runs, {} simulated hours. Command: {}",
        r.search.candidates,
        r.search.scenarios,
        r.search.method.replace('_', " "),
        rungs.join(", then "),
        r.runs,
        fmt_f64(r.simulated_hours),
        r.command
    )));
    blocks.push(Block::Heading("Scenarios, objectives, constraints".into()));
    blocks.push(Block::Table(
        vec!["scenario".into(), "overrides".into()],
        r.scenarios
            .iter()
            .map(|s| vec![s.name.clone(), s.set.join(" ")])
            .collect(),
    ));
    blocks.push(Block::Table(
        vec![
            "objective".into(),
            "metric".into(),
            "scenario".into(),
            "stat".into(),
            "goal".into(),
            "weight".into(),
        ],
        r.objectives
            .iter()
            .map(|o| {
                vec![
                    o.name.clone(),
                    o.metric.clone(),
                    o.scenario.clone(),
                    o.stat.name().into(),
                    format!("{:?}", o.goal).to_lowercase(),
                    fmt_f64(o.weight),
                ]
            })
            .collect(),
    ));
    for c in &r.constraints {
        blocks.push(Block::Paragraph(format!("Constraint: {}", c.text)));
    }
    blocks.push(Block::Heading(
        "Pareto set and verification on fresh seeds".into(),
    ));
    let mut head = vec!["candidate".to_string()];
    head.extend(r.objectives.iter().map(|o| o.name.clone()));
    head.push("verified: constraints hold".into());
    let verified = |c: usize| {
        r.verification
            .as_ref()
            .and_then(|v| v.candidates.iter().find(|x| x.candidate == c))
    };
    let rows = r
        .pareto
        .iter()
        .map(|&c| {
            let cand = &r.candidates[c];
            let star = if r.recommended.as_ref().is_some_and(|x| x.candidate == c) {
                " (recommended)"
            } else {
                ""
            };
            let mut row = vec![format!("#{c} {}{star}", cand.label)];
            row.extend(r.objectives.iter().map(|o| cell(cand.objectives[&o.name])));
            row.push(verified(c).map_or("–".into(), |v| {
                if v.feasible { "yes" } else { "no" }.into()
            }));
            row
        })
        .collect();
    blocks.push(Block::Table(head, rows));
    let svg_path: PathBuf = out.join(format!("{CHART}.svg"));
    let svg = std::fs::read_to_string(&svg_path).map_err(|source| Error::ReadFile {
        path: svg_path.clone(),
        source,
    })?;
    blocks.push(Block::Chart(
        "The frontier".into(),
        svg,
        format!("{CHART}.png"),
    ));
    blocks.push(Block::Heading("Recommendation".into()));
    match (&r.recommended, &r.verification) {
        (Some(rec), Some(v)) => {
            blocks.push(Block::Paragraph(format!(
                "#{} {}: {}. On {} fresh seeds per scenario, {}.",
                rec.candidate,
                rec.label,
                rec.set.join(" "),
                v.reps,
                if v.recommended_holds {
                    "every constraint still holds"
                } else {
                    "a constraint does not hold: treat this recommendation with care"
                }
            )));
            if let Some(text) = snippet {
                blocks.push(Block::Pre(text.to_string()));
            }
            let commands: Vec<String> = v
                .recommended_runs
                .iter()
                .map(|s| s.command.clone())
                .collect();
            blocks.push(Block::Paragraph(
                "The verification runs of the recommendation, scenario by scenario:".into(),
            ));
            blocks.push(Block::Pre(commands.join("\n")));
        }
        _ => blocks.push(Block::Paragraph(
            "No candidate meets every constraint: nothing to recommend.".into(),
        )),
    }
    Ok(render(&format!("hcsim tune: {}", r.name), &blocks))
}
