//! rnats' `nats-server`: a wire-compatible NATS server (core protocol, routing, queue groups,
//! headers, auth and permissions, config file, monitoring) with JetStream wired in through
//! `nats_jetstream::Transport`.
//!
//! `main.rs` is a thin shell over [`cli`], [`config`], [`logging`] and [`server::run`].
//! Protocol framing lives in `nats-proto`, subject matching in `nats-subject`; this crate
//! owns sockets, tasks and policy.

#![recursion_limit = "256"]

pub mod auth;
pub mod certificate;
pub mod cli;
pub mod client;
pub mod config;
pub mod identity;
pub mod logging;
pub mod monitor;
pub mod permissions;
pub mod router;
pub mod server;
pub mod tls;
pub mod user_info;

pub use server::{run, Server, VERSION};

/// Why the server could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{0}")]
    Config(#[from] config::ConfigError),
    #[error("could not listen on {address}: {source}")]
    Listen {
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Tls(String),
    #[error("JetStream could not start: {0}")]
    JetStream(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
