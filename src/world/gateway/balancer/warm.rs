//! Slow start (`gateway.slow_start`): the weight a node takes while it
//! warms up after returning to service, and the balancers' weights set
//! from it before each pick. HAProxy 2.6's `slowstart`
//! (`server_recalc_eweight`, stepped each second by `server_warmup`,
//! `src/server.c`) with `flavor: haproxy`; Envoy's `slow_start_config`
//! (`EdfLoadBalancerBase::applySlowStartFactor`,
//! `source/common/upstream/load_balancer_impl.cc`) on the nginx pipeline.
//! A model with it picks by direct scans, whose weights are set here for
//! the request's scope; one without it never reaches this file.

use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::policy::PolicySpec;
use crate::spec::{GatewayFlavor, Model};
use crate::world::World;

/// HAProxy's `BE_WEIGHT_SCALE`: a server at full weight has `eweight =
/// uweight × 16` (`lbprm.wdiv`, set by the dynamic algorithms' init).
const HAPROXY_WDIV: i64 = 16;
/// Envoy's weights are doubles: the model's are integers in thousandths.
const ENVOY_SCALE: f64 = 1000.0;

/// Whose ramp, with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Ramp {
    /// `slowstart`, stored in whole seconds (`srv_parse_slowstart`:
    /// `(ms + 999) / 1000`).
    Haproxy { secs: u64 },
    /// `slow_start_window` in milliseconds (`durationToMilliseconds`),
    /// `aggression`, `min_weight_percent / 100`.
    Envoy {
        window_ms: u64,
        aggression: f64,
        min: f64,
    },
}

impl Ramp {
    pub(crate) fn of(model: &Model) -> Option<Ramp> {
        let ss = model.gateway.slow_start.as_ref()?;
        Some(match model.gateway.flavor {
            GatewayFlavor::Haproxy => Ramp::Haproxy {
                secs: ss.window.as_micros().div_ceil(1_000_000),
            },
            _ => Ramp::Envoy {
                window_ms: ss.window.as_micros() / 1000,
                aggression: ss.aggression(),
                min: ss.min_weight_percent() / 100.0,
            },
        })
    }

    /// A node of configured weight `w` at full weight, in the units of [`Ramp::weight`].
    pub(crate) fn full(self, w: i64) -> i64 {
        match self {
            Ramp::Haproxy { .. } => w * HAPROXY_WDIV,
            Ramp::Envoy { .. } => (w as f64 * ENVOY_SCALE) as i64,
        }
    }

    /// The weight of a node of configured weight `w`, `elapsed` after its
    /// ramp began; `None` once the window is over (full weight).
    ///
    /// HAProxy: `w = (wdiv × (now − last_change) + slowstart) / slowstart`
    /// in whole seconds, `eweight = (uweight × w + wmult − 1) / wmult` with
    /// `wmult = 1`: 1/16 of the weight when marked UP, then a step each
    /// second, as `server_warmup` recomputes it every `MAX(1000,
    /// slowstart / 20)` ms (`slowstart` being in seconds, that is 1 s).
    /// Envoy: `t = max(1 ms, elapsed) / window`, `weight × max(t^(1/aggression),
    /// min_weight_percent)` (`applyAggressionFactor`: `t` itself when
    /// `aggression` is 1).
    pub(crate) fn weight(self, w: i64, elapsed: SimDuration) -> Option<i64> {
        match self {
            Ramp::Haproxy { secs } => {
                let e = elapsed.as_micros() / 1_000_000;
                (e < secs).then(|| w * ((HAPROXY_WDIV as u64 * e + secs) / secs) as i64)
            }
            Ramp::Envoy {
                window_ms,
                aggression,
                min,
            } => {
                let ms = elapsed.as_micros() / 1000;
                (ms < window_ms).then(|| {
                    let t = ms.max(1) as f64 / window_ms as f64;
                    let f = if aggression == 1.0 || t == 1.0 {
                        t
                    } else {
                        t.powf(1.0 / aggression)
                    };
                    ((w as f64 * ENVOY_SCALE * f.max(min)).round() as i64).max(1)
                })
            }
        }
    }
}

/// The slow-start state of a gateway (`Gateway.warm`, boxed: `None` without it).
#[derive(Debug)]
pub(crate) struct Warmup {
    ramp: Ramp,
    /// Per (scope, node): when its ramp began; `None` at full weight.
    since: Vec<Option<SimTime>>,
    /// Per policy of the model: does its readmission of a node begin a ramp.
    starts: Vec<bool>,
    /// The nodes' configured weights.
    base: Vec<i64>,
    /// Per node: ramps begun; counted picks of it in its windows; counted
    /// picks of any node (in the same scope) while it was in one.
    pub(crate) windows: Vec<u64>,
    pub(crate) picks_in: Vec<u64>,
    pub(crate) picks_all: Vec<u64>,
}

impl Warmup {
    /// What a run reports of slow start: per node, the ramps begun and the
    /// share of the picks it took in its windows.
    pub(crate) fn summarize(&self, summary: &mut crate::metrics::RunSummary) {
        for (i, node) in summary.nodes.iter_mut().enumerate() {
            node.warmups = self.windows[i];
            node.warmup_share = (self.picks_all[i] > 0)
                .then(|| crate::stats::round6(self.picks_in[i] as f64 / self.picks_all[i] as f64));
        }
    }

    pub(crate) fn of(model: &Model, scopes: usize) -> Option<Box<Warmup>> {
        let ramp = Ramp::of(model)?;
        let haproxy = model.gateway.flavor == GatewayFlavor::Haproxy;
        let n = model.nodes.len();
        // HAProxy: a server marked UP by its checks (any of its policies);
        // Envoy: a host passing its active health check after failing
        // (`setLastHcPassTime`), or re-added to the cluster when its pod is
        // ready again; not the end of an outlier ejection.
        let starts = model
            .policies
            .iter()
            .map(|p| haproxy || matches!(p, PolicySpec::ActiveProbe(_)))
            .collect();
        // Envoy: the hosts of the first update start in slow start too
        // (`recalculateHostsInSlowStart` sets `lastHcPassTime` to now).
        let at_start = (!haproxy).then_some(SimTime::ZERO);
        Some(Box::new(Warmup {
            ramp,
            since: vec![at_start; n * scopes],
            starts,
            base: model.nodes.iter().map(|x| x.weight as i64).collect(),
            windows: vec![0; n],
            picks_in: vec![0; n],
            picks_all: vec![0; n],
        }))
    }

    /// The weight of `node` in global scope `scope` at `now`, in the ramp's units.
    fn weight_at(&mut self, k: usize, node: usize, now: SimTime) -> i64 {
        let w = self.base[node];
        match self.since[k] {
            Some(t) => match self.ramp.weight(w, now.saturating_since(t)) {
                Some(x) => x,
                None => {
                    self.since[k] = None;
                    self.ramp.full(w)
                }
            },
            None => self.ramp.full(w),
        }
    }
}

impl World<'_> {
    /// Policy `policy` (its index in the model) readmitted `node` in the
    /// global scopes `scopes`: its ramp begins, if that policy's readmission
    /// is a return for the product.
    #[cold]
    pub(in crate::world) fn warm_returned(
        &mut self,
        policy: usize,
        node: NodeId,
        scopes: std::ops::Range<usize>,
    ) {
        let now = self.q.now();
        let n = self.gw.n;
        let Some(w) = self.gw.warm.as_mut() else {
            return;
        };
        if !w.starts[policy] {
            return;
        }
        w.windows[node.index()] += 1;
        for s in scopes {
            w.since[s * n + node.index()] = Some(now);
        }
    }

    /// Before a pick in `scope`: every node's weight as its ramp has it,
    /// in the tables the direct scans read (nginx's smooth WRR weights,
    /// HAProxy's rotation steps, random's ranges).
    pub(super) fn warm_weights(&mut self, scope: u16) {
        let now = self.q.now();
        let gw = &mut self.gw;
        let Some(w) = gw.warm.as_mut() else {
            return;
        };
        let n = gw.n;
        for i in 0..n {
            let k = scope as usize * n + i;
            let x = w.weight_at(k, i, now);
            gw.weight[i] = x;
            gw.ew[k] = x;
        }
        let total: i64 = gw.weight.iter().sum();
        for i in 0..n {
            gw.rr_step[i] = total.max(1) as u64 * 1_000_000 / gw.weight[i].max(1) as u64;
        }
        let mut acc = 0;
        for r in gw.ranges.iter_mut() {
            acc += gw.weight[r.1.index()];
            r.0 = acc;
        }
        gw.total_weight = acc;
    }

    /// After a pick in `scope` of a counted request: the windows' shares.
    pub(super) fn warm_count(&mut self, scope: u16, picked: Option<NodeId>, counted: bool) {
        let gw = &mut self.gw;
        let (Some(w), Some(p), true) = (gw.warm.as_mut(), picked, counted) else {
            return;
        };
        let n = gw.n;
        for i in 0..n {
            if w.since[scope as usize * n + i].is_some() {
                w.picks_all[i] += 1;
                w.picks_in[i] += (p.index() == i) as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Ramp;
    use crate::engine::SimDuration;

    fn s(x: u64) -> SimDuration {
        SimDuration::from_millis(x)
    }

    /// `server_recalc_eweight` with `slowstart 10s`, `weight 1`:
    /// `eweight = (16 × e + 10) / 10` for e = 0..9 whole seconds since UP,
    /// i.e. 1, 2, 4, 5, 7, 9, 10, 12, 13, 15, then 16 (full) from 10 s.
    #[test]
    fn haproxy_steps_each_second_from_a_sixteenth() {
        let r = Ramp::Haproxy { secs: 10 };
        let got: Vec<Option<i64>> = (0..=10).map(|e| r.weight(1, s(e * 1000 + 999))).collect();
        let want = [1, 2, 4, 5, 7, 9, 10, 12, 13, 15];
        assert_eq!(&got[..10], want.map(Some).as_slice());
        assert_eq!(got[10], None);
        assert_eq!(r.full(1), 16);
        // weight 3: uweight × w.
        assert_eq!(r.weight(3, s(2500)), Some(3 * 4));
        // A window under a second is one second (`(ms + 999) / 1000`).
        let model_secs = SimDuration::from_millis(1500)
            .as_micros()
            .div_ceil(1_000_000);
        assert_eq!(model_secs, 2);
    }

    /// `applySlowStartFactor` with a 10 s window: linear (aggression 1),
    /// floored by `min_weight_percent` (10 %), and `t^(1/aggression)`.
    #[test]
    fn envoy_ramp_is_the_time_factor_with_its_floor() {
        let lin = Ramp::Envoy {
            window_ms: 10_000,
            aggression: 1.0,
            min: 0.1,
        };
        assert_eq!(lin.weight(1, s(0)), Some(100)); // max(0.0001, 0.1)
        assert_eq!(lin.weight(1, s(500)), Some(100)); // 0.05 → 0.1
        assert_eq!(lin.weight(1, s(2500)), Some(250));
        assert_eq!(lin.weight(2, s(7500)), Some(1500));
        assert_eq!(lin.weight(1, s(10_000)), None);
        let agg = Ramp::Envoy {
            window_ms: 10_000,
            aggression: 2.0,
            min: 0.0,
        };
        // 0.25^(1/2) = 0.5; 0.04^(1/2) = 0.2.
        assert_eq!(agg.weight(1, s(2500)), Some(500));
        assert_eq!(agg.weight(1, s(400)), Some(200));
        assert_eq!(agg.full(1), 1000);
    }
}
