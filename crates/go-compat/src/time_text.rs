//! Go's `time.RFC3339Nano` as `time.Time.Format` writes it (and JSON marshals it):
//! `2026-11-29T19:00:00.123456789Z`, the fraction without trailing zeros (none when zero), `Z`
//! for UTC, else `+hh:mm`; Go's zero time is `0001-01-01T00:00:00Z`.

use time::OffsetDateTime;

/// `t.Format(time.RFC3339Nano)`.
pub fn rfc3339_nano(datetime: OffsetDateTime) -> String {
    Rfc3339Nano::new(datetime).as_str().to_string()
}

/// `t.Format(time.RFC3339Nano)` written into a buffer of its own, without allocating (a
/// STREAM.LIST page writes four times per stream: `created`, `first_ts`, `last_ts`, `ts`).
pub struct Rfc3339Nano {
    bytes: [u8; Self::CAPACITY],
    len: usize,
}

impl Rfc3339Nano {
    /// A sign, a year of up to 6 digits (the `time` crate's widest), `-MM-DDTHH:MM:SS` (15),
    /// `.` and 9 fraction digits, `+hh:mm`: 38.
    const CAPACITY: usize = 38;

    pub fn new(datetime: OffsetDateTime) -> Self {
        let mut text = Rfc3339Nano {
            bytes: [0; Self::CAPACITY],
            len: 0,
        };
        let (year, month, day) = datetime.to_calendar_date();
        if year < 0 {
            text.push(b'-');
        }
        let year = year.unsigned_abs();
        let width = match year {
            0..=9_999 => 4,
            10_000..=99_999 => 5,
            _ => 6,
        };
        text.digits(year, width);
        text.push(b'-');
        text.digits(u32::from(u8::from(month)), 2);
        text.push(b'-');
        text.digits(u32::from(day), 2);
        text.push(b'T');
        let (hour, minute, second, nanos) = datetime.to_hms_nano();
        text.digits(u32::from(hour), 2);
        text.push(b':');
        text.digits(u32::from(minute), 2);
        text.push(b':');
        text.digits(u32::from(second), 2);
        if nanos != 0 {
            // Go trims the fraction's trailing zeros.
            let (mut fraction, mut width) = (nanos, 9);
            while fraction % 10 == 0 {
                fraction /= 10;
                width -= 1;
            }
            text.push(b'.');
            text.digits(fraction, width);
        }
        let offset = datetime.offset();
        if offset.is_utc() {
            text.push(b'Z');
        } else {
            let (hours, minutes, _) = offset.as_hms();
            text.push(if offset.is_negative() { b'-' } else { b'+' });
            text.digits(u32::from(hours.unsigned_abs()), 2);
            text.push(b':');
            text.digits(u32::from(minutes.unsigned_abs()), 2);
        }
        text
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII digits and separators are ever written.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }

    fn push(&mut self, byte: u8) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
    }

    /// `value` in exactly `width` decimal digits (leading zeros; every caller's value fits).
    fn digits(&mut self, mut value: u32, width: usize) {
        let end = (self.len + width).min(Self::CAPACITY);
        for slot in self.bytes[self.len..end].iter_mut().rev() {
            // A digit: the remainder of a division by 10.
            *slot = b'0' + (value % 10) as u8;
            value /= 10;
        }
        self.len = end;
    }
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

    /// The layout written with `format!`, as this module did before it wrote digits itself.
    fn formatted(datetime: OffsetDateTime) -> String {
        let year = datetime.year();
        let mut out = format!(
            "{}{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            if year < 0 { "-" } else { "" },
            year.unsigned_abs(),
            u8::from(datetime.month()),
            datetime.day(),
            datetime.hour(),
            datetime.minute(),
            datetime.second()
        );
        let nanos = datetime.nanosecond();
        if nanos != 0 {
            out.push('.');
            out.push_str(format!("{nanos:09}").trim_end_matches('0'));
        }
        let offset = datetime.offset();
        if offset.is_utc() {
            out.push('Z');
        } else {
            let (hours, minutes, _) = offset.as_hms();
            let sign = if offset.is_negative() { '-' } else { '+' };
            out.push_str(&format!(
                "{sign}{:02}:{:02}",
                hours.unsigned_abs(),
                minutes.unsigned_abs()
            ));
        }
        out
    }

    #[test]
    fn digits_written_match_the_formatted_layout() {
        let offsets = [(0, 0), (2, 0), (-5, -30), (14, 0), (-12, 0), (5, 45)];
        // Instants spread over the whole range Go and the store use, every fraction length.
        let mut nanos: i128 = -62_135_596_800_000_000_000; // 0001-01-01
        let mut checked = 0;
        while nanos < 253_402_300_799_000_000_000 {
            let utc = OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap();
            for (hours, minutes) in offsets {
                let offset = time::UtcOffset::from_hms(hours, minutes, 0).unwrap();
                let Some(datetime) = utc.checked_to_offset(offset) else {
                    continue;
                };
                assert_eq!(rfc3339_nano(datetime), formatted(datetime), "{nanos}");
                checked += 1;
            }
            nanos += 7_919_000_104_729_123_i128 + (nanos.rem_euclid(1_000_000_007) * 13);
        }
        assert!(checked > 10_000, "{checked}");
        assert_eq!(
            rfc3339_nano(datetime!(-0044-03-15 12:00:00.000000001 UTC)),
            formatted(datetime!(-0044-03-15 12:00:00.000000001 UTC))
        );
    }
}
