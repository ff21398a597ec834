//! The consumer state log (`state.log`): a 16-byte header naming the snapshot generation the log
//! continues, then one frame per flush. A frame is `[length u32][crc32 u32][operations]`, the CRC
//! covering the length and the operations, so a flush is applied whole or not at all.
//!
//! Operations are absolute assignments (never increments), so replaying them is idempotent:
//! - floors: delivered and ack floor pairs;
//! - entry: one stream sequence's pending delivery and redelivery count, present or absent
//!   (an ack is an entry with neither: a few bytes).
//!
//! Integers are LEB128 varints: an ack of a sequence near 10k costs 3 bytes plus the frame.

use crate::consumer::{ConsumerState, PendingDelivery, SequencePair};

const MAGIC: &[u8; 4] = b"NCL1";
/// Header length: magic, generation, CRC of both.
pub(super) const HEADER_LEN: u64 = 16;
const FRAME_HEADER_LEN: usize = 8;

const OP_FLOORS: u8 = 1;
/// Entry operation; the low bits say which parts follow.
const OP_ENTRY: u8 = 0x10;
const ENTRY_PENDING: u8 = 1;
const ENTRY_REDELIVERED: u8 = 2;

pub(super) fn encode_header(generation: u64) -> [u8; HEADER_LEN as usize] {
    let mut header = [0u8; HEADER_LEN as usize];
    header[..4].copy_from_slice(MAGIC);
    header[4..12].copy_from_slice(&generation.to_le_bytes());
    let crc = crc32fast::hash(&header[..12]);
    header[12..].copy_from_slice(&crc.to_le_bytes());
    header
}

/// The generation a log header names; `None` when it is not a valid header.
pub(super) fn decode_header(bytes: &[u8]) -> Option<u64> {
    let header = bytes.get(..HEADER_LEN as usize)?;
    if &header[..4] != MAGIC {
        return None;
    }
    let crc = u32::from_le_bytes(header[12..16].try_into().ok()?);
    if crc != crc32fast::hash(&header[..12]) {
        return None;
    }
    Some(u64::from_le_bytes(header[4..12].try_into().ok()?))
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

struct VarintReader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl VarintReader<'_> {
    fn done(&self) -> bool {
        self.position >= self.bytes.len()
    }

    fn byte(&mut self) -> Result<u8, String> {
        let byte = *self
            .bytes
            .get(self.position)
            .ok_or_else(|| "operation cut short".to_string())?;
        self.position += 1;
        Ok(byte)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint longer than 64 bits".to_string())
    }

    fn pair(&mut self) -> Result<SequencePair, String> {
        Ok(SequencePair {
            consumer_seq: self.varint()?,
            stream_seq: self.varint()?,
        })
    }
}

/// Append to `out` one frame: the floors of `state` and the entry of each of `sequences`
/// (sorted, deduplicated) as `state` has it now.
pub(super) fn encode_frame(state: &ConsumerState, sequences: &[u64], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0u8; FRAME_HEADER_LEN]);
    out.push(OP_FLOORS);
    for value in [
        state.delivered.consumer_seq,
        state.delivered.stream_seq,
        state.ack_floor.consumer_seq,
        state.ack_floor.stream_seq,
    ] {
        put_varint(out, value);
    }
    for &seq in sequences {
        let pending = state.pending.get(&seq);
        let redelivered = state.redelivered.get(&seq);
        let mut op = OP_ENTRY;
        if pending.is_some() {
            op |= ENTRY_PENDING;
        }
        if redelivered.is_some() {
            op |= ENTRY_REDELIVERED;
        }
        out.push(op);
        put_varint(out, seq);
        if let Some(pending) = pending {
            put_varint(out, pending.consumer_seq);
            put_varint(out, pending.timestamp as u64);
        }
        if let Some(count) = redelivered {
            put_varint(out, *count);
        }
    }
    let length = (out.len() - start - FRAME_HEADER_LEN) as u32;
    out[start..start + 4].copy_from_slice(&length.to_le_bytes());
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&out[start..start + 4]);
    hasher.update(&out[start + FRAME_HEADER_LEN..]);
    out[start + 4..start + FRAME_HEADER_LEN].copy_from_slice(&hasher.finalize().to_le_bytes());
}

enum Operation {
    Floors {
        delivered: SequencePair,
        ack_floor: SequencePair,
    },
    Entry {
        seq: u64,
        pending: Option<PendingDelivery>,
        redelivered: Option<u64>,
    },
}

fn decode_operations(payload: &[u8], operations: &mut Vec<Operation>) -> Result<(), String> {
    let mut reader = VarintReader {
        bytes: payload,
        position: 0,
    };
    while !reader.done() {
        let op = reader.byte()?;
        if op == OP_FLOORS {
            operations.push(Operation::Floors {
                delivered: reader.pair()?,
                ack_floor: reader.pair()?,
            });
        } else if op & !(ENTRY_PENDING | ENTRY_REDELIVERED) == OP_ENTRY {
            let seq = reader.varint()?;
            let pending = if op & ENTRY_PENDING != 0 {
                Some(PendingDelivery {
                    consumer_seq: reader.varint()?,
                    timestamp: reader.varint()? as i64,
                })
            } else {
                None
            };
            let redelivered = if op & ENTRY_REDELIVERED != 0 {
                Some(reader.varint()?)
            } else {
                None
            };
            operations.push(Operation::Entry {
                seq,
                pending,
                redelivered,
            });
        } else {
            return Err(format!("unknown operation {op:#x}"));
        }
    }
    Ok(())
}

fn apply(state: &mut ConsumerState, operations: &[Operation]) {
    for operation in operations {
        match operation {
            Operation::Floors {
                delivered,
                ack_floor,
            } => {
                state.delivered = *delivered;
                state.ack_floor = *ack_floor;
            }
            Operation::Entry {
                seq,
                pending,
                redelivered,
            } => {
                match pending {
                    Some(pending) => state.pending.insert(*seq, *pending),
                    None => state.pending.remove(seq),
                };
                match redelivered {
                    Some(count) => state.redelivered.insert(*seq, *count),
                    None => state.redelivered.remove(seq),
                };
            }
        }
    }
}

/// What replaying a log's frames found.
pub(super) struct Replay {
    /// Length of the header plus every intact frame: where the log is cut and appending resumes.
    pub valid_len: u64,
    /// Frames applied.
    pub frames: u64,
    /// The first frame that could not be applied, described; `None` when the log was whole.
    pub problem: Option<String>,
    /// Whether the bad frame reached the end of the file (an interrupted write) rather than
    /// sitting before other bytes (damage).
    pub torn_tail: bool,
}

/// Apply every intact frame of `log` (header included) to `state`, stopping at the first frame
/// that is cut short, fails its CRC or does not decode: nothing after damage is trusted.
pub(super) fn replay(log: &[u8], state: &mut ConsumerState) -> Replay {
    let mut position = HEADER_LEN as usize;
    let mut frames = 0;
    let mut operations = Vec::new();
    while position < log.len() {
        let remaining = &log[position..];
        let failure = match frame_payload(remaining) {
            Ok(payload) => {
                operations.clear();
                match decode_operations(payload, &mut operations) {
                    Ok(()) => {
                        apply(state, &operations);
                        frames += 1;
                        position += FRAME_HEADER_LEN + payload.len();
                        continue;
                    }
                    Err(error) => (error, FRAME_HEADER_LEN + payload.len()),
                }
            }
            Err(failure) => failure,
        };
        let (reason, frame_len) = failure;
        let torn_tail = frame_len >= remaining.len();
        return Replay {
            valid_len: position as u64,
            frames,
            problem: Some(format!(
                "consumer state log: {reason} in the frame at offset {position}; {} bytes from there dropped",
                remaining.len()
            )),
            torn_tail,
        };
    }
    Replay {
        valid_len: position as u64,
        frames,
        problem: None,
        torn_tail: false,
    }
}

/// The payload of the frame at the start of `bytes`, or why it is not usable and how long the
/// frame claims to be (to tell a torn tail from damage in the middle).
fn frame_payload(bytes: &[u8]) -> Result<&[u8], (String, usize)> {
    if bytes.len() < FRAME_HEADER_LEN {
        return Err(("frame header cut short".to_string(), FRAME_HEADER_LEN));
    }
    let length = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
    let crc = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    let frame_len = FRAME_HEADER_LEN.saturating_add(length);
    let Some(payload) = bytes.get(FRAME_HEADER_LEN..frame_len) else {
        return Err(("frame cut short".to_string(), frame_len));
    };
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&bytes[..4]);
    hasher.update(payload);
    if hasher.finalize() != crc {
        return Err(("checksum mismatch".to_string(), frame_len));
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_replay_to_the_state_they_were_taken_from() {
        let mut state = ConsumerState::default();
        let mut log = encode_header(7).to_vec();
        for seq in 1..=5 {
            state.apply_delivered(seq, seq * 3, 1, -5 + seq as i64);
        }
        encode_frame(&state, &[3, 6, 9, 12, 15], &mut log);
        state.apply_ack(1, 3);
        state.apply_delivered(6, 6, 2, 99);
        encode_frame(&state, &[3, 6], &mut log);
        assert_eq!(decode_header(&log), Some(7));
        let mut replayed = ConsumerState::default();
        let replay = replay(&log, &mut replayed);
        assert!(replay.problem.is_none());
        assert_eq!(replay.frames, 2);
        assert_eq!(replay.valid_len, log.len() as u64);
        assert_eq!(replayed, state);
    }

    #[test]
    fn a_torn_last_frame_is_cut_and_earlier_frames_kept() {
        let mut state = ConsumerState::default();
        let mut log = encode_header(1).to_vec();
        state.apply_delivered(1, 1, 1, 1);
        encode_frame(&state, &[1], &mut log);
        let intact = log.len();
        let kept = state.clone();
        state.apply_ack(1, 1);
        encode_frame(&state, &[1], &mut log);
        for cut in intact..log.len() {
            let mut replayed = ConsumerState::default();
            let replay = replay(&log[..cut], &mut replayed);
            assert_eq!(replay.valid_len, intact as u64);
            assert_eq!(replayed, kept);
            assert_eq!(replay.problem.is_some(), cut > intact);
            assert!(cut == intact || replay.torn_tail);
        }
    }
}
