//! Targets of every kind, made in a private temporary directory: regular
//! files, symbolic links, FIFOs, and device nodes made with `mknod` (a
//! null-like 1,3 and a full-like 1,7), never the machine's own `/dev`.

use super::*;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hcsim-atomic-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A character device `major,minor` at `path`, made with mknod(1); `false`
/// (the test is skipped, saying so) where this user may not make one.
fn char_device(path: &Path, major: u32, minor: u32) -> bool {
    let made = Command::new("mknod")
        .arg(path)
        .args(["c", &major.to_string(), &minor.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        assert!(
            std::env::var_os("HCSIM_REQUIRE_TOOLS").is_none(),
            "mknod failed (not root?) and HCSIM_REQUIRE_TOOLS is set"
        );
        eprintln!("skipped: cannot mknod (needs root)");
    }
    made
}

#[test]
fn a_failed_write_keeps_the_previous_file() {
    let dir = scratch("failed");
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

#[test]
fn a_name_as_long_as_names_go_gets_a_temporary_name_that_fits() {
    let dir = scratch("long");
    for len in [200, 250, 255] {
        let name = "n".repeat(len - 5) + ".json";
        let path = dir.join(&name);
        let tmp = temp_path(&path);
        let tmp_name = tmp.file_name().unwrap().len();
        assert!(tmp_name <= NAME_MAX, "{len}: {tmp_name} bytes");
        assert_eq!(tmp.parent(), path.parent());
        write(&path, b"x").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
    }
    // Two long names with the same start get different temporary names.
    let a = temp_path(&dir.join("a".repeat(250) + "1"));
    let b = temp_path(&dir.join("a".repeat(250) + "2"));
    assert_ne!(a, b);
    // A name in several-byte characters is cut at a character boundary.
    let wide = temp_path(&dir.join("é".repeat(127)));
    assert!(wide.file_name().unwrap().len() <= NAME_MAX);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_symbolic_link_is_followed_and_stays_a_link() {
    let dir = scratch("link");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let target = dir.join("data/model.json");
    std::fs::write(&target, b"old").unwrap();
    std::os::unix::fs::symlink("data/model.json", dir.join("link")).unwrap();
    // A chain: link2 -> link -> data/model.json, relative to each link's directory.
    std::os::unix::fs::symlink("link", dir.join("link2")).unwrap();
    assert_eq!(
        Target::of(&dir.join("link2")).unwrap(),
        Target::Replace(dir.join("data/model.json"))
    );
    write(&dir.join("link2"), b"new").unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"new");
    for l in ["link", "link2"] {
        let m = std::fs::symlink_metadata(dir.join(l)).unwrap();
        assert!(m.file_type().is_symlink(), "{l} was replaced");
    }
    // A dangling link: its target is created, as `>` would.
    std::os::unix::fs::symlink("data/new.json", dir.join("dangling")).unwrap();
    write(&dir.join("dangling"), b"made").unwrap();
    assert_eq!(std::fs::read(dir.join("data/new.json")).unwrap(), b"made");
    // A loop is an error, not a hang.
    std::os::unix::fs::symlink("loop-b", dir.join("loop-a")).unwrap();
    std::os::unix::fs::symlink("loop-a", dir.join("loop-b")).unwrap();
    assert!(write(&dir.join("loop-a"), b"x").is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_replaced_file_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("mode");
    let path = dir.join("secret.json");
    std::fs::write(&path, b"a").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    write(&path, b"b").unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_device_node_is_written_not_replaced() {
    let dir = scratch("devices");
    let (null, full) = (dir.join("null"), dir.join("full"));
    if !char_device(&null, 1, 3) || !char_device(&full, 1, 7) {
        return;
    }
    assert_eq!(
        Target::of(&null).unwrap(),
        Target::Direct {
            path: null.clone(),
            append: false
        }
    );
    write(&null, b"into the void").unwrap();
    write_with(&null, |w| w.write_all(&[b'x'; 100_000])).unwrap();
    let e = write(&full, b"x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(28), "ENOSPC: {e}");
    // A set of files with a device among them.
    let mut a = Staged::create(&dir.join("a.csv")).unwrap();
    a.writer().write_all(b"a").unwrap();
    let mut n = Staged::create(&null).unwrap();
    n.writer().write_all(b"n").unwrap();
    commit_all(vec![a, n]).unwrap();
    for p in [&null, &full] {
        let t = std::fs::symlink_metadata(p).unwrap().file_type();
        assert!(t.is_char_device(), "{} is no longer a device", p.display());
    }
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_fifo_delivers_to_its_reader() {
    let dir = scratch("fifo");
    let fifo = dir.join("pipe");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    assert!(made, "mkfifo");
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(&fifo).unwrap())
    };
    let body = vec![b'y'; 200_000]; // more than a pipe buffer holds
    write(&fifo, &body).unwrap();
    assert_eq!(reader.join().unwrap(), body);
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_open_descriptor_is_appended_to() {
    let dir = scratch("fd");
    let log = dir.join("log");
    std::fs::write(&log, b"kept\n").unwrap();
    let f = OpenOptions::new().append(true).open(&log).unwrap();
    let fd = f.as_raw_fd();
    for p in [format!("/proc/self/fd/{fd}"), format!("/dev/fd/{fd}")] {
        let path = PathBuf::from(&p);
        assert!(
            matches!(
                Target::of(&path).unwrap(),
                Target::Direct { append: true, .. }
            ),
            "{p}"
        );
        write(&path, b"line\n").unwrap();
    }
    drop(f);
    assert_eq!(std::fs::read(&log).unwrap(), b"kept\nline\nline\n");
    assert!(std::fs::symlink_metadata(&log).unwrap().is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_dash_is_standard_output_and_a_directory_is_refused() {
    assert_eq!(Target::of(Path::new("-")).unwrap(), Target::Stdout);
    assert_eq!(
        Target::of(Path::new("./-")).unwrap(),
        Target::Replace(PathBuf::from("./-"))
    );
    let dir = scratch("dir");
    let e = write(&dir, b"x").unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::IsADirectory);
    let _ = std::fs::remove_dir_all(&dir);
}
