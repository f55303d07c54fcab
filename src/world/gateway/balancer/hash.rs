//! nginx's hash balancers, exact to the 1.22 source:
//! `ngx_http_upstream_ip_hash_module.c` (`ip_hash`) and
//! `ngx_http_upstream_hash_module.c` (`hash KEY` and `hash KEY consistent`).
//! A request's client key (`clients.keys`) stands for its client: key `k` is
//! the IPv4 address [`client_addr`], and the text of a `hash` key is built
//! from it ([`KeyText`]). These balancers pick by direct scans (a candidate
//! is tested as `direct_eligible` tests every peer: tried, `down`, ejected by
//! a policy — `max_fails`/`fail_timeout` included — or at `max_conns`); after
//! 20 unsuccessful candidates in a request they fall back to
//! `ngx_http_upstream_get_round_robin_peer`, as the source does. HAProxy's
//! `balance source` (`source.rs`) is dispatched from here too
//! ([`World::pick_source`]), and every hash balancer counts the answers
//! served off their key's home (`summary.json`'s `keys`).

use super::direct::direct_eligible;
pub(crate) use super::keys::client_addr;
use crate::policy::Now;
use crate::spec::{Balancer, Model};
use crate::world::{NodeId, World};

/// `ngx_crc32_table256`: CRC-32/IEEE, reflected polynomial 0xEDB88320.
const CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// `ngx_crc32_update`: `crc` is the running value (`ngx_crc32_init` sets
/// it to 0xffffffff, `ngx_crc32_final` inverts it).
pub(crate) fn crc32_update(mut crc: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        crc = CRC_TABLE[((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// `ngx_crc32_long`: init, update, final.
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    !crc32_update(!0, bytes)
}

/// One piece of a `hash` key.
#[derive(Clone, Debug, PartialEq)]
enum Part {
    Text(Vec<u8>),
    /// `$remote_addr`: the client's address as text, `10.B.C.D`.
    Addr,
    /// `$binary_remote_addr`: its 4 bytes.
    BinaryAddr,
    /// `$request_uri`, `$uri`, `$document_uri`: `/k<key>`.
    Uri,
    /// Any other variable: `k<key>`.
    Other,
}

/// The key of `hash KEY`, compiled as nginx's complex values are: text and
/// variables (`$name`, `${name}`), each variable standing for the request's
/// client key.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KeyText(Vec<Part>);

impl KeyText {
    pub(crate) fn parse(key: &str) -> KeyText {
        let b = key.as_bytes();
        let mut parts = Vec::new();
        let mut text = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let braced = b[i] == b'$' && b.get(i + 1) == Some(&b'{');
            let start = i + 1 + braced as usize;
            let mut end = start;
            while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
                end += 1;
            }
            let closed = !braced || b.get(end) == Some(&b'}');
            if b[i] != b'$' || end == start || !closed {
                text.push(b[i]);
                i += 1;
                continue;
            }
            if !text.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut text)));
            }
            parts.push(match &key[start..end] {
                "remote_addr" => Part::Addr,
                "binary_remote_addr" => Part::BinaryAddr,
                "request_uri" | "uri" | "document_uri" => Part::Uri,
                _ => Part::Other,
            });
            i = end + braced as usize;
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        KeyText(parts)
    }

    /// The key's text for client key `key`, into `out` (cleared first).
    pub(crate) fn write(&self, key: u32, out: &mut Vec<u8>) {
        use std::io::Write;
        out.clear();
        let a = client_addr(key);
        for p in &self.0 {
            let _ = match p {
                Part::Text(t) => out.write_all(t),
                Part::Addr => write!(out, "{}.{}.{}.{}", a[0], a[1], a[2], a[3]),
                Part::BinaryAddr => out.write_all(&a),
                Part::Uri => write!(out, "/k{key}"),
                Part::Other => write!(out, "k{key}"),
            };
        }
    }
}

/// The points of `hash KEY consistent` (`ngx_http_upstream_init_chash`),
/// sorted by hash, each naming its server by position in the primary set.
#[derive(Clone, Debug)]
pub(crate) struct Chash {
    points: Vec<(u32, u32)>,
}

/// `crc32(HOST \0 PORT)` as `ngx_http_upstream_init_chash` splits a server
/// name: after `unix:` all is the host; else a `:` followed by digits only,
/// at the end, starts the port; else the whole name is the host.
fn base_hash(server: &str) -> u32 {
    let b = server.as_bytes();
    let (host, port): (&[u8], &[u8]) = if b.len() >= 5 && b[..5].eq_ignore_ascii_case(b"unix:") {
        (&b[5..], &[])
    } else {
        let digits = b.iter().rev().take_while(|c| c.is_ascii_digit()).count();
        let colon = b.len() - digits;
        if colon > 0 && b[colon - 1] == b':' {
            (&b[..colon - 1], &b[colon..])
        } else {
            (b, &[])
        }
    };
    let c = crc32_update(!0, host);
    let c = crc32_update(c, &[0]);
    crc32_update(c, port)
}

impl Chash {
    /// `weight × 160` points per server, in the servers' order: each point
    /// `crc32(HOST \0 PORT PREV_HASH)` with `PREV_HASH` the server's previous
    /// point as 4 little-endian bytes (0 for the first); sorted, duplicates
    /// dropped keeping the first. (`ngx_qsort` is not stable: with two
    /// servers on one hash the kept one is unspecified; here the earlier.)
    pub(crate) fn new(servers: &[(&str, u32)]) -> Chash {
        let mut points = Vec::new();
        for (pos, &(name, weight)) in servers.iter().enumerate() {
            let base = base_hash(name);
            let mut prev = 0u32;
            for _ in 0..weight as u64 * 160 {
                let h = !crc32_update(base, &prev.to_le_bytes());
                points.push((h, pos as u32));
                prev = h;
            }
        }
        points.sort_by_key(|p| p.0);
        points.dedup_by_key(|p| p.0);
        Chash { points }
    }

    /// `ngx_http_upstream_find_chash_point`: the first point whose hash is
    /// at least `hash` (the number of points if none).
    pub(crate) fn find(&self, hash: u32) -> u32 {
        let (mut i, mut j) = (0usize, self.points.len());
        while i < j {
            let k = (i + j) / 2;
            match hash.cmp(&self.points[k].0) {
                std::cmp::Ordering::Greater => i = k + 1,
                std::cmp::Ordering::Less => j = k,
                std::cmp::Ordering::Equal => return k as u32,
            }
        }
        i as u32
    }

    /// The server of point `i % number` (`point[hp->hash % points->number]`).
    pub(crate) fn server_at(&self, i: u32) -> u32 {
        self.points[i as usize % self.points.len()].1
    }
}

/// A request's client key and its hash balancer's state.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HashState {
    /// The client key (`clients.keys`).
    pub(super) key: u32,
    /// `iphp->hash` (`ip_hash`), `hp->hash` (`hash`: the running sum;
    /// `consistent`: the point).
    hash: u32,
    /// Unsuccessful candidates so far (`tries`; round-robin after 20).
    tries: u32,
    /// `hash`'s `hp->rehash`.
    rehash: u32,
}

/// The hash balancers' part of the gateway, boxed: a model without them
/// keeps the gateway's hot fields as close together as before.
#[derive(Default)]
pub(crate) struct HashParts {
    /// `ip_hash` or `hash`: the balancer's key and points.
    pub(crate) hashing: Option<Hashing>,
    /// By request slot, with `clients.keys`: the key and the balancer's state.
    pub(crate) state: Vec<HashState>,
    /// Room for a request's key text.
    pub(crate) key_buf: Vec<u8>,
    /// Requests answered by a node in the measurement window, and of those
    /// the ones answered by another node than their key's home.
    pub(crate) answered: u64,
    pub(crate) off_home: u64,
    /// HAProxy's cookie persistence (`cookie.rs`), with `gateway.haproxy.cookie`.
    pub(crate) cookie: Option<Box<super::cookie::Cookies>>,
}

impl HashParts {
    /// `summary.keys`: the answers and those off their key's home.
    pub(crate) fn summary(&self) -> Option<crate::metrics::KeysSummary> {
        self.hashing.as_ref()?;
        let share = if self.answered == 0 {
            0.0
        } else {
            crate::stats::round6(self.off_home as f64 / self.answered as f64)
        };
        Some(crate::metrics::KeysSummary {
            answered: self.answered,
            off_home: self.off_home,
            off_home_share: share,
        })
    }
}

/// Which hash balancer, and what it hashes.
pub(crate) enum Hashing {
    Ip,
    Hash(KeyText),
    Chash(KeyText, Chash),
    /// HAProxy's `balance source` (`source.rs`), boxed: its maps are large.
    Source(Box<super::source::SourceHash>),
}

impl Hashing {
    /// The hash balancer of `model`, if it has one.
    pub(crate) fn of(model: &Model) -> Option<Hashing> {
        match &model.gateway.balancer {
            Balancer::IpHash => Some(Hashing::Ip),
            Balancer::Hash(h) if !h.consistent => Some(Hashing::Hash(KeyText::parse(&h.key))),
            Balancer::Hash(h) => {
                let servers: Vec<(&str, u32)> = model
                    .nodes
                    .iter()
                    .filter(|n| !n.backup)
                    .map(|n| (n.name.as_str(), n.weight))
                    .collect();
                Some(Hashing::Chash(KeyText::parse(&h.key), Chash::new(&servers)))
            }
            Balancer::Source(s) => Some(Hashing::Source(Box::new(super::source::SourceHash::new(
                model, s,
            )))),
            _ => None,
        }
    }

    /// The request's starting hash for client key `key`: 89 for `ip_hash`
    /// (`ngx_http_upstream_init_ip_hash_peer`), 0 for `hash`
    /// (`ngx_http_upstream_init_hash_peer`), the point of `crc32(key)` for
    /// `consistent` (`ngx_http_upstream_init_chash_peer`).
    pub(crate) fn initial(&self, key: u32, buf: &mut Vec<u8>) -> u32 {
        match self {
            Hashing::Ip => 89,
            Hashing::Hash(_) | Hashing::Source(_) => 0,
            Hashing::Chash(text, points) => {
                text.write(key, buf);
                points.find(crc32(buf))
            }
        }
    }
}

/// `ip_hash`'s rehash: `hash = (hash * 113 + octet) % 6271` over the first
/// three octets.
pub(crate) fn ip_rehash(mut hash: u32, addr: [u8; 4]) -> u32 {
    for &o in &addr[..3] {
        hash = (hash * 113 + o as u32) % 6271;
    }
    hash
}

/// `hash`'s step `rehash` (0 first): `(crc32([REHASH] KEY) >> 16) & 0x7fff`,
/// `REHASH` in decimal, omitted at 0.
pub(crate) fn key_step(rehash: u32, key: &[u8]) -> u32 {
    let mut c = !0u32;
    if rehash > 0 {
        c = crc32_update(c, rehash.to_string().as_bytes());
    }
    c = !crc32_update(c, key);
    (c >> 16) & 0x7fff
}

impl World<'_> {
    /// The request's client key and the hash state its balancer starts from
    /// (called only with `clients.keys`).
    #[cold]
    pub(in crate::world::gateway) fn begin_hash(&mut self, slot: u32) {
        use rand::RngExt;
        let Some(n) = self.gw.keys else { return };
        let key = self.rng.keys.random_range(0..n);
        let gw = &mut self.gw;
        let hash = match &gw.hash.hashing {
            Some(h) => h.initial(key, &mut gw.hash.key_buf),
            None => 0,
        };
        let slot = slot as usize;
        if gw.hash.state.len() <= slot {
            gw.hash.state.resize(slot + 1, HashState::default());
        }
        gw.hash.state[slot] = HashState {
            key,
            hash,
            tries: 0,
            rehash: 0,
        };
    }

    /// The primary peer at weight offset `w` (0 ≤ w < total weight), in
    /// configuration order, `down` peers included: nginx's
    /// `while (w >= peer->weight) { w -= peer->weight; peer = peer->next; }`.
    fn peer_at(&self, w: i64) -> NodeId {
        let ranges = &self.gw.ranges;
        ranges[ranges.partition_point(|&(acc, _)| acc <= w)].1
    }

    /// The home of client key `key`: the primary peer the balancer picks
    /// first with every peer up (nginx's first candidate; the only peer of
    /// a single-server upstream, which nginx balances by round-robin).
    fn home_of(&mut self, key: u32) -> NodeId {
        if self.gw.primary.len() == 1 {
            return self.gw.primary[0];
        }
        let total = self.gw.total_weight;
        let gw = &mut self.gw;
        let buf = &mut gw.hash.key_buf;
        match &gw.hash.hashing {
            Some(Hashing::Ip) => {
                let w = ip_rehash(89, client_addr(key)) as i64 % total;
                self.peer_at(w)
            }
            Some(Hashing::Hash(text)) => {
                text.write(key, buf);
                let w = key_step(0, buf) as i64 % total;
                self.peer_at(w)
            }
            Some(Hashing::Chash(text, points)) => {
                text.write(key, buf);
                let i = points.server_at(points.find(crc32(buf)));
                gw.primary[i as usize]
            }
            Some(Hashing::Source(src)) => src.home(key),
            None => unreachable!("a home without a hash balancer"),
        }
    }

    /// A request of the measurement window was answered by `node`: count
    /// it, and whether `node` is not its key's home.
    #[cold]
    pub(in crate::world::gateway) fn count_home(&mut self, slot: u32, node: NodeId) {
        let key = self.gw.hash.state[slot as usize].key;
        let home = self.home_of(key);
        let h = &mut self.gw.hash;
        h.answered += 1;
        h.off_home += (home != node) as u64;
    }

    fn hash_candidate_ok(&self, slot: u32, node: NodeId, now: Now) -> bool {
        let r = &self.gw.reqs[slot as usize];
        direct_eligible(&self.gw, self.replica_policies(r.scope), r, node, now)
    }

    /// One pick of the hash balancer (the single-server path is taken
    /// before: nginx's `peers->single` goes to round-robin).
    pub(in crate::world::gateway) fn direct_pick_hash(
        &mut self,
        slot: u32,
        now: Now,
    ) -> Option<NodeId> {
        if let Some(Hashing::Source(_)) = self.gw.hash.hashing {
            return self.pick_source(slot, now);
        }
        if self.gw.hash.state[slot as usize].tries > 20 {
            return self.direct_pick_round_robin(slot, now);
        }
        let picked = match self.gw.hash.hashing {
            Some(Hashing::Ip) => self.pick_ip_hash(slot, now),
            Some(Hashing::Hash(_)) => self.pick_key_hash(slot, now),
            Some(Hashing::Chash(..)) => self.pick_chash(slot, now),
            Some(Hashing::Source(_)) | None => unreachable!("a hash pick without its balancer"),
        };
        match picked {
            Some(node) => {
                self.gw.reqs[slot as usize].mark_tried(node);
                Some(node)
            }
            None => self.direct_pick_round_robin(slot, now),
        }
    }

    /// `ngx_http_upstream_get_ip_hash_peer`: rehash the three octets from
    /// the request's hash, `w = hash % total_weight`, the weighted walk; a
    /// candidate that is tried, `down`, failed or at `max_conns` rehashes;
    /// the 21st miss falls back to round-robin (`None`). The hash is kept
    /// for the request's next attempt.
    fn pick_ip_hash(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        let h = self.gw.hash.state[slot as usize];
        let (addr, mut hash) = (client_addr(h.key), h.hash);
        let total = self.gw.total_weight;
        loop {
            hash = ip_rehash(hash, addr);
            let node = self.peer_at(hash as i64 % total);
            if self.hash_candidate_ok(slot, node, now) {
                self.gw.hash.state[slot as usize].hash = hash;
                return Some(node);
            }
            let h = &mut self.gw.hash.state[slot as usize];
            h.tries += 1;
            if h.tries > 20 {
                return None;
            }
        }
    }

    /// `ngx_http_upstream_get_hash_peer`: `hp->hash += (crc32([REHASH]
    /// KEY) >> 16) & 0x7fff` (32 bits, wrapping), `rehash` counting every
    /// step of the request, then the weighted walk as `ip_hash`'s.
    fn pick_key_hash(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        let mut buf = std::mem::take(&mut self.gw.hash.key_buf);
        if let Some(Hashing::Hash(text)) = &self.gw.hash.hashing {
            text.write(self.gw.hash.state[slot as usize].key, &mut buf);
        }
        let total = self.gw.total_weight;
        let picked = loop {
            let h = &mut self.gw.hash.state[slot as usize];
            h.hash = h.hash.wrapping_add(key_step(h.rehash, &buf));
            h.rehash += 1;
            let w = h.hash as i64 % total;
            let node = self.peer_at(w);
            if self.hash_candidate_ok(slot, node, now) {
                break Some(node);
            }
            let h = &mut self.gw.hash.state[slot as usize];
            h.tries += 1;
            if h.tries > 20 {
                break None;
            }
        };
        self.gw.hash.key_buf = buf;
        picked
    }

    /// `ngx_http_upstream_get_chash_peer`: the server of point `hash %
    /// number`; if it is unavailable, the next point (`hp->hash++`), the 21st
    /// miss falling back to round-robin. The chosen peer's effective weight
    /// recovers by one, as the source's smooth-WRR step over the peers of
    /// that server name does (its current weight is unchanged: each node is
    /// one server name here).
    fn pick_chash(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        loop {
            let Some(Hashing::Chash(_, points)) = &self.gw.hash.hashing else {
                unreachable!()
            };
            let node =
                self.gw.primary[points.server_at(self.gw.hash.state[slot as usize].hash) as usize];
            if self.hash_candidate_ok(slot, node, now) {
                let k = self.gw.k(self.gw.reqs[slot as usize].scope, node);
                if self.gw.ew[k] < self.gw.weight[node.index()] {
                    self.gw.ew[k] += 1;
                }
                return Some(node);
            }
            let h = &mut self.gw.hash.state[slot as usize];
            h.hash = h.hash.wrapping_add(1);
            h.tries += 1;
            if h.tries > 20 {
                return None;
            }
        }
    }
}

impl World<'_> {
    /// `balance source`: the server of the request's client among the
    /// servers usable now, or `None` (503) when there is none or it is at
    /// its `maxconn`. The backup set is handled within (`None` in it).
    pub(in crate::world::gateway) fn pick_source(&mut self, slot: u32, now: Now) -> Option<NodeId> {
        let r = &self.gw.reqs[slot as usize];
        if r.in_backup {
            return None;
        }
        let (scope, avoid) = (r.scope, r.last_node);
        let key = self.gw.hash.state[slot as usize].key;
        let mut usable = match self.gw.hash.hashing.as_mut() {
            Some(Hashing::Source(src)) => std::mem::take(&mut src.usable),
            _ => unreachable!("a source pick without its balancer"),
        };
        let (policies, local) = self.replica_policies(scope);
        let gw = &self.gw;
        usable.clear();
        usable.extend((0..gw.n).map(|i| {
            let node = NodeId(i as u32);
            !gw.down[i] && policies.iter().all(|p| p.is_routable(local, node, now))
        }));
        let gw = &mut self.gw;
        let Some(Hashing::Source(src)) = gw.hash.hashing.as_mut() else {
            unreachable!()
        };
        let picked = src.pick(scope as usize, &usable, key, avoid);
        src.usable = usable;
        let node = picked?;
        let k = gw.k(scope, node);
        (!super::at_max_conns(gw.max_conns[node.index()], gw.conns[k])).then_some(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CRC-32 bit by bit, without a table: an independent reference.
    fn crc32_bitwise(bytes: &[u8]) -> u32 {
        let mut c = 0xFFFF_FFFFu32;
        for &b in bytes {
            c ^= b as u32;
            for _ in 0..8 {
                c = if c & 1 == 1 {
                    (c >> 1) ^ 0xEDB8_8320
                } else {
                    c >> 1
                };
            }
        }
        !c
    }

    #[test]
    fn crc32_is_ngx_crc32_long() {
        assert_eq!(
            crc32(b"123456789"),
            0xCBF4_3926,
            "the CRC-32/IEEE check value"
        );
        assert_eq!(crc32(b""), 0);
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
        for s in ["/k1", "10.0.1.0", "a\0b", "backend.example:8080"] {
            assert_eq!(crc32(s.as_bytes()), crc32_bitwise(s.as_bytes()), "{s}");
        }
        // Init, several updates, final: the same as one pass.
        let c = crc32_update(crc32_update(!0, b"1234"), b"56789");
        assert_eq!(!c, 0xCBF4_3926);
    }

    #[test]
    fn client_keys_are_ipv4_addresses_and_key_texts() {
        assert_eq!(client_addr(0), [10, 0, 0, 0]);
        assert_eq!(client_addr(0x01_02_03), [10, 2, 3, 1 ^ 3]);
        assert_eq!(client_addr(0x05_00_07), [10, 0, 7, 5 ^ 7]);
        let mut buf = Vec::new();
        KeyText::parse("$remote_addr").write(0x01_02_03, &mut buf);
        assert_eq!(buf, b"10.2.3.2");
        KeyText::parse("$request_uri").write(42, &mut buf);
        assert_eq!(buf, b"/k42");
        KeyText::parse("$scheme://${host}$uri?x").write(7, &mut buf);
        assert_eq!(buf, b"k7://k7/k7?x");
        KeyText::parse("$binary_remote_addr").write(258, &mut buf);
        assert_eq!(buf, [10, 1, 2, 2]);
        KeyText::parse("fixed$").write(1, &mut buf);
        assert_eq!(buf, b"fixed$");
    }

    /// `ngx_http_upstream_get_ip_hash_peer`'s arithmetic by hand: from 89,
    /// `(h * 113 + octet) % 6271` over 10, 0, 5 (key 5 is 10.0.5.5):
    /// 89 * 113 + 10 = 10067 % 6271 = 3796; 3796 * 113 + 0 = 428948 % 6271 = 2520;
    /// 2520 * 113 + 5 = 284765 % 6271 = 2570. With three peers of weight 1,
    /// 2570 % 3 = 2: the third peer. Its rehash (the second attempt):
    /// 2570 * 113 + 10 = 290420 % 6271 = 1954; 1954 * 113 = 220802 % 6271 = 1317;
    /// 1317 * 113 + 5 = 148826 % 6271 = 4593; 4593 % 3 = 0: the first.
    #[test]
    fn ip_hash_follows_the_source_arithmetic() {
        let h = ip_rehash(89, client_addr(5));
        assert_eq!(h, 2570);
        assert_eq!(h % 3, 2);
        let h2 = ip_rehash(h, client_addr(5));
        assert_eq!(h2, 4593);
        assert_eq!(h2 % 3, 0);
        // The fourth octet is not read: keys 65,536 apart hash alike.
        assert_eq!(ip_rehash(89, client_addr(5 + 65_536)), 2570);
    }

    /// `ngx_http_upstream_get_hash_peer`: the first step hashes the key
    /// alone, the next ones "1" + key, "2" + key…
    #[test]
    fn hash_steps_follow_the_source() {
        let first = (crc32_bitwise(b"/k1") >> 16) & 0x7fff;
        assert_eq!(key_step(0, b"/k1"), first);
        let second = (crc32_bitwise(b"1/k1") >> 16) & 0x7fff;
        assert_eq!(key_step(1, b"/k1"), second);
        assert_eq!(
            key_step(12, b"/k1"),
            (crc32_bitwise(b"12/k1") >> 16) & 0x7fff
        );
        // CRC-32 of "123456789" is 0xCBF43926: (0xCBF4 & 0x7fff) = 0x4BF4.
        assert_eq!(key_step(0, b"123456789"), 0x4BF4);
    }

    /// An independent ketama ring: every point computed bit by bit from
    /// `HOST \0 PORT PREV_HASH`, sorted; the first point at or after the key's
    /// CRC (wrapping) names the server.
    fn ring(servers: &[(&str, &str, u32)]) -> Vec<(u32, usize)> {
        let mut v = Vec::new();
        for (i, &(host, port, weight)) in servers.iter().enumerate() {
            let mut prev = 0u32;
            for _ in 0..weight * 160 {
                let mut bytes = host.as_bytes().to_vec();
                bytes.push(0);
                bytes.extend_from_slice(port.as_bytes());
                bytes.extend_from_slice(&prev.to_le_bytes());
                prev = crc32_bitwise(&bytes);
                v.push((prev, i));
            }
        }
        v.sort();
        v
    }

    fn owner(ring: &[(u32, usize)], key: &[u8]) -> usize {
        let h = crc32_bitwise(key);
        ring.iter().find(|p| p.0 >= h).unwrap_or(&ring[0]).1
    }

    #[test]
    fn chash_points_and_lookups_follow_the_source() {
        let servers = [
            ("10.0.0.1:8080", 1),
            ("10.0.0.2:8080", 2),
            ("backend.example", 1),
        ];
        let c = Chash::new(&servers);
        let reference = ring(&[
            ("10.0.0.1", "8080", 1),
            ("10.0.0.2", "8080", 2),
            ("backend.example", "", 1),
        ]);
        assert_eq!(c.points.len(), 4 * 160, "no duplicate points here");
        let hashes: Vec<u32> = c.points.iter().map(|p| p.0).collect();
        let ref_hashes: Vec<u32> = reference.iter().map(|p| p.0).collect();
        assert_eq!(hashes, ref_hashes);
        let mut counts = [0; 3];
        for k in 0..2000u32 {
            let key = format!("/k{k}");
            let i = c.find(crc32(key.as_bytes()));
            let got = c.server_at(i) as usize;
            assert_eq!(got, owner(&reference, key.as_bytes()), "{key}");
            counts[got] += 1;
        }
        // The weight-2 server holds about half of the ring.
        assert!(counts[1] > counts[0] && counts[1] > counts[2], "{counts:?}");
    }

    #[test]
    fn server_names_split_as_init_chash_does() {
        let h = |b: &[u8]| !crc32_update(!0, b);
        assert_eq!(!base_hash("10.0.0.1:80"), h(b"10.0.0.1\x0080"));
        assert_eq!(!base_hash("example.com"), h(b"example.com\x00"));
        assert_eq!(!base_hash("unix:/tmp/s:1"), h(b"/tmp/s:1\x00"));
        assert_eq!(!base_hash("[::1]:443"), h(b"[::1]\x00443"));
        assert_eq!(!base_hash("a:b"), h(b"a:b\x00"));
    }

    #[test]
    fn find_chash_point_is_the_first_at_or_above() {
        let c = Chash {
            points: vec![(10, 0), (20, 1), (30, 2)],
        };
        assert_eq!(c.find(5), 0);
        assert_eq!(c.find(10), 0);
        assert_eq!(c.find(11), 1);
        assert_eq!(c.find(30), 2);
        assert_eq!(c.find(31), 3);
        assert_eq!(c.server_at(3), 0, "past the last point: the first");
    }

    /// Measured on nginx 1.22.1 (`calibration/source_hash.py`): upstream
    /// servers `127.0.0.1:19400`…`19404` of weights 1, 2, 1, 1, 1, clients
    /// from 64 loopback addresses, the server chosen for each with every
    /// server up and with the third `down`.
    #[test]
    fn real_nginx_ip_hash_and_consistent_hash_agree() {
        const MEASURED: [(&str, bool, &str); 4] = [
            (
                "ip_hash",
                false,
                "4102031131414220213144114142202131441420210313114314102003131411",
            ),
            (
                "ip_hash",
                true,
                "4101031131414310113144114144301131441440310313114314100003131411",
            ),
            (
                "chash",
                false,
                "1122114104322114111221131114331014101440431322311100102001200414",
            ),
            (
                "chash",
                true,
                "1110114104300114111311131114331014101440431333311100100001100414",
            ),
        ];
        let names: Vec<String> = (0..5).map(|i| format!("127.0.0.1:{}", 19400 + i)).collect();
        let servers: Vec<(&str, u32)> = (0..5)
            .map(|i| (names[i].as_str(), 1 + (i == 1) as u32))
            .collect();
        let ring = Chash::new(&servers);
        // The weighted walk over weights 1, 2, 1, 1, 1.
        let walk = |w: u32| [0, 1, 1, 2, 3, 4][(w % 6) as usize];
        for (balancer, down, expected) in MEASURED {
            let usable = |n: u32| !(down && n == 2);
            let got: String = (0..64u32)
                .map(|k| {
                    let addr = [
                        127,
                        (k * 37 % 256) as u8,
                        ((k * 11 + 3) % 256) as u8,
                        (1 + k * 5 % 254) as u8,
                    ];
                    let n = if balancer == "ip_hash" {
                        let mut h = 89;
                        loop {
                            h = ip_rehash(h, addr);
                            if usable(walk(h)) {
                                break walk(h);
                            }
                        }
                    } else {
                        let text = format!("{}.{}.{}.{}", addr[0], addr[1], addr[2], addr[3]);
                        let i = ring.find(crc32(text.as_bytes()));
                        (0..)
                            .map(|j| ring.server_at(i + j))
                            .find(|&n| usable(n))
                            .unwrap()
                    };
                    char::from(b'0' + n as u8)
                })
                .collect();
            assert_eq!(got, expected, "{balancer}, down: {down}");
        }
    }

    // Whole runs: the request with id i (1, 2…) draws the i-th key of the
    // keys stream; the trace gives each attempt's node.

    use crate::world::streams::Stream;
    use rand::RngExt;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;

    const KEYS: u32 = 300;
    const NODES: [&str; 5] = [
        "10.1.0.1:80",
        "10.1.0.2:80",
        "10.1.0.3:80",
        "10.1.0.4:80",
        "10.1.0.5:80",
    ];

    fn model(balancer: Value, faults: Value) -> Model {
        let nodes: Vec<Value> = NODES
            .iter()
            .enumerate()
            .map(|(i, n)| json!({"name": n, "weight": 1 + (i == 1) as u32}))
            .collect();
        let doc = json!({
            "name": "hashing", "duration": "30s", "seed": 3,
            "clients": {"kind": "open", "rate_per_s": 300.0, "keys": KEYS},
            "gateway": {"balancer": balancer},
            "policy": {"kind": "max_fails", "max_fails": 1, "fail_timeout": "5s"},
            "nodes": nodes, "faults": faults,
        });
        Model::from_document(&doc, std::path::Path::new("hashing.json")).unwrap()
    }

    /// Each request's client key and its attempts' nodes, in order.
    fn run(model: &Model) -> Vec<(u32, Vec<(f64, String)>)> {
        let mut attempts: BTreeMap<u64, Vec<(f64, String)>> = BTreeMap::new();
        let mut sink = |l: &crate::world::TraceLine| {
            attempts
                .entry(l.request)
                .or_default()
                .push((l.t_s, l.node.clone()))
        };
        let w = World::new(model, model.seed, Some(&mut sink));
        w.run();
        let mut keys = Stream::Keys.of(model.seed);
        let last = *attempts.keys().last().unwrap();
        let drawn: Vec<u32> = (0..last).map(|_| keys.random_range(0..KEYS)).collect();
        attempts
            .into_iter()
            .map(|(id, a)| (drawn[id as usize - 1], a))
            .collect()
    }

    /// The home node of every key, from the functions above.
    fn homes(h: &Hashing) -> Vec<String> {
        (0..KEYS).map(|k| candidates(h, k).swap_remove(0)).collect()
    }

    #[test]
    fn every_request_goes_to_its_keys_home_without_faults() {
        for balancer in [
            json!("ip_hash"),
            json!({"hash": {"key": "$request_uri"}}),
            json!({"hash": {"key": "$remote_addr", "consistent": true}}),
        ] {
            let m = model(balancer.clone(), json!([]));
            let home = homes(&Hashing::of(&m).unwrap());
            let runs = run(&m);
            assert!(runs.len() > 8000, "{balancer}: {} requests", runs.len());
            for (key, a) in &runs {
                assert_eq!(a.len(), 1, "{balancer}: key {key}");
                assert_eq!(a[0].1, home[*key as usize], "{balancer}: key {key}");
            }
            let used: std::collections::BTreeSet<&String> = home.iter().collect();
            assert_eq!(
                used.len(),
                NODES.len(),
                "{balancer}: every node is someone's home"
            );
        }
    }

    /// `summary.keys`: no answer is off its key's home without faults; with
    /// a crash, exactly the answers of the crashed node's keys given by
    /// another node are (ejected, `max_fails=1`, for 5 s at a time).
    #[test]
    fn off_home_counts_the_answers_a_crash_moved() {
        for balancer in [
            json!("ip_hash"),
            json!({"hash": {"key": "$remote_addr"}}),
            json!({"hash": {"key": "$request_uri", "consistent": true}}),
        ] {
            let m = model(balancer.clone(), json!([]));
            let k = World::new(&m, m.seed, None).run().keys.unwrap();
            assert!(k.answered > 8000, "{balancer}: {k:?}");
            assert_eq!(k.off_home, 0, "{balancer}");
            let crashed = NODES[2];
            let m = model(
                balancer.clone(),
                json!([{"kind": "crash", "node": crashed, "at": "10s", "for": "10s"}]),
            );
            let home = homes(&Hashing::of(&m).unwrap());
            let moved = run(&m)
                .iter()
                .filter(|(key, a)| {
                    let last = &a.last().unwrap().1;
                    home[*key as usize] == crashed && last != crashed
                })
                .count() as u64;
            let k = World::new(&m, m.seed, None).run().keys.unwrap();
            assert_eq!(k.off_home, moved, "{balancer}: {k:?}");
            assert!(moved > 100, "{balancer}: {moved}");
        }
    }

    /// The nodes a request of client `key` tries in order when every one
    /// is available but those it already tried: nginx's sequence of
    /// candidates (ip_hash: rehash; hash: the next step's sum; consistent:
    /// the next point), from the functions above.
    fn candidates(h: &Hashing, key: u32) -> Vec<String> {
        let mut buf = Vec::new();
        let at = |w: u32| homes_at(w);
        match h {
            Hashing::Ip => {
                let mut hash = 89;
                (0..21)
                    .map(|_| {
                        hash = ip_rehash(hash, client_addr(key));
                        at(hash)
                    })
                    .collect()
            }
            Hashing::Hash(t) => {
                t.write(key, &mut buf);
                let mut sum = 0u32;
                (0..21)
                    .map(|r| {
                        sum += key_step(r, &buf);
                        at(sum)
                    })
                    .collect()
            }
            Hashing::Chash(t, c) => {
                t.write(key, &mut buf);
                let i = c.find(crc32(&buf));
                (0..21)
                    .map(|j| NODES[c.server_at(i + j) as usize].to_string())
                    .collect()
            }
            Hashing::Source(_) => unreachable!("nginx's balancers only"),
        }
    }

    /// The node at weight offset `w % 6` (weights 1, 2, 1, 1, 1).
    fn homes_at(w: u32) -> String {
        let mut w = w % 6;
        for (i, n) in NODES.iter().enumerate() {
            let weight = 1 + (i == 1) as u32;
            if w < weight {
                return n.to_string();
            }
            w -= weight;
        }
        unreachable!()
    }

    /// A node that crashes and is ejected (`max_fails=1`) moves its own
    /// clients only, each to its next candidate: the requests that found it
    /// ejected go there first, and the one that failed on it retries there
    /// (the hash state is the request's). Under every hash balancer.
    #[test]
    fn a_crashed_node_moves_only_its_own_keys_to_their_next_candidates() {
        let crashed = NODES[2];
        for balancer in [
            json!("ip_hash"),
            json!({"hash": {"key": "$request_uri"}}),
            json!({"hash": {"key": "$request_uri", "consistent": true}}),
        ] {
            let m = model(
                balancer.clone(),
                json!([{"kind": "crash", "node": crashed, "at": "10s", "for": "10s"}]),
            );
            let h = Hashing::of(&m).unwrap();
            let seq: Vec<Vec<String>> = (0..KEYS).map(|k| candidates(&h, k)).collect();
            let next = |k: usize| {
                seq[k]
                    .iter()
                    .find(|n| *n != crashed)
                    .expect("a candidate within 21")
                    .clone()
            };
            let (mut moved, mut failed_over) = (0, 0);
            for (key, a) in run(&m) {
                let (t, first) = &a[0];
                let k = key as usize;
                if seq[k][0] != crashed {
                    assert_eq!(a.len(), 1, "{balancer}: key {key} at {t}: {a:?}");
                    assert_eq!(*first, seq[k][0], "{balancer}: key {key} at {t} moved");
                } else if *first != crashed {
                    assert_eq!(*first, next(k), "{balancer}: key {key} at {t}");
                    assert!(
                        (10.0..26.0).contains(t),
                        "{balancer}: key {key} moved at {t}"
                    );
                    moved += 1;
                } else if a.len() > 1 {
                    assert_eq!(a.len(), 2, "{balancer}: key {key} at {t}: {a:?}");
                    assert_eq!(a[1].1, next(k), "{balancer}: key {key} at {t}");
                    failed_over += 1;
                }
            }
            assert!(
                moved > 100 && failed_over > 0,
                "{balancer}: {moved} moved, {failed_over} failed over"
            );
        }
    }
}
