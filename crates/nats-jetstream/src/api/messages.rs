//! `STREAM.MSG.GET` and `STREAM.MSG.DELETE`.

use super::Context;
use super::Request;
use crate::stream::StreamCommand;
use jetstream_api::json::decode_request;
use jetstream_api::{
    errors, ApiError, MsgDeleteRequest, MsgGetRequest, MsgGetResponse, StoredMessage,
    SuccessResponse, Timestamp, STREAM_MSG_DELETE_RESPONSE_TYPE,
};
use tokio::sync::oneshot;

/// Which message a get request designates, shared by MSG.GET and DIRECT.GET.
pub(crate) fn load_requested(
    store: &mut crate::stream::ReadGuard<'_>,
    request: &MsgGetRequest,
) -> Option<nats_store::StoredMessage> {
    let seq = match &request.start_time {
        Some(time) => store.seq_for_time(time.unix_nanos()),
        None => request.sequence,
    };
    if !request.next_by_subject.is_empty() {
        store
            .load_next(&request.next_by_subject, seq.max(1))
            .ok()
            .flatten()
    } else if seq > 0 {
        store.load(seq).ok()
    } else {
        store.load_last(&request.last_by_subject).ok().flatten()
    }
}

pub(crate) fn message_get(context: &Context, request: &Request, name: &str) {
    match try_message_get(context, request, name) {
        // nats-server does not count successful gets in the API totals.
        Ok(message) => context.respond_uncounted(request, &MsgGetResponse::ok(message)),
        Err(error) => context.respond(request, &MsgGetResponse::error(error), true),
    }
}

fn try_message_get(
    context: &Context,
    request: &Request,
    name: &str,
) -> Result<StoredMessage, ApiError> {
    if request
        .payload
        .iter()
        .all(|byte| byte.is_ascii_whitespace())
    {
        return Err(errors::BAD_REQUEST.to_error());
    }
    let get: MsgGetRequest = decode_request(&request.payload)?;
    if get.batch > 0 || get.max_bytes > 0 {
        return Err(errors::BAD_REQUEST.to_error());
    }
    let has_time = get.start_time.is_some();
    let last = !get.last_by_subject.is_empty();
    let next = !get.next_by_subject.is_empty();
    if (get.sequence > 0 && last)
        || (get.sequence == 0 && !last && !next && !has_time)
        || (get.sequence > 0 && has_time)
        || (has_time && last)
        || (last && next)
    {
        return Err(errors::BAD_REQUEST.to_error());
    }
    let stream = context
        .registry
        .get(name)
        .ok_or_else(|| errors::STREAM_NOT_FOUND.to_error())?;
    let found = {
        let mut store = stream.store.read();
        load_requested(&mut store, &get)
    };
    let message = found.ok_or_else(|| errors::NO_MESSAGE_FOUND.to_error())?;
    let headers: &[u8] = if get.no_headers {
        &[]
    } else {
        &message.headers
    };
    Ok(StoredMessage::new(
        message.subject.clone(),
        message.seq,
        headers,
        &message.payload,
        Timestamp::from_unix_nanos(message.timestamp),
    ))
}

pub(crate) async fn message_delete(context: &Context, request: &Request, name: &str) {
    let result = async {
        if request
            .payload
            .iter()
            .all(|byte| byte.is_ascii_whitespace())
        {
            return Err(errors::BAD_REQUEST.to_error());
        }
        let delete: MsgDeleteRequest = decode_request(&request.payload)?;
        let (stream, config) = super::streams::unsealed_stream(context, name)?;
        if config.deny_delete {
            return Err(errors::STREAM_MSG_DELETE_FAILED.with_err("message delete not permitted"));
        }
        let (reply, done) = oneshot::channel();
        stream.send(StreamCommand::DeleteMessage {
            seq: delete.sequence,
            erase: !delete.no_erase,
            reply,
        });
        let removed = done
            .await
            .unwrap_or_else(|_| Err(errors::STREAM_MSG_DELETE_FAILED.with_err("stream stopped")))?;
        if removed {
            return Ok(None);
        }
        // Nothing removed: as nats-server, a sequence inside the stream's range that is
        // already gone is "sequence N not found"; outside it, its store's error.
        let seq = delete.sequence;
        let state = stream.store.state();
        Ok(Some(if seq == 0 || seq < state.first_seq {
            errors::STREAM_MSG_DELETE_FAILED.with_err("no message found")
        } else if seq > state.last_seq {
            errors::STREAM_MSG_DELETE_FAILED.with_err("stream store EOF")
        } else {
            errors::SEQUENCE_NOT_FOUND.with(&[("seq", &seq)])
        }))
    }
    .await;
    match result {
        Ok(None) => context.respond(
            request,
            &SuccessResponse::ok(STREAM_MSG_DELETE_RESPONSE_TYPE),
            false,
        ),
        // nats-server answers a missing sequence on its success path (not an API error).
        Ok(Some(missing)) => context.respond(
            request,
            &SuccessResponse::error(STREAM_MSG_DELETE_RESPONSE_TYPE, missing),
            false,
        ),
        Err(error) => context.respond(
            request,
            &SuccessResponse::error(STREAM_MSG_DELETE_RESPONSE_TYPE, error),
            true,
        ),
    }
}
