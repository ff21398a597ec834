//! Go's `time.RFC3339Nano` as `time.Time.Format` writes it (and JSON marshals it):
//! `2026-11-29T19:00:00.123456789Z`, the fraction without trailing zeros (none when zero), `Z`
//! for UTC, else `+hh:mm`; Go's zero time is `0001-01-01T00:00:00Z`.

use std::fmt::Write as _;
use time::OffsetDateTime;

/// `t.Format(time.RFC3339Nano)`.
pub fn rfc3339_nano(datetime: OffsetDateTime) -> String {
    let mut out = String::with_capacity(35);
    let year = datetime.year();
    if year < 0 {
        out.push('-');
    }
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        year.unsigned_abs(),
        u8::from(datetime.month()),
        datetime.day(),
        datetime.hour(),
        datetime.minute(),
        datetime.second()
    );
    let nanos = datetime.nanosecond();
    if nanos != 0 {
        let fraction = format!("{nanos:09}");
        out.push('.');
        out.push_str(fraction.trim_end_matches('0'));
    }
    let offset = datetime.offset();
    if offset.is_utc() {
        out.push('Z');
    } else {
        let (hours, minutes, _) = offset.as_hms();
        let sign = if offset.is_negative() { '-' } else { '+' };
        let _ = write!(
            out,
            "{sign}{:02}:{:02}",
            hours.unsigned_abs(),
            minutes.unsigned_abs()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn formats_as_go() {
        assert_eq!(
            rfc3339_nano(datetime!(0001-01-01 0:00 UTC)),
            "0001-01-01T00:00:00Z"
        );
        assert_eq!(
            rfc3339_nano(datetime!(2025-11-29 19:16:06.765035022 UTC)),
            "2025-11-29T19:16:06.765035022Z"
        );
        assert_eq!(
            rfc3339_nano(datetime!(2025-11-29 19:16:06.1 UTC)),
            "2025-11-29T19:16:06.1Z"
        );
        assert_eq!(
            rfc3339_nano(datetime!(2026-01-01 0:00:00.5 -05:30)),
            "2026-01-01T00:00:00.5-05:30"
        );
        assert_eq!(
            rfc3339_nano(datetime!(2026-01-01 0:00 +02:00)),
            "2026-01-01T00:00:00+02:00"
        );
    }
}
