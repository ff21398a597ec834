//! Authorization callout (nats-server's ADR-26, server config mode): the request JWT the server
//! signs for a connecting client and sends to `$SYS.REQ.USER.AUTH` in the callout account, and
//! the checks of the service's answer (an authorization response JWT carrying a user JWT),
//! which yield the account to bind the client to and its permissions and limits.
//!
//! Called by the connection reader at CONNECT (`client/reader/callout.rs`, which does the
//! request/reply); knows nothing about sockets or routing.

use crate::config::AuthCallout;
use crate::security::jwt::claims::{AuthorizationResponseClaims, UserClaims};
use crate::security::jwt::resolver::{Resolver, VerifiedAccount};
use crate::security::jwt::user::{permissions, user_permissions, JwtUser};
use crate::security::jwt::{check_times, decode, encode, is_user_key, now};
use nats_proto::ConnectOptions;
use serde_json::{json, Map, Value};

/// Where the requests go, in the callout account.
pub const SUBJECT: &str = "$SYS.REQ.USER.AUTH";
/// The audience of every request.
const REQUEST_AUDIENCE: &str = "nats-authorization-request";
/// The header carrying the server's public xkey on an encrypted request.
pub const XKEY_HEADER: &str = "Nats-Server-Xkey";

/// How answers are checked: against the configured issuer (server config mode), or in
/// operator mode against the callout account (`callout.account`, its public key) and the
/// accounts it allows, as the resolver knows them.
#[derive(Clone, Copy)]
pub enum Trust<'a> {
    Config,
    Operator {
        account: &'a VerifiedAccount,
        resolver: &'a Resolver,
    },
}

/// The callout an operator-mode account asks for (its JWT's `authorization`): `None` when it
/// has none.
pub fn of_account(account: &VerifiedAccount) -> Option<AuthCallout> {
    let external = &account.fields().authorization;
    external.enabled().then(|| AuthCallout {
        issuer: account.key().to_string(),
        account: account.key().to_string(),
        auth_users: external.auth_users.clone(),
        xkey: (!external.xkey.is_empty()).then(|| external.xkey.clone()),
        allowed_accounts: external.allowed_accounts.clone(),
    })
}

/// Whether `key` is a public curve (xkey) key.
pub fn is_curve_key(key: &str) -> bool {
    key.starts_with('X') && nkeys::XKey::from_public_key(key).is_ok()
}

/// The server as a request names it.
pub struct ServerFacts<'a> {
    pub keys: &'a nkeys::KeyPair,
    pub name: &'a str,
    pub host: &'a str,
    pub version: &'a str,
    pub cluster: Option<&'a str>,
    pub tags: &'a [String],
    /// The server's public xkey, when the request is encrypted.
    pub xkey: Option<&'a str>,
}

/// The connecting client as a request describes it.
pub struct ClientFacts<'a> {
    pub host: &'a str,
    pub id: u64,
    pub kind: &'a str,
    pub nonce: Option<&'a str>,
}

fn put(object: &mut Map<String, Value>, key: &str, value: Option<&str>) {
    if let Some(value) = value.filter(|value| !value.is_empty()) {
        object.insert(key.into(), json!(value));
    }
}

/// The signed request JWT for a client whose CONNECT was `connect`; the answer must authorize
/// `user_nkey` (a user key made for this request only) and is awaited for `timeout_seconds`.
pub fn request(
    callout: &AuthCallout,
    server: &ServerFacts<'_>,
    client: &ClientFacts<'_>,
    connect: &ConnectOptions,
    user_nkey: &str,
    timeout_seconds: i64,
) -> Result<String, String> {
    let mut server_id = Map::new();
    put(&mut server_id, "name", Some(server.name));
    put(&mut server_id, "host", Some(server.host));
    server_id.insert("id".into(), json!(server.keys.public_key()));
    put(&mut server_id, "version", Some(server.version));
    put(&mut server_id, "cluster", server.cluster);
    if !server.tags.is_empty() {
        server_id.insert("tags".into(), json!(server.tags));
    }
    put(&mut server_id, "xkey", server.xkey);

    let mut client_info = Map::new();
    put(&mut client_info, "host", Some(client.host));
    client_info.insert("id".into(), json!(client.id));
    let raw_user = connect
        .nkey
        .as_deref()
        .filter(|nkey| !nkey.is_empty())
        .or(connect.user.as_deref());
    put(&mut client_info, "user", raw_user);
    put(&mut client_info, "name", connect.name.as_deref());
    client_info.insert("kind".into(), json!("Client"));
    client_info.insert("type".into(), json!(client.kind));
    if connect.sig.as_deref().is_some_and(|sig| !sig.is_empty()) {
        put(&mut client_info, "nonce", client.nonce);
    }

    let mut connect_opts = Map::new();
    put(&mut connect_opts, "jwt", connect.jwt.as_deref());
    put(&mut connect_opts, "nkey", connect.nkey.as_deref());
    put(&mut connect_opts, "sig", connect.sig.as_deref());
    put(
        &mut connect_opts,
        "auth_token",
        connect.auth_token.as_deref(),
    );
    put(&mut connect_opts, "user", connect.user.as_deref());
    put(&mut connect_opts, "pass", connect.pass.as_deref());
    put(&mut connect_opts, "name", connect.name.as_deref());
    put(&mut connect_opts, "lang", connect.lang.as_deref());
    put(&mut connect_opts, "version", connect.version.as_deref());
    connect_opts.insert("protocol".into(), json!(connect.protocol));

    let issued = now();
    let claims = json!({
        "aud": REQUEST_AUDIENCE,
        "exp": issued + timeout_seconds.max(1),
        "jti": crate::security::identity::new_nuid(),
        "iat": issued,
        "iss": server.keys.public_key(),
        "sub": callout.issuer,
        "nats": {
            "server_id": server_id,
            "user_nkey": user_nkey,
            "client_info": client_info,
            "connect_opts": connect_opts,
            "type": "authorization_request",
            "version": 2,
        },
    });
    encode(&claims, server.keys)
        .map_err(|error| format!("Error encoding auth request claim: {error}"))
}

/// Who the service authorized: the user (its account is the one to bind to, by name), with its
/// permissions and limits; the name to show for it.
#[derive(Debug)]
pub struct Authorized {
    pub user: JwtUser,
    pub display_name: String,
}

fn title_case(text: String) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => text,
    }
}

/// Checks the service's answer `payload` to a request for `user_nkey` on the server `server_id`
/// (decrypted first with `server_xkey` when the request was encrypted for `service_xkey` and the
/// answer is not a plain JWT). The errors are nats-server's texts (logged, never sent).
pub fn check_response(
    callout: &AuthCallout,
    trust: Trust<'_>,
    payload: &[u8],
    user_nkey: &str,
    server_id: &str,
    encryption: Option<(&nkeys::XKey, &nkeys::XKey)>,
) -> Result<Authorized, String> {
    let account = &callout.account;
    // Only a JWT in the clear is trimmed: a sealed answer is binary, and its last byte is
    // ASCII whitespace about one time in fifty.
    if payload.trim_ascii_end().is_empty() {
        return Err(format!(
            "Auth callout violation: \"no reason supplied\" on account {account:?}"
        ));
    }
    let decrypted;
    let (text, encrypted) = match encryption {
        Some((server_xkey, service_xkey)) if !payload.starts_with(b"eyJ") => {
            decrypted = server_xkey.open(payload, service_xkey).map_err(|error| {
                format!("Error decrypting auth callout response on account {account:?}: {error}")
            })?;
            (&decrypted[..], true)
        }
        _ => (payload.trim_ascii_end(), false),
    };
    let text = std::str::from_utf8(text).map_err(|error| title_case(error.to_string()))?;
    let response: AuthorizationResponseClaims =
        decode(text).map_err(|error| title_case(error.to_string()))?;
    if response.sub != user_nkey {
        return Err(
            "Auth callout violation: auth callout response is not for expected user".into(),
        );
    }
    if response.aud != server_id {
        return Err("Auth callout violation: auth callout response is not for server".into());
    }
    if !response.nats.error.is_empty() {
        return Err(format!(
            "Auth callout service returned an error: {}",
            response.nats.error
        ));
    }
    if let Trust::Operator { account: own, .. } = trust {
        let signer = if response.nats.issuer_account.is_empty() {
            &response.iss
        } else {
            &response.nats.issuer_account
        };
        if !encrypted && *signer != callout.account && own.signer(signer).is_none() {
            return Err("Auth callout signing key is unknown".into());
        }
    }
    let claims: UserClaims = decode(&response.nats.jwt)
        .map_err(|error| format!("Error validating user JWT: {error}"))?;
    if !is_user_key(&claims.sub) {
        return Err("Error validating user JWT: subject is not a user nkey".into());
    }
    if claims.sub != user_nkey {
        return Err(format!(
            "Expected authorized user of {user_nkey:?} but got {:?} on account {account:?}",
            claims.sub
        ));
    }
    let now = now();
    if check_times(&claims, now).is_err() {
        return Err(format!(
            "Authorized user on account {account:?} outside of valid connect times"
        ));
    }
    let limits = &claims.nats.limits;
    // The user's own `times` (not a scoped key's), as nats-server's `validateTimes` there.
    let window_end = if limits.times.is_empty() {
        None
    } else {
        Some(
            crate::security::jwt::user::current_window_end(limits, now).ok_or_else(|| {
                format!("Authorized user on account {account:?} outside of valid connect times")
            })?,
        )
    };
    if !limits.allowed_connection_types.is_empty()
        && !limits
            .allowed_connection_types
            .iter()
            .any(|kind| kind.eq_ignore_ascii_case("STANDARD"))
    {
        return Err(format!(
            "Authorized user on account {account:?} using invalid connection type"
        ));
    }
    // Who issued the user: the callout account (or, in operator mode, an account it allows).
    let issuer = match trust {
        Trust::Config if !claims.nats.issuer_account.is_empty() => {
            return Err(format!(
                "Error non operator mode account {account:?}: attempted to use issuer_account"
            ));
        }
        Trust::Config => &claims.iss,
        Trust::Operator { .. } if !claims.nats.issuer_account.is_empty() => {
            &claims.nats.issuer_account
        }
        Trust::Operator { .. } => &claims.iss,
    };
    if *issuer != callout.issuer {
        let allowed = matches!(trust, Trust::Operator { .. })
            && (callout.allowed_accounts == ["*"] || callout.allowed_accounts.contains(issuer));
        if !allowed && matches!(trust, Trust::Config) {
            return Err(format!(
                "Wrong issuer for auth callout response on account {account:?}, expected {:?} got {:?}",
                callout.issuer, issuer
            ));
        }
        if !allowed {
            return Err(format!(
                "Account {:?} not permitted as valid account option for auth callout for account {account:?}",
                claims.iss
            ));
        }
    }
    // Where the user goes and what it may do: the user JWT's `aud` in config mode; in operator
    // mode the issuing account, which must know the signing key (a scoped key's template
    // replaces the user's own permissions and limits).
    let (target, granted) = match trust {
        Trust::Config => (claims.aud.clone(), None),
        Trust::Operator { resolver, .. } => {
            let target = resolver.account(issuer).ok_or_else(|| {
                format!(
                    "No valid account {issuer:?} for auth callout response on account {account:?}"
                )
            })?;
            let template = target
                .signer(&claims.iss)
                .ok_or_else(|| format!("User JWT issuer {:?} is not known", claims.iss))?;
            let limits = template.unwrap_or(limits);
            (
                target.key().to_string(),
                Some((permissions(limits, &target), limits.subs, limits.payload)),
            )
        }
    };
    let (permissions, subscriptions, payload) = granted.unwrap_or_else(|| {
        (
            user_permissions(&limits.permissions),
            limits.subs,
            limits.payload,
        )
    });
    let display_name = if claims.name.is_empty() {
        claims.sub.clone()
    } else {
        claims.name.clone()
    };
    Ok(Authorized {
        user: JwtUser {
            account: target,
            user: claims.sub.clone(),
            name: claims.name.clone(),
            issued_at: claims.iat,
            expires: [(claims.exp > 0).then_some(claims.exp), window_end]
                .into_iter()
                .flatten()
                .min(),
            permissions,
            subscriptions,
            payload,
        },
        display_name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::jwt::claims::Claims;

    fn callout(issuer: &nkeys::KeyPair) -> AuthCallout {
        AuthCallout {
            issuer: issuer.public_key(),
            account: "AUTH".into(),
            auth_users: vec!["auth".into()],
            xkey: None,
            allowed_accounts: Vec::new(),
        }
    }

    fn sign(mut claims: Value, key: &nkeys::KeyPair) -> String {
        claims["iss"] = json!(key.public_key());
        encode(&claims, key).expect("sign")
    }

    fn response(
        issuer: &nkeys::KeyPair,
        user: &str,
        server: &str,
        user_jwt: &str,
        error: &str,
    ) -> String {
        sign(
            json!({"sub": user, "aud": server, "nats": {"jwt": user_jwt, "error": error,
                "type": "authorization_response", "version": 2}}),
            issuer,
        )
    }

    fn user_jwt(issuer: &nkeys::KeyPair, user: &str, account: &str) -> String {
        sign(
            json!({"sub": user, "aud": account, "name": "dlc", "nats": {"type": "user",
                "version": 2, "pub": {"allow": ["app.>"]}, "subs": -1, "payload": -1}}),
            issuer,
        )
    }

    #[test]
    fn a_request_is_signed_by_the_server_and_names_the_user_key() {
        let issuer = nkeys::KeyPair::new_account();
        let server = nkeys::KeyPair::new_server();
        let connect = ConnectOptions {
            user: Some("dlc".into()),
            pass: Some("zzz".into()),
            ..ConnectOptions::default()
        };
        let facts = ServerFacts {
            keys: &server,
            name: "A",
            host: "127.0.0.1",
            version: "2.15.1",
            cluster: None,
            tags: &[],
            xkey: None,
        };
        let client = ClientFacts {
            host: "127.0.0.1",
            id: 7,
            kind: "nats",
            nonce: None,
        };
        let token = request(&callout(&issuer), &facts, &client, &connect, "UXYZ", 2).expect("jwt");
        let claims: Claims<Value> = decode(&token).expect("signed by the server");
        assert_eq!(claims.iss, server.public_key());
        assert_eq!(claims.sub, issuer.public_key());
        assert_eq!(claims.aud, REQUEST_AUDIENCE);
        assert_eq!(claims.nats["user_nkey"], "UXYZ");
        assert_eq!(claims.nats["connect_opts"]["user"], "dlc");
        assert_eq!(claims.nats["connect_opts"]["pass"], "zzz");
        assert_eq!(claims.nats["client_info"]["id"], 7);
        assert_eq!(claims.nats["server_id"]["id"], server.public_key());
    }

    #[test]
    fn responses_are_checked_as_nats_server_checks_them() {
        let issuer = nkeys::KeyPair::new_account();
        let other = nkeys::KeyPair::new_account();
        let user = nkeys::KeyPair::new_user().public_key();
        let server = nkeys::KeyPair::new_server().public_key();
        let config = callout(&issuer);
        let good = user_jwt(&issuer, &user, "APP");
        let authorized = check_response(
            &config,
            Trust::Config,
            response(&issuer, &user, &server, &good, "").as_bytes(),
            &user,
            &server,
            None,
        )
        .expect("authorized");
        assert_eq!(authorized.user.account, "APP");
        assert_eq!(authorized.display_name, "dlc");
        let publish = authorized.user.permissions.and_then(|p| p.publish);
        assert_eq!(
            publish.map(|rules| rules.allow),
            Some(vec!["app.>".to_string()])
        );

        let refusals = [
            (
                response(&issuer, &user, &server, &good, "bad creds"),
                "returned an error",
            ),
            (
                response(&issuer, "UOTHER", &server, &good, ""),
                "not for expected user",
            ),
            (
                response(&issuer, &user, "NOTME", &good, ""),
                "not for server",
            ),
            (
                response(&issuer, &user, &server, &user_jwt(&other, &user, "APP"), ""),
                "Wrong issuer",
            ),
            (String::new(), "no reason supplied"),
            ("garbage".into(), "Expected 3 chunks"),
        ];
        for (answer, expected) in refusals {
            let error = check_response(
                &config,
                Trust::Config,
                answer.as_bytes(),
                &user,
                &server,
                None,
            )
            .expect_err(expected);
            assert!(error.contains(expected), "{error:?} lacks {expected:?}");
        }
    }

    /// A user's answer sealed by the service for the server's xkey (sealed again until `pick`
    /// takes it: each seal has a fresh nonce), checked as the server checks it: the account
    /// it grants.
    fn open_sealed(pick: impl Fn(&[u8]) -> bool) -> String {
        let issuer = nkeys::KeyPair::new_account();
        let user = nkeys::KeyPair::new_user().public_key();
        let server = nkeys::KeyPair::new_server().public_key();
        let server_xkey = nkeys::XKey::new();
        let service_xkey = nkeys::XKey::new();
        assert!(is_curve_key(&server_xkey.public_key()));
        assert!(!is_curve_key(&issuer.public_key()));
        let server_public =
            nkeys::XKey::from_public_key(&server_xkey.public_key()).expect("public");
        let service_public =
            nkeys::XKey::from_public_key(&service_xkey.public_key()).expect("public");
        let answer = response(
            &issuer,
            &user,
            &server,
            &user_jwt(&issuer, &user, "APP"),
            "",
        );
        // 5,000 seals: one ending in whitespace (5 of 256) is missed with a chance below 1e-40.
        let sealed = (0..5_000)
            .map(|_| {
                service_xkey
                    .seal(answer.as_bytes(), &server_public)
                    .expect("seal")
            })
            .find(|sealed| pick(sealed))
            .expect("a sealed answer as picked");
        check_response(
            &callout(&issuer),
            Trust::Config,
            &sealed,
            &user,
            &server,
            Some((&server_xkey, &service_public)),
        )
        .expect("authorized")
        .user
        .account
    }

    #[test]
    fn encrypted_responses_are_opened_with_the_server_xkey() {
        assert_eq!(open_sealed(|_| true), "APP");
    }

    /// A sealed answer is binary: one ending in a byte that is ASCII whitespace opens too (it
    /// was trimmed as text and failed to open, about one answer in fifty).
    #[test]
    fn a_sealed_response_ending_in_whitespace_bytes_opens() {
        assert_eq!(
            open_sealed(|sealed| sealed.last().is_some_and(u8::is_ascii_whitespace)),
            "APP"
        );
    }
}
