//! The client `tls { }` block and the `--tls*` flags, read into [`TlsOptions`]. Certificates
//! are loaded here once to report a bad file with nats-server's wording and position; the
//! server builds its own rustls configuration from the same options (`crate::security::tls`).

use super::options::{parse_duration, Options};
use super::value::{ConfigError, Entry, Value};
use std::path::PathBuf;
use std::time::Duration;

/// nats-server's `TLS_TIMEOUT`.
pub const DEFAULT_TLS_TIMEOUT: Duration = Duration::from_secs(2);
/// nats-server's `DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_DELAY` (`handshake_first: auto`).
pub const DEFAULT_HANDSHAKE_FIRST_FALLBACK: Duration = Duration::from_millis(50);

/// The lowest TLS version a client may use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsMinimumVersion {
    #[default]
    Tls12,
    Tls13,
}

/// TLS for client connections.
#[derive(Clone, Debug, PartialEq)]
pub struct TlsOptions {
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    pub ca_file: Option<PathBuf>,
    /// Require a client certificate signed by `ca_file`.
    pub verify: bool,
    /// `verify_and_map`: the client certificate's identity names the user.
    pub map: bool,
    /// How long a client has to complete the handshake.
    pub timeout: Duration,
    /// The handshake comes before INFO.
    pub handshake_first: bool,
    /// With `handshake_first`: when the client says nothing for this long, send INFO in the
    /// clear and expect the usual upgrade after it.
    pub handshake_first_fallback: Option<Duration>,
    pub minimum_version: TlsMinimumVersion,
}

impl Default for TlsOptions {
    fn default() -> Self {
        TlsOptions {
            cert_file: None,
            key_file: None,
            ca_file: None,
            verify: false,
            map: false,
            timeout: DEFAULT_TLS_TIMEOUT,
            handshake_first: false,
            handshake_first_fallback: None,
            minimum_version: TlsMinimumVersion::Tls12,
        }
    }
}

/// Keys of nats-server's tls block that change nothing for rnats' client listener (cipher and
/// curve choices are rustls' own, the Windows certificate store does not exist here).
const ACCEPTED_WITHOUT_EFFECT: &[&str] = &[
    "insecure",
    "cipher_suites",
    "curve_preferences",
    "allow_insecure_cipher_suites",
    "connection_rate_limit",
];

/// Keys that would narrow who may connect: refused rather than silently ignored.
const REFUSED: &[&str] = &[
    "pinned_certs",
    "ocsp_peer",
    "cert_store",
    "cert_match_by",
    "cert_match",
    "ca_certs_match",
    "cert_match_skip_invalid",
    "certs",
    "certificates",
    "verify_cert_and_check_known_urls",
];

/// Read a top-level `tls { }` block into `options.tls`, loading its files to check them.
pub fn apply_tls(options: &mut Options, entry: &Entry) -> Result<(), ConfigError> {
    let Value::Map(items) = &entry.value else {
        return Err(super::options::not_a(entry, "map[string]interface {}"));
    };
    let mut tls = TlsOptions::default();
    for (key, item) in items {
        let lowered = key.to_ascii_lowercase();
        match lowered.as_str() {
            "cert_file" => tls.cert_file = Some(file_name(item, "cert_file")?),
            "key_file" => tls.key_file = Some(file_name(item, "key_file")?),
            "ca_file" => tls.ca_file = Some(file_name(item, "ca_file")?),
            "verify" => tls.verify = tls_boolean(item, "verify")?,
            "verify_and_map" => {
                let map = tls_boolean(item, "verify_and_map")?;
                tls.verify |= map;
                tls.map = map;
            }
            "timeout" => tls.timeout = timeout(item)?,
            "handshake_first" | "first" | "immediate" => handshake_first(&mut tls, key, item)?,
            "min_version" => tls.minimum_version = minimum_version(item)?,
            other if ACCEPTED_WITHOUT_EFFECT.contains(&other) => options.warnings.push(format!(
                "{}: tls option \"{key}\" has no effect in rnats",
                super::options::position(item)
            )),
            other if REFUSED.contains(&other) => {
                return Err(item.error(format!(
                    "error parsing tls config, field {key:?} is not supported by rnats"
                )))
            }
            _ => return Err(item.error(format!("error parsing tls config, unknown field {key:?}"))),
        }
    }
    check_files(&tls).map_err(|message| entry.error(message))?;
    options.tls = Some(tls);
    Ok(())
}

/// The checks nats-server makes when it builds its TLS configuration, in its words.
pub fn check_files(tls: &TlsOptions) -> Result<(), String> {
    crate::security::tls::server_config(tls).map(|_| ())
}

fn file_name(entry: &Entry, key: &str) -> Result<PathBuf, ConfigError> {
    match &entry.value {
        Value::String(text) => Ok(PathBuf::from(text)),
        _ => Err(entry.error(format!(
            "error parsing tls config, expected '{key}' to be filename"
        ))),
    }
}

fn tls_boolean(entry: &Entry, key: &str) -> Result<bool, ConfigError> {
    match &entry.value {
        Value::Bool(flag) => Ok(*flag),
        _ => Err(entry.error(format!(
            "error parsing tls config, expected '{key}' to be a boolean"
        ))),
    }
}

/// Seconds (integer or float) or a Go duration string.
fn timeout(entry: &Entry) -> Result<Duration, ConfigError> {
    let seconds = match &entry.value {
        Value::Integer(seconds) => *seconds as f64,
        Value::Float(seconds) => *seconds,
        Value::String(text) => parse_duration(text)
            .ok_or_else(|| {
                entry.error(format!(
                    "error parsing tls config, 'timeout' time: invalid duration {text:?}"
                ))
            })?
            .as_secs_f64(),
        _ => return Err(entry.error("error parsing tls config, 'timeout' wrong type")),
    };
    // nats-server falls back to its default for a zero timeout.
    if seconds <= 0.0 {
        return Ok(DEFAULT_TLS_TIMEOUT);
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn handshake_first(tls: &mut TlsOptions, key: &str, entry: &Entry) -> Result<(), ConfigError> {
    match &entry.value {
        Value::Bool(flag) => tls.handshake_first = *flag,
        Value::String(text) => match text.to_ascii_lowercase().as_str() {
            "true" | "on" => tls.handshake_first = true,
            "false" | "off" => tls.handshake_first = false,
            "auto" | "auto_fallback" => {
                tls.handshake_first = true;
                tls.handshake_first_fallback = Some(DEFAULT_HANDSHAKE_FIRST_FALLBACK);
            }
            _ => match parse_duration(text) {
                Some(delay) => {
                    tls.handshake_first = true;
                    tls.handshake_first_fallback = Some(delay).filter(|delay| !delay.is_zero());
                }
                None => {
                    return Err(entry.error(format!("field {key:?}'s value {text:?} is invalid")))
                }
            },
        },
        _ => {
            return Err(entry.error(format!(
                "field {key:?} should be a boolean or a string, got {}",
                entry.value.go_type_name()
            )))
        }
    }
    Ok(())
}

fn minimum_version(entry: &Entry) -> Result<TlsMinimumVersion, ConfigError> {
    let text = match &entry.value {
        Value::String(text) => text.clone(),
        other => {
            return Err(entry.error(format!(
                "error parsing tls config: 'min_version' wrong type: {}",
                other.go_text()
            )))
        }
    };
    match text.as_str() {
        "1.2" => Ok(TlsMinimumVersion::Tls12),
        "1.3" => Ok(TlsMinimumVersion::Tls13),
        "1.0" | "1.1" => Err(entry.error(format!(
            "error parsing tls config: unsupported minimum TLS version: TLS {text}"
        ))),
        _ => Err(entry.error(format!("error parsing tls config: unknown version: {text}"))),
    }
}
