#!/usr/bin/env bash
# Installs what the test suite needs beyond the Rust toolchain, when missing:
#   - GNU parallel, for the test that runs the README's sharded-sweep example
#     (tests/it/sweep.rs; without it that test is skipped, not failed).
# Idempotent; needs root (apt-get) only when something is missing.
set -euo pipefail

missing=()
command -v parallel >/dev/null 2>&1 || missing+=(parallel)

if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
parallel --version | head -n 1
