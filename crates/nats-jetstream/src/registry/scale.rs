//! Scaling a stream's replica count on the servers that hold it (STREAM.UPDATE changing
//! `num_replicas`, applied from the meta group's assignment):
//!
//! - [`Registry::replicate_stream`]: the one server of a stream of one replica turns it into a
//!   replicated stream. It stops taking publishes, lets its queue drain, stops its consumers,
//!   then founds the stream's group alone (the new peers join it: the group's leader adds them
//!   as learners and makes them voters once caught up) and fills the new log from the old
//!   store before the stream leads: every message under its sequence and time (gaps as skips),
//!   then every durable consumer with its state. Ephemeral consumers start again on the new
//!   stream here, with their state and not recorded in the log (they stay R1 on this server, as
//!   nats-server keeps an R1 stream's ephemerals where they ran). The old files go once that is
//!   committed.
//! - [`Registry::update_assigned_stream`]: a replicated stream's new config, its replica count
//!   included (the group's membership follows the assignment's peers, `cluster/membership.rs`).
//!
//! Called by `api/clustered.rs` when an assignment is applied; knows the group only through
//! [`StreamGroup`].

use super::Registry;
use crate::cluster::StreamGroup;
use crate::consumer::replicated::{import_batch, SnapshotConsumer};
use crate::consumer::Home;
use crate::stream::apply::StreamEntry;
use crate::stream::replication::{codec, ReplicationError, Replicator};
use crate::stream::{Stream, StreamCommand};
use bytes::Bytes;
use jetstream_api::{errors, ApiError, ConsumerConfig, StreamConfig};
use nats_store::{ConsumerState, StoreError, StoredMessage};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// A batch of the old store's messages is proposed once it passes this size.
const IMPORT_BATCH_BYTES: usize = 1 << 20;
/// How long a proposal of the import waits for the new group to elect this server.
const IMPORT_BOUND: Duration = Duration::from_secs(30);
const RETRY: Duration = Duration::from_millis(50);

impl Registry {
    /// Turns the stream `old` (one replica, held here) into the replicated stream `config` over
    /// `group`, keeping its messages, sequences and durable consumers; returns the new stream.
    pub(crate) async fn replicate_stream(
        self: &Arc<Self>,
        old: Arc<Stream>,
        config: &StreamConfig,
        group: &Arc<dyn StreamGroup>,
    ) -> Result<Arc<Stream>, ApiError> {
        let (consumers, ephemerals) = quiesce(self, &old).await;
        let batches = {
            let mut store = old.store.read();
            let last = store.state().last_seq;
            encode_messages(last, IMPORT_BATCH_BYTES, |seq| {
                let message = store.load_next(">", seq)?;
                Ok(message.map(|message| {
                    let ttl = store.message_ttl(message.seq);
                    (message, ttl)
                }))
            })
        }
        .map_err(|error| errors::STREAM_UPDATE.with_err(error))?;
        {
            let _guard = self.admin_lock.lock().await;
            self.remove(&old.name);
            self.reserve(&old.config(), -1);
            self.on_stream_stopping(&old);
        }
        group.hold_leadership(true);
        let imported = async {
            let (stream, _) = self
                .create_replicated_stream(config, old.created, group)
                .await?;
            let replicator = group.clone().replicator();
            let failed = |error: ReplicationError| errors::STREAM_UPDATE.with_err(error);
            for batch in batches {
                propose_until(&*replicator, batch).await.map_err(failed)?;
            }
            if !consumers.is_empty() {
                let batch = import_batch(consumers, &*replicator).map_err(failed)?;
                propose_until(&*replicator, batch).await.map_err(failed)?;
            }
            self.restart_ephemerals(&stream, ephemerals).await;
            Ok(stream)
        }
        .await;
        group.hold_leadership(false);
        match &imported {
            Ok(_) => {
                tracing::info!(stream = %old.name, "JetStream stream scaled up from one replica");
                old.stop(true).await;
            }
            Err(error) => {
                // The old files stay: nothing of them is lost, the stream needs an operator.
                tracing::error!(stream = %old.name, ?error, "JetStream stream not scaled up");
                old.stop(false).await;
            }
        }
        imported
    }

    /// Starts the stopped R1 stream's ephemeral consumers again on `stream` (its replicated
    /// successor, led here), each from the state it stopped with; none once a stop began. The
    /// check and the starts hold the admin lock, as a consumer creation's do
    /// ([`Registry::check_open_to_consumers`]): a stop that begins after this started them stops
    /// them with the stream, and one that began before (while the scale-up imported the old
    /// store, after `create_replicated_stream` admitted the new stream) may already have
    /// stopped the stream, where a consumer started now would serve pulls and acks of a stopped
    /// JetStream. The scale-up itself stands (its import is committed); the ephemerals go, as
    /// the stop takes every consumer with its stream.
    async fn restart_ephemerals(&self, stream: &Arc<Stream>, ephemerals: Vec<Ephemeral>) {
        let _guard = self.admin_lock.lock().await;
        if self.check_open_to_consumers().is_err() {
            if !ephemerals.is_empty() {
                tracing::info!(stream = %stream.name, count = ephemerals.len(), "JetStream stopping: a scaled-up stream's ephemeral consumers not started again");
            }
            return;
        }
        let consumers = self.consumers(stream);
        let home = Home {
            stream,
            consumers: &consumers,
            transport: &self.transport,
            domain: self.config.domain.as_deref(),
        };
        for ephemeral in ephemerals {
            let store = crate::consumer::open_store(
                stream,
                &ephemeral.config,
                &ephemeral.name,
                ephemeral.created,
            )
            .and_then(|mut store| store.set_state(ephemeral.state).map(|()| store));
            match store {
                Ok(store) => {
                    let started = crate::consumer::start(
                        &home,
                        ephemeral.config,
                        ephemeral.created,
                        store,
                        true,
                    );
                    started.set_name_generated(ephemeral.name_generated);
                }
                Err(error) => {
                    tracing::warn!(consumer = %ephemeral.name, %error, "ephemeral consumer not kept at a scale-up");
                }
            }
        }
    }

    /// Applies an assigned config to a stream held here, its replica count included (the
    /// single server's update keeps the count).
    pub(crate) async fn update_assigned_stream(
        self: &Arc<Self>,
        config: &StreamConfig,
    ) -> Result<Arc<Stream>, ApiError> {
        let stream = self
            .get(&config.name)
            .ok_or_else(|| errors::STREAM_NOT_FOUND.to_error())?;
        let mut same_count = config.clone();
        same_count.replicas = stream.config().replicas;
        let stream = if same_count == stream.config() {
            stream
        } else {
            self.update_stream(&same_count, false).await?
        };
        stream.config.write().replicas = config.replicas;
        Ok(stream)
    }
}

/// An ephemeral consumer stopped by [`quiesce`], to start again.
struct Ephemeral {
    name: String,
    name_generated: bool,
    config: ConsumerConfig,
    created: i64,
    state: ConsumerState,
}

/// Stops the stream taking publishes and sourcing, waits until its queue is written, and stops
/// its consumers; the durable ones with their last state, the ephemeral ones apart.
async fn quiesce(registry: &Registry, stream: &Stream) -> (Vec<SnapshotConsumer>, Vec<Ephemeral>) {
    stream.unsubscribe_subjects();
    stream.sources.stop_all();
    // A config "update" to the same config is answered once everything queued before it is.
    let (reply, done) = oneshot::channel();
    if stream.send(StreamCommand::UpdateConfig {
        config: Box::new(stream.config()),
        reply,
    }) {
        let _ = done.await;
    }
    let consumers = registry.consumers(stream);
    let mut durable = Vec::new();
    let mut ephemerals = Vec::new();
    for name in consumers.names() {
        let Some(consumer) = consumers.get(&name) else {
            continue;
        };
        crate::consumer::stop_consumer(stream, &consumers, &name, false).await;
        let config = consumer.config();
        let state = consumer.state.lock().state.clone();
        if config.durable_name.is_empty() {
            ephemerals.push(Ephemeral {
                name,
                name_generated: consumer.name_generated(),
                config,
                created: consumer.created,
                state,
            });
        } else {
            durable.push(SnapshotConsumer::of(
                &name,
                &config,
                consumer.created,
                &state,
            ));
        }
    }
    (durable, ephemerals)
}

/// The store's messages (`load_next`: the first from a sequence on) as batches (each closed
/// once past `batch_bytes`) of entries under their own sequences and times, the gaps
/// (before the first, deleted ones, after the last) as skips, through its last sequence.
fn encode_messages(
    last: u64,
    batch_bytes: usize,
    mut load_next: impl FnMut(u64) -> Result<Option<(StoredMessage, Option<Duration>)>, StoreError>,
) -> Result<Vec<Bytes>, String> {
    let mut batches = Vec::new();
    let mut buffer = Vec::new();
    codec::start_batch(&mut buffer);
    let mut next = 1;
    while next <= last {
        let message = load_next(next).map_err(|error| error.to_string())?;
        let seq = message
            .as_ref()
            .map_or(last + 1, |(message, _)| message.seq);
        if seq > next {
            let count = seq.min(last + 1) - next;
            codec::encode(&StreamEntry::Skip { seq: next, count }, &mut buffer);
            next += count;
        }
        if let Some((message, ttl)) = message.filter(|(message, _)| message.seq <= last) {
            codec::encode_stored(&message, ttl, &mut buffer);
            next = message.seq + 1;
        }
        if buffer.len() >= batch_bytes || next > last {
            codec::finish_batch(&mut buffer, 0, next - 1);
            batches.push(Bytes::from(std::mem::take(&mut buffer)));
            codec::start_batch(&mut buffer);
        }
    }
    Ok(batches)
}

/// Proposes `batch`, again while the new group has not elected this server yet.
async fn propose_until(replicator: &dyn Replicator, batch: Bytes) -> Result<(), ReplicationError> {
    let deadline = tokio::time::Instant::now() + IMPORT_BOUND;
    loop {
        match replicator.propose(batch.clone()).await {
            Err(ReplicationError::NotLeader) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(RETRY).await;
            }
            result => return result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Transport;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn message(seq: u64) -> StoredMessage {
        StoredMessage {
            subject: format!("s.{seq}"),
            headers: Bytes::new(),
            payload: Bytes::from(format!("p{seq}")),
            seq,
            timestamp: i64::try_from(seq).unwrap_or_default() * 1000,
        }
    }

    /// (entries as text, each batch's last sequence)
    fn decoded(batches: &[Bytes]) -> (Vec<String>, Vec<u64>) {
        let mut entries = Vec::new();
        let mut lasts = Vec::new();
        for batch in batches {
            let mut batch = codec::decode_batch(batch).expect("batch");
            lasts.push(batch.last_seq);
            while let Some(entry) = batch.next_entry().expect("entry") {
                entries.push(match entry {
                    StreamEntry::Skip { seq, count } => format!("skip {seq}+{count}"),
                    StreamEntry::Message {
                        seq,
                        timestamp,
                        payload,
                        ttl,
                        ..
                    } => {
                        let ttl = match ttl {
                            Some(nats_store::TTL_NEVER) => " ttl never".to_string(),
                            Some(ttl) => format!(" ttl {ttl:?}"),
                            None => String::new(),
                        };
                        format!(
                            "{seq}@{timestamp} {}{ttl}",
                            String::from_utf8_lossy(&payload)
                        )
                    }
                    other => format!("{other:?}"),
                });
            }
        }
        (entries, lasts)
    }

    #[test]
    fn messages_keep_their_sequences_times_and_ttls_with_every_gap_skipped() {
        let stored: BTreeMap<u64, StoredMessage> = [3, 4, 7]
            .into_iter()
            .map(|seq| (seq, message(seq)))
            .collect();
        // Message 4 was stored with a TTL of 5 s, message 7 with "never".
        let ttl = |seq: u64| match seq {
            4 => Some(Duration::from_secs(5)),
            7 => Some(nats_store::TTL_NEVER),
            _ => None,
        };
        let load = |from: u64| {
            Ok(stored
                .range(from..)
                .next()
                .map(|(seq, m)| (m.clone(), ttl(*seq))))
        };
        let whole = encode_messages(9, IMPORT_BATCH_BYTES, load).expect("encode");
        let (entries, lasts) = decoded(&whole);
        assert_eq!(
            entries,
            [
                "skip 1+2",
                "3@3000 p3",
                "4@4000 p4 ttl 5s",
                "skip 5+2",
                "7@7000 p7 ttl never",
                "skip 8+2"
            ]
        );
        assert_eq!(lasts, [9]);
        // Small batches: the same entries, each batch ending where the next begins.
        let load = |from: u64| {
            Ok(stored
                .range(from..)
                .next()
                .map(|(seq, m)| (m.clone(), ttl(*seq))))
        };
        let split = encode_messages(9, 1, load).expect("encode");
        let (split_entries, lasts) = decoded(&split);
        assert_eq!(split_entries, entries);
        assert_eq!(lasts, [3, 4, 7, 9]);
        // Nothing ever stored: nothing to propose.
        assert!(encode_messages(0, 1, |_| Ok(None))
            .expect("encode")
            .is_empty());
    }

    /// A scale-up starts the old stream's ephemerals again on the new one (`restart_ephemerals`)
    /// only while the registry is open: a stop that began while it imported the old store
    /// (after the new stream was admitted) may have stopped the stream already, and an
    /// ephemeral started there would serve pulls of a stopped JetStream. The window itself
    /// opens only between a cluster's assignment and a stop; here the restart is called on the
    /// stream a stop has stopped, as it would be at the end of that window.
    #[tokio::test]
    async fn a_scaled_up_stream_s_ephemerals_start_again_only_before_a_stop() {
        let fixture = crate::tests::fixture().await;
        let created = fixture
            .create(json!({"name": "S", "subjects": ["s.>"], "storage": "file"}))
            .await;
        assert!(created.get("error").is_none(), "{created}");
        let consumer = fixture
            .request(
                "$JS.API.CONSUMER.CREATE.S.E",
                &json!({"stream_name": "S", "config": {"name": "E", "ack_policy": "explicit"}})
                    .to_string(),
            )
            .await;
        assert!(consumer.get("error").is_none(), "{consumer}");
        let context = fixture.jetstream.engine.accounts.load()[0].clone();
        let registry = &context.registry;
        let stream = registry.get("S").expect("stream S");
        let next = "$JS.API.CONSUMER.MSG.NEXT.S.E";

        // Open: the ephemeral runs again, serving pulls.
        let (_, ephemerals) = quiesce(registry, &stream).await;
        assert_eq!(ephemerals.len(), 1);
        assert!(registry.consumers(&stream).get("E").is_none());
        registry.restart_ephemerals(&stream, ephemerals).await;
        assert!(registry.consumers(&stream).get("E").is_some());
        assert!(fixture.router.has_interest(next));

        // A stop began (and stopped the stream): nothing starts.
        let (_, ephemerals) = quiesce(registry, &stream).await;
        assert_eq!(ephemerals.len(), 1);
        fixture.jetstream.shutdown().await;
        registry.restart_ephemerals(&stream, ephemerals).await;
        assert!(
            registry.consumers(&stream).get("E").is_none(),
            "an ephemeral started on a stopped stream"
        );
        assert!(
            !fixture.router.has_interest(next),
            "an ephemeral's pulls are served after the stop"
        );
    }
}
