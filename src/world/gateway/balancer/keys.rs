//! Client keys as the hash balancers see them (`clients.keys`): each key is
//! one client, with one IPv4 address.

/// The IPv4 address of client key `key` (below 2^24): `10.B.C.D` with
/// `B = (key >> 8) & 255`, `C = key & 255` and `D = (key >> 16) XOR C`.
/// `ip_hash` reads the first three octets, so keys below 65,536 are distinct
/// /24 networks, and keys 65,536 apart share one (and so a peer); the fourth
/// octet varies with the key too, as HAProxy's `balance source` hashes the
/// whole address (a constant last octet would make `hash % weight` constant).
pub(crate) fn client_addr(key: u32) -> [u8; 4] {
    [
        10,
        (key >> 8) as u8,
        key as u8,
        (key >> 16) as u8 ^ key as u8,
    ]
}
