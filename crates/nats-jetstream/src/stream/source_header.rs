//! The `Nats-Stream-Source` header nats-server puts on every sourced message, and the origin
//! stream identity it ends with.
//!
//! Value: `<origin> <origin seq> <filter> <destination> <original subject> <identity>` (nats-server
//! 2.10 to 2.14 wrote it without the identity; both forms parse). The first four fields also name
//! the source (nats-server's `composeIName`), so the newest header of a source in the aggregate is
//! that source's persisted position, and the identity tells a restarted aggregate whether its
//! origin was deleted and created again in between.
//!
//! Who calls it: `sources.rs` (building headers, recovering positions) and the config checks
//! (duplicate sources, through [`index_name`]). It knows nothing of tasks or stores.

use bytes::{BufMut, Bytes, BytesMut};
use jetstream_api::StreamSource;
use sha2::{Digest, Sha256};

/// The header nats-server puts on every sourced message.
pub(crate) const STREAM_SOURCE_HEADER: &str = "Nats-Stream-Source";

/// The 62 symbols nats-server's short hashes (`getHashSize`) are written in.
const HASH_DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// Length of a stream identity (nats-server's `sysHashLen`).
const IDENTITY_LENGTH: usize = 8;

/// A stream's identity as nats-server computes it (`mset.identity()`): a short hash of its
/// creation time in Go's RFC 3339 form, so a stream deleted and created again under the same
/// name has another one.
pub(crate) fn stream_identity(created_nanos: i64) -> String {
    let created = crate::time_format::rfc3339_from_nanos(created_nanos);
    let digest = Sha256::digest(created.as_bytes());
    digest[..IDENTITY_LENGTH]
        .iter()
        .map(|&byte| char::from(HASH_DIGITS[usize::from(byte) % HASH_DIGITS.len()]))
        .collect()
}

/// The three parts of nats-server's source index name (`composeIName`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IndexName {
    origin: String,
    filter: String,
    destination: String,
}

/// What a stored `Nats-Stream-Source` value says.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SourcedFrom {
    pub key: IndexName,
    pub origin_seq: u64,
    /// The origin's identity (None in headers written before nats-server 2.15).
    pub identity: Option<String>,
}

impl IndexName {
    pub(crate) fn of(source: &StreamSource) -> IndexName {
        let mut origin = source.name.clone();
        if let Some(external) = &source.external {
            origin.push(':');
            origin.push_str(&external.api_prefix);
        }
        let or_all = |value: &str| {
            if value.is_empty() {
                ">".to_string()
            } else {
                value.to_string()
            }
        };
        let (filter, destination) = if source.subject_transforms.is_empty() {
            (or_all(&source.filter_subject), ">".to_string())
        } else {
            let sources: Vec<String> = source
                .subject_transforms
                .iter()
                .map(|transform| or_all(&transform.source))
                .collect();
            let destinations: Vec<String> = source
                .subject_transforms
                .iter()
                .map(|transform| or_all(&transform.destination))
                .collect();
            (sources.join("\u{c}"), destinations.join("\u{c}"))
        };
        IndexName {
            origin,
            filter,
            destination,
        }
    }

    /// The header value for one origin message (`identity` empty: none known).
    pub(crate) fn header_value(
        &self,
        origin_seq: u64,
        original_subject: &str,
        identity: &str,
    ) -> String {
        let mut value = format!(
            "{} {origin_seq} {} {} {original_subject}",
            self.origin, self.filter, self.destination
        );
        if !identity.is_empty() {
            value.push(' ');
            value.push_str(identity);
        }
        value
    }
}

impl SourcedFrom {
    /// Parse a stored header value (nats-server's `streamAndSeq`, for the forms it writes since
    /// 2.10: four fields at least, the identity sixth).
    pub(crate) fn parse(value: &str) -> Option<SourcedFrom> {
        let fields: Vec<&str> = value.split(' ').collect();
        if fields.len() < 4 {
            return None;
        }
        Some(SourcedFrom {
            key: IndexName {
                origin: fields[0].to_string(),
                filter: fields[2].to_string(),
                destination: fields[3].to_string(),
            },
            origin_seq: fields[1].parse().ok()?,
            identity: fields
                .get(5)
                .filter(|identity| !identity.is_empty())
                .map(|identity| identity.to_string()),
        })
    }
}

/// The source's unique identity within a stream (duplicate sources are refused by it).
pub(crate) fn index_name(source: &StreamSource) -> String {
    let key = IndexName::of(source);
    format!("{} {} {}", key.origin, key.filter, key.destination)
}

/// The value of the first header called `name` in a raw header block.
pub(crate) fn header_value<'a>(block: &'a [u8], name: &str) -> Option<&'a str> {
    let text = std::str::from_utf8(block).ok()?;
    text.split("\r\n").skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key == name).then(|| value.trim())
    })
}

/// The origin's header block minus what must not travel (an older source header, the
/// `Nats-Expected-*` checks meant for the origin, batch headers), plus this source's header.
pub(crate) fn sourced_header(origin_headers: &[u8], value: &str) -> Bytes {
    let mut block = BytesMut::with_capacity(origin_headers.len() + value.len() + 40);
    let mut lines = origin_headers.split(|&byte| byte == b'\n');
    match lines.next() {
        Some(status) if !origin_headers.is_empty() => {
            block.put_slice(status);
            block.put_u8(b'\n');
        }
        _ => block.put_slice(b"NATS/1.0\r\n"),
    }
    for line in lines {
        let trimmed = line.strip_suffix(b"\r").unwrap_or(line);
        if trimmed.is_empty() {
            continue;
        }
        let name = trimmed
            .iter()
            .position(|&byte| byte == b':')
            .map_or(trimmed, |colon| &trimmed[..colon]);
        if name == STREAM_SOURCE_HEADER.as_bytes()
            || name.starts_with(b"Nats-Expected-")
            || name.starts_with(b"Nats-Batch-")
        {
            continue;
        }
        block.put_slice(trimmed);
        block.put_slice(b"\r\n");
    }
    block.put_slice(STREAM_SOURCE_HEADER.as_bytes());
    block.put_slice(b": ");
    block.put_slice(value.as_bytes());
    block.put_slice(b"\r\n\r\n");
    block.freeze()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use jetstream_api::SubjectTransform;

    /// A source of `name` with a filter and transforms (`(source, destination)` pairs).
    pub(in crate::stream) fn source(
        name: &str,
        filter: &str,
        transforms: &[(&str, &str)],
    ) -> StreamSource {
        StreamSource {
            name: name.into(),
            filter_subject: filter.into(),
            subject_transforms: transforms
                .iter()
                .map(|(source, destination)| SubjectTransform {
                    source: source.to_string(),
                    destination: destination.to_string(),
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn index_names_as_nats_server_composes_them() {
        assert_eq!(index_name(&source("O", "", &[])), "O > >");
        assert_eq!(index_name(&source("O", "o.a", &[])), "O o.a >");
        assert_eq!(
            index_name(&source(
                "O",
                "",
                &[("o.*", "t.{{wildcard(1)}}"), ("p.>", "")]
            )),
            "O o.*\u{c}p.> t.{{wildcard(1)}}\u{c}>"
        );
    }

    #[test]
    fn header_round_trip_with_and_without_identity() {
        let key = IndexName::of(&source("O1", "", &[("o1.*", "t.{{wildcard(1)}}")]));
        let value = key.header_value(7, "o1.a", "ihpmiqR3");
        assert_eq!(value, "O1 7 o1.* t.{{wildcard(1)}} o1.a ihpmiqR3");
        let parsed = SourcedFrom::parse(&value).expect("parses");
        assert_eq!(parsed.key, key);
        assert_eq!(parsed.origin_seq, 7);
        assert_eq!(parsed.identity.as_deref(), Some("ihpmiqR3"));
        // The form written before the identity (nats-server 2.10-2.14, and rnats before).
        let value = key.header_value(3, "o1.b", "");
        assert_eq!(value, "O1 3 o1.* t.{{wildcard(1)}} o1.b");
        let parsed = SourcedFrom::parse(&value).expect("parses");
        assert_eq!((parsed.key, parsed.origin_seq), (key, 3));
        assert_eq!(parsed.identity, None);
        assert_eq!(SourcedFrom::parse("O1 x > >"), None);
        assert_eq!(SourcedFrom::parse("O1 3"), None);
    }

    #[test]
    fn identity_is_nats_servers_short_hash_of_the_creation_time() {
        // Seen on nats-server 2.15.1: a stream created 2026-11-30T02:26:41.263582659Z had its
        // sourced messages stamped `Nats-Stream-Source: O 1 > > o PpRdi5Th`.
        assert_eq!(stream_identity(1_796_005_601_263_582_659), "PpRdi5Th");
        assert_ne!(stream_identity(1_796_005_601_263_582_660), "PpRdi5Th");
    }

    #[test]
    fn sourced_header_drops_what_must_not_travel() {
        let origin = b"NATS/1.0\r\nNats-Msg-Id: a\r\nNats-Expected-Stream: X\r\nNats-Stream-Source: Z 1 > > z\r\nX-Keep: 1\r\n\r\n";
        let block = sourced_header(origin, "O 5 > > o.a");
        assert_eq!(
            &block[..],
            b"NATS/1.0\r\nNats-Msg-Id: a\r\nX-Keep: 1\r\nNats-Stream-Source: O 5 > > o.a\r\n\r\n"
        );
        let block = sourced_header(b"", "O 1 > > o.a");
        assert_eq!(
            &block[..],
            b"NATS/1.0\r\nNats-Stream-Source: O 1 > > o.a\r\n\r\n"
        );
        assert_eq!(
            header_value(&block, STREAM_SOURCE_HEADER),
            Some("O 1 > > o.a")
        );
    }
}
