//! Global connection options (`-s/--server`, `NATS_URL`, `--user/--password`, `--token`,
//! `--creds`, `--timeout`, `--context`) merged with the selected natscli context, and the
//! connection they produce. Flags and environment override the context, like natscli.

use std::time::Duration;

use clap::Args;

use crate::context;
use crate::error::CliError;
use crate::output::format::parse_duration;

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

/// What a connection is made with, after merging context and flags.
#[derive(Debug, Clone, Default)]
pub struct Effective {
    pub url: String,
    pub user: String,
    pub password: String,
    pub token: String,
    pub creds: String,
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
        let mut effective = Effective {
            url: pick(&self.server, &settings.url),
            user: pick(&self.user, &settings.user),
            password: pick(&self.password, &settings.password),
            token: pick(&self.token, &settings.token),
            creds: pick(&self.creds, &settings.creds),
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
        // natscli: a user without a password is a token.
        if effective.password.is_empty() && !effective.user.is_empty() && effective.token.is_empty()
        {
            effective.token = std::mem::take(&mut effective.user);
        }
        Ok(effective)
    }

    pub async fn connect(&self) -> Result<(async_nats::Client, Effective), CliError> {
        let effective = self.effective()?;
        let client = connect_with(&effective, self.connection_name.clone()).await?;
        Ok((client, effective))
    }
}

pub async fn connect_with(
    effective: &Effective,
    name: Option<String>,
) -> Result<async_nats::Client, CliError> {
    let mut options = if !effective.creds.is_empty() {
        async_nats::ConnectOptions::with_credentials_file(effective.creds.clone())
            .await
            .map_err(|e| CliError::Connect(format!("could not load credentials: {e}")))?
    } else {
        async_nats::ConnectOptions::new()
    };
    if !effective.user.is_empty() {
        options = options.user_and_password(effective.user.clone(), effective.password.clone());
    } else if !effective.token.is_empty() {
        options = options.token(effective.token.clone());
    }
    if !effective.inbox_prefix.is_empty() {
        options = options.custom_inbox_prefix(effective.inbox_prefix.clone());
    }
    let name = name.unwrap_or_else(|| format!("NATS CLI Version {}", env!("CARGO_PKG_VERSION")));
    options = options
        .name(name)
        .connection_timeout(effective.timeout)
        .request_timeout(Some(effective.timeout))
        .max_reconnects(Some(1))
        // nats.go (natscli's client) buffers up to 512k messages per subscription before it
        // drops any; async-nats' default is 64k, which a busy `bench sub` overruns.
        .subscription_capacity(512 * 1024)
        .event_callback(|event| async move {
            use std::sync::atomic::{AtomicBool, Ordering};
            static REPORTED: AtomicBool = AtomicBool::new(false);
            // Dropped messages are otherwise silent; say so once, as nats.go's error
            // handler does.
            if let async_nats::Event::SlowConsumer(_) = event {
                if !REPORTED.swap(true, Ordering::Relaxed) {
                    eprintln!("nats: slow consumer, messages dropped on connection");
                }
            }
        });
    let servers: Vec<async_nats::ServerAddr> = effective
        .url
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<async_nats::ServerAddr>()
                .map_err(|e| CliError::Connect(format!("invalid server url {s:?}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    options.connect(servers).await.map_err(|error| {
        use async_nats::ConnectErrorKind;
        // nats.go's wording, which natscli prints and scripts match on.
        CliError::Connect(match error.kind() {
            ConnectErrorKind::AuthorizationViolation => "nats: Authorization Violation".to_string(),
            ConnectErrorKind::Io | ConnectErrorKind::TimedOut | ConnectErrorKind::Dns => {
                "nats: no servers available for connection".to_string()
            }
            _ => format!("nats: {error}"),
        })
    })
}
