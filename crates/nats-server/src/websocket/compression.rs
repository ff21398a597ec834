//! permessage-deflate (RFC 7692) as nats-server negotiates it: no context takeover either
//! way, so every message is a raw DEFLATE stream of its own, ended by a sync flush whose
//! trailing `00 00 FF FF` is dropped on the wire (and put back before inflating).

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use std::io;

/// The tail a sync flush ends with; the sender strips it, the receiver appends it.
const SYNC_TAIL: [u8; 4] = [0x00, 0x00, 0xFF, 0xFF];

/// Inflates whole messages from a client.
pub(crate) struct Inflater {
    state: Decompress,
}

impl Inflater {
    pub(crate) fn new() -> Self {
        Inflater {
            state: Decompress::new(false),
        }
    }

    /// Inflate one message into `output`; `Ok(false)` when it would pass `limit` bytes.
    pub(crate) fn inflate(
        &mut self,
        message: &[u8],
        output: &mut Vec<u8>,
        limit: usize,
    ) -> io::Result<bool> {
        self.state.reset(false);
        for input in [message, &SYNC_TAIL[..]] {
            let mut input = input;
            loop {
                if output.len() > limit {
                    return Ok(false);
                }
                if output.capacity() - output.len() < 4096 {
                    output.reserve((input.len() * 2).clamp(4096, 256 * 1024));
                }
                let before_in = self.state.total_in();
                let before_out = output.len();
                let status = self
                    .state
                    .decompress_vec(input, output, FlushDecompress::Sync)
                    .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))?;
                let consumed = (self.state.total_in() - before_in) as usize;
                input = &input[consumed..];
                let produced = output.len() - before_out;
                if matches!(status, Status::StreamEnd) {
                    break;
                }
                if input.is_empty() && output.len() < output.capacity() {
                    break;
                }
                if consumed == 0 && produced == 0 && output.len() < output.capacity() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "corrupt compressed frame",
                    ));
                }
            }
        }
        Ok(output.len() <= limit)
    }
}

/// Deflates outbound batches.
pub(crate) struct Deflater {
    state: Compress,
}

impl Deflater {
    pub(crate) fn new() -> Self {
        // nats-server compresses with flate.BestSpeed.
        Deflater {
            state: Compress::new(Compression::fast(), false),
        }
    }

    /// Append the compressed form of `input` (one message) to `output`, without the sync
    /// tail.
    pub(crate) fn deflate<'a>(
        &mut self,
        input: impl Iterator<Item = &'a [u8]>,
        output: &mut Vec<u8>,
    ) -> io::Result<()> {
        self.state.reset();
        let start = output.len();
        for chunk in input {
            let mut chunk = chunk;
            while !chunk.is_empty() {
                output.reserve(chunk.len() / 2 + 128);
                let before = self.state.total_in();
                self.state
                    .compress_vec(chunk, output, FlushCompress::None)
                    .map_err(io::Error::other)?;
                let consumed = (self.state.total_in() - before) as usize;
                chunk = &chunk[consumed..];
            }
        }
        loop {
            output.reserve(256);
            self.state
                .compress_vec(&[], output, FlushCompress::Sync)
                .map_err(io::Error::other)?;
            if output.len() < output.capacity() {
                break;
            }
        }
        if output.len() >= start + SYNC_TAIL.len() && output.ends_with(&SYNC_TAIL) {
            output.truncate(output.len() - SYNC_TAIL.len());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deflated_message_inflates_back() {
        let text = b"PUB foo 11\r\nhello world\r\n".repeat(200);
        let mut compressed = Vec::new();
        Deflater::new()
            .deflate([&text[..100], &text[100..]].into_iter(), &mut compressed)
            .unwrap();
        assert!(compressed.len() < text.len() / 4);
        let mut inflated = Vec::new();
        assert!(Inflater::new()
            .inflate(&compressed, &mut inflated, 1 << 20)
            .unwrap());
        assert_eq!(inflated, text);
        let mut small = Vec::new();
        assert!(!Inflater::new()
            .inflate(&compressed, &mut small, 100)
            .unwrap());
    }
}
