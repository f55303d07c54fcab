#!/usr/bin/env bash
# Throughput of `hcsim sweep` with --jobs 1 and --jobs 2 on a shipped sweep.
#
#   scripts/bench-sweep.sh [SWEEP] [ROUNDS]
#
# Builds the release binary, then alternates --jobs 1 and --jobs 2 runs
# (alternating spreads any background load over both), ROUNDS times each
# (default 5), and prints each wall and CPU (user + sys) time, then the
# speed-up (jobs-1 time / jobs-2 time) of the median and of the best wall
# times, and runs per second. On a shared machine the best times show the
# speed-up without other people's load; the CPU times show whether the
# second thread adds work. Outputs go to a temporary directory and are
# checked byte-identical between the two.
set -euo pipefail
cd "$(dirname "$0")/.."
sweep=${1:-sweeps/max-fails-grid-crash.json}
rounds=${2:-5}

cargo build --release --quiet
bin=target/release/hcsim
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "sweep: $sweep   rounds: $rounds   cores: $(nproc)   load average: $(cut -d' ' -f1-3 /proc/loadavg)"
runs=$("$bin" sweep "$sweep" --jobs 2 --out "$out/warmup" 2>&1 >/dev/null | sed -n 's/.* = \([0-9]*\) runs.*/\1/p')

one() { # one sweep; prints "wall user+sys" in seconds
  local TIMEFORMAT='%R %U %S' t
  t=$( { time "$bin" sweep "$sweep" --quiet --no-charts --jobs "$1" --out "$out/j$1" 2>/dev/null; } 2>&1 )
  awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' <<<"$t"
}

w1=() w2=() c1=() c2=()
for ((i = 1; i <= rounds; i++)); do
  read -r w c < <(one 1); w1+=("$w"); c1+=("$c")
  read -r w c < <(one 2); w2+=("$w"); c2+=("$c")
  echo "round $i: jobs 1 ${w1[-1]} s wall (${c1[-1]} s CPU), jobs 2 ${w2[-1]} s wall (${c2[-1]} s CPU)"
done
for f in runs.csv points.csv results.json; do
  cmp -s "$out/j1/$f" "$out/j2/$f" || { echo "error: $f differs between --jobs 1 and --jobs 2" >&2; exit 1; }
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
best() { printf '%s\n' "$@" | sort -g | head -n 1; }
awk -v m1="$(median "${w1[@]}")" -v m2="$(median "${w2[@]}")" \
    -v b1="$(best "${w1[@]}")" -v b2="$(best "${w2[@]}")" \
    -v c1="$(median "${c1[@]}")" -v c2="$(median "${c2[@]}")" -v n="$runs" 'BEGIN {
  printf "median wall time: jobs 1 %.3f s (%.0f runs/s), jobs 2 %.3f s (%.0f runs/s): speed-up %.2fx\n", m1, n / m1, m2, n / m2, m1 / m2
  printf "best wall time:   jobs 1 %.3f s, jobs 2 %.3f s: speed-up %.2fx\n", b1, b2, b1 / b2
  printf "median CPU time:  jobs 1 %.3f s, jobs 2 %.3f s (work added by the second thread: %+.1f%%)\n", c1, c2, 100 * (c2 / c1 - 1)
}'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
