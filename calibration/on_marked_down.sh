#!/usr/bin/env bash
# HAProxy's `on-marked-down shutdown-sessions`, with and without it: a
# backend whose /slow answers after 5 s and whose /health turns 503 2.5 s
# after it starts; two requests of /slow sent 1 s after HAProxy starts. The
# log lines show when and how they ended (`DH--` 502 with the keyword, 200
# after 5 s without). Everything listens on 127.0.0.1 and is stopped by its
# pid on exit.
set -euo pipefail
HAPROXY=${HAPROXY:-$(command -v haproxy || echo /usr/sbin/haproxy)}
dir=$(mktemp -d /tmp/hcsim-on-marked-down.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
cat >"$dir/be.py" <<'PY'
import sys, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
T0 = time.time()
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path == "/health":
            code = 200 if time.time() - T0 < 2.5 else 503
        else:
            time.sleep(5); code = 200
        body = b"ok\n"
        try:
            self.send_response(code); self.send_header("Content-Length", str(len(body)))
            self.end_headers(); self.wfile.write(body)
        except OSError:
            pass
ThreadingHTTPServer(("127.0.0.1", 18281), H).serve_forever()
PY
"$HAPROXY" -v | head -1
for mode in with without; do
  keyword=""
  [ "$mode" = with ] && keyword="on-marked-down shutdown-sessions"
  cat >"$dir/$mode.cfg" <<CFG
global
    log stdout format raw local0
defaults
    mode http
    log global
    option httplog
    timeout connect 1s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:18280
    default_backend be
backend be
    option httpchk GET /health
    server s1 127.0.0.1:18281 check inter 500ms fall 2 rise 2 $keyword
CFG
  timeout 30 python3 "$dir/be.py" & be=$!; pids+=("$be")
  sleep 0.5
  timeout 30 "$HAPROXY" -db -f "$dir/$mode.cfg" >"$dir/$mode.log" 2>&1 & hp=$!; pids+=("$hp")
  sleep 1.0
  echo "== $mode the keyword"
  for i in 1 2; do
    curl -s -o /dev/null -w "request $i: %{http_code} after %{time_total} s\n" --max-time 12 \
      http://127.0.0.1:18280/slow &
    pids+=($!)
  done
  wait "${pids[@]: -2}" || true
  sleep 0.3
  kill "$hp" "$be" 2>/dev/null || true
  wait "$hp" "$be" 2>/dev/null || true
  grep -E "be/s1|is DOWN" "$dir/$mode.log" | sed 's/^/log: /'
done
