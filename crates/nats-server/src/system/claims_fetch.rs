//! The cache resolver's fetch: a CONNECT whose user JWT names an account this server does not
//! hold asks the cluster `$SYS.REQ.ACCOUNT.<key>.CLAIMS.LOOKUP` (full resolvers answer with the
//! JWT, or an empty body when they do not have it) and waits up to the resolver's `timeout`
//! for a JWT; one that verifies is kept in the cache directory and its account added, before
//! the CONNECT is checked. Runs on the connecting client's reader task, so only that client
//! waits. A route's `RS+` in an account not held yet fetches it the same way, on a task of
//! its own (full resolvers too, as nats-server's `DirAccResolver.Fetch`), and so does a routed
//! message (`RMSG`) in one, as nats-server's `LookupAccount` for it.

use super::claims::store_and_apply;
use crate::security::jwt::{self, claims::UserFields};
use crate::server::Server;
use bytes::Bytes;
use nats_jetstream::Message;
use nats_proto::ConnectOptions;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Before a CONNECT is checked: fetch its user's account when the cache resolver lacks it.
pub(crate) async fn fetch_for_connect(server: &Arc<Server>, connect: &ConnectOptions) {
    let Some(resolver) = &server.jwt else {
        return;
    };
    if !resolver.is_cache() {
        return;
    }
    let Some(token) = &connect.jwt else {
        return;
    };
    let Ok(claims) = jwt::decode::<UserFields>(token) else {
        return;
    };
    let key = if claims.nats.issuer_account.is_empty() {
        claims.iss
    } else {
        claims.nats.issuer_account
    };
    fetch_account(server.clone(), key).await
}

/// Fetch account `key` from the cluster when this server's full or cache resolver lacks it,
/// and add it (bounded by the resolver's `timeout`). Also run, aside from the route's reader,
/// for a route's `RS+` naming an account not held yet, as nats-server's resolvers fetch it.
pub(crate) async fn fetch_account(server: Arc<Server>, key: String) {
    let Some(resolver) = &server.jwt else {
        return;
    };
    if resolver.directory().is_none()
        || !jwt::is_account_key(&key)
        || resolver.account(&key).is_some()
    {
        return;
    }
    let timeout = match &server.options.operator.resolver {
        Some(crate::config::operator::ResolverOptions::Directory { timeout, .. }) => *timeout,
        _ => Duration::from_secs(2),
    };
    let Some(found) = lookup(&server, &key, timeout).await else {
        tracing::debug!("cache resolver: account {key} not found in the cluster");
        return;
    };
    match store_and_apply(&server, resolver, &key, &found) {
        Ok(_) => {}
        Err(error) => tracing::warn!("cache resolver: account {key}: {error}"),
    }
}

/// [`fetch_account`] on a task of its own, for a route's `RS+` or `RMSG` naming an account not
/// held (nats-server's route reader looks the account up itself; ours goes on reading): at
/// most one such fetch per account at a time, so a flood of lines costs one lookup.
pub(crate) fn fetch_account_aside(server: &Arc<Server>, key: &str) {
    let Some(resolver) = &server.jwt else {
        return;
    };
    if resolver.directory().is_none() || !jwt::is_account_key(key) || !resolver.begin_fetch(key) {
        return;
    }
    let (server, key) = (server.clone(), key.to_string());
    tokio::spawn(async move {
        fetch_account(server.clone(), key.clone()).await;
        if let Some(resolver) = &server.jwt {
            resolver.end_fetch(&key);
        }
    });
}

/// Ask the cluster for `key`'s JWT; the first non-empty answer within `timeout`.
async fn lookup(server: &Arc<Server>, key: &str, timeout: Duration) -> Option<String> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let inbox = format!(
        "$SYS._INBOX.{}.fetch.{}",
        server.server_id,
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Bytes>(16);
    let router = &server.accounts.system().router;
    let id = router.subscribe_internal(
        &inbox,
        None,
        Arc::new(move |message: Message| {
            let _ = sender.try_send(message.payload.clone());
        }),
    );
    super::publish_request(
        server,
        &Bytes::from(format!("$SYS.REQ.ACCOUNT.{key}.CLAIMS.LOOKUP")),
        Some(&Bytes::from(inbox)),
        &Bytes::new(),
    );
    let found = tokio::time::timeout(timeout, async {
        while let Some(payload) = receiver.recv().await {
            if !payload.is_empty() {
                return Some(String::from_utf8_lossy(&payload).into_owned());
            }
        }
        None
    })
    .await
    .ok()
    .flatten();
    router.unsubscribe_internal(id);
    found
}
