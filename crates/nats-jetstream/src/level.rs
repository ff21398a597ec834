//! The JetStream API level this server offers and nats-server's `Nats-Required-Api-Level`
//! check. A leaf: the API handlers, the consumers' pull requests and the batch publish paths
//! of the streams all ask it; it knows none of them.

/// nats-server's JetStream API level (2.12+ reports 2; 2.15 reports 5).
pub(crate) const API_LEVEL: u32 = 5;

/// nats-server's `errorOnRequiredApiLevel`: a non-empty `Nats-Required-Api-Level` header that
/// is not an integer (Go's `Atoi`: optional sign, digits) or asks for more than this server's
/// level refuses the request; an empty one is ignored.
pub(crate) fn required_level_met(headers: Option<&[u8]>) -> bool {
    let Some(value) =
        headers.and_then(|block| nats_proto::header_value(block, "Nats-Required-Api-Level"))
    else {
        return true;
    };
    if value.is_empty() {
        return true;
    }
    std::str::from_utf8(value)
        .ok()
        .and_then(|text| text.parse::<i64>().ok())
        .is_some_and(|level| level <= i64::from(API_LEVEL))
}
