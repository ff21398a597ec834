//! Server configuration: the typed [`Options`] with nats-server's defaults, the config-file
//! syntax ([`parser`], into the tree of `value.rs`) and the mapping from the file's keys to options ([`options`]; the
//! `jetstream { ... }` block in `jetstream.rs`, `tls { ... }` in [`tls`], `cluster { ... }` in
//! [`cluster`], `websocket { ... }` in [`websocket`], `accounts { ... }` in `accounts.rs`, `feature_flags { ... }` in [`feature_flags`]) and what a reload may change ([`reload`]).
//!
//! Called by `main` (file first, then command-line flags override). Knows nothing about
//! sockets or routing.

mod account_imports;
mod accounts;
mod accounts_jetstream;
pub mod auth_callout;
pub mod cluster;
pub mod console;
pub mod feature_flags;
mod jetstream;
mod mappings;
pub mod operator;
pub mod options;
pub mod parser;
pub mod reload;
pub mod tls;
mod value;
pub mod websocket;

pub use account_imports::{number_wildcards, DEFAULT_RESPONSE_THRESHOLD};
pub use accounts::{AccountOptions, ExportOptions, ImportOptions, ResponseType};
pub use auth_callout::AuthCallout;
pub use cluster::{ClusterOptions, RouteUrl};
pub use mappings::{MapDestination, MappingOptions};
pub use options::{
    apply_config_file, duration_text, Options, Permissions, ResponsePermission, SubjectRules, User,
};
pub use tls::{TlsMinimumVersion, TlsOptions};
pub use value::{ConfigError, Entry, Value};
pub use websocket::WebsocketOptions;

#[cfg(test)]
mod tests;
