//! `hcsim reproduce`: the seed experiments' figures beside hcsim's.

use super::{ReproduceArgs, emit};
use crate::error::Error;
use crate::output::table::wrap_to;
use crate::reproduce::{Models, Row};
use std::io::IsTerminal;
use std::process::ExitCode;

/// The width of the table when stdout is not a terminal.
const DEFAULT_WIDTH: usize = 120;

pub(super) fn run(args: ReproduceArgs) -> Result<ExitCode, Error> {
    let models = args.models.map_or(Models::Shipped, Models::Dir);
    let rows = crate::reproduce::rows(&models)?;
    if args.markdown {
        emit(&crate::reproduce::markdown(&rows))?;
    } else {
        emit(&text_table(&rows, width()))?;
    }
    let outside = rows.iter().filter(|r| r.is_outside()).count();
    let line = verdict_line(&rows);
    if outside > 0 {
        super::say(&line);
        return Ok(ExitCode::from(1));
    }
    emit(&format!("{line}\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// The terminal's width, or [`DEFAULT_WIDTH`] when stdout is not one.
fn width() -> usize {
    let term = std::io::stdout().is_terminal();
    let cols = term
        .then(|| console::Term::stdout().size_checked())
        .flatten();
    cols.map_or(DEFAULT_WIDTH, |(_, w)| usize::from(w).max(60))
}

/// The rows as a table that fits `width` columns: long cells wrap within
/// their column, and the reasons of the rows that differ by design are
/// footnotes under the table.
fn text_table(rows: &[Row], width: usize) -> String {
    let mut notes: Vec<String> = Vec::new();
    let mut table = vec![
        ["exp", "case", "metric", "seed", "hcsim", "verdict"]
            .map(String::from)
            .to_vec(),
    ];
    for r in rows {
        let verdict = match r.verdict.split_once(": ") {
            Some((word, reason)) => {
                notes.push(reason.to_string());
                format!("{word} [{}]", notes.len())
            }
            None => r.verdict.clone(),
        };
        table.push(vec![
            r.experiment.to_string(),
            r.case.clone(),
            r.metric.clone(),
            r.seed.clone(),
            r.hcsim.clone(),
            verdict,
        ]);
    }
    let mut out = wrap_to(&table, width);
    if !notes.is_empty() {
        out.push('\n');
    }
    for (i, note) in notes.iter().enumerate() {
        let mark = format!("[{}] ", i + 1);
        out.push_str(&crate::output::table::wrap_text(&mark, note, width));
    }
    out
}

/// One line: how many figures are within their band, outside it, or differ
/// by design (with the reason in the table).
fn verdict_line(rows: &[Row]) -> String {
    let within = rows.iter().filter(|r| r.verdict == "within").count();
    let outside = rows.iter().filter(|r| r.is_outside()).count();
    let differs = rows
        .iter()
        .filter(|r| r.verdict.starts_with("differs"))
        .count();
    let other = rows.len() - within - outside - differs;
    let mut line = format!(
        "reproduce: {} figures, {within} within their band, {outside} outside",
        rows.len()
    );
    if differs > 0 {
        line.push_str(&format!(", {differs} differ by design (see the notes)"));
    }
    if other > 0 {
        line.push_str(&format!(", {other} for information"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(verdict: &str) -> Row {
        Row::info(
            "E1",
            "a case whose description is long enough to need wrapping at sixty columns",
            "a metric",
            "3",
            "3",
            verdict,
        )
    }

    #[test]
    fn the_table_fits_its_width_and_moves_reasons_to_notes() {
        let rows = [
            row("within"),
            row("differs: a reason that is long, long, long, long"),
        ];
        let t = text_table(&rows, 60);
        assert!(t.lines().all(|l| l.chars().count() <= 60), "{t}");
        assert!(t.contains("differs [1]"), "{t}");
        assert!(t.contains("[1] a reason"), "{t}");
        let line = verdict_line(&rows);
        assert!(line.contains("1 within"), "{line}");
        assert!(line.contains("1 differ by design"), "{line}");
    }
}
