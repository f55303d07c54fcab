//! The lock of an output directory: one process writes a checkpoint and
//! outputs at a time. Every command that writes a directory takes it
//! (`run`, `sweep`, `merge`, `tune`, `plot`, `compare`, `replay`), so a run never
//! writes into a sweep in progress, nor a sweep's clean-up removes the
//! files of a run it did not write. The lock is an advisory `flock` on
//! `.hcsim.lock` (through `fs4`), which the OS releases when the holder
//! exits or is killed; the file says who holds it (pid, host, start time),
//! so a second writer is told whom it waits for. The file stays when the
//! lock is released: removing it would let two processes lock different
//! files of the same name.

use crate::error::Error;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The lock file in an output directory.
pub const LOCK_FILE: &str = ".hcsim.lock";

/// An exclusive lock on an output directory, held until dropped.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
    pub path: PathBuf,
}

impl DirLock {
    /// Locks `dir` (created if missing) for this process, or says which
    /// process holds it. Never blocks.
    pub fn acquire(dir: &Path) -> Result<DirLock, Error> {
        let werr = |p: &Path| {
            let p = p.to_path_buf();
            move |source| Error::Write { path: p, source }
        };
        if dir.exists() && !dir.is_dir() {
            return Err(Error::Usage(format!(
                "{}: is a file, not a directory: the outputs need a directory (name another with --out DIR)",
                dir.display()
            )));
        }
        std::fs::create_dir_all(dir).map_err(werr(dir))?;
        let path = dir.join(LOCK_FILE);
        // Not truncated on open: the holder's line must survive a refused attempt.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(werr(&path))?;
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => {}
            Err(fs4::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Error::Locked {
                    dir: dir.to_path_buf(),
                    holder: if holder.is_empty() {
                        "its lock file does not say which".into()
                    } else {
                        holder.to_string()
                    },
                });
            }
            Err(fs4::TryLockError::Error(source)) => {
                return Err(Error::Write { path, source });
            }
        }
        // Ours now: no other process writes this file.
        let me = format!(
            "pid {} on {}, started {}",
            std::process::id(),
            host_name(),
            utc_now()
        );
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(format!("{me}\n").as_bytes()))
            .and_then(|()| file.flush())
            .map_err(werr(&path))?;
        Ok(DirLock { _file: file, path })
    }
}

/// The machine's name, as the kernel or the shell knows it.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "an unknown host".into())
}

/// The wall-clock time in UTC, `2026-12-01 07:53:10 UTC`: only for people
/// reading the lock file; nothing a sweep computes depends on it.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_from_day_counts() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_513), (2026, 3, 1));
    }

    #[test]
    fn a_second_lock_names_the_holder() {
        let dir = std::env::temp_dir().join(format!("hcsim-lock-{}", std::process::id()));
        let first = DirLock::acquire(&dir).unwrap();
        let e = DirLock::acquire(&dir).unwrap_err().to_string();
        assert!(
            e.contains(&format!("pid {} on ", std::process::id())),
            "{e}"
        );
        drop(first);
        let again = DirLock::acquire(&dir).unwrap();
        drop(again);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
