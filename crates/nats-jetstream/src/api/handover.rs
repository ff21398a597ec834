//! The reads a stream's leader receives while it hands its leadership over, answered once
//! someone leads again.
//!
//! A stepdown is answered as soon as the stream stopped leading here; its successor answers
//! the stream's requests once it has applied its election's entry, 20-330 ms later in a debug
//! build. A request about the stream arriving in between (every JetStream server receives
//! every one) was answered by nobody: the old leader no longer leads, the successor not yet,
//! and a replica answers STREAM.INFO only after 2 s without a leader. So the old leader keeps
//! the reads it would have answered ([`is_read`]) until its group says someone answers them
//! again ([`crate::cluster::StreamGroup::handover`], bounded), then publishes each again,
//! unchanged but for the header [`HANDED_OVER`], to the same subject and reply: whoever leads
//! by then answers it, this server too if the transfer failed and it leads again.
//!
//! The successor keeps them too while it is elected but has not yet applied its election's
//! entry (the old leader may have seen that entry committed first), and answers them once it
//! leads.
//!
//! Never twice: a copy is never sent again, and a server that already answered the original (a
//! successor that led by the time the original reached it) recognises the copy by its reply
//! subject ([`Answered`]) and stays silent; a successor answers what it kept as a copy too. Called by the dispatcher (`api/mod.rs`).

use super::clustered::stream_of;
use super::Context;
use crate::cluster::Cluster;
use crate::transport::Message;
use bytes::Bytes;
use jetstream_api::ApiSubject;
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The header that marks a request kept through a handover and published again (its value is
/// the server that kept it).
pub(crate) const HANDED_OVER: &str = "Rnats-Handed-Over";
/// A kept request goes out again after this at the latest, whatever the handover does.
const KEEP_BOUND: Duration = Duration::from_secs(8);
/// How long a server elected leader waits to lead (its election's entry applied, a quorum's
/// acknowledgement) before it answers a read kept meanwhile; dropped after that.
const SUCCESSOR_WAIT: Duration = Duration::from_secs(2);
/// How long an answered read's reply subject is remembered: longer than a kept request waits.
const REMEMBERED: Duration = Duration::from_secs(10);
/// At most this many are remembered (the oldest forgotten first).
const REMEMBERED_MAX: usize = 4096;

/// The requests kept through a handover: the reads a stream's leader answers.
fn is_read(api: &ApiSubject<'_>) -> bool {
    matches!(
        api,
        ApiSubject::StreamInfo { .. }
            | ApiSubject::StreamMsgGet { .. }
            | ApiSubject::ConsumerInfo { .. }
            | ApiSubject::ConsumerNames { .. }
            | ApiSubject::ConsumerList { .. }
    )
}

fn is_copy(headers: Option<&[u8]>) -> bool {
    headers.is_some_and(|block| nats_proto::header_value(block, HANDED_OVER).is_some())
}

/// Keeps `message` (a request this server does not answer) when it is a read of a stream whose
/// leadership this server is handing over, to publish it again once the handover is over, or
/// whose group elected this server, which has not applied its election's entry yet, to answer
/// it here once it leads; whether it was kept.
pub(crate) fn keep(
    context: &Arc<Context>,
    cluster: &dyn Cluster,
    api: &ApiSubject<'_>,
    message: &Message,
) -> bool {
    if !is_read(api) {
        return false;
    }
    let Some(group) = stream_of(api).and_then(|stream| cluster.stream_group(stream)) else {
        return false;
    };
    // Built only for a read kept (every server holding the stream sees every read).
    let copy = || {
        let headers = crate::stream::append_header(
            message.headers.as_deref().unwrap_or_default(),
            HANDED_OVER,
            &context.server_name,
        );
        Message {
            headers: Some(Bytes::from(headers)),
            ..message.clone()
        }
    };
    if let Some(handover) = group.handover() {
        if is_copy(message.headers.as_deref()) {
            return false;
        }
        let (context, copy) = (context.clone(), copy());
        tokio::spawn(async move {
            let _ = tokio::time::timeout(KEEP_BOUND, handover).await;
            context.transport.publish(copy);
        });
        return true;
    }
    // Not the old leader (which the group still names while it hands over).
    let elected = !group.is_leader()
        && group
            .cluster_info()
            .is_some_and(|info| info.leader == context.server_name);
    if !elected {
        return false;
    }
    // Answered here as a copy, so that a copy from the old leader answered here meanwhile
    // leaves it silent.
    let (context, copy) = (context.clone(), copy());
    tokio::spawn(async move {
        if group.wait_for_leader(SUCCESSOR_WAIT).await == Some(true) {
            Box::pin(super::handle_request(&context, copy, Instant::now(), None)).await;
        }
    });
    true
}

/// Called for each request this server is about to answer: notes a read's reply subject, and
/// says whether the request is a kept copy of one answered here already (left unanswered).
pub(crate) fn answered_before(context: &Context, api: &ApiSubject<'_>, message: &Message) -> bool {
    let Some(reply) = message.reply.as_ref().filter(|_| is_read(api)) else {
        return false;
    };
    let seen = context.answered.lock().note(reply);
    seen && is_copy(message.headers.as_deref())
}

/// The reply subjects of the reads answered lately.
#[derive(Default)]
pub(crate) struct Answered {
    order: VecDeque<(Instant, Bytes)>,
    replies: HashSet<Bytes>,
}

impl Answered {
    /// Notes `reply` as answered now; whether it was answered within [`REMEMBERED`] already.
    fn note(&mut self, reply: &Bytes) -> bool {
        let now = Instant::now();
        while let Some((at, _)) = self.order.front() {
            if now.duration_since(*at) < REMEMBERED && self.order.len() < REMEMBERED_MAX {
                break;
            }
            if let Some((_, old)) = self.order.pop_front() {
                self.replies.remove(&old);
            }
        }
        if self.replies.contains(reply) {
            return true;
        }
        self.replies.insert(reply.clone());
        self.order.push_back((now, reply.clone()));
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_answered_lately_is_known_and_the_oldest_are_forgotten() {
        let mut answered = Answered::default();
        assert!(!answered.note(&Bytes::from_static(b"_INBOX.a")));
        assert!(answered.note(&Bytes::from_static(b"_INBOX.a")));
        for n in 0..REMEMBERED_MAX {
            assert!(!answered.note(&Bytes::from(format!("_INBOX.{n}"))));
        }
        assert!(!answered.note(&Bytes::from_static(b"_INBOX.a")));
        assert!(answered.replies.len() <= REMEMBERED_MAX);
    }

    #[test]
    fn a_copy_is_marked_by_its_header() {
        assert!(is_copy(Some(b"NATS/1.0\r\nRnats-Handed-Over: n1\r\n\r\n")));
        assert!(!is_copy(Some(b"NATS/1.0\r\nOther: x\r\n\r\n")));
        assert!(!is_copy(None));
    }
}
