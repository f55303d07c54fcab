//! `hcsim schema model|sweep|tune`: the JSON Schema of model, sweep or tune files.

use super::{SchemaArgs, SchemaKind, emit};
use crate::error::Error;
use std::process::ExitCode;

pub(super) fn run(args: SchemaArgs) -> Result<ExitCode, Error> {
    let schema = match args.kind {
        SchemaKind::Model => crate::spec::schema::model(),
        SchemaKind::Sweep => crate::spec::schema::sweep(),
        SchemaKind::Tune => crate::spec::schema::tune(),
    };
    let json = serde_json::to_string_pretty(&schema).map_err(|e| Error::Usage(e.to_string()))?;
    emit(&format!("{json}\n"))?;
    Ok(ExitCode::SUCCESS)
}
