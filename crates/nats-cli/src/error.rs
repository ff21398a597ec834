//! The crate's one error type. Every command returns `Result<_, CliError>`; `main` prints
//! it as natscli does (`nats: error: <text>`) and exits non-zero.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CliError {
    /// An error answer from the JetStream API, shown like jsm.go shows it.
    #[error("{description} ({err_code})")]
    Api {
        code: u16,
        err_code: u16,
        description: String,
    },

    #[error("{0}")]
    Message(String),

    /// A failure with natscli's context prefix, e.g. "could not create Stream: ...".
    #[error("{context}: {source}")]
    Context {
        context: String,
        #[source]
        source: Box<CliError>,
    },

    #[error("timeout waiting for a response")]
    Timeout,

    #[error("no responders available for request")]
    NoResponders,

    #[error("{0}")]
    Connect(String),

    #[error("{0}")]
    Io(#[from] std::io::Error),

    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),

    #[error("{0}")]
    Prompt(String),
}

impl CliError {
    pub fn message(text: impl Into<String>) -> CliError {
        CliError::Message(text.into())
    }

    /// The JetStream error code (`err_code`) when this is an API error.
    pub fn api_err_code(&self) -> Option<u16> {
        match self {
            CliError::Api { err_code, .. } => Some(*err_code),
            CliError::Context { source, .. } => source.api_err_code(),
            _ => None,
        }
    }
}

/// Adds natscli's "could not ..." prefix to an error.
pub trait WithContext<T> {
    fn context(self, context: &str) -> Result<T, CliError>;
}

impl<T, E: Into<CliError>> WithContext<T> for Result<T, E> {
    fn context(self, context: &str) -> Result<T, CliError> {
        self.map_err(|error| CliError::Context {
            context: context.to_string(),
            source: Box::new(error.into()),
        })
    }
}

impl From<dialoguer::Error> for CliError {
    fn from(error: dialoguer::Error) -> CliError {
        CliError::Prompt(error.to_string())
    }
}

impl From<async_nats::RequestError> for CliError {
    fn from(error: async_nats::RequestError) -> CliError {
        use async_nats::RequestErrorKind;
        match error.kind() {
            RequestErrorKind::TimedOut => CliError::Timeout,
            RequestErrorKind::NoResponders => CliError::NoResponders,
            _ => CliError::Message(error.to_string()),
        }
    }
}

impl From<async_nats::PublishError> for CliError {
    fn from(error: async_nats::PublishError) -> CliError {
        CliError::Message(error.to_string())
    }
}

impl From<async_nats::SubscribeError> for CliError {
    fn from(error: async_nats::SubscribeError) -> CliError {
        CliError::Message(error.to_string())
    }
}

impl From<async_nats::client::FlushError> for CliError {
    fn from(error: async_nats::client::FlushError) -> CliError {
        CliError::Message(error.to_string())
    }
}
