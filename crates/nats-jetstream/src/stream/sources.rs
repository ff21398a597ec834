//! Sources: a stream that aggregates other streams of this server (nats-server's
//! `setupSourceConsumers` / `processInboundSourceMsg`).
//!
//! Each configured source has its own task that reads the origin's store from its position on
//! (the origin's new-message watch wakes it), applies the source's filter and subject
//! transforms, and hands the messages to the aggregate's ingest task as publishes carrying a
//! `Nats-Stream-Source: <origin> <origin seq> <filter> <destination> <original subject> <origin
//! identity>` header (`source_header.rs`).
//! Through that path sourced messages get everything a publish gets (the stream's own subject
//! transform, Nats-Msg-Id dedupe across sources, limits, discard policy, interest). Each batch
//! waits for the ingest task's answers (PubAcks routed back to an internal inbox): that is the
//! flow control, and the position only moves over messages that were stored or found to be
//! duplicates, so a refused message (a discard-new limit, say) is tried again later.
//!
//! The header doubles as the persisted position: at start (and for sources added by an update)
//! the aggregate is scanned backwards for each source's newest header, so a restart neither
//! loses nor repeats messages. The header's origin identity (a hash of the origin's creation
//! time) tells when the origin was deleted and created again: the source then starts over on the
//! new one. A missing origin is waited for (`error` 10059 in the info).
//!
//! Who calls it: the engine when a stream starts or its config changes ([`sync`]) and
//! `STREAM.INFO` ([`info`]). It must not know about connections; it talks to the ingest task only
//! through [`StreamCommand::Publish`].

use super::source_header::{
    header_value, sourced_header, stream_identity, IndexName, SourcedFrom, STREAM_SOURCE_HEADER,
};
use super::{Stream, StreamCommand, StreamLookup};
use crate::transport::{Message, Transport};
use bytes::Bytes;
use jetstream_api::{errors, ApiError, Nanos, StreamSource, StreamSourceInfo};
use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::mpsc;

/// Messages handed to the ingest task per round trip.
const BATCH_MESSAGES: usize = 2048;
/// Bytes handed over per round trip (a batch ends early past this).
const BATCH_BYTES: usize = 8 * 1024 * 1024;
/// How often a source looks for an origin that does not exist (yet).
const ORIGIN_POLL: Duration = Duration::from_millis(250);
/// Longest wait on an idle origin before the task looks around again (config changes, a
/// re-created origin); also what keeps `active` near nats-server's 1 s heartbeat.
const IDLE_WAIT: Duration = Duration::from_secs(1);
/// How long a batch's answers may take before the unanswered part is tried again.
const ANSWER_WAIT: Duration = Duration::from_secs(10);
/// Pause before trying again after a refused message.
const RETRY_WAIT: Duration = Duration::from_millis(500);

/// One configured source and how far it got.
pub(crate) struct SourceProgress {
    pub source: StreamSource,
    /// nats-server's index name parts: origin (with `:<api>` when external), filter, destination.
    key: IndexName,
    /// The newest origin sequence stored here (or skipped as a duplicate); 0 before any.
    pub position: AtomicU64,
    /// The newest origin sequence actually stored here (what nats-server reports as `seq`).
    pub stored: AtomicU64,
    /// When the origin was last heard from (unix nanos), 0 before the first contact.
    pub contact: AtomicI64,
    /// The identity of the origin `position` counts in (from the newest header here at start,
    /// then from each contact); None before either.
    origin_identity: Mutex<Option<String>>,
    /// The source's subject transforms, compiled with the config.
    transforms: SourceTransforms,
    pub error: Mutex<Option<ApiError>>,
    /// Set when an update removes the source; its task ends.
    removed: AtomicBool,
}

/// The sources of one stream, in config order.
#[derive(Default)]
pub(crate) struct Sources {
    entries: Mutex<Vec<Arc<SourceProgress>>>,
}

impl Sources {
    /// Stop every source task (the stream is going away).
    pub(crate) fn stop_all(&self) {
        for entry in std::mem::take(&mut *self.entries.lock()) {
            entry.removed.store(true, Ordering::Relaxed);
        }
    }
}

impl SourceProgress {
    fn new(source: StreamSource) -> SourceProgress {
        SourceProgress {
            key: IndexName::of(&source),
            transforms: SourceTransforms::compile(&source),
            source,
            position: AtomicU64::new(0),
            stored: AtomicU64::new(0),
            contact: AtomicI64::new(0),
            origin_identity: Mutex::new(None),
            error: Mutex::new(None),
            removed: AtomicBool::new(false),
        }
    }

    fn filters(&self) -> Vec<String> {
        filters(&self.source)
    }

    fn destination_subject(&self, subject: &str) -> String {
        self.transforms.destination_subject(subject)
    }
}

/// The origin subjects a source or mirror reads (empty: all of them).
pub(crate) fn filters(source: &StreamSource) -> Vec<String> {
    let filters: Vec<String> = if source.subject_transforms.is_empty() {
        vec![source.filter_subject.clone()]
    } else {
        source
            .subject_transforms
            .iter()
            .map(|transform| transform.source.clone())
            .collect()
    };
    if filters
        .iter()
        .any(|filter| filter.is_empty() || filter == ">")
    {
        return Vec::new();
    }
    filters
}

/// A source's (or mirror's) subject transforms, compiled once per config rather than per message.
pub(crate) struct SourceTransforms {
    /// Each transform's source filter (`>` when empty) and its compiled form (None when
    /// nats-server would not transform: the subject is then stored unchanged).
    entries: Vec<(String, Option<nats_subject::SubjectTransform>)>,
}

impl SourceTransforms {
    pub(crate) fn compile(source: &StreamSource) -> SourceTransforms {
        let entries = source
            .subject_transforms
            .iter()
            .map(|transform| {
                let from = if transform.source.is_empty() {
                    ">".to_string()
                } else {
                    transform.source.clone()
                };
                let compiled = nats_subject::SubjectTransform::new(&from, &transform.destination);
                (from, compiled)
            })
            .collect();
        SourceTransforms { entries }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The subject an origin message is stored under: the first transform whose source matches.
    pub(crate) fn destination_subject(&self, subject: &str) -> String {
        for (from, compiled) in &self.entries {
            if !crate::subject::matches(from, subject) {
                continue;
            }
            return compiled
                .as_ref()
                .and_then(|transform| transform.apply_matched(subject))
                .unwrap_or_else(|| subject.to_string());
        }
        subject.to_string()
    }
}

/// Bring the running source tasks in line with the stream's config: new sources start (from
/// their newest `Nats-Stream-Source` header here, else their configured start), removed ones
/// stop, unchanged ones carry on.
pub(crate) fn sync(
    stream: &Arc<Stream>,
    origins: Weak<dyn StreamLookup>,
    transport: Arc<dyn Transport>,
) {
    let configured = stream.config.read().sources.clone();
    let mut started = Vec::new();
    {
        let mut entries = stream.sources.entries.lock();
        let mut kept: Vec<Arc<SourceProgress>> = Vec::with_capacity(configured.len());
        for source in configured {
            let key = IndexName::of(&source);
            match entries.iter().find(|entry| entry.key == key) {
                Some(existing) => kept.push(existing.clone()),
                None => {
                    let progress = Arc::new(SourceProgress::new(source));
                    started.push(progress.clone());
                    kept.push(progress);
                }
            }
        }
        for entry in entries.iter() {
            if !kept.iter().any(|kept| Arc::ptr_eq(kept, entry)) {
                entry.removed.store(true, Ordering::Relaxed);
            }
        }
        *entries = kept;
    }
    if started.is_empty() {
        return;
    }
    let stream = Arc::downgrade(stream);
    tokio::spawn(async move {
        match stream.upgrade() {
            Some(aggregate) => recover_positions(&aggregate.store, &started),
            None => return,
        }
        for progress in started {
            // Sources of other domains or accounts need a consumer across a link this server
            // does not have: they stay configured and inactive, as nats-server's do when no
            // one answers their API prefix.
            if progress.source.external.is_some() {
                continue;
            }
            tokio::spawn(follow(
                stream.clone(),
                progress,
                origins.clone(),
                transport.clone(),
            ));
        }
    });
}

/// nats-server's `startingSequenceForSources`: walk the stream backwards and take each
/// source's newest `Nats-Stream-Source` header as its position.
fn recover_positions(store: &super::StoreHandle, sources: &[Arc<SourceProgress>]) {
    let mut missing: Vec<&Arc<SourceProgress>> = sources.iter().collect();
    let (first, mut seq) = {
        let state = store.state();
        (state.first_seq.max(1), state.last_seq)
    };
    while seq >= first && !missing.is_empty() {
        // Short lock holds: the ingest task shares this store.
        let mut store = store.read();
        for _ in 0..1024 {
            let message = match store.load_prev(">", seq) {
                Ok(Some(message)) => message,
                _ => {
                    seq = 0;
                    break;
                }
            };
            seq = message.seq.saturating_sub(1);
            let Some(sourced) =
                header_value(&message.headers, STREAM_SOURCE_HEADER).and_then(SourcedFrom::parse)
            else {
                if seq < first {
                    break;
                }
                continue;
            };
            if let Some(index) = missing
                .iter()
                .position(|progress| progress.key == sourced.key)
            {
                let progress = missing.swap_remove(index);
                progress
                    .position
                    .store(sourced.origin_seq, Ordering::Relaxed);
                progress.stored.store(sourced.origin_seq, Ordering::Relaxed);
                *progress.origin_identity.lock() = sourced.identity;
            }
            if missing.is_empty() || seq < first {
                break;
            }
        }
    }
}

/// Unsubscribes the source's answer inbox when its task ends.
struct InboxGuard {
    transport: Arc<dyn Transport>,
    id: u64,
}

impl Drop for InboxGuard {
    fn drop(&mut self) {
        self.transport.unsubscribe(self.id);
    }
}

/// A hard-to-guess inbox token, so no client answers in a source's place by accident.
fn inbox_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_i64(crate::time_format::now_nanos());
    format!("{:016x}", hasher.finish())
}

/// The answers of the ingest task, by origin sequence.
type Answers = mpsc::UnboundedReceiver<(u64, Bytes)>;

/// Copy one source into the aggregate until the source is removed or the stream stops.
async fn follow(
    stream: Weak<Stream>,
    progress: Arc<SourceProgress>,
    origins: Weak<dyn StreamLookup>,
    transport: Arc<dyn Transport>,
) {
    let inbox = format!("$JS.S.{}.", inbox_token());
    let (answer_sender, mut answers) = mpsc::unbounded_channel::<(u64, Bytes)>();
    let id = transport.subscribe(
        &format!("{inbox}*"),
        None,
        Arc::new(move |message: Message| {
            let seq = message
                .subject
                .rsplit(|&byte| byte == b'.')
                .next()
                .and_then(|token| std::str::from_utf8(token).ok())
                .and_then(|token| token.parse::<u64>().ok());
            if let Some(seq) = seq {
                // The task may be gone; a late answer is dropped.
                let _ = answer_sender.send((seq, message.payload));
            }
        }),
    );
    let _guard = InboxGuard {
        transport: transport.clone(),
        id,
    };
    let filters = progress.filters();
    // Origin sequences stored after one that was refused: skipped when the refused one is
    // tried again, so nothing is stored twice.
    let mut stored_ahead: BTreeSet<u64> = BTreeSet::new();
    let mut start_resolved = false;
    loop {
        if progress.removed.load(Ordering::Relaxed) {
            return;
        }
        let Some(aggregate) = stream.upgrade() else {
            return;
        };
        if aggregate.stopped.load(Ordering::Relaxed) {
            return;
        }
        let origin = origins
            .upgrade()
            .and_then(|origins| origins.stream(&progress.source.name));
        let Some(origin) = origin else {
            *progress.error.lock() = Some(errors::STREAM_NOT_FOUND.to_error());
            drop(aggregate);
            tokio::time::sleep(ORIGIN_POLL).await;
            continue;
        };
        progress.error.lock().take();
        let identity = stream_identity(origin.created);
        let origin_last = origin.store.read().state().last_seq;
        let known_identity = progress.origin_identity.lock().replace(identity.clone());
        let recreated = known_identity.is_some_and(|known| known != identity)
            // Headers without an identity (written before it existed): the origin ending
            // before our position is the sign.
            || origin_last < progress.position.load(Ordering::Relaxed);
        if recreated {
            // The origin was deleted and created again: start over on the new one.
            progress.position.store(0, Ordering::Relaxed);
            progress.stored.store(0, Ordering::Relaxed);
            stored_ahead.clear();
            start_resolved = false;
        }
        if !start_resolved {
            start_resolved = true;
            resolve_start(&progress, &origin);
        }
        let mut changes = origin.last_sequence.subscribe();
        let position = progress.position.load(Ordering::Relaxed);
        stored_ahead = stored_ahead.split_off(&(position + 1));
        let (batch, examined) = read_batch(&origin, &filters, position + 1, &stored_ahead);
        drop(origin);
        progress
            .contact
            .store(crate::time_format::now_nanos(), Ordering::Relaxed);
        if batch.is_empty() {
            if examined > position {
                // Everything read was stored before: move past it.
                progress.position.store(examined, Ordering::Relaxed);
                continue;
            }
            drop(aggregate);
            let _ = tokio::time::timeout(IDLE_WAIT, changes.changed()).await;
            continue;
        }
        let complete = hand_over(
            &aggregate,
            &progress,
            &identity,
            batch,
            &inbox,
            &mut answers,
            &mut stored_ahead,
        )
        .await;
        drop(aggregate);
        if !complete {
            tokio::time::sleep(RETRY_WAIT).await;
        }
    }
}

/// A new source with no header here starts where its config says.
fn resolve_start(progress: &SourceProgress, origin: &Stream) {
    if progress.position.load(Ordering::Relaxed) > 0 {
        return;
    }
    let source = &progress.source;
    let start = if source.opt_start_seq > 0 {
        source.opt_start_seq
    } else if let Some(time) = &source.opt_start_time {
        origin.store.read().seq_for_time(time.unix_nanos())
    } else {
        return;
    };
    progress
        .position
        .store(start.saturating_sub(1), Ordering::Relaxed);
}

/// Up to a batch of the origin's messages from `start` on, minus those already stored; also
/// the last sequence looked at.
fn read_batch(
    origin: &Stream,
    filters: &[String],
    start: u64,
    stored_ahead: &BTreeSet<u64>,
) -> (Vec<nats_store::StoredMessage>, u64) {
    let mut batch = Vec::new();
    let mut bytes = 0;
    let mut seq = start;
    let mut examined = start.saturating_sub(1);
    let mut store = origin.store.read();
    while batch.len() < BATCH_MESSAGES && bytes < BATCH_BYTES {
        let Ok(Some(message)) = store.load_next_matching(filters, seq) else {
            break;
        };
        seq = message.seq + 1;
        examined = message.seq;
        if stored_ahead.contains(&message.seq) {
            continue;
        }
        bytes += message.payload.len() + message.headers.len() + message.subject.len();
        batch.push(message);
    }
    (batch, examined)
}

/// Hand one batch to the aggregate's ingest task and wait for its answers. True when every
/// message was stored (or was a duplicate); the position moves over the unbroken run of those.
async fn hand_over(
    aggregate: &Stream,
    progress: &SourceProgress,
    origin_identity: &str,
    batch: Vec<nats_store::StoredMessage>,
    inbox: &str,
    answers: &mut Answers,
    stored_ahead: &mut BTreeSet<u64>,
) -> bool {
    let no_ack = aggregate.config.read().no_ack;
    let mut pending: BTreeSet<u64> = BTreeSet::new();
    let last_seq = batch.last().map_or(0, |message| message.seq);
    for message in batch {
        let header = sourced_header(
            &message.headers,
            &progress
                .key
                .header_value(message.seq, &message.subject, origin_identity),
        );
        let size = header.len() + message.payload.len();
        while !aggregate.backlog.admit(size) {
            // The aggregate's queue is full (its own publishers are busy): wait for room.
            if aggregate.stopped.load(Ordering::Relaxed) {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let publish = Message {
            subject: Bytes::from(progress.destination_subject(&message.subject)),
            reply: (!no_ack).then(|| Bytes::from(format!("{inbox}{}", message.seq))),
            headers: Some(header),
            payload: message.payload,
        };
        pending.insert(message.seq);
        if !aggregate.send(StreamCommand::Sourced(publish)) {
            return false;
        }
    }
    if no_ack {
        // Nothing will answer: trust the hand-over once the queue has drained.
        let deadline = tokio::time::Instant::now() + ANSWER_WAIT;
        while aggregate.backlog.queued() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        progress.position.store(last_seq, Ordering::Relaxed);
        return true;
    }
    let deadline = tokio::time::Instant::now() + ANSWER_WAIT;
    let mut first_refused: Option<u64> = None;
    while !pending.is_empty() {
        let Ok(Some((seq, answer))) = tokio::time::timeout_at(deadline, answers.recv()).await
        else {
            break;
        };
        if !pending.remove(&seq) {
            continue; // an answer to an earlier attempt
        }
        progress
            .contact
            .store(crate::time_format::now_nanos(), Ordering::Relaxed);
        if is_refusal(&answer) {
            tracing::debug!(
                stream = %aggregate.name,
                origin = %progress.source.name,
                seq,
                answer = %String::from_utf8_lossy(&answer),
                "sourced message refused, will retry"
            );
            first_refused.get_or_insert(seq);
        } else if first_refused.is_some() {
            stored_ahead.insert(seq);
        } else {
            progress.position.store(seq, Ordering::Relaxed);
            if !is_duplicate(&answer) {
                progress.stored.store(seq, Ordering::Relaxed);
            }
        }
    }
    pending.is_empty() && first_refused.is_none()
}

fn is_duplicate(answer: &[u8]) -> bool {
    answer.windows(11).any(|window| window == b"\"duplicate\"")
}

fn is_refusal(answer: &[u8]) -> bool {
    answer.windows(8).any(|window| window == b"\"error\":")
}

/// `sources` of STREAM.INFO, in config order.
pub(crate) fn info(stream: &Stream, origins: &dyn StreamLookup) -> Vec<StreamSourceInfo> {
    let entries = stream.sources.entries.lock().clone();
    let now = crate::time_format::now_nanos();
    entries
        .iter()
        .map(|progress| {
            let position = progress.position.load(Ordering::Relaxed);
            let lag = match origins.stream(&progress.source.name) {
                Some(origin) if progress.source.external.is_none() => {
                    let filters = progress.filters();
                    origin
                        .store
                        .read()
                        .num_pending_matching(&filters, position + 1, false)
                }
                _ => 0,
            };
            let contact = progress.contact.load(Ordering::Relaxed);
            StreamSourceInfo {
                name: progress.source.name.clone(),
                external: progress.source.external.clone(),
                lag,
                seq: progress.stored.load(Ordering::Relaxed),
                active: if contact == 0 {
                    Nanos(-1)
                } else {
                    Nanos((now - contact).max(0))
                },
                error: progress.error.lock().clone(),
                filter_subject: progress.source.filter_subject.clone(),
                subject_transforms: progress.source.subject_transforms.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::source_header::tests::source;
    use super::*;

    #[test]
    fn positions_recover_from_headers_with_and_without_identity() {
        let store = super::super::StoreHandle::new(Box::new(nats_store::MemStore::new(
            nats_store::StreamStoreConfig::default(),
        )));
        {
            let mut store = store.write();
            let mut put = |headers: &[u8]| {
                store.store_msg("s", headers, b"", None).expect("stored");
            };
            // Written before the identity existed, then with it, then by another source.
            put(b"NATS/1.0\r\nNats-Stream-Source: A 4 > > a.x\r\n\r\n");
            put(b"NATS/1.0\r\nNats-Stream-Source: B 7 b.> > b.y\r\n\r\n");
            put(b"NATS/1.0\r\nNats-Stream-Source: A 5 > > a.y PpRdi5Th\r\n\r\n");
            put(b"NATS/1.0\r\nX: 1\r\n\r\n");
        }
        let sources = [
            Arc::new(SourceProgress::new(source("A", "", &[]))),
            Arc::new(SourceProgress::new(source("B", "b.>", &[]))),
            Arc::new(SourceProgress::new(source("C", "", &[]))),
        ];
        recover_positions(&store, &sources);
        let recovered = |progress: &SourceProgress| {
            (
                progress.position.load(Ordering::Relaxed),
                progress.stored.load(Ordering::Relaxed),
                progress.origin_identity.lock().clone(),
            )
        };
        assert_eq!(recovered(&sources[0]), (5, 5, Some("PpRdi5Th".to_string())));
        assert_eq!(recovered(&sources[1]), (7, 7, None));
        assert_eq!(recovered(&sources[2]), (0, 0, None));
    }

    #[test]
    fn filters_collapse_to_everything() {
        assert!(SourceProgress::new(source("O", "", &[]))
            .filters()
            .is_empty());
        assert_eq!(
            SourceProgress::new(source("O", "o.a", &[])).filters(),
            vec!["o.a".to_string()]
        );
        assert!(SourceProgress::new(source("O", "", &[("", "x.>")]))
            .filters()
            .is_empty());
    }
}
