#!/usr/bin/env python3
"""Replays Traefik's circuit breaker (`vulcand/oxy` v2.1.0 `cbreaker`, the
version Traefik 3.7.15 links) on a real run's access log, to check that a
real first trip is the one the model predicts.

    python3 calibration/oxy_replay.py DIR/rep0/access.log [THRESHOLD]

(DIR: a work directory kept by `calibration/run.py --keep`.) Each request the
breaker served (an `OriginStatus`) is recorded when it ended (`StartUTC` +
`Duration`) in per-status `RollingCounter`s: 10 buckets of a wall-clock
second, the current one included. After each record, at most once per 100 ms
(`checkAndSet`: the first record after `lastCheck`, which becomes now +
`checkPeriod`), `ResponseCodeRatio(500, 600, 0, 600)` is compared with the
threshold (default 0.25). Prints the checks near the threshold, the first
at which it passes, and when the first fallback (a 503 without an origin
status) started, in seconds from the first request.
"""

import collections
import datetime
import json
import sys


def stamp(s):
    day, _, frac = s.rstrip("Z").partition(".")
    base = datetime.datetime.strptime(day, "%Y-%m-%dT%H:%M:%S")
    return base.replace(tzinfo=datetime.timezone.utc).timestamp() + float("0." + (frac or "0"))


def main():
    path = sys.argv[1]
    threshold = float(sys.argv[2]) if len(sys.argv) > 2 else 0.25
    rows = []
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            start = stamp(e["StartUTC"])
            rows.append((start, start + e["Duration"] / 1e9, e.get("OriginStatus", 0),
                         e["DownstreamStatus"]))
    rows.sort()
    t0 = rows[0][0]
    fallback = [r[0] for r in rows if r[2] == 0 and r[3] == 503]
    print("first fallback at %s s" % ("%.3f" % (fallback[0] - t0) if fallback else "never"))
    buckets = collections.defaultdict(collections.Counter)  # unix second -> status -> n
    last_check = None
    for end, code in sorted((r[1], r[2]) for r in rows if r[2] != 0):
        buckets[int(end)][code] += 1
        if last_check is not None and end <= last_check:
            continue
        last_check = end + 0.1
        window = [buckets[s] for s in range(int(end) - 9, int(end) + 1)]
        a = sum(n for b in window for k, n in b.items() if 500 <= k < 600)
        b = sum(n for b in window for k, n in b.items() if 0 <= k < 600)
        ratio = a / b if b else 0.0
        if ratio > threshold - 0.02:
            print("check at %.3f s: %d/%d = %.3f%s" % (end - t0, a, b, ratio,
                                                      "  trips" if ratio > threshold else ""))
        if ratio > threshold:
            return
    print("no check passes %.2f" % threshold)


if __name__ == "__main__":
    main()
