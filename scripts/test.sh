#!/usr/bin/env bash
# The test command: installs the test dependencies it can, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test-deps.sh
if command -v chromium >/dev/null 2>&1 && command -v parallel >/dev/null 2>&1; then
  # Installed: then the browser and GNU parallel tests must run, not skip.
  export HCSIM_REQUIRE_TOOLS=1
fi
exec cargo test "$@"
