//! The memory this process may still take, as the system says it: the
//! address-space limit (`ulimit -v`), the memory cgroup's limit (v2
//! `memory.max`, v1 `memory.limit_in_bytes`, less what the group uses) and
//! the memory the kernel reports available (`MemAvailable`). The cost
//! check refuses a run whose estimate passes the lowest of them, before
//! anything is allocated: past it the allocator aborts the process midway
//! (or the kernel kills it), with nothing written and no message.
//!
//! Read from `/proc` and `/sys` on Linux; elsewhere, or when a file is
//! missing or unreadable, that source says nothing.

use std::path::{Path, PathBuf};

/// The memory left under the lowest limit, in bytes, and what that limit
/// is (for the message), or `None` when no source gives one.
pub fn memory_ceiling() -> Option<(f64, &'static str)> {
    let status = read("/proc/self/status");
    let vm_size = status.as_deref().and_then(|s| kib_field(s, "VmSize:"));
    let address_space = read("/proc/self/limits")
        .as_deref()
        .and_then(address_space_limit)
        .map(|limit| limit.saturating_sub(vm_size.unwrap_or(0)));
    let available = read("/proc/meminfo")
        .as_deref()
        .and_then(|m| kib_field(m, "MemAvailable:"));
    [
        (
            address_space,
            "this process may take (its address-space limit, ulimit -v)",
        ),
        (cgroup_room(), "its memory cgroup allows"),
        (available, "this machine has available"),
    ]
    .into_iter()
    .filter_map(|(room, what)| Some((room? as f64, what)))
    .min_by(|a, b| a.0.total_cmp(&b.0))
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// A `Name:   1234 kB` line of `/proc/meminfo` or `/proc/self/status`, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..].split_whitespace().next()?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The soft limit of `Max address space` in `/proc/self/limits`, in bytes
/// (`None` when unlimited).
fn address_space_limit(limits: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A limit file's number: `max`, or a v1 "no limit" near 2⁶³, is none.
fn limit_in(path: &Path) -> Option<u64> {
    let n: u64 = read(path)?.trim().parse().ok()?;
    (n < 1 << 62).then_some(n)
}

/// What the process's memory cgroup still allows: its limit less its use.
fn cgroup_room() -> Option<u64> {
    let groups = read("/proc/self/cgroup")?;
    let root = Path::new("/sys/fs/cgroup");
    let mut rooms = vec![];
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let rel = path.trim_start_matches('/');
        let (dir, limit, usage) = if controllers.is_empty() {
            (root.join(rel), "memory.max", "memory.current")
        } else if controllers.split(',').any(|c| c == "memory") {
            (
                root.join("memory").join(rel),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        } else {
            continue;
        };
        // Inside a container the group's path may not be mounted as such:
        // its own root is.
        let dir: PathBuf = if dir.join(limit).exists() {
            dir
        } else {
            dir.ancestors()
                .find(|d| d.join(limit).exists())
                .map_or(dir.clone(), Path::to_path_buf)
        };
        if let Some(max) = limit_in(&dir.join(limit)) {
            let used = limit_in(&dir.join(usage)).unwrap_or(0);
            rooms.push(max.saturating_sub(used));
        }
    }
    rooms.into_iter().min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_limits_as_proc_writes_them() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max address space         4294967296           unlimited            bytes     \n";
        assert_eq!(address_space_limit(limits), Some(4_294_967_296));
        assert_eq!(
            address_space_limit(&limits.replace("4294967296", "unlimited")),
            None
        );
        let meminfo = "MemTotal:       24000000 kB\nMemAvailable:    3000000 kB\n";
        assert_eq!(kib_field(meminfo, "MemAvailable:"), Some(3_000_000 * 1024));
        assert_eq!(kib_field(meminfo, "VmSize:"), None);
    }
}
