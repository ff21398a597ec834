//! A small multiplicative hasher for the trie's token maps and the match cache.
//!
//! Tokens and cached subjects are short; SipHash costs more than the lookup itself. Flooding is
//! bounded: the cache holds at most a fixed number of entries, and a trie level only holds tokens
//! that some subscriber inserted.

use std::hash::{BuildHasherDefault, Hasher};

const MULTIPLIER: u64 = 0x51_7c_c1_b7_27_22_0a_95;

#[derive(Default, Clone, Copy)]
pub(crate) struct TokenHasher {
    state: u64,
}

impl TokenHasher {
    #[inline]
    fn mix(&mut self, word: u64) {
        self.state = (self.state.rotate_left(5) ^ word).wrapping_mul(MULTIPLIER);
    }
}

impl Hasher for TokenHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
        let remainder = chunks.remainder();
        if !remainder.is_empty() {
            // Byte by byte: a variable-length copy would call memcpy for at most 7 bytes.
            let word = remainder
                .iter()
                .enumerate()
                .fold(0u64, |word, (index, &byte)| {
                    word | u64::from(byte) << (8 * index)
                });
            self.mix(word);
        }
    }

    #[inline]
    fn write_u8(&mut self, byte: u8) {
        self.mix(u64::from(byte));
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.mix(value as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.state
    }
}

pub(crate) type BuildTokenHasher = BuildHasherDefault<TokenHasher>;
pub(crate) type TokenMap<K, V> = std::collections::HashMap<K, V, BuildTokenHasher>;
