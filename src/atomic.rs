//! Files written atomically: into a temporary file beside the target, then
//! renamed over it, so a reader (or a full disk) never leaves half a file
//! where a good one was.
//!
//! Only a regular file is replaced that way. What a path names decides how
//! it is written ([`Target::of`]):
//!
//! - a regular file, or nothing yet: a temporary file in the same
//!   directory, renamed over it (the file keeps its permissions);
//! - a symbolic link: followed to the file it names (a chain of links too,
//!   relative ones from their own directory), which is then replaced as
//!   above, so the link stays a link and its target gets the content;
//! - a device (`/dev/null`, a terminal), a FIFO: written directly, never
//!   replaced (a rename would put a regular file where the node was);
//! - an open file descriptor (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`,
//!   as process substitution `>(...)` passes them): written directly, in
//!   append mode, so a `>> log` behind it keeps what it had;
//! - `-`: standard output.
//!
//! The temporary name fits wherever the final name fits: a name too long
//! for `<name>.tmp<pid>` is shortened and given a hash of the full name.

use std::fs::{File, OpenOptions};
use std::hash::{Hash, Hasher};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The longest file name most file systems take (`NAME_MAX`), in bytes.
const NAME_MAX: usize = 255;
/// Symbolic links followed before giving up (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Set when the process started with its standard output closed (`>&-`).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Records that standard output was closed when the process started. The
/// Rust runtime then points it at `/dev/null` before `main`, so writes
/// would succeed and vanish; with this set they fail instead.
pub fn mark_stdout_closed() {
    STDOUT_CLOSED.store(true, Ordering::Relaxed);
}

/// Whether standard output was closed when the process started.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// The error of a write to a standard output that was closed at start.
pub fn closed_stdout_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        "standard output is closed (started with >&-)",
    )
}

/// Where writing a path goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `-`: standard output.
    Stdout,
    /// A device, a FIFO or an open descriptor: opened and written as it is;
    /// `append` for descriptors (`/dev/fd/N`).
    Direct { path: PathBuf, append: bool },
    /// A regular file (or none yet) replaced through a temporary file: the
    /// path after any symbolic links.
    Replace(PathBuf),
}

impl Target {
    /// What writing `path` means (see the module docs). Fails on a
    /// directory and on a loop of symbolic links.
    pub fn of(path: &Path) -> io::Result<Target> {
        if path.as_os_str() == "-" {
            return Ok(Target::Stdout);
        }
        let mut p = path.to_path_buf();
        for _ in 0..MAX_LINKS {
            if is_descriptor(&p) {
                return Ok(Target::Direct {
                    path: p,
                    append: true,
                });
            }
            let meta = match std::fs::symlink_metadata(&p) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Target::Replace(p)),
                Err(e) => return Err(e),
                Ok(m) => m,
            };
            let kind = meta.file_type();
            if kind.is_symlink() {
                let to = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            } else if kind.is_file() {
                return Ok(Target::Replace(p));
            } else if kind.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "is a directory, not a file",
                ));
            } else {
                return Ok(Target::Direct {
                    path: p,
                    append: false,
                });
            }
        }
        Err(io::Error::other(format!(
            "more than {MAX_LINKS} symbolic links in a chain (a loop?)"
        )))
    }
}

/// A path that names an open file descriptor: an entry of a process's
/// `fd` directory in `/proc` (`/dev/fd` and `/dev/stdout` lead there).
fn is_descriptor(p: &Path) -> bool {
    let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return false;
    };
    std::fs::canonicalize(dir)
        .is_ok_and(|d| d.starts_with("/proc") && d.file_name().is_some_and(|n| n == "fd"))
}

/// A descriptor path that names this process's standard output (fd 1 of
/// `/proc/self/fd`, which `/dev/fd` and `/dev/stdout` lead to).
fn is_own_stdout(p: &Path) -> bool {
    p.file_name().is_some_and(|n| n == "1")
        && p.parent().is_some_and(|dir| {
            let here = std::fs::canonicalize(dir);
            here.is_ok() && here.ok() == std::fs::canonicalize("/proc/self/fd").ok()
        })
}

/// The temporary file beside `path` that a [`Staged`] file fills before the
/// rename: `<name>.tmp<pid>`, or, when that would be longer than a file
/// name may be, the name's start, `~`, a hash of the whole name and the
/// same suffix.
fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default();
    let suffix = format!(".tmp{}", std::process::id());
    let tmp_name = if name.len() + suffix.len() <= NAME_MAX {
        let mut n = name.to_owned();
        n.push(&suffix);
        n
    } else {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        name.hash(&mut h);
        let tag = format!("~{:016x}{suffix}", h.finish());
        let lossy = name.to_string_lossy();
        let mut keep = NAME_MAX - tag.len();
        while !lossy.is_char_boundary(keep) {
            keep -= 1;
        }
        format!("{}{tag}", &lossy[..keep]).into()
    };
    path.with_file_name(tmp_name)
}

/// Where a staged file's bytes go.
pub enum Sink {
    File(BufWriter<File>),
    Stdout(io::Stdout),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::File(f) => f.write(buf),
            Sink::Stdout(_) if stdout_closed() => Err(closed_stdout_error()),
            Sink::Stdout(s) => s.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Sink::File(f) => f.write_all(buf),
            Sink::Stdout(_) if stdout_closed() => Err(closed_stdout_error()),
            Sink::Stdout(s) => s.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File(f) => f.flush(),
            Sink::Stdout(s) => s.flush(),
        }
    }
}

/// A file being written beside its target, renamed over it by
/// [`Staged::commit`] (or [`commit_all`]); dropped uncommitted, the
/// temporary file is removed and the target left as it was. A target that
/// is not a regular file ([`Target`]) is written directly instead, and
/// committing it only flushes.
pub struct Staged {
    path: PathBuf,
    /// The temporary file, renamed over `tmp.1` on commit.
    tmp: Option<(PathBuf, PathBuf)>,
    sink: Option<Sink>,
}

impl Staged {
    /// Starts writing `path` (its parent directory is created).
    pub fn create(path: &Path) -> io::Result<Staged> {
        if path.as_os_str() != "-"
            && let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir)?;
        }
        let (tmp, sink) = match Target::of(path)? {
            Target::Stdout => (None, Sink::Stdout(io::stdout())),
            Target::Direct { path: p, append } => {
                // `/dev/stdout` of a process started with `>&-` is the
                // `/dev/null` the runtime put there: the bytes would vanish.
                if append && stdout_closed() && is_own_stdout(&p) {
                    return Err(closed_stdout_error());
                }
                let f = OpenOptions::new().write(true).append(append).open(&p)?;
                (None, Sink::File(BufWriter::new(f)))
            }
            Target::Replace(target) => {
                let tmp = temp_path(&target);
                let f = File::create(&tmp)?;
                // A replaced file keeps its mode (a script's `chmod 600` holds).
                if let Ok(m) = std::fs::metadata(&target) {
                    let _ = f.set_permissions(m.permissions());
                }
                (Some((tmp, target)), Sink::File(BufWriter::new(f)))
            }
        };
        Ok(Staged {
            path: path.to_path_buf(),
            tmp,
            sink: Some(sink),
        })
    }

    /// The target, as it was named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the content goes.
    pub fn writer(&mut self) -> &mut Sink {
        self.sink
            .as_mut()
            .expect("a staged file is open until committed")
    }

    /// Flushes the content; a temporary file is also synced to disk.
    fn sync(&mut self) -> io::Result<()> {
        match self.sink.take() {
            Some(Sink::File(w)) => {
                let f = w.into_inner().map_err(io::IntoInnerError::into_error)?;
                if self.tmp.is_some() {
                    f.sync_all()?;
                }
            }
            Some(Sink::Stdout(mut s)) => match s.flush() {
                // A closed pipe (`| head`) ends the output quietly, as on stdout.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe && !stdout_closed() => {}
                r => r?,
            },
            None => {}
        }
        Ok(())
    }

    /// Renames the written file over the target (or, for a target written
    /// directly, flushes it).
    pub fn commit(mut self) -> io::Result<()> {
        self.sync()?;
        match self.tmp.take() {
            Some((tmp, target)) => std::fs::rename(&tmp, &target).inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            }),
            None => Ok(()),
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        self.sink = None;
        if let Some((tmp, _)) = &self.tmp {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Commits several staged files: all are synced before any is renamed, so
/// a full disk leaves the previous set, not a mix. Returns the target of
/// the file that failed with its error.
pub fn commit_all(mut files: Vec<Staged>) -> Result<(), (PathBuf, io::Error)> {
    for f in &mut files {
        f.sync().map_err(|e| (f.path.clone(), e))?;
    }
    for f in files {
        let path = f.path.clone();
        f.commit().map_err(|e| (path, e))?;
    }
    Ok(())
}

/// Writes `path` by streaming into a temporary file (`fill` writes the
/// content), syncing it and renaming it over `path`. On any error the
/// temporary file is removed and `path` is left as it was. Creates the
/// parent directory. A path that is not a regular file is written as
/// [`Target`] says.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut staged = Staged::create(path)?;
    fill(staged.writer())?;
    staged.commit()
}

/// Writes `bytes` to `path` atomically (see [`write_with`]).
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, |w| w.write_all(bytes))
}

#[cfg(all(test, unix))]
mod tests;
