//! The meta group as JetStream's `$JS.API` handlers see it: `impl Cluster for Meta`. Whether
//! this server leads, the assigned streams (server names, not peer ids), placement of a new
//! stream (`placement { cluster, tags }`, then the least-loaded JetStream servers that are
//! online), and proposals of assignment changes.
//!
//! Called by nats-jetstream's `api/clustered.rs` through the [`Cluster`] trait; it knows
//! nothing of how JetStream checks a config or builds an answer.

use std::sync::Arc;

use bytes::Bytes;
use jetstream_api::{errors, ApiError, StreamConfig};
use nats_jetstream::{
    AssignedStream, Cluster, GroupFuture, ProposalFuture, StreamGroup, StreamProposal,
};
use nats_raft::{RaftGroup, RaftGroupError, Role};
use time::OffsetDateTime;

use super::assignments::{ClientInfo, Entry, Group, Operation, StreamRecord};
use super::meta::Meta;
use super::peer;

const NO_SUITABLE_PEERS: &str = "no suitable peers for placement";
/// How long a proposal refused by a meta leader that still leads is made again (see
/// [`propose`]), and how often.
const LEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
const LEASE_RETRY: std::time::Duration = std::time::Duration::from_millis(20);
/// A member counts as online for placement when the leader heard from it this recently (its
/// heartbeat replies come every 500 ms).
const PLACEMENT_WINDOW: std::time::Duration = std::time::Duration::from_secs(4);

fn now_nanos() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp_nanos() as i64
}

impl Meta {
    /// The record with its servers named. Never called with `assignments` locked: naming a
    /// member this server has not heard announce itself reads the meta log's record of it
    /// (`recorded_name` locks `assignments`, which is not reentrant), and `record_members`
    /// takes `known` before `assignments`.
    fn assigned(&self, record: &StreamRecord) -> AssignedStream {
        AssignedStream {
            config: record.config.clone(),
            servers: record
                .group
                .peers
                .iter()
                .map(|peer| match peer::node_id(peer) {
                    Some(node) => self.name_of(node),
                    None => peer.clone(),
                })
                .collect(),
            created: record.created,
        }
    }

    /// The members that can take a stream now: this server and the voters heard from lately.
    pub(super) fn online_peers(&self) -> Vec<String> {
        let status = self.group.status();
        status
            .voters
            .iter()
            .map(|node| peer::peer_of(*node))
            .filter(|peer| {
                *peer == self.own_peer
                    || self
                        .network
                        .last_seen(peer)
                        .is_some_and(|seen| seen.elapsed() < PLACEMENT_WINDOW)
            })
            .collect()
    }
}

/// Proposes `entry`; resolves once it is applied here, or with nats-server's error for a
/// meta group that cannot take it.
///
/// A leader refuses writes as if it were not the leader while no quorum has acknowledged it
/// within its lease: from its election until the first follower answers (hundreds of
/// milliseconds on a loaded machine), or while handing its leadership over. nats-server's
/// leader takes a proposal then and commits it once a quorum answers, so while this server
/// still leads the proposal is made again, for up to [`LEASE_WAIT`]; a leader still refused
/// then is without quorum (10008, as nats-server answers for a leaderless meta group).
pub(super) fn propose(group: Arc<RaftGroup>, entry: Entry) -> ProposalFuture {
    Box::pin(async move {
        let payload = entry.encode();
        let deadline = tokio::time::Instant::now() + LEASE_WAIT;
        loop {
            match group.propose(payload.clone()).await {
                Ok(_) => return Ok(()),
                Err(RaftGroupError::NotLeader { .. }) if group.status().role == Role::Leader => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(errors::CLUSTER_NOT_AVAIL.to_error());
                    }
                    tokio::time::sleep(LEASE_RETRY).await;
                }
                Err(RaftGroupError::NotLeader { .. } | RaftGroupError::Discarded { .. }) => {
                    return Err(errors::CLUSTER_NOT_LEADER.to_error())
                }
                Err(error) => {
                    tracing::warn!("JetStream meta proposal failed: {error}");
                    return Err(errors::CLUSTER_NOT_AVAIL.to_error());
                }
            }
        }
    })
}

/// The meta group as one JetStream account's `$JS.API` requests see it: that account's
/// assignments only (the meta group's state is keyed by account, then stream name).
pub struct AccountMeta {
    pub(super) meta: Arc<Meta>,
    pub(super) account: String,
}

impl Cluster for AccountMeta {
    fn name(&self) -> String {
        self.meta.cluster_name.clone()
    }

    fn account_served(&self) {
        let placed = self
            .meta
            .assignments
            .lock()
            .placed_on(&self.meta.own_peer, Some(&self.account));
        for effect in placed {
            let _ = self.meta.effects.send(effect);
        }
    }

    fn account_stopped(&self) -> GroupFuture<()> {
        let (groups, account) = (self.meta.stream_groups.clone(), self.account.clone());
        Box::pin(async move { groups.stop_account(&account).await })
    }

    fn is_meta_leader(&self) -> bool {
        self.meta.leads()
    }

    fn meta_leader_within(&self, timeout: std::time::Duration) -> GroupFuture<bool> {
        let meta = self.meta.clone();
        Box::pin(async move { meta.leads_within(timeout).await })
    }

    fn is_meta_elected(&self) -> bool {
        self.meta.group.status().role == Role::Leader
    }

    fn meta_unavailable(&self) -> bool {
        self.meta.unavailable()
    }

    fn meta_leader_missing(&self) -> bool {
        self.meta.leader_missing()
    }

    fn meta_view(&self) -> String {
        let status = self.meta.group.status();
        format!(
            "{:?} term {} leader {} led for {:?} leads {}",
            status.role,
            status.term,
            self.meta.leader_name().as_deref().unwrap_or("none"),
            status.led_for,
            self.meta.leads()
        )
    }

    fn meta_leader_seen_within(&self, timeout: std::time::Duration) -> GroupFuture<bool> {
        let meta = self.meta.clone();
        Box::pin(async move { meta.leader_within(timeout).await })
    }

    fn stream(&self, name: &str) -> Option<AssignedStream> {
        // Copied out before naming its servers: see `Meta::assigned`.
        let record = self
            .meta
            .assignments
            .lock()
            .stream(&self.account, name)
            .cloned()?;
        Some(self.meta.assigned(&record))
    }

    fn streams(&self) -> Vec<AssignedStream> {
        // Copied out before naming their servers: see `Meta::assigned`.
        let records: Vec<StreamRecord> = self
            .meta
            .assignments
            .lock()
            .streams(&self.account)
            .into_iter()
            .cloned()
            .collect();
        records
            .iter()
            .map(|record| self.meta.assigned(record))
            .collect()
    }

    fn place(&self, config: &StreamConfig) -> Result<Vec<String>, ApiError> {
        let placement = config.placement.clone().unwrap_or_default();
        if !placement.cluster.is_empty() && placement.cluster != self.meta.cluster_name {
            return Err(errors::CLUSTER_NO_PEERS.with_err(NO_SUITABLE_PEERS));
        }
        // No server of ours carries tags (`server_tags` is not read yet), so none matches.
        if !placement.tags.is_empty() {
            let tags: Vec<String> = placement
                .tags
                .iter()
                .map(|tag| format!("'{tag}'"))
                .collect();
            return Err(errors::CLUSTER_NO_PEERS.with_err(format!(
                "{NO_SUITABLE_PEERS}, tags not matched [{}]",
                tags.join(", ")
            )));
        }
        let replicas = usize::try_from(config.replicas.max(1)).unwrap_or(1);
        let mut candidates = self.meta.online_peers();
        if candidates.len() < replicas {
            return Err(errors::CLUSTER_NO_PEERS.with_err(NO_SUITABLE_PEERS));
        }
        let load = self.meta.assignments.lock().load();
        candidates.sort_by_key(|peer| (load.get(peer).copied().unwrap_or(0), peer.clone()));
        Ok(candidates
            .into_iter()
            .take(replicas)
            .map(|peer| match peer::node_id(&peer) {
                Some(node) => self.meta.name_of(node),
                None => peer,
            })
            .collect())
    }

    fn propose_stream(&self, proposal: StreamProposal) -> ProposalFuture {
        let now = now_nanos();
        let existing = self
            .meta
            .assignments
            .lock()
            .stream(&self.account, &proposal.config.name)
            .cloned();
        let (group, created) = match existing {
            Some(record) => (
                rescaled(&record, &proposal, |name| self.meta.peer_of_name(name)),
                record.created,
            ),
            None => {
                let replicas = proposal.config.replicas.max(1);
                let id = crate::security::identity::new_nuid();
                let suffix = id.get(id.len().saturating_sub(8)..).unwrap_or_default();
                let group = Group {
                    name: format!("S-R{replicas}F-{suffix}"),
                    peers: proposal
                        .servers
                        .iter()
                        .map(|name| self.meta.peer_of_name(name))
                        .collect(),
                    storage: proposal.config.storage,
                    joined: Vec::new(),
                    replicated: false,
                };
                (group, now)
            }
        };
        let entry = Entry::new(Operation::AssignStream {
            stream: Box::new(StreamRecord {
                account: self.account.clone(),
                config: proposal.config,
                group,
                created,
                client: ClientInfo {
                    account: self.account.clone(),
                    server: self.meta.server_name.clone(),
                },
            }),
            change: proposal.change,
            reply: Some(String::from_utf8_lossy(&proposal.reply).into_owned()),
            proposed: now,
        });
        propose(self.meta.group.clone(), entry)
    }

    fn propose_stream_removal(&self, name: &str, reply: Bytes) -> ProposalFuture {
        let entry = Entry::new(Operation::RemoveStream {
            account: self.account.clone(),
            name: name.to_string(),
            reply: Some(String::from_utf8_lossy(&reply).into_owned()),
            proposed: now_nanos(),
        });
        propose(self.meta.group.clone(), entry)
    }

    fn stream_group(&self, name: &str) -> Option<Arc<dyn StreamGroup>> {
        let running: Arc<dyn StreamGroup> = self.meta.stream_groups.get(&self.account, name)?;
        Some(running)
    }

    fn open_stream_group(
        &self,
        name: &str,
        created: i64,
    ) -> GroupFuture<Option<Arc<dyn StreamGroup>>> {
        let record = self
            .meta
            .assignments
            .lock()
            .stream(&self.account, name)
            .cloned()
            .filter(|record| {
                record.created == created
                    && record.runs_group()
                    && record.group.peers.contains(&self.meta.own_peer)
            });
        let groups = self.meta.stream_groups.clone();
        let key = (self.account.clone(), name.to_string());
        Box::pin(async move {
            let record = record?;
            let group: Arc<dyn StreamGroup> = groups
                .open(
                    &key,
                    created,
                    &record.group.name,
                    &record.group.peers,
                    &record.group.joined,
                )
                .await;
            Some(group)
        })
    }

    fn close_stream_group(&self, name: &str, created: i64) -> GroupFuture<()> {
        let groups = self.meta.stream_groups.clone();
        let (account, name) = (self.account.clone(), name.to_string());
        Box::pin(async move { groups.close(&account, &name, created).await })
    }

    fn rescale(&self, name: &str, replicas: usize) -> Result<Vec<String>, ApiError> {
        let (record, load) = {
            let assignments = self.meta.assignments.lock();
            let record = assignments
                .stream(&self.account, name)
                .cloned()
                .ok_or_else(|| errors::STREAM_NOT_FOUND.to_error())?;
            (record, assignments.load())
        };
        let mut peers = record.group.peers.clone();
        if replicas > peers.len() {
            let mut candidates: Vec<String> = self
                .meta
                .online_peers()
                .into_iter()
                .filter(|peer| !peers.contains(peer))
                .collect();
            if peers.len() + candidates.len() < replicas {
                return Err(errors::CLUSTER_NO_PEERS.with_err(NO_SUITABLE_PEERS));
            }
            candidates.sort_by_key(|peer| (load.get(peer).copied().unwrap_or(0), peer.clone()));
            let missing = replicas - peers.len();
            peers.extend(candidates.into_iter().take(missing));
        } else {
            // The stream's leader stays when this server knows it (nats-server keeps it).
            let leader = self
                .meta
                .stream_groups
                .get(&self.account, name)
                .and_then(|stream| stream.raft())
                .and_then(|group| group.status().leader)
                .map(peer::peer_of);
            if let Some(position) =
                leader.and_then(|leader| peers.iter().position(|p| *p == leader))
            {
                let leader = peers.remove(position);
                peers.insert(0, leader);
            }
            peers.truncate(replicas.max(1));
        }
        Ok(peers
            .into_iter()
            .map(|peer| match peer::node_id(&peer) {
                Some(node) => self.meta.name_of(node),
                None => peer,
            })
            .collect())
    }

    fn remove_stream_peer(&self, name: &str, peer: &str) -> ProposalFuture {
        let meta = self.meta.clone();
        let (account, name, peer) = (self.account.clone(), name.to_string(), peer.to_string());
        Box::pin(async move { meta.replace_stream_peer(&account, &name, &peer).await })
    }
}

/// The group of an updated stream: the same, unless the update changed its peers (a rescale,
/// [`Cluster::rescale`]): the peers it names, those gained counted as joining the running group,
/// and the group kept in Raft from then on, whatever its replica count.
fn rescaled(
    record: &StreamRecord,
    proposal: &StreamProposal,
    peer_of_name: impl Fn(&str) -> String,
) -> Group {
    let mut group = record.group.clone();
    let peers: Vec<String> = proposal
        .servers
        .iter()
        .map(|name| peer_of_name(name))
        .collect();
    if proposal.servers.is_empty() || peers == group.peers {
        return group;
    }
    for peer in &peers {
        if !group.peers.contains(peer) && !group.joined.contains(peer) {
            group.joined.push(peer.clone());
        }
    }
    group.joined.retain(|peer| peers.contains(peer));
    if !record.runs_group() {
        // No group ran yet (one replica): named for its new count, as nats-server renames it.
        let suffix = group
            .name
            .rsplit('-')
            .next()
            .unwrap_or_default()
            .to_string();
        group.name = format!("S-R{}F-{suffix}", peers.len());
    }
    group.peers = peers;
    group.replicated = true;
    group
}
