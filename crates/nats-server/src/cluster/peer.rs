//! Peer identities: nats-server's 8-character peer id of a server name (the `peer` fields of
//! `/jsz` and `/raftz`), the same hash of a name and a store incarnation (`incarnation.rs`),
//! and the Raft node id we derive from a peer id (the same 8 bytes read as a number, so the two
//! convert both ways without a table).

use sha2::{Digest, Sha256};

/// The 62 characters a peer id is written with.
const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// Characters in a peer id.
pub const PEER_LENGTH: usize = 8;

/// nats-server's peer id of `server_name`: the first 8 bytes of its SHA-256, each taken modulo
/// 62 into [`DIGITS`]. Stable across restarts as long as the name is.
pub fn peer_id(server_name: &str) -> String {
    let digest = Sha256::digest(server_name.as_bytes());
    digest[..PEER_LENGTH]
        .iter()
        .map(|byte| char::from(DIGITS[usize::from(*byte % 62)]))
        .collect()
}

/// The peer id of `server_name` in its `incarnation` (see `incarnation.rs`): nats-server's
/// [`peer_id`] for incarnation 0 (a store that predates incarnations), otherwise the same hash
/// of the name and the incarnation, so a wiped server never reuses the identity whose votes
/// and log it forgot. (A space cannot occur in a server name.)
pub fn incarnation_peer_id(server_name: &str, incarnation: u64) -> String {
    if incarnation == 0 {
        return peer_id(server_name);
    }
    peer_id(&format!("{server_name} {incarnation}"))
}

/// The Raft node id of a peer id (its 8 ASCII bytes, big-endian). `None` for anything that is
/// not a peer id.
pub fn node_id(peer: &str) -> Option<u64> {
    let bytes: [u8; PEER_LENGTH] = peer.as_bytes().try_into().ok()?;
    if !bytes.iter().all(|byte| DIGITS.contains(byte)) {
        return None;
    }
    Some(u64::from_be_bytes(bytes))
}

/// The peer id a node id was made from.
pub fn peer_of(node: u64) -> String {
    String::from_utf8_lossy(&node.to_be_bytes()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_ids_match_nats_server() {
        // Read from a 3-node nats-server 2.15.1 cluster's /jsz (server names n0, n1, n2).
        assert_eq!(peer_id("n0"), "6DVFpukC");
        assert_eq!(peer_id("n1"), "fjFyEjc1");
        assert_eq!(peer_id("n2"), "44jzkV9D");
    }

    #[test]
    fn node_ids_round_trip() {
        let peer = peer_id("server-a");
        let node = node_id(&peer).expect("a peer id");
        assert_eq!(peer_of(node), peer);
        assert_eq!(node_id("short"), None);
        assert_eq!(node_id("abc.defg"), None);
    }

    #[test]
    fn incarnation_zero_is_the_name_hash_and_others_differ() {
        assert_eq!(incarnation_peer_id("n0", 0), "6DVFpukC");
        let next = incarnation_peer_id("n0", 7);
        assert_ne!(next, "6DVFpukC");
        assert_eq!(next.len(), PEER_LENGTH);
        assert!(node_id(&next).is_some());
    }
}
