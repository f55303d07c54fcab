#!/usr/bin/env python3
"""Calibration of `hcsim replay` with real access logs.

Each pair (calibration/replay_pairs.json) is one fault and one workload
under two gateway settings. `record` runs the first setting once against the
real nginx or HAProxy and keeps its access log (and nginx's error log, and
the gateway's config as it ran), then runs the second setting `--reps` times
and keeps its real figures; everything goes to calibration/logs/<pair>/.
`check` replays each first log with `hcsim replay LOG --config CONF --target
NAME --set <the second setting>` and checks, figure by figure:

- the fit: the replay with the log's own settings reproduces the log's
  client statuses, per-node shares and first ejection times (replay.json's
  own verdicts, which use run.py's tolerances);
- the prediction: the counterfactual's median lands inside the second real
  run's range, widened by run.py's `tolerance` (run.py's `verdict`).

Exits 1 when a figure is off. Standard library only.
"""

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import harness  # noqa: E402
import metrics  # noqa: E402
import run as calib  # noqa: E402

PAIRS = os.path.join(HERE, "replay_pairs.json")
LOGS = os.path.join(HERE, "logs")

# Figures the prediction is checked on (the acceptance): client
# statuses and timeouts, per-node shares, ejections and first ejection delays.
CHECKED = re.compile(r"^(client\.status\.\d+|client\.timeouts|nodes\.[^.]+\.(share|ejections|first_ejection_delay_s))$")


def set_path(doc, path, value):
    """`a.b[0].c=value` on a JSON document (the subset `--set` paths use)."""
    keys = []
    for part in path.split("."):
        m = re.fullmatch(r"([^\[\]]+)((?:\[\d+\])*)", part)
        keys.append(m.group(1))
        keys += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
    cur = doc
    for k in keys[:-1]:
        if isinstance(k, str) and k not in cur:
            cur[k] = {}
        cur = cur[k]
    cur[keys[-1]] = value


def with_sets(model, sets):
    doc = json.loads(json.dumps(model))
    for s in sets:
        path, raw = s.split("=", 1)
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        set_path(doc, path, value)
    return doc


# HAProxy's `option httplog` line (after the syslog header):
# 127.0.0.1:40000 [01/Dec/2026:20:00:00.123] calib_in be/A 0/0/0/5/5 200 ... ---- 1/1/0/0/0 0/0 "GET /r/12 HTTP/1.0"
HTTPLOG = re.compile(r'\S+ \[[^\]]+\] \S+ \S+/(\S+) -?\d+/-?\d+/-?\d+/-?\d+/(-?\d+) (-?\d+) \S+ \S+ \S+ (\S{4}) '
                     r'\d+/\d+/\d+/\d+/\+?(\d+) \d+/\d+ "\S+ /r/(\d+)')
SYSLOG = re.compile(r"^<\d+>1 \S+ \S+ \S+ \S+ \S+ \S+ ")


def as_harness_lines(gw_lines):
    """HAProxy's httplog lines as the harness's own `REQ` log-format, so that
    metrics.real_figures reads them unchanged; check and state lines lose
    their syslog header."""
    out = []
    for t, line in gw_lines:
        body = SYSLOG.sub("", line)
        m = HTTPLOG.search(body)
        if m:
            srv, ta, st, ts, rc, i = m.groups()
            out.append((t, "REQ /r/%s %s %s %s %s %s" % (i, srv, st, rc, ta, ts)))
        else:
            out.append((t, body))
    return out


def real_run(hcsim, model, rep, workdir, pids):
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, "model-%s-%d.json" % (model["name"], rep))
    with open(path, "w") as f:
        json.dump(model, f)
    harness.HAPROXY_HTTPLOG = model.get("gateway", {}).get("flavor") == "haproxy"
    bound = harness.dur(model["duration"]) + 20.0
    t0, _b, client, rec = harness.run_rep(hcsim, path, model, rep, workdir, bound, pids)
    raw = list(rec["gw_lines"])
    rec["gw_lines"] = as_harness_lines(raw)
    figs = metrics.real_figures(model, t0, client, rec)
    faults = [(what, node, round(t - t0, 4)) for what, node, t in rec["faults_done"]]
    return t0, rec, raw, figs, faults


def gz(src_text, dest):
    with gzip.open(dest, "wt", compresslevel=9) as f:
        f.write(src_text)


def record(args, pairs, pids):
    workdir = tempfile.mkdtemp(prefix="hcsim-replay-pairs-")
    try:
        for p in pairs:
            if args.pairs and p["name"] not in args.pairs:
                continue
            start = time.time()
            out = os.path.join(LOGS, p["name"])
            os.makedirs(out, exist_ok=True)
            first = p["first"]
            flavor = first.get("gateway", {}).get("flavor", "nginx")
            t0, rec, raw, figs, faults = real_run(args.hcsim, first, 0, os.path.join(workdir, p["name"], "first"), pids)
            d = rec["dir"]
            if flavor == "nginx":
                with open(os.path.join(d, "access.log")) as f:
                    gz(f.read(), os.path.join(out, "access.log.gz"))
                with open(os.path.join(d, "error.log")) as f:
                    gz(f.read(), os.path.join(out, "error.log.gz"))
                with open(os.path.join(d, "nginx.conf")) as f:
                    conf = f.read().replace(d, ".")
                conf_name = "nginx.conf"
            else:
                # The syslog stream only (HAProxy's own stderr notices are not the log).
                gz("".join(line + "\n" for _t, line in raw if line.startswith("<")),
                   os.path.join(out, "access.log.gz"))
                with open(os.path.join(d, "haproxy.cfg")) as f:
                    conf = f.read()
                conf_name = "haproxy.cfg"
            with open(os.path.join(out, conf_name), "w") as f:
                f.write(conf)
            second = with_sets(first, p["sets"])
            reps = []
            for r in range(args.reps):
                _t, _rec, _raw, f2, faults2 = real_run(
                    args.hcsim, second, r, os.path.join(workdir, p["name"], "second"), pids)
                reps.append({"figures": f2, "faults_done_s": faults2})
            doc = {
                "name": p["name"],
                "description": p["description"],
                "flavor": flavor,
                "config": conf_name,
                "target": p["target"],
                "sets": p["sets"],
                "replay_sets": p.get("replay_sets", p["sets"]),
                "ports": {str(k): v for k, v in rec["ports"].items()},
                "first": {"t0": t0, "figures": figs, "faults_done_s": faults, "model": first},
                "second": {"model": second, "reps": reps},
            }
            with open(os.path.join(out, "pair.json"), "w") as f:
                json.dump(doc, f, indent=1, sort_keys=True)
                f.write("\n")
            print("recorded %s in %.0f s" % (p["name"], time.time() - start), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print("work directory kept:", workdir, file=sys.stderr)


def names_by_port(pair):
    return {"127.0.0.1:%s" % port: name for port, name in pair["ports"].items()}


def renamed(key, names):
    """A figure of replay.json (nodes named by address for nginx) under the
    harness's node names."""
    # A name with dots is quoted, as hcsim's metric names write it:
    # nodes["127.0.0.1:8001"].share.
    m = re.match(r'^nodes(?:\["(.+)"\]|\.(.+))\.([a-z_]+)$', key)
    node = m and (m.group(1) or m.group(2))
    if node in names:
        return "nodes.%s.%s" % (names[node], m.group(3))
    return key


def spread_text(s, key):
    if s.get("median") is None:
        return "—"
    return calib.fmt(dict(s, none=0), key)


def check_pair(hcsim, name, out_root):
    d = os.path.join(LOGS, name)
    with open(os.path.join(d, "pair.json")) as f:
        pair = json.load(f)
    out = os.path.join(out_root, name)
    cmd = [hcsim, "replay", os.path.join(d, "access.log.gz"), "--config", os.path.join(d, pair["config"]),
           "--target", pair["target"], "--out", out, "--no-charts", "--quiet"]
    if pair["flavor"] == "nginx":
        cmd += ["--error-log", os.path.join(d, "error.log.gz")]
    # The what-if against the model `hcsim import` makes of the config
    # (one policy is `policy`, not `policies[0]`).
    for s in pair.get("replay_sets", pair["sets"]):
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return [("replay", "exit %d: %s" % (p.returncode, p.stderr.strip()))], []
    with open(os.path.join(out, "replay.json")) as f:
        rep = json.load(f)
    names = names_by_port(pair)
    bad, rows = [], []
    # The fit: replay.json's own verdicts on the figures the acceptance names.
    for fig in rep["fit"]["figures"]:
        key = renamed(fig["figure"], names)
        if CHECKED.match(key) or key.endswith(".first_ejection_s"):
            rows.append(("fit", key, fig["log"], spread_text(fig["replay"], key), fig["verdict"]))
            if fig["verdict"] == "differs":
                bad.append(("fit " + key, "log %s, replay %s" % (fig["log"], fig["replay"])))
    # The prediction: the counterfactual's runs against the second real runs.
    second = pair["second"]
    model = second["model"]
    cf = rep["counterfactuals"][0]
    with open(os.path.join(out, cf["dir"], "summary.json")) as f:
        summ = json.load(f)
    sim = [{renamed(k, names): v for k, v in metrics.hcsim_figures(r, pair["flavor"]).items()}
           for r in summ["runs"]]
    real = [r["figures"] for r in second["reps"]]
    # The range over the censored fault boundaries (shortest to longest
    # fault the first log allows), as replay.json gives it per metric.
    censoring = {renamed(r["metric"], names): r["censoring"] for r in cf["rows"]}
    keys = sorted({k for f in real + sim for k in f if CHECKED.match(k)})
    for k in keys:
        rs = calib.spread([f.get(k, 0 if calib.is_count(k) else None) for f in real])
        ss = calib.spread([f.get(k, 0 if calib.is_count(k) else None) for f in sim])
        if rs is None and ss is None:
            continue
        v = calib.verdict(k, rs, ss, model)
        c = censoring.get(k)
        if v == "differs" and rs and c and c["lo"] is not None and rep["censored"]:
            tol = calib.tolerance(k, model, rs)
            if c["lo"] <= rs["max"] + tol and c["hi"] >= rs["min"] - tol:
                v = "agrees (within the censoring range %s–%s)" % (calib.fmt(dict(rs, median=c["lo"], min=c["lo"], max=c["lo"]), k), calib.fmt(dict(rs, median=c["hi"], min=c["hi"], max=c["hi"]), k))
        rows.append(("prediction", k, calib.fmt(rs, k), calib.fmt(ss, k), v))
        if v == "differs":
            bad.append(("prediction " + k, "real %s, predicted %s" % (calib.fmt(rs, k), calib.fmt(ss, k))))
    return bad, rows


def check(args, pairs):
    out_root = tempfile.mkdtemp(prefix="hcsim-replay-check-")
    failed = []
    try:
        for p in pairs:
            if args.pairs and p["name"] not in args.pairs:
                continue
            bad, rows = check_pair(args.hcsim, p["name"], out_root)
            print("## %s\n| check | figure | log / real | replay / predicted | verdict |\n|---|---|---|---|---|" % p["name"])
            for r in rows:
                print("| %s | `%s` | %s | %s | %s |" % r)
            for what, why in bad:
                print("differs: %s %s: %s" % (p["name"], what, why), file=sys.stderr)
                failed.append(what)
            print()
    finally:
        if not args.keep:
            shutil.rmtree(out_root, ignore_errors=True)
        else:
            print("outputs kept:", out_root, file=sys.stderr)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["record", "check"])
    ap.add_argument("pairs", nargs="*", help="some pairs only (default: all)")
    ap.add_argument("--hcsim", default=os.path.join(ROOT, "target", "release", "hcsim"))
    ap.add_argument("--reps", type=int, default=3, help="real runs of the second setting (record)")
    ap.add_argument("--pids", help="write the pid of every process started to this file (record)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    with open(PAIRS) as f:
        pairs = json.load(f)["pairs"]
    if args.what == "check":
        return check(args, pairs)
    pids = []
    try:
        record(args, pairs, pids)
    finally:
        if args.pids:
            with open(args.pids, "w") as f:
                f.write("\n".join(str(p) for p in pids) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
