//! The JetStream publish headers a stream acts on, read in one pass over the raw header block
//! (`NATS/1.0\r\nName: value\r\n...`). Names match case-sensitively, as nats-server's lookups do;
//! the first occurrence wins.

/// The values of the publish headers present in one message.
#[derive(Default, Debug)]
pub(crate) struct PublishHeaders<'a> {
    pub msg_id: Option<&'a str>,
    pub expected_stream: Option<&'a str>,
    pub expected_last_sequence: Option<&'a str>,
    pub expected_last_subject_sequence: Option<&'a str>,
    pub expected_last_subject_sequence_subject: Option<&'a str>,
    pub expected_last_msg_id: Option<&'a str>,
    pub rollup: Option<&'a str>,
    pub ttl: Option<&'a str>,
    pub increment: Option<&'a str>,
    pub stream_source: Option<&'a str>,
    pub schedule: Option<&'a str>,
    pub batch_id: Option<&'a str>,
}

impl<'a> PublishHeaders<'a> {
    pub(crate) fn parse(block: &'a [u8]) -> PublishHeaders<'a> {
        let mut headers = PublishHeaders::default();
        // Skip the version/status line.
        let mut lines = block.split(|&byte| byte == b'\n').skip(1);
        for line in lines.by_ref() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(colon) = line.iter().position(|&byte| byte == b':') else {
                continue;
            };
            let name = &line[..colon];
            // Only `Nats-` headers matter here; most user headers stop at the first byte.
            if !name.starts_with(b"Nats-") {
                continue;
            }
            let Ok(value) = std::str::from_utf8(&line[colon + 1..]) else {
                continue;
            };
            let value = value.trim_matches([' ', '\t']);
            if value.is_empty() {
                continue;
            }
            let slot = match name {
                b"Nats-Msg-Id" => &mut headers.msg_id,
                b"Nats-Expected-Stream" => &mut headers.expected_stream,
                b"Nats-Expected-Last-Sequence" => &mut headers.expected_last_sequence,
                b"Nats-Expected-Last-Subject-Sequence" => {
                    &mut headers.expected_last_subject_sequence
                }
                b"Nats-Expected-Last-Subject-Sequence-Subject" => {
                    &mut headers.expected_last_subject_sequence_subject
                }
                b"Nats-Expected-Last-Msg-Id" => &mut headers.expected_last_msg_id,
                b"Nats-Rollup" => &mut headers.rollup,
                b"Nats-TTL" => &mut headers.ttl,
                b"Nats-Incr" => &mut headers.increment,
                b"Nats-Stream-Source" => &mut headers.stream_source,
                b"Nats-Schedule" => &mut headers.schedule,
                b"Nats-Batch-Id" => &mut headers.batch_id,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(value);
            }
        }
        headers
    }
}

/// nats-server's `parseInt64` as used for expected sequences: digits only, anything else is
/// -1, which the caller turns into `u64::MAX` (a sequence that never matches).
pub(crate) fn parse_sequence(value: &str) -> u64 {
    if value.is_empty() || !value.bytes().all(|byte| byte.is_ascii_digit()) {
        return u64::MAX;
    }
    value.parse().unwrap_or(u64::MAX)
}

/// A per-message TTL: `Never`, or whole seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MessageTtl {
    None,
    Never,
    Seconds(u64),
}

/// nats-server's `parseMessageTTL`: `never`, a Go duration of at least 1s, or whole seconds.
pub(crate) fn parse_ttl(value: &str) -> Result<MessageTtl, ()> {
    if value.eq_ignore_ascii_case("never") {
        return Ok(MessageTtl::Never);
    }
    if let Some(nanos) = parse_go_duration(value) {
        if nanos < 1_000_000_000 {
            return Err(());
        }
        return Ok(MessageTtl::Seconds((nanos / 1_000_000_000) as u64));
    }
    if value.is_empty() || !value.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(());
    }
    match value.parse::<u64>() {
        Ok(0) => Ok(MessageTtl::None),
        Ok(seconds) => Ok(MessageTtl::Seconds(seconds)),
        Err(_) => Err(()),
    }
}

/// Go's `time.ParseDuration` (units ns, us, µs, ms, s, m, h; decimals; sign), in nanoseconds.
pub(crate) fn parse_go_duration(text: &str) -> Option<i128> {
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_end == 0 {
            return None;
        }
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += number * scale;
    }
    let nanos = total as i128;
    Some(if negative { -nanos } else { nanos })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_headers() {
        let block = b"NATS/1.0\r\nNats-Msg-Id: abc\r\nX: y\r\nNats-Expected-Last-Sequence:  5 \r\nNats-Msg-Id: second\r\n\r\n";
        let headers = PublishHeaders::parse(block);
        assert_eq!(headers.msg_id, Some("abc"));
        assert_eq!(headers.expected_last_sequence, Some("5"));
        assert_eq!(headers.rollup, None);
    }

    #[test]
    fn ttl_rules() {
        assert_eq!(parse_ttl("never"), Ok(MessageTtl::Never));
        assert_eq!(parse_ttl("5s"), Ok(MessageTtl::Seconds(5)));
        assert_eq!(parse_ttl("1m30s"), Ok(MessageTtl::Seconds(90)));
        assert_eq!(parse_ttl("10"), Ok(MessageTtl::Seconds(10)));
        assert_eq!(parse_ttl("500ms"), Err(()));
        assert_eq!(parse_ttl("bad"), Err(()));
        assert_eq!(parse_sequence("12"), 12);
        assert_eq!(parse_sequence("x"), u64::MAX);
    }
}
