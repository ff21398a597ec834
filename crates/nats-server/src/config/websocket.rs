//! The `websocket { ... }` block: where WebSocket clients connect, TLS (required unless
//! `no_tls: true`), origin checks, compression, the handshake timeout, the websocket-only
//! authorization override and the cookies that may carry credentials. Keys, defaults and
//! refusals are nats-server's (`parseWebsocket`, `validateWebsocketOptions`).

use super::options::{boolean, integer, map, string, string_list, Options};
use super::value::{ConfigError, Entry, Value};
use super::TlsOptions;
use std::time::Duration;

/// Everything of `websocket { }`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WebsocketOptions {
    /// Empty: nats-server's default host (`0.0.0.0`).
    pub host: String,
    /// 0: no websocket listener; -1: a random port.
    pub port: i64,
    pub advertise: Option<String>,
    pub no_tls: bool,
    pub tls: Option<TlsOptions>,
    /// The Origin header must name this server (scheme, host and port).
    pub same_origin: bool,
    /// The Origin header must be one of these (`scheme://host[:port]`).
    pub allowed_origins: Vec<String>,
    pub compression: bool,
    /// 0: no limit set (see `websocket::DEFAULT_HANDSHAKE_TIMEOUT`).
    pub handshake_timeout: Duration,
    /// `authorization { }`: overrides the server's for websocket clients.
    pub username: Option<String>,
    pub password: Option<String>,
    pub token: Option<String>,
    pub auth_timeout: Option<Duration>,
    pub no_auth_user: Option<String>,
    pub jwt_cookie: Option<String>,
    pub user_cookie: Option<String>,
    pub pass_cookie: Option<String>,
    pub token_cookie: Option<String>,
    /// Extra headers of the upgrade response, in config order.
    pub headers: Vec<(String, String)>,
    pub ping_interval: Option<Duration>,
}

impl WebsocketOptions {
    /// The host to bind (nats-server's default when none was given).
    pub fn listen_host(&self) -> &str {
        if self.host.is_empty() {
            "0.0.0.0"
        } else {
            &self.host
        }
    }

    /// An authorization override (nats-server's `authOverride`): websocket clients then
    /// authenticate with these instead of the server's single user or token.
    pub fn auth_override(&self) -> bool {
        self.username.is_some() || self.token.is_some() || self.no_auth_user.is_some()
    }

    /// `ping_interval` when set and not zero: it replaces the server's for websocket clients
    /// (nats-server's `setPingTimer`).
    pub fn ping_interval_override(&self) -> Option<Duration> {
        self.ping_interval.filter(|interval| !interval.is_zero())
    }

    /// `authorization { timeout }` when set and not zero: it replaces the server's
    /// authentication timeout for websocket clients, whoever authenticates them
    /// (nats-server's `createWSClient`).
    pub fn auth_timeout_override(&self) -> Option<Duration> {
        self.auth_timeout.filter(|timeout| !timeout.is_zero())
    }
}

/// Apply the `websocket` key of a config file.
pub fn apply_websocket(options: &mut Options, entry: &Entry) -> Result<(), ConfigError> {
    let Value::Map(items) = &entry.value else {
        return Err(entry.error(format!(
            "Expected websocket to be a map, got {}",
            entry.value.go_type_name()
        )));
    };
    let mut websocket = options.websocket.take().unwrap_or_default();
    for (key, item) in items {
        match key.to_ascii_lowercase().as_str() {
            "listen" => {
                let (host, port) = match &item.value {
                    // A port alone keeps the default host.
                    Value::Integer(port) => (websocket.host.clone(), *port),
                    _ => {
                        let text = string(item).map_err(|_| {
                            item.error(format!(
                                "expected port or host:port, got {}",
                                item.value.go_type_name()
                            ))
                        })?;
                        split_listen(&text).ok_or_else(|| {
                            item.error(format!("could not parse address string {text:?}"))
                        })?
                    }
                };
                websocket.host = host;
                websocket.port = port;
            }
            "port" => websocket.port = integer(item)?,
            "host" | "net" => websocket.host = string(item)?,
            "advertise" => websocket.advertise = Some(string(item)?),
            "no_tls" => websocket.no_tls = boolean(item)?,
            "tls" => {
                let mut scratch = Options::default();
                super::tls::apply_tls(&mut scratch, item)?;
                options.warnings.extend(scratch.warnings);
                websocket.tls = scratch.tls;
            }
            "same_origin" => websocket.same_origin = boolean(item)?,
            "allowed_origins" | "allowed_origin" | "allow_origins" | "allow_origin" | "origins"
            | "origin" => {
                websocket.allowed_origins = match &item.value {
                    Value::String(_) | Value::Array(_) => string_list(item)?,
                    other => {
                        return Err(item.error(format!(
                            "error parsing allowed origins: unsupported type {}",
                            other.go_type_name()
                        )))
                    }
                }
            }
            "handshake_timeout" => websocket.handshake_timeout = handshake_timeout(item)?,
            "compress" | "compression" => websocket.compression = boolean(item)?,
            "authorization" | "authentication" => apply_authorization(&mut websocket, item)?,
            "jwt_cookie" => websocket.jwt_cookie = Some(string(item)?),
            "user_cookie" => websocket.user_cookie = Some(string(item)?),
            "pass_cookie" => websocket.pass_cookie = Some(string(item)?),
            "token_cookie" => websocket.token_cookie = Some(string(item)?),
            "no_auth_user" => websocket.no_auth_user = Some(string(item)?),
            "headers" => {
                let Value::Map(headers) = &item.value else {
                    return Err(item.error(format!(
                        "error parsing headers: unsupported type {}",
                        item.value.go_type_name()
                    )));
                };
                websocket.headers.clear();
                for (name, value) in headers {
                    let Value::String(text) = &value.value else {
                        return Err(value.error(format!(
                            "error parsing header key {name}: unsupported type {}",
                            value.value.go_type_name()
                        )));
                    };
                    websocket.headers.push((name.clone(), text.clone()));
                }
            }
            "ping_interval" => {
                websocket.ping_interval = Some(super::options::duration_value(options, key, item)?)
            }
            _ if item.used_as_variable => {}
            _ => return Err(item.error(format!("unknown field \"{key}\""))),
        }
    }
    options.websocket = Some(websocket);
    Ok(())
}

/// `host:port` (the port required, as nats-server's `parseListen`).
fn split_listen(text: &str) -> Option<(String, i64)> {
    let (host, port) = text.rsplit_once(':')?;
    let port = port.parse::<i64>().ok()?;
    Some((host.trim_matches(['[', ']']).to_string(), port))
}

/// Seconds as an integer, or a Go duration string.
fn handshake_timeout(entry: &Entry) -> Result<Duration, ConfigError> {
    match &entry.value {
        Value::Integer(seconds) => Ok(Duration::from_secs((*seconds).max(0) as u64)),
        Value::String(text) => go_compat::duration::parse_std(text)
            .map_err(|_| entry.error(format!("time: invalid duration {text:?}"))),
        other => Err(entry.error(format!(
            "error parsing handshake timeout: unsupported type {}",
            other.go_type_name()
        ))),
    }
}

/// nats-server's `parseSimpleAuth`: user, password, token and timeout.
fn apply_authorization(websocket: &mut WebsocketOptions, entry: &Entry) -> Result<(), ConfigError> {
    for (key, item) in map(entry)? {
        match key.to_ascii_lowercase().as_str() {
            "user" | "username" => websocket.username = Some(string(item)?),
            "pass" | "password" => websocket.password = Some(string(item)?),
            "token" => websocket.token = Some(string(item)?),
            "timeout" => {
                websocket.auth_timeout = Some(match &item.value {
                    Value::Integer(seconds) => Duration::from_secs((*seconds).max(0) as u64),
                    Value::Float(seconds) => Duration::from_secs_f64(seconds.max(0.0)),
                    _ => return Err(item.error("timeout must be a number of seconds")),
                })
            }
            _ if item.used_as_variable => {}
            _ => return Err(item.error(format!("unknown field \"{key}\""))),
        }
    }
    Ok(())
}

/// nats-server's `validateWebsocketOptions`, its errors word for word.
pub fn validate(options: &Options) -> Result<(), String> {
    let Some(websocket) = &options.websocket else {
        return Ok(());
    };
    if websocket.port == 0 {
        return Ok(());
    }
    if websocket.tls.is_none() && !websocket.no_tls {
        return Err("websocket requires TLS configuration".into());
    }
    for origin in &websocket.allowed_origins {
        let Some((scheme, rest)) = origin.split_once("://") else {
            return Err(format!(
                "unable to parse allowed origin: parse {origin:?}: invalid URI for request"
            ));
        };
        if scheme != "http" && scheme != "https" {
            return Err(format!(
                "unable to parse allowed origin {origin:?}: allowed origins must be absolute URLs with http or https scheme"
            ));
        }
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if host.is_empty() {
            return Err(format!(
                "unable to parse allowed origin {origin:?}: host is required"
            ));
        }
    }
    if let Some(user) = &websocket.no_auth_user {
        if options.users.is_empty() {
            return Err(format!(
                "no_auth_user: {user:?} present, but users/nkeys are not defined"
            ));
        }
        if !options.users.iter().any(|entry| &entry.user == user) {
            return Err(format!(
                "no_auth_user: {user:?} not present as user or nkey in authorization block or account configuration"
            ));
        }
    }
    if !options.users.is_empty() {
        if websocket.username.is_some() {
            return Err(
                "websocket authentication username not compatible with presence of users/nkeys"
                    .into(),
            );
        }
        if websocket.token.is_some() {
            return Err(
                "websocket authentication token not compatible with presence of users/nkeys".into(),
            );
        }
    }
    // A JWT from a cookie needs trusted operators or trusted keys.
    if let Some(cookie) = websocket
        .jwt_cookie
        .as_ref()
        .filter(|_| !options.operator.enabled())
    {
        return Err(format!(
            "trusted operators or trusted keys configuration is required for JWT authentication via cookie {cookie:?}"
        ));
    }
    for (name, _) in &websocket.headers {
        let lowered = name.to_ascii_lowercase();
        if matches!(
            lowered.as_str(),
            "host" | "content-length" | "connection" | "upgrade" | "nats-no-masking"
        ) {
            return Err(format!("websocket: invalid header {name:?} not allowed"));
        }
        if lowered.starts_with("sec-websocket-") {
            return Err(format!(
                "websocket: invalid header {name:?}, \"Sec-WebSocket-\" prefix not allowed"
            ));
        }
    }
    Ok(())
}
