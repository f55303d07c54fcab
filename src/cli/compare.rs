//! `hcsim compare DIR DIR…`: finished runs side by side, with the noise
//! verdict, on stdout; `compare.html` with the timelines overlaid.

use super::{CompareArgs, CompareFormat, emit, export};
use crate::error::Error;
use crate::output::compare::{self, RunDir, page, render};
use std::process::ExitCode;

pub(super) fn run(args: CompareArgs) -> Result<ExitCode, Error> {
    let runs: Vec<RunDir> = args
        .dirs
        .iter()
        .map(|d| RunDir::read(d))
        .collect::<Result<_, _>>()?;
    let c = compare::compare(&runs, args.all);
    export(
        &c,
        args.export_markdown.as_deref(),
        args.export_csv.as_deref(),
    )?;
    let html = if args.no_charts {
        None
    } else {
        let out = args
            .out
            .clone()
            .unwrap_or_else(|| compare::default_out(&runs));
        crate::output::prepare_dir(&out)?;
        let _lock = crate::sweep::DirLock::acquire(&out)?;
        Some(page::write(&out, &c, &runs)?)
    };
    match args.format {
        CompareFormat::Table => {
            let mut text = render::table(&c);
            if let Some(p) = html {
                text.push_str(&format!("\nwrote {}\n", p.display()));
            }
            emit(&text)?;
        }
        CompareFormat::Json => emit(&render::json(&c))?,
        CompareFormat::Markdown => emit(&render::markdown(&c))?,
        CompareFormat::Csv => emit(&render::csv(&c).map_err(|e| Error::Usage(e.to_string()))?)?,
    }
    Ok(ExitCode::SUCCESS)
}
