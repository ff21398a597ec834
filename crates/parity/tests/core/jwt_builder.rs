//! Test-only NATS JWT v2 builder: operators, accounts and users signed with nkeys made at run
//! time, creds files in nsc's layout, and a server config for operator mode with a memory
//! resolver. Used by `operator_jwt.rs`; the product never sees this code, only its output.

use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// `HH:MM:SS` of the wall clock `offset_hours` east of UTC, `shift` seconds from now.
pub fn wall_clock(offset_hours: i64, shift: i64) -> String {
    let second = (now() + offset_hours * 3600 + shift).rem_euclid(86_400);
    format!(
        "{:02}:{:02}:{:02}",
        second / 3600,
        second / 60 % 60,
        second % 60
    )
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs() as i64)
        .unwrap_or_default()
}

fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Sign `claims` (the `iss` is set to `signer`'s public key, `iat` and `jti` filled in unless
/// given) as `base64url(header).base64url(claims).base64url(signature)`.
pub fn sign(mut claims: Value, signer: &nkeys::KeyPair) -> String {
    claims["iss"] = json!(signer.public_key());
    if claims.get("iat").is_none() {
        claims["iat"] = json!(now());
    }
    let digest = Sha256::digest(claims.to_string().as_bytes());
    claims["jti"] = json!(encode(&digest[..20]).to_uppercase());
    let header = encode(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let body = encode(claims.to_string().as_bytes());
    let signing_input = format!("{header}.{body}");
    let signature = signer.sign(signing_input.as_bytes()).expect("sign");
    format!("{signing_input}.{}", encode(&signature))
}

/// An operator JWT (self-signed by `operator`) with optional signing keys and system account.
pub fn operator_jwt(
    operator: &nkeys::KeyPair,
    signing_keys: &[String],
    system_account: Option<&str>,
) -> String {
    let mut nats = json!({"type": "operator", "version": 2});
    if !signing_keys.is_empty() {
        nats["signing_keys"] = json!(signing_keys);
    }
    if let Some(system) = system_account {
        nats["system_account"] = json!(system);
    }
    sign(
        json!({"sub": operator.public_key(), "name": "OP", "nats": nats}),
        operator,
    )
}

/// An account JWT for `account` signed by `signer`; `nats` holds the account fields
/// (limits, exports, imports, signing_keys, revocations) to merge in.
pub fn account_jwt(account: &nkeys::KeyPair, signer: &nkeys::KeyPair, nats: Value) -> String {
    account_jwt_at(account, signer, nats, now())
}

/// [`account_jwt`] issued at `iat` (seconds since the epoch): an update must be newer than
/// the JWT it replaces.
pub fn account_jwt_at(
    account: &nkeys::KeyPair,
    signer: &nkeys::KeyPair,
    nats: Value,
    iat: i64,
) -> String {
    let mut body = json!({
        "type": "account",
        "version": 2,
        "limits": {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
                   "wildcards": true, "conn": -1, "leaf": -1},
        "default_permissions": {"pub": {}, "sub": {}},
    });
    merge(&mut body, nats);
    sign(
        json!({"sub": account.public_key(), "name": "ACC", "iat": iat, "nats": body}),
        signer,
    )
}

/// A user JWT for `user` signed by `signer`; `issuer_account` when the signer is a signing key;
/// `extra` holds user fields (pub, sub, bearer_token, ...) and may hold top-level `exp`.
pub fn user_jwt(
    user: &nkeys::KeyPair,
    signer: &nkeys::KeyPair,
    issuer_account: Option<&str>,
    extra: Value,
) -> String {
    let mut nats = json!({
        "type": "user", "version": 2,
        "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1,
    });
    if let Some(account) = issuer_account {
        nats["issuer_account"] = json!(account);
    }
    let mut claims = json!({"sub": user.public_key(), "name": "U"});
    if let Value::Object(fields) = extra {
        for (key, value) in fields {
            match key.as_str() {
                "exp" | "nbf" | "iat" => claims[key] = value,
                _ => nats[key] = value,
            }
        }
    }
    claims["nats"] = nats;
    sign(claims, signer)
}

fn merge(target: &mut Value, extra: Value) {
    if let (Value::Object(target), Value::Object(extra)) = (target, extra) {
        for (key, value) in extra {
            target.insert(key, value);
        }
    }
}

/// A creds file's text in nsc's layout.
pub fn creds(jwt: &str, user: &nkeys::KeyPair) -> String {
    format!(
        "-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n\
         ************************* IMPORTANT *************************\n\
         NKEY Seed printed below can be used to sign and prove identity.\n\
         NKEYs are sensitive and should be treated as secrets.\n\n\
         -----BEGIN USER NKEY SEED-----\n{}\n------END USER NKEY SEED------\n\n\
         *************************************************************\n",
        user.seed().expect("seed")
    )
}

/// A config for operator mode with a memory resolver preloaded with `accounts`
/// (public key, JWT); `system_account` names the system account's public key.
pub fn operator_config(
    operator: &str,
    system_account: &str,
    accounts: &[(String, String)],
) -> String {
    let preload: String = accounts
        .iter()
        .map(|(key, jwt)| format!("  {key}: \"{jwt}\"\n"))
        .collect();
    format!(
        "operator: \"{operator}\"\nsystem_account: {system_account}\nresolver: MEMORY\n\
         resolver_preload: {{\n{preload}}}\n"
    )
}

/// An operator with a system account and one application account, ready to preload.
pub struct Trust {
    pub operator: nkeys::KeyPair,
    pub system: nkeys::KeyPair,
    pub system_jwt: String,
}

impl Trust {
    pub fn new() -> Trust {
        let operator = nkeys::KeyPair::new_operator();
        let system = nkeys::KeyPair::new_account();
        let system_jwt = account_jwt(&system, &operator, json!({}));
        Trust {
            operator,
            system,
            system_jwt,
        }
    }

    pub fn operator_jwt(&self) -> String {
        operator_jwt(&self.operator, &[], Some(&self.system.public_key()))
    }

    /// A config trusting this operator with `accounts` (and the system account) preloaded.
    pub fn config(&self, accounts: &[(&nkeys::KeyPair, &str)]) -> String {
        let mut preload = vec![(self.system.public_key(), self.system_jwt.clone())];
        preload.extend(
            accounts
                .iter()
                .map(|(key, jwt)| (key.public_key(), jwt.to_string())),
        );
        operator_config(&self.operator_jwt(), &self.system.public_key(), &preload)
    }
}
