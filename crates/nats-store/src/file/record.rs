//! On-disk encodings of the FileStore: block header, message/skip records, delete-log entries.
//! Every unit carries its own CRC32 so recovery can tell intact data from a torn or damaged tail.
//!
//! Record layout (little endian):
//! `len u32 | kind u8 | flags u8 | subject_len u16 | seq u64 | timestamp i64 | aux i64 |
//!  headers_len u32 | subject | headers | payload | crc32 u32` where `len` counts every byte
//! including the CRC, the CRC covers everything before it, and `aux` is the TTL (message) or the
//! count (skip). With flag [`FLAG_SHORT`] `aux` and `headers_len` are left out (both zero: a
//! message without TTL and headers, the common case): 28 bytes of overhead instead of 40 (and
//! nats-server's 30), written into `NSBLK003` blocks and later. With flag [`FLAG_COMPRESSED`] the
//! bytes after the subject are the Snappy-block compression of `headers | payload` (`headers_len`
//! still the uncompressed header length).
//!
//! The compact form, flag [`FLAG_SEQ32`], written only into `NSBLK004` blocks when the sequence is
//! less than 2^32 past the block's first sequence (the header's): kind and flags share one byte
//! (kind in the high nibble, never 0, which is how a decoder tells the forms apart) and the
//! sequence is a u32 offset from the block's first sequence:
//! `len u32 | kind << 4 | flags u8 | subject_len u16 | seq - first_seq u32 | timestamp i64 |
//!  [aux i64 | headers_len u32] | subject | headers | payload | crc32 u32`. Its CRC covers the
//! full sequence (u64 little endian) followed by the record's bytes, so a record read with the
//! wrong block's first sequence (moved, or a block header pointing elsewhere) does not check.
//! With the short form it has 23 bytes of overhead (nats-server: 30), 35 with `aux` and
//! `headers_len`.
//!
//! The CRC is CRC-32 (IEEE, `crc32fast`) or, with flag [`FLAG_CRC32C`], CRC-32C computed with the
//! CPU's crc32 instruction: twice as fast on a 184-byte record (31.6 against 61.5 ns measured on
//! the 2-vCPU test machine), a visible share of a 128-byte append. Records with the flag are
//! written only into blocks with the `NSBLK002` header, which versions before the flag skip as
//! damaged rather than truncating records they cannot check; `NSBLK001` blocks (older stores, or
//! the active block they had) keep getting IEEE records. Both kinds are read everywhere.

use crate::error::StoreError;

/// Header magic of blocks that may hold CRC-32C, short and compact records (the only one written).
pub(crate) const BLOCK_MAGIC: &[u8; 8] = b"NSBLK004";
/// Header magic of blocks that may hold CRC-32C and short records, no compact ones.
pub(crate) const BLOCK_MAGIC_SHORT: &[u8; 8] = b"NSBLK003";
/// Header magic of blocks that may hold CRC-32C records but no short ones.
pub(crate) const BLOCK_MAGIC_CRC32C: &[u8; 8] = b"NSBLK002";
/// Header magic of blocks written before CRC-32C records existed.
pub(crate) const BLOCK_MAGIC_IEEE_ONLY: &[u8; 8] = b"NSBLK001";
pub(crate) const BLOCK_HEADER_LEN: usize = 32;
pub(crate) const RECORD_HEADER_LEN: usize = 36;
/// The long form's overhead (tests).
#[cfg(test)]
const RECORD_OVERHEAD: usize = RECORD_HEADER_LEN + 4;
/// The smallest record: compact and short.
const MIN_OVERHEAD: usize = 23;
pub(crate) const DELETE_ENTRY_LEN: usize = 13;
/// Record flag: headers and payload are stored compressed (stream `compression: s2`).
pub(crate) const FLAG_COMPRESSED: u8 = 1;
/// Record flag: the CRC is CRC-32C, not CRC-32 (IEEE).
pub(crate) const FLAG_CRC32C: u8 = 2;
/// Record flag: the short header (no `aux`, no `headers_len`, both zero). Passed to the encoder
/// as "allowed" (the block is `NSBLK003` or later); kept only on records that qualify.
pub(crate) const FLAG_SHORT: u8 = 4;
/// Record flag: the compact form (kind and flags in one byte, the sequence a u32 offset from the
/// block's first sequence). Passed to the encoder as "allowed" (the block is `NSBLK004`); kept
/// only on records whose offset fits.
pub(crate) const FLAG_SEQ32: u8 = 8;
/// Bodies shorter than this are stored as they are: compression would not pay for itself.
pub(crate) const MIN_COMPRESSED_BODY: usize = 64;

/// What a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    Message = 1,
    Skip = 2,
    Erased = 3,
}

/// A record decoded from a block, borrowing its bytes.
#[derive(Debug)]
pub(crate) struct DecodedRecord<'a> {
    pub kind: RecordKind,
    pub seq: u64,
    pub timestamp: i64,
    pub aux: i64,
    pub subject: &'a [u8],
    /// Empty when `compressed`.
    pub headers: &'a [u8],
    /// The compressed `headers | payload` when `compressed`.
    pub payload: &'a [u8],
    pub len: usize,
    pub compressed: bool,
    /// Uncompressed length of the header block.
    pub headers_len: usize,
}

impl DecodedRecord<'_> {
    /// Uncompressed payload length (reads only the compressed stream's length prefix).
    pub fn payload_len(&self) -> Result<usize, RecordDamage> {
        if !self.compressed {
            return Ok(self.payload.len());
        }
        snap::raw::decompress_len(self.payload)
            .ok()
            .and_then(|total| total.checked_sub(self.headers_len))
            .ok_or(RecordDamage::Invalid)
    }

    /// `headers | payload` decompressed, with the split point; None for a plain record.
    pub fn decompress(&self) -> Result<Option<Vec<u8>>, RecordDamage> {
        if !self.compressed {
            return Ok(None);
        }
        let body = snap::raw::Decoder::new()
            .decompress_vec(self.payload)
            .map_err(|_| RecordDamage::Invalid)?;
        if body.len() < self.headers_len {
            return Err(RecordDamage::Invalid);
        }
        Ok(Some(body))
    }
}

/// A FileStore's reusable compression state: the encoder's tables and its buffers.
#[derive(Default)]
pub(crate) struct Compressor {
    encoder: Option<snap::raw::Encoder>,
    joined: Vec<u8>,
    /// The last compressed body.
    pub body: Vec<u8>,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Compressor")
    }
}

impl Compressor {
    /// Compress `headers | payload` into `self.body` when that saves bytes; false (and
    /// `self.body` meaningless) when the record is better stored as it is.
    pub fn compress(&mut self, headers: &[u8], payload: &[u8]) -> bool {
        let body_len = headers.len() + payload.len();
        if body_len < MIN_COMPRESSED_BODY {
            return false;
        }
        let input: &[u8] = if headers.is_empty() {
            payload
        } else {
            self.joined.clear();
            self.joined.extend_from_slice(headers);
            self.joined.extend_from_slice(payload);
            &self.joined
        };
        self.body.resize(snap::raw::max_compress_len(body_len), 0);
        let encoder = self.encoder.get_or_insert_with(snap::raw::Encoder::new);
        match encoder.compress(input, &mut self.body) {
            Ok(written) if written < body_len => {
                self.body.truncate(written);
                true
            }
            _ => false,
        }
    }
}

/// CRC32 of `bytes`.
pub(crate) fn checksum(bytes: &[u8]) -> u32 {
    checksum_with(&[], bytes)
}

/// CRC32 of `prefix | bytes`. `crc32fast::hash` detects the CPU's features on every call (a
/// visible share of a 128-byte append); cloning a hasher made once skips that.
fn checksum_with(prefix: &[u8], bytes: &[u8]) -> u32 {
    static PROTOTYPE: std::sync::OnceLock<crc32fast::Hasher> = std::sync::OnceLock::new();
    let mut hasher = PROTOTYPE.get_or_init(crc32fast::Hasher::new).clone();
    hasher.update(prefix);
    hasher.update(bytes);
    hasher.finalize()
}

/// The checksum a new record in a block with `block_magic` gets, as its flag bit (0: IEEE).
pub(crate) fn record_checksum_flag(block_magic_is_current: bool) -> u8 {
    if block_magic_is_current && crc32c::hardware() {
        FLAG_CRC32C
    } else {
        0
    }
}

/// The flags new records of a block with this magic may carry: CRC-32C (see
/// [`record_checksum_flag`]) from `NSBLK002`, the short form from `NSBLK003`, the compact form
/// from `NSBLK004`.
pub(crate) fn record_flags_for(magic: &[u8]) -> u8 {
    let crc = record_checksum_flag(
        magic == BLOCK_MAGIC || magic == BLOCK_MAGIC_SHORT || magic == BLOCK_MAGIC_CRC32C,
    );
    if magic == BLOCK_MAGIC {
        crc | FLAG_SHORT | FLAG_SEQ32
    } else if magic == BLOCK_MAGIC_SHORT {
        crc | FLAG_SHORT
    } else {
        crc
    }
}

/// The flags a record at `seq` in a block whose first sequence is `base` is written with:
/// [`FLAG_SHORT`] dropped unless it has no TTL and no headers, [`FLAG_SEQ32`] unless its offset
/// from `base` fits in a u32.
pub(crate) fn record_flags(allowed: u8, aux: i64, headers_len: usize, seq: u64, base: u64) -> u8 {
    let mut flags = allowed;
    if aux != 0 || headers_len != 0 {
        flags &= !FLAG_SHORT;
    }
    if seq
        .checked_sub(base)
        .is_none_or(|offset| offset > u64::from(u32::MAX))
    {
        flags &= !FLAG_SEQ32;
    }
    flags
}

/// The checksum of a record at `seq` whose flags are `flags`: a compact record's covers its full
/// sequence first.
fn record_checksum(flags: u8, seq: u64, bytes: &[u8]) -> u32 {
    let prefix = seq.to_le_bytes();
    let prefix: &[u8] = if flags & FLAG_SEQ32 != 0 {
        &prefix
    } else {
        &[]
    };
    if flags & FLAG_CRC32C != 0 {
        crc32c::checksum_with(prefix, bytes)
    } else {
        checksum_with(prefix, bytes)
    }
}

/// Where a record's fields sit; it depends only on [`FLAG_SHORT`] and [`FLAG_SEQ32`].
struct Layout {
    compact: bool,
    subject_len_at: usize,
    seq_at: usize,
    timestamp_at: usize,
    aux_at: usize,
    headers_len_at: usize,
    /// Bytes before the subject.
    header_len: usize,
}

fn layout(flags: u8) -> Layout {
    let compact = flags & FLAG_SEQ32 != 0;
    let subject_len_at = if compact { 5 } else { 6 };
    let seq_at = subject_len_at + 2;
    let timestamp_at = seq_at + if compact { 4 } else { 8 };
    let aux_at = timestamp_at + 8;
    let headers_len_at = aux_at + 8;
    let header_len = if flags & FLAG_SHORT != 0 {
        aux_at
    } else {
        headers_len_at + 4
    };
    Layout {
        compact,
        subject_len_at,
        seq_at,
        timestamp_at,
        aux_at,
        headers_len_at,
        header_len,
    }
}

/// A record's kind byte and flags: folded into byte 4 in the compact form (kind in the high
/// nibble), bytes 4 and 5 otherwise. None when the two disagree on the form.
fn kind_and_flags(bytes: &[u8]) -> Option<(u8, u8)> {
    let first = *bytes.get(4)?;
    if first >> 4 != 0 {
        let flags = first & 0x0F;
        (flags & FLAG_SEQ32 != 0).then_some((first >> 4, flags))
    } else {
        let flags = *bytes.get(5)?;
        (flags & FLAG_SEQ32 == 0).then_some((first, flags))
    }
}

/// CRC-32C (Castagnoli): the SSE 4.2 crc32 instruction when the CPU has it, a table otherwise
/// (a store written on one machine stays readable on any other).
mod crc32c {
    /// The reflected Castagnoli polynomial.
    const POLYNOMIAL: u32 = 0x82F6_3B78;

    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut index = 0;
        while index < 256 {
            let mut crc = index as u32;
            let mut bit = 0;
            while bit < 8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ POLYNOMIAL
                } else {
                    crc >> 1
                };
                bit += 1;
            }
            table[index] = crc;
            index += 1;
        }
        table
    };

    /// True when [`checksum`] uses the CPU instruction (new records use CRC-32C only then).
    pub fn hardware() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("sse4.2")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    #[cfg(test)]
    pub fn checksum(bytes: &[u8]) -> u32 {
        checksum_with(&[], bytes)
    }

    /// CRC-32C of `prefix | bytes`.
    pub fn checksum_with(prefix: &[u8], bytes: &[u8]) -> u32 {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("sse4.2") {
                // SAFETY: the CPU supports SSE 4.2, checked just above; the function reads only
                // `prefix` and `bytes`. A record-append benchmark needs it (see the module comment).
                return unsafe { !hardware_update(hardware_update(u32::MAX, prefix), bytes) };
            }
        }
        !table_update(table_update(u32::MAX, prefix), bytes)
    }

    /// The running (not yet inverted) CRC `crc` continued over `bytes`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "sse4.2")]
    fn hardware_update(crc: u32, bytes: &[u8]) -> u32 {
        use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
        let mut crc = u64::from(crc);
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut buffer = [0u8; 8];
            buffer.copy_from_slice(word);
            crc = _mm_crc32_u64(crc, u64::from_le_bytes(buffer));
        }
        let mut crc = crc as u32;
        for byte in words.remainder() {
            crc = _mm_crc32_u8(crc, *byte);
        }
        crc
    }

    #[cfg(test)]
    pub fn table_checksum(bytes: &[u8]) -> u32 {
        !table_update(u32::MAX, bytes)
    }

    /// The running CRC `crc` continued over `bytes`, without the CPU instruction.
    fn table_update(mut crc: u32, bytes: &[u8]) -> u32 {
        for byte in bytes {
            crc = TABLE[((crc ^ u32::from(*byte)) & 0xff) as usize] ^ (crc >> 8);
        }
        crc
    }
}

/// Why a record could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordDamage {
    /// Fewer bytes than the record needs: a torn tail.
    Truncated,
    /// Length field, kind or CRC wrong.
    Invalid,
}

pub(crate) fn encode_block_header(first_seq: u64) -> [u8; BLOCK_HEADER_LEN] {
    let mut header = [0u8; BLOCK_HEADER_LEN];
    header[..8].copy_from_slice(BLOCK_MAGIC);
    header[8..12].copy_from_slice(&1u32.to_le_bytes());
    header[16..24].copy_from_slice(&first_seq.to_le_bytes());
    let crc = crc32fast::hash(&header[..24]);
    header[24..28].copy_from_slice(&crc.to_le_bytes());
    header
}

/// The block's first sequence, or None when the header is damaged.
pub(crate) fn decode_block_header(bytes: &[u8]) -> Option<u64> {
    let header = bytes.get(..BLOCK_HEADER_LEN)?;
    if &header[..8] != BLOCK_MAGIC
        && &header[..8] != BLOCK_MAGIC_SHORT
        && &header[..8] != BLOCK_MAGIC_CRC32C
        && &header[..8] != BLOCK_MAGIC_IEEE_ONLY
    {
        return None;
    }
    let crc = u32::from_le_bytes(header[24..28].try_into().ok()?);
    if crc != crc32fast::hash(&header[..24]) {
        return None;
    }
    // Sequence 0 never exists; a header claiming it is damaged.
    Some(u64::from_le_bytes(header[16..24].try_into().ok()?)).filter(|seq| *seq > 0)
}

/// Total on-disk length of a message record written with `flags` (see [`record_flags`]).
pub(crate) fn record_len(
    flags: u8,
    subject_len: usize,
    headers_len: usize,
    payload_len: usize,
) -> usize {
    layout(flags).header_len + 4 + subject_len + headers_len + payload_len
}

/// Append one record to `out`, in a block whose first sequence is `base`; `flags` are final (see
/// [`record_flags`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode_record(
    out: &mut Vec<u8>,
    kind: RecordKind,
    flags: u8,
    base: u64,
    seq: u64,
    timestamp: i64,
    aux: i64,
    subject: &[u8],
    headers: &[u8],
    payload: &[u8],
) -> usize {
    encode_record_body(
        out,
        kind,
        flags,
        base,
        [seq as i64, timestamp, aux],
        subject,
        headers.len(),
        headers,
        payload,
    )
}

/// Append a record whose body is `first | second` (headers and payload, or a compressed body
/// and nothing); `numbers` are seq, timestamp and aux; `base` is the block's first sequence.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn encode_record_body(
    out: &mut Vec<u8>,
    kind: RecordKind,
    flags: u8,
    base: u64,
    numbers: [i64; 3],
    subject: &[u8],
    headers_len: usize,
    first: &[u8],
    second: &[u8],
) -> usize {
    let [seq, timestamp, aux] = numbers;
    let seq = seq as u64;
    debug_assert!(flags & FLAG_SHORT == 0 || (aux == 0 && headers_len == 0));
    debug_assert!(
        flags & FLAG_SEQ32 == 0
            || seq
                .checked_sub(base)
                .is_some_and(|offset| offset <= u64::from(u32::MAX))
    );
    let start = out.len();
    let fields = layout(flags);
    let len = fields.header_len + 4 + subject.len() + first.len() + second.len();
    out.reserve(len);
    // The fixed header is assembled on the stack and copied once: one capacity check instead of
    // one per field on the per-message path.
    let mut header = [0u8; RECORD_HEADER_LEN];
    header[0..4].copy_from_slice(&(len as u32).to_le_bytes());
    if fields.compact {
        header[4] = (kind as u8) << 4 | flags;
        let offset = seq.wrapping_sub(base) as u32;
        header[fields.seq_at..fields.seq_at + 4].copy_from_slice(&offset.to_le_bytes());
    } else {
        header[4] = kind as u8;
        header[5] = flags;
        header[fields.seq_at..fields.seq_at + 8].copy_from_slice(&seq.to_le_bytes());
    }
    header[fields.subject_len_at..fields.subject_len_at + 2]
        .copy_from_slice(&(subject.len() as u16).to_le_bytes());
    header[fields.timestamp_at..fields.timestamp_at + 8].copy_from_slice(&timestamp.to_le_bytes());
    if flags & FLAG_SHORT == 0 {
        header[fields.aux_at..fields.aux_at + 8].copy_from_slice(&aux.to_le_bytes());
        header[fields.headers_len_at..fields.headers_len_at + 4]
            .copy_from_slice(&(headers_len as u32).to_le_bytes());
    }
    out.extend_from_slice(&header[..fields.header_len]);
    out.extend_from_slice(subject);
    out.extend_from_slice(first);
    out.extend_from_slice(second);
    let crc = record_checksum(flags, seq, &out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
    len
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut buffer = [0u8; 4];
    buffer.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(buffer)
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut buffer = [0u8; 8];
    buffer.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(buffer)
}

/// The sequence of a record laid out as `fields`, in a block whose first sequence is `base`;
/// None when a compact record's offset runs past the largest sequence.
fn record_seq(record: &[u8], fields: &Layout, base: u64) -> Option<u64> {
    if fields.compact {
        base.checked_add(u64::from(read_u32(record, fields.seq_at)))
    } else {
        Some(read_u64(record, fields.seq_at))
    }
}

/// Decode the record at the start of `bytes`, in a block whose first sequence is `base` (the
/// compact form's sequence is an offset from it).
pub(crate) fn decode_record(bytes: &[u8], base: u64) -> Result<DecodedRecord<'_>, RecordDamage> {
    if bytes.len() < MIN_OVERHEAD {
        return Err(RecordDamage::Truncated);
    }
    let len = read_u32(bytes, 0) as usize;
    let (kind, flags) = kind_and_flags(bytes).ok_or(RecordDamage::Invalid)?;
    let fields = layout(flags);
    if len < fields.header_len + 4 {
        return Err(RecordDamage::Invalid);
    }
    if len > bytes.len() {
        return Err(RecordDamage::Truncated);
    }
    let record = &bytes[..len];
    let seq = record_seq(record, &fields, base).ok_or(RecordDamage::Invalid)?;
    let stored_crc = read_u32(record, len - 4);
    if stored_crc != record_checksum(flags, seq, &record[..len - 4]) {
        return Err(RecordDamage::Invalid);
    }
    let kind = match kind {
        1 => RecordKind::Message,
        2 => RecordKind::Skip,
        3 => RecordKind::Erased,
        _ => return Err(RecordDamage::Invalid),
    };
    let subject_len = u16::from_le_bytes([
        record[fields.subject_len_at],
        record[fields.subject_len_at + 1],
    ]) as usize;
    let timestamp = read_u64(record, fields.timestamp_at) as i64;
    let (aux, headers_len) = if flags & FLAG_SHORT != 0 {
        (0, 0)
    } else {
        (
            read_u64(record, fields.aux_at) as i64,
            read_u32(record, fields.headers_len_at) as usize,
        )
    };
    let body = &record[fields.header_len..len - 4];
    let compressed = flags & FLAG_COMPRESSED != 0;
    if subject_len > body.len() || (!compressed && subject_len + headers_len > body.len()) {
        return Err(RecordDamage::Invalid);
    }
    let (headers, payload) = if compressed {
        (&body[..0], &body[subject_len..])
    } else {
        (
            &body[subject_len..subject_len + headers_len],
            &body[subject_len + headers_len..],
        )
    };
    Ok(DecodedRecord {
        kind,
        seq,
        timestamp,
        aux,
        subject: &body[..subject_len],
        headers,
        payload,
        len,
        compressed,
        headers_len,
    })
}

/// Rewrite a record in place as an erased one of the same length (content zeroed, CRC valid),
/// in a block whose first sequence is `base`.
pub(crate) fn erase_record_in_place(record: &mut [u8], base: u64) -> Result<(), StoreError> {
    let len = record.len();
    let damaged = || StoreError::Corrupt("record too short or damaged to erase".into());
    // The short and compact forms stay (the layout follows them); the CRC becomes IEEE.
    let (_, flags) = kind_and_flags(record).ok_or_else(damaged)?;
    let kept = flags & (FLAG_SHORT | FLAG_SEQ32);
    let fields = layout(kept);
    if len < fields.header_len + 4 {
        return Err(damaged());
    }
    let seq = record_seq(record, &fields, base).ok_or_else(damaged)?;
    if fields.compact {
        record[4] = (RecordKind::Erased as u8) << 4 | kept;
    } else {
        record[4] = RecordKind::Erased as u8;
        record[5] = kept;
    }
    record[fields.timestamp_at..len - 4].fill(0);
    let crc = record_checksum(kept, seq, &record[..len - 4]);
    record[len - 4..].copy_from_slice(&crc.to_le_bytes());
    Ok(())
}

/// A delete-log entry: one sequence, or "every sequence below".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeleteEntry {
    Sequence(u64),
    Floor(u64),
}

pub(crate) fn encode_delete(out: &mut Vec<u8>, entry: DeleteEntry) {
    let start = out.len();
    let (kind, seq) = match entry {
        DeleteEntry::Sequence(seq) => (1u8, seq),
        DeleteEntry::Floor(seq) => (2u8, seq),
    };
    out.push(kind);
    out.extend_from_slice(&seq.to_le_bytes());
    let crc = checksum(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Decode a delete log; returns the entries and the length of its intact prefix.
pub(crate) fn decode_deletes(bytes: &[u8]) -> (Vec<DeleteEntry>, usize) {
    let mut entries = Vec::with_capacity(bytes.len() / DELETE_ENTRY_LEN);
    let mut position = 0;
    while position + DELETE_ENTRY_LEN <= bytes.len() {
        let entry = &bytes[position..position + DELETE_ENTRY_LEN];
        if read_u32(entry, 9) != checksum(&entry[..9]) {
            break;
        }
        let seq = read_u64(entry, 1);
        match entry[0] {
            1 => entries.push(DeleteEntry::Sequence(seq)),
            2 => entries.push(DeleteEntry::Floor(seq)),
            _ => break,
        }
        position += DELETE_ENTRY_LEN;
    }
    (entries, position)
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
