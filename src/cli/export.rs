//! `hcsim export MODEL --to FORMAT`: the gateway part of a model as a
//! config snippet (or, with `--full`, a whole nginx/HAProxy config).

use super::{ExportArgs, ExportFormat, emit, print_warnings};
use crate::config::export::{self, Options};
use crate::error::Error;
use std::process::ExitCode;

pub fn run(args: ExportArgs) -> Result<ExitCode, Error> {
    let (model, warnings) = crate::run::load_checked(&args.model, &args.set, None)?;
    print_warnings(&args.model, &warnings);
    let opts = Options::of(&model);
    let text = match (args.to, args.full) {
        (ExportFormat::Nginx, false) => export::nginx::write_with(&model, &opts),
        (ExportFormat::Nginx, true) => export::nginx::config(&model, &opts),
        (ExportFormat::Haproxy, false) => export::haproxy::write_with(&model, &opts),
        (ExportFormat::Haproxy, true) => export::haproxy::config(&model, &opts),
        (ExportFormat::Envoy, _) => export::envoy::write_with(&model, &opts),
        (ExportFormat::Istio, _) => export::istio::write(&model),
    }
    .map_err(|e| Error::Invalid {
        path: args.model.clone(),
        field: "gateway".into(),
        reason: format!(
            "cannot be written as {} config: {e}",
            format!("{:?}", args.to).to_lowercase()
        ),
    })?;
    match &args.out {
        Some(p) => crate::output::write_atomic(p, text.as_bytes())?,
        None => emit(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}
