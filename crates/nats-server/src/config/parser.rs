//! The nats-server configuration syntax, turned into a tree of [`Entry`] values.
//!
//! Accepted: `key: value`, `key = value`, `key value`; `{}` maps; `[]` arrays; `#` and `//`
//! comments; `;`/`,` separators; quoted strings (across lines too, `\xHH` escapes), bare
//! strings and `(` ... `)` blocks (a `)` alone on its line ends them); integers with size suffixes
//! (`512M` = 512000000, `1GB` = 1073741824, as nats-server reads them); floats; booleans
//! (`true/false/yes/no/on/off`); `$NAME` references to an earlier key in an enclosing scope or
//! to an environment variable; `include <path>` relative to the including file.
//! Syntax errors carry the wording of nats-server's lexer (`conf/lex.go`).
//! This module knows nothing about what the keys mean (that is `options.rs`).

use super::value::{shown_column, ConfigError, Entry, Value};
use std::path::{Path, PathBuf};

/// Parse a configuration file (and its includes) into the top-level map.
pub fn parse_file(path: &Path) -> Result<Vec<(String, Entry)>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("open {}: {}", path.display(), go_compat::errno_text(&error)),
        syntax: false,
    })?;
    let mut scopes = Vec::new();
    parse_into(&text, path, &mut scopes, 0)
}

/// Parse configuration text that came from `file` (used for positions and includes).
pub fn parse_str(text: &str, file: &Path) -> Result<Vec<(String, Entry)>, ConfigError> {
    let mut scopes = Vec::new();
    parse_into(text, file, &mut scopes, 0)
}

const MAX_INCLUDE_DEPTH: usize = 16;

/// Where a value is read: nats-server's lexer differs per place (a new line before a value
/// is an error at the top level, skipped in a map; what may follow a value).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Top,
    Map,
    Array,
}

/// A rune as nats-server's lexer prints it in an error: a new line escaped, end of input as
/// the NUL rune Go's lexer uses for it.
fn shown(character: Option<char>) -> String {
    match character {
        None => "\0".to_string(),
        Some('\n') => "\\n".to_string(),
        Some(character) => character.to_string(),
    }
}

/// Go's `filepath.Join`: the joined path cleaned lexically (`.` dropped, `..` folded), as
/// nats-server names an include file in its errors.
fn join_clean(base: &Path, name: &str) -> PathBuf {
    let joined = if name.starts_with('/') || base.as_os_str().is_empty() {
        name.to_string()
    } else {
        format!("{}/{name}", base.display())
    };
    let rooted = joined.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|last| *last != "..") => {
                parts.pop();
            }
            ".." if rooted => {}
            part => parts.push(part),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => PathBuf::from(format!("/{body}")),
        (false, true) => PathBuf::from("."),
        (false, false) => PathBuf::from(body),
    }
}

fn parse_into(
    text: &str,
    file: &Path,
    scopes: &mut Vec<Vec<(String, Entry)>>,
    depth: usize,
) -> Result<Vec<(String, Entry)>, ConfigError> {
    let mut parser = Parser {
        chars: text.chars().collect(),
        position: 0,
        line: 1,
        column: 1,
        file: file.to_path_buf(),
        scopes: std::mem::take(scopes),
        depth,
        expanded: 0,
    };
    let result = parser.parse_map_body(None);
    *scopes = std::mem::take(&mut parser.scopes);
    result
}

struct Parser {
    chars: Vec<char>,
    position: usize,
    line: usize,
    column: usize,
    file: PathBuf,
    /// Enclosing maps (outermost first) for `$variable` lookups.
    scopes: Vec<Vec<(String, Entry)>>,
    depth: usize,
    /// Values copied by `$variable` references so far (see [`MAX_EXPANDED`]).
    expanded: usize,
}

/// How many values `$variable` references may copy in one file. Each reference copies its
/// value (nats-server shares it), so references to references grow exponentially: ten lines
/// of ten references each would take gigabytes. Far above any real config.
const MAX_EXPANDED: usize = 1_000_000;

fn is_bare_terminator(character: char) -> bool {
    character.is_whitespace()
        || matches!(
            character,
            ',' | ';' | '}' | ']' | '#' | '[' | '{' | '"' | '\''
        )
}

fn is_key_terminator(character: char) -> bool {
    character.is_whitespace() || matches!(character, ':' | '=' | '{' | '[' | '#' | ',' | ';')
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.position).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.position + offset).copied()
    }

    fn advance(&mut self) -> Option<char> {
        let character = self.chars.get(self.position).copied()?;
        self.position += 1;
        if character == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(character)
    }

    fn error(&self, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.file.clone(),
            line: self.line,
            column: self.column,
            message: message.into(),
            syntax: true,
        }
    }

    fn at_comment(&self) -> bool {
        self.peek() == Some('#') || (self.peek() == Some('/') && self.peek_at(1) == Some('/'))
    }

    fn skip_comment(&mut self) {
        while let Some(character) = self.peek() {
            if character == '\n' {
                break;
            }
            self.advance();
        }
    }

    /// Skip spaces, newlines, comments and item separators.
    fn skip_blank(&mut self, separators: bool) {
        loop {
            match self.peek() {
                Some(character) if character.is_whitespace() => {
                    self.advance();
                }
                Some(',' | ';') if separators => {
                    self.advance();
                }
                Some(_) if self.at_comment() => self.skip_comment(),
                _ => break,
            }
        }
    }

    fn skip_inline_space(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\r')) {
            self.advance();
        }
    }

    /// Parse `key value` pairs until `closing` (or end of input when `None`).
    fn parse_map_body(
        &mut self,
        closing: Option<char>,
    ) -> Result<Vec<(String, Entry)>, ConfigError> {
        self.scopes.push(Vec::new());
        let result = self.parse_map_items(closing, closing.is_none());
        let items = self.scopes.pop().unwrap_or_default();
        result.map(|()| items)
    }

    fn current_scope(&mut self) -> &mut Vec<(String, Entry)> {
        if self.scopes.is_empty() {
            self.scopes.push(Vec::new());
        }
        let last = self.scopes.len() - 1;
        &mut self.scopes[last]
    }

    /// `top`: the file's top level, where nats-server also takes `{ ... }` around the items
    /// (a JSON-style file); their items belong to the top-level map.
    fn parse_map_items(&mut self, closing: Option<char>, top: bool) -> Result<(), ConfigError> {
        let place = if top { Place::Top } else { Place::Map };
        loop {
            // nats-server takes one separator after each value (`expect_item_end`); a second
            // one starts a key (`;port` is an unknown field `;port`).
            self.skip_blank(false);
            if top && self.peek() == Some('{') {
                self.advance();
                self.parse_map_items(Some('}'), true)?;
                continue;
            }
            match (self.peek(), closing) {
                (None, None) => return Ok(()),
                // A JSON-style file's `{` may be left open at the end, as nats-server's lexer
                // allows after a new line or separator.
                (None, Some(_)) if top => return Ok(()),
                (None, Some(_)) => return Err(self.error("Unexpected EOF processing map.")),
                (Some(character), Some(expected)) if character == expected => {
                    self.advance();
                    return Ok(());
                }
                // A stray `}` at the top level ends nothing and is skipped, as nats-server's
                // lexer takes it as a top-level value terminator.
                (Some('}'), None) => {
                    self.advance();
                    continue;
                }
                _ => {}
            }
            let (line, mut column) = (self.line, self.column);
            // nats-server places a quoted key after its opening quote.
            if matches!(self.peek(), Some('"' | '\'')) {
                column += 1;
            }
            let key = self.parse_key(place)?;
            if key.eq_ignore_ascii_case("include")
                && matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r'))
            {
                self.skip_inline_space();
                if !matches!(self.peek(), Some(':' | '=')) {
                    self.parse_include()?;
                    self.expect_item_end(closing, place)?;
                    continue;
                }
            }
            // Blank lines may separate a key from its separator or value (`websocket` then
            // `{` on the next line), as in nats-server's lexer; not a separator from its value
            // at the top level (in a map they may).
            while self.peek().is_some_and(char::is_whitespace) {
                self.advance();
            }
            if self.peek().is_none() && place == Place::Top {
                // nats-server's wording for a key without a value at the end of the file.
                return Err(ConfigError {
                    file: self.file.clone(),
                    line: 0,
                    column: 0,
                    message: format!(
                        "config is invalid ({}:{}:{})",
                        self.file.display(),
                        self.line,
                        shown_column(self.line, self.column)
                    ),
                    syntax: false,
                });
            }
            if matches!(self.peek(), Some(':' | '=')) {
                self.advance();
            }
            if place == Place::Map {
                while self.peek().is_some_and(char::is_whitespace) {
                    self.advance();
                }
            } else {
                self.skip_inline_space();
            }
            let value = self.parse_value(place)?;
            let entry = Entry {
                value,
                file: self.file.clone(),
                line,
                column,
                used_as_variable: false,
            };
            let scope = self.current_scope();
            if let Some(existing) = scope.iter_mut().find(|(name, _)| *name == key) {
                existing.1 = entry;
            } else {
                scope.push((key, entry));
            }
            self.expect_item_end(closing, place)?;
        }
    }

    /// After a value: spaces, then a new line, separator, comment, the closing brace or EOF.
    /// In a map the separator is taken here (nats-server's `lexMapValueEnd`).
    ///
    /// A `/` that does not start a `//` comment is taken as a terminator, as nats-server's
    /// lexer does: in a map the next key follows; at the top level what follows it must end
    /// the value (its error names the character after the `/`).
    fn expect_item_end(&mut self, closing: Option<char>, place: Place) -> Result<(), ConfigError> {
        self.skip_inline_space();
        // Inside a JSON-style file's `{ ... }`, nats-server's "block-level" wording.
        let level = if closing.is_some() { "block" } else { "top" };
        match self.peek() {
            Some(',' | ';') => {
                self.advance();
                Ok(())
            }
            Some('\n') => Ok(()),
            None if place == Place::Top && closing.is_none() => Ok(()),
            Some(character) if Some(character) == closing => Ok(()),
            Some('}') if place == Place::Top => Ok(()),
            Some(_) if self.at_comment() => Ok(()),
            Some('/') => {
                self.advance();
                match place {
                    Place::Top => self.expect_item_end(closing, place),
                    _ => Ok(()),
                }
            }
            found if place == Place::Top => Err(self.error(format!(
                "Expected a {level}-level value to end with a new line, comment or EOF, but got '{}' instead.",
                shown(found)
            ))),
            found => Err(self.error(format!(
                "Expected a map value terminator \",\" or a map terminator \"}}\", but got '{}' instead.",
                shown(found)
            ))),
        }
    }

    fn parse_key(&mut self, place: Place) -> Result<String, ConfigError> {
        match self.peek() {
            Some(quote @ ('"' | '\'')) => {
                self.advance();
                self.parse_quoted_key(quote)
            }
            Some(separator @ (':' | '=')) => Err(self.error(if place == Place::Top {
                format!("Unexpected key separator '{separator}'")
            } else {
                format!("Unexpected key separator '{separator}'.")
            })),
            Some(']') if place == Place::Map => {
                Err(self.error("Unexpected array end ']' processing map."))
            }
            // A lone `/` where a key starts: nats-server's lexer reads it as a cut-off
            // comment.
            Some('/') if place == Place::Top => {
                self.advance();
                Err(self.error("Unexpected EOF."))
            }
            _ => {
                let mut key = String::new();
                // A separator where a key starts belongs to the key in nats-server's lexer.
                if let Some(separator @ (';' | ',')) = self.peek() {
                    key.push(separator);
                    self.advance();
                }
                while let Some(character) = self.peek() {
                    if is_key_terminator(character) {
                        break;
                    }
                    key.push(character);
                    self.advance();
                }
                if key.is_empty() {
                    let found = self.peek().map(String::from).unwrap_or_default();
                    return Err(self.error(format!("expected a key, found '{found}'")));
                }
                Ok(key)
            }
        }
    }

    /// A quoted key: its text as written (nats-server reads no escapes in keys).
    fn parse_quoted_key(&mut self, quote: char) -> Result<String, ConfigError> {
        let mut key = String::new();
        loop {
            match self.advance() {
                None => return Err(self.error("Unexpected EOF.")),
                Some(character) if character == quote => return Ok(key),
                Some(character) => key.push(character),
            }
        }
    }

    fn parse_include(&mut self) -> Result<(), ConfigError> {
        let refused = match self.peek() {
            Some('[') => Some("start of an array"),
            Some('{') => Some("start of a map"),
            Some('(') => Some("start of a block"),
            Some('0'..='9' | '-') => Some("start of a number"),
            Some('\\') => Some("escape sequence"),
            Some('\n' | '\r') => Some("new line"),
            _ => None,
        };
        if let Some(found) = refused {
            self.advance();
            return Err(self.error(format!("Expected include value but found {found}")));
        }
        let name = match self.peek() {
            Some(quote @ ('"' | '\'')) => {
                self.advance();
                self.parse_quoted_key(quote)?
            }
            _ => self.parse_bare(),
        };
        if self.depth >= MAX_INCLUDE_DEPTH {
            return Err(self.error("includes nested too deeply"));
        }
        let base = self.file.parent().unwrap_or_else(|| Path::new("."));
        let path = join_clean(base, &name);
        // nats-server shows this one without a position.
        let text = std::fs::read_to_string(&path).map_err(|error| ConfigError {
            file: self.file.clone(),
            line: 0,
            column: 0,
            message: format!(
                "error parsing include file '{name}', open {}: {}",
                path.display(),
                go_compat::errno_text(&error)
            ),
            syntax: false,
        })?;
        // The included items land in the current map, with their own file positions.
        let mut scopes = std::mem::take(&mut self.scopes);
        let included = parse_into(&text, &path, &mut scopes, self.depth + 1)?;
        self.scopes = scopes;
        let scope = self.current_scope();
        for (key, entry) in included {
            if let Some(existing) = scope.iter_mut().find(|(name, _)| *name == key) {
                existing.1 = entry;
            } else {
                scope.push((key, entry));
            }
        }
        Ok(())
    }

    fn parse_value(&mut self, place: Place) -> Result<Value, ConfigError> {
        match self.peek() {
            Some('{') => {
                self.advance();
                Ok(Value::Map(self.parse_map_body(Some('}'))?))
            }
            Some('[') => {
                self.advance();
                self.parse_array()
            }
            Some('(') => {
                self.advance();
                self.parse_block()
            }
            Some(quote @ ('"' | '\'')) => {
                self.advance();
                Ok(Value::String(self.parse_quoted(quote)?))
            }
            Some('\n' | '\r') if place != Place::Map => {
                // nats-server counts the new line it found (the error is on the next line).
                self.advance();
                Err(self.error("Expected value but found new line"))
            }
            Some(',') if place == Place::Map => {
                self.advance();
                Err(self.error("Unexpected map value terminator \",\"."))
            }
            Some('.') => {
                self.advance();
                Err(self.error("Floats must start with a digit"))
            }
            _ => {
                let line = self.line;
                self.check_number_start()?;
                // An empty value (the end of input or a terminator right away) is an empty
                // string to nats-server; what follows is then checked as the value's end.
                let token = self.parse_bare();
                self.classify_bare(&token, line)
            }
        }
    }

    /// nats-server's lexer errors for a malformed number: a `-` without a digit, a `.`
    /// without a digit after it (an IP address has one).
    fn check_number_start(&mut self) -> Result<(), ConfigError> {
        let mut offset = 0;
        if self.peek() == Some('-') {
            offset = 1;
            match self.peek_at(1) {
                Some('0'..='9') => {}
                Some('.') => {
                    self.advance();
                    self.advance();
                    return Err(self.error("Floats must start with a digit, not '.'."));
                }
                found => {
                    self.advance();
                    if found.is_some() {
                        self.advance();
                    }
                    return Err(self.error(format!("Expected a digit but got '{}'.", shown(found))));
                }
            }
        }
        if !self.peek_at(offset).is_some_and(|c| c.is_ascii_digit()) {
            return Ok(());
        }
        while self.peek_at(offset).is_some_and(|c| c.is_ascii_digit()) {
            offset += 1;
        }
        if self.peek_at(offset) == Some('.')
            && !self.peek_at(offset + 1).is_some_and(|c| c.is_ascii_digit())
        {
            let found = self.peek_at(offset + 1);
            for _ in 0..offset + 2 {
                self.advance();
            }
            return Err(self.error(format!(
                "Floats must have a digit after the '.', but got '{}' instead.",
                shown(found)
            )));
        }
        Ok(())
    }

    /// A `(` ... `)` block: the text up to a `)` alone on its line (nats-server's
    /// `lexBlock`), without the new line before it.
    fn parse_block(&mut self) -> Result<Value, ConfigError> {
        let mut text = String::new();
        loop {
            match self.advance() {
                None => return Err(self.error("Unexpected EOF.")),
                Some(')') if text.ends_with('\n') && matches!(self.peek(), None | Some('\n')) => {
                    text.pop();
                    return Ok(Value::String(text));
                }
                Some(character) => text.push(character),
            }
        }
    }

    fn parse_array(&mut self) -> Result<Value, ConfigError> {
        let mut items = Vec::new();
        loop {
            self.skip_blank(false);
            match self.peek() {
                Some(']') => {
                    self.advance();
                    return Ok(Value::Array(items));
                }
                Some(',') => {
                    self.advance();
                    return Err(self.error("Unexpected array value terminator ','."));
                }
                _ => {}
            }
            let (line, column) = (self.line, self.column);
            let value = self.parse_value(Place::Array)?;
            items.push(Entry {
                value,
                file: self.file.clone(),
                line,
                column,
                used_as_variable: false,
            });
            self.skip_inline_space();
            match self.peek() {
                // A `/` that starts no comment ends the element (nats-server's lexer).
                Some(',' | '\n') => {
                    self.advance();
                }
                Some('/') if !self.at_comment() => {
                    self.advance();
                }
                Some(']') => {}
                Some(_) if self.at_comment() => {}
                found => {
                    if found.is_some() {
                        self.advance();
                    }
                    return Err(self.error(format!(
                        "Expected an array value terminator \",\" or an array terminator \"]\", but got '{}' instead.",
                        shown(found)
                    )));
                }
            }
        }
    }

    /// A quoted value: single quotes take the text as written, double quotes read nats-server's
    /// escapes (`\t \n \r \" \\ \xHH`). Both may span lines.
    fn parse_quoted(&mut self, quote: char) -> Result<String, ConfigError> {
        let mut bytes = Vec::new();
        loop {
            match self.advance() {
                None => return Err(self.error("Unexpected EOF.")),
                Some(character) if character == quote => {
                    return Ok(String::from_utf8_lossy(&bytes).into_owned())
                }
                Some('\\') if quote == '"' => match self.advance() {
                    Some('n') => bytes.push(b'\n'),
                    Some('t') => bytes.push(b'\t'),
                    Some('r') => bytes.push(b'\r'),
                    Some('\\') => bytes.push(b'\\'),
                    Some('"') => bytes.push(b'"'),
                    Some('x') => bytes.push(self.hex_byte()?),
                    other => {
                        return Err(self.error(format!(
                            "Invalid escape character '{}'. Only the following escape characters are allowed: \\xXX, \\t, \\n, \\r, \\\", \\\\.",
                            shown(other)
                        )))
                    }
                },
                Some(character) => {
                    let mut buffer = [0; 4];
                    bytes.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
                }
            }
        }
    }

    /// The two hexadecimal digits after `\x`.
    fn hex_byte(&mut self) -> Result<u8, ConfigError> {
        let mut digits = String::new();
        for _ in 0..2 {
            match self.advance() {
                Some('\n' | '\r') => {
                    return Err(self
                        .error("Expected two hexadecimal digits after '\\x', but hit end of line"))
                }
                Some(character) => digits.push(character),
                None => {}
            }
        }
        u8::from_str_radix(&digits, 16)
            .ok()
            .filter(|_| digits.len() == 2 && digits.chars().all(|c| c.is_ascii_hexdigit()))
            .ok_or_else(|| {
                self.error(format!(
                    "Expected two hexadecimal digits after '\\x', but got '{digits}'"
                ))
            })
    }

    fn parse_bare(&mut self) -> String {
        let mut token = String::new();
        while let Some(character) = self.peek() {
            if is_bare_terminator(character)
                || (character == '/' && self.peek_at(1) == Some('/') && !token.ends_with(':'))
            {
                break;
            }
            token.push(character);
            self.advance();
        }
        token
    }

    fn classify_bare(&mut self, token: &str, line: usize) -> Result<Value, ConfigError> {
        if let Some(name) = token.strip_prefix('$') {
            return self.resolve_variable(name, line);
        }
        match token.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" => return Ok(Value::Bool(true)),
            "false" | "no" | "off" => return Ok(Value::Bool(false)),
            _ => {}
        }
        if let Some(number) = parse_number(token) {
            // nats-server shows a number out of range without a position.
            return number.map_err(|message| ConfigError {
                file: self.file.clone(),
                line: 0,
                column: 0,
                message,
                syntax: false,
            });
        }
        Ok(Value::String(token.to_string()))
    }

    fn resolve_variable(&mut self, name: &str, line: usize) -> Result<Value, ConfigError> {
        for scope in self.scopes.iter_mut().rev() {
            if let Some((_, entry)) = scope.iter_mut().find(|(key, _)| key == name) {
                entry.used_as_variable = true;
                let budget = MAX_EXPANDED.saturating_sub(self.expanded);
                self.expanded += entry.value.count(budget);
                if self.expanded > MAX_EXPANDED {
                    return Err(ConfigError {
                        file: self.file.clone(),
                        line: 0,
                        column: 0,
                        message: format!(
                            "variable reference for '{name}' on line {line} expands the \
                             configuration past {MAX_EXPANDED} values"
                        ),
                        syntax: false,
                    });
                }
                return Ok(entry.value.clone());
            }
        }
        if let Ok(text) = std::env::var(name) {
            // Environment values are parsed like a bare value, so `$PORT` can be a number.
            let mut inner = Parser {
                chars: text.chars().collect(),
                position: 0,
                line,
                column: 1,
                file: self.file.clone(),
                scopes: Vec::new(),
                depth: self.depth,
                expanded: 0,
            };
            if let Ok(value) = inner.parse_value(Place::Top) {
                inner.skip_blank(true);
                if inner.peek().is_none() {
                    return Ok(value);
                }
            }
            return Ok(Value::String(text));
        }
        // nats-server reports this one from its parser: no position, no "Parse error".
        Err(ConfigError {
            file: self.file.clone(),
            line: 0,
            column: 0,
            message: format!("variable reference for '{name}' on line {line} can not be found"),
            syntax: false,
        })
    }
}

/// `Some(Ok)` for a number (with an optional size suffix), `Some(Err)` for a number with a
/// bad suffix, `None` when the token is not numeric at all (then it is a string).
fn parse_number(token: &str) -> Option<Result<Value, String>> {
    let bytes = token.as_bytes();
    let digits_start = usize::from(bytes.first() == Some(&b'-'));
    let digits_end = bytes[digits_start..]
        .iter()
        .position(|byte| !byte.is_ascii_digit())
        .map_or(bytes.len(), |offset| digits_start + offset);
    if digits_end == digits_start {
        return None;
    }
    let (number, rest) = token.split_at(digits_end);
    if rest.starts_with('.') {
        // A float, or something like an IP address (a string).
        return token
            .parse::<f64>()
            .ok()
            .map(|float| Ok(Value::Float(float)));
    }
    if rest.contains(|character: char| !character.is_ascii_alphabetic()) {
        return None;
    }
    // `10s`, `2m30s`... are durations written bare: not a size suffix, so a string.
    let multiplier = go_compat::size::suffix_multiplier(rest)?;
    let out_of_range = || format!("integer '{token}' is out of the range");
    let Ok(parsed) = number.parse::<i64>() else {
        return Some(Err(out_of_range()));
    };
    Some(
        parsed
            .checked_mul(multiplier)
            .map(Value::Integer)
            .ok_or_else(out_of_range),
    )
}
