//! The command line, spelled as nats-server spells it: Go `flag` package conventions, so
//! single-dash multi-letter flags (`-js`, `-sd`, `-DV`), `-flag value`, `-flag=value`, and
//! `--long` all work. Parsed by hand because clap fights single-dash long flags.
//!
//! `main` parses argv here, loads the config file, then [`Flags::apply`] overrides it.

use crate::config::Options;
use std::path::PathBuf;

/// Printed for `-h`, and after a flag error (as nats-server does).
pub const USAGE: &str = "
Usage: nats-server [options]

Server Options:
    -a, --addr, --net <host>         Bind to host address (default: 0.0.0.0)
    -p, --port <port>                Use port for clients (default: 4222)
    -n, --name
        --server_name <server_name>  Server name (default: auto)
    -P, --pid <file>                 File to store PID
    -m, --http_port <port>           Use port for http monitoring
    -ms,--https_port <port>          Use port for https monitoring
    -c, --config <file>              Configuration file
    -t                               Test configuration and exit
        --ports_file_dir <dir>       Creates a ports file in the specified directory (<executable_name>_<pid>.ports).

Logging Options:
    -l, --log <file>                 File to redirect log output
    -T, --logtime                    Timestamp log entries (default: true)
    -D, --debug                      Enable debugging output
    -V, --trace                      Trace the raw protocol
    -DV                              Debug and trace

JetStream Options:
    -js, --jetstream                 Enable JetStream functionality
    -sd, --store_dir <dir>           Set the storage directory

TLS Options:
        --tls                        Enable TLS, do not verify clients (default: false)
        --tlscert <file>             Server certificate file
        --tlskey <file>              Private key for server certificate
        --tlsverify                  Enable TLS, verify client certificates
        --tlscacert <file>           Client certificate CA for verification

Cluster Options:
        --routes <rurl-1, rurl-2>    Routes to solicit and connect
        --cluster <cluster-url>      Cluster URL for solicited routes
        --cluster_listen <url>       Cluster URL from which members can solicit routes
        --cluster_name <string>      Cluster Name, if not set one will be dynamically generated
        --no_advertise <bool>        Do not advertise known cluster information to clients
        --cluster_advertise <str>    Cluster URL to advertise to other servers
        --connect_retries <number>   For implicit routes, number of connect retries

Authorization Options:
        --user <user>                User required for connections
        --pass <password>            Password required for connections
        --auth <token>               Authorization token required for connections

Common Options:
    -h, --help                       Show this message
    -v, --version                    Show version
";

/// What the command line asked for. `None` fields leave the config file's value alone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Flags {
    pub config: Option<PathBuf>,
    pub test_config: bool,
    pub help: bool,
    pub version: bool,
    pub host: Option<String>,
    pub port: Option<i64>,
    pub server_name: Option<String>,
    pub pid_file: Option<PathBuf>,
    pub http_port: Option<i64>,
    pub https_port: Option<i64>,
    pub ports_file_dir: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
    pub logtime: Option<bool>,
    pub logtime_utc: Option<bool>,
    pub debug: Option<bool>,
    pub trace: Option<bool>,
    pub jetstream: Option<bool>,
    pub store_dir: Option<PathBuf>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub token: Option<String>,
    /// `--tls` (`Some(false)` for `--tls=false`, which turns TLS off).
    pub tls: Option<bool>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub tls_ca_cert: Option<PathBuf>,
    pub tls_verify: Option<bool>,
    /// `--cluster`/`--cluster_listen`: the route listener URL.
    pub cluster_listen: Option<String>,
    /// `--routes`: comma-separated route URLs.
    pub routes: Option<String>,
    pub cluster_name: Option<String>,
    pub cluster_advertise: Option<String>,
    pub no_advertise: Option<bool>,
    pub connect_retries: Option<i64>,
    /// `-sl`/`--signal <command>[=<pid>]`: signal a running server instead of starting one.
    pub signal: Option<String>,
}

/// A flag error, worded as Go's flag package words it.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    #[error("flag provided but not defined: -{0}")]
    Unknown(String),
    #[error("flag needs an argument: -{0}")]
    MissingValue(String),
    #[error("invalid value {value:?} for flag -{flag}: parse error")]
    InvalidValue { flag: String, value: String },
}

enum Kind {
    Bool,
    Value,
}

fn kind_of(name: &str) -> Option<Kind> {
    Some(match name {
        "t" | "D" | "debug" | "V" | "trace" | "VV" | "DV" | "DVV" | "js" | "jetstream" | "h"
        | "help" | "v" | "version" | "T" | "logtime" | "logtime_utc" | "s" | "syslog" | "tls"
        | "tlsverify" | "help_tls" | "no_advertise" => Kind::Bool,
        "a" | "addr" | "net" | "p" | "port" | "n" | "name" | "server_name" | "P" | "pid" | "m"
        | "http_port" | "c" | "config" | "ports_file_dir" | "l" | "log" | "sd" | "store_dir"
        | "user" | "pass" | "auth" | "client_advertise" | "r" | "remote_syslog"
        | "log_size_limit" | "max_traced_msg_len" | "ms" | "https_port" | "sl" | "signal"
        | "routes" | "cluster" | "cluster_name" | "cluster_advertise" | "connect_retries"
        | "cluster_listen" | "profile" | "tlscert" | "tlskey" | "tlscacert" => Kind::Value,
        _ => return None,
    })
}

fn parse_bool(flag: &str, value: &str) -> Result<bool, FlagError> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(FlagError::InvalidValue {
            flag: flag.into(),
            value: value.into(),
        }),
    }
}

fn parse_int(flag: &str, value: &str) -> Result<i64, FlagError> {
    value.parse().map_err(|_| FlagError::InvalidValue {
        flag: flag.into(),
        value: value.into(),
    })
}

impl Flags {
    /// Parse the arguments after the program name.
    pub fn parse<I: IntoIterator<Item = String>>(arguments: I) -> Result<Flags, FlagError> {
        let mut flags = Flags::default();
        let mut arguments = arguments.into_iter();
        while let Some(argument) = arguments.next() {
            // Go's flag package stops at the first non-flag argument and at "--".
            if argument == "--" || !argument.starts_with('-') || argument == "-" {
                break;
            }
            let trimmed = argument
                .strip_prefix("--")
                .unwrap_or_else(|| &argument[1..]);
            let (name, inline_value) = match trimmed.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (trimmed, None),
            };
            let kind = kind_of(name).ok_or_else(|| FlagError::Unknown(name.to_string()))?;
            match kind {
                Kind::Bool => {
                    let value = match &inline_value {
                        Some(value) => parse_bool(name, value)?,
                        None => true,
                    };
                    flags.set_bool(name, value);
                }
                Kind::Value => {
                    let value = match inline_value {
                        Some(value) => value,
                        None => arguments
                            .next()
                            .ok_or_else(|| FlagError::MissingValue(name.to_string()))?,
                    };
                    flags.set_value(name, value)?;
                }
            }
        }
        Ok(flags)
    }

    fn set_bool(&mut self, name: &str, value: bool) {
        match name {
            "t" => self.test_config = value,
            "D" | "debug" => self.debug = Some(value),
            "V" | "trace" | "VV" => self.trace = Some(value),
            "DV" | "DVV" => {
                self.debug = Some(value);
                self.trace = Some(value);
            }
            "js" | "jetstream" => self.jetstream = Some(value),
            "h" | "help" | "help_tls" => self.help = value,
            "v" | "version" => self.version = value,
            "T" | "logtime" => self.logtime = Some(value),
            "logtime_utc" => self.logtime_utc = Some(value),
            "tls" => self.tls = Some(value),
            "tlsverify" => self.tls_verify = Some(value),
            "no_advertise" => self.no_advertise = Some(value),
            // Accepted for compatibility; not implemented (see docs/parity.md).
            _ => {}
        }
    }

    fn set_value(&mut self, name: &str, value: String) -> Result<(), FlagError> {
        match name {
            "a" | "addr" | "net" => self.host = Some(value),
            "p" | "port" => self.port = Some(parse_int(name, &value)?),
            "n" | "name" | "server_name" => self.server_name = Some(value),
            "P" | "pid" => self.pid_file = Some(value.into()),
            "m" | "http_port" => self.http_port = Some(parse_int(name, &value)?),
            "ms" | "https_port" => self.https_port = Some(parse_int(name, &value)?),
            "c" | "config" => self.config = Some(value.into()),
            "ports_file_dir" => self.ports_file_dir = Some(value.into()),
            "l" | "log" => self.log_file = Some(value.into()),
            "sd" | "store_dir" => self.store_dir = Some(value.into()),
            "user" => self.user = Some(value),
            "pass" => self.password = Some(value),
            "auth" => self.token = Some(value),
            "tlscert" => self.tls_cert = Some(value.into()),
            "tlskey" => self.tls_key = Some(value.into()),
            "tlscacert" => self.tls_ca_cert = Some(value.into()),
            "cluster" | "cluster_listen" => self.cluster_listen = Some(value),
            "routes" => self.routes = Some(value),
            "cluster_name" => self.cluster_name = Some(value),
            "cluster_advertise" => self.cluster_advertise = Some(value),
            "connect_retries" => self.connect_retries = Some(parse_int(name, &value)?),
            "sl" | "signal" => self.signal = Some(value),
            _ => {}
        }
        Ok(())
    }

    /// Flags win over the config file. Any `--tls*` flag replaces the config file's TLS
    /// certificates with the flags' (as nats-server does); `--tls=false` turns TLS off.
    pub fn apply(&self, options: &mut Options) -> Result<(), String> {
        self.apply_plain(options);
        self.apply_cluster(options)?;
        self.apply_tls(options)
    }

    /// The cluster flags override (or create) the `cluster { }` block.
    fn apply_cluster(&self, options: &mut Options) -> Result<(), String> {
        use crate::config::cluster;
        if let Some(url) = &self.cluster_listen {
            cluster::apply_cluster_flag(options, url)?;
        }
        let any = self.routes.is_some()
            || self.cluster_name.is_some()
            || self.cluster_advertise.is_some()
            || self.no_advertise.is_some()
            || self.connect_retries.is_some();
        if !any {
            return Ok(());
        }
        let block = options
            .cluster
            .get_or_insert_with(cluster::ClusterOptions::default);
        if let Some(routes) = &self.routes {
            let texts: Vec<String> = routes
                .split(',')
                .map(str::trim)
                .filter(|text| !text.is_empty())
                .map(str::to_string)
                .collect();
            block.routes = cluster::parse_route_list(&texts)?;
        }
        if let Some(name) = &self.cluster_name {
            if name.contains(' ') {
                return Err("cluster name cannot contain spaces".into());
            }
            block.name = Some(name.clone()).filter(|name| !name.is_empty());
        }
        if let Some(advertise) = &self.cluster_advertise {
            block.advertise = Some(advertise.clone());
        }
        if let Some(no_advertise) = self.no_advertise {
            block.no_advertise = no_advertise;
        }
        if let Some(retries) = self.connect_retries {
            block.connect_retries = retries;
        }
        Ok(())
    }

    fn apply_tls(&self, options: &mut Options) -> Result<(), String> {
        if self.tls == Some(false) {
            options.tls = None;
            return Ok(());
        }
        let any_tls_flag = self.tls.is_some()
            || self.tls_cert.is_some()
            || self.tls_key.is_some()
            || self.tls_ca_cert.is_some()
            || self.tls_verify.is_some();
        if !any_tls_flag {
            return Ok(());
        }
        let Some(cert_file) = self.tls_cert.clone() else {
            return Err("TLS Server certificate must be present and valid".into());
        };
        let Some(key_file) = self.tls_key.clone() else {
            return Err("TLS Server private key must be present and valid".into());
        };
        let previous = options.tls.take().unwrap_or_default();
        let tls = crate::config::TlsOptions {
            cert_file: Some(cert_file),
            key_file: Some(key_file),
            ca_file: self.tls_ca_cert.clone(),
            verify: self.tls_verify.unwrap_or(false),
            map: false,
            ..previous
        };
        crate::config::tls::check_files(&tls)?;
        options.tls = Some(tls);
        Ok(())
    }

    fn apply_plain(&self, options: &mut Options) {
        if let Some(host) = &self.host {
            options.host = host.clone();
        }
        if let Some(port) = self.port {
            options.port = port;
        }
        if let Some(name) = &self.server_name {
            options.server_name = Some(name.clone());
        }
        if let Some(path) = &self.pid_file {
            options.pid_file = Some(path.clone());
        }
        if let Some(port) = self.http_port {
            options.http_port = port;
        }
        if let Some(port) = self.https_port {
            options.https_port = port;
        }
        if let Some(path) = &self.ports_file_dir {
            options.ports_file_dir = Some(path.clone());
        }
        if let Some(path) = &self.log_file {
            options.log_file = Some(path.clone());
        }
        if let Some(logtime_utc) = self.logtime_utc {
            options.logtime_utc = logtime_utc;
        }
        if let Some(logtime) = self.logtime {
            options.logtime = logtime;
        }
        if let Some(debug) = self.debug {
            options.debug = debug;
        }
        if let Some(trace) = self.trace {
            options.trace = trace;
        }
        if let Some(enabled) = self.jetstream {
            options.jetstream.enabled = enabled;
        }
        if let Some(dir) = &self.store_dir {
            options.jetstream.store_dir = Some(dir.clone());
        }
        if let Some(user) = &self.user {
            options.username = Some(user.clone());
        }
        if let Some(password) = &self.password {
            options.password = Some(password.clone());
        }
        if let Some(token) = &self.token {
            options.token = Some(token.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(arguments: &[&str]) -> Result<Flags, FlagError> {
        Flags::parse(arguments.iter().map(|argument| argument.to_string()))
    }

    #[test]
    fn single_dash_long_flags() {
        let flags = parse(&["-js", "-sd", "/tmp/x", "-DV", "-p", "-1", "-m", "8222"]).unwrap();
        assert_eq!(flags.jetstream, Some(true));
        assert_eq!(flags.store_dir, Some(PathBuf::from("/tmp/x")));
        assert_eq!(flags.debug, Some(true));
        assert_eq!(flags.trace, Some(true));
        assert_eq!(flags.port, Some(-1));
        assert_eq!(flags.http_port, Some(8222));
    }

    #[test]
    fn double_dash_and_equals() {
        let flags = parse(&[
            "--port=4333",
            "--addr",
            "127.0.0.1",
            "--user",
            "u",
            "-auth=t",
        ])
        .unwrap();
        assert_eq!(flags.port, Some(4333));
        assert_eq!(flags.host.as_deref(), Some("127.0.0.1"));
        assert_eq!(flags.user.as_deref(), Some("u"));
        assert_eq!(flags.token.as_deref(), Some("t"));
    }

    #[test]
    fn errors_are_worded_like_go_flag() {
        assert_eq!(
            parse(&["--foo"]).unwrap_err().to_string(),
            "flag provided but not defined: -foo"
        );
        assert_eq!(
            parse(&["-p", "abc"]).unwrap_err().to_string(),
            "invalid value \"abc\" for flag -p: parse error"
        );
        assert_eq!(
            parse(&["-p"]).unwrap_err().to_string(),
            "flag needs an argument: -p"
        );
    }

    #[test]
    fn flags_override_config() {
        let mut options = Options {
            port: 5000,
            ..Options::default()
        };
        parse(&["-p", "6000"]).unwrap().apply(&mut options).unwrap();
        assert_eq!(options.port, 6000);
    }
}
