//! `hcsim export MODEL --to FORMAT`: the gateway part of a model as a
//! config snippet (or, with `--full`, a whole nginx/HAProxy config).

use super::{ExportArgs, ExportFormat, emit, print_warnings};
use crate::config::export::{self, Options};
use crate::error::Error;
use std::process::ExitCode;

pub(super) fn run(args: ExportArgs) -> Result<ExitCode, Error> {
    let (model, warnings) = crate::run::load_checked(&args.model, &args.overrides.set, None)?;
    print_warnings(&args.model, &warnings);
    let opts = options(&args, &model)?;
    let text = match (args.to, args.full) {
        (ExportFormat::Nginx, false) => export::nginx::write_with(&model, &opts),
        (ExportFormat::Nginx, true) => export::nginx::config(&model, &opts),
        (ExportFormat::Haproxy, false) => export::haproxy::write_with(&model, &opts),
        (ExportFormat::Haproxy, true) => export::haproxy::config(&model, &opts),
        (ExportFormat::Envoy, _) => export::envoy::write_with(&model, &opts),
        (ExportFormat::Istio, _) => export::istio::write(&model),
        (ExportFormat::Kong, _) => export::kong::write_with(&model, &opts),
        (ExportFormat::Caddy, false) => export::caddy::write_with(&model, &opts),
        (ExportFormat::Caddy, true) => export::caddy::config(&model, &opts),
        (ExportFormat::Traefik, _) => export::traefik::write_with(&model, &opts),
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

/// The default addresses, with `--listen` and `--address` applied.
fn options(args: &ExportArgs, model: &crate::spec::Model) -> Result<Options, Error> {
    let mut opts = Options::of(model);
    let bad = |field: &str, reason: String| Error::Invalid {
        path: args.model.clone(),
        field: field.into(),
        reason,
    };
    if let Some(l) = &args.listen {
        if !export::is_address(l) {
            return Err(bad("--listen", format!("expected HOST:PORT, found `{l}`")));
        }
        opts.listen = l.clone();
    }
    for a in &args.address {
        let Some((node, addr)) = a.split_once('=') else {
            return Err(bad(
                "--address",
                format!("expected NODE=HOST:PORT, found `{a}`"),
            ));
        };
        let Some(i) = model.nodes.iter().position(|n| n.name == node) else {
            return Err(bad(
                "--address",
                format!("the model has no node named `{node}`"),
            ));
        };
        if !export::is_address(addr) {
            return Err(bad(
                "--address",
                format!("expected HOST:PORT for node `{node}`, found `{addr}`"),
            ));
        }
        opts.addresses[i] = addr.to_string();
    }
    Ok(opts)
}
