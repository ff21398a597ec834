//! `DIRECT.GET`: `$JS.API.DIRECT.GET.<stream>` (JSON request) and
//! `$JS.API.DIRECT.GET.<stream>.<subject>` (last message on a subject). Served by per-stream
//! subscriptions that exist only while the stream has `allow_direct`; answers are the stored
//! message with `Nats-Stream`/`Nats-Subject`/`Nats-Sequence`/`Nats-Time-Stamp` headers, or a
//! status-only header block (`NATS/1.0 404 Message Not Found`).
//!
//! Requests are queued to one reader task per stream. The one exception is the hot Key-Value
//! read, a last-by-subject get with no body: when nothing is queued before it and the store
//! lock is free right now, the subscription handler answers it on the requester's task, as
//! nats-server does, saving a task hand-off per get. It never waits for the lock (the ingest
//! task may hold it across a flush), and never overtakes a queued request.

use super::messages::load_requested;
use crate::stream::Stream;
use crate::transport::{Message, Transport};
use bytes::{BufMut, Bytes, BytesMut};
use jetstream_api::ApiSubject;
use jetstream_api::MsgGetRequest;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Subscribe the two direct-get subjects of a stream; returns the subscription ids.
pub(crate) fn subscribe(stream: &Arc<Stream>, transport: &Arc<dyn Transport>) -> Vec<u64> {
    let (sender, mut receiver) = mpsc::unbounded_channel::<Message>();
    let name = stream.name.clone();
    let queued = Arc::new(AtomicUsize::new(0));
    let mut ids = Vec::new();
    for subject in [
        format!("$JS.API.DIRECT.GET.{name}"),
        format!("$JS.API.DIRECT.GET.{name}.>"),
    ] {
        let sender = sender.clone();
        let queued = queued.clone();
        let stream = Arc::downgrade(stream);
        let inline_transport = transport.clone();
        ids.push(transport.subscribe(
            &subject,
            None,
            Arc::new(move |message: Message| {
                if queued.load(Ordering::Acquire) == 0 {
                    if let Some(stream) = stream.upgrade() {
                        if serve_last_inline(&stream, &*inline_transport, &message) {
                            return;
                        }
                    }
                }
                queued.fetch_add(1, Ordering::AcqRel);
                if sender.send(message).is_err() {
                    queued.fetch_sub(1, Ordering::AcqRel);
                }
            }),
        ));
    }
    let stream = Arc::downgrade(stream);
    let transport = transport.clone();
    tokio::spawn(async move {
        while let Some(message) = receiver.recv().await {
            let Some(stream) = stream.upgrade() else {
                break;
            };
            serve(&stream, &*transport, message);
            queued.fetch_sub(1, Ordering::AcqRel);
        }
    });
    ids
}

/// The `<subject>` of `$JS.API.DIRECT.GET.<stream>.<subject>` (None for the form with a
/// request body), read with the one `$JS.API` subject parser.
fn last_by_subject(subject: &[u8]) -> Option<&str> {
    match std::str::from_utf8(subject)
        .ok()
        .and_then(ApiSubject::parse)
    {
        Some(ApiSubject::DirectGet {
            last_by_subject, ..
        }) => last_by_subject,
        _ => None,
    }
}

/// The inline answer to `$JS.API.DIRECT.GET.<stream>.<subject>` with no body; false when the
/// request is of another form or the store is busy (the caller queues it then).
fn serve_last_inline(stream: &Stream, transport: &dyn Transport, message: &Message) -> bool {
    if !message.payload.is_empty() {
        return false;
    }
    let Some(reply) = message.reply.as_ref().filter(|reply| !reply.is_empty()) else {
        return false;
    };
    let Some(key) = last_by_subject(&message.subject) else {
        return false;
    };
    let found = {
        let Some(mut store) = stream.store.try_read() else {
            return false;
        };
        store.load_last(key).ok().flatten()
    };
    let (headers, payload) = match found {
        Some(found) => (
            direct_headers(&stream.name, &found, None),
            found.payload.clone(),
        ),
        None => (status(404, "Message Not Found"), Bytes::new()),
    };
    transport.publish(Message {
        subject: reply.clone(),
        reply: None,
        headers: Some(headers),
        payload,
    });
    true
}

fn status(code: u16, text: &str) -> Bytes {
    Bytes::from(format!("NATS/1.0 {code} {text}\r\n\r\n"))
}

fn serve(stream: &Stream, transport: &dyn Transport, message: Message) {
    let Some(reply) = message.reply.clone().filter(|reply| !reply.is_empty()) else {
        return;
    };
    let respond = |headers: Bytes, payload: Bytes| {
        transport.publish(Message {
            subject: reply.clone(),
            reply: None,
            headers: Some(headers),
            payload,
        })
    };
    let key = last_by_subject(&message.subject);
    let payload = &message.payload[..];
    let request = match key {
        Some(key) => {
            let mut request = MsgGetRequest::default();
            if !payload.is_empty() {
                match serde_json::from_slice::<MsgGetRequest>(payload) {
                    Ok(parsed) => request = parsed,
                    Err(_) => return respond(status(408, "Malformed Request"), Bytes::new()),
                }
            }
            if !request.last_by_subject.is_empty()
                || !request.next_by_subject.is_empty()
                || !request.multi_last.is_empty()
                || request.sequence != 0
                || request.batch != 0
                || request.start_time.is_some()
                || request.up_to_sequence != 0
                || request.up_to_time.is_some()
            {
                return respond(status(408, "Bad Request"), Bytes::new());
            }
            request.last_by_subject = key.to_string();
            request
        }
        None => {
            if payload.is_empty() {
                return respond(status(408, "Empty Request"), Bytes::new());
            }
            let Ok(request) = serde_json::from_slice::<MsgGetRequest>(payload) else {
                return respond(status(408, "Malformed Request"), Bytes::new());
            };
            let last = !request.last_by_subject.is_empty();
            let next = !request.next_by_subject.is_empty();
            let multi = !request.multi_last.is_empty();
            let has_time = request.start_time.is_some();
            if request.sequence == 0 && !last && !next && !multi && !has_time {
                return respond(status(408, "Empty Request"), Bytes::new());
            }
            let has_sequence = request.sequence > 0;
            let conflicting_last = last && (has_sequence || has_time || next || multi);
            let conflicting = conflicting_last
                || (has_sequence && has_time)
                || (last && request.batch > 0)
                || (next && multi)
                || (request.up_to_sequence > 0 && request.up_to_time.is_some());
            if conflicting {
                return respond(status(408, "Bad Request"), Bytes::new());
            }
            request
        }
    };
    if request.batch > 0 || !request.multi_last.is_empty() {
        return serve_batch(stream, &request, &respond);
    }
    let found = {
        let mut store = stream.store.read();
        load_requested(&mut store, &request)
    };
    match found {
        Some(found) => {
            let headers = if request.no_headers {
                Bytes::new()
            } else {
                direct_headers(&stream.name, &found, None)
            };
            respond(headers, found.payload.clone())
        }
        None => respond(status(404, "Message Not Found"), Bytes::new()),
    }
}

/// `batch` gets: up to `batch` messages, each with pending/last headers, then `204 EOB`.
fn serve_batch(stream: &Stream, request: &MsgGetRequest, respond: &dyn Fn(Bytes, Bytes)) {
    let filter = if request.next_by_subject.is_empty() {
        ">"
    } else {
        request.next_by_subject.as_str()
    };
    let mut store = stream.store.read();
    let mut seq = match &request.start_time {
        Some(time) => store.seq_for_time(time.unix_nanos()),
        None => request.sequence,
    }
    .max(1);
    let mut pending = store.num_pending(filter, seq, false);
    let mut last_sent = 0;
    let batch = request.batch.max(1);
    let max_bytes = if request.max_bytes > 0 {
        request.max_bytes as usize
    } else {
        64 * 1024 * 1024
    };
    let mut sent_bytes = 0;
    let mut sent = 0;
    while sent < batch {
        let Ok(Some(found)) = store.load_next(filter, seq) else {
            break;
        };
        if request.up_to_sequence > 0 && found.seq > request.up_to_sequence {
            break;
        }
        seq = found.seq + 1;
        pending = pending.saturating_sub(1);
        let headers = if request.no_headers {
            Bytes::new()
        } else {
            direct_headers(&stream.name, &found, Some((pending, last_sent)))
        };
        last_sent = found.seq;
        sent_bytes += found.subject.len() + found.headers.len() + found.payload.len();
        respond(headers, found.payload.clone());
        sent += 1;
        if sent_bytes >= max_bytes {
            break;
        }
    }
    if sent == 0 {
        return respond(status(404, "Message Not Found"), Bytes::new());
    }
    let pending = store.num_pending(filter, seq, false);
    drop(store);
    respond(
        Bytes::from(format!(
            "NATS/1.0 204 EOB\r\nNats-Num-Pending: {pending}\r\nNats-Last-Sequence: {last_sent}\r\n\r\n"
        )),
        Bytes::new(),
    );
}

/// The stored header block (or a fresh one) with the direct-get headers appended.
fn direct_headers(
    stream_name: &str,
    message: &nats_store::StoredMessage,
    batch: Option<(u64, u64)>,
) -> Bytes {
    let mut block = BytesMut::with_capacity(message.headers.len() + 160);
    if message.headers.len() >= 4 {
        block.put_slice(&message.headers[..message.headers.len() - 2]);
    } else {
        block.put_slice(b"NATS/1.0\r\n");
    }
    let time = crate::time_format::rfc3339_from_nanos(message.timestamp);
    block.put_slice(
        format!(
            "Nats-Stream: {stream_name}\r\nNats-Subject: {}\r\nNats-Sequence: {}\r\nNats-Time-Stamp: {time}\r\n",
            message.subject, message.seq
        )
        .as_bytes(),
    );
    if let Some((pending, last)) = batch {
        block.put_slice(
            format!("Nats-Num-Pending: {pending}\r\nNats-Last-Sequence: {last}\r\n").as_bytes(),
        );
    }
    block.put_slice(b"\r\n");
    block.freeze()
}
