//! nginx passive health checking: `max_fails` / `fail_timeout`, exactly as
//! `ngx_http_upstream_round_robin.c` implements it (get_peer and free_peer).
//!
//! State per peer and per scope (nginx worker, or one shared copy with `zone`):
//! `fails`, `accessed` (wall second of the last failure) and `checked` (wall
//! second of the last failure, or of a selection made more than `fail_timeout`
//! after the previous `checked`). All comparisons use nginx's whole-second
//! `ngx_time()`. There are no timers: an ejection ends lazily, when a selection
//! finds `now - checked > fail_timeout`; that selection moves `checked`, which
//! excludes the peer again, so exactly one probe attempt passes per window.

use super::{
    AttemptReport, Charge, HealthPolicy, Interests, LogEvent, Now, PolicyCx, PolicyParams, Readmit,
    Scope, ScopeSel,
};
use crate::engine::SimDuration;
use crate::ids::NodeId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of the nginx `server` line (the same for every node of the upstream).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MaxFailsParams {
    /// Failures that make the peer unavailable; `0` turns accounting off. nginx default: 1.
    #[serde(default = "default_max_fails")]
    pub max_fails: u32,
    /// Both the chaining window and the ejection length, whole seconds. nginx default: 10s.
    #[serde(default = "default_fail_timeout")]
    pub fail_timeout: SimDuration,
}

fn default_max_fails() -> u32 {
    1
}
fn default_fail_timeout() -> SimDuration {
    SimDuration::from_secs(10)
}

impl Default for MaxFailsParams {
    fn default() -> Self {
        MaxFailsParams {
            max_fails: default_max_fails(),
            fail_timeout: default_fail_timeout(),
        }
    }
}

impl PolicyParams for MaxFailsParams {
    fn label(&self) -> String {
        format!(
            "max_fails={} fail_timeout={}",
            self.max_fails, self.fail_timeout
        )
    }

    fn validate(&self) -> Result<(), (String, String)> {
        if self.fail_timeout.whole_secs().is_none() {
            return Err((
                "fail_timeout".into(),
                format!(
                    "nginx takes fail_timeout in whole seconds, found \"{}\"",
                    self.fail_timeout
                ),
            ));
        }
        Ok(())
    }

    /// Legal settings that probably do not do what was meant, as `(field, message)`.
    fn warnings(&self) -> Vec<(String, String)> {
        let mut w = vec![];
        if self.fail_timeout.is_zero() && self.max_fails > 0 {
            w.push((
                "fail_timeout".into(),
                "0s ejects a node only until nginx's whole-second clock ticks over (at most 1s); \
                 nginx cannot express a window between 0 and 1s"
                    .into(),
            ));
        }
        w
    }

    fn build(&self, scopes: usize, nodes: usize) -> Box<dyn HealthPolicy> {
        Box::new(MaxFails::new(self, scopes, nodes))
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Peer {
    fails: u32,
    accessed: i64,
    checked: i64,
}

/// nginx passive counting for every (scope, node) pair.
pub struct MaxFails {
    max_fails: u32,
    fail_timeout: i64,
    nodes: usize,
    peers: Vec<Peer>,
}

impl MaxFails {
    pub fn new(p: &MaxFailsParams, scopes: usize, nodes: usize) -> Self {
        MaxFails {
            max_fails: p.max_fails,
            fail_timeout: p.fail_timeout.whole_secs().unwrap_or(0) as i64,
            nodes,
            peers: vec![Peer::default(); scopes.max(1) * nodes],
        }
    }

    fn peer(&self, scope: Scope, node: NodeId) -> &Peer {
        &self.peers[scope as usize * self.nodes + node.index()]
    }

    fn peer_mut(&mut self, scope: Scope, node: NodeId) -> &mut Peer {
        &mut self.peers[scope as usize * self.nodes + node.index()]
    }

    /// The failure counter of one peer (for tests and traces).
    pub fn fails(&self, scope: Scope, node: NodeId) -> u32 {
        self.peer(scope, node).fails
    }

    /// `on_selected`, which needs nothing but the time
    /// (`ngx_http_upstream_get_peer`: a peer chosen after its
    /// `fail_timeout` is checked anew: `peer->checked = now`). Returns
    /// whether the peer's state changed: if not, neither did the verdict
    /// (which depends on the state and only grows more permissive with time).
    #[inline]
    pub fn selected(&mut self, now: Now, scope: Scope, node: NodeId) -> bool {
        let ft = self.fail_timeout;
        let p = self.peer_mut(scope, node);
        let stale = now.wall_s - p.checked > ft;
        if stale {
            p.checked = now.wall_s;
        }
        stale
    }
}

/// "upstream server temporarily disabled" for the event log.
#[cold]
#[inline(never)]
fn log_disabled(cx: &mut PolicyCx, r: &AttemptReport) {
    // (`log` ignores it when no log is kept.)
    cx.log(LogEvent::NginxDisabled {
        scope: r.scope,
        node: r.node,
    });
}

impl HealthPolicy for MaxFails {
    fn is_routable(&self, scope: Scope, node: NodeId, now: Now) -> bool {
        let p = self.peer(scope, node);
        !(self.max_fails > 0
            && p.fails >= self.max_fails
            && now.wall_s - p.checked <= self.fail_timeout)
    }

    /// `now - peer->checked > peer->fail_timeout` turns true at the whole
    /// second `checked + fail_timeout + 1`.
    fn readmits_at(&self, scope: Scope, node: NodeId, _now: Now) -> Option<Readmit> {
        let p = self.peer(scope, node);
        Some(Readmit::WallSecond(p.checked + self.fail_timeout + 1))
    }

    fn on_selected(&mut self, cx: &mut PolicyCx, scope: Scope, node: NodeId) {
        self.selected(cx.now(), scope, node);
    }

    #[inline]
    fn on_attempt(&mut self, cx: &mut PolicyCx, r: &AttemptReport) {
        let max_fails = self.max_fails;
        let now = cx.now().wall_s;
        let p = self.peer_mut(r.scope, r.node);
        match r.charge {
            Charge::Failed => {
                p.fails += 1;
                p.accessed = now;
                p.checked = now;
                if max_fails > 0 && p.fails >= max_fails {
                    if p.fails == max_fails {
                        cx.ejected(ScopeSel::One(r.scope), r.node);
                    }
                    // ngx_http_upstream_free_round_robin_peer warns at every
                    // failure that leaves `fails >= max_fails`, not only the first.
                    log_disabled(cx, r);
                }
            }
            Charge::Next | Charge::Success => {
                if p.accessed < p.checked {
                    let was_out = max_fails > 0 && p.fails >= max_fails;
                    p.fails = 0;
                    if was_out {
                        cx.readmitted(ScopeSel::One(r.scope), r.node);
                    }
                }
            }
        }
    }

    fn weight_cut(&self, _node: NodeId, weight: u32) -> u32 {
        // integer division, as nginx; max_fails=0 cuts nothing
        weight.checked_div(self.max_fails).unwrap_or(0)
    }

    fn interests(&self) -> Interests {
        Interests {
            bypassed_for_single_server: true,
            ..Interests::DEFAULT
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SimTime;
    use crate::policy::testkit::{Harness, ms};
    use crate::policy::{AttemptResult, LogEvent, Notice};

    const A: NodeId = NodeId(0);
    const FAIL: AttemptResult = AttemptResult::Refused;
    const OK: AttemptResult = AttemptResult::Status(200);

    /// nginx with one scope and two nodes; the run starts `phase_ms` into a
    /// wall-clock second.
    fn nginx(max_fails: u32, fail_timeout_s: u64, phase_ms: u64) -> Harness<MaxFails> {
        let p = MaxFailsParams {
            max_fails,
            fail_timeout: SimDuration::from_secs(fail_timeout_s),
        };
        let phase = SimDuration::from_millis(phase_ms);
        Harness::with_wall_phase(MaxFails::new(&p, 1, 2), phase)
    }

    /// An attempt on A that completes at `t` with a 403/404 retried (`NGX_PEER_NEXT`).
    fn next(h: &mut Harness<MaxFails>, t: SimTime) {
        let report = AttemptReport {
            scope: 0,
            node: A,
            result: OK,
            charge: Charge::Next,
            elapsed: SimDuration::ZERO,
        };
        h.report(t, report);
    }

    #[test]
    fn every_failure_at_max_fails_logs_temporarily_disabled() {
        // ngx_http_upstream_free_round_robin_peer: `if (peer->fails >=
        // peer->max_fails) ngx_log_error(NGX_LOG_WARN, ... "upstream server
        // temporarily disabled")`, at the failure that reaches max_fails and
        // at each later one (a failed probe after fail_timeout).
        let mut h = nginx(2, 1, 0);
        h.logging = true;
        h.attempt(ms(1_000), A, FAIL);
        assert!(h.logs.is_empty());
        h.attempt(ms(1_100), A, FAIL);
        h.attempt(ms(3_500), A, FAIL);
        let at: Vec<SimTime> = h.logs.iter().map(|&(t, _)| t).collect();
        assert_eq!(at, [ms(1_100), ms(3_500)]);
        assert_eq!(h.logs[0].1, LogEvent::NginxDisabled { scope: 0, node: A });
        // No log kept: nothing queued.
        let mut quiet = nginx(1, 1, 0);
        quiet.attempt(ms(1_000), A, FAIL);
        assert!(quiet.logs.is_empty());
    }

    #[test]
    fn failures_chain_across_successes() {
        // Reference D2: max_fails=2, fail_timeout=10, failure at s=302, nine
        // successes, failure at s=307 -> disabled at 307, next used at 318.
        let mut h = nginx(2, 10, 0);
        h.attempt(ms(302_000), A, FAIL);
        for s in 303..=306 {
            h.attempt(ms(s * 1000), A, OK);
            h.attempt(ms(s * 1000 + 500), A, OK);
        }
        h.attempt(ms(306_900), A, OK);
        assert_eq!(
            h.policy.fails(0, A),
            1,
            "successes within the window keep fails"
        );
        h.attempt(ms(307_000), A, FAIL);
        assert_eq!(h.policy.fails(0, A), 2);
        assert!(!h.routable_at(A, ms(307_001)));
        assert!(
            !h.routable_at(A, ms(317_999)),
            "still out in second 317 (317-307 <= 10)"
        );
        assert!(h.routable_at(A, ms(318_000)), "eligible again at 307+10+1");
        assert_eq!(h.notices().count(), 1);
    }

    #[test]
    fn a_success_after_the_window_resets_fails() {
        let mut h = nginx(3, 5, 0);
        h.attempt(ms(1_000), A, FAIL);
        h.attempt(ms(2_000), A, FAIL);
        // Selected more than fail_timeout after `checked` (second 2): 8 - 2 > 5.
        h.attempt(ms(8_000), A, OK);
        assert_eq!(h.policy.fails(0, A), 0);
        h.attempt(ms(8_500), A, FAIL);
        assert!(
            h.routable_at(A, ms(8_600)),
            "the chain restarted at one failure"
        );
    }

    #[test]
    fn exactly_one_probe_per_window() {
        let mut h = nginx(1, 3, 0);
        h.attempt(ms(10_000), A, FAIL);
        assert!(!h.routable_at(A, ms(13_999)));
        assert!(h.routable_at(A, ms(14_000)), "window over: eligible");
        h.select(ms(14_100), A); // the probe is selected: checked = 14
        assert!(
            !h.routable_at(A, ms(14_200)),
            "the probe's selection excludes the peer again"
        );
        assert!(!h.routable_at(A, ms(17_999)));
        // The probe succeeds: accessed (10) < checked (14) -> fails = 0.
        h.complete(ms(14_300), A, OK, SimDuration::ZERO);
        assert!(h.routable_at(A, ms(14_301)));
        assert!(matches!(
            h.notices().last(),
            Some(Notice::Readmitted { .. })
        ));
    }

    #[test]
    fn a_failed_probe_ejects_for_a_whole_new_window() {
        let mut h = nginx(1, 3, 0);
        h.attempt(ms(10_000), A, FAIL);
        h.attempt(ms(14_250), A, FAIL); // the probe fails at second 14
        assert!(!h.routable_at(A, ms(17_999)));
        assert!(h.routable_at(A, ms(18_000)));
        assert_eq!(
            h.policy.fails(0, A),
            2,
            "fails keeps counting past max_fails"
        );
    }

    #[test]
    fn a_hung_probe_lets_a_second_probe_through_after_the_next_window() {
        let mut h = nginx(1, 2, 0);
        h.attempt(ms(5_000), A, FAIL);
        h.select(ms(8_100), A); // probe selected at second 8 and never completes
        assert!(!h.routable_at(A, ms(10_999)));
        assert!(
            h.routable_at(A, ms(11_000)),
            "8 + 2 + 1: a second probe may go"
        );
    }

    #[test]
    fn whole_second_clock_with_phase() {
        // Reference D1/A2: a failure at x.480 with fail_timeout=3 became eligible at (x+4).000.
        // With phase 0.3 s, sim time 1.180 s is wall x.480 (x = epoch + 1).
        let mut h = nginx(1, 3, 300);
        h.attempt(ms(1_180), A, FAIL);
        assert!(!h.routable_at(A, ms(4_699)), "wall x+3.999");
        assert!(h.routable_at(A, ms(4_700)), "wall x+4.000 is sim 4.700 s");
    }

    #[test]
    fn max_fails_zero_disables_ejection() {
        let mut h = nginx(0, 10, 0);
        for i in 0..10 {
            h.attempt(ms(1_000 + i), A, FAIL);
        }
        assert!(h.routable_at(A, ms(1_100)));
        assert_eq!(h.policy.fails(0, A), 10, "fails still increments");
        assert_eq!(h.policy.weight_cut(A, 5), 0);
        assert!(h.notices().next().is_none());
    }

    #[test]
    fn next_takes_the_success_path() {
        let mut h = nginx(1, 2, 0);
        h.attempt(ms(1_000), A, FAIL);
        h.select(ms(4_000), A);
        next(&mut h, ms(4_100)); // a 403/404 retried: resets like a success
        assert!(h.routable_at(A, ms(4_200)));
    }

    #[test]
    fn weight_cut_is_integer_division() {
        let h = nginx(3, 5, 0);
        assert_eq!(h.policy.weight_cut(A, 1), 0, "weight 1 / max_fails 3 = 0");
        let p = MaxFails::new(
            &MaxFailsParams {
                max_fails: 2,
                fail_timeout: SimDuration::from_secs(5),
            },
            1,
            1,
        );
        assert_eq!(p.weight_cut(A, 5), 2);
    }

    #[test]
    fn fractional_fail_timeout_is_rejected() {
        let p = MaxFailsParams {
            max_fails: 1,
            fail_timeout: SimDuration::from_millis(1500),
        };
        let (field, reason) = p.validate().unwrap_err();
        assert_eq!(field, "fail_timeout");
        assert!(reason.contains("whole seconds"), "{reason}");
    }
}
