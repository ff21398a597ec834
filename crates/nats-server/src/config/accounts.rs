//! The `accounts { NAME { users, jetstream, exports, imports } }` block and `system_account`:
//! which accounts exist, whose users live in them, which of them JetStream serves, and what
//! they export and import (parsed and checked in `account_imports.rs`) and their subject mappings
//! (`mappings.rs`).

use super::account_imports::{check_imports, parse_exports, parse_imports};
pub use super::account_imports::{ExportOptions, ImportOptions, ResponseType};
use super::accounts_jetstream::parse_account_jetstream;
use super::mappings::{parse_mappings, MappingOptions};
use super::options::{map, parse_user, push_user, Options};
use super::value::{ConfigError, Entry, Value};

/// One configured account.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccountOptions {
    pub name: String,
    /// `jetstream: enabled` (or a limits block) inside the account.
    pub jetstream: bool,
    /// The limits of that block (all `-1`, nats-server's dynamic limits, for `enabled`).
    pub jetstream_limits: nats_jetstream::AccountLimits,
    /// An account JWT's `tiered_limits` when its limits are tiered (a config file has none).
    pub jetstream_tiers: nats_jetstream::TieredLimits,
    pub exports: Vec<ExportOptions>,
    pub imports: Vec<ImportOptions>,
    /// `mappings { }` inside the account.
    pub mappings: Vec<MappingOptions>,
}

pub(super) fn apply_accounts(options: &mut Options, entry: &Entry) -> Result<(), ConfigError> {
    for (name, account) in map(entry)? {
        let mut config = AccountOptions {
            name: name.clone(),
            ..AccountOptions::default()
        };
        let Value::Map(items) = &account.value else {
            return Err(account.error("Expected map entries for accounts"));
        };
        {
            for (key, item) in items {
                match key.to_ascii_lowercase().as_str() {
                    "users" => {
                        let Value::Array(users) = &item.value else {
                            return Err(item.error("users must be an array"));
                        };
                        for user in users {
                            let mut user = parse_user(user)?;
                            user.account = Some(name.clone());
                            push_user(options, user, item)?;
                        }
                    }
                    "jetstream" => {
                        let limits = parse_account_jetstream(item)?;
                        config.jetstream = limits.is_some();
                        config.jetstream_limits = limits.unwrap_or_default();
                    }
                    "exports" => config.exports = parse_exports(name, item, &mut options.warnings)?,
                    "imports" => config.imports = parse_imports(item)?,
                    "mappings" | "maps" => config.mappings = parse_mappings(item)?,
                    _ => {}
                }
            }
        }
        options.accounts.retain(|existing| existing.name != *name);
        options.accounts.push(config);
    }
    check_imports(&options.accounts, entry)
}
