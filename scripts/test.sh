#!/usr/bin/env bash
# The test command: installs the test dependencies it can, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test-deps.sh
has() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
if has chromium && has parallel && has nginx && has haproxy \
  && has slurmctld && has slurmd && has sbatch && has munged; then
  # Installed: then the browser, GNU parallel, nginx, haproxy and Slurm tests must run, not skip.
  export HCSIM_REQUIRE_TOOLS=1
fi
exec cargo test "$@"
