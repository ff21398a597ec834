//! Turns the merged connection settings ([`Effective`]) into an async-nats connection the way
//! jsm.go's `NATSOptions` and nats.go do for natscli: one authentication method chosen in
//! natscli's order (user/password, credentials, nkey seed file, JWT with seed), a token on
//! top, client certificates and a CA (either makes TLS required, as nats.go's `ClientCert`
//! and `RootCAs` do), TLS first, and nats.go's error wording for failed connections.
//! Called by every command through `GlobalOptions::connect` / `connect_with`; knows nothing
//! of contexts or flags.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::CliError;
use crate::options::Effective;

pub async fn connect_with(
    effective: &Effective,
    name: Option<String>,
) -> Result<async_nats::Client, CliError> {
    let servers = server_addresses(&effective.url)?;
    let mut options = authentication(effective, url_credentials(&servers)).await?;
    options = tls(options, effective);
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
    options.connect(servers).await.map_err(|error| {
        use async_nats::ConnectErrorKind;
        // nats.go's wording, which natscli prints and scripts match on.
        CliError::Connect(match error.kind() {
            ConnectErrorKind::AuthorizationViolation => "nats: Authorization Violation".to_string(),
            ConnectErrorKind::Io => match tls_failure(&error) {
                // A server without TLS answers the ClientHello in plain text.
                Some(cause) if cause.contains("InvalidContentType") => {
                    "nats: secure connection not available".to_string()
                }
                Some(cause) => format!("nats: tls: {cause}"),
                None => "nats: no servers available for connection".to_string(),
            },
            ConnectErrorKind::TimedOut | ConnectErrorKind::Dns => {
                "nats: no servers available for connection".to_string()
            }
            _ => format!("nats: {error}"),
        })
    })
}

fn server_addresses(urls: &str) -> Result<Vec<async_nats::ServerAddr>, CliError> {
    urls.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<async_nats::ServerAddr>()
                .map_err(|e| CliError::Connect(format!("invalid server url {s:?}: {e}")))
        })
        .collect()
}

/// Credentials written in a server URL (`nats://user:pass@host`, `nats://token@host`).
#[derive(Debug, PartialEq)]
enum UrlCredentials {
    UserPassword(String, String),
    Token(String),
}

/// nats.go reads the user information of the URL it connects to: a user with a password
/// is a user and password, a user alone is a token; either replaces `--user`/`--password`
/// and `--token`. async-nats ignores it, so it is taken here (from the first URL that has
/// one, percent-decoded).
fn url_credentials(servers: &[async_nats::ServerAddr]) -> Option<UrlCredentials> {
    let server = servers.iter().find(|server| server.has_user_pass())?;
    let user = percent_decode(server.username()?);
    Some(match server.password() {
        Some(password) => UrlCredentials::UserPassword(user, percent_decode(password)),
        None => UrlCredentials::Token(user),
    })
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes
            .get(index + 1..index + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[index], hex) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                index += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// The reason a TLS handshake failed (rustls reports it as invalid data), so an unknown
/// issuer or a refused client certificate is named instead of "no servers available".
fn tls_failure(error: &async_nats::ConnectError) -> Option<String> {
    let source = std::error::Error::source(error)?;
    let io = source.downcast_ref::<std::io::Error>()?;
    (io.kind() == std::io::ErrorKind::InvalidData).then(|| io.to_string())
}

/// jsm.go's order: a user wins over credentials, credentials over an nkey, an nkey over a
/// JWT; a token is sent whatever else is set.
async fn authentication(
    effective: &Effective,
    from_url: Option<UrlCredentials>,
) -> Result<async_nats::ConnectOptions, CliError> {
    let mut options = async_nats::ConnectOptions::new();
    let url_token = match from_url {
        Some(UrlCredentials::UserPassword(user, password)) => {
            return Ok(options.user_and_password(user, password));
        }
        Some(UrlCredentials::Token(token)) => Some(token),
        None => None,
    };
    if url_token.is_none() && !effective.user.is_empty() {
        let password = resolve_literal(&effective.password, "password")?;
        options = options.user_and_password(effective.user.clone(), password);
    } else if !effective.creds.is_empty() {
        options = credentials(options, &effective.creds).await?;
    } else if !effective.nkey.is_empty() {
        let contents = resolve_file(&effective.nkey, "nkey")?;
        let seed = decorated_seed(&contents)
            .ok_or_else(|| CliError::message("nkey: no nkey seed found"))?;
        nkeys::KeyPair::from_seed(&seed)
            .map_err(|error| CliError::message(format!("nkey: {error}")))?;
        options = options.nkey(seed);
    } else if !effective.user_jwt.is_empty() {
        let jwt = resolve_literal(&effective.user_jwt, "user_jwt")?;
        if effective.user_seed.is_empty() {
            // nats.go's UserJWT with a signer that signs nothing: for servers that accept
            // a bearer JWT.
            options = options.jwt(jwt, |_| async { Ok(Vec::new()) });
        } else {
            let seed = resolve_literal(&effective.user_seed, "user_seed")?;
            let key_pair = Arc::new(
                nkeys::KeyPair::from_seed(seed.trim())
                    .map_err(|error| CliError::message(format!("user_seed: {error}")))?,
            );
            options = options.jwt(jwt, move |nonce| {
                let key_pair = key_pair.clone();
                async move { key_pair.sign(&nonce).map_err(async_nats::AuthError::new) }
            });
        }
    }
    if let Some(token) = url_token {
        options = options.token(token);
    } else if !effective.token.is_empty() {
        options = options.token(resolve_literal(&effective.token, "token")?);
    }
    Ok(options)
}

async fn credentials(
    options: async_nats::ConnectOptions,
    reference: &str,
) -> Result<async_nats::ConnectOptions, CliError> {
    let loaded = match file_reference(reference) {
        Some(path) => options.credentials_file(path).await,
        None => options.credentials(&resolve_file(reference, "creds")?),
    };
    loaded.map_err(|e| CliError::Connect(format!("could not load credentials: {e}")))
}

/// nats.go's `ClientCert` and `RootCAs` both make TLS required.
fn tls(
    mut options: async_nats::ConnectOptions,
    effective: &Effective,
) -> async_nats::ConnectOptions {
    if !effective.cert.is_empty() && !effective.key.is_empty() {
        options = options
            .add_client_certificate(expand_path(&effective.cert), expand_path(&effective.key))
            .require_tls(true);
    }
    if !effective.ca.is_empty() {
        options = options
            .add_root_certificates(expand_path(&effective.ca))
            .require_tls(true);
    }
    if effective.tls_first {
        options = options.tls_first();
    }
    options
}

/// The seed in an nkey seed file, bare or decorated (`-----BEGIN USER NKEY SEED-----`
/// blocks, or a credentials file): the first line holding an operator, account or user
/// seed, as nkeys' `ParseDecoratedNKey` finds it.
pub fn decorated_seed(contents: &str) -> Option<String> {
    contents
        .lines()
        .map(str::trim)
        .find(|line| ["SO", "SA", "SU"].iter().any(|kind| line.starts_with(kind)))
        .map(str::to_string)
}

/// The URI scheme of a context value, jsm.go's way: at least two letters before `:`, so a
/// Windows drive letter is a path.
fn scheme(reference: &str) -> Option<&str> {
    let (scheme, _) = reference.split_once(':')?;
    let valid = scheme.len() >= 2
        && scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
}

/// A path for a value that names a file (bare or `file://`), None for other schemes.
fn file_reference(reference: &str) -> Option<PathBuf> {
    match scheme(reference).map(str::to_ascii_lowercase).as_deref() {
        None => Some(expand_path(reference)),
        Some("file") => Some(expand_path(strip_prefix_ignore_case(reference, "file://"))),
        Some(_) => None,
    }
}

/// The contents behind a value that names a file by default (creds, nkey): a path,
/// `file://`, `env://NAME` or `data:;base64,...`.
fn resolve_file(reference: &str, field: &str) -> Result<String, CliError> {
    match file_reference(reference) {
        Some(path) => std::fs::read_to_string(&path)
            .map_err(|error| CliError::message(format!("{field}: {}: {error}", path.display()))),
        None => resolve_scheme(reference, field),
    }
}

/// A value that is itself the secret unless it names a source (`file://`, `env://`,
/// `data:`), as jsm.go resolves passwords, tokens, JWTs and seeds.
/// Any other text, even one that looks like `word:...`, is the value itself.
fn resolve_literal(reference: &str, field: &str) -> Result<String, CliError> {
    let known = scheme(reference)
        .map(str::to_ascii_lowercase)
        .is_some_and(|scheme| RESOLVED_SCHEMES.contains(&scheme.as_str()));
    if !known {
        return Ok(reference.to_string());
    }
    Ok(resolve_scheme(reference, field)?
        .trim_end_matches(['\r', '\n'])
        .to_string())
}

/// The schemes jsm.go resolves by default; `op://` (1Password) and `nsc://` are refused
/// with an error rather than sent to the server as a literal.
const RESOLVED_SCHEMES: [&str; 5] = ["file", "env", "data", "op", "nsc"];

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> &'a str {
    match text.get(..prefix.len()) {
        Some(head) if head.eq_ignore_ascii_case(prefix) => &text[prefix.len()..],
        _ => text,
    }
}

fn resolve_scheme(reference: &str, field: &str) -> Result<String, CliError> {
    let lower = reference.to_ascii_lowercase();
    if lower.starts_with("file://") {
        let path = expand_path(strip_prefix_ignore_case(reference, "file://"));
        return std::fs::read_to_string(&path)
            .map_err(|error| CliError::message(format!("{field}: {}: {error}", path.display())));
    }
    if lower.starts_with("env://") {
        let name = strip_prefix_ignore_case(reference, "env://");
        return std::env::var(name).map_err(|_| {
            CliError::message(format!("{field}: environment variable {name} is not set"))
        });
    }
    if lower.starts_with("data:") {
        use base64::Engine;
        let (header, payload) = strip_prefix_ignore_case(reference, "data:")
            .split_once(',')
            .ok_or_else(|| CliError::message(format!("{field}: invalid data URI")))?;
        if header
            .split(';')
            .any(|part| part.eq_ignore_ascii_case("base64"))
        {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(payload)
                .map_err(|error| CliError::message(format!("{field}: {error}")))?;
            return String::from_utf8(bytes)
                .map_err(|error| CliError::message(format!("{field}: {error}")));
        }
        return Ok(payload.to_string());
    }
    let scheme = scheme(reference).unwrap_or_default();
    Err(CliError::message(format!(
        "{field}: no resolver registered for scheme {scheme:?}"
    )))
}

/// jsm.go expands `~` and `$VAR` / `${VAR}` in file settings.
fn expand_path(path: &str) -> PathBuf {
    let mut text = path.to_string();
    if let Some(rest) = text.strip_prefix('~') {
        if let Some(home) = std::env::var_os("HOME") {
            text = format!("{}{rest}", home.to_string_lossy());
        }
    }
    PathBuf::from(expand_variables(&text))
}

fn expand_variables(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(position) = rest.find('$') {
        out.push_str(&rest[..position]);
        let after = &rest[position + 1..];
        let (name, remainder) = if let Some(braced) = after.strip_prefix('{') {
            match braced.split_once('}') {
                Some((name, remainder)) => (name, remainder),
                None => ("", after),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
        } else {
            out.push_str(&std::env::var(name).unwrap_or_default());
            rest = remainder;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_bare_and_decorated_seeds() {
        let seed = "SUAM5SVJ4BZXY3U6PPVCAA3VQBOSPWIWCPQUQLRKNNKJR2BN3UJCMXBDIM";
        assert_eq!(decorated_seed(&format!("{seed}\n")).as_deref(), Some(seed));
        let decorated =
            format!("-----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n");
        assert_eq!(decorated_seed(&decorated).as_deref(), Some(seed));
        assert_eq!(decorated_seed("nothing here"), None);
    }

    #[test]
    fn schemes_and_paths() {
        assert_eq!(scheme("file:///tmp/x"), Some("file"));
        assert_eq!(scheme("env://NAME"), Some("env"));
        assert_eq!(scheme("C:\\keys\\user.nk"), None);
        assert_eq!(scheme("/tmp/user.nk"), None);
        assert_eq!(
            file_reference("file:///tmp/user.nk"),
            Some(PathBuf::from("/tmp/user.nk"))
        );
        assert_eq!(file_reference("env://X"), None);
        assert_eq!(resolve_literal("s3cret", "password").unwrap(), "s3cret");
        assert_eq!(resolve_literal("ab:cd", "password").unwrap(), "ab:cd");
        assert_eq!(
            resolve_literal("data:;base64,c2VjcmV0Cg==", "password").unwrap(),
            "secret"
        );
        assert!(resolve_literal("op://vault/item", "password").is_err());
    }

    #[test]
    fn credentials_in_urls() {
        let servers = server_addresses("nats://a:4222, nats://us%40r:p%3Ass@b:4222").unwrap();
        assert_eq!(
            url_credentials(&servers),
            Some(UrlCredentials::UserPassword("us@r".into(), "p:ss".into()))
        );
        let servers = server_addresses("nats://s3cret@a:4222").unwrap();
        assert_eq!(
            url_credentials(&servers),
            Some(UrlCredentials::Token("s3cret".into()))
        );
        assert_eq!(url_credentials(&server_addresses("a:4222").unwrap()), None);
    }

    #[test]
    fn expands_variables() {
        std::env::set_var("RNATS_CLI_TEST_DIR", "/keys");
        assert_eq!(
            expand_variables("$RNATS_CLI_TEST_DIR/a/${RNATS_CLI_TEST_DIR}/b"),
            "/keys/a//keys/b"
        );
        assert_eq!(expand_variables("cost$"), "cost$");
    }
}
