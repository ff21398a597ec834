//! The INFO a server sends, with nats-server's field order and omitted-when-empty rules.

use serde::{Deserialize, Serialize};

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

fn is_zero_i32(value: &i32) -> bool {
    *value == 0
}

/// The INFO JSON. Field order and `skip_serializing_if` mirror nats-server 2.15's `Info` struct,
/// observed on the wire as:
/// `{"server_id","server_name","version","proto","git_commit","go","host","port","headers",
/// "auth_required","max_payload","jetstream","client_id","client_ip","api_lvl","xkey"}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ServerInfo {
    pub server_id: String,
    pub server_name: String,
    pub version: String,
    pub proto: i32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub git_commit: String,
    pub go: String,
    pub host: String,
    pub port: u16,
    pub headers: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub auth_required: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub tls_required: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub tls_verify: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub tls_available: bool,
    pub max_payload: i32,
    #[serde(default, skip_serializing_if = "is_false")]
    pub jetstream: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ip: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub client_id: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub client_ip: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub nonce: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_urls: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ws_connect_urls: Vec<String>,
    /// Lame duck mode.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ldm: bool,
    /// Set on the INFO answering a client's first PING after CONNECT.
    #[serde(default, skip_serializing_if = "is_false")]
    pub connect_info: bool,
    /// With `connect_info`: the account the client is bound to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub remote_account: String,
    /// With `connect_info`: that account is the system account.
    #[serde(default, skip_serializing_if = "is_false")]
    pub acc_is_sys: bool,
    /// JetStream API level; nats-server 2.15 sends 5 even without JetStream.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub api_lvl: i32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub xkey: String,
}
