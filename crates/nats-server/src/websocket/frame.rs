//! The RFC 6455 frame format as nats-server speaks it: opcodes, frame headers (the server's
//! frames are never masked), close payloads (status and a body cut to fit a control frame),
//! close statuses for each way a connection ends, and unmasking.

use crate::client::CloseReason;

pub(crate) const OPCODE_CONTINUATION: u8 = 0;
pub(crate) const OPCODE_TEXT: u8 = 1;
pub(crate) const OPCODE_BINARY: u8 = 2;
pub(crate) const OPCODE_CLOSE: u8 = 8;
pub(crate) const OPCODE_PING: u8 = 9;
pub(crate) const OPCODE_PONG: u8 = 10;

pub(crate) const FINAL_BIT: u8 = 0x80;
/// Set on the first frame of a compressed message (RFC 7692).
pub(crate) const RSV1_BIT: u8 = 0x40;
pub(crate) const RSV2_AND_3_BITS: u8 = 0x30;
pub(crate) const MASK_BIT: u8 = 0x80;

/// A control frame's payload is at most this long.
pub(crate) const MAX_CONTROL_PAYLOAD: usize = 125;
/// The longest frame header the server writes (no mask key).
pub(crate) const MAX_HEADER: usize = 10;

pub(crate) const STATUS_NORMAL: u16 = 1000;
pub(crate) const STATUS_GOING_AWAY: u16 = 1001;
pub(crate) const STATUS_PROTOCOL_ERROR: u16 = 1002;
pub(crate) const STATUS_NO_STATUS: u16 = 1005;
pub(crate) const STATUS_INVALID_PAYLOAD: u16 = 1007;
pub(crate) const STATUS_POLICY_VIOLATION: u16 = 1008;
pub(crate) const STATUS_MESSAGE_TOO_BIG: u16 = 1009;
pub(crate) const STATUS_TLS_HANDSHAKE: u16 = 1015;

/// Write a frame header for a payload of `length` bytes into `out`; returns its size.
/// `first_byte` carries FIN, RSV1 and the opcode.
pub(crate) fn encode_header(out: &mut [u8; MAX_HEADER], first_byte: u8, length: usize) -> usize {
    out[0] = first_byte;
    if length <= 125 {
        out[1] = length as u8;
        2
    } else if length < 65_536 {
        out[1] = 126;
        out[2..4].copy_from_slice(&(length as u16).to_be_bytes());
        4
    } else {
        out[1] = 127;
        out[2..10].copy_from_slice(&(length as u64).to_be_bytes());
        10
    }
}

/// A whole control frame (PONG, CLOSE) with its payload.
pub(crate) fn control_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut header = [0u8; MAX_HEADER];
    let size = encode_header(&mut header, FINAL_BIT | opcode, payload.len());
    let mut frame = Vec::with_capacity(size + payload.len());
    frame.extend_from_slice(&header[..size]);
    frame.extend_from_slice(payload);
    frame
}

/// A close payload: the status, then the body, cut with `...` so the whole fits a control
/// frame (nats-server's `wsCreateCloseMessage`).
pub(crate) fn close_payload(status: u16, body: &str) -> Vec<u8> {
    let mut body = body.as_bytes();
    let mut truncated = false;
    if body.len() > MAX_CONTROL_PAYLOAD - 2 {
        body = &body[..MAX_CONTROL_PAYLOAD - 5];
        truncated = true;
    }
    let mut payload = Vec::with_capacity(2 + body.len() + 3);
    payload.extend_from_slice(&status.to_be_bytes());
    payload.extend_from_slice(body);
    if truncated {
        payload.extend_from_slice(b"...");
    }
    payload
}

/// The close status nats-server sends when it closes a connection for `reason`.
pub(crate) fn close_status(reason: CloseReason) -> u16 {
    match reason {
        CloseReason::ClientClosed => STATUS_NORMAL,
        CloseReason::AuthenticationTimeout
        | CloseReason::AuthenticationViolation
        | CloseReason::SlowConsumerPendingBytes
        | CloseReason::SlowConsumerWriteDeadline
        | CloseReason::MaxConnectionsExceeded
        | CloseReason::AuthenticationExpired
        | CloseReason::MaxControlLineExceeded
        | CloseReason::Revocation => STATUS_POLICY_VIOLATION,
        CloseReason::MaxPayloadExceeded => STATUS_MESSAGE_TOO_BIG,
        CloseReason::TlsHandshakeError => STATUS_TLS_HANDSHAKE,
        CloseReason::ProtocolViolation => STATUS_PROTOCOL_ERROR,
        CloseReason::WriteError
        | CloseReason::ReadError
        | CloseReason::StaleConnection
        | CloseReason::ServerShutdown
        | CloseReason::RouteRemoved => STATUS_GOING_AWAY,
    }
}

/// Whether a peer may send `status` in a close frame (RFC 6455 7.4).
pub(crate) fn valid_close_status(status: u16) -> bool {
    if matches!(status, 1004 | 1005 | 1006 | 1015) {
        return false;
    }
    (1000..5000).contains(&status) && !(1016..=2999).contains(&status)
}

/// XOR `bytes` with the 4-byte `key`, starting at key position `position`; returns the
/// position after the last byte.
pub(crate) fn unmask(bytes: &mut [u8], key: [u8; 4], position: usize) -> usize {
    let mut rotated = [0u8; 4];
    for (index, slot) in rotated.iter_mut().enumerate() {
        *slot = key[(position + index) & 3];
    }
    let wide = u64::from_ne_bytes([
        rotated[0], rotated[1], rotated[2], rotated[3], rotated[0], rotated[1], rotated[2],
        rotated[3],
    ]);
    let mut chunks = bytes.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        chunk.copy_from_slice(&(u64::from_ne_bytes(word) ^ wide).to_ne_bytes());
    }
    let tail = chunks.into_remainder();
    for (index, byte) in tail.iter_mut().enumerate() {
        *byte ^= rotated[index & 3];
    }
    (position + bytes.len()) & 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmask_matches_the_bytewise_definition_at_every_offset() {
        let key = [0x12, 0x34, 0x56, 0x78];
        for start in 0..4 {
            let original: Vec<u8> = (0..37u8).collect();
            let mut fast = original.clone();
            let end = unmask(&mut fast, key, start);
            let slow: Vec<u8> = original
                .iter()
                .enumerate()
                .map(|(index, byte)| byte ^ key[(start + index) & 3])
                .collect();
            assert_eq!(fast, slow);
            assert_eq!(end, (start + 37) & 3);
        }
    }

    #[test]
    fn headers_use_the_shortest_length_form() {
        let mut header = [0u8; MAX_HEADER];
        assert_eq!(encode_header(&mut header, 0x82, 125), 2);
        assert_eq!(encode_header(&mut header, 0x82, 126), 4);
        assert_eq!(&header[..4], &[0x82, 126, 0, 126]);
        assert_eq!(encode_header(&mut header, 0x82, 70_000), 10);
    }

    #[test]
    fn long_close_bodies_are_cut_to_fit_a_control_frame() {
        let payload = close_payload(1002, &"x".repeat(200));
        assert_eq!(payload.len(), MAX_CONTROL_PAYLOAD);
        assert!(payload.ends_with(b"..."));
    }
}
