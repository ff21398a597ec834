//! The apply seam: every change of a stream's stored state is a [`StreamEntry`], applied by
//! [`apply`] and by nothing else.
//!
//! The stream's task is the leader of its stream: it decides (sequence numbers, timestamps,
//! the duplicate window, expected-header checks, interest, what a rollup or an expiry removes)
//! and turns each decision into an entry; `apply` carries it out on the store with no clock,
//! no randomness and no look at anything but the store and the entry, so two stores that apply
//! the same entries in the same order hold the same messages. Today entries are applied
//! locally as they are made; replication puts a log in front of the same function (the leader
//! proposes, every replica applies the committed entries in order).
//!
//! An entry borrows the publish's bytes ([`Cow`]): building and applying one on the publish
//! path copies nothing and allocates nothing. Entries serialize with serde (a log stores them
//! owned).
//!
//! What it must not know: the API, consumers, routing.

use super::storage;
use jetstream_api::StreamConfig;
use nats_store::{RemovedMessage, StoreError, StreamStore};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::time::Duration;

/// One change of a stream, as decided by its leader.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum StreamEntry<'a> {
    /// A message at the sequence and time the leader chose (a publish, a sourced or mirrored
    /// message, a subject delete marker, a counter's new total, a schedule's firing). `ttl`:
    /// the per-message TTL ([`nats_store::TTL_NEVER`] for "never").
    Message {
        seq: u64,
        timestamp: i64,
        subject: Cow<'a, str>,
        headers: Cow<'a, [u8]>,
        payload: Cow<'a, [u8]>,
        ttl: Option<Duration>,
    },
    /// `count` sequences from `seq` used but not kept (interest with no one interested, mirror
    /// gaps, an atomic batch's unused sequence).
    Skip { seq: u64, count: u64 },
    /// One message removed (message delete, work-queue / interest retention).
    Remove { seq: u64 },
    /// One message removed and its bytes overwritten (`no_erase: false` message delete).
    Erase { seq: u64 },
    /// nats-server's `PurgeEx` (STREAM.PURGE, rollups, a fired schedule's purge).
    Purge {
        filter: Cow<'a, str>,
        up_to_seq: u64,
        keep: u64,
    },
    /// Everything whose max_age or TTL has passed at `now` (the leader's clock) goes.
    Expire { now: i64 },
    /// A new configuration: the store's limits (tightened ones apply at once) and the saved
    /// stream config.
    Config {
        config: Box<StreamConfig>,
        created: i64,
    },
}

/// What applying an entry did, for the leader's answer.
#[derive(Debug, Default)]
pub(crate) enum Applied {
    #[default]
    Done,
    /// Remove / Erase: whether the message existed.
    Removed(bool),
    /// Purge: how many messages went.
    Purged(u64),
    /// Expire: the messages that went (subject delete markers follow from them).
    Expired(Vec<RemovedMessage>),
}

#[cfg(test)]
impl StreamEntry<'_> {
    /// The entry with its bytes owned (the tests' recording outlives the publish; a
    /// replication log will need the same).
    pub(crate) fn into_owned(self) -> StreamEntry<'static> {
        match self {
            StreamEntry::Message {
                seq,
                timestamp,
                subject,
                headers,
                payload,
                ttl,
            } => StreamEntry::Message {
                seq,
                timestamp,
                subject: Cow::Owned(subject.into_owned()),
                headers: Cow::Owned(headers.into_owned()),
                payload: Cow::Owned(payload.into_owned()),
                ttl,
            },
            StreamEntry::Skip { seq, count } => StreamEntry::Skip { seq, count },
            StreamEntry::Remove { seq } => StreamEntry::Remove { seq },
            StreamEntry::Erase { seq } => StreamEntry::Erase { seq },
            StreamEntry::Purge {
                filter,
                up_to_seq,
                keep,
            } => StreamEntry::Purge {
                filter: Cow::Owned(filter.into_owned()),
                up_to_seq,
                keep,
            },
            StreamEntry::Expire { now } => StreamEntry::Expire { now },
            StreamEntry::Config { config, created } => StreamEntry::Config { config, created },
        }
    }
}

/// Apply one entry to a stream's store. Deterministic: the outcome depends only on the store's
/// state and the entry. An entry that fails (a limit with discard new, say) changes nothing.
pub(crate) fn apply(
    store: &mut dyn StreamStore,
    entry: &StreamEntry<'_>,
) -> Result<Applied, StoreError> {
    match entry {
        StreamEntry::Message {
            seq,
            timestamp,
            subject,
            headers,
            payload,
            ttl,
        } => {
            store.store_raw(*seq, *timestamp, subject, headers, payload, *ttl)?;
            Ok(Applied::Done)
        }
        StreamEntry::Skip { seq, count } => {
            store.skip_msgs(*seq, *count)?;
            Ok(Applied::Done)
        }
        StreamEntry::Remove { seq } => store.remove(*seq).map(Applied::Removed),
        StreamEntry::Erase { seq } => store.erase(*seq).map(Applied::Removed),
        StreamEntry::Purge {
            filter,
            up_to_seq,
            keep,
        } => store
            .purge_ex(filter, *up_to_seq, *keep)
            .map(Applied::Purged),
        StreamEntry::Expire { now } => store.expire(*now).map(Applied::Expired),
        StreamEntry::Config { config, created } => {
            store.update_config(super::ingest_store_config(config))?;
            storage::save_metadata(store, config, *created)?;
            Ok(Applied::Done)
        }
    }
}

/// The sequence and timestamp the leader gives its next message: one past the last sequence,
/// and never before the last message's time (time lookups binary-search).
pub(crate) fn next_position(store: &dyn StreamStore, now: i64) -> (u64, i64) {
    let state = store.state();
    (state.last_seq + 1, now.max(state.last_timestamp))
}
