//! The NATS JWT v2 claim types (the layout of nats-io/jwt v2): the registered JWT fields and the
//! `nats` object of operators, accounts, users and auth callout responses. Only deserialized:
//! the one JWT the server issues, an auth callout request, is built in `security/callout.rs`. Unknown fields are ignored, absent ones take the jwt library's zero values, and limits
//! absent from an account or user JWT mean "no limit" (-1), as nats-server reads them.

use serde::Deserialize;
use std::collections::HashMap;

/// The fields every NATS JWT carries, with the kind-specific `nats` object.
#[derive(Clone, Debug, Deserialize)]
pub struct Claims<N> {
    #[serde(default)]
    pub jti: String,
    /// Issued at, seconds since the epoch.
    #[serde(default)]
    pub iat: i64,
    /// The public key that signed the JWT.
    #[serde(default)]
    pub iss: String,
    #[serde(default)]
    pub name: String,
    /// The public key the JWT describes.
    #[serde(default)]
    pub sub: String,
    /// Who the JWT is for: an auth callout's response names the server, the user it
    /// authorizes names the account to bind to (server config mode).
    #[serde(default)]
    pub aud: String,
    /// Expiry, seconds since the epoch (0 or absent: never).
    #[serde(default)]
    pub exp: i64,
    /// Not valid before, seconds since the epoch.
    #[serde(default)]
    pub nbf: i64,
    pub nats: N,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct OperatorFields {
    #[serde(default)]
    pub signing_keys: Vec<String>,
    #[serde(default)]
    pub system_account: String,
    #[serde(default, rename = "type")]
    pub kind: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct AccountFields {
    #[serde(default)]
    pub imports: Vec<Import>,
    #[serde(default)]
    pub exports: Vec<Export>,
    #[serde(default)]
    pub limits: AccountLimits,
    #[serde(default)]
    pub signing_keys: Vec<SigningKey>,
    /// Users (or `*`: everyone) issued at or before the time given are revoked.
    #[serde(default)]
    pub revocations: HashMap<String, i64>,
    #[serde(default)]
    pub default_permissions: Permissions,
    /// External authorization (an auth callout service for the account's users).
    #[serde(default)]
    pub authorization: ExternalAuthorization,
    #[serde(default, rename = "type")]
    pub kind: String,
}

/// An account's `authorization`: its users (but `auth_users`) are authorized by a callout
/// service, which may place them in `allowed_accounts` (`*`: any).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ExternalAuthorization {
    pub auth_users: Vec<String>,
    pub allowed_accounts: Vec<String>,
    pub xkey: String,
}

impl ExternalAuthorization {
    /// Enabled when it names the service's users (nats-jwt's `IsEnabled`).
    pub fn enabled(&self) -> bool {
        !self.auth_users.is_empty()
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct Import {
    #[serde(default)]
    pub name: String,
    /// The subject in the exporting account.
    #[serde(default)]
    pub subject: String,
    /// The exporting account's public key.
    #[serde(default)]
    pub account: String,
    /// v1's local subject (services) or prefix (streams).
    #[serde(default)]
    pub to: String,
    /// The subject in the importing account.
    #[serde(default)]
    pub local_subject: String,
    /// `stream` or `service`.
    #[serde(default, rename = "type")]
    pub kind: String,
    /// An activation token for a private export.
    #[serde(default)]
    pub token: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct Export {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub subject: String,
    /// `stream` or `service`.
    #[serde(default, rename = "type")]
    pub kind: String,
    /// `Singleton` (default), `Stream` or `Chunked`.
    #[serde(default)]
    pub response_type: String,
    /// Nanoseconds (0: nats-server's default).
    #[serde(default)]
    pub response_threshold: i64,
    /// Private: importers need an activation token.
    #[serde(default)]
    pub token_req: bool,
    /// Activation tokens (by importing account, or `*`: all) issued at or before the time
    /// given no longer admit an import.
    #[serde(default)]
    pub revocations: HashMap<String, i64>,
}

/// The `nats` object of an activation token: an exporting account lets the account named in
/// the token's `sub` import `subject` from one of its private exports.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ActivationFields {
    pub subject: String,
    /// `stream` or `service`.
    pub kind: String,
    /// The exporting account, when a signing key of it signed the token.
    pub issuer_account: String,
}

/// An account's limits; -1 (or absent) is "no limit". JetStream is enabled in the account when
/// one of its storage limits is not 0.
#[derive(Clone, Debug, Deserialize)]
#[serde(default)]
pub struct AccountLimits {
    pub subs: i64,
    pub data: i64,
    pub payload: i64,
    pub imports: i64,
    pub exports: i64,
    pub wildcards: bool,
    pub conn: i64,
    pub leaf: i64,
    pub mem_storage: i64,
    pub disk_storage: i64,
    pub streams: i64,
    pub consumer: i64,
    pub max_ack_pending: i64,
    pub mem_max_stream_bytes: i64,
    pub disk_max_stream_bytes: i64,
    pub max_bytes_required: bool,
    /// JetStream limits per replica tier (`R1`, `R3`), used instead of the flat ones.
    pub tiered_limits: HashMap<String, JetStreamTier>,
}

/// One tier of an account JWT's `tiered_limits`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct JetStreamTier {
    pub mem_storage: i64,
    pub disk_storage: i64,
    pub streams: i64,
    pub consumer: i64,
    pub max_ack_pending: i64,
    pub mem_max_stream_bytes: i64,
    pub disk_max_stream_bytes: i64,
    pub max_bytes_required: bool,
}

impl Default for AccountLimits {
    fn default() -> Self {
        AccountLimits {
            subs: -1,
            data: -1,
            payload: -1,
            imports: -1,
            exports: -1,
            wildcards: true,
            conn: -1,
            leaf: -1,
            mem_storage: 0,
            disk_storage: 0,
            streams: 0,
            consumer: 0,
            max_ack_pending: 0,
            mem_max_stream_bytes: 0,
            disk_max_stream_bytes: 0,
            max_bytes_required: false,
            tiered_limits: HashMap::new(),
        }
    }
}

impl AccountLimits {
    pub fn jetstream_enabled(&self) -> bool {
        self.jetstream_limits().is_some()
    }

    /// The account's JetStream limits as nats-server reads the JWT: the flat limits when a
    /// storage limit is set, else (tiered limits, each stream held to its replica tier's by
    /// JetStream) the `R1` tier, or the first tier giving storage; `None` when nothing
    /// enables JetStream.
    pub fn jetstream_limits(&self) -> Option<nats_jetstream::AccountLimits> {
        let flat = JetStreamTier {
            mem_storage: self.mem_storage,
            disk_storage: self.disk_storage,
            streams: self.streams,
            consumer: self.consumer,
            max_ack_pending: self.max_ack_pending,
            mem_max_stream_bytes: self.mem_max_stream_bytes,
            disk_max_stream_bytes: self.disk_max_stream_bytes,
            max_bytes_required: self.max_bytes_required,
        };
        let tier = if flat.enables() {
            flat
        } else {
            self.tiered_limits
                .get("R1")
                .filter(|tier| tier.enables())
                .or_else(|| self.tiered_limits.values().find(|tier| tier.enables()))?
                .clone()
        };
        Some(tier.account_limits())
    }

    /// The JWT's `tiered_limits` as `$JS.API.INFO` reports them, when the account's limits
    /// are tiered (no flat storage limit); empty otherwise.
    pub fn jetstream_tiers(&self) -> nats_jetstream::TieredLimits {
        if self.mem_storage != 0 || self.disk_storage != 0 || !self.jetstream_enabled() {
            return Default::default();
        }
        self.tiered_limits
            .iter()
            .map(|(name, tier)| (name.clone(), tier.account_limits()))
            .collect()
    }
}

impl JetStreamTier {
    fn enables(&self) -> bool {
        self.mem_storage != 0 || self.disk_storage != 0
    }

    /// As nats-server converts a JWT's limits: a per-stream byte limit or `max_ack_pending`
    /// of 0 (absent) means unlimited, -1.
    fn account_limits(&self) -> nats_jetstream::AccountLimits {
        let unlimited = |value: i64| if value > 0 { value } else { -1 };
        nats_jetstream::AccountLimits {
            max_memory: self.mem_storage,
            max_storage: self.disk_storage,
            max_streams: self.streams,
            max_consumers: self.consumer,
            max_ack_pending: unlimited(self.max_ack_pending),
            memory_max_stream_bytes: unlimited(self.mem_max_stream_bytes),
            storage_max_stream_bytes: unlimited(self.disk_max_stream_bytes),
            max_bytes_required: self.max_bytes_required,
        }
    }
}

/// An account signing key: a bare public key, or a scope whose template replaces the
/// permissions and limits of the users it signs.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum SigningKey {
    Plain(String),
    Scoped(Box<ScopedKey>),
}

#[derive(Clone, Debug, Deserialize)]
pub struct ScopedKey {
    #[serde(default)]
    pub kind: String,
    pub key: String,
    #[serde(default)]
    pub role: String,
    #[serde(default)]
    pub template: UserLimits,
}

impl SigningKey {
    pub fn key(&self) -> &str {
        match self {
            SigningKey::Plain(key) => key,
            SigningKey::Scoped(scoped) => &scoped.key,
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct SubjectPermission {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct ResponsePermission {
    #[serde(default, rename = "max")]
    pub max_messages: i64,
    /// Nanoseconds.
    #[serde(default)]
    pub ttl: i64,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct Permissions {
    #[serde(default, rename = "pub")]
    pub publish: SubjectPermission,
    #[serde(default, rename = "sub")]
    pub subscribe: SubjectPermission,
    #[serde(default, rename = "resp")]
    pub response: Option<ResponsePermission>,
}

/// A `times` entry: a daily window, `HH:MM:SS` to `HH:MM:SS`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct TimeRange {
    #[serde(default)]
    pub start: String,
    #[serde(default)]
    pub end: String,
}

/// `src`: a JSON list of CIDRs, or (older JWTs) one comma-separated string.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum SourceList {
    List(Vec<String>),
    Text(String),
}

impl Default for SourceList {
    fn default() -> Self {
        SourceList::List(Vec::new())
    }
}

impl SourceList {
    pub fn entries(&self) -> Vec<String> {
        let texts: Vec<&str> = match self {
            SourceList::List(list) => list.iter().map(String::as_str).collect(),
            SourceList::Text(text) => text.split(',').collect(),
        };
        texts
            .into_iter()
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_string)
            .collect()
    }
}

/// The permissions and limits of a user (also the template of a scoped signing key).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct UserLimits {
    #[serde(flatten)]
    pub permissions: Permissions,
    pub src: SourceList,
    pub times: Vec<TimeRange>,
    pub times_location: String,
    pub subs: i64,
    pub data: i64,
    pub payload: i64,
    pub bearer_token: bool,
    pub allowed_connection_types: Vec<String>,
}

impl Default for UserLimits {
    fn default() -> Self {
        UserLimits {
            permissions: Permissions::default(),
            src: SourceList::default(),
            times: Vec::new(),
            times_location: String::new(),
            subs: -1,
            data: -1,
            payload: -1,
            bearer_token: false,
            allowed_connection_types: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct UserFields {
    #[serde(flatten)]
    pub limits: UserLimits,
    /// The account a signing key signed this user for.
    #[serde(default)]
    pub issuer_account: String,
    #[serde(default, rename = "type")]
    pub kind: String,
}

/// An auth callout service's answer: the user JWT it issued, or why it refused.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct AuthorizationResponseFields {
    pub jwt: String,
    pub error: String,
    pub issuer_account: String,
    #[serde(rename = "type")]
    pub kind: String,
}

pub type OperatorClaims = Claims<OperatorFields>;
pub type AccountClaims = Claims<AccountFields>;
pub type UserClaims = Claims<UserFields>;
pub type AuthorizationResponseClaims = Claims<AuthorizationResponseFields>;
pub type ActivationClaims = Claims<ActivationFields>;
