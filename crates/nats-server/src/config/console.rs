//! `console { user, password }`: rnats's own option (nats-server has no web console; see
//! docs/parity.md). Without it the console on the monitoring port is open to all and shows
//! message contents only when that port listens on a loopback address; with it, the console's
//! page and JSON answer only requests carrying these credentials (HTTP basic authentication),
//! and those requests see message contents wherever the port listens. nats-server's own
//! monitoring endpoints are never behind it.
//!
//! Parsed here; checked by `monitor/console.rs` on each request (a reload takes a new one).

use super::options::{string, Options};
use super::value::{ConfigError, Entry, Value};

/// The console's user; `password` is plain text or a bcrypt hash, as user passwords are.
#[derive(Clone, Debug, PartialEq)]
pub struct ConsoleOptions {
    pub user: String,
    pub password: String,
}

pub(super) fn apply_console(options: &mut Options, entry: &Entry) -> Result<(), ConfigError> {
    let Value::Map(items) = &entry.value else {
        return Err(entry.error(format!(
            "Expected console to be a map, got {}",
            entry.value.go_type_name()
        )));
    };
    let (mut user, mut password) = (None, None);
    for (key, item) in items {
        match key.to_ascii_lowercase().as_str() {
            "user" | "username" => user = Some(string(item)?),
            "password" | "pass" => password = Some(string(item)?),
            _ => return Err(item.error(format!("unknown field \"{key}\""))),
        }
    }
    match (user, password) {
        (Some(user), Some(password)) if !user.is_empty() && !password.is_empty() => {
            options.console = Some(ConsoleOptions { user, password });
            Ok(())
        }
        _ => Err(entry.error("console requires both a user and a password")),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Options;

    fn parse(text: &str) -> Result<Options, String> {
        let mut options = Options::default();
        let items = crate::config::parser::parse_str(text, std::path::Path::new("test.conf"))
            .map_err(|error| error.to_string())?;
        crate::config::options::apply_items(&mut options, &items)
            .map_err(|error| error.to_string())?;
        Ok(options)
    }

    #[test]
    fn console_takes_a_user_and_a_password() {
        let options = parse("console { user: admin, password: s3cret }").expect("parses");
        let console = options.console.expect("console");
        assert_eq!(
            (console.user.as_str(), console.password.as_str()),
            ("admin", "s3cret")
        );
        let refused = parse("console { user: admin }").unwrap_err();
        assert!(
            refused.contains("console requires both a user and a password"),
            "{refused}"
        );
        let refused = parse("console { user: admin, password: p, role: x }").unwrap_err();
        assert!(refused.contains("unknown field \"role\""), "{refused}");
    }
}
