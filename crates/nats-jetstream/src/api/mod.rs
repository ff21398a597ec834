//! `$JS.API` request handling: the dispatcher (subject -> handler), the reply helpers and the
//! API counters. One task serves requests in arrival order (admin operations must not race);
//! handlers that read a stream take its store lock briefly.
//!
//! Subjects nats-server does not serve get no answer at all (the client times out), exactly as
//! nats-server; `DIRECT.GET` is not served here but by per-stream subscriptions
//! ([`direct`]), which exist only when the stream allows direct gets.

mod account;
mod consumers;
pub(crate) mod direct;
mod messages;
mod streams;

use crate::engine::{Engine, API_PREFIX};
use crate::level::required_level_met;
use crate::transport::Message;
use bytes::Bytes;
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

impl Engine {
    /// The `412 JetStream minimum api level required` answer, in the shape of each response.
    fn required_level_error(&self, request: &Request, tokens: &[&str]) {
        use jetstream_api::*;
        let error = errors::REQUIRED_API_LEVEL.to_error();
        match tokens {
            ["INFO"] => self.respond(request, &AccountInfoResponse::error(error), true),
            ["STREAM", "CREATE", _] => {
                self.respond(request, &StreamCreateResponse::error(error), true)
            }
            ["STREAM", "UPDATE", _] => {
                self.respond(request, &StreamUpdateResponse::error(error), true)
            }
            ["STREAM", "INFO", _] => self.respond(request, &StreamInfoResponse::error(error), true),
            ["STREAM", "DELETE", _] => self.respond(
                request,
                &SuccessResponse::error(STREAM_DELETE_RESPONSE_TYPE, error),
                true,
            ),
            ["STREAM", "PURGE", _] => {
                self.respond(request, &StreamPurgeResponse::error(error), true)
            }
            ["STREAM", "NAMES"] => self.respond(request, &StreamNamesResponse::error(error), true),
            ["STREAM", "LIST"] => self.respond(request, &StreamListResponse::error(error), true),
            ["STREAM", "MSG", "GET", _] => {
                self.respond(request, &MsgGetResponse::error(error), true)
            }
            ["STREAM", "MSG", "DELETE", _] => self.respond(
                request,
                &SuccessResponse::error(STREAM_MSG_DELETE_RESPONSE_TYPE, error),
                true,
            ),
            _ => {}
        }
    }

    pub(crate) async fn handle_api_request(self: &Arc<Self>, message: Message) {
        let Ok(subject) = std::str::from_utf8(&message.subject) else {
            return;
        };
        let Some(operation) = subject.strip_prefix(API_PREFIX) else {
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
        let tokens: Vec<&str> = operation.split('.').collect();
        // Consumer handlers check the level themselves, each at nats-server's point.
        if tokens.first() != Some(&"CONSUMER") && !required_level_met(message.headers.as_deref()) {
            self.required_level_error(&request, &tokens);
            return;
        }
        match tokens.as_slice() {
            ["INFO"] => self.account_info(&request),
            ["STREAM", "CREATE", name] => self.stream_create(&request, name).await,
            ["STREAM", "UPDATE", name] => self.stream_update(&request, name).await,
            ["STREAM", "INFO", name] => self.stream_info(&request, name),
            ["STREAM", "DELETE", name] => self.stream_delete(&request, name).await,
            ["STREAM", "PURGE", name] => self.stream_purge(&request, name).await,
            ["STREAM", "NAMES"] => self.stream_names(&request),
            ["STREAM", "LIST"] => self.stream_list(&request),
            ["STREAM", "MSG", "GET", name] => self.message_get(&request, name),
            ["STREAM", "MSG", "DELETE", name] => self.message_delete(&request, name).await,
            ["CONSUMER", ..] => self.dispatch_consumer(&request, &tokens[1..]).await,
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
    pub(crate) fn respond<T: Serialize>(&self, request: &Request, body: &T, failed: bool) {
        self.respond_uncounted(request, body);
        self.api.total.fetch_add(1, Ordering::Relaxed);
        if failed {
            self.api.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}
