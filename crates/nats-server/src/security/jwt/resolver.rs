//! The trusted operators and the account resolver: account JWTs by public key, each verified
//! to be signed by a trusted operator (or one of its signing keys). The memory resolver holds
//! what `resolver_preload` gave it and what `$SYS.REQ.*.CLAIMS.UPDATE` pushes later; the full
//! resolver keeps them as files too (`directory.rs`: `<dir>/<account key>.jwt`, read at start).
//! An update moves [`Resolver::revision`] so connections check their users again.
//!
//! Also maps an account JWT onto the server's account options (exports, imports, JetStream).

use super::claims::{AccountClaims, AccountFields, OperatorClaims, OperatorFields};
use super::{check_times, decode, is_account_key, is_operator_key, now, JwtError};
use crate::config::{AccountOptions, ExportOptions, ImportOptions, ResponseType};
use parking_lot::RwLock;
use std::collections::HashSet;
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

/// An account JWT held by the resolver, found by its account's key (the claims' subject, so
/// the key is not kept a second time).
struct Held(Arc<VerifiedAccount>);

impl std::borrow::Borrow<str> for Held {
    fn borrow(&self) -> &str {
        self.0.key()
    }
}

impl PartialEq for Held {
    fn eq(&self, other: &Held) -> bool {
        self.0.key() == other.0.key()
    }
}

impl Eq for Held {}

impl std::hash::Hash for Held {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.key().hash(state)
    }
}

/// What a claims update did.
#[derive(Debug, PartialEq, Eq)]
pub enum UpdateOutcome {
    Updated,
    /// A newer JWT of the account is already held.
    Older,
    /// The full resolver stored a JWT that does not verify (an untrusted issuer, expired), as
    /// nats-server stores it; nothing uses it.
    StoredUnverified,
}

/// Trusted operators and the account JWTs the server knows.
pub struct Resolver {
    /// Each trusted operator's key and signing keys.
    trusted: HashSet<String>,
    accounts: RwLock<HashSet<Held>>,
    /// The full resolver's directory (`None`: the memory resolver).
    directory: Option<super::directory::Directory>,
    /// Moves on every accepted update.
    pub revision: tokio::sync::watch::Sender<u64>,
    /// Accounts being fetched from the cluster aside from any client (for a route's `RS+` or
    /// `RMSG`): one fetch per account at a time.
    fetching: parking_lot::Mutex<HashSet<String>>,
    /// Held by whoever stores a JWT and then makes the server follow it
    /// ([`Resolver::updating`]).
    updating: parking_lot::Mutex<()>,
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
            accounts: RwLock::new(HashSet::new()),
            directory: None,
            revision: tokio::sync::watch::Sender::new(0),
            fetching: Default::default(),
            updating: Default::default(),
        }
    }

    /// Serialises "store a JWT, then apply what the resolver holds" across the tasks that take
    /// updates (pushed claims, the full resolver's pack exchange, a fetch): each apply reads the
    /// newest stored JWT, and without this one task could read an account's older JWT, another
    /// store and apply the newer one, and the first then apply the older one last, leaving the
    /// server (its JetStream there disabled, say) on a JWT the resolver no longer holds, which
    /// no later pack exchange repairs (the stores hash the same).
    pub fn updating(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.updating.lock()
    }

    /// Verify an account JWT: decodes and signature, an account subject, a trusted issuer,
    /// not expired, its imports' activation tokens made for it.
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
        for import in &claims.nats.imports {
            super::activation::validate(import, &claims.sub)?;
        }
        Ok(VerifiedAccount {
            jwt: jwt.trim().to_string(),
            claims,
        })
    }

    /// Take `jwt` for its account (verified first); `key` must be its subject when given.
    pub fn store(&self, key: Option<&str>, jwt: &str) -> Result<UpdateOutcome, String> {
        let account = match (self.verify(jwt), &self.directory, key) {
            (Ok(account), _, _) => account,
            (Err(_), Some(directory), Some(key)) => {
                let accounts = self.accounts.read();
                let added = !accounts.contains(key);
                directory.save(key, jwt.trim(), added, accounts.len())?;
                return Ok(UpdateOutcome::StoredUnverified);
            }
            (Err(error), _, _) => return Err(error),
        };
        if key.is_some_and(|key| key != account.key()) {
            return Err("subject does not match jwt content".into());
        }
        let mut accounts = self.accounts.write();
        let existing = accounts.get(account.key());
        if let Some(Held(existing)) = existing {
            if existing.claims.iat > account.claims.iat {
                return Ok(UpdateOutcome::Older);
            }
        }
        if let Some(directory) = &self.directory {
            directory.save(
                account.key(),
                &account.jwt,
                existing.is_none(),
                accounts.len(),
            )?;
        }
        accounts.replace(Held(Arc::new(account)));
        drop(accounts);
        self.revision.send_modify(|revision| *revision += 1);
        Ok(UpdateOutcome::Updated)
    }

    /// A trusted operator's key or one of its signing keys.
    pub fn is_operator_key(&self, key: &str) -> bool {
        self.trusted.contains(key)
    }

    /// Whether this is the cache resolver (accounts fetched from peers on first use).
    pub fn is_cache(&self) -> bool {
        self.directory
            .as_ref()
            .is_some_and(|directory| directory.cache)
    }

    /// Mark `key` as being fetched aside; false when a fetch of it is already under way.
    pub(crate) fn begin_fetch(&self, key: &str) -> bool {
        self.fetching.lock().insert(key.to_string())
    }

    /// The fetch [`Resolver::begin_fetch`] marked is over.
    pub(crate) fn end_fetch(&self, key: &str) {
        self.fetching.lock().remove(key);
    }

    /// The full (or cache) resolver's directory, if this is one.
    pub fn directory(&self) -> Option<&super::directory::Directory> {
        self.directory.as_ref()
    }

    /// Delete accounts from the full resolver (`$SYS.REQ.CLAIMS.DELETE`): their files renamed
    /// `<key>.jwt.deleted` (removed with `hard_delete`), their JWTs forgotten, and connections
    /// watching the revision find their account gone. The error texts of those that failed.
    pub fn delete(&self, keys: &[String]) -> (usize, Vec<String>) {
        let Some(directory) = &self.directory else {
            return (0, vec!["store is not set up to for delete".into()]);
        };
        let (mut deleted, mut errors) = (0, Vec::new());
        for key in keys {
            match directory.delete(key) {
                Ok(()) => {
                    self.accounts.write().remove(key.as_str());
                    deleted += 1;
                }
                Err(error) => errors.push(error),
            }
        }
        if deleted > 0 {
            self.revision.send_modify(|revision| *revision += 1);
        }
        (deleted, errors)
    }

    pub fn account(&self, key: &str) -> Option<Arc<VerifiedAccount>> {
        self.accounts.read().get(key).map(|held| held.0.clone())
    }

    /// Every account held, by key.
    pub fn accounts(&self) -> Vec<Arc<VerifiedAccount>> {
        let mut accounts: Vec<_> = self
            .accounts
            .read()
            .iter()
            .map(|held| held.0.clone())
            .collect();
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
/// exports and imports (an import of a private export only with a valid activation token),
/// JetStream with the claim's limits when a storage limit is set.
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
        .filter(|import| import_allowed(import, account.key(), resolver))
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

/// An import is built when its exporter is known and exports the subject with the same kind,
/// publicly or, for a private export, to the activation token the import carries.
fn import_allowed(import: &super::claims::Import, importer: &str, resolver: &Resolver) -> bool {
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
            && nats_subject::is_subset_match(&import.subject, &export.subject)
            && (!export.token_req
                || super::activation::admits(import, importer, &exporter, export, now()))
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
    let mut resolver = Resolver::new(&operators);
    resolver
        .trusted
        .extend(operator.trusted_keys.iter().cloned());
    if let Some(crate::config::operator::ResolverOptions::Directory {
        full,
        dir,
        allow_delete,
        hard_delete,
        limit,
        ttl,
        ..
    }) = &operator.resolver
    {
        let mut directory =
            super::directory::Directory::new(dir, *allow_delete, *hard_delete, *limit);
        if !full {
            directory = directory.into_cache(*ttl);
        }
        for (key, jwt) in directory.load() {
            match resolver.verify(&jwt) {
                Ok(account) if account.key() == key => {
                    resolver.accounts.write().replace(Held(Arc::new(account)));
                }
                Ok(_) => tracing::warn!("resolver dir: {key}.jwt holds another account's JWT"),
                Err(error) => tracing::warn!("resolver dir: account {key}: {error}"),
            }
        }
        resolver.directory = Some(directory);
    }
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
