//! The meta group's state: which streams exist in the cluster, with their config and the peers
//! they are placed on ([`Assignments`]), changed only by applying committed [`Entry`]s, in log
//! order, identically on every member; snapshotted and restored as versioned JSON.
//!
//! Applying an entry also says what this server must do about it ([`Effect`]): create, update
//! or remove a stream it holds. The meta group's state machine (`meta.rs`) hands those effects
//! to a task that calls JetStream; this file knows no Raft, no routes and no stream internals.

use std::collections::BTreeMap;
use std::io;

use bytes::Bytes;
use jetstream_api::{StorageType, StreamConfig};
use nats_jetstream::{StreamAssignment, StreamChange};
use serde::{Deserialize, Serialize};

/// The version of entries and snapshots written now.
pub const VERSION: u32 = 1;
/// A request whose entry is applied later than this after it was proposed gets no answer (the
/// entry is being replayed at start-up, or the client gave up long ago).
const REPLY_WINDOW_NANOS: i64 = 30_000_000_000;

/// The Raft group of a stream: its name, its peers (ids; the first serves an R1 stream) and
/// storage.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub name: String,
    pub peers: Vec<String>,
    pub storage: StorageType,
    /// Peers placed after the group was founded (a removed peer's replacement): they join the
    /// running group and never found it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub joined: Vec<String>,
    /// The group runs in Raft even with one peer: the stream was scaled (a stream scaled down
    /// to one replica keeps its group, shrunk to that peer).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replicated: bool,
}

/// Who asked for the stream (nats-server's `client` of an assignment, the part we know).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientInfo {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub account: String,
    /// The server that received the request (the meta leader).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server: String,
}

/// One stream's assignment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamRecord {
    pub account: String,
    pub config: StreamConfig,
    pub group: Group,
    /// Unix nanoseconds; also the stream's `created` on the server holding it, which tells one
    /// incarnation of a name from the next.
    pub created: i64,
    #[serde(default)]
    pub client: ClientInfo,
}

impl StreamRecord {
    /// Whether the stream runs a Raft group on its peers.
    pub fn runs_group(&self) -> bool {
        self.config.replicas > 1 || self.group.replicated
    }

    /// The assignment its peers carry out.
    fn assignment(&self, change: StreamChange, reply: Option<Bytes>) -> StreamAssignment {
        StreamAssignment {
            account: self.account.clone(),
            config: self.config.clone(),
            change,
            created: self.created,
            reply,
            replicated: self.runs_group(),
        }
    }
}

/// A change to the state, as proposed by the meta leader.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Operation {
    /// Create or update a stream (the record replaces any previous one of that name).
    AssignStream {
        stream: Box<StreamRecord>,
        change: StreamChange,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply: Option<String>,
        /// When the leader proposed it, Unix nanoseconds.
        proposed: i64,
    },
    RemoveStream {
        account: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply: Option<String>,
        proposed: i64,
    },
    /// Takes `removed` off incarnation `created` of a stream's peers and puts `added` in its
    /// place (`None`: no server was free, the group shrinks). Ignored unless `removed` is a
    /// peer and `added` is not.
    ReplacePeer {
        account: String,
        name: String,
        created: i64,
        removed: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        added: Option<String>,
    },
    /// Records that meta member `peer` is incarnation `incarnation` of the server `name`
    /// (`incarnation.rs`): a leader that never heard that incarnation announce itself still
    /// recognises it when a later one of the same server appears.
    Member {
        peer: String,
        name: String,
        incarnation: u64,
    },
}

/// A log entry of the meta group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub version: u32,
    #[serde(flatten)]
    pub operation: Operation,
}

impl Entry {
    pub fn new(operation: Operation) -> Entry {
        Entry {
            version: VERSION,
            operation,
        }
    }

    pub fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }
}

/// What applying an entry asks of this server.
#[derive(Debug)]
pub enum Effect {
    /// A stream placed here was created or updated.
    Assigned(Box<StreamAssignment>),
    /// A stream placed here was removed; `created` names the incarnation.
    Removed {
        account: String,
        name: String,
        created: i64,
        reply: Option<Bytes>,
        /// This server is the first of the stream's peers: it answers when none of them holds
        /// the stream (removed before its creation was carried out).
        first_peer: bool,
    },
    /// The peers of a stream this server keeps holding changed: its group's leader brings the
    /// group's membership to `peers`.
    PeersChanged {
        account: String,
        name: String,
        created: i64,
        peers: Vec<String>,
    },
    /// This server is no longer one of a stream's peers: it leaves the group and deletes its
    /// replica.
    Unplaced {
        account: String,
        name: String,
        created: i64,
    },
}

/// The snapshot's shape.
#[derive(Serialize, Deserialize)]
struct Snapshot {
    version: u32,
    streams: BTreeMap<String, BTreeMap<String, StreamRecord>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    members: BTreeMap<String, Member>,
}

/// A meta member's server, as [`Operation::Member`] recorded it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub name: String,
    pub incarnation: u64,
}

/// Every stream assignment of the cluster, by account then stream name, and the servers of
/// the meta members recorded so far, by peer id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assignments {
    streams: BTreeMap<String, BTreeMap<String, StreamRecord>>,
    members: BTreeMap<String, Member>,
}

fn invalid(error: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, error.to_string())
}

impl Assignments {
    /// The server meta member `peer` was recorded as, if it was.
    pub fn member(&self, peer: &str) -> Option<&Member> {
        self.members.get(peer)
    }

    pub fn stream(&self, account: &str, name: &str) -> Option<&StreamRecord> {
        self.streams.get(account)?.get(name)
    }

    /// The account's streams, sorted by name.
    pub fn streams(&self, account: &str) -> Vec<&StreamRecord> {
        self.streams
            .get(account)
            .map(|streams| streams.values().collect())
            .unwrap_or_default()
    }

    /// The streams placed on `peer` (account, name).
    pub fn held_by(&self, peer: &str) -> Vec<(String, String)> {
        self.streams
            .values()
            .flat_map(BTreeMap::values)
            .filter(|record| record.group.peers.iter().any(|held| held == peer))
            .map(|record| (record.account.clone(), record.config.name.clone()))
            .collect()
    }

    /// The streams placed on the server `name` (of `account` when named), by account then name:
    /// on its peer `own_peer`, or on an earlier incarnation of it (a wiped server) that the meta
    /// leader has not replaced yet.
    pub fn placed_on_server(
        &self,
        name: &str,
        own_peer: &str,
        account: Option<&str>,
    ) -> Vec<&StreamRecord> {
        let is_this_server = |peer: &String| {
            peer == own_peer
                || self
                    .members
                    .get(peer)
                    .is_some_and(|member| member.name == name)
        };
        self.streams
            .iter()
            .filter(|(held_in, _)| account.is_none_or(|account| account == held_in.as_str()))
            .flat_map(|(_, streams)| streams.values())
            .filter(|record| record.group.peers.iter().any(is_this_server))
            .collect()
    }

    /// How many streams each peer holds (placement's load figure).
    pub fn load(&self) -> BTreeMap<String, usize> {
        let mut load = BTreeMap::new();
        for record in self.streams.values().flat_map(BTreeMap::values) {
            for peer in &record.group.peers {
                *load.entry(peer.clone()).or_insert(0) += 1;
            }
        }
        load
    }

    /// Applies one committed entry; returns what `own_peer` must do about it. `now` (Unix
    /// nanoseconds) decides whether the request is still answered. An entry that cannot be
    /// decoded is an error: a member cannot skip a committed entry.
    pub fn apply(
        &mut self,
        payload: &[u8],
        own_peer: &str,
        now: i64,
    ) -> io::Result<Option<Effect>> {
        let entry: Entry = serde_json::from_slice(payload).map_err(invalid)?;
        if entry.version > VERSION {
            return Err(invalid(format!(
                "meta entry version {} is newer than {VERSION}",
                entry.version
            )));
        }
        let fresh = |proposed: i64, reply: Option<String>| {
            reply
                .filter(|_| now.saturating_sub(proposed) < REPLY_WINDOW_NANOS)
                .map(Bytes::from)
        };
        match entry.operation {
            Operation::AssignStream {
                stream,
                change,
                reply,
                proposed,
            } => {
                let ours = stream.group.peers.iter().any(|peer| peer == own_peer);
                // A rescale that took this server off the stream's peers: it leaves the group.
                let left = !ours
                    && self
                        .stream(&stream.account, &stream.config.name)
                        .is_some_and(|old| {
                            old.created == stream.created
                                && old.group.peers.iter().any(|peer| peer == own_peer)
                        });
                let effect = if left {
                    Some(Effect::Unplaced {
                        account: stream.account.clone(),
                        name: stream.config.name.clone(),
                        created: stream.created,
                    })
                } else {
                    ours.then(|| {
                        Effect::Assigned(Box::new(
                            stream.assignment(change, fresh(proposed, reply)),
                        ))
                    })
                };
                self.streams
                    .entry(stream.account.clone())
                    .or_default()
                    .insert(stream.config.name.clone(), *stream);
                Ok(effect)
            }
            Operation::RemoveStream {
                account,
                name,
                reply,
                proposed,
            } => {
                let Some(streams) = self.streams.get_mut(&account) else {
                    return Ok(None);
                };
                let Some(record) = streams.remove(&name) else {
                    return Ok(None);
                };
                if streams.is_empty() {
                    self.streams.remove(&account);
                }
                let ours = record.group.peers.iter().any(|peer| peer == own_peer);
                Ok(ours.then(|| Effect::Removed {
                    account,
                    name,
                    created: record.created,
                    reply: fresh(proposed, reply),
                    first_peer: record
                        .group
                        .peers
                        .first()
                        .is_some_and(|first| first == own_peer),
                }))
            }
            Operation::ReplacePeer {
                account,
                name,
                created,
                removed,
                added,
            } => Ok(self.replace_peer(&account, &name, created, &removed, added, own_peer)),
            Operation::Member {
                peer,
                name,
                incarnation,
            } => {
                tracing::info!(
                    "JetStream cluster member {name} recorded (incarnation {incarnation})"
                );
                self.members.insert(peer, Member { name, incarnation });
                Ok(None)
            }
        }
    }

    /// Applies [`Operation::ReplacePeer`]: the record's peers change in place (the replacement
    /// takes the removed peer's position), and each server learns its part.
    fn replace_peer(
        &mut self,
        account: &str,
        name: &str,
        created: i64,
        removed: &str,
        added: Option<String>,
        own_peer: &str,
    ) -> Option<Effect> {
        let record = self
            .streams
            .get_mut(account)?
            .get_mut(name)
            .filter(|record| record.created == created)?;
        let group = &mut record.group;
        let position = group.peers.iter().position(|peer| peer == removed)?;
        if added
            .as_ref()
            .is_some_and(|added| group.peers.contains(added))
        {
            return None;
        }
        match &added {
            Some(added) => {
                group.peers[position] = added.clone();
                group.joined.retain(|peer| peer != added);
                group.joined.push(added.clone());
            }
            None => {
                group.peers.remove(position);
            }
        }
        group.joined.retain(|peer| peer != removed);
        if own_peer == removed {
            return Some(Effect::Unplaced {
                account: account.to_string(),
                name: name.to_string(),
                created,
            });
        }
        if added.as_deref() == Some(own_peer) {
            return Some(Effect::Assigned(Box::new(
                record.assignment(StreamChange::Create, None),
            )));
        }
        record
            .group
            .peers
            .iter()
            .any(|peer| peer == own_peer)
            .then(|| Effect::PeersChanged {
                account: account.to_string(),
                name: name.to_string(),
                created,
                peers: record.group.peers.clone(),
            })
    }

    pub fn snapshot(&self) -> io::Result<Bytes> {
        let snapshot = Snapshot {
            version: VERSION,
            streams: self.streams.clone(),
            members: self.members.clone(),
        };
        serde_json::to_vec(&snapshot)
            .map(Bytes::from)
            .map_err(invalid)
    }

    /// Replaces the state with a snapshot; returns what `own_peer` must do about the change:
    /// the streams placed on it before and not in the snapshot (removed, or another incarnation
    /// of the name) are removed, those placed elsewhere now are left, then every stream placed
    /// on it is created (the server makes sure they exist). A snapshot that catches a restarted
    /// server up with the leader thus ends what was removed while it was down, as the entries
    /// would have (nats-server: the deltas and `getOrphans` of `applyMetaSnapshot`).
    pub fn restore(&mut self, snapshot: &[u8], own_peer: &str) -> io::Result<Vec<Effect>> {
        let snapshot: Snapshot = if snapshot.is_empty() {
            Snapshot {
                version: VERSION,
                streams: BTreeMap::new(),
                members: BTreeMap::new(),
            }
        } else {
            serde_json::from_slice(snapshot).map_err(invalid)?
        };
        if snapshot.version > VERSION {
            return Err(invalid(format!(
                "meta snapshot version {} is newer than {VERSION}",
                snapshot.version
            )));
        }
        let before = std::mem::replace(&mut self.streams, snapshot.streams);
        self.members = snapshot.members;
        let mut effects: Vec<Effect> = before
            .into_values()
            .flat_map(BTreeMap::into_values)
            .filter(|old| old.group.peers.iter().any(|peer| peer == own_peer))
            .filter_map(|old| {
                let now = self
                    .stream(&old.account, &old.config.name)
                    .filter(|now| now.created == old.created);
                match now {
                    Some(now) if now.group.peers.iter().any(|peer| peer == own_peer) => None,
                    Some(_) => Some(Effect::Unplaced {
                        account: old.account,
                        name: old.config.name,
                        created: old.created,
                    }),
                    None => Some(Effect::Removed {
                        account: old.account,
                        name: old.config.name,
                        created: old.created,
                        reply: None,
                        first_peer: false,
                    }),
                }
            })
            .collect();
        effects.extend(self.placed_on(own_peer, None));
        Ok(effects)
    }

    /// A create of every stream placed on `own_peer` (of `account` only, when given): carried
    /// out again after a snapshot is restored, or once the account's JetStream begins here.
    pub fn placed_on(&self, own_peer: &str, account: Option<&str>) -> Vec<Effect> {
        self.streams
            .values()
            .flat_map(BTreeMap::values)
            .filter(|record| account.is_none_or(|account| record.account == account))
            .filter(|record| record.group.peers.iter().any(|peer| peer == own_peer))
            .map(|record| Effect::Assigned(Box::new(record.assignment(StreamChange::Create, None))))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, peer: &str, created: i64) -> StreamRecord {
        StreamRecord {
            account: "APP".into(),
            config: StreamConfig {
                name: name.into(),
                subjects: vec![format!("{name}.>")],
                ..Default::default()
            },
            group: Group {
                name: format!("S-R1F-{name}"),
                peers: vec![peer.into()],
                storage: StorageType::File,
                joined: Vec::new(),
                replicated: false,
            },
            created,
            client: ClientInfo::default(),
        }
    }

    fn assign(name: &str, peer: &str, proposed: i64) -> Bytes {
        Entry::new(Operation::AssignStream {
            stream: Box::new(record(name, peer, proposed)),
            change: StreamChange::Create,
            reply: Some("_INBOX.x".into()),
            proposed,
        })
        .encode()
    }

    fn remove(name: &str, proposed: i64) -> Bytes {
        Entry::new(Operation::RemoveStream {
            account: "APP".into(),
            name: name.into(),
            reply: Some("_INBOX.y".into()),
            proposed,
        })
        .encode()
    }

    #[test]
    fn every_member_applying_the_same_entries_holds_the_same_state() {
        let entries = [
            assign("A", "p1", 1),
            assign("B", "p2", 2),
            remove("A", 3),
            assign("C", "p1", 4),
        ];
        let mut first = Assignments::default();
        let mut second = Assignments::default();
        for entry in &entries {
            first.apply(entry, "p1", 5).expect("apply");
            second.apply(entry, "p2", 5).expect("apply");
        }
        assert_eq!(first, second);
        let names: Vec<&str> = first
            .streams("APP")
            .iter()
            .map(|record| record.config.name.as_str())
            .collect();
        assert_eq!(names, ["B", "C"]);
        assert_eq!(first.load().get("p1"), Some(&1));
    }

    #[test]
    fn effects_go_to_the_holder_and_answer_only_fresh_requests() {
        let mut state = Assignments::default();
        assert!(state
            .apply(&assign("A", "p1", 10), "p2", 10)
            .expect("apply")
            .is_none());
        let mut state = Assignments::default();
        match state
            .apply(&assign("A", "p1", 10), "p1", 10)
            .expect("apply")
        {
            Some(Effect::Assigned(assignment)) => {
                assert_eq!(assignment.reply.as_deref(), Some(&b"_INBOX.x"[..]));
                assert_eq!(assignment.created, 10);
            }
            other => panic!("expected an assignment, got {other:?}"),
        }
        // Replayed long after the proposal: applied, but no answer.
        let late = 10 + REPLY_WINDOW_NANOS;
        match state.apply(&remove("A", 10), "p1", late).expect("apply") {
            Some(Effect::Removed { name, reply, .. }) => {
                assert_eq!(name, "A");
                assert!(reply.is_none());
            }
            other => panic!("expected a removal, got {other:?}"),
        }
        assert!(state.stream("APP", "A").is_none());
    }

    #[test]
    fn a_snapshot_restores_the_same_state_and_lists_own_streams() {
        let mut state = Assignments::default();
        state.apply(&assign("A", "p1", 1), "p1", 1).expect("apply");
        state.apply(&assign("B", "p2", 2), "p1", 2).expect("apply");
        let member = Entry::new(Operation::Member {
            peer: "p3".into(),
            name: "s3".into(),
            incarnation: 7,
        });
        assert!(state
            .apply(&member.encode(), "p1", 3)
            .expect("apply")
            .is_none());
        let snapshot = state.snapshot().expect("snapshot");
        let mut restored = Assignments::default();
        let own = restored.restore(&snapshot, "p2").expect("restore");
        assert_eq!(restored, state);
        assert_eq!(restored.member("p3").map(|m| m.name.as_str()), Some("s3"));
        assert_eq!(own.len(), 1);
        assert!(
            matches!(&own[0], Effect::Assigned(a) if a.config.name == "B" && a.reply.is_none())
        );
    }

    /// A server restarted with an old state (A, B, C and D placed on it) is caught up by a
    /// snapshot: A deleted, B deleted and created again, C placed elsewhere, D kept, E new.
    #[test]
    fn a_snapshot_ends_what_it_no_longer_places_here() {
        let mut old = Assignments::default();
        for (name, created) in [("A", 1), ("B", 2), ("C", 3), ("D", 4)] {
            old.apply(&assign(name, "p1", created), "p1", created)
                .expect("apply");
        }
        let mut leader = old.clone();
        let elsewhere = Entry::new(Operation::ReplacePeer {
            account: "APP".into(),
            name: "C".into(),
            created: 3,
            removed: "p1".into(),
            added: Some("p2".into()),
        });
        for entry in [
            remove("A", 5),
            remove("B", 6),
            assign("B", "p1", 7),
            elsewhere.encode(),
            assign("E", "p1", 8),
        ] {
            leader.apply(&entry, "p2", 9).expect("apply");
        }
        let effects = old
            .restore(&leader.snapshot().expect("snapshot"), "p1")
            .expect("restore");
        assert_eq!(old, leader);
        let described: Vec<String> = effects
            .iter()
            .map(|effect| match effect {
                Effect::Removed { name, created, .. } => format!("removed {name} {created}"),
                Effect::Unplaced { name, created, .. } => format!("unplaced {name} {created}"),
                Effect::Assigned(a) => format!("assigned {} {}", a.config.name, a.created),
                Effect::PeersChanged { name, .. } => format!("peers {name}"),
            })
            .collect();
        assert_eq!(
            described,
            [
                "removed A 1",
                "removed B 2",
                "unplaced C 3",
                "assigned B 7",
                "assigned D 4",
                "assigned E 8"
            ]
        );
        // An empty snapshot removes everything placed here.
        let effects = old.restore(&[], "p1").expect("restore");
        assert_eq!(effects.len(), 3);
        assert!(effects
            .iter()
            .all(|effect| matches!(effect, Effect::Removed { .. })));
    }

    fn replace(removed: &str, added: &str) -> Bytes {
        Entry::new(Operation::ReplacePeer {
            account: "APP".into(),
            name: "A".into(),
            created: 1,
            removed: removed.into(),
            added: Some(added.into()),
        })
        .encode()
    }

    #[test]
    fn a_replaced_peer_tells_each_server_its_part() {
        let mut three = record("A", "p1", 1);
        three.group.peers = vec!["p1".into(), "p2".into(), "p3".into()];
        let entry = Entry::new(Operation::AssignStream {
            stream: Box::new(three),
            change: StreamChange::Create,
            reply: None,
            proposed: 1,
        })
        .encode();
        let parts = |own: &str| {
            let mut state = Assignments::default();
            state.apply(&entry, own, 1).expect("assign");
            let effect = state.apply(&replace("p2", "p4"), own, 2).expect("replace");
            (state, effect)
        };
        let (state, removed) = parts("p2");
        assert!(matches!(removed, Some(Effect::Unplaced { created: 1, .. })));
        let group = &state.stream("APP", "A").expect("kept").group;
        assert_eq!(group.peers, ["p1", "p4", "p3"]);
        assert_eq!(group.joined, ["p4"]);
        assert!(matches!(parts("p4").1, Some(Effect::Assigned(a)) if a.reply.is_none()));
        assert!(
            matches!(parts("p1").1, Some(Effect::PeersChanged { peers, .. }) if peers == ["p1", "p4", "p3"])
        );
        assert!(parts("p5").1.is_none());
        // Stale: the removed peer is gone already, or the new one is a member: nothing changes.
        let (mut state, _) = parts("p1");
        let before = state.clone();
        assert!(state
            .apply(&replace("p2", "p5"), "p1", 3)
            .expect("apply")
            .is_none());
        assert!(state
            .apply(&replace("p1", "p3"), "p1", 3)
            .expect("apply")
            .is_none());
        assert_eq!(state, before);
    }

    #[test]
    fn a_rescale_assigns_the_kept_and_new_peers_and_lets_a_dropped_one_leave() {
        let assign_with = |peers: &[&str], replicas: i64, change: StreamChange| {
            let mut stream = record("A", "p1", 1);
            stream.config.replicas = replicas;
            stream.group.peers = peers.iter().map(|peer| peer.to_string()).collect();
            stream.group.replicated = change == StreamChange::Update;
            Entry::new(Operation::AssignStream {
                stream: Box::new(stream),
                change,
                reply: None,
                proposed: 1,
            })
            .encode()
        };
        let three = assign_with(&["p1", "p2", "p3"], 3, StreamChange::Create);
        let one = assign_with(&["p1"], 1, StreamChange::Update);
        let effect = |own: &str| {
            let mut state = Assignments::default();
            state.apply(&three, own, 1).expect("assign");
            state.apply(&one, own, 2).expect("rescale")
        };
        assert!(matches!(
            effect("p2"),
            Some(Effect::Unplaced { created: 1, .. })
        ));
        assert!(
            matches!(effect("p1"), Some(Effect::Assigned(a)) if a.replicated && a.config.replicas == 1)
        );
        assert!(effect("p4").is_none());
        // A stream of one replica never scaled runs no group.
        let mut state = Assignments::default();
        let single = state.apply(&assign("B", "p1", 1), "p1", 1).expect("assign");
        assert!(matches!(single, Some(Effect::Assigned(a)) if !a.replicated));
    }

    #[test]
    fn garbage_and_newer_versions_are_refused() {
        let mut state = Assignments::default();
        assert!(state.apply(b"{not json", "p1", 0).is_err());
        let newer = br#"{"version":99,"op":"remove_stream","account":"A","name":"B","proposed":0}"#;
        assert!(state.apply(newer, "p1", 0).is_err());
        assert!(state
            .restore(br#"{"version":99,"streams":{}}"#, "p1")
            .is_err());
    }
}
