//! Where `$JS.API` requests wait and run. The subscription handlers (on the publisher's task)
//! only classify and enqueue; dedicated threads serve the queues, so a request that takes
//! seconds of CPU (a 100k-subject STREAM.CREATE) can delay other API requests of its queue but
//! never the runtime's workers (routing, accepts, every connection).
//!
//! As nats-server: admin requests (creates, updates, deletes, purges, message get/delete) and
//! info requests (ACCOUNT.INFO, STREAM.INFO/NAMES/LIST, CONSUMER.INFO/NAMES/LIST) have separate
//! queues; admin requests run one at a time in arrival order (they must not race); info
//! requests, which only read, run on one thread per CPU (at most 16), as nats-server serves
//! both its queues with `GOMAXPROCS` workers (`setJetStreamExportSubs`). A queue that
//! reaches its limit (`jetstream { request_queue_limit, info_queue_limit }`, by default
//! nats-server's `JSDefaultRequestQueueLimit`, 10,000, for both) drops everything pending, logs
//! a warning and publishes `$JS.EVENT.ADVISORY.API.LIMIT_REACHED`; the dropped requests get no
//! answer (their clients time out), as in nats-server. Requests are never larger than the
//! connection's `max_payload`, which the protocol parser enforces before they get here.

use super::Context;
use crate::transport::Message;
use bytes::Bytes;
use jetstream_api::advisory::{self, Advisory, ApiLimitReached};
use jetstream_api::{ApiSubject, Timestamp};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Notify;

/// nats-server's `JSDefaultRequestQueueLimit` (its info queue defaults to the same).
pub(crate) const REQUEST_QUEUE_LIMIT: usize = 10_000;

/// The info queue's threads: one per CPU, at most 16 (nats-server's API workers).
fn info_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |cpus| cpus.get().min(16))
}

/// A request waiting with the context of the account it came from.
struct Pending {
    context: Arc<Context>,
    message: Message,
    /// When it arrived (a leader stepdown is acted on only by a leadership that began before
    /// it arrived, `clustered::leader_stepdown`).
    arrived: Instant,
    /// Queued again after it waited for a meta leader ([`super::meta_wait`]): it does not
    /// wait again.
    waited: bool,
}

/// One queue of pending requests and the wake-up of the thread serving it.
struct Queue<T = Pending> {
    name: &'static str,
    pending: Mutex<VecDeque<T>>,
    wake: Notify,
}

impl<T> Queue<T> {
    fn new(name: &'static str) -> Self {
        Queue {
            name,
            pending: Mutex::new(VecDeque::new()),
            wake: Notify::new(),
        }
    }

    /// Enqueue; at the limit everything pending is dropped and the number dropped returned.
    fn push(&self, request: T, limit: usize) -> Option<usize> {
        let dropped = {
            let mut pending = self.pending.lock();
            pending.push_back(request);
            if pending.len() >= limit {
                let dropped = pending.len();
                pending.clear();
                Some(dropped)
            } else {
                None
            }
        };
        if dropped.is_none() {
            self.wake.notify_one();
        }
        dropped
    }

    fn pop(&self) -> Option<T> {
        self.pending.lock().pop_front()
    }
}

/// How many requests each queue holds before it drops them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueueLimits {
    admin: usize,
    info: usize,
}

impl QueueLimits {
    /// From the config values, as nats-server's `setBaselineOptions`: 0 or negative is the
    /// default; the info queue's limit defaults to the admin queue's.
    pub(crate) fn new(request_queue_limit: i64, info_queue_limit: i64) -> QueueLimits {
        let configured = |value: i64| usize::try_from(value).ok().filter(|limit| *limit > 0);
        let admin = configured(request_queue_limit).unwrap_or(REQUEST_QUEUE_LIMIT);
        let info = configured(info_queue_limit).unwrap_or(admin);
        QueueLimits { admin, info }
    }
}

/// The two queues, their limits and the threads' stop flag.
pub(crate) struct ApiQueues {
    admin: Queue,
    info: Queue,
    limits: QueueLimits,
    closed: AtomicBool,
    /// When the limit warning was last logged (seconds since the epoch): at most one a second.
    last_warning: AtomicU64,
    /// Where probes for ephemeral consumers are answered (`ephemerals.rs`), beside the queues.
    runtime: tokio::runtime::Handle,
    /// The requests waiting aside for a meta leader ([`super::meta_wait`]).
    meta_waiting: Arc<super::meta_wait::WaitingRoom>,
}

/// Whether nats-server serves this request from its info queue.
fn is_info_request(subject: &[u8]) -> bool {
    let Ok(subject) = std::str::from_utf8(subject) else {
        return false;
    };
    matches!(
        ApiSubject::parse(subject),
        Some(
            ApiSubject::AccountInfo
                | ApiSubject::StreamNames
                | ApiSubject::StreamList
                | ApiSubject::StreamInfo { .. }
                | ApiSubject::ConsumerNames { .. }
                | ApiSubject::ConsumerList { .. }
                | ApiSubject::ConsumerInfo { .. }
        )
    )
}

/// Whether the request is a STREAM.CREATE (which may go beside the creations in flight).
fn is_stream_create(subject: &[u8]) -> bool {
    std::str::from_utf8(subject).is_ok_and(|subject| {
        matches!(
            ApiSubject::parse(subject),
            Some(ApiSubject::StreamCreate { .. })
        )
    })
}

impl ApiQueues {
    /// Start the serving threads (one for the admin queue, [`info_threads`] for the info
    /// queue). They run the handlers with `runtime.block_on`, so the
    /// handlers may await stream and consumer tasks, which stay on the runtime.
    pub(crate) fn start(
        runtime: tokio::runtime::Handle,
        limits: QueueLimits,
    ) -> std::io::Result<Arc<ApiQueues>> {
        let queues = Arc::new(ApiQueues {
            admin: Queue::new("JetStream API queue"),
            info: Queue::new("JetStream API info queue"),
            limits,
            closed: AtomicBool::new(false),
            last_warning: AtomicU64::new(0),
            runtime: runtime.clone(),
            meta_waiting: Arc::default(),
        });
        // A current-thread runtime (unit tests with a paused clock, which would jump ahead
        // while another thread works) serves the queues with tasks instead.
        let own_threads = runtime.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread;
        let servers = std::iter::once(("js-api".to_string(), false)).chain(
            (0..if own_threads { info_threads() } else { 1 })
                .map(|index| (format!("js-api-info-{index}"), true)),
        );
        for (thread_name, info) in servers {
            let queues = queues.clone();
            if own_threads {
                let runtime = runtime.clone();
                std::thread::Builder::new()
                    .name(thread_name)
                    .spawn(move || runtime.block_on(queues.serve(info)))?;
            } else {
                runtime.spawn(queues.serve(info));
            }
        }
        Ok(queues)
    }

    /// The requests waiting aside for a meta leader.
    pub(crate) fn meta_waiting(&self) -> &Arc<super::meta_wait::WaitingRoom> {
        &self.meta_waiting
    }

    fn queue(&self, info: bool) -> &Queue {
        if info {
            &self.info
        } else {
            &self.admin
        }
    }

    async fn serve(self: Arc<Self>, info: bool) {
        let queue = self.queue(info);
        loop {
            while let Some(pending) = queue.pop() {
                if self.closed.load(Ordering::Acquire) {
                    return;
                }
                // An admin request other than a creation waits for the account's creations in
                // flight (`creations.rs`): it may be about one of them.
                if !info
                    && pending.context.creations.any()
                    && !is_stream_create(&pending.message.subject)
                {
                    pending.context.creations.idle().await;
                }
                let meta_wait = (!pending.waited).then_some(&self);
                let Pending {
                    context,
                    message,
                    arrived,
                    ..
                } = pending;
                super::handle_request(&context, message, arrived, meta_wait).await;
            }
            // Made before the flag is read: `close`'s `notify_waiters` reaches it even if
            // it is not yet polled (several threads may wait on one queue).
            let woken = queue.wake.notified();
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            woken.await;
        }
    }

    /// Called by the `$JS.API` subscription handlers: classify and enqueue, never block.
    pub(crate) fn enqueue(&self, context: &Arc<Context>, message: Message) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        // A stream leader asking for the ephemerals run here is answered at once, never behind
        // this server's own requests (which may be waiting for that leader's answers).
        if super::ephemerals::is_probe(&message) {
            let context = context.clone();
            self.runtime
                .spawn(async move { super::ephemerals::answer_probe(&context, message).await });
            return;
        }
        self.push(context, message, false);
    }

    /// Queues a request again once it waited for a meta leader ([`super::meta_wait`]): its
    /// queue's thread handles it as any other, answering 10008 at once if there is still none.
    /// It arrives anew (a request that needs the meta group is no leader stepdown).
    pub(crate) fn requeue_waited(&self, context: &Arc<Context>, message: Message) {
        if !self.closed.load(Ordering::Acquire) {
            self.push(context, message, true);
        }
    }

    fn push(&self, context: &Arc<Context>, message: Message, waited: bool) {
        let info = is_info_request(&message.subject);
        let limit = if info {
            self.limits.info
        } else {
            self.limits.admin
        };
        let queue = self.queue(info);
        let pending = Pending {
            context: context.clone(),
            message,
            arrived: Instant::now(),
            waited,
        };
        if let Some(dropped) = queue.push(pending, limit) {
            self.limit_reached(context, queue.name, dropped);
        }
    }

    fn limit_reached(&self, context: &Context, queue_name: &str, dropped: usize) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs());
        if self.last_warning.swap(now, Ordering::Relaxed) != now {
            tracing::warn!("{queue_name} limit reached, dropping {dropped} requests");
        }
        let subject = advisory::API_LIMIT_REACHED_SUBJECT;
        if !context.transport.has_interest(subject) {
            return;
        }
        let body = Advisory::new(
            crate::nuid::next_id(),
            Timestamp::now(),
            ApiLimitReached {
                server: context.server_name.clone(),
                domain: context.domain.clone().unwrap_or_default(),
                dropped: i64::try_from(dropped).unwrap_or(i64::MAX),
            },
        );
        context.publish_json(Bytes::from_static(subject.as_bytes()), &body);
    }

    /// Stop every serving thread; requests still queued are dropped.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        for queue in [&self.admin, &self.info] {
            queue.pending.lock().clear();
            queue.wake.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(subject: &'static str) -> Message {
        Message {
            subject: Bytes::from_static(subject.as_bytes()),
            reply: None,
            headers: None,
            payload: Bytes::new(),
        }
    }

    #[test]
    fn info_requests_are_told_apart() {
        assert!(is_info_request(b"$JS.API.INFO"));
        assert!(is_info_request(b"$JS.API.STREAM.INFO.orders"));
        assert!(is_info_request(b"$JS.API.STREAM.NAMES"));
        assert!(is_info_request(b"$JS.API.CONSUMER.INFO.orders.worker"));
        assert!(!is_info_request(b"$JS.API.STREAM.CREATE.orders"));
        assert!(!is_info_request(b"$JS.API.STREAM.MSG.GET.orders"));
        assert!(!is_info_request(
            b"$JS.API.CONSUMER.DURABLE.CREATE.orders.worker"
        ));
    }

    #[test]
    fn limits_default_as_nats_server() {
        let default = QueueLimits::new(0, 0);
        assert_eq!((default.admin, default.info), (10_000, 10_000));
        let configured = QueueLimits::new(100, -1);
        assert_eq!((configured.admin, configured.info), (100, 100));
        let both = QueueLimits::new(-5, 7);
        assert_eq!((both.admin, both.info), (10_000, 7));
    }

    #[test]
    fn a_full_queue_drops_everything_pending() {
        let queue = Queue::<Message>::new("test");
        assert_eq!(queue.push(request("a"), 3), None);
        assert_eq!(queue.push(request("b"), 3), None);
        assert_eq!(queue.push(request("c"), 3), Some(3));
        assert!(queue.pop().is_none());
        assert_eq!(queue.push(request("d"), 3), None);
        assert_eq!(queue.pop().map(|message| message.subject), Some("d".into()));
    }
}
