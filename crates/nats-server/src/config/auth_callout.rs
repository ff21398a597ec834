//! `authorization { auth_callout { issuer, account, auth_users, xkey, allowed_accounts } }`:
//! delegate authentication to an external service (nats-server's ADR-26, server config mode).
//! What the server then does with it is in `security/callout.rs`.

use super::options::{map, string};
use super::value::{ConfigError, Entry, Value};

/// The global account, where the callout service lives unless `account` names another.
const GLOBAL_ACCOUNT: &str = "$G";

/// A configured authorization callout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthCallout {
    /// The account public key that signs the users the service authorizes.
    pub issuer: String,
    /// The account the requests go to (`$G` unless set).
    pub account: String,
    /// Users (names or nkeys) that authenticate as configured and are never called out for:
    /// the service's own connections.
    pub auth_users: Vec<String>,
    /// The service's public curve key: requests are encrypted for it.
    pub xkey: Option<String>,
    /// When set, only users of these accounts (and `$G`) are called out for.
    pub allowed_accounts: Vec<String>,
}

fn strings(item: &Entry, what: &str) -> Result<Vec<String>, ConfigError> {
    let Value::Array(items) = &item.value else {
        return Err(item.error(format!(
            "Expected {what} field to be an array, got {}",
            item.value.go_type_name()
        )));
    };
    items.iter().map(string).collect()
}

/// Reads the `auth_callout` block with nats-server's checks and errors.
pub(super) fn parse(entry: &Entry) -> Result<AuthCallout, ConfigError> {
    if !matches!(entry.value, Value::Map(_)) {
        return Err(entry.error(format!(
            "Expected authorization callout to be a map/struct, got {}",
            entry.value.go_text()
        )));
    }
    let mut callout = AuthCallout {
        issuer: String::new(),
        account: String::new(),
        auth_users: Vec::new(),
        xkey: None,
        allowed_accounts: Vec::new(),
    };
    for (key, item) in map(entry)? {
        match key.to_ascii_lowercase().as_str() {
            "issuer" => {
                let issuer = string(item)?;
                if !crate::security::jwt::is_account_key(&issuer) {
                    return Err(item.error(format!(
                        "Expected callout user to be a valid public account nkey, got {issuer:?}"
                    )));
                }
                callout.issuer = issuer;
            }
            "account" | "acc" => callout.account = string(item)?,
            "auth_users" | "users" => callout.auth_users = strings(item, "auth_users")?,
            "xkey" | "key" => {
                let xkey = string(item)?;
                if !crate::security::callout::is_curve_key(&xkey) {
                    return Err(item.error(format!(
                        "Expected callout xkey to be a valid public xkey, got {xkey:?}"
                    )));
                }
                callout.xkey = Some(xkey);
            }
            "allowed_accounts" => callout.allowed_accounts = strings(item, "allowed accounts")?,
            _ if item.used_as_variable => {}
            _ => {
                return Err(item.error(format!(
                    "Unknown field {key:?} parsing authorization callout"
                )))
            }
        }
    }
    if callout.account.is_empty() {
        callout.account = GLOBAL_ACCOUNT.to_string();
    }
    if callout.issuer.is_empty() {
        return Err(entry.error("Authorization callouts require an issuer to be specified"));
    }
    if callout.auth_users.is_empty() {
        return Err(entry.error("Authorization callouts require authorized users to be specified"));
    }
    Ok(callout)
}
