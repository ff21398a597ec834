//! The log form of consumer records (the bytes after `CONSUMER_BATCH` in a stream's log).
//!
//! The hot record, a consumer's applied [`ConsumerEntry`]s (one per delivery and per ack), is a
//! compact binary form; the rare ones (create, delete, import) and a config entry carry their
//! JSON. Layout, integers little-endian: `version u8 = 1`, then records to the end, each a tag
//! byte and its fields; strings and byte blocks as `u32 length + bytes`.
//!
//! Logs written before this form carry a JSON array of records (first byte `[`): still read, and
//! still written while a member of the stream's group runs an rnats build from before this form
//! (`Replicator::binary_consumer_records`, decided by nats-server's `cluster/features.rs`).

use super::super::apply::ConsumerEntry;
use super::Record;
use jetstream_api::ConsumerConfig;

const VERSION: u8 = 1;
const JSON_ARRAY: u8 = b'[';

const RECORD_ENTRIES: u8 = 1;
const RECORD_JSON: u8 = 2;

const DELIVERED: u8 = 1;
const ACKED: u8 = 2;
const EXHAUSTED: u8 = 3;
const GONE: u8 = 4;
const FIRST_MOVED: u8 = 5;
const RESET: u8 = 6;
const CONFIG: u8 = 7;

/// Records that cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[error("malformed consumer records: {0}")]
pub(crate) struct CodecError(String);

/// Appends `records` to `buffer`.
pub(crate) fn encode(records: &[Record], buffer: &mut Vec<u8>) -> Result<(), CodecError> {
    buffer.push(VERSION);
    for record in records {
        match record {
            Record::Entries { name, entries } => {
                buffer.push(RECORD_ENTRIES);
                put_bytes(buffer, name.as_bytes());
                put_len(buffer, entries.len());
                for entry in entries {
                    encode_entry(entry, buffer)?;
                }
            }
            other => {
                buffer.push(RECORD_JSON);
                put_json(buffer, other)?;
            }
        }
    }
    Ok(())
}

/// Appends `records` as the JSON array of older logs (for a group with a member of an older
/// build, which reads only that).
pub(crate) fn encode_json(records: &[Record], buffer: &mut Vec<u8>) -> Result<(), CodecError> {
    serde_json::to_writer(buffer, records).map_err(json_error)
}

/// The records of `bytes` (this form, or the JSON array of older logs).
pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<Record>, CodecError> {
    match bytes.first() {
        Some(&JSON_ARRAY) => serde_json::from_slice(bytes).map_err(json_error),
        Some(&VERSION) => {
            let mut reader = Reader { bytes: &bytes[1..] };
            let mut records = Vec::new();
            while !reader.bytes.is_empty() {
                records.push(match reader.u8()? {
                    RECORD_ENTRIES => {
                        let name = reader.string()?;
                        let count = reader.u32()? as usize;
                        // Each entry takes at least 9 bytes: no count past what the bytes hold.
                        let mut entries = Vec::with_capacity(count.min(reader.bytes.len() / 9));
                        for _ in 0..count {
                            entries.push(decode_entry(&mut reader)?);
                        }
                        Record::Entries { name, entries }
                    }
                    RECORD_JSON => serde_json::from_slice(reader.block()?).map_err(json_error)?,
                    tag => return Err(CodecError(format!("unknown record tag {tag}"))),
                });
            }
            Ok(records)
        }
        Some(version) => Err(CodecError(format!("unknown version {version}"))),
        None => Err(CodecError("empty".into())),
    }
}

fn encode_entry(entry: &ConsumerEntry, buffer: &mut Vec<u8>) -> Result<(), CodecError> {
    match entry {
        ConsumerEntry::Delivered {
            consumer_seq,
            stream_seq,
            delivery_count,
            timestamp,
            ack,
        } => {
            buffer.push(DELIVERED);
            buffer.extend_from_slice(&consumer_seq.to_le_bytes());
            buffer.extend_from_slice(&stream_seq.to_le_bytes());
            buffer.extend_from_slice(&delivery_count.to_le_bytes());
            buffer.extend_from_slice(&timestamp.to_le_bytes());
            buffer.push(u8::from(*ack));
        }
        ConsumerEntry::Acked {
            stream_seq,
            consumer_seq,
            all,
        } => {
            buffer.push(ACKED);
            buffer.extend_from_slice(&stream_seq.to_le_bytes());
            buffer.extend_from_slice(&consumer_seq.to_le_bytes());
            buffer.push(u8::from(*all));
        }
        ConsumerEntry::Exhausted { stream_seq } => put_seq(buffer, EXHAUSTED, *stream_seq),
        ConsumerEntry::Gone { stream_seq } => put_seq(buffer, GONE, *stream_seq),
        ConsumerEntry::FirstMoved { first_seq } => put_seq(buffer, FIRST_MOVED, *first_seq),
        ConsumerEntry::Reset { stream_seq } => put_seq(buffer, RESET, *stream_seq),
        ConsumerEntry::Config { config, created } => {
            buffer.push(CONFIG);
            buffer.extend_from_slice(&created.to_le_bytes());
            put_json(buffer, config)?;
        }
    }
    Ok(())
}

fn decode_entry(reader: &mut Reader<'_>) -> Result<ConsumerEntry, CodecError> {
    Ok(match reader.u8()? {
        DELIVERED => ConsumerEntry::Delivered {
            consumer_seq: reader.u64()?,
            stream_seq: reader.u64()?,
            delivery_count: reader.u64()?,
            timestamp: reader.u64()? as i64,
            ack: reader.flag()?,
        },
        ACKED => ConsumerEntry::Acked {
            stream_seq: reader.u64()?,
            consumer_seq: reader.u64()?,
            all: reader.flag()?,
        },
        EXHAUSTED => ConsumerEntry::Exhausted {
            stream_seq: reader.u64()?,
        },
        GONE => ConsumerEntry::Gone {
            stream_seq: reader.u64()?,
        },
        FIRST_MOVED => ConsumerEntry::FirstMoved {
            first_seq: reader.u64()?,
        },
        RESET => ConsumerEntry::Reset {
            stream_seq: reader.u64()?,
        },
        CONFIG => {
            let created = reader.u64()? as i64;
            let config: ConsumerConfig =
                serde_json::from_slice(reader.block()?).map_err(json_error)?;
            ConsumerEntry::Config {
                config: Box::new(config),
                created,
            }
        }
        tag => return Err(CodecError(format!("unknown entry tag {tag}"))),
    })
}

fn put_seq(buffer: &mut Vec<u8>, tag: u8, seq: u64) {
    buffer.push(tag);
    buffer.extend_from_slice(&seq.to_le_bytes());
}

fn put_len(buffer: &mut Vec<u8>, len: usize) {
    buffer.extend_from_slice(&(len as u32).to_le_bytes());
}

fn put_bytes(buffer: &mut Vec<u8>, bytes: &[u8]) {
    put_len(buffer, bytes.len());
    buffer.extend_from_slice(bytes);
}

fn put_json(buffer: &mut Vec<u8>, value: &impl serde::Serialize) -> Result<(), CodecError> {
    let start = buffer.len();
    buffer.extend_from_slice(&[0; 4]);
    serde_json::to_writer(&mut *buffer, value).map_err(json_error)?;
    let len = (buffer.len() - start - 4) as u32;
    buffer[start..start + 4].copy_from_slice(&len.to_le_bytes());
    Ok(())
}

fn json_error(error: serde_json::Error) -> CodecError {
    CodecError(error.to_string())
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if self.bytes.len() < n {
            return Err(CodecError("truncated".into()));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.take(1)?[0])
    }

    fn flag(&mut self) -> Result<bool, CodecError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(CodecError(format!("flag {other}"))),
        }
    }

    fn u32(&mut self) -> Result<u32, CodecError> {
        let mut word = [0; 4];
        word.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(word))
    }

    fn u64(&mut self) -> Result<u64, CodecError> {
        let mut word = [0; 8];
        word.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(word))
    }

    fn block(&mut self) -> Result<&'a [u8], CodecError> {
        let len = self.u32()? as usize;
        self.take(len)
    }

    fn string(&mut self) -> Result<String, CodecError> {
        std::str::from_utf8(self.block()?)
            .map(str::to_string)
            .map_err(|_| CodecError("a name that is not UTF-8".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_record() -> Vec<Record> {
        let config: ConsumerConfig =
            serde_json::from_str(r#"{"durable_name":"D","ack_policy":"explicit"}"#)
                .expect("config");
        vec![
            Record::Create {
                name: "D".into(),
                config: Box::new(config.clone()),
                created: 7,
                start_seq: 3,
            },
            Record::Entries {
                name: "D".into(),
                entries: vec![
                    ConsumerEntry::Delivered {
                        consumer_seq: 1,
                        stream_seq: 3,
                        delivery_count: 1,
                        timestamp: -5,
                        ack: true,
                    },
                    ConsumerEntry::Acked {
                        stream_seq: 3,
                        consumer_seq: 1,
                        all: false,
                    },
                    ConsumerEntry::Exhausted { stream_seq: 4 },
                    ConsumerEntry::Gone { stream_seq: 5 },
                    ConsumerEntry::FirstMoved {
                        first_seq: u64::MAX,
                    },
                    ConsumerEntry::Reset { stream_seq: 9 },
                    ConsumerEntry::Config {
                        config: Box::new(config),
                        created: i64::MIN,
                    },
                ],
            },
            Record::Delete { name: "D".into() },
        ]
    }

    #[test]
    fn every_record_and_entry_round_trips() {
        let records = every_record();
        let mut bytes = Vec::new();
        encode(&records, &mut bytes).expect("encode");
        assert_eq!(decode(&bytes).expect("decode"), records);
    }

    #[test]
    fn the_json_form_of_older_logs_is_still_read() {
        let records = every_record();
        let bytes = serde_json::to_vec(&records).expect("json");
        assert_eq!(decode(&bytes).expect("decode"), records);
    }

    #[test]
    fn entries_take_a_fraction_of_their_json() {
        let entries = (1..=100)
            .map(|n| ConsumerEntry::Delivered {
                consumer_seq: n,
                stream_seq: 1_000_000 + n,
                delivery_count: 1,
                timestamp: 1_764_000_000_000_000_000,
                ack: true,
            })
            .collect();
        let records = vec![Record::Entries {
            name: "CONSUMER".into(),
            entries,
        }];
        let mut bytes = Vec::new();
        encode(&records, &mut bytes).expect("encode");
        let json = serde_json::to_vec(&records).expect("json");
        assert!(
            bytes.len() * 3 < json.len(),
            "{} vs {}",
            bytes.len(),
            json.len()
        );
    }

    #[test]
    fn damaged_bytes_are_an_error_not_a_panic() {
        let mut bytes = Vec::new();
        encode(&every_record(), &mut bytes).expect("encode");
        for cut in 0..bytes.len() {
            let _ = decode(&bytes[..cut]);
        }
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(decode(&[
            VERSION,
            RECORD_ENTRIES,
            1,
            0,
            0,
            0,
            b'D',
            255,
            255,
            255,
            255
        ])
        .is_err());
        assert!(decode(&[9]).is_err());
        assert!(decode(&[]).is_err());
    }
}
