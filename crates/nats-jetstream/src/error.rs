//! The crate's one error type: failures of JetStream as a whole (start-up, recovery). Errors a
//! client sees on `$JS.API` are API error values, not this type.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum JetStreamError {
    #[error("could not create JetStream store directory {path:?}: {source}")]
    StoreDirectory {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("could not read JetStream store directory {path:?}: {source}")]
    StoreScan {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("stream {stream:?} could not be restored: {reason}")]
    StreamRecovery { stream: String, reason: String },
    #[error("could not start the JetStream API threads: {0}")]
    ApiThreads(#[source] std::io::Error),
}
