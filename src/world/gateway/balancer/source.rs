//! HAProxy 2.6's `balance source` (`get_server_sh`, src/backend.c) with
//! `hash-type map-based` (`map_get_server_hash` over `recalc_server_map`,
//! src/lb_map.c) or `hash-type consistent` (`chash_get_server_hash`,
//! src/lb_chash.c). A request's client key `k` stands for its client's IPv4
//! address [`client_addr`]`(k)`; the hash is that address read as a
//! big-endian integer (`ntohl`), through `full_hash` with `avalanche`, and 0
//! when one server is left (`tot_used == 1`). The `hash-type` function
//! (`sdbm`, `djb2`, …) is not used by source hashing.
//!
//! Which servers take part is decided at each pick from the request's
//! replica's view: a server is usable when it is not `down` and every policy
//! lets it through (HAProxy rebuilds its map, or takes the server's points
//! off the ring, when a server goes DOWN or comes back: `srv_willbe_usable`).
//! With at least one usable active server only the active ones count; else
//! the first usable backup (`lbprm.fbck`: `option allbackups` is not
//! modelled) takes every request.
//!
//! - Map-based: `map.srv[hash % tot_weight]` over the usable servers' map, so
//!   a server going down changes the modulus and moves most clients. The
//!   retry after a redispatch does not avoid the previous server (the map
//!   lookup has no `avoid`).
//! - Consistent: the nearest point of a usable server on either side of the
//!   hash (`dp <= dn` takes the one before), each server having
//!   `weight × 16` points `full_hash(puid × 4096 + j)` (`chash_init_server_tree`,
//!   `puid` its position among all servers, from 1); a redispatch skips the
//!   previous server's points forward (`avoid`). Two points with one key
//!   (a 32-bit collision) are ordered by server here; HAProxy's tree keeps
//!   them in insertion order.
//!
//! HAProxy queues a request on a server at its `maxconn`; hcsim has no
//! server queues, so such a request is answered 503 at once, as a request
//! finding every server full is.

use super::keys::client_addr;
use crate::spec::{Model, SourceBalancer};
use crate::world::NodeId;

/// `__full_hash` (include/haproxy/intops.h): Bob Jenkins' 32-bit integer
/// avalanche, times the prime 3221225473 "to spread values all around the
/// tree".
pub(crate) fn full_hash(mut a: u32) -> u32 {
    a = a.wrapping_add(0x7ed5_5d16).wrapping_add(a << 12);
    a = (a ^ 0xc761_c23c) ^ (a >> 19);
    a = a.wrapping_add(0x1656_67b1).wrapping_add(a << 5);
    a = a.wrapping_add(0xd3a2_646c) ^ (a << 9);
    a = a.wrapping_add(0xfd70_46c5).wrapping_add(a << 3);
    a = (a ^ 0xb55a_4f09) ^ (a >> 16);
    a.wrapping_mul(3_221_225_473)
}

/// `recalc_server_map`: `tot` entries, each the usable server of the set
/// whose score, raised by its weight at each entry, is the highest
/// (`(wscore + tot) / tot`, the first declared on a tie), then lowered by
/// `tot`. `servers` are the set's usable servers in declaration order with
/// their effective weights.
pub(crate) fn server_map(servers: &[(NodeId, u32)], tot: u32) -> Vec<NodeId> {
    let tot_i = tot as i64;
    let mut score = vec![0i64; servers.len()];
    let mut map = Vec::with_capacity(tot as usize);
    for _ in 0..tot {
        if tot == 1 {
            map.push(servers[0].0);
            break;
        }
        let mut best: Option<(usize, i64)> = None;
        for (i, &(_, w)) in servers.iter().enumerate() {
            score[i] += w as i64;
            let v = (score[i] + tot_i) / tot_i;
            if best.is_none_or(|(_, max)| v > max) {
                best = Some((i, v));
            }
        }
        let (b, _) = best.expect("a usable server");
        map.push(servers[b].0);
        score[b] -= tot_i;
    }
    map
}

/// The hash of client key `key`: its address as `ntohl` reads it, through
/// `full_hash` with `avalanche`.
pub(crate) fn source_hash(key: u32, avalanche: bool) -> u32 {
    let h = u32::from_be_bytes(client_addr(key));
    if avalanche { full_hash(h) } else { h }
}

/// `balance source`'s configuration and the maps built so far.
pub(crate) struct SourceHash {
    consistent: bool,
    avalanche: bool,
    /// By node: a backup server.
    backup: Vec<bool>,
    /// By node: `next_eweight`, the map's weight (`uweight / gcd` of all
    /// servers' weights, `init_server_map`).
    map_weight: Vec<u32>,
    /// The active servers' points (`consistent`), sorted by key then node.
    points: Vec<(u32, NodeId)>,
    /// The map with every server up (the keys' homes, map-based).
    home_map: Vec<NodeId>,
    /// By scope: the usable set the map was built for, and the map.
    maps: Vec<(Vec<bool>, Vec<NodeId>)>,
    /// Room for the usable set of a pick.
    pub(super) usable: Vec<bool>,
}

impl SourceHash {
    pub(crate) fn new(model: &Model, b: &SourceBalancer) -> SourceHash {
        let weights: Vec<u32> = model.nodes.iter().map(|n| n.weight).collect();
        let gcd = weights.iter().fold(0u32, |g, &w| gcd(g, w)).max(1);
        let mut points = Vec::new();
        if b.consistent {
            for (i, n) in model.nodes.iter().enumerate() {
                if n.backup {
                    continue;
                }
                let puid = i as u32 + 1;
                for j in 0..n.weight * 16 {
                    points.push((full_hash(puid * 4096 + j), NodeId(i as u32)));
                }
            }
            points.sort();
        }
        let actives: Vec<(NodeId, u32)> = (model.nodes.iter().enumerate())
            .filter(|(_, n)| !n.backup)
            .map(|(i, n)| (NodeId(i as u32), n.weight / gcd))
            .collect();
        let home_map = server_map(&actives, actives.iter().map(|s| s.1).sum());
        SourceHash {
            home_map,
            consistent: b.consistent,
            avalanche: b.avalanche,
            backup: model.nodes.iter().map(|n| n.backup).collect(),
            map_weight: weights.iter().map(|w| w / gcd).collect(),
            points,
            maps: Vec::new(),
            usable: Vec::new(),
        }
    }

    /// The server of client `key` when `usable` (by node) are the usable
    /// servers, avoiding `avoid` on the ring (`get_server_sh`).
    pub(crate) fn pick(
        &mut self,
        scope: usize,
        usable: &[bool],
        key: u32,
        avoid: Option<NodeId>,
    ) -> Option<NodeId> {
        self.pick_addr(scope, usable, u32::from_be_bytes(client_addr(key)), avoid)
    }

    /// [`pick`](Self::pick) for the IPv4 address `addr` (as `ntohl` reads it).
    pub(crate) fn pick_addr(
        &mut self,
        scope: usize,
        usable: &[bool],
        addr: u32,
        avoid: Option<NodeId>,
    ) -> Option<NodeId> {
        let act = (0..usable.len())
            .filter(|&i| usable[i] && !self.backup[i])
            .count();
        if act == 0 {
            // `lbprm.fbck`: the first usable backup takes it all.
            let i = (0..usable.len()).find(|&i| usable[i] && self.backup[i])?;
            return Some(NodeId(i as u32));
        }
        let hash = match act {
            1 => 0,
            _ if self.avalanche => full_hash(addr),
            _ => addr,
        };
        if self.consistent {
            return self.ring_pick(usable, hash, avoid);
        }
        if self.maps.len() <= scope {
            self.maps.resize_with(scope + 1, Default::default);
        }
        let (built_for, map) = &mut self.maps[scope];
        if built_for.as_slice() != usable {
            let servers: Vec<(NodeId, u32)> = (0..usable.len())
                .filter(|&i| usable[i] && !self.backup[i])
                .map(|i| (NodeId(i as u32), self.map_weight[i]))
                .collect();
            let tot = servers.iter().map(|s| s.1).sum();
            *map = server_map(&servers, tot);
            built_for.clear();
            built_for.extend_from_slice(usable);
        }
        Some(map[hash as usize % map.len()])
    }

    /// `chash_get_server_hash` over the usable servers' points: the nearest
    /// at or after the hash (wrapping) and the one before it (wrapping);
    /// `hash - prev <= next - hash` takes the one before. Then, while that
    /// server is `avoid`, the next point forward, round the ring at most
    /// once more (`avoid` itself if it is alone).
    fn ring_pick(&self, usable: &[bool], hash: u32, avoid: Option<NodeId>) -> Option<NodeId> {
        let p = &self.points;
        let n = p.len();
        let ok = |i: usize| usable[p[i % n].1.index()];
        let start = p.partition_point(|q| q.0 < hash);
        let next = (start..start + n).find(|&i| ok(i))? % n;
        let prev = (1..=n).map(|d| (next + n - d) % n).find(|&i| ok(i))?;
        let dp = hash.wrapping_sub(p[prev].0);
        let dn = p[next].0.wrapping_sub(hash);
        let at = if dp <= dn { prev } else { next };
        let node = p[at].1;
        if Some(node) != avoid {
            return Some(node);
        }
        Some(
            (at + 1..at + n)
                .filter(|&i| ok(i))
                .map(|i| p[i % n].1)
                .find(|&s| Some(s) != avoid)
                .unwrap_or(node),
        )
    }

    /// The server of client `key` with every server usable: its home.
    pub(crate) fn home(&self, key: u32) -> NodeId {
        let act = self.backup.iter().filter(|b| !**b).count();
        let hash = if act == 1 {
            0
        } else {
            source_hash(key, self.avalanche)
        };
        if self.consistent {
            let all = vec![true; self.backup.len()];
            return self.ring_pick(&all, hash, None).expect("an active server");
        }
        self.home_map[hash as usize % self.home_map.len()]
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `__full_hash` by hand for 0 and 1 (each step of intops.h in turn).
    #[test]
    fn full_hash_is_haproxys() {
        fn by_steps(a: u32) -> u32 {
            let mut a = a as u64 & 0xffff_ffff;
            let m = 0xffff_ffffu64;
            a = ((a + 0x7ed55d16) + (a << 12)) & m;
            a = ((a ^ 0xc761c23c) ^ (a >> 19)) & m;
            a = ((a + 0x165667b1) + (a << 5)) & m;
            a = ((a + 0xd3a2646c) ^ (a << 9)) & m;
            a = ((a + 0xfd7046c5) + (a << 3)) & m;
            a = ((a ^ 0xb55a4f09) ^ (a >> 16)) & m;
            ((a * 3221225473) & m) as u32
        }
        for a in [0, 1, 4096, 4097, 0x7f00_0001, u32::MAX] {
            assert_eq!(full_hash(a), by_steps(a), "{a:#x}");
        }
    }

    /// `recalc_server_map` by hand: weights 1, 2, 1 (tot 4). Entry 0:
    /// scores 1, 2, 1 → v = 1, 1, 1: the first (scores -3, 2, 1). Entry 1:
    /// -2, 4, 2 → v = 0, 2, 1: the second (-2, 0, 2). Entry 2: -1, 2, 3 →
    /// 0, 1, 1: the second (-1, -2, 3). Entry 3: 0, 0, 4 → 1, 1, 2: the third.
    #[test]
    fn the_map_follows_recalc_server_map() {
        let s = [(NodeId(0), 1), (NodeId(1), 2), (NodeId(2), 1)];
        assert_eq!(
            server_map(&s, 4),
            vec![NodeId(0), NodeId(1), NodeId(1), NodeId(2)]
        );
        assert_eq!(server_map(&s[..1], 1), vec![NodeId(0)]);
    }

    fn source(consistent: bool, avalanche: bool) -> SourceHash {
        let nodes: Vec<_> = (0..5)
            .map(|i| json!({"name": format!("127.0.0.1:{}", 19400 + i), "weight": 1 + (i == 1) as u32}))
            .collect();
        let doc = json!({
            "name": "source", "duration": "1s",
            "clients": {"kind": "open", "rate_per_s": 10.0, "keys": 64},
            "gateway": {"flavor": "haproxy", "balancer": {"source": {"consistent": consistent, "avalanche": avalanche}}},
            "nodes": nodes,
        });
        let m = Model::from_document(&doc, std::path::Path::new("source.json")).unwrap();
        match &m.gateway.balancer {
            crate::spec::Balancer::Source(b) => SourceHash::new(&m, b),
            _ => unreachable!(),
        }
    }

    /// The 64 source addresses of `calibration/source_hash.py`.
    fn addresses() -> Vec<u32> {
        (0..64u32)
            .map(|k| {
                u32::from_be_bytes([
                    127,
                    ((k * 37) % 256) as u8,
                    ((k * 11 + 3) % 256) as u8,
                    (1 + (k * 5) % 254) as u8,
                ])
            })
            .collect()
    }

    /// Measured on HAProxy 2.6.12 (`calibration/source_hash.py`): backend
    /// `balance source`, servers s0..s4 of weights 1, 2, 1, 1, 1 (puid 1..5),
    /// the server chosen for each of the 64 source addresses, with every
    /// server up and with s2 `disabled`.
    const MEASURED: [(&str, bool, bool, bool, &str); 8] = [
        (
            "map-based",
            false,
            false,
            false,
            "4321104043211010432111111043432110404321101043232320432121104323",
        ),
        (
            "map-based down",
            false,
            false,
            true,
            "1410314141031414103141414103031410303141030314141411410303141030",
        ),
        (
            "map-based sdbm avalanche",
            false,
            true,
            false,
            "2110411010302401341103342333101412023242114222311140124032344131",
        ),
        (
            "map-based sdbm avalanche down",
            false,
            true,
            true,
            "3104303141340314014013144341111303010110113313111111310044311441",
        ),
        (
            "consistent",
            true,
            true,
            false,
            "2034131402101131344134210303012102130331313144441431011113012141",
        ),
        (
            "consistent down",
            true,
            true,
            true,
            "0034131401101131344134110303010101130331313144441431011113011141",
        ),
        (
            "consistent sdbm",
            true,
            false,
            false,
            "4444444444444444444444444444444444444444444444444444444444444444",
        ),
        (
            "consistent sdbm down",
            true,
            false,
            true,
            "4444444444444444444444444444444444444444444444444444444444444444",
        ),
    ];

    #[test]
    fn real_haproxy_source_maps_agree() {
        for (name, consistent, avalanche, down, expected) in MEASURED {
            let mut s = source(consistent, avalanche);
            let usable: Vec<bool> = (0..5).map(|i| !(down && i == 2)).collect();
            let got: String = addresses()
                .iter()
                .map(|&a| {
                    let n = s.pick_addr(0, &usable, a, None).unwrap();
                    char::from(b'0' + n.0 as u8)
                })
                .collect();
            assert_eq!(got, expected, "hash-type {name}");
        }
    }

    /// Map-based: a server going down changes the modulus, so most clients
    /// move (here 49 of 64 addresses, s2's 11 among them); consistent: only
    /// the down server's clients move, each to the nearest point left.
    #[test]
    fn a_down_server_moves_whom_the_hash_type_says() {
        let moved = |e: &[(&str, bool, bool, bool, &str)]| {
            let (up, down) = (e[0].4.as_bytes(), e[1].4.as_bytes());
            (0..64).filter(|&i| up[i] != down[i]).count()
        };
        assert_eq!(moved(&MEASURED[0..2]), 49);
        let (up, down) = (MEASURED[4].4.as_bytes(), MEASURED[5].4.as_bytes());
        for i in 0..64 {
            assert_eq!(up[i] != down[i], up[i] == b'2', "address {i}");
        }
    }

    /// No usable active server: the first usable backup (`lbprm.fbck`)
    /// takes every client; one usable active server takes them all.
    #[test]
    fn backups_take_over_only_when_no_active_server_is_usable() {
        let doc = json!({
            "name": "source", "duration": "1s",
            "clients": {"kind": "open", "rate_per_s": 10.0, "keys": 64},
            "gateway": {"flavor": "haproxy", "balancer": {"source": {"consistent": false}}},
            "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c", "backup": true}, {"name": "d", "backup": true}],
        });
        let m = Model::from_document(&doc, std::path::Path::new("source.json")).unwrap();
        let crate::spec::Balancer::Source(b) = &m.gateway.balancer else {
            unreachable!()
        };
        for consistent in [false, true] {
            let b = SourceBalancer {
                consistent,
                ..b.clone()
            };
            let mut s = SourceHash::new(&m, &b);
            for a in addresses() {
                let pick = |s: &mut SourceHash, u: [bool; 4]| s.pick_addr(0, &u, a, None);
                assert_eq!(pick(&mut s, [false, false, true, true]), Some(NodeId(2)));
                assert_eq!(pick(&mut s, [false, false, false, true]), Some(NodeId(3)));
                assert_eq!(pick(&mut s, [false, true, true, true]), Some(NodeId(1)));
                assert_eq!(pick(&mut s, [false; 4]), None);
            }
        }
    }

    /// A redispatch avoids the previous server on the ring (its points are
    /// skipped forward), not in the map.
    #[test]
    fn a_redispatch_avoids_the_last_server_on_the_ring_only() {
        let all = [true; 5];
        let mut map = source(false, false);
        let mut ring = source(true, true);
        for a in addresses() {
            let first = map.pick_addr(0, &all, a, None);
            assert_eq!(map.pick_addr(0, &all, a, first), first);
            let first = ring.pick_addr(0, &all, a, None).unwrap();
            let again = ring.pick_addr(0, &all, a, Some(first)).unwrap();
            assert_ne!(again, first);
        }
        // One usable server: the hash is 0 and it takes everything, avoided or not.
        let one = [false, true, false, false, false];
        assert_eq!(ring.pick_addr(0, &one, 7, Some(NodeId(1))), Some(NodeId(1)));
        assert_eq!(map.pick_addr(0, &one, 7, None), Some(NodeId(1)));
        assert_eq!(map.pick_addr(0, &[false; 5], 7, None), None);
    }
}
