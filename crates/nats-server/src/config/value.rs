//! The configuration tree's types: [`Value`], [`Entry`] (a value with its place in the file)
//! and [`ConfigError`], and how nats-server's Go code prints a value in its errors. Built by
//! [`super::parser`], read by the modules that map keys to options.

use std::path::PathBuf;

/// A value in the configuration tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    String(String),
    Integer(i64),
    Float(f64),
    Bool(bool),
    Array(Vec<Entry>),
    Map(Vec<(String, Entry)>),
}

/// A value with the place it was written, for `file:line:col: message` errors.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub value: Value,
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    /// Set when the key only served as a `$variable` for other keys: it is then not an
    /// unknown option.
    pub used_as_variable: bool,
}

/// A syntax error, or a semantic error found later, with its position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
    /// A syntax error: shown as nats-server's parser shows it (`Parse error on line 2:
    /// 'Expected value but found new line'`), without file and column.
    pub syntax: bool,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.syntax {
            return write!(
                formatter,
                "Parse error on line {}: '{}'",
                self.line, self.message
            );
        }
        if self.line == 0 {
            // No position: the file itself could not be read (nats-server prints Go's
            // `open <path>: no such file or directory` alone).
            return formatter.write_str(&self.message);
        }
        write!(
            formatter,
            "{}:{}:{}: {}",
            self.file.display(),
            self.line,
            shown_column(self.line, self.column),
            self.message
        )
    }
}

impl std::error::Error for ConfigError {}

/// A column as nats-server shows it in `file:line:column`: its lexer counts from 0 on the
/// first line and from 1 on the others (its line start is the newline before the line); we
/// count from 1 everywhere.
pub(super) fn shown_column(line: usize, column: usize) -> usize {
    if line == 1 {
        column.saturating_sub(1)
    } else {
        column
    }
}

impl Entry {
    pub fn error(&self, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.file.clone(),
            line: self.line,
            column: self.column,
            message: message.into(),
            syntax: false,
        }
    }
}

impl Value {
    /// The values in this one (itself included), counted up to about `limit`.
    pub fn count(&self, limit: usize) -> usize {
        let children: Vec<&Value> = match self {
            Value::Array(entries) => entries.iter().map(|entry| &entry.value).collect(),
            Value::Map(entries) => entries.iter().map(|(_, entry)| &entry.value).collect(),
            _ => return 1,
        };
        let mut count = 1;
        for child in children {
            if count > limit {
                break;
            }
            count += child.count(limit - count);
        }
        count
    }

    /// The Go type nats-server names for a value of the wrong kind (`%T`, or the type in
    /// `interface conversion` panics it reports).
    pub fn go_type_name(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::Integer(_) => "int64",
            Value::Float(_) => "float64",
            Value::Bool(_) => "bool",
            Value::Array(_) => "[]interface {}",
            Value::Map(_) => "map[string]interface {}",
        }
    }

    /// A value as nats-server's `%v` prints it in its errors. Arrays and maps are written as
    /// `[...]` and `map[...]`: Go prints their elements as token pointers, addresses that no
    /// two runs share.
    pub fn go_text(&self) -> String {
        match self {
            Value::String(text) => text.clone(),
            Value::Integer(number) => number.to_string(),
            Value::Float(number) => number.to_string(),
            Value::Bool(flag) => flag.to_string(),
            Value::Array(_) => "[...]".into(),
            Value::Map(_) => "map[...]".into(),
        }
    }
}
