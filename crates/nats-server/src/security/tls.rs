//! rustls (ring provider) configuration for client connections, built from
//! [`TlsOptions`](crate::config::TlsOptions): certificate chain and key, and with `verify` a
//! client-certificate verifier anchored at `ca_file`. Errors are worded as nats-server's.
//!
//! Called by the config reader (to check files early) and by `server::run`; the connection
//! upgrade itself lives in `client/secure.rs`. Routes (`route/secure.rs`) use both sides:
//! [`route_server_config`] and [`route_client_config`], mutual TLS anchored at the same
//! `ca_file` as nats-server forces for `cluster { tls }`.

use crate::config::{TlsMinimumVersion, TlsOptions};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// Client TLS: the acceptor and the options it was built from, swapped together on reload.
pub struct ClientTls {
    pub acceptor: tokio_rustls::TlsAcceptor,
    pub options: crate::config::TlsOptions,
    /// A digest of the certificate, key and CA files read: a reload with the same options but
    /// rotated files is a change too.
    pub files: u64,
}

impl ClientTls {
    /// `None` without `tls`; nats-server's error text when a file is missing or bad.
    pub fn build(options: &crate::config::Options) -> Result<Option<Arc<ClientTls>>, String> {
        let Some(tls) = &options.tls else {
            return Ok(None);
        };
        let config = server_config(tls)?;
        Ok(Some(Arc::new(ClientTls {
            acceptor: tokio_rustls::TlsAcceptor::from(config),
            options: tls.clone(),
            files: files_digest(tls),
        })))
    }
}

/// A digest of the certificate, key and CA files' contents (unreadable ones count as empty).
pub fn files_digest(tls: &TlsOptions) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for path in [&tls.cert_file, &tls.key_file, &tls.ca_file] {
        let contents = path
            .as_ref()
            .and_then(|path| std::fs::read(path).ok())
            .unwrap_or_default();
        contents.hash(&mut hasher);
    }
    hasher.finish()
}

/// Build the server configuration, or nats-server's error text for what is wrong.
pub fn server_config(tls: &TlsOptions) -> Result<Arc<ServerConfig>, String> {
    let (certificates, key) = match (&tls.cert_file, &tls.key_file) {
        (Some(cert), Some(key)) => load_pair(cert, key)?,
        (Some(_), None) => return Err("missing 'key_file' in TLS configuration".into()),
        (None, Some(_)) => return Err("missing 'cert_file' in TLS configuration".into()),
        // nats-server starts and then fails every handshake; refusing to start says why.
        (None, None) => return Err("missing 'cert_file' in TLS configuration".into()),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] = match tls.minimum_version {
        TlsMinimumVersion::Tls12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
        TlsMinimumVersion::Tls13 => &[&rustls::version::TLS13],
    };
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|error| error.to_string())?;
    let roots = match &tls.ca_file {
        Some(path) => Some(load_roots(path)?),
        None => None,
    };
    let builder = if tls.verify {
        let Some(roots) = roots else {
            return Err(
                "tls verify needs 'ca_file' in rnats (the system roots are not used for clients)"
                    .into(),
            );
        };
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|error| format!("failed to parse root ca certificate: {error}"))?;
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder
        .with_single_cert(certificates, key)
        .map_err(|error| {
            format!("error parsing X509 certificate/key pair: tls: private key does not match public key ({error})")
        })?;
    Ok(Arc::new(config))
}

/// The accepting side of a route: as [`server_config`], with the peer's certificate always
/// required and verified (nats-server forces `verify` for `cluster { tls }`).
pub fn route_server_config(tls: &TlsOptions) -> Result<Arc<ServerConfig>, String> {
    let mut forced = tls.clone();
    forced.verify = true;
    server_config(&forced)
}

/// The dialing side of a route: trusts `ca_file` and presents the route certificate.
pub fn route_client_config(tls: &TlsOptions) -> Result<Arc<ClientConfig>, String> {
    let (certificates, key) = match (&tls.cert_file, &tls.key_file) {
        (Some(cert), Some(key)) => load_pair(cert, key)?,
        (Some(_), None) => return Err("missing 'key_file' in TLS configuration".into()),
        _ => return Err("missing 'cert_file' in TLS configuration".into()),
    };
    let Some(ca_file) = &tls.ca_file else {
        return Err("route tls needs 'ca_file' in rnats (the system roots are not used)".into());
    };
    let roots = load_roots(ca_file)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] = match tls.minimum_version {
        TlsMinimumVersion::Tls12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
        TlsMinimumVersion::Tls13 => &[&rustls::version::TLS13],
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|error| error.to_string())?
        .with_root_certificates(roots)
        .with_client_auth_cert(certificates, key)
        .map_err(|error| {
            format!("error parsing X509 certificate/key pair: tls: private key does not match public key ({error})")
        })?;
    Ok(Arc::new(config))
}

fn open_error(path: &Path, error: &std::io::Error) -> String {
    let reason = match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => error.to_string(),
    };
    format!("open {}: {reason}", path.display())
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|error| open_error(path, &error))
}

fn load_pair(
    cert_path: &Path,
    key_path: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let pair_error = |text: String| format!("error parsing X509 certificate/key pair: {text}");
    let cert_pem = read(cert_path).map_err(pair_error)?;
    let key_pem = read(key_path).map_err(pair_error)?;
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|_| pair_error("tls: failed to find any PEM data in certificate input".into()))?;
    if certificates.is_empty() {
        return Err(pair_error(
            "tls: failed to find any PEM data in certificate input".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|_| pair_error("tls: failed to find any PEM data in key input".into()))?;
    Ok((certificates, key))
}

fn load_roots(path: &Path) -> Result<RootCertStore, String> {
    let pem = read(path)?;
    let mut roots = RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(&pem) {
        let certificate =
            certificate.map_err(|_| "failed to parse root ca certificate".to_string())?;
        roots
            .add(certificate)
            .map_err(|_| "failed to parse root ca certificate".to_string())?;
    }
    if roots.is_empty() {
        return Err("failed to parse root ca certificate".into());
    }
    Ok(roots)
}

/// nats-server's names for what was negotiated (`TLS version 1.3, cipher suite ...`).
pub fn version_text(version: rustls::ProtocolVersion) -> String {
    match version {
        rustls::ProtocolVersion::TLSv1_2 => "1.2".into(),
        rustls::ProtocolVersion::TLSv1_3 => "1.3".into(),
        other => format!("{other:?}"),
    }
}

/// Go's cipher suite names: the IANA names, which rustls spells `TLS13_...` for TLS 1.3.
pub fn cipher_text(suite: rustls::SupportedCipherSuite) -> String {
    let name = suite
        .suite()
        .as_str()
        .map_or_else(|| format!("{:?}", suite.suite()), str::to_string);
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name,
    }
}
