//! Time on the wire as nats-server writes it: [`Timestamp`] (Go `time.Time`, RFC 3339 with up to
//! nine fraction digits, trailing zeros trimmed, `Z` for UTC, and Go's zero time
//! `0001-01-01T00:00:00Z` meaning "unset") and [`Nanos`] (Go `time.Duration`, a signed integer
//! count of nanoseconds).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::macros::datetime;
use time::{OffsetDateTime, UtcOffset};

use crate::Error;

/// A point in time, serialized like Go's `time.Time`. The offset it was parsed with is kept (Go
/// echoes a client's `+02:00` back unchanged); times we create ourselves are UTC.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(OffsetDateTime);

impl Timestamp {
    /// Go's zero `time.Time`, what nats-server prints for "no such time" (`first_ts` of an empty
    /// stream, `last_active` of a consumer that never delivered).
    pub const ZERO: Timestamp = Timestamp(datetime!(0001-01-01 0:00 UTC));

    pub fn now() -> Self {
        Timestamp(OffsetDateTime::now_utc())
    }

    pub fn is_zero(&self) -> bool {
        *self == Self::ZERO
    }

    /// From nanoseconds since the Unix epoch (the form the store keeps), in UTC.
    pub fn from_unix_nanos(nanos: i64) -> Self {
        // Every i64 nanosecond count is within the time crate's range (years 1677..2262).
        match OffsetDateTime::from_unix_timestamp_nanos(i128::from(nanos)) {
            Ok(datetime) => Timestamp(datetime),
            Err(_) => Self::ZERO,
        }
    }

    /// Nanoseconds since the Unix epoch, saturating at the ends of `i64` (Go's zero time is far
    /// before what `i64` holds; Go itself returns an undefined value there).
    pub fn unix_nanos(&self) -> i64 {
        let nanos = self.0.unix_timestamp_nanos();
        i64::try_from(nanos).unwrap_or(if nanos < 0 { i64::MIN } else { i64::MAX })
    }

    pub fn from_datetime(datetime: OffsetDateTime) -> Self {
        Timestamp(datetime)
    }

    pub fn as_datetime(&self) -> OffsetDateTime {
        self.0
    }

    /// The same instant in UTC (what nats-server stores and reports).
    pub fn to_utc(&self) -> Self {
        Timestamp(self.0.to_offset(UtcOffset::UTC))
    }

    /// Parses an RFC 3339 time as Go's `time.Time` JSON decoding does.
    pub fn parse(text: &str) -> Result<Self, Error> {
        OffsetDateTime::parse(text, &Rfc3339)
            .map(Timestamp)
            .map_err(|error| Error::TimestampOutOfRange(format!("{text:?}: {error}")))
    }

    /// Go's `time.RFC3339Nano` layout: `2026-11-29T19:00:00.123456789Z`, fraction without
    /// trailing zeros (none at all when zero), `Z` or `+hh:mm`.
    pub fn to_rfc3339(&self) -> String {
        go_compat::time_text::rfc3339_nano(self.0)
    }
}

impl Default for Timestamp {
    fn default() -> Self {
        Self::ZERO
    }
}

impl From<OffsetDateTime> for Timestamp {
    fn from(datetime: OffsetDateTime) -> Self {
        Timestamp(datetime)
    }
}

impl std::fmt::Debug for Timestamp {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.to_rfc3339())
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(go_compat::time_text::Rfc3339Nano::new(self.0).as_str())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        OffsetDateTime::parse(&text, &Rfc3339)
            .map(Timestamp)
            .map_err(|_| {
                // Go's text for the common case (text that is not a date at all); for a
                // malformed date Go names the failing element, we keep this form.
                serde::de::Error::custom(format!(
                    "parsing time {text:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {text:?} as \"2006\""
                ))
            })
    }
}

/// A Go `time.Duration`: signed nanoseconds, an integer on the wire (`120000000000` is 2m).
/// Signed because nats-server reports `-1` for "never" (e.g. a source's `active`) and accepts
/// negative values it then rejects with its own error.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Nanos(pub i64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);

    pub const fn from_secs(seconds: i64) -> Self {
        Nanos(seconds.saturating_mul(1_000_000_000))
    }

    pub const fn from_millis(milliseconds: i64) -> Self {
        Nanos(milliseconds.saturating_mul(1_000_000))
    }

    pub fn from_std(duration: std::time::Duration) -> Self {
        Nanos(i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX))
    }

    /// `None` for negative durations.
    pub fn to_std(self) -> Option<std::time::Duration> {
        u64::try_from(self.0)
            .ok()
            .map(std::time::Duration::from_nanos)
    }

    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    pub const fn is_zero(&self) -> bool {
        self.0 == 0
    }
}

impl Nanos {
    /// Go's `time.Duration.String()`: `0s`, `1.5s`, `1m0s`, `2h0m0s`, `300ms`, `1.5µs`, `100ns`.
    /// nats-server puts it into some status texts (`409 Exceeded MaxRequestExpires of 10s`).
    pub fn to_go_string(self) -> String {
        go_compat::duration::format(self.0)
    }

    /// Go's `time.ParseDuration` (`-NAK 1.5s`, `300ms`, `1h2m`, `-1s`; units ns, us, µs, μs,
    /// ms, s, m, h). `None` when the text is not a duration or overflows.
    pub fn parse_go(text: &str) -> Option<Nanos> {
        go_compat::duration::parse(text).ok().map(Nanos)
    }
}

impl From<std::time::Duration> for Nanos {
    fn from(duration: std::time::Duration) -> Self {
        Nanos::from_std(duration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_go_rfc3339_nano() {
        assert_eq!(Timestamp::ZERO.to_rfc3339(), "0001-01-01T00:00:00Z");
        let timestamp = Timestamp::parse("2026-11-29T19:15:30.79321491Z").unwrap();
        assert_eq!(timestamp.to_rfc3339(), "2026-11-29T19:15:30.79321491Z");
        let timestamp = Timestamp::parse("2026-11-29T19:15:30.000000001Z").unwrap();
        assert_eq!(timestamp.to_rfc3339(), "2026-11-29T19:15:30.000000001Z");
        let timestamp = Timestamp::parse("2026-01-01T00:00:00+02:00").unwrap();
        assert_eq!(timestamp.to_rfc3339(), "2026-01-01T00:00:00+02:00");
        assert_eq!(timestamp.to_utc().to_rfc3339(), "2025-12-31T22:00:00Z");
        let timestamp = Timestamp::parse("2026-01-01T00:00:00.5-05:30").unwrap();
        assert_eq!(timestamp.to_rfc3339(), "2026-01-01T00:00:00.5-05:30");
    }

    #[test]
    fn unix_nanos_round_trip() {
        let timestamp = Timestamp::from_unix_nanos(1_795_000_000_123_456_789);
        assert_eq!(timestamp.unix_nanos(), 1_795_000_000_123_456_789);
        assert_eq!(timestamp.to_rfc3339(), "2026-11-18T11:06:40.123456789Z");
        assert!(Timestamp::default().is_zero());
        assert_eq!(Timestamp::ZERO.unix_nanos(), i64::MIN);
    }

    #[test]
    fn serde_as_string() {
        let json = serde_json::to_string(&Timestamp::ZERO).unwrap();
        assert_eq!(json, "\"0001-01-01T00:00:00Z\"");
        let back: Timestamp = serde_json::from_str(&json).unwrap();
        assert!(back.is_zero());
        assert!(serde_json::from_str::<Timestamp>("\"yesterday\"").is_err());
    }

    #[test]
    fn nanos_conversions() {
        assert_eq!(Nanos::from_secs(120).0, 120_000_000_000);
        assert_eq!(
            Nanos::from_millis(5).to_std(),
            Some(std::time::Duration::from_millis(5))
        );
        assert_eq!(Nanos(-1).to_std(), None);
        assert_eq!(serde_json::to_string(&Nanos(-1)).unwrap(), "-1");
    }

    #[test]
    fn go_duration_strings() {
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (300_000_000, "300ms"),
            (1_500_000_000, "1.5s"),
            (10_000_000_000, "10s"),
            (60_000_000_000, "1m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_000_000_000, "1h2m3s"),
            (-2_000_000_000, "-2s"),
        ];
        for (nanos, text) in cases {
            assert_eq!(Nanos(nanos).to_go_string(), text);
            assert_eq!(Nanos::parse_go(text), Some(Nanos(nanos)), "{text}");
        }
        assert_eq!(Nanos::parse_go("1us"), Some(Nanos(1_000)));
        assert_eq!(Nanos::parse_go(".5s"), Some(Nanos(500_000_000)));
        assert_eq!(Nanos::parse_go("1h30m"), Some(Nanos(5_400_000_000_000)));
        for bad in ["", "1", "s", "1x", "1.s.", "-", "9999999999h"] {
            assert_eq!(Nanos::parse_go(bad), None, "{bad}");
        }
    }
}
