//! `report.html`: one self-contained page per run or sweep (charts inline as
//! SVG, no external assets, works offline) to attach to a design document;
//! and `report.md`, the same page in Markdown with the charts' PNGs beside
//! it, to paste into docs and wikis. Metrics and parameters are named as
//! [`super::vocabulary`] does.

use super::charts::Drawn;
use super::summary::Summary;
use super::sweep::SweepResults;
use super::vocabulary::{self, Shown};
use crate::error::Error;
use crate::spec::overrides::shown;
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
    /// A bulleted list.
    List(Vec<String>),
    /// A chart: its title, its SVG document and its PNG's path relative to the page.
    Chart(String, String, String),
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
pre{background:#f7f7f7;padding:.8em;overflow:auto;font-size:.85em;border:1px solid #e3e3e3;white-space:pre-wrap;overflow-wrap:anywhere}\
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
            Block::List(items) => {
                out.push_str("<ul>");
                for i in items {
                    let _ = write!(out, "<li>{}</li>", escape(i));
                }
                out.push_str("</ul>\n");
            }
            Block::Chart(caption, svg, _) => {
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

/// `|` and line breaks would end a Markdown table cell.
fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Renders the same blocks as Markdown, charts as their PNGs.
pub fn render_markdown(title: &str, blocks: &[Block]) -> String {
    let mut out = format!("# {title}\n\n");
    for b in blocks {
        match b {
            Block::Heading(h) => {
                let _ = writeln!(out, "## {h}\n");
            }
            Block::Paragraph(p) => {
                let _ = writeln!(out, "{p}\n");
            }
            Block::Pre(p) => {
                let _ = writeln!(out, "```json\n{p}\n```\n");
            }
            Block::List(items) => {
                for i in items {
                    let _ = writeln!(out, "- {i}");
                }
                out.push('\n');
            }
            Block::Table(head, rows) => {
                let head: Vec<String> = head.iter().map(|h| md_cell(h)).collect();
                let _ = writeln!(out, "| {} |", head.join(" | "));
                let _ = writeln!(out, "|{}", "---|".repeat(head.len().max(1)));
                for r in rows {
                    let r: Vec<String> = r.iter().map(|c| md_cell(c)).collect();
                    let _ = writeln!(out, "| {} |", r.join(" | "));
                }
                out.push('\n');
            }
            Block::Chart(caption, _, png) => {
                let _ = writeln!(out, "![{}]({png})\n\n*{}*\n", md_cell(caption), caption);
            }
        }
    }
    out
}

/// Writes `report.html` and `report.md` of `blocks` into `dir`.
fn write_reports(dir: &Path, title: &str, blocks: &[Block]) -> Result<(), Error> {
    super::write_atomic(&dir.join("report.html"), render(title, blocks).as_bytes())?;
    super::write_atomic(
        &dir.join("report.md"),
        render_markdown(title, blocks).as_bytes(),
    )
}

/// Reads each drawn chart's SVG into a block (its PNG named relative to the
/// directory above `charts/`).
pub fn chart_blocks(drawn: &[Drawn]) -> Result<Vec<Block>, Error> {
    drawn
        .iter()
        .map(|d| {
            let p = d.stem.with_extension("svg");
            let svg = std::fs::read_to_string(&p).map_err(|source| Error::ReadFile {
                path: p.clone(),
                source,
            })?;
            let name = d
                .stem
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(Block::Chart(
                d.title.clone(),
                svg,
                format!("charts/{name}.png"),
            ))
        })
        .collect()
}

/// The list of the charts, so that a reader sees every slice at a glance.
fn chart_list(drawn: &[Drawn]) -> Block {
    Block::List(drawn.iter().map(|d| d.title.clone()).collect())
}

/// A cell: the median over the replications, with [min–max] when they
/// differ, shown in the column's unit (counts as whole numbers).
fn stat_cell(s: &Spread, shown: &Shown) -> String {
    // The unit is in the header: no `%` after every number.
    let format = match shown.format {
        crate::plot::ValueFormat::Percent => crate::plot::ValueFormat::Sig,
        f => f,
    };
    let f = |v: f64| format.format(Some(v * shown.factor));
    match (s.median, s.min, s.max) {
        (Some(m), Some(lo), Some(hi)) if (hi - lo).abs() > 1e-9 => {
            format!("{} [{}–{}]", f(m), f(lo), f(hi))
        }
        (Some(m), _, _) => f(m),
        _ => "–".into(),
    }
}

/// A column of spreads: its header (name and unit) and its cells.
fn spread_column(name: &str, unit: vocabulary::Unit, spreads: &[&Spread]) -> (String, Vec<String>) {
    let shown = unit.shown(
        spreads
            .iter()
            .flat_map(|s| [s.median, s.min, s.max])
            .flatten(),
    );
    let head = vocabulary::Term {
        subject: String::new(),
        name: name.to_string(),
        unit,
        known: true,
    }
    .label(&shown);
    (head, spreads.iter().map(|s| stat_cell(s, &shown)).collect())
}

/// The page of a run output directory (and its Markdown twin).
pub fn run_report(dir: &Path, drawn: &[Drawn]) -> Result<(), Error> {
    let summary = Summary::read(&dir.join("summary.json"))?;
    let mut blocks = vec![];
    if !summary.model_spec.description.is_empty() {
        blocks.push(Block::Paragraph(summary.model_spec.description.clone()));
    }
    if !summary.set.is_empty() {
        blocks.push(Block::Paragraph(format!(
            "What if: this run overrides the model file with {}.",
            shown(&summary.set)
        )));
    }
    blocks.push(Block::Paragraph(format!(
        "From: {}.",
        super::charts::run_provenance(&summary)
    )));
    blocks.push(Block::Heading("Key figures".into()));
    blocks.push(client_table(&summary));
    if !summary.warnings.is_empty() {
        blocks.push(Block::Heading("Warnings".into()));
        for w in &summary.warnings {
            blocks.push(Block::Paragraph(format!("{}: {}", w.code, w.message)));
        }
    }
    blocks.push(node_table(&summary));
    blocks.push(Block::Paragraph(
        "Each cell: median over the replications, with [min–max] when they differ; – means it did not happen or does not apply.".into(),
    ));
    blocks.push(Block::Heading("Charts".into()));
    blocks.push(chart_list(drawn));
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
            vec!["overrides (--set)".into(), shown(&summary.set)],
            vec!["command".into(), summary.command.clone()],
            vec!["replications".into(), summary.reps.to_string()],
            vec!["seeds".into(), seeds.join(", ")],
        ],
    ));
    write_reports(dir, &format!("hcsim report: {}", summary.model), &blocks)
}

/// The clients' figures: requests by outcome, latency percentiles.
fn client_table(summary: &Summary) -> Block {
    use vocabulary::Unit::{Count, Millis};
    let c = &summary.client;
    let l = &c.latency_ms;
    let columns = [
        ("requests", Count, &c.requests),
        ("2xx answers", Count, &c.ok),
        ("errors", Count, &c.errors),
        ("client timeouts", Count, &c.timeouts),
        ("unfinished", Count, &c.unfinished),
        ("median latency", Millis, &l.p50),
        ("p99 latency", Millis, &l.p99),
        ("p99.9 latency", Millis, &l.p999),
        ("max latency", Millis, &l.max),
    ];
    let mut head = vec!["clients".to_string()];
    let mut row = vec!["all".to_string()];
    for (name, unit, s) in columns {
        let (h, cells) = spread_column(name, unit, &[s]);
        head.push(h);
        row.extend(cells);
    }
    Block::Table(head, vec![row])
}

/// One row per node, one column per metric, named and in units.
fn node_table(summary: &Summary) -> Block {
    type Column = (&'static str, fn(&super::summary::NodeStats) -> &Spread);
    let metrics: [Column; 10] = [
        ("attempts", |n| &n.attempts),
        ("answered", |n| &n.answered),
        ("share", |n| &n.share),
        ("failures", |n| &n.failures),
        ("ejections", |n| &n.ejections),
        ("ejected_time_s", |n| &n.ejected_time_s),
        ("first_ejection_delay_s", |n| &n.first_ejection_delay_s),
        ("recovery_delay_s", |n| &n.recovery_delay_s),
        ("utilization", |n| &n.utilization),
        ("backlog_refused", |n| &n.backlog_refused),
    ];
    let mut head = vec!["node".to_string()];
    let mut columns: Vec<Vec<String>> = vec![];
    let column = |key: &str, spreads: Vec<&Spread>| {
        let t = vocabulary::metric(key);
        spread_column(&t.name, t.unit, &spreads)
    };
    for (key, f) in metrics {
        let (h, cells) = column(key, summary.nodes.iter().map(f).collect());
        head.push(h);
        columns.push(cells);
    }
    // A fleet of gateways: when the last replica ejected the node, and how many did.
    if summary.nodes.iter().any(|n| n.fleet.is_some()) {
        let none = Spread::default();
        let fleet = |f: fn(&super::summary::FleetStats) -> &Spread| -> Vec<&Spread> {
            summary
                .nodes
                .iter()
                .map(|n| n.fleet.as_deref().map_or(&none, f))
                .collect()
        };
        for (key, spreads) in [
            ("last_ejection_delay_s", fleet(|f| &f.last_ejection_delay_s)),
            ("replicas_ejected", fleet(|f| &f.replicas_ejected)),
        ] {
            let (h, cells) = column(key, spreads);
            head.push(h);
            columns.push(cells);
        }
    }
    let rows = summary
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut r = vec![n.name.clone()];
            r.extend(columns.iter().map(|c| c[i].clone()));
            r
        })
        .collect();
    Block::Table(head, rows)
}

/// The page of a sweep output directory (from `results.json`), and its Markdown twin.
pub fn sweep_report(dir: &Path, drawn: &[Drawn]) -> Result<(), Error> {
    let results = SweepResults::read(&dir.join("results.json"))?;
    let axes = &results.axes;
    let mut blocks = vec![];
    if let Some(d) = results.definition["description"].as_str() {
        blocks.push(Block::Paragraph(d.to_string()));
    }
    blocks.push(Block::Paragraph(format!(
        "From: {}.",
        super::charts::sweep_provenance(&results)
    )));
    blocks.push(Block::Heading("Charts".into()));
    blocks.push(chart_list(drawn));
    blocks.extend(chart_blocks(drawn)?);
    // The key table: each point's axis values and the charted metrics.
    let mut metrics: Vec<String> = vec![];
    for m in drawn.iter().filter_map(|d| d.metric.as_ref()) {
        if results.metrics.contains(m) && !metrics.contains(m) {
            metrics.push(m.clone());
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
    let mut head: Vec<String> = axes.iter().map(|a| vocabulary::param(a).name).collect();
    head.push("overloaded".into());
    let mut columns: Vec<Vec<String>> = vec![];
    for m in &metrics {
        let t = vocabulary::metric(m);
        let spreads: Vec<Spread> = results
            .points
            .iter()
            .map(|p| p.stats.get(m).map(|s| s.spread()).unwrap_or_default())
            .collect();
        let (_, cells) = spread_column(&t.name, t.unit, &spreads.iter().collect::<Vec<_>>());
        let shown = t.unit.shown(
            spreads
                .iter()
                .flat_map(|s| [s.median, s.min, s.max])
                .flatten(),
        );
        head.push(t.full_label(&shown));
        columns.push(cells);
    }
    let rows = results
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut r: Vec<String> = axes.iter().map(|a| p.value_text(a)).collect();
            r.push(match p.overloaded {
                0 => "no".into(),
                k => format!("{k}/{}", results.reps),
            });
            r.extend(columns.iter().map(|c| c[i].clone()));
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
    write_reports(
        dir,
        &format!("hcsim sweep report: {}", results.sweep),
        &blocks,
    )
}
