//! nats-proto: the NATS wire codec, and nothing else.
//!
//! - [`ClientParser`] turns the bytes a client sends into [`ClientOp`]s, incrementally and without
//!   copying payloads (every `Bytes` is a slice of the read buffer).
//! - [`ServerParser`] does the same for what a server sends ([`ServerOp`]): used by the test harness
//!   and raw-wire tests.
//! - `encode_*` functions append frames (MSG, HMSG, INFO, -ERR, and client frames for tests).
//! - [`RouteParser`] does the same for a route (server-to-server) connection ([`RouteOp`]:
//!   `RS+`/`RS-`, `RMSG`/`HMSG` with queue lists), with the route encoders and INFO/CONNECT bodies.
//! - [`ConnectOptions`] and [`ServerInfo`] are the CONNECT and INFO JSON bodies.
//! - [`HeaderMap`] and [`header_value`] read and build `NATS/1.0` header blocks.
//! - [`err_text`] holds nats-server's exact `-ERR` texts.
//!
//! Called by nats-server (connections), the test harness and tools. It knows nothing about sockets,
//! tokio, subjects' meaning, subscriptions or authorization: it only frames bytes.

mod client;
mod connect;
mod encode;
pub mod err_text;
mod error;
mod framing;
mod headers;
mod info;
mod route;
mod server;

pub use client::{ClientOp, ClientParser, DEFAULT_MAX_CONTROL_LINE, DEFAULT_MAX_PAYLOAD};
pub use connect::ConnectOptions;
pub use encode::{
    encode_connect, encode_err, encode_hmsg, encode_hmsg_head, encode_hpub, encode_info,
    encode_msg, encode_msg_head, encode_pub, encode_sub, encode_unsub, msg_encoded_len,
    write_decimal, CRLF, OK, PING, PONG,
};
pub use error::ProtocolError;
pub use headers::{header_status, header_value, HeaderMap, HEADER_VERSION};
pub use info::ServerInfo;
pub use route::{
    encode_route_subscribe, encode_route_unsubscribe, encode_routed_message_head, RouteConnect,
    RouteInfo, RouteOp, RouteParser, RouteSubjectRules, RoutedMessage,
};
pub use server::{ServerOp, ServerParser};
