//! Global connection options (`-s/--server`, `NATS_URL`, `--user/--password`, `--token`,
//! `--creds`, `--nkey`, `--jwt/--seed`, `--tlscert/--tlskey/--tlsca/--tlsfirst`, `--timeout`,
//! `--context`) merged with the selected natscli context into [`Effective`]. Flags and
//! environment override the context, like natscli. `connection.rs` turns the result into a
//! connection.

use std::time::Duration;

use clap::Args;

use crate::context;
use crate::error::CliError;
use crate::output::format::parse_duration;

pub use crate::connection::connect_with;

/// natscli's default when neither flag, environment nor context names a server.
pub const DEFAULT_URL: &str = "nats://127.0.0.1:4222";

#[derive(Args, Debug, Clone, Default)]
pub struct GlobalOptions {
    /// NATS server urls
    #[arg(long, short = 's', env = "NATS_URL", global = true, value_name = "URL")]
    pub server: Option<String>,
    /// Username or Token
    #[arg(long, env = "NATS_USER", global = true, value_name = "USER")]
    pub user: Option<String>,
    /// Password
    #[arg(long, env = "NATS_PASSWORD", global = true, value_name = "PASSWORD")]
    pub password: Option<String>,
    /// Token
    #[arg(long, env = "NATS_TOKEN", global = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// User credentials
    #[arg(long, env = "NATS_CREDS", global = true, value_name = "LOCATION")]
    pub creds: Option<String>,
    /// User NKEY
    #[arg(long, env = "NATS_NKEY", global = true, value_name = "LOCATION")]
    pub nkey: Option<String>,
    /// User JWT
    #[arg(long, env = "NATS_JWT", global = true, value_name = "LOCATION")]
    pub jwt: Option<String>,
    /// User seed
    #[arg(long, env = "NATS_SEED", global = true, value_name = "LOCATION")]
    pub seed: Option<String>,
    /// TLS public certificate
    #[arg(long, env = "NATS_CERT", global = true, value_name = "FILE", value_parser = existing_file)]
    pub tlscert: Option<String>,
    /// TLS private key
    #[arg(long, env = "NATS_KEY", global = true, value_name = "FILE", value_parser = existing_file)]
    pub tlskey: Option<String>,
    /// TLS certificate authority chain
    #[arg(long, env = "NATS_CA", global = true, value_name = "FILE", value_parser = existing_file)]
    pub tlsca: Option<String>,
    /// Perform TLS handshake before expecting the server greeting
    #[arg(long, global = true, alias = "tls-first")]
    pub tlsfirst: bool,
    /// Nickname to use for the underlying NATS Connection
    #[arg(long, global = true, value_name = "NAME")]
    pub connection_name: Option<String>,
    /// Time to wait on responses from NATS
    #[arg(long, env = "NATS_TIMEOUT", global = true, default_value = "5s", value_parser = parse_timeout)]
    pub timeout: Duration,
    /// JetStream domain to access
    #[arg(long, global = true, value_name = "DOMAIN")]
    pub js_domain: Option<String>,
    /// Subject prefix for access to JetStream API
    #[arg(long, global = true, value_name = "PREFIX")]
    pub js_api_prefix: Option<String>,
    /// Subject prefix for access to JetStream Advisories
    #[arg(long, global = true, value_name = "PREFIX")]
    pub js_event_prefix: Option<String>,
    /// Custom inbox prefix to use for inboxes
    #[arg(long, global = true, value_name = "PREFIX")]
    pub inbox_prefix: Option<String>,
    /// Configuration context
    #[arg(long, env = "NATS_CONTEXT", global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// Disable the selected context
    #[arg(long, global = true)]
    pub no_context: bool,
    /// Trace API interactions
    #[arg(long, global = true)]
    pub trace: bool,
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

/// natscli's `ExistingFileVar`: the flag names a file that must exist.
fn existing_file(text: &str) -> Result<String, String> {
    match std::fs::metadata(text) {
        Ok(metadata) if metadata.is_dir() => Err(format!("'{text}' is a directory")),
        Ok(_) => Ok(text.to_string()),
        Err(_) => Err(format!("path '{text}' does not exist")),
    }
}

/// What a connection is made with, after merging context and flags.
#[derive(Debug, Clone, Default)]
pub struct Effective {
    pub url: String,
    pub user: String,
    pub password: String,
    pub token: String,
    pub creds: String,
    pub nkey: String,
    pub user_jwt: String,
    pub user_seed: String,
    pub cert: String,
    pub key: String,
    pub ca: String,
    pub tls_first: bool,
    pub inbox_prefix: String,
    pub api_prefix: String,
    pub timeout: Duration,
    pub trace: bool,
}

impl GlobalOptions {
    pub fn effective(&self) -> Result<Effective, CliError> {
        let mut settings = context::ContextSettings::default();
        if !self.no_context {
            let name = match &self.context {
                Some(name) if !name.is_empty() => name.clone(),
                _ => context::selected_context(),
            };
            if !name.is_empty() {
                settings = context::load_context(&name)?;
            }
        }
        let pick = |flag: &Option<String>, saved: &str| match flag {
            Some(value) => value.clone(),
            None => saved.to_string(),
        };
        // natscli: a --user without a --password is a token; otherwise both override the
        // context's user and password.
        let flag_user = self.user.clone().filter(|user| !user.is_empty());
        let flag_password = self
            .password
            .clone()
            .filter(|password| !password.is_empty());
        let (user, password, token) = match (&flag_user, &flag_password) {
            (Some(user), None) => (
                settings.user.clone(),
                settings.password.clone(),
                user.clone(),
            ),
            _ => (
                pick(&flag_user, &settings.user),
                pick(&flag_password, &settings.password),
                pick(&self.token, &settings.token),
            ),
        };
        let mut effective = Effective {
            url: pick(&self.server, &settings.url),
            user,
            password,
            token,
            creds: pick(&self.creds, &settings.creds),
            nkey: pick(&self.nkey, &settings.nkey),
            user_jwt: pick(&self.jwt, &settings.user_jwt),
            user_seed: pick(&self.seed, &settings.user_seed),
            cert: pick(&self.tlscert, &settings.cert),
            key: pick(&self.tlskey, &settings.key),
            ca: pick(&self.tlsca, &settings.ca),
            tls_first: self.tlsfirst || settings.tls_first,
            inbox_prefix: pick(&self.inbox_prefix, &settings.inbox_prefix),
            api_prefix: String::new(),
            timeout: self.timeout,
            trace: self.trace,
        };
        let domain = pick(&self.js_domain, &settings.jetstream_domain);
        let api_prefix = pick(&self.js_api_prefix, &settings.jetstream_api_prefix);
        effective.api_prefix = if !domain.is_empty() {
            format!("$JS.{domain}.API")
        } else if !api_prefix.is_empty() {
            api_prefix.trim_end_matches('.').to_string()
        } else {
            "$JS.API".to_string()
        };
        if effective.url.is_empty() {
            effective.url = DEFAULT_URL.to_string();
        }
        Ok(effective)
    }

    pub async fn connect(&self) -> Result<(async_nats::Client, Effective), CliError> {
        let effective = self.effective()?;
        let client = connect_with(&effective, self.connection_name.clone()).await?;
        Ok((client, effective))
    }
}
