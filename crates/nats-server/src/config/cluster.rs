//! The `cluster { ... }` block and its command-line flags: where routes listen, which servers
//! to solicit, route authorization, TLS and permissions, and the route-level timers. Errors
//! are nats-server's for the same bad values.

use super::options::{
    auth_timeout, boolean, duration_value, integer, map, not_a, parse_permissions, string, Options,
};
use super::value::{ConfigError, Entry, Value};
use super::Permissions;
use std::time::Duration;

/// nats-server's default cluster port when only `--cluster` names a host.
pub const DEFAULT_CLUSTER_PORT: i64 = 6222;
/// Routes ping at most this often apart (nats-server caps route pings at 30 s).
pub const MAX_ROUTE_PING_INTERVAL: Duration = Duration::from_secs(30);

/// A route to solicit: `nats-route://[user:pass@]host:port`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RouteUrl {
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
}

impl RouteUrl {
    /// Parse `scheme://[user[:pass]@]host:port[/]`; the scheme may be `nats-route`, `nats`,
    /// `route` or `tls`.
    pub fn parse(text: &str) -> Option<RouteUrl> {
        let text = text.trim();
        let (scheme, rest) = text.split_once("://")?;
        if scheme.is_empty() {
            return None;
        }
        let rest = rest.trim_end_matches('/');
        let (credentials, address) = match rest.rsplit_once('@') {
            Some((credentials, address)) => (Some(credentials), address),
            None => (None, rest),
        };
        let (host, port) = address.rsplit_once(':')?;
        let host = host.trim_matches(['[', ']']);
        if host.is_empty() {
            return None;
        }
        let port = port.parse::<u16>().ok()?;
        let (user, password) = match credentials {
            Some(credentials) => match credentials.split_once(':') {
                Some((user, password)) => (Some(user.to_string()), Some(password.to_string())),
                None => (Some(credentials.to_string()), None),
            },
            None => (None, None),
        };
        Some(RouteUrl {
            host: host.to_string(),
            port,
            user,
            password,
        })
    }

    /// `host:port` for dialing and logs.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Everything of `cluster { }`.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterOptions {
    /// `None`: a dynamic name, negotiated with the peers.
    pub name: Option<String>,
    pub host: String,
    /// 0: no route listener (routes are only solicited); -1: a random port.
    pub port: i64,
    pub routes: Vec<RouteUrl>,
    pub advertise: Option<String>,
    pub no_advertise: bool,
    /// Attempts to dial an implicit (gossiped) route; explicit routes retry forever.
    pub connect_retries: i64,
    pub connect_backoff: bool,
    pub username: Option<String>,
    pub password: Option<String>,
    pub auth_timeout: Option<Duration>,
    pub tls: Option<super::TlsOptions>,
    /// `import` (what peers may send us) as publish, `export` (what we send) as subscribe.
    pub permissions: Option<Permissions>,
    /// Accepted for compatibility: we always run one unpooled route per peer.
    pub pool_size: i64,
    pub accounts: Vec<String>,
    pub compression: Option<String>,
    pub ping_interval: Option<Duration>,
    pub ping_max: Option<i64>,
    pub write_deadline: Option<Duration>,
}

impl Default for ClusterOptions {
    fn default() -> ClusterOptions {
        ClusterOptions {
            name: None,
            host: "0.0.0.0".into(),
            port: 0,
            routes: Vec::new(),
            advertise: None,
            no_advertise: false,
            connect_retries: 0,
            connect_backoff: false,
            username: None,
            password: None,
            auth_timeout: None,
            tls: None,
            permissions: None,
            pool_size: 0,
            accounts: Vec::new(),
            compression: None,
            ping_interval: None,
            ping_max: None,
            write_deadline: None,
        }
    }
}

impl ClusterOptions {
    /// The time a route has to authenticate: the configured one, else nats-server's default
    /// (`getDefaultAuthTimeout`: the TLS timeout plus a second with TLS, two seconds without).
    pub fn effective_auth_timeout(&self) -> Duration {
        self.auth_timeout.unwrap_or_else(|| match &self.tls {
            Some(tls) => tls.timeout + Duration::from_secs(1),
            None => super::options::DEFAULT_AUTH_TIMEOUT,
        })
    }

    /// The route ping interval: the cluster's, else the server's, capped at 30 s.
    pub fn route_ping_interval(&self, server: &Options) -> Duration {
        self.ping_interval
            .unwrap_or(server.ping_interval)
            .min(MAX_ROUTE_PING_INTERVAL)
    }

    pub fn auth_required(&self) -> bool {
        self.username.is_some()
    }
}

/// Apply the `cluster` key of a config file.
pub fn apply_cluster(options: &mut Options, entry: &Entry) -> Result<(), ConfigError> {
    let Value::Map(items) = &entry.value else {
        return Err(entry.error(format!(
            "Expected map to define cluster, got {}",
            entry.value.go_type_name()
        )));
    };
    let mut cluster = options.cluster.take().unwrap_or_default();
    for (key, item) in items {
        match key.to_ascii_lowercase().as_str() {
            "name" => {
                let name = string(item)?;
                if name.contains(' ') {
                    return Err(entry.error("cluster name cannot contain spaces"));
                }
                cluster.name = Some(name).filter(|name| !name.is_empty());
            }
            "listen" => {
                let (host, port) = match &item.value {
                    Value::Integer(port) => (String::new(), *port),
                    Value::String(text) => {
                        split_listen(text).map_err(|message| entry.error(message))?
                    }
                    _ => {
                        return Err(item.error(format!(
                            "expected port or host:port, got {}",
                            item.value.go_type_name()
                        )))
                    }
                };
                if !host.is_empty() {
                    cluster.host = host;
                }
                cluster.port = port;
            }
            "host" | "net" => cluster.host = string(item)?,
            "port" => cluster.port = integer(item)?,
            "routes" => {
                let texts: Vec<String> = match &item.value {
                    Value::Array(items) => items.iter().map(string).collect::<Result<_, _>>()?,
                    _ => return Err(not_a(item, "[]interface {}")),
                };
                cluster.routes = parse_route_list(&texts).map_err(|message| item.error(message))?;
            }
            "authorization" => apply_authorization(&mut cluster, item)?,
            "tls" => {
                let mut scratch = Options::default();
                super::tls::apply_tls(&mut scratch, item)?;
                // Both sides of every route: the certificate and key, and the CA that
                // verifies peers (nats-server forces verification on routes).
                if let Some(tls) = &scratch.tls {
                    crate::security::tls::route_client_config(tls)
                        .and_then(|_| crate::security::tls::route_server_config(tls))
                        .map_err(|message| item.error(message))?;
                }
                options.warnings.extend(scratch.warnings);
                cluster.tls = scratch.tls;
            }
            "advertise" | "cluster_advertise" => cluster.advertise = Some(string(item)?),
            "no_advertise" => cluster.no_advertise = boolean(item)?,
            "connect_retries" => cluster.connect_retries = integer(item)?,
            "connect_backoff" => cluster.connect_backoff = boolean(item)?,
            "permissions" => {
                let permissions = parse_permissions(item)?;
                if permissions.responses.is_some() {
                    return Err(item.error("Cluster permissions do not support dynamic responses"));
                }
                cluster.permissions = Some(permissions);
            }
            "pool_size" => cluster.pool_size = integer(item)?,
            "accounts" => {
                cluster.accounts = match &item.value {
                    Value::Array(items) => items.iter().map(string).collect::<Result<_, _>>()?,
                    Value::String(name) => vec![name.clone()],
                    other => {
                        return Err(item.error(format!(
                            "error parsing accounts: unsupported type {}",
                            other.go_type_name()
                        )))
                    }
                }
            }
            "compression" => {
                cluster.compression = Some(match &item.value {
                    Value::Map(_) => "map".into(),
                    Value::String(mode) => mode.clone(),
                    // nats-server: `true` accepts what the peer asks for, `false` is off.
                    Value::Bool(true) => "accept".into(),
                    Value::Bool(false) => "off".into(),
                    other => {
                        return Err(item.error(format!(
                            "field \"compression\" should be a boolean or a structure, got {}",
                            other.go_type_name()
                        )))
                    }
                })
            }
            "ping_interval" => {
                cluster.ping_interval = Some(duration_value(options, key, item)?);
            }
            "ping_max" => cluster.ping_max = Some(integer(item)?),
            "write_deadline" => {
                cluster.write_deadline = Some(duration_value(options, key, item)?);
            }
            _ if item.used_as_variable => {}
            _ => return Err(item.error(format!("unknown field \"{key}\""))),
        }
    }
    options.cluster = Some(cluster);
    Ok(())
}

fn apply_authorization(cluster: &mut ClusterOptions, entry: &Entry) -> Result<(), ConfigError> {
    for (key, item) in map(entry)? {
        match key.to_ascii_lowercase().as_str() {
            "user" | "username" => cluster.username = Some(string(item)?),
            "pass" | "password" => cluster.password = Some(string(item)?),
            "timeout" => cluster.auth_timeout = Some(auth_timeout(item)?),
            "users" => {
                return Err(entry.error("Cluster authorization does not allow multiple users"))
            }
            "token" => return Err(entry.error("Cluster authorization does not support tokens")),
            _ => return Err(item.error(format!("unknown field \"{key}\""))),
        }
    }
    Ok(())
}

/// `host:port` (either part may be empty).
fn split_listen(text: &str) -> Result<(String, i64), String> {
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(format!("could not parse port {text:?}"));
    };
    let port = port
        .parse::<i64>()
        .map_err(|_| format!("could not parse port {port:?}"))?;
    Ok((host.trim_matches(['[', ']']).to_string(), port))
}

/// A list of route URLs, or nats-server's error naming the list.
pub fn parse_route_list(texts: &[String]) -> Result<Vec<RouteUrl>, String> {
    texts
        .iter()
        .map(|text| {
            RouteUrl::parse(text).ok_or_else(|| format!("error parsing route url [{text:?}]"))
        })
        .collect()
}

/// `--cluster nats://host:port`: the route listener (and `--cluster_listen`, its alias).
pub fn apply_cluster_flag(options: &mut Options, url: &str) -> Result<(), String> {
    let cluster = options.cluster.get_or_insert_with(ClusterOptions::default);
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.trim_end_matches('/');
    let address = rest
        .rsplit_once('@')
        .map_or(rest, |(credentials, address)| {
            if let Some((user, password)) = credentials.split_once(':') {
                cluster.username = Some(user.to_string());
                cluster.password = Some(password.to_string());
            }
            address
        });
    let (host, port) = split_listen(address)?;
    if !host.is_empty() {
        cluster.host = host;
    }
    cluster.port = port;
    Ok(())
}

/// Checks nats-server makes before starting a clustered server.
pub fn validate(options: &Options) -> Result<(), String> {
    let Some(cluster) = &options.cluster else {
        return Ok(());
    };
    if options.jetstream.enabled && (cluster.port != 0 || !cluster.routes.is_empty()) {
        if options.server_name.is_none() {
            return Err("jetstream cluster requires `server_name` to be set".into());
        }
        if cluster.name.is_none() {
            return Err("jetstream cluster requires `cluster.name` to be set".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_urls() {
        let url = RouteUrl::parse("nats-route://ruser:T0pS3cr3t@otherdockerhost:6222").unwrap();
        assert_eq!(url.user.as_deref(), Some("ruser"));
        assert_eq!(url.password.as_deref(), Some("T0pS3cr3t"));
        assert_eq!(url.address(), "otherdockerhost:6222");
        assert_eq!(
            RouteUrl::parse("nats://127.0.0.1:4245/").unwrap().port,
            4245
        );
        assert!(RouteUrl::parse("::bad").is_none());
        assert!(RouteUrl::parse("nats://host").is_none());
    }

    #[test]
    fn cluster_block() {
        let items = super::super::parser::parse_str(
            "cluster { name: C1, listen: \"127.0.0.1:6333\", routes: [nats://a:b@127.0.0.1:1234], \
             no_advertise: true, connect_retries: 3, authorization { user: a, password: b, timeout: 2 }, \
             pool_size: 3, compression: off, accounts: [A] }",
            std::path::Path::new("t.conf"),
        )
        .unwrap();
        let mut options = Options::default();
        super::super::options::apply_items(&mut options, &items).unwrap();
        let cluster = options.cluster.unwrap();
        assert_eq!(cluster.name.as_deref(), Some("C1"));
        assert_eq!((cluster.host.as_str(), cluster.port), ("127.0.0.1", 6333));
        assert_eq!(cluster.routes[0].port, 1234);
        assert!(cluster.no_advertise);
        assert_eq!(cluster.connect_retries, 3);
        assert_eq!(cluster.username.as_deref(), Some("a"));
        assert_eq!(cluster.auth_timeout, Some(Duration::from_secs(2)));
    }

    #[test]
    fn bad_values_get_nats_server_errors() {
        let error = |text: &str| {
            let items =
                super::super::parser::parse_str(text, std::path::Path::new("t.conf")).unwrap();
            let mut options = Options::default();
            super::super::options::apply_items(&mut options, &items)
                .unwrap_err()
                .to_string()
        };
        assert!(error("cluster { port: \"abc\" }")
            .ends_with("interface conversion: interface {} is string, not int64"));
        assert!(error("cluster { name: \"a b\", port: 6222 }")
            .ends_with("cluster name cannot contain spaces"));
        assert!(error("cluster { foo: 1 }").ends_with("unknown field \"foo\""));
        assert!(error("cluster { listen: \"x:y\" }").ends_with("could not parse port \"y\""));
        assert!(error("cluster { routes: [\"::bad\"] }")
            .ends_with("error parsing route url [\"::bad\"]"));
        assert!(
            error("cluster { authorization { users: [{user: a, password: b}] } }")
                .ends_with("Cluster authorization does not allow multiple users")
        );
        assert!(error("cluster: 5").ends_with("Expected map to define cluster, got int64"));
        assert!(
            error("cluster { permissions { import: \"a.>\", allow_responses: true } }")
                .ends_with("Cluster permissions do not support dynamic responses")
        );
    }
}
