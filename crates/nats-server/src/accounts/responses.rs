//! The response table of an account that serves imported requests: each request forwarded
//! with a reply gets a reply subject `_R_.<table id>.<request id>` in the exporting account,
//! mapped back to the requester's account and reply subject. One subscription on
//! `_R_.<table id>.>` per account and server (made at the first request, announced on routes so
//! a responder on another server reaches it) catches the answers. A singleton mapping is gone
//! after its first answer; stream and chunked ones, like every unanswered one, after the
//! export's threshold (swept as new requests come).
//!
//! Called by `imports.rs`; knows nothing of sockets.

use super::imports::ImportTarget;
use super::Account;
use crate::config::ResponseType;
use crate::router::{Delivery, PendingFlush, Subscriber};
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

/// nats-server's reply alphabet (base 62).
const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// Sweep expired mappings at most this often.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

struct Mapping {
    importer: Weak<Account>,
    reply: Bytes,
    response_type: ResponseType,
    deadline: Instant,
}

#[derive(Default)]
struct Table {
    mappings: HashMap<Bytes, Mapping>,
    last_sweep: Option<Instant>,
}

/// An account's pending responses.
#[derive(Default)]
pub struct Responses {
    /// `_R_.<id>.`, set (and subscribed) at the first request.
    prefix: OnceLock<String>,
    /// Made at the first request (most accounts export no service).
    table: Mutex<Option<Box<Table>>>,
    sequence: AtomicU64,
}

impl Responses {
    /// Mappings still waiting for an answer (tests, monitoring).
    pub fn pending(&self) -> usize {
        self.table
            .lock()
            .as_ref()
            .map_or(0, |table| table.mappings.len())
    }
}

fn random_text(mut value: u64, length: usize) -> String {
    (0..length)
        .map(|_| {
            let digit = DIGITS[(value % DIGITS.len() as u64) as usize];
            value /= DIGITS.len() as u64;
            digit as char
        })
        .collect()
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    hasher.finish()
}

/// A reply subject in `exporter` whose answers go to `reply` in `importer`.
pub(super) fn register(
    exporter: &Arc<Account>,
    importer: &Weak<Account>,
    reply: Bytes,
    response_type: ResponseType,
    threshold: Duration,
) -> Bytes {
    let responses = &exporter.responses;
    let prefix = responses.prefix.get_or_init(|| {
        let prefix = format!("_R_.{}.", random_text(random_seed(), 6));
        let target = Arc::new(ImportTarget::Responses(Arc::downgrade(exporter)));
        exporter
            .router
            .insert(&format!("{prefix}>"), None, Subscriber::Import(target));
        prefix
    });
    let number = responses.sequence.fetch_add(1, Ordering::Relaxed);
    let mixed = number.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ random_seed();
    let subject = Bytes::from(format!("{prefix}{}", random_text(mixed, 8)));
    let now = Instant::now();
    let mut table = responses.table.lock();
    let table = table.get_or_insert_with(Box::default);
    if table
        .last_sweep
        .is_none_or(|last| now.duration_since(last) >= SWEEP_INTERVAL)
    {
        table.last_sweep = Some(now);
        table.mappings.retain(|_, mapping| mapping.deadline > now);
    }
    table.mappings.insert(
        subject.clone(),
        Mapping {
            importer: importer.clone(),
            reply,
            response_type,
            deadline: now + threshold,
        },
    );
    subject
}

/// The requester an answer on `subject` (`_R_.<id>.<request>` in `exporter`) goes to, and its
/// reply subject there; a singleton mapping is used up.
fn answer_target(exporter: &Account, subject: &[u8]) -> Option<(Arc<Account>, Bytes)> {
    let (importer, reply) = {
        let mut table = exporter.responses.table.lock();
        let table = table.as_mut()?;
        let mapping = table.mappings.get(subject)?;
        if mapping.deadline <= Instant::now() {
            table.mappings.remove(subject);
            return None;
        }
        let found = (mapping.importer.clone(), mapping.reply.clone());
        if mapping.response_type == ResponseType::Singleton {
            table.mappings.remove(subject);
        }
        found
    };
    Some((importer.upgrade()?, reply))
}

/// An answer on `_R_.<id>.<request>` in `exporter`: to the requester, under its own reply.
pub(super) fn deliver(
    exporter: &Account,
    delivery: &Delivery<'_>,
    pending: &mut PendingFlush,
) -> bool {
    let Some((importer, reply)) = answer_target(exporter, delivery.subject) else {
        return false;
    };
    let Ok(reply_text) = std::str::from_utf8(&reply) else {
        return false;
    };
    let answer = Delivery {
        subject: &reply,
        reply: None,
        headers: delivery.headers,
        payload: delivery.payload,
    };
    importer
        .router
        .route_matching(reply_text, None, &answer, pending)
        > 0
}

/// A message routed by `route_subject` but shown under another subject (a JetStream delivery
/// to a pull request's reply), when that reply is one of `exporter`'s response subjects: to
/// the requester's reply subject, still shown under its own subject with its reply (the ack
/// subject), as nats-server delivers a pull consumer's messages across a service import.
/// None when `route_subject` is no response subject of `exporter`.
pub(crate) fn deliver_routed(
    exporter: &Account,
    route_subject: &str,
    delivery: &Delivery<'_>,
    pending: &mut PendingFlush,
) -> Option<usize> {
    let prefix = exporter.responses.prefix.get()?;
    if !route_subject.starts_with(prefix.as_str()) {
        return None;
    }
    let (importer, reply) = answer_target(exporter, route_subject.as_bytes())?;
    let reply_text = std::str::from_utf8(&reply).ok()?;
    Some(
        importer
            .router
            .route_matching(reply_text, None, delivery, pending),
    )
}
