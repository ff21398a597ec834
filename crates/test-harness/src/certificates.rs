//! Certificates for TLS tests, made at run time with rcgen: a CA, a server certificate for
//! 127.0.0.1/localhost, a client certificate from the CA and one from an unknown CA, written
//! as PEM files into a temporary directory. Used by the server's and the CLI's TLS tests.

use std::path::PathBuf;

/// The common name of the test CA (a client certificate's issuer shows it).
pub const CA_NAME: &str = "rnats test CA";

/// The PEM files `ca.pem`, `server-cert.pem`/`server-key.pem`, `client-cert.pem`/
/// `client-key.pem` (from the CA) and `stranger-cert.pem`/`stranger-key.pem` (from an unknown
/// CA) in `dir`; the CA itself is kept to issue more.
pub struct TestCertificates {
    pub dir: tempfile::TempDir,
    pub ca: rcgen::Certificate,
    pub ca_key: rcgen::KeyPair,
}

impl TestCertificates {
    /// Make and write every certificate.
    pub fn generate() -> TestCertificates {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, text: String| {
            std::fs::write(dir.path().join(name), text).expect("write certificate")
        };
        let (ca, ca_key) = issue(CA_NAME, false, None);
        let (server, server_key) = issue("localhost", false, Some((&ca, &ca_key)));
        let (client, client_key) = issue("client", true, Some((&ca, &ca_key)));
        let (stranger_ca, stranger_ca_key) = issue("unknown CA", false, None);
        let (stranger, stranger_key) =
            issue("stranger", true, Some((&stranger_ca, &stranger_ca_key)));
        write("ca.pem", ca.pem());
        write("server-cert.pem", server.pem());
        write("server-key.pem", server_key.serialize_pem());
        write("client-cert.pem", client.pem());
        write("client-key.pem", client_key.serialize_pem());
        write("stranger-cert.pem", stranger.pem());
        write("stranger-key.pem", stranger_key.serialize_pem());
        TestCertificates { dir, ca, ca_key }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// [`Self::path`] as text, for command-line arguments and config files.
    pub fn path_text(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    pub fn ca(&self) -> PathBuf {
        self.path("ca.pem")
    }

    /// `tls { }` with the server certificate, the CA and `extra` lines.
    pub fn block(&self, extra: &str) -> String {
        format!(
            "tls {{\n  cert_file: \"{}\"\n  key_file: \"{}\"\n  ca_file: \"{}\"\n{extra}\n}}\n",
            self.path_text("server-cert.pem"),
            self.path_text("server-key.pem"),
            self.path_text("ca.pem")
        )
    }
}

/// A certificate named `name` (common name): a client certificate, or one for
/// localhost/127.0.0.1; signed by `issuer`, or a self-signed CA without one.
pub fn issue(
    name: &str,
    client: bool,
    issuer: Option<(&rcgen::Certificate, &rcgen::KeyPair)>,
) -> (rcgen::Certificate, rcgen::KeyPair) {
    let names = if client {
        Vec::new()
    } else {
        vec!["localhost".to_string(), "127.0.0.1".to_string()]
    };
    let mut params = rcgen::CertificateParams::new(names).expect("certificate parameters");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    if client {
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    }
    let key = rcgen::KeyPair::generate().expect("key");
    let certificate = match issuer {
        Some((issuer, issuer_key)) => params.signed_by(&key, issuer, issuer_key),
        None => {
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            params.self_signed(&key)
        }
    }
    .expect("certificate");
    (certificate, key)
}
