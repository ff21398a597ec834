//! Who a connection is and what it may do: authentication at CONNECT ([`auth`]: tokens,
//! users, bcrypt, nkeys, certificate mapping), per-user publish/subscribe [`permissions`], the
//! rustls configuration for client TLS ([`tls`]), the identity read from a client
//! [`certificate`], the `$SYS.REQ.USER.INFO` responder ([`user_info`]), the authorization
//! callout's request and response checks ([`callout`]) and the server's own nkey ([`identity`]).
//!
//! Called by the connection reader and TLS upgrade (`client/`), the config reader (to check
//! TLS files and bcrypt hashes) and start-up (`server.rs`). Knows nothing about sockets,
//! routing or JetStream.

pub(crate) mod auth;
pub(crate) mod callout;
pub(crate) mod certificate;
pub(crate) mod identity;
pub(crate) mod jwt;
pub(crate) mod permissions;
pub(crate) mod tls;
pub(crate) mod user_info;
