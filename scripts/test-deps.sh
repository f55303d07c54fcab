#!/usr/bin/env bash
# Installs what the test suite needs beyond cargo, when it is missing:
# Debian's chromium (the report.html browser test). Needs root and apt-get;
# elsewhere it says what is missing and the browser test is skipped.
set -u
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing test dependencies: ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
  echo "note: missing ${need[*]} (install with your package manager); the browser test will be skipped" >&2
fi
exit 0
