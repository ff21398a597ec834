//! Counter streams (`allow_msg_counter`, nats-server 2.12): a publish carries `Nats-Incr: <n>`
//! and an empty body; the stream stores `{"val":"<total>"}`, the subject's previous total plus n,
//! and the PubAck reports the total as `"val"`.
//!
//! A counter stream that sources other counter streams adds what each origin subject moved by
//! since the last message from it: the last value seen per origin stream and subject travels in
//! the `Nats-Counter-Sources` header (`{"<stream>":{"<subject>":"<value>"}}`), and the stored
//! `Nats-Incr` is rewritten to that difference, as nats-server does.

use super::headers::{self, PublishHeaders};
use jetstream_api::{errors, ApiError};
use nats_store::StreamStore;
use std::collections::BTreeMap;

const SOURCES_HEADER: &str = "Nats-Counter-Sources";

/// Last value seen per origin stream and origin subject.
pub(crate) type CounterSources = BTreeMap<String, BTreeMap<String, String>>;

/// A subject's counter: its total and the origin values it has taken in.
#[derive(Clone, Debug, Default)]
pub(crate) struct CounterState {
    pub total: i128,
    pub sources: CounterSources,
}

/// One applied increment: the new state, its text, the body to store and, when the headers
/// changed (sources involved), the header block to store.
pub(crate) struct Counted {
    pub state: CounterState,
    pub total: String,
    pub body: Vec<u8>,
    pub headers: Option<Vec<u8>>,
}

/// nats-server's checks on `Nats-Incr`: a valid integer always; for a client publish also a
/// counter stream, an empty body and none of the headers a counter cannot combine with (a
/// sourced message is stored as its origin wrote it). `Ok(None)`: no increment.
pub(crate) fn check_increment(
    headers: &PublishHeaders<'_>,
    payload: &[u8],
    allow_counter: bool,
    sourced: bool,
) -> Result<Option<i128>, ApiError> {
    let Some(text) = headers.increment else {
        return Ok(None);
    };
    let increment: i128 = text
        .parse()
        .map_err(|_| errors::MESSAGE_INCR_INVALID.to_error())?;
    if sourced {
        return Ok(Some(increment));
    }
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

/// The counter as the subject's last message left it (zero without one).
pub(crate) fn last_state(
    store: &mut dyn StreamStore,
    subject: &str,
) -> Result<CounterState, ApiError> {
    let Ok(Some(message)) = store.load_last(subject) else {
        return Ok(CounterState::default());
    };
    let broken = || errors::MESSAGE_COUNTER_BROKEN.to_error();
    let total = value_of(&message.payload).ok_or_else(broken)?;
    let sources = match PublishHeaders::parse(&message.headers).counter_sources {
        Some(text) => serde_json::from_str(text).map_err(|_| broken())?,
        None => CounterSources::new(),
    };
    Ok(CounterState { total, sources })
}

/// The `val` of a counter body; a value that is not a number counts as 0 (Go's `SetString`
/// failing leaves zero). None: the body is not a counter body.
fn value_of(payload: &[u8]) -> Option<i128> {
    let body: serde_json::Value = serde_json::from_slice(payload).ok()?;
    Some(
        body.get("val")
            .and_then(|value| value.as_str())
            .and_then(|text| text.parse::<i128>().ok())
            .unwrap_or(0),
    )
}

/// Apply one increment to `previous`. `source`: the `Nats-Stream-Source` value of a sourced
/// message, whose body then carries the origin's total instead of an increment.
pub(crate) fn apply(
    previous: CounterState,
    increment: i128,
    source: Option<&str>,
    subject: &str,
    header_block: &[u8],
    payload: &[u8],
) -> Result<Counted, ApiError> {
    let mut state = previous;
    let mut increment = increment;
    let mut block: Option<Vec<u8>> = None;
    if let Some(source) = source {
        let fields: Vec<&str> = source.split(' ').collect();
        let origin_stream = fields.first().copied().unwrap_or_default();
        let origin_subject = fields.get(4).copied().unwrap_or(subject);
        let origin_total =
            value_of(payload).ok_or_else(|| errors::MESSAGE_COUNTER_BROKEN.to_error())?;
        let seen = state
            .sources
            .entry(origin_stream.to_string())
            .or_default()
            .insert(origin_subject.to_string(), origin_total.to_string());
        let seen = seen.and_then(|text| text.parse::<i128>().ok()).unwrap_or(0);
        increment = origin_total
            .checked_sub(seen)
            .ok_or_else(|| errors::MESSAGE_INCR_INVALID.to_error())?;
        block = Some(headers::set_header(
            header_block,
            "Nats-Incr",
            &increment.to_string(),
        ));
    }
    state.total = state
        .total
        .checked_add(increment)
        .ok_or_else(|| errors::MESSAGE_INCR_INVALID.to_error())?;
    let total = state.total.to_string();
    let body = format!("{{\"val\":\"{total}\"}}").into_bytes();
    if !state.sources.is_empty() {
        let json = jetstream_api::json::encode_response(&state.sources);
        let json = String::from_utf8_lossy(&json);
        let current = block.as_deref().unwrap_or(header_block);
        block = Some(headers::set_header(current, SOURCES_HEADER, &json));
    }
    Ok(Counted {
        state,
        total,
        body,
        headers: block,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sourced_totals_add_the_difference() {
        let header = b"NATS/1.0\r\nNats-Incr: 3\r\nNats-Stream-Source: C2 1 > > c2.x\r\n\r\n";
        let first = apply(
            CounterState::default(),
            3,
            Some("C2 1 > > c2.x"),
            "agg.x",
            header,
            br#"{"val":"3"}"#,
        )
        .expect("applies");
        assert_eq!(first.total, "3");
        let second = apply(
            first.state,
            2,
            Some("C2 2 > > c2.x"),
            "agg.x",
            header,
            br#"{"val":"5"}"#,
        )
        .expect("applies");
        assert_eq!(second.total, "5");
        let block = String::from_utf8(second.headers.expect("rewritten")).expect("utf8");
        assert_eq!(
            block,
            "NATS/1.0\r\nNats-Incr: 2\r\nNats-Stream-Source: C2 1 > > c2.x\r\nNats-Counter-Sources: {\"C2\":{\"c2.x\":\"5\"}}\r\n\r\n"
        );
        // A direct increment carries the sources forward.
        let direct = apply(second.state, 10, None, "agg.x", b"", b"").expect("applies");
        assert_eq!(direct.total, "15");
        assert!(direct.headers.is_some());
    }
}
