//! `$JS.API` request handling: the dispatcher (the subject parsed once by
//! `jetstream_api::ApiSubject`, then one `match` to the handler of its resource's file). The
//! handlers are functions over a [`Context`] (registry, transport, domain, server name, API
//! counters and the reply helpers), one file per resource: `account.rs`, `streams.rs`,
//! `messages.rs`, `consumers.rs`, `direct.rs`. Called by the queues' threads; nothing here
//! knows the engine's subscriptions or shutdown. Requests wait in two queues served by dedicated
//! threads ([`queue`]): admin requests one at a time in arrival order (they must not race),
//! info requests beside them on one thread per CPU; handlers that read a stream take its store lock briefly.
//!
//! Subjects nats-server does not serve get no answer at all (the client times out), exactly as
//! nats-server; `DIRECT.GET` is not served here but by per-stream subscriptions
//! ([`direct`]), which exist only when the stream allows direct gets. In a cluster
//! ([`clustered`]) one server answers each request: the meta leader or the stream's holder (the
//! reads a leader receives while it hands its leadership over are sent again once someone
//! answers them: [`handover`]); the
//! assignments the meta group applies are carried out by [`clustered_apply`].

mod account;
pub(crate) mod clustered;
pub(crate) mod clustered_apply;
pub(crate) mod consumers;
mod context;
pub(crate) mod creations;
pub(crate) mod direct;
mod ephemerals;
pub(crate) mod handover;
pub(crate) mod messages;
mod meta_wait;
pub(crate) mod queue;
pub(crate) mod streams;

pub(crate) use context::{ApiCounters, Context};

use crate::level::required_level_met;
use crate::transport::Message;
use bytes::Bytes;
use consumers::CreateKind;
use jetstream_api::ApiSubject;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A debug line about what this server does with a clustered request (its arrival, a wait
/// aside, an answer, a silence): a failing run's node logs then tell which server dropped what.
/// The arguments are evaluated only when debug logging is on.
macro_rules! api_debug {
    ($subject:expr, $reply:expr, $($arg:tt)+) => {
        tracing::debug!(
            "JetStream API {} reply {}: {}",
            $subject,
            String::from_utf8_lossy(&$reply),
            format_args!($($arg)+)
        )
    };
}
pub(crate) use api_debug;

/// The request's replicated stream as this server sees it, for [`api_debug`]'s lines.
fn stream_view(cluster: &dyn crate::cluster::Cluster, api: &ApiSubject<'_>) -> String {
    let Some(group) = clustered::stream_of(api).and_then(|stream| cluster.stream_group(stream))
    else {
        return String::new();
    };
    format!(
        "; stream: leads {}, handing over {}, leaderless for {:?}",
        group.is_leader(),
        group.handover().is_some(),
        group.leaderless_for()
    )
}

/// How a request reached the dispatcher, for [`api_debug`]'s lines (formatted only when they
/// are written): its time in the queue, whether it came back from a wait, who kept a copy.
struct Arrival<'a> {
    arrived: Instant,
    requeued: bool,
    message: &'a Message,
}

impl std::fmt::Display for Arrival<'_> {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(out, "after {:?}", self.arrived.elapsed())?;
        if self.requeued {
            write!(out, " (requeued)")?;
        }
        let keepers = handover::kept_by(self.message);
        if !keepers.is_empty() {
            write!(out, " (a copy kept by {keepers})")?;
        }
        Ok(())
    }
}

/// Answers 10008 "JetStream system temporarily unavailable" (`why`, for the debug line), as any
/// read, but a kept read's copy only if the original was not answered so here (`handover.rs`).
fn answer_unavailable(
    context: &Context,
    request: &Request,
    api: &ApiSubject<'_>,
    message: &Message,
    arrival: &Arrival<'_>,
    why: &str,
) {
    if handover::answered_before(context, api, message) {
        return;
    }
    let subject = String::from_utf8_lossy(&message.subject);
    api_debug!(subject, request.reply, "{arrival}: answered 10008, {why}");
    let error = jetstream_api::errors::CLUSTER_NOT_AVAIL.to_error();
    respond_error(context, request, api, error);
}

/// How long a just-elected meta leader holds a request it is to answer until a quorum confirms
/// its leadership (one heartbeat round, normally well under a second; seconds on a loaded
/// machine, where the 3 s this was left a create unanswered in a CI run). Still unconfirmed
/// then, it answers 10008 rather than nothing: nobody else answers a request that reached
/// every other server while it led.
const META_CONFIRM_WAIT: Duration = Duration::from_secs(5);

/// A request as the handlers see it.
#[derive(Clone)]
pub(crate) struct Request {
    pub reply: Bytes,
    pub payload: Bytes,
    /// The request's header block, if it had one (only `Nats-Required-Api-Level` is read).
    pub headers: Option<Bytes>,
    /// When it reached this server (queued behind others, it may be handled much later).
    pub arrived: Instant,
}

impl Request {
    /// nats-server's `isJSONObjectOrArray`: only such bodies are decoded by lenient handlers.
    pub(crate) fn has_json_body(&self) -> bool {
        let trimmed = self.payload.iter().find(|byte| !byte.is_ascii_whitespace());
        matches!(trimmed, Some(b'{') | Some(b'['))
    }

    /// The `412` refusal when the request asks for a newer API level than ours. Each consumer
    /// handler calls it at the point nats-server's handler does, which differs between them
    /// (CREATE and PAUSE decode the body first, INFO checks it is empty first).
    pub(crate) fn check_api_level(&self) -> Result<(), jetstream_api::ApiError> {
        if required_level_met(self.headers.as_deref()) {
            Ok(())
        } else {
            Err(jetstream_api::errors::REQUIRED_API_LEVEL.to_error())
        }
    }
}

/// The consumer requests, which check the API level themselves, each at nats-server's point.
fn checks_level_itself(api: &ApiSubject<'_>) -> bool {
    matches!(
        api,
        ApiSubject::ConsumerCreate { .. }
            | ApiSubject::ConsumerDurableCreate { .. }
            | ApiSubject::ConsumerNames { .. }
            | ApiSubject::ConsumerList { .. }
            | ApiSubject::ConsumerInfo { .. }
            | ApiSubject::ConsumerDelete { .. }
            | ApiSubject::ConsumerPause { .. }
            | ApiSubject::ConsumerUnpin { .. }
            | ApiSubject::ConsumerReset { .. }
            | ApiSubject::ConsumerMsgNext { .. }
            | ApiSubject::ConsumerLeaderStepdown { .. }
    )
}

/// An error answer in the shape of each response: the `412 JetStream minimum api level
/// required` refusal, and `10039 JetStream not enabled for account` for every request of an
/// account without JetStream.
fn respond_error(
    context: &Context,
    request: &Request,
    api: &ApiSubject<'_>,
    error: jetstream_api::ApiError,
) {
    use jetstream_api::*;
    match api {
        ApiSubject::AccountInfo => {
            context.respond(request, &AccountInfoResponse::error(error), true)
        }
        ApiSubject::StreamCreate { .. } => {
            context.respond(request, &StreamCreateResponse::error(error), true)
        }
        ApiSubject::StreamUpdate { .. } => {
            context.respond(request, &StreamUpdateResponse::error(error), true)
        }
        ApiSubject::StreamInfo { .. } => {
            context.respond(request, &StreamInfoResponse::error(error), true)
        }
        ApiSubject::StreamDelete { .. } => context.respond(
            request,
            &SuccessResponse::error(STREAM_DELETE_RESPONSE_TYPE, error),
            true,
        ),
        ApiSubject::StreamPurge { .. } => {
            context.respond(request, &StreamPurgeResponse::error(error), true)
        }
        ApiSubject::StreamNames => {
            context.respond(request, &StreamNamesResponse::error(error), true)
        }
        ApiSubject::StreamList => context.respond(request, &StreamListResponse::error(error), true),
        ApiSubject::StreamMsgGet { .. } => {
            context.respond(request, &MsgGetResponse::error(error), true)
        }
        ApiSubject::StreamMsgDelete { .. } => context.respond(
            request,
            &SuccessResponse::error(STREAM_MSG_DELETE_RESPONSE_TYPE, error),
            true,
        ),
        ApiSubject::ConsumerCreate { .. } | ApiSubject::ConsumerDurableCreate { .. } => context
            .respond(
                request,
                &ConsumerInfoResponse::error(CONSUMER_CREATE_RESPONSE_TYPE, error),
                true,
            ),
        ApiSubject::ConsumerInfo { .. } => context.respond(
            request,
            &ConsumerInfoResponse::error(CONSUMER_INFO_RESPONSE_TYPE, error),
            true,
        ),
        ApiSubject::ConsumerDelete { .. } => context.respond(
            request,
            &SuccessResponse::error(CONSUMER_DELETE_RESPONSE_TYPE, error),
            true,
        ),
        ApiSubject::ConsumerNames { .. } => {
            context.respond(request, &ConsumerNamesResponse::error(error), true)
        }
        ApiSubject::ConsumerList { .. } => {
            context.respond(request, &ConsumerListResponse::error(error), true)
        }
        ApiSubject::ConsumerPause { .. } => {
            context.respond(request, &ConsumerPauseResponse::error(error), true)
        }
        ApiSubject::ConsumerUnpin { .. } => {
            context.respond(request, &ConsumerUnpinResponse::error(error), true)
        }
        ApiSubject::ConsumerReset { .. } => {
            context.respond(request, &ConsumerResetResponse::error(error), true)
        }
        ApiSubject::StreamLeaderStepdown { .. } => context.respond(
            request,
            &SuccessResponse::error(STREAM_LEADER_STEPDOWN_RESPONSE_TYPE, error),
            true,
        ),
        ApiSubject::ConsumerLeaderStepdown { .. } => context.respond(
            request,
            &SuccessResponse::error(CONSUMER_LEADER_STEPDOWN_RESPONSE_TYPE, error),
            true,
        ),
        _ => {}
    }
}

/// One `$JS.API` request: the subject parsed once ([`ApiSubject`]), then its handler.
/// Subjects nats-server has no handler for, and the cluster operations a single server
/// does not answer, get no answer at all. A request that needs the meta group while this
/// server sees no meta leader waits for one aside and comes back to `meta_wait`'s queues
/// ([`meta_wait`]); without them (a request that waited already) it is answered 10008.
pub(crate) async fn handle_request(
    context: &Arc<Context>,
    message: Message,
    arrived: Instant,
    meta_wait: Option<&Arc<queue::ApiQueues>>,
) {
    let Ok(subject) = std::str::from_utf8(&message.subject) else {
        return;
    };
    let Some(api) = ApiSubject::parse(subject) else {
        return;
    };
    let Some(reply) = message.reply.clone().filter(|reply| !reply.is_empty()) else {
        return;
    };
    let request = Request {
        reply,
        payload: message.payload.clone(),
        headers: message.headers.clone(),
        arrived,
    };
    if !context.enabled {
        let error = jetstream_api::errors::NOT_ENABLED_FOR_ACCOUNT.to_error();
        respond_error(context, &request, &api, error);
        return;
    }
    let cluster = context.cluster.get().cloned();
    if let Some(cluster) = &cluster {
        let arrival = Arrival {
            arrived,
            requeued: meta_wait.is_none(),
            message: &message,
        };
        handover::note_original(context, &api, &message);
        if clustered::unavailable_without_meta(context, &api) {
            if let Some(queues) = meta_wait.filter(|_| cluster.meta_leader_missing()) {
                if meta_wait::wait_for_meta_leader(queues, context, cluster.clone(), &message) {
                    api_debug!(
                        subject,
                        request.reply,
                        "{arrival}: no meta leader seen, waits aside; meta: {}",
                        cluster.meta_view()
                    );
                    return;
                }
                api_debug!(
                    subject,
                    request.reply,
                    "{arrival}: no meta leader seen, {} waiting already: handled at once",
                    queues.meta_waiting().waiting()
                );
            }
            if cluster.meta_unavailable() {
                let why = "meta group unavailable";
                answer_unavailable(context, &request, &api, &message, &arrival, why);
                return;
            }
        }
        if clustered::unavailable_without_stream_leader(context, &**cluster, &api) {
            let why = "stream group leaderless";
            answer_unavailable(context, &request, &api, &message, &arrival, why);
            return;
        }
        // A meta leader just elected answers once a quorum confirmed it: a request reaching it
        // meanwhile is held until then, not dropped.
        let meta_answers = clustered::meta_leader_answers(context, &**cluster, &api);
        let answers = clustered::answers_here(context, &**cluster, &api)
            || (meta_answers
                && cluster.meta_leader_within(META_CONFIRM_WAIT).await
                && clustered::answers_here(context, &**cluster, &api));
        if !answers && meta_answers && cluster.is_meta_elected() {
            api_debug!(
                subject,
                request.reply,
                "{arrival}: answered 10008, elected meta leader not confirmed in time; meta: {}",
                cluster.meta_view()
            );
            let error = jetstream_api::errors::CLUSTER_NOT_AVAIL.to_error();
            respond_error(context, &request, &api, error);
            return;
        }
        if !answers {
            // A read that arrived while this server hands the stream's leadership over is
            // sent again once someone answers it (`handover.rs`).
            let kept = handover::keep(context, &**cluster, &api, &message);
            api_debug!(
                subject,
                request.reply,
                "{arrival}: not answered here{}; meta: {}{}",
                if kept {
                    " (kept through a handover)"
                } else {
                    ""
                },
                cluster.meta_view(),
                stream_view(&**cluster, &api)
            );
            return;
        }
        if handover::overtook_original(context, &api, &message) {
            api_debug!(
                subject,
                request.reply,
                "{arrival}: a copy ahead of its original, waits for it"
            );
            return;
        }
        if handover::answered_before(context, &api, &message) {
            api_debug!(
                subject,
                request.reply,
                "{arrival}: a copy of a read answered here, silent"
            );
            return;
        }
        api_debug!(subject, request.reply, "{arrival}: answered here");
    }
    if !checks_level_itself(&api) && !required_level_met(message.headers.as_deref()) {
        let error = jetstream_api::errors::REQUIRED_API_LEVEL.to_error();
        respond_error(context, &request, &api, error);
        return;
    }
    if let Some(cluster) = &cluster {
        if clustered::handle(context, &**cluster, &request, &api).await {
            return;
        }
    }
    match api {
        ApiSubject::AccountInfo => account::account_info(context, &request),
        ApiSubject::StreamCreate { stream } => {
            streams::stream_create(context, &request, stream).await
        }
        ApiSubject::StreamUpdate { stream } => {
            streams::stream_update(context, &request, stream).await
        }
        ApiSubject::StreamInfo { stream } => streams::stream_info(context, &request, stream),
        ApiSubject::StreamDelete { stream } => {
            streams::stream_delete(context, &request, stream).await
        }
        ApiSubject::StreamPurge { stream } => {
            streams::stream_purge(context, &request, stream).await
        }
        ApiSubject::StreamNames => streams::stream_names(context, &request),
        ApiSubject::StreamList => streams::stream_list(context, &request),
        ApiSubject::StreamMsgGet { stream } => messages::message_get(context, &request, stream),
        ApiSubject::StreamMsgDelete { stream } => {
            messages::message_delete(context, &request, stream).await
        }
        ApiSubject::ConsumerCreate {
            stream,
            consumer: None,
            ..
        } => {
            consumers::consumer_create(
                context,
                &request,
                CreateKind::LegacyEphemeral,
                stream,
                "",
                "",
            )
            .await
        }
        ApiSubject::ConsumerCreate {
            stream,
            consumer: Some(name),
            filter,
        } => {
            let filter = filter.unwrap_or_default();
            consumers::consumer_create(context, &request, CreateKind::New, stream, name, filter)
                .await
        }
        ApiSubject::ConsumerDurableCreate { stream, consumer } => {
            consumers::consumer_create(
                context,
                &request,
                CreateKind::LegacyDurable,
                stream,
                consumer,
                "",
            )
            .await
        }
        ApiSubject::StreamPeerRemove { .. } => context.respond(
            &request,
            &jetstream_api::SuccessResponse::error(
                jetstream_api::STREAM_REMOVE_PEER_RESPONSE_TYPE,
                jetstream_api::errors::CLUSTER_REQUIRED.to_error(),
            ),
            true,
        ),
        // A single server refuses before looking at the level, as nats-server does
        // outside a cluster.
        ApiSubject::ConsumerLeaderStepdown { .. } => context.respond(
            &request,
            &jetstream_api::SuccessResponse::error(
                jetstream_api::CONSUMER_LEADER_STEPDOWN_RESPONSE_TYPE,
                jetstream_api::errors::CLUSTER_REQUIRED.to_error(),
            ),
            true,
        ),
        ApiSubject::ConsumerInfo { stream, consumer } => {
            consumers::consumer_info(context, &request, stream, consumer).await
        }
        ApiSubject::ConsumerDelete { stream, consumer } => {
            consumers::consumer_delete(context, &request, stream, consumer).await
        }
        ApiSubject::ConsumerNames { stream } => {
            consumers::consumer_names(context, &request, stream).await
        }
        ApiSubject::ConsumerList { stream } => {
            consumers::consumer_list(context, &request, stream).await
        }
        ApiSubject::ConsumerPause { stream, consumer } => {
            consumers::consumer_pause(context, &request, stream, consumer).await
        }
        ApiSubject::ConsumerUnpin { stream, consumer } => {
            consumers::consumer_unpin(context, &request, stream, consumer).await
        }
        ApiSubject::ConsumerReset { stream, consumer } => {
            consumers::consumer_reset(context, &request, stream, consumer).await
        }
        _ => {}
    }
}
