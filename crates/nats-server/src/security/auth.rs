//! Authentication (token, single user/password, users list, bcrypt hashes, nkey users signing
//! the INFO nonce, and in operator mode only user JWTs, checked in `jwt/user.rs`), checked by
//! the connection reader at CONNECT; it hands back the user's [`UserPermissions`]
//! (`permissions.rs`). Knows nothing about sockets.

use crate::config::Options;
use crate::security::certificate::CertificateIdentity;
use crate::security::jwt::resolver::Resolver;
use crate::security::jwt::user::JwtUser;
pub use crate::security::permissions::{pattern_matches, UserPermissions};
use nats_proto::ConnectOptions;
use std::collections::HashMap;
use std::sync::Arc;

struct Account {
    password: String,
    permissions: Option<Arc<UserPermissions>>,
}

/// Who may connect, built once from the options.
pub struct Authenticator {
    token: Option<String>,
    users: HashMap<String, Account>,
    /// nkey users by public key.
    nkeys: HashMap<String, Option<Arc<UserPermissions>>>,
    no_auth_user: Option<String>,
    /// The configured account of each user (by name or nkey) that came from `accounts { }`.
    accounts: HashMap<String, String>,
    required: bool,
    /// `verify_and_map`: users are named by their client certificate.
    map_certificates: bool,
    /// Some configured password or token is a bcrypt hash (slow to check).
    hashed_secrets: bool,
    /// Operator mode: only user JWTs of the resolver's accounts connect.
    jwt: Option<Arc<Resolver>>,
}

/// Authentication failed: the connection gets `-ERR 'Authorization Violation'` and is closed.
#[derive(Debug)]
pub struct AuthorizationViolation;

/// Who a CONNECT authenticated as: its permissions (none: everything allowed), the name
/// /connz shows (user name or nkey), and in operator mode what the user JWT granted.
pub type Authenticated = (
    Option<Arc<UserPermissions>>,
    Option<String>,
    Option<Box<JwtUser>>,
);

impl Authenticator {
    /// `jwt`: the resolver of operator mode (the server's, kept across reloads).
    pub fn new(options: &Options, jwt: Option<Arc<Resolver>>) -> Authenticator {
        let default_permissions = options
            .default_permissions
            .as_ref()
            .map(|permissions| Arc::new(UserPermissions::compile(permissions)));
        let mut users = HashMap::new();
        let mut nkeys = HashMap::new();
        if let Some(user) = &options.username {
            users.insert(
                user.clone(),
                Account {
                    password: options.password.clone().unwrap_or_default(),
                    permissions: default_permissions.clone(),
                },
            );
        }
        let mut accounts = HashMap::new();
        for user in &options.users {
            if let Some(account) = &user.account {
                let key = user.nkey.as_ref().unwrap_or(&user.user);
                accounts.insert(key.clone(), account.clone());
            }
            let permissions = match &user.permissions {
                Some(permissions) => Some(Arc::new(UserPermissions::compile(permissions))),
                None => default_permissions.clone(),
            };
            match &user.nkey {
                Some(nkey) => {
                    nkeys.insert(nkey.clone(), permissions);
                }
                None => {
                    users.insert(
                        user.user.clone(),
                        Account {
                            password: user.password.clone(),
                            permissions,
                        },
                    );
                }
            }
        }
        Authenticator {
            token: options.token.clone(),
            users,
            nkeys,
            no_auth_user: options.no_auth_user.clone(),
            accounts,
            required: options.auth_required(),
            map_certificates: options.tls.as_ref().is_some_and(|tls| tls.map),
            hashed_secrets: options
                .token
                .iter()
                .chain(&options.password)
                .chain(options.users.iter().map(|user| &user.password))
                .any(|secret| is_bcrypt(secret)),
            jwt,
        }
    }

    /// The account name a user (name or nkey) belongs to: its `accounts { }` entry, else
    /// nats-server's global account `$G`.
    pub fn account_of(&self, user: Option<&str>) -> &str {
        user.and_then(|user| self.accounts.get(user))
            .map_or("$G", String::as_str)
    }

    /// nats-server's `clientHasMovedToDifferentAccount` for a user gone: the nkey or user name
    /// a CONNECT gave is no longer configured (a reload closes that connection).
    pub fn user_gone(&self, connect: &ConnectOptions) -> bool {
        fn named(value: &Option<String>) -> Option<&str> {
            value.as_deref().filter(|text| !text.is_empty())
        }
        if let Some(nkey) = named(&connect.nkey) {
            return !self.nkeys.contains_key(nkey);
        }
        named(&connect.user).is_some_and(|user| !self.users.contains_key(user))
    }

    pub fn required(&self) -> bool {
        self.required
    }

    /// Checking a CONNECT may verify a bcrypt hash.
    pub fn has_hashed_secrets(&self) -> bool {
        self.hashed_secrets
    }

    /// INFO carries a nonce for the client to sign when nkey users exist.
    pub fn nonce_required(&self) -> bool {
        !self.nkeys.is_empty() || self.jwt.is_some()
    }

    /// Operator mode's resolver.
    pub fn resolver(&self) -> Option<&Arc<Resolver>> {
        self.jwt.as_ref()
    }

    /// Check CONNECT credentials (`nonce`: the one this connection's INFO carried;
    /// `certificate`: the client certificate's identity with `verify_and_map`); on success,
    /// the user's permissions (if any) and name. nkeys first, then users (named by the
    /// certificate when mapping), then the token, as nats-server checks them.
    pub fn authenticate(
        &self,
        connect: &ConnectOptions,
        nonce: Option<&str>,
        certificate: Option<&CertificateIdentity>,
        address: std::net::IpAddr,
    ) -> Result<Authenticated, AuthorizationViolation> {
        if !self.required {
            return Ok((None, None, None));
        }
        if let Some(resolver) = &self.jwt {
            let token = connect.jwt.as_deref().ok_or(AuthorizationViolation)?;
            let user = crate::security::jwt::user::authenticate(
                resolver,
                token,
                nonce,
                connect.sig.as_deref(),
                Some(address),
            )
            .map_err(|refusal| {
                tracing::debug!("user JWT refused: {refusal:?}");
                AuthorizationViolation
            })?;
            let permissions = user
                .permissions
                .as_ref()
                .map(|permissions| Arc::new(UserPermissions::compile(permissions)));
            return Ok((permissions, Some(user.user.clone()), Some(Box::new(user))));
        }
        let anonymous = connect.user.is_none()
            && connect.pass.is_none()
            && connect.auth_token.is_none()
            && connect.nkey.is_none();
        if !self.nkeys.is_empty() {
            if let Some(default_user) = self.no_auth_user.as_ref().filter(|_| anonymous) {
                if let Some(permissions) = self.nkeys.get(default_user) {
                    return Ok((permissions.clone(), Some(default_user.clone()), None));
                }
            }
            if let Some(nkey) = &connect.nkey {
                let permissions = self.nkeys.get(nkey).ok_or(AuthorizationViolation)?;
                let signature = connect.sig.as_deref().ok_or(AuthorizationViolation)?;
                if !signature_verifies(nkey, nonce.unwrap_or_default(), signature) {
                    return Err(AuthorizationViolation);
                }
                return Ok((permissions.clone(), Some(nkey.clone()), None));
            }
        }
        if self.map_certificates && !self.users.is_empty() {
            let user = certificate
                .and_then(|identity| self.mapped_user(identity))
                .ok_or(AuthorizationViolation)?;
            return match self.users.get(&user) {
                Some(account)
                    if compare_passwords(
                        &account.password,
                        connect.pass.as_deref().unwrap_or(""),
                    ) =>
                {
                    Ok((account.permissions.clone(), Some(user), None))
                }
                _ => Err(AuthorizationViolation),
            };
        }
        if let Some(token) = &self.token {
            if connect
                .auth_token
                .as_deref()
                .is_some_and(|given| compare_passwords(token, given))
            {
                return Ok((None, None, None));
            }
            if self.users.is_empty() {
                return Err(AuthorizationViolation);
            }
        }
        let user = match (&connect.user, &self.no_auth_user) {
            (Some(user), _) => user.clone(),
            (None, Some(default_user))
                if connect.auth_token.is_none() && connect.pass.is_none() =>
            {
                return match self.users.get(default_user) {
                    Some(account) => Ok((
                        account.permissions.clone(),
                        Some(default_user.clone()),
                        None,
                    )),
                    None => Err(AuthorizationViolation),
                };
            }
            _ => return Err(AuthorizationViolation),
        };
        match self.users.get(&user) {
            Some(account)
                if compare_passwords(&account.password, connect.pass.as_deref().unwrap_or("")) =>
            {
                Ok((account.permissions.clone(), Some(user), None))
            }
            _ => Err(AuthorizationViolation),
        }
    }
}

impl Authenticator {
    /// The configured user a client certificate names, looked up as nats-server does:
    /// e-mail addresses, DNS names, URIs, then the subject (Go's text form, then as a DN).
    fn mapped_user(&self, identity: &CertificateIdentity) -> Option<String> {
        let by_name = identity
            .emails
            .iter()
            .chain(&identity.dns_names)
            .chain(&identity.uris)
            .chain(std::iter::once(&identity.subject_text()))
            .find(|name| self.users.contains_key(*name))
            .cloned();
        by_name.or_else(|| {
            self.users
                .keys()
                .find(|name| identity.subject_matches(name))
                .cloned()
        })
    }
}

/// A fresh INFO nonce: 11 random bytes, base64 URL-encoded without padding (15 characters),
/// as nats-server makes them.
pub fn new_nonce() -> String {
    use base64::Engine;
    let bytes: [u8; 11] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The CONNECT `sig` (base64 URL without padding, or standard base64 as nats-server also
/// takes) is `nkey`'s ed25519 signature of `nonce`.
pub(crate) fn signature_verifies(nkey: &str, nonce: &str, signature: &str) -> bool {
    use base64::Engine;
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(signature)
        .or_else(|_| base64::engine::general_purpose::STANDARD.decode(signature));
    let (Ok(signature), Ok(key)) = (decoded, nkeys::KeyPair::from_public_key(nkey)) else {
        return false;
    };
    key.verify(nonce.as_bytes(), &signature).is_ok()
}

/// A configured password or token that is a bcrypt hash (`$2a$`, `$2b$`, `$2x$`, `$2y$` and
/// a two-digit cost), as nats-server recognises them.
pub fn is_bcrypt(password: &str) -> bool {
    let bytes = password.as_bytes();
    bytes.len() >= 7
        && bytes.starts_with(b"$2")
        && matches!(bytes[2], b'a' | b'b' | b'x' | b'y')
        && bytes[3] == b'$'
        && bytes[4].is_ascii_digit()
        && bytes[5].is_ascii_digit()
        && bytes[6] == b'$'
}

/// The configured secret against what the client sent: bcrypt hashes are verified, plain
/// secrets compared in constant time.
pub(crate) fn compare_passwords(configured: &str, given: &str) -> bool {
    if is_bcrypt(configured) {
        return bcrypt::verify(given, configured).unwrap_or(false);
    }
    let (configured, given) = (configured.as_bytes(), given.as_bytes());
    if configured.len() != given.len() {
        return false;
    }
    configured
        .iter()
        .zip(given)
        .fold(0u8, |difference, (left, right)| difference | (left ^ right))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bcrypt_hashes_are_recognised_and_verified() {
        assert!(is_bcrypt(
            "$2a$11$ooo8pBr6VIlhsGeskhz6/u6zA1SeV2.zMcHtRVmqGqVAy7CClNDw."
        ));
        assert!(!is_bcrypt("$2a$x1$abc"));
        assert!(!is_bcrypt("plain"));
        let hash = bcrypt::hash("s3cr3t", 4).unwrap();
        assert!(compare_passwords(&hash, "s3cr3t"));
        assert!(!compare_passwords(&hash, "wrong"));
        assert!(compare_passwords("plain", "plain"));
        assert!(!compare_passwords("plain", "plain2"));
    }

    #[test]
    fn nkey_signatures() {
        let user = nkeys::KeyPair::new_user();
        let nonce = new_nonce();
        assert_eq!(nonce.len(), 15);
        let signature = user.sign(nonce.as_bytes()).unwrap();
        use base64::Engine;
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&signature);
        let standard = base64::engine::general_purpose::STANDARD.encode(&signature);
        assert!(signature_verifies(&user.public_key(), &nonce, &url));
        assert!(signature_verifies(&user.public_key(), &nonce, &standard));
        assert!(!signature_verifies(&user.public_key(), "other", &url));
        let other = nkeys::KeyPair::new_user();
        assert!(!signature_verifies(&other.public_key(), &nonce, &url));
    }
}
