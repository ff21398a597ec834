//! Go's `time.Duration` as text: [`parse`] is `time.ParseDuration` (units `ns`, `us`, `µs`
//! (U+00B5), `μs` (U+03BC), `ms`, `s`, `m`, `h`; a sign; fractions; `0` alone needs no unit),
//! with Go's error wording; [`format`] is `Duration.String()` (`0s`, `1.5µs`, `300ms`, `1m0s`,
//! `2h3m4.5s`).

use std::fmt::Write as _;
use std::time::Duration;

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000;
const MILLISECOND: u64 = 1_000_000;
const SECOND: u64 = 1_000_000_000;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// Why a text is not a Go duration; `Display` is Go's error text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DurationError {
    /// `time: invalid duration "x"` (also overflow).
    Invalid(String),
    /// `time: missing unit in duration "1"`.
    MissingUnit(String),
    /// `time: unknown unit "x" in duration "1x"`.
    UnknownUnit { unit: String, text: String },
}

impl std::fmt::Display for DurationError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DurationError::Invalid(text) => {
                write!(formatter, "time: invalid duration {}", quote(text))
            }
            DurationError::MissingUnit(text) => {
                write!(formatter, "time: missing unit in duration {}", quote(text))
            }
            DurationError::UnknownUnit { unit, text } => write!(
                formatter,
                "time: unknown unit {} in duration {}",
                quote(unit),
                quote(text)
            ),
        }
    }
}

impl std::error::Error for DurationError {}

/// The time package's `quote`: double quotes, `"` and `\\` escaped, every byte of a
/// non-ASCII or control character as `\xNN`.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for character in text.chars() {
        if character.is_ascii() && character >= ' ' {
            if character == '"' || character == '\\' {
                out.push('\\');
            }
            out.push(character);
        } else {
            let mut buffer = [0u8; 4];
            for byte in character.encode_utf8(&mut buffer).bytes() {
                let _ = write!(out, "\\x{byte:02x}");
            }
        }
    }
    out.push('"');
    out
}

fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => NANOSECOND,
        "us" | "\u{b5}s" | "\u{3bc}s" => MICROSECOND,
        "ms" => MILLISECOND,
        "s" => SECOND,
        "m" => MINUTE,
        "h" => HOUR,
        _ => return None,
    })
}

/// Go's `time.ParseDuration`: signed nanoseconds.
pub fn parse(text: &str) -> Result<i64, DurationError> {
    let invalid = || DurationError::Invalid(text.to_string());
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        // The next character must be [0-9.].
        if !rest.starts_with(|character: char| character == '.' || character.is_ascii_digit()) {
            return Err(invalid());
        }
        let integer_end = rest
            .find(|character: char| !character.is_ascii_digit())
            .unwrap_or(rest.len());
        let integer_digits = &rest[..integer_end];
        rest = &rest[integer_end..];
        let mut whole: u64 = 0;
        for digit in integer_digits.bytes() {
            whole = whole
                .checked_mul(10)
                .and_then(|value| value.checked_add(u64::from(digit - b'0')))
                .filter(|value| *value <= 1 << 63)
                .ok_or_else(invalid)?;
        }
        // Go keeps the fraction's leading digits while they fit and drops the rest.
        let mut fraction: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut fraction_digits = "";
        if let Some(after_dot) = rest.strip_prefix('.') {
            let fraction_end = after_dot
                .find(|character: char| !character.is_ascii_digit())
                .unwrap_or(after_dot.len());
            fraction_digits = &after_dot[..fraction_end];
            rest = &after_dot[fraction_end..];
            let mut overflowed = false;
            for digit in fraction_digits.bytes() {
                if overflowed {
                    continue;
                }
                match fraction
                    .checked_mul(10)
                    .and_then(|value| value.checked_add(u64::from(digit - b'0')))
                    .filter(|value| *value <= 1 << 63)
                {
                    Some(value) => {
                        fraction = value;
                        scale *= 10.0;
                    }
                    None => overflowed = true,
                }
            }
        }
        if integer_digits.is_empty() && fraction_digits.is_empty() {
            // No digits (e.g. ".s").
            return Err(invalid());
        }
        let unit_end = rest
            .find(|character: char| character == '.' || character.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        if unit.is_empty() {
            return Err(DurationError::MissingUnit(text.to_string()));
        }
        let Some(unit) = unit_nanos(unit) else {
            return Err(DurationError::UnknownUnit {
                unit: unit.to_string(),
                text: text.to_string(),
            });
        };
        let mut value = whole
            .checked_mul(unit)
            .filter(|value| *value <= 1 << 63)
            .ok_or_else(invalid)?;
        if fraction > 0 {
            // Go's float64 arithmetic here, for the same rounding.
            value = value
                .checked_add((fraction as f64 * (unit as f64 / scale)) as u64)
                .filter(|value| *value <= 1 << 63)
                .ok_or_else(invalid)?;
        }
        total = total
            .checked_add(value)
            .filter(|value| *value <= 1 << 63)
            .ok_or_else(invalid)?;
    }
    if negative {
        // -(1<<63) is the one value whose magnitude does not fit in i64.
        return Ok(0i64.wrapping_sub_unsigned(total));
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// [`parse`] into a `std::time::Duration`; a negative duration is `Invalid`.
pub fn parse_std(text: &str) -> Result<Duration, DurationError> {
    let nanos = parse(text)?;
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| DurationError::Invalid(text.to_string()))
}

/// Go's `time.Duration.String()` of signed nanoseconds.
pub fn format(nanos: i64) -> String {
    let magnitude = nanos.unsigned_abs();
    let mut out = String::new();
    if nanos < 0 {
        out.push('-');
    }
    if magnitude < SECOND {
        let (unit, scale) = match magnitude {
            0 => return "0s".to_string(),
            1..=999 => ("ns", NANOSECOND),
            1_000..=999_999 => ("µs", MICROSECOND),
            _ => ("ms", MILLISECOND),
        };
        out.push_str(&decimal(magnitude, scale));
        out.push_str(unit);
        return out;
    }
    let hours = magnitude / HOUR;
    let minutes = (magnitude / MINUTE) % 60;
    if hours > 0 {
        let _ = write!(out, "{hours}h");
    }
    if hours > 0 || minutes > 0 {
        let _ = write!(out, "{minutes}m");
    }
    out.push_str(&decimal(magnitude % MINUTE, SECOND));
    out.push('s');
    out
}

/// [`format`] of a `std::time::Duration` (saturating at Go's largest duration).
pub fn format_std(duration: Duration) -> String {
    format(i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX))
}

/// `value / scale` with the fraction's trailing zeros trimmed (`1.5`, `2`).
fn decimal(value: u64, scale: u64) -> String {
    let whole = value / scale;
    let remainder = value % scale;
    if remainder == 0 {
        return whole.to_string();
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{remainder:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Texts and values as Go 1.24 prints and parses them (time.Duration.String,
    // time.ParseDuration), the forms nats-server writes in /varz, logs and errors.
    #[test]
    fn formats_like_go() {
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (3_300_000_000, "3.3s"),
            (4 * 60 * 1_000_000_000 + 5_000_000_000, "4m5s"),
            (4 * 60 * 1_000_000_000 + 5_001_000_000, "4m5.001s"),
            (
                5 * 3_600_000_000_000 + 6 * 60_000_000_000 + 7_001_000_000,
                "5h6m7.001s",
            ),
            (8 * 60_000_000_000 + 1, "8m0.000000001s"),
            (60_000_000_000, "1m0s"),
            (7_200_000_000_000, "2h0m0s"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
            (-1, "-1ns"),
            (-2_000_000_000, "-2s"),
        ];
        for (nanos, text) in cases {
            assert_eq!(format(nanos), text, "{nanos}");
        }
        assert_eq!(format_std(Duration::from_micros(234)), "234µs");
    }

    #[test]
    fn parses_like_go() {
        let cases: [(&str, i64); 24] = [
            ("0", 0),
            ("5s", 5_000_000_000),
            ("30s", 30_000_000_000),
            ("1478s", 1_478_000_000_000),
            ("-5s", -5_000_000_000),
            ("+5s", 5_000_000_000),
            ("-0", 0),
            ("+0", 0),
            ("5.0s", 5_000_000_000),
            ("5.6s", 5_600_000_000),
            ("5.s", 5_000_000_000),
            (".5s", 500_000_000),
            ("1.004s", 1_004_000_000),
            ("100.00100s", 100_001_000_000),
            ("10ns", 10),
            ("11us", 11_000),
            ("12µs", 12_000),
            ("12μs", 12_000),
            ("13ms", 13_000_000),
            ("15m", 900_000_000_000),
            ("16h", 57_600_000_000_000),
            ("3h30m", 12_600_000_000_000),
            ("39h9m14.425s", 140_954_425_000_000),
            ("9223372036854775807ns", i64::MAX),
        ];
        for (text, nanos) in cases {
            assert_eq!(parse(text), Ok(nanos), "{text}");
        }
        assert_eq!(parse("-9223372036854775808ns"), Ok(i64::MIN));
        assert_eq!(parse("0.3333333333333333333h"), Ok(1_200_000_000_000));
        assert_eq!(parse("52763797000ns"), Ok(52_763_797_000));
    }

    #[test]
    fn errors_are_worded_as_go() {
        let invalid = |text: &str| format!("time: invalid duration {text:?}");
        for bad in [
            "",
            "3",
            "-",
            "s",
            ".",
            "-.",
            ".s",
            "+.s",
            "1d",
            "9223372036854775808ns",
            "3000000h",
        ] {
            let error = parse(bad).unwrap_err().to_string();
            match bad {
                "3" => assert_eq!(error, "time: missing unit in duration \"3\""),
                "1d" => assert_eq!(error, "time: unknown unit \"d\" in duration \"1d\""),
                _ => assert_eq!(error, invalid(bad), "{bad:?}"),
            }
        }
        assert_eq!(parse_std("-1s").unwrap_err().to_string(), invalid("-1s"));
        assert_eq!(parse_std("1.5s"), Ok(Duration::from_millis(1500)));
        // Go's time.quote: non-ASCII bytes as \xNN.
        assert_eq!(
            parse("1µ").unwrap_err().to_string(),
            "time: unknown unit \"\\xc2\\xb5\" in duration \"1\\xc2\\xb5\""
        );
    }

    #[test]
    fn round_trips() {
        for nanos in [1, 999, 1_001, 1_234_567, 61_000_000_001, -3_723_000_000_000] {
            assert_eq!(parse(&format(nanos)), Ok(nanos), "{nanos}");
        }
    }
}
