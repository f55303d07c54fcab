//! `hcsim reproduce`: the seed experiments' figures beside hcsim's.

use super::{ReproduceArgs, emit};
use crate::error::Error;
use crate::output::table::align;
use std::process::ExitCode;

pub(super) fn run(args: ReproduceArgs) -> Result<ExitCode, Error> {
    let rows = crate::reproduce::rows(&args.models)?;
    if args.markdown {
        emit(&crate::reproduce::markdown(&rows))?;
    } else {
        let mut table = vec![vec![
            "exp".to_string(),
            "case".into(),
            "metric".into(),
            "seed".into(),
            "hcsim".into(),
            "verdict".into(),
        ]];
        for r in &rows {
            table.push(vec![
                r.experiment.to_string(),
                r.case.clone(),
                r.metric.clone(),
                r.seed.clone(),
                r.hcsim.clone(),
                r.verdict.clone(),
            ]);
        }
        emit(&align(&table))?;
    }
    let outside = rows.iter().filter(|r| r.is_outside()).count();
    if outside > 0 {
        super::say(&format!(
            "{outside} figure(s) outside their acceptance band"
        ));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
