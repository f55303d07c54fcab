#!/usr/bin/env bash
# The test command: installs the test dependencies it can, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test-deps.sh
if command -v chromium >/dev/null 2>&1; then
  export HCSIM_REQUIRE_BROWSER=1
fi
exec cargo test "$@"
