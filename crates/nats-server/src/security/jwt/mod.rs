//! Operator (JWT) mode: decoding and verifying NATS JWT v2 (`claims.rs` the claim types, here
//! the `base64url(header).base64url(claims).base64url(ed25519 signature)` envelope signed with
//! nkeys), the trusted operators and the account resolver (`resolver.rs`: the memory resolver
//! with its preload, updated at runtime through `$SYS.REQ.*.CLAIMS.UPDATE`), and the checks of
//! a connecting user's JWT (`user.rs`), activation tokens of imports (`activation.rs`).
//!
//! Called by the config reader (operator JWTs at start-up), the authenticator (`auth.rs`) at
//! CONNECT, account creation (`accounts/`) and the system account's claim-update responders.
//! Knows nothing about sockets or routing.

pub mod activation;
pub mod cache;
pub mod claims;
pub mod directory;
pub mod resolver;
pub mod user;

use base64::Engine;
use serde::de::DeserializeOwned;

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs() as i64)
        .unwrap_or_default()
}

/// Why a JWT was not accepted (the text is for logs and start-up errors).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("expected 3 chunks")]
    Chunks,
    #[error("invalid encoding")]
    Encoding,
    #[error("{0}")]
    Header(String),
    #[error("{0}")]
    Claims(String),
    #[error("claim failed V2 signature verification")]
    Signature,
    #[error("not {0} claim")]
    Kind(&'static str),
    #[error("claim is expired")]
    Expired,
    #[error("claim is not yet valid")]
    NotYetValid,
}

fn base64_decode(text: &str) -> Result<Vec<u8>, JwtError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .map_err(|_| JwtError::Encoding)
}

/// Decode `token` as a JWT of claims `C`, verifying its ed25519 signature with the `iss` key
/// of the claims (the issuer must be an nkey public key). Times are not checked here.
pub fn decode<N: DeserializeOwned>(token: &str) -> Result<claims::Claims<N>, JwtError> {
    let token = token.trim();
    let mut parts = token.split('.');
    let (Some(header), Some(body), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Chunks);
    };
    let header: serde_json::Value = serde_json::from_slice(&base64_decode(header)?)
        .map_err(|error| JwtError::Header(error.to_string()))?;
    let kind = header["typ"].as_str().unwrap_or_default();
    if !kind.eq_ignore_ascii_case("JWT") {
        return Err(JwtError::Header(format!("not supported type {kind:?}")));
    }
    let algorithm = header["alg"].as_str().unwrap_or_default();
    if !algorithm.eq_ignore_ascii_case("ed25519-nkey") {
        return Err(JwtError::Header(format!(
            "unexpected {algorithm:?} algorithm"
        )));
    }
    let body_bytes = base64_decode(body)?;
    let claims: claims::Claims<N> =
        serde_json::from_slice(&body_bytes).map_err(|error| JwtError::Claims(error.to_string()))?;
    let signature = base64_decode(signature)?;
    let signed = &token[..token.len() - token.rsplit('.').next().map_or(0, str::len) - 1];
    let issuer = nkeys::KeyPair::from_public_key(&claims.iss).map_err(|_| JwtError::Signature)?;
    issuer
        .verify(signed.as_bytes(), &signature)
        .map_err(|_| JwtError::Signature)?;
    Ok(claims)
}

/// Sign `claims` with `key` as a NATS JWT v2 (`iss` must already be `key`'s public key).
pub fn encode(claims: &serde_json::Value, key: &nkeys::KeyPair) -> Result<String, JwtError> {
    let engine = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = engine.encode(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let body = engine.encode(claims.to_string().as_bytes());
    let signing_input = format!("{header}.{body}");
    let signature = key
        .sign(signing_input.as_bytes())
        .map_err(|_| JwtError::Signature)?;
    Ok(format!("{signing_input}.{}", engine.encode(signature)))
}

/// Expiry and not-before against `now`.
pub fn check_times<N>(claims: &claims::Claims<N>, now: i64) -> Result<(), JwtError> {
    if claims.exp > 0 && claims.exp < now {
        return Err(JwtError::Expired);
    }
    if claims.nbf > 0 && claims.nbf > now {
        return Err(JwtError::NotYetValid);
    }
    Ok(())
}

/// The first key letter of an nkey public key: `O` operator, `A` account, `U` user.
fn key_kind(key: &str) -> Option<u8> {
    nkeys::KeyPair::from_public_key(key)
        .ok()
        .and_then(|_| key.as_bytes().first().copied())
}

pub fn is_operator_key(key: &str) -> bool {
    key_kind(key) == Some(b'O')
}

pub fn is_account_key(key: &str) -> bool {
    key_kind(key) == Some(b'A')
}

pub fn is_user_key(key: &str) -> bool {
    key_kind(key) == Some(b'U')
}

/// The JWT inside nsc's decorated layout (`-----BEGIN ... JWT-----` lines), or the text
/// itself when it carries none.
pub fn undecorate(text: &str) -> &str {
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line.starts_with("---") && line.contains("JWT") {
            if let Some(jwt) = lines.next().filter(|line| !line.is_empty()) {
                return jwt;
            }
        }
    }
    text.trim()
}

#[cfg(test)]
mod tests;
