//! The calibration harness's short subset against the real nginx, HAProxy,
//! Caddy and Traefik (`calibration/run.sh --short`; Caddy's and Traefik's
//! scenarios are skipped, saying so, where scripts/gateway-bins.sh could
//! not install them): every hcsim figure must lie in the
//! real range (docs/calibration.md states the tolerances), and no gateway or
//! backend process may be left running, also when the harness fails.

use crate::{root, sbin, tmp, tool_present};
use std::process::Command;
use std::time::{Duration, Instant};

/// A hard bound on the harness (the subset takes about a minute).
const BOUND: Duration = Duration::from_secs(300);

#[test]
fn the_short_subset_agrees_with_the_real_binaries_and_leaves_nothing_running() {
    if !tool_present(&sbin("nginx"), "-v")
        || !tool_present(&sbin("haproxy"), "-v")
        || !tool_present("python3", "--version")
    {
        return;
    }
    let dir = tmp("calibration");
    let pids = dir.join("pids");
    let mut child = Command::new(root().join("calibration/run.sh"))
        .args(["--short", "--sim-reps", "10", "--pids"])
        .arg(&pids)
        .env("HCSIM_BIN", env!("CARGO_BIN_EXE_hcsim"))
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run calibration/run.sh");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > BOUND {
            // SIGTERM: the harness stops its processes in its `finally`.
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            std::thread::sleep(Duration::from_secs(10));
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output().expect("harness output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = std::fs::read_to_string(&pids).unwrap_or_default();
    let started: Vec<u32> = listed.lines().filter_map(|l| l.parse().ok()).collect();
    for pid in &started {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        assert!(
            !["backend.py", "nginx", "haproxy", "caddy", "traefik"]
                .iter()
                .any(|w| cmdline.contains(w)),
            "process {pid} ({cmdline}) is still running after the harness"
        );
    }
    assert!(start.elapsed() <= BOUND, "over {BOUND:?}:\n{text}");
    assert!(out.status.success(), "{text}");
    assert!(
        started.len() >= 2 * 3 * 3,
        "two scenarios x three runs x (gateway + two backends): {started:?}"
    );
    assert!(
        text.contains("## nginx-refused") && text.contains("| agrees |"),
        "{text}"
    );
    for (bin, scenario) in [("caddy", "## caddy-crash"), ("traefik", "## traefik-crash")] {
        if root().join(".cache/gateways").join(bin).exists() {
            assert!(text.contains(scenario), "{scenario} missing:\n{text}");
        } else {
            assert!(text.contains("skipped: ") && text.contains(bin), "{text}");
        }
    }
}
