//! A syntax-only JSON scanner that reports the first error the way Go's `encoding/json` scanner
//! words it (`invalid character 'x' looking for beginning of value`), with Go's offset (bytes read
//! including the bad one). serde_json decides *whether* a body is valid; this only runs on bodies
//! it rejected (a caller's JSON library decides validity), to produce Go's text. Values may follow each other (Go's streaming
//! decoder), so a second top-level value is not an error.

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    InString,
    InStringEscape,
    InStringEscapeU(u8),
    Negative,
    Zero,
    Integer,
    Dot,
    DotDigits,
    Exponent,
    ExponentSign,
    ExponentDigits,
    /// Inside `true`/`false`/`null`: the literal and how many bytes matched.
    Literal(&'static [u8], u8),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// The first syntax error as `(Go's context text, offset of the byte after it, the byte)`, or
/// `None` if the scanner finds none (then the caller falls back to a generic text).
pub fn first_error(body: &[u8]) -> Option<(String, usize, u8)> {
    scan(body, false).err()
}

/// Go's `json.Unmarshal` text for a body it refuses as JSON (one value, no offset):
/// `invalid character 'x' looking for beginning of value`, `invalid character 'x' after
/// top-level value`, or `unexpected end of JSON input` for a body that ends inside its value
/// (blank included). `None` when the scanner finds the body well formed.
pub fn unmarshal_error_text(body: &[u8]) -> Option<String> {
    match scan(body, true) {
        Err((context, _, byte)) => {
            Some(format!("invalid character {} {context}", quote_byte(byte)))
        }
        Ok(true) => None,
        Ok(false) => Some("unexpected end of JSON input".to_string()),
    }
}

/// The scanner: the first error, or whether the body ended with its value complete. `single`:
/// one top-level value (Go's `Unmarshal`), anything but blanks after it is an error; otherwise
/// values may follow each other (Go's streaming decoder).
fn scan(body: &[u8], single: bool) -> Result<bool, (String, usize, u8)> {
    let mut state = State::BeginValue;
    let mut stack: Vec<Container> = Vec::new();
    for (index, &byte) in body.iter().enumerate() {
        let fail = |context: &str| Err((context.to_string(), index + 1, byte));
        let is_space = matches!(byte, b' ' | b'\t' | b'\r' | b'\n');
        // Several states hand the byte on to another state; loop until it is consumed.
        loop {
            match state {
                State::BeginValueOrEmpty | State::BeginValue => {
                    if is_space {
                        break;
                    }
                    if state == State::BeginValueOrEmpty && byte == b']' {
                        stack.pop();
                        state = State::EndValue;
                        break;
                    }
                    state = match byte {
                        b'{' => {
                            stack.push(Container::ObjectKey);
                            State::BeginStringOrEmpty
                        }
                        b'[' => {
                            stack.push(Container::ArrayValue);
                            State::BeginValueOrEmpty
                        }
                        b'"' => State::InString,
                        b'-' => State::Negative,
                        b'0' => State::Zero,
                        b'1'..=b'9' => State::Integer,
                        b't' => State::Literal(b"true", 1),
                        b'f' => State::Literal(b"false", 1),
                        b'n' => State::Literal(b"null", 1),
                        _ => return fail("looking for beginning of value"),
                    };
                    break;
                }
                State::BeginStringOrEmpty | State::BeginString => {
                    if is_space {
                        break;
                    }
                    if state == State::BeginStringOrEmpty && byte == b'}' {
                        stack.pop();
                        state = State::EndValue;
                        break;
                    }
                    if byte != b'"' {
                        return fail("looking for beginning of object key string");
                    }
                    state = State::InString;
                    break;
                }
                State::EndValue => {
                    let Some(&top) = stack.last() else {
                        if single {
                            if is_space {
                                break;
                            }
                            return fail("after top-level value");
                        }
                        // A complete top-level value: the streaming decoder starts the next one.
                        state = State::BeginValue;
                        continue;
                    };
                    if is_space {
                        break;
                    }
                    match (top, byte) {
                        (Container::ObjectKey, b':') => {
                            if let Some(top) = stack.last_mut() {
                                *top = Container::ObjectValue;
                            }
                            state = State::BeginValue;
                        }
                        (Container::ObjectKey, _) => return fail("after object key"),
                        (Container::ObjectValue, b',') => {
                            if let Some(top) = stack.last_mut() {
                                *top = Container::ObjectKey;
                            }
                            state = State::BeginString;
                        }
                        (Container::ObjectValue, b'}') | (Container::ArrayValue, b']') => {
                            stack.pop();
                            state = State::EndValue;
                        }
                        (Container::ObjectValue, _) => return fail("after object key:value pair"),
                        (Container::ArrayValue, b',') => state = State::BeginValue,
                        (Container::ArrayValue, _) => return fail("after array element"),
                    }
                    break;
                }
                State::InString => {
                    match byte {
                        b'"' => state = State::EndValue,
                        b'\\' => state = State::InStringEscape,
                        // nats-server v2.15.1 says "in string" here (captured).
                        0..=0x1f => return fail("in string"),
                        _ => {}
                    }
                    break;
                }
                State::InStringEscape => {
                    state = match byte {
                        b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => State::InString,
                        b'u' => State::InStringEscapeU(0),
                        _ => return fail("in string escape code"),
                    };
                    break;
                }
                State::InStringEscapeU(count) => {
                    if !byte.is_ascii_hexdigit() {
                        return fail("in \\u hexadecimal character escape");
                    }
                    state = if count == 3 {
                        State::InString
                    } else {
                        State::InStringEscapeU(count + 1)
                    };
                    break;
                }
                State::Negative => {
                    state = match byte {
                        b'0' => State::Zero,
                        b'1'..=b'9' => State::Integer,
                        _ => return fail("in numeric literal"),
                    };
                    break;
                }
                State::Integer if byte.is_ascii_digit() => break,
                State::Zero | State::Integer => {
                    state = match byte {
                        b'.' => State::Dot,
                        b'e' | b'E' => State::Exponent,
                        _ => {
                            state = State::EndValue;
                            continue;
                        }
                    };
                    break;
                }
                State::Dot => {
                    if !byte.is_ascii_digit() {
                        return fail("after decimal point in numeric literal");
                    }
                    state = State::DotDigits;
                    break;
                }
                State::DotDigits => {
                    if byte.is_ascii_digit() {
                        break;
                    }
                    if matches!(byte, b'e' | b'E') {
                        state = State::Exponent;
                        break;
                    }
                    state = State::EndValue;
                }
                State::Exponent | State::ExponentSign => {
                    if state == State::Exponent && matches!(byte, b'+' | b'-') {
                        state = State::ExponentSign;
                        break;
                    }
                    if !byte.is_ascii_digit() {
                        return fail("in exponent of numeric literal");
                    }
                    state = State::ExponentDigits;
                    break;
                }
                State::ExponentDigits => {
                    if byte.is_ascii_digit() {
                        break;
                    }
                    state = State::EndValue;
                }
                State::Literal(literal, matched) => {
                    let expected = literal[usize::from(matched)];
                    if byte != expected {
                        let word = std::str::from_utf8(literal).unwrap_or("null");
                        return fail(&format!(
                            "in literal {word} (expecting {})",
                            quote_byte(expected)
                        ));
                    }
                    state = if usize::from(matched) + 1 == literal.len() {
                        State::EndValue
                    } else {
                        State::Literal(literal, matched + 1)
                    };
                    break;
                }
            }
        }
    }
    // Go's end of input: a number still being read ends there.
    let complete = matches!(
        state,
        State::EndValue | State::Zero | State::Integer | State::DotDigits | State::ExponentDigits
    );
    Ok(stack.is_empty() && complete)
}

/// Go's name of a JSON value's kind in `encoding/json`'s type errors (`json: cannot unmarshal
/// array into ...`).
pub fn value_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `quoteChar`: `'x'`, `'\''`, `'"'`, and `'\x01'` for control bytes.
pub fn quote_byte(byte: u8) -> String {
    match byte {
        b'\'' => "'\\''".to_string(),
        b'"' => "'\"'".to_string(),
        0x20..=0x7e => format!("'{}'", char::from(byte)),
        _ => format!("'\\x{byte:02x}'"),
    }
}

/// Go's whole text for the first syntax error: `invalid character 'x' looking for beginning of
/// value at offset N`, or `None` when the scanner finds none.
pub fn error_text(body: &[u8]) -> Option<String> {
    first_error(body).map(|(context, offset, byte)| {
        format!(
            "invalid character {} {context} at offset {offset}",
            quote_byte(byte)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(body: &str) -> String {
        let (context, offset, byte) = first_error(body.as_bytes()).unwrap();
        format!(
            "invalid character {} {context} at offset {offset}",
            quote_byte(byte)
        )
    }

    #[test]
    fn go_texts() {
        assert_eq!(
            text(r#"{"name": nope}"#),
            "invalid character 'o' in literal null (expecting 'u') at offset 11"
        );
        assert_eq!(
            text(r#"{"name":"P",}"#),
            "invalid character '}' looking for beginning of object key string at offset 13"
        );
        assert_eq!(
            text(r#"{"name":"P" "x":1}"#),
            "invalid character '\"' after object key:value pair at offset 13"
        );
        assert_eq!(
            text(r#"{"name":"P","subjects":["a" "b"]}"#),
            "invalid character '\"' after array element at offset 29"
        );
        assert_eq!(
            text(r#"{"name":"P"} x"#),
            "invalid character 'x' looking for beginning of value at offset 14"
        );
        assert_eq!(
            text("{\"a\" 1}"),
            "invalid character '1' after object key at offset 6"
        );
        assert_eq!(
            text("[1.x]"),
            "invalid character 'x' after decimal point in numeric literal at offset 4"
        );
        assert_eq!(
            text("[-a]"),
            "invalid character 'a' in numeric literal at offset 3"
        );
        assert_eq!(
            text("[1e+]"),
            "invalid character ']' in exponent of numeric literal at offset 5"
        );
        assert_eq!(
            text(r#"["\q"]"#),
            "invalid character 'q' in string escape code at offset 4"
        );
        assert!(first_error(br#"{"a":[1,2.5e3,-0,true,false,null,"\u00e9"]} {"b":{}}"#).is_none());
    }

    /// Captured from nats-server 2.15.1's answers to `$SYS.REQ.SERVER.PING.HEALTHZ` bodies.
    #[test]
    fn unmarshal_texts() {
        let text = |body: &[u8]| unmarshal_error_text(body);
        assert_eq!(
            text(b"hello").as_deref(),
            Some("invalid character 'h' looking for beginning of value")
        );
        assert_eq!(text(b"{").as_deref(), Some("unexpected end of JSON input"));
        assert_eq!(text(b" ").as_deref(), Some("unexpected end of JSON input"));
        assert_eq!(
            text(b"{}{}").as_deref(),
            Some("invalid character '{' after top-level value")
        );
        assert_eq!(
            text(b"{} x").as_deref(),
            Some("invalid character 'x' after top-level value")
        );
        assert_eq!(
            text(b"\xff").as_deref(),
            Some("invalid character '\\xff' looking for beginning of value")
        );
        for body in [&b"null"[..], b"5", b" [1] ", b"{\"a\":-1.5e3}\n", b"0"] {
            assert_eq!(text(body), None, "{body:?}");
        }
    }
}
