//! Subject texts packed end to end in a few large chunks, instead of one heap allocation each.
//!
//! Who uses it: the subject tree (`subject_tree.rs`) stores each subject's text here once and
//! keeps the returned `TextRef` in the subject's node. It knows nothing of subjects beyond their
//! bytes.
//!
//! Why: a separate allocation per subject costs malloc's 8-byte header plus rounding to 16 (a
//! 20-byte subject takes a 32-byte chunk) and a 16-byte fat pointer; here a subject costs its
//! length plus an 8-byte reference. A released text leaves a hole; when holes outweigh the live
//! text the tree rewrites the live texts into a fresh arena (`wants_compaction`).

/// Largest chunk: big enough that the few bytes left unused at a chunk's end do not matter,
/// small enough that a small stream does not reserve it. A subject is at most `u16::MAX` bytes,
/// so one always fits an empty chunk.
const MAX_CHUNK: usize = 1 << 20;
/// First chunk: a stream with a handful of subjects stays small.
const FIRST_CHUNK: usize = 256;

const LEN_BITS: u32 = 16;
const OFFSET_BITS: u32 = 24;

/// Where a text lives: chunk (high 24 bits), offset in the chunk (24 bits), length (16 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TextRef(u64);

impl TextRef {
    pub(crate) const EMPTY: TextRef = TextRef(0);

    fn new(chunk: usize, offset: usize, len: usize) -> TextRef {
        TextRef(
            ((chunk as u64) << (LEN_BITS + OFFSET_BITS))
                | ((offset as u64) << LEN_BITS)
                | len as u64,
        )
    }

    pub(crate) fn len(self) -> usize {
        (self.0 & ((1 << LEN_BITS) - 1)) as usize
    }

    fn offset(self) -> usize {
        ((self.0 >> LEN_BITS) & ((1 << OFFSET_BITS) - 1)) as usize
    }

    fn chunk(self) -> usize {
        (self.0 >> (LEN_BITS + OFFSET_BITS)) as usize
    }
}

#[derive(Debug, Default)]
pub(crate) struct TextArena {
    /// Each chunk is filled up to its capacity and never grows, so a `TextRef` stays valid.
    chunks: Vec<String>,
    live_bytes: usize,
    dead_bytes: usize,
}

impl TextArena {
    /// Store `text` (at most `u16::MAX` bytes: the store rejects longer subjects).
    pub(crate) fn push(&mut self, text: &str) -> TextRef {
        let fits = self
            .chunks
            .last()
            .is_some_and(|chunk| chunk.capacity() - chunk.len() >= text.len());
        if !fits {
            let previous = self.chunks.last().map_or(0, String::capacity);
            let capacity = (previous * 2).clamp(FIRST_CHUNK, MAX_CHUNK).max(text.len());
            self.chunks.push(String::with_capacity(capacity));
        }
        let chunk_index = self.chunks.len() - 1;
        let chunk = &mut self.chunks[chunk_index];
        let offset = chunk.len();
        chunk.push_str(text);
        self.live_bytes += text.len();
        TextRef::new(chunk_index, offset, text.len())
    }

    pub(crate) fn get(&self, text: TextRef) -> &str {
        let start = text.offset();
        self.chunks
            .get(text.chunk())
            .and_then(|chunk| chunk.get(start..start + text.len()))
            .unwrap_or("")
    }

    /// The same text as bytes, for comparisons (no character-boundary checks).
    pub(crate) fn bytes(&self, text: TextRef) -> &[u8] {
        let start = text.offset();
        self.chunks
            .get(text.chunk())
            .and_then(|chunk| chunk.as_bytes().get(start..start + text.len()))
            .unwrap_or(&[])
    }

    /// The text's bytes are no longer referenced.
    pub(crate) fn release(&mut self, text: TextRef) {
        self.live_bytes -= text.len();
        self.dead_bytes += text.len();
    }

    /// True when rewriting the live texts would at least halve the arena.
    pub(crate) fn wants_compaction(&self) -> bool {
        self.dead_bytes > self.live_bytes && self.dead_bytes >= FIRST_CHUNK
    }

    /// Heap bytes held (chunk capacities and the chunk list).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(String::capacity).sum::<usize>()
            + self.chunks.capacity() * std::mem::size_of::<String>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_round_trip_across_chunks() {
        let mut arena = TextArena::default();
        let texts: Vec<String> = (0..5000).map(|n| format!("subject.{n}.é")).collect();
        let refs: Vec<TextRef> = texts.iter().map(|text| arena.push(text)).collect();
        let long = "x".repeat(usize::from(u16::MAX));
        let long_ref = arena.push(&long);
        for (text, reference) in texts.iter().zip(&refs) {
            assert_eq!(arena.get(*reference), text);
            assert_eq!(arena.bytes(*reference), text.as_bytes());
        }
        assert_eq!(arena.get(long_ref), long);
        assert!(arena.chunks.len() > 2);
        assert_eq!(arena.get(TextRef::EMPTY), "");
        for reference in &refs {
            arena.release(*reference);
        }
        assert!(arena.wants_compaction());
    }
}
