//! Every policy instance of a run and how the world talks to them.
//!
//! [`PolicyBank`] holds one instance of each of the model's policies per
//! gateway replica (laid out by [`FleetLayout`](crate::ids::FleetLayout)),
//! what each hears ([`Interests`], asked once), and the buffers a call fills.
//! [`World::with_policy`] makes one call with a fresh [`PolicyCx`], then turns
//! what the policy asked for (timers, probes, heartbeats) into events and its
//! notices into metrics: the one door between the world and its policies.

use super::{Event, NodeId, World};
use crate::engine::{SimDuration, SimRng, SimTime};
use crate::ids::FleetLayout;
use crate::policy::{
    self, Action, AttemptReport, FleetRole, HealthPolicy, Interests, MaxFails, Notice, Now,
    PolicyCx, PolicySpec, PolicyTimer, Scope,
};
use crate::spec::Model;

/// One policy instance. nginx's `max_fails` (the default policy, and the one
/// most sweeps vary) is held by value, so that its three hooks of every
/// attempt (`is_routable` per peer, `on_selected`, `on_attempt`) are direct
/// calls the compiler inlines into the pick and the accounting; every other
/// policy is called through the trait. Any other hook of either reaches the
/// trait object by `Deref` (`max_fails`'s `on_selected` is done in place:
/// [`World::selected_in_place`]).
pub(crate) enum Instance {
    MaxFails(MaxFails),
    Dyn(Box<dyn HealthPolicy>),
}

impl std::ops::Deref for Instance {
    type Target = dyn HealthPolicy;
    #[inline]
    fn deref(&self) -> &(dyn HealthPolicy + 'static) {
        match self {
            Instance::MaxFails(p) => p,
            Instance::Dyn(p) => p.as_ref(),
        }
    }
}

impl std::ops::DerefMut for Instance {
    #[inline]
    fn deref_mut(&mut self) -> &mut (dyn HealthPolicy + 'static) {
        match self {
            Instance::MaxFails(p) => p,
            Instance::Dyn(p) => p.as_mut(),
        }
    }
}

impl Instance {
    fn build(spec: &PolicySpec, scopes: usize, nodes: usize) -> Instance {
        match spec {
            PolicySpec::MaxFails(p) => Instance::MaxFails(MaxFails::new(p, scopes, nodes)),
            _ => Instance::Dyn(policy::build(spec, scopes, nodes)),
        }
    }

    /// [`HealthPolicy::is_routable`], direct for `max_fails`.
    #[inline(always)]
    pub(crate) fn is_routable(&self, scope: Scope, node: NodeId, now: Now) -> bool {
        match self {
            Instance::MaxFails(p) => p.is_routable(scope, node, now),
            Instance::Dyn(p) => p.is_routable(scope, node, now),
        }
    }

    /// [`HealthPolicy::on_selected`] where it needs no context: `max_fails`
    /// only notes the time (see [`MaxFails::selected`]), so it is done here
    /// and whether its state changed returned; `None`: not so for this
    /// policy.
    #[inline(always)]
    pub(crate) fn selected_in_place(
        &mut self,
        now: Now,
        scope: Scope,
        node: NodeId,
    ) -> Option<bool> {
        match self {
            Instance::MaxFails(p) => Some(p.selected(now, scope, node)),
            Instance::Dyn(_) => None,
        }
    }

    /// [`HealthPolicy::on_attempt`], direct for `max_fails`.
    #[inline(always)]
    pub(crate) fn on_attempt(&mut self, cx: &mut PolicyCx, r: &AttemptReport) {
        match self {
            Instance::MaxFails(p) => p.on_attempt(cx, r),
            Instance::Dyn(p) => p.on_attempt(cx, r),
        }
    }
}

pub(crate) struct PolicyBank {
    /// Replica by replica, each of the model's policies (`FleetLayout::policy`).
    all: Vec<Instance>,
    /// The policies that listen to `on_connected`, by index within a replica.
    pub(crate) hear_connections: Vec<usize>,
    /// The policies that listen to `on_selected`, by index within a replica.
    pub(crate) hear_selections: Vec<usize>,
    /// The policies that listen to `on_attempt`, by index within a replica.
    pub(crate) hear_attempts: Vec<usize>,
    /// The policies that listen to `on_host_checked`, likewise.
    hear_checks: Vec<usize>,
    /// The policies that may refuse an attempt (`admits`), likewise.
    pub(crate) admitters: Vec<usize>,
    /// Per instance: nginx ignores it for a one-server upstream.
    pub(crate) bypass_single: Vec<bool>,
    /// Per instance: ask it again about a node after every call about that
    /// node (`false`: on its ejection and readmission notices only).
    refresh_after_call: Vec<bool>,
    /// Per policy of a replica: what it hears.
    interests: Vec<Interests>,
    timers: Vec<(SimTime, PolicyTimer)>,
    notices: Vec<Notice>,
    actions: Vec<Action>,
}

/// The indices (within a replica) of the policies for which `hears` holds.
fn listeners(interests: &[Interests], hears: impl Fn(&Interests) -> bool) -> Vec<usize> {
    (0..interests.len())
        .filter(|&i| hears(&interests[i]))
        .collect()
}

impl PolicyBank {
    /// Every replica's instances of the model's policies; in a fleet, a
    /// server the replicas share (a registry) runs in replica 0's instance.
    pub(crate) fn new(model: &Model, layout: FleetLayout) -> Self {
        let mut all: Vec<Instance> = Vec::with_capacity(layout.policy_instances());
        for _ in 0..layout.replicas() {
            for p in &model.policies {
                all.push(Instance::build(
                    p,
                    layout.scopes_per_replica(),
                    model.nodes.len(),
                ));
            }
            if let Some(pods) = &model.pods {
                // The pods running at the start are listed; the surge
                // slots are empty until a rolling update fills them.
                let listed = (0..model.nodes.len())
                    .map(|i| i < model.declared_nodes().len() || !pods.is_pod(i))
                    .collect();
                all.push(Instance::Dyn(Box::new(policy::endpoints::Endpoints::new(
                    listed,
                ))));
            }
        }
        if layout.is_fleet() {
            for (i, p) in all.iter_mut().enumerate() {
                p.join_fleet(if layout.replica_of_policy(i) == 0 {
                    FleetRole::Owner
                } else {
                    FleetRole::Subscriber
                });
            }
        }
        let interests: Vec<Interests> = all[..layout.policies_per_replica()]
            .iter()
            .map(|p| p.interests())
            .collect();
        let per_instance = |f: fn(&Interests) -> bool| -> Vec<bool> {
            (0..all.len())
                .map(|i| f(&interests[layout.policy_index(i)]))
                .collect()
        };
        PolicyBank {
            hear_connections: listeners(&interests, |x| x.connections),
            hear_selections: listeners(&interests, |x| x.selections),
            hear_attempts: listeners(&interests, |x| x.attempts),
            hear_checks: listeners(&interests, |x| x.host_checks),
            admitters: listeners(&interests, |x| x.rejects_attempts),
            bypass_single: per_instance(|x| x.bypassed_for_single_server),
            refresh_after_call: per_instance(|x| !x.routes_by_notices),
            interests,
            all,
            timers: Vec::new(),
            notices: Vec::new(),
            actions: Vec::new(),
        }
    }

    /// Policy instances in the whole fleet.
    pub(crate) fn len(&self) -> usize {
        self.all.len()
    }

    /// Instance `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> &Instance {
        &self.all[i]
    }

    /// The instances `range` (one replica's: `FleetLayout::policies_of`).
    #[inline]
    pub(crate) fn slice(&self, range: std::ops::Range<usize>) -> &[Instance] {
        &self.all[range]
    }

    /// The shortest attempt timeout of the policies (Hystrix's execution
    /// timeout), from the peer's selection.
    pub(crate) fn attempt_cap(&self) -> Option<SimDuration> {
        self.all[..self.interests.len()]
            .iter()
            .filter_map(|p| p.attempt_timeout())
            .min()
    }

    /// Some policy may refuse attempts.
    pub(crate) fn any_admitter(&self) -> bool {
        !self.admitters.is_empty()
    }

    /// How many policies of a replica hold its traffic until they are warm.
    pub(crate) fn warming(&self) -> u32 {
        self.interests.iter().filter(|x| x.warms).count() as u32
    }

    /// Calls instance `i` with a fresh context at `now`; returns its answer
    /// and whether it asked for anything (timers, notices, actions: which
    /// [`World::with_policy`] then applies).
    #[inline]
    fn call<R>(
        &mut self,
        i: usize,
        now: Now,
        rng: &mut SimRng,
        logging: bool,
        f: impl FnOnce(&mut Instance, &mut PolicyCx) -> R,
    ) -> (R, bool) {
        let buffers = (&mut self.timers, &mut self.notices, &mut self.actions);
        let mut cx = PolicyCx::logged(now, rng, buffers, logging);
        let r = f(&mut self.all[i], &mut cx);
        // Most calls ask for nothing: keep the draining out of the hot path.
        let queued =
            !self.timers.is_empty() || !self.notices.is_empty() || !self.actions.is_empty();
        (r, queued)
    }
}

impl World<'_> {
    /// Calls policy instance `i` with a fresh context, then turns its
    /// requests into events and its notices into metrics.
    #[inline(always)]
    pub(crate) fn with_policy<R>(
        &mut self,
        i: usize,
        about: Option<NodeId>,
        f: impl FnOnce(&mut Instance, &mut PolicyCx) -> R,
    ) -> R {
        let now = self.fleet.now_of_policy(i, self.q.now());
        let logging = self.obs.events.is_some();
        let (r, queued) = self.bank.call(i, now, &mut self.rng.policy, logging, f);
        // The actions wait until the timers and notices are applied and the
        // node refreshed (they may call policies again).
        let actions = queued.then(|| self.apply_policy_requests(i, now.t));
        if let Some(node) = about {
            self.refresh_after_call(i, node, now);
        }
        if let Some(actions) = actions {
            self.apply_actions(i, actions);
        }
        // HAProxy's queues hear a server change state (`pending.rs`).
        if self.gw.pending.is_some()
            && let Some(node) = about
        {
            // HAProxy's threads share one state: one scope per replica.
            let scope = self
                .fleet
                .layout()
                .scope(self.fleet.replica_of_policy(i), 0);
            self.hap_watch(scope, node);
        }
        r
    }

    /// Tells instance `i` that `node` was selected (in `local`, its scope)
    /// without a context, if it needs none for it (`Instance::selected_in_place`),
    /// and does what [`World::with_policy`] does after a call: the
    /// structures ask again, if its state changed. `false`: nothing done,
    /// call it through `with_policy`. HAProxy's queues, which hear every
    /// call about a node, always take that way.
    #[inline(always)]
    pub(crate) fn selected_in_place(&mut self, i: usize, local: Scope, node: NodeId) -> bool {
        if self.gw.pending.is_some() {
            return false;
        }
        let now = self.fleet.now_of_policy(i, self.q.now());
        match self.bank.all[i].selected_in_place(now, local, node) {
            Some(changed) => {
                if changed {
                    self.refresh_after_call(i, node, now);
                }
                true
            }
            None => false,
        }
    }

    /// After a call to instance `i` about `node`: the balancers' structures
    /// ask it again (nothing to do for direct scans, or for a policy that
    /// routes by its notices).
    #[inline(always)]
    fn refresh_after_call(&mut self, i: usize, node: NodeId, now: Now) {
        if !self.gw.direct && self.bank.refresh_after_call[i] {
            self.refresh_node(i, node, now);
        }
    }

    /// Calls every policy instance (`on_start`, `on_restarted`), in order.
    pub(crate) fn with_every_policy(
        &mut self,
        about: Option<NodeId>,
        f: impl Fn(&mut Instance, &mut PolicyCx),
    ) {
        for i in 0..self.bank.len() {
            self.with_policy(i, about, &f);
        }
    }

    /// Policy instance `i` owns a server the replicas share (a registry)
    /// and published a verdict on `node`: the same policy of every other
    /// replica hears it now, in replica order.
    #[cold]
    fn publish_to_replicas(&mut self, i: usize, node: NodeId, routable: bool, at: SimTime) {
        let layout = self.fleet.layout();
        let p = layout.policy_index(i);
        for r in 0..layout.replicas() {
            let j = layout.policy(r, p);
            if j != i {
                self.with_policy(j, Some(node), |pol, cx| {
                    pol.on_published(cx, node, routable, at)
                });
            }
        }
    }

    /// Policy instance `i` completed a check of `node`: the other policies
    /// of its replica that listen hear it.
    #[cold]
    fn host_checked(&mut self, i: usize, node: NodeId, healthy: bool) {
        let layout = self.fleet.layout();
        let r = layout.replica_of_policy(i);
        for k in 0..self.bank.hear_checks.len() {
            let j = layout.policy(r, self.bank.hear_checks[k]);
            if j != i {
                self.with_policy(j, Some(node), |p, cx| p.on_host_checked(cx, node, healthy));
            }
        }
    }

    /// Slow start: the readmissions instance `i` (of `replica`) queued
    /// begin their nodes' ramps.
    #[cold]
    fn warm_notices(&mut self, i: usize, replica: usize) {
        let layout = self.fleet.layout();
        let policy = layout.policy_index(i);
        let back: Vec<(NodeId, std::ops::Range<usize>)> = self
            .bank
            .notices
            .iter()
            .filter_map(|n| match *n {
                Notice::Readmitted { scope, node } => Some((
                    node,
                    match scope {
                        crate::policy::ScopeSel::One(s) => {
                            let g = layout.scope(replica, s) as usize;
                            g..g + 1
                        }
                        crate::policy::ScopeSel::All => layout.scopes_of(replica),
                    },
                )),
                _ => None,
            })
            .collect();
        for (node, scopes) in back {
            self.warm_returned(policy, node, scopes);
        }
    }

    /// What instance `i` asked of the engine, in order; the buffer goes
    /// back to the bank, emptied, for the next call.
    #[cold]
    #[inline(never)]
    fn apply_actions(&mut self, i: usize, mut actions: Vec<Action>) {
        for a in actions.drain(..) {
            match a {
                Action::Probe { node, req } => self.send_probe(i as u16, node, req),
                Action::StartHeartbeats(plan) => self.start_heartbeats(i as u16, plan),
                Action::HostChecked { node, healthy } => self.host_checked(i, node, healthy),
                Action::Warmed => self.on_warmed(self.fleet.replica_of_policy(i)),
                Action::Log(ev) => self.log_policy_event(i, ev),
                Action::Publish { node, routable, at } => {
                    self.publish_to_replicas(i, node, routable, at)
                }
            }
        }
        if self.bank.actions.capacity() < actions.capacity() {
            self.bank.actions = actions;
        }
    }

    /// Turns the timers and notices instance `i` queued into events and
    /// metrics; returns the actions it queued (taken out of the bank's
    /// buffer, since applying them may call policies again).
    #[cold]
    #[inline(never)]
    fn apply_policy_requests(&mut self, i: usize, now: SimTime) -> Vec<Action> {
        let actions = std::mem::take(&mut self.bank.actions);
        for (at, timer) in self.bank.timers.drain(..) {
            self.q.schedule(
                at,
                Event::Policy {
                    policy: i as u16,
                    timer,
                },
            );
        }
        let mut named = Vec::new();
        let mut marked = Vec::new();
        let mut readmitted = false;
        let replica = self.fleet.replica_of_policy(i);
        let notices = self.bank.notices.len();
        if self.gw.warm.is_some() && notices > 0 {
            self.warm_notices(i, replica);
        }
        for n in self.bank.notices.drain(..) {
            self.rec.notice(now, n, replica);
            readmitted |= matches!(n, Notice::Readmitted { .. });
            if let Notice::Ejected { node, .. } | Notice::Readmitted { node, .. } = n {
                named.push(node);
                if self.gw.haproxy_on_marked() {
                    marked.push((node, matches!(n, Notice::Readmitted { .. })));
                }
            }
        }
        if readmitted && self.gw.linkerd.is_some() {
            self.linkerd_readmitted(replica);
        }
        let now = self.fleet.now_of_policy(i, now);
        if !self.gw.direct {
            for node in named {
                self.refresh_node(i, node, now);
            }
        }
        for (node, up) in marked {
            self.haproxy_marked(i, node, up);
        }
        actions
    }
}
