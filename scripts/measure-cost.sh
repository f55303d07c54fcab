#!/usr/bin/env bash
# Measures the figures behind hcsim's cost estimates (src/run/cost.rs, README
# "Limits"): engine events per second on one core, events per request on the
# shipped models, memory per request in flight and per timer left pending, and
# the memory of a model with far too many nodes. Needs python3 and GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/hcsim
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # label, then hcsim run arguments
  local label=$1; shift
  /usr/bin/time -o "$out/time" -f '%e %M' "$bin" run "$@" --jobs 1 --format json --out "$out/o" 2>/dev/null >"$out/s.json"
  read -r secs kib <"$out/time"
  python3 - "$label" "$secs" "$kib" "$out/s.json" <<'PY'
import json, sys
label, secs, kib, path = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
r = json.load(open(path))["runs"][0]
c = r["client"]
print(f"{label}: {r['events']} events in {secs:.2f} s = {r['events'] / secs / 1e6:.1f}M events/s; "
      f"{c['requests']} requests, {c['unfinished']} in flight at the end; peak RSS {kib // 1024} MiB"
      + (f" = {kib * 1024 / c['unfinished']:.0f} bytes per request in flight" if c['unfinished'] > 100000 else ""))
PY
}

echo "== events per second (one core) and memory in flight"
run "e2 at 10k requests/s" models/e2-p02-flaky-2pct.json --set clients.rate_per_s=10000
run "e2 at 100k requests/s" models/e2-p02-flaky-2pct.json --set clients.rate_per_s=100000
run "e5 with 50 clients" models/e5-connect-timeout-shorter.json --set clients.concurrency=50

echo "== events per request on the shipped models"
for m in models/*.json; do
  "$bin" run "$m" --format json --out "$out/o" 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)["runs"][0]
print("%s: %.2f" % (sys.argv[1], r["events"] / max(1, r["client"]["requests"])))' "$(basename "$m" .json)"
done

echo "== memory per timer left pending by a request whose client gave up"
# 10^5 requests/s give up after 1 s, each leaving a 200 s connect timeout in
# the queue: the runs of 10 s and 60 s differ by 5x10^6 pending timers.
cat >"$out/abandoned.json" <<'JSON'
{"name": "abandoned", "duration": "10s",
 "clients": {"kind": "open", "rate_per_s": 100000, "timeout": "1s"},
 "gateway": {"proxy_connect_timeout": "200s"},
 "nodes": [{"name": "A"}, {"name": "B"}],
 "faults": [{"kind": "partition", "node": "A"}, {"kind": "partition", "node": "B"}]}
JSON
peak() { # duration
  /usr/bin/time -o "$out/time" -f '%M' "$bin" run "$out/abandoned.json" --set "duration=$1" \
    --jobs 1 --quiet --no-charts --out "$out/o" 2>/dev/null
  cat "$out/time"
}
short=$(peak 10s)
long=$(peak 60s)
python3 -c "import sys; s, l = int(sys.argv[1]), int(sys.argv[2]); print(f'10 s: {s // 1024} MiB, 60 s: {l // 1024} MiB: {(l - s) * 1024 / 5e6:.0f} bytes per pending timer')" "$short" "$long"

echo "== a model of 2.9 million nodes, refused while it is read"
python3 - "$out/big.json" <<'PY'
import sys
nodes = ",".join('{"name":"n%d"}' % i for i in range(2_900_000))
open(sys.argv[1], "w").write('{"name":"big","duration":"10s","clients":{"kind":"open","rate_per_s":10},"nodes":[%s]}' % nodes)
PY
/usr/bin/time -o "$out/time" -f '%M %e' "$bin" check "$out/big.json" 2>/dev/null >/dev/null || true
# (GNU time writes "Command exited with non-zero status 2" first: hcsim refuses it.)
read -r kib secs < <(tail -n 1 "$out/time")
echo "$(( $(stat -c %s "$out/big.json") / 1000000 )) MB file: refused in $secs s, peak RSS $(( kib / 1024 )) MiB"
