//! The one error type of the wire codec, classed as nats-server shows it on the wire.

use thiserror::Error;

/// A protocol error found while parsing bytes from a peer.
///
/// Every parser error ends the connection in nats-server; some of them first send a `-ERR` line
/// ([`ProtocolError::err_text`]), others close silently (nats-server only logs them).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// An operation name nats-server does not know, a bad separator, or a payload not followed by `\r\n`.
    #[error("unknown protocol operation")]
    UnknownOperation,
    /// The arguments of a control line are longer than `max_control_line`.
    #[error("maximum control line exceeded: {length} bytes, limit {limit}")]
    MaxControlLineExceeded { length: usize, limit: usize },
    /// A PUB/HPUB announced a payload (headers included) larger than `max_payload`.
    #[error("maximum payload violation: {size} bytes, limit {limit}")]
    MaxPayloadViolation { size: usize, limit: usize },
    /// Wrong number of arguments or an unparsable size; nats-server closes without `-ERR`.
    #[error("{operation} parse error: {reason}")]
    InvalidArguments {
        operation: &'static str,
        reason: &'static str,
    },
    /// The CONNECT JSON did not parse; nats-server closes without `-ERR`.
    #[error("invalid CONNECT JSON: {0}")]
    InvalidConnect(String),
    /// HPUB on a connection that did not negotiate headers; nats-server closes without `-ERR`.
    #[error("message headers not supported")]
    HeadersNotSupported,
    /// A header block that does not start with `NATS/1.0` or has a bad status code.
    #[error("malformed message headers")]
    MalformedHeaders,
    /// A server-side frame (INFO/MSG/HMSG) whose arguments do not parse (client-side parser only).
    #[error("malformed server operation: {0}")]
    MalformedServerOperation(&'static str),
}

impl ProtocolError {
    /// The text nats-server puts inside `-ERR '...'` for this error, or `None` when nats-server
    /// closes the connection without sending any `-ERR`.
    pub fn err_text(&self) -> Option<&'static str> {
        match self {
            ProtocolError::UnknownOperation => Some(crate::err_text::UNKNOWN_PROTOCOL_OPERATION),
            ProtocolError::MaxControlLineExceeded { .. } => {
                Some(crate::err_text::MAXIMUM_CONTROL_LINE_EXCEEDED)
            }
            ProtocolError::MaxPayloadViolation { .. } => {
                Some(crate::err_text::MAXIMUM_PAYLOAD_VIOLATION)
            }
            ProtocolError::InvalidArguments { .. }
            | ProtocolError::InvalidConnect(_)
            | ProtocolError::HeadersNotSupported
            | ProtocolError::MalformedHeaders
            | ProtocolError::MalformedServerOperation(_) => None,
        }
    }

    /// Whether nats-server closes the connection after this error. Every parser error does: after
    /// one the byte stream can no longer be framed.
    pub fn closes_connection(&self) -> bool {
        true
    }
}
