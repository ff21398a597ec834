//! The web console on the monitoring port (`/console`): one static page, embedded in the
//! binary, that reads `/varz`, `/connz` and the two JSON answers here (`/console/data`: every
//! stream with its consumers and account; `/console/messages`: a stream's latest messages) and
//! refreshes every two seconds. Read-only: it has no action that changes anything. Message
//! contents are shown only when the monitoring port listens on a loopback address, or to the
//! console's user: nats-server's monitoring port never serves payloads, so a port opened to a
//! network does not start doing so for anyone. With `console { user, password }`
//! (`config/console.rs`) the page and both JSON answers need those credentials (HTTP basic
//! authentication; [`access`]).

use super::Refusal;
use crate::server::Server;
use base64::Engine;
use serde_json::{json, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The page.
pub const PAGE: &str = include_str!("console.html");
/// Messages the viewer shows, and the bytes of each payload it shows.
const VIEWER_MESSAGES: usize = 50;
const VIEWER_BYTES: usize = 1024;

/// `/console/data`: the streams (`STREAM.LIST`'s infos) of every account, each with its account
/// name and its consumers' infos.
pub fn data(server: &Server) -> Value {
    let streams: Vec<Value> = server
        .jetstream
        .get()
        .map(|jetstream| jetstream.account_stream_details_all())
        .unwrap_or_default()
        .into_iter()
        .map(|(account, info, consumers)| {
            let mut stream = serde_json::to_value(&info).unwrap_or(Value::Null);
            if let Value::Object(fields) = &mut stream {
                fields.insert("account".into(), json!(account));
                fields.insert(
                    "consumers".into(),
                    serde_json::to_value(&consumers).unwrap_or(Value::Null),
                );
            }
            stream
        })
        .collect();
    json!({ "streams": streams })
}

/// Who asks: anyone (no console user configured) or the configured user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Open,
    Authenticated,
}

/// The realm a refused request is asked to authenticate in.
pub const REALM: &str = "Basic realm=\"rnats console\", charset=\"UTF-8\"";

/// The last `Authorization` header accepted against a bcrypt hash, with that hash: the page
/// asks three times every two seconds, and a bcrypt check costs tens of milliseconds.
static ACCEPTED: parking_lot::Mutex<Option<(String, String)>> = parking_lot::Mutex::new(None);

/// Whether a request with this `Authorization` header may use the console (`None`: a user is
/// configured and the header does not name it with its password).
pub fn access(server: &Server, authorization: Option<&str>) -> Option<Access> {
    let options = server.current_options();
    let Some(console) = &options.console else {
        return Some(Access::Open);
    };
    let header = authorization?;
    let encoded = header
        .strip_prefix("Basic ")
        .or_else(|| header.strip_prefix("basic "))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    if user != console.user {
        return None;
    }
    let hashed = crate::security::auth::is_bcrypt(&console.password);
    let cached = hashed
        && ACCEPTED
            .lock()
            .as_ref()
            .is_some_and(|(hash, accepted)| hash == &console.password && accepted == header);
    if cached {
        return Some(Access::Authenticated);
    }
    if !crate::security::auth::compare_passwords(&console.password, password) {
        return None;
    }
    if hashed {
        *ACCEPTED.lock() = Some((console.password.clone(), header.to_string()));
    }
    Some(Access::Authenticated)
}

/// `/console/messages?account=&stream=`: the stream's latest messages, payloads as text (lossy
/// UTF-8, cut at 1 KiB; `base64:` and the bytes when they are not text).
pub fn messages(
    server: &Server,
    access: Access,
    account: &str,
    stream: &str,
) -> Result<Value, Refusal> {
    if access != Access::Authenticated && !monitoring_on_loopback(server) {
        return Err(Refusal {
            status: 403,
            text: "the console shows messages only when the monitoring port listens on a loopback address, or to the console's user\n"
                .into(),
        });
    }
    let jetstream = server.jetstream.get().ok_or_else(|| Refusal {
        status: 404,
        text: "JetStream is not enabled\n".into(),
    })?;
    let messages = jetstream
        .recent_messages(account, stream, VIEWER_MESSAGES)
        .ok_or_else(|| Refusal {
            status: 404,
            text: format!("no stream {stream:?} in account {account:?}\n"),
        })?;
    let messages: Vec<Value> = messages
        .iter()
        .map(|message| {
            let shown = &message.payload[..message.payload.len().min(VIEWER_BYTES)];
            let data = match std::str::from_utf8(shown) {
                Ok(text) => text.to_string(),
                Err(error) if error.error_len().is_none() => {
                    // Cut inside a character: the text up to it.
                    String::from_utf8_lossy(&shown[..error.valid_up_to()]).into_owned()
                }
                Err(_) => format!(
                    "base64:{}",
                    base64::engine::general_purpose::STANDARD.encode(shown)
                ),
            };
            let time = OffsetDateTime::from_unix_timestamp_nanos(i128::from(message.timestamp))
                .ok()
                .and_then(|time| time.format(&Rfc3339).ok())
                .unwrap_or_default();
            json!({
                "seq": message.seq,
                "subject": message.subject,
                "time": time,
                "size": message.payload.len(),
                "data": data,
            })
        })
        .collect();
    Ok(json!({ "account": account, "stream": stream, "messages": messages }))
}

fn monitoring_on_loopback(server: &Server) -> bool {
    let host = server
        .options
        .http_host
        .clone()
        .unwrap_or_else(|| server.options.host.clone());
    match host.trim_matches(['[', ']']) {
        "localhost" => true,
        host => host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback()),
    }
}
