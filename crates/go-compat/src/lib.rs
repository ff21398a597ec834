//! Go's text formats as nats-server reads and writes them, one copy for the workspace:
//! durations ([`duration`], `time.ParseDuration` and `time.Duration.String()`), byte sizes
//! ([`size`], the config lexer's `1KB`/`1k` suffixes and `getStorageSize`'s `"1G"`), times
//! ([`time_text`], `time.RFC3339Nano`) and `encoding/json`'s syntax-error wording
//! ([`json_syntax`]).
//!
//! Called by the config reader and monitoring of `nats-server`, by `jetstream-api` (timestamps,
//! durations, JSON errors), JetStream's headers and the CLI. A leaf: it knows nothing about NATS,
//! only about how Go prints and parses these values.

pub mod duration;
pub mod json_syntax;
pub mod size;
pub mod time_text;

/// Go's text for an OS error (`syscall.Errno.Error()`): the C library's message with its
/// first letter in lower case and without Rust's ` (os error N)` (`address already in use`,
/// `no such process`, `not a directory`). Other errors keep their own text.
pub fn errno_text(error: &std::io::Error) -> String {
    let text = error.to_string();
    let Some(code) = error.raw_os_error() else {
        return text;
    };
    let message = text
        .strip_suffix(&format!(" (os error {code})"))
        .unwrap_or(&text);
    let mut characters = message.chars();
    match characters.next() {
        Some(first) => first.to_lowercase().chain(characters).collect(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn errno_texts_as_go_prints_them() {
        let text = |code| super::errno_text(&std::io::Error::from_raw_os_error(code));
        // Linux errno values.
        assert_eq!(text(98), "address already in use");
        assert_eq!(text(3), "no such process");
        assert_eq!(text(20), "not a directory");
        assert_eq!(text(13), "permission denied");
        assert_eq!(text(99), "cannot assign requested address");
        let other = std::io::Error::other("plain");
        assert_eq!(super::errno_text(&other), "plain");
    }
}
