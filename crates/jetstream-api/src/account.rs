//! `$JS.API.INFO`: the account's JetStream usage and limits ([`AccountInfo`]), as nats-server's
//! `JetStreamAccountStats` (the tier fields flattened into the top level, then `domain`, `api`,
//! `tiers`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::api_error::ApiError;

pub const ACCOUNT_INFO_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.account_info_response";

/// Limits of an account (or tier); `-1` is unlimited.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AccountLimits {
    pub max_memory: i64,
    #[serde(rename = "max_storage")]
    pub max_storage: i64,
    pub max_streams: i64,
    pub max_consumers: i64,
    pub max_ack_pending: i64,
    pub memory_max_stream_bytes: i64,
    #[serde(rename = "storage_max_stream_bytes")]
    pub storage_max_stream_bytes: i64,
    pub max_bytes_required: bool,
}

impl Default for AccountLimits {
    /// Unlimited, what nats-server reports for the global account without explicit limits.
    fn default() -> Self {
        AccountLimits {
            max_memory: -1,
            max_storage: -1,
            max_streams: -1,
            max_consumers: -1,
            max_ack_pending: -1,
            memory_max_stream_bytes: -1,
            storage_max_stream_bytes: -1,
            max_bytes_required: false,
        }
    }
}

/// Usage and limits of one tier (and the flattened totals of [`AccountInfo`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AccountTier {
    /// Bytes in memory streams.
    pub memory: u64,
    /// Bytes in file streams.
    pub storage: u64,
    pub reserved_memory: u64,
    pub reserved_storage: u64,
    pub streams: u64,
    pub consumers: u64,
    pub limits: AccountLimits,
}

/// API usage counters. `level` is the API level the server implements (5 for v2.15).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApiStats {
    pub level: u32,
    pub total: u64,
    pub errors: u64,
    #[serde(skip_serializing_if = "crate::policy::is_default")]
    pub inflight: u64,
}

/// The `$JS.API.INFO` payload.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountInfo {
    #[serde(flatten)]
    pub totals: AccountTier,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    pub api: ApiStats,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tiers: BTreeMap<String, AccountTier>,
}

/// `$JS.API.INFO` reply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountInfoResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(flatten)]
    pub info: Option<AccountInfo>,
}

impl AccountInfoResponse {
    pub fn ok(info: AccountInfo) -> Self {
        AccountInfoResponse {
            response_type: ACCOUNT_INFO_RESPONSE_TYPE.to_string(),
            error: None,
            info: Some(info),
        }
    }

    pub fn error(error: ApiError) -> Self {
        AccountInfoResponse {
            response_type: ACCOUNT_INFO_RESPONSE_TYPE.to_string(),
            error: Some(error),
            info: None,
        }
    }
}
