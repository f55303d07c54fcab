//! Errors a user can fix: each names the file, the JSON path and what was expected.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum Error {
    /// A file could not be read.
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file is not valid JSON.
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        msg: String,
    },
    /// A JSON value has the wrong type or an unknown field.
    Parse {
        path: PathBuf,
        field: String,
        msg: String,
    },
    /// A value is well-formed but not acceptable.
    Invalid {
        path: PathBuf,
        field: String,
        reason: String,
    },
    /// A run would cost too much to start, or stopped at `--max-events`.
    Limit { path: PathBuf, reason: String },
    /// A `--set PATH=VALUE` argument could not be applied.
    Set { arg: String, reason: String },
    /// A `--param PATH=LIST` argument of `hcsim sweep MODEL` cannot make a grid axis.
    Param { arg: String, reason: String },
    /// An output could not be written.
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A command-line usage problem that clap cannot see.
    Usage(String),
    /// A sweep axis names a model path that does not exist.
    UnknownSweepPath {
        sweep: PathBuf,
        axis: String,
        path: String,
        model: PathBuf,
        reason: String,
    },
    /// An error in the model of a sweep, at one of its points.
    InSweep {
        sweep: PathBuf,
        context: String,
        source: Box<Error>,
    },
    /// A sweep checkpoint or shard output cannot be used.
    Checkpoint { path: PathBuf, reason: String },
    /// Another process holds the lock of an output directory.
    Locked { dir: PathBuf, holder: String },
    /// Standard output could not be written (a full disk, `/dev/full`).
    Stdout(std::io::Error),
    /// A sweep stopped before all its runs were done; the done ones are checkpointed.
    Interrupted {
        done: usize,
        total: usize,
        checkpoint: PathBuf,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ReadFile { path, source } => {
                write!(f, "{}: cannot read: {source}", path.display())
            }
            Error::Json {
                path,
                line,
                column,
                msg,
            } => write!(
                f,
                "{}:{line}:{column}: not valid JSON: {msg}",
                path.display()
            ),
            Error::Parse { path, field, msg } if field.is_empty() => {
                write!(f, "{}: {msg}", path.display())
            }
            Error::Parse { path, field, msg } => {
                write!(f, "{}: {field}: {msg}", path.display())
            }
            Error::Invalid {
                path,
                field,
                reason,
            } => write!(f, "{}: {field}: {reason}", path.display()),
            Error::Limit { path, reason } => write!(f, "{}: {reason}", path.display()),
            Error::Set { arg, reason } => write!(f, "--set {arg}: {reason}"),
            Error::Param { arg, reason } => write!(f, "--param {arg}: {reason}"),
            Error::Write { path, source } => {
                write!(f, "{}: cannot write: {source}", path.display())
            }
            Error::Usage(msg) => f.write_str(msg),
            Error::UnknownSweepPath {
                sweep,
                axis,
                path,
                model,
                reason,
            } => write!(
                f,
                "{}: {axis}: `{path}` is not in the model {}: {reason}",
                sweep.display(),
                model.display()
            ),
            Error::InSweep {
                sweep,
                context,
                source,
            } => write!(f, "{}: {context}: {source}", sweep.display()),
            Error::Checkpoint { path, reason } => write!(f, "{}: {reason}", path.display()),
            Error::Locked { dir, holder } => write!(
                f,
                "{}: another hcsim is writing to this directory ({holder}); wait for it to finish, or use another --out",
                dir.display()
            ),
            Error::Stdout(source) => write!(f, "cannot write to stdout: {source}"),
            Error::Interrupted {
                done,
                total,
                checkpoint,
            } => write!(
                f,
                "stopped after {done} of {total} runs, which are kept in {}; run the same command with --resume to finish",
                checkpoint.display()
            ),
        }
    }
}

impl Error {
    /// Appends a note to the message of an error about a field of the model
    /// (`Parse` or `Invalid`) whose path is `field` or lies under it.
    pub fn note_under(self, field: &str, note: &str) -> Error {
        let under = |f: &str| {
            f == field
                || f.strip_prefix(field)
                    .is_some_and(|r| r.starts_with(['.', '[']))
        };
        match self {
            Error::Parse {
                path,
                field: f,
                msg,
            } if under(&f) => Error::Parse {
                path,
                msg: format!("{msg} ({note})"),
                field: f,
            },
            Error::Invalid {
                path,
                field: f,
                reason,
            } if under(&f) => Error::Invalid {
                path,
                reason: format!("{reason} ({note})"),
                field: f,
            },
            other => other,
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::ReadFile { source, .. } | Error::Write { source, .. } => Some(source),
            Error::InSweep { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}
