//! The trusted operators and the account resolver: account JWTs by public key, each verified
//! to be signed by a trusted operator (or one of its signing keys). The memory resolver holds
//! what `resolver_preload` gave it and what `$SYS.REQ.*.CLAIMS.UPDATE` pushes later; an
//! update moves [`Resolver::revision`] so connections check their users again.
//!
//! Also maps an account JWT onto the server's account options (exports, imports, JetStream).

use super::claims::{AccountClaims, AccountFields, OperatorClaims, OperatorFields};
use super::{check_times, decode, is_account_key, is_operator_key, now, JwtError};
use crate::config::{AccountOptions, ExportOptions, ImportOptions, ResponseType};
use parking_lot::RwLock;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// One account JWT that passed verification.
#[derive(Debug)]
pub struct VerifiedAccount {
    pub jwt: String,
    pub claims: AccountClaims,
}

impl VerifiedAccount {
    pub fn key(&self) -> &str {
        &self.claims.sub
    }

    pub fn fields(&self) -> &AccountFields {
        &self.claims.nats
    }

    /// A user key (`issuer` of a user JWT) the account signs with: itself or a signing key;
    /// `Some(template)` for a scoped key.
    pub fn signer(&self, issuer: &str) -> Option<Option<&super::claims::UserLimits>> {
        if issuer == self.claims.sub {
            return Some(None);
        }
        self.fields()
            .signing_keys
            .iter()
            .find(|key| key.key() == issuer)
            .map(|key| match key {
                super::claims::SigningKey::Plain(_) => None,
                super::claims::SigningKey::Scoped(scoped) => Some(&scoped.template),
            })
    }

    /// nats-server's revocation check: the user (or `*`: everyone) revoked at or after the
    /// time the user JWT was issued.
    pub fn revoked(&self, user: &str, issued_at: i64) -> bool {
        let revocations = &self.fields().revocations;
        revocations
            .get("*")
            .is_some_and(|&revoked| revoked >= issued_at)
            || revocations
                .get(user)
                .is_some_and(|&revoked| revoked >= issued_at)
    }
}

/// What a claims update did.
#[derive(Debug, PartialEq, Eq)]
pub enum UpdateOutcome {
    Updated,
    /// A newer JWT of the account is already held.
    Older,
}

/// Trusted operators and the account JWTs the server knows.
pub struct Resolver {
    /// Each trusted operator's key and signing keys.
    trusted: HashSet<String>,
    accounts: RwLock<HashMap<String, Arc<VerifiedAccount>>>,
    /// Moves on every accepted update.
    pub revision: tokio::sync::watch::Sender<u64>,
}

impl Resolver {
    pub fn new(operators: &[OperatorClaims]) -> Resolver {
        let mut trusted = HashSet::new();
        for operator in operators {
            trusted.insert(operator.sub.clone());
            trusted.extend(operator.nats.signing_keys.iter().cloned());
        }
        Resolver {
            trusted,
            accounts: RwLock::new(HashMap::new()),
            revision: tokio::sync::watch::Sender::new(0),
        }
    }

    /// Verify an account JWT: decodes and signature, an account subject, a trusted issuer,
    /// not expired.
    pub fn verify(&self, jwt: &str) -> Result<VerifiedAccount, String> {
        let claims: AccountClaims = decode(jwt).map_err(|error| error.to_string())?;
        if !claims.nats.kind.is_empty() && claims.nats.kind != "account" {
            return Err(JwtError::Kind("account").to_string());
        }
        if !is_account_key(&claims.sub) {
            return Err("expected subject to be account public key".into());
        }
        if !self.trusted.contains(&claims.iss) {
            return Err("account not trusted".into());
        }
        check_times(&claims, now()).map_err(|error| error.to_string())?;
        Ok(VerifiedAccount {
            jwt: jwt.trim().to_string(),
            claims,
        })
    }

    /// Take `jwt` for its account (verified first); `key` must be its subject when given.
    pub fn store(&self, key: Option<&str>, jwt: &str) -> Result<UpdateOutcome, String> {
        let account = self.verify(jwt)?;
        if key.is_some_and(|key| key != account.key()) {
            return Err("subject does not match jwt content".into());
        }
        let mut accounts = self.accounts.write();
        if let Some(existing) = accounts.get(account.key()) {
            if existing.claims.iat > account.claims.iat {
                return Ok(UpdateOutcome::Older);
            }
        }
        accounts.insert(account.key().to_string(), Arc::new(account));
        drop(accounts);
        self.revision.send_modify(|revision| *revision += 1);
        Ok(UpdateOutcome::Updated)
    }

    pub fn account(&self, key: &str) -> Option<Arc<VerifiedAccount>> {
        self.accounts.read().get(key).cloned()
    }

    /// Every account held, by key.
    pub fn accounts(&self) -> Vec<Arc<VerifiedAccount>> {
        let mut accounts: Vec<_> = self.accounts.read().values().cloned().collect();
        accounts.sort_by(|left, right| left.key().cmp(right.key()));
        accounts
    }
}

/// Decode an operator JWT given in the config (start-up): nats-server's errors.
pub fn operator_claims(jwt: &str) -> Result<OperatorClaims, String> {
    let claims: super::claims::Claims<OperatorFields> =
        decode(jwt).map_err(|error| error.to_string())?;
    if !claims.nats.kind.is_empty() && claims.nats.kind != "operator" {
        return Err(JwtError::Kind("operator").to_string());
    }
    if !is_operator_key(&claims.sub) {
        return Err("expected subject to be operator public key".into());
    }
    // Self-signed, or signed by one of its own signing keys.
    if claims.iss != claims.sub && !claims.nats.signing_keys.contains(&claims.iss) {
        return Err("operator JWT is not self-signed or signed by its signing keys".into());
    }
    Ok(claims)
}

/// The account options a verified account JWT stands for: named by its public key, its
/// exports and imports (imports of private exports, which need activation tokens, are left
/// out), JetStream with the claim's limits when a storage limit is set.
pub fn account_options(account: &VerifiedAccount, resolver: &Resolver) -> AccountOptions {
    let fields = account.fields();
    let exports = fields
        .exports
        .iter()
        .filter(|export| !export.subject.is_empty())
        .map(|export| ExportOptions {
            subject: export.subject.clone(),
            service: (export.kind == "service").then(|| {
                match export.response_type.to_ascii_lowercase().as_str() {
                    "stream" => ResponseType::Stream,
                    "chunked" => ResponseType::Chunked,
                    _ => ResponseType::Singleton,
                }
            }),
            threshold: if export.response_threshold > 0 {
                Duration::from_nanos(export.response_threshold as u64)
            } else {
                crate::config::DEFAULT_RESPONSE_THRESHOLD
            },
            accounts: export.token_req.then(Vec::new),
        })
        .collect();
    let imports = fields
        .imports
        .iter()
        .filter(|import| import_allowed(import, resolver))
        .map(|import| {
            let service = import.kind == "service";
            let to = if !import.local_subject.is_empty() {
                import.local_subject.clone()
            } else if import.to.is_empty() {
                import.subject.clone()
            } else if service {
                import.to.clone()
            } else {
                format!("{}.{}", import.to, import.subject)
            };
            ImportOptions {
                service,
                account: import.account.clone(),
                subject: import.subject.clone(),
                to,
            }
        })
        .collect();
    AccountOptions {
        name: account.key().to_string(),
        jetstream: fields.limits.jetstream_enabled(),
        jetstream_limits: fields.limits.jetstream_limits().unwrap_or_default(),
        jetstream_tiers: fields.limits.jetstream_tiers(),
        exports,
        imports,
        mappings: Vec::new(),
    }
}

/// An import is built when its exporter is known and exports the subject publicly, with the
/// same kind.
fn import_allowed(import: &super::claims::Import, resolver: &Resolver) -> bool {
    let Some(exporter) = resolver.account(&import.account) else {
        tracing::debug!(
            "import of {:?} from unknown account {}",
            import.subject,
            import.account
        );
        return false;
    };
    exporter.fields().exports.iter().any(|export| {
        export.kind == import.kind
            && !export.token_req
            && nats_subject::is_subset_match(&import.subject, &export.subject)
    })
}

/// Operator mode's resolver built from the options: the operators trusted, the preloaded
/// account JWTs stored (one that does not verify is logged and left out, as nats-server leaves
/// an untrusted account unusable). `None` outside operator mode.
pub fn from_options(options: &crate::config::Options) -> Option<Resolver> {
    let operator = &options.operator;
    if !operator.enabled() {
        return None;
    }
    let operators: Vec<_> = operator
        .jwts
        .iter()
        .filter_map(|jwt| operator_claims(jwt).ok())
        .collect();
    let resolver = Resolver::new(&operators);
    for (key, jwt) in &operator.preload {
        if let Err(error) = resolver.store(Some(key), jwt) {
            tracing::warn!("resolver_preload: account {key}: {error}");
        }
    }
    Some(resolver)
}

impl Resolver {
    /// `options` with the accounts of the JWTs held (named by public key) and the system
    /// account the operator names, for building the server's accounts.
    pub fn with_accounts(&self, options: &crate::config::Options) -> crate::config::Options {
        let mut options = options.clone();
        if options.system_account.is_none() {
            options.system_account = options.operator.system_account();
        }
        let accounts = self.accounts();
        options.accounts.extend(
            accounts
                .iter()
                .map(|account| account_options(account, self)),
        );
        options
    }
}
