//! The `$SYS.REQ.USER.INFO` responder: nats-server answers it in every account with the
//! requesting connection's user, account and permissions (natscli's `nats account info`
//! asks for it). Called by the connection reader once the request passed the publish check;
//! knows nothing about sockets.

use crate::config::{Permissions, SubjectRules};
use crate::server::Server;
use serde::Serialize;

/// The subject nats-server serves in every account.
pub const SUBJECT: &[u8] = b"$SYS.REQ.USER.INFO";

#[derive(Serialize)]
struct Reply<'a> {
    /// The `server` object of every `$SYS` reply (`crate::system::server_object`).
    server: serde_json::Value,
    data: UserInfo<'a>,
}

#[derive(Serialize)]
struct UserInfo<'a> {
    /// The user name, the nkey, or empty without authentication.
    user: &'a str,
    account: &'a str,
    account_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    permissions: Option<PermissionsJson<'a>>,
}

#[derive(Serialize)]
struct PermissionsJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    publish: Option<RulesJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subscribe: Option<RulesJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    responses: Option<ResponsesJson>,
}

#[derive(Serialize)]
struct RulesJson<'a> {
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    allow: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    deny: &'a [String],
}

/// `allow_responses`: `ttl` in nanoseconds, as Go's duration.
#[derive(Serialize)]
struct ResponsesJson {
    max: u64,
    ttl: u128,
}

fn rules(rules: &Option<SubjectRules>) -> Option<RulesJson<'_>> {
    rules.as_ref().map(|rules| RulesJson {
        allow: &rules.allow,
        deny: &rules.deny,
    })
}

fn permissions(permissions: &Permissions) -> Option<PermissionsJson<'_>> {
    let json = PermissionsJson {
        publish: rules(&permissions.publish),
        subscribe: rules(&permissions.subscribe),
        responses: permissions.responses.map(|responses| ResponsesJson {
            max: responses.max,
            ttl: responses.expires.as_nanos(),
        }),
    };
    let empty = json.publish.is_none() && json.subscribe.is_none() && json.responses.is_none();
    (!empty).then_some(json)
}

/// The reply for a connection authenticated as `user` (`None`: no authentication or a token)
/// with `user_permissions`.
pub fn reply(
    server: &Server,
    user: Option<&str>,
    user_permissions: Option<&Permissions>,
) -> Vec<u8> {
    let authenticator = server.authenticator();
    let account = authenticator.account_of(user);
    let reply = Reply {
        server: crate::system::server_object(server),
        data: UserInfo {
            user: user.unwrap_or_default(),
            account,
            account_name: account,
            permissions: user_permissions.and_then(permissions),
        },
    };
    serde_json::to_vec(&reply).unwrap_or_default()
}
