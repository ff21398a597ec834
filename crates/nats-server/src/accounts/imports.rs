//! Stream and service imports at run time, as nats-server's `accounts.go` does them.
//!
//! - A **stream import** (importer B takes `from` of exporter A as `to`): a client of B
//!   subscribing to a subject that meets `to` gets a shadow subscription in A's subject table
//!   (announced on routes in A like any other interest), which hands A's messages to the client
//!   under the mapped subject. The shadows live and die with the client's subscription.
//! - A **service import** (B's requests on `to` go to A as `from`): an entry in B's table, never
//!   announced on routes (each server runs its own import), which republishes the message in A
//!   with a `Nats-Request-Info` header naming B and, when it has a reply, a reply subject of A's
//!   response table (`responses.rs`) that maps the answers back to B's requester.
//!
//! Called by the router (delivery to an [`ImportTarget`]), by the client reader (SUB adds
//! shadows) and by `accounts/mod.rs` (building the imports at start). Knows nothing of sockets.

use super::responses;
use super::Account;
use crate::client::ClientSubscription;
use crate::config::ResponseType;
use crate::router::{Delivery, PendingFlush, Subscriber};
use bytes::{BufMut, Bytes, BytesMut};
use std::cell::Cell;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How a subject of one account becomes the subject of another.
pub(super) enum Mapping {
    /// The source is a literal subject: always this one.
    Literal(Bytes),
    /// Same pattern on both sides: the subject as published.
    Same,
    /// A wildcard source mapped elsewhere: nats-server's subject transform, compiled once
    /// (`None`: a transform it refuses, which maps nothing).
    Transform(Option<nats_subject::SubjectTransform>),
}

impl Mapping {
    /// The mapping from subjects matching `source` to `destination` (written with `*`, `>`).
    pub(super) fn new(source: &str, destination: &str) -> Mapping {
        if source == destination {
            Mapping::Same
        } else if nats_subject::is_literal(source) {
            Mapping::Literal(Bytes::copy_from_slice(destination.as_bytes()))
        } else {
            Mapping::Transform(nats_subject::SubjectTransform::new(
                source,
                &crate::config::number_wildcards(destination),
            ))
        }
    }

    fn apply(&self, subject: &Bytes) -> Option<Bytes> {
        match self {
            Mapping::Same => Some(subject.clone()),
            Mapping::Literal(literal) => Some(literal.clone()),
            Mapping::Transform(transform) => {
                let text = std::str::from_utf8(subject).ok()?;
                transform.as_ref()?.apply(text).map(Bytes::from)
            }
        }
    }
}

/// One stream import of an account.
pub struct StreamImport {
    pub(super) exporter: Weak<Account>,
    /// The subject (pattern) in the exporting account.
    pub(super) from: String,
    /// The subject (pattern) in the importing account.
    pub(super) to: String,
    /// `from` → `to`.
    pub(super) mapping: Mapping,
    /// Cleared when an update of the importer's claims drops this import: the shadows made
    /// for it deliver nothing more.
    pub(super) live: std::sync::atomic::AtomicBool,
}

impl StreamImport {
    pub(super) fn same_as(&self, exporter: &Arc<Account>, from: &str, to: &str) -> bool {
        self.from == from
            && self.to == to
            && std::ptr::eq(self.exporter.as_ptr(), Arc::as_ptr(exporter))
    }
}

/// One service import of an account.
pub struct ServiceImport {
    pub(super) importer: Weak<Account>,
    pub(super) exporter: Weak<Account>,
    /// `to` → the exporter's subject.
    pub(super) mapping: Mapping,
    pub(super) response_type: ResponseType,
    pub(super) threshold: Duration,
    /// The exporter is the system account: the request info names this server and its
    /// cluster.
    pub(super) origin: Option<(String, Option<String>)>,
    /// The `$JS.API.>` import from the system account: direct gets and next-message requests
    /// are left to the streams' and consumers' own subscriptions, as nats-server leaves them.
    pub(super) jetstream: bool,
}

/// A client subscription's stand-in in an exporter's table.
pub struct Shadow {
    pub(super) subscription: Arc<ClientSubscription>,
    /// The subscriber's own account (for auto-unsubscribe).
    pub(super) home: Weak<Account>,
    pub(super) import: Arc<StreamImport>,
    /// The subject in the exporter's table.
    pub(super) subject: String,
    /// Deliver only mapped subjects the subscription matches (it only partly overlaps `to`).
    pub(super) filter: bool,
}

/// What an import puts into a subject table.
pub enum ImportTarget {
    Stream(Shadow),
    Service(Arc<ServiceImport>),
    /// The response table of an exporting account (its `_R_.<id>.>` subscription).
    Responses(Weak<Account>),
}

impl ImportTarget {
    /// Service imports act for the server's own clients only: nats-server's importing server
    /// already forwarded the request, so one that came over a route is not imported again.
    pub fn is_service(&self) -> bool {
        matches!(self, ImportTarget::Service(_))
    }

    /// Hand a message routed in the table holding this target on to where the import leads.
    pub fn deliver(
        &self,
        publisher: Option<&Arc<crate::client::ClientShared>>,
        delivery: &Delivery<'_>,
        pending: &mut PendingFlush,
    ) -> bool {
        let Some(_depth) = DepthGuard::enter() else {
            return false;
        };
        match self {
            ImportTarget::Stream(shadow) => deliver_shadow(shadow, publisher, delivery, pending),
            ImportTarget::Service(import) => forward_request(import, delivery, pending),
            ImportTarget::Responses(exporter) => exporter
                .upgrade()
                .is_some_and(|exporter| responses::deliver(&exporter, delivery, pending)),
        }
    }
}

/// Imports chained through several accounts nest deliveries; cycles are refused at config load,
/// and this bound keeps any other loop (a reply subject matching an import) from recursing.
const MAX_IMPORT_DEPTH: usize = 8;

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

struct DepthGuard;

impl DepthGuard {
    fn enter() -> Option<DepthGuard> {
        DEPTH.with(|depth| {
            if depth.get() >= MAX_IMPORT_DEPTH {
                return None;
            }
            depth.set(depth.get() + 1);
            Some(DepthGuard)
        })
    }
}

impl Drop for DepthGuard {
    fn drop(&mut self) {
        DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

fn deliver_shadow(
    shadow: &Shadow,
    publisher: Option<&Arc<crate::client::ClientShared>>,
    delivery: &Delivery<'_>,
    pending: &mut PendingFlush,
) -> bool {
    if !shadow
        .import
        .live
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        return false;
    }
    let Some(subject) = shadow.import.mapping.apply(delivery.subject) else {
        return false;
    };
    if shadow.filter {
        let matches = std::str::from_utf8(&subject).is_ok_and(|text| {
            nats_subject::subject_matches_filter(text, &shadow.subscription.subject)
        });
        if !matches {
            return false;
        }
    }
    let Some(home) = shadow.home.upgrade() else {
        return false;
    };
    let mapped = Delivery {
        subject: &subject,
        reply: delivery.reply,
        headers: delivery.headers,
        payload: delivery.payload,
    };
    home.router
        .deliver_client(publisher, &shadow.subscription, &mapped, pending)
}

fn forward_request(
    import: &ServiceImport,
    delivery: &Delivery<'_>,
    pending: &mut PendingFlush,
) -> bool {
    let (Some(importer), Some(exporter)) = (import.importer.upgrade(), import.exporter.upgrade())
    else {
        return false;
    };
    if import.jetstream
        && (delivery.subject.starts_with(b"$JS.API.DIRECT.GET.")
            || delivery.subject.starts_with(b"$JS.API.CONSUMER.MSG.NEXT."))
    {
        return false;
    }
    let Some(mut subject) = import.mapping.apply(delivery.subject) else {
        return false;
    };
    // nats-server applies the exporter's subject mappings to the forwarded request.
    match exporter.map_subject(&subject) {
        Some(super::mappings::Mapped::To(mapped)) => subject = mapped,
        Some(super::mappings::Mapped::Dropped) => return false,
        None => {}
    }
    let Ok(subject_text) = std::str::from_utf8(&subject) else {
        return false;
    };
    let reply = delivery.reply.map(|reply| {
        if reply.starts_with(b"$JS.ACK.") {
            return reply.clone();
        }
        responses::register(
            &exporter,
            &import.importer,
            reply.clone(),
            import.response_type,
            import.threshold,
        )
    });
    let headers = with_request_info(delivery.headers, &importer, import.origin.as_ref());
    let forwarded = Delivery {
        subject: &subject,
        reply: reply.as_ref(),
        headers: Some(&headers),
        payload: delivery.payload,
    };
    exporter
        .router
        .route_matching(subject_text, None, &forwarded, pending)
        > 0
}

/// nats-server's client info header on an imported request.
const REQUEST_INFO: &[u8] = b"Nats-Request-Info";

/// The message's header block with `Nats-Request-Info: {"acc":"<importer>"}` set (plus this
/// server and its cluster when the exporter is the system account), replacing one already there.
fn with_request_info(
    headers: Option<&Bytes>,
    importer: &Account,
    origin: Option<&(String, Option<String>)>,
) -> Bytes {
    let mut info = serde_json::json!({ "acc": &*importer.name });
    if let Some((server, cluster)) = origin {
        info["server"] = server.clone().into();
        if let Some(cluster) = cluster {
            info["cluster"] = cluster.clone().into();
        }
    }
    let value = info.to_string();
    let mut block = BytesMut::with_capacity(headers.map_or(12, |headers| headers.len()) + 64);
    match headers {
        Some(headers) if headers.starts_with(b"NATS/1.0") => {
            let text = &headers[..];
            let end = text.len().saturating_sub(2);
            let mut lines = text[..end].split(|byte| *byte == b'\n');
            if let Some(status) = lines.next() {
                block.put_slice(status);
                block.put_u8(b'\n');
            }
            for line in lines {
                let name = line.split(|byte| *byte == b':').next().unwrap_or_default();
                if line.is_empty() || name.eq_ignore_ascii_case(REQUEST_INFO) {
                    continue;
                }
                block.put_slice(line);
                block.put_u8(b'\n');
            }
        }
        _ => block.put_slice(b"NATS/1.0\r\n"),
    }
    block.put_slice(REQUEST_INFO);
    block.put_slice(b": ");
    block.put_slice(value.as_bytes());
    block.put_slice(b"\r\n\r\n");
    block.freeze()
}

/// Add the shadows a new subscription of `account` needs in the accounts it imports streams from.
pub fn add_shadows(account: &Arc<Account>, subscription: &Arc<ClientSubscription>) {
    let imports = account.imports.load();
    let shadows: Vec<_> = imports
        .streams
        .iter()
        .filter_map(|import| shadow(account, import, subscription))
        .collect();
    if !shadows.is_empty() {
        subscription.shadows.lock().extend(shadows);
    }
}

/// The shadow of `subscription` in the exporter of `import`, entered in its table, when the
/// subscription meets the import's subject.
fn shadow(
    account: &Arc<Account>,
    import: &Arc<StreamImport>,
    subscription: &Arc<ClientSubscription>,
) -> Option<Arc<ImportTarget>> {
    let subject = &subscription.subject;
    let covers = *subject == import.to || nats_subject::is_subset_match(&import.to, subject);
    if !covers && !nats_subject::subjects_overlap(subject, &import.to) {
        return None;
    }
    let exporter = import.exporter.upgrade()?;
    let shadow = Arc::new(ImportTarget::Stream(Shadow {
        subscription: subscription.clone(),
        home: Arc::downgrade(account),
        import: import.clone(),
        subject: import.from.clone(),
        filter: !covers,
    }));
    exporter.router.insert(
        &import.from,
        subscription.queue.as_deref(),
        Subscriber::Import(shadow.clone()),
    );
    Some(shadow)
}

/// A config reload rebuilt the stream imports of `account`: an existing subscription gets
/// shadows for the imports it meets now and loses those of imports gone, as nats-server's
/// `processSubsOnConfigReload` (a kept import keeps its shadow, so nothing arrives twice).
pub fn refresh_shadows(account: &Arc<Account>, subscription: &Arc<ClientSubscription>) {
    let imports = account.imports.load();
    let previous = std::mem::take(&mut *subscription.shadows.lock());
    let mut kept = Vec::new();
    let mut gone = Vec::new();
    for target in previous {
        let keep = match &*target {
            ImportTarget::Stream(shadow) => {
                std::ptr::eq(shadow.home.as_ptr(), Arc::as_ptr(account))
                    && imports
                        .streams
                        .iter()
                        .any(|import| Arc::ptr_eq(import, &shadow.import))
            }
            _ => false,
        };
        if keep {
            kept.push(target);
        } else {
            gone.push(target);
        }
    }
    for import in &imports.streams {
        let shadowed = kept.iter().any(|target| {
            matches!(&**target, ImportTarget::Stream(shadow) if Arc::ptr_eq(&shadow.import, import))
        });
        if !shadowed {
            kept.extend(shadow(account, import, subscription));
        }
    }
    subscription.shadows.lock().extend(kept);
    remove_targets(subscription, gone);
    // Unsubscribed meanwhile (its max reached on another task): take the new shadows too.
    if !subscription.client.has_subscription(subscription) {
        remove_shadows(subscription);
    }
}

/// Drop a subscription's shadows (it was unsubscribed or its client left).
pub fn remove_shadows(subscription: &ClientSubscription) {
    let shadows = std::mem::take(&mut *subscription.shadows.lock());
    remove_targets(subscription, shadows);
}

fn remove_targets(subscription: &ClientSubscription, shadows: Vec<Arc<ImportTarget>>) {
    for target in shadows {
        let ImportTarget::Stream(shadow) = &*target else {
            continue;
        };
        if let Some(exporter) = shadow.import.exporter.upgrade() {
            exporter.router.remove(
                &shadow.subject,
                subscription.queue.as_deref(),
                &Subscriber::Import(target.clone()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &Bytes) -> &str {
        std::str::from_utf8(bytes).unwrap()
    }

    #[test]
    fn mappings_follow_nats_server() {
        let prefix = Mapping::new("a.>", "p.a.>");
        assert_eq!(
            text(&prefix.apply(&Bytes::from("a.b.c")).unwrap()),
            "p.a.b.c"
        );
        let swap = Mapping::new("a.*.*", "x.*.*");
        assert_eq!(text(&swap.apply(&Bytes::from("a.1.2")).unwrap()), "x.1.2");
        let literal = Mapping::new("a.b", "c.d");
        assert_eq!(text(&literal.apply(&Bytes::from("a.b")).unwrap()), "c.d");
        let same = Mapping::new("a.>", "a.>");
        assert_eq!(text(&same.apply(&Bytes::from("a.z")).unwrap()), "a.z");
    }

    #[test]
    fn request_info_is_added_or_replaced() {
        let account = Account::new("B");
        let added = with_request_info(None, &account, None);
        assert_eq!(
            text(&added),
            "NATS/1.0\r\nNats-Request-Info: {\"acc\":\"B\"}\r\n\r\n"
        );
        let existing = Bytes::from("NATS/1.0\r\nA: 1\r\nNats-Request-Info: {}\r\n\r\n");
        let replaced = with_request_info(Some(&existing), &account, None);
        assert_eq!(
            text(&replaced),
            "NATS/1.0\r\nA: 1\r\nNats-Request-Info: {\"acc\":\"B\"}\r\n\r\n"
        );
    }
}
