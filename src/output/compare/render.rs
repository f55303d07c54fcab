//! A [`Comparison`] as text: an aligned table for people, Markdown, CSV and
//! JSON. With one run (`hcsim run --export-markdown`) the same renderers
//! give that run's metrics without differences.

use super::{Cell, Comparison, MetricRow, VsFirst};
use crate::output::table::align;
use crate::output::vocabulary;
use crate::spec::overrides::shown;
use crate::stats::Spread;
use std::fmt::Write as _;

/// A metric that is a fraction 0–1 (a share, a utilization): shown in %,
/// as the run's table and report show it, its difference in percentage points.
fn is_fraction(metric: &str) -> bool {
    vocabulary::metric(metric).unit == vocabulary::Unit::Fraction
}

/// How a metric's values are written: unit and decimals.
fn fmt(metric: &str, v: f64, signed: bool) -> String {
    let sign = if signed && v > 0.0 { "+" } else { "" };
    let last = metric.rsplit('.').next().unwrap_or(metric);
    if is_fraction(metric) {
        format!("{sign}{:.1}%", v * 100.0)
    } else if metric.contains("latency_ms") {
        format!("{sign}{v:.2}ms")
    } else if last.ends_with("_s") {
        format!("{sign}{v:.3}s")
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{sign}{v:.0}")
    } else if (v * 2.0).fract() == 0.0 && v.abs() < 1e15 {
        // the median of an even number of counts
        format!("{sign}{v:.1}")
    } else {
        format!("{sign}{v:.3}")
    }
}

/// `median` or `median [min–max]` when the replications differ; `-` without data.
fn spread_cell(metric: &str, s: &Spread) -> String {
    match (s.median, s.min, s.max) {
        (Some(m), Some(lo), Some(hi)) if s.varies() => format!(
            "{} [{}–{}]",
            fmt(metric, m, false),
            fmt(metric, lo, false),
            fmt(metric, hi, false)
        ),
        (Some(m), ..) => fmt(metric, m, false),
        _ => "-".into(),
    }
}

/// `+900 (+15.0%)`; a fraction's difference is in percentage points.
fn diff_cell(metric: &str, v: &VsFirst) -> String {
    let Some(d) = v.diff else {
        return "-".into();
    };
    let mut s = fmt(metric, d, true);
    if is_fraction(metric) {
        s = s.replace('%', " pp");
    } else if let Some(r) = v.rel_diff {
        let _ = write!(s, " ({}{:.1}%)", if r > 0.0 { "+" } else { "" }, r * 100.0);
    }
    s
}

fn p_cell(v: &VsFirst) -> String {
    match v.p_value {
        Some(p) if p < 0.001 => "<0.001".into(),
        Some(p) => format!("{p:.3}"),
        None => "-".into(),
    }
}

/// The header lines: which run is which, and what the verdict means.
fn legend(c: &Comparison) -> Vec<String> {
    let mut out = vec![];
    for (i, r) in c.runs.iter().enumerate() {
        let set = if r.set.is_empty() {
            String::new()
        } else {
            format!("  {}", shown(&r.set))
        };
        out.push(format!(
            "[{}] {}  model {}  seed {}  reps {}{set}",
            i + 1,
            r.dir,
            r.model,
            r.seed,
            r.reps
        ));
    }
    out
}

/// The header row and the rows of the comparison's table.
pub(super) fn rows(c: &Comparison) -> Vec<Vec<String>> {
    let n = c.runs.len();
    let mut head = vec!["metric".to_string()];
    head.extend((1..=n).map(|i| format!("[{i}]")));
    for i in 2..=n {
        if n > 2 {
            head.extend([
                format!("Δ [{i}]"),
                format!("p [{i}]"),
                format!("[{i}] vs [1]"),
            ]);
        } else {
            head.extend(["Δ".to_string(), "p".to_string(), "noise".to_string()]);
        }
    }
    let mut out = vec![head];
    for row in &c.metrics {
        let mut r = vec![row.metric.clone()];
        r.extend(
            row.cells
                .iter()
                .map(|cell| spread_cell(&row.metric, &cell.spread)),
        );
        for cell in row.cells.iter().skip(1) {
            let v = cell
                .vs_first
                .as_ref()
                .expect("every run after the first has a difference");
            r.extend([
                diff_cell(&row.metric, v),
                p_cell(v),
                v.verdict.text().to_string(),
            ]);
        }
        out.push(r);
    }
    out
}

/// The aligned table printed by `hcsim compare`.
pub fn table(c: &Comparison) -> String {
    let mut out = legend(c).join("\n");
    out.push_str("\n\n");
    out.push_str(&align(&rows(c)));
    if c.runs.len() > 1 {
        let _ = write!(
            out,
            "\ncells: median [min–max] over the replications; Δ: median minus [1]'s (shares and utilizations in percentage points)\nnoise: {}\n",
            c.test
        );
    }
    out
}

/// A Markdown table (GitHub flavour) with the legend above it.
pub fn markdown(c: &Comparison) -> String {
    let mut out = String::new();
    for l in legend(c) {
        let _ = writeln!(out, "- {}", l.replace('|', "\\|"));
    }
    out.push('\n');
    let rows = rows(c);
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<String> = r.iter().map(|s| s.replace('|', "\\|")).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
        if i == 0 {
            let marks: Vec<&str> = (0..r.len())
                .map(|j| if j == 0 { ":---" } else { "---:" })
                .collect();
            let _ = writeln!(out, "| {} |", marks.join(" | "));
        }
    }
    if c.runs.len() > 1 {
        let _ = writeln!(
            out,
            "\nCells: median [min–max] over the replications. Noise: {}.",
            c.test
        );
    }
    out
}

fn num(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// CSV, one row per metric and run (long format, for pandas or a spreadsheet).
pub fn csv(c: &Comparison) -> Result<String, ::csv::Error> {
    let mut w = ::csv::Writer::from_writer(vec![]);
    w.write_record([
        "metric", "run", "dir", "median", "mean", "min", "max", "n", "diff", "rel_diff", "p_value",
        "verdict",
    ])?;
    for MetricRow { metric, cells, .. } in &c.metrics {
        for (
            i,
            Cell {
                spread: s,
                vs_first,
            },
        ) in cells.iter().enumerate()
        {
            let v = vs_first.as_ref();
            w.write_record([
                metric.clone(),
                (i + 1).to_string(),
                c.runs[i].dir.clone(),
                num(s.median),
                num(s.mean),
                num(s.min),
                num(s.max),
                s.n.to_string(),
                num(v.and_then(|v| v.diff)),
                num(v.and_then(|v| v.rel_diff)),
                num(v.and_then(|v| v.p_value)),
                v.map(|v| v.verdict.text().to_string()).unwrap_or_default(),
            ])?;
        }
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8(bytes).expect("CSV of UTF-8 text is UTF-8"))
}

/// Pretty JSON with a final newline.
pub fn json(c: &Comparison) -> String {
    serde_json::to_string_pretty(c).expect("a comparison serializes") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_carry_their_units() {
        assert_eq!(fmt("nodes.a.share", 0.25, false), "25.0%");
        assert_eq!(fmt("nodes.a.utilization", 0.186, false), "18.6%");
        assert_eq!(
            fmt("nodes[\"10.1.0.11:8080\"].utilization", 0.5, false),
            "50.0%"
        );
        assert_eq!(fmt("client.latency_ms.p99", 5.4, false), "5.40ms");
        assert_eq!(fmt("nodes.a.first_ejection_delay_s", 2.5, true), "+2.500s");
        assert_eq!(fmt("client.errors", 12.0, true), "+12");
        assert_eq!(fmt("client.errors", -3.0, true), "-3");
        assert_eq!(fmt("client.errors", 12.5, false), "12.5");
        assert_eq!(fmt("client.errors", 0.25, false), "0.250");
    }
}
