//! `feature_flags { name: bool }`: nats-server 2.15.1's opt-in (and opt-out) switches for
//! JetStream behaviours that change a format between servers. The block is read as nats-server
//! reads it (any name, a boolean each, its errors); a name it does not know is kept, logged as
//! unsupported and left out of `/varz`. rnats has none of the behaviours the flags switch
//! (docs/parity.md): the configured values are only reported, in `/varz` and on `$SYS` answers'
//! `server`, as nats-server reports its own.

use super::value::{ConfigError, Entry, Value};
use std::collections::BTreeMap;

/// nats-server 2.15.1's flags with the default this server runs with. Every one is off here;
/// nats-server 2.15.1 has `js_raft_delete_range` on by default.
const KNOWN: [(&str, bool); 4] = [
    ("js_ack_fc_v2", false),
    ("js_api_reply_v2", false),
    ("js_raft_delete_range", false),
    ("js_snapshot_sources", false),
];

/// The block's flags by name, as configured (unknown names included).
pub type FeatureFlags = BTreeMap<String, bool>;

/// The `feature_flags` block (a later name written twice wins, as in nats-server's map).
pub(super) fn parse(entry: &Entry) -> Result<FeatureFlags, ConfigError> {
    let Value::Map(items) = &entry.value else {
        return Err(entry.error(format!(
            "error parsing feature flags: unsupported type {}",
            entry.value.go_type_name()
        )));
    };
    let mut flags = FeatureFlags::new();
    for (name, value) in items {
        let Value::Bool(flag) = value.value else {
            return Err(value.error(format!(
                "error parsing feature flag {name:?}: expected bool, got {}",
                value.value.go_type_name()
            )));
        };
        flags.insert(name.clone(), flag);
    }
    Ok(flags)
}

/// Every known flag with its value: the configured one, else the default (nats-server's
/// `getMergedFeatureFlags`, shown in `/varz` and `$SYS` answers).
pub fn merged(configured: &FeatureFlags) -> BTreeMap<&'static str, bool> {
    KNOWN
        .iter()
        .map(|(name, default)| (*name, configured.get(*name).copied().unwrap_or(*default)))
        .collect()
}

/// nats-server's start-up lines for a configured block (none without one): the known flags
/// with how they depart from the default, then the names it does not know.
pub fn banner(configured: &FeatureFlags) -> Vec<String> {
    if configured.is_empty() {
        return Vec::new();
    }
    let mut known = Vec::new();
    let mut unsupported = Vec::new();
    for (name, value) in configured {
        let Some((_, default)) = KNOWN.iter().find(|(known, _)| known == name) else {
            unsupported.push(name.as_str());
            continue;
        };
        let word = match (default, value) {
            (true, true) => "enabled",
            (true, false) => "opt-out",
            (false, true) => "opt-in",
            (false, false) => "disabled",
        };
        known.push(format!("{name} ({word})"));
    }
    let configured = if known.is_empty() {
        "none".to_string()
    } else {
        known.join(", ")
    };
    let mut lines = vec![
        "  Feature flags:".to_string(),
        format!("    Configured:    {configured}"),
    ];
    if !unsupported.is_empty() {
        lines.push(format!("    Unsupported:   {}", unsupported.join(", ")));
    }
    lines
}

/// Go's `%v` of the configured map (`map[a:true b:false]`), for the reload refusal.
pub fn go_text(configured: &FeatureFlags) -> String {
    let pairs: Vec<String> = configured
        .iter()
        .map(|(name, value)| format!("{name}:{value}"))
        .collect();
    format!("map[{}]", pairs.join(" "))
}
