//! `nats account info`, laid out as natscli's: the user and account (from
//! `$SYS.REQ.USER.INFO`, asked of servers from 2.10 on), the connection, its permissions,
//! then JetStream usage and limits per tier (`$JS.API.INFO`); the TLS rows come from
//! `tls_probe.rs`. Called from `main`.

use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde::Deserialize;

use crate::api::JetStream;
use crate::error::CliError;
use crate::options::GlobalOptions;
use crate::output::columns::Columns;
use crate::output::format::{comma, humanize_duration, ibytes};
use crate::tls_probe;
use jetstream_api::account::AccountTier;

#[derive(Args, Debug)]
pub struct AccountArgs {
    #[command(subcommand)]
    pub command: AccountCommand,
}

#[derive(Subcommand, Debug)]
pub enum AccountCommand {
    /// Account information
    #[command(alias = "nfo")]
    Info,
}

/// nats-server's `UserInfo` in the `$SYS.REQ.USER.INFO` reply.
#[derive(Deserialize, Debug, Default)]
#[serde(default)]
struct UserInfo {
    user: String,
    account: String,
    account_name: String,
    user_name: String,
    permissions: Option<Permissions>,
    /// Nanoseconds until the user's JWT expires, zero when never.
    expires: i64,
}

#[derive(Deserialize, Debug, Default)]
#[serde(default)]
struct Permissions {
    publish: Option<SubjectPermission>,
    subscribe: Option<SubjectPermission>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(default)]
struct SubjectPermission {
    allow: Vec<String>,
    deny: Vec<String>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(default)]
struct UserInfoResponse {
    data: Option<UserInfo>,
    error: Option<serde_json::Value>,
}

/// nats-server names its system account `$SYS`; async-nats does not keep the INFO's
/// `acc_is_sys`, so the account name decides.
const SYSTEM_ACCOUNT: &str = "$SYS";

pub async fn account_info(args: &AccountArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let AccountCommand::Info = args.command;
    let (client, effective) = options.connect().await?;
    let started = Instant::now();
    client.flush().await?;
    let rtt = started.elapsed();
    let info = client.server_info();
    let user = if version_at_least(&info.version, (2, 10, 0)) {
        user_info(&client, effective.trace).await
    } else {
        None
    };

    let mut columns = Columns::new("Account Information");
    if let Some(user) = &user {
        if user.user_name.is_empty() {
            columns.row("User", &user.user);
        } else {
            columns.row("User", format!("{} ({})", user.user_name, user.user));
        }
        if user.account_name.is_empty() {
            columns.row("Account", &user.account);
        } else {
            columns.row(
                "Account",
                format!("{} ({})", user.account_name, user.account),
            );
            columns.row(
                "System Account",
                user.account == SYSTEM_ACCOUNT || user.account_name == SYSTEM_ACCOUNT,
            );
        }
        if user.expires == 0 {
            columns.row("Expires", "never");
        } else {
            let nanos = u64::try_from(user.expires).unwrap_or(0);
            columns.row("Expires", humanize_duration(Duration::from_nanos(nanos)));
        }
    }
    columns.row("Client ID", info.client_id);
    columns.row("Client IP", &info.client_ip);
    columns.row("RTT", humanize_duration(rtt));
    columns.row("Headers Supported", info.headers);
    columns.row("Maximum Payload", ibytes(info.max_payload as u64));
    if let Some(cluster) = info.cluster.as_ref().filter(|c| !c.is_empty()) {
        columns.row("Connected Cluster", cluster);
    }
    columns.row(
        "Connected URL",
        effective.url.split(',').next().unwrap_or_default(),
    );
    columns.row("Connected Address", format!("{}:{}", info.host, info.port));
    columns.row("Connected Server ID", &info.server_id);
    columns.row("Connected Server Version", &info.version);
    columns.row_if(
        "Connected Server Name",
        &info.server_name,
        info.server_name != info.server_id,
    );
    if tls_probe::in_use(&effective, info.tls_required) {
        match tls_probe::probe(&effective).await {
            Ok(session) => {
                columns.row(
                    "TLS Version",
                    format!("{} using {}", session.version, session.cipher_suite),
                );
                columns.row("TLS Server Name", &session.server_name);
                columns.row("TLS Verified", format!("issuer {}", session.issuer));
            }
            // The connection is encrypted even if a second handshake could not say how.
            Err(_) => columns.row("TLS Connection", "yes"),
        }
    } else {
        columns.row("TLS Connection", "no");
    }

    if let Some(permissions) = user.as_ref().and_then(|user| user.permissions.as_ref()) {
        columns.section("Connection Permissions");
        render_permission(&mut columns, "Publish:", permissions.publish.as_ref());
        columns.line(&[]);
        render_permission(&mut columns, "Subscribe:", permissions.subscribe.as_ref());
        columns.line(&[]);
    }

    let js = JetStream::new(client.clone(), &effective);
    match js.account_info().await {
        Ok(account) => {
            if account.domain.is_empty() {
                columns.section("JetStream Account Information");
            } else {
                columns.section(&format!(
                    "JetStream Account Information for domain {}",
                    account.domain
                ));
            }
            columns.section("Account Usage");
            columns.row_if_not_empty("Domain", &account.domain);
            columns.row("Storage", ibytes(account.totals.storage));
            columns.row("Memory", ibytes(account.totals.memory));
            columns.row("Streams", comma(account.totals.streams));
            columns.row("Consumers", comma(account.totals.consumers));
            columns.section("Account Limits");
            columns.row("Max Message Payload", ibytes(info.max_payload as u64));
            if account.tiers.is_empty() {
                render_tier(&mut columns, "Default", &account.totals);
            } else {
                for (name, tier) in &account.tiers {
                    render_tier(&mut columns, name, tier);
                }
            }
        }
        Err(CliError::Timeout) => {
            columns.line(&[]);
            columns.line(&["   No response from JetStream server"]);
        }
        Err(error)
            if matches!(error, CliError::NoResponders)
                || error.to_string().contains("no responders")
                || error.api_err_code() == Some(10039) =>
        {
            columns.line(&[]);
            columns.line(&["   JetStream is not supported in this account"]);
        }
        Err(error) => {
            columns.line(&[]);
            let text = error.to_string();
            columns.line(&["   Could not obtain account information: ", &text]);
        }
    }
    print!("{}", columns.render());
    Ok(())
}

/// `$SYS.REQ.USER.INFO` with natscli's one-second wait; any failure (no responder, an
/// error answer, a permission denial) leaves the user rows out, as natscli does.
async fn user_info(client: &async_nats::Client, trace: bool) -> Option<UserInfo> {
    const SUBJECT: &str = "$SYS.REQ.USER.INFO";
    if trace {
        crate::output::log_line(&format!(">>> {SUBJECT}: {{}}"));
    }
    let reply = tokio::time::timeout(
        Duration::from_secs(1),
        client.request(SUBJECT, bytes::Bytes::new()),
    )
    .await
    .ok()?
    .ok()?;
    if trace {
        crate::output::log_line(&format!("<<< {}", String::from_utf8_lossy(&reply.payload)));
    }
    let response: UserInfoResponse = serde_json::from_slice(&reply.payload).ok()?;
    if response.error.is_some() {
        return None;
    }
    response.data
}

fn render_permission(columns: &mut Columns, title: &str, permission: Option<&SubjectPermission>) {
    let Some(permission) = permission else {
        return;
    };
    if permission.allow.is_empty() && permission.deny.is_empty() {
        return;
    }
    columns.indent(2);
    columns.line(&[title]);
    if !permission.allow.is_empty() {
        columns.strings_as_value("Allow", &permission.allow);
    }
    if !permission.deny.is_empty() {
        columns.line(&[]);
        columns.strings_as_value("Deny", &permission.deny);
    }
    columns.indent(0);
}

/// natscli's `renderTier`: configuration requirements, then usage against each limit.
fn render_tier(columns: &mut Columns, name: &str, tier: &AccountTier) {
    let limits = &tier.limits;
    columns.indent(2);
    columns.section(&format!("Tier: {name}"));
    columns.indent(6);
    columns.section("Configuration Requirements");
    columns.row("Stream Requires Max Bytes Set", limits.max_bytes_required);
    if limits.max_ack_pending <= 0 {
        columns.row("Consumer Maximum Ack Pending", "Unlimited");
    } else {
        columns.row(
            "Consumer Maximum Ack Pending",
            comma(limits.max_ack_pending),
        );
    }
    columns.section("Stream Resource Usage Limits");
    let usage = |used: u64, limit: i64, reserved: u64| {
        let reserved = if reserved > 0 {
            format!("({} reserved)", ibytes(reserved))
        } else {
            String::new()
        };
        // natscli's "%s of %s %s" keeps the space before an empty reservation.
        if limit == -1 {
            format!("{} of Unlimited {reserved}", ibytes(used))
        } else {
            format!(
                "{} of {} {reserved}",
                ibytes(used),
                ibytes(limit.max(0) as u64)
            )
        }
    };
    let per_stream = |limit: i64| {
        if limit <= 0 {
            "Unlimited".to_string()
        } else {
            ibytes(limit as u64)
        }
    };
    columns.row(
        "Memory",
        usage(tier.memory, limits.max_memory, tier.reserved_memory),
    );
    columns.row(
        "Memory Per Stream",
        per_stream(limits.memory_max_stream_bytes),
    );
    columns.row(
        "Storage",
        usage(tier.storage, limits.max_storage, tier.reserved_storage),
    );
    columns.row(
        "Storage Per Stream",
        per_stream(limits.storage_max_stream_bytes),
    );
    if limits.max_streams == -1 {
        columns.row("Streams", format!("{} of Unlimited", comma(tier.streams)));
    } else {
        columns.row(
            "Streams",
            format!("{} of {}", comma(tier.streams), comma(limits.max_streams)),
        );
    }
    if limits.max_consumers == -1 {
        columns.row("Consumers", "Unlimited");
    } else {
        columns.row(
            "Consumers",
            format!("Maximum {} per stream", comma(limits.max_consumers)),
        );
    }
    columns.indent(0);
}

/// nats.go's server version check: `v2.10.0`-style text compared part by part; text that
/// is not a version counts as too old.
fn version_at_least(version: &str, minimum: (u64, u64, u64)) -> bool {
    let mut parts = version
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .map(|part| part.parse::<u64>().ok());
    let (Some(Some(major)), minor, patch) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let minor = minor.flatten().unwrap_or(0);
    let patch = patch.flatten().unwrap_or(0);
    (major, minor, patch) >= minimum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_server_versions() {
        assert!(version_at_least("2.15.1", (2, 10, 0)));
        assert!(version_at_least("v2.10.0-beta", (2, 10, 0)));
        assert!(!version_at_least("2.9.25", (2, 10, 0)));
        assert!(!version_at_least("unknown", (2, 10, 0)));
    }

    #[test]
    fn renders_a_default_tier_as_natscli() {
        let mut columns = Columns::new("");
        let tier = AccountTier {
            memory: 0,
            storage: 2048,
            streams: 1,
            limits: jetstream_api::account::AccountLimits::default(),
            ..Default::default()
        };
        render_tier(&mut columns, "Default", &tier);
        let text = columns.render();
        assert!(text.contains("\n  Tier: Default:\n\n      Configuration Requirements:\n\n"));
        assert!(text.contains("      Stream Requires Max Bytes Set: false\n"));
        assert!(text.contains(" Storage: 2.0 KiB of Unlimited \n"));
        assert!(text.contains(" Streams: 1 of Unlimited\n"));
        assert!(text.contains(" Consumers: Unlimited\n"));
        let consumers = text
            .lines()
            .find(|line| line.contains("Consumers:"))
            .unwrap();
        // Labels line up with the longest in the report, after the indent.
        assert_eq!(consumers.find(':'), Some(6 + 2 + 29));
    }
}
