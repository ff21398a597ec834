//! Standard base64 (RFC 4648, padded), as Go's `encoding/json` writes `[]byte` fields
//! (`STREAM.MSG.GET`'s `hdrs` and `data`). Small enough to keep the dependency list short.

use crate::Error;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b0 = chunk[0];
        let b1 = chunk.get(1).copied().unwrap_or(0);
        let b2 = chunk.get(2).copied().unwrap_or(0);
        let group = (u32::from(b0) << 16) | (u32::from(b1) << 8) | u32::from(b2);
        out.push(char::from(ALPHABET[(group >> 18) as usize & 63]));
        out.push(char::from(ALPHABET[(group >> 12) as usize & 63]));
        if chunk.len() > 1 {
            out.push(char::from(ALPHABET[(group >> 6) as usize & 63]));
        } else {
            out.push('=');
        }
        if chunk.len() > 2 {
            out.push(char::from(ALPHABET[group as usize & 63]));
        } else {
            out.push('=');
        }
    }
    out
}

fn value_of(symbol: u8) -> Option<u32> {
    let value = match symbol {
        b'A'..=b'Z' => symbol - b'A',
        b'a'..=b'z' => symbol - b'a' + 26,
        b'0'..=b'9' => symbol - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    };
    Some(u32::from(value))
}

pub fn decode(text: &str) -> Result<Vec<u8>, Error> {
    let invalid = || Error::InvalidBase64(text.chars().take(32).collect());
    let bytes = text.as_bytes();
    if bytes.len() & 3 != 0 {
        return Err(invalid());
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let groups = bytes.len() / 4;
    for (index, chunk) in bytes.chunks(4).enumerate() {
        let last = index + 1 == groups;
        let padding = chunk.iter().rev().take_while(|&&b| b == b'=').count();
        if padding > 2 || (padding > 0 && !last) {
            return Err(invalid());
        }
        let mut group = 0u32;
        for &symbol in &chunk[..4 - padding] {
            group = (group << 6) | value_of(symbol).ok_or_else(invalid)?;
        }
        group <<= 6 * padding as u32;
        out.push((group >> 16) as u8);
        if padding < 2 {
            out.push((group >> 8) as u8);
        }
        if padding < 1 {
            out.push(group as u8);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        assert_eq!(encode(b"hello"), "aGVsbG8=");
        assert_eq!(encode(b""), "");
        assert_eq!(encode(b"ab"), "YWI=");
        assert_eq!(encode(b"abc"), "YWJj");
        for length in 0..40u8 {
            let bytes: Vec<u8> = (0..length).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(decode(&encode(&bytes)).unwrap(), bytes);
        }
        assert!(decode("a===").is_err());
        assert!(decode("abc").is_err());
        assert!(decode("ab=c").is_err());
    }
}
