//! Files written atomically: into a temporary file beside the target, then
//! renamed over it, so a reader (or a full disk) never leaves half a file
//! where a good one was.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The temporary file beside `path` that [`write_with`] fills before the rename.
fn temp_path(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    PathBuf::from(tmp)
}

/// A file being written beside its target, renamed over it by
/// [`Staged::commit`] (or [`commit_all`]); dropped uncommitted, the
/// temporary file is removed and the target left as it was.
pub(crate) struct Staged {
    path: PathBuf,
    tmp: PathBuf,
    file: Option<BufWriter<File>>,
}

impl Staged {
    /// Starts writing `path` (its parent directory is created).
    pub(crate) fn create(path: &Path) -> io::Result<Staged> {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = temp_path(path);
        let file = BufWriter::new(File::create(&tmp)?);
        Ok(Staged {
            path: path.to_path_buf(),
            tmp,
            file: Some(file),
        })
    }

    /// The target.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Where the content goes.
    pub(crate) fn writer(&mut self) -> &mut BufWriter<File> {
        self.file
            .as_mut()
            .expect("a staged file is open until committed")
    }

    /// Flushes and syncs the temporary file.
    fn sync(&mut self) -> io::Result<()> {
        if let Some(w) = self.file.take() {
            let f = w.into_inner().map_err(io::IntoInnerError::into_error)?;
            f.sync_all()?;
        }
        Ok(())
    }

    /// Renames the written file over the target.
    pub(crate) fn commit(mut self) -> io::Result<()> {
        self.sync()?;
        std::fs::rename(&self.tmp, &self.path)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        // Committed: the rename moved it away, and this finds nothing.
        self.file = None;
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// Commits several staged files: all are synced before any is renamed, so
/// a full disk leaves the previous set, not a mix. Returns the target of
/// the file that failed with its error.
pub(crate) fn commit_all(mut files: Vec<Staged>) -> Result<(), (PathBuf, io::Error)> {
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
/// parent directory.
pub(crate) fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut staged = Staged::create(path)?;
    fill(staged.writer())?;
    staged.commit()
}

/// Writes `bytes` to `path` atomically (see [`write_with`]).
pub(crate) fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, |w| w.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_keeps_the_previous_file() {
        let dir = std::env::temp_dir().join(format!("hcsim-atomic-{}", std::process::id()));
        let path = dir.join("f.txt");
        write(&path, b"good").unwrap();
        let e = write_with(&path, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        });
        assert!(e.is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"good");
        assert!(!temp_path(&path).exists(), "the temporary file is removed");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
