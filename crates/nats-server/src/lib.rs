//! rnats' `nats-server`: a wire-compatible NATS server (core protocol, routing, queue groups,
//! headers, auth and permissions, config file, monitoring) with JetStream wired in through
//! `nats_jetstream::Transport`.
//!
//! `main.rs` is a thin shell over [`cli`], [`config`], [`logging`], [`signal_command`] and
//! [`server::run`].
//! Protocol framing lives in `nats-proto`, subject matching in `nats-subject`; this crate
//! owns sockets, tasks and policy.

#![recursion_limit = "256"]

pub(crate) mod accounts;
pub mod cli;
pub(crate) mod client;
pub(crate) mod cluster;
pub mod config;
#[doc(hidden)]
pub mod fuzzing;
pub mod idle_spin;
pub(crate) mod jetstream_host;
pub(crate) mod lame_duck;
pub(crate) mod listener;
pub mod logging;
pub mod monitor;
pub(crate) mod reload;
pub(crate) mod route;
pub(crate) mod router;
pub(crate) mod security;
pub(crate) mod server;
pub(crate) mod shutdown;
pub mod signal_command;
pub(crate) mod system;
pub(crate) mod transport;
pub(crate) mod websocket;
pub(crate) mod withdrawn;

pub use server::{run, VERSION};

/// Why the server could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{0}")]
    Config(#[from] config::ConfigError),
    /// nats-server's fatal line for a listener that cannot bind.
    #[error("Error listening on port: {address}, \"{reason}\"")]
    Listen { address: String, reason: String },
    /// nats-server's fatal line for a cluster listener that cannot bind.
    #[error("Error listening on router port: {port} - {reason}")]
    RouteListen { port: i64, reason: String },
    /// nats-server's fatal line for a websocket listener that cannot bind.
    #[error("Unable to listen for websocket connections: {0}")]
    WebsocketListen(String),
    #[error("{0}")]
    Tls(String),
    #[error("Can't start monitoring: {0}")]
    Monitoring(String),
    #[error("Can't start JetStream: {0}")]
    JetStream(String),
    #[error("Could not write pidfile: {0}")]
    PidFile(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
