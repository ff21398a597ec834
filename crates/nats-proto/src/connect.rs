//! The CONNECT options a client sends, with nats-server's defaults for absent fields.

use serde::{Deserialize, Serialize};

fn default_true() -> bool {
    true
}

/// The JSON argument of CONNECT.
///
/// Absent fields take nats-server's defaults, which are those of its `ClientOpts` before the JSON
/// is applied: `verbose`, `pedantic` and `echo` default to **true** (observed on nats-server 2.15:
/// `CONNECT {}` followed by a PUB gets `+OK`). Official clients always send `verbose:false`.
/// Unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectOptions {
    #[serde(default = "default_true")]
    pub verbose: bool,
    #[serde(default = "default_true")]
    pub pedantic: bool,
    #[serde(default)]
    pub tls_required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default)]
    pub protocol: i64,
    #[serde(default = "default_true")]
    pub echo: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nkey: Option<String>,
    #[serde(default)]
    pub headers: bool,
    #[serde(default)]
    pub no_responders: bool,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            verbose: true,
            pedantic: true,
            tls_required: false,
            auth_token: None,
            user: None,
            pass: None,
            name: None,
            lang: None,
            version: None,
            protocol: 0,
            echo: true,
            sig: None,
            jwt: None,
            nkey: None,
            headers: false,
            no_responders: false,
        }
    }
}

impl ConnectOptions {
    /// Parses the CONNECT JSON argument.
    pub fn from_json(json: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(json)
    }
}
