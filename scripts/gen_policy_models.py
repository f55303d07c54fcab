#!/usr/bin/env python3
"""Writes the policy-comparison models: every policy under the same situations.

    python3 scripts/gen_policy_models.py

Situations (one file per situation and policy, models/<situation>-<policy>.json):
  ratio-flaky-100rps   E2's flaky node (503 with p = 0.1 %, retried via http_503)
                       among four nodes, 100 requests/s, 60 s
  ratio-flaky-10krps   the same at 10,000 requests/s
  quiet-node           five busy healthy nodes (weight 200) and a quiet one
                       (weight 1, about 1 request/s of 1,000) answering 503
                       half of the time, 120 s
  crash                four nodes at 1,000 requests/s; node a crashes at 10 s for 30 s
  hang                 the same, node a hangs (accepts, never answers);
                       upstream timeouts 1 s
  slow                 the same, node a answers 10 times slower (50 ms instead
                       of 5 ms) from 10 s to 40 s: every answer is a 200
Vary a fault with --set, e.g. --set faults[0].p=0.3.
"""

import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent

# One node of four may be ejected (Envoy's default 10 % allows none below 10 hosts).

# The passive half of both Kong models (Kong's circuit breaker).
KONG_PASSIVE = {
    "healthy": {"successes": 5},
    "unhealthy": {"tcp_failures": 2, "timeouts": 3, "http_failures": 5},
}
OD_CAP = {"max_ejection_percent": 50}

POLICIES = {
    "max-fails": (
        "nginx passive counting, max_fails=3 fail_timeout=5s (E2's setting)",
        {"kind": "max_fails", "max_fails": 3, "fail_timeout": "5s"},
    ),
    "envoy-defaults": (
        "Envoy outlier detection with every default: consecutive_5xx 5 and "
        "success_rate enforced, max_ejection_percent 10 (strict: no host of "
        "fewer than 10 can be ejected), panic threshold 50 %",
        {"kind": "outlier_detection"},
    ),
    "consecutive-5xx": (
        "Envoy outlier detection, consecutive_5xx 5 only (success rate not "
        "enforced), max_ejection_percent 50",
        {"kind": "outlier_detection", "enforcing_success_rate": 0, **OD_CAP},
    ),
    "success-rate": (
        "Envoy outlier detection, success_rate only (defaults: 5 hosts, 100 "
        "requests per interval, factor 1900), max_ejection_percent 50",
        {"kind": "outlier_detection", "enforcing_consecutive_5xx": 0, **OD_CAP},
    ),
    "failure-percentage": (
        "Envoy outlier detection, failure_percentage only: threshold 5 %, "
        "volume 100, minimum hosts 4, enforcing 100, max_ejection_percent 50",
        {
            "kind": "outlier_detection",
            "enforcing_consecutive_5xx": 0,
            "enforcing_success_rate": 0,
            "failure_percentage_threshold": 5,
            "failure_percentage_request_volume": 100,
            "failure_percentage_minimum_hosts": 4,
            "enforcing_failure_percentage": 100,
            **OD_CAP,
        },
    ),
    "istio": (
        "Istio outlierDetection: consecutive5xxErrors 5, interval 10s, "
        "baseEjectionTime 30s, maxEjectionPercent 50 (panic off: minHealthPercent 0)",
        {
            "kind": "istio",
            "consecutive5xxErrors": 5,
            "interval": "10s",
            "baseEjectionTime": "30s",
            "maxEjectionPercent": 50,
        },
    ),
    "ratio-ejection": (
        "generic ratio ejector: 5 % of at least 100 requests over a 10 s "
        "window, evaluated on every attempt; 30 s doubling to 300 s; at most 50 % ejected",
        {
            "kind": "ratio_ejection",
            "window": {"kind": "time", "length": "10s", "buckets": 10},
            "failure_percentage_threshold": 5.0,
            "minimum_requests": 100,
        },
    ),
    "resilience4j": (
        "Resilience4j circuit breaker per node, defaults (last 100 calls, "
        "50 %, 60 s open, 10 half-open calls)",
        {"kind": "resilience4j"},
    ),
    "hystrix": (
        "Hystrix circuit breaker per node, defaults (10 s window of 500 ms "
        "buckets, 20 requests, 50 %, 5 s sleep, one trial)",
        {"kind": "hystrix"},
    ),
    "finagle": (
        "Finagle failure accrual, defaults (5 consecutive failures, "
        "equal-jittered 5 s..300 s, one probe request)",
        {"kind": "failure_accrual"},
    ),
    "latency-ejection": (
        "latency ejection, defaults (every 10 s, a node whose p99 is more "
        "than 2 × the other nodes' median, with at least 100 requests and 3 "
        "nodes; 30 s growing with each ejection up to 300 s; one node of "
        "four may be out)",
        {"kind": "latency_ejection"},
    ),
    "linkerd": (
        "Linkerd 2.x consecutive failure accrual, defaults (7 failures, "
        "1 s..60 s, jitter 0.5, one probe request)",
        {"kind": "failure_accrual", "flavour": "linkerd"},
    ),
    "kong": (
        "Kong upstream healthchecks, active and passive: passive unhealthy "
        "tcp_failures 2, timeouts 3, http_failures 5 (429, 500, 503), passive "
        "healthy successes 5; active every 5 s (healthy and unhealthy targets), "
        "healthy successes 2, unhealthy tcp_failures 2, timeouts 3, "
        "http_failures 3; Kong's request path (retries 5 on errors and "
        "timeouts, never on a status)",
        {
            "kind": "kong",
            "active": {
                "healthy": {"interval": "5s", "successes": 2},
                "unhealthy": {"interval": "5s", "tcp_failures": 2, "timeouts": 3,
                              "http_failures": 3},
            },
            "passive": KONG_PASSIVE,
        },
        "kong",
    ),
    "kong-passive": (
        "Kong passive checks only (its circuit breaker): unhealthy "
        "tcp_failures 2, timeouts 3, http_failures 5 (429, 500, 503), healthy "
        "successes 5, no active checks, so a target out stays out; Kong's "
        "request path",
        {"kind": "kong", "passive": KONG_PASSIVE},
        "kong",
    ),
    "linkerd-consecutive": (
        "Linkerd failure-accrual consecutive, the policy controller's defaults "
        "(7 failures, 1 s..60 s, jitter 0.5, one probe), on a Linkerd proxy's "
        "request path (P2C over peak-EWMA, no retries, failfast after 3 s)",
        {"kind": "linkerd"},
        "linkerd",
    ),
    "linkerd-unified": (
        "Linkerd failure-accrual unified, defaults (7 failures, or a success "
        "rate below 0.8 over 10 s with at least 5 requests, 429 a failure), on "
        "a Linkerd proxy's request path",
        {"kind": "linkerd", "failure_accrual": "unified"},
        "linkerd",
    ),
}

# How a situation's words change on another request path.
PATH_WORDS = {
    "kong": [
        (", retried on another node via http_503.",
         ", not retried: Kong never retries a status."),
        ("; 503 is retried.", "; 503 is not retried: Kong never retries a status."),
    ],
    "linkerd": [
        (", retried on another node via http_503.", ", not retried: Linkerd retries nothing."),
        ("A quiet node (weight 1 of 1001: about 1 request/s) answering",
         "Node q (the quiet node of the other policies' models) answering"),
        ("; 503 is retried.",
         "; 503 is not retried, and Linkerd's balancer does not weigh endpoints: "
         "q gets about a sixth of the requests, not 1 in 1,001."),
        ("upstream timeouts 1 s, so each request sent to a waits 1 s and is retried.",
         "connect timeout and response timeout (timeout.linkerd.io/response) 1 s, so "
         "each request sent to a waits 1 s and is answered 504, not retried."),
    ],
}


def on_path(path, sit, base):
    """The situation on Kong's or Linkerd's request path: the same nodes and
    faults; the nginx-only settings replaced by that gateway's own."""
    doc = json.loads(json.dumps(base))
    g = doc.pop("gateway", {})
    if path == "kong":
        new = {"flavor": "kong"}
        for k in ("proxy_connect_timeout", "proxy_read_timeout"):
            if k in g:
                new[k] = g[k]
    else:
        new = {"flavor": "linkerd"}
        if "proxy_read_timeout" in g:
            new["linkerd"] = {
                "connect_timeout": g["proxy_connect_timeout"],
                "response_timeout": g["proxy_read_timeout"],
            }
        for n in doc["nodes"]:
            n.pop("weight", None)
    doc["gateway"] = new
    for old, words in PATH_WORDS[path]:
        doc["description"] = doc["description"].replace(old, words)
    return doc

# Policies that come with their own gateway: each situation's gateway in
# that product's words (its own retries and timeouts: Caddy and Traefik
# retry failed connections, never a 503, and have no response timeout
# unless one is set; the hang situation sets it to 1 s, as nginx's).
CADDY = {
    "flavor": "caddy",
    "caddy": {"lb_retries": 1},
}
CADDY_HANG = {
    "flavor": "caddy",
    "caddy": {"lb_retries": 1, "dial_timeout": "1s", "response_header_timeout": "1s"},
}
TRAEFIK = {"flavor": "traefik", "traefik": {"retry": {"attempts": 2}}}
TRAEFIK_HANG = {
    "flavor": "traefik",
    "traefik": {
        "retry": {"attempts": 2, "status": ["504"]},
        "forwardingTimeouts": {"dialTimeout": "1s", "responseHeaderTimeout": "1s"},
    },
}
BREAKER = {"expression": "NetworkErrorRatio() > 0.30 || ResponseCodeRatio(500, 600, 0, 600) > 0.30"}


def with_breaker(g):
    g = json.loads(json.dumps(g))
    g["traefik"]["circuitBreaker"] = BREAKER
    return g


GATEWAYS = {
    "caddy-passive": (CADDY, CADDY_HANG),
    "caddy-active": (CADDY, CADDY_HANG),
    "traefik-passive": (TRAEFIK, TRAEFIK_HANG),
    "traefik-active": (TRAEFIK, TRAEFIK_HANG),
    "traefik-breaker": (with_breaker(TRAEFIK), with_breaker(TRAEFIK_HANG)),
}

POLICIES.update({
    "caddy-passive": (
        "Caddy passive health checks: fail_duration 10s, max_fails 3, "
        "unhealthy_status 5xx (each failure forgotten 10 s later on its own); "
        "Caddy's request path with lb_retries 1",
        {"kind": "caddy", "passive": {"fail_duration": "10s", "max_fails": 3, "unhealthy_status": [5]}},
    ),
    "caddy-active": (
        "Caddy active health checks every 5 s (timeout 1 s, health_fails 3, "
        "health_passes 2, counted since the last change of state); Caddy's "
        "request path with lb_retries 1",
        {"kind": "caddy", "active": {"interval": "5s", "timeout": "1s", "fails": 3, "passes": 2}},
    ),
    "traefik-passive": (
        "Traefik passive health check: failureWindow 10s, maxFailedAttempts 3 "
        "(in a row; down for failureWindow); Traefik's request path with the "
        "retry middleware (attempts 2)",
        {"kind": "traefik", "passiveHealthCheck": {"failureWindow": "10s", "maxFailedAttempts": 3}},
    ),
    "traefik-active": (
        "Traefik active health check every 5 s (timeout 1 s, no thresholds); "
        "Traefik's request path with the retry middleware (attempts 2)",
        {"kind": "traefik", "healthCheck": {"interval": "5s", "timeout": "1s"}},
    ),
    "traefik-breaker": (
        "Traefik's circuit-breaker middleware (NetworkErrorRatio() > 0.30 || "
        "ResponseCodeRatio(500, 600, 0, 600) > 0.30; fallback 10 s, recovery "
        "10 s) in front of the retry middleware (attempts 2), no server health check",
        {"kind": "none"},
    ),
})

RETRY_503 = {"proxy_next_upstream": ["error", "timeout", "http_503"]}
FOUR = [{"name": n} for n in "abcd"]


def flaky(rate, label):
    return {
        "description": (
            f"E2's flaky node among four at {label}: a answers 503 with "
            "probability 0.1 %, retried on another node via http_503."
        ),
        "duration": "60s",
        "clients": {"kind": "open", "rate_per_s": rate, "arrivals": "poisson"},
        "gateway": RETRY_503,
        "nodes": FOUR,
        "faults": [{"kind": "flaky", "node": "a", "p": 0.001, "status": 503}],
    }


SITUATIONS = {
    "ratio-flaky-100rps": flaky(100.0, "100 requests/s"),
    "ratio-flaky-10krps": flaky(10000.0, "10,000 requests/s"),
    "quiet-node": {
        "description": (
            "A quiet node (weight 1 of 1001: about 1 request/s) answering 503 "
            "half of the time beside five busy healthy nodes; 503 is retried."
        ),
        "duration": "120s",
        "clients": {"kind": "open", "rate_per_s": 1000.0, "arrivals": "poisson"},
        "gateway": RETRY_503,
        "nodes": [{"name": n, "weight": 200} for n in "abcde"]
        + [{"name": "q", "weight": 1}],
        "faults": [{"kind": "flaky", "node": "q", "p": 0.5, "status": 503}],
    },
    "crash": {
        "description": (
            "Node a crashes at 10 s (connections refused) and restarts at 40 s; "
            "four nodes, 1,000 requests/s."
        ),
        "duration": "60s",
        "clients": {"kind": "open", "rate_per_s": 1000.0, "arrivals": "poisson"},
        "nodes": FOUR,
        "faults": [{"kind": "crash", "node": "a", "at": "10s", "for": "30s"}],
    },
    "hang": {
        "description": (
            "Node a hangs at 10 s (accepts, never answers) until 40 s; four "
            "nodes, 1,000 requests/s; upstream timeouts 1 s, so each request "
            "sent to a waits 1 s and is retried."
        ),
        "duration": "60s",
        "clients": {"kind": "open", "rate_per_s": 1000.0, "arrivals": "poisson"},
        "gateway": {"proxy_connect_timeout": "1s", "proxy_read_timeout": "1s"},
        "nodes": FOUR,
        "faults": [{"kind": "hang", "node": "a", "at": "10s", "for": "30s"}],
    },
    "slow": {
        "description": (
            "Node a answers ten times slower (50 ms instead of 5 ms, every "
            "answer a 200) from 10 s to 40 s; four nodes, 1,000 requests/s."
        ),
        "duration": "60s",
        "clients": {"kind": "open", "rate_per_s": 1000.0, "arrivals": "poisson"},
        "nodes": FOUR,
        "faults": [{"kind": "slow", "node": "a", "at": "10s", "for": "30s", "factor": 10.0}],
    },
}


def main():
    for sit, base in SITUATIONS.items():
        for slug, (what, policy, *path) in POLICIES.items():
            name = f"{sit}-{slug}"
            situation = on_path(path[0], sit, base) if path else base
            doc = {"name": name, **situation}
            doc["description"] = f"{situation['description']} Policy: {what}."
            doc["seed"] = 1
            doc["policy"] = policy
            if slug in GATEWAYS:
                plain, hang = GATEWAYS[slug]
                doc["gateway"] = json.loads(json.dumps(hang if sit == "hang" else plain))
                if slug.startswith("caddy") and any(n.get("weight", 1) != 1 for n in base["nodes"]):
                    # Caddy honours weights only with weighted_round_robin.
                    doc["gateway"]["caddy"]["lb_policy"] = "weighted_round_robin"
            order = ["name", "description", "seed", "duration", "clients",
                     "gateway", "nodes", "faults", "policy"]
            doc = {k: doc[k] for k in order if k in doc}
            path = ROOT / "models" / f"{name}.json"
            path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
