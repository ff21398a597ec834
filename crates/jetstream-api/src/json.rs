//! Decoding `$JS.API` request bodies and encoding responses the way nats-server does.
//!
//! Decoding (nats-server's `unmarshalRequest`): an empty body is the zero request; a body may hold
//! several JSON values, decoded one after another into the same request (later fields win);
//! `null` leaves a field at its zero value; keys match case-insensitively when no exact key does
//! (`"Max_Msgs"` is `max_msgs`, as in Go); unknown fields are an error in strict mode (the default
//! since 2.12, `jetstream { strict: true }`) and ignored otherwise. Failures come back as
//! `{"code":400,"err_code":10025,"description":"invalid JSON: <Go's error text>"}` with Go's
//! wording (syntax errors with offsets, type errors with the Go field path and type): 96 of the 97
//! decode-error texts captured from nats-server are reproduced exactly (`tests/decode_corpus.rs`).
//!
//! Encoding: Go's `encoding/json` escapes `<`, `>`, `&`, U+2028 and U+2029 inside strings; so do we,
//! so responses are byte-identical where field order and values are.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::api_error::ApiError;
use crate::errors_generated::INVALID_JSON;
use crate::policy::go_quote;

/// Whether unknown request fields are refused (nats-server `jetstream { strict: true }`, default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strictness {
    #[default]
    Strict,
    Lenient,
}

/// Decodes a request body strictly. See the module docs for the rules.
pub fn decode_request<T: DeserializeOwned + Default>(body: &[u8]) -> Result<T, ApiError> {
    decode_request_with(body, Strictness::Strict)
}

/// Decodes a request body with the given strictness.
pub fn decode_request_with<T: DeserializeOwned + Default>(
    body: &[u8],
    strictness: Strictness,
) -> Result<T, ApiError> {
    let mut value = match parse_values(body)? {
        // A blank body, or `null`, leaves the request at its zero value (Go decodes `null` into a
        // struct as a no-op).
        None | Some(Value::Null) => return Ok(T::default()),
        Some(value @ Value::Object(_)) => value,
        // Every request is a Go struct: a bare array, string, number or bool is refused (serde
        // alone would accept an array as a positional struct).
        Some(other) => {
            let text = crate::go_type_error::not_an_object::<T>(&other);
            return Err(INVALID_JSON.with_err(text));
        }
    };
    remove_nulls(&mut value);
    loop {
        match serde_json::from_value::<T>(value.clone()) {
            Ok(request) => return Ok(request),
            Err(error) => {
                let message = error.to_string();
                if let Some((field, expected)) = parse_unknown_field(&message) {
                    // Go matches keys case-insensitively when there is no exact match.
                    if let Some(canonical) = expected
                        .iter()
                        .find(|name| name.eq_ignore_ascii_case(&field))
                    {
                        if rename_field(&mut value, &field, canonical, &expected) {
                            continue;
                        }
                    }
                    if strictness == Strictness::Lenient
                        && remove_unknown_field(&mut value, &field, &expected)
                    {
                        continue;
                    }
                }
                let text = crate::go_type_error::describe::<T>(&value, &message)
                    .unwrap_or_else(|| go_data_error(&message));
                return Err(INVALID_JSON.with_err(text));
            }
        }
    }
}

/// Parses every JSON value in the body and merges them in order; `None` for a blank body.
fn parse_values(body: &[u8]) -> Result<Option<Value>, ApiError> {
    let mut merged: Option<Value> = None;
    for item in serde_json::Deserializer::from_slice(body).into_iter::<Value>() {
        match item {
            Ok(value) => match merged.as_mut() {
                Some(existing) => merge(existing, value),
                None => merged = Some(value),
            },
            Err(error) => return Err(INVALID_JSON.with_err(go_syntax_error(&error, body))),
        }
    }
    Ok(merged)
}

/// Go decodes a second value into the struct the first one filled: objects merge, the rest replaces.
fn merge(existing: &mut Value, next: Value) {
    match (existing, next) {
        (Value::Object(into), Value::Object(from)) => {
            for (key, value) in from {
                match into.get_mut(&key) {
                    Some(slot) => merge(slot, value),
                    None => {
                        into.insert(key, value);
                    }
                }
            }
        }
        (slot, value) => *slot = value,
    }
}

/// `null` for a Go struct field, slice, map or pointer leaves it at its zero value.
fn remove_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, field| !field.is_null());
            map.values_mut().for_each(remove_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(remove_nulls),
        _ => {}
    }
}

/// serde's "unknown field `x`, expected one of `a`, `b`" (or "there are no fields").
fn parse_unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let end = rest.find('`')?;
    let field = rest[..end].to_string();
    let expected = rest[end + 1..]
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    Some((field, expected))
}

/// Removes `field` from objects that look like the struct serde was decoding (all their other keys
/// are among `expected`). Returns whether anything was removed.
fn remove_unknown_field(value: &mut Value, field: &str, expected: &[String]) -> bool {
    let mut removed = false;
    if let Value::Object(map) = value {
        let looks_like_target = map.contains_key(field)
            && map
                .keys()
                .all(|key| key == field || is_expected(expected, key));
        if looks_like_target {
            map.remove(field);
            removed = true;
        }
        for child in map.values_mut() {
            removed |= remove_unknown_field(child, field, expected);
        }
    } else if let Value::Array(items) = value {
        for item in items {
            removed |= remove_unknown_field(item, field, expected);
        }
    }
    removed
}

/// Whether `key` names one of the struct's fields (case-insensitively, as Go matches).
fn is_expected(expected: &[String], key: &str) -> bool {
    expected.iter().any(|name| name.eq_ignore_ascii_case(key))
}

/// Renames `field` to `canonical` in objects that look like the struct serde was decoding (as in
/// [`remove_unknown_field`]). When the exact key is also present it wins and the variant is
/// dropped (Go would take whichever comes last; the parsed map no longer knows the order).
/// Returns whether anything changed.
fn rename_field(value: &mut Value, field: &str, canonical: &str, expected: &[String]) -> bool {
    let mut changed = false;
    match value {
        Value::Object(map) => {
            let looks_like_target = map.contains_key(field)
                && map
                    .keys()
                    .all(|key| key == field || is_expected(expected, key));
            if looks_like_target {
                if let Some(moved) = map.remove(field) {
                    map.entry(canonical.to_string()).or_insert(moved);
                    changed = true;
                }
            }
            for child in map.values_mut() {
                changed |= rename_field(child, field, canonical, expected);
            }
        }
        Value::Array(items) => {
            for item in items {
                changed |= rename_field(item, field, canonical, expected);
            }
        }
        _ => {}
    }
    changed
}

/// Go's syntax error texts: `unexpected EOF`, or `invalid character 'x' looking for beginning of
/// value at offset N` (offset counted as Go does, one past the bad byte).
fn go_syntax_error(error: &serde_json::Error, body: &[u8]) -> String {
    if error.is_eof() {
        return "unexpected EOF".to_string();
    }
    if let Some(text) = go_compat::json_syntax::error_text(body) {
        return text;
    }
    // The scanner found nothing serde_json objects to (e.g. invalid UTF-8): a generic text at
    // serde's position.
    let offset = byte_offset(body, error.line(), error.column());
    let bad = body.get(offset.saturating_sub(1)).copied().unwrap_or(b'?');
    format!(
        "invalid character {} looking for beginning of value at offset {offset}",
        go_compat::json_syntax::quote_byte(bad)
    )
}

/// The text Go's `json.Unmarshal` (not the streaming decoder) gives: no offset, and a truncated
/// document is `unexpected end of JSON input`.
pub(crate) fn go_message_without_offset(error: &serde_json::Error, body: &[u8]) -> String {
    if error.is_eof() {
        return "unexpected end of JSON input".to_string();
    }
    if error.is_syntax() {
        let text = go_syntax_error(error, body);
        return match text.rfind(" at offset ") {
            Some(index) => text[..index].to_string(),
            None => text,
        };
    }
    go_data_error(&error.to_string())
}

/// serde_json reports 1-based line and column of the offending byte; Go reports the count of bytes
/// read including it.
fn byte_offset(body: &[u8], line: usize, column: usize) -> usize {
    let mut line_start = 0;
    for _ in 1..line {
        match body[line_start..].iter().position(|&b| b == b'\n') {
            Some(newline) => line_start += newline + 1,
            None => break,
        }
    }
    (line_start + column).min(body.len())
}

/// Maps serde's data-error texts onto Go's `encoding/json` ones.
fn go_data_error(message: &str) -> String {
    if let Some((field, _)) = parse_unknown_field(message) {
        return format!("json: unknown field {}", go_quote(&field));
    }
    if let Some(rest) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
    {
        if let Some((found, expected)) = rest.split_once(", expected ") {
            return format!(
                "json: cannot unmarshal {} into Go value of type {}",
                go_found_kind(found),
                go_type_name(expected)
            );
        }
    }
    message.to_string()
}

fn go_found_kind(found: &str) -> String {
    let first = found.split_whitespace().next().unwrap_or(found);
    match first {
        "string" => "string".to_string(),
        "boolean" => "bool".to_string(),
        "map" => "object".to_string(),
        "sequence" => "array".to_string(),
        "integer" | "floating" => {
            let number = found.split('`').nth(1).unwrap_or("");
            format!("number {number}")
        }
        _ => found.to_string(),
    }
}

fn go_type_name(expected: &str) -> String {
    match expected {
        "i64" => "int64",
        "i32" => "int32",
        "u64" => "uint64",
        "u32" => "uint32",
        "u16" => "uint16",
        "u8" => "uint8",
        "a string" => "string",
        "a boolean" => "bool",
        "a sequence" => "[]string",
        "a map" => "map[string]string",
        other if other.starts_with("struct ") => "struct",
        other => other,
    }
    .to_string()
}

/// Serializes a response as nats-server's `encoding/json` would: same bytes for the same field
/// order and values (HTML-sensitive characters escaped as `\u003c`, `\u003e`, `\u0026`).
pub fn encode_response<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    if encode_into(&mut out, value) {
        out
    } else {
        Vec::new()
    }
}

/// [`encode_response`] appended to `out`; false (and `out` as it was) if serializing failed,
/// which our own types never do (no non-string map keys, no I/O).
pub fn encode_into<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> bool {
    let start = out.len();
    let mut serializer = serde_json::Serializer::with_formatter(&mut *out, GoEscapes);
    if value.serialize(&mut serializer).is_ok() {
        true
    } else {
        out.truncate(start);
        false
    }
}

/// serde_json's compact output with Go's extra escapes, written as the strings are (one pass:
/// a STREAM.LIST page of 256 infos spent a sixth of its time in a second pass, [`go_escape`],
/// every stream's subjects holding a `>`). serde_json hands over string pieces that need no
/// JSON escaping; these are split at `<`, `>`, `&`, U+2028 and U+2029.
struct GoEscapes;

impl serde_json::ser::Formatter for GoEscapes {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let bytes = fragment.as_bytes();
        let mut start = 0;
        for (index, byte) in bytes.iter().enumerate() {
            let (escape, length): (&[u8], usize) = match byte {
                b'<' => (b"\\u003c", 1),
                b'>' => (b"\\u003e", 1),
                b'&' => (b"\\u0026", 1),
                0xE2 if bytes.get(index + 1) == Some(&0x80) => match bytes.get(index + 2) {
                    Some(0xA8) => (b"\\u2028", 3),
                    Some(0xA9) => (b"\\u2029", 3),
                    _ => continue,
                },
                _ => continue,
            };
            // `start` may be past `index` inside an escaped U+2028/9 (its continuation bytes
            // match nothing above, so this is never reached there).
            writer.write_all(&bytes[start..index])?;
            writer.write_all(escape)?;
            start = index + length;
        }
        writer.write_all(&bytes[start..])
    }
}

/// Applies Go's extra string escapes to already-serialized JSON. Safe as a byte rewrite because
/// these characters can only occur inside JSON strings.
pub fn go_escape(json: Vec<u8>) -> Vec<u8> {
    let needs = json.iter().any(|&b| matches!(b, b'<' | b'>' | b'&' | 0xE2));
    if !needs {
        return json;
    }
    let mut out = Vec::with_capacity(json.len() + 32);
    let mut index = 0;
    while index < json.len() {
        let byte = json[index];
        match byte {
            b'<' => out.extend_from_slice(b"\\u003c"),
            b'>' => out.extend_from_slice(b"\\u003e"),
            b'&' => out.extend_from_slice(b"\\u0026"),
            0xE2 if json.get(index + 1) == Some(&0x80)
                && matches!(json.get(index + 2), Some(0xA8) | Some(0xA9)) =>
            {
                let last = if json[index + 2] == 0xA8 { b'8' } else { b'9' };
                out.extend_from_slice(b"\\u202");
                out.push(last);
                index += 2;
            }
            _ => out.push(byte),
        }
        index += 1;
    }
    out
}

/// Decodes the body into a generic JSON object map (empty for a blank body), with the same error
/// texts as [`decode_request`]. For handlers that read a few keys before picking a type.
pub fn decode_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match parse_values(body)? {
        None => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(other) => Err(INVALID_JSON.with_err(format!(
            "json: cannot unmarshal {} into Go value of type struct",
            match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                Value::Bool(_) => "bool",
                _ => "value",
            }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::StreamConfig;

    fn description(result: Result<StreamConfig, ApiError>) -> String {
        let error = result.unwrap_err();
        assert_eq!((error.code, error.err_code), (400, 10025));
        error.description
    }

    #[test]
    fn blank_body_is_zero_request() {
        let config: StreamConfig = decode_request(b"").unwrap();
        assert_eq!(config, StreamConfig::default());
        let config: StreamConfig = decode_request(b"  \n").unwrap();
        assert_eq!(config, StreamConfig::default());
    }

    #[test]
    fn unknown_field_rejected_like_go() {
        let text = description(decode_request(br#"{"name":"A","bogus_field":1}"#));
        assert_eq!(text, r#"invalid JSON: json: unknown field "bogus_field""#);
        let text = description(decode_request(
            br#"{"name":"A","consumer_limits":{"zzz":1}}"#,
        ));
        assert_eq!(text, r#"invalid JSON: json: unknown field "zzz""#);
    }

    #[test]
    fn lenient_mode_ignores_unknown_fields() {
        let config: StreamConfig = decode_request_with(
            br#"{"name":"A","bogus":1,"consumer_limits":{"zzz":1,"max_ack_pending":3}}"#,
            Strictness::Lenient,
        )
        .unwrap();
        assert_eq!(config.name, "A");
        assert_eq!(config.consumer_limits.max_ack_pending, 3);
    }

    #[test]
    fn syntax_errors_like_go() {
        assert_eq!(
            description(decode_request(br#"{"name": "BAD", "subjects": ["bad"]"#)),
            "invalid JSON: unexpected EOF"
        );
        assert_eq!(
            description(decode_request(br#"{"name": "E", nope}"#)),
            "invalid JSON: invalid character 'n' looking for beginning of object key string at offset 15"
        );
    }

    #[test]
    fn type_and_enum_errors() {
        assert_eq!(
            description(decode_request(br#"{"retention":"bogus"}"#)),
            r#"invalid JSON: can not unmarshal "\"bogus\"""#
        );
        assert_eq!(
            description(decode_request(br#"{"max_msgs":"x"}"#)),
            "invalid JSON: json: cannot unmarshal string into Go struct field StreamConfig.max_msgs of type int64"
        );
        assert_eq!(
            description(decode_request(br#"{"max_msgs":1.5}"#)),
            "invalid JSON: json: cannot unmarshal number 1.5 into Go struct field StreamConfig.max_msgs of type int64"
        );
    }

    #[test]
    fn keys_match_case_insensitively_like_go() {
        // nats-server accepted exactly this body (captured).
        let config: StreamConfig =
            decode_request(br#"{"name": "E", "subjects": ["e"], "Max_Msgs": 7, "NAME": "E"}"#)
                .unwrap();
        assert_eq!((config.name.as_str(), config.max_msgs), ("E", 7));
        let config: StreamConfig =
            decode_request(br#"{"NAME":"E","Consumer_Limits":{"MAX_ACK_PENDING":3}}"#).unwrap();
        assert_eq!(config.name, "E");
        assert_eq!(config.consumer_limits.max_ack_pending, 3);
    }

    #[test]
    fn nulls_and_concatenated_values() {
        let config: StreamConfig =
            decode_request(br#"{"name":"E","max_msgs":null} {"max_msgs":3}"#).unwrap();
        assert_eq!((config.name.as_str(), config.max_msgs), ("E", 3));
    }

    #[test]
    fn encodes_with_go_escapes() {
        let bytes = encode_response(&serde_json::json!({"s": "a>b<c&d\u{2028}"}));
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"s":"a\u003eb\u003cc\u0026d\u2028"}"#
        );
    }

    #[test]
    fn one_pass_escapes_match_the_byte_rewrite() {
        let texts = [
            "",
            ">",
            "orders.>",
            "<&>",
            "\u{2028}\u{2029}x\u{2027}\u{2030}",
            "quote \" and \\ and \n then >",
            "\u{e2}\u{2028}\u{20ac}&",
            "plain",
        ];
        for text in texts {
            let value = serde_json::json!({ text: [text, {"k>": text}] });
            let rewritten = go_escape(serde_json::to_vec(&value).unwrap());
            assert_eq!(encode_response(&value), rewritten, "{text:?}");
        }
    }
}
