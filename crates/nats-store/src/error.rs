//! The crate's single error type. Limit errors are distinct variants so the stream layer can map
//! each to the matching nats-server API error.

use std::path::PathBuf;

/// Everything a store operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Discard-new stream is at `max_msgs`.
    #[error("maximum messages exceeded")]
    MaxMessages,
    /// Discard-new stream would exceed `max_bytes`.
    #[error("maximum bytes exceeded")]
    MaxBytes,
    /// Discard-new-per-subject stream is at `max_msgs_per_subject` for this subject.
    #[error("maximum messages per subject exceeded")]
    MaxMessagesPerSubject,
    /// Headers plus payload are larger than `max_msg_size`.
    #[error("message size exceeds maximum allowed")]
    MaxMessageSize,
    /// The sequence is outside the stream or was deleted.
    #[error("no message found")]
    NotFound,
    /// `store_raw` / `skip_msgs` got a sequence that does not follow the last one.
    #[error("sequence mismatch: expected {expected}, got {got}")]
    SequenceMismatch {
        /// The sequence the store expected (last + 1).
        expected: u64,
        /// The sequence the caller passed.
        got: u64,
    },
    /// The subject is empty or longer than the record format allows.
    #[error("invalid subject")]
    InvalidSubject,
    /// A consumer name that cannot be used as a directory name.
    #[error("invalid consumer name {0:?}")]
    InvalidName(String),
    /// The store was closed or deleted.
    #[error("store closed")]
    Closed,
    /// Another store (in this or another process) has the stream directory open.
    #[error("stream directory {0} is locked by another open store")]
    Locked(PathBuf),
    /// Persistent data could not be decoded (a damaged file that recovery could not skip).
    #[error("corrupt store data: {0}")]
    Corrupt(String),
    /// The store directory cannot be used (nats-server's start-up wording).
    #[error("{0}")]
    Directory(String),
    /// An operating-system I/O failure, with the file it concerned.
    #[error("i/o error on {path}: {source}")]
    Io {
        /// File or directory the operation concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.into();
        move |source| StoreError::Io { path, source }
    }
}
