"""Runs one replication of a scenario against the real nginx or HAProxy on
127.0.0.1: backends (backend.py), the gateway configured by `hcsim export`,
an open-loop client in real time and the fault timeline; then reads the
gateway's logs into the metrics hcsim's summary.json reports.

Every process started here is recorded in a `Procs` and ended by its pid in
a `finally`, also when the run fails or overruns its time bound.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import conns

HERE = os.path.dirname(os.path.abspath(__file__))
NGINX = "/usr/sbin/nginx"
HAPROXY = "/usr/sbin/haproxy"


def which(name, fallback):
    if os.path.exists(fallback):
        return fallback
    for d in os.environ.get("PATH", "").split(":"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def still_child_of_ours(pid, parent):
    """The pid still runs the parent's program (not a reused pid)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read()
    except OSError:
        return False
    return os.path.basename(parent.args[0]).encode() in cmd


class Procs:
    """The processes of one replication, ended by pid (children first)."""

    def __init__(self, sink):
        self.procs = []
        # Every pid started, also those of a run that fails (for the caller
        # to check that none is left).
        self.sink = sink
        self.closed = False

    def add(self, p):
        self.procs.append(p)
        self.sink.append(p.pid)
        if self.closed:
            # A fault action that outlived its run: end it at once.
            self.end(p, grace=0.0)
            raise RuntimeError("process started after the run ended")
        return p

    def end(self, p, grace=2.0):
        if p.poll() is not None:
            return
        kids = children(p.pid)
        try:
            p.send_signal(signal.SIGCONT)
            p.terminate()
            p.wait(timeout=grace)
        except (subprocess.TimeoutExpired, OSError):
            pass
        # nginx's workers (read while the master was alive), then the master.
        for pid in kids:
            if still_child_of_ours(pid, p):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        if p.poll() is None:
            p.kill()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def end_all(self):
        self.closed = True
        for p in reversed(self.procs):
            self.end(p)


class Backend:
    """One node: backend.py on its port, controlled through its stdin."""

    def __init__(self, procs, name, port, seed, delay_s, extra=()):
        self.procs, self.name, self.port, self.seed = procs, name, port, seed
        self.delay_s, self.extra = delay_s, list(extra)
        self.conns = []  # (accepted, ended, what)
        self.events = []  # other lines, split (conns.py: keep-alive connections)
        self.p = None
        self.start()

    def start(self, listen_at=0.0):
        mode = "healthy %.6f" % self.delay_s
        self.p = self.procs.add(subprocess.Popen(
            [sys.executable, os.path.join(HERE, "backend.py"), "--port", str(self.port),
             "--seed", str(self.seed), "--mode", mode, "--listen-at", "%.6f" % listen_at]
            + self.extra,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        line = self.p.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError("backend %s did not start" % self.name)
        p = self.p

        def read():
            for l in p.stdout:
                w = l.split()
                if len(w) in (4, 5) and w[0] == "conn":
                    self.conns.append((float(w[1]), float(w[2]), w[3], w[4] if len(w) == 5 else "-"))
                elif w:
                    self.events.append(w)

        threading.Thread(target=read, daemon=True).start()

    def cmd(self, line):
        if self.p.poll() is None:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()

    def healthy(self):
        self.cmd("healthy %.6f" % self.delay_s)

    def alive(self):
        # Popen.poll: never signals a pid that was reaped (and maybe reused).
        return self.p.poll() is None

    def crash(self):
        if self.alive():
            self.p.kill()
            self.p.wait()

    def restart(self, listen_at=0.0):
        """A new process listening at `listen_at` (returns once it listens)."""
        self.start(listen_at)

    def sigstop(self):
        if self.alive():
            self.p.send_signal(signal.SIGSTOP)

    def sigcont(self):
        if self.alive():
            self.p.send_signal(signal.SIGCONT)


def dur(s):
    """An hcsim duration string ("1.5s", "300ms", "2m") in seconds."""
    if s is None:
        return None
    m = re.fullmatch(r"([0-9.]+)\s*(us|µs|ms|s|m|h)", str(s).strip())
    if not m:
        raise ValueError("bad duration %r" % s)
    return float(m.group(1)) * {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}[m.group(2)]


def service_delay(node):
    st = node.get("service_time", {"dist": "constant", "value": "5ms"})
    if st.get("dist") != "constant":
        raise ValueError("calibration backends need a constant service_time")
    return dur(st["value"])


# A restarted Python backend needs up to about half a second (on a loaded
# machine) before it listens; the harness starts it this early, to listen
# exactly when the crash ends.
RESTART_LEAD_S = 1.0


def fault_actions(model, backends, t0):
    """(time s, (start|end, node), action) of the fault timeline, sorted."""
    acts = []
    by = {b.name: b for b in backends}
    for f in model.get("faults", []):
        b = by[f["node"]]
        at, length = dur(f.get("at", "0s")), dur(f.get("for"))
        kind = f["kind"]
        if kind == "crash":
            start = b.crash
            if length is not None:
                ready = t0 + at + length
                end = lambda b=b, ready=ready: b.restart(ready)  # noqa: E731
                acts.append((at, ("start", b.name), start))
                acts.append((max(at, at + length - RESTART_LEAD_S) + 1e-6, ("end", b.name), end))
                continue
        elif kind == "hang":
            start, end = (lambda b=b: b.cmd("hang")), b.healthy
        elif kind == "stop":
            start, end = b.sigstop, b.sigcont
        elif kind == "flaky":
            if f.get("error", "status") != "status":
                raise ValueError("calibration: flaky faults answer a status")
            p, st = f["p"], f.get("status", 503)
            start, end = (lambda b=b, p=p, st=st: b.cmd("flaky %s %d" % (p, st))), b.healthy
        elif kind == "slow":
            d = b.delay_s * float(f.get("factor", 1.0)) + dur(f.get("extra", "0s"))
            start, end = (lambda b=b, d=d: b.cmd("slow %.6f" % d)), b.healthy
        elif conns.fault(kind, b):
            start, end = conns.fault(kind, b)
        else:
            raise ValueError("calibration: fault kind %s is not driven" % kind)
        acts.append((at, ("start", b.name), start))
        if length is not None:
            acts.append((at + length, ("end", b.name), end))
    return sorted(acts, key=lambda a: a[0])


class Client:
    """Open loop: request i is sent at t0 + i / rate whatever the replies."""

    def __init__(self, listen, rate, count, timeout_s):
        self.listen, self.rate, self.count = listen, rate, count
        self.timeout_s = timeout_s
        self.results = {}  # i -> (sent, ended, status or "timeout"/"error")
        self.threads = []

    def one(self, i):
        sent = time.time()
        s = None
        try:
            s = socket.create_connection(self.listen, timeout=self.timeout_s)
            s.settimeout(max(0.001, sent + self.timeout_s - time.time()))
            s.sendall(b"GET /r/%d HTTP/1.0\r\nHost: calib\r\n\r\n" % i)
            data = b""
            while True:
                s.settimeout(max(0.001, sent + self.timeout_s - time.time()))
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
            self.results[i] = (sent, time.time(), int(m.group(1)) if m else "error")
        except socket.timeout:
            self.results[i] = (sent, time.time(), "timeout")
        except OSError:
            self.results[i] = (sent, time.time(), "error")
        finally:
            if s is not None:
                s.close()

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


NGINX_LOG = ("log_format calib '$msec $request_time \"$request\" $status "
             "\"$upstream_addr\" \"$upstream_status\" \"$upstream_response_time\"';")


def export(hcsim, model_path, fmt, listen, addresses, out):
    args = [hcsim, "export", model_path, "--to", fmt, "--listen", listen, "-o", out]
    for name, addr in addresses:
        args += ["--address", "%s=%s" % (name, addr)]
    p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("hcsim export failed: %s" % p.stderr.strip())
    with open(out) as f:
        return f.read()


def nginx_conf(snippet, d, workers):
    body = "\n".join(("    " + l) if l else "" for l in snippet.splitlines())
    return ("worker_processes %d;\npid %s/nginx.pid;\nerror_log %s/error.log warn;\n"
            "events {}\nhttp {\n    %s\n    access_log %s/access.log calib;\n"
            "    client_body_temp_path %s/tmp;\n    proxy_temp_path %s/tmp;\n%s\n}\n") % (
        workers, d, d, NGINX_LOG, d, d, d, body)


HAPROXY_LOG = 'REQ %HP %s %ST %rc %Ta %ts'


# Set by replay_pairs.py: HAProxy logs as it does by default in production,
# `option httplog` behind a syslog header (RFC 5424, microsecond stamps),
# instead of the harness's own log-format.
HAPROXY_HTTPLOG = False


def haproxy_conf(snippet, listen, backend):
    if HAPROXY_HTTPLOG:
        return haproxy_conf_httplog(snippet, listen, backend)
    # HAPROXY_NBTHREAD (run.py --haproxy-nbthread) pins the thread count;
    # default: HAProxy's own (one per CPU).
    nb = os.environ.get("HAPROXY_NBTHREAD")
    return ("global\n    log stdout format raw local0\n" + ("    nbthread %d\n" % int(nb) if nb else "") + "\n"
            "defaults\n    mode http\n    log global\n    option log-health-checks\n"
            "    log-format \"%s\"\n    timeout client 60s\n\n%s\n"
            "frontend calib_in\n    mode http\n    bind %s\n    default_backend %s\n") % (
        HAPROXY_LOG, snippet, listen, backend)


def haproxy_conf_httplog(snippet, listen, backend):
    """haproxy_conf with `option httplog` and an RFC 5424 syslog header."""
    nb = os.environ.get("HAPROXY_NBTHREAD")
    return ("global\n    log stdout format rfc5424 local0\n" + ("    nbthread %d\n" % int(nb) if nb else "") + "\n"
            "defaults\n    mode http\n    log global\n    option httplog\n    option log-health-checks\n"
            "    timeout client 60s\n\n%s\n"
            "frontend calib_in\n    mode http\n    bind %s\n    default_backend %s\n") % (
        snippet, listen, backend)


def run_rep(hcsim, model_path, model, rep, workdir, time_bound, pids):
    """One real replication; returns (t0, backends, client, gateway records).
    Appends the pid of every process it starts to `pids`."""
    flavor = model.get("gateway", {}).get("flavor", "nginx")
    nodes = model["nodes"]
    ports = free_ports(len(nodes) + 1)
    listen_port = ports[-1]
    d = os.path.join(workdir, "rep%d" % rep)
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
    procs = Procs(pids)
    stop = threading.Event()
    # For connections.txt (each backend's connections, seconds from t0).
    backends_started, t0_seen = [], [time.time()]
    gw_lines = []  # (arrival time, line) from HAProxy's stdout/stderr
    deadline = time.time() + time_bound
    try:
        for i, n in enumerate(nodes):
            backends_started.append(
                Backend(procs, n["name"], ports[i], 1000 * rep + i + 1, service_delay(n),
                        conns.backend_args(model, n)))
        backends = backends_started
        addrs = [(n["name"], "127.0.0.1:%d" % ports[i]) for i, n in enumerate(nodes)]
        listen = "127.0.0.1:%d" % listen_port
        snippet = export(hcsim, model_path, flavor, listen, addrs, os.path.join(d, "snippet.conf"))
        extras = {}
        if flavor in ("caddy", "traefik"):
            import proxies
            gw, extras = proxies.start(flavor, procs, snippet, d, listen, model, deadline, gw_lines)
        elif flavor == "nginx":
            conf = os.path.join(d, "nginx.conf")
            with open(conf, "w") as f:
                f.write(nginx_conf(snippet, d, model.get("gateway", {}).get("workers", 1)))
            gw = procs.add(subprocess.Popen(
                [which("nginx", NGINX), "-p", d, "-c", conf, "-g", "daemon off;"],
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "stderr.log"), "w")))
        else:
            bname = re.search(r"^backend (\S+)", snippet, re.M).group(1)
            conf = os.path.join(d, "haproxy.cfg")
            with open(conf, "w") as f:
                f.write(haproxy_conf(snippet, listen, bname))
            gw = procs.add(subprocess.Popen(
                [which("haproxy", HAPROXY), "-db", "-f", conf],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))

            def read():
                for l in gw.stdout:
                    gw_lines.append((time.time(), l.rstrip("\n")))

            threading.Thread(target=read, daemon=True).start()
        # Wait for the gateway to listen.
        while True:
            if gw.poll() is not None:
                raise RuntimeError("the gateway exited at start; see %s" % d)
            try:
                socket.create_connection(("127.0.0.1", listen_port), timeout=0.2).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError("the gateway did not listen")
                time.sleep(0.01)
        if flavor in ("caddy", "traefik"):
            import proxies
            t0 = proxies.t0_for(model, backends)
        elif flavor == "nginx":
            # t = 0 on a whole wall-clock second (nginx's ngx_time()).
            t0 = float(int(time.time()) + 1)
        else:
            # t = 0 at HAProxy's first check of the first node (hcsim's
            # first check runs at 0), else now.
            t0 = time.time()
            if any(p.get("flavor") == "haproxy" for p in policies(model)):
                w = time.time() + 2.0
                while not backends[0].conns and time.time() < w:
                    time.sleep(0.002)
                if backends[0].conns:
                    t0 = backends[0].conns[0][0]
        t0_seen[0] = t0
        duration = dur(model["duration"])
        c = model["clients"]
        args = (("127.0.0.1", listen_port), float(c["rate_per_s"]),
                int(round(duration * float(c["rate_per_s"]))), dur(c.get("timeout")) or 30.0)
        client = conns.client_for(model, *args) or Client(*args)
        acts = fault_actions(model, backends, t0)

        done = []  # (start|end, node, wall time the action took effect)
        fault_threads = []

        def apply(what, node, act):
            act()
            # A restart takes effect when the new process listens.
            done.append((what, node, time.time()))

        def faults():
            # Each action in its own thread: a restart waits for its listen time.
            for at, (what, node), act in acts:
                if stop.wait(max(0.0, t0 + at - time.time())):
                    return
                th = threading.Thread(target=apply, args=(what, node, act), daemon=True)
                th.start()
                fault_threads.append(th)

        ft = threading.Thread(target=faults, daemon=True)
        ft.start()
        client.run(t0)
        client.join(min(deadline, t0 + duration + client.timeout_s + 1.0))
        ft.join(max(0.0, min(deadline, t0 + duration + 1.0) - time.time()))
        for th in fault_threads:
            th.join(max(0.0, deadline - time.time()))
        # Let the last log lines arrive.
        time.sleep(0.3)
        if time.time() > deadline:
            raise RuntimeError("replication exceeded its time bound of %.0f s" % time_bound)
    finally:
        stop.set()
        if "extras" in locals() and extras.get("poller"):
            extras["poller"].close()
        procs.end_all()
        if backends_started:
            with open(os.path.join(d, "connections.txt"), "w") as f:
                for b in backends_started:
                    for a, e, what, path in b.conns:
                        f.write("%s %.3f %.3f %s %s\n" % (b.name, a - t0_seen[0], e - t0_seen[0], what, path))
    records = {"flavor": flavor, "faults_done": done, "dir": d, "ports": {ports[i]: n["name"] for i, n in enumerate(nodes)},
               "gw_lines": gw_lines, "backends": backends_started,
               "admin_changes": extras["poller"].changes if extras.get("poller") else []}
    return t0, backends, client, records


def policies(model):
    ps = list(model.get("policies", []))
    if model.get("policy"):
        ps.append(model["policy"])
    return ps
