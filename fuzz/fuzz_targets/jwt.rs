//! Operator mode's JWTs (issue 16): the first byte picks the mode.
//! - 0: the rest as text, read as an operator, account and user JWT (decode, verify, store,
//!   authenticate): no panic.
//! - 1: the rest as JSON claims, signed by the trusted operator as an account JWT: stored,
//!   mapped onto account options and built into the accounts table (imports, exports, limits).
//! - 2: the rest as JSON claims, signed by a trusted account as a user JWT, checked as at
//!   CONNECT from an address the second byte picks (bearer or nonce signature, source
//!   networks, time windows, permissions, the account's exports from `account_exports`).
//!
//! Claims that are not JSON are used as a JSON string (refused, but through the same path).

#![no_main]

use libfuzzer_sys::fuzz_target;
use nats_server::fuzzing;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let claims = || {
        serde_json::from_str::<serde_json::Value>(&text)
            .unwrap_or_else(|_| serde_json::Value::String(text.to_string()))
    };
    match mode % 3 {
        0 => fuzzing::raw_jwt(&text),
        1 => {
            fuzzing::account_claims(claims());
        }
        _ => {
            let address = rest.first().map(|&byte| match byte % 3 {
                0 => std::net::IpAddr::from([10, 1, 2, byte]),
                1 => std::net::IpAddr::from([192, 168, 0, byte]),
                _ => std::net::IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
            });
            fuzzing::user_claims(claims(), address);
        }
    }
});
