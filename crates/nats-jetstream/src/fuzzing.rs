//! Entry points for the cargo-fuzz targets in `fuzz/` (not an API: hidden from the docs). Each
//! runs one request-checking step exactly as the `$JS.API` handlers and consumer tasks run it,
//! without a server: the stream and consumer config checks, a pull request's admission and the
//! consumer's own fast ack-subject codec.

use jetstream_api::{ApiError, ConsumerConfig, StreamConfig};

/// The stream create check (`STREAM.CREATE`): defaults filled, every standalone rule checked.
pub fn check_stream_config(
    config: &StreamConfig,
    pedantic: bool,
) -> Result<StreamConfig, ApiError> {
    crate::stream::check_and_fill(config, pedantic)
}

/// The stream update check (`STREAM.UPDATE`) of `new` over `old`.
pub fn check_stream_update(
    old: &StreamConfig,
    new: &StreamConfig,
    pedantic: bool,
) -> Result<StreamConfig, ApiError> {
    crate::stream::check_update(old, new, pedantic)
}

/// The consumer create check: defaults filled and the config checked against its stream.
pub fn check_consumer_config(
    requested: &ConsumerConfig,
    stream: &StreamConfig,
    account_max_ack_pending: i64,
    pedantic: bool,
) -> Result<ConsumerConfig, ApiError> {
    crate::consumer::check_config(requested, stream, account_max_ack_pending, pedantic)
}

/// The consumer update check of `new` over `old`.
pub fn check_consumer_update(old: &ConsumerConfig, new: &ConsumerConfig) -> Result<(), ApiError> {
    crate::consumer::check_update(old, new)
}

/// A pull request body (`CONSUMER.MSG.NEXT`) decoded and admitted against the consumer's config:
/// `Err` is the status header block the requester gets at once.
pub fn admit_pull_request(config: &ConsumerConfig, body: &[u8]) -> Result<(), Vec<u8>> {
    crate::consumer::admit_for_fuzzing(config, body)
}

/// The consumer's fast v1 ack reply: `prefix` (ending with a dot) and the five numbers.
pub fn write_own_ack_reply(
    prefix: &[u8],
    delivered: u64,
    stream_sequence: u64,
    consumer_sequence: u64,
    timestamp: i64,
    pending: u64,
) -> bytes::Bytes {
    crate::consumer::own_ack_subject::write_reply(
        prefix,
        delivered,
        stream_sequence,
        consumer_sequence,
        timestamp,
        pending,
    )
}

/// The consumer's fast v1 ack parse: (delivered, stream sequence, consumer sequence) when
/// `subject` is `prefix` and five decimal tokens; None sends it to the general parser.
pub fn parse_own_ack(subject: &[u8], prefix: &[u8]) -> Option<(u64, u64, u64)> {
    crate::consumer::own_ack_subject::parse_own_v1(subject, prefix).map(|numbers| {
        (
            numbers.delivered,
            numbers.stream_sequence,
            numbers.consumer_sequence,
        )
    })
}
