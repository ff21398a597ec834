//! Entry points for the cargo-fuzz target `jwt` in `fuzz/` (not an API: hidden from the docs).
//! Operator mode's JWT steps run exactly as the server runs them, without a server: decoding
//! and verifying an account JWT into the resolver, mapping it onto account options and building
//! the accounts table from them (imports, exports, cycles), and a connecting user's JWT checks
//! (signature or bearer, source networks, time windows, permissions). The harness holds one
//! operator and one trusted account whose keys sign what the fuzzer writes as claims, so the
//! claims get past the signature check to the code behind it.

use crate::accounts::Accounts;
use crate::config::Options;
use crate::security::jwt::resolver::{operator_claims, Resolver};
use crate::security::jwt::{claims, decode, encode, user};
use nkeys::KeyPair;
use serde_json::{json, Value};
use std::sync::OnceLock;

/// Keys and a resolver trusting the operator, holding one account it signed.
pub struct JwtHarness {
    operator: KeyPair,
    account: KeyPair,
    base: Options,
}

impl JwtHarness {
    fn new() -> JwtHarness {
        let operator = KeyPair::new_operator();
        let account = KeyPair::new_account();
        let operator_jwt = encode(
            &json!({"iss": operator.public_key(), "sub": operator.public_key(), "iat": 1,
                    "nats": {"type": "operator", "version": 2}}),
            &operator,
        )
        .unwrap_or_default();
        let mut base = Options::default();
        base.operator.jwts.push(operator_jwt);
        JwtHarness {
            operator,
            account,
            base,
        }
    }

    /// A resolver trusting the operator and holding the harness's account (its exports given).
    fn resolver(&self, exports: Value) -> Resolver {
        let operators: Vec<_> = self
            .base
            .operator
            .jwts
            .iter()
            .filter_map(|jwt| operator_claims(jwt).ok())
            .collect();
        let resolver = Resolver::new(&operators);
        let account = json!({"iss": self.operator.public_key(), "sub": self.account.public_key(),
            "iat": 1, "name": "A", "nats": {"type": "account", "version": 2, "exports": exports,
            "limits": {"conn": -1, "subs": -1, "data": -1, "payload": -1}}});
        if let Ok(jwt) = encode(&account, &self.operator) {
            let _ = resolver.store(None, &jwt);
        }
        resolver
    }
}

fn harness() -> &'static JwtHarness {
    static HARNESS: OnceLock<JwtHarness> = OnceLock::new();
    HARNESS.get_or_init(JwtHarness::new)
}

/// Arbitrary text as every kind of JWT the server reads: operator, account (into a resolver),
/// user (at CONNECT). Nothing may panic.
pub fn raw_jwt(text: &str) {
    let harness = harness();
    let _ = decode::<claims::OperatorFields>(text);
    let _ = decode::<claims::AccountFields>(text);
    let _ = decode::<claims::UserFields>(text);
    let _ = operator_claims(text);
    let resolver = harness.resolver(Value::Array(Vec::new()));
    let _ = resolver.store(None, text);
    let _ = user::authenticate(&resolver, text, Some("nonce"), Some("c2ln"), None);
}

/// `claims` (the fuzzer's JSON) signed by the operator as an account JWT: stored, mapped onto
/// account options and built into the accounts table beside the harness's account. True when
/// the resolver took it.
pub fn account_claims(mut claims: Value) -> bool {
    let harness = harness();
    let key = KeyPair::new_account();
    if let Some(object) = claims.as_object_mut() {
        object.insert("iss".into(), harness.operator.public_key().into());
        object.entry("sub").or_insert(key.public_key().into());
    }
    let Ok(jwt) = encode(&claims, &harness.operator) else {
        return false;
    };
    let resolver = harness.resolver(Value::Array(Vec::new()));
    if resolver.store(None, &jwt).is_err() {
        return false;
    }
    let options = resolver.with_accounts(&harness.base);
    let _ = Accounts::new(&options, "fuzz");
    true
}

/// `claims` (the fuzzer's JSON) signed by the harness's account as a user JWT, checked as a
/// CONNECT would be, from `address`; the account exports `exports` (its default permissions
/// exports come from the same JSON's `account_exports` member, when given). True when the
/// user is admitted.
pub fn user_claims(mut claims: Value, address: Option<std::net::IpAddr>) -> bool {
    let harness = harness();
    let user = KeyPair::new_user();
    let exports = claims
        .get("account_exports")
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    if let Some(object) = claims.as_object_mut() {
        object.insert("iss".into(), harness.account.public_key().into());
        object.entry("sub").or_insert(user.public_key().into());
    }
    let Ok(jwt) = encode(&claims, &harness.account) else {
        return false;
    };
    let resolver = harness.resolver(exports);
    let signature = user
        .sign(b"nonce")
        .map(|signed| {
            use base64::Engine;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signed)
        })
        .ok();
    user::authenticate(
        &resolver,
        &jwt,
        Some("nonce"),
        signature.as_deref(),
        address,
    )
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The harness signs well enough to reach the checks behind the signature: a plain user
    /// and account are admitted, a user outside its source network or a wrong-kind claim not.
    #[test]
    fn signed_claims_reach_the_checks_behind_the_signature() {
        let user = json!({"iat": 1, "nats": {"type": "user", "version": 2}});
        assert!(user_claims(user, None));
        let restricted = json!({"iat": 1, "nats": {"type": "user", "version": 2,
            "src": ["10.0.0.0/8"]}});
        assert!(!user_claims(restricted, Some([192, 168, 1, 1].into())));
        let account = json!({"iat": 1, "nats": {"type": "account", "version": 2,
            "exports": [{"subject": "svc.>", "type": "service"}]}});
        assert!(account_claims(account));
        assert!(!account_claims(json!({"iat": 1, "nats": {"type": "user"}})));
        raw_jwt("a.b.c");
    }
}
