//! Mirrors of a stream on this server: a task per mirror follows the origin's new-message watch,
//! reads from the origin's store and hands the messages to the mirror's ingest thread, which
//! stores them under the origin's sequences and timestamps (gaps become deleted sequences).
//! The origin may not exist yet, or go away: the task waits for it. A filter or subject
//! transforms of the mirror apply as for sources (`sources.rs`).

use super::{Stream, StreamCommand, StreamLookup};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Messages copied per hand-over to the ingest thread.
const BATCH: usize = 1024;
/// How often a mirror looks for an origin that does not exist (yet).
const ORIGIN_POLL: Duration = Duration::from_millis(250);

/// Follow the origin named in the mirror's config until the mirror stops.
pub(crate) fn spawn(mirror: &Arc<Stream>, origins: Weak<dyn StreamLookup>) {
    let mirror = Arc::downgrade(mirror);
    tokio::spawn(async move {
        let mut cursor: Option<u64> = None;
        loop {
            let Some(stream) = mirror.upgrade() else {
                return;
            };
            if stream.stopped.load(Ordering::Relaxed) {
                return;
            }
            let Some(source) = stream.config.read().mirror.clone() else {
                return;
            };
            if source.external.is_some() {
                // Another domain's or account's stream: this server has no link to reach it, so
                // the mirror stays inactive, as nats-server's does when no one answers.
                return;
            }
            let origin = origins
                .upgrade()
                .and_then(|origins| origins.stream(&source.name));
            stream
                .mirror_origin_missing
                .store(origin.is_none(), Ordering::Relaxed);
            let Some(origin) = origin else {
                drop(stream);
                tokio::time::sleep(ORIGIN_POLL).await;
                continue;
            };
            let mut changes = origin.last_sequence.subscribe();
            let next = *cursor.get_or_insert_with(|| {
                let last = stream.store.state().last_seq;
                if last == 0 && source.opt_start_seq > 0 {
                    source.opt_start_seq
                } else {
                    last + 1
                }
            });
            let filters = super::sources::filters(&source);
            let transforms = super::sources::SourceTransforms::compile(&source);
            let mut batch = Vec::new();
            {
                let mut store = origin.store.read();
                let mut seq = next;
                while batch.len() < BATCH {
                    match store.load_next_matching(&filters, seq) {
                        Ok(Some(mut message)) => {
                            seq = message.seq + 1;
                            if !transforms.is_empty() {
                                message.subject = transforms.destination_subject(&message.subject);
                            }
                            batch.push(message);
                        }
                        _ => break,
                    }
                }
            }
            if let Some(last) = batch.last() {
                cursor = Some(last.seq + 1);
                stream.send(StreamCommand::Mirror(batch));
                continue;
            }
            stream
                .mirror_contact
                .store(crate::time_format::now_nanos(), Ordering::Relaxed);
            drop(stream);
            drop(origin);
            // Wake on the origin's next durable batch; re-check now and then in case the
            // origin was deleted and re-created.
            let _ = tokio::time::timeout(Duration::from_secs(1), changes.changed()).await;
        }
    });
}
