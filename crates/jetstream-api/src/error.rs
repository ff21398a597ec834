use thiserror::Error as ThisError;

/// Failures of this crate's own codecs (as opposed to [`crate::ApiError`], which is a value sent
/// to clients).
#[derive(Debug, ThisError)]
pub enum Error {
    /// A `$JS.ACK.` reply subject that is not one of the two token layouts clients and servers use.
    #[error("invalid ack subject {subject:?}: {reason}")]
    InvalidAckSubject {
        subject: String,
        reason: &'static str,
    },
    /// An ack body with a known verb but an unparsable argument (e.g. `-NAK {bad json`).
    #[error("invalid ack body: {reason}")]
    InvalidAckBody { reason: String },
    /// A timestamp that cannot be represented in RFC 3339 (year outside 0..=9999).
    #[error("timestamp out of range: {0}")]
    TimestampOutOfRange(String),
    #[error("invalid base64: {0:?}")]
    InvalidBase64(String),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
}
