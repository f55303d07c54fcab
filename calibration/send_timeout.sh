#!/usr/bin/env bash
# nginx's proxy_send_timeout against an upstream that accepts connections
# but never reads: a GET, a 2 kB POST and a 20 MB POST, each timed from the
# client. Shows which of proxy_send_timeout (1 s) and proxy_read_timeout
# (3 s) ends each request. Everything listens on 127.0.0.1 and is stopped by
# its pid on exit.
set -euo pipefail
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
dir=$(mktemp -d /tmp/hcsim-send-timeout.XXXXXX)
chmod 755 "$dir" # nginx workers (nobody) write the request body there
pids=()
cleanup() {
  [ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log info;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  client_max_body_size 100m;
  upstream up { server 127.0.0.1:18181; }
  server {
    listen 127.0.0.1:18180;
    location / { proxy_pass http://up; proxy_send_timeout 1s; proxy_read_timeout 3s; }
  }
}
CONF
# An upstream that accepts (the kernel completes the handshakes) and never reads.
timeout 60 python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 18181)); s.listen(16); time.sleep(60)" &
pids+=($!)
sleep 0.5
"$NGINX" -c "$dir/nginx.conf" -p "$dir"
head -c 2000 /dev/zero >"$dir/small"
head -c 20000000 /dev/zero >"$dir/large"
req() {
  local what=$1; shift
  local t0 t1 code
  t0=$(date +%s.%N)
  code=$(curl -s -m 20 -o /dev/null -w '%{http_code}' "$@" http://127.0.0.1:18180/ || true)
  t1=$(date +%s.%N)
  printf '%-12s %s after %.2f s\n' "$what" "$code" "$(echo "$t1 - $t0" | bc)"
}
"$NGINX" -v 2>&1
req GET
req "POST 2 kB" --data-binary @"$dir/small"
req "POST 20 MB" --data-binary @"$dir/large"
grep -o 'upstream timed out.*while [a-z ]*' "$dir/error.log" | sed 's/^/error.log: /'
