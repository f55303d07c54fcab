//! `hcsim import FILE`: a gateway config → a model (JSON, every default
//! written out), with the workload and faults given here.

use super::{ConfigFormat, ImportArgs, emit, print_warnings};
use crate::config::import::{self, Format, Options, Workload};
use crate::error::Error;
use crate::spec::apply_sets;
use std::process::ExitCode;

pub(super) fn run(args: ImportArgs) -> Result<ExitCode, Error> {
    let mut workload = Workload::default();
    if let Some(r) = args.rps {
        if !(r.is_finite() && r > 0.0) {
            return Err(Error::Usage(format!("--rps {r}: expected a positive rate")));
        }
        workload.rate_per_s = r;
    }
    if let Some(d) = &args.duration {
        workload.duration = crate::engine::time::parse_duration(d)
            .map_err(|e| Error::Usage(format!("--duration {d}: {e}")))?;
    }
    for f in &args.faults {
        workload
            .faults
            .push(import::parse_fault(f).map_err(|e| Error::Usage(format!("--fault {f}: {e}")))?);
    }
    let opts = Options {
        format: args.format.map(|f| match f {
            ConfigFormat::Nginx => Format::Nginx,
            ConfigFormat::Haproxy => Format::Haproxy,
            ConfigFormat::Envoy => Format::Envoy,
            ConfigFormat::Istio => Format::Istio,
            ConfigFormat::Kubernetes => Format::Kubernetes,
            ConfigFormat::Kong => Format::Kong,
            ConfigFormat::Linkerd => Format::Linkerd,
            ConfigFormat::Caddy => Format::Caddy,
            ConfigFormat::Traefik => Format::Traefik,
        }),
        target: args.target.clone(),
        nodes: args.nodes,
    };
    let imported = import::read(&args.file, &opts, &workload)?;
    for w in &imported.warnings {
        super::say(&format!("warning: {w}"));
    }
    let mut doc = imported.doc.clone();
    apply_sets(&mut doc, &args.file, &args.overrides.set)?;
    let model = imported.model_of(&doc, &args.file)?;
    print_warnings(&args.file, &model.warnings());
    let json = serde_json::to_string_pretty(&model.effective_spec())
        .map_err(|e| Error::Usage(e.to_string()))?;
    match &args.out {
        Some(p) => crate::output::write_atomic(p, format!("{json}\n").as_bytes())?,
        None => emit(&format!("{json}\n"))?,
    }
    Ok(ExitCode::SUCCESS)
}
