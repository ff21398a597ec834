//! `nats server report connections --filter EXPR` and `--closed-reason REASON`: natscli's
//! expr-lang expression over each connection (the `expr-lang` crate, a Rust implementation of
//! the same language), evaluated with natscli's variables: `Conn` and `Server` with the Go
//! field names of nats-server's `ConnInfo` and `ServerInfo` (`Conn.InMsgs`, `Conn.Reason`,
//! `Server.Name`), `conn` and `server` with their JSON names and every field present
//! (`conn.in_msgs`), and the older `Conns`/`conns`. `--closed-reason R` is natscli's
//! `lower(Conn.Reason) matches 'R'`.
//!
//! As in natscli, the Go names hold Go values: `Conn.Start`, `Conn.LastActivity` and
//! `Server.Time` are times (`time.Time`, the zero time when absent), `Conn.Stop` a time or nil,
//! so `Conn.Start < now() - duration("1h")` and `Conn.LastActivity.Before(...)` work (expr-lang's
//! `temporal` values); the JSON names keep the RFC 3339 text of the JSON. `now()` is Go's
//! `time.Now()`, in the local zone (expr-lang's own is in UTC). A name that is none of these
//! variables is nil, as natscli's `AllowUndefinedVariables` makes it.

use chrono::{DateTime, NaiveDate};
use expr::{Context, ContextProvider, DateTimeValue, Environment, Program, TimezoneValue, Value};
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
    /// A Go `time.Time`: the zero time when absent.
    Time,
    /// A Go `*time.Time`: nil when absent.
    OptionalTime,
}

/// nats-server's `ConnInfo`: Go field name, JSON name, zero value.
const CONN_FIELDS: &[(&str, &str, Zero)] = &[
    ("Cid", "cid", Zero::Number),
    ("Kind", "kind", Zero::Text),
    ("Type", "type", Zero::Text),
    ("IP", "ip", Zero::Text),
    ("Port", "port", Zero::Number),
    ("Start", "start", Zero::Time),
    ("LastActivity", "last_activity", Zero::Time),
    ("Stop", "stop", Zero::OptionalTime),
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
    ("Time", "time", Zero::Time),
];

/// A compiled `--filter` (or `--closed-reason`) expression.
pub(super) struct ConnFilter {
    program: Program,
    environment: Environment<'static>,
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
        let mut environment = Environment::new();
        environment.add_function("now", |call| {
            if !call.args.is_empty() {
                return Err(expr::Error::ExprError(
                    "now() takes no arguments".to_string(),
                ));
            }
            Ok(Value::DateTime(local_now()))
        });
        Ok(Some(ConnFilter {
            program,
            environment,
        }))
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
        match self.environment.run(&self.program, &Variables(context)) {
            Ok(Value::Bool(keep)) => Ok(keep),
            Ok(other) => Err(CliError::message(format!(
                "Invalid expression: expected bool, but got {other}"
            ))),
            Err(error) => Err(CliError::message(format!("Invalid expression: {error}"))),
        }
    }
}

/// The expression's variables, where a name that is none of them is nil (natscli compiles with
/// expr's `AllowUndefinedVariables`; expr-lang's own `Context` refuses such a name).
struct Variables(Context);

/// What an undefined name stands for.
static NIL: Value = Value::Nil;

impl ContextProvider for Variables {
    fn get(&self, key: &str) -> Option<&Value> {
        Some(self.0.get(key).unwrap_or(&NIL))
    }

    fn to_context(&self) -> Context {
        self.0.clone()
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

/// Go's `time.Now()`: the local zone (UTC where none can be found).
fn local_now() -> DateTimeValue {
    let now = chrono::Utc::now();
    match TimezoneValue::local() {
        Ok(zone) => DateTimeValue::zoned(now.with_timezone(&zone.timezone()), zone),
        Err(_) => DateTimeValue::fixed(now.fixed_offset()),
    }
}

/// Go's zero `time.Time`, 0001-01-01 00:00:00 UTC.
fn zero_time() -> Value {
    NaiveDate::from_ymd_opt(1, 1, 1)
        .and_then(|date| date.and_hms_opt(0, 0, 0))
        .map(|time| Value::DateTime(DateTimeValue::fixed(time.and_utc().fixed_offset())))
        .unwrap_or(Value::Nil)
}

/// The value a Go field of kind `kind` has when its JSON leaves it out.
fn go_zero(kind: Zero) -> Value {
    match kind {
        Zero::Text => Value::String(String::new()),
        Zero::Number => Value::Integer(0),
        Zero::Flag => Value::Bool(false),
        Zero::List => Value::Array(Vec::new()),
        Zero::Nil | Zero::OptionalTime => Value::Nil,
        Zero::Time => zero_time(),
    }
}

/// The same, as natscli's `StructWithoutOmitEmpty` writes it in JSON (a time is its text).
fn json_zero(kind: Zero) -> Value {
    match kind {
        Zero::Time => Value::String("0001-01-01T00:00:00Z".to_string()),
        kind => go_zero(kind),
    }
}

/// The Go field's value: a time field's RFC 3339 text becomes a time (text that is not one
/// stays text, so nothing the server sent is lost).
fn field(object: &Json, json_name: &str, kind: Zero) -> Value {
    match (object.get(json_name), kind) {
        (None | Some(Json::Null), kind) => go_zero(kind),
        (Some(Json::String(text)), Zero::Time | Zero::OptionalTime) => {
            match DateTime::parse_from_rfc3339(text) {
                Ok(time) => Value::DateTime(DateTimeValue::fixed(time)),
                Err(_) => Value::String(text.clone()),
            }
        }
        (Some(value), _) => convert(value),
    }
}

/// natscli's `StructWithoutOmitEmpty`: the JSON names, with every field.
fn with_json_names(object: &Json, fields: &[(&str, &str, Zero)]) -> Value {
    let mut value = convert(object);
    if let Value::Map(map) = &mut value {
        for (_, json_name, kind) in fields {
            map.entry(json_name.to_string())
                .or_insert_with(|| json_zero(*kind));
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
        assert!(!keeps("Conn.Name startsWith 'x'", conn.clone()));
        // An undefined name is nil, as with natscli's AllowUndefinedVariables; `#` still names
        // a predicate's element.
        assert!(keeps("Nobody == nil && conns.cid == 7", conn.clone()));
        assert!(keeps("all([1, 2], {# > 0}) && nobody ?? true", conn));
    }

    /// natscli's time filters: the Go names are times, the JSON names their text.
    #[test]
    fn times_are_go_times() {
        let now = chrono::Utc::now();
        let text =
            |ago: chrono::Duration| (now - ago).to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
        let started = text(chrono::Duration::hours(2));
        let conn = json!({
            "start": started,
            "last_activity": text(chrono::Duration::minutes(5)),
        });
        for (expression, expected) in [
            ("Conn.Start < now() - duration('1h')", true),
            ("Conn.Start > now() - duration('3h')", true),
            ("Conn.Start < now() - duration('3h')", false),
            ("now() - Conn.LastActivity > duration('4m')", true),
            ("now().Sub(Conn.LastActivity) < duration('1m')", false),
            ("Conn.LastActivity.Before(now().Add(duration('-1m')))", true),
            ("Conn.LastActivity.After(Conn.Start)", true),
            ("Conn.Stop == nil && !Conn.Start.IsZero()", true),
            (&format!("conn.start == '{started}'"), true),
            (
                "conn.stop == nil && conn.last_activity startsWith '2'",
                true,
            ),
        ] {
            assert_eq!(keeps(expression, conn.clone()), expected, "{expression}");
        }
        let closed = json!({"start": started, "stop": text(chrono::Duration::seconds(10))});
        assert!(keeps(
            "Conn.Stop > Conn.Start && Conn.Stop.Sub(Conn.Start) > duration('1h')",
            closed
        ));
        // Absent times are Go's zero time, as natscli's JSON names write it.
        assert!(keeps(
            "Conn.Start.IsZero() && Conn.LastActivity.Year() == 1 \
             && conn.start == '0001-01-01T00:00:00Z'",
            json!({})
        ));
        assert!(keeps(
            "now().Location().String() == 'Local' && now().After(Conn.Start)",
            json!({})
        ));
        let filter = ConnFilter::from_flags(Some("Server.Time.After(date('2020-01-01'))"), None)
            .unwrap()
            .unwrap();
        let server = json!({"name": "n1", "time": "2026-12-04T12:00:00.5+01:00"});
        assert!(filter.keeps(&json!({}), &server).unwrap());
        assert!(!filter.keeps(&json!({}), &json!({})).unwrap());
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
