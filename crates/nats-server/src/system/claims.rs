//! Operator mode's account-claims requests, answered as nats-server's resolvers answer them.
//!
//! - Both resolvers: `$SYS.REQ.ACCOUNT.<key>.CLAIMS.UPDATE` (and the older
//!   `$SYS.ACCOUNT.<key>.CLAIMS.UPDATE`) with an account JWT as the body. The memory resolver
//!   replaces the JWT of an account the server has and skips one it does not have; the full
//!   resolver stores every account (`<dir>/<key>.jwt`) and adds it to the accounts table.
//! - Full resolver only: `$SYS.REQ.CLAIMS.UPDATE` (the key is the JWT's subject),
//!   `$SYS.REQ.ACCOUNT.<key>.CLAIMS.LOOKUP` (the stored JWT, or an empty body),
//!   `$SYS.REQ.CLAIMS.LIST` (every stored key) and `$SYS.REQ.CLAIMS.DELETE` (a generic claim
//!   self-signed by a trusted operator key listing `accounts`, with `allow_delete`).
//!
//! An accepted JWT is applied in place: the account's exports and imports (and those of the
//! accounts importing from it) are rebuilt, connections whose user it revokes are closed by
//! their readers, which watch the resolver. Started by `system::start` in operator mode.

use crate::security::jwt::activation;
use crate::security::jwt::resolver::{account_options, Resolver};
use crate::security::jwt::{self, claims::AccountFields, resolver::UpdateOutcome};
use crate::server::Server;
use crate::transport::ServerTransport;
use bytes::Bytes;
use nats_jetstream::Message;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// What a subscribed subject asks for.
#[derive(Clone, Copy)]
enum Request {
    /// The key is in the subject.
    AccountUpdate,
    /// `$SYS.REQ.CLAIMS.UPDATE`: the key is the JWT's subject.
    Update,
    Lookup,
    List,
    Delete,
}

/// Which resolvers answer a subject.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Served {
    /// Every resolver (memory too).
    All,
    /// The full and cache resolvers.
    Directory,
    /// The full resolver only.
    Full,
}

const SUBJECTS: [(&str, Request, Served); 6] = [
    (
        "$SYS.REQ.ACCOUNT.*.CLAIMS.UPDATE",
        Request::AccountUpdate,
        Served::All,
    ),
    (
        "$SYS.ACCOUNT.*.CLAIMS.UPDATE",
        Request::AccountUpdate,
        Served::All,
    ),
    ("$SYS.REQ.CLAIMS.UPDATE", Request::Update, Served::Directory),
    (
        "$SYS.REQ.ACCOUNT.*.CLAIMS.LOOKUP",
        Request::Lookup,
        Served::Full,
    ),
    ("$SYS.REQ.CLAIMS.LIST", Request::List, Served::Full),
    ("$SYS.REQ.CLAIMS.DELETE", Request::Delete, Served::Full),
];

/// Subscribe the claims subjects in the system account (operator mode only; the full
/// resolver's own subjects only with it).
pub(super) fn start(server: &Arc<Server>) {
    let Some(resolver) = &server.jwt else {
        return;
    };
    let level = match resolver.directory() {
        None => Served::All,
        Some(directory) if directory.cache => Served::Directory,
        Some(_) => Served::Full,
    };
    let subjects = SUBJECTS
        .iter()
        .filter(|(_, _, served)| *served <= level)
        .map(|(subject, request, _)| (subject.to_string(), *request))
        .collect();
    serve(server, subjects, answer);
    watch_activations(server);
    if let Some(directory) = resolver.directory() {
        tracing::info!(
            "Managing {} jwt in exclusive directory {}",
            if directory.cache { "some" } else { "all" },
            directory.path().display()
        );
        if let (
            Some(crate::config::operator::ResolverOptions::Directory { interval, .. }),
            Served::Full,
        ) = (&server.options.operator.resolver, level)
        {
            super::claims_pack::start(server, *interval);
        }
        if let Some(every) = directory.expiry_interval() {
            let weak = Arc::downgrade(server);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    let Some(server) = weak.upgrade() else {
                        return;
                    };
                    if let Some(directory) = server.jwt.as_ref().and_then(|jwt| jwt.directory()) {
                        for key in directory.expire() {
                            tracing::debug!("cache resolver: account {key} expired from the cache");
                        }
                    }
                }
            });
        }
    }
}

/// Rebuild the accounts whose imports' activation tokens expire, when they expire (the
/// import is then left out: a stream import stops delivering, a service import answers no
/// more), as nats-server's activation timers; the next expiry is looked for again whenever
/// the resolver takes an update.
fn watch_activations(server: &Arc<Server>) {
    let Some(resolver) = &server.jwt else {
        return;
    };
    let mut revision = resolver.revision.subscribe();
    let weak = Arc::downgrade(server);
    // Tokens expired before this were left out when their imports were built.
    let mut checked = jwt::now();
    tokio::spawn(async move {
        loop {
            let next = {
                let Some(server) = weak.upgrade() else {
                    return;
                };
                let Some(resolver) = &server.jwt else {
                    return;
                };
                activation::next_expiry(resolver, jwt::now())
            };
            revision.borrow_and_update();
            let Some(expires) = next else {
                if revision.changed().await.is_err() {
                    return;
                }
                continue;
            };
            let wait = Duration::from_secs((expires - jwt::now()).max(0).unsigned_abs());
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                changed = revision.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    continue;
                }
            }
            let Some(server) = weak.upgrade() else {
                return;
            };
            let Some(resolver) = &server.jwt else {
                return;
            };
            let now = jwt::now();
            for importer in activation::expired_importers(resolver, checked, now) {
                tracing::debug!("activation expired for an import of {}", importer.key());
                server
                    .accounts
                    .update(&account_options(&importer, resolver));
            }
            checked = now;
        }
    });
}

/// Subscribe `subjects` in the system account and hand each message, with what its subject
/// stands for, to `handle` on one task (the handlers only enqueue; a full queue drops).
pub(super) fn serve<R: Copy + Send + Sync + 'static>(
    server: &Arc<Server>,
    subjects: Vec<(String, R)>,
    handle: fn(&Server, &Resolver, Message, R),
) {
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<(Message, R)>(super::REQUEST_QUEUE);
    for (subject, request) in subjects {
        let sender = sender.clone();
        server.accounts.system().router.subscribe_internal(
            &subject,
            None,
            Arc::new(move |message: Message| {
                let _ = sender.try_send((message, request));
            }),
        );
    }
    let weak = Arc::downgrade(server);
    tokio::spawn(async move {
        while let Some((message, request)) = receiver.recv().await {
            let Some(server) = weak.upgrade() else {
                return;
            };
            let Some(resolver) = server.jwt.clone() else {
                return;
            };
            handle(&server, &resolver, message, request);
            // An update that disabled an account's JetStream closes its streams before the
            // next request is taken (one enabling it again reopens them).
            if let Some(jetstream) = server.jetstream.get() {
                jetstream.settled().await;
            }
        }
    });
}

fn answer(server: &Server, resolver: &Resolver, message: Message, request: Request) {
    let reply = message
        .reply
        .as_ref()
        .map(|reply| Bytes::copy_from_slice(reply));
    let response = match request {
        Request::AccountUpdate | Request::Update => {
            Some(update(server, resolver, &message, request))
        }
        Request::Lookup => {
            if let (Some(reply), Some(key)) = (&reply, account_key(&message.subject)) {
                let jwt = resolver
                    .directory()
                    .and_then(|directory| directory.read(&key))
                    .unwrap_or_default();
                super::publish_raw(server, reply, &Bytes::from(jwt));
            }
            None
        }
        Request::List => resolver
            .directory()
            .map(|directory| json!({"data": directory.keys()})),
        Request::Delete => Some(delete(server, resolver, &message.payload)),
    };
    if let (Some(reply), Some(mut response)) = (reply, response) {
        response["server"] = super::server_object(server);
        super::publish_bytes(server, &reply, response);
    }
}

/// The account key of `$SYS.REQ.ACCOUNT.<key>.CLAIMS.*` or `$SYS.ACCOUNT.<key>.CLAIMS.UPDATE`.
fn account_key(subject: &[u8]) -> Option<String> {
    let subject = std::str::from_utf8(subject).ok()?;
    let tokens: Vec<&str> = subject.split('.').collect();
    let key = match tokens.len() {
        6 => tokens[3],
        5 => tokens[2],
        _ => return None,
    };
    Some(key.to_string())
}

fn update(server: &Server, resolver: &Resolver, message: &Message, request: Request) -> Value {
    let body = String::from_utf8_lossy(&message.payload);
    let decoded = jwt::decode::<AccountFields>(&body);
    let full = resolver.directory().is_some() && !resolver.is_cache();
    let cache = resolver.is_cache();
    // nats-server's cache resolver words its answers so.
    let (error_text, skipped, updated) = if cache {
        (
            "jwt update cache resulted in error",
            "jwt update cache skipped",
            "jwt updated cache",
        )
    } else {
        (
            "jwt update resulted in error",
            "jwt update skipped",
            "jwt updated",
        )
    };
    if let (true, Err(error)) = (full, &decoded) {
        return failure("n/a", error_text, &error.to_string());
    }
    if let (true, Request::Update, Err(error)) = (cache, request, &decoded) {
        return failure("n/a", error_text, &error.to_string());
    }
    let key = match request {
        Request::AccountUpdate => account_key(&message.subject),
        _ => decoded.as_ref().ok().map(|claims| claims.sub.clone()),
    };
    let Some(key) = key else {
        return failure("n/a", error_text, "bad subject");
    };
    if !full && !cache && body.trim().is_empty() {
        return failure(&key, "jwt update error", "request body is empty");
    }
    let claims = match decoded {
        Ok(claims) => claims,
        Err(error) => return failure(&key, error_text, &error.to_string()),
    };
    if claims.sub != key {
        return failure(&key, error_text, "subject does not match jwt content");
    }
    if !full && server.accounts.lookup(&key).is_none() {
        return success(&key, skipped);
    }
    match store_and_apply(server, resolver, &key, &body) {
        Ok(_) => success(&key, updated),
        Err(error) => failure(&key, error_text, &error),
    }
}

/// Store `jwt` for account `key` and, when it was newer than what the resolver held, make the
/// server follow it ([`apply`]); under the resolver's update lock, so the server applies an
/// account's JWTs in the order they were stored whichever task took them.
pub(super) fn store_and_apply(
    server: &Server,
    resolver: &Resolver,
    key: &str,
    jwt: &str,
) -> Result<UpdateOutcome, String> {
    let _serial = resolver.updating();
    let outcome = resolver.store(Some(key), jwt)?;
    if outcome == UpdateOutcome::Updated {
        apply(server, resolver, key);
    }
    Ok(outcome)
}

/// Make the server's accounts follow the resolver's JWT of `key`: the account updated in
/// place (added, with the full resolver), then the accounts importing from it, whose imports
/// its exports allow or no longer allow.
pub(super) fn apply(server: &Server, resolver: &Resolver, key: &str) {
    let Some(verified) = resolver.account(key) else {
        return;
    };
    let options = account_options(&verified, resolver);
    let updated = server.accounts.update(&options);
    let known = updated.is_some();
    let account = match updated {
        Some(account) => account,
        None if resolver.directory().is_some() => server.accounts.add(&options, server.routes()),
        None => return apply_importers(server, resolver, key),
    };
    serve_jetstream(server, &account, &options, known);
    apply_importers(server, resolver, key);
}

/// JetStream in `account` as `options` (its JWT's claims, or a reloaded `accounts { }`
/// entry) say, as nats-server's `configJetStream`: new limits taken, or JetStream enabled or
/// disabled there. `known`: JetStream has seen the account before. Nothing without
/// JetStream, nor in the system account.
pub(crate) fn serve_jetstream(
    server: &Server,
    account: &Arc<crate::accounts::Account>,
    options: &crate::config::AccountOptions,
    known: bool,
) {
    let Some(jetstream) = server.jetstream.get() else {
        return;
    };
    if Arc::ptr_eq(account, server.accounts.system()) {
        return;
    }
    let transport = Arc::new(ServerTransport::new(Arc::downgrade(account)));
    let setup = if options.jetstream {
        Ok(nats_jetstream::AccountSetup {
            name: options.name.clone(),
            transport,
            limits: options.jetstream_limits.clone(),
            tiers: options.jetstream_tiers.clone(),
        })
    } else {
        Err(transport as Arc<dyn nats_jetstream::Transport>)
    };
    let applied = if known {
        jetstream.update_account(&options.name, setup)
    } else {
        jetstream.add_account(&options.name, setup)
    };
    if let Err(error) = applied {
        tracing::error!("JetStream for account {}: {error}", options.name);
    }
}

/// Rebuild the imports of the accounts importing from `key`, whose imports its exports
/// allow or no longer allow.
fn apply_importers(server: &Server, resolver: &Resolver, key: &str) {
    for importer in resolver.accounts() {
        if importer.key() != key
            && importer
                .fields()
                .imports
                .iter()
                .any(|import| import.account == key)
        {
            server
                .accounts
                .update(&account_options(&importer, resolver));
        }
    }
}

/// `$SYS.REQ.CLAIMS.DELETE`: nats-server's checks, then the accounts deleted.
fn delete(server: &Server, resolver: &Resolver, body: &[u8]) -> Value {
    let body = String::from_utf8_lossy(body);
    let decoded = jwt::decode::<Value>(&body);
    let subject = decoded
        .as_ref()
        .map(|claims| claims.sub.clone())
        .unwrap_or_default();
    let checked = decoded
        .map_err(|error| error.to_string())
        .and_then(|claims| {
            if !resolver
                .directory()
                .is_some_and(|directory| directory.allow_delete())
            {
                return Err("delete must be enabled in server config".into());
            }
            if claims.sub != claims.iss {
                return Err("not self signed".into());
            }
            if !resolver.is_operator_key(&claims.iss) {
                return Err("not trusted".into());
            }
            let malformed = || "malformed request".to_string();
            let list = claims.nats.get("accounts").ok_or_else(malformed)?;
            let list = list.as_array().ok_or_else(malformed)?;
            let mut keys = Vec::new();
            for entry in list {
                let key = entry
                    .as_str()
                    .filter(|key| jwt::is_account_key(key))
                    .ok_or_else(malformed)?;
                if key == &*server.accounts.system().name {
                    return Err("not allowed to delete system account".into());
                }
                keys.push(key.to_string());
            }
            Ok(keys)
        });
    let keys = match checked {
        Ok(keys) => keys,
        Err(error) => {
            return failure(
                "",
                &format!("delete accounts request by {subject} failed"),
                &error,
            )
        }
    };
    let (deleted, errors) = resolver.delete(&keys);
    if errors.is_empty() {
        success("", &format!("deleted {deleted} accounts"))
    } else {
        failure(
            "",
            &format!("deleted {deleted} accounts, failed for {}", errors.len()),
            &errors.join("\n"),
        )
    }
}

/// nats-server's `ClaimUpdateStatus` (an empty account is left out).
fn success(account: &str, message: &str) -> Value {
    let mut data = json!({"code": 200, "message": message});
    if !account.is_empty() {
        data["account"] = json!(account);
    }
    json!({ "data": data })
}

/// nats-server's `ClaimUpdateError` (an empty account is left out).
fn failure(account: &str, message: &str, error: &str) -> Value {
    let mut data = json!({"code": 500, "description": format!("{message} - {error}")});
    if !account.is_empty() {
        data["account"] = json!(account);
    }
    json!({ "error": data })
}
