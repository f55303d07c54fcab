//! An access log read one line at a time, plain or gzip-compressed (a
//! rotated `access.log.1.gz`, also several gzip members one after the
//! other, as `cat a.gz b.gz` makes), in constant memory whatever its size.
//! Progress is the share of the file's bytes read (compressed bytes for a
//! gzip file).

use crate::error::Error;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts the bytes read from the file underneath any decoder.
struct Counted<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The longest line kept whole; longer ones are cut there (and, having no
/// format's shape, counted as malformed).
pub const MAX_LINE: usize = 64 * 1024;

/// A log opened for reading.
pub struct LogReader {
    path: PathBuf,
    inner: Box<dyn BufRead + Send>,
    read: Arc<AtomicU64>,
    /// The file's size in bytes.
    pub size: u64,
    /// Lines read so far (the number of the last line returned).
    pub line: u64,
    pub gzip: bool,
    buf: Vec<u8>,
}

impl LogReader {
    pub fn open(path: &Path) -> Result<LogReader, Error> {
        let err = |e: std::io::Error| Error::ReadFile {
            path: path.to_path_buf(),
            source: e,
        };
        let mut f = File::open(path).map_err(err)?;
        let meta = f.metadata().map_err(err)?;
        if meta.is_dir() {
            return Err(Error::Usage(format!(
                "{}: is a directory: hcsim replay reads an access log file",
                path.display()
            )));
        }
        let mut magic = [0u8; 2];
        let n = f.read(&mut magic).map_err(err)?;
        let gzip = n == 2 && magic == [0x1f, 0x8b];
        let f = File::open(path).map_err(err)?;
        let read = Arc::new(AtomicU64::new(0));
        let counted = Counted {
            inner: f,
            read: read.clone(),
        };
        let inner: Box<dyn BufRead + Send> = if gzip {
            Box::new(BufReader::with_capacity(
                256 * 1024,
                flate2::read::MultiGzDecoder::new(BufReader::with_capacity(256 * 1024, counted)),
            ))
        } else {
            Box::new(BufReader::with_capacity(256 * 1024, counted))
        };
        Ok(LogReader {
            path: path.to_path_buf(),
            inner,
            read,
            size: meta.len(),
            line: 0,
            gzip,
            buf: Vec::with_capacity(1024),
        })
    }

    /// Bytes of the file read so far.
    pub fn position(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// A handle on the bytes read, usable while a line is borrowed.
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.read.clone()
    }

    /// The next line without its end (`\n` or `\r\n`), invalid UTF-8
    /// replaced; `None` at the end. A corrupt gzip stream is an error
    /// naming the file and the line it stopped after.
    pub fn next_line(&mut self) -> Result<Option<(u64, std::borrow::Cow<'_, str>)>, Error> {
        self.buf.clear();
        let mut limited = (&mut self.inner).take(MAX_LINE as u64);
        let n = limited.read_until(b'\n', &mut self.buf).map_err(|e| {
            Error::Usage(format!(
                "{}: cannot read after line {}: {e}{}",
                self.path.display(),
                self.line,
                if self.gzip {
                    " (a truncated or corrupt gzip file?)"
                } else {
                    ""
                }
            ))
        })?;
        if n == 0 {
            return Ok(None);
        }
        if self.buf.len() == MAX_LINE && self.buf.last() != Some(&b'\n') {
            // Skip the rest of an overlong line.
            let mut rest = Vec::new();
            let _ = self.inner.read_until(b'\n', &mut rest);
        }
        self.line += 1;
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        Ok(Some((self.line, String::from_utf8_lossy(&self.buf))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn plain_and_gzip_files_read_the_same_lines() {
        let dir = std::env::temp_dir().join(format!("hcsim-reader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = dir.join("a.log");
        std::fs::write(&plain, b"one\r\ntwo\nthree").unwrap();
        let gz = dir.join("a.log.gz");
        // Two gzip members, as `cat a.gz b.gz` makes.
        let mut bytes = vec![];
        for part in [&b"one\r\ntwo\n"[..], &b"three"[..]] {
            let mut e = flate2::write::GzEncoder::new(vec![], flate2::Compression::fast());
            e.write_all(part).unwrap();
            bytes.extend(e.finish().unwrap());
        }
        std::fs::write(&gz, &bytes).unwrap();
        for p in [&plain, &gz] {
            let mut r = LogReader::open(p).unwrap();
            let mut lines = vec![];
            while let Some((_, l)) = r.next_line().unwrap() {
                lines.push(l.into_owned());
            }
            assert_eq!(lines, ["one", "two", "three"], "{}", p.display());
            assert_eq!(r.line, 3);
            assert_eq!(r.position(), r.size);
        }
        std::fs::write(&gz, &bytes[..bytes.len() / 2]).unwrap();
        let mut r = LogReader::open(&gz).unwrap();
        let mut err = None;
        loop {
            match r.next_line() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    err = Some(e.to_string());
                    break;
                }
            }
        }
        assert!(err.is_some_and(|e| e.contains("corrupt gzip")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
