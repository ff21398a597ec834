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
    /// `resolver { type: full|cache, dir, allow_delete, interval }`.
    Directory {
        full: bool,
        dir: PathBuf,
        allow_delete: bool,
        interval: Duration,
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
}

impl OperatorOptions {
    pub fn enabled(&self) -> bool {
        !self.jwts.is_empty()
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
            let (mut kind, mut dir, mut allow_delete, mut interval) =
                (String::new(), None, false, Duration::from_secs(120));
            for (key, item) in map(entry)? {
                match key.to_ascii_lowercase().as_str() {
                    "type" => kind = string(item)?.to_ascii_lowercase(),
                    "dir" => dir = Some(PathBuf::from(string(item)?)),
                    "allow_delete" => allow_delete = boolean(item)?,
                    "interval" => {
                        let text = string(item)?;
                        interval = super::options::parse_duration(&text)
                            .ok_or_else(|| item.error(format!("invalid duration {text:?}")))?;
                    }
                    _ => {}
                }
            }
            match (kind.as_str(), dir) {
                ("full" | "cache", Some(dir)) => ResolverOptions::Directory {
                    full: kind == "full",
                    dir,
                    allow_delete,
                    interval,
                },
                _ => return Err(entry.error(RESOLVER_ERROR)),
            }
        }
        _ => return Err(entry.error(RESOLVER_ERROR)),
    };
    options.operator.resolver = Some(resolver);
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
    if !operator.enabled() {
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
    if let (Some(configured), Some(claimed)) = (&options.system_account, operator.system_account())
    {
        if *configured != claimed {
            return Err("system_account in config and operator JWT must be identical".into());
        }
    }
    if let Some(ResolverOptions::Directory { .. }) = &operator.resolver {
        return Err(
            "the full and cache account resolvers are not supported by rnats (use resolver: MEMORY)"
                .into(),
        );
    }
    Ok(())
}
