#!/usr/bin/env python3
"""Benchmarks hcsim side by side with the reference Python models.

Machines are shared and noisy, so every comparison is a ratio of runs made in
this one process, interleaved (hcsim, heapq, hcsim, heapq, ...), and each
figure is the median of several repetitions. Times are wall-clock seconds of
the whole process, including its start-up; CPU seconds are reported too.

  scripts/bench.py compare            # canonical 10k rps x 60 s: hcsim vs the bare Rust loop of benches/bare_loop.rs,
                                      # the heapq model (and SimPy if installed)
  scripts/bench.py scaling [BIN...]   # cost vs rps, node count and duration; fitted exponent;
                                      # events/s at 2..5,000 nodes (several binaries: side by side)
  scripts/bench.py small              # 100 rps x 20 s: speed-up over the wall clock
  scripts/bench.py ab OLD NEW         # two hcsim binaries on the canonical model, interleaved
                                      # (--fleet: on the fleet model)
  scripts/bench.py fleet              # 50 gateway replicas x 200 nodes beside the canonical model: events/s
  scripts/bench.py fixed [BIN...]     # the fixed cost: a 1 s run at 2 / 1,000 / 10,000 nodes, whole process
                                      # (CPU, peak RSS; --instructions: valgrind's count, at 2 and 1,000 nodes),
                                      # then events per CPU second of a 20 s run at 2 and 1,000 nodes

It builds the release binary first. The Python models live in scripts/bench/;
scripts/bench-deps.sh installs SimPy 4.1.2 (and GNU time for peak RSS).
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HCSIM = ROOT / "target" / "release" / "hcsim"
BENCH = ROOT / "scripts" / "bench"


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)


def timed(cmd, cwd=ROOT):
    """Runs cmd; returns (wall seconds, cpu seconds, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{p.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p.stdout


def hcsim_cmd(out, sets=(), model="models/bench-canonical.json"):
    cmd = [str(HCSIM), "run", model, "--no-charts", "--jobs", "1", "--format", "json", "--out", str(out)]
    for s in sets:
        cmd += ["--set", s]
    return cmd


def simpy_available():
    return subprocess.run([sys.executable, "-c", "import simpy"], capture_output=True).returncode == 0


def simpy_version():
    p = subprocess.run([sys.executable, "-c", "import simpy; print(simpy.__version__)"], capture_output=True, text=True)
    return p.stdout.strip()


def bare_loop():
    """Builds benches/bare_loop.rs (the canonical scenario as a bare
    BinaryHeap loop) in release mode; returns its executable."""
    p = subprocess.run(["cargo", "build", "--release", "--quiet", "--bench", "bare_loop",
                        "--message-format=json"], cwd=ROOT, check=True, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        d = json.loads(line)
        if d.get("reason") == "compiler-artifact" and d["target"]["name"] == "bare_loop" and d.get("executable"):
            return d["executable"]
    sys.exit("cargo built no bare_loop executable")


def compare(reps):
    out = Path(tempfile.mkdtemp(prefix="hcsim-bench-"))
    impls = {
        "hcsim": hcsim_cmd(out),
        "bare-rust": [bare_loop(), "--rps", "10000", "--seconds", "60", "--json"],
        "heapq": [sys.executable, str(BENCH / "heapq_model.py"), "--rps", "10000", "--seconds", "60", "--json"],
    }
    if simpy_available():
        impls["simpy"] = [sys.executable, str(BENCH / "simpy_model.py"), "--rps", "10000", "--seconds", "60", "--json"]
    walls = {k: [] for k in impls}
    cpus = {k: [] for k in impls}
    requests = {}
    for _ in range(reps):
        for name, cmd in impls.items():
            wall, cpu, stdout = timed(cmd)
            walls[name].append(wall)
            cpus[name].append(cpu)
            doc = json.loads(stdout)
            requests[name] = doc["runs"][0]["client"]["requests"] if name == "hcsim" else doc["requests"]
    med = {k: statistics.median(v) for k, v in walls.items()}
    medc = {k: statistics.median(v) for k, v in cpus.items()}
    print(f"canonical scenario: 2 nodes, Poisson 10,000 rps, 60 s virtual; median of {reps} interleaved runs "
          f"(python {sys.version.split()[0]}{', simpy ' + simpy_version() if 'simpy' in impls else ', simpy not installed: scripts/bench-deps.sh'})\n")
    print("| implementation | wall time (median) | CPU time (median) | simulated requests/s (wall) | hcsim is faster by (wall) | hcsim is faster by (CPU) |")
    print("|---|---|---|---|---|---|")
    for name in impls:
        speed = requests[name] / med[name]
        ratio = med[name] / med["hcsim"]
        ratio_cpu = medc[name] / medc["hcsim"]
        print(f"| {name} | {med[name]*1000:.0f} ms | {medc[name]*1000:.0f} ms | {speed/1e6:.2f} M | {ratio:.2f}× | {ratio_cpu:.2f}× |")
    print(f"\nhcsim takes {med['hcsim'] / med['bare-rust']:.2f}× the bare Rust loop's wall time "
          f"({medc['hcsim'] / medc['bare-rust']:.2f}× its CPU time), the whole process each")
    return med


def small(reps):
    out = Path(tempfile.mkdtemp(prefix="hcsim-bench-"))
    cmd = hcsim_cmd(out, model="models/e2-p02-flaky-2pct.json")
    walls = [timed(cmd)[0] for _ in range(reps)]
    m = statistics.median(walls)
    print(f"100 rps x 20 s (models/e2-p02-flaky-2pct.json), whole process: median {m*1000:.1f} ms "
          f"over {reps} runs = {20.0/m:,.0f}x faster than the wall clock")


def scaling(reps, binaries=()):
    out = Path(tempfile.mkdtemp(prefix="hcsim-bench-"))
    cases = []
    for rps in (1000, 10000, 100000):
        # Workers grow with the rate (64 per node per 10k rps), so that every
        # row has the canonical load per worker rather than an overload.
        workers = max(64, 64 * rps // 10000)
        cases.append(("rps", rps, [f"clients.rate_per_s={rps}",
                                   f"nodes[0].workers={workers}", f"nodes[1].workers={workers}"]))
    for n in (2, 10, 100):
        nodes = json.dumps([{"name": f"n{i}", "workers": 64, "service_time": {"dist": "exponential", "mean": "5ms"}} for i in range(n)])
        fault = json.dumps([{"kind": "flaky", "node": "n0", "p": 0.02, "status": 503}])
        cases.append(("nodes", n, [f"nodes={nodes}", f"faults={fault}"]))
    for d in (60, 600, 3600):
        cases.append(("duration_s", d, [f"duration={d}s"]))
    rows = []
    for axis, value, sets in cases:
        cpu = statistics.median(timed(hcsim_cmd(out, sets))[1] for _ in range(reps))
        doc = json.loads(timed(hcsim_cmd(out, sets))[2])
        req = doc["runs"][0]["client"]["requests"]
        rss = peak_rss(hcsim_cmd(out, sets))
        rows.append((axis, value, req, cpu, rss))
    print("| varied | value | simulated requests | CPU time | ns per request | peak RSS |")
    print("|---|---|---|---|---|---|")
    for axis, value, req, cpu, rss in rows:
        print(f"| {axis} | {value} | {req:,} | {cpu*1000:.0f} ms | {cpu/req*1e9:.0f} | {rss/1024:.1f} MB |")
    pts = [(math.log(r[2]), math.log(r[3])) for r in rows if r[0] in ("rps", "duration_s") and r[3] > 0]
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    print(f"\nfitted exponent of CPU time vs simulated requests (rps and duration rows): {slope:.2f}")
    print()
    nodes_scaling(reps, list(binaries) or [str(HCSIM)])


def cluster_model(n, policy):
    """The canonical load (10k req/s of Poisson clients, 5 ms exponential
    service, 64 workers per node) for 60 s over `n` nodes, the first of them
    answering 503 with p = 2 %. (60 s rather than 20 s: at 2 nodes a 20 s run
    is 50 ms of CPU, too short to measure on a shared machine.)"""
    return {
        "name": f"scaling-{n}", "seed": 1, "duration": "60s",
        "clients": {"kind": "open", "rate_per_s": 10000.0, "arrivals": "poisson"},
        "gateway": {"proxy_next_upstream": ["error", "timeout", "http_503"], "rtt": "0s"},
        "nodes": [{"name": f"n{i}", "workers": 64,
                   "service_time": {"dist": "exponential", "mean": "5ms"}} for i in range(n)],
        "faults": [{"kind": "flaky", "node": "n0", "p": 0.02, "status": 503}],
        "policy": policy,
    }


def nodes_scaling(reps, binaries):
    """Events per CPU second as the cluster grows, at the same load: the cost
    of a request should not depend on the number of nodes."""
    out = Path(tempfile.mkdtemp(prefix="hcsim-bench-"))
    policies = [("max_fails", {"kind": "max_fails", "max_fails": 3, "fail_timeout": "5s"}),
                ("outlier_detection", {"kind": "outlier_detection"})]
    sizes = (2, 20, 200, 1000, 5000)
    rate = {}
    for name, policy in policies:
        for n in sizes:
            full, short = out / f"scaling-{name}-{n}.json", out / f"scaling-{name}-{n}-1s.json"
            full.write_text(json.dumps(cluster_model(n, policy)))
            short.write_text(json.dumps({**cluster_model(n, policy), "duration": "1s"}))
            for b in binaries:
                cmd = lambda p: [b, "run", str(p), "--no-charts", "--jobs", "1", "--format", "json",
                                 "--out", str(out / "o")]
                try:
                    runs = [(timed(cmd(full)), timed(cmd(short))) for _ in range(reps)]
                except SystemExit as e:  # e.g. an older build's node limit
                    print(f"{Path(b).name} at {n} nodes: {str(e).splitlines()[-1]}", file=sys.stderr)
                    rate[(name, n, b)] = None
                    continue
                cpu = statistics.median(f[1] - s[1] for f, s in runs)
                events = (json.loads(runs[0][0][2])["runs"][0]["events"]
                          - json.loads(runs[0][1][2])["runs"][0]["events"])
                rate[(name, n, b)] = events / cpu
    print(f"events per CPU second of simulation, 10k req/s for 60 s, one 2%-flaky node (median of {reps});\n"
          "the fixed cost of a 1 s run of the same model (start-up, writing the per-node outputs) subtracted\n")
    head = " | ".join(f"{name} {Path(b).name if len(binaries) > 1 else ''}".strip()
                      for name, _ in policies for b in binaries)
    print(f"| nodes | {head} |")
    print("|---|" + "---|" * (len(policies) * len(binaries)))
    for n in sizes:
        cells = " | ".join("refused" if rate[(name, n, b)] is None else f"{rate[(name, n, b)] / 1e6:.2f} M"
                           for name, _ in policies for b in binaries)
        print(f"| {n:,} | {cells} |")
    for name, _ in policies:
        for b in binaries:
            base = rate[(name, 2, b)]
            share = {n: (f"{rate[(name, n, b)] / base:.0%}" if rate[(name, n, b)] else "-") for n in (1000, 5000)}
            who = f" ({b})" if len(binaries) > 1 else ""
            print(f"{name}{who}: 1,000 nodes at {share[1000]} of the 2-node rate, 5,000 at {share[5000]}")


def ab(reps, binaries, on_fleet=False):
    """Two (or more) hcsim builds on the canonical model (or, with
    --fleet, the 50 × 200 fleet model), interleaved: the way to measure
    what a change bought on a shared machine."""
    out = Path(tempfile.mkdtemp(prefix="hcsim-bench-"))
    model = str(ROOT / "models" / "bench-canonical.json")
    if on_fleet:
        model = str(out / "fleet-50x200.json")
        Path(model).write_text(json.dumps(fleet_model()))
    cpus = {b: [] for b in binaries}
    walls = {b: [] for b in binaries}
    outputs = {}
    for _ in range(reps):
        for b in binaries:
            cmd = [b, "run", model, "--no-charts", "--jobs", "1", "--format", "json", "--out", str(out)]
            wall, cpu, stdout = timed(cmd)
            cpus[b].append(cpu)
            walls[b].append(wall)
            outputs[b] = stdout
    base = statistics.median(cpus[binaries[0]])
    print(f"{'fleet 50 x 200' if on_fleet else 'canonical'} scenario, {reps} interleaved runs each\n")
    print("| binary | CPU time (median) | CPU time (min) | wall time (median) | CPU vs first | output |")
    print("|---|---|---|---|---|---|")
    for b in binaries:
        m = statistics.median(cpus[b])
        same = "same" if outputs[b] == outputs[binaries[0]] else "DIFFERS"
        print(f"| {b} | {m*1000:.1f} ms | {min(cpus[b])*1000:.1f} ms | "
              f"{statistics.median(walls[b])*1000:.1f} ms | {m/base:.3f} | {same} |")


def fleet_model():
    """50 gateway replicas (sidecars) × 200 nodes at the canonical load
    (10k req/s, 5 ms service, 64 workers per node, one 2%-flaky node) for
    60 s, each replica running Envoy outlier detection and Envoy active HTTP
    health checks every 5 s."""
    return {
        "name": "fleet-50x200", "seed": 1, "duration": "60s",
        "clients": {"kind": "open", "rate_per_s": 10000.0, "arrivals": "poisson"},
        "gateway": {"replicas": 50, "spread": "round_robin",
                    "proxy_next_upstream": ["error", "timeout", "http_503"], "rtt": "0s"},
        "nodes": [{"name": f"n{i}", "workers": 64,
                   "service_time": {"dist": "exponential", "mean": "5ms"}} for i in range(200)],
        "faults": [{"kind": "flaky", "node": "n0", "p": 0.02, "status": 503}],
        "policies": [{"kind": "outlier_detection"},
                     {"kind": "active_probe", "flavor": "envoy", "probe": "http", "interval": "5s",
                      "timeout": "1s", "unhealthy_threshold": 3, "healthy_threshold": 2,
                      "initial_jitter": "5s"}],
    }


def fleet(reps):
    """Events per CPU second of the 50 × 200 fleet model beside the
    canonical model's, interleaved in one run: a fleet must cost about what
    its events cost."""
    out = Path(tempfile.mkdtemp(prefix="hcsim-bench-"))
    path = out / "fleet-50x200.json"
    path.write_text(json.dumps(fleet_model()))
    models = {"canonical": str(ROOT / "models" / "bench-canonical.json"), "fleet 50 x 200": str(path)}
    rate = {k: [] for k in models}
    for _ in range(reps):
        for name, m in models.items():
            _, cpu, stdout = timed([str(HCSIM), "run", m, "--no-charts", "--jobs", "1", "--format", "json",
                                    "--out", str(out / "o")])
            rate[name].append(json.loads(stdout)["runs"][0]["events"] / cpu)
    print(f"events per CPU second, whole process, {reps} interleaved runs: the median run and the\n"
          "fastest (the least disturbed by other work on a shared machine)\n")
    print("| model | events/s (median) | vs canonical | events/s (fastest) | vs canonical |")
    print("|---|---|---|---|---|")
    base, best = statistics.median(rate["canonical"]), max(rate["canonical"])
    for name in models:
        m, b = statistics.median(rate[name]), max(rate[name])
        print(f"| {name} | {m / 1e6:.2f} M | {m / base:.2f} | {b / 1e6:.2f} M | {b / best:.2f} |")


def fixed_model(n):
    """The canonical model for 1 s, without its fault, over `n` nodes."""
    m = json.loads((ROOT / "models" / "bench-canonical.json").read_text())
    m["duration"] = "1s"
    m.pop("faults", None)
    m["nodes"] = [dict(m["nodes"][0], name=f"n{i:05}") for i in range(n)]
    return m


def instructions(cmd):
    """Instructions of one run, counted by valgrind's callgrind (None without valgrind)."""
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out"] + cmd,
                           cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in p.stderr.splitlines():
        if "refs:" in line:
            return int(line.split("refs:")[1].strip().replace(",", ""))
    return None


def events_rate(reps, binaries):
    """Whole-process events per CPU second of a 20 s run of the fixed-cost
    models at 2 and 1,000 nodes, interleaved: what a large cluster costs a
    run long enough for the events to dominate."""
    out = Path(tempfile.mkdtemp(prefix="hcsim-rate-"))
    for n in (2, 1000):
        (out / f"rate-{n}.json").write_text(json.dumps({**fixed_model(n), "duration": "20s"}))
    # Each binary and size writes a directory of its own, as a user rerunning
    # a model does: a run replaces its own last output, not another size's.
    cmd = lambda b, n: [b, "run", str(out / f"rate-{n}.json"), "--no-charts", "--jobs", "1",
                        "--format", "json", "-q", "--out", str(out / f"o-{binaries.index(b)}-{n}")]
    cpu, events = {}, {}
    for _ in range(reps):
        for n in (2, 1000):
            for b in binaries:
                cpu.setdefault((b, n), []).append(timed(cmd(b, n))[1])
                summary = out / f"o-{binaries.index(b)}-{n}" / "summary.json"
                events[(b, n)] = json.loads(summary.read_text())["runs"][0]["events"]
    print(f"\n20 s runs, whole process: events per CPU second (median of {reps})\n")
    print("| binary | 2 nodes | 1,000 nodes | 1,000 / 2 |")
    print("|---|---|---|---|")
    for b in binaries:
        r = {n: events[(b, n)] / statistics.median(cpu[(b, n)]) for n in (2, 1000)}
        print(f"| {Path(b).name} | {r[2] / 1e6:.2f} M | {r[1000] / 1e6:.2f} M | {r[1000] / r[2]:.0%} |")


def fixed(reps, binaries, count_instructions):
    """What a run costs besides its events: a 1 s run of the canonical load
    at 2, 1,000 and 10,000 nodes, the whole process (loading the model,
    building the world, the summary and the CSV files), as a ratio to the
    2-node run of the same binary."""
    out = Path(tempfile.mkdtemp(prefix="hcsim-fixed-"))
    sizes = (2, 1000, 10000)
    for n in sizes:
        (out / f"fixed-{n}.json").write_text(json.dumps(fixed_model(n)))
    # A directory for each binary and size: the 2-node run does not pay for
    # replacing the 30 MB summary the 10,000-node run left (it did, once).
    cmd = lambda b, n: [b, "run", str(out / f"fixed-{n}.json"), "--no-charts", "--jobs", "1",
                        "--format", "json", "-q", "--out", str(out / f"o-{binaries.index(b)}-{n}")]
    cpu = {(b, n): [] for b in binaries for n in sizes}
    for _ in range(reps):  # interleaved, so that a noisy moment hits every size alike
        for n in sizes:
            for b in binaries:
                cpu[(b, n)].append(timed(cmd(b, n))[1])
    print(f"fixed cost: a 1 s run at 10k req/s (canonical model, no fault), whole process, "
          f"`--no-charts --jobs 1 --format json -q`; CPU median of {reps}\n")
    print("| binary | nodes | CPU | × 2 nodes | peak RSS | instructions | × 2 nodes |")
    print("|---|---|---|---|---|---|---|")
    for b in binaries:
        base = statistics.median(cpu[(b, 2)])
        base_ins = None
        for n in sizes:
            c = statistics.median(cpu[(b, n)])
            rss = peak_rss(cmd(b, n))
            ins = instructions(cmd(b, n)) if count_instructions and n <= 1000 else None
            if n == 2:
                base_ins = ins
            ins_cell = f"{ins:,}" if ins else "—"
            ratio = f"{ins / base_ins:.2f}" if ins and base_ins else "—"
            print(f"| {Path(b).name} | {n:,} | {c * 1e3:.1f} ms | {c / base:.2f} | "
                  f"{rss / 1024:.1f} MB | {ins_cell} | {ratio} |")
    events_rate(reps, binaries)


def peak_rss(cmd):
    """Peak resident set size of one run, in KiB (GNU time if present, else getrusage)."""
    gnu = Path("/usr/bin/time")
    if gnu.exists():
        p = subprocess.run([str(gnu), "-f", "%M"] + cmd, cwd=ROOT, capture_output=True, text=True)
        try:
            return float(p.stderr.strip().splitlines()[-1])
        except (ValueError, IndexError):
            pass
    return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["compare", "scaling", "small", "ab", "fleet", "fixed"])
    ap.add_argument("binaries", nargs="*", help="ab: hcsim binaries to compare (the first is the baseline); scaling: binaries for the node table")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--fleet", action="store_true", help="ab: on the fleet model instead of the canonical one")
    ap.add_argument("--instructions", action="store_true",
                    help="fixed: also count instructions with valgrind (slow)")
    args = ap.parse_args()
    if args.what == "fixed":
        if not args.binaries:
            build()
        fixed(args.reps, [str(Path(b).resolve()) for b in args.binaries] or [str(HCSIM)],
              args.instructions)
        return
    if args.what == "ab":
        if len(args.binaries) < 2:
            ap.error("ab needs two hcsim binaries, e.g. ab /tmp/hcsim-old target/release/hcsim")
        ab(args.reps, [str(Path(b).resolve()) for b in args.binaries], args.fleet)
        return
    if args.what == "scaling":
        build()
        scaling(args.reps, [str(Path(b).resolve()) for b in args.binaries])
        return
    if args.binaries:
        ap.error(f"{args.what} takes no binaries")
    build()
    {"compare": compare, "small": small, "fleet": fleet}[args.what](args.reps)


if __name__ == "__main__":
    main()
