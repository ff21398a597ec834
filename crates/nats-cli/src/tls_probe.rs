//! What `nats account info` shows of a TLS connection (natscli's "TLS Version ... using ...",
//! "TLS Server Name" and "TLS Verified: issuer ..."). async-nats does not expose its TLS
//! session, so this makes one more handshake with the same settings (CA or the platform's
//! roots, client certificate, TLS first) to the first server URL, reads the negotiated
//! version, cipher suite and the server certificate's issuer, and hangs up before CONNECT.
//! Called only by `account.rs`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use async_nats::rustls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::error::CliError;
use crate::options::Effective;

/// The facts natscli prints about a TLS session.
pub struct TlsSession {
    pub version: String,
    pub cipher_suite: String,
    /// Go's `ConnectionState.ServerName`: the SNI sent, empty for an IP address.
    pub server_name: String,
    /// The server certificate's issuer as Go's `pkix.Name.String()` writes it.
    pub issuer: String,
}

/// Whether the connection made with `effective` is encrypted: asked for (a CA, a client
/// certificate, TLS first, a `tls://` URL) or required by the server.
pub fn in_use(effective: &Effective, server_requires: bool) -> bool {
    server_requires
        || effective.tls_first
        || !effective.ca.is_empty()
        || (!effective.cert.is_empty() && !effective.key.is_empty())
        || first_url(&effective.url).0.eq_ignore_ascii_case("tls")
}

/// `(scheme, host, port)` of the first URL in a comma-separated list.
fn first_url(urls: &str) -> (String, String, u16) {
    let first = urls.split(',').map(str::trim).next().unwrap_or_default();
    let (scheme, rest) = first.split_once("://").unwrap_or(("nats", first));
    let authority = rest.split('/').next().unwrap_or_default();
    let address = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = match address.strip_prefix('[') {
        Some(bracketed) => match bracketed.split_once(']') {
            Some((host, tail)) => (host, tail.strip_prefix(':')),
            None => (bracketed, None),
        },
        None => match address.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (address, None),
        },
    };
    let port = port.and_then(|p| p.parse().ok()).unwrap_or(4222);
    (scheme.to_string(), host.to_string(), port)
}

pub async fn probe(effective: &Effective) -> Result<TlsSession, CliError> {
    let effective = effective.clone();
    let timeout = effective.timeout;
    let work = tokio::task::spawn_blocking(move || handshake(&effective));
    match tokio::time::timeout(timeout, work).await {
        Ok(Ok(result)) => result,
        Ok(Err(error)) => Err(CliError::message(format!("tls probe failed: {error}"))),
        Err(_) => Err(CliError::Timeout),
    }
}

fn tls_error(error: impl std::fmt::Display) -> CliError {
    CliError::message(format!("tls: {error}"))
}

fn client_config(effective: &Effective) -> Result<rustls::ClientConfig, CliError> {
    let mut roots = rustls::RootCertStore::empty();
    if effective.ca.is_empty() {
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    } else {
        for certificate in CertificateDer::pem_file_iter(&effective.ca).map_err(tls_error)? {
            roots
                .add(certificate.map_err(tls_error)?)
                .map_err(tls_error)?;
        }
    }
    let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
    if !effective.cert.is_empty() && !effective.key.is_empty() {
        let chain = CertificateDer::pem_file_iter(&effective.cert)
            .map_err(tls_error)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(tls_error)?;
        let key = PrivateKeyDer::from_pem_file(&effective.key).map_err(tls_error)?;
        builder.with_client_auth_cert(chain, key).map_err(tls_error)
    } else {
        Ok(builder.with_no_client_auth())
    }
}

fn handshake(effective: &Effective) -> Result<TlsSession, CliError> {
    let (_, host, port) = first_url(&effective.url);
    let address = (host.as_str(), port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| CliError::message(format!("cannot resolve {host}")))?;
    let mut stream = TcpStream::connect_timeout(&address, effective.timeout)?;
    stream.set_read_timeout(Some(effective.timeout.max(Duration::from_millis(100))))?;
    if !effective.tls_first {
        // The INFO line comes in the clear before the upgrade.
        let mut line = Vec::new();
        BufReader::new(Read::by_ref(&mut stream))
            .take(64 * 1024)
            .read_until(b'\n', &mut line)?;
    }
    let name = ServerName::try_from(host.clone()).map_err(tls_error)?;
    let mut connection =
        rustls::ClientConnection::new(Arc::new(client_config(effective)?), name.clone())
            .map_err(tls_error)?;
    while connection.is_handshaking() {
        connection.complete_io(&mut stream)?;
    }
    let _ = stream.flush();
    let version = match connection.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_2) => "1.2".to_string(),
        Some(rustls::ProtocolVersion::TLSv1_3) => "1.3".to_string(),
        Some(other) => format!("unknown ({:x})", u16::from(other)),
        None => "unknown".to_string(),
    };
    let cipher_suite = connection
        .negotiated_cipher_suite()
        .map(|suite| go_cipher_suite_name(&format!("{:?}", suite.suite())))
        .unwrap_or_default();
    let issuer = connection
        .peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(|certificate| issuer_of(certificate.as_ref()))
        .unwrap_or_default();
    let server_name = match name {
        ServerName::DnsName(dns) => dns.as_ref().to_string(),
        _ => String::new(),
    };
    Ok(TlsSession {
        version,
        cipher_suite,
        server_name,
        issuer,
    })
}

/// Go's `tls.CipherSuiteName`: rustls writes TLS 1.3 suites as `TLS13_...`.
fn go_cipher_suite_name(rustls_name: &str) -> String {
    match rustls_name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => rustls_name.to_string(),
    }
}

/// One DER element and what follows it.
struct DerElement<'a> {
    tag: u8,
    contents: &'a [u8],
    /// The element with its tag and length.
    whole: &'a [u8],
    rest: &'a [u8],
}

fn der_element(input: &[u8]) -> Option<DerElement<'_>> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let length = rest[..count]
            .iter()
            .fold(0usize, |total, &byte| (total << 8) | usize::from(byte));
        (length, &rest[count..])
    };
    if rest.len() < length {
        return None;
    }
    let header = input.len() - rest.len();
    Some(DerElement {
        tag,
        contents: &rest[..length],
        whole: &input[..header + length],
        rest: &rest[length..],
    })
}

/// The issuer of an X.509 certificate as Go's `pkix.Name.String()`: attributes it knows in
/// its fixed order, last first (`CN=...,O=...,C=...`), any others as `OID=#hex`.
fn issuer_of(certificate: &[u8]) -> Option<String> {
    const SEQUENCE: u8 = 0x30;
    let sequence = |input| der_element(input).filter(|element| element.tag == SEQUENCE);
    let certificate = sequence(certificate)?.contents;
    let tbs = sequence(certificate)?;
    let mut element = der_element(tbs.contents)?;
    // [0] version (optional), serial number, signature algorithm, then the issuer.
    if element.tag == 0xa0 {
        element = der_element(element.rest)?;
    }
    let algorithm = der_element(element.rest)?;
    let name = sequence(algorithm.rest)?.contents;

    // Go's ToRDNSequence order: C, ST, L, STREET, POSTALCODE, O, OU, CN, SERIALNUMBER.
    const KNOWN: [(&str, &str); 9] = [
        ("2.5.4.6", "C"),
        ("2.5.4.8", "ST"),
        ("2.5.4.7", "L"),
        ("2.5.4.9", "STREET"),
        ("2.5.4.17", "POSTALCODE"),
        ("2.5.4.10", "O"),
        ("2.5.4.11", "OU"),
        ("2.5.4.3", "CN"),
        ("2.5.4.5", "SERIALNUMBER"),
    ];
    let mut known: Vec<Vec<String>> = vec![Vec::new(); KNOWN.len()];
    let mut others = Vec::new();
    let mut sets = name;
    while !sets.is_empty() {
        let set = der_element(sets)?;
        sets = set.rest;
        let mut attributes = set.contents;
        while !attributes.is_empty() {
            let attribute = der_element(attributes)?;
            attributes = attribute.rest;
            let oid = der_element(attribute.contents)?;
            let value = der_element(oid.rest)?;
            let oid = oid_text(oid.contents);
            match KNOWN.iter().position(|(known_oid, _)| *known_oid == oid) {
                Some(index) => known[index].push(escape(&String::from_utf8_lossy(value.contents))),
                None => {
                    let hex: String = value.whole.iter().map(|b| format!("{b:02x}")).collect();
                    others.push(format!("{oid}=#{hex}"));
                }
            }
        }
    }
    // Go puts unknown attributes first in the sequence, so last in the text.
    let mut sequence = others;
    for (index, (_, label)) in KNOWN.iter().enumerate() {
        for value in &known[index] {
            sequence.push(format!("{label}={value}"));
        }
    }
    sequence.reverse();
    Some(sequence.join(","))
}

fn oid_text(bytes: &[u8]) -> String {
    let mut parts = Vec::new();
    let mut value: u64 = 0;
    for &byte in bytes {
        value = (value << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            // The first subidentifier holds the first two arcs.
            if parts.is_empty() {
                let first = (value / 40).min(2);
                parts.push(first);
                parts.push(value - first * 40);
            } else {
                parts.push(value);
            }
            value = 0;
        }
    }
    parts
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// RFC 2253 escaping as Go's `AttributeTypeAndValue` string does it.
fn escape(value: &str) -> String {
    let characters: Vec<char> = value.chars().collect();
    let mut out = String::with_capacity(value.len());
    for (index, &character) in characters.iter().enumerate() {
        let special = matches!(character, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (index == 0 && (character == ' ' || character == '#'))
            || (index == characters.len() - 1 && character == ' ');
        if special {
            out.push('\\');
        }
        out.push(character);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            first_url("tls://u:p@example.com:4443, nats://b:1"),
            ("tls".into(), "example.com".into(), 4443)
        );
        assert_eq!(
            first_url("127.0.0.1"),
            ("nats".into(), "127.0.0.1".into(), 4222)
        );
        assert_eq!(
            first_url("nats://[::1]:5222"),
            ("nats".into(), "::1".into(), 5222)
        );
    }

    #[test]
    fn names_as_go() {
        assert_eq!(
            go_cipher_suite_name("TLS13_AES_128_GCM_SHA256"),
            "TLS_AES_128_GCM_SHA256"
        );
        assert_eq!(
            go_cipher_suite_name("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
        );
        assert_eq!(oid_text(&[0x55, 0x04, 0x03]), "2.5.4.3");
        assert_eq!(
            oid_text(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01]),
            "1.2.840.113549.1.9.1"
        );
        assert_eq!(escape("a,b"), "a\\,b");
        assert_eq!(escape(" x "), "\\ x\\ ");
    }
}
