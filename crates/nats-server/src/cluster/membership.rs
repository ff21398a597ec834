//! Membership changes of replicated streams (`$JS.API.STREAM.PEER.REMOVE`, and the re-placement
//! of a removed server's streams): decided by the meta leader, one at a time, as a
//! [`Operation::ReplacePeer`] meta entry (the removed peer's place goes to the least-loaded
//! online server without the stream); carried out by the stream's group.
//!
//! - Every remaining member records the new peers as its group's target; the group's leader
//!   ([`reconcile`]) adds the new server as a learner, waits until it caught up, makes it a
//!   voter, then removes the old one (a leader being removed hands its leadership over first;
//!   the next leader carries on, as it does with a change its predecessor left unfinished).
//! - The new server joins the running group (it never founds it) and is filled from the
//!   group's snapshot and log, replicated consumers included.
//! - The removed server ([`leave`]) waits (bounded) until the group let it go, then stops its
//!   replica and deletes its files, unless the meta group placed the stream on it again.
//!
//! Called by the meta layer's effects task (`meta.rs`) and by a stream group gaining
//! leadership (`stream_group.rs`); knows no stream internals.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use jetstream_api::{errors, ApiError};
use nats_jetstream::JetStream;
use nats_raft::{NodeId, Role};
use parking_lot::Mutex;

use super::assignments::{Assignments, Entry, Operation};
use super::meta::Meta;
use super::peer;
use super::stream_group::{ReplicatedStream, StreamGroups};

/// How long a leader waits for a new member to catch up before it tries again.
const CATCH_UP: Duration = Duration::from_secs(60);
/// A leader stops trying to reach its target membership after this; its next leadership, or
/// the next change of the target, tries again.
const RECONCILE_BOUND: Duration = Duration::from_secs(300);
/// Between two attempts of a step that failed.
const RETRY: Duration = Duration::from_secs(1);
/// How long a removed server waits for its group to let it go before it leaves anyway.
const LEAVE_BOUND: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(100);

impl Meta {
    /// The meta leader's side of a peer removal: replaces the server named `peer_name` among
    /// `account`'s stream `name`'s peers by a free online server; resolves once applied here.
    /// Peer removals are serialised: each one is decided on the state the previous one left.
    pub(super) async fn replace_stream_peer(
        &self,
        account: &str,
        name: &str,
        peer_name: &str,
    ) -> Result<(), ApiError> {
        let _serial = self.membership.lock().await;
        self.replace_peer_of(account, name, &self.peer_of_name(peer_name))
            .await
    }

    /// Replaces peer id `removed` of `account`'s stream `name` (the caller holds
    /// `self.membership`).
    async fn replace_peer_of(
        &self,
        account: &str,
        name: &str,
        removed: &str,
    ) -> Result<(), ApiError> {
        let (record, load) = {
            let assignments = self.assignments.lock();
            let record = assignments
                .stream(account, name)
                .cloned()
                .ok_or_else(|| errors::STREAM_NOT_FOUND.to_error())?;
            (record, assignments.load())
        };
        let removed = removed.to_string();
        if !record.group.peers.contains(&removed) {
            return Err(errors::CLUSTER_PEER_NOT_MEMBER.to_error());
        }
        let added = self
            .online_peers()
            .into_iter()
            .filter(|peer| *peer != removed && !record.group.peers.contains(peer))
            .min_by_key(|peer| (load.get(peer).copied().unwrap_or(0), peer.clone()));
        let Some(added) = added else {
            return Err(errors::PEER_REMAP.to_error());
        };
        let name_of = |peer: &String| {
            peer::node_id(peer).map_or_else(|| peer.clone(), |node| self.name_of(node))
        };
        tracing::info!(
            "JetStream cluster replacing peer {} of stream '{account} > {name}' by {}",
            name_of(&removed),
            name_of(&added)
        );
        let entry = Entry::new(Operation::ReplacePeer {
            account: account.to_string(),
            name: name.to_string(),
            created: record.created,
            removed,
            added: Some(added),
        });
        super::placement::propose(self.group.clone(), entry).await
    }
}

/// `$JS.API.SERVER.REMOVE` (system account, answered by the meta leader): takes a server out
/// of the meta group and re-places every stream it held (consumers ride their stream's group).
/// The request names it by `peer` (server name) or `peer_id`, the id taking precedence.
pub const SERVER_REMOVE_SUBJECT: &str = "$JS.API.SERVER.REMOVE";
const SERVER_REMOVE_TYPE: &str = "io.nats.jetstream.api.v1.meta_server_remove_response";

/// nats-server's `JSApiMetaServerRemoveRequest`.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct ServerRemoveRequest {
    peer: String,
    peer_id: String,
}

fn server_remove_answer(result: Result<(), ApiError>) -> serde_json::Value {
    match result {
        Ok(()) => serde_json::json!({"type": SERVER_REMOVE_TYPE, "success": true}),
        Err(error) => serde_json::json!({
            "type": SERVER_REMOVE_TYPE,
            "error": {"code": error.code, "err_code": error.err_code, "description": error.description},
        }),
    }
}

impl Meta {
    /// Answers a `$JS.API.SERVER.REMOVE` request (leader only; the others stay silent):
    /// success once the server is out of the meta group and its streams' new placements are
    /// applied.
    pub(super) async fn server_remove(&self, message: nats_jetstream::Message) {
        if !self.leads() {
            return;
        }
        let Some(reply) = message.reply.clone() else {
            return;
        };
        let result = self.remove_server(&message.payload).await;
        self.publish(
            &String::from_utf8_lossy(&reply),
            None,
            server_remove_answer(result),
        );
    }

    async fn remove_server(&self, body: &[u8]) -> Result<(), ApiError> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Err(errors::BAD_REQUEST.to_error());
        }
        let request: ServerRemoveRequest = jetstream_api::json::decode_request(body)?;
        let status = self.group.status();
        let member = |node: &NodeId| status.voters.contains(node) || status.learners.contains(node);
        let node = if !request.peer_id.is_empty() {
            peer::node_id(&request.peer_id).filter(member)
        } else {
            self.node_of_name(&request.peer).filter(member)
        }
        .ok_or_else(|| errors::CLUSTER_SERVER_NOT_MEMBER.to_error())?;
        let removed = peer::peer_of(node);
        let _serial = self.membership.lock().await;
        self.removed.lock().insert(removed.clone());
        tracing::info!(
            "JetStream cluster removing server {} from the meta group",
            self.name_of(node)
        );
        self.group.remove_member(node).await.map_err(|error| {
            tracing::warn!("JetStream meta group removal failed: {error}");
            errors::CLUSTER_NOT_AVAIL.to_error()
        })?;
        let held: Vec<(String, String)> = self
            .assignments
            .lock()
            .held_by(&removed)
            .into_iter()
            .collect();
        for (account, name) in held {
            if let Err(error) = self.replace_peer_of(&account, &name, &removed).await {
                tracing::warn!(
                    "JetStream cluster could not replace the removed server for stream '{account} > {name}': {}",
                    error.description
                );
            }
        }
        // A removed server that still runs disables its JetStream ([`on_removal`]).
        self.publish(&removed_subject(&removed), None, serde_json::json!({}));
        Ok(())
    }
}

/// Where the meta leader tells a server it removed: `$RNATS.RAFT.REMOVED.<peer>`.
fn removed_subject(peer: &str) -> String {
    format!("{}.REMOVED.{peer}", super::network::PREFIX)
}

/// nats-server's `JSServerRemovedAdvisory` subject, published in the system account.
const SERVER_REMOVED_ADVISORY: &str = "$JS.EVENT.ADVISORY.SERVER.REMOVED";

/// Disables JetStream on this server once the meta leader removed it from the cluster
/// (`$JS.API.SERVER.REMOVE` of a live server), as nats-server does: the error logged, the
/// `server_removed` advisory, then JetStream stops (its files kept) and the rest of the
/// cluster answers this server's clients.
pub(super) fn on_removal(meta: &Arc<Meta>, server: std::sync::Weak<crate::server::Server>) {
    let subject = removed_subject(&meta.own_peer);
    meta.serve(&subject, move |meta, _message, _| {
        let server = server.clone();
        async move {
            let Some(server) = server.upgrade() else {
                return;
            };
            tracing::error!("JetStream being DISABLED, our server was removed from the cluster");
            meta.publish(
                SERVER_REMOVED_ADVISORY,
                None,
                serde_json::json!({
                    "type": "io.nats.jetstream.advisory.v1.server_removed",
                    "id": crate::security::identity::new_nuid(),
                    "timestamp": go_compat::time_text::rfc3339_nano(time::OffsetDateTime::now_utc()),
                    "server": server.server_name,
                    "server_id": server.server_id,
                    "cluster": meta.cluster_name,
                }),
            );
            // Not on this task: stopping JetStream stops the meta group serving it.
            tokio::spawn(async move { server.stop_jetstream().await });
        }
    });
}

/// Brings the group's voters to its target (leader only): the missing members first (learner,
/// caught up, voter), then the ones no longer assigned. Returns when done, when this server no
/// longer leads, or after [`RECONCILE_BOUND`].
pub(super) async fn reconcile(stream: Arc<ReplicatedStream>) {
    let _serial = stream.reconciling.lock().await;
    let deadline = tokio::time::Instant::now() + RECONCILE_BOUND;
    while tokio::time::Instant::now() < deadline {
        let Some(group) = stream.raft() else {
            return;
        };
        let status = group.status();
        if status.role != Role::Leader {
            return;
        }
        let target: BTreeSet<NodeId> = stream.target.lock().iter().copied().collect();
        let voters: BTreeSet<NodeId> = status.voters.iter().copied().collect();
        if target.is_empty() {
            return;
        }
        let step = if let Some(&node) = target.difference(&voters).next() {
            match tokio::time::timeout(CATCH_UP, group.add_member(node)).await {
                Ok(added) => added.map_err(|error| error.to_string()),
                Err(_) => Err(format!(
                    "{} not caught up in {CATCH_UP:?}",
                    peer::peer_of(node)
                )),
            }
        } else if let Some(&node) = voters.difference(&target).next() {
            if node == stream.node {
                // Removed itself: a caught-up member that stays takes over and finishes.
                let successor = status
                    .followers
                    .iter()
                    .filter(|follower| target.contains(&follower.node))
                    .filter(|follower| voters.contains(&follower.node))
                    .min_by_key(|follower| follower.lag)
                    .map(|follower| follower.node);
                match successor {
                    Some(successor) => {
                        stream.quiet_handover(&group, successor).await;
                        return;
                    }
                    None => Err("no member to hand the leadership to".to_string()),
                }
            } else {
                group
                    .remove_member(node)
                    .await
                    .map_err(|error| error.to_string())
            }
        } else {
            return;
        };
        if let Err(error) = step {
            tracing::debug!("stream group membership change: {error}");
            tokio::time::sleep(RETRY).await;
        }
    }
}

/// What this server's effects task and its [`leave`] tasks share: the applied assignments,
/// this server's peer id, and the lock under which a stream is placed here or dropped (so a
/// stream placed here again is never dropped by an earlier removal's late [`leave`]).
#[derive(Clone)]
pub(super) struct LocalPlacement {
    pub assignments: Arc<Mutex<Assignments>>,
    pub own_peer: String,
    pub serial: Arc<tokio::sync::Mutex<()>>,
}

/// This server was removed from `account`'s stream `name` (incarnation `created`): its group
/// stops campaigning (the group's leader stops talking to a removed member, which would
/// otherwise campaign alone, and placed back depose the leader with its higher term), hands its
/// leadership over, waits until the group no longer counts it (bounded), then drops its
/// replica, unless the meta group placed the stream here again meanwhile (then it campaigns
/// again).
pub(super) async fn leave(
    jetstream: JetStream,
    stream_groups: Arc<StreamGroups>,
    local: LocalPlacement,
    (account, name, created): (String, String, i64),
) {
    let running = stream_groups
        .get(&account, &name)
        .filter(|stream| stream.created == created);
    let placed_again = || {
        local
            .assignments
            .lock()
            .stream(&account, &name)
            .is_some_and(|record| {
                record.created == created && record.group.peers.contains(&local.own_peer)
            })
    };
    if let Some(stream) = &running {
        stream.set_campaigning(false);
        // The group's new target (without this server): while this server leads, its own
        // reconciliation brings the newcomer in and then hands the leadership over, one step
        // at a time (a handover racing a membership change in flight trips openraft).
        let peers = local
            .assignments
            .lock()
            .stream(&account, &name)
            .filter(|record| record.created == created)
            .map(|record| record.group.peers.clone());
        if let Some(peers) = peers {
            stream_groups.set_peers(&account, &name, created, &peers);
        }
        let deadline = tokio::time::Instant::now() + LEAVE_BOUND;
        while tokio::time::Instant::now() < deadline {
            let Some(group) = stream.raft() else {
                break;
            };
            if !group.status().voters.contains(&stream.node) || placed_again() {
                break;
            }
            tokio::time::sleep(POLL).await;
        }
    }
    let _serial = local.serial.lock().await;
    if placed_again() {
        if let Some(stream) = &running {
            stream.set_campaigning(true);
        }
        return;
    }
    tracing::info!("JetStream removing stream '{account} > {name}' from this server");
    jetstream
        .drop_stream_replica(&account, &name, created)
        .await;
}
