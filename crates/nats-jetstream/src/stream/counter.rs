//! Counter streams (`allow_msg_counter`, nats-server 2.12): a publish carries `Nats-Incr: <n>`
//! and an empty body; the stream stores `{"val":"<total>"}`, the subject's previous total plus n,
//! and the PubAck reports the total as `"val"`.

use super::headers::PublishHeaders;
use jetstream_api::{errors, ApiError};
use nats_store::StreamStore;

/// nats-server's checks on `Nats-Incr`: a valid integer, on a counter stream, with an empty
/// body and none of the headers a counter cannot combine with. `Ok(None)`: no increment.
pub(crate) fn check_increment(
    headers: &PublishHeaders<'_>,
    payload: &[u8],
    allow_counter: bool,
) -> Result<Option<i128>, ApiError> {
    let Some(text) = headers.increment else {
        return Ok(None);
    };
    let increment: i128 = text
        .parse()
        .map_err(|_| errors::MESSAGE_INCR_INVALID.to_error())?;
    if !allow_counter {
        return Err(errors::MESSAGE_INCR_DISABLED.to_error());
    }
    if !payload.is_empty() {
        return Err(errors::MESSAGE_INCR_PAYLOAD.to_error());
    }
    let incompatible = headers.rollup.is_some()
        || headers.expected_stream.is_some()
        || headers.expected_last_msg_id.is_some()
        || headers.expected_last_subject_sequence_subject.is_some()
        || headers.expected_last_sequence.is_some()
        || headers.expected_last_subject_sequence.is_some();
    if incompatible {
        return Err(errors::MESSAGE_INCR_INVALID.to_error());
    }
    Ok(Some(increment))
}

/// The subject's new total and the body that stores it.
pub(crate) fn next_total(
    store: &mut dyn StreamStore,
    subject: &str,
    increment: i128,
) -> Result<(String, Vec<u8>), ApiError> {
    add(previous_total(store, subject)?, increment)
}

/// The total the subject's last message holds (0 without one).
pub(crate) fn previous_total(store: &mut dyn StreamStore, subject: &str) -> Result<i128, ApiError> {
    match store.load_last(subject) {
        Ok(Some(message)) => {
            let body: serde_json::Value = serde_json::from_slice(&message.payload)
                .map_err(|_| errors::MESSAGE_COUNTER_BROKEN.to_error())?;
            Ok(match body.get("val").and_then(|value| value.as_str()) {
                Some(text) => text.parse::<i128>().unwrap_or(0),
                None => 0,
            })
        }
        _ => Ok(0),
    }
}

/// `previous + increment` as the total's text and the stored body.
pub(crate) fn add(previous: i128, increment: i128) -> Result<(String, Vec<u8>), ApiError> {
    let total = previous
        .checked_add(increment)
        .ok_or_else(|| errors::MESSAGE_INCR_INVALID.to_error())?
        .to_string();
    let body = format!("{{\"val\":\"{total}\"}}").into_bytes();
    Ok((total, body))
}
