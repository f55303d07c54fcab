#!/usr/bin/env python3
"""One backend node for the calibration harness: an HTTP/1.0 server on
127.0.0.1 that closes the connection after each answer (no keep-alive), and
whose behaviour changes on command, one line at a time on stdin:

    healthy [SECONDS]  answer 200 (after SECONDS, default 0)
    status N           answer N to every request
    flaky P N          answer N with probability P (seeded RNG), else 200
    hang               accept and read, answer only after the next command
    slow SECONDS       answer 200 after SECONDS
    stop_accepting     close the listening socket; open connections are served
    accept             listen again
    quit               exit

With `--keepalive` it speaks HTTP/1.1 keep-alive to a client that asks for
it (an HTTP/1.1 request without `Connection: close`): the connection stays
open for the next request until it has been idle `--keepalive-timeout`
seconds (default: for ever) or has carried `--keepalive-requests` requests
(the last answered with `Connection: close`), as Node.js or gunicorn do.

Crashes (kill -9) and SIGSTOP/SIGCONT are done by the harness to the
process itself. Prints `ready PORT` once listening, then one line per
connection: `conn ACCEPTED ENDED WHAT PATH` (wall-clock seconds; WHAT is the
status answered last, `closed` when the peer closed it first, or `reset`; PATH
the request's, `-` before one was read), and with `--keepalive` also `accept ID
T` when it is accepted, `req ID STARTED ENDED STATUS` per request and `close ID
T WHY` (`idle`, `limit`, `peer`, `client`) when it ends. Standard library only.
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


def serve(conn, state, keep=None):
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
        if keep is not None:
            what = keep.serve(conn, state, data, accepted)
            return
        status = answer(conn, state)
        if status is None:
            what = "closed"
            return
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


def answer(conn, state):
    """Waits out the mode (hang, slow), then the status to answer; None if
    the peer gave up meanwhile."""
    while True:
        d = state.decide()
        if d is not None:
            break
        # Hung: wait for the mode to change (as hcsim's hang freezes the
        # work), noticing when the peer gives up.
        if state.running.wait(0.005):
            continue
        if peer_closed(conn, 0.005):
            return None
    status, delay = d
    if delay > 0:
        time.sleep(delay)
    return status


class KeepAlive:
    """HTTP/1.1 keep-alive: one connection, several requests."""

    def __init__(self, timeout, requests):
        self.timeout, self.requests = timeout, requests
        self.lock = threading.Lock()
        self.next_id = 0

    def log(self, *words):
        with OUT:
            sys.stdout.write(" ".join(str(w) for w in words) + "\n")
            sys.stdout.flush()

    def serve(self, conn, state, data, accepted):
        with self.lock:
            self.next_id += 1
            cid = self.next_id
        self.log("accept", cid, "%.6f" % accepted)
        served, what, why = 0, "closed", "peer"
        try:
            while True:
                head, _, rest = data.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                words = lines[0].split()
                started = time.time()
                headers = {}
                for l in lines[1:]:
                    k, _, v = l.partition(":")
                    headers[k.strip().lower()] = v.strip().lower()
                length = int(headers.get("content-length", "0") or 0)
                while len(rest) < length:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return "closed"
                    rest += chunk
                status = answer(conn, state)
                if status is None:
                    return "closed"
                served += 1
                keep = (len(words) == 3 and words[2] == "HTTP/1.1"
                        and headers.get("connection") != "close")
                if keep and self.requests and served >= self.requests:
                    keep, why = False, "limit"
                elif not keep:
                    why = "client"
                body = b"ok\n"
                head = "HTTP/1.1 %d %s\r\nContent-Length: %d\r\n%s\r\n" % (
                    status, REASONS.get(status, "Status"), len(body),
                    "" if keep else "Connection: close\r\n")
                conn.sendall(head.encode() + body)
                what = str(status)
                self.log("req", cid, "%.6f" % started, "%.6f" % time.time(), status)
                if not keep:
                    return what
                # Idle until the next request or the keep-alive timeout.
                data = rest[length:]
                deadline = None if self.timeout is None else time.time() + self.timeout
                while b"\r\n\r\n" not in data:
                    wait = None if deadline is None else deadline - time.time()
                    if wait is not None and wait <= 0:
                        why = "idle"
                        return what
                    r, _, _ = select.select([conn], [], [], wait)
                    if not r:
                        continue
                    chunk = conn.recv(4096)
                    if not chunk:
                        why = "peer"
                        return what
                    data += chunk
        except OSError:
            why = "reset"
            return "reset"
        finally:
            self.log("close", cid, "%.6f" % time.time(), why)


def listener(port, backlog):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(backlog)
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backlog", type=int, default=511)
    ap.add_argument("--mode", default="healthy", help="initial command, e.g. 'status 503'")
    ap.add_argument("--listen-at", type=float, default=0.0,
                    help="wall-clock time to start listening at (a restart after a crash "
                         "is started early so that it listens on time)")
    ap.add_argument("--keepalive", action="store_true",
                    help="keep HTTP/1.1 connections open for further requests")
    ap.add_argument("--keepalive-timeout", type=float,
                    help="with --keepalive: close a connection idle this many seconds")
    ap.add_argument("--keepalive-requests", type=int, default=0,
                    help="with --keepalive: close a connection after this many requests")
    a = ap.parse_args()
    wait = a.listen_at - time.time()
    if wait > 0:
        time.sleep(wait)
    state = State(a.seed)
    state.set(a.mode.split())
    keep = KeepAlive(a.keepalive_timeout, a.keepalive_requests) if a.keepalive else None
    # The listening socket, replaced by the control thread: `stop_accepting`
    # shuts it down at once (Linux stops listening and wakes the accept
    # loop's select), `accept` listens again at once.
    sock = [listener(a.port, a.backlog)]
    listening = threading.Event()
    listening.set()

    def control():
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            if words[0] == "quit":
                break
            if words[0] == "stop_accepting":
                listening.clear()
                try:
                    sock[0].shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                continue
            if words[0] == "accept":
                if not listening.is_set():
                    sock[0] = listener(a.port, a.backlog)
                    listening.set()
                continue
            state.set(words)
        # stdin closed or quit: the harness is gone, so are we.
        import os
        os._exit(0)

    threading.Thread(target=control, daemon=True).start()
    print("ready", a.port, flush=True)
    while True:
        if not listening.is_set():
            listening.wait(0.05)
            continue
        s = sock[0]
        try:
            r, _, _ = select.select([s], [], [], 0.05)
            if not r or not listening.is_set():
                continue
            conn, _ = s.accept()
        except OSError:
            # Shut down by `stop_accepting` under our feet.
            continue
        threading.Thread(target=serve, args=(conn, state, keep), daemon=True).start()


if __name__ == "__main__":
    main()
