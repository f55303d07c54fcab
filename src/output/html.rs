//! `report.html`: one self-contained page per run or sweep (charts inline as
//! SVG, no external assets, works offline) to attach to a design document.

use super::charts::Drawn;
use super::summary::Summary;
use super::sweep::SweepResults;
use crate::error::Error;
use crate::stats::Spread;
use std::fmt::Write as _;
use std::path::Path;

/// A block of the page.
pub enum Block {
    Heading(String),
    Paragraph(String),
    /// Preformatted text (e.g. the model with defaults filled in).
    Pre(String),
    /// A table: header row, then rows.
    Table(Vec<String>, Vec<Vec<String>>),
    /// A chart: its title and its SVG document.
    Chart(String, String),
}

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:'DejaVu Sans',Verdana,Arial,sans-serif;margin:2em auto;max-width:1250px;color:#222;padding:0 1em}\
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}\
th:first-child,td:first-child{text-align:left}th{background:#f3f3f3}\
pre{background:#f7f7f7;padding:.8em;overflow:auto;font-size:.85em;border:1px solid #e3e3e3}\
figure{margin:1em 0}figure svg{width:100%;height:auto;border:1px solid #eee}figcaption{font-size:.9em;color:#555}";

/// Counts charts that rendered with a non-empty box and records script
/// errors, so a headless browser can check the page (`data-*` on `<body>`).
const CHECK: &str = "window.addEventListener('error',function(e){var b=document.body;b.dataset.errors=(b.dataset.errors||'')+e.message+';'});\
window.addEventListener('load',function(){var figs=document.querySelectorAll('figure svg');var ok=0;\
figs.forEach(function(s){var r=s.getBoundingClientRect();if(r.width>10&&r.height>10&&s.querySelectorAll('*').length>20){ok++}});\
document.body.dataset.charts=figs.length;document.body.dataset.chartsOk=ok;});";

/// Renders a page.
pub fn render(title: &str, blocks: &[Block]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style><script>{CHECK}</script></head><body>\n<h1>{}</h1>\n",
        escape(title),
        escape(title)
    );
    for b in blocks {
        match b {
            Block::Heading(h) => {
                let _ = writeln!(out, "<h2>{}</h2>", escape(h));
            }
            Block::Paragraph(p) => {
                let _ = writeln!(out, "<p>{}</p>", escape(p));
            }
            Block::Pre(p) => {
                let _ = writeln!(out, "<pre>{}</pre>", escape(p));
            }
            Block::Table(head, rows) => {
                out.push_str("<table><thead><tr>");
                for h in head {
                    let _ = write!(out, "<th>{}</th>", escape(h));
                }
                out.push_str("</tr></thead><tbody>\n");
                for r in rows {
                    out.push_str("<tr>");
                    for c in r {
                        let _ = write!(out, "<td>{}</td>", escape(c));
                    }
                    out.push_str("</tr>\n");
                }
                out.push_str("</tbody></table>\n");
            }
            Block::Chart(caption, svg) => {
                let body = svg
                    .trim_start()
                    .strip_prefix("<?xml")
                    .and_then(|r| r.find("?>").map(|i| &r[i + 2..]))
                    .unwrap_or(svg);
                let _ = writeln!(
                    out,
                    "<figure>{}<figcaption>{}</figcaption></figure>",
                    body.trim(),
                    escape(caption)
                );
            }
        }
    }
    out.push_str("</body></html>\n");
    out
}

/// Reads each drawn chart's SVG into a block.
pub fn chart_blocks(drawn: &[Drawn]) -> Result<Vec<Block>, Error> {
    drawn
        .iter()
        .map(|d| {
            let p = d.stem.with_extension("svg");
            let svg = std::fs::read_to_string(&p).map_err(|source| Error::ReadFile {
                path: p.clone(),
                source,
            })?;
            Ok(Block::Chart(d.title.clone(), svg))
        })
        .collect()
}

fn stat_cell(s: &Spread, digits: usize) -> String {
    match (s.median, s.min, s.max) {
        (Some(m), Some(lo), Some(hi)) if (hi - lo).abs() > 1e-9 => {
            format!("{m:.digits$} [{lo:.digits$}–{hi:.digits$}]")
        }
        (Some(m), _, _) => format!("{m:.digits$}"),
        _ => "–".into(),
    }
}

/// The page of a run output directory.
pub fn run_report(dir: &Path, drawn: &[Drawn]) -> Result<(), Error> {
    let summary = Summary::read(&dir.join("summary.json"))?;
    let mut blocks = vec![];
    if !summary.model_spec.description.is_empty() {
        blocks.push(Block::Paragraph(summary.model_spec.description.clone()));
    }
    if !summary.set.is_empty() {
        blocks.push(Block::Paragraph(format!(
            "What if: this run overrides the model file with --set {}.",
            summary.set.join(" --set ")
        )));
    }
    blocks.push(Block::Heading("Key figures".into()));
    let c = &summary.client;
    blocks.push(Block::Table(
        vec![
            "clients".into(),
            "requests".into(),
            "ok".into(),
            "errors".into(),
            "timeouts".into(),
            "unfinished".into(),
            "p50 (ms)".into(),
            "p99 (ms)".into(),
            "p99.9 (ms)".into(),
            "max (ms)".into(),
        ],
        vec![vec![
            "all".into(),
            stat_cell(&c.requests, 0),
            stat_cell(&c.ok, 0),
            stat_cell(&c.errors, 0),
            stat_cell(&c.timeouts, 0),
            stat_cell(&c.unfinished, 0),
            stat_cell(&c.latency_ms.p50, 1),
            stat_cell(&c.latency_ms.p99, 1),
            stat_cell(&c.latency_ms.p999, 1),
            stat_cell(&c.latency_ms.max, 1),
        ]],
    ));
    if !summary.warnings.is_empty() {
        blocks.push(Block::Heading("Warnings".into()));
        for w in &summary.warnings {
            blocks.push(Block::Paragraph(format!("{}: {}", w.code, w.message)));
        }
    }
    type Column = (
        &'static str,
        fn(&super::summary::NodeStats) -> &Spread,
        usize,
    );
    let metrics: [Column; 10] = [
        ("attempts", |n| &n.attempts, 0),
        ("answered", |n| &n.answered, 0),
        ("share", |n| &n.share, 3),
        ("failures", |n| &n.failures, 0),
        ("ejections", |n| &n.ejections, 0),
        ("ejected_time_s", |n| &n.ejected_time_s, 2),
        ("first_ejection_delay_s", |n| &n.first_ejection_delay_s, 2),
        ("recovery_delay_s", |n| &n.recovery_delay_s, 2),
        ("utilization", |n| &n.utilization, 3),
        ("backlog_refused", |n| &n.backlog_refused, 0),
    ];
    let mut head = vec!["node".to_string()];
    head.extend(metrics.iter().map(|(m, ..)| m.to_string()));
    // A fleet of gateways: when the last replica ejected the node, and how many did.
    let fleet = summary.nodes.iter().any(|n| n.fleet.is_some());
    if fleet {
        head.extend(["last_ejection_delay_s".into(), "replicas_ejected".into()]);
    }
    let rows = summary
        .nodes
        .iter()
        .map(|n| {
            let mut r = vec![n.name.clone()];
            r.extend(metrics.iter().map(|(_, f, d)| stat_cell(f(n), *d)));
            if let Some(f) = &n.fleet {
                r.push(stat_cell(&f.last_ejection_delay_s, 2));
                r.push(stat_cell(&f.replicas_ejected, 3));
            } else if fleet {
                r.extend(["–".to_string(), "–".to_string()]);
            }
            r
        })
        .collect();
    blocks.push(Block::Table(head, rows));
    blocks.push(Block::Paragraph(
        "Each cell: median over the replications, with [min–max] when they differ; – means it did not happen or does not apply.".into(),
    ));
    blocks.push(Block::Heading("Charts".into()));
    blocks.extend(chart_blocks(drawn)?);
    blocks.push(Block::Heading("What was simulated".into()));
    blocks.push(Block::Paragraph(
        "The model as hcsim ran it, with every default filled in:".into(),
    ));
    let spec = serde_json::to_value(&summary.model_spec).unwrap_or_default();
    blocks.push(Block::Pre(
        serde_json::to_string_pretty(&spec).unwrap_or_default(),
    ));
    blocks.push(Block::Heading("Provenance".into()));
    let seeds: Vec<String> = summary.runs.iter().map(|r| r.seed.to_string()).collect();
    blocks.push(Block::Table(
        vec!["".into(), "".into()],
        vec![
            vec!["hcsim".into(), summary.hcsim_version.clone()],
            vec!["model file".into(), summary.file.clone()],
            vec![
                "overrides (--set)".into(),
                if summary.set.is_empty() {
                    "none".into()
                } else {
                    summary.set.join(" ")
                },
            ],
            vec!["command".into(), summary.command.clone()],
            vec!["replications".into(), summary.reps.to_string()],
            vec!["seeds".into(), seeds.join(", ")],
        ],
    ));
    let page = render(&format!("hcsim report: {}", summary.model), &blocks);
    super::write_atomic(&dir.join("report.html"), page.as_bytes())
}

/// The page of a sweep output directory (from `results.json`).
pub fn sweep_report(dir: &Path, drawn: &[Drawn]) -> Result<(), Error> {
    let results = SweepResults::read(&dir.join("results.json"))?;
    let axes = &results.axes;
    let mut blocks = vec![];
    if let Some(d) = results.definition["description"].as_str() {
        blocks.push(Block::Paragraph(d.to_string()));
    }
    blocks.push(Block::Heading("Charts".into()));
    blocks.extend(chart_blocks(drawn)?);
    // The key table: each point's axis values and the charted metrics.
    let mut metrics: Vec<String> = vec![];
    for d in drawn {
        for m in &results.metrics {
            if d.title.contains(m.as_str()) && !metrics.contains(m) {
                metrics.push(m.clone());
            }
        }
    }
    blocks.push(Block::Heading("Key table".into()));
    let overloaded: Vec<String> = results
        .points
        .iter()
        .filter(|p| p.overloaded > 0)
        .map(|p| p.point.to_string())
        .collect();
    if !overloaded.is_empty() {
        blocks.push(Block::Paragraph(format!(
            "Warning (overload): {} of {} points overloaded a node or left over 1% of requests \
             unfinished in some replication (points {}); their figures describe a saturated \
             system. See the overloaded column.",
            overloaded.len(),
            results.points.len(),
            overloaded.join(", ")
        )));
    }
    let mut head = axes.clone();
    head.push("overloaded".into());
    head.extend(metrics.iter().cloned());
    let rows = results
        .points
        .iter()
        .map(|p| {
            let mut r: Vec<String> = axes.iter().map(|a| p.value_text(a)).collect();
            r.push(match p.overloaded {
                0 => "no".into(),
                k => format!("{k}/{}", results.reps),
            });
            r.extend(metrics.iter().map(|m| match p.stats.get(m) {
                Some(s) => stat_cell(&s.spread(), 3),
                None => "–".into(),
            }));
            r
        })
        .collect();
    blocks.push(Block::Table(head, rows));
    blocks.push(Block::Paragraph(
        "Each cell: median over the replications, with [min–max] when they differ; – means it did not happen.".into(),
    ));
    blocks.push(Block::Heading("What was simulated".into()));
    blocks.push(Block::Paragraph("The sweep definition:".into()));
    blocks.push(Block::Pre(
        serde_json::to_string_pretty(&results.definition).unwrap_or_default(),
    ));
    blocks.push(Block::Paragraph(
        "The base model, with every default filled in (each point patches it along the axes):"
            .into(),
    ));
    blocks.push(Block::Pre(
        serde_json::to_string_pretty(&results.model).unwrap_or_default(),
    ));
    blocks.push(Block::Heading("Provenance".into()));
    blocks.push(Block::Table(
        vec!["".into(), "".into()],
        vec![
            vec!["hcsim".into(), results.hcsim_version.clone()],
            vec![
                "sweep file".into(),
                match results.sweep_file.as_str() {
                    "" => "none: a --param grid (see the command)".into(),
                    f => f.to_string(),
                },
            ],
            vec!["model file".into(), results.model_file.clone()],
            vec!["command".into(), results.command.clone()],
            vec![
                "points × replications".into(),
                format!("{} × {}", results.points.len(), results.reps),
            ],
            vec![
                "seeds".into(),
                format!("base {} ({})", results.seed, results.seeds.name()),
            ],
            vec!["fingerprint".into(), results.fingerprint.clone()],
        ],
    ));
    let page = render(&format!("hcsim sweep report: {}", results.sweep), &blocks);
    super::write_atomic(&dir.join("report.html"), page.as_bytes())
}
