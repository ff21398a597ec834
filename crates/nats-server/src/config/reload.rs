//! What a config reload may change: the running options compared with the file read again,
//! as nats-server's `diffOptions` compares them. A change nats-server cannot apply refuses
//! the whole reload with its text (`config reload not supported for Port: old=4222,
//! new=4333`); the rest are named in its `Reloaded: ...` log lines.
//!
//! Called by the server's reload (`crate::reload`); knows nothing of connections or sockets.

use super::feature_flags;
use super::options::{duration_text, Options};
use super::ClusterOptions;
use nats_jetstream::JetStreamConfig;

/// What a reload changes, once every change is known to be reloadable.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// nats-server's `Reloaded: ...` notices, in its order.
    pub notices: Vec<String>,
    /// Levels, time stamps or the log file.
    pub logging: bool,
    /// Users, passwords, tokens or permissions: connections are checked again.
    pub authorization: bool,
    /// Figures that only new connections read (INFO's `max_payload`, pings, limits).
    pub limits: bool,
    /// Client TLS (certificates, verification, timeouts, on or off): new connections use it.
    pub tls: bool,
    /// `accounts { }` or the top-level `mappings { }`: the accounts table is updated in place.
    pub accounts: bool,
    /// `cluster { routes }`: removed ones are closed, new ones dialled.
    pub routes: bool,
    /// `jetstream` turned off or on.
    pub jetstream: bool,
    /// `cluster { authorization }` (user, password): routes peers dialled are checked again.
    pub cluster_authorization: bool,
    /// `cluster { permissions }`: interest on the routes follows the new rules.
    pub cluster_permissions: bool,
    /// Raised JetStream `max_memory_store` and `max_file_store` (`None`: unchanged).
    pub jetstream_limits: (Option<i64>, Option<i64>),
    /// Any other `cluster { }` setting rnats reloads (pings, advertise, compression, pool
    /// size): new routes read them; logged as nats-server's `Reloaded: cluster`.
    pub cluster: bool,
}

/// nats-server's notices for client TLS: the TLS config itself (its certificates, CA,
/// verification, versions: `tls = enabled|disabled`), then its timeout and handshake-first
/// settings each with its own line. The file contents are compared by the reload itself
/// (`tls_config_notice`): rotated files under the same paths are a change too.
fn tls_notices(old: &Options, new: &Options, notice: &mut impl FnMut(String)) {
    let config = |options: &Options| {
        options.tls.as_ref().map(|tls| {
            (
                tls.cert_file.clone(),
                tls.key_file.clone(),
                tls.ca_file.clone(),
                tls.verify,
                tls.map,
                tls.minimum_version,
            )
        })
    };
    if config(old) != config(new) {
        notice(tls_config_notice(new));
    }
    let (Some(old), Some(new)) = (&old.tls, &new.tls) else {
        return;
    };
    if old.timeout != new.timeout {
        notice(format!(
            "Reloaded: tls timeout = {}",
            new.timeout.as_secs_f64()
        ));
    }
    if old.handshake_first != new.handshake_first {
        notice(format!(
            "Reloaded: Client TLS handshake first: {}",
            new.handshake_first
        ));
    }
    if old.handshake_first_fallback != new.handshake_first_fallback {
        notice(format!(
            "Reloaded: Client TLS handshake first fallback delay: {}",
            duration_text(new.handshake_first_fallback.unwrap_or_default())
        ));
    }
}

/// `Reloaded: tls = enabled` (or `disabled` when the new config has no TLS).
pub fn tls_config_notice(new: &Options) -> String {
    let state = if new.tls.is_some() {
        "enabled"
    } else {
        "disabled"
    };
    format!("Reloaded: tls = {state}")
}

/// Go's `%v` of an optional text: empty when unset.
fn text(value: &Option<String>) -> &str {
    value.as_deref().unwrap_or("")
}

fn refused(field: &str, old: impl std::fmt::Display, new: impl std::fmt::Display) -> String {
    format!("config reload not supported for {field}: old={old}, new={new}")
}

/// Compare the running options with the reloaded ones.
pub fn diff(old: &Options, new: &Options) -> Result<Changes, String> {
    refuse_fixed(old, new)?;
    let mut changes = Changes::default();
    let mut notice = |text: String| changes.notices.push(text);
    if old.trace != new.trace {
        notice(format!("Reloaded: trace = {}", new.trace));
    }
    if old.debug != new.debug {
        notice(format!("Reloaded: debug = {}", new.debug));
    }
    if old.logtime != new.logtime {
        notice(format!("Reloaded: logtime = {}", new.logtime));
    }
    if old.logtime_utc != new.logtime_utc {
        notice(format!("Reloaded: logtime_utc = {}", new.logtime_utc));
    }
    if old.log_file != new.log_file {
        let path = new
            .log_file
            .as_deref()
            .map(|path| path.display().to_string());
        notice(format!("Reloaded: log_file = {}", text(&path)));
    }
    if old.username != new.username {
        notice("Reloaded: authorization username".into());
    }
    if old.password != new.password {
        notice("Reloaded: authorization password".into());
    }
    if old.token != new.token {
        notice("Reloaded: authorization token".into());
    }
    if old.auth_timeout != new.auth_timeout {
        notice(format!(
            "Reloaded: authorization timeout = {}",
            new.auth_timeout().as_secs_f64()
        ));
    }
    let users_changed =
        old.users != new.users || old.default_permissions != new.default_permissions;
    let plain = |options: &Options| {
        options
            .users
            .iter()
            .filter(|user| user.nkey.is_none())
            .cloned()
            .collect::<Vec<_>>()
    };
    let keyed = |options: &Options| {
        options
            .users
            .iter()
            .filter(|user| user.nkey.is_some())
            .cloned()
            .collect::<Vec<_>>()
    };
    if users_changed
        && (plain(old) != plain(new) || old.default_permissions != new.default_permissions)
    {
        notice("Reloaded: authorization users".into());
    }
    if users_changed && keyed(old) != keyed(new) {
        notice("Reloaded: authorization nkey users".into());
    }
    let accounts_changed = old.accounts != new.accounts || old.mappings != new.mappings;
    if accounts_changed {
        notice("Reloaded: accounts".into());
    }
    if old.max_connections != new.max_connections {
        notice(format!(
            "Reloaded: max_connections = {}",
            new.max_connections
        ));
    }
    if old.pid_file != new.pid_file {
        let path = new
            .pid_file
            .as_deref()
            .map(|path| path.display().to_string());
        notice(format!("Reloaded: pid_file = {}", text(&path)));
    }
    if old.ports_file_dir != new.ports_file_dir {
        let path = new
            .ports_file_dir
            .as_deref()
            .map(|path| path.display().to_string());
        notice(format!("Reloaded: ports_file_dir = {}", text(&path)));
    }
    if old.max_control_line != new.max_control_line {
        notice(format!(
            "Reloaded: max_control_line = {}",
            new.max_control_line
        ));
    }
    if old.max_payload != new.max_payload {
        notice(format!("Reloaded: max_payload = {}", new.max_payload));
    }
    if old.ping_interval != new.ping_interval {
        notice(format!(
            "Reloaded: ping_interval = {}",
            duration_text(new.ping_interval)
        ));
    }
    if old.ping_max != new.ping_max {
        notice(format!("Reloaded: ping_max = {}", new.ping_max));
    }
    if old.write_deadline != new.write_deadline {
        notice(format!(
            "Reloaded: write_deadline = {}",
            duration_text(new.write_deadline)
        ));
    }
    if old.jetstream.enabled != new.jetstream.enabled {
        notice("Reloaded: JetStream".into());
    }
    tls_notices(old, new, &mut notice);
    changes.logging = old.trace != new.trace
        || old.debug != new.debug
        || old.logtime != new.logtime
        || old.logtime_utc != new.logtime_utc
        || old.log_file != new.log_file;
    changes.accounts = accounts_changed;
    changes.jetstream = old.jetstream.enabled != new.jetstream.enabled;
    if old.jetstream.enabled && new.jetstream.enabled {
        // Only raised limits get here (`refuse_jetstream`).
        let raised = |was: Option<i64>, is: Option<i64>| is.filter(|_| was != is);
        changes.jetstream_limits = (
            raised(old.jetstream.max_memory, new.jetstream.max_memory),
            raised(old.jetstream.max_store, new.jetstream.max_store),
        );
    }
    changes.cluster_authorization = match (&old.cluster, &new.cluster) {
        (Some(old), Some(new)) => (&old.username, &old.password) != (&new.username, &new.password),
        _ => false,
    };
    changes.routes = match (&old.cluster, &new.cluster) {
        (Some(old), Some(new)) => old.routes != new.routes,
        _ => false,
    };
    changes.cluster_permissions = match (&old.cluster, &new.cluster) {
        (Some(old), Some(new)) => old.permissions != new.permissions,
        _ => false,
    };
    changes.cluster = match (&old.cluster, &new.cluster) {
        (Some(old), Some(new)) => {
            ClusterOptions {
                routes: Vec::new(),
                ..old.clone()
            } != ClusterOptions {
                routes: Vec::new(),
                ..new.clone()
            }
        }
        _ => false,
    };
    // Users moved between accounts, or accounts gone: connections are checked again.
    changes.authorization = accounts_changed
        || old.username != new.username
        || old.password != new.password
        || old.token != new.token
        || users_changed
        || old.no_auth_user != new.no_auth_user
        || old.tls.as_ref().is_some_and(|tls| tls.map)
            != new.tls.as_ref().is_some_and(|tls| tls.map);
    changes.tls = old.tls != new.tls;
    changes.limits = old.max_connections != new.max_connections
        || old.max_control_line != new.max_control_line
        || old.max_payload != new.max_payload
        || old.ping_interval != new.ping_interval
        || old.ping_max != new.ping_max
        || old.write_deadline != new.write_deadline
        || old.auth_timeout != new.auth_timeout;
    Ok(changes)
}

/// The options nats-server refuses to reload, with its field names and values, in the order
/// of its `Options` struct; and the ones rnats cannot reload yet (see docs/parity.md).
fn refuse_fixed(old: &Options, new: &Options) -> Result<(), String> {
    if old.server_name != new.server_name {
        return Err(refused(
            "ServerName",
            text(&old.server_name),
            text(&new.server_name),
        ));
    }
    if old.host != new.host {
        return Err(refused("Host", &old.host, &new.host));
    }
    // A random port (0 or -1) in the new file keeps the running one, as nats-server.
    if old.port != new.port && new.port > 0 {
        return Err(refused("Port", old.port, new.port));
    }
    if old.max_pending != new.max_pending {
        return Err(refused("MaxPending", old.max_pending, new.max_pending));
    }
    if old.max_subscriptions != new.max_subscriptions {
        return Err(refused(
            "MaxSubs",
            old.max_subscriptions,
            new.max_subscriptions,
        ));
    }
    if old.max_closed_clients != new.max_closed_clients {
        return Err(refused(
            "MaxClosedClients",
            old.max_closed_clients,
            new.max_closed_clients,
        ));
    }
    if old.no_auth_user != new.no_auth_user {
        // Dropping `no_auth_user` is allowed unless that user is still configured.
        let dropped_user_gone = new.no_auth_user.is_none()
            && !new
                .users
                .iter()
                .any(|user| Some(&user.user) == old.no_auth_user.as_ref());
        if !dropped_user_gone {
            return Err(refused(
                "NoAuthUser",
                text(&old.no_auth_user),
                text(&new.no_auth_user),
            ));
        }
    }
    if old.system_account != new.system_account {
        return Err(refused(
            "SystemAccount",
            text(&old.system_account),
            text(&new.system_account),
        ));
    }
    if old.feature_flags != new.feature_flags {
        return Err(refused(
            "FeatureFlags",
            feature_flags::go_text(&old.feature_flags),
            feature_flags::go_text(&new.feature_flags),
        ));
    }
    if old.allow_non_tls != new.allow_non_tls {
        return Err(refused("AllowNonTLS", old.allow_non_tls, new.allow_non_tls));
    }
    if old.http_host != new.http_host {
        return Err(refused(
            "HTTPHost",
            text(&old.http_host),
            text(&new.http_host),
        ));
    }
    if old.http_port != new.http_port {
        return Err(refused("HTTPPort", old.http_port, new.http_port));
    }
    if old.http_base_path != new.http_base_path {
        return Err(refused(
            "HTTPBasePath",
            &old.http_base_path,
            &new.http_base_path,
        ));
    }
    if old.https_port != new.https_port {
        return Err(refused("HTTPSPort", old.https_port, new.https_port));
    }
    refuse_jetstream(&old.jetstream, &new.jetstream)?;
    refuse_cluster(old.cluster.as_ref(), new.cluster.as_ref())?;
    // nats-server refuses every websocket change but its TLS (`reload/mod.rs` applies that).
    let without_tls = |websocket: &Option<super::WebsocketOptions>| {
        websocket.clone().map(|websocket| super::WebsocketOptions {
            tls: None,
            ..websocket
        })
    };
    if without_tls(&old.websocket) != without_tls(&new.websocket) {
        return Err("config reload not supported for Websocket".into());
    }
    Ok(())
}

/// nats-server's JetStream refusals: the storage directory and the memory and store limits
/// stay while JetStream stays on (dropping them is how a file turns it off), a limit may be
/// raised but not lowered; and what rnats cannot reload yet (any other setting while it
/// stays on).
fn refuse_jetstream(old: &JetStreamConfig, new: &JetStreamConfig) -> Result<(), String> {
    if old.domain != new.domain {
        return Err(refused(
            "JetStreamDomain",
            text(&old.domain),
            text(&new.domain),
        ));
    }
    let disabling = old.enabled && !new.enabled;
    if old.enabled && old.store_dir != new.store_dir {
        if new.store_dir.is_some() {
            return Err("config reload not supported for jetstream storage directory".into());
        }
        if !disabling {
            return Err("config reload not supported for jetstream storage dir".into());
        }
    }
    for (was, is) in [
        (old.max_memory, new.max_memory),
        (old.max_store, new.max_store),
    ] {
        if !old.enabled || was == is {
            continue;
        }
        match (was, is) {
            (Some(was), Some(is)) if is < was => {
                return Err(
                    "config reload not supported for decreasing jetstream max memory and store"
                        .into(),
                )
            }
            // A raised limit is applied (`reload/jetstream.rs`).
            (Some(_), Some(_)) => {}
            (None, Some(_)) => {
                return Err(
                    "config reload not supported for jetstream dynamic max memory and store".into(),
                )
            }
            (Some(_), None) if !disabling => {
                return Err(
                    "config reload not supported for jetstream max memory and max store".into(),
                )
            }
            _ => {}
        }
    }
    // Turning JetStream off or on and raising its limits are applied (`reload/jetstream.rs`);
    // any other change while it stays on is not reloadable in rnats yet.
    let without_limits = |config: &JetStreamConfig| JetStreamConfig {
        max_memory: None,
        max_store: None,
        ..config.clone()
    };
    if old.enabled && new.enabled && without_limits(old) != without_limits(new) {
        return Err(refused("JetStream", old.enabled, new.enabled));
    }
    Ok(())
}

/// nats-server's `validateClusterOpts`: the cluster's host and port stay.
fn refuse_cluster(
    old: Option<&ClusterOptions>,
    new: Option<&ClusterOptions>,
) -> Result<(), String> {
    // Without a cluster, nats-server's options hold an empty host and port 0.
    fn host(cluster: Option<&ClusterOptions>) -> &str {
        cluster.map_or("", |cluster| &cluster.host)
    }
    fn port(cluster: Option<&ClusterOptions>) -> i64 {
        cluster.map_or(0, |cluster| cluster.port)
    }
    if host(old) != host(new) {
        return Err(format!(
            "config reload not supported for cluster host: old={}, new={}",
            host(old),
            host(new)
        ));
    }
    // A random port (-1) in the new file keeps the running one, as the client port does.
    if port(old) != port(new) && port(new) >= 0 {
        return Err(format!(
            "config reload not supported for cluster port: old={}, new={}",
            port(old),
            port(new)
        ));
    }
    // Every other cluster setting is reloaded, as nats-server's `clusterOption`: routes,
    // authorization, permissions, pings, advertising, name, TLS, timeouts and retries
    // (`reload/routes.rs`); compression, pool size and dedicated-route accounts are accepted
    // with nothing to change (one unpooled, uncompressed route per peer either way).
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_field_as_nats_server() {
        let old = Options::default();
        let new = Options {
            server_name: Some("two".into()),
            ..Options::default()
        };
        assert_eq!(
            diff(&old, &new).unwrap_err(),
            "config reload not supported for ServerName: old=, new=two"
        );
        let new = Options {
            port: 4333,
            ..Options::default()
        };
        assert_eq!(
            diff(&old, &new).unwrap_err(),
            "config reload not supported for Port: old=4222, new=4333"
        );
        let new = Options {
            port: -1,
            ..Options::default()
        };
        assert!(diff(&old, &new).is_ok());
        let new = Options {
            max_closed_clients: 7,
            ..Options::default()
        };
        assert_eq!(
            diff(&old, &new).unwrap_err(),
            "config reload not supported for MaxClosedClients: old=10000, new=7"
        );
    }

    #[test]
    fn reloadable_changes_are_named() {
        let old = Options::default();
        let new = Options {
            debug: true,
            max_payload: 2048,
            username: Some("a".into()),
            password: Some("b".into()),
            ..Options::default()
        };
        let changes = diff(&old, &new).expect("reloadable");
        assert!(changes.logging && changes.authorization && changes.limits);
        assert_eq!(
            changes.notices,
            [
                "Reloaded: debug = true",
                "Reloaded: authorization username",
                "Reloaded: authorization password",
                "Reloaded: max_payload = 2048",
            ]
        );
        assert_eq!(diff(&old, &Options::default()), Ok(Changes::default()));
    }

    #[test]
    fn cluster_routes_reload_and_host_port_are_refused() {
        let cluster = |port: i64, routes: &[&str]| ClusterOptions {
            port,
            routes: routes
                .iter()
                .filter_map(|url| super::super::RouteUrl::parse(url))
                .collect(),
            ..ClusterOptions::default()
        };
        let old = Options {
            cluster: Some(cluster(6222, &["nats-route://127.0.0.1:6223"])),
            ..Options::default()
        };
        let new = Options {
            cluster: Some(cluster(6222, &["nats-route://127.0.0.1:6224"])),
            ..Options::default()
        };
        let changes = diff(&old, &new).expect("routes reload");
        assert!(changes.routes && !changes.cluster_authorization);
        let guarded = Options {
            cluster: Some(ClusterOptions {
                username: Some("u".into()),
                password: Some("p".into()),
                ..cluster(6222, &["nats-route://127.0.0.1:6223"])
            }),
            ..Options::default()
        };
        let changes = diff(&old, &guarded).expect("authorization reload");
        assert!(changes.cluster_authorization && !changes.routes);
        let permitted = Options {
            cluster: Some(ClusterOptions {
                permissions: Some(crate::config::Permissions::default()),
                ping_max: Some(3),
                ..cluster(6222, &["nats-route://127.0.0.1:6223"])
            }),
            ..Options::default()
        };
        let changes = diff(&old, &permitted).expect("permissions and pings reload");
        assert!(changes.cluster_permissions && changes.cluster && !changes.routes);
        let new = Options {
            cluster: Some(cluster(6333, &[])),
            ..Options::default()
        };
        assert_eq!(
            diff(&old, &new).unwrap_err(),
            "config reload not supported for cluster port: old=6222, new=6333"
        );
        assert_eq!(
            diff(&Options::default(), &old).unwrap_err(),
            "config reload not supported for cluster host: old=, new=0.0.0.0"
        );
        let named = Options {
            cluster: Some(ClusterOptions {
                name: Some("other".into()),
                connect_retries: 5,
                auth_timeout: Some(std::time::Duration::from_secs(5)),
                write_deadline: Some(std::time::Duration::from_secs(5)),
                accounts: vec!["A".into()],
                ..cluster(6222, &["nats-route://127.0.0.1:6223"])
            }),
            ..Options::default()
        };
        let changes = diff(&old, &named).expect("name, timeouts, retries and accounts reload");
        assert!(changes.cluster && !changes.routes);
    }

    #[test]
    fn jetstream_turns_off_and_on_and_its_limits_are_refused_as_nats_server() {
        let on = |max_memory: Option<i64>| Options {
            jetstream: JetStreamConfig {
                enabled: true,
                store_dir: Some("/data".into()),
                max_memory,
                ..JetStreamConfig::default()
            },
            ..Options::default()
        };
        let off = Options::default();
        let changes = diff(&on(Some(100)), &off).expect("turned off");
        assert!(changes.jetstream);
        assert_eq!(changes.notices, ["Reloaded: JetStream"]);
        assert!(diff(&off, &on(Some(100))).expect("turned on").jetstream);
        let changes = diff(&on(Some(100)), &on(Some(200))).expect("raised");
        assert_eq!(changes.jetstream_limits, (Some(200), None));
        for (new, refusal) in [
            (Some(50), "decreasing jetstream max memory and store"),
            (None, "jetstream max memory and max store"),
        ] {
            assert_eq!(
                diff(&on(Some(100)), &on(new)).unwrap_err(),
                format!("config reload not supported for {refusal}")
            );
        }
        assert_eq!(
            diff(&on(None), &on(Some(1))).unwrap_err(),
            "config reload not supported for jetstream dynamic max memory and store"
        );
        let domain = Options {
            jetstream: JetStreamConfig {
                domain: Some("HUB".into()),
                ..on(Some(100)).jetstream
            },
            ..Options::default()
        };
        assert_eq!(
            diff(&on(Some(100)), &domain).unwrap_err(),
            "config reload not supported for JetStreamDomain: old=, new=HUB"
        );
    }

    #[test]
    fn accounts_and_mappings_reload_and_recheck_connections() {
        let old = Options::default();
        let new = Options {
            accounts: vec![crate::config::AccountOptions {
                name: "A".into(),
                ..Default::default()
            }],
            ..Options::default()
        };
        let changes = diff(&old, &new).expect("reloadable");
        assert!(changes.accounts && changes.authorization);
        assert_eq!(changes.notices, ["Reloaded: accounts"]);
    }
}
