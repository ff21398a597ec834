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
//! A copy may be kept again, by a server that hands its own leadership over when the copy
//! reaches it (stepped down again at once), or by the successor: [`HANDED_OVER`] names the
//! servers that kept it, and no server keeps it twice nor any copy more than [`MAX_KEEPERS`]
//! servers (so a read waits [`MAX_KEPT`] at the most). A successor (or a leader whose quorum's
//! word is late) that does not come to lead within [`SUCCESSOR_WAIT`], or sees another lead
//! steadily, sends what it kept on too: whoever leads by then answers it, or a
//! replica of a leaderless group gives nats-server's answer for one (the dispatcher's leaderless
//! paths), as for any read reaching it then.
//!
//! Never twice: a server that already answered the original (a successor that led by the time
//! the original reached it) recognises each copy by its reply subject ([`Answered`], remembered
//! longer than any copy waits) and stays silent; a successor answers what it kept as a copy
//! too. A copy can overtake its original (the old leader delivers the original to its own API
//! queue before its route forwarding runs): a server about to answer a copy whose original it
//! has not seen waits for the original first ([`overtook_original`]). Called by the dispatcher
//! (`api/mod.rs`).

use super::clustered::stream_of;
use super::Context;
use crate::cluster::Cluster;
use crate::transport::Message;
use bytes::Bytes;
use jetstream_api::ApiSubject;
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The header that marks a request kept through a handover and published again (its value
/// names the servers that kept it, separated by blanks).
pub(crate) const HANDED_OVER: &str = "Rnats-Handed-Over";
/// A kept request goes out again after this at the latest, whatever the handover does.
const KEEP_BOUND: Duration = Duration::from_secs(8);
/// How long a server the group names leader waits to lead (its election's entry applied, a
/// quorum's acknowledgement) before it answers a read kept meanwhile; sent on after that, or as
/// soon as another server leads steadily. As long as any keeper keeps a read: a leader whose
/// quorum's word comes late on a loaded machine lapses for seconds in the same term (2.6 s at
/// load 20, a `stepdown_reads` run whose 140 reads kept with the 2 s wait this had were all
/// sent on to that same lapsed leader and dropped), and answers again once it is heard.
const SUCCESSOR_WAIT: Duration = KEEP_BOUND;
/// At most this many servers keep one read, one after the other.
const MAX_KEEPERS: usize = 2;
/// The longest a read is kept, over all its keepers.
const MAX_KEPT: Duration = Duration::from_secs(KEEP_BOUND.as_secs() * MAX_KEEPERS as u64);
/// How long an answered read's reply subject is remembered: longer than a kept request waits.
const REMEMBERED: Duration = Duration::from_secs(MAX_KEPT.as_secs() + 4);
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

/// The servers that kept a copy (none for an original).
fn keepers(headers: Option<&[u8]>) -> Vec<&[u8]> {
    headers
        .and_then(|block| nats_proto::header_value(block, HANDED_OVER))
        .map(|value| {
            value
                .split(u8::is_ascii_whitespace)
                .filter(|name| !name.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `server` may keep a request with these headers: an original, or a copy it did not
/// keep before and fewer than [`MAX_KEEPERS`] did.
fn may_keep(headers: Option<&[u8]>, server: &str) -> bool {
    let keepers = keepers(headers);
    keepers.len() < MAX_KEEPERS && !keepers.contains(&server.as_bytes())
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
    if !may_keep(message.headers.as_deref(), &context.server_name)
        || answered_here(context, message)
    {
        return false;
    }
    // Built only for a read kept (every server holding the stream sees every read).
    let copy = || {
        let block = message.headers.as_deref().unwrap_or_default();
        let mut kept_by = keepers(message.headers.as_deref())
            .into_iter()
            .map(String::from_utf8_lossy)
            .collect::<Vec<_>>()
            .join(" ");
        if !kept_by.is_empty() {
            kept_by.push(' ');
        }
        kept_by.push_str(&context.server_name);
        let headers = crate::stream::set_header(block, HANDED_OVER, &kept_by);
        Message {
            headers: Some(Bytes::from(headers)),
            ..message.clone()
        }
    };
    if let Some(handover) = group.handover() {
        let (context, copy) = (context.clone(), copy());
        tokio::spawn(async move {
            let _ = tokio::time::timeout(KEEP_BOUND, handover).await;
            context.transport.publish(copy);
        });
        return true;
    }
    // Not the old leader (which the group still names while it hands over): a successor, or a
    // leader whose quorum's word is late.
    let elected = !group.is_leader()
        && group
            .cluster_info()
            .is_some_and(|info| info.leader == context.server_name);
    if !elected {
        return false;
    }
    // Answered here as a copy, so that a copy from the old leader answered here meanwhile
    // leaves it silent. Another leading steadily, or nobody within the wait: sent on, for
    // whoever leads by then (a leaderless group's replicas answer it as nats-server's do).
    let (context, copy) = (context.clone(), copy());
    tokio::spawn(async move {
        if group.wait_for_leader(SUCCESSOR_WAIT).await == Some(true) {
            Box::pin(super::handle_request(&context, copy, Instant::now(), None)).await;
        } else if !answered_here(&context, &copy) {
            context.transport.publish(copy);
        }
    });
    true
}

/// Whether this server answered the read already (its original or a copy): one it answered is
/// never kept nor sent on, or the next leader would answer it a second time (with stepdowns
/// 2.2 s apart, a successor's kept read answered through the old leader's copy and sent on when
/// its wait ended after the next stepdown would be answered again there).
fn answered_here(context: &Context, message: &Message) -> bool {
    message
        .reply
        .as_ref()
        .is_some_and(|reply| context.answered.lock().contains(reply))
}

/// How long a copy that reached this server before its original waits for it (the original
/// then answered, the copy silent) before it is answered itself.
const ORIGINAL_WAIT: Duration = Duration::from_secs(1);

/// Notes a read's original (not a copy) as seen here, for [`overtook_original`].
pub(crate) fn note_original(context: &Context, api: &ApiSubject<'_>, message: &Message) {
    if let Some(reply) = message.reply.as_ref().filter(|_| is_read(api)) {
        if !is_copy(message.headers.as_deref()) {
            context.seen.lock().note(reply);
        }
    }
}

/// A copy this server is about to answer whose original has not reached it yet: the old leader
/// published the copy before its own route forwarding of the original had run (the original
/// is delivered locally first; a preempted reader forwarded it 6 ms after the copy at load 12),
/// and the original answered after the copy would be answered twice (originals are never
/// silenced: a client may reuse a reply subject). Waits here, up to [`ORIGINAL_WAIT`], for the
/// original, then handles the copy again: silent if the original was answered here meanwhile.
/// Whether it was taken aside.
pub(crate) fn overtook_original(
    context: &Arc<Context>,
    api: &ApiSubject<'_>,
    message: &Message,
) -> bool {
    let Some(reply) = message.reply.clone().filter(|_| is_read(api)) else {
        return false;
    };
    if !is_copy(message.headers.as_deref()) || context.seen.lock().contains(&reply) {
        return false;
    }
    let (context, copy) = (context.clone(), message.clone());
    tokio::spawn(async move {
        let deadline = Instant::now() + ORIGINAL_WAIT;
        while Instant::now() < deadline && !context.seen.lock().contains(&reply) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Handled again as if its original had come: never taken aside twice.
        context.seen.lock().note(&reply);
        Box::pin(super::handle_request(&context, copy, Instant::now(), None)).await;
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
    let copy = is_copy(message.headers.as_deref());
    if seen {
        tracing::debug!(
            "JetStream API read to {} answered here before; this one a copy: {copy}",
            String::from_utf8_lossy(reply)
        );
    }
    seen && copy
}

/// Who kept the request, for the dispatcher's debug lines (empty for an original).
pub(crate) fn kept_by(message: &Message) -> String {
    keepers(message.headers.as_deref())
        .into_iter()
        .map(String::from_utf8_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The reply subjects of the reads answered lately.
#[derive(Default)]
pub(crate) struct Answered {
    order: VecDeque<(Instant, Bytes)>,
    replies: HashSet<Bytes>,
}

impl Answered {
    /// Whether `reply` was noted (lately: one older than [`REMEMBERED`] may still be known).
    fn contains(&self, reply: &Bytes) -> bool {
        self.replies.contains(reply)
    }

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
    fn a_copy_is_kept_by_two_servers_at_most_and_by_each_once() {
        assert!(may_keep(None, "n1"));
        assert!(may_keep(Some(b"NATS/1.0\r\nOther: x\r\n\r\n"), "n1"));
        let once = b"NATS/1.0\r\nRnats-Handed-Over: n1\r\n\r\n";
        assert_eq!(keepers(Some(once)), vec![b"n1".as_slice()]);
        assert!(!may_keep(Some(once), "n1"));
        assert!(may_keep(Some(once), "n2"));
        let twice = b"NATS/1.0\r\nRnats-Handed-Over: n1 n2\r\n\r\n";
        assert_eq!(keepers(Some(twice)).len(), 2);
        assert!(!may_keep(Some(twice), "n3"));
    }

    #[test]
    fn a_copy_is_marked_by_its_header() {
        assert!(is_copy(Some(b"NATS/1.0\r\nRnats-Handed-Over: n1\r\n\r\n")));
        assert!(!is_copy(Some(b"NATS/1.0\r\nOther: x\r\n\r\n")));
        assert!(!is_copy(None));
    }
}
