//! PUB/HPUB and SUB/UNSUB on the reader task: publish permissions (cached per subject), the
//! account's mappings, routing, no-responders replies, `$SYS.REQ.USER.INFO`; subscription
//! limits and permissions.

use super::{Next, Session, PERMISSION_CACHE_LIMIT};
use crate::accounts::mappings::Mapped;
use crate::client::ClientSubscription;
use crate::router::{Delivery, Subscriber};
use crate::security::auth::UserPermissions;
use bytes::{BufMut, Bytes, BytesMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

impl Session {
    pub(super) fn publish(
        &mut self,
        subject: Bytes,
        reply: Option<Bytes>,
        headers: Option<Bytes>,
        payload: Bytes,
    ) -> Next {
        let size = payload.len() + headers.as_ref().map_or(0, Bytes::len);
        let counters = &self.shared.counters;
        // Only this task writes its inbound counters: plain stores, no RMW.
        counters.in_msgs.store(
            counters.in_msgs.load(Ordering::Relaxed) + 1,
            Ordering::Relaxed,
        );
        counters.in_bytes.store(
            counters.in_bytes.load(Ordering::Relaxed) + size as u64,
            Ordering::Relaxed,
        );
        if self.pedantic
            && !std::str::from_utf8(&subject).is_ok_and(nats_subject::is_valid_literal_subject)
        {
            // nats-server reports it and still processes the message.
            self.send_err("Invalid Publish Subject");
        }
        // Subject mappings come first: nats-server checks permissions on the mapped subject.
        let (subject, dropped) = match self.account.map_subject(&subject) {
            None => (subject, false),
            Some(Mapped::To(mapped)) => (mapped, false),
            Some(Mapped::Dropped) => (Bytes::new(), true),
        };
        if let Some(permissions) = self.permissions.clone() {
            if permissions.restricts_publish()
                && !self.publish_permitted(&permissions, &subject)
                && !self
                    .shared
                    .response_permits
                    .get()
                    .is_some_and(|permits| permits.take(&subject))
            {
                let text = nats_proto::err_text::permissions_violation_publish(
                    &String::from_utf8_lossy(&subject),
                );
                let user = self.shared.meta.lock().user.clone().unwrap_or_default();
                tracing::error!(
                    "{} - cid:{} - Publish Violation - User {:?}, Subject \"{}\"",
                    self.shared.address,
                    self.shared.id,
                    user,
                    String::from_utf8_lossy(&subject)
                );
                self.send_err(&text);
                return Next::Continue;
            }
        }
        // nats-server acknowledges before routing (so +OK precedes our own echo).
        self.ok();
        let delivery = Delivery {
            subject: &subject,
            reply: reply.as_ref(),
            headers: headers.as_ref(),
            payload: &payload,
        };
        let delivered = if dropped {
            0
        } else {
            self.account.router.route_cached(
                Some(&self.shared),
                &delivery,
                &mut self.pending,
                &mut self.match_cache,
            )
        };
        if subject.as_ref() == crate::security::user_info::SUBJECT {
            if let Some(reply) = &reply {
                self.answer_user_info(reply);
                return Next::Continue;
            }
        }
        if delivered == 0 && self.no_responders {
            if let Some(reply) = &reply {
                self.no_responders_reply(&subject, reply);
            }
        }
        Next::Continue
    }

    /// nats-server's system account answers `$SYS.REQ.USER.INFO` in every account.
    fn answer_user_info(&mut self, reply: &Bytes) {
        let user = self.shared.meta.lock().user.clone();
        let payload = Bytes::from(crate::security::user_info::reply(
            &self.server,
            user.as_deref(),
            self.permissions
                .as_ref()
                .map(|permissions| &permissions.source),
        ));
        let delivery = Delivery {
            subject: reply,
            reply: None,
            headers: None,
            payload: &payload,
        };
        self.account
            .router
            .route(None, &delivery, &mut self.pending);
    }

    fn publish_permitted(&mut self, permissions: &UserPermissions, subject: &Bytes) -> bool {
        if let Some(allowed) = self.publish_allowed.get(subject) {
            return *allowed;
        }
        let allowed = permissions.can_publish(&String::from_utf8_lossy(subject));
        if self.publish_allowed.len() >= PERMISSION_CACHE_LIMIT {
            self.publish_allowed.clear();
        }
        self.publish_allowed.insert(subject.clone(), allowed);
        allowed
    }

    /// A request nobody can answer: tell the requester with a 503 status message on the
    /// subscription of its own that matches the reply subject.
    fn no_responders_reply(&mut self, subject: &Bytes, reply: &Bytes) {
        let Ok(reply_text) = std::str::from_utf8(reply) else {
            return;
        };
        let sid = {
            let subscriptions = self.shared.subscriptions.lock();
            subscriptions
                .values()
                .find(|subscription| {
                    crate::security::auth::pattern_matches(&subscription.subject, reply_text)
                })
                .map(|subscription| subscription.sid.clone())
        };
        let Some(sid) = sid else {
            return;
        };
        let mut headers = BytesMut::with_capacity(48 + subject.len());
        headers.put_slice(b"NATS/1.0 503\r\nNats-Subject: ");
        headers.put_slice(subject);
        headers.put_slice(b"\r\n\r\n");
        let mut frame = BytesMut::with_capacity(headers.len() + reply.len() + 48);
        nats_proto::encode_hmsg(&mut frame, reply, &sid, None, &headers, b"");
        self.send(&frame);
    }

    pub(super) fn subscribe(&mut self, subject: Bytes, queue: Option<Bytes>, sid: Bytes) -> Next {
        let (Ok(subject_text), queue_text) = (
            std::str::from_utf8(&subject),
            queue.as_ref().map(|queue| std::str::from_utf8(queue)),
        ) else {
            self.send_err("Invalid Subject");
            return Next::Continue;
        };
        if !nats_subject::is_valid_subject(subject_text) {
            self.send_err("Invalid Subject");
            return Next::Continue;
        }
        let queue_text = match queue_text {
            None => None,
            Some(Ok(queue)) if nats_subject::is_valid_queue_name(queue) => Some(queue),
            Some(_) => {
                self.send_err("Invalid Queue Name");
                return Next::Continue;
            }
        };
        if let Some(permissions) = &self.permissions {
            if !permissions.can_subscribe(subject_text, queue_text) {
                let text = nats_proto::err_text::permissions_violation_subscription(
                    subject_text,
                    queue_text,
                );
                tracing::error!(
                    "{} - cid:{} - Subscription Violation - User {:?}, Subject \"{}\", SID {}",
                    self.shared.address,
                    self.shared.id,
                    self.shared.meta.lock().user.clone().unwrap_or_default(),
                    subject_text,
                    String::from_utf8_lossy(&sid)
                );
                self.send_err(&text);
                return Next::Continue;
            }
        }
        let max_subscriptions = match self.jwt_user.as_ref().map(|user| user.subscriptions) {
            Some(limit) if limit >= 0 => limit.min(match self.server.options.max_subscriptions {
                0 => i64::MAX,
                configured => configured,
            }),
            _ => self.server.options.max_subscriptions,
        };
        let subscription = {
            let mut subscriptions = self.shared.subscriptions.lock();
            if subscriptions.contains_key(&sid) {
                // nats-server keeps the first subscription for a reused sid.
                drop(subscriptions);
                self.ok();
                return Next::Continue;
            }
            if max_subscriptions > 0 && subscriptions.len() as i64 >= max_subscriptions {
                drop(subscriptions);
                self.send_err("maximum subscriptions exceeded");
                return Next::Continue;
            }
            let deny_filter = self
                .permissions
                .as_ref()
                .filter(|permissions| permissions.needs_delivery_filter(subject_text))
                .cloned();
            let subscription = Arc::new(ClientSubscription {
                deny_filter,
                client: self.shared.clone(),
                subject: subject_text.to_string(),
                queue: queue_text.map(str::to_string),
                sid: sid.clone(),
                max: AtomicU64::new(0),
                delivered: AtomicU64::new(0),
                shadows: Default::default(),
            });
            subscriptions.insert(sid, subscription.clone());
            subscription
        };
        self.account.router.insert(
            subject_text,
            queue_text,
            Subscriber::Client(subscription.clone()),
        );
        crate::accounts::imports::add_shadows(&self.account, &subscription);
        self.ok();
        Next::Continue
    }

    pub(super) fn unsubscribe(&mut self, sid: Bytes, max: Option<u64>) -> Next {
        let subscription = self.shared.subscriptions.lock().get(&sid).cloned();
        if let Some(subscription) = subscription {
            match max {
                Some(max) => {
                    // Set the limit first, then check: a delivery racing with us either sees
                    // the limit or is counted in `delivered` here (a double remove is harmless).
                    subscription.max.store(max, Ordering::SeqCst);
                    if subscription.delivered.load(Ordering::SeqCst) >= max {
                        self.account
                            .router
                            .remove_client_subscription(&subscription);
                    }
                }
                None => self
                    .account
                    .router
                    .remove_client_subscription(&subscription),
            }
        }
        self.ok();
        Next::Continue
    }
}
