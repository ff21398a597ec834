//! The consumer state snapshot (`state.bin`): `NCS2`, the generation (which log continues it),
//! the state in [`ConsumerState::encode`]'s layout, and a CRC of all that. A file written before
//! the log existed (the bare version-1 encoding, no CRC) still reads, as generation 0.

use crate::consumer::ConsumerState;

const MAGIC: &[u8; 4] = b"NCS2";
const LEGACY_VERSION: u8 = 1;

pub(super) fn encode(state: &ConsumerState, generation: u64) -> Vec<u8> {
    let body = state.encode();
    let mut out = Vec::with_capacity(16 + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&body);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The state and generation in a snapshot file, or what is wrong with it.
pub(super) fn decode(bytes: &[u8]) -> Result<(ConsumerState, u64), String> {
    if bytes.first() == Some(&LEGACY_VERSION) {
        return ConsumerState::decode(bytes)
            .map(|state| (state, 0))
            .map_err(|error| format!("consumer state snapshot (version 1): {error}"));
    }
    if bytes.len() < 16 || &bytes[..4] != MAGIC {
        return Err(format!(
            "consumer state snapshot: unknown format ({} bytes)",
            bytes.len()
        ));
    }
    let (covered, crc) = bytes.split_at(bytes.len() - 4);
    let crc = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    if crc != crc32fast::hash(covered) {
        return Err("consumer state snapshot: checksum mismatch".to_string());
    }
    let mut generation = [0u8; 8];
    generation.copy_from_slice(&covered[4..12]);
    let state = ConsumerState::decode(&covered[12..])
        .map_err(|error| format!("consumer state snapshot: {error}"))?;
    Ok((state, u64::from_le_bytes(generation)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_round_trip_and_detect_damage() {
        let mut state = ConsumerState::default();
        state.apply_delivered(1, 4, 1, 10);
        state.apply_delivered(2, 5, 1, 11);
        state.apply_delivered(3, 4, 2, 12);
        let encoded = encode(&state, 9);
        assert_eq!(decode(&encoded), Ok((state.clone(), 9)));
        assert_eq!(
            decode(&state.encode()),
            Ok((state, 0)),
            "version 1 still reads"
        );
        for index in 0..encoded.len() {
            let mut damaged = encoded.clone();
            damaged[index] ^= 0x20;
            assert!(decode(&damaged).is_err(), "flip at {index} undetected");
        }
        assert!(decode(&encoded[..encoded.len() - 1]).is_err());
    }
}
