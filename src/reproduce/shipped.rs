//! The models `hcsim reproduce` runs, built into the binary: it then works
//! from any directory, on the very files shipped in `models/` (`--models DIR`
//! runs the files of another directory instead).

use crate::error::Error;
use std::path::{Path, PathBuf};

/// Where the experiments' models come from.
#[derive(Clone, Debug)]
pub enum Models {
    /// The copies of `models/e*.json` built into the binary.
    Shipped,
    /// The files of a directory.
    Dir(PathBuf),
}

/// `models/e*.json`, as built in.
const SHIPPED: &[(&str, &str)] = &[
    (
        "e1a-refused.json",
        include_str!("../../models/e1a-refused.json"),
    ),
    (
        "e1b-503-default.json",
        include_str!("../../models/e1b-503-default.json"),
    ),
    (
        "e1c-503-next-upstream.json",
        include_str!("../../models/e1c-503-next-upstream.json"),
    ),
    (
        "e2-p00-flaky-0pct.json",
        include_str!("../../models/e2-p00-flaky-0pct.json"),
    ),
    (
        "e2-p02-flaky-2pct.json",
        include_str!("../../models/e2-p02-flaky-2pct.json"),
    ),
    (
        "e2-p10-flaky-10pct.json",
        include_str!("../../models/e2-p10-flaky-10pct.json"),
    ),
    (
        "e2-p30-flaky-30pct.json",
        include_str!("../../models/e2-p30-flaky-30pct.json"),
    ),
    (
        "e2-p70-flaky-70pct.json",
        include_str!("../../models/e2-p70-flaky-70pct.json"),
    ),
    (
        "e3-ft02-recovery.json",
        include_str!("../../models/e3-ft02-recovery.json"),
    ),
    (
        "e3-ft05-recovery.json",
        include_str!("../../models/e3-ft05-recovery.json"),
    ),
    (
        "e3-ft10-recovery.json",
        include_str!("../../models/e3-ft10-recovery.json"),
    ),
    (
        "e4-stopped-backend.json",
        include_str!("../../models/e4-stopped-backend.json"),
    ),
    (
        "e5-client-timeout-first.json",
        include_str!("../../models/e5-client-timeout-first.json"),
    ),
    (
        "e5-connect-timeout-shorter.json",
        include_str!("../../models/e5-connect-timeout-shorter.json"),
    ),
    (
        "e5-recommended-passive-tcp-http.json",
        include_str!("../../models/e5-recommended-passive-tcp-http.json"),
    ),
    (
        "e6-i05-k1-crash.json",
        include_str!("../../models/e6-i05-k1-crash.json"),
    ),
    (
        "e6-i05-k1-hang.json",
        include_str!("../../models/e6-i05-k1-hang.json"),
    ),
    (
        "e6-i05-k3-crash.json",
        include_str!("../../models/e6-i05-k3-crash.json"),
    ),
    (
        "e6-i05-k3-hang.json",
        include_str!("../../models/e6-i05-k3-hang.json"),
    ),
    (
        "e6-i10-k1-crash.json",
        include_str!("../../models/e6-i10-k1-crash.json"),
    ),
    (
        "e6-i10-k1-hang.json",
        include_str!("../../models/e6-i10-k1-hang.json"),
    ),
    (
        "e6-i10-k3-crash.json",
        include_str!("../../models/e6-i10-k3-crash.json"),
    ),
    (
        "e6-i10-k3-hang.json",
        include_str!("../../models/e6-i10-k3-hang.json"),
    ),
    (
        "e7-heartbeat-ttl-crash.json",
        include_str!("../../models/e7-heartbeat-ttl-crash.json"),
    ),
    (
        "e7-heartbeat-ttl-hang.json",
        include_str!("../../models/e7-heartbeat-ttl-hang.json"),
    ),
    (
        "e7-probe-crash-fixed-delay.json",
        include_str!("../../models/e7-probe-crash-fixed-delay.json"),
    ),
    (
        "e7-probe-crash.json",
        include_str!("../../models/e7-probe-crash.json"),
    ),
    (
        "e7-probe-hang-fixed-delay.json",
        include_str!("../../models/e7-probe-hang-fixed-delay.json"),
    ),
    (
        "e7-probe-hang.json",
        include_str!("../../models/e7-probe-hang.json"),
    ),
    (
        "e8-threads-10.json",
        include_str!("../../models/e8-threads-10.json"),
    ),
    (
        "e8-threads-200.json",
        include_str!("../../models/e8-threads-200.json"),
    ),
    (
        "e8-threads-50.json",
        include_str!("../../models/e8-threads-50.json"),
    ),
];

impl Models {
    /// The model document `file` and the path its messages name.
    pub(crate) fn document(&self, file: &str) -> Result<(serde_json::Value, PathBuf), Error> {
        match self {
            Models::Dir(dir) => {
                let path = dir.join(file);
                Ok((crate::spec::read_document(&path)?, path))
            }
            Models::Shipped => {
                let path = Path::new("models").join(file);
                let text = SHIPPED
                    .iter()
                    .find(|(name, _)| *name == file)
                    .map(|(_, text)| *text)
                    .ok_or_else(|| Error::Usage(format!("{}: not built in", path.display())))?;
                let doc = serde_json::from_str(text).map_err(|e| Error::Json {
                    path: path.clone(),
                    line: e.line(),
                    column: e.column(),
                    msg: e.to_string(),
                })?;
                Ok((doc, path))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every experiment model shipped in `models/` is built in, so the
    /// figures outside the repository are those of the repository's files.
    #[test]
    fn every_experiment_model_is_built_in() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with('e') && n.as_bytes().get(1).is_some_and(u8::is_ascii_digit))
            .filter(|n| n.ends_with(".json"))
            .collect();
        files.sort();
        let built: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
        assert_eq!(files, built);
        for (name, _) in SHIPPED {
            Models::Shipped.document(name).unwrap();
        }
    }
}
