//! Operator (JWT) mode keys: `operator` (one or several JWTs, each a file or inline text),
//! `resolver` (`MEMORY`, or a `{ type: full|cache, dir, ... }` map) and `resolver_preload`
//! (account public key to account JWT). Operator JWTs are read and verified here, with
//! nats-server's errors; [`validate`] makes nats-server's cross-option checks.
//!
//! Called by `options.rs`; the runtime side is `security/jwt/`.

use super::options::{boolean, map, string, string_list, Options};
use super::value::{ConfigError, Entry, Value};
use crate::security::jwt;
use std::path::PathBuf;
use std::time::Duration;

/// Which account resolver the config asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResolverOptions {
    /// `resolver: MEMORY`: the preloaded accounts (and runtime updates).
    Memory,
    /// `resolver { type: full|cache, dir, allow_delete, hard_delete, interval, limit, ttl,
    /// timeout }`.
    Directory {
        full: bool,
        dir: PathBuf,
        allow_delete: bool,
        hard_delete: bool,
        /// How often full resolvers compare their stores (nats-server's default 1 minute).
        interval: Duration,
        /// At most this many accounts (0: no limit).
        limit: usize,
        /// How long a fetched account is kept (cache).
        ttl: Duration,
        /// How long a fetch from another server may take.
        timeout: Duration,
    },
}

/// The operator-mode part of [`Options`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OperatorOptions {
    /// The trusted operators' JWTs (verified when read).
    pub jwts: Vec<String>,
    pub resolver: Option<ResolverOptions>,
    /// `resolver_preload`: (account public key, account JWT).
    pub preload: Vec<(String, String)>,
    /// `trusted` / `trusted_keys`: operator public keys trusted without an operator JWT.
    pub trusted_keys: Vec<String>,
}

impl OperatorOptions {
    /// Operator mode: trusted operator JWTs, or trusted keys.
    pub fn enabled(&self) -> bool {
        !self.jwts.is_empty() || !self.trusted_keys.is_empty()
    }

    /// The system account the (first) operator JWT names, if any.
    pub fn system_account(&self) -> Option<String> {
        self.jwts
            .iter()
            .filter_map(|text| jwt::resolver::operator_claims(text).ok())
            .map(|claims| claims.nats.system_account)
            .find(|account| !account.is_empty())
    }
}

/// `operator: <file or jwt>` or a list of them.
pub(super) fn apply_operator(options: &mut Options, entry: &Entry) -> Result<(), ConfigError> {
    for text in string_list(entry)? {
        let contents = match std::fs::read_to_string(&text) {
            Ok(contents) => contents,
            Err(_) if text.starts_with("eyJ") => text.clone(),
            Err(error) => {
                return Err(entry.error(format!(
                    "error parsing operator JWT: open {text}: {}",
                    go_compat::errno_text(&error)
                )))
            }
        };
        let token = jwt::undecorate(&contents).to_string();
        jwt::resolver::operator_claims(&token)
            .map_err(|error| entry.error(format!("error parsing operator JWT: {error}")))?;
        options.operator.jwts.push(token);
    }
    Ok(())
}

const RESOLVER_ERROR: &str = "error parsing account resolver, should be MEM or  URL(\"url\") or \
                              a map containing dir and type state=[FULL|CACHE])";

pub(super) fn apply_resolver(options: &mut Options, entry: &Entry) -> Result<(), ConfigError> {
    let resolver = match &entry.value {
        Value::String(text)
            if text.eq_ignore_ascii_case("MEMORY") || text.eq_ignore_ascii_case("MEM") =>
        {
            ResolverOptions::Memory
        }
        Value::Map(_) => {
            let (mut kind, mut dir, mut allow_delete, mut hard_delete) =
                (String::new(), None, false, None);
            let (mut interval, mut limit, mut ttl, mut timeout) =
                (None, 0, Duration::ZERO, Duration::from_secs(2));
            let duration = |item: &Entry| -> Result<Duration, ConfigError> {
                let text = string(item)?;
                super::options::parse_duration(&text)
                    .ok_or_else(|| entry.error(format!("time: invalid duration {text:?}")))
            };
            for (key, item) in map(entry)? {
                match key.as_str() {
                    "type" => kind = string(item)?.to_ascii_uppercase(),
                    "dir" => dir = Some(PathBuf::from(string(item)?)),
                    "allow_delete" => allow_delete = boolean(item)?,
                    "hard_delete" => hard_delete = Some(boolean(item)?),
                    "interval" => interval = Some(duration(item)?),
                    "ttl" => ttl = duration(item)?,
                    "timeout" => timeout = duration(item)?,
                    "limit" => {
                        limit = match &item.value {
                            Value::Integer(limit) => usize::try_from(*limit).unwrap_or(0),
                            _ => return Err(item.error(RESOLVER_ERROR)),
                        }
                    }
                    _ => {}
                }
            }
            let full = match kind.as_str() {
                "FULL" => true,
                "CACHE" => false,
                "MEM" | "MEMORY" => {
                    options.operator.resolver = Some(ResolverOptions::Memory);
                    return Ok(());
                }
                _ => return Err(entry.error(RESOLVER_ERROR)),
            };
            let Some(dir) = dir.filter(|dir| !dir.as_os_str().is_empty()) else {
                return Err(entry.error("dir has no value and needs to point to a directory"));
            };
            if std::fs::metadata(&dir).is_ok_and(|info| !info.is_dir()) {
                return Err(entry.error("dir needs to point to an accessible directory"));
            }
            if full && !ttl.is_zero() {
                return Err(entry.error("FULL does not accept ttl"));
            }
            if full && hard_delete.is_some() && !allow_delete {
                return Err(entry.error("hard_delete has no effect without delete"));
            }
            if !full && interval.is_some() {
                return Err(entry.error("CACHE does not accept sync"));
            }
            if !full && allow_delete {
                return Err(entry.error("CACHE does not accept allow_delete"));
            }
            if !full && hard_delete.is_some() {
                return Err(entry.error("CACHE does not accept hard_delete"));
            }
            ResolverOptions::Directory {
                full,
                dir,
                allow_delete,
                hard_delete: hard_delete.unwrap_or(false),
                interval: interval
                    .filter(|interval| !interval.is_zero())
                    .unwrap_or(Duration::from_secs(60)),
                limit,
                ttl,
                timeout,
            }
        }
        _ => return Err(entry.error(RESOLVER_ERROR)),
    };
    options.operator.resolver = Some(resolver);
    Ok(())
}

/// `trusted` / `trusted_keys`: a key or a list of them, each an operator's public nkey.
pub(super) fn apply_trusted(options: &mut Options, entry: &Entry) -> Result<(), ConfigError> {
    let keys = match &entry.value {
        Value::String(key) => vec![key.clone()],
        Value::Array(items) => {
            let mut keys = Vec::new();
            for item in items {
                match &item.value {
                    Value::String(key) => keys.push(key.clone()),
                    other => {
                        return Err(item.error(format!(
                            "error parsing trusted: unsupported type in array {}",
                            other.go_type_name()
                        )))
                    }
                }
            }
            keys
        }
        other => {
            return Err(entry.error(format!(
                "error parsing trusted: unsupported type {}",
                other.go_type_name()
            )))
        }
    };
    if let Some(bad) = keys.iter().find(|key| !jwt::is_operator_key(key)) {
        return Err(entry.error(format!(
            "trust key \"{bad}\" required to be a valid public operator nkey"
        )));
    }
    options.operator.trusted_keys = keys;
    Ok(())
}

pub(super) fn apply_preload(options: &mut Options, entry: &Entry) -> Result<(), ConfigError> {
    for (key, item) in map(entry)? {
        options.operator.preload.push((key.clone(), string(item)?));
    }
    Ok(())
}

/// nats-server's checks of operator mode against the other options.
pub fn validate(options: &Options) -> Result<(), String> {
    let operator = &options.operator;
    // Trusted keys alone are not checked further, as in nats-server.
    if operator.jwts.is_empty() {
        return Ok(());
    }
    if operator.resolver.is_none() {
        return Err("operators require an account resolver to be configured".into());
    }
    if !options.accounts.is_empty() {
        return Err("operators do not allow Accounts to be configured directly".into());
    }
    if !options.users.is_empty() {
        return Err("operators do not allow users to be configured directly".into());
    }
    if !operator.trusted_keys.is_empty() {
        return Err("conflicting options for 'TrustedKeys' and 'TrustedOperators'".into());
    }
    if let (Some(configured), Some(claimed)) = (&options.system_account, operator.system_account())
    {
        if *configured != claimed {
            return Err("system_account in config and operator JWT must be identical".into());
        }
    }
    Ok(())
}
