//! The single error type returned by every public charting function.

use std::fmt;
use std::path::{Path, PathBuf};

use plotters::drawing::DrawingAreaErrorKind;

/// Why a chart could not be written. Every variant names the output file it was producing.
#[derive(Debug)]
pub enum PlotError {
    /// The requested image size is zero or unreasonably large.
    InvalidSize {
        path: PathBuf,
        width: u32,
        height: u32,
    },
    /// The embedded font could not be parsed or registered.
    Font { path: PathBuf, cause: String },
    /// Plotters reported an error while drawing.
    Draw { path: PathBuf, cause: String },
    /// The PNG encoder failed.
    Encode { path: PathBuf, cause: String },
    /// Creating the output directory or writing the file failed.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl PlotError {
    /// The output file that was being produced when the error happened.
    pub fn path(&self) -> &Path {
        match self {
            PlotError::InvalidSize { path, .. }
            | PlotError::Font { path, .. }
            | PlotError::Draw { path, .. }
            | PlotError::Encode { path, .. }
            | PlotError::Io { path, .. } => path,
        }
    }
}

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlotError::InvalidSize {
                path,
                width,
                height,
            } => write!(
                f,
                "cannot render {}: invalid image size {width}x{height}",
                path.display()
            ),
            PlotError::Font { path, cause } => write!(
                f,
                "cannot render {}: embedded font unusable: {cause}",
                path.display()
            ),
            PlotError::Draw { path, cause } => {
                write!(f, "cannot draw {}: {cause}", path.display())
            }
            PlotError::Encode { path, cause } => {
                write!(f, "cannot encode {}: {cause}", path.display())
            }
            PlotError::Io { path, source } => {
                write!(f, "cannot write {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for PlotError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PlotError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A drawing failure, before the output path is known.
#[derive(Debug)]
pub(crate) struct DrawErr(pub String);

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for DrawErr {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        DrawErr(e.to_string())
    }
}

pub(crate) type DResult<T = ()> = Result<T, DrawErr>;
