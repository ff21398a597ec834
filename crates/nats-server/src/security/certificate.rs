//! What `verify_and_map` needs from a client certificate: its e-mail, DNS and URI subject
//! alternative names and its subject distinguished name, read straight from the DER (a small
//! reader for the few structures involved; rustls has already verified the certificate).
//!
//! Used by the TLS upgrade (`client/secure.rs`) and the authenticator, which maps the
//! identity to a configured user as nats-server does: e-mails, then DNS names, then URIs, then
//! the subject as Go prints it (`CN=client,O=Acme`), then the subject compared as a DN.

/// A certificate's identity, as far as user mapping looks at it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertificateIdentity {
    pub emails: Vec<String>,
    pub dns_names: Vec<String>,
    pub uris: Vec<String>,
    /// Relative distinguished names in certificate order (most general first), each a set of
    /// (dotted OID, value).
    subject: Vec<Vec<Attribute>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Attribute {
    oid: String,
    value: Value,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Value {
    Text(String),
    /// A value that is not a string: its tag and content, shown as `#hex` of the DER.
    Raw(u8, Vec<u8>),
}

const TAG_SEQUENCE: u8 = 0x30;
const TAG_SET: u8 = 0x31;
const TAG_OID: u8 = 0x06;
const TAG_OCTET_STRING: u8 = 0x04;
const TAG_EXTENSIONS: u8 = 0xA3;
const TAG_EMAIL: u8 = 0x81;
const TAG_DNS: u8 = 0x82;
const TAG_URI: u8 = 0x86;
const SUBJECT_ALTERNATIVE_NAME: &str = "2.5.29.17";

/// Go's short names for attribute types (crypto/x509/pkix); others print as dotted OIDs.
const GO_NAMES: &[(&str, &str)] = &[
    ("2.5.4.6", "C"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.3", "CN"),
    ("2.5.4.5", "SERIALNUMBER"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.9", "STREET"),
    ("2.5.4.17", "POSTALCODE"),
];

/// Names a configured DN may use besides Go's.
const DN_NAMES: &[(&str, &str)] = &[
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
    ("1.2.840.113549.1.9.1", "EMAILADDRESS"),
    ("1.2.840.113549.1.9.1", "E"),
];

/// One DER element: tag and content.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes }
    }

    fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    fn peek_tag(&self) -> Option<u8> {
        self.bytes.first().copied()
    }

    /// The next element as (tag, content, whole encoding).
    fn next(&mut self) -> Option<(u8, &'a [u8], &'a [u8])> {
        let tag = *self.bytes.first()?;
        let first = *self.bytes.get(1)?;
        let (length, header) = if first < 0x80 {
            (usize::from(first), 2)
        } else {
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 {
                return None;
            }
            let mut length = 0usize;
            for index in 0..count {
                length = (length << 8) | usize::from(*self.bytes.get(2 + index)?);
            }
            (length, 2 + count)
        };
        let end = header.checked_add(length)?;
        let whole = self.bytes.get(..end)?;
        let content = &whole[header..];
        self.bytes = &self.bytes[end..];
        Some((tag, content, whole))
    }

    fn expect(&mut self, tag: u8) -> Option<&'a [u8]> {
        match self.next()? {
            (found, content, _) if found == tag => Some(content),
            _ => None,
        }
    }
}

fn oid_text(bytes: &[u8]) -> Option<String> {
    let (&first, rest) = bytes.split_first()?;
    let mut arcs = vec![u64::from(first / 40).min(2), 0];
    arcs[1] = u64::from(first) - arcs[0] * 40;
    let mut value = 0u64;
    for &byte in rest {
        value = value.checked_mul(128)? | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            arcs.push(value);
            value = 0;
        }
    }
    Some(
        arcs.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("."),
    )
}

fn value_of(tag: u8, content: &[u8]) -> Value {
    // UTF8String, PrintableString, T61String, IA5String, UniversalString-free common cases.
    match tag {
        0x0c | 0x13 | 0x14 | 0x16 | 0x1a => match std::str::from_utf8(content) {
            Ok(text) => Value::Text(text.to_string()),
            Err(_) => Value::Raw(tag, content.to_vec()),
        },
        _ => Value::Raw(tag, content.to_vec()),
    }
}

impl CertificateIdentity {
    /// Read the identity of a DER certificate; `None` when it cannot be read.
    pub fn from_der(der: &[u8]) -> Option<CertificateIdentity> {
        Some(Self::parse(der)?.0)
    }

    /// The identity and the whole SubjectPublicKeyInfo element.
    fn parse(der: &[u8]) -> Option<(CertificateIdentity, &[u8])> {
        let certificate = Reader::new(der).expect(TAG_SEQUENCE)?;
        let mut tbs = Reader::new(Reader::new(certificate).expect(TAG_SEQUENCE)?);
        if tbs.peek_tag() == Some(0xA0) {
            tbs.next()?;
        }
        tbs.next()?; // serial number
        tbs.expect(TAG_SEQUENCE)?; // signature algorithm
        tbs.expect(TAG_SEQUENCE)?; // issuer
        tbs.expect(TAG_SEQUENCE)?; // validity
        let mut identity = CertificateIdentity {
            subject: read_name(tbs.expect(TAG_SEQUENCE)?)?,
            ..CertificateIdentity::default()
        };
        let public_key = match tbs.next()? {
            (TAG_SEQUENCE, _, whole) => whole,
            _ => return None,
        };
        while !tbs.is_empty() {
            let (tag, content, _) = tbs.next()?;
            if tag == TAG_EXTENSIONS {
                identity.read_extensions(Reader::new(content).expect(TAG_SEQUENCE)?)?;
            }
        }
        Some((identity, public_key))
    }

    fn read_extensions(&mut self, extensions: &[u8]) -> Option<()> {
        let mut extensions = Reader::new(extensions);
        while !extensions.is_empty() {
            let mut extension = Reader::new(extensions.expect(TAG_SEQUENCE)?);
            let oid = oid_text(extension.expect(TAG_OID)?)?;
            let mut value = extension.next()?;
            if value.0 != TAG_OCTET_STRING {
                value = extension.next()?; // the critical flag came first
            }
            if oid != SUBJECT_ALTERNATIVE_NAME {
                continue;
            }
            let mut names = Reader::new(Reader::new(value.1).expect(TAG_SEQUENCE)?);
            while !names.is_empty() {
                let (tag, content, _) = names.next()?;
                let text = String::from_utf8_lossy(content).into_owned();
                match tag {
                    TAG_EMAIL => self.emails.push(text),
                    TAG_DNS => self.dns_names.push(text),
                    TAG_URI => self.uris.push(text),
                    _ => {}
                }
            }
        }
        Some(())
    }

    /// The subject as Go's `pkix.RDNSequence.String()` prints it (most specific first).
    pub fn subject_text(&self) -> String {
        self.subject
            .iter()
            .rev()
            .map(|rdn| {
                rdn.iter()
                    .map(go_attribute_text)
                    .collect::<Vec<_>>()
                    .join("+")
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The subject as Go's `pkix.Name.String()` prints it (what nats-server shows in `/connz`
    /// `tls_peer_certs`): attributes of other types first in certificate order, then C, ST, L,
    /// STREET, POSTALCODE, O and OU (each type's values as one relative name), the last CN and
    /// SERIALNUMBER; printed most specific first.
    pub fn name_text(&self) -> String {
        const ORDER: [&str; 7] = [
            "2.5.4.6", "2.5.4.8", "2.5.4.7", "2.5.4.9", "2.5.4.17", "2.5.4.10", "2.5.4.11",
        ];
        const SINGLE: [&str; 2] = ["2.5.4.3", "2.5.4.5"];
        let attributes: Vec<&Attribute> = self.subject.iter().flatten().collect();
        let standard =
            |attribute: &&Attribute| GO_NAMES.iter().any(|(oid, _)| *oid == attribute.oid);
        let mut rdns: Vec<Vec<&Attribute>> = attributes
            .iter()
            .copied()
            .filter(|attribute| !standard(attribute))
            .map(|attribute| vec![attribute])
            .collect();
        // Go keeps string values only for the types it names.
        let texts = |oid: &str| -> Vec<&Attribute> {
            attributes
                .iter()
                .copied()
                .filter(|attribute| attribute.oid == oid)
                .filter(|attribute| matches!(attribute.value, Value::Text(_)))
                .collect()
        };
        for oid in ORDER {
            let values = texts(oid);
            if !values.is_empty() {
                rdns.push(values);
            }
        }
        for oid in SINGLE {
            if let Some(last) = texts(oid).pop() {
                rdns.push(vec![last]);
            }
        }
        rdns.iter()
            .rev()
            .map(|rdn| {
                rdn.iter()
                    .map(|attribute| go_attribute_text(attribute))
                    .collect::<Vec<_>>()
                    .join("+")
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Whether `text`, read as a distinguished name (`CN=x,O=y`, types by name or dotted OID),
    /// names this subject: the same relative names in the same order, or reordered.
    pub fn subject_matches(&self, text: &str) -> bool {
        let Some(wanted) = parse_dn(text) else {
            return false;
        };
        if wanted.len() != self.subject.len() || wanted.is_empty() {
            return false;
        }
        let same_rdn = |left: &Vec<Attribute>, right: &Vec<Attribute>| {
            left.len() == right.len() && left.iter().all(|attribute| right.contains(attribute))
        };
        let ordered: Vec<&Vec<Attribute>> = self.subject.iter().rev().collect();
        let in_order = wanted
            .iter()
            .zip(&ordered)
            .all(|(left, right)| same_rdn(left, right));
        in_order
            || wanted
                .iter()
                .all(|rdn| ordered.iter().any(|other| same_rdn(rdn, other)))
    }
}

/// A client's certificate as `/connz?auth=1` shows it in `tls_peer_certs`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerCertificate {
    /// As Go's `pkix.Name.String()` prints it.
    pub subject: String,
    /// SHA-256 of the DER SubjectPublicKeyInfo, in hex.
    pub spki_sha256: String,
    /// SHA-256 of the whole DER certificate, in hex.
    pub cert_sha256: String,
}

impl PeerCertificate {
    /// `None` when the certificate cannot be read.
    pub fn from_der(der: &[u8]) -> Option<PeerCertificate> {
        let (identity, public_key) = CertificateIdentity::parse(der)?;
        Some(PeerCertificate {
            subject: identity.name_text(),
            spki_sha256: sha256_hex(public_key),
            cert_sha256: sha256_hex(der),
        })
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn read_name(name: &[u8]) -> Option<Vec<Vec<Attribute>>> {
    let mut sequence = Reader::new(name);
    let mut rdns = Vec::new();
    while !sequence.is_empty() {
        let mut set = Reader::new(sequence.expect(TAG_SET)?);
        let mut rdn = Vec::new();
        while !set.is_empty() {
            let mut pair = Reader::new(set.expect(TAG_SEQUENCE)?);
            let oid = oid_text(pair.expect(TAG_OID)?)?;
            let (tag, content, _) = pair.next()?;
            rdn.push(Attribute {
                oid,
                value: value_of(tag, content),
            });
        }
        rdns.push(rdn);
    }
    Some(rdns)
}

fn go_attribute_text(attribute: &Attribute) -> String {
    let name = GO_NAMES
        .iter()
        .find(|(oid, _)| *oid == attribute.oid)
        .map(|(_, name)| *name);
    match (name, &attribute.value) {
        (Some(name), Value::Text(text)) => format!("{name}={}", escape(text)),
        (_, value) => format!("{}=#{}", attribute.oid, go_der_hex(value)),
    }
}

/// Go re-marshals the value it decoded: a string as PrintableString when it can be one, else
/// as UTF8String.
fn go_der_hex(value: &Value) -> String {
    let (tag, content) = match value {
        Value::Text(text) => {
            let printable = text
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b" '()+,-./:=?*".contains(&byte));
            (if printable { 0x13 } else { 0x0c }, text.as_bytes())
        }
        Value::Raw(tag, content) => (*tag, content.as_slice()),
    };
    let mut der = vec![tag];
    if content.len() < 0x80 {
        der.push(content.len() as u8);
    } else {
        let length = content.len().to_be_bytes();
        let significant: Vec<u8> = length
            .iter()
            .copied()
            .skip_while(|byte| *byte == 0)
            .collect();
        der.push(0x80 | significant.len() as u8);
        der.extend(significant);
    }
    der.extend_from_slice(content);
    der.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn escape(value: &str) -> String {
    let count = value.chars().count();
    let mut escaped = String::with_capacity(value.len());
    for (index, character) in value.chars().enumerate() {
        let needs = match character {
            ',' | '+' | '"' | '\\' | '<' | '>' | ';' => true,
            ' ' => index == 0 || index + 1 == count,
            '#' => index == 0,
            _ => false,
        };
        if needs {
            escaped.push('\\');
        }
        escaped.push(character);
    }
    escaped
}

/// `CN=x,O=y+OU=z` into relative names (as written, most specific first); `None` if malformed.
fn parse_dn(text: &str) -> Option<Vec<Vec<Attribute>>> {
    let mut rdns = vec![Vec::new()];
    let mut current = String::new();
    let mut characters = text.chars();
    let finish = |current: &mut String, rdns: &mut Vec<Vec<Attribute>>| -> Option<()> {
        let (name, value) = current.split_once('=')?;
        let name = name.trim();
        let oid = GO_NAMES
            .iter()
            .chain(DN_NAMES)
            .find(|(_, known)| known.eq_ignore_ascii_case(name))
            .map_or_else(|| name.to_string(), |(oid, _)| oid.to_string());
        rdns.last_mut()?.push(Attribute {
            oid,
            value: Value::Text(value.trim().to_string()),
        });
        current.clear();
        Some(())
    };
    while let Some(character) = characters.next() {
        match character {
            '\\' => current.push(characters.next()?),
            ',' | ';' => {
                finish(&mut current, &mut rdns)?;
                rdns.push(Vec::new());
            }
            '+' => finish(&mut current, &mut rdns)?,
            other => current.push(other),
        }
    }
    finish(&mut current, &mut rdns)?;
    Some(rdns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate() -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(vec!["client.example".to_string()]).unwrap();
        params.subject_alt_names.push(rcgen::SanType::Rfc822Name(
            "alice@example.com".try_into().unwrap(),
        ));
        params.subject_alt_names.push(rcgen::SanType::URI(
            "spiffe://example/alice".try_into().unwrap(),
        ));
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "Acme, Inc");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationalUnitName, "dev");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "alice");
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn names_and_subject_as_go_prints_them() {
        let identity = CertificateIdentity::from_der(&certificate()).unwrap();
        assert_eq!(identity.emails, ["alice@example.com"]);
        assert_eq!(identity.dns_names, ["client.example"]);
        assert_eq!(identity.uris, ["spiffe://example/alice"]);
        assert_eq!(identity.subject_text(), "CN=alice,OU=dev,O=Acme\\, Inc");
    }

    #[test]
    fn peer_certificate_as_nats_server_shows_it() {
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (kind, value) in [
            (rcgen::DnType::CommonName, "bob"),
            (rcgen::DnType::OrganizationalUnitName, "dev"),
            (rcgen::DnType::CountryName, "DE"),
            (rcgen::DnType::OrganizationName, "Acme"),
            (rcgen::DnType::LocalityName, "Berlin"),
        ] {
            params.distinguished_name.push(kind, value);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        let der = params.self_signed(&key).unwrap().der().to_vec();
        let peer = PeerCertificate::from_der(&der).unwrap();
        // Go's canonical order, whatever the certificate's.
        assert_eq!(peer.subject, "CN=bob,OU=dev,O=Acme,L=Berlin,C=DE");
        assert_eq!(peer.cert_sha256, sha256_hex(&der));
        assert_eq!(peer.spki_sha256, sha256_hex(&key.public_key_der()));
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn subject_compared_as_a_distinguished_name() {
        let identity = CertificateIdentity::from_der(&certificate()).unwrap();
        assert!(identity.subject_matches("CN=alice,OU=dev,O=Acme\\, Inc"));
        assert!(identity.subject_matches("cn=alice, ou=dev, o=Acme\\, Inc"));
        assert!(identity.subject_matches("O=Acme\\, Inc,OU=dev,CN=alice"));
        assert!(identity.subject_matches("2.5.4.3=alice,OU=dev,O=Acme\\, Inc"));
        assert!(!identity.subject_matches("CN=alice,OU=dev"));
        assert!(!identity.subject_matches("CN=bob,OU=dev,O=Acme\\, Inc"));
        assert!(!identity.subject_matches("not a dn"));
    }

    #[test]
    fn garbage_is_no_certificate() {
        assert_eq!(CertificateIdentity::from_der(b"\x30\x03\x02\x01"), None);
        assert_eq!(CertificateIdentity::from_der(&[]), None);
    }
}
