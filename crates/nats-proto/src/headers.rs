//! NATS message headers: the `NATS/1.0[ status[ description]]\r\n(Name: value\r\n)*\r\n` block
//! carried by HPUB/HMSG. Parsed into a [`HeaderMap`], built back with [`HeaderMap::encode`], and a
//! zero-allocation [`header_value`] lookup for the server's hot path (e.g. `Nats-Msg-Id`).
//!
//! Names are looked up case-sensitively first, as nats-server's `getHeader` does; the `_ignore_case`
//! variants exist for callers that want the lenient lookup.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::ProtocolError;

/// The version prefix of every header block.
pub const HEADER_VERSION: &[u8] = b"NATS/1.0";

/// A parsed header block.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeaderMap {
    /// The status code of the version line, e.g. 503 for "no responders".
    pub status: Option<u16>,
    /// The text after the status code, e.g. "No Messages".
    pub description: Option<String>,
    /// Headers in wire order; a name may repeat.
    pub entries: Vec<(String, String)>,
}

impl HeaderMap {
    pub fn new() -> Self {
        HeaderMap::default()
    }

    /// A header block with only a status line: `NATS/1.0 503\r\n\r\n`.
    pub fn with_status(status: u16, description: Option<&str>) -> Self {
        HeaderMap {
            status: Some(status),
            description: description.map(str::to_owned),
            entries: Vec::new(),
        }
    }

    /// Parses a raw header block. Lines without a `:` are skipped (nats.go does the same);
    /// a block that does not start with `NATS/1.0` is an error.
    pub fn parse(block: &[u8]) -> Result<HeaderMap, ProtocolError> {
        let malformed = ProtocolError::MalformedHeaders;
        let mut lines = block.split(|&byte| byte == b'\n').map(strip_cr);
        let version_line = lines.next().ok_or(malformed.clone())?;
        let rest = version_line
            .strip_prefix(HEADER_VERSION)
            .ok_or(malformed.clone())?;
        let mut map = HeaderMap::new();
        let rest = trim(rest);
        if !rest.is_empty() {
            let (code, description) = match rest.iter().position(|&byte| byte == b' ') {
                Some(space) => (&rest[..space], trim(&rest[space + 1..])),
                None => (rest, &b""[..]),
            };
            let code = std::str::from_utf8(code)
                .ok()
                .and_then(|code| code.parse::<u16>().ok())
                .ok_or(malformed)?;
            map.status = Some(code);
            if !description.is_empty() {
                map.description = Some(String::from_utf8_lossy(description).into_owned());
            }
        }
        for line in lines {
            if line.is_empty() {
                continue;
            }
            let Some(colon) = line.iter().position(|&byte| byte == b':') else {
                continue;
            };
            let name = trim(&line[..colon]);
            if name.is_empty() {
                continue;
            }
            map.entries.push((
                String::from_utf8_lossy(name).into_owned(),
                String::from_utf8_lossy(trim(&line[colon + 1..])).into_owned(),
            ));
        }
        Ok(map)
    }

    /// The first value of `name`, matched case-sensitively.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(entry, _)| entry == name)
            .map(|(_, value)| value.as_str())
    }

    /// The first value of `name`, exact match preferred, then ASCII case-insensitive.
    pub fn get_ignore_case(&self, name: &str) -> Option<&str> {
        self.get(name).or_else(|| {
            self.entries
                .iter()
                .find(|(entry, _)| entry.eq_ignore_ascii_case(name))
                .map(|(_, value)| value.as_str())
        })
    }

    /// Every value of `name`, matched case-sensitively.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.entries
            .iter()
            .filter(move |(entry, _)| entry == name)
            .map(|(_, value)| value.as_str())
    }

    /// Adds a value, keeping existing ones.
    pub fn append(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.entries.push((name.into(), value.into()));
    }

    /// Replaces every value of `name` with `value`.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let name = name.into();
        self.entries.retain(|(entry, _)| *entry != name);
        self.entries.push((name, value.into()));
    }

    /// Removes every value of `name`; true when something was removed.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.entries.len();
        self.entries.retain(|(entry, _)| entry != name);
        before != self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.status.is_none() && self.entries.is_empty()
    }

    /// Appends the wire form: `NATS/1.0[ status[ description]]\r\n`, `Name: value\r\n` per entry, `\r\n`.
    pub fn encode(&self, out: &mut BytesMut) {
        out.put_slice(HEADER_VERSION);
        if let Some(status) = self.status {
            out.put_u8(b' ');
            crate::encode::write_decimal(out, u64::from(status));
            if let Some(description) = &self.description {
                out.put_u8(b' ');
                out.put_slice(description.as_bytes());
            }
        }
        out.put_slice(b"\r\n");
        for (name, value) in &self.entries {
            out.put_slice(name.as_bytes());
            out.put_slice(b": ");
            out.put_slice(value.as_bytes());
            out.put_slice(b"\r\n");
        }
        out.put_slice(b"\r\n");
    }

    /// The wire form as `Bytes`.
    pub fn to_bytes(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(
            16 + self
                .entries
                .iter()
                .map(|(name, value)| name.len() + value.len() + 4)
                .sum::<usize>(),
        );
        self.encode(&mut out);
        out.freeze()
    }
}

/// The first value of header `name` in a raw block, matched case-sensitively, without allocating
/// (leading and trailing blanks trimmed). `None` when absent.
pub fn header_value<'a>(block: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let name = name.as_bytes();
    block
        .split(|&byte| byte == b'\n')
        .skip(1)
        .map(strip_cr)
        .find_map(|line| {
            let colon = line.iter().position(|&byte| byte == b':')?;
            (trim(&line[..colon]) == name).then(|| trim(&line[colon + 1..]))
        })
}

/// The status code of a raw header block (`NATS/1.0 503` gives 503), without allocating.
pub fn header_status(block: &[u8]) -> Option<u16> {
    let line_end = memchr::memchr(b'\n', block).unwrap_or(block.len());
    let rest = trim(strip_cr(block[..line_end].strip_prefix(HEADER_VERSION)?));
    let code_end = rest
        .iter()
        .position(|&byte| byte == b' ')
        .unwrap_or(rest.len());
    std::str::from_utf8(&rest[..code_end]).ok()?.parse().ok()
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|&byte| !matches!(byte, b' ' | b'\t'))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&byte| !matches!(byte, b' ' | b'\t'))
        .map_or(start, |position| position + 1);
    &bytes[start..end.max(start)]
}
