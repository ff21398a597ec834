//! [`Options`] (nats-server's defaults) and the mapping of config-file keys onto them.

use super::parser;
use super::value::{ConfigError, Entry, Value};
use nats_jetstream::JetStreamConfig;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const DEFAULT_PORT: u16 = 4222;
pub const DEFAULT_MAX_PAYLOAD: i64 = 1024 * 1024;
pub const DEFAULT_MAX_CONTROL_LINE: i64 = 4096;
pub const DEFAULT_MAX_PENDING: i64 = 64 * 1024 * 1024;
pub const DEFAULT_MAX_CONNECTIONS: i64 = 64 * 1024;
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(120);
pub const DEFAULT_PING_MAX: i64 = 2;
pub const DEFAULT_WRITE_DEADLINE: Duration = Duration::from_secs(10);
pub const DEFAULT_AUTH_TIMEOUT: Duration = Duration::from_secs(2);
/// nats-server refuses a configured max_payload above this (Go's MaxInt32).
/// nats-server's lame duck defaults and the shortest `lame_duck_duration` its config takes.
pub const DEFAULT_LAME_DUCK_DURATION: Duration = Duration::from_secs(120);
pub const DEFAULT_LAME_DUCK_GRACE_PERIOD: Duration = Duration::from_secs(10);
const MIN_LAME_DUCK_DURATION_NANOS: i64 = 30_000_000_000;
pub const MAX_PAYLOAD_LIMIT: i64 = i32::MAX as i64;
/// Above this max_payload nats-server warns at start-up.
pub const MAX_PAYLOAD_DISCOURAGED: i64 = 8 * 1024 * 1024;

/// Allow/deny subject lists for one direction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubjectRules {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    pub publish: Option<SubjectRules>,
    pub subscribe: Option<SubjectRules>,
    /// `allow_responses`: publishing to the reply subject of a received request is allowed
    /// (`max` times, within `expires`), whatever the publish rules say.
    pub responses: Option<ResponsePermission>,
}

/// nats-server's defaults: one response within two minutes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponsePermission {
    pub max: u64,
    pub expires: Duration,
}

impl Default for ResponsePermission {
    fn default() -> Self {
        ResponsePermission {
            max: 1,
            expires: Duration::from_secs(120),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct User {
    pub user: String,
    pub password: String,
    /// An nkey user (public key `U...`): no user name or password.
    pub nkey: Option<String>,
    pub permissions: Option<Permissions>,
    /// The `accounts { NAME { users } }` entry the user came from (`None`: the global account).
    pub account: Option<String>,
}

/// Everything the server reads from flags and the config file.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub host: String,
    /// `-1` asks for a random port (as `-p -1` does in nats-server).
    pub port: i64,
    pub server_name: Option<String>,
    pub max_payload: i64,
    pub max_control_line: i64,
    pub max_pending: i64,
    pub max_connections: i64,
    /// 0 = unlimited.
    pub max_subscriptions: i64,
    /// Closed connections kept for `/connz?state=closed` (0 in a file means the default).
    pub max_closed_clients: i64,
    pub ping_interval: Duration,
    pub ping_max: i64,
    pub write_deadline: Duration,
    pub username: Option<String>,
    pub password: Option<String>,
    pub token: Option<String>,
    pub users: Vec<User>,
    pub default_permissions: Option<Permissions>,
    pub no_auth_user: Option<String>,
    /// `accounts { }`: the configured accounts (users name theirs in [`User::account`]).
    pub accounts: Vec<super::accounts::AccountOptions>,
    /// `system_account` (`None`: nats-server's `$SYS`).
    pub system_account: Option<String>,
    /// `server_tags`: lower-cased as nats-server keeps them (shown in /varz `tags`).
    pub server_tags: Vec<String>,
    /// `feature_flags { }` as configured (reported only: docs/parity.md).
    pub feature_flags: super::feature_flags::FeatureFlags,
    /// Top-level `mappings { }`: the global account's subject mappings.
    pub mappings: Vec<super::mappings::MappingOptions>,
    /// `None`: nats-server's default, which depends on TLS (see [`Options::auth_timeout`]).
    pub auth_timeout: Option<Duration>,
    /// `authorization { auth_callout { } }`: an external service authorizes clients.
    pub auth_callout: Option<super::auth_callout::AuthCallout>,
    /// TLS for client connections.
    pub tls: Option<super::tls::TlsOptions>,
    /// With TLS configured: clients may also stay in plain text (INFO says `tls_available`).
    pub allow_non_tls: bool,
    pub http_host: Option<String>,
    pub http_port: i64,
    /// `https_port` / `--https_port`: monitoring over TLS with the client TLS settings.
    pub https_port: i64,
    /// `http_base_path`: the prefix of every monitoring path.
    pub http_base_path: String,
    pub debug: bool,
    pub trace: bool,
    pub logtime: bool,
    /// `logtime_utc` / `--logtime_utc`: log time stamps in UTC.
    pub logtime_utc: bool,
    pub log_file: Option<PathBuf>,
    pub pid_file: Option<PathBuf>,
    pub ports_file_dir: Option<PathBuf>,
    pub jetstream: JetStreamConfig,
    /// `cluster { }` or `--cluster`: routes to other servers (see `config/cluster.rs`).
    pub cluster: Option<super::cluster::ClusterOptions>,
    /// Operator (JWT) mode: `operator`, `resolver`, `resolver_preload`.
    pub operator: super::operator::OperatorOptions,
    /// `websocket { }`: WebSocket clients (see `config/websocket.rs`).
    pub websocket: Option<super::websocket::WebsocketOptions>,
    /// `console { user, password }` (rnats's own): the web console's user (`config/console.rs`).
    pub console: Option<super::console::ConsoleOptions>,
    pub config_file: Option<PathBuf>,
    /// `lame_duck_duration`: over how long lame duck mode closes the clients (at least 30 s).
    pub lame_duck_duration: Duration,
    /// `lame_duck_grace_period`: how long lame duck mode waits before closing the first client.
    pub lame_duck_grace_period: Duration,
    /// Messages to log once logging is set up (deprecated spellings and the like).
    pub warnings: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            host: "0.0.0.0".into(),
            port: i64::from(DEFAULT_PORT),
            server_name: None,
            max_payload: DEFAULT_MAX_PAYLOAD,
            max_control_line: DEFAULT_MAX_CONTROL_LINE,
            max_pending: DEFAULT_MAX_PENDING,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_subscriptions: 0,
            max_closed_clients: crate::monitor::closed::DEFAULT_MAX_CLOSED_CLIENTS,
            ping_interval: DEFAULT_PING_INTERVAL,
            ping_max: DEFAULT_PING_MAX,
            write_deadline: DEFAULT_WRITE_DEADLINE,
            username: None,
            password: None,
            token: None,
            users: Vec::new(),
            default_permissions: None,
            no_auth_user: None,
            accounts: Vec::new(),
            system_account: None,
            server_tags: Vec::new(),
            feature_flags: Default::default(),
            mappings: Vec::new(),
            auth_timeout: None,
            auth_callout: None,
            tls: None,
            allow_non_tls: false,
            http_host: None,
            http_port: 0,
            https_port: 0,
            http_base_path: String::new(),
            debug: false,
            trace: false,
            logtime: true,
            logtime_utc: false,
            log_file: None,
            pid_file: None,
            ports_file_dir: None,
            jetstream: JetStreamConfig::default(),
            cluster: None,
            operator: Default::default(),
            websocket: None,
            console: None,
            config_file: None,
            lame_duck_duration: DEFAULT_LAME_DUCK_DURATION,
            lame_duck_grace_period: DEFAULT_LAME_DUCK_GRACE_PERIOD,
            warnings: Vec::new(),
        }
    }
}

impl Options {
    /// Cross-option checks nats-server makes before starting.
    pub fn validate(&self) -> Result<(), String> {
        if self.lame_duck_grace_period >= self.lame_duck_duration {
            return Err(format!(
                "lame duck grace period ({}) should be strictly lower than lame duck duration ({})",
                go_compat::duration::format_std(self.lame_duck_grace_period),
                go_compat::duration::format_std(self.lame_duck_duration)
            ));
        }
        if self.max_payload > self.max_pending {
            return Err(format!(
                "max_payload ({}) cannot be higher than max_pending ({})",
                self.max_payload, self.max_pending
            ));
        }
        if self.max_payload > MAX_PAYLOAD_LIMIT {
            return Err("max_payload value is too big".into());
        }
        super::operator::validate(self)?;
        super::cluster::validate(self)?;
        super::websocket::validate(self)
    }

    /// How long a client has to send CONNECT once connected (and past TLS): as nats-server,
    /// the TLS timeout plus one second when TLS is on, else two seconds.
    pub fn auth_timeout(&self) -> Duration {
        match (self.auth_timeout, &self.tls) {
            (Some(timeout), _) => timeout,
            (None, Some(tls)) => tls.timeout + Duration::from_secs(1),
            (None, None) => DEFAULT_AUTH_TIMEOUT,
        }
    }

    /// nats-server's start-up warning: a password (or user password) kept in plain text.
    pub fn has_plaintext_passwords(&self) -> bool {
        let single = self
            .password
            .as_deref()
            .is_some_and(|password| !crate::security::auth::is_bcrypt(password));
        single
            || self
                .users
                .iter()
                .filter(|user| user.nkey.is_none())
                .any(|user| !crate::security::auth::is_bcrypt(&user.password))
    }

    /// True when clients must authenticate.
    pub fn auth_required(&self) -> bool {
        self.operator.enabled()
            || self.auth_callout.is_some()
            || self.username.is_some()
            || self.token.is_some()
            || !self.users.is_empty()
    }
}

/// nats-server's duration text (Go's `Duration.String()`: `2m0s`, `10s`, `500ms`) for logs
/// and errors.
pub fn duration_text(duration: Duration) -> String {
    go_compat::duration::format_std(duration)
}

/// Read `path` and apply its keys to `options`. Unknown keys are errors, as in nats-server.
pub fn apply_config_file(options: &mut Options, path: &Path) -> Result<(), ConfigError> {
    let items = parser::parse_file(path)?;
    options.config_file = Some(path.to_path_buf());
    if items.is_empty() {
        // nats-server's warning (fatal only under -t).
        options.warnings.push(format!(
            "{}: config has no values or is empty",
            path.display()
        ));
    }
    apply_items(options, &items)
}

/// Apply already-parsed top-level items (exposed for tests).
pub fn apply_items(options: &mut Options, items: &[(String, Entry)]) -> Result<(), ConfigError> {
    for (key, entry) in items {
        apply_top_level(options, key, entry)?;
    }
    Ok(())
}

/// Keys nats-server knows but rnats does not implement: accepted with a warning rather than
/// refusing a config written for nats-server.
const IGNORED_KEYS: &[&str] = &[
    "gateway",
    "leafnodes",
    "leaf",
    "mqtt",
    "syslog",
    "remote_syslog",
    "logfile_size_limit",
    "log_size_limit",
    "logfile_max_num",
    "max_traced_msg_len",
    "client_advertise",
    "connect_error_reports",
    "reconnect_error_reports",
    "no_header_support",
    "disable_sublist_cache",
    "prof_port",
    "no_system_account",
];

fn apply_top_level(options: &mut Options, key: &str, entry: &Entry) -> Result<(), ConfigError> {
    match key.to_ascii_lowercase().as_str() {
        "listen" => {
            let (host, port) = listen_address(entry)?;
            if !host.is_empty() {
                options.host = host;
            }
            if let Some(port) = port {
                options.port = port;
            }
        }
        "host" | "net" | "addr" => options.host = string(entry)?,
        "port" => options.port = integer(entry)?,
        "server_name" | "name" => {
            let name = string(entry)?;
            if name.contains(' ') {
                return Err(entry.error("server name cannot contain spaces"));
            }
            options.server_name = Some(name);
        }
        "max_payload" => {
            let value = integer(entry)?;
            if value > MAX_PAYLOAD_LIMIT {
                return Err(entry.error("max_payload value is too big"));
            }
            options.max_payload = value;
        }
        "max_control_line" => options.max_control_line = integer(entry)?,
        "max_pending" => options.max_pending = integer(entry)?,
        "max_connections" | "max_conn" => options.max_connections = integer(entry)?,
        "max_subscriptions" | "max_subs" => options.max_subscriptions = integer(entry)?,
        "max_closed_clients" => {
            options.max_closed_clients = match integer(entry)? {
                0 => crate::monitor::closed::DEFAULT_MAX_CLOSED_CLIENTS,
                value => value,
            }
        }
        "ping_interval" => options.ping_interval = duration(&mut options.warnings, key, entry)?,
        "ping_max" => options.ping_max = integer(entry)?,
        "write_deadline" => options.write_deadline = duration(&mut options.warnings, key, entry)?,
        "authorization" => apply_authorization(options, entry)?,
        "no_auth_user" => options.no_auth_user = Some(string(entry)?),
        "http_port" | "monitor_port" => options.http_port = integer(entry)?,
        "https_port" => options.https_port = integer(entry)?,
        "http_base_path" => options.http_base_path = string(entry)?,
        "http" => {
            let (host, port) = listen_address(entry)?;
            options.http_host = Some(host).filter(|host| !host.is_empty());
            if let Some(port) = port {
                options.http_port = port;
            }
        }
        "https" => {
            let (host, port) = listen_address(entry)?;
            options.http_host = Some(host).filter(|host| !host.is_empty());
            if let Some(port) = port {
                options.https_port = port;
            }
        }
        "debug" => options.debug = boolean(entry)?,
        "trace" | "trace_verbose" => options.trace = boolean(entry)?,
        "logtime" => options.logtime = boolean(entry)?,
        "logtime_utc" => options.logtime_utc = boolean(entry)?,
        "logfile" | "log_file" => options.log_file = Some(PathBuf::from(string(entry)?)),
        "pidfile" | "pid_file" => options.pid_file = Some(PathBuf::from(string(entry)?)),
        "ports_file_dir" => options.ports_file_dir = Some(PathBuf::from(string(entry)?)),
        "jetstream" => {
            super::jetstream::apply_jetstream(&mut options.jetstream, &mut options.warnings, entry)?
        }
        "tls" => super::tls::apply_tls(options, entry)?,
        "cluster" => super::cluster::apply_cluster(options, entry)?,
        "websocket" => super::websocket::apply_websocket(options, entry)?,
        "console" => super::console::apply_console(options, entry)?,
        "accounts" => super::accounts::apply_accounts(options, entry)?,
        "system_account" => match &entry.value {
            Value::String(name) => options.system_account = Some(name.clone()),
            _ => return Err(entry.error("system account name must be a string")),
        },
        "mappings" | "maps" => options.mappings = super::mappings::parse_mappings(entry)?,
        "operator" | "operators" | "root" | "roots" | "root_operator" | "root_operators" => {
            super::operator::apply_operator(options, entry)?
        }
        "resolver" | "account_resolver" | "accounts_resolver" => {
            super::operator::apply_resolver(options, entry)?
        }
        "resolver_preload" => super::operator::apply_preload(options, entry)?,
        "trusted" | "trusted_keys" => super::operator::apply_trusted(options, entry)?,
        "allow_non_tls" => options.allow_non_tls = boolean(entry)?,
        "server_tags" => options.server_tags = server_tags(entry)?,
        "feature_flags" => options.feature_flags = super::feature_flags::parse(entry)?,
        "lame_duck_duration" => {
            let nanos = lame_duck_nanos(entry, "lame_duck_duration")?;
            if nanos < MIN_LAME_DUCK_DURATION_NANOS {
                return Err(entry.error(format!(
                    "invalid lame_duck_duration of {}, minimum is 30 seconds",
                    go_compat::duration::format(nanos)
                )));
            }
            options.lame_duck_duration = Duration::from_nanos(nanos.unsigned_abs());
        }
        "lame_duck_grace_period" => {
            let nanos = lame_duck_nanos(entry, "lame_duck_grace_period")?;
            if nanos < 0 {
                return Err(entry.error("invalid lame_duck_grace_period, needs to be positive"));
            }
            options.lame_duck_grace_period = Duration::from_nanos(nanos.unsigned_abs());
        }
        other if IGNORED_KEYS.contains(&other) => {
            check_ignored_value(other, entry)?;
            options.warnings.push(format!(
                "{}: \"{key}\" is not supported by rnats and is ignored",
                position(entry)
            ))
        }
        _ if entry.used_as_variable => {}
        _ => return Err(entry.error(format!("unknown field \"{key}\""))),
    }
    Ok(())
}

/// A lame duck setting: a Go duration string, in nanoseconds.
fn lame_duck_nanos(entry: &Entry, key: &str) -> Result<i64, ConfigError> {
    match &entry.value {
        Value::String(text) => go_compat::duration::parse(text.trim())
            .map_err(|error| entry.error(format!("error parsing {key}: {error}"))),
        _ => Err(not_a(entry, "string")),
    }
}

/// The value of a key we ignore still has to be of the kind nats-server reads, with its error.
fn check_ignored_value(key: &str, entry: &Entry) -> Result<(), ConfigError> {
    match key {
        "connect_error_reports"
        | "reconnect_error_reports"
        | "max_traced_msg_len"
        | "prof_port"
        | "logfile_size_limit"
        | "log_size_limit"
        | "logfile_max_num" => integer(entry).map(|_| ()),
        "disable_sublist_cache" | "no_header_support" | "no_system_account" => {
            boolean(entry).map(|_| ())
        }
        "client_advertise" => string(entry).map(|_| ()),
        _ => Ok(()),
    }
}

/// `server_tags`: one string or an array of strings, lower-cased.
fn server_tags(entry: &Entry) -> Result<Vec<String>, ConfigError> {
    let unsupported =
        |what: &str| entry.error(format!("error parsing tags: unsupported type {what}"));
    match &entry.value {
        Value::String(tag) => Ok(vec![tag.to_lowercase()]),
        Value::Array(items) => items
            .iter()
            .map(|item| match &item.value {
                Value::String(tag) => Ok(tag.to_lowercase()),
                // Go names its token type for an element that is not a string.
                _ => Err(unsupported("*conf.token where string is expected")),
            })
            .collect(),
        other => Err(unsupported(other.go_type_name())),
    }
}

pub(super) fn position(entry: &Entry) -> String {
    format!(
        "{}:{}:{}",
        entry.file.display(),
        entry.line,
        super::value::shown_column(entry.line, entry.column)
    )
}

fn split_host_port(text: &str) -> Option<(String, Option<i64>)> {
    match text.rsplit_once(':') {
        Some((host, port)) => {
            let port = port.parse::<i64>().ok()?;
            Some((host.trim_matches(['[', ']']).to_string(), Some(port)))
        }
        None => Some((text.to_string(), None)),
    }
}

fn apply_authorization(options: &mut Options, entry: &Entry) -> Result<(), ConfigError> {
    for (key, item) in map(entry)? {
        match key.to_ascii_lowercase().as_str() {
            "user" | "username" => options.username = Some(string(item)?),
            "pass" | "password" => options.password = Some(string(item)?),
            "token" => options.token = Some(string(item)?),
            "timeout" => options.auth_timeout = Some(auth_timeout(item)?),
            "users" => {
                let Value::Array(users) = &item.value else {
                    return Err(item.error("users must be an array"));
                };
                for user in users {
                    push_user(options, parse_user(user)?, entry)?;
                }
            }
            "default_permissions" | "permissions" => {
                options.default_permissions = Some(parse_permissions(item)?)
            }
            "auth_callout" | "auth_hook" => {
                options.auth_callout = Some(super::auth_callout::parse(item)?)
            }
            _ if item.used_as_variable => {}
            _ => return Err(item.error(format!("unknown field \"{key}\""))),
        }
    }
    Ok(())
}

/// `authorization { timeout }` (clients' and routes'): seconds, fractional or whole, or a Go
/// duration text.
pub(super) fn auth_timeout(item: &Entry) -> Result<Duration, ConfigError> {
    match &item.value {
        Value::Integer(seconds) => Ok(Duration::from_secs((*seconds).max(0) as u64)),
        Value::Float(seconds) => Ok(Duration::from_secs_f64(seconds.max(0.0))),
        Value::String(text) => go_compat::duration::parse_std(text.trim()).map_err(|error| {
            item.error(format!(
                "error parsing authorization config, 'timeout' {error}"
            ))
        }),
        _ => Err(item.error("error parsing authorization config, 'timeout' wrong type")),
    }
}

/// Adds a user, refusing a name or nkey already configured (in `authorization` or any
/// account) as nats-server does, at the position of `at`.
pub(super) fn push_user(options: &mut Options, user: User, at: &Entry) -> Result<(), ConfigError> {
    let duplicate = options
        .users
        .iter()
        .find_map(|existing| match (&user.nkey, &existing.nkey) {
            (Some(nkey), Some(other)) if nkey == other => {
                Some(format!("Duplicate nkey {nkey:?} detected"))
            }
            (None, None) if !user.user.is_empty() && user.user == existing.user => {
                Some(format!("Duplicate user {:?} detected", user.user))
            }
            _ => None,
        });
    if let Some(message) = duplicate {
        return Err(at.error(message));
    }
    options.users.push(user);
    Ok(())
}

pub(super) fn parse_user(entry: &Entry) -> Result<User, ConfigError> {
    let mut user = User::default();
    let mut named = false;
    for (key, item) in map(entry)? {
        match key.to_ascii_lowercase().as_str() {
            "user" | "username" => {
                user.user = string(item)?;
                named = true;
            }
            "pass" | "password" => {
                user.password = string(item)?;
                named = true;
            }
            "nkey" => user.nkey = Some(string(item)?),
            "permissions" | "permission" | "authorization" => {
                user.permissions = Some(parse_permissions(item)?)
            }
            "account" | "allowed_connection_types" | "connection_types" | "clients" => {}
            _ => return Err(item.error(format!("unknown field \"{key}\""))),
        }
    }
    match &user.nkey {
        None if user.user.is_empty() => Err(entry.error("User entry requires a user")),
        Some(nkey) if !is_public_user_nkey(nkey) => {
            Err(entry.error("Not a valid public nkey for a user"))
        }
        Some(_) if named => Err(entry.error("Nkey users do not take usernames or passwords")),
        _ => Ok(user),
    }
}

fn is_public_user_nkey(nkey: &str) -> bool {
    nkey.starts_with('U') && nkeys::KeyPair::from_public_key(nkey).is_ok()
}

pub(super) fn parse_permissions(entry: &Entry) -> Result<Permissions, ConfigError> {
    let mut permissions = Permissions::default();
    for (key, item) in map(entry)? {
        match key.to_ascii_lowercase().as_str() {
            "publish" | "pub" | "import" => permissions.publish = Some(parse_rules(item)?),
            "subscribe" | "sub" | "export" => permissions.subscribe = Some(parse_rules(item)?),
            "allow_responses" | "allow_resp" | "responses" => {
                permissions.responses = parse_responses(item)?
            }
            _ => return Err(item.error(format!("unknown field \"{key}\""))),
        }
    }
    Ok(permissions)
}

/// `allow_responses: true` or `{ max: N, expires: "1m" }` (a zero or missing value keeps
/// nats-server's default).
fn parse_responses(entry: &Entry) -> Result<Option<ResponsePermission>, ConfigError> {
    match &entry.value {
        Value::Bool(false) => Ok(None),
        Value::Bool(true) => Ok(Some(ResponsePermission::default())),
        Value::Map(items) => {
            let mut permission = ResponsePermission::default();
            for (key, item) in items {
                match key.to_ascii_lowercase().as_str() {
                    "max" | "max_msgs" | "max_messages" | "max_responses" => {
                        let max = integer(item)?;
                        if max > 0 {
                            permission.max = max as u64;
                        }
                    }
                    "expires" | "expiration" | "ttl" => {
                        let expires = match &item.value {
                            Value::String(text) => parse_duration(text)
                                .ok_or_else(|| item.error(format!("invalid duration {text:?}")))?,
                            Value::Integer(seconds) => {
                                Duration::from_secs((*seconds).max(0) as u64)
                            }
                            _ => return Err(item.error("expires must be a duration")),
                        };
                        if !expires.is_zero() {
                            permission.expires = expires;
                        }
                    }
                    _ => return Err(item.error(format!("unknown field \"{key}\""))),
                }
            }
            Ok(Some(permission))
        }
        _ => Err(entry.error("allow_responses must be a boolean or a map")),
    }
}

/// `"subject"`, `["a", "b"]` (both allow lists) or `{ allow: ..., deny: ... }`.
fn parse_rules(entry: &Entry) -> Result<SubjectRules, ConfigError> {
    match &entry.value {
        Value::Map(items) => {
            let mut rules = SubjectRules::default();
            for (key, item) in items {
                match key.to_ascii_lowercase().as_str() {
                    "allow" => rules.allow = string_list(item)?,
                    "deny" => rules.deny = string_list(item)?,
                    _ => return Err(item.error(format!("unknown field \"{key}\""))),
                }
            }
            Ok(rules)
        }
        _ => Ok(SubjectRules {
            allow: string_list(entry)?,
            deny: Vec::new(),
        }),
    }
}

pub(super) fn map(entry: &Entry) -> Result<&Vec<(String, Entry)>, ConfigError> {
    match &entry.value {
        Value::Map(items) => Ok(items),
        _ => Err(not_a(entry, "map[string]interface {}")),
    }
}

/// Go's failed type assertion, as nats-server reports a value of the wrong kind.
pub(super) fn not_a(entry: &Entry, go_type: &str) -> ConfigError {
    entry.error(format!(
        "interface conversion: interface {{}} is {}, not {go_type}",
        entry.value.go_type_name()
    ))
}

pub(super) fn string(entry: &Entry) -> Result<String, ConfigError> {
    match &entry.value {
        Value::String(text) => Ok(text.clone()),
        _ => Err(not_a(entry, "string")),
    }
}

/// A listen address as nats-server's `parseListen` reads it: a port number alone, or
/// `host:port` text; the host is empty when only a port is given.
pub(super) fn listen_address(entry: &Entry) -> Result<(String, Option<i64>), ConfigError> {
    match &entry.value {
        Value::Integer(port) => Ok((String::new(), Some(*port))),
        Value::String(text) => split_host_port(text)
            .filter(|(_, port)| port.is_some())
            .ok_or_else(|| entry.error(format!("could not parse address string {text:?}"))),
        _ => Err(entry.error(format!(
            "expected port or host:port, got {}",
            entry.value.go_type_name()
        ))),
    }
}

pub(super) fn string_list(entry: &Entry) -> Result<Vec<String>, ConfigError> {
    match &entry.value {
        Value::Array(items) => items.iter().map(string).collect(),
        _ => Ok(vec![string(entry)?]),
    }
}

pub(super) fn integer(entry: &Entry) -> Result<i64, ConfigError> {
    match &entry.value {
        Value::Integer(number) => Ok(*number),
        _ => Err(not_a(entry, "int64")),
    }
}

/// A storage size (nats-server's `getStorageSize`): an integer (config suffixes already
/// applied) or a string such as `"1G"` (`K`, `M`, `G`, `T`, powers of 1024). `key` names the
/// option in the error, as nats-server does (`max_file_store sizes defined as strings ...`).
pub(super) fn size(entry: &Entry, key: &str) -> Result<i64, ConfigError> {
    match &entry.value {
        Value::Integer(number) => Ok(*number),
        Value::String(text) => go_compat::size::storage_size(text)
            .map_err(|error| entry.error(format!("{key} {error}"))),
        _ => Err(entry.error(format!("{key} must be int64 or string"))),
    }
}

/// A boolean: the lexer reads `true`/`yes`/`on` (and their negations) unquoted; a quoted
/// `"true"` is a string, refused as nats-server refuses it.
pub(super) fn boolean(entry: &Entry) -> Result<bool, ConfigError> {
    match &entry.value {
        Value::Bool(flag) => Ok(*flag),
        _ => Err(not_a(entry, "bool")),
    }
}

/// Durations: a Go-style string (`"2m"`, `"1m30s"`, `"500ms"`), or an integer taken as seconds
/// with nats-server's warning.
pub(super) fn duration_value(
    options: &mut Options,
    key: &str,
    entry: &Entry,
) -> Result<Duration, ConfigError> {
    duration(&mut options.warnings, key, entry)
}

/// A duration as nats-server's `parseDuration`: a Go duration text, else a number of seconds
/// with its warning (pushed on `warnings`).
pub(super) fn duration(
    warnings: &mut Vec<String>,
    key: &str,
    entry: &Entry,
) -> Result<Duration, ConfigError> {
    if let Value::String(text) = &entry.value {
        return go_compat::duration::parse_std(text.trim())
            .map_err(|error| entry.error(format!("error parsing {key}: {error}")));
    }
    // Anything else is read as a number of seconds, with nats-server's warning first.
    warnings.push(format!(
        "{}: invalid use of field \"{key}\": {key} should be converted to a duration",
        position(entry)
    ));
    let seconds = integer(entry)?;
    Ok(Duration::from_secs(seconds.max(0) as u64))
}

/// A non-negative Go duration (`time.ParseDuration`, surrounding blanks ignored).
pub fn parse_duration(text: &str) -> Option<Duration> {
    go_compat::duration::parse_std(text.trim()).ok()
}
