#!/usr/bin/env python3
"""Which server real HAProxy (`balance source`) and nginx (`ip_hash`, `hash
$remote_addr consistent`) choose for each client address: clients connect
from distinct loopback source addresses (127.B.C.D, the socket bound before
connecting) to a gateway in front of five backends on 127.0.0.1 that answer
with their own index. Prints one JSON object: for each configuration, the
server index (0-4) per source address, in the order of `addresses()`.

    python3 calibration/source_hash.py [--haproxy /usr/sbin/haproxy] [--nginx /usr/sbin/nginx]

The figures pin hcsim's maps in `src/world/gateway/balancer/source.rs`
(tests `real_haproxy_*`). Standard library only; every process it starts is
stopped by its pid.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

BASE = 19400
WEIGHTS = [1, 2, 1, 1, 1]
DOWN = 2  # the server set `disabled` in the *-down configurations


def addresses():
    """64 loopback addresses, varied in every octet."""
    out = []
    for k in range(64):
        out.append(f"127.{(k * 37) % 256}.{(k * 11 + 3) % 256}.{1 + (k * 5) % 254}")
    return out


def backends(stop):
    socks = []
    for i in range(5):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", BASE + i))
        s.listen(128)
        socks.append(s)

    def serve(i, s):
        s.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = s.accept()
            except socket.timeout:
                continue
            c.recv(65536)
            body = str(i).encode()
            c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            c.close()

    for i, s in enumerate(socks):
        threading.Thread(target=serve, args=(i, s), daemon=True).start()


def ask(src, port):
    s = socket.socket()
    s.bind((src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
    data = b""
    while True:
        b = s.recv(4096)
        if not b:
            break
        data += b
    s.close()
    return int(data.split(b"\r\n\r\n", 1)[1])


def haproxy_conf(port, hash_type, down):
    servers = "\n".join(
        f"    server s{i} 127.0.0.1:{BASE + i} weight {w}" + (" disabled" if down and i == DOWN else "")
        for i, w in enumerate(WEIGHTS)
    )
    return f"""global
    maxconn 1000
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend f
    bind 127.0.0.1:{port}
    default_backend b
backend b
    balance source
    hash-type {hash_type}
{servers}
"""


def nginx_conf(port, balancer, down, tmp):
    servers = "\n".join(
        f"        server 127.0.0.1:{BASE + i} weight={w}" + (" down" if down and i == DOWN else "") + ";"
        for i, w in enumerate(WEIGHTS)
    )
    return f"""daemon off;
master_process off;
error_log {tmp}/error.log;
pid {tmp}/nginx.pid;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {tmp};
    proxy_temp_path {tmp};
    fastcgi_temp_path {tmp};
    uwsgi_temp_path {tmp};
    scgi_temp_path {tmp};
    upstream u {{
        {balancer};
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{ proxy_pass http://u; }}
    }}
}}
"""


def measure(cmd, port):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        return [ask(a, port) for a in addresses()]
    finally:
        p.terminate()
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--haproxy", default="/usr/sbin/haproxy")
    ap.add_argument("--nginx", default="/usr/sbin/nginx")
    args = ap.parse_args()
    stop = threading.Event()
    backends(stop)
    out = {"addresses": addresses(), "weights": WEIGHTS, "down": DOWN}
    port = BASE + 10
    with tempfile.TemporaryDirectory() as tmp:
        for name, ht in [
            ("map-based", "map-based"),
            ("map-based-avalanche", "map-based sdbm avalanche"),
            ("consistent", "consistent"),
            ("consistent-sdbm", "consistent sdbm"),
        ]:
            for down in (False, True):
                path = os.path.join(tmp, "h.cfg")
                with open(path, "w") as f:
                    f.write(haproxy_conf(port, ht, down))
                key = "haproxy " + name + (" down" if down else "")
                out[key] = measure([args.haproxy, "-db", "-f", path], port)
                port += 1
        for name, bal in [("ip_hash", "ip_hash"), ("hash-consistent", "hash $remote_addr consistent")]:
            for down in (False, True):
                path = os.path.join(tmp, "n.conf")
                with open(path, "w") as f:
                    f.write(nginx_conf(port, bal, down, tmp))
                key = "nginx " + name + (" down" if down else "")
                out[key] = measure([args.nginx, "-c", path, "-p", tmp], port)
                port += 1
    stop.set()
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
