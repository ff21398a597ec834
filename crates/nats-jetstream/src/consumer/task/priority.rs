//! Priority groups of pull consumers (ADR-42): choosing the waiting request that takes a
//! message (`overflow` thresholds, the `pinned_client` pin, `prioritized` order), the pin's
//! lifetime (`priority_timeout`, `CONSUMER.UNPIN`) and the pinned/unpinned advisories.
//!
//! As in nats-server one pin is held per consumer (its first group is the one `CONSUMER.INFO`
//! reports); it is handed out when a message is delivered to a request that carries no pin id.

use super::Task;
use bytes::Bytes;
use jetstream_api::advisory::Advisory;
use jetstream_api::{status, ConsumerGroupPinned, ConsumerGroupUnpinned, PriorityPolicy};
use std::time::Duration;
use tokio::time::Instant;

/// The account every advisory names (accounts are not configurable here).
const ACCOUNT: &str = "$G";

/// The current pin of a `pinned_client` consumer.
pub(super) struct Pin {
    pub id: String,
    /// The group named in the request that got pinned (named in the timeout advisory).
    pub group: String,
    /// When the pin lapses unless the pinned client pulls again.
    pub expires: Instant,
}

impl Task {
    pub(super) fn pin_id(&self) -> String {
        self.pin
            .as_ref()
            .map(|pin| pin.id.clone())
            .unwrap_or_default()
    }

    fn pinned_ttl(&self) -> Duration {
        Duration::from_nanos(self.config.pinned_ttl.0.max(0) as u64)
    }

    /// A request with the current pin id arrived: the pin lives on for another TTL.
    pub(super) fn refresh_pin(&mut self) {
        let ttl = self.pinned_ttl();
        if let Some(pin) = &mut self.pin {
            pin.expires = Instant::now() + ttl;
        }
    }

    fn assign_pin(&mut self, group: &str) -> String {
        let id = crate::nuid::next_id();
        self.pin = Some(Pin {
            id: id.clone(),
            group: group.to_string(),
            expires: Instant::now() + self.pinned_ttl(),
        });
        self.consumer.state.lock().pinned = Some((id.clone(), crate::time_format::now_nanos()));
        let subject =
            jetstream_api::consumer_pinned_subject(&self.stream.name, &self.consumer.name);
        if self.transport.has_interest(&subject) {
            let body = Advisory::new(
                crate::nuid::next_id(),
                jetstream_api::Timestamp::now(),
                ConsumerGroupPinned {
                    account: ACCOUNT.to_string(),
                    stream: self.stream.name.clone(),
                    consumer: self.consumer.name.clone(),
                    domain: self.domain(),
                    group: group.to_string(),
                    pinned_client_id: id.clone(),
                },
            );
            self.publish_advisory(subject, &body);
        }
        id
    }

    /// Drop the pin; with a reason (`admin`, `timeout`) the unpinned advisory goes out.
    pub(super) fn unpin(&mut self, group: &str, reason: Option<&str>) {
        self.pin = None;
        self.consumer.state.lock().pinned = None;
        let Some(reason) = reason else {
            return;
        };
        let subject =
            jetstream_api::consumer_unpinned_subject(&self.stream.name, &self.consumer.name);
        if self.transport.has_interest(&subject) {
            let body = Advisory::new(
                crate::nuid::next_id(),
                jetstream_api::Timestamp::now(),
                ConsumerGroupUnpinned {
                    account: ACCOUNT.to_string(),
                    stream: self.stream.name.clone(),
                    consumer: self.consumer.name.clone(),
                    domain: self.domain(),
                    group: group.to_string(),
                    reason: reason.to_string(),
                },
            );
            self.publish_advisory(subject, &body);
        }
    }

    /// The pin lapsed (its client stopped pulling for `priority_timeout`).
    pub(super) fn expire_pin(&mut self, now: Instant) {
        if let Some(pin) = &self.pin {
            if pin.expires <= now {
                let group = pin.group.clone();
                self.unpin(&group, Some("timeout"));
            }
        }
    }

    /// nats-server's `nextWaiting` and `pop`: the reply subject of the request that takes a
    /// message of `size` bytes (with `pending_after` undelivered messages behind it), answering
    /// and dropping the requests it passes that can no longer be served. `None`: no request can
    /// take it now.
    pub(super) fn next_waiting(
        &mut self,
        size: i64,
        pending_after: u64,
        now: Instant,
    ) -> Option<Bytes> {
        let policy = self.config.priority_policy;
        let mut cycled = 0;
        loop {
            let front = self.waiting.requests.front()?;
            if front.expires.is_some_and(|expires| expires <= now) {
                let body = status::request_timeout(front.remaining, front.remaining_bytes);
                self.drop_front(body);
                continue;
            }
            // Requests whose requester went away are dropped silently, as nats-server does
            // (the request `deliver` checked for this batch is not asked again).
            let checked = self
                .interest_checked
                .as_ref()
                .is_some_and(|checked| checked.as_ptr() == front.reply.as_ptr());
            let reply = std::str::from_utf8(&front.reply).unwrap_or("");
            if !checked && !self.transport.has_interest(reply) {
                self.waiting.requests.pop_front();
                continue;
            }
            let mut pinned_now = false;
            if policy == PriorityPolicy::PinnedClient {
                let held = front
                    .priority_group
                    .as_ref()
                    .map(|group| group.id.as_str())
                    .unwrap_or("");
                match &self.pin {
                    None if !held.is_empty() => {
                        let body = status::wrong_pin_id(front.remaining, front.remaining_bytes);
                        self.drop_front(body);
                        continue;
                    }
                    None => {
                        // A request without a group (a bare batch) is served unpinned, as
                        // nats-server does; one with a group takes the pin.
                        if let Some(group) = front.priority_group.as_ref().map(|g| g.group.clone())
                        {
                            let id = self.assign_pin(&group);
                            if let Some(group) = self
                                .waiting
                                .requests
                                .front_mut()
                                .and_then(|front| front.priority_group.as_mut())
                            {
                                group.id = id;
                            }
                        }
                        pinned_now = true;
                    }
                    Some(pin) if held == pin.id => {}
                    Some(_) if !held.is_empty() => {
                        let body = status::wrong_pin_id(front.remaining, front.remaining_bytes);
                        self.drop_front(body);
                        continue;
                    }
                    Some(_) => {
                        self.waiting.cycle();
                        cycled += 1;
                        if cycled >= self.waiting.len() {
                            return None;
                        }
                        continue;
                    }
                }
            }
            let front = self.waiting.requests.front()?;
            if policy == PriorityPolicy::Overflow {
                if let Some(group) = &front.priority_group {
                    let has_threshold = group.min_pending > 0 || group.min_ack_pending > 0;
                    let reached = (group.min_pending > 0
                        && group.min_pending <= pending_after as i64 + 1)
                        || (group.min_ack_pending > 0
                            && group.min_ack_pending
                                <= self.consumer.state.lock().state.pending.len() as i64);
                    if has_threshold && !reached {
                        self.waiting.cycle();
                        cycled += 1;
                        if cycled >= self.waiting.len() {
                            return None;
                        }
                        continue;
                    }
                }
            }
            let front = self.waiting.requests.front_mut()?;
            if front.remaining_bytes > 0 {
                if size <= front.remaining_bytes {
                    front.remaining_bytes -= size;
                    if front.remaining_bytes == 0 {
                        // Exactly used up: this message is the request's last.
                        front.remaining = 1;
                    }
                } else {
                    let body = status::message_size_exceeds_max_bytes(
                        front.remaining,
                        front.remaining_bytes,
                    );
                    self.drop_front(body);
                    if pinned_now {
                        let group = self.pin.as_ref().map(|pin| pin.group.clone());
                        if let Some(group) = group {
                            self.unpin(&group, None);
                        }
                    }
                    continue;
                }
            }
            let reply = front.reply.clone();
            front.remaining -= 1;
            front.delivered += 1;
            self.waiting.took_one(policy);
            return Some(reply);
        }
    }

    /// Answer the front request with `status` and drop it.
    fn drop_front(&mut self, status: Vec<u8>) {
        if let Some(front) = self.waiting.requests.pop_front() {
            self.send_status(front.reply, status);
        }
    }
}
