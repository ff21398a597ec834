//! Clustered JetStream's control plane: the Raft transport over routes ([`network`]), peer ids
//! from server names and store incarnations ([`peer`], [`incarnation`]) and the meta group of all JetStream-enabled rnats servers
//! ([`meta`]) with its stream assignments ([`assignments`]) and the `$JS.API` seam it serves
//! JetStream through ([`placement`]: which server leads, where streams are, placing new ones),
//! and the Raft groups of replicated streams ([`stream_group`]); each account's JetStream usage
//! summed over the servers ([`usage`]).
//!
//! Called by `server::run` at start-up (after JetStream started, before the routes connect) and
//! at shutdown; read by monitoring (`/jsz` `meta_cluster`, `/raftz`). Raft messages travel as
//! internal request/reply traffic of the system account's router, so this module knows nothing
//! of sockets or the route protocol; it knows no stream internals either (nats-jetstream's).

pub mod assignments;
mod features;
mod incarnation;
mod membership;
pub mod meta;
mod meta_admin;
mod meta_leadership;
pub mod network;
pub mod peer;
mod placement;
pub mod stream_group;
mod usage;

pub use meta::Meta;

use std::path::Path;
use std::sync::Arc;

use crate::server::Server;

/// nats-server's start-up error for a clustered JetStream without routes.
pub const NO_ROUTES: &str =
    "JetStream cluster requires configured routes or solicited leafnode for the system account";

/// Starts the meta group when this server runs JetStream in a cluster under `options` (at
/// start-up, or JetStream turned on by a reload: the server then joins the running group as a
/// new member, or as the member it was with the same store); `None` otherwise. `store_root` is
/// `<store_dir>/jetstream`.
pub async fn start(
    server: &Arc<Server>,
    options: &crate::config::Options,
    store_root: &Path,
) -> Result<Option<Arc<Meta>>, String> {
    let Some(cluster) = &options.cluster else {
        return Ok(None);
    };
    if !options.jetstream.enabled {
        return Ok(None);
    }
    // A configured route to our own cluster port is ourselves (configs often list every node).
    let own_port = server
        .route_address
        .get()
        .map(|address| address.port())
        .or_else(|| u16::try_from(cluster.port).ok().filter(|port| *port > 0));
    let others = cluster
        .routes
        .iter()
        .filter(|route| {
            let local = matches!(route.host.as_str(), "127.0.0.1" | "localhost" | "::1")
                || route.host == cluster.host;
            !(local && Some(route.port) == own_port)
        })
        .count();
    if cluster.routes.is_empty() {
        return Err(NO_ROUTES.to_string());
    }
    let system = server.accounts.system().clone();
    let directory = store_root
        .join(system.name.as_ref())
        .join("_js_")
        .join(meta::META_GROUP);
    let cluster_name = server
        .routes()
        .map(|routes| routes.cluster_name())
        .unwrap_or_default();
    let Some(jetstream) = server.jetstream.get() else {
        return Ok(None);
    };
    let incarnation = incarnation::load_or_create(store_root, &directory)?;
    let options = meta::MetaOptions {
        server_name: server.server_name.clone(),
        cluster_name,
        expected_size: others + 1,
        incarnation,
        directory,
    };
    let own_peer = peer::incarnation_peer_id(&options.server_name, incarnation);
    let meta = Meta::start(options, system, jetstream.clone()).await?;
    usage::spawn(server, &meta, jetstream, own_peer);
    membership::on_removal(&meta, Arc::downgrade(server));
    tokio::spawn(adjust_boot_size(
        Arc::downgrade(&meta),
        Arc::downgrade(server),
    ));
    Ok(Some(meta))
}

/// nats-server's cold-boot check (`AdjustBootClusterSize`): once this server has routes to at
/// least the servers the meta group expects and some of them announced no JetStream in their
/// route INFO, the group is founded by the JetStream servers alone (`Adjusting JetStream
/// expected peer set size to 2 from original 3`). Ends once the group formed, or when this meta
/// group stopped.
async fn adjust_boot_size(meta: std::sync::Weak<Meta>, server: std::sync::Weak<Server>) {
    let every = std::time::Duration::from_secs(1);
    // The first check a period after the start: the server's meta slot is set by then.
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        ticks.tick().await;
        let (Some(meta), Some(server)) = (meta.upgrade(), server.upgrade()) else {
            return;
        };
        let current = server
            .meta
            .get()
            .is_some_and(|running| Arc::ptr_eq(&running, &meta));
        if !current || !meta.group().status().voters.is_empty() {
            return;
        }
        let Some(routes) = server.routes() else {
            return;
        };
        let mut peers = std::collections::BTreeMap::new();
        for link in routes.links() {
            let info = link.info.lock();
            let jetstream = peers.entry(info.server_id.clone()).or_insert(false);
            *jetstream |= info.jetstream;
        }
        let total = peers.len() + 1;
        let with_jetstream = 1 + peers.values().filter(|jetstream| **jetstream).count();
        let expected = meta.expected_size();
        if with_jetstream < total && total >= expected && with_jetstream != expected {
            tracing::info!(
                "Adjusting JetStream expected peer set size to {with_jetstream} from original {expected}"
            );
            meta.set_expected_size(with_jetstream);
        }
    }
}

/// The member a leader hands its leadership to on a LEADER.STEPDOWN naming no server: the voter
/// least behind ([`stream_group::handover_target`], a caught-up one first), else any other
/// voter. nats-server's raft leader steps down whatever its followers' state (to a peer heard
/// from lately, else to no one) and answers success; ours refused with 10005 "no replacement
/// peer connected" when no follower was at lag 0 (a leader just elected that has not heard from
/// them yet; under a steady publish load). One that is behind takes over once it has caught up
/// (openraft's transfer waits for its log), and until an election the old leader takes no
/// proposals. `None`: no other voter.
pub(crate) fn stepdown_successor(
    status: &nats_raft::GroupStatus,
    own: nats_raft::NodeId,
) -> Option<nats_raft::NodeId> {
    stream_group::handover_target(status, own)
        .or_else(|| status.voters.iter().copied().find(|node| *node != own))
}

#[cfg(test)]
mod tests {
    use super::stepdown_successor;
    use nats_raft::{FollowerProgress, GroupStatus, Role};

    fn leader_of(followers: &[(u64, Option<u64>, u64)]) -> GroupStatus {
        GroupStatus {
            role: Role::Leader,
            term: 3,
            leader: Some(1),
            voters: [1, 2, 3].into(),
            learners: [4].into(),
            last_log_index: Some(40),
            committed: Some(40),
            applied: Some(40),
            followers: followers
                .iter()
                .map(|&(node, matched, lag)| FollowerProgress { node, matched, lag })
                .collect(),
            protected_until: None,
            error: None,
            quorum_acked: None,
            led_for: None,
        }
    }

    #[test]
    fn a_caught_up_voter_first() {
        let status = leader_of(&[(4, Some(40), 0), (2, Some(30), 10), (3, Some(40), 0)]);
        assert_eq!(stepdown_successor(&status, 1), Some(3));
    }

    #[test]
    fn without_one_the_voter_closest_to_it() {
        // A leader just elected has heard from no follower yet, or its followers lag.
        let status = leader_of(&[(2, None, 40), (3, Some(35), 5), (4, Some(40), 0)]);
        assert_eq!(stepdown_successor(&status, 1), Some(3));
        let status = leader_of(&[]);
        assert_eq!(stepdown_successor(&status, 1), Some(2));
        let mut alone = leader_of(&[]);
        alone.voters = [1].into();
        assert_eq!(stepdown_successor(&alone, 1), None);
    }
}
