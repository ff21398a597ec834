//! The one error type of the subject crate.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SubjectError {
    /// Empty token, whitespace, or a `>` that is not the last token.
    #[error("invalid subject {0:?}")]
    InvalidSubject(String),
    /// A queue name that is empty or contains whitespace.
    #[error("invalid queue name {0:?}")]
    InvalidQueueName(String),
}
