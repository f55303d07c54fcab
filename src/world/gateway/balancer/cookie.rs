//! HAProxy 2.6's cookie persistence, `cookie NAME insert`
//! (`gateway.haproxy.cookie`). Each client key (`clients.keys`) holds at most
//! one cookie: the value of the server that set it. The functions named are
//! HAProxy's (src/http_ana.c, src/backend.c, include/haproxy/stream.h).
//!
//! - The request (`manage_client_side_cookies`): the servers are scanned in
//!   declaration order for one whose `cookie` value is the client's; the
//!   first one that is not DOWN (`cur_state != SRV_ST_STOPPED`: here, not
//!   `down` and let through by every policy), or the first one at all with
//!   `option persist`, takes the request without balancing (`SF_DIRECT |
//!   SF_ASSIGNED`, so `assign_server` does not balance). A matching server
//!   that is DOWN is passed over "in case another one is available". No
//!   cookie, or none usable: the request is balanced by `balance`. A
//!   persisted server at its `maxconn` would queue the request; hcsim has
//!   no server queues, so it is answered 503 at once (as `source.rs` does).
//! - A failed connect (`stream_choose_redispatch`): with `option
//!   redispatch`, the retry leaves a persisted server only when it is not
//!   RUNNING or on the `redispatch_after`-th retry; the immediate redispatch
//!   of the round-robin balancers applies to requests without `SF_DIRECT`
//!   only. A redispatch clears `SF_DIRECT`. `option persist` does not stop
//!   a redispatch in 2.6 (only `force-persist`'s `SF_FORCE_PRST` does).
//! - The response (`http_process_res_common`, "Add server cookie in the
//!   response if needed"): a response relayed from a server to a request
//!   without `SF_DIRECT` sets that server's cookie, or removes the client's
//!   cookie when the server has none. A request that kept its cookie's
//!   server leaves the cookie as it was. An answer HAProxy makes itself
//!   (502, 503, 504) sets nothing; nor does a request the client gave up.

use crate::spec::Model;
use crate::world::{NodeId, World};

/// No cookie (`held`) or no value (`value_of`).
const NONE: u32 = u32::MAX;

/// The cookies of a model with `gateway.haproxy.cookie`, boxed in the
/// gateway's hash parts (a model without them holds `None`).
pub(crate) struct Cookies {
    /// `option persist`.
    persist: bool,
    /// By node: the index of its cookie value among the distinct values
    /// (nodes sharing a value share it), or `NONE`.
    value_of: Vec<u32>,
    /// By client key: the value its cookie holds, or `NONE`.
    held: Vec<u32>,
    /// By request slot: the request went to its cookie's server
    /// (`SF_DIRECT`).
    direct: Vec<bool>,
}

impl Cookies {
    /// The cookies of `model`, if it has `gateway.haproxy.cookie`.
    pub(crate) fn of(model: &Model) -> Option<Box<Cookies>> {
        let h = model.gateway.haproxy.as_ref()?;
        let c = h.cookie.as_ref()?;
        let mut values: Vec<&str> = Vec::new();
        let value_of = model
            .nodes
            .iter()
            .map(|n| match c.value_of(&n.name) {
                None => NONE,
                Some(v) => match values.iter().position(|&x| x == v) {
                    Some(i) => i as u32,
                    None => {
                        values.push(v);
                        (values.len() - 1) as u32
                    }
                },
            })
            .collect();
        Some(Box::new(Cookies {
            persist: c.persist,
            value_of,
            held: vec![NONE; model.keys.unwrap_or(0) as usize],
            direct: Vec::new(),
        }))
    }

    /// The servers the cookie of `key` names, in declaration order.
    fn named(&self, key: u32) -> impl Iterator<Item = NodeId> + '_ {
        let v = self.held[key as usize];
        self.value_of
            .iter()
            .enumerate()
            .filter(move |&(_, &x)| v != NONE && x == v)
            .map(|(i, _)| NodeId(i as u32))
    }

    /// Whether the request in `slot` went to its cookie's server.
    pub(crate) fn is_direct(&self, slot: u32) -> bool {
        self.direct.get(slot as usize).copied().unwrap_or(false)
    }

    /// A redispatch: the request is balanced from now on.
    pub(crate) fn clear_direct(&mut self, slot: u32) {
        if let Some(d) = self.direct.get_mut(slot as usize) {
            *d = false;
        }
    }

    /// The response of `node` reached the client of `key`: its cookie is
    /// set to `node`'s, unless the request went to its cookie's server.
    pub(crate) fn answered(&mut self, slot: u32, key: u32, node: NodeId) {
        if !self.is_direct(slot) {
            self.held[key as usize] = self.value_of[node.index()];
        }
    }
}

impl World<'_> {
    /// `start_request`'s end with cookies: the client timeout, then the
    /// first attempt (HAProxy's path has no policies that hold requests
    /// while warming, but a held request waits as `start_request`'s do).
    #[cold]
    pub(in crate::world::gateway) fn cookie_start(
        &mut self,
        slot: u32,
        generation: u32,
        replica: usize,
    ) {
        self.arm_client_timeout(slot, generation);
        if self.gw.warming[replica] > 0 {
            self.gw.held[replica].push((slot, generation));
            return;
        }
        self.cookie_connect(slot);
    }

    /// The request's first attempt with cookies: its cookie's server
    /// without balancing, or `connect`'s balancing.
    #[cold]
    pub(in crate::world::gateway) fn cookie_connect(&mut self, slot: u32) {
        let r = &self.gw.reqs[slot as usize];
        let scope = r.scope;
        let key = self.gw.hash.state[slot as usize].key;
        let now = self.fleet.now_in(scope, self.q.now());
        let (policies, local) = self.replica_policies(scope);
        let gw = &self.gw;
        let Some(c) = gw.hash.cookie.as_deref() else {
            return self.connect(slot);
        };
        let usable = |n: NodeId| {
            !gw.down[n.index()] && policies.iter().all(|p| p.is_routable(local, n, now))
        };
        let target = c.named(key).find(|&n| c.persist || usable(n));
        let c = self.gw.hash.cookie.as_deref_mut().expect("cookies");
        if c.direct.len() <= slot as usize {
            c.direct.resize(slot as usize + 1, false);
        }
        c.direct[slot as usize] = target.is_some();
        let Some(node) = target else {
            return self.connect(slot);
        };
        let k = self.gw.k(scope, node);
        let queue = self.gw.pending.as_deref();
        let waiting = queue.map_or(0, |p| p.server_len(scope, node));
        let m = self.gw.max_conns[node.index()];
        if m > 0 && (waiting > 0 || super::at_max_conns(m, self.gw.conns[k])) {
            return self.cookie_server_full(slot, node);
        }
        self.take_peer(slot, node);
        self.start_attempt(slot, node);
    }

    /// `assign_server_and_queue` for a request its cookie sends to the full
    /// `node`: its queue, or past `maxqueue` `srv_redispatch_connect`'s
    /// `SRV_STATUS_FULL` (balanced with `option redispatch`, else 503).
    #[cold]
    fn cookie_server_full(&mut self, slot: u32, node: NodeId) {
        let scope = self.gw.reqs[slot as usize].scope;
        let Some(p) = self.gw.pending.as_deref() else {
            return self.finalize(slot, 503, None);
        };
        if !p.server_queue_full(scope, node) {
            return self.hap_enqueue(slot, super::super::pending::Queued::Server(node));
        }
        let redispatch = self.model.gateway.haproxy().redispatch.after().is_some();
        if redispatch {
            if let Some(c) = self.gw.hash.cookie.as_deref_mut() {
                c.clear_direct(slot);
            }
            return self.connect(slot);
        }
        self.finalize(slot, 503, None)
    }

    /// HAProxy relayed `node`'s response to the request in `slot`.
    #[cold]
    pub(in crate::world::gateway) fn cookie_answered(&mut self, slot: u32, node: NodeId) {
        let key = self.gw.hash.state[slot as usize].key;
        if let Some(c) = self.gw.hash.cookie.as_deref_mut() {
            c.answered(slot, key, node);
        }
    }

    /// Whether the request in `slot` went to its cookie's server.
    pub(in crate::world::gateway) fn cookie_direct(&self, slot: u32) -> bool {
        self.gw
            .hash
            .cookie
            .as_ref()
            .is_some_and(|c| c.is_direct(slot))
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::Model;
    use crate::world::World;
    use crate::world::streams::Stream;
    use rand::RngExt;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;

    const KEYS: u32 = 3000;

    /// An attempt: its end (s), node and result.
    type Attempt = (f64, String, String);

    fn model(cookie: Value, faults: Value) -> Model {
        let doc = json!({
            "name": "cookies", "duration": "60s", "seed": 5,
            "clients": {"kind": "open", "rate_per_s": 200.0, "keys": KEYS},
            "gateway": {"flavor": "haproxy", "haproxy": {
                "redispatch": true, "timeout_connect": "500ms", "cookie": cookie}},
            "policy": {"kind": "active_probe", "flavor": "haproxy", "probe": "tcp",
                       "inter": "1s", "rise": 1, "fall": 2},
            "nodes": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
            "faults": faults,
        });
        Model::from_document(&doc, std::path::Path::new("cookies.json")).unwrap()
    }

    /// Each request's client key and its attempts (end time, node, result),
    /// in request order.
    fn run(model: &Model) -> Vec<(u32, Vec<Attempt>)> {
        let mut attempts: BTreeMap<u64, Vec<Attempt>> = BTreeMap::new();
        let mut sink = |l: &crate::world::TraceLine| {
            attempts
                .entry(l.request)
                .or_default()
                .push((l.t_s, l.node.clone(), l.result.clone()))
        };
        World::new(model, model.seed, Some(&mut sink)).run();
        let mut keys = Stream::Keys.of(model.seed);
        let last = *attempts.keys().last().unwrap();
        let drawn: Vec<u32> = (0..last).map(|_| keys.random_range(0..KEYS)).collect();
        attempts
            .into_iter()
            .map(|(id, a)| (drawn[id as usize - 1], a))
            .collect()
    }

    /// Without faults a client is balanced once, then every request of its
    /// goes where its first went; the first ones spread round-robin.
    #[test]
    fn a_client_sticks_to_the_server_of_its_first_answer() {
        let runs = run(&model(json!({}), json!([])));
        let mut home: BTreeMap<u32, String> = BTreeMap::new();
        for (key, a) in &runs {
            assert_eq!(a.len(), 1);
            let h = home.entry(*key).or_insert_with(|| a[0].1.clone());
            assert_eq!(&a[0].1, h, "key {key}");
        }
        for n in ["A", "B", "C"] {
            let c = home.values().filter(|h| *h == n).count();
            assert!(c > 800, "{n}: {c} clients");
        }
        let cookies = crate::world::gateway::balancer::cookie::Cookies::of(&model(
            json!({"values": {"A": "s1", "B": "s1"}}),
            json!([]),
        ))
        .unwrap();
        assert_eq!(cookies.value_of, vec![0, 0, super::NONE]);
    }

    /// B crashes from 10 s to 20 s. Its clients that asked meanwhile were
    /// answered elsewhere and re-cookied (B marked DOWN, or the last retry
    /// redispatched): they stay on their new server after B is back. Those
    /// that did not ask until B was up again return to B.
    #[test]
    fn a_crashed_servers_clients_move_and_return_only_if_not_recookied() {
        let m = model(
            json!({}),
            json!([{"kind": "crash", "node": "B", "at": "10s", "for": "10s"}]),
        );
        let runs = run(&m);
        // The node of each key's answers before the crash.
        let mut before: BTreeMap<u32, String> = BTreeMap::new();
        let mut asked_during: BTreeMap<u32, bool> = BTreeMap::new();
        let mut after: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        let (mut moved, mut returned) = (0, 0);
        for (key, a) in &runs {
            let (t, node, _) = a.last().unwrap();
            if *t < 9.9 {
                let b = before.entry(*key).or_insert_with(|| node.clone());
                assert_eq!(b, node, "key {key} before the crash");
            } else if *t < 22.0 {
                // Re-cookied if another server answered; a request that
                // failed everywhere (503) or that B answered after its
                // return leaves the cookie on B.
                let other = node != "B";
                *asked_during.entry(*key).or_insert(false) |= other;
            } else if a.len() == 1 {
                after.entry(*key).or_default().push(node.clone());
            }
        }
        for (key, nodes) in &after {
            if before.get(key).map(String::as_str) != Some("B") {
                continue;
            }
            if asked_during.get(key) == Some(&true) {
                assert!(
                    nodes.iter().all(|n| n == &nodes[0] && n != "B"),
                    "{key}: {nodes:?}"
                );
                moved += 1;
            } else if !asked_during.contains_key(key) {
                assert!(nodes.iter().all(|n| n == "B"), "{key}: {nodes:?}");
                returned += 1;
            }
        }
        assert!(
            moved > 50 && returned > 50,
            "moved {moved}, returned {returned}"
        );
    }

    /// A request sent by its cookie to a crashed server that is not yet
    /// DOWN retries that server (no immediate round-robin redispatch for
    /// `SF_DIRECT`) until the last retry is redispatched.
    #[test]
    fn a_persisted_request_retries_its_server_until_the_last_retry() {
        let m = model(
            json!({}),
            json!([{"kind": "crash", "node": "B", "at": "10s", "for": "10s"}]),
        );
        let runs = run(&m);
        let mut before: BTreeMap<u32, String> = BTreeMap::new();
        let mut seen = 0;
        for (key, a) in &runs {
            let (t, node, _) = a.last().unwrap();
            if *t < 9.9 {
                before.entry(*key).or_insert_with(|| node.clone());
            }
            if a.len() > 1 && before.get(key).map(String::as_str) == Some("B") && a[0].0 > 10.0 {
                // retries 3 with redispatch on the last: B, B, B, then
                // another server (unless B went DOWN meanwhile).
                let on_b = a.iter().take_while(|x| x.1 == "B").count();
                assert!(
                    on_b >= 1 && a[on_b..].iter().all(|x| x.1 != "B"),
                    "{key}: {a:?}"
                );
                if a.len() == 4 {
                    seen += 1;
                }
            }
        }
        assert!(seen > 0, "no request took the three retries on B");
    }
}
