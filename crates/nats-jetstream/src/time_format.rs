//! Timestamps as nats-server writes them in JSON, for the callers that hold unix nanoseconds
//! (the store's form). The formatting itself is jetstream-api's [`Timestamp`] (Go's
//! `time.RFC3339Nano`); this module only adds the store's convention that 0 means "no time",
//! which Go prints as its zero time `0001-01-01T00:00:00Z`.

use jetstream_api::Timestamp;

pub(crate) fn now_nanos() -> i64 {
    Timestamp::now().unix_nanos()
}

pub(crate) fn now_rfc3339() -> String {
    Timestamp::now().to_rfc3339()
}

/// Go's RFC3339Nano for a unix-nanosecond timestamp; 0 is Go's zero time.
pub(crate) fn rfc3339_from_nanos(nanos: i64) -> String {
    if nanos == 0 {
        return Timestamp::ZERO.to_rfc3339();
    }
    Timestamp::from_unix_nanos(nanos).to_rfc3339()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_go() {
        assert_eq!(rfc3339_from_nanos(0), "0001-01-01T00:00:00Z");
        assert_eq!(
            rfc3339_from_nanos(1_764_443_766_765_035_022),
            "2025-11-29T19:16:06.765035022Z"
        );
        assert_eq!(
            rfc3339_from_nanos(1_764_443_766_100_000_000),
            "2025-11-29T19:16:06.1Z"
        );
    }
}
