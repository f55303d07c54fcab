#!/usr/bin/env bash
# Regenerates the chart gallery of docs/charts.md: one example of each chart
# type, drawn from shipped models and sweeps, as docs/img/gallery-*.png, and
# docs/img/gallery.txt, the list of the files and their titles (which the
# test suite compares with a fresh run: tests/it/charts.rs).
#
#   scripts/gallery.sh [OUT_DIR]     (default docs/img)
#   HCSIM=target/release/hcsim scripts/gallery.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/img}"
hcsim="${HCSIM:-target/release/hcsim}"
if [ ! -x "$hcsim" ]; then
  cargo build --release --quiet
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

run() { "$hcsim" "$@" --quiet --jobs 2 >/dev/null; }

# Runs: a hang at 10,000 requests/s (one run: exact ejections), the flaky
# node of E2 over 20 runs (median and band), and its ejection delay's CDF.
run run models/hang-max-fails.json --set clients.rate_per_s=10000 --out "$work/hang"
run run models/e2-p02-flaky-2pct.json --reps 20 --out "$work/e2"
run run models/e2-p02-flaky-2pct.json --reps 20 --out "$work/e2-cdf" \
  --set 'charts=[{"kind": "distribution", "metric": "first_ejection_delay_s", "style": "cdf"}]'
# Sweeps: a zipped axis (E5), three axes sliced (E6), a log x axis (failure
# probability from 0.1% to 50%).
run sweep sweeps/timeouts-e5.json --reps 3 --out "$work/e5"
run sweep sweeps/e6-probe-interval-threshold.json --reps 15 --out "$work/e6"
run sweep sweeps/policy-vs-failure-rate-100rps.json --reps 5 --out "$work/pvf"

# gallery name, output directory, chart stem
charts=(
  "timeline-one-run hang timeline"
  "timeline-median e2 timeline"
  "distribution-box e2 distribution-first_ejection_delay_s"
  "distribution-cdf e2-cdf distribution-first_ejection_delay_s"
  "distribution-sweep e6 distribution-nodes-A-first_ejection_delay_s"
  "heatmap-zipped-axis e5 heatmap-client-timeouts"
  "heatmap-slice e6 heatmap-nodes-A-first_ejection_delay_s--fault-hang"
  "lines-log-axis pvf lines-nodes-a-share-vs-faults-0-p"
)
: >"$work/gallery.txt"
for c in "${charts[@]}"; do
  read -r name dir stem <<<"$c"
  cp "$work/$dir/charts/$stem.png" "$out/gallery-$name.png"
  # The chart's title, as report.md lists it.
  title="$(grep -F "](charts/$stem.png)" "$work/$dir/report.md" | sed -e 's/^!\[//' -e 's/\](.*$//')"
  echo "gallery-$name.png: $title" >>"$work/gallery.txt"
done
cp "$work/gallery.txt" "$out/gallery.txt"
echo "wrote ${#charts[@]} charts to $out"
