#!/usr/bin/env bash
# Installs what scripts/bench.py needs beyond cargo and python3, when it is
# missing: SimPy 4.1.2 (the reference SimPy model; without it `compare` runs
# hcsim and the heapq model only) and GNU time (peak RSS in `scaling`).
set -u
py=${PYTHON:-python3}
if ! "$py" -c 'import simpy, sys; sys.exit(simpy.__version__ != "4.1.2")' 2>/dev/null; then
  echo "installing simpy==4.1.2 for $py" >&2
  "$py" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore 'simpy==4.1.2' \
    || echo "note: could not install simpy; bench.py compare will leave SimPy out" >&2
fi
if [ ! -x /usr/bin/time ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing GNU time" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends time >/dev/null
  else
    echo "note: /usr/bin/time is missing (package: time); bench.py scaling will not report peak RSS" >&2
  fi
fi
exit 0
