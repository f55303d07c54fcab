#!/usr/bin/env python3
"""One backend node for the calibration harness: an HTTP/1.0 server on
127.0.0.1 that closes the connection after each answer (no keep-alive), and
whose behaviour changes on command, one line at a time on stdin:

    healthy [SECONDS]  answer 200 (after SECONDS, default 0)
    status N           answer N to every request
    flaky P N          answer N with probability P (seeded RNG), else 200
    hang               accept and read, answer only after the next command
    slow SECONDS       answer 200 after SECONDS
    quit               exit

Crashes (kill -9) and SIGSTOP/SIGCONT are done by the harness to the
process itself. Prints `ready PORT` once listening, then one line per
connection: `conn ACCEPTED ENDED WHAT PATH` (wall-clock seconds; WHAT is the
status answered, `closed` when the peer closed it first, or `reset`; PATH
the request's, `-` before one was read). Standard
library only.
"""

import argparse
import random
import select
import socket
import sys
import threading
import time


class State:
    def __init__(self, seed):
        self.lock = threading.Lock()
        self.mode = ("healthy",)
        self.rng = random.Random(seed)
        # Set while not hanging; hung requests wait on it.
        self.running = threading.Event()
        self.running.set()

    def set(self, words):
        with self.lock:
            if words[0] == "hang":
                self.running.clear()
            else:
                self.running.set()
            self.mode = tuple(words)

    def decide(self):
        """The status to answer and the delay before it, or None to hang."""
        with self.lock:
            m = self.mode
            if m[0] == "hang":
                return None
            if m[0] == "status":
                return int(m[1]), 0.0
            if m[0] == "flaky":
                return (int(m[2]) if self.rng.random() < float(m[1]) else 200), 0.0
            if m[0] in ("slow", "healthy") and len(m) > 1:
                return 200, float(m[1])
            return 200, 0.0


REASONS = {200: "OK", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}


OUT = threading.Lock()


def report(accepted, what, path="-"):
    with OUT:
        sys.stdout.write("conn %.6f %.6f %s %s\n" % (accepted, time.time(), what, path))
        sys.stdout.flush()


def peer_closed(conn, wait):
    """Waits up to `wait` s; True if the peer closed the connection."""
    r, _, _ = select.select([conn], [], [], wait)
    if not r:
        return False
    try:
        return conn.recv(4096, socket.MSG_PEEK) == b""
    except OSError:
        return True


def serve(conn, state):
    accepted = time.time()
    what = "reset"
    path = "-"
    try:
        conn.settimeout(120)
        data = b""
        while b"\r\n\r\n" not in data and b"\n\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                what = "closed"
                return
            data += chunk
        first = data.split(b"\r\n", 1)[0].split()
        if len(first) >= 2:
            path = first[1].decode("latin-1")
        while True:
            d = state.decide()
            if d is not None:
                break
            # Hung: wait for the mode to change (as hcsim's hang freezes the
            # work), noticing when the peer gives up.
            if state.running.wait(0.005):
                continue
            if peer_closed(conn, 0.005):
                what = "closed"
                return
        status, delay = d
        if delay > 0:
            time.sleep(delay)
        body = b"ok\n"
        head = "HTTP/1.0 %d %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (
            status, REASONS.get(status, "Status"), len(body))
        conn.sendall(head.encode() + body)
        what = str(status)
    except OSError:
        pass
    finally:
        report(accepted, what, path)
        try:
            conn.close()
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backlog", type=int, default=511)
    ap.add_argument("--mode", default="healthy", help="initial command, e.g. 'status 503'")
    ap.add_argument("--listen-at", type=float, default=0.0,
                    help="wall-clock time to start listening at (a restart after a crash "
                         "is started early so that it listens on time)")
    a = ap.parse_args()
    wait = a.listen_at - time.time()
    if wait > 0:
        time.sleep(wait)
    state = State(a.seed)
    state.set(a.mode.split())
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", a.port))
    s.listen(a.backlog)

    def control():
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            if words[0] == "quit":
                break
            state.set(words)
        # stdin closed or quit: the harness is gone, so are we.
        import os
        os._exit(0)

    threading.Thread(target=control, daemon=True).start()
    print("ready", a.port, flush=True)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn, state), daemon=True).start()


if __name__ == "__main__":
    main()
