//! The system account's internal client: the `$SYS` requests and events nats-server serves and
//! a cluster of nats-servers relies on.
//!
//! - Requests (internal subscriptions in the system account): `$SYS.REQ.SERVER.PING` (a STATSZ
//!   answer), `$SYS.REQ.SERVER.PING.<X>` and `$SYS.REQ.SERVER.<our id>.<X>` for X in VARZ,
//!   CONNZ, ROUTEZ, SUBSZ, JSZ, HEALTHZ, STATSZ, IDZ. Replies wrap the monitoring endpoints'
//!   JSON (`monitor.rs` producers) as nats-server does: `{"server": {...}, "data": {...}}`.
//!   `$SYS.REQ.SERVER.<our id>.RELOAD` reloads the config file (`crate::reload`).
//! - Events: `$SYS.SERVER.<id>.STATSZ` every [`STATSZ_INTERVAL`] (and at start), and
//!   `$SYS.SERVER.<id>.SHUTDOWN` when the server stops (`.LAMEDUCK` when lame duck mode begins); `$SYS.ACCOUNT.<acc>.CONNECT` and
//!   `DISCONNECT` advisories (`events.rs`).
//! - Account requests: `$SYS.REQ.ACCOUNT.<acc>.<kind>` for CONNZ, SUBSZ, JSZ, INFO, STATZ,
//!   LEAFZ, CONNS and `$SYS.REQ.ACCOUNT.PING.STATZ` (`account_requests.rs`).
//! - Operator mode: account JWT updates over `$SYS.REQ.ACCOUNT.<key>.CLAIMS.UPDATE`, and with
//!   the full resolver `$SYS.REQ.CLAIMS.UPDATE|LIST|DELETE` and
//!   `$SYS.REQ.ACCOUNT.<key>.CLAIMS.LOOKUP` (`claims.rs`), and the full resolvers' store sync
//!   over `$SYS.REQ.CLAIMS.PACK` (`claims_pack.rs`); the cache resolver's fetch of an unknown
//!   account for a CONNECT (`claims_fetch.rs`).
//!
//! The subscription handlers only enqueue; one task answers. Everything goes through the system
//! account's router, so requests and replies cross routes like any other `$SYS` traffic.
//! Started by `server::run`; knows nothing of sockets or the route protocol.

mod account_requests;
mod claims;
pub(crate) mod claims_fetch;
mod claims_pack;
mod events;
mod statsz;

pub(crate) use claims::serve_jetstream;
pub(crate) use claims_fetch::fetch_for_connect;
pub(crate) use events::{client_connected, client_disconnected};

use crate::router::{Delivery, PendingFlush};
use crate::server::{Server, VERSION};
use bytes::Bytes;
use nats_jetstream::Message;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;
use time::OffsetDateTime;

/// How often `$SYS.SERVER.<id>.STATSZ` goes out (nats-server's default).
pub const STATSZ_INTERVAL: Duration = Duration::from_secs(10);
/// Requests waiting for the answering task; more are dropped (the requester times out).
const REQUEST_QUEUE: usize = 1024;

/// What a `$SYS.REQ.SERVER...` request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    Varz,
    Connz,
    Routez,
    Subsz,
    Jsz,
    Healthz,
    Statsz,
    Idz,
    /// `$SYS.REQ.SERVER.<id>.RELOAD` (not a PING): reload the config file.
    Reload,
}

impl Endpoint {
    /// The Go type nats-server reads the request body into (named in its refusals); `None`:
    /// the body is not read (IDZ).
    fn options_type(self) -> Option<&'static str> {
        Some(match self {
            Endpoint::Varz => "VarzEventOptions",
            Endpoint::Connz => "ConnzEventOptions",
            Endpoint::Routez => "RoutezEventOptions",
            Endpoint::Subsz => "SubszEventOptions",
            Endpoint::Jsz => "JszEventOptions",
            Endpoint::Healthz => "HealthzEventOptions",
            Endpoint::Statsz => "StatszEventOptions",
            Endpoint::Reload => "EventFilterOptions",
            Endpoint::Idz => return None,
        })
    }

    fn parse(name: &str) -> Option<Endpoint> {
        Some(match name {
            "VARZ" => Endpoint::Varz,
            "CONNZ" => Endpoint::Connz,
            "ROUTEZ" => Endpoint::Routez,
            "SUBSZ" => Endpoint::Subsz,
            "JSZ" => Endpoint::Jsz,
            "HEALTHZ" => Endpoint::Healthz,
            "STATSZ" => Endpoint::Statsz,
            "IDZ" => Endpoint::Idz,
            "RELOAD" => Endpoint::Reload,
            _ => return None,
        })
    }
}

/// A request waiting for the answering task, with the subscription it came in on (`None`:
/// a `$SYS.REQ.SERVER` one).
type Queued = (Message, Option<account_requests::Source>);

/// Subscribe the system account's request subjects and start the answering and STATSZ tasks.
pub(crate) fn start(server: &Arc<Server>) {
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Queued>(REQUEST_QUEUE);
    let router = &server.accounts.system().router;
    let own = format!("$SYS.REQ.SERVER.{}.*", server.server_id);
    let account_subjects = account_requests::KINDS.iter().map(|kind| {
        (
            format!("$SYS.REQ.ACCOUNT.*.{kind}"),
            Some(account_requests::Source::Account),
        )
    });
    let subjects = [
        ("$SYS.REQ.SERVER.PING".to_string(), None),
        ("$SYS.REQ.SERVER.PING.*".to_string(), None),
        (own, None),
        (
            account_requests::PING_STATZ.to_string(),
            Some(account_requests::Source::PingStatz),
        ),
    ]
    .into_iter()
    .chain(account_subjects);
    for (subject, source) in subjects {
        let sender = sender.clone();
        router.subscribe_internal(
            &subject,
            None,
            Arc::new(move |message: Message| {
                let _ = sender.try_send((message, source));
            }),
        );
    }
    claims::start(server);
    let weak = Arc::downgrade(server);
    tokio::spawn(async move {
        while let Some((message, source)) = receiver.recv().await {
            let Some(server) = weak.upgrade() else {
                return;
            };
            match source {
                Some(source) => account_requests::answer(&server, &message, source),
                None => answer(&server, &message),
            }
        }
    });
    let weak: Weak<Server> = Arc::downgrade(server);
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(STATSZ_INTERVAL);
        loop {
            ticker.tick().await;
            let Some(server) = weak.upgrade() else {
                return;
            };
            publish_statsz(&server);
        }
    });
}

/// A route came up: tell the cluster about us soon (once the peer's interest arrived), so
/// nats-server peers count this server among their `active_servers` without waiting for the
/// next periodic STATSZ.
pub(crate) fn route_registered(server: &Arc<Server>) {
    let weak = Arc::downgrade(server);
    tokio::spawn(async move {
        for delay in [Duration::from_millis(250), Duration::from_secs(2)] {
            tokio::time::sleep(delay).await;
            let Some(server) = weak.upgrade() else {
                return;
            };
            publish_statsz(&server);
        }
    });
}

fn publish_statsz(server: &Server) {
    let subject = format!("$SYS.SERVER.{}.STATSZ", server.server_id);
    publish(server, &subject, statsz::message(server));
}

/// Announce the shutdown to the cluster (`$SYS.SERVER.<id>.SHUTDOWN`, the `server` object).
pub(crate) fn shutdown(server: &Server) {
    let subject = format!("$SYS.SERVER.{}.SHUTDOWN", server.server_id);
    let payload = json!({"server": server_object(server)});
    publish(server, &subject, payload);
}

/// Announce lame duck mode (`$SYS.SERVER.<id>.LAMEDUCK`, the `server` object).
pub(crate) fn lame_duck(server: &Server) {
    let subject = format!("$SYS.SERVER.{}.LAMEDUCK", server.server_id);
    let payload = json!({"server": server_object(server)});
    publish(server, &subject, payload);
}

/// Publish `payload` in the system account (no reply subject).
pub(crate) fn publish(server: &Server, subject: &str, payload: Value) {
    publish_bytes(server, &Bytes::copy_from_slice(subject.as_bytes()), payload);
}

fn publish_bytes(server: &Server, subject: &Bytes, payload: Value) {
    let payload = Bytes::from(serde_json::to_vec(&payload).unwrap_or_default());
    publish_raw(server, subject, &payload);
}

/// Publish `payload` as it is in the system account (no reply subject).
fn publish_raw(server: &Server, subject: &Bytes, payload: &Bytes) {
    publish_request(server, subject, None, payload);
}

/// Publish `payload` as it is in the system account, with a reply subject when given.
fn publish_request(server: &Server, subject: &Bytes, reply: Option<&Bytes>, payload: &Bytes) {
    let delivery = Delivery {
        subject,
        reply,
        headers: None,
        payload,
    };
    let mut pending = PendingFlush::default();
    server
        .accounts
        .system()
        .router
        .route(None, &delivery, &mut pending);
    pending.flush();
}

/// The `server` object on every `$SYS` reply and event (nats-server's `ServerInfo`), with the
/// next sequence number.
pub(crate) fn server_object(server: &Server) -> Value {
    let mut object = Map::new();
    object.insert("name".into(), json!(server.server_name));
    object.insert("host".into(), json!(server.options.host));
    object.insert("id".into(), json!(server.server_id));
    if let Some(routes) = server.routes() {
        object.insert("cluster".into(), json!(routes.cluster_name()));
    }
    object.insert("ver".into(), json!(VERSION));
    object.insert(
        "feature_flags".into(),
        json!(crate::config::feature_flags::merged(
            &server.options.feature_flags
        )),
    );
    object.insert("jetstream".into(), json!(server.jetstream.get().is_some()));
    object.insert("flags".into(), json!(0));
    object.insert(
        "seq".into(),
        json!(server.system_sequence.fetch_add(1, Ordering::Relaxed) + 1),
    );
    object.insert(
        "time".into(),
        json!(go_compat::time_text::rfc3339_nano(OffsetDateTime::now_utc())),
    );
    Value::Object(object)
}

/// Answer one request, if it is for us (the PING filters) and names an endpoint we serve.
fn answer(server: &Arc<Server>, message: &Message) {
    let Some(reply) = &message.reply else {
        return;
    };
    let Ok(subject) = std::str::from_utf8(&message.subject) else {
        return;
    };
    let endpoint = if subject == "$SYS.REQ.SERVER.PING" {
        Endpoint::Statsz
    } else {
        let Some(name) = subject.rsplit('.').next().and_then(Endpoint::parse) else {
            return;
        };
        if name == Endpoint::Reload && subject.starts_with("$SYS.REQ.SERVER.PING.") {
            return;
        }
        name
    };
    // IDZ reads no body; the others refuse one Go cannot read into their options (400).
    let options = match endpoint.options_type() {
        None => request_options(&message.payload, "").unwrap_or_default(),
        Some(type_name) => match request_options(&message.payload, type_name) {
            Ok(options) => options,
            Err(text) => {
                let error = json!({"code": 400, "description": text});
                let payload = json!({"server": server_object(server), "error": error});
                publish_bytes(server, reply, payload);
                return;
            }
        },
    };
    if !filters_match(server, &options) {
        return;
    }
    // nats-server's `leader_only`: in a cluster only the meta leader answers JSZ.
    if endpoint == Endpoint::Jsz
        && options.get("leader_only") == Some(&Value::Bool(true))
        && server.meta.get().is_some_and(|meta| !meta.leads())
    {
        return;
    }
    let payload = match endpoint {
        Endpoint::Statsz => statsz::message(server),
        Endpoint::Idz => json!({
            "name": server.server_name,
            "host": server.options.host,
            "id": server.server_id,
        }),
        Endpoint::Reload => match crate::reload::reload(server) {
            Ok(()) => json!({"server": server_object(server)}),
            Err(error) => json!({
                "server": server_object(server),
                "error": {"code": 500, "description": error},
            }),
        },
        _ => {
            let data = match endpoint {
                Endpoint::Varz => crate::monitor::varz(server),
                Endpoint::Connz => {
                    crate::monitor::connz(server, &account_requests::connz_pairs(&options))
                }
                Endpoint::Routez => crate::monitor::routez(server, &query_pairs(&options)),
                Endpoint::Subsz => {
                    crate::monitor::subsz(server, &account_requests::subsz_pairs(&options))
                }
                Endpoint::Jsz => crate::monitor::jsz(server, &options),
                Endpoint::Healthz => {
                    // The `/healthz` answer for the body's options, with its status code.
                    match crate::monitor::health::HealthOptions::from_json(&options) {
                        Ok(options) => {
                            let (status, mut body) =
                                crate::monitor::health::healthz(server, &options);
                            if let Some(object) = body.as_object_mut() {
                                object.insert("status_code".into(), json!(status));
                            }
                            body
                        }
                        Err(text) => json!({"error": {"code": 400, "description": text}}),
                    }
                }
                _ => json!({"status": "ok", "status_code": 200}),
            };
            // A request its endpoint refused (`{"error": ...}`) is answered as nats-server's
            // zReq does: the error beside the server object, no data.
            let refused = data
                .as_object()
                .filter(|object| object.len() == 1)
                .and_then(|object| object.get("error"));
            match refused {
                Some(error) => json!({"server": server_object(server), "error": error}),
                None => json!({"server": server_object(server), "data": data}),
            }
        }
    };
    publish_bytes(server, reply, payload);
}

/// A request body read as nats-server's `zReq` reads it into its options (`type_name`, the Go
/// type's name): none when empty, `null` included; otherwise `json.Unmarshal`'s refusal, worded
/// as Go does (a syntax error, or a value that is not an object).
pub(super) fn request_options(
    payload: &[u8],
    type_name: &str,
) -> Result<Map<String, Value>, String> {
    if payload.is_empty() {
        return Ok(Map::new());
    }
    let value = match serde_json::from_slice::<Value>(payload) {
        Ok(value) => value,
        Err(error) => match go_compat::json_syntax::unmarshal_error_text(payload) {
            Some(text) => return Err(text),
            // Well formed for Go, refused by serde_json (invalid UTF-8 in a string, which Go
            // takes as U+FFFD).
            None => serde_json::from_str(&String::from_utf8_lossy(payload))
                .map_err(|_| error.to_string())?,
        },
    };
    match value {
        Value::Object(options) => match filter_type_error(&options, type_name) {
            Some(text) => Err(text),
            None => Ok(options),
        },
        Value::Null => Ok(Map::new()),
        other => Err(format!(
            "json: cannot unmarshal {} into Go value of type server.{type_name}",
            go_compat::json_syntax::value_kind(&other)
        )),
    }
}

/// Go's refusal of a filter option (`EventFilterOptions`, in every request's options) of the
/// wrong type: `json: cannot unmarshal number into Go struct field
/// VarzEventOptions.server_name of type string`, and for a tag `... into
/// VarzEventOptions.tags.0 of type string`.
fn filter_type_error(options: &Map<String, Value>, type_name: &str) -> Option<String> {
    const FIELDS: [(&str, &str); 6] = [
        ("server_name", "string"),
        ("cluster", "string"),
        ("host", "string"),
        ("domain", "string"),
        ("exact_match", "bool"),
        ("tags", "[]string"),
    ];
    for (key, wanted) in FIELDS {
        let Some(value) = options.get(key) else {
            continue;
        };
        let fits = matches!(
            (wanted, value),
            (_, Value::Null)
                | ("string", Value::String(_))
                | ("bool", Value::Bool(_))
                | ("[]string", Value::Array(_))
        );
        if !fits {
            let kind = go_compat::json_syntax::value_kind(value);
            return Some(format!(
                "json: cannot unmarshal {kind} into Go struct field {type_name}.{key} of type {wanted}"
            ));
        }
        let tags = value.as_array().map(Vec::as_slice).unwrap_or_default();
        for (index, tag) in tags.iter().enumerate() {
            if !matches!(tag, Value::String(_) | Value::Null) {
                let kind = go_compat::json_syntax::value_kind(tag);
                return Some(format!(
                    "json: cannot unmarshal {kind} into {type_name}.tags.{index} of type string"
                ));
            }
        }
    }
    None
}

/// A request's JSON options as query pairs, as they are.
fn query_pairs(options: &Map<String, Value>) -> Vec<(String, String)> {
    options
        .iter()
        .map(|(key, value)| {
            let text = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            (key.clone(), text)
        })
        .collect()
}

/// nats-server's event filter (`filterRequest`): `server_name`, `host` and `cluster` are
/// substring matches, or equal with `exact_match` (natscli's reports send it); every asked
/// `tags` entry must be one of the server's `server_tags`; `domain` must be its JetStream
/// domain.
fn filters_match(server: &Server, options: &Map<String, Value>) -> bool {
    let text = |key: &str| {
        options
            .get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
    };
    let exact = options.get("exact_match") == Some(&Value::Bool(true));
    let matches = |ours: &str, asked: Option<&str>| {
        asked.is_none_or(|asked| {
            if exact {
                ours == asked
            } else {
                ours.contains(asked)
            }
        })
    };
    let cluster = server
        .routes()
        .map(|routes| routes.cluster_name())
        .unwrap_or_default();
    if !matches(&server.server_name, text("server_name"))
        || !matches(&server.options.host, text("host"))
        || !matches(&cluster, text("cluster"))
    {
        return false;
    }
    let tags_held = options
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|tag| {
            let asked = tag.as_str().unwrap_or_default().trim().to_lowercase();
            server.options.server_tags.contains(&asked)
        });
    if !tags_held {
        return false;
    }
    text("domain").is_none_or(|domain| server.options.jetstream.domain.as_deref() == Some(domain))
}
