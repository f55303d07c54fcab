//! The README's Slurm recipe on a one-node Slurm cluster of the test's own:
//! munged, slurmctld and slurmd started here on 127.0.0.1 with a
//! slurm.conf, a munge key, state and spool directories in a temporary
//! directory (never the machine's /etc/munge, /etc/slurm or /var/spool), and
//! stopped by their pids, also when the test fails.
//!
//! Round 1 runs the README's blocks as written: a 0-based array of 4 tasks
//! with `--shard auto` and a merge that depends on it with `afterany`; the
//! merged files equal an unsharded run's. Round 2 kills one task after its
//! first run and cancels another before it starts: the merge exits 2 with
//! the README's report, a `scontrol requeue` of the killed task continues
//! its checkpoint (`--resume`, `SLURM_RESTART_COUNT=1`), the printed
//! command reruns the other, and the merge then gives the same bytes.
//!
//! Needs root (slurmd runs jobs as their user) and Debian's slurmctld,
//! slurmd, slurm-client and munge (`scripts/test-deps.sh`); elsewhere it
//! says why and is skipped, unless HCSIM_REQUIRE_TOOLS is set.

use crate::sweep::assert_same_outputs;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const NODE: &str = "hcsim-node";
/// The shipped sweep's name, which the README's commands use.
const SWEEP: &str = "max-fails-grid-crash";

/// Skips (or, with HCSIM_REQUIRE_TOOLS, fails) with `why`.
fn skip(why: &str) {
    assert!(
        std::env::var_os("HCSIM_REQUIRE_TOOLS").is_none(),
        "HCSIM_REQUIRE_TOOLS is set but {why}"
    );
    eprintln!("skipped: {why}");
}

/// Why the cluster cannot run here, if it cannot.
fn unavailable() -> Option<String> {
    for bin in ["munged", "mungekey", "slurmctld", "slurmd"] {
        if !Path::new(&crate::sbin(bin)).exists() {
            return Some(format!(
                "{bin} is not installed (scripts/test-deps.sh installs slurmctld, slurmd, slurm-client and munge on Debian as root)"
            ));
        }
    }
    for bin in [
        "sbatch", "squeue", "scontrol", "scancel", "sinfo", "unshare",
    ] {
        if Command::new(bin).arg("--version").output().is_err() {
            return Some(format!("{bin} is not installed"));
        }
    }
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("the one-node Slurm cluster needs root (slurmd runs the jobs)".into());
    }
    // The daemons bind the address their host name resolves to: each runs in
    // a UTS namespace of its own whose host name is `localhost`.
    let uts = Command::new("unshare")
        .args(["--uts", "sh", "-c", "hostname localhost"])
        .output();
    if !uts.is_ok_and(|o| o.status.success()) {
        return Some("unshare --uts is not permitted here (the daemons must see the host name localhost, so that they listen on 127.0.0.1 only)".into());
    }
    None
}

/// Two ports free on 127.0.0.1 now.
fn free_ports() -> (u16, u16) {
    let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

/// The private cluster: its daemons (children of this process) and where
/// everything of theirs is. Dropping it stops them all.
struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    ports: (u16, u16),
    daemons: Vec<(&'static str, Child)>,
    stopped: bool,
}

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        let (ctld_port, slurmd_port) = free_ports();
        let munge = dir.join("munge");
        for d in ["munge", "state", "spool", "log"] {
            fs::create_dir_all(dir.join(d)).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        // munged wants its socket's directory open to all, its key private.
        fs::set_permissions(&munge, fs::Permissions::from_mode(0o755)).unwrap();
        let key = munge.join("munge.key");
        let made = Command::new(crate::sbin("mungekey"))
            .arg("--create")
            .arg(format!("--keyfile={}", key.display()))
            .output()
            .unwrap();
        assert!(made.status.success(), "mungekey: {made:?}");
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
        let socket = munge.join("munge.socket");
        let conf = dir.join("slurm.conf");
        let d = dir.display();
        fs::write(
            &conf,
            format!(
                "ClusterName=hcsim-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=2
MinJobAge=600
MailProg=/bin/true
NodeName={NODE} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=test Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
",
                socket = socket.display()
            ),
        )
        .unwrap();
        let mut c = Cluster {
            dir: dir.to_path_buf(),
            conf,
            ports: (ctld_port, slurmd_port),
            daemons: Vec::new(),
            stopped: false,
        };
        let m = |f: &str| munge.join(f).display().to_string();
        let mut munged = Command::new(crate::sbin("munged"));
        munged.args([
            "--foreground".to_string(),
            format!("--socket={}", socket.display()),
            format!("--key-file={}", key.display()),
            format!("--pid-file={}", m("munged.pid")),
            format!("--log-file={}", m("munged.log")),
            format!("--seed-file={}", m("munged.seed")),
        ]);
        c.spawn("munged", munged);
        c.wait_for("munged's socket", 10, |c| {
            c.check_alive();
            socket.exists()
        });
        let conf = c.conf.display().to_string();
        let in_localhost = |daemon: &str, args: &str| {
            let mut cmd = Command::new("unshare");
            cmd.args([
                "--uts",
                "sh",
                "-c",
                &format!(
                    "hostname localhost && exec {} -D -f {} {args}",
                    crate::sbin(daemon),
                    conf
                ),
            ]);
            cmd
        };
        let ctld = in_localhost("slurmctld", "");
        c.spawn("slurmctld", ctld);
        let slurmd = in_localhost("slurmd", &format!("-N {NODE}"));
        c.spawn("slurmd", slurmd);
        c.wait_for("the node to be idle", 30, |c| {
            c.check_alive();
            let out = c.client("sinfo", &["-h", "-n", NODE, "-o", "%T"]);
            String::from_utf8_lossy(&out.stdout).trim() == "idle"
        });
        c
    }

    /// Starts a daemon in the foreground, its output in log/<name>.out; its
    /// working directory is the cluster's (so are its job steps').
    fn spawn(&mut self, name: &'static str, mut cmd: Command) {
        let log = fs::File::create(self.dir.join("log").join(format!("{name}.out"))).unwrap();
        let child = cmd
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        self.daemons.push((name, child));
    }

    /// Fails, with the daemon's log, if a daemon has exited.
    fn check_alive(&mut self) {
        for (name, child) in &mut self.daemons {
            if let Ok(Some(status)) = child.try_wait() {
                let log = fs::read_to_string(self.dir.join("log").join(format!("{name}.out")))
                    .unwrap_or_default();
                panic!("{name} exited ({status}):\n{log}");
            }
        }
    }

    /// Polls `ready` every 100 ms for at most `secs` seconds.
    fn wait_for(&mut self, what: &str, secs: u64, mut ready: impl FnMut(&mut Cluster) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !ready(self) {
            assert!(
                Instant::now() < deadline,
                "{what} within {secs} s; {}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The last lines of the daemons' logs, for a failure's message.
    fn logs(&self) -> String {
        let mut all = String::new();
        for name in ["munged.out", "slurmctld.log", "slurmd.log", "slurmd.out"] {
            let text = fs::read_to_string(self.dir.join("log").join(name)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n");
            all += &format!("\n--- {name}:\n{tail}");
        }
        all
    }

    /// A Slurm client command against this cluster (SLURM_CONF).
    fn client(&self, bin: &str, args: &[&str]) -> Output {
        Command::new(bin)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{bin}: {e}"))
    }

    /// Like [`client`](Self::client), failing unless it succeeds; its stdout.
    fn ok(&self, bin: &str, args: &[&str]) -> String {
        let out = self.client(bin, args);
        assert!(
            out.status.success(),
            "{bin} {args:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A job's state and exit code (`scontrol show job`), e.g. ("FAILED", "2:0").
    fn job(&self, id: &str) -> (String, String) {
        let text = self.ok("scontrol", &["--oneliner", "show", "job", id]);
        let field = |name: &str| {
            text.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{name}=")))
                .unwrap_or("")
                .to_string()
        };
        (field("JobState"), field("ExitCode"))
    }

    /// Waits until no job is pending or running.
    fn drain(&mut self, secs: u64) {
        self.wait_for("every job to end", secs, |c| {
            c.ok("squeue", &["-h", "-o", "%i %T"]).is_empty()
        });
    }

    /// Waits until job `id` has ended; its state and exit code.
    fn ended(&mut self, id: &str, secs: u64) -> (String, String) {
        self.wait_for(&format!("job {id} to end"), secs, |c| {
            let (state, _) = c.job(id);
            !matches!(
                state.as_str(),
                "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING" | "REQUEUED"
            )
        });
        self.job(id)
    }

    /// Every LISTEN socket on the cluster's ports is on 127.0.0.1.
    fn assert_loopback_only(&self) {
        let mut seen = 0;
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let text = fs::read_to_string(table).unwrap_or_default();
            for line in text.lines().skip(1) {
                let f: Vec<&str> = line.split_whitespace().collect();
                if f.len() < 4 || f[3] != "0A" {
                    continue;
                }
                let (addr, port) = f[1].split_once(':').unwrap();
                let port = u16::from_str_radix(port, 16).unwrap();
                if port == self.ports.0 || port == self.ports.1 {
                    assert_eq!(
                        addr, "0100007F",
                        "port {port} listens beyond 127.0.0.1: {line}"
                    );
                    seen += 1;
                }
            }
        }
        assert_eq!(seen, 2, "slurmctld and slurmd listen on their ports");
    }

    /// Processes whose working directory is under the cluster's directory
    /// (job steps and what they run, which outlive a killed slurmd).
    fn strays(&self) -> Vec<u32> {
        let me = std::process::id();
        let mut pids = Vec::new();
        for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
                continue;
            };
            if pid != me
                && fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(&self.dir))
                && !fs::read_to_string(e.path().join("stat")).is_ok_and(|s| s.contains(") Z "))
            {
                pids.push(pid);
            }
        }
        pids
    }

    /// Cancels every job, stops slurmd, slurmctld and munged (SIGTERM, then
    /// SIGKILL after 5 s), then kills any process left in the cluster's
    /// directory; returns what was still alive at the end.
    fn stop(&mut self) -> Vec<String> {
        if self.stopped {
            return Vec::new();
        }
        self.stopped = true;
        let jobs = self.client("squeue", &["-h", "-o", "%A"]);
        for id in String::from_utf8_lossy(&jobs.stdout).split_whitespace() {
            let _ = self.client("scancel", &[id]);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while !String::from_utf8_lossy(&self.client("squeue", &["-h"]).stdout)
            .trim()
            .is_empty()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        for (_, child) in self.daemons.iter_mut().rev() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for (_, child) in self.daemons.iter_mut().rev() {
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        for pid in self.strays() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        std::thread::sleep(Duration::from_millis(200));
        let mut alive: Vec<String> = self.strays().iter().map(|p| format!("pid {p}")).collect();
        for (name, child) in &mut self.daemons {
            if child.try_wait().ok().flatten().is_none() {
                alive.push(format!("{name} (pid {})", child.id()));
            }
        }
        alive
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let alive = self.stop();
        if !alive.is_empty() {
            eprintln!("still running after the Slurm test: {}", alive.join(", "));
        }
    }
}

/// The fenced block after `<!-- marker -->` in the README.
fn readme_block(marker: &str) -> String {
    let readme = fs::read_to_string(crate::root().join("README.md")).unwrap();
    let (_, after) = readme
        .split_once(&format!("<!-- {marker} -->"))
        .unwrap_or_else(|| panic!("README marks {marker}"));
    let body = after.split_once("```").unwrap().1;
    let body = body.split_once('\n').unwrap().1;
    body.split_once("```").unwrap().0.to_string()
}

/// A work directory of the small sweep under the shipped name, the README's
/// sbatch script, and `bin/hcsim`: the binary under test, except that the
/// first attempt of array task HCSIM_TEST_HANG_TASK stops after one run and
/// waits, holding its shard (the test kills it there).
fn workdir(cluster: &Path, name: &str) -> PathBuf {
    let w = cluster.join(name);
    fs::create_dir_all(w.join("models")).unwrap();
    fs::create_dir_all(w.join("sweeps")).unwrap();
    fs::create_dir_all(w.join("bin")).unwrap();
    let model = serde_json::json!({
        "name": "tiny-crash", "seed": 11, "duration": "6s",
        "clients": {"kind": "open", "rate_per_s": 50.0},
        "nodes": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
        "faults": [{"kind": "crash", "node": "A", "at": "1s", "for": "2s"}],
        "policy": {"kind": "max_fails", "max_fails": 3, "fail_timeout": "5s"}
    });
    // 2 × 2 points × 3 reps = 12 runs: 3 per shard of 4.
    let sweep = serde_json::json!({
        "name": SWEEP, "model": "../models/tiny.json", "reps": 3,
        "axes": [
            {"path": "policy.max_fails", "values": [1, 3]},
            {"path": "policy.fail_timeout", "values": ["2s", "5s"]}
        ]
    });
    fs::write(w.join("models/tiny.json"), model.to_string()).unwrap();
    fs::write(w.join(format!("sweeps/{SWEEP}.json")), sweep.to_string()).unwrap();
    fs::write(w.join("sweep.sbatch"), readme_block("slurm-sbatch-script")).unwrap();
    let wrapper = w.join("bin/hcsim");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif [ \"${{SLURM_ARRAY_TASK_ID:-none}}\" = \"${{HCSIM_TEST_HANG_TASK:-}}\" ] && [ \"${{SLURM_RESTART_COUNT:-0}}\" = 0 ]; then\n  export HCSIM_HANG_AFTER=1\nfi\nexec {} \"$@\"\n",
            env!("CARGO_BIN_EXE_hcsim")
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    w
}

/// `bash -c script` in `dir` with the cluster's SLURM_CONF, `dir/bin` first
/// in PATH (jobs inherit both), and `env`.
fn shell(c: &Cluster, dir: &Path, script: &str, env: &[(&str, &str)]) -> String {
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    cmd.args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .env("PATH", path)
        .env("SLURM_CONF", &c.conf)
        .env_remove("HCSIM_STOP_AFTER")
        .env_remove("HCSIM_HANG_AFTER")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{script}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The unsharded sweep in `dir/whole`.
fn unsharded(dir: &Path) -> PathBuf {
    let out = Command::new(env!("CARGO_BIN_EXE_hcsim"))
        .args([
            "sweep",
            &format!("sweeps/{SWEEP}.json"),
            "--quiet",
            "--no-charts",
            "--out",
            "whole",
        ])
        .current_dir(dir)
        .env_remove("HCSIM_STOP_AFTER")
        .env_remove("HCSIM_HANG_AFTER")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("whole")
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_readme_slurm_recipe_merges_a_zero_based_array_and_reports_a_killed_task() {
    if let Some(why) = unavailable() {
        skip(&why);
        return;
    }
    let dir = crate::tmp("slurm");
    let mut c = Cluster::start(&dir);
    c.assert_loopback_only();

    // Round 1: the README's blocks as written.
    let r1 = workdir(&dir, "round1");
    shell(&c, &r1, &readme_block("slurm-submit"), &[]);
    c.drain(60);
    let merged = r1.join("output").join(SWEEP);
    assert!(
        merged.join("results.json").exists(),
        "the merge job wrote nothing; its log: {}",
        fs::read_dir(&r1)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("slurm-"))
            .map(|e| format!("\n{}:\n{}", e.path().display(), read(&e.path())))
            .collect::<String>()
    );
    assert_same_outputs(&unsharded(&r1), &merged);
    for task in 0..4 {
        let log = read(&r1.join("shards").join(task.to_string()).join("runs.jsonl"));
        assert!(
            log.contains(&format!("\"shard\":{{\"k\":{},\"n\":4}}", task + 1)),
            "{log}"
        );
    }
    let task0 = fs::read_dir(&r1)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with("_0.out"))
        .map(|e| read(&e.path()))
        .expect("the log of task 0");
    assert!(
        task0.contains("shard 1/4 runs 3 of them (Slurm array task SLURM_ARRAY_TASK_ID=0 of 0-3)"),
        "{task0}"
    );

    // Round 2: task 1 is killed after its first run, task 3 cancelled
    // before it starts; the merge still runs (afterany) and says what to rerun.
    let r2 = workdir(&dir, "round2");
    let hang = [("HCSIM_TEST_HANG_TASK", "1")];
    let array = shell(
        &c,
        &r2,
        "sbatch --parsable --hold --array=0-3 sweep.sbatch",
        &hang,
    );
    let merge_cmd = format!(
        "sbatch --parsable --dependency=afterany:{array} --wrap 'hcsim merge shards/* --out output/{SWEEP}'"
    );
    let merge = shell(&c, &r2, &merge_cmd, &[]);
    c.ok("scancel", &[&format!("{array}_3")]);
    c.ok("scontrol", &["release", &array]);
    let ckpt = r2.join("shards/1/.checkpoint/runs.jsonl");
    c.wait_for("task 1 to checkpoint its first run", 30, |_| {
        crate::lines(&ckpt) >= 2
    });
    c.ok("scancel", &[&format!("{array}_1")]);
    let (state, code) = c.ended(&merge, 60);
    assert_eq!(
        (state.as_str(), code.as_str()),
        ("FAILED", "2:0"),
        "the merge job"
    );
    let report = read(&r2.join(format!("slurm-{merge}.out")));
    assert_eq!(
        report,
        readme_block("slurm-merge-report"),
        "the README shows the report as it is"
    );

    // The killed task requeued continues its checkpoint; the missing shard
    // is rerun with the printed command; then the merge succeeds.
    let task = format!("{array}_1");
    c.ok("scontrol", &["requeue", &task]);
    c.ok(
        "scontrol",
        &["update", &format!("jobid={task}"), "StartTime=now"],
    );
    let rerun = report
        .lines()
        .filter_map(|l| l.trim().strip_prefix("rerun: "))
        .find(|l| l.contains("--shard 4/4"))
        .expect("a rerun command for shard 4/4")
        .to_string();
    let again = shell(&c, &r2, &format!("sbatch --parsable --wrap '{rerun}'"), &[]);
    let merge_cmd = format!(
        "sbatch --parsable --dependency=afterany:{task}:{again} --wrap 'hcsim merge shards/* --out output/{SWEEP}'"
    );
    let merge = shell(&c, &r2, &merge_cmd, &[]);
    let (state, code) = c.ended(&merge, 60);
    let log = read(&r2.join(format!("slurm-{merge}.out")));
    assert_eq!(
        (state.as_str(), code.as_str()),
        ("COMPLETED", "0:0"),
        "{log}"
    );
    assert_same_outputs(&unsharded(&r2), &r2.join("output").join(SWEEP));
    let task1 = read(&r2.join(format!("slurm-{array}_1.out")));
    assert!(
        task1.contains(
            "resuming (a retried task: SLURM_RESTART_COUNT=1): 1 runs already done, 2 to go"
        ),
        "{task1}"
    );

    let alive = c.stop();
    assert!(alive.is_empty(), "still running: {alive:?}");
    let _ = fs::remove_dir_all(&dir);
}
