#!/usr/bin/env python3
"""Regenerates the measured tables of docs/policies.md.

    python3 scripts/policy_tables.py            # rewrite docs/policies.md in place
    python3 scripts/policy_tables.py --print    # print the tables instead

Builds hcsim (release), runs every policy-comparison model (see
scripts/gen_policy_models.py) with REPS seeded replications on one thread, and
replaces the text between the `<!-- tables:begin -->` and `<!-- tables:end -->`
markers. Every cell is the median over the replications; `a–b` is the range.
The exact command behind each table is printed above it.
"""

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
HCSIM = ROOT / "target" / "release" / "hcsim"
DOC = ROOT / "docs" / "policies.md"
REPS = 10
BEGIN, END = "<!-- tables:begin -->", "<!-- tables:end -->"

POLICIES = [
    "max-fails",
    "envoy-defaults",
    "consecutive-5xx",
    "success-rate",
    "failure-percentage",
    "istio",
    "ratio-ejection",
    "resilience4j",
    "hystrix",
    "finagle",
    "linkerd",
    "latency-ejection",
    "kong",
    "kong-passive",
    "linkerd-consecutive",
    "linkerd-unified",
    "caddy-passive",
    "caddy-active",
    "traefik-passive",
    "traefik-active",
    "traefik-breaker",
]


def command(model, sets=()):
    args = [f"models/{model}.json", "--reps", str(REPS), "-j", "1", "--format", "json"]
    for s in sets:
        args += ["--set", s]
    return args


def run(model, sets=()):
    args = command(model, sets)
    out = ROOT / "output" / "policy-tables" / (model + "".join("_" + s for s in sets))
    res = subprocess.run(
        [str(HCSIM), "run", *args, "--out", str(out)],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )
    return json.loads(res.stdout)


def shell(model, sets=()):
    words = ["hcsim", "run", *command(model, sets)]
    return " ".join(f"'{w}'" if "[" in w else w for w in words)


def node(report, name):
    for n in report["nodes"]:
        if n["name"] == name:
            return n
    raise KeyError(name)


def stat(agg, fmt="{:.2f}", scale=1.0, unit=""):
    """median (min–max) over the runs that have a value; `never` if none."""
    if agg is None or agg["n"] == 0:
        return "never"
    med = fmt.format(agg["median"] * scale) + unit
    lo, hi = fmt.format(agg["min"] * scale), fmt.format(agg["max"] * scale)
    text = med if lo == hi else f"{med} ({lo}–{hi})"
    if agg["n"] < REPS:
        text += f" in {agg['n']}/{REPS} runs"
    return text


def num(agg, fmt="{:.0f}"):
    return stat(agg, fmt)


def pct(agg):
    return stat(agg, "{:.1f}", 100.0, " %")


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def commands(models_sets):
    return "\n".join(f"    {shell(m, s)}" for m, s in models_sets)


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    out = []
    figures = {}

    # --- A: rare errors on a busy node -----------------------------------
    rows = []
    for p in POLICIES:
        slow = node(run(f"ratio-flaky-100rps-{p}"), "a")
        fast_r = run(f"ratio-flaky-10krps-{p}")
        fast = node(fast_r, "a")
        figures[("flaky10k", p)] = fast
        figures[("flaky100", p)] = slow
        rows.append([
            f"`{p}`",
            stat(slow["ejected_time_s"]), num(slow["ejections"]),
            stat(fast["ejected_time_s"]), num(fast["ejections"]),
            pct(fast["share"]), num(fast_r["client"]["errors"]),
        ])
    out.append("### A. A busy node with rare errors (0.1 % of answers are 503)\n")
    out.append(
        "Four nodes; node `a` answers 503 with probability 0.1 %, retried on "
        "another node (`proxy_next_upstream ... http_503`); 60 s. Same error "
        "ratio at two request rates. Commands (for each policy `P` of the list):\n"
    )
    out.append(commands([("ratio-flaky-100rps-P", ()), ("ratio-flaky-10krps-P", ())]) + "\n")
    out.append(table(
        ["policy", "100 rps: a ejected (s of 60)", "100 rps: ejections",
         "10k rps: a ejected (s of 60)", "10k rps: ejections",
         "10k rps: a's share of answers", "10k rps: client errors"],
        rows,
    ) + "\n")

    # --- B: 30 % errors --------------------------------------------------
    rows = []
    sets = ("faults[0].p=0.3",)
    for p in POLICIES:
        r = node(run(f"ratio-flaky-10krps-{p}", sets), "a")
        figures[("flaky30", p)] = r
        rows.append([
            f"`{p}`", stat(r["first_ejection_delay_s"], "{:.3f}", unit=" s"),
            num(r["ejections"]), stat(r["ejected_time_s"]), pct(r["share"]),
        ])
    out.append("### B. The same node failing 30 % of answers, 10k requests/s\n")
    out.append(commands([("ratio-flaky-10krps-P", sets)]) + "\n")
    out.append(table(
        ["policy", "first ejection after onset", "ejections",
         "a ejected (s of 60)", "a's share of answers"],
        rows,
    ) + "\n")

    # --- C: quiet node ---------------------------------------------------
    rows = []
    for p in POLICIES:
        rep = run(f"quiet-node-{p}")
        q = node(rep, "q")
        figures[("quiet", p)] = q
        rows.append([
            f"`{p}`", num(q["attempts"]), num(q["failures"]), num(q["ejections"]),
            stat(q["ejected_time_s"]), num(rep["client"]["errors"]),
        ])
    out.append("### C. A quiet node: about 1 request/s, half of them 503\n")
    out.append(
        "Five busy healthy nodes (weight 200, about 200 requests/s each) and "
        "node `q` (weight 1) answering 503 with probability 50 %, retried; "
        "1,000 requests/s for 120 s. `q` gets about 10 requests per 10 s "
        "interval: below success_rate's volume (100) and the failure_percentage "
        "volume used here (100), although the cluster has the 5 hosts "
        "success_rate needs.\n"
    )
    out.append(commands([("quiet-node-P", ())]) + "\n")
    out.append(table(
        ["policy", "q attempts", "q failed attempts", "q ejections",
         "q ejected (s of 120)", "client errors"],
        rows,
    ) + "\n")

    # --- D/E: crash and hang ---------------------------------------------
    for sit, title, text in [
        ("crash", "D. A crash (connections refused) from 10 s to 40 s",
         "Four nodes, 1,000 requests/s, 60 s; refused connects are retried "
         "(`error`), so clients see no errors; the cost is the failed "
         "attempts on `a`."),
        ("hang", "E. A hang (accepted, never answered) from 10 s to 40 s",
         "Four nodes, 1,000 requests/s, 60 s, upstream timeouts 1 s: every "
         "attempt on the hung node costs its client 1 s before the retry."),
    ]:
        rows = []
        for p in POLICIES:
            rep = run(f"{sit}-{p}")
            a = node(rep, "a")
            figures[(sit, p)] = a
            figures[(sit + "-client", p)] = rep["client"]
            rows.append([
                f"`{p}`", stat(a["first_ejection_delay_s"], "{:.3f}", unit=" s"),
                num(a["failures"]), stat(a["ejected_time_s"]),
                stat(a["recovery_delay_s"], unit=" s"),
                stat(rep["client"]["latency_ms"]["p99"], "{:.1f}", unit=" ms"),
            ])
        out.append(f"### {title}\n")
        out.append(text + "\n")
        out.append(commands([(f"{sit}-P", ())]) + "\n")
        out.append(table(
            ["policy", "first ejection after onset", "failed attempts on a",
             "a ejected (s of 60)", "first success after the fault", "client p99"],
            rows,
        ) + "\n")

    # --- F: slow node ----------------------------------------------------
    rows = []
    for p in POLICIES:
        rep = run(f"slow-{p}")
        a = node(rep, "a")
        figures[("slow", p)] = a
        figures[("slow-client", p)] = rep["client"]
        rows.append([
            f"`{p}`", stat(a["first_ejection_delay_s"], "{:.3f}", unit=" s"),
            stat(a["ejected_time_s"]), pct(a["share"]),
            stat(rep["client"]["latency_ms"]["p90"], "{:.1f}", unit=" ms"),
            stat(rep["client"]["latency_ms"]["p99"], "{:.1f}", unit=" ms"),
        ])
    out.append("### F. A slow node (every answer a 200) from 10 s to 40 s\n")
    out.append(
        "Four nodes, 1,000 requests/s, 60 s; node `a` takes 50 ms instead of "
        "5 ms per request while the fault lasts, and answers every request "
        "with a 200. A policy that judges status codes, connection errors or "
        "timeouts sees nothing wrong.\n"
    )
    out.append(commands([("slow-P", ())]) + "\n")
    out.append(table(
        ["policy", "first ejection after onset", "a ejected (s of 60)",
         "a's share of answers", "client p90", "client p99"],
        rows,
    ) + "\n")

    # --- the policy table ------------------------------------------------
    f = figures

    def med(agg, fmt="{:.2f}"):
        return "never" if agg["n"] == 0 else fmt.format(agg["median"])

    def back(agg):
        """When the node first answered after the fault, in words."""
        if agg["n"] * 2 <= REPS:
            return "still out when most runs ended"
        return f"first success {med(agg)} s after the fault"

    policy_rows = [
        ["`max_fails` (alias `nginx`)",
         "`max_fails` 1, `fail_timeout` 10s",
         "Low request rates and hard failures (crash): it counts failures, so "
         "at high rates even rare errors eject a node.",
         f"crash: out after {med(f['crash', 'max-fails']['first_ejection_delay_s'], '{:.3f}')} s; "
         f"0.1 % errors at 10k rps: out {med(f['flaky10k', 'max-fails']['ejected_time_s'])} s of 60 "
         f"(at 100 rps: {med(f['flaky100', 'max-fails']['ejected_time_s'])} s) (A, D)"],
        ["`outlier_detection` (alias `envoy`)",
         "`consecutive_5xx` 5 (enforcing 100), `consecutive_gateway_failure` 5 "
         "(enforcing 0), `interval` 10s, `base_ejection_time` 30s, "
         "`max_ejection_time` 300s, `max_ejection_percent` 10 (`strict`), "
         "success rate: 5 hosts, 100 requests, factor 1900 (enforcing 100); "
         "failure percentage: 85 %, 5 hosts, 50 requests (enforcing 0); "
         "`healthy_panic_threshold` 50",
         "Envoy/Istio fleets; consecutive_5xx for hard failures, failure "
         "percentage for busy nodes with a bad ratio. Check the cap: with "
         "the default 10 % nothing is ejected below 10 hosts.",
         f"defaults on 4 nodes, crash: {med(f['crash', 'envoy-defaults']['ejections'], '{:.0f}')} ejections; "
         f"`success-rate`, quiet node: {med(f['quiet', 'success-rate']['ejections'], '{:.0f}')} ejections; "
         f"`failure-percentage`: 0.1 % errors {med(f['flaky10k', 'failure-percentage']['ejections'], '{:.0f}')} "
         f"ejections, 30 % errors out after {med(f['flaky30', 'failure-percentage']['first_ejection_delay_s'])} s (A, B, C, D)"],
        ["`istio`",
         "`consecutive5xxErrors` 5, `consecutiveGatewayErrors` off, `interval` 10s, "
         "`baseEjectionTime` 30s, `maxEjectionPercent` 10, `minHealthPercent` 0 "
         "(panic off); success rate never enforced",
         "To check what a DestinationRule does: it is Envoy's consecutive "
         "detectors with Istio's defaults.",
         f"crash: out after {med(f['crash', 'istio']['first_ejection_delay_s'], '{:.3f}')} s, "
         f"{back(f['crash', 'istio']['recovery_delay_s'])} (D)"],
        ["`ratio_ejection`",
         "`window` time 10s / 10 buckets (or `count`), "
         "`failure_percentage_threshold` 50, `minimum_requests` 20, "
         "`ejection_time` 30s ×`backoff_multiplier` 2 up to `max_ejection_time` "
         "300s, `backoff_reset` 60s, `max_ejected_percent` 50",
         "When you want ejection by error ratio without ticks or a product's "
         "quirks, as a yardstick for the others.",
         f"(5 %, 100 requests) 0.1 % errors: {med(f['flaky10k', 'ratio-ejection']['ejections'], '{:.0f}')} ejections; "
         f"30 %: out after {med(f['flaky30', 'ratio-ejection']['first_ejection_delay_s'], '{:.3f}')} s (A, B)"],
        ["`resilience4j`",
         "`sliding_window_type` COUNT_BASED, `sliding_window_size` 100, "
         "`minimum_number_of_calls` 100, `failure_rate_threshold` 50, "
         "`slow_call_rate_threshold` 100, `slow_call_duration_threshold` 60s, "
         "`wait_duration_in_open_state` 60s, "
         "`permitted_number_of_calls_in_half_open_state` 10",
         "Client-side breaker when a node fails most calls; with defaults it "
         "stays open 60 s and needs traffic to close.",
         f"crash: open after {med(f['crash', 'resilience4j']['first_ejection_delay_s'], '{:.3f}')} s, "
         f"{back(f['crash', 'resilience4j']['recovery_delay_s'])} (D); 30 % errors: opened in "
         f"{f['flaky30', 'resilience4j']['first_ejection_delay_s']['n']} of {REPS} runs (B)"],
        ["`hystrix`",
         "`request_volume_threshold` 20, `error_threshold_percentage` 50, "
         "`sleep_window` 5s, `rolling_stats_time` 10s, "
         "`health_snapshot_interval` 500ms, `execution_timeout` 1s (ends the "
         "attempt), `core_size` 10 with `max_queue_size` -1 (the 11th concurrent "
         "command of a node is rejected)",
         "Legacy Hystrix clients; its 10 s window dilutes a sudden failure, "
         "so it trips seconds after a crash; a slow node fills its 10 threads "
         "and the rest is rejected.",
         f"crash: open after {med(f['crash', 'hystrix']['first_ejection_delay_s'])} s, "
         f"{med(f['crash', 'hystrix']['failures'], '{:.0f}')} failed attempts on a; "
         f"quiet node: {med(f['quiet', 'hystrix']['ejections'], '{:.0f}')} ejections (C, D)"],
        ["`failure_accrual` (alias `finagle`)",
         "`accrual_policy` success_rate_or_consecutive (Finagle ≥ 19.6.0: "
         "`required_success_rate` 0.8 over `success_rate_window` 30s, "
         "`min_requests` 5, or `consecutive_failures` 5; `consecutive` alone is "
         "Linkerd 1's default), `min_penalty` 5s, `max_penalty` 300s "
         "(equal-jittered), `classifier` server_errors_as_failures",
         "Finagle clients: hard failures at once, partial ones after 30 s; "
         "probes with one real request, back-off up to 5 min.",
         f"crash: out after {med(f['crash', 'finagle']['first_ejection_delay_s'], '{:.3f}')} s, "
         f"out {med(f['crash', 'finagle']['ejected_time_s'])} s of 60, "
         f"{back(f['crash', 'finagle']['recovery_delay_s'])} (D)"],
        ["`failure_accrual` `flavour: linkerd`",
         "`consecutive_failures` 7, `min_penalty` 1s, `max_penalty` 60s, "
         "`jitter_ratio` 0.5",
         "Linkerd 2 meshes with `failure-accrual: consecutive`: quick return "
         "(1 s penalties) at the price of more probes.",
         f"crash: out after {med(f['crash', 'linkerd']['first_ejection_delay_s'], '{:.3f}')} s, "
         f"{med(f['crash', 'linkerd']['ejections'], '{:.0f}')} ejections, "
         f"{back(f['crash', 'linkerd']['recovery_delay_s'])} (D)"],
        ["`latency_ejection`",
         "`interval` 10s, `quantile` 0.99, `factor` 2, `minimum_requests` 100, "
         "`minimum_hosts` 3, `base_ejection_time` 30s, `max_ejection_time` "
         "300s, `max_ejection_percent` 10 (one node may always be ejected)",
         "A node that answers, but slowly (GC pauses, a noisy neighbour, a "
         "degraded disk): the status-based policies never see it. Pair it with "
         "one of them, which it does not replace (a crash is fast).",
         f"slow node: out after {med(f['slow', 'latency-ejection']['first_ejection_delay_s'])} s, "
         f"client p90 {med(f['slow-client', 'latency-ejection']['latency_ms']['p90'], '{:.1f}')} ms "
         f"(every other policy: {med(f['slow-client', 'max-fails']['latency_ms']['p90'], '{:.1f}')} ms); "
         f"crash: {med(f['crash', 'latency-ejection']['ejections'], '{:.0f}')} ejections (D, F)"],
        ["`kong`",
         "Kong's own defaults: every interval and threshold 0 (nothing is "
         "checked). The `kong` models: passive `tcp_failures` 2, `timeouts` 3, "
         "`http_failures` 5 (429, 500, 503), `successes` 5; active every 5 s, "
         "`successes` 2, `tcp_failures` 2, `timeouts` 3, `http_failures` 3; "
         "`kong-passive`: the passive half alone. On Kong's request path "
         "(`gateway.flavor: kong`: retries 5 on errors and timeouts, never on a "
         "status)",
         "To check a Kong upstream's `healthchecks`. Passive checks alone "
         "(Kong's circuit breaker) take a target out for good: pair them with "
         "`active.unhealthy.interval`.",
         f"crash: out after {med(f['crash', 'kong']['first_ejection_delay_s'], '{:.3f}')} s, "
         f"{back(f['crash', 'kong']['recovery_delay_s'])}; passive only: out "
         f"{med(f['crash', 'kong-passive']['ejected_time_s'])} s of 60, "
         f"{back(f['crash', 'kong-passive']['recovery_delay_s'])} (D)"],
        ["`linkerd`",
         "`failure_accrual` consecutive (the policy controller's defaults: "
         "`max_failures` 7, `min_penalty` 1s, `max_penalty` 60s, `jitter_ratio` "
         "0.5) or unified (also `success_rate_threshold` 0.8 over "
         "`success_rate_window` 10s with `success_rate_min_requests` 5; a 429 "
         "counts against the rate). On a Linkerd proxy's request path "
         "(`gateway.flavor: linkerd`: P2C over peak-EWMA, no retries, failfast "
         "after 3 s: 504 for the queued requests, 503 for new ones)",
         "Linkerd meshes: `consecutive` for hard failures; `unified` also for a "
         "node failing part of its requests or shedding load with 429.",
         f"crash (consecutive): out after {med(f['crash', 'linkerd-consecutive']['first_ejection_delay_s'], '{:.3f}')} s, "
         f"{back(f['crash', 'linkerd-consecutive']['recovery_delay_s'])}; 30 % errors: "
         f"consecutive {med(f['flaky30', 'linkerd-consecutive']['ejections'], '{:.0f}')} ejections, "
         f"unified out after {med(f['flaky30', 'linkerd-unified']['first_ejection_delay_s'], '{:.3f}')} s (B, D)"],
        ["`caddy` `passive`",
         "`fail_duration` 0 (off), `max_fails` 1, `unhealthy_status` none, "
         "`unhealthy_latency` none, `unhealthy_request_count` 0; gateway "
         "`flavor: caddy` (random selection, no retries, no response timeout)",
         "Caddy: each failure is forgotten `fail_duration` after it, on its own "
         "(a sliding window, no ejection time); a status matching two "
         "`unhealthy_status` entries counts twice; a hung backend is never "
         "counted without `response_header_timeout`.",
         f"crash: out after {med(f['crash', 'caddy-passive']['first_ejection_delay_s'], '{:.3f}')} s, "
         f"{med(f['crash', 'caddy-passive']['ejections'], '{:.0f}')} ejections; "
         f"0.1 % errors at 10k rps: out {med(f['flaky10k', 'caddy-passive']['ejected_time_s'])} s of 60 (A, D)"],
        ["`caddy` `active`",
         "`interval` 30s, `timeout` 5s, `passes` 1, `fails` 1, `expect_status` 2xx; "
         "the first round at start",
         "Caddy with `health_uri`: `fails`/`passes` count since the last change "
         "of state, not in a row, so a flapping endpoint goes down every few "
         "checks.",
         f"crash: out after {med(f['crash', 'caddy-active']['first_ejection_delay_s'], '{:.3f}')} s, "
         f"{back(f['crash', 'caddy-active']['recovery_delay_s'])} (D)"],
        ["`traefik` `passiveHealthCheck`",
         "`failureWindow` 10s, `maxFailedAttempts` 1; gateway `flavor: traefik` "
         "(weighted round robin, retry middleware only if configured)",
         "Traefik ≥ 3.6: failures in a row (any success clears them, a client's "
         "499 too), down for `failureWindow`; with an active check, only the "
         "active check brings a server back.",
         f"crash: out after {med(f['crash', 'traefik-passive']['first_ejection_delay_s'], '{:.3f}')} s, "
         f"{med(f['crash', 'traefik-passive']['ejections'], '{:.0f}')} ejections; "
         f"30 % errors: {med(f['flaky30', 'traefik-passive']['ejections'], '{:.0f}')} ejections (B, D)"],
        ["`traefik` `healthCheck`",
         "`interval` 30s, `unhealthyInterval` = `interval`, `timeout` 5s, "
         "`status` [200, 400)",
         "Traefik's active check: no thresholds (one failed check down, one "
         "success up), servers of a loop checked one after the other.",
         f"crash: out after {med(f['crash', 'traefik-active']['first_ejection_delay_s'], '{:.3f}')} s, "
         f"{back(f['crash', 'traefik-active']['recovery_delay_s'])} (D)"],
        ["`gateway.traefik.circuitBreaker`",
         "`expression` (required), `checkPeriod` 100ms, `fallbackDuration` 10s, "
         "`recoveryDuration` 10s, `responseCode` 503",
         "A router-wide breaker: it cuts every server off at once (counted as an "
         "ejection of each), then ramps traffic back and may trip again.",
         f"30 % errors on one node of four (7.5 % of all answers): tripped {med(f['flaky30', 'traefik-breaker']['ejections'], '{:.0f}')} "
         f"times, every node out {med(f['flaky30', 'traefik-breaker']['ejected_time_s'])} s of 60 (B)"],
    ]
    policy_table = (
        "### The policies\n\n"
        "Defaults are the product's own; the figure is a median of the tables "
        "below (letter in brackets), for the model configuration named there. "
        "The `kong*` and `linkerd-*` models run on Kong's and a Linkerd proxy's "
        "own request paths (Kong never retries a status, Linkerd retries "
        "nothing and does not weigh endpoints), which the situations' nginx "
        "retries and weights do not carry over to; both are modelled from "
        "their sources only (no Kong or Linkerd binary to calibrate against).\n\n"
        + table(["policy (`kind`)", "parameters and defaults", "the right choice when",
                 "measured (median)"], policy_rows)
        + "\n"
    )

    text = (
        f"{BEGIN}\n<!-- generated by scripts/policy_tables.py ({REPS} replications "
        "per model); do not edit by hand -->\n\n"
        + policy_table + "\n" + "\n".join(out) + f"{END}"
    )
    if "--print" in sys.argv:
        print(text)
        return
    doc = DOC.read_text()
    a, b = doc.index(BEGIN), doc.index(END) + len(END)
    DOC.write_text(doc[:a] + text + doc[b:])


if __name__ == "__main__":
    main()
