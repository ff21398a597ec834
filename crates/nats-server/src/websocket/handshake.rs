//! The HTTP/1.1 upgrade of a WebSocket client, with nats-server's checks in its order (method,
//! Host, Upgrade, Connection, key, version, origin) and its answers: an HTTP error with
//! `Sec-Websocket-Version: 13` and the status text as body, logged as `websocket handshake
//! error: <reason>`; or `101 Switching Protocols` with permessage-deflate when both sides
//! want it, `Nats-No-Masking` when asked, and the configured extra headers. Also reads the
//! cookies that may carry credentials, and whether the client is a browser.

use super::Listener;
use base64::Engine;
use std::net::SocketAddr;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest request head we read (Go's default is 1 MB; no client sends a fraction).
const MAX_REQUEST: usize = 64 * 1024;
const MAX_HEADERS: usize = 100;
/// RFC 6455's GUID, appended to the key for `Sec-WebSocket-Accept`.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Credentials a browser may send as cookies (names configured in `websocket { }`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Cookies {
    /// The user JWT (`jwt_cookie`, operator mode only).
    pub jwt: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub token: Option<String>,
}

/// What an accepted upgrade decided.
pub(crate) struct Upgrade {
    pub compression: bool,
    /// The client asked not to mask its frames (`Nats-No-Masking: true`).
    pub no_masking: bool,
    pub browser: bool,
    /// Safari takes compressed messages only whole.
    pub safari: bool,
    pub cookies: Cookies,
}

/// A parsed request head.
struct Request {
    method: String,
    /// HTTP/1.0 (0) or 1.1 (1).
    version: u8,
    headers: Vec<(String, String)>,
}

impl Request {
    fn first(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// Go's `wsHeaderContains`: some comma-separated token of some value equals `token`.
    fn contains(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(key, _)| key.eq_ignore_ascii_case(name))
            .flat_map(|(_, value)| value.split(','))
            .any(|item| item.trim_matches([' ', '\t']).eq_ignore_ascii_case(token))
    }

    /// Some extension of `Sec-WebSocket-Extensions` is permessage-deflate.
    fn offers_deflate(&self) -> bool {
        self.headers
            .iter()
            .filter(|(key, _)| key.eq_ignore_ascii_case("Sec-WebSocket-Extensions"))
            .flat_map(|(_, value)| value.split(','))
            .flat_map(|extension| extension.split(';'))
            .any(|parameter| {
                parameter
                    .trim_matches([' ', '\t'])
                    .eq_ignore_ascii_case("permessage-deflate")
            })
    }
}

/// Read the upgrade request from `stream` and answer it; `None` when refused (the answer has
/// been written).
pub(crate) async fn upgrade<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    listener: &Listener,
    peer: SocketAddr,
    secure: bool,
) -> Option<Upgrade> {
    let mut buffer = Vec::with_capacity(1024);
    let (request, head_length) = loop {
        let mut chunk = [0u8; 4096];
        let count = stream.read(&mut chunk).await.ok()?;
        if count == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..count]);
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(&buffer) {
            Ok(httparse::Status::Complete(length)) => {
                let request = Request {
                    method: parsed.method.unwrap_or_default().to_string(),
                    version: parsed.version.unwrap_or(1),
                    headers: parsed
                        .headers
                        .iter()
                        .map(|header| {
                            (
                                header.name.to_string(),
                                String::from_utf8_lossy(header.value).into_owned(),
                            )
                        })
                        .collect(),
                };
                break (request, length);
            }
            Ok(httparse::Status::Partial) if buffer.len() < MAX_REQUEST => continue,
            Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
                write_plain_error(stream, "431 Request Header Fields Too Large").await;
                return None;
            }
            Err(_) => {
                write_plain_error(stream, "400 Bad Request").await;
                return None;
            }
        }
    };
    let host = request.first("Host").unwrap_or_default().to_string();
    if request.version == 1 && request.first("Host").is_none() {
        // Go's HTTP server answers this itself, before any handler.
        write_plain_error(stream, "400 Bad Request: missing required Host header").await;
        return None;
    }
    let refusal = check(&request, listener, &host, secure);
    let (status, reason) = match refusal {
        Err(refusal) => refusal,
        Ok(()) if buffer.len() > head_length => (
            400,
            "client sent data before handshake is complete".to_string(),
        ),
        Ok(()) => return accept(stream, &request, listener).await,
    };
    tracing::error!("{peer} - websocket handshake error: {reason}");
    write_http_error(stream, status).await;
    None
}

/// nats-server's checks, in its order; the HTTP status and the reason it logs.
fn check(
    request: &Request,
    listener: &Listener,
    host: &str,
    secure: bool,
) -> Result<(), (u16, String)> {
    let refuse = |status: u16, reason: &str| Err((status, reason.to_string()));
    if request.method != "GET" {
        return refuse(405, "request method must be GET");
    }
    if host.is_empty() {
        return refuse(400, "'Host' missing in request");
    }
    if !request.contains("Upgrade", "websocket") {
        return refuse(400, "invalid value for header 'Upgrade'");
    }
    if !request.contains("Connection", "Upgrade") {
        return refuse(400, "invalid value for header 'Connection'");
    }
    let key = request.first("Sec-WebSocket-Key").unwrap_or_default();
    if key.is_empty() {
        return refuse(400, "key missing");
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(key);
    if decoded.map_or(true, |decoded| decoded.len() != 16) {
        return refuse(400, "invalid websocket key");
    }
    if !request.contains("Sec-WebSocket-Version", "13") {
        return refuse(400, "invalid version");
    }
    let origin = request
        .first("Origin")
        .filter(|origin| !origin.is_empty())
        .or_else(|| request.first("Sec-WebSocket-Origin"))
        .unwrap_or_default();
    if let Err(error) = listener.origins.check(origin, host, secure) {
        return Err((403, format!("origin not allowed: {error}")));
    }
    Ok(())
}

/// Answer 101 and describe the connection.
async fn accept<S: AsyncWrite + Unpin>(
    stream: &mut S,
    request: &Request,
    listener: &Listener,
) -> Option<Upgrade> {
    let key = request.first("Sec-WebSocket-Key").unwrap_or_default();
    let compression = listener.options.compression && request.offers_deflate();
    let no_masking = request.first("Nats-No-Masking") == Some("true");
    let mut response = String::with_capacity(256);
    response.push_str(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ",
    );
    response.push_str(&accept_key(key));
    response.push_str("\r\n");
    if compression {
        response.push_str("Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover\r\n");
    }
    if no_masking {
        response.push_str("Nats-No-Masking: true\r\n");
    }
    for (name, value) in &listener.options.headers {
        response.push_str(name);
        response.push_str(": ");
        response.push_str(value);
        response.push_str("\r\n");
    }
    response.push_str("\r\n");
    stream.write_all(response.as_bytes()).await.ok()?;
    let agent = request.first("User-Agent").unwrap_or_default();
    let browser = agent.starts_with("Mozilla/");
    let safari = browser && compression && agent.contains("Version/") && agent.contains("Safari/");
    Some(Upgrade {
        compression,
        no_masking,
        browser,
        safari,
        cookies: read_cookies(request, listener),
    })
}

/// The cookies named in `websocket { }` (the last of a name wins, as Go's loop).
fn read_cookies(request: &Request, listener: &Listener) -> Cookies {
    let options = &listener.options;
    let mut cookies = Cookies::default();
    let pairs = request
        .headers
        .iter()
        .filter(|(key, _)| key.eq_ignore_ascii_case("Cookie"))
        .flat_map(|(_, value)| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='));
    for (name, value) in pairs {
        let value = value.trim_matches('"').to_string();
        if options.jwt_cookie.as_deref() == Some(name) {
            cookies.jwt = Some(value);
        } else if options.user_cookie.as_deref() == Some(name) {
            cookies.user = Some(value);
        } else if options.pass_cookie.as_deref() == Some(name) {
            cookies.password = Some(value);
        } else if options.token_cookie.as_deref() == Some(name) {
            cookies.token = Some(value);
        }
    }
    cookies
}

/// `Sec-WebSocket-Accept` for `key`.
pub(crate) fn accept_key(key: &str) -> String {
    let mut hasher = sha1_smol::Sha1::new();
    hasher.update(key.as_bytes());
    hasher.update(ACCEPT_GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(hasher.digest().bytes())
}

/// Go's `http.Error` answer, with the header nats-server adds.
async fn write_http_error<S: AsyncWrite + Unpin>(stream: &mut S, status: u16) {
    let text = match status {
        403 => "Forbidden",
        405 => "Method Not Allowed",
        _ => "Bad Request",
    };
    let date = http_date();
    let answer = format!(
        "HTTP/1.1 {status} {text}\r\nContent-Type: text/plain; charset=utf-8\r\nSec-Websocket-Version: 13\r\nX-Content-Type-Options: nosniff\r\nDate: {date}\r\nContent-Length: {}\r\n\r\n{text}\n",
        text.len() + 1
    );
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Go's answer to a request it cannot read (it closes the connection).
async fn write_plain_error<S: AsyncWrite + Unpin>(stream: &mut S, status_line: &str) {
    let answer = format!(
        "HTTP/1.1 {status_line}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n{status_line}"
    );
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The `Date` header: `Wed, 02 Dec 2026 00:41:09 GMT`.
fn http_date() -> String {
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    time::OffsetDateTime::now_utc()
        .format(&format)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn accept_key_is_the_rfc_example() {
        assert_eq!(
            super::accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }
}
