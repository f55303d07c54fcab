//! Fuzzing the writer of every output (`hcsim::atomic`) with targets of
//! every kind, made in a private temporary directory: regular files,
//! chains of symbolic links (relative and absolute, to files, to nothing,
//! to FIFOs and devices, in loops), FIFOs with a reader, null-like (1,3)
//! and full-like (1,7) device nodes made with mknod(1) (never the
//! machine's own), directories, descriptors of this process named by
//! `/dev/fd/N` or `/proc/self/fd/N` (a pipe's write end, a regular file
//! opened to append: what process substitution and `>> log` pass), and
//! names up to 255 bytes. For each: the content reaches the file the path
//! names (or the write fails for a full device, a directory, a loop), no
//! node or link is replaced by a regular file, and no temporary file is
//! left behind.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a path names before the write.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Nothing,
    Regular,
    Fifo,
    Null,
    Full,
    Dir,
    /// The write end of a pipe, by its descriptor's path.
    FdPipe,
    /// A regular file opened to append, by its descriptor's path.
    FdFile,
}

/// What the write should do, and where the bytes should be.
#[derive(Debug)]
enum Expect {
    /// The bytes are in this regular file afterwards.
    File(PathBuf),
    /// A FIFO's reader gets them.
    Fifo(PathBuf),
    /// The pipe's reader gets them.
    Pipe,
    /// Appended to what this regular file held, which stays the same file.
    Appended(PathBuf),
    /// Swallowed by a null-like device.
    Null,
    /// An error (full device, directory, link loop).
    Fails,
}

fn node_kind(p: &Path) -> Option<&'static str> {
    let t = std::fs::symlink_metadata(p).ok()?.file_type();
    Some(if t.is_symlink() {
        "link"
    } else if t.is_fifo() {
        "fifo"
    } else if t.is_char_device() {
        "char"
    } else if t.is_dir() {
        "dir"
    } else {
        "file"
    })
}

fn mknod(p: &Path, minor: u32) -> bool {
    Command::new("mknod")
        .arg(p)
        .args(["c", "1", &minor.to_string()])
        .status()
        .is_ok_and(|s| s.success())
}

/// Makes the final target of kind `kind` at `p`; `false` if it cannot be
/// made here (device nodes need root).
fn make(p: &Path, kind: Kind) -> bool {
    match kind {
        Kind::Nothing => true,
        Kind::Regular => std::fs::write(p, b"old content").is_ok(),
        Kind::Fifo => Command::new("mkfifo")
            .arg(p)
            .status()
            .is_ok_and(|s| s.success()),
        Kind::Null => mknod(p, 3),
        Kind::Full => mknod(p, 7),
        Kind::Dir => std::fs::create_dir(p).is_ok(),
        Kind::FdPipe => true,
        Kind::FdFile => std::fs::write(p, b"old content").is_ok(),
    }
}

#[test]
fn fuzz_output_paths() {
    let root = crate::tmp("fuzz-outputs");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(35);
    let mut devices = true;
    let mut done = 0;
    for case in 0..300 {
        let dir = root.join(format!("c{case}"));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let kinds = [
            Kind::Nothing,
            Kind::Regular,
            Kind::Fifo,
            Kind::Null,
            Kind::Full,
            Kind::Dir,
            Kind::FdPipe,
            Kind::FdFile,
        ];
        let kind = kinds[rng.random_range(0..kinds.len())];
        if matches!(kind, Kind::Null | Kind::Full) && !devices {
            continue;
        }
        // The final name: short, or as long as a name may be.
        let len = [1, 8, 200, 250, 255][rng.random_range(0..5)];
        let name: String = "t".repeat(len);
        let file = dir.join("sub").join(&name);
        if !make(&file, kind) {
            devices = false;
            eprintln!("skipped device targets: cannot mknod (needs root)");
            continue;
        }
        // A descriptor is held open (`held`) until the write is done.
        let fd_dir = ["/dev/fd", "/proc/self/fd"][rng.random_range(0..2)];
        let mut held: Option<Box<dyn std::any::Any>> = None;
        let mut pipe_reader = None;
        let target = match kind {
            Kind::FdPipe => {
                let (mut r, w) = std::io::pipe().unwrap();
                let fd = w.as_raw_fd();
                held = Some(Box::new(w));
                pipe_reader = Some(std::thread::spawn(move || {
                    let mut got = vec![];
                    r.read_to_end(&mut got).unwrap();
                    got
                }));
                PathBuf::from(format!("{fd_dir}/{fd}"))
            }
            Kind::FdFile => {
                let f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&file)
                    .unwrap();
                let fd = f.as_raw_fd();
                held = Some(Box::new(f));
                PathBuf::from(format!("{fd_dir}/{fd}"))
            }
            _ => file.clone(),
        };
        let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let file_inode = matches!(kind, Kind::FdFile).then(|| inode(&file));
        // Up to three links in front of it, relative or absolute.
        let mut path = target.clone();
        let links = rng.random_range(0..4);
        for l in 0..links {
            let link = dir.join(format!("link{l}"));
            let to = if rng.random::<bool>() || !path.starts_with(&dir) {
                path.clone()
            } else {
                path.strip_prefix(&dir).unwrap().to_path_buf()
            };
            std::os::unix::fs::symlink(&to, &link).unwrap();
            path = link;
        }
        let looped = links > 0 && rng.random_range(0..10) == 0;
        if looped {
            // The last link points back at itself through another.
            let a = dir.join("loop-a");
            std::os::unix::fs::symlink("loop-b", &a).unwrap();
            std::os::unix::fs::symlink("loop-a", dir.join("loop-b")).unwrap();
            path = a;
        }
        let expect = match kind {
            _ if looped => Expect::Fails,
            Kind::Nothing | Kind::Regular => Expect::File(target.clone()),
            Kind::Fifo => Expect::Fifo(target.clone()),
            Kind::Null => Expect::Null,
            Kind::Full | Kind::Dir => Expect::Fails,
            Kind::FdPipe => Expect::Pipe,
            Kind::FdFile => Expect::Appended(file.clone()),
        };
        let body: Vec<u8> = (0..rng.random_range(0..300_000usize))
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        let reader = match &expect {
            Expect::Fifo(p) => {
                let p = p.clone();
                Some(std::thread::spawn(move || std::fs::read(p).unwrap()))
            }
            _ => None,
        };
        let before: Vec<_> = [&target, &path].iter().map(|p| node_kind(p)).collect();
        // One file, or a set of files committed together.
        let result = if rng.random::<bool>() {
            hcsim::atomic::write(&path, &body)
        } else {
            let other = dir.join("sub/other.csv");
            let staged = (|| {
                let mut a = hcsim::atomic::Staged::create(&other)?;
                a.writer().write_all(b"x")?;
                let mut b = hcsim::atomic::Staged::create(&path)?;
                b.writer().write_all(&body)?;
                Ok::<_, std::io::Error>(vec![a, b])
            })();
            staged.and_then(|s| hcsim::atomic::commit_all(s).map_err(|(_, e)| e))
        };
        // The descriptors' paths name nothing once they are closed.
        let after: Vec<_> = [&target, &path].iter().map(|p| node_kind(p)).collect();
        drop(held);
        let case_desc = format!("case {case}: {kind:?} behind {links} link(s), name {len}");
        match &expect {
            Expect::File(p) => {
                result.unwrap_or_else(|e| panic!("{case_desc}: {e}"));
                assert_eq!(std::fs::read(p).unwrap(), body, "{case_desc}");
            }
            Expect::Fifo(_) => {
                result.unwrap_or_else(|e| panic!("{case_desc}: {e}"));
                let got = reader.unwrap().join().unwrap();
                assert_eq!(got, body, "{case_desc}");
            }
            Expect::Pipe => {
                result.unwrap_or_else(|e| panic!("{case_desc}: {e}"));
                let got = pipe_reader.take().unwrap().join().unwrap();
                assert_eq!(got, body, "{case_desc}");
            }
            Expect::Appended(p) => {
                result.unwrap_or_else(|e| panic!("{case_desc}: {e}"));
                let mut want = b"old content".to_vec();
                want.extend_from_slice(&body);
                assert!(std::fs::read(p).unwrap() == want, "{case_desc}");
                assert_eq!(Some(inode(p)), file_inode, "{case_desc}: replaced");
            }
            Expect::Null => result.unwrap_or_else(|e| panic!("{case_desc}: {e}")),
            Expect::Fails => {
                // A full device may take an empty write.
                let empty_to_full = matches!(kind, Kind::Full) && body.is_empty();
                assert!(result.is_err() || empty_to_full, "{case_desc}: wrote");
            }
        }
        if let Some(r) = pipe_reader {
            r.join().unwrap();
        }
        // Nothing was replaced: the target and every link are what they were
        // (a file that did not exist is now one).
        for (b, a) in before.iter().zip(&after) {
            match b {
                None => assert!(
                    matches!(a, None | Some("file")),
                    "{case_desc}: {b:?} -> {a:?}"
                ),
                Some(k) => assert_eq!(a.as_ref(), Some(k), "{case_desc}"),
            }
        }
        for d in [dir.clone(), dir.join("sub")] {
            let left: Vec<String> = std::fs::read_dir(&d)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(".tmp"))
                .collect();
            assert!(left.is_empty(), "{case_desc}: left {left:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
        done += 1;
    }
    assert!(done >= 150, "only {done} cases ran");
    let _ = std::fs::remove_dir_all(&root);
}
