//! `ApiError`, the `{"code","err_code","description"}` object carried in every failed `$JS.API`
//! response and error PubAck, and `ErrorEntry`, one row of the generated error table
//! ([`crate::errors`]). Handlers build errors from table rows only, so codes and texts never drift
//! from nats-server's.

use serde::{Deserialize, Serialize};

use crate::errors_generated::ALL;

/// One row of nats-server's `errors.json`: the HTTP-like `code`, the JetStream `err_code` and the
/// description template, whose `{name}` placeholders are filled by [`ErrorEntry::with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorEntry {
    /// The Go constant name (e.g. `JSStreamNotFoundErr`), kept for tracing and docs.
    pub name: &'static str,
    pub code: u16,
    pub err_code: u16,
    pub description: &'static str,
}

impl ErrorEntry {
    /// The error with its description as written in the table (placeholders left as they are,
    /// which is right for entries that have none).
    pub fn to_error(&self) -> ApiError {
        ApiError {
            code: self.code,
            err_code: self.err_code,
            description: self.description.to_string(),
        }
    }

    /// The error with `{key}` placeholders replaced by their values, in one left-to-right pass
    /// (a value containing `{x}` is not expanded again), as Go's `strings.Replacer` does.
    /// Unknown placeholders stay verbatim.
    ///
    /// ```
    /// use jetstream_api::errors;
    /// let error = errors::STREAM_WRONG_LAST_SEQUENCE.with(&[("seq", &2)]);
    /// assert_eq!(error.description, "wrong last sequence: 2");
    /// ```
    pub fn with(&self, arguments: &[(&str, &dyn std::fmt::Display)]) -> ApiError {
        ApiError {
            code: self.code,
            err_code: self.err_code,
            description: fill_template(self.description, arguments),
        }
    }

    /// Shorthand for the many `{err}`-only entries.
    pub fn with_err(&self, err: impl std::fmt::Display) -> ApiError {
        self.with(&[("err", &err)])
    }

    /// The placeholder names in the description, in order of appearance.
    pub fn placeholders(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        let mut rest = self.description;
        while let Some(open) = rest.find('{') {
            let after = &rest[open + 1..];
            match after.find('}') {
                Some(close) if is_placeholder_name(&after[..close]) => {
                    names.push(&after[..close]);
                    rest = &after[close + 1..];
                }
                _ => rest = after,
            }
        }
        names
    }
}

fn is_placeholder_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn fill_template(template: &str, arguments: &[(&str, &dyn std::fmt::Display)]) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let replaced = after.find('}').and_then(|close| {
            let key = &after[..close];
            arguments
                .iter()
                .find(|(name, _)| *name == key)
                .map(|(_, value)| (close, value.to_string()))
        });
        match replaced {
            Some((close, value)) => {
                out.push_str(&value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The row with this `err_code`, if nats-server defines one.
pub fn lookup(err_code: u16) -> Option<&'static ErrorEntry> {
    ALL.binary_search_by_key(&err_code, |entry| entry.err_code)
        .ok()
        .map(|index| &ALL[index])
}

/// The error object of a failed API response: `{"code":404,"err_code":10059,"description":"stream
/// not found"}`. `err_code` and `description` are omitted when zero/empty, as in Go.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ApiError {
    pub code: u16,
    #[serde(default, skip_serializing_if = "is_zero_u16")]
    pub err_code: u16,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

fn is_zero_u16(value: &u16) -> bool {
    *value == 0
}

impl ApiError {
    /// Whether this error came from (or is) the given table row.
    pub fn is(&self, entry: &ErrorEntry) -> bool {
        self.err_code == entry.err_code
    }
}

impl From<&ErrorEntry> for ApiError {
    fn from(entry: &ErrorEntry) -> Self {
        entry.to_error()
    }
}

impl From<ErrorEntry> for ApiError {
    fn from(entry: ErrorEntry) -> Self {
        entry.to_error()
    }
}

impl std::fmt::Display for ApiError {
    /// Go's `ApiError.Error()`: `"<description> (<err_code>)"`.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{} ({})", self.description, self.err_code)
    }
}

impl std::error::Error for ApiError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors;

    #[test]
    fn fill_replaces_known_placeholders_once() {
        let error = errors::STREAM_EXTERNAL_DEL_PREFIX_OVERLAPS
            .with(&[("prefix", &"{subject}"), ("subject", &"foo.>")]);
        assert_eq!(
            error.description,
            "stream external delivery prefix {subject} overlaps with stream subject foo.>"
        );
    }

    #[test]
    fn unknown_placeholders_stay() {
        assert_eq!(fill_template("a {x} {y", &[("y", &1)]), "a {x} {y");
    }

    #[test]
    fn placeholders_listed() {
        assert_eq!(
            errors::STREAM_EXTERNAL_DEL_PREFIX_OVERLAPS.placeholders(),
            vec!["prefix", "subject"]
        );
        assert!(errors::STREAM_NOT_FOUND.placeholders().is_empty());
    }
}
