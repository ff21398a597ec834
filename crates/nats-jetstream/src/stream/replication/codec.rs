//! The log form of stream entries: a batch (what one proposal carries) is a header (the batch's
//! id and the stream's last sequence after it) followed by [`StreamEntry`]s in a compact binary
//! encoding. Decoding borrows from the proposal's bytes: a follower applies a message without
//! copying its subject, headers or payload.
//!
//! Layout, integers little-endian: `version u8 = 1, batch id u64, last sequence u64`, then per
//! entry a tag byte and its fields; strings and byte blocks as `u32 length + bytes`. The config
//! entry carries the stream config as its JSON (the form nats-server's meta group stores too).

use super::super::apply::StreamEntry;
use jetstream_api::StreamConfig;
use nats_store::TTL_NEVER;
use std::borrow::Cow;
use std::time::Duration;

const VERSION: u8 = 1;
const HEADER_SIZE: usize = 1 + 8 + 8;

const MESSAGE: u8 = 1;
const SKIP: u8 = 2;
const REMOVE: u8 = 3;
const ERASE: u8 = 4;
const PURGE: u8 = 5;
const EXPIRE: u8 = 6;
const CONFIG: u8 = 7;

/// A proposal that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("malformed stream batch: {0}")]
pub(crate) struct DecodeError(&'static str);

/// Starts a batch in `buffer` (cleared first); entries follow with [`encode`], the header is
/// completed with [`finish_batch`].
pub(crate) fn start_batch(buffer: &mut Vec<u8>) {
    buffer.clear();
    buffer.push(VERSION);
    buffer.extend_from_slice(&[0; 16]);
}

/// Whether `buffer` holds entries after its header.
pub(crate) fn has_entries(buffer: &[u8]) -> bool {
    buffer.len() > HEADER_SIZE
}

/// Writes the batch id and the last sequence into the header written by [`start_batch`].
pub(crate) fn finish_batch(buffer: &mut [u8], id: u64, last_seq: u64) {
    buffer[1..9].copy_from_slice(&id.to_le_bytes());
    buffer[9..17].copy_from_slice(&last_seq.to_le_bytes());
}

fn put_bytes(buffer: &mut Vec<u8>, bytes: &[u8]) {
    buffer.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    buffer.extend_from_slice(bytes);
}

/// Appends a stored message as the entry that stores it again under its own sequence, time
/// and per-message TTL (`ttl`, what the store holds for it: `StreamStore::message_ttl`), for
/// snapshots and a stream scaled up from one replica: the copy expires when the original would.
pub(crate) fn encode_stored(
    message: &nats_store::StoredMessage,
    ttl: Option<Duration>,
    buffer: &mut Vec<u8>,
) {
    let entry = StreamEntry::Message {
        seq: message.seq,
        timestamp: message.timestamp,
        subject: Cow::Borrowed(&message.subject),
        headers: Cow::Borrowed(&message.headers),
        payload: Cow::Borrowed(&message.payload),
        ttl,
    };
    encode(&entry, buffer);
}

/// The TTL "never" ([`TTL_NEVER`], `Duration::MAX`) in the log: a message exempt from
/// `max_age` on every replica, not one with a TTL of 584 years.
const TTL_NEVER_NANOS: u64 = u64::MAX;

fn ttl_nanos(ttl: Duration) -> u64 {
    if ttl == TTL_NEVER {
        TTL_NEVER_NANOS
    } else {
        u64::try_from(ttl.as_nanos())
            .map_or(TTL_NEVER_NANOS - 1, |nanos| nanos.min(TTL_NEVER_NANOS - 1))
    }
}

/// Appends one entry.
pub(crate) fn encode(entry: &StreamEntry<'_>, buffer: &mut Vec<u8>) {
    match entry {
        StreamEntry::Message {
            seq,
            timestamp,
            subject,
            headers,
            payload,
            ttl,
        } => {
            buffer.push(MESSAGE);
            buffer.extend_from_slice(&seq.to_le_bytes());
            buffer.extend_from_slice(&timestamp.to_le_bytes());
            match ttl {
                Some(ttl) => {
                    buffer.push(1);
                    buffer.extend_from_slice(&ttl_nanos(*ttl).to_le_bytes());
                }
                None => buffer.push(0),
            }
            put_bytes(buffer, subject.as_bytes());
            put_bytes(buffer, headers);
            put_bytes(buffer, payload);
        }
        StreamEntry::Skip { seq, count } => {
            buffer.push(SKIP);
            buffer.extend_from_slice(&seq.to_le_bytes());
            buffer.extend_from_slice(&count.to_le_bytes());
        }
        StreamEntry::Remove { seq } => {
            buffer.push(REMOVE);
            buffer.extend_from_slice(&seq.to_le_bytes());
        }
        StreamEntry::Erase { seq } => {
            buffer.push(ERASE);
            buffer.extend_from_slice(&seq.to_le_bytes());
        }
        StreamEntry::Purge {
            filter,
            up_to_seq,
            keep,
        } => {
            buffer.push(PURGE);
            put_bytes(buffer, filter.as_bytes());
            buffer.extend_from_slice(&up_to_seq.to_le_bytes());
            buffer.extend_from_slice(&keep.to_le_bytes());
        }
        StreamEntry::Expire { now } => {
            buffer.push(EXPIRE);
            buffer.extend_from_slice(&now.to_le_bytes());
        }
        StreamEntry::Config { config, created } => {
            buffer.push(CONFIG);
            buffer.extend_from_slice(&created.to_le_bytes());
            put_bytes(buffer, &jetstream_api::json::encode_response(&**config));
        }
    }
}

/// A decoded batch: its header and an iterator over its entries.
pub(crate) struct Batch<'a> {
    pub id: u64,
    pub last_seq: u64,
    rest: &'a [u8],
}

pub(crate) fn decode_batch(bytes: &[u8]) -> Result<Batch<'_>, DecodeError> {
    if bytes.len() < HEADER_SIZE {
        return Err(DecodeError("short header"));
    }
    if bytes[0] != VERSION {
        return Err(DecodeError("unknown version"));
    }
    let mut reader = Reader(&bytes[1..]);
    Ok(Batch {
        id: reader.u64()?,
        last_seq: reader.u64()?,
        rest: reader.0,
    })
}

impl<'a> Batch<'a> {
    /// The next entry, `None` at the end.
    pub(crate) fn next_entry(&mut self) -> Result<Option<StreamEntry<'a>>, DecodeError> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let mut reader = Reader(self.rest);
        let entry = reader.entry()?;
        self.rest = reader.0;
        Ok(Some(entry))
    }
}

/// How much of a batch [`BatchReader`] reads at a time.
pub(crate) const PIECE: usize = 1 << 20;

/// What [`Reader`] says when the input ends inside an entry.
const TRUNCATED: &str = "truncated";

/// A batch's entries read from `input` in pieces of [`PIECE`] (a snapshot's batch: the whole
/// stream, never held whole): at most a piece and the entry that crosses its end are held.
pub(crate) struct BatchReader<R> {
    input: R,
    buffer: Vec<u8>,
    start: usize,
    at_end: bool,
}

impl<R: std::io::Read> BatchReader<R> {
    /// Reads the batch's header: its id and last sequence, and the reader of its entries.
    pub(crate) fn new(mut input: R) -> std::io::Result<(u64, u64, BatchReader<R>)> {
        let mut header = [0u8; HEADER_SIZE];
        input.read_exact(&mut header)?;
        let batch = decode_batch(&header).map_err(invalid_data)?;
        let reader = BatchReader {
            input,
            buffer: Vec::new(),
            start: 0,
            at_end: false,
        };
        Ok((batch.id, batch.last_seq, reader))
    }

    /// The next entry, `None` at the end of the input.
    pub(crate) fn next_entry(&mut self) -> std::io::Result<Option<StreamEntry<'_>>> {
        loop {
            let available = &self.buffer[self.start..];
            if available.is_empty() && self.at_end {
                return Ok(None);
            }
            if !available.is_empty() {
                let mut reader = Reader(available);
                match reader.entry() {
                    Ok(_) => {
                        let begin = self.start;
                        self.start += available.len() - reader.0.len();
                        let entry = Reader(&self.buffer[begin..self.start]).entry();
                        return entry.map(Some).map_err(invalid_data);
                    }
                    Err(DecodeError(TRUNCATED)) if !self.at_end => {}
                    Err(error) => return Err(invalid_data(error)),
                }
            }
            self.fill()?;
        }
    }

    /// Drops the entries read and appends up to a piece of input.
    fn fill(&mut self) -> std::io::Result<()> {
        self.buffer.drain(..self.start);
        self.start = 0;
        let held = self.buffer.len();
        self.buffer.resize(held + PIECE, 0);
        let read = loop {
            match self.input.read(&mut self.buffer[held..]) {
                Ok(read) => break read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => {
                    self.buffer.truncate(held);
                    return Err(error);
                }
            }
        };
        self.buffer.truncate(held + read);
        self.at_end = read == 0;
        Ok(())
    }
}

fn invalid_data(error: DecodeError) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, error.to_string())
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], DecodeError> {
        if self.0.len() < count {
            return Err(DecodeError(TRUNCATED));
        }
        let (head, tail) = self.0.split_at(count);
        self.0 = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(bytes))
    }

    fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(self.u64()? as i64)
    }

    fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let mut length = [0; 4];
        length.copy_from_slice(self.take(4)?);
        self.take(u32::from_le_bytes(length) as usize)
    }

    fn text(&mut self) -> Result<&'a str, DecodeError> {
        std::str::from_utf8(self.bytes()?).map_err(|_| DecodeError("subject is not UTF-8"))
    }

    fn entry(&mut self) -> Result<StreamEntry<'a>, DecodeError> {
        Ok(match self.u8()? {
            MESSAGE => {
                let seq = self.u64()?;
                let timestamp = self.i64()?;
                let ttl = match self.u8()? {
                    0 => None,
                    _ => Some(match self.u64()? {
                        TTL_NEVER_NANOS => TTL_NEVER,
                        nanos => Duration::from_nanos(nanos),
                    }),
                };
                StreamEntry::Message {
                    seq,
                    timestamp,
                    subject: Cow::Borrowed(self.text()?),
                    headers: Cow::Borrowed(self.bytes()?),
                    payload: Cow::Borrowed(self.bytes()?),
                    ttl,
                }
            }
            SKIP => StreamEntry::Skip {
                seq: self.u64()?,
                count: self.u64()?,
            },
            REMOVE => StreamEntry::Remove { seq: self.u64()? },
            ERASE => StreamEntry::Erase { seq: self.u64()? },
            PURGE => StreamEntry::Purge {
                filter: Cow::Borrowed(self.text()?),
                up_to_seq: self.u64()?,
                keep: self.u64()?,
            },
            EXPIRE => StreamEntry::Expire { now: self.i64()? },
            CONFIG => {
                let created = self.i64()?;
                let config: StreamConfig = serde_json::from_slice(self.bytes()?)
                    .map_err(|_| DecodeError("stream config"))?;
                StreamEntry::Config {
                    config: Box::new(config),
                    created,
                }
            }
            _ => return Err(DecodeError("unknown entry kind")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_kind_round_trips() {
        let config: StreamConfig =
            serde_json::from_value(serde_json::json!({"name": "S", "subjects": ["s.>"]}))
                .expect("config");
        let entries = vec![
            StreamEntry::Message {
                seq: 7,
                timestamp: -3,
                subject: Cow::Borrowed("s.a"),
                headers: Cow::Borrowed(b"NATS/1.0\r\nA: b\r\n\r\n"),
                payload: Cow::Borrowed(b"payload"),
                ttl: Some(Duration::from_secs(9)),
            },
            StreamEntry::Message {
                seq: 9,
                timestamp: 5,
                subject: Cow::Borrowed("s.c"),
                headers: Cow::Borrowed(b"NATS/1.0\r\nNats-TTL: never\r\n\r\n"),
                payload: Cow::Borrowed(b""),
                ttl: Some(TTL_NEVER),
            },
            StreamEntry::Message {
                seq: 8,
                timestamp: 4,
                subject: Cow::Borrowed("s.b"),
                headers: Cow::Borrowed(b""),
                payload: Cow::Borrowed(b""),
                ttl: None,
            },
            StreamEntry::Skip { seq: 9, count: 2 },
            StreamEntry::Remove { seq: 3 },
            StreamEntry::Erase { seq: 4 },
            StreamEntry::Purge {
                filter: Cow::Borrowed("s.a"),
                up_to_seq: 8,
                keep: 1,
            },
            StreamEntry::Expire { now: 99 },
            StreamEntry::Config {
                config: Box::new(config),
                created: 5,
            },
        ];
        let mut buffer = Vec::new();
        start_batch(&mut buffer);
        assert!(!has_entries(&buffer));
        for entry in &entries {
            encode(entry, &mut buffer);
        }
        finish_batch(&mut buffer, 42, 10);
        let mut batch = decode_batch(&buffer).expect("header");
        assert_eq!((batch.id, batch.last_seq), (42, 10));
        let mut decoded = Vec::new();
        while let Some(entry) = batch.next_entry().expect("entry") {
            decoded.push(entry);
        }
        assert_eq!(decoded, entries);
    }

    #[test]
    fn a_truncated_batch_is_an_error_not_a_panic() {
        let mut buffer = Vec::new();
        start_batch(&mut buffer);
        encode(&StreamEntry::Skip { seq: 1, count: 1 }, &mut buffer);
        finish_batch(&mut buffer, 1, 1);
        for cut in 0..buffer.len() {
            let Ok(mut batch) = decode_batch(&buffer[..cut]) else {
                continue;
            };
            let mut result = Ok(Some(StreamEntry::Expire { now: 0 }));
            while let Ok(Some(_)) = result {
                result = batch.next_entry();
            }
            if cut > HEADER_SIZE {
                assert!(result.is_err(), "cut at {cut}");
            }
        }
    }

    /// A reader handing out at most `step` bytes a call (entries cross its reads' ends).
    struct Trickle<'a> {
        input: &'a [u8],
        step: usize,
    }

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
            let length = self.step.min(buffer.len()).min(self.input.len());
            buffer[..length].copy_from_slice(&self.input[..length]);
            self.input = &self.input[length..];
            Ok(length)
        }
    }

    /// A batch read in pieces gives the entries it was made of, messages larger than a piece
    /// and entries crossing the pieces' ends too; cut short anywhere, it is an error.
    #[test]
    fn a_batch_read_in_pieces_gives_its_entries() {
        let large = vec![7u8; PIECE + 10];
        let mut entries = Vec::new();
        for seq in 1..=3_000u64 {
            let payload: &[u8] = if seq == 1_500 { &large } else { &large[..300] };
            entries.push(StreamEntry::Message {
                seq,
                timestamp: seq as i64,
                subject: Cow::Owned(format!("s.{seq}")),
                headers: Cow::Borrowed(b""),
                payload: Cow::Borrowed(payload),
                ttl: None,
            });
        }
        entries.push(StreamEntry::Skip {
            seq: 3_001,
            count: 5,
        });
        let mut buffer = Vec::new();
        start_batch(&mut buffer);
        for entry in &entries {
            encode(entry, &mut buffer);
        }
        finish_batch(&mut buffer, 0, 3_005);
        for step in [usize::MAX, 4_096, 333] {
            let input = Trickle {
                input: &buffer,
                step,
            };
            let (id, last_seq, mut reader) = BatchReader::new(input).expect("header");
            assert_eq!((id, last_seq), (0, 3_005));
            let mut count = 0;
            while let Some(entry) = reader.next_entry().expect("entry") {
                assert_eq!(entry, entries[count], "entry {count}, reads of {step}");
                count += 1;
            }
            assert_eq!(count, entries.len());
        }
        for cut in [
            3,
            HEADER_SIZE,
            HEADER_SIZE + 5,
            buffer.len() / 2,
            buffer.len() - 1,
        ] {
            let result = BatchReader::new(&buffer[..cut]).and_then(|(_, _, mut reader)| {
                while reader.next_entry()?.is_some() {}
                Ok(())
            });
            if cut == HEADER_SIZE {
                assert!(result.is_ok(), "a batch without entries");
            } else {
                assert!(result.is_err(), "cut at {cut}");
            }
        }
    }
}
