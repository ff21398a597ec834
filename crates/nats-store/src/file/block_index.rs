//! The block index file (`<id>.idx`): what recovery needs of a sealed block's live messages, so an
//! open reads this instead of the block. Encoded by `file/mod.rs` when a block seals (and at clean
//! close), decoded by `recovery.rs`; it knows nothing of records or of the message index.
//!
//! Two versions are read; the newer is written.
//! - `NSIDX001`: 38 fixed bytes plus the subject text per message (58 bytes for a 20-byte subject:
//!   a third of the block's size for 128-byte messages, so writing it cost as much as a third of
//!   the data writes).
//! - `NSIDX002`: per message LEB128 varints of the differences from the message before (sequence,
//!   timestamp, location after the previous record), the record length, the size as a difference
//!   from the record length, the TTL, and a subject reference into a table the file builds as it
//!   goes (0: a new subject follows, `n`: the n-th subject seen). About 10 bytes per message when
//!   subjects repeat.
//!
//! Both: `magic[8] | covered_len u64 | first_seq u64 | last_seq u64 | count u64 | messages |
//! crc32 u32` (little endian; the CRC covers everything before it).
//!
//! Written: `NSIDX003`, an `NSIDX002` file Snappy-compressed: `magic[8] | snappy(NSIDX002 file) |
//! crc32 u32` (the CRC covers everything before it). A block of messages that each bring a new
//! subject (100k subjects cycled) kept ~17 bytes per message uncompressed, 2-4x that of the whole
//! stream's subject state in nats-server's `index.db`; recovery inflates it first
//! ([`inflate_block_index`]).

use hashbrown::HashMap;

use crate::consumer::Reader;
use crate::error::StoreError;

use super::record::BLOCK_HEADER_LEN;

const MAGIC_FIXED: &[u8; 8] = b"NSIDX001";
const MAGIC_COMPACT: &[u8; 8] = b"NSIDX002";
const MAGIC_SNAPPY: &[u8; 8] = b"NSIDX003";
/// Largest inflated index accepted (a block holds at most a few million messages).
const MAX_INFLATED: usize = 1 << 30;
/// Magic, covered length, first and last sequence, count.
const HEADER_LEN: usize = 40;

/// One message as an index file (or a block scan) describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexedMessage<'a> {
    pub seq: u64,
    pub timestamp: i64,
    pub ttl_nanos: i64,
    pub location: u32,
    pub record_len: u32,
    pub size: u32,
    pub subject: &'a str,
}

/// Header of a decoded block index.
pub(crate) struct BlockIndexHeader {
    pub covered_len: u64,
    pub first_seq: u64,
    pub last_seq: u64,
}

/// The varints of one message: at most 8 of at most 10 bytes.
struct Fields {
    bytes: [u8; 80],
    len: usize,
}

impl Default for Fields {
    fn default() -> Self {
        Fields {
            bytes: [0; 80],
            len: 0,
        }
    }
}

impl Fields {
    fn put(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.bytes[self.len] = value as u8 | 0x80;
            self.len += 1;
            value >>= 7;
        }
        self.bytes[self.len] = value as u8;
        self.len += 1;
    }

    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

fn same_text(known: &str, candidate: &str) -> bool {
    std::ptr::eq(known.as_ptr(), candidate.as_ptr()) && known.len() == candidate.len()
        || known == candidate
}

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    (value >> 1) as i64 ^ -((value & 1) as i64)
}

/// Encode a block index (current version): the block length it describes, its sequence range,
/// its live messages in sequence order.
pub(crate) fn encode_block_index<'a>(
    covered_len: u64,
    first_seq: u64,
    last_seq: u64,
    messages: impl Iterator<Item = IndexedMessage<'a>>,
) -> Vec<u8> {
    let (lower, upper) = messages.size_hint();
    // ~10 bytes per message when subjects repeat; the upper bound is the block's sequence range.
    let expected = upper.unwrap_or(lower).min(1 << 20);
    let mut out = Vec::with_capacity(HEADER_LEN + 4 + expected * 12);
    out.extend_from_slice(MAGIC_COMPACT);
    out.extend_from_slice(&covered_len.to_le_bytes());
    out.extend_from_slice(&first_seq.to_le_bytes());
    out.extend_from_slice(&last_seq.to_le_bytes());
    let count_at = out.len();
    out.extend_from_slice(&0u64.to_le_bytes());
    let mut count = 0u64;
    let mut previous_seq = first_seq.wrapping_sub(1);
    let mut previous_timestamp = 0i64;
    let mut expected_location = BLOCK_HEADER_LEN as i64;
    // Subject text -> its reference (position in the table + 1).
    let mut references: HashMap<&'a str, u64> = HashMap::new();
    let mut previous_subject: Option<(&'a str, u64)> = None;
    for message in messages {
        // The fixed part is assembled on the stack: one capacity check per message, not seven.
        let mut fields = Fields::default();
        fields.put(message.seq.wrapping_sub(previous_seq));
        fields.put(zigzag(message.timestamp.wrapping_sub(previous_timestamp)));
        fields.put(zigzag(message.ttl_nanos));
        let location = i64::from(message.location);
        let record_len = i64::from(message.record_len);
        fields.put(zigzag(location - expected_location));
        fields.put(u64::from(message.record_len));
        fields.put(zigzag(i64::from(message.size) - record_len));
        // A run of one subject is common: the same text (usually the same memory) skips the hash.
        let reference = match previous_subject {
            Some((text, reference)) if same_text(text, message.subject) => Some(reference),
            _ => references.get(message.subject).copied(),
        };
        match reference {
            Some(reference) => {
                fields.put(reference);
                out.extend_from_slice(fields.bytes());
                previous_subject = Some((message.subject, reference));
            }
            None => {
                let reference = references.len() as u64 + 1;
                references.insert(message.subject, reference);
                fields.put(0);
                fields.put(message.subject.len() as u64);
                out.extend_from_slice(fields.bytes());
                out.extend_from_slice(message.subject.as_bytes());
                previous_subject = Some((message.subject, reference));
            }
        }
        previous_seq = message.seq;
        previous_timestamp = message.timestamp;
        expected_location = location + record_len;
        count += 1;
    }
    out[count_at..count_at + 8].copy_from_slice(&count.to_le_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The index file as written: [`encode_block_index`]'s bytes, Snappy-compressed (`NSIDX003`).
pub(crate) fn compress_block_index(index: &[u8]) -> Vec<u8> {
    let mut out = MAGIC_SNAPPY.to_vec();
    match snap::raw::Encoder::new().compress_vec(index) {
        Ok(compressed) => out.extend_from_slice(&compressed),
        // Never for an in-memory buffer; the uncompressed form is read as well.
        Err(_) => return index.to_vec(),
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// An index file's bytes as [`decode_block_index`] reads them: an `NSIDX003` file inflated
/// (after its CRC is checked), any other returned as it is.
pub(crate) fn inflate_block_index(bytes: Vec<u8>) -> Result<Vec<u8>, StoreError> {
    if bytes.len() < 12 || &bytes[..8] != MAGIC_SNAPPY {
        return Ok(bytes);
    }
    let (body, crc_bytes) = bytes.split_at(bytes.len() - 4);
    let mut crc = [0u8; 4];
    crc.copy_from_slice(crc_bytes);
    if u32::from_le_bytes(crc) != crc32fast::hash(body) {
        return Err(StoreError::Corrupt("block index checksum mismatch".into()));
    }
    let compressed = &body[8..];
    let inflated_len = snap::raw::decompress_len(compressed)
        .map_err(|_| StoreError::Corrupt("block index not inflatable".into()))?;
    if inflated_len > MAX_INFLATED {
        return Err(StoreError::Corrupt("block index too large".into()));
    }
    snap::raw::Decoder::new()
        .decompress_vec(compressed)
        .map_err(|_| StoreError::Corrupt("block index not inflatable".into()))
}

/// Decode a block index of either version, calling `visit` per message. Nothing is visited when
/// the CRC fails.
pub(crate) fn decode_block_index<'a>(
    bytes: &'a [u8],
    visit: impl FnMut(IndexedMessage<'a>),
) -> Result<BlockIndexHeader, StoreError> {
    if bytes.len() < HEADER_LEN + 4 {
        return Err(StoreError::Corrupt("bad block index header".into()));
    }
    let compact = match &bytes[..8] {
        magic if magic == MAGIC_COMPACT => true,
        magic if magic == MAGIC_FIXED => false,
        _ => return Err(StoreError::Corrupt("bad block index header".into())),
    };
    let (body, crc_bytes) = bytes.split_at(bytes.len() - 4);
    let mut crc = [0u8; 4];
    crc.copy_from_slice(crc_bytes);
    if u32::from_le_bytes(crc) != crc32fast::hash(body) {
        return Err(StoreError::Corrupt("block index checksum mismatch".into()));
    }
    let mut reader = Reader {
        bytes: body,
        position: 8,
    };
    let header = BlockIndexHeader {
        covered_len: reader.u64()?,
        first_seq: reader.u64()?,
        last_seq: reader.u64()?,
    };
    let count = reader.u64()?;
    if compact {
        decode_compact(&mut reader, &header, count, visit)?;
    } else {
        decode_fixed(&mut reader, count, visit)?;
    }
    Ok(header)
}

fn decode_fixed<'a>(
    reader: &mut Reader<'a>,
    count: u64,
    mut visit: impl FnMut(IndexedMessage<'a>),
) -> Result<(), StoreError> {
    for _ in 0..count {
        // Fields are read in declaration order, which is the file's order.
        visit(IndexedMessage {
            seq: reader.u64()?,
            timestamp: reader.u64()? as i64,
            ttl_nanos: reader.u64()? as i64,
            location: reader.u32()?,
            record_len: reader.u32()?,
            size: reader.u32()?,
            subject: {
                let raw = reader.take(2)?;
                let subject_len = u16::from_le_bytes([raw[0], raw[1]]) as usize;
                subject_text(reader.take(subject_len)?)?
            },
        });
    }
    Ok(())
}

fn subject_text(bytes: &[u8]) -> Result<&str, StoreError> {
    std::str::from_utf8(bytes)
        .map_err(|_| StoreError::Corrupt("block index subject not utf-8".into()))
}

fn damaged() -> StoreError {
    StoreError::Corrupt("block index entry damaged".into())
}

impl Reader<'_> {
    fn varint(&mut self) -> Result<u64, StoreError> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let byte = *self.bytes.get(self.position).ok_or_else(damaged)?;
            self.position += 1;
            if shift == 63 && byte > 1 {
                return Err(damaged());
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
            shift += 7;
        }
    }

    fn varint_u32(&mut self) -> Result<u32, StoreError> {
        u32::try_from(self.varint()?).map_err(|_| damaged())
    }
}

fn decode_compact<'a>(
    reader: &mut Reader<'a>,
    header: &BlockIndexHeader,
    count: u64,
    mut visit: impl FnMut(IndexedMessage<'a>),
) -> Result<(), StoreError> {
    let mut subjects: Vec<&'a str> = Vec::new();
    let mut previous_seq = header.first_seq.wrapping_sub(1);
    let mut previous_timestamp = 0i64;
    let mut expected_location = BLOCK_HEADER_LEN as i64;
    for _ in 0..count {
        let seq = previous_seq.wrapping_add(reader.varint()?);
        let timestamp = previous_timestamp.wrapping_add(unzigzag(reader.varint()?));
        let ttl_nanos = unzigzag(reader.varint()?);
        let location = expected_location.wrapping_add(unzigzag(reader.varint()?));
        let location = u32::try_from(location).map_err(|_| damaged())?;
        let record_len = reader.varint_u32()?;
        let size = i64::from(record_len).wrapping_add(unzigzag(reader.varint()?));
        let size = u32::try_from(size).map_err(|_| damaged())?;
        let subject = match reader.varint()? {
            0 => {
                let length = usize::try_from(reader.varint()?).map_err(|_| damaged())?;
                let text = subject_text(reader.take(length)?)?;
                subjects.push(text);
                text
            }
            reference => *usize::try_from(reference - 1)
                .ok()
                .and_then(|position| subjects.get(position))
                .ok_or_else(damaged)?,
        };
        visit(IndexedMessage {
            seq,
            timestamp,
            ttl_nanos,
            location,
            record_len,
            size,
            subject,
        });
        previous_seq = seq;
        previous_timestamp = timestamp;
        expected_location = i64::from(location) + i64::from(record_len);
    }
    if reader.position != reader.bytes.len() {
        return Err(damaged());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<IndexedMessage<'static>> {
        let subjects = [
            "orders.new",
            "orders.paid",
            "orders.new",
            "kv.é",
            "orders.new",
        ];
        let mut location = BLOCK_HEADER_LEN as u32;
        subjects
            .iter()
            .enumerate()
            .map(|(position, subject)| {
                let record_len = 60 + position as u32 * 7;
                let message = IndexedMessage {
                    // Gaps: deleted sequences and removed records between live ones.
                    seq: 100 + position as u64 * 3,
                    timestamp: 1_700_000_000_000_000_000 + position as i64 * 1500 - 7,
                    ttl_nanos: [0, -1, 5_000_000_000, 0, 0][position],
                    location,
                    record_len,
                    size: record_len - 10 + position as u32,
                    subject,
                };
                location += record_len + if position == 1 { 500 } else { 0 };
                message
            })
            .collect()
    }

    fn decode(bytes: &[u8]) -> Result<(u64, u64, u64, Vec<IndexedMessage<'_>>), StoreError> {
        let mut messages = Vec::new();
        let header = decode_block_index(bytes, |message| messages.push(message))?;
        Ok((
            header.covered_len,
            header.first_seq,
            header.last_seq,
            messages,
        ))
    }

    #[test]
    fn compact_index_round_trips_and_is_small() {
        let messages = sample();
        let bytes = encode_block_index(9000, 99, 120, messages.clone().into_iter());
        assert_eq!(&bytes[..8], MAGIC_COMPACT);
        assert_eq!(decode(&bytes).unwrap(), (9000, 99, 120, messages));
        let empty = encode_block_index(32, 5, 4, std::iter::empty());
        assert_eq!(decode(&empty).unwrap(), (32, 5, 4, Vec::new()));
        // 44K messages of one 20-byte subject (a sealed 8 MB block of 128-byte messages).
        let many = (0..44_000u64).map(|number| IndexedMessage {
            seq: number + 1,
            timestamp: 1_700_000_000_000_000_000 + number as i64 * 480,
            ttl_nanos: 0,
            location: 32 + number as u32 * 188,
            record_len: 188,
            size: 178,
            subject: "bench.append.subject",
        });
        let bytes = encode_block_index(8 << 20, 1, 44_000, many);
        assert!(bytes.len() < 44_000 * 10, "{} bytes", bytes.len());
    }

    #[test]
    fn snappy_index_round_trips_and_refuses_damage() {
        let messages = sample();
        let plain = encode_block_index(9000, 99, 120, messages.clone().into_iter());
        let written = compress_block_index(&plain);
        assert_eq!(&written[..8], MAGIC_SNAPPY);
        let inflated = inflate_block_index(written.clone()).unwrap();
        assert_eq!(inflated, plain);
        assert_eq!(decode(&inflated).unwrap(), (9000, 99, 120, messages));
        // Older files pass through.
        assert_eq!(inflate_block_index(plain.clone()).unwrap(), plain);
        for position in 0..written.len() {
            let mut damaged = written.clone();
            damaged[position] ^= 0x10;
            let refused = inflate_block_index(damaged)
                .and_then(|inflated| decode(&inflated).map(|_| ()))
                .is_err();
            assert!(refused, "flip at {position} accepted");
        }
        // 44K messages, each with a new subject (100k subjects cycled): the case it is for.
        let subjects: Vec<String> = (0..44_000u64)
            .map(|n| format!("d.{}", n + 50_000))
            .collect();
        let many = subjects
            .iter()
            .enumerate()
            .map(|(n, subject)| IndexedMessage {
                seq: n as u64 + 1,
                timestamp: 1_700_000_000_000_000_000 + n as i64 * 480,
                ttl_nanos: 0,
                location: 32 + n as u32 * 163,
                record_len: 163,
                size: 151,
                subject,
            });
        let plain = encode_block_index(8 << 20, 1, 44_000, many);
        let written = compress_block_index(&plain);
        assert!(
            written.len() * 3 < plain.len() * 2,
            "{} -> {} bytes",
            plain.len(),
            written.len()
        );
    }

    #[test]
    fn every_damaged_byte_is_refused() {
        let bytes = encode_block_index(9000, 99, 120, sample().into_iter());
        for position in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[position] ^= 0x10;
            assert!(decode(&damaged).is_err(), "flip at {position} accepted");
        }
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
    }

    /// Index files written before the compact version must still be read.
    #[test]
    fn fixed_version_is_still_read() {
        let messages = sample();
        let mut bytes = Vec::new();
        bytes.extend_from_slice(MAGIC_FIXED);
        for value in [9000u64, 99, 120, messages.len() as u64] {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
        for message in &messages {
            bytes.extend_from_slice(&message.seq.to_le_bytes());
            bytes.extend_from_slice(&message.timestamp.to_le_bytes());
            bytes.extend_from_slice(&message.ttl_nanos.to_le_bytes());
            bytes.extend_from_slice(&message.location.to_le_bytes());
            bytes.extend_from_slice(&message.record_len.to_le_bytes());
            bytes.extend_from_slice(&message.size.to_le_bytes());
            bytes.extend_from_slice(&(message.subject.len() as u16).to_le_bytes());
            bytes.extend_from_slice(message.subject.as_bytes());
        }
        let crc = crc32fast::hash(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(decode(&bytes).unwrap(), (9000, 99, 120, messages));
    }
}
