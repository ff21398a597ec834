//! nats-subject: the subject grammar and the subscription index.
//!
//! - [`grammar`](crate::is_valid_subject): validation, tokenizing, matching a subject against a
//!   filter, overlap and subset tests between filters — as nats-server's sublist.go defines them.
//! - [`Sublist`]: the `*`/`>` trie with queue groups and a bounded match cache whose entries are
//!   dropped by the inserts and removes that affect them.
//! - [`LocalMatchCache`]: a lock-free per-task cache in front of a shared `Sublist`, checked
//!   against the sublist's generation counter.
//! - [`OverlapIndex`]: numbered filters in a token trie, for overlap checks over many filters
//!   (a stream's subjects against each other and against other streams').
//! - [`transform`]: subject transforms (`$n`, `{{partition(...)}}` and the other mapping
//!   functions), used by JetStream's streams, sources and republish.
//!
//! Called by the server's router (every publish), its permission checks, and by JetStream and the
//! store for stream/consumer subject filters. It knows nothing of connections, the wire protocol
//! or tokio; the values stored in a [`Sublist`] are opaque to it.

mod error;
mod grammar;
mod hasher;
mod local_cache;
mod match_cache;
mod overlap_index;
mod sublist;
mod transform;

pub use error::SubjectError;
pub use grammar::{
    is_literal, is_subset_match, is_valid_literal_subject, is_valid_queue_name, is_valid_subject,
    literal_prefix, subject_matches_filter, subjects_overlap, token_count, tokenize, FULL_WILDCARD,
    SINGLE_WILDCARD, TOKEN_SEPARATOR,
};
pub use local_cache::{LocalMatchCache, DEFAULT_LOCAL_CACHE_CAPACITY};
pub use overlap_index::OverlapIndex;
pub use sublist::{MatchResult, Sublist, SublistStats, DEFAULT_CACHE_CAPACITY};
pub use transform::{is_valid_transform, transform, SubjectTransform};
