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

/// Reads a config file (a regular file of a sane size) as UTF-8 text: a
/// byte-order mark is skipped; UTF-16 (with or without its mark) and NUL
/// bytes are refused with a message that says so, never echoing the bytes.
pub(super) fn read_text(path: &Path) -> Result<String, Error> {
    let utf16 = || {
        Loc::new(path, 1).error(
            "the file is UTF-16 text: hcsim reads UTF-8 (convert it, e.g. iconv -f UTF-16 -t UTF-8)",
        )
    };
    let text = match crate::spec::document::read_capped(path, "a config file") {
        Ok(t) => t,
        Err(e) => {
            let head = std::fs::File::open(path).ok().and_then(|f| {
                use std::io::Read;
                let mut b = [0u8; 2];
                f.take(2).read_exact(&mut b).ok().map(|_| b)
            });
            return Err(match head {
                Some([0xFF, 0xFE] | [0xFE, 0xFF]) => utf16(),
                _ => e,
            });
        }
    };
    if let Some(i) = text.find('\0') {
        let b = text.as_bytes();
        // ASCII text in UTF-16 has a NUL beside every other byte.
        let pairs = b.len().min(64) / 2;
        let nuls = (0..pairs)
            .filter(|&k| b[2 * k] == 0 || b[2 * k + 1] == 0)
            .count();
        if pairs > 0 && nuls * 4 >= pairs * 3 {
            return Err(utf16());
        }
        let line = text[..i].matches('\n').count() + 1;
        return Err(Loc::new(path, line)
            .error("a NUL byte: a config file is text (is this a binary file?)"));
    }
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}
