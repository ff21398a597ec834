//! `nats server report connections --filter EXPR` and `--closed-reason REASON`: natscli's
//! expr-lang expression over each connection (the `expr-lang` crate, a Rust implementation of
//! the same language), evaluated with natscli's variables: `Conn` and `Server` with the Go
//! field names of nats-server's `ConnInfo` and `ServerInfo` (`Conn.InMsgs`, `Conn.Reason`,
//! `Server.Name`), `conn` and `server` with their JSON names and every field present
//! (`conn.in_msgs`), and the older `Conns`/`conns`. `--closed-reason R` is natscli's
//! `lower(Conn.Reason) matches 'R'`.

use expr::{Context, Program, Value};
use serde_json::Value as Json;

use crate::error::CliError;

/// The zero value a Go field has when its JSON leaves it out (`omitempty`).
#[derive(Clone, Copy)]
enum Zero {
    Text,
    Number,
    Flag,
    List,
    Nil,
}

/// nats-server's `ConnInfo`: Go field name, JSON name, zero value.
const CONN_FIELDS: &[(&str, &str, Zero)] = &[
    ("Cid", "cid", Zero::Number),
    ("Kind", "kind", Zero::Text),
    ("Type", "type", Zero::Text),
    ("IP", "ip", Zero::Text),
    ("Port", "port", Zero::Number),
    ("Start", "start", Zero::Text),
    ("LastActivity", "last_activity", Zero::Text),
    ("Stop", "stop", Zero::Nil),
    ("Reason", "reason", Zero::Text),
    ("RTT", "rtt", Zero::Text),
    ("Uptime", "uptime", Zero::Text),
    ("Idle", "idle", Zero::Text),
    ("Pending", "pending_bytes", Zero::Number),
    ("InMsgs", "in_msgs", Zero::Number),
    ("OutMsgs", "out_msgs", Zero::Number),
    ("InBytes", "in_bytes", Zero::Number),
    ("OutBytes", "out_bytes", Zero::Number),
    ("Stalls", "stalls", Zero::Number),
    ("NumSubs", "subscriptions", Zero::Number),
    ("Name", "name", Zero::Text),
    ("Lang", "lang", Zero::Text),
    ("Version", "version", Zero::Text),
    ("TLSVersion", "tls_version", Zero::Text),
    ("TLSCipher", "tls_cipher_suite", Zero::Text),
    ("TLSPeerCerts", "tls_peer_certs", Zero::List),
    ("TLSFirst", "tls_first", Zero::Flag),
    ("AuthorizedUser", "authorized_user", Zero::Text),
    ("Account", "account", Zero::Text),
    ("Subs", "subscriptions_list", Zero::List),
    ("SubsDetail", "subscriptions_list_detail", Zero::List),
    ("JWT", "jwt", Zero::Text),
    ("IssuerKey", "issuer_key", Zero::Text),
    ("NameTag", "name_tag", Zero::Text),
    ("Tags", "tags", Zero::List),
    ("MQTTClient", "mqtt_client", Zero::Text),
    ("Proxy", "proxy", Zero::Nil),
];

/// nats-server's `ServerInfo` (the `server` of every `$SYS` answer).
const SERVER_FIELDS: &[(&str, &str, Zero)] = &[
    ("Name", "name", Zero::Text),
    ("Host", "host", Zero::Text),
    ("ID", "id", Zero::Text),
    ("Cluster", "cluster", Zero::Text),
    ("Domain", "domain", Zero::Text),
    ("Version", "ver", Zero::Text),
    ("Tags", "tags", Zero::List),
    ("Metadata", "metadata", Zero::Nil),
    ("FeatureFlags", "feature_flags", Zero::Nil),
    ("JetStream", "jetstream", Zero::Flag),
    ("Flags", "flags", Zero::Number),
    ("Seq", "seq", Zero::Number),
    ("Time", "time", Zero::Text),
];

/// A compiled `--filter` (or `--closed-reason`) expression.
pub(super) struct ConnFilter {
    program: Program,
}

impl ConnFilter {
    /// The expression the flags ask for, if any (natscli refuses both at once).
    pub fn from_flags(
        expression: Option<&str>,
        closed_reason: Option<&str>,
    ) -> Result<Option<ConnFilter>, CliError> {
        let expression =
            match (expression, closed_reason) {
                (Some(_), Some(_)) => return Err(CliError::message(
                    "cannot filter for closed reason and use a filter expression at the same time",
                )),
                (None, Some(reason)) => format!("lower(Conn.Reason) matches '{reason}'"),
                (Some(expression), None) => expression.to_string(),
                (None, None) => return Ok(None),
            };
        let program = expr::compile(&expression)
            .map_err(|error| CliError::message(format!("Invalid expression: {error}")))?;
        Ok(Some(ConnFilter { program }))
    }

    /// Whether the connection `conn` of the answer whose `server` is `server` is kept.
    pub fn keeps(&self, conn: &Json, server: &Json) -> Result<bool, CliError> {
        let mut context = Context::default();
        let conn_json = with_json_names(conn, CONN_FIELDS);
        let conn_go = with_go_names(conn, CONN_FIELDS);
        context.insert("server", with_json_names(server, SERVER_FIELDS));
        context.insert("Server", with_go_names(server, SERVER_FIELDS));
        context.insert("conns", conn_json.clone());
        context.insert("conn", conn_json);
        context.insert("Conns", conn_go.clone());
        context.insert("Conn", conn_go);
        match expr::run(&self.program, &context) {
            Ok(Value::Bool(keep)) => Ok(keep),
            Ok(other) => Err(CliError::message(format!(
                "Invalid expression: expected bool, but got {other}"
            ))),
            Err(error) => Err(CliError::message(format!("Invalid expression: {error}"))),
        }
    }
}

/// Keep only the connections of `answer` (`{server, data: {connections}}`) the filter keeps.
pub(super) fn retain(filter: &ConnFilter, answer: &mut Json) -> Result<(), CliError> {
    let server = answer["server"].clone();
    let Some(conns) = answer["data"]["connections"].as_array_mut() else {
        return Ok(());
    };
    let mut kept = Vec::with_capacity(conns.len());
    for conn in conns.drain(..) {
        if filter.keeps(&conn, &server)? {
            kept.push(conn);
        }
    }
    *conns = kept;
    Ok(())
}

fn zero(kind: Zero) -> Value {
    match kind {
        Zero::Text => Value::String(String::new()),
        Zero::Number => Value::Integer(0),
        Zero::Flag => Value::Bool(false),
        Zero::List => Value::Array(Vec::new()),
        Zero::Nil => Value::Nil,
    }
}

fn field(object: &Json, json_name: &str, kind: Zero) -> Value {
    match object.get(json_name) {
        Some(value) if !value.is_null() => convert(value),
        _ => zero(kind),
    }
}

/// natscli's `StructWithoutOmitEmpty`: the JSON names, with every field.
fn with_json_names(object: &Json, fields: &[(&str, &str, Zero)]) -> Value {
    let mut value = convert(object);
    if let Value::Map(map) = &mut value {
        for (_, json_name, kind) in fields {
            map.entry(json_name.to_string())
                .or_insert_with(|| zero(*kind));
        }
    }
    value
}

/// The Go struct as expr-lang sees it: its field names.
fn with_go_names(object: &Json, fields: &[(&str, &str, Zero)]) -> Value {
    fields
        .iter()
        .map(|(go_name, json_name, kind)| (go_name.to_string(), field(object, json_name, *kind)))
        .collect()
}

fn convert(value: &Json) -> Value {
    match value {
        Json::Null => Value::Nil,
        Json::Bool(flag) => Value::Bool(*flag),
        Json::Number(number) => match number.as_i64() {
            Some(integer) => Value::Integer(integer),
            None => Value::Float(number.as_f64().unwrap_or_default()),
        },
        Json::String(text) => Value::String(text.clone()),
        Json::Array(items) => Value::Array(items.iter().map(convert).collect()),
        Json::Object(map) => map
            .iter()
            .map(|(key, value)| (key.clone(), convert(value)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keeps(expression: &str, conn: Json) -> bool {
        let filter = ConnFilter::from_flags(Some(expression), None)
            .unwrap()
            .unwrap();
        filter
            .keeps(&conn, &json!({"name": "n1", "ver": "2.15.1"}))
            .unwrap()
    }

    #[test]
    fn go_and_json_names_with_zero_values() {
        let conn = json!({"cid": 7, "in_msgs": 12, "name": "svc", "account": "A"});
        assert!(keeps("Conn.Cid == 7 && conn.in_msgs > 10", conn.clone()));
        assert!(keeps(
            "Conn.Reason == '' && conn.reason == ''",
            conn.clone()
        ));
        assert!(keeps(
            "Server.Name == 'n1' && server.ver == '2.15.1'",
            conn.clone()
        ));
        assert!(keeps(
            "Conns.Name == 'svc' && conns.account == 'A'",
            conn.clone()
        ));
        assert!(!keeps("Conn.Name startsWith 'x'", conn));
    }

    #[test]
    fn closed_reason_is_a_lower_case_match() {
        let filter = ConnFilter::from_flags(None, Some("client"))
            .unwrap()
            .unwrap();
        let server = json!({});
        assert!(filter
            .keeps(&json!({"reason": "Client Closed"}), &server)
            .unwrap());
        assert!(!filter
            .keeps(&json!({"reason": "Stale Connection"}), &server)
            .unwrap());
        assert!(!filter.keeps(&json!({}), &server).unwrap());
    }

    #[test]
    fn refusals() {
        assert!(ConnFilter::from_flags(Some("true"), Some("x")).is_err());
        assert!(ConnFilter::from_flags(Some("Conn.Cid =="), None).is_err());
        let filter = ConnFilter::from_flags(Some("Conn.Cid"), None)
            .unwrap()
            .unwrap();
        assert!(filter.keeps(&json!({"cid": 1}), &json!({})).is_err());
    }
}
