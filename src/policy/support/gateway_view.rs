//! How a health verdict reaches the gateway's request path: at once, after a
//! fixed delay (Kubernetes: kubelet → API server → EndpointSlice → proxy), by
//! a push that a change schedules and later changes ride along (Nacos 1.x),
//! or through a chain of periodic caches, each polling the one before it at
//! its own phase (Eureka: response cache → client fetch → Ribbon refresh).
//!
//! In a fleet of gateway replicas that share one server (a registry), each
//! replica has its own view: its own caches, with their own phases, and its
//! own push timers. The caches that belong to the server (Eureka's response
//! cache) are one for the fleet: the owner's view polls them, and the
//! subscribers' views start from the time a change leaves them
//! ([`GatewayView::leaves_server`], [`GatewayView::publish_from`]).

use crate::engine::{SimDuration, SimTime};
use crate::ids::NodeId;
use crate::policy::{PolicyCx, PolicyTimer, ScopeSel};
use rand::RngExt;
use std::collections::VecDeque;

/// The path from a checker's verdict to the gateway.
#[derive(Clone, Debug, PartialEq)]
pub enum Propagation {
    /// The gateway runs the check itself, or is pushed the change at once.
    Immediate,
    /// Every change arrives after this fixed delay.
    Delay(SimDuration),
    /// A change schedules a push of the whole service this long after it,
    /// unless one is already scheduled; the push carries every verdict as it
    /// is when it is sent (Nacos 1.x `PushService.serviceChanged` and
    /// `onApplicationEvent`).
    Push(SimDuration),
    /// Periodic copies, first to last: a change made at `t` is visible after
    /// the first layer's next poll at or after `t`, then the second layer's
    /// next poll after that, and so on. Each layer's phase is random.
    Pollers(Vec<SimDuration>),
}

/// The routability of every node as the gateway sees it, and the changes on
/// their way to it. Reports ejections and readmissions to the metrics.
#[derive(Clone, Debug)]
pub struct GatewayView {
    routable: Vec<bool>,
    /// Per node: (time the gateway sees it, verdict), in publication order.
    pending: Vec<VecDeque<(SimTime, bool)>>,
    propagation: Propagation,
    /// Per poller layer this view polls: the time of its first poll.
    phases: Vec<SimDuration>,
    /// Leading poller layers that belong to the server, not to the gateway
    /// (Eureka's response cache).
    server_layers: usize,
    /// A subscriber's view: the server's layers are behind it, it polls
    /// only the gateway's own.
    subscriber: bool,
    /// `Push`: the registry's verdicts, and whether a push is scheduled.
    latest: Vec<bool>,
    push_scheduled: bool,
    /// The timer tag this view owns.
    tag: u32,
}

impl GatewayView {
    /// `initially`: whether nodes start routable (Envoy, tengine and
    /// Kubernetes readiness start them out; most others in).
    pub fn new(nodes: usize, initially: bool, propagation: Propagation, tag: u32) -> Self {
        GatewayView {
            routable: vec![initially; nodes],
            pending: vec![VecDeque::new(); nodes],
            propagation,
            phases: Vec::new(),
            server_layers: 0,
            subscriber: false,
            latest: vec![initially; nodes],
            push_scheduled: false,
            tag,
        }
    }

    /// The first `layers` poller layers are the server's (Eureka's
    /// response cache): a fleet shares them.
    pub fn with_server_layers(mut self, layers: usize) -> Self {
        self.server_layers = layers;
        self
    }

    /// Makes this the view of a replica that hears a shared server's
    /// verdicts from its owner ([`GatewayView::publish_from`]): it polls
    /// only the gateway's own layers. Call before `start`.
    pub fn subscribe(&mut self) {
        self.subscriber = true;
    }

    /// The poller layers this view polls itself.
    fn own_layers(&self) -> &[SimDuration] {
        match &self.propagation {
            Propagation::Pollers(periods) if self.subscriber => &periods[self.server_layers..],
            Propagation::Pollers(periods) => periods,
            _ => &[],
        }
    }

    /// At time zero: draws the pollers' phases and reports the nodes that
    /// start out of the gateway's rotation.
    pub fn start(&mut self, cx: &mut PolicyCx) {
        if let Propagation::Pollers(_) = &self.propagation {
            let periods = self.own_layers().to_vec();
            self.phases = periods
                .iter()
                .map(|p| SimDuration::from_micros(cx.rng().random_range(0..p.as_micros().max(1))))
                .collect();
        }
        for (i, &r) in self.routable.iter().enumerate() {
            if !r {
                cx.ejected(ScopeSel::All, NodeId(i as u32));
            }
        }
    }

    pub fn is_routable(&self, node: NodeId) -> bool {
        self.routable[node.index()]
    }

    /// The checker's verdict on `node` is `routable` from now on.
    pub fn publish(&mut self, cx: &mut PolicyCx, node: NodeId, routable: bool) {
        let now = cx.now().t;
        self.publish_from(cx, node, routable, now);
    }

    /// When a change the server makes at `t` leaves the server's own
    /// layers, for the gateways' caches to poll (`t` without such layers).
    pub fn leaves_server(&self, t: SimTime) -> SimTime {
        debug_assert!(!self.subscriber, "a subscriber has no server layers");
        match &self.propagation {
            Propagation::Pollers(periods) => periods[..self.server_layers]
                .iter()
                .zip(&self.phases)
                .fold(t, |t, (&p, &phase)| next_poll(t, phase, p)),
            _ => t,
        }
    }

    /// The verdict on `node` is `routable`, published now; this view's own
    /// layers can see it from `from` on (a subscriber: when it leaves the
    /// server's layers, [`GatewayView::leaves_server`]; otherwise now).
    pub fn publish_from(&mut self, cx: &mut PolicyCx, node: NodeId, routable: bool, from: SimTime) {
        let now = cx.now().t;
        if let Propagation::Push(delay) = self.propagation {
            self.latest[node.index()] = routable;
            if !self.push_scheduled {
                self.push_scheduled = true;
                let timer = PolicyTimer {
                    tag: self.tag,
                    node: node.0,
                    generation: 0,
                };
                cx.at(now + delay, timer);
            }
            return;
        }
        let at = self.visible_at(from.max(now));
        if at <= now && self.pending[node.index()].is_empty() {
            self.apply(cx, node, routable);
            return;
        }
        self.pending[node.index()].push_back((at, routable));
        cx.at(
            at,
            PolicyTimer {
                tag: self.tag,
                node: node.0,
                generation: 0,
            },
        );
    }

    /// Handles this view's timers; returns false for anyone else's.
    pub fn on_timer(&mut self, cx: &mut PolicyCx, timer: PolicyTimer) -> bool {
        if timer.tag != self.tag {
            return false;
        }
        if let Propagation::Push(_) = self.propagation {
            // The push sends the service as it is now.
            self.push_scheduled = false;
            for i in 0..self.latest.len() {
                self.apply(cx, NodeId(i as u32), self.latest[i]);
            }
            return true;
        }
        let node = NodeId(timer.node);
        let now = cx.now().t;
        let mut last = None;
        let q = &mut self.pending[node.index()];
        while q.front().is_some_and(|&(at, _)| at <= now) {
            last = q.pop_front().map(|(_, r)| r);
        }
        if let Some(r) = last {
            self.apply(cx, node, r);
        }
        true
    }

    fn apply(&mut self, cx: &mut PolicyCx, node: NodeId, routable: bool) {
        let cur = &mut self.routable[node.index()];
        if *cur == routable {
            return;
        }
        *cur = routable;
        if routable {
            cx.readmitted(ScopeSel::All, node);
        } else {
            cx.ejected(ScopeSel::All, node);
        }
    }

    /// When a change made at `t` reaches the gateway. Monotone in `t`, so
    /// changes arrive in the order they were made.
    fn visible_at(&self, t: SimTime) -> SimTime {
        match &self.propagation {
            Propagation::Immediate => t,
            Propagation::Delay(d) | Propagation::Push(d) => t + *d,
            Propagation::Pollers(_) => self
                .own_layers()
                .iter()
                .zip(&self.phases)
                .fold(t, |t, (&p, &phase)| next_poll(t, phase, p)),
        }
    }
}

/// The first poll at or after `t` of a poller that polls at `phase + k·period`.
pub fn next_poll(t: SimTime, phase: SimDuration, period: SimDuration) -> SimTime {
    let (t, ph, p) = (t.as_micros(), phase.as_micros(), period.as_micros().max(1));
    let at = if t <= ph {
        ph
    } else {
        ph + (t - ph).div_ceil(p) * p
    };
    SimTime::from_micros(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testkit::{Harness, ms};

    #[test]
    fn next_poll_is_at_or_after() {
        let s = SimDuration::from_secs;
        let t = |x| SimTime::ZERO + s(x);
        assert_eq!(next_poll(t(0), s(5), s(30)), t(5));
        assert_eq!(next_poll(t(5), s(5), s(30)), t(5));
        assert_eq!(next_poll(t(6), s(5), s(30)), t(35));
        assert_eq!(next_poll(t(65), s(5), s(30)), t(65));
    }

    #[test]
    fn a_fixed_delay_postpones_changes_in_order() {
        let a = NodeId(0);
        let v = GatewayView::new(1, true, Propagation::Delay(SimDuration::from_secs(1)), 9);
        let mut h = Harness::part(v, 3);
        h.call(ms(0), |v, cx| v.start(cx));
        h.call(ms(100), |v, cx| v.publish(cx, a, false));
        h.call(ms(200), |v, cx| v.publish(cx, a, true));
        assert!(h.policy.is_routable(a), "not visible yet");
        let timers = h.pending_timers();
        assert_eq!(timers.len(), 2);
        let (first, second) = (timers[0].1, timers[1].1);
        assert!(h.call(ms(1100), |v, cx| v.on_timer(cx, first)));
        assert!(!h.policy.is_routable(a), "ejected at 1.1 s");
        assert!(h.call(ms(1200), |v, cx| v.on_timer(cx, second)));
        assert!(h.policy.is_routable(a), "back at 1.2 s");
        assert_eq!(h.notices().count(), 2);
    }

    #[test]
    fn a_push_carries_every_change_made_before_it_is_sent() {
        // Nacos 1.x `PushService`: the first change schedules the push
        // 1000 ms later; a change while it is scheduled adds no push and
        // goes out with it.
        let (a, b) = (NodeId(0), NodeId(1));
        let v = GatewayView::new(2, true, Propagation::Push(SimDuration::from_secs(1)), 9);
        let mut h = Harness::part(v, 3);
        h.call(ms(0), |v, cx| v.start(cx));
        h.call(ms(100), |v, cx| v.publish(cx, a, false));
        h.call(ms(900), |v, cx| v.publish(cx, b, false));
        let timers = h.pending_timers();
        assert_eq!(timers.len(), 1, "one push for both changes");
        assert_eq!(timers[0].0, ms(1_100));
        assert!(h.policy.is_routable(a) && h.policy.is_routable(b));
        assert!(h.call(ms(1_100), |v, cx| v.on_timer(cx, timers[0].1)));
        assert!(!h.policy.is_routable(a), "pushed 1 s after the change");
        assert!(
            !h.policy.is_routable(b),
            "0.2 s after its change: same push"
        );
        assert_eq!(h.notices().count(), 2);
        // The next change schedules the next push.
        h.call(ms(2_000), |v, cx| v.publish(cx, a, true));
        assert!(h.pending_timers().iter().any(|&(at, _)| at == ms(3_000)));
    }

    #[test]
    fn changes_that_arrive_together_collapse_to_the_last() {
        let a = NodeId(0);
        let p = SimDuration::from_secs(30);
        let mut h = Harness::part(
            GatewayView::new(1, true, Propagation::Pollers(vec![p]), 9),
            3,
        );
        h.call(ms(0), |v, cx| v.start(cx));
        let first_poll = h.policy.phases[0].as_micros() / 1000;
        // Ejected and readmitted between two polls: the gateway never sees it.
        h.call(ms(first_poll + 1), |v, cx| v.publish(cx, a, false));
        h.call(ms(first_poll + 2), |v, cx| v.publish(cx, a, true));
        let (at, timer) = h.pending_timers()[0];
        assert_eq!(at.as_micros() / 1000, first_poll + 30_000);
        assert!(h.call(ms(first_poll + 30_000), |v, cx| v.on_timer(cx, timer)));
        assert!(h.policy.is_routable(a));
        assert!(
            h.notices().next().is_none(),
            "no zero-length ejection reported"
        );
    }

    #[test]
    fn a_subscriber_polls_only_the_gateways_layers() {
        // Three layers, the first the server's (Eureka's response cache):
        // the owner's view polls all three; a subscriber draws and polls the
        // last two, from the time the change leaves the server.
        let p = SimDuration::from_secs(30);
        let view = || GatewayView::new(1, true, Propagation::Pollers(vec![p, p, p]), 9);
        let mut owner = Harness::part(view().with_server_layers(1), 3);
        owner.call(ms(0), |v, cx| v.start(cx));
        let mut sub = view().with_server_layers(1);
        sub.subscribe();
        let mut sub = Harness::part(sub, 4);
        sub.call(ms(0), |v, cx| v.start(cx));
        assert_eq!((owner.policy.phases.len(), sub.policy.phases.len()), (3, 2));
        let t = SimTime::from_micros(100_000_000);
        let o = &owner.policy.phases;
        let left = owner.policy.leaves_server(t);
        assert_eq!(left, next_poll(t, o[0], p));
        let own = next_poll(next_poll(left, o[1], p), o[2], p);
        assert_eq!(owner.policy.visible_at(t), own, "one gateway: unchanged");
        sub.call(t, |v, cx| v.publish_from(cx, NodeId(0), false, left));
        let s = &sub.policy.phases;
        let at = next_poll(next_poll(left, s[0], p), s[1], p);
        let (due, timer) = sub.pending_timers()[0];
        assert_eq!(due, at);
        assert!(sub.call(at, |v, cx| v.on_timer(cx, timer)));
        assert!(!sub.policy.is_routable(NodeId(0)));
    }

    #[test]
    fn pollers_chain_and_nodes_can_start_out() {
        let p = SimDuration::from_secs(30);
        let v = GatewayView::new(2, false, Propagation::Pollers(vec![p, p, p]), 9);
        let mut h = Harness::part(v, 3);
        h.call(ms(0), |v, cx| v.start(cx));
        assert_eq!(h.notices().count(), 2, "both start ejected");
        let t0 = SimTime::from_micros(40_000_000);
        let at = h.policy.visible_at(t0);
        assert!(at >= t0 && at < t0 + SimDuration::from_secs(90), "{at}");
        let mut prev = t0;
        for (&period, &phase) in [p, p, p].iter().zip(&h.policy.phases) {
            prev = next_poll(prev, phase, period);
        }
        assert_eq!(at, prev);
        let foreign = PolicyTimer {
            tag: 1,
            node: 0,
            generation: 0,
        };
        assert!(!h.call(ms(0), |v, cx| v.on_timer(cx, foreign)));
    }
}
