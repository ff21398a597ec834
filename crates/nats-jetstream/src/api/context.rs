//! [`Context`]: everything a `$JS.API` handler may use — one account's registry (streams,
//! consumers, account limits and usage), core routing in that account, the domain and server
//! name its answers carry, the account's API counters, and the meta group when clustered. Built
//! per account by [`crate::JetStream::start_accounts`]; the handlers are functions over it, so
//! they cannot reach the engine's subscriptions or shutdown.

use super::Request;
use crate::registry::Registry;
use crate::transport::{Message, Transport};
use bytes::Bytes;
use jetstream_api::advisory::{self, ActionKind, Advisory, StreamAction};
use jetstream_api::Timestamp;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// `$JS.API` requests answered and how many of them were errors (`/jsz`, `$JS.API.INFO`).
#[derive(Default)]
pub(crate) struct ApiCounters {
    pub total: AtomicU64,
    pub errors: AtomicU64,
}

pub(crate) struct Context {
    /// `false` for an account without JetStream: every request is answered with 10039.
    pub enabled: bool,
    pub registry: Arc<Registry>,
    pub transport: Arc<dyn Transport>,
    /// The JetStream domain answers and advisories name.
    pub domain: Option<String>,
    /// The server name answers report as the leader.
    pub server_name: String,
    pub counters: ApiCounters,
    /// In a cluster, the other servers' API counters and consumers (of the streams each leads)
    /// of this account, summed from their usage reports (`engine::cluster_usage`).
    pub remote_counts: parking_lot::Mutex<(
        crate::engine::cluster_usage::ApiCounts,
        crate::engine::cluster_usage::ConsumerCounts,
    )>,
    /// The meta group, once the server installed it ([`crate::JetStream::set_cluster`]):
    /// requests are then answered as nats-server answers them in a cluster.
    pub cluster: std::sync::OnceLock<Arc<dyn crate::cluster::Cluster>>,
    /// The reply subjects of the stream reads answered here lately, so a read a leader kept
    /// through its handover and sent again is not answered twice ([`super::handover`]).
    pub answered: parking_lot::Mutex<super::handover::Answered>,
    /// The reply subjects of the stream reads that reached this server lately (originals, not
    /// copies): a copy that overtook its original is not answered before it
    /// ([`super::handover::overtook_original`]).
    pub seen: parking_lot::Mutex<super::handover::Answered>,
    /// The account's STREAM.CREATE proposals in flight on the meta leader
    /// ([`super::creations`]).
    pub creations: super::creations::Creations,
}

impl Context {
    /// Answer a creation once what it left pending (`storage::sync_created`) is durable:
    /// at once when nothing is; otherwise from a runtime task, so the admin queue goes on with
    /// the next request while the fsyncs run and those of concurrent creations overlap (a
    /// journaling file system commits them together) instead of queueing one after another.
    pub(crate) fn answer_when_durable(
        self: &Arc<Self>,
        pending: Option<Arc<nats_store::CreationSync>>,
        answer: impl FnOnce(&Context, Result<(), nats_store::StoreError>) + Send + 'static,
    ) {
        let Some(pending) = pending.filter(|creation| !creation.is_done()) else {
            return answer(self, Ok(()));
        };
        let context = self.clone();
        tokio::spawn(async move {
            let synced = crate::stream::storage::sync_created(Some(pending)).await;
            answer(&context, synced);
        });
    }

    /// Send a JSON response without touching the API counters.
    pub(crate) fn respond_uncounted<T: Serialize>(&self, request: &Request, body: &T) {
        self.publish_json(request.reply.clone(), body);
    }

    /// Send a JSON response, counting it (and counting it as an error when `failed`).
    /// Counted before the answer goes out: the info thread may answer the requester's next
    /// `$JS.API.INFO` before this thread would get to count otherwise.
    pub(crate) fn respond<T: Serialize>(&self, request: &Request, body: &T, failed: bool) {
        self.count(failed);
        self.respond_uncounted(request, body);
    }

    /// [`Context::respond`] with a body already encoded.
    pub(crate) fn respond_encoded(&self, request: &Request, body: Vec<u8>, failed: bool) {
        self.count(failed);
        self.publish_encoded(request.reply.clone(), body);
    }

    fn count(&self, failed: bool) {
        self.counters.total.fetch_add(1, Ordering::Relaxed);
        if failed {
            self.counters.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Publish a JSON body (an answer or an advisory) through core routing.
    pub(crate) fn publish_json<T: Serialize>(&self, subject: impl Into<Bytes>, body: &T) {
        self.publish_encoded(subject, jetstream_api::json::encode_response(body));
    }

    fn publish_encoded(&self, subject: impl Into<Bytes>, body: Vec<u8>) {
        self.transport.publish(Message {
            subject: subject.into(),
            reply: None,
            headers: None,
            payload: Bytes::from(body),
        });
    }

    /// `$JS.EVENT.ADVISORY.STREAM.CREATED`, `.UPDATED` and `.DELETED.<stream>` with
    /// nats-server's `stream_action` body; published only when someone listens, as
    /// nats-server does.
    pub(crate) fn advise_stream_action(&self, stream: &str, action: ActionKind) {
        let subject = match action {
            ActionKind::Create => advisory::stream_created_subject(stream),
            ActionKind::Delete => advisory::stream_deleted_subject(stream),
            ActionKind::Modify => advisory::stream_updated_subject(stream),
        };
        if !self.transport.has_interest(&subject) {
            return;
        }
        let body = Advisory::new(
            crate::nuid::next_id(),
            Timestamp::now(),
            StreamAction {
                stream: stream.to_string(),
                action,
                domain: self.domain.clone().unwrap_or_default(),
            },
        );
        self.publish_json(subject, &body);
    }
}
