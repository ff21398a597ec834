//! The monitoring port (`-m PORT` / `http_port`, `https_port`, `http_base_path`): nats-server's
//! endpoints with its query options, JSON field names, statuses and error texts.
//!
//! `http.rs` is the only file that knows HTTP (hyper); every other file is one endpoint
//! family's producer: a `*Options` type read from a query (`from_query`, nats-server's error
//! for a bad value) and a function from the server and those options to the JSON body. The
//! producers are called by `http.rs` and are meant for the `$SYS.REQ.SERVER.*` responders too;
//! they read the server's shared state and know nothing of where their answer goes.

pub mod accounts;
pub mod closed;
pub mod connz;
mod console;
pub mod format;
pub mod health;
mod http;
mod index;
pub mod jsz;
pub mod metrics;
pub mod query;
pub mod raftz;
pub mod record;
pub mod routez;
pub mod runtime;
pub mod subsz;
pub mod topology;
pub mod varz;

pub use format::rfc3339;
pub use http::serve;
pub use varz::{resident_memory, varz};

use serde_json::{json, Value};

/// Options as key/value pairs (a `$SYS.REQ.SERVER.*` request's JSON, flattened) read as a query.
fn pairs_query(pairs: &[(String, String)]) -> query::Query {
    query::Query::from_pairs(pairs)
}

/// A refused request as nats-server's server API answers it.
fn refusal_json(refusal: Refusal) -> Value {
    json!({"error": {"code": refusal.status, "description": refusal.text}})
}

/// `/connz` for the `$SYS` responders, from the request's options. Their `state` is
/// nats-server's `ConnState` number, named (`open`, `closed`, `all`) for 0-2 before it comes
/// here: a number still left selects no connection, as nats-server (its query form is refused).
pub fn connz(server: &crate::server::Server, pairs: &[(String, String)]) -> Value {
    let unnamed =
        |(name, value): &(String, String)| name == "state" && value.parse::<i64>().is_ok();
    let named: Vec<_> = pairs
        .iter()
        .filter(|pair| !unnamed(pair))
        .cloned()
        .collect();
    match connz::ConnzOptions::from_query(&pairs_query(&named)) {
        Ok(mut options) => {
            if pairs.iter().any(unnamed) {
                options.state = connz::ConnectionState::Unnamed;
            }
            // nats-server's Connz: `>` filters nothing, and another subject filter needs an
            // account filter (a `$SYS.REQ.ACCOUNT.<acc>.CONNZ` always has one); its error is
            // the server API's 500.
            if options.filter_subject == ">" {
                options.filter_subject.clear();
            }
            if !options.filter_subject.is_empty() && options.account.is_empty() {
                return refusal_json(Refusal {
                    status: 500,
                    text: "filter by subject only valid with account filtering".into(),
                });
            }
            connz::connz(server, &options)
        }
        Err(refusal) => refusal_json(refusal),
    }
}

/// `/routez` for the `$SYS` responders, from the request's options.
pub fn routez(server: &crate::server::Server, pairs: &[(String, String)]) -> Value {
    match routez::RoutezOptions::from_query(&pairs_query(pairs)) {
        Ok(options) => routez::routez(server, &options),
        Err(refusal) => refusal_json(refusal),
    }
}

/// `/subsz` for the `$SYS` responders, from the request's options.
pub fn subsz(server: &crate::server::Server, pairs: &[(String, String)]) -> Value {
    match subsz::SubszOptions::from_query(&pairs_query(pairs)) {
        Ok(options) => subsz::subsz(server, &options),
        Err(refusal) => refusal_json(refusal),
    }
}

/// `/jsz` for the `$SYS` responders, with the request's options.
pub fn jsz(server: &crate::server::Server, options: &serde_json::Map<String, Value>) -> Value {
    jsz::jsz(server, &jsz::JszOptions::from_json(options))
}

/// Why a producer did not answer: nats-server's HTTP status and plain-text body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub text: String,
}

impl Refusal {
    pub fn bad_request(text: impl Into<String>) -> Refusal {
        Refusal {
            status: 400,
            text: text.into(),
        }
    }
}

/// A bad query value (its text from [`query::Query`]) is a 400.
impl From<String> for Refusal {
    fn from(text: String) -> Refusal {
        Refusal::bad_request(text)
    }
}
