//! The full resolvers of a cluster keep their stores equal as nats-server's do: every
//! `interval` each one asks `$SYS.REQ.CLAIMS.PACK` with the hash of its store (the XOR of the
//! SHA-256 of every JWT); a resolver whose hash differs answers with one `<key>|<jwt>` message
//! per stored account and an empty message at the end, and the asker takes every JWT newer than
//! its own (the same JWT, or an older one, is skipped), applying it as a pushed update. A
//! server that was down during a push learns it this way.
//!
//! nats-server answers the request in a queue group, and its internal client never hears its
//! own requests; here every full resolver answers, and a server ignores the request it sent
//! itself, so the asker merges the packs of all its peers (the same JWTs, taken once).

use super::claims::store_and_apply;
use crate::security::jwt::resolver::Resolver;
use crate::server::Server;
use bytes::Bytes;
use nats_jetstream::Message;
use std::sync::Arc;
use std::time::Duration;

const PACK: &str = "$SYS.REQ.CLAIMS.PACK";

/// Answer peers' pack requests and ask for theirs every `interval` (full resolver only).
pub(super) fn start(server: &Arc<Server>, interval: Duration) {
    let Some(resolver) = &server.jwt else {
        return;
    };
    if resolver.directory().is_none() {
        return;
    }
    let inbox = own_inbox(server);
    super::claims::serve(
        server,
        vec![(PACK.to_string(), true), (inbox.clone(), false)],
        |server, resolver, message, request| {
            if !request {
                merge(server, resolver, &message.payload);
            } else if message.reply.as_deref() != Some(own_inbox(server).as_bytes()) {
                answer(server, resolver, &message);
            }
        },
    );
    let weak = Arc::downgrade(server);
    let inbox = Bytes::from(inbox);
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            ticker.tick().await;
            let Some(server) = weak.upgrade() else {
                return;
            };
            let Some(hash) = server
                .jwt
                .as_ref()
                .and_then(|resolver| resolver.directory().map(|directory| directory.hash()))
            else {
                return;
            };
            super::publish_request(
                &server,
                &Bytes::from_static(PACK.as_bytes()),
                Some(&inbox),
                &Bytes::copy_from_slice(&hash),
            );
        }
    });
}

/// Where this server's pack answers come.
fn own_inbox(server: &Server) -> String {
    format!("$SYS._INBOX.{}.pack", server.server_id)
}

/// A peer's pack request: nothing but the end marker when our store hashes the same, else
/// every stored JWT, one message each, then the end marker.
fn answer(server: &Server, resolver: &Resolver, message: &Message) {
    let (Some(reply), Some(directory)) = (&message.reply, resolver.directory()) else {
        return;
    };
    let reply = Bytes::copy_from_slice(reply);
    if message.payload[..] != directory.hash() {
        for (key, jwt) in directory.load() {
            super::publish_raw(server, &reply, &Bytes::from(format!("{key}|{jwt}")));
        }
    }
    super::publish_raw(server, &reply, &Bytes::new());
}

/// One pack message: each `<key>|<jwt>` line newer than what we hold is stored and applied.
fn merge(server: &Server, resolver: &Resolver, payload: &[u8]) {
    let text = String::from_utf8_lossy(payload);
    for line in text.split('\n').filter(|line| !line.is_empty()) {
        let Some((key, jwt)) = line.split_once('|') else {
            tracing::error!(
                "DirResolver - Merging resulted in error: line in package didn't contain 2 entries"
            );
            return;
        };
        if !crate::security::jwt::is_account_key(key) {
            return;
        }
        let held = resolver
            .directory()
            .and_then(|directory| directory.read(key))
            .map(|held| held.trim().to_string());
        if held.as_deref() == Some(jwt.trim()) {
            continue;
        }
        match store_and_apply(server, resolver, key, jwt) {
            Ok(_) => {}
            Err(error) => tracing::debug!("DirResolver - Merging {key}: {error}"),
        }
    }
}
