//! Timestamps as nats-server writes them in JSON: RFC 3339 with nanoseconds, UTC `Z`, trailing
//! zeros trimmed (Go's `time.RFC3339Nano`), and the zero time `0001-01-01T00:00:00Z`.

use time::OffsetDateTime;

pub(crate) const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

pub(crate) fn now_nanos() -> i64 {
    let now = OffsetDateTime::now_utc();
    now.unix_timestamp_nanos() as i64
}

pub(crate) fn now_rfc3339() -> String {
    rfc3339_from_nanos(now_nanos())
}

/// Go's RFC3339Nano for a unix-nanosecond timestamp; 0 is Go's zero time.
pub(crate) fn rfc3339_from_nanos(nanos: i64) -> String {
    if nanos == 0 {
        return ZERO_TIME.to_string();
    }
    let Ok(moment) = OffsetDateTime::from_unix_timestamp_nanos(nanos as i128) else {
        return ZERO_TIME.to_string();
    };
    let mut text = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        moment.year(),
        u8::from(moment.month()),
        moment.day(),
        moment.hour(),
        moment.minute(),
        moment.second()
    );
    let fraction = moment.nanosecond();
    if fraction != 0 {
        let digits = format!("{fraction:09}");
        text.push('.');
        text.push_str(digits.trim_end_matches('0'));
    }
    text.push('Z');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_go() {
        assert_eq!(rfc3339_from_nanos(0), ZERO_TIME);
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
