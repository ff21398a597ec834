//! JWT envelope decoding and verification, and the resolver's trust checks.

use super::claims::{AccountFields, UserFields};
use super::resolver::{operator_claims, Resolver, UpdateOutcome};
use super::*;
use serde_json::json;

fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn sign(mut claims: serde_json::Value, signer: &nkeys::KeyPair) -> String {
    claims["iss"] = json!(signer.public_key());
    if claims.get("iat").is_none() {
        claims["iat"] = json!(now());
    }
    let header = encode(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let input = format!("{header}.{}", encode(claims.to_string().as_bytes()));
    let signature = signer.sign(input.as_bytes()).unwrap();
    format!("{input}.{}", encode(&signature))
}

fn account(key: &nkeys::KeyPair, signer: &nkeys::KeyPair, iat: i64) -> String {
    sign(
        json!({"sub": key.public_key(), "iat": iat, "nats": {"type": "account", "version": 2}}),
        signer,
    )
}

#[test]
fn a_signed_user_jwt_decodes_and_a_tampered_one_does_not() {
    let account = nkeys::KeyPair::new_account();
    let user = nkeys::KeyPair::new_user();
    let jwt = sign(
        json!({"sub": user.public_key(), "nats": {"type": "user", "pub": {"allow": ["a"]}, "subs": 3}}),
        &account,
    );
    let claims: claims::UserClaims = decode(&jwt).unwrap();
    assert_eq!(claims.sub, user.public_key());
    assert_eq!(claims.nats.limits.subs, 3);
    assert_eq!(claims.nats.limits.payload, -1);
    assert_eq!(claims.nats.limits.permissions.publish.allow, vec!["a"]);
    let mut parts: Vec<&str> = jwt.split('.').collect();
    let forged = encode(br#"{"sub":"x","iss":"y","nats":{}}"#);
    parts[1] = &forged;
    assert!(decode::<UserFields>(&parts.join(".")).is_err());
    assert_eq!(decode::<UserFields>("a.b").unwrap_err(), JwtError::Chunks);
    assert!(decode::<UserFields>("").is_err());
    assert!(decode::<UserFields>("!!.??.##").is_err());
}

#[test]
fn a_wrong_algorithm_is_refused() {
    let account = nkeys::KeyPair::new_account();
    let header = encode(br#"{"typ":"JWT","alg":"HS256"}"#);
    let body = encode(
        json!({"sub": "x", "iss": account.public_key(), "nats": {}})
            .to_string()
            .as_bytes(),
    );
    let input = format!("{header}.{body}");
    let jwt = format!(
        "{input}.{}",
        encode(&account.sign(input.as_bytes()).unwrap())
    );
    assert!(matches!(
        decode::<AccountFields>(&jwt),
        Err(JwtError::Header(_))
    ));
}

#[test]
fn operators_accounts_and_updates() {
    let operator = nkeys::KeyPair::new_operator();
    let signing = nkeys::KeyPair::new_operator();
    let operator_jwt = sign(
        json!({"sub": operator.public_key(), "nats": {"type": "operator", "signing_keys": [signing.public_key()]}}),
        &operator,
    );
    let claims = operator_claims(&operator_jwt).unwrap();
    assert!(operator_claims(&account(&nkeys::KeyPair::new_account(), &operator, 1)).is_err());
    let resolver = Resolver::new(&[claims]);
    let key = nkeys::KeyPair::new_account();
    assert_eq!(
        resolver.store(None, &account(&key, &signing, 10)),
        Ok(UpdateOutcome::Updated)
    );
    assert_eq!(
        resolver.store(Some(&key.public_key()), &account(&key, &operator, 5)),
        Ok(UpdateOutcome::Older)
    );
    assert!(resolver
        .store(None, &account(&key, &nkeys::KeyPair::new_operator(), 20))
        .is_err());
    assert!(resolver
        .store(Some("AOTHER"), &account(&key, &operator, 20))
        .is_err());
    assert_eq!(resolver.account(&key.public_key()).unwrap().claims.iat, 10);
}

#[test]
fn decorated_jwts_are_unwrapped() {
    let text =
        "-----BEGIN NATS OPERATOR JWT-----\neyJabc.def.ghi\n------END NATS OPERATOR JWT------\n";
    assert_eq!(undecorate(text), "eyJabc.def.ghi");
    assert_eq!(undecorate(" eyJx.y.z \n"), "eyJx.y.z");
}
