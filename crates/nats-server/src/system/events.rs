//! Connection advisories in the system account: `$SYS.ACCOUNT.<account>.CONNECT` when a client
//! finished CONNECT, `$SYS.ACCOUNT.<account>.DISCONNECT` (with its counters and the reason) when
//! it went away, in nats-server's `client_connect` / `client_disconnect` shapes. Called by the
//! connection reader and `Server::unregister_client`; a server without subscribers on these
//! subjects pays one sublist match.

use crate::client::{ClientShared, CloseReason};
use crate::server::Server;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;
use time::OffsetDateTime;

fn next_id() -> String {
    crate::security::identity::new_nuid()
}

fn account_name(client: &ClientShared) -> String {
    client
        .account()
        .map_or(crate::accounts::GLOBAL_ACCOUNT, |account| &account.name)
        .to_string()
}

/// The `client` object of both advisories.
fn client_object(client: &ClientShared, stop: Option<OffsetDateTime>) -> Value {
    let meta = client.meta.lock().clone();
    let mut object = Map::new();
    object.insert(
        "start".into(),
        json!(go_compat::time_text::rfc3339_nano(client.start)),
    );
    object.insert("host".into(), json!(client.address.ip().to_string()));
    object.insert("id".into(), json!(client.id));
    object.insert("acc".into(), json!(account_name(client)));
    if let Some(user) = meta.user.filter(|user| !user.is_empty()) {
        object.insert("user".into(), json!(user));
    }
    if let Some(name) = meta.name.filter(|name| !name.is_empty()) {
        object.insert("name".into(), json!(name));
    }
    if let Some(lang) = meta.lang.filter(|lang| !lang.is_empty()) {
        object.insert("lang".into(), json!(lang));
    }
    if let Some(version) = meta.version.filter(|version| !version.is_empty()) {
        object.insert("ver".into(), json!(version));
    }
    if stop.is_some() {
        if let Some(rtt) = *client.rtt.lock() {
            object.insert("rtt".into(), json!(rtt.as_nanos() as u64));
        }
    }
    if let Some(stop) = stop {
        object.insert(
            "stop".into(),
            json!(go_compat::time_text::rfc3339_nano(stop)),
        );
    }
    object.insert("name_tag".into(), json!(account_name(client)));
    object.insert("kind".into(), json!("Client"));
    object.insert("client_type".into(), json!("nats"));
    Value::Object(object)
}

/// `$SYS.ACCOUNT.<account>.CONNECT` for a client that just completed CONNECT.
pub(crate) fn client_connected(server: &Server, client: &ClientShared) {
    let now = OffsetDateTime::now_utc();
    let payload = json!({
        "type": "io.nats.server.advisory.v1.client_connect",
        "id": next_id(),
        "timestamp": go_compat::time_text::rfc3339_nano(now),
        "server": super::server_object(server),
        "client": client_object(client, None),
    });
    let subject = format!("$SYS.ACCOUNT.{}.CONNECT", account_name(client));
    super::publish(server, &subject, payload);
}

/// `$SYS.ACCOUNT.<account>.DISCONNECT` for a client that completed CONNECT and is gone.
pub(crate) fn client_disconnected(server: &Server, client: &ClientShared, reason: CloseReason) {
    let now = OffsetDateTime::now_utc();
    let counters = &client.counters;
    let payload = json!({
        "type": "io.nats.server.advisory.v1.client_disconnect",
        "id": next_id(),
        "timestamp": go_compat::time_text::rfc3339_nano(now),
        "server": super::server_object(server),
        "client": client_object(client, Some(now)),
        // What the client sent, and what it received, as nats-server counts them.
        "sent": {
            "msgs": counters.in_msgs.load(Ordering::Relaxed),
            "bytes": counters.in_bytes.load(Ordering::Relaxed),
        },
        "received": {
            "msgs": counters.out_msgs.load(Ordering::Relaxed),
            "bytes": counters.out_bytes.load(Ordering::Relaxed),
        },
        "reason": reason.text(),
    });
    let subject = format!("$SYS.ACCOUNT.{}.DISCONNECT", account_name(client));
    super::publish(server, &subject, payload);
}
