//! `$JS.API` request handling: the dispatcher (the subject parsed once by
//! `jetstream_api::ApiSubject`, then one `match` to the handler of its resource's file), the
//! reply helpers and the API counters. Requests wait in two queues served by two dedicated
//! threads ([`queue`]): admin requests one at a time in arrival order (they must not race),
//! info requests beside them; handlers that read a stream take its store lock briefly.
//!
//! Subjects nats-server does not serve get no answer at all (the client times out), exactly as
//! nats-server; `DIRECT.GET` is not served here but by per-stream subscriptions
//! ([`direct`]), which exist only when the stream allows direct gets.

mod account;
mod consumers;
pub(crate) mod direct;
mod messages;
pub(crate) mod queue;
pub(crate) mod streams;

use crate::engine::Engine;
use crate::level::required_level_met;
use crate::transport::Message;
use bytes::Bytes;
use consumers::CreateKind;
use jetstream_api::ApiSubject;
use serde::Serialize;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A request as the handlers see it.
pub(crate) struct Request {
    pub reply: Bytes,
    pub payload: Bytes,
    /// The request's header block, if it had one (only `Nats-Required-Api-Level` is read).
    pub headers: Option<Bytes>,
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

impl Engine {
    /// The `412 JetStream minimum api level required` answer, in the shape of each response.
    fn required_level_error(&self, request: &Request, api: &ApiSubject<'_>) {
        use jetstream_api::*;
        let error = errors::REQUIRED_API_LEVEL.to_error();
        match api {
            ApiSubject::AccountInfo => {
                self.respond(request, &AccountInfoResponse::error(error), true)
            }
            ApiSubject::StreamCreate { .. } => {
                self.respond(request, &StreamCreateResponse::error(error), true)
            }
            ApiSubject::StreamUpdate { .. } => {
                self.respond(request, &StreamUpdateResponse::error(error), true)
            }
            ApiSubject::StreamInfo { .. } => {
                self.respond(request, &StreamInfoResponse::error(error), true)
            }
            ApiSubject::StreamDelete { .. } => self.respond(
                request,
                &SuccessResponse::error(STREAM_DELETE_RESPONSE_TYPE, error),
                true,
            ),
            ApiSubject::StreamPurge { .. } => {
                self.respond(request, &StreamPurgeResponse::error(error), true)
            }
            ApiSubject::StreamNames => {
                self.respond(request, &StreamNamesResponse::error(error), true)
            }
            ApiSubject::StreamList => {
                self.respond(request, &StreamListResponse::error(error), true)
            }
            ApiSubject::StreamMsgGet { .. } => {
                self.respond(request, &MsgGetResponse::error(error), true)
            }
            ApiSubject::StreamMsgDelete { .. } => self.respond(
                request,
                &SuccessResponse::error(STREAM_MSG_DELETE_RESPONSE_TYPE, error),
                true,
            ),
            _ => {}
        }
    }

    /// One `$JS.API` request: the subject parsed once ([`ApiSubject`]), then its handler.
    /// Subjects nats-server has no handler for, and the cluster operations a single server
    /// does not answer, get no answer at all.
    pub(crate) async fn handle_api_request(self: &Arc<Self>, message: Message) {
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
        };
        if !checks_level_itself(&api) && !required_level_met(message.headers.as_deref()) {
            self.required_level_error(&request, &api);
            return;
        }
        match api {
            ApiSubject::AccountInfo => self.account_info(&request),
            ApiSubject::StreamCreate { stream } => self.stream_create(&request, stream).await,
            ApiSubject::StreamUpdate { stream } => self.stream_update(&request, stream).await,
            ApiSubject::StreamInfo { stream } => self.stream_info(&request, stream),
            ApiSubject::StreamDelete { stream } => self.stream_delete(&request, stream).await,
            ApiSubject::StreamPurge { stream } => self.stream_purge(&request, stream).await,
            ApiSubject::StreamNames => self.stream_names(&request),
            ApiSubject::StreamList => self.stream_list(&request),
            ApiSubject::StreamMsgGet { stream } => self.message_get(&request, stream),
            ApiSubject::StreamMsgDelete { stream } => self.message_delete(&request, stream).await,
            ApiSubject::ConsumerCreate {
                stream,
                consumer: None,
                ..
            } => {
                self.consumer_create(&request, CreateKind::LegacyEphemeral, stream, "", "")
                    .await
            }
            ApiSubject::ConsumerCreate {
                stream,
                consumer: Some(name),
                filter,
            } => {
                let filter = filter.unwrap_or_default();
                self.consumer_create(&request, CreateKind::New, stream, name, filter)
                    .await
            }
            ApiSubject::ConsumerDurableCreate { stream, consumer } => {
                self.consumer_create(&request, CreateKind::LegacyDurable, stream, consumer, "")
                    .await
            }
            // A single server refuses before looking at the level, as nats-server does
            // outside a cluster.
            ApiSubject::ConsumerLeaderStepdown { .. } => self.respond(
                &request,
                &jetstream_api::SuccessResponse::error(
                    jetstream_api::CONSUMER_LEADER_STEPDOWN_RESPONSE_TYPE,
                    jetstream_api::errors::CLUSTER_REQUIRED.to_error(),
                ),
                true,
            ),
            ApiSubject::ConsumerInfo { stream, consumer } => {
                self.consumer_info(&request, stream, consumer).await
            }
            ApiSubject::ConsumerDelete { stream, consumer } => {
                self.consumer_delete(&request, stream, consumer).await
            }
            ApiSubject::ConsumerNames { stream } => self.consumer_names(&request, stream),
            ApiSubject::ConsumerList { stream } => self.consumer_list(&request, stream),
            ApiSubject::ConsumerPause { stream, consumer } => {
                self.consumer_pause(&request, stream, consumer).await
            }
            ApiSubject::ConsumerUnpin { stream, consumer } => {
                self.consumer_unpin(&request, stream, consumer).await
            }
            ApiSubject::ConsumerReset { stream, consumer } => {
                self.consumer_reset(&request, stream, consumer).await
            }
            _ => {}
        }
    }

    /// Send a JSON response without touching the API counters.
    pub(crate) fn respond_uncounted<T: Serialize>(&self, request: &Request, body: &T) {
        self.transport.publish(Message {
            subject: request.reply.clone(),
            reply: None,
            headers: None,
            payload: Bytes::from(jetstream_api::json::encode_response(body)),
        });
    }

    /// Send a JSON response, counting it (and counting it as an error when `failed`).
    /// Counted before the answer goes out: the info thread may answer the requester's next
    /// `$JS.API.INFO` before this thread would get to count otherwise.
    pub(crate) fn respond<T: Serialize>(&self, request: &Request, body: &T, failed: bool) {
        self.api.total.fetch_add(1, Ordering::Relaxed);
        if failed {
            self.api.errors.fetch_add(1, Ordering::Relaxed);
        }
        self.respond_uncounted(request, body);
    }
}
