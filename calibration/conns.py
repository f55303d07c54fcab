"""Connections in the calibration harness (hcsim's `gateway.pool`): the
backend options a scenario's nodes need (`--keepalive` with the node's own
keep-alive timeout and request limit, its `backlog`), an open-loop client
that keeps its connections (`clients.connection: keepalive`) or sends POST,
and the connection figures: per node, connections opened and requests on
reused connections (from the backends' `accept`/`req` lines), and for nginx
the resets on reused connections (its error log). Standard library only.
"""

import re
import socket
import threading
import time


def dur(s):
    # harness.dur (harness imports this module).
    import harness
    return harness.dur(s)

PREMATURE = re.compile(r'(upstream prematurely closed connection|recv\(\) failed \(104: '
                       r'Connection reset by peer\)).*upstream: "http://127\.0\.0\.1:(\d+)/')


def keeps_connections(model):
    """Does the gateway keep connections (hcsim's `keeps_connections`)?"""
    g = model.get("gateway", {})
    if g.get("pool"):
        return True
    return g.get("flavor") == "haproxy" and \
        model["clients"].get("connection") == "keepalive"


def backend_args(model, node):
    """Extra backend.py arguments for `node`."""
    args = []
    if keeps_connections(model) or "keepalive_timeout" in node or "keepalive_requests" in node:
        args.append("--keepalive")
        if "keepalive_timeout" in node:
            args += ["--keepalive-timeout", "%.6f" % dur(node["keepalive_timeout"])]
        if "keepalive_requests" in node:
            args += ["--keepalive-requests", str(int(node["keepalive_requests"]))]
    if "backlog" in node:
        # Linux queues listen(n)'s n + 1 connections (`sk_acceptq_is_full`
        # is `>`); hcsim's backlog is the number queued.
        args += ["--backlog", str(max(0, int(node["backlog"]) - 1))]
    return args


def fault(kind, backend):
    """(start, end) actions of a fault kind the harness itself does not know."""
    if kind == "stop_accepting":
        return (lambda: backend.cmd("stop_accepting")), (lambda: backend.cmd("accept"))
    return None


class Client:
    """Open loop, request i at t0 + i / rate, as harness.Client; with
    `keepalive` each request goes on the most recently idle connection (or
    a new one) as HTTP/1.1, else on its own connection as HTTP/1.0 with
    `Connection: close`. A keep-alive connection closed before any answer is
    an "error" (hcsim's status 0)."""

    def __init__(self, listen, rate, count, timeout_s, method, keepalive):
        self.listen, self.rate, self.count = listen, rate, count
        self.timeout_s, self.method, self.keepalive = timeout_s, method, keepalive
        self.results = {}
        self.threads = []
        self.idle = []  # connections, most recently idle last
        self.lock = threading.Lock()

    def request(self, i):
        body = b""
        if self.keepalive:
            head = "%s /r/%d HTTP/1.1\r\nHost: calib\r\nContent-Length: %d\r\n\r\n"
        else:
            head = "%s /r/%d HTTP/1.0\r\nHost: calib\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
        return (head % (self.method, i, len(body))).encode() + body

    def one(self, i):
        sent = time.time()
        s = None
        with self.lock:
            if self.keepalive and self.idle:
                s = self.idle.pop()
        try:
            if s is None:
                s = socket.create_connection(self.listen, timeout=self.timeout_s)
            s.settimeout(max(0.001, sent + self.timeout_s - time.time()))
            s.sendall(self.request(i))
            status, keep = self.read(s, sent)
            self.results[i] = (sent, time.time(), status)
            if keep and status != "error":
                with self.lock:
                    self.idle.append(s)
                s = None
        except socket.timeout:
            self.results[i] = (sent, time.time(), "timeout")
        except OSError:
            self.results[i] = (sent, time.time(), "error")
        finally:
            if s is not None:
                s.close()

    def read(self, s, sent):
        """The status of one response, and whether the connection stays open."""
        data = b""
        while b"\r\n\r\n" not in data:
            s.settimeout(max(0.001, sent + self.timeout_s - time.time()))
            chunk = s.recv(65536)
            if not chunk:
                return "error", False
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        m = re.match(rb"HTTP/1\.([01]) (\d{3})", head)
        if not m:
            return "error", False
        lower = head.lower()
        n = re.search(rb"content-length:\s*(\d+)", lower)
        length = int(n.group(1)) if n else None
        keep = self.keepalive and m.group(1) == b"1" and b"connection: close" not in lower
        if length is None:
            keep = False
        while length is None or len(rest) < length:
            s.settimeout(max(0.001, sent + self.timeout_s - time.time()))
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
        return int(m.group(2)), keep

    def run(self, t0):
        for i in range(self.count):
            wait = t0 + i / self.rate - time.time()
            if wait > 0:
                time.sleep(wait)
            t = threading.Thread(target=self.one, args=(i,), daemon=True)
            t.start()
            self.threads.append(t)

    def join(self, deadline):
        for t in self.threads:
            t.join(max(0.0, deadline - time.time()))
        with self.lock:
            for s in self.idle:
                s.close()
            self.idle.clear()


def client_for(model, listen, rate, count, timeout_s):
    """This module's client when the scenario needs it (keep-alive or a
    method other than GET), else None (harness.Client)."""
    c = model["clients"]
    keepalive = c.get("connection") == "keepalive"
    method = c.get("method", "GET")
    if not keepalive and method == "GET":
        return None
    return Client(listen, rate, count, timeout_s, method, keepalive)


def checked(model):
    ps = list(model.get("policies", [])) + ([model["policy"]] if model.get("policy") else [])
    return any(p.get("kind") == "active_probe" for p in ps)


def real_figures(model, t0, backends, rec):
    """The connection figures of one real replication."""
    if not keeps_connections(model) or checked(model):
        return {}
    fig = {}
    for b in backends:
        accepts = [w for w in b.events if w[0] == "accept"]
        reqs = [w for w in b.events if w[0] == "req"]
        pre = "nodes.%s.connections." % b.name
        fig[pre + "opened"] = len(accepts)
        fig[pre + "reused"] = len(reqs) - len({w[1] for w in reqs})
    if rec["flavor"] == "nginx":
        ports = rec["ports"]
        counts = {b.name: 0 for b in backends}
        with open(rec["dir"] + "/error.log") as f:
            for line in f:
                m = PREMATURE.search(line)
                if m and ports.get(int(m.group(2))) in counts:
                    counts[ports[int(m.group(2))]] += 1
        for n, c in counts.items():
            fig["nodes.%s.connections.reset_on_reuse" % n] = c
    return fig


def hcsim_figures(model, run):
    """The same figures from one run of hcsim's summary.json."""
    if not keeps_connections(model) or checked(model):
        return {}
    fig = {}
    for n in run["nodes"]:
        c = n.get("connections") or {}
        pre = "nodes.%s.connections." % n["name"]
        fig[pre + "opened"] = c.get("opened", 0)
        fig[pre + "reused"] = c.get("reused", 0)
        if model.get("gateway", {}).get("flavor", "nginx") == "nginx":
            fig[pre + "reset_on_reuse"] = c.get("reset_on_reuse", 0)
    return fig
