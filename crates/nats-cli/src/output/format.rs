//! Formatting of numbers, byte sizes, durations and times the way natscli prints them
//! (go-humanize `Comma`/`IBytes`, natscli's `HumanizeDuration`, Go's `Duration.String`),
//! and parsing of the size and duration strings its flags accept.

use std::time::Duration;

use chrono::{DateTime, Local, Utc};
use jetstream_api::{AckPolicy, DiscardPolicy, Nanos, ReplayPolicy, Timestamp};

use crate::error::CliError;

/// Thousands separators: `1234567` -> `1,234,567`.
pub fn comma(value: impl Into<i128>) -> String {
    let value: i128 = value.into();
    let digits = value.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if value < 0 {
        out.push('-');
    }
    let first_group = digits.len() % 3;
    for (index, character) in digits.chars().enumerate() {
        if index != 0 && (index + 3 - first_group).is_multiple_of(3) {
            out.push(',');
        }
        out.push(character);
    }
    out
}

/// [`comma`] for unsigned counters; values beyond i64 print without separators like natscli.
pub fn comma_u64(value: u64) -> String {
    match i64::try_from(value) {
        Ok(signed) => comma(signed),
        Err(_) => value.to_string(),
    }
}

/// IEC byte size with one decimal below 10: `47 B`, `1.2 KiB`, `12 KiB`, `256 MiB`.
pub fn ibytes(size: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if size < 10 {
        return format!("{size} B");
    }
    let size_float = size as f64;
    let exponent = (size_float.ln() / 1024f64.ln()).floor();
    let exponent_index = (exponent as usize).min(UNITS.len() - 1);
    let value = (size_float / 1024f64.powi(exponent_index as i32) * 10.0 + 0.5).floor() / 10.0;
    if value < 10.0 {
        format!("{value:.1} {}", UNITS[exponent_index])
    } else {
        format!("{value:.0} {}", UNITS[exponent_index])
    }
}

/// Same as [`ibytes`] for signed limits.
pub fn ibytes_i64(size: i64) -> String {
    ibytes(size.max(0) as u64)
}

/// natscli's `HumanizeDuration`: sub-second values like Go (`500ms`), seconds with two
/// decimals (`5.00s`), longer ones as `2m0s`, `1h0m0s`, `3d2h0m0s`, `1y2d0h0m0s`.
pub fn humanize_duration(duration: Duration) -> String {
    if duration.as_nanos() >= i64::MAX as u128 {
        return "never".to_string();
    }
    if duration < Duration::from_millis(1) {
        let micros = (duration.as_nanos() + 500) / 1000;
        return go_duration(Duration::from_micros(micros as u64));
    }
    if duration < Duration::from_secs(1) {
        let millis = (duration.as_nanos() + 500_000) / 1_000_000;
        return go_duration(Duration::from_millis(millis as u64));
    }
    let total_seconds = duration.as_secs();
    let minutes = total_seconds / 60;
    let hours = minutes / 60;
    let days = hours / 24;
    let years = days / 365;
    if years > 0 {
        return format!(
            "{years}y{}d{}h{}m{}s",
            days % 365,
            hours % 24,
            minutes % 60,
            total_seconds % 60
        );
    }
    if days > 0 {
        return format!(
            "{days}d{}h{}m{}s",
            hours % 24,
            minutes % 60,
            total_seconds % 60
        );
    }
    if hours > 0 {
        return format!("{hours}h{}m{}s", minutes % 60, total_seconds % 60);
    }
    if minutes > 0 {
        return format!("{minutes}m{}s", total_seconds % 60);
    }
    format!("{:.2}s", duration.as_secs_f64())
}

/// [`humanize_duration`] of a Go duration in nanoseconds (negative counts as zero).
pub fn humanize_nanos(nanos: Nanos) -> String {
    humanize_duration(nanos.to_std().unwrap_or(Duration::ZERO))
}

/// A maximum age as natscli shows it: "unlimited" for zero (or less).
pub fn age_limit(nanos: Nanos) -> String {
    if nanos.as_nanos() <= 0 {
        "unlimited".to_string()
    } else {
        humanize_nanos(nanos)
    }
}

/// Go's `time.Duration.String()`: `0s`, `1.5µs`, `500ms`, `2m0s`, `1h30m0s`.
pub fn go_duration(duration: Duration) -> String {
    go_compat::duration::format_std(duration)
}

/// Parse a duration like natscli's flags take: Go units plus `d`, `w`, `M` (30 days) and `y`/`Y`
/// (365 days), each `<number><unit>` part on its own (natscli's `ParseDurationString`); the Go
/// parts go through Go's parser. A bare number is seconds. `-1` and `0` mean zero (unlimited).
pub fn parse_duration(text: &str) -> Result<Duration, CliError> {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed == "-1" || trimmed == "0" {
        return Ok(Duration::ZERO);
    }
    if let Ok(seconds) = trimmed.parse::<f64>() {
        if seconds >= 0.0 && seconds.is_finite() {
            return Ok(Duration::from_secs_f64(seconds));
        }
    }
    let invalid = || CliError::Message(format!("invalid duration {trimmed:?}"));
    let mut total = Duration::ZERO;
    let mut rest = trimmed;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        let unit_end = rest[number_end..]
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .map_or(rest.len(), |offset| number_end + offset);
        let (part, unit) = (&rest[..unit_end], &rest[number_end..unit_end]);
        rest = &rest[unit_end..];
        let days = match unit {
            "d" => 1.0,
            "w" => 7.0,
            "M" => 30.0,
            "y" | "Y" => 365.0,
            _ => {
                let part = go_compat::duration::parse_std(part).map_err(|_| invalid())?;
                total = total.checked_add(part).ok_or_else(invalid)?;
                continue;
            }
        };
        let number: f64 = rest_number(part, unit).ok_or_else(invalid)?;
        total = total
            .checked_add(Duration::from_secs_f64(number * days * 86_400.0))
            .ok_or_else(invalid)?;
    }
    Ok(total)
}

/// The number in front of a natscli-only unit (`1.5d`).
fn rest_number(part: &str, unit: &str) -> Option<f64> {
    let number: f64 = part.strip_suffix(unit)?.parse().ok()?;
    (0.0..1e6).contains(&number).then_some(number)
}

/// Parse a byte size: plain numbers, or with `K`/`KB`/`KiB`, `M..`, `G..`, `T..` (powers
/// of 1024). Anything starting with `-` means unlimited (-1).
pub fn parse_bytes(text: &str) -> Result<i64, CliError> {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed.starts_with('-') {
        return Ok(-1);
    }
    if let Ok(number) = trimmed.parse::<i64>() {
        return Ok(number);
    }
    let invalid = || CliError::Message(format!("invalid bytes specification {trimmed}"));
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(invalid)?;
    let number: i64 = trimmed[..split].parse().map_err(|_| invalid())?;
    let shift = match trimmed[split..].trim().to_ascii_uppercase().as_str() {
        "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(invalid()),
    };
    number.checked_shl(shift).ok_or_else(invalid)
}

/// A server timestamp as a UTC time; Go's zero time and the Unix epoch come back as `None`,
/// which natscli treats as "no time".
pub fn parse_time(time: &Timestamp) -> Option<DateTime<Utc>> {
    to_chrono(time).filter(|parsed| parsed.timestamp() > 0)
}

fn to_chrono(time: &Timestamp) -> Option<DateTime<Utc>> {
    let datetime = time.as_datetime();
    DateTime::from_timestamp(datetime.unix_timestamp(), datetime.nanosecond())
}

/// natscli's time layout, in local time: `2006-01-02 15:04:05`.
pub fn local_time(time: &DateTime<Utc>) -> String {
    time.with_timezone(&Local)
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

/// [`local_time`] of a server timestamp (Go's zero time included, as natscli prints it).
pub fn local_time_text(time: &Timestamp) -> String {
    match to_chrono(time) {
        Some(parsed) => local_time(&parsed),
        None => time.to_rfc3339(),
    }
}

/// Time elapsed since a server timestamp, as a duration (zero when in the future or unset).
pub fn since(time: &Timestamp) -> Duration {
    match parse_time(time) {
        Some(then) => (Utc::now() - then).to_std().unwrap_or(Duration::ZERO),
        None => Duration::ZERO,
    }
}

/// Time since a server timestamp, humanized; Go's zero time gives "never" (natscli's
/// duration from the zero time saturates to the largest duration, printed as "never").
pub fn humanize_since(time: &Timestamp) -> String {
    match parse_time(time) {
        Some(_) => humanize_duration(since(time)),
        None => "never".to_string(),
    }
}

/// Go's `time.Time.String()` of a server time in UTC, which natscli prints in places:
/// `2020-01-01 00:00:00.5 +0000 UTC`.
pub fn go_time_string(time: &Timestamp) -> String {
    let text = time.to_utc().to_rfc3339();
    let without_zone = text.trim_end_matches('Z').replacen('T', " ", 1);
    format!("{without_zone} +0000 UTC")
}

/// jsm.go's display names of the API's lower-case enum values.
pub fn discard_title(policy: DiscardPolicy) -> &'static str {
    match policy {
        DiscardPolicy::Old => "Old",
        DiscardPolicy::New => "New",
    }
}

pub fn ack_policy_title(policy: AckPolicy) -> &'static str {
    match policy {
        AckPolicy::None => "None",
        AckPolicy::All => "All",
        AckPolicy::Explicit => "Explicit",
        AckPolicy::FlowControl => "FlowControl",
    }
}

pub fn replay_policy_title(policy: ReplayPolicy) -> &'static str {
    match policy {
        ReplayPolicy::Instant => "Instant",
        ReplayPolicy::Original => "Original",
    }
}

/// A fixed-decimal float with thousands separators, like humanize's `CommafWithDigits(x, 2)`.
pub fn comma_float(value: f64, digits: usize) -> String {
    let formatted = format!("{value:.digits$}");
    let (whole, fraction) = match formatted.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (formatted.as_str(), None),
    };
    let whole_number: i64 = whole.parse().unwrap_or(0);
    let mut out = comma(whole_number);
    if let Some(fraction) = fraction {
        let trimmed = fraction.trim_end_matches('0');
        if !trimmed.is_empty() {
            out.push('.');
            out.push_str(trimmed);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comma_groups_thousands() {
        assert_eq!(comma(0), "0");
        assert_eq!(comma(999), "999");
        assert_eq!(comma(1000), "1,000");
        assert_eq!(comma(1234567), "1,234,567");
        assert_eq!(comma(-1234), "-1,234");
    }

    #[test]
    fn ibytes_matches_go_humanize() {
        assert_eq!(ibytes(0), "0 B");
        assert_eq!(ibytes(9), "9 B");
        assert_eq!(ibytes(47), "47 B");
        assert_eq!(ibytes(1023), "1023 B");
        assert_eq!(ibytes(1234), "1.2 KiB");
        assert_eq!(ibytes(12345), "12 KiB");
        assert_eq!(ibytes(256 * 1024 * 1024), "256 MiB");
    }

    #[test]
    fn durations_like_natscli() {
        assert_eq!(humanize_duration(Duration::from_secs(120)), "2m0s");
        assert_eq!(humanize_duration(Duration::from_secs(5)), "5.00s");
        assert_eq!(humanize_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(humanize_duration(Duration::from_millis(1500)), "1.50s");
        assert_eq!(humanize_duration(Duration::from_micros(1500)), "2ms");
        assert_eq!(go_duration(Duration::from_secs(120)), "2m0s");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_micros(1500)), "1.5ms");
        assert_eq!(go_duration(Duration::from_secs(5400)), "1h30m0s");
    }

    #[test]
    fn parses_durations_and_sizes() {
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("1d").unwrap(), Duration::from_secs(86400));
        assert_eq!(parse_duration("-1").unwrap(), Duration::ZERO);
        assert!(parse_duration("abc").is_err());
        assert_eq!(
            parse_duration("1d12h").unwrap(),
            Duration::from_secs(129_600)
        );
        assert_eq!(
            parse_duration("2w").unwrap(),
            Duration::from_secs(14 * 86_400)
        );
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("250μs").unwrap(), Duration::from_micros(250));
        assert!(parse_duration("1x").is_err());
        assert!(parse_duration("d").is_err());
        assert_eq!(parse_bytes("1KB").unwrap(), 1024);
        assert_eq!(parse_bytes("256MB").unwrap(), 256 << 20);
        assert_eq!(parse_bytes("-1").unwrap(), -1);
        assert_eq!(parse_bytes("100").unwrap(), 100);
    }
}
