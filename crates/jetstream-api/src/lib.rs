//! The `$JS.API` wire vocabulary of rnats: JSON request/response types exactly as nats-server
//! v2.15 spells them, the API error table, and the ack reply-subject codec.
//!
//! Callers: the JetStream crate (stream and consumer handlers build responses from these types
//! and decode requests with [`json::decode_request`]), and tests that compare us with the real
//! nats-server. This crate must not know about tokio, sockets, the store or the server: it is
//! pure data plus encoding rules, so it can be fuzzed and tested in isolation.
//!
//! Conventions that hold for every type here:
//! - Field names, `omitempty` rules and field order follow nats-server's Go structs, so a
//!   serialized value compares equal (as JSON) to what nats-server sends.
//! - Durations are [`Nanos`] (integer nanoseconds); times are [`Timestamp`] (RFC 3339 with
//!   nanoseconds, Go's zero time `0001-01-01T00:00:00Z` for "unset").
//! - Requests are decoded strictly (unknown fields rejected, as nats-server 2.12+ in strict mode);
//!   missing fields take their Go zero value. Consumer defaults are filled by
//!   [`consumer_defaults::apply_consumer_defaults`]; validating configs and filling stream
//!   defaults is the server's job (it needs limits and state this crate does not have).
//! - Responses are encoded with [`json::encode_response`], which adds Go's `\u003c`/`\u003e`/
//!   `\u0026` escapes: the captured fixtures in `tests/fixtures/` re-encode byte for byte.
//!
//! Map of the crate: `stream`/`stream_api` (STREAM.* and PubAck), `consumer`/`consumer_api`/
//! `consumer_defaults` (CONSUMER.* and pull requests), `account` ($JS.API.INFO), `ack` (ack
//! subjects and bodies), `status` (header-only status messages and header names), `advisory`
//! ($JS.EVENT.*), `subjects` ($JS.API subject parser), `api_error`/`errors` (the error table),
//! `json` (strict decoding, Go-exact encoding), `time_format`, `policy` (string enums),
//! `metadata` (`_nats.*` keys), `kv` (KV/object store names), `base64`.

pub mod account;
pub mod ack;
pub mod advisory;
pub mod api_error;
pub mod base64;
pub mod consumer;
pub mod consumer_api;
pub mod consumer_defaults;
pub mod errors_generated;
pub mod json;
pub mod kv;
pub mod metadata;
pub mod policy;
pub mod status;
pub mod stream;
pub mod stream_api;
pub mod subjects;
pub mod time_format;

mod error;
mod go_type_error;

pub use account::{AccountInfo, AccountInfoResponse, AccountLimits, AccountTier, ApiStats};
pub use ack::{AckKind, AckSubject, AckSubjectPrefix};
pub use api_error::{ApiError, ErrorEntry};
pub use consumer::*;
pub use consumer_api::*;
pub use error::Error;
pub use errors_generated as errors;
pub use policy::{
    AckPolicy, Compression, ConsumerAction, DeliverPolicy, DiscardPolicy, PersistMode,
    PriorityPolicy, ReplayPolicy, RetentionPolicy, StorageType,
};
pub use stream::*;
pub use stream_api::*;
pub use subjects::ApiSubject;
pub use time_format::{Nanos, Timestamp};
