//! Routing in a cluster: a local publish collects the route subscribers per route and sends one
//! `RMSG` per route; a message read from a route goes to local subscribers only.

use super::{Delivery, PendingFlush, Router, Subscriber, JETSTREAM_ACK_PREFIX};
use crate::client::ClientShared;
use crate::route::{RouteLink, RouteSubscription};
use bytes::Bytes;
use smallvec::SmallVec;
use std::sync::Arc;

/// Routes one message goes to, each once, with the names of the queue groups whose member was
/// picked on that peer. Borrowed from the match result and kept inline: the clustered publish
/// path allocates nothing for up to four routes and two picked queue groups per route.
type RouteTargets<'a> = SmallVec<[(&'a RouteLink, SmallVec<[&'a [u8]; 2]>); 4]>;

fn add_route_target<'a>(targets: &mut RouteTargets<'a>, subscription: &'a RouteSubscription) {
    let link: &RouteLink = &subscription.link;
    let position = match targets
        .iter()
        .position(|(target, _)| std::ptr::eq(*target, link))
    {
        Some(position) => position,
        None => {
            targets.push((link, SmallVec::new()));
            targets.len() - 1
        }
    };
    if let Some(queue) = &subscription.queue {
        targets[position].1.push(queue.as_bytes());
    }
}

impl Router {
    /// `route_matching` in a cluster: local subscribers as usual, route subscribers collected
    /// per route (a queue group's pick is weighted by the members each server announced), then
    /// one RMSG per route.
    pub(super) fn route_clustered(
        &self,
        match_subject: &str,
        result: &nats_subject::MatchResult<Subscriber>,
        publisher: Option<&Arc<ClientShared>>,
        delivery: &Delivery<'_>,
        pending: &mut PendingFlush,
    ) -> usize {
        let mut delivered = 0;
        let mut targets = RouteTargets::new();
        for subscriber in result.plain.iter() {
            match subscriber {
                Subscriber::Route(subscription) => add_route_target(&mut targets, subscription),
                _ => {
                    if self.deliver(publisher, subscriber, delivery, pending) {
                        delivered += 1;
                    }
                }
            }
        }
        for (_, group) in result.queues.iter() {
            if group.is_empty() {
                continue;
            }
            let weight = |subscriber: &Subscriber| match subscriber {
                Subscriber::Route(subscription) => u64::from(subscription.weight()),
                _ => 1,
            };
            let total: u64 = group.iter().map(weight).sum();
            let mut pick = self.next_random() % total.max(1);
            let mut start = 0;
            for (index, subscriber) in group.iter().enumerate() {
                let member_weight = weight(subscriber);
                if pick < member_weight {
                    start = index;
                    break;
                }
                pick -= member_weight;
            }
            for offset in 0..group.len() {
                let subscriber = &group[(start + offset) % group.len()];
                if let Subscriber::Route(subscription) = subscriber {
                    if subscription.link.connection.closing().is_none() {
                        add_route_target(&mut targets, subscription);
                        break;
                    }
                    continue;
                }
                if self.deliver(publisher, subscriber, delivery, pending) {
                    delivered += 1;
                    break;
                }
            }
        }
        if targets.is_empty() {
            return delivered;
        }
        // A JetStream delivery shown under another subject than it is routed by crosses the
        // route under its routing subject; the subject to show rides in the reply,
        // `<$JS.ACK reply>@<subject>` (nats-server's encoding).
        let (subject, reply);
        let routed = if delivery.subject.as_ref() == match_subject.as_bytes() {
            *delivery
        } else {
            subject = Bytes::copy_from_slice(match_subject.as_bytes());
            match delivery
                .reply
                .filter(|reply| reply.starts_with(JETSTREAM_ACK_PREFIX))
            {
                Some(ack) => {
                    reply = Bytes::from([ack.as_ref(), b"@", delivery.subject.as_ref()].concat());
                    Delivery {
                        subject: &subject,
                        reply: Some(&reply),
                        ..*delivery
                    }
                }
                None => Delivery {
                    subject: &subject,
                    ..*delivery
                },
            }
        };
        for (link, queues) in &targets {
            if let Some(stalled) = link.send_message(self.account.as_bytes(), &routed, queues) {
                pending.add_route(&link.connection);
                if stalled {
                    pending.add_stalled(&link.connection);
                }
                delivered += 1;
            }
        }
        delivered
    }

    /// A message that came over a route: local subscribers only (one hop), and of the queue
    /// groups only those the sender named, one local member each.
    pub fn route_from_route(
        &self,
        delivery: &Delivery<'_>,
        queues: &[Bytes],
        pending: &mut PendingFlush,
    ) -> usize {
        let Ok(subject) = std::str::from_utf8(delivery.subject) else {
            return 0;
        };
        // A JetStream delivery: routed by its subject, shown under the one its reply carries
        // after the last `@` (see `route_clustered`).
        let (shown, reply) = match delivery
            .reply
            .filter(|reply| reply.starts_with(JETSTREAM_ACK_PREFIX))
            .and_then(|reply| Some((reply, reply.iter().rposition(|byte| *byte == b'@')?)))
        {
            Some((reply, at)) => (reply.slice(at + 1..), Some(reply.slice(..at))),
            None => (delivery.subject.clone(), delivery.reply.cloned()),
        };
        let delivery = &Delivery {
            subject: &shown,
            reply: reply.as_ref(),
            ..*delivery
        };
        let result = self.sublist.matches(subject);
        let mut delivered = 0;
        for subscriber in result.plain.iter() {
            if matches!(subscriber, Subscriber::Route(_)) || subscriber.is_service_import() {
                continue;
            }
            if self.deliver(None, subscriber, delivery, pending) {
                delivered += 1;
            }
        }
        if queues.is_empty() {
            if delivered == 0 {
                // Sent by a peer that had not yet heard we withdrew the interest.
                for subscription in self.withdrawn.matching(subject) {
                    let subscriber = Subscriber::Internal(subscription);
                    if self.deliver(None, &subscriber, delivery, pending) {
                        delivered += 1;
                    }
                }
            }
            return delivered;
        }
        for (name, group) in result.queues.iter() {
            if !queues.iter().any(|queue| queue.as_ref() == name.as_bytes()) {
                continue;
            }
            let local: Vec<&Subscriber> = group
                .iter()
                .filter(|subscriber| !matches!(subscriber, Subscriber::Route(_)))
                .collect();
            if local.is_empty() {
                continue;
            }
            let start = (self.next_random() % local.len() as u64) as usize;
            for offset in 0..local.len() {
                if self.deliver(
                    None,
                    local[(start + offset) % local.len()],
                    delivery,
                    pending,
                ) {
                    delivered += 1;
                    break;
                }
            }
        }
        delivered
    }
}
