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
    pub batch_sequence: Option<&'a str>,
    pub batch_commit: Option<&'a str>,
    pub required_api_level: Option<&'a str>,
    pub schedule_target: Option<&'a str>,
    pub schedule_source: Option<&'a str>,
    pub schedule_ttl: Option<&'a str>,
    pub schedule_rollup: Option<&'a str>,
    pub schedule_time_zone: Option<&'a str>,
    pub schedule_next: Option<&'a str>,
    pub scheduler: Option<&'a str>,
    pub counter_sources: Option<&'a str>,
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
            // An empty value counts as absent, except where nats-server refuses a present but
            // empty header (an empty zone name would otherwise read as UTC in Go).
            if value.is_empty()
                && name != b"Nats-Batch-Commit"
                && name != b"Nats-Schedule-Time-Zone"
            {
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
                b"Nats-Batch-Sequence" => &mut headers.batch_sequence,
                b"Nats-Batch-Commit" => &mut headers.batch_commit,
                b"Nats-Required-Api-Level" => &mut headers.required_api_level,
                b"Nats-Schedule-Target" => &mut headers.schedule_target,
                b"Nats-Schedule-Source" => &mut headers.schedule_source,
                b"Nats-Schedule-TTL" => &mut headers.schedule_ttl,
                b"Nats-Schedule-Rollup" => &mut headers.schedule_rollup,
                b"Nats-Schedule-Time-Zone" => &mut headers.schedule_time_zone,
                b"Nats-Schedule-Next" => &mut headers.schedule_next,
                b"Nats-Scheduler" => &mut headers.scheduler,
                b"Nats-Counter-Sources" => &mut headers.counter_sources,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(value);
            }
        }
        headers
    }
}

/// The header block with `name: value` added at its end (nats-server's `genHeader`); an empty
/// block becomes `NATS/1.0` with the one header.
pub(crate) fn append_header(block: &[u8], name: &str, value: &str) -> Vec<u8> {
    let mut extended = Vec::with_capacity(block.len() + name.len() + value.len() + 16);
    if block.is_empty() {
        extended.extend_from_slice(b"NATS/1.0\r\n");
    } else {
        // Drop the blank line that ends the block, then end it again after the new header.
        extended.extend_from_slice(block.strip_suffix(b"\r\n").unwrap_or(block));
    }
    extended.extend_from_slice(name.as_bytes());
    extended.extend_from_slice(b": ");
    extended.extend_from_slice(value.as_bytes());
    extended.extend_from_slice(b"\r\n\r\n");
    extended
}

/// The header block with the first `name` header's value replaced, or with `name: value` added
/// when it has none (nats-server's `setHeader`).
pub(crate) fn set_header(block: &[u8], name: &str, value: &str) -> Vec<u8> {
    let mut result = Vec::with_capacity(block.len() + value.len() + 8);
    let mut replaced = false;
    for (index, line) in block.split_inclusive(|&byte| byte == b'\n').enumerate() {
        let is_target = index > 0
            && !replaced
            && line.len() > name.len()
            && line.starts_with(name.as_bytes())
            && line[name.len()] == b':';
        if is_target {
            result.extend_from_slice(name.as_bytes());
            result.extend_from_slice(b": ");
            result.extend_from_slice(value.as_bytes());
            result.extend_from_slice(b"\r\n");
            replaced = true;
        } else {
            result.extend_from_slice(line);
        }
    }
    if replaced {
        result
    } else {
        append_header(block, name, value)
    }
}

/// The header block without the headers whose name `drop` selects (the status line is kept).
pub(crate) fn remove_headers(block: &[u8], drop: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let mut kept = Vec::with_capacity(block.len());
    let mut lines = block.split_inclusive(|&byte| byte == b'\n');
    if let Some(status) = lines.next() {
        kept.extend_from_slice(status);
    }
    for line in lines {
        let name = line
            .iter()
            .position(|&byte| byte == b':')
            .map_or(&line[..0], |colon| &line[..colon]);
        if name.is_empty() || !drop(name) {
            kept.extend_from_slice(line);
        }
    }
    kept
}

/// A mirrored message's headers without `Nats-Batch-*` and `Nats-Expected-*` (checks meant
/// for the origin); a block left with only its status line becomes empty. None: nothing to
/// remove.
pub(crate) fn without_origin_checks(block: &[u8]) -> Option<Vec<u8>> {
    let meant_for_origin =
        |name: &[u8]| name.starts_with(b"Nats-Batch-") || name.starts_with(b"Nats-Expected-");
    let present = block
        .split(|&byte| byte == b'\n')
        .skip(1)
        .any(&meant_for_origin);
    if !present {
        return None;
    }
    let kept = remove_headers(block, meant_for_origin);
    let only_status = kept
        .split(|&byte| byte == b'\n')
        .skip(1)
        .all(|line| line.strip_suffix(b"\r").unwrap_or(line).is_empty());
    Some(if only_status { Vec::new() } else { kept })
}

/// nats-server's `parseUint64`: decimal digits only.
pub(crate) fn parse_unsigned(value: &str) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// nats-server's `parseInt64` as used for expected sequences: digits only, anything else is
/// -1, which the caller turns into `u64::MAX` (a sequence that never matches).
pub(crate) fn parse_sequence(value: &str) -> u64 {
    parse_unsigned(value).unwrap_or(u64::MAX)
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
    if let Ok(nanos) = go_compat::duration::parse(value) {
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
        let block =
            b"NATS/1.0\r\nNats-Msg-Id:\r\nNats-Batch-Commit: \r\nNats-Schedule-Time-Zone:\r\n\r\n";
        let headers = PublishHeaders::parse(block);
        assert_eq!(headers.msg_id, None);
        assert_eq!(headers.batch_commit, Some(""));
        assert_eq!(headers.schedule_time_zone, Some(""));
    }

    #[test]
    fn header_edits() {
        let block = b"NATS/1.0\r\nNats-Batch-Id: b\r\nX: 1\r\n\r\n";
        assert_eq!(
            append_header(block, "Nats-Batch-Commit", "1"),
            b"NATS/1.0\r\nNats-Batch-Id: b\r\nX: 1\r\nNats-Batch-Commit: 1\r\n\r\n"
        );
        assert_eq!(append_header(b"", "A", "b"), b"NATS/1.0\r\nA: b\r\n\r\n");
        assert_eq!(
            remove_headers(block, |name| name.starts_with(b"Nats-")),
            b"NATS/1.0\r\nX: 1\r\n\r\n"
        );
        assert_eq!(
            set_header(block, "Nats-Batch-Id", "c"),
            b"NATS/1.0\r\nNats-Batch-Id: c\r\nX: 1\r\n\r\n"
        );
        assert_eq!(
            set_header(block, "Y", "2"),
            b"NATS/1.0\r\nNats-Batch-Id: b\r\nX: 1\r\nY: 2\r\n\r\n"
        );
        assert_eq!(
            without_origin_checks(block).as_deref(),
            Some(&b"NATS/1.0\r\nX: 1\r\n\r\n"[..])
        );
        assert_eq!(
            without_origin_checks(b"NATS/1.0\r\nNats-Expected-Stream: A\r\n\r\n").as_deref(),
            Some(&b""[..])
        );
        assert_eq!(without_origin_checks(b"NATS/1.0\r\nX: 1\r\n\r\n"), None);
        assert_eq!(parse_unsigned("12"), Some(12));
        assert_eq!(parse_unsigned("-1"), None);
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
