"""HAProxy's queues measured directly (docs/calibration.md, "HAProxy queues"):
one server with `maxconn 1` answering after 400 ms, N clients sending 10 ms
apart; prints each client's (index, send time, status, latency) and HAProxy's
log lines (`Tw`: time queued, flags `sQ`). Everything listens on 127.0.0.1;
HAProxy is stopped by its pid, also on failure.

    python3 calibration/queue_burst.py
"""

import http.client
import http.server
import json
import os
import signal
import socket
import socketserver
import subprocess
import tempfile
import threading
import time

HAPROXY = "/usr/sbin/haproxy"
DELAY = 0.4  # the backend's answer delay, s


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        time.sleep(DELAY)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def client(port, i, t0, res):
    """Request i, sent 10 ms after request i - 1: (i, sent, status, latency)."""
    time.sleep(i * 0.01)
    sent = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.request("GET", "/%d" % i)
    r = c.getresponse()
    r.read()
    res[i] = (i, round(sent - t0, 3), r.status, round(time.monotonic() - sent, 3))


def run(name, timeouts, n, port, d):
    """One burst of n requests through HAProxy with the defaults' `timeouts`."""
    be = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=be.serve_forever, daemon=True).start()
    cfg = f"""global
    log stdout format raw local0
defaults
    mode http
    log global
    option httplog
    timeout client 30s
    timeout server 30s
{timeouts}
frontend f
    bind 127.0.0.1:{port}
    default_backend b
backend b
    server s1 127.0.0.1:{be.server_address[1]} maxconn 1
"""
    path = os.path.join(d, name + ".cfg")
    with open(path, "w") as f:
        f.write(cfg)
    log = os.path.join(d, name + ".log")
    with open(log, "w") as out:
        p = subprocess.Popen([HAPROXY, "-f", path, "-db"], stdout=out, stderr=subprocess.STDOUT)
    try:
        time.sleep(0.5)
        res = [None] * n
        t0 = time.monotonic()
        ts = [threading.Thread(target=client, args=(port, i, t0, res)) for i in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        print(name, json.dumps(res))
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        be.shutdown()
    time.sleep(0.2)
    with open(log) as f:
        print(f.read())


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        run("queue1s", "    timeout connect 5s\n    timeout queue 1s", 6, free_port(), d)
        run("connect1s", "    timeout connect 1s", 6, free_port(), d)
        run("none", "", 4, free_port(), d)
