#!/usr/bin/env bash
# The test command: installs the test dependencies it can, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test-deps.sh
has() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
if has chromium && has parallel && has nginx && has haproxy; then
  # Installed: then the browser, GNU parallel, nginx and haproxy tests must run, not skip.
  export HCSIM_REQUIRE_TOOLS=1
fi
exec cargo test "$@"
