"""The real gateway's logs and the client's view as the figures hcsim's
summary.json reports (same names, same definitions):

- client: `requests`, `status.<code>` and `timeouts` of the requests sent in
  the measure window, `latency_ms.p50` of those answered;
- per node: `attempts` (nginx: every address in `$upstream_addr`), `answered`
  (2xx answers from it that reached the client), `share` (of all 2xx),
  `ejections` (nginx "upstream server temporarily disabled" lines that start
  an episode, see `episodes`; HAProxy
  "Server be/X is DOWN"), `first_ejection_delay_s` (from the start of its
  first fault to its first ejection after it; nginx: the end of the attempt
  whose failure disabled it, HAProxy: when the DOWN line was written),
  `recovery_delay_s` (from the end of its last fault to its first 2xx answer).
"""

import re

from harness import dur

ACCESS = re.compile(r'^(\S+) (\S+) "[A-Z]+ /r/(\d+) [^"]*" (\d+) "([^"]*)" "([^"]*)" "([^"]*)"$')
DISABLED = re.compile(r'upstream server temporarily disabled.*upstream: "http://127\.0\.0\.1:(\d+)/r/(\d+)"')
HA_STATE = re.compile(r'^Server \S+/(\S+) is (DOWN|UP)')
HA_REQ = re.compile(r'^REQ /r/(\d+) (\S+) (-?\d+) (\S+) (-?\d+) (\S+)')


def fault_windows(model, t0, done=None):
    """node -> (first fault start, last fault end or None), wall-clock: when
    the harness's actions took effect (a restart when the new process
    listened, some 50 ms after it was asked), else as the model says."""
    if done:
        w = {}
        for what, node, t in done:
            s, e = w.get(node, (t, None))
            w[node] = (min(s, t), t if what == "end" else e)
        return w
    w = {}
    for f in model.get("faults", []):
        at = t0 + dur(f.get("at", "0s"))
        end = dur(f.get("for"))
        end = None if end is None else at + end
        s, e = w.get(f["node"], (at, end))
        w[f["node"]] = (min(s, at), end if e is None or end is None else max(e, end))
    return w


def measure_window(model):
    m = model.get("measure") or {}
    lo = dur(m.get("from", "0s"))
    hi = dur(m["to"]) if m.get("to") else dur(model["duration"])
    return lo, hi


def percentile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(q * (len(xs) - 1)))))
    return xs[k]


def real_figures(model, t0, client, rec):
    rate = float(model["clients"]["rate_per_s"])
    lo, hi = measure_window(model)
    names = [n["name"] for n in model["nodes"]]
    inwin = lambda i: lo <= i / rate < hi  # noqa: E731
    fig = {}
    # Client.
    statuses, lat, timeouts, unfinished = {}, [], 0, 0
    end_of_run = t0 + dur(model["duration"])
    for i, (sent, ended, st) in sorted(client.results.items()):
        if not inwin(i):
            continue
        if ended > end_of_run:
            # Still in flight when hcsim's run ends.
            unfinished += 1
            continue
        if st == "timeout":
            timeouts += 1
            continue
        statuses[str(st)] = statuses.get(str(st), 0) + 1
        lat.append(1000.0 * (ended - sent))
    fig["client.requests"] = sum(1 for i in client.results if inwin(i))
    fig["client.timeouts"] = timeouts
    fig["client.unfinished"] = unfinished
    for k, v in statuses.items():
        # A connection closed without an answer: hcsim's status 0.
        fig["client.status." + ("0" if k == "error" else k)] = v
    fig["client.latency_ms.p50"] = percentile(lat, 0.5)
    node = {n: {"attempts": 0, "answered": 0, "ejections": 0, "eject_times": [], "ok_times": []}
            for n in names}
    ports = rec["ports"]
    if rec["flavor"] == "nginx":
        entries = {}
        with open(rec["dir"] + "/access.log") as f:
            for line in f:
                m = ACCESS.match(line.strip())
                if not m:
                    continue
                msec, rt, i, st, addrs, _ust, times = m.groups()
                i, st, end = int(i), int(st), float(msec)
                addrs = [a.strip() for a in addrs.split(",") if a.strip() not in ("", "-")]
                nodes_tried = [ports.get(int(a.rsplit(":", 1)[1])) if ":" in a else None for a in addrs]
                rts = []
                for x in times.split(","):
                    x = x.strip()
                    rts.append(float(x) if re.fullmatch(r"[0-9.]+", x) else 0.0)
                entries[i] = (end - float(rt), nodes_tried, rts)
                if inwin(i):
                    for n in nodes_tried:
                        if n is not None:
                            node[n]["attempts"] += 1
                last = nodes_tried[-1] if nodes_tried else None
                if last is not None and 200 <= st < 300:
                    node[last]["ok_times"].append(end)
                    if inwin(i) and end <= end_of_run:
                        node[last]["answered"] += 1
        with open(rec["dir"] + "/error.log") as f:
            for line in f:
                m = DISABLED.search(line)
                if not m:
                    continue
                n, i = ports.get(int(m.group(1))), int(m.group(2))
                if n is None:
                    continue
                if i in entries:
                    start, tried, rts = entries[i]
                    k = tried.index(n) if n in tried else len(tried) - 1
                    node[n]["eject_times"].append(start + sum(rts[: k + 1]))
    elif rec["flavor"] in ("caddy", "traefik"):
        proxy_nodes(model, t0, client, rec, node, inwin, end_of_run)
    else:
        for t, line in rec["gw_lines"]:
            m = HA_STATE.match(line)
            if m and m.group(1) in node and m.group(2) == "DOWN":
                node[m.group(1)]["ejections"] += 1
                node[m.group(1)]["eject_times"].append(t)
                continue
            m = HA_REQ.match(line)
            if m:
                i, srv, st = int(m.group(1)), m.group(2), int(m.group(3))
                if srv in node and 200 <= st < 300:
                    node[srv]["ok_times"].append(t)
                    if inwin(i) and t <= end_of_run:
                        node[srv]["answered"] += 1
    if rec["flavor"] == "nginx":
        for v in node.values():
            v["ejections"] = episodes(v["eject_times"], v["ok_times"])
    total_ok = sum(v["answered"] for v in node.values())
    windows = fault_windows(model, t0, rec.get("faults_done"))
    for n in names:
        v = node[n]
        pre = "nodes.%s." % n
        if rec["flavor"] == "nginx":
            fig[pre + "attempts"] = v["attempts"]
        fig[pre + "answered"] = v["answered"]
        fig[pre + "share"] = round(v["answered"] / total_ok, 4) if total_ok else 0.0
        fig[pre + "ejections"] = v["ejections"]
        if n in windows:
            start, end = windows[n]
            after = [t for t in v["eject_times"] if t >= start - 0.002]
            fig[pre + "first_ejection_delay_s"] = round(min(after) - start, 4) if after else None
            if end is not None:
                ok = [t for t in v["ok_times"] if t >= end]
                fig[pre + "recovery_delay_s"] = round(min(ok) - end, 4) if ok else None
    return fig


def episodes(disabled, ok):
    """nginx writes "temporarily disabled" at every failure while `fails >=
    max_fails`, also at each re-try after fail_timeout; hcsim's `ejections`
    counts episodes (`fails` reaching max_fails). A line starts an episode
    when the node answered 2xx since the previous line (which reset
    `fails`)."""
    n, prev = 0, None
    for t in sorted(disabled):
        if prev is None or any(prev < o < t for o in ok):
            n += 1
        prev = t
    return n


def hcsim_figures(run, flavor):
    """The same figures from one run of hcsim's summary.json (`runs[k]`)."""
    fig = {}
    c = run["client"]
    fig["client.requests"] = c["requests"]
    fig["client.timeouts"] = c["timeouts"]
    fig["client.unfinished"] = c["unfinished"]
    for k, v in c["status"].items():
        fig["client.status." + k] = v
    fig["client.latency_ms.p50"] = c["latency_ms"].get("p50")
    for n in run["nodes"]:
        pre = "nodes.%s." % n["name"]
        for k in ("attempts", "answered", "share", "ejections", "first_ejection_delay_s",
                  "recovery_delay_s"):
            if k == "attempts" and flavor != "nginx":
                continue  # HAProxy's log names only the last server
            fig[pre + k] = n.get(k)
    return fig


def proxy_nodes(model, t0, client, rec, node, inwin, end_of_run):
    """Caddy and Traefik: answers by node from the backends' own logs (the
    last 2xx each request got), ejections from the proxy's logs (Caddy: the
    events app's unhealthy/healthy and the admin API's passive `fails`;
    Traefik: the balancer's `Setting status of URL to DOWN|UP` and the
    breaker's `setting state to tripped|recovering`)."""
    import json as _json
    names = {b.name: b for b in rec["backends"]}
    last = {}  # request -> (node, end) of its last 2xx at a backend
    for n, b in names.items():
        for acc, end, what, path in b.conns:
            m = re.match(r"^/r/(\d+)$", path)
            if m and what.isdigit() and 200 <= int(what) < 300:
                i = int(m.group(1))
                if i not in last or last[i][1] < end:
                    last[i] = (n, end)
    for i, (n, end) in last.items():
        res = client.results.get(i)
        if res is None or not (isinstance(res[2], int) and 200 <= res[2] < 300):
            continue
        node[n]["ok_times"].append(end)
        if inwin(i) and res[1] <= end_of_run:
            node[n]["answered"] += 1
    port_of = {"127.0.0.1:%d" % p: n for p, n in rec["ports"].items()}
    events = []  # (time, node, source, out)
    if rec["flavor"] == "caddy":
        max_fails = 1
        for p in model.get("policies", []) + ([model["policy"]] if model.get("policy") else []):
            if p.get("kind") == "caddy" and p.get("passive"):
                max_fails = p["passive"].get("max_fails", 1) or 1
        with open(rec["dir"] + "/caddy.log") as f:
            for line in f:
                try:
                    e = _json.loads(line)
                except ValueError:
                    continue
                if e.get("logger") == "events" and e.get("name") in ("unhealthy", "healthy"):
                    n = port_of.get(e.get("data", {}).get("host"))
                    if n:
                        events.append((e["ts"], n, "active", e["name"] == "unhealthy"))
        for t, addr, fails in rec.get("admin_changes", []):
            n = port_of.get(addr)
            if n:
                events.append((t, n, "passive", fails >= max_fails))
    else:
        url = re.compile(r"Setting status of http://(127\.0\.0\.1:\d+) to (UP|DOWN)")
        trip = re.compile(r"setting state to (tripped|recovering)")
        for t, line in rec["gw_lines"]:
            try:
                msg = _json.loads(line).get("message", "")
            except ValueError:
                continue
            m = url.search(msg)
            if m and port_of.get(m.group(1)):
                events.append((t, port_of[m.group(1)], "status", m.group(2) == "DOWN"))
            m = trip.search(msg)
            if m:
                for n in node:
                    events.append((t, n, "breaker", m.group(1) == "tripped"))
    state = {}
    for t, n, src, out in sorted(events, key=lambda e: e[0]):
        s = state.setdefault(n, {})
        was = any(s.values())
        s[src] = out
        if any(s.values()) and not was:
            node[n]["ejections"] += 1
            node[n]["eject_times"].append(t)
