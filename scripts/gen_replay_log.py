#!/usr/bin/env python3
"""Writes a synthetic nginx access log (the calibration harness's log_format)
for measuring `hcsim replay` on big logs: LINES requests at RATE per second,
round robin over three servers; server 2 answers 503 to 20% of requests
(retried on the next) for the middle tenth of the log, and server 3 refuses
connections for a minute at two thirds of it (retried on the next).

    scripts/gen_replay_log.py LINES RATE > access.log
    scripts/gen_replay_log.py 10000000 1000 | gzip -1 > access.log.gz
"""

import random
import sys


def main():
    lines, rate = int(sys.argv[1]), float(sys.argv[2])
    rng = random.Random(7)
    servers = ["10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"]
    t0 = 1_800_000_000.0
    span = lines / rate
    flaky = (0.45 * span, 0.55 * span)
    crash = (0.66 * span, 0.66 * span + 60.0)
    out = sys.stdout
    buf = []
    for i in range(lines):
        start = t0 + i / rate
        t = i / rate
        k = i % 3
        addrs, sts, times = [], [], []
        at = 0.0
        for j in range(3):
            s = (k + j) % 3
            if s == 2 and crash[0] <= t < crash[1]:
                addrs.append(servers[s]); sts.append("502"); times.append("0.000")
                continue
            d = 0.004 + rng.random() * 0.004
            if s == 1 and flaky[0] <= t < flaky[1] and rng.random() < 0.2:
                addrs.append(servers[s]); sts.append("503"); times.append("%.3f" % d)
                at += d
                continue
            addrs.append(servers[s]); sts.append("200"); times.append("%.3f" % d)
            at += d
            break
        buf.append('%.3f %.3f "GET /r/%d HTTP/1.1" 200 "%s" "%s" "%s"\n' % (
            start + at, at, i, ", ".join(addrs), ", ".join(sts), ", ".join(times)))
        if len(buf) >= 10000:
            out.write("".join(buf))
            buf = []
    out.write("".join(buf))


if __name__ == "__main__":
    main()
