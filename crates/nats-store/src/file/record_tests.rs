//! Unit tests of the record encodings (`record.rs`): round trips, every form and block
//! version, truncations and flipped bits refused, erase in place, the delete log.

use super::*;

#[test]
fn record_round_trip_and_damage() {
    let mut out = Vec::new();
    let len = encode_record(
        &mut out,
        RecordKind::Message,
        0,
        1,
        7,
        99,
        5,
        b"a.b",
        b"H",
        b"payload",
    );
    assert_eq!(len, out.len());
    let record = decode_record(&out, 1).unwrap();
    assert_eq!((record.seq, record.timestamp, record.aux), (7, 99, 5));
    assert_eq!(record.subject, b"a.b");
    assert_eq!(record.payload, b"payload");
    assert_eq!(
        decode_record(&out[..len - 1], 1).unwrap_err(),
        RecordDamage::Truncated
    );
    let mut flipped = out.clone();
    flipped[40] ^= 1;
    assert_eq!(
        decode_record(&flipped, 1).unwrap_err(),
        RecordDamage::Invalid
    );
    erase_record_in_place(&mut out, 1).unwrap();
    assert_eq!(decode_record(&out, 1).unwrap().kind, RecordKind::Erased);
}

#[test]
fn crc32c_records_round_trip_and_are_checked() {
    // The standard check value of CRC-32C.
    assert_eq!(crc32c::checksum(b"123456789"), 0xE306_9283);
    assert_eq!(crc32c::table_checksum(b"123456789"), 0xE306_9283);
    let text: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    for length in [0, 1, 7, 8, 9, 63, 184, 1000] {
        assert_eq!(
            crc32c::checksum(&text[..length]),
            crc32c::table_checksum(&text[..length])
        );
    }
    let mut out = Vec::new();
    let len = encode_record(
        &mut out,
        RecordKind::Message,
        FLAG_CRC32C,
        1,
        9,
        1,
        0,
        b"x.y",
        b"",
        b"body",
    );
    let record = decode_record(&out, 1).unwrap();
    assert_eq!((record.seq, record.payload), (9, &b"body"[..]));
    // Damage, and a flag bit flipped to the other algorithm, are both refused.
    for position in [5, 20, len - 6] {
        let mut flipped = out.clone();
        flipped[position] ^= if position == 5 { FLAG_CRC32C } else { 4 };
        assert_eq!(
            decode_record(&flipped, 1).unwrap_err(),
            RecordDamage::Invalid
        );
    }
    erase_record_in_place(&mut out, 1).unwrap();
    assert_eq!(decode_record(&out, 1).unwrap().kind, RecordKind::Erased);
    // Both block header versions are read.
    let mut old_header = encode_block_header(5);
    old_header[..8].copy_from_slice(BLOCK_MAGIC_IEEE_ONLY);
    let crc = crc32fast::hash(&old_header[..24]);
    old_header[24..28].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(decode_block_header(&old_header), Some(5));
}

#[test]
fn short_records_round_trip_erase_and_refuse_damage() {
    // An NSBLK003 block: the short form, not the compact one.
    let allowed = record_flags_for(BLOCK_MAGIC_SHORT);
    assert_ne!(allowed & FLAG_SHORT, 0);
    assert_eq!(allowed & FLAG_SEQ32, 0);
    assert_eq!(record_flags_for(BLOCK_MAGIC_CRC32C) & FLAG_SHORT, 0);
    assert_eq!(record_flags_for(BLOCK_MAGIC_IEEE_ONLY), 0);
    // A TTL or headers keep the long form.
    assert_eq!(record_flags(allowed, 5, 0, 7, 1) & FLAG_SHORT, 0);
    assert_eq!(record_flags(allowed, 0, 3, 7, 1) & FLAG_SHORT, 0);
    let flags = record_flags(allowed, 0, 0, 7, 1);
    let mut out = Vec::new();
    let len = encode_record(
        &mut out,
        RecordKind::Message,
        flags,
        1,
        7,
        42,
        0,
        b"a.b",
        b"",
        b"payload",
    );
    assert_eq!(len, out.len());
    assert_eq!(len, record_len(flags, 3, 0, 7));
    assert_eq!(len, 28 + 3 + 7, "12 bytes less than the long form");
    let record = decode_record(&out, 1).unwrap();
    assert_eq!(
        (record.seq, record.timestamp, record.aux, record.headers_len),
        (7, 42, 0, 0)
    );
    assert_eq!(
        (record.subject, record.payload),
        (&b"a.b"[..], &b"payload"[..])
    );
    assert_eq!(
        decode_record(&out[..len - 1], 1).unwrap_err(),
        RecordDamage::Truncated
    );
    for position in [5, 12, 24, len - 2] {
        let mut flipped = out.clone();
        flipped[position] ^= FLAG_SHORT;
        assert_eq!(
            decode_record(&flipped, 1).unwrap_err(),
            RecordDamage::Invalid
        );
    }
    // Short and long records follow each other in one block.
    let long_len = encode_record(
        &mut out,
        RecordKind::Message,
        record_flags(allowed, 9, 0, 8, 1),
        1,
        8,
        43,
        9,
        b"a.c",
        b"",
        b"x",
    );
    assert_eq!(long_len, RECORD_OVERHEAD + 4);
    let second = decode_record(&out[len..], 1).unwrap();
    assert_eq!((second.seq, second.aux, second.len), (8, 9, long_len));
    let mut first = out[..len].to_vec();
    erase_record_in_place(&mut first, 1).unwrap();
    let erased = decode_record(&first, 1).unwrap();
    assert_eq!((erased.kind, erased.len), (RecordKind::Erased, len));
}

/// A message record at `seq` in a block starting at `base`, with the flags an `NSBLK004`
/// block gives it.
fn compact_candidate(out: &mut Vec<u8>, base: u64, seq: u64, aux: i64) -> (u8, usize) {
    let flags = record_flags(record_flags_for(BLOCK_MAGIC), aux, 0, seq, base);
    let len = encode_record(
        out,
        RecordKind::Message,
        flags,
        base,
        seq,
        42,
        aux,
        b"a.b",
        b"",
        b"payload",
    );
    (flags, len)
}

#[test]
fn compact_records_round_trip_erase_and_refuse_damage_or_another_base() {
    let allowed = record_flags_for(BLOCK_MAGIC);
    assert_eq!(allowed & (FLAG_SHORT | FLAG_SEQ32), FLAG_SHORT | FLAG_SEQ32);
    let mut out = Vec::new();
    let (flags, len) = compact_candidate(&mut out, 1000, 1005, 0);
    assert_eq!(flags & (FLAG_SHORT | FLAG_SEQ32), FLAG_SHORT | FLAG_SEQ32);
    assert_eq!(len, out.len());
    assert_eq!(len, record_len(flags, 3, 0, 7));
    assert_eq!(len, 23 + 3 + 7, "5 bytes less than the short form");
    assert_eq!(
        out[4] >> 4,
        RecordKind::Message as u8,
        "kind in the high nibble"
    );
    let record = decode_record(&out, 1000).unwrap();
    assert_eq!(
        (record.kind, record.seq, record.timestamp, record.aux),
        (RecordKind::Message, 1005, 42, 0)
    );
    assert_eq!(
        (record.subject, record.payload, record.len),
        (&b"a.b"[..], &b"payload"[..], len)
    );
    // Read as part of another block (moved, or a header pointing elsewhere): refused.
    for base in [999, 1001, 1005 + (1 << 32), u64::MAX - 2] {
        assert_eq!(
            decode_record(&out, base).unwrap_err(),
            RecordDamage::Invalid
        );
    }
    for cut in 0..len {
        assert_eq!(
            decode_record(&out[..cut], 1000).unwrap_err(),
            RecordDamage::Truncated,
            "cut at {cut}"
        );
    }
    // Every single flipped bit is refused (Truncated when the length grows).
    for position in 0..len {
        for bit in 0..8 {
            let mut flipped = out.clone();
            flipped[position] ^= 1 << bit;
            assert!(
                decode_record(&flipped, 1000).is_err(),
                "bit {bit} of byte {position}"
            );
        }
    }
    erase_record_in_place(&mut out, 1000).unwrap();
    let erased = decode_record(&out, 1000).unwrap();
    assert_eq!(
        (erased.kind, erased.seq, erased.len, erased.timestamp),
        (RecordKind::Erased, 1005, len, 0)
    );
    assert!(erased.payload.iter().all(|byte| *byte == 0));
    assert!(decode_record(&out, 1001).is_err());
    // Erasing with the wrong base leaves a record that does not check with the right one.
    let mut out = Vec::new();
    compact_candidate(&mut out, 1000, 1005, 0);
    erase_record_in_place(&mut out, 1001).unwrap();
    assert!(decode_record(&out, 1000).is_err());
}

#[test]
fn compact_form_needs_an_offset_that_fits_and_mixes_with_the_others() {
    let base = 10;
    let mut block = Vec::new();
    let mut expected = Vec::new();
    // Compact and short; compact with a TTL (35 bytes of overhead); past the u32 offset
    // (short, 28); below the base (short); the largest offset (compact); an old long record.
    for (seq, aux, overhead) in [
        (10, 0, 23),
        (11, 7, 35),
        (base + (1 << 32), 0, 28),
        (9, 0, 28),
        (base + u64::from(u32::MAX), 0, 23),
    ] {
        let (flags, len) = compact_candidate(&mut block, base, seq, aux);
        assert_eq!(len, overhead + 3 + 7, "seq {seq}");
        assert_eq!(flags & FLAG_SEQ32 != 0, overhead != 28, "seq {seq}");
        expected.push((seq, aux, len));
    }
    let len = encode_record(
        &mut block,
        RecordKind::Skip,
        0,
        base,
        12,
        0,
        3,
        b"",
        b"",
        b"",
    );
    assert_eq!(len, RECORD_OVERHEAD);
    expected.push((12, 3, len));
    let mut position = 0;
    for (seq, aux, len) in expected {
        let record = decode_record(&block[position..], base).unwrap();
        assert_eq!((record.seq, record.aux, record.len), (seq, aux, len));
        position += len;
    }
    assert_eq!(position, block.len());
    // A compact record whose base and offset run past the largest sequence is damaged.
    let mut out = Vec::new();
    compact_candidate(&mut out, u64::MAX - 1, u64::MAX, 0);
    assert_eq!(decode_record(&out, u64::MAX - 1).unwrap().seq, u64::MAX);
    assert_eq!(
        decode_record(&out, u64::MAX).unwrap_err(),
        RecordDamage::Invalid
    );
    // The compact flag in the long forms' flag byte is refused, not read as another layout.
    let mut out = Vec::new();
    encode_record(
        &mut out,
        RecordKind::Message,
        0,
        1,
        5,
        0,
        0,
        b"s",
        b"",
        b"p",
    );
    out[5] |= FLAG_SEQ32;
    assert_eq!(decode_record(&out, 1).unwrap_err(), RecordDamage::Invalid);
    // NSBLK004 headers are read, as are the older ones.
    assert_eq!(&encode_block_header(3)[..8], b"NSBLK004");
    let mut header = encode_block_header(3);
    header[..8].copy_from_slice(BLOCK_MAGIC_SHORT);
    let crc = crc32fast::hash(&header[..24]);
    header[24..28].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(decode_block_header(&header), Some(3));
}

#[test]
fn delete_log_round_trip() {
    let mut out = Vec::new();
    encode_delete(&mut out, DeleteEntry::Sequence(3));
    encode_delete(&mut out, DeleteEntry::Floor(9));
    out.push(1);
    let (entries, intact) = decode_deletes(&out);
    assert_eq!(
        entries,
        vec![DeleteEntry::Sequence(3), DeleteEntry::Floor(9)]
    );
    assert_eq!(intact, 26);
    assert_eq!(decode_block_header(&encode_block_header(42)), Some(42));
}
