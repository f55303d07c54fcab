//! Where a setting was read (`nginx.conf:23`), the warnings about settings
//! hcsim does not model, and the error of a malformed config.

use crate::error::Error;
use std::fmt;
use std::path::{Path, PathBuf};

/// A line of a config file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Loc {
    /// The file as the user named it (or as an `include` resolved it).
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
}

impl Loc {
    pub fn new(file: &Path, line: usize) -> Loc {
        Loc {
            file: file.to_path_buf(),
            line,
        }
    }

    /// The error of a malformed config at this line: `file:line: msg`.
    pub fn error(&self, msg: impl Into<String>) -> Error {
        Error::Parse {
            path: PathBuf::from(self.to_string()),
            field: String::new(),
            msg: msg.into(),
        }
    }

    /// A warning at this line.
    pub fn warning(&self, message: impl Into<String>) -> Warning {
        Warning {
            at: self.clone(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// A setting that affects health or routing but that the imported model
/// does not carry (or carries only approximately).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub at: Loc,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.message)
    }
}

/// Reads a config file (a regular file of a sane size).
pub(super) fn read_text(path: &Path) -> Result<String, Error> {
    crate::spec::document::read_capped(path, "a config file")
}
