//! Operator mode's account-claims updates: `$SYS.REQ.ACCOUNT.<key>.CLAIMS.UPDATE` (and the
//! older `$SYS.ACCOUNT.<key>.CLAIMS.UPDATE`) with an account JWT as the body, answered as
//! nats-server's memory resolver answers them: the JWT of an account the server has replaces
//! the one it held (connections whose user the new JWT revokes are closed by their readers,
//! which watch the resolver), an account it does not have is skipped.
//!
//! Started by `system::start` in operator mode; the checks are the resolver's.

use crate::security::jwt::{self, claims::AccountFields, resolver::UpdateOutcome};
use crate::server::Server;
use nats_jetstream::Message;
use serde_json::{json, Value};
use std::sync::Arc;

const SUBJECTS: [&str; 2] = [
    "$SYS.REQ.ACCOUNT.*.CLAIMS.UPDATE",
    "$SYS.ACCOUNT.*.CLAIMS.UPDATE",
];

/// Subscribe the update subjects in the system account (operator mode only).
pub(super) fn start(server: &Arc<Server>) {
    if server.jwt.is_none() {
        return;
    }
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Message>(super::REQUEST_QUEUE);
    for subject in SUBJECTS {
        let sender = sender.clone();
        server.accounts.system().router.subscribe_internal(
            subject,
            None,
            Arc::new(move |message: Message| {
                let _ = sender.try_send(message);
            }),
        );
    }
    let weak = Arc::downgrade(server);
    tokio::spawn(async move {
        while let Some(message) = receiver.recv().await {
            let Some(server) = weak.upgrade() else {
                return;
            };
            update(&server, &message);
        }
    });
}

fn update(server: &Server, message: &Message) {
    let Some(resolver) = &server.jwt else {
        return;
    };
    let subject = String::from_utf8_lossy(&message.subject);
    let Some(key) = subject.split('.').nth(3).map(str::to_string) else {
        return;
    };
    let body = String::from_utf8_lossy(&message.payload);
    let decoded = jwt::decode::<AccountFields>(&body);
    let response = if body.trim().is_empty() {
        failure(&key, "jwt update error", "request body is empty")
    } else if let Err(error) = &decoded {
        failure(&key, "jwt update resulted in error", &error.to_string())
    } else if decoded.as_ref().is_ok_and(|claims| claims.sub != key) {
        failure(
            &key,
            "jwt update resulted in error",
            "subject does not match jwt content",
        )
    } else if server.accounts.lookup(&key).is_none() {
        success(&key, "jwt update skipped")
    } else {
        match resolver.store(Some(&key), &body) {
            Ok(UpdateOutcome::Updated) | Ok(UpdateOutcome::Older) => success(&key, "jwt updated"),
            Err(error) => failure(&key, "jwt update resulted in error", &error),
        }
    };
    if let Some(reply) = &message.reply {
        let mut response = response;
        response["server"] = super::server_object(server);
        super::publish(server, &String::from_utf8_lossy(reply), response);
    }
}

fn success(account: &str, message: &str) -> Value {
    json!({"data": {"code": 200, "account": account, "message": message}})
}

fn failure(account: &str, message: &str, error: &str) -> Value {
    json!({"error": {"code": 500, "account": account, "description": format!("{message} - {error}")}})
}
