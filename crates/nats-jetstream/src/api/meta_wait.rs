//! A request that needs the meta group, reaching a server that sees no meta leader, waits for
//! one before it is answered 10008 "JetStream system temporarily unavailable".
//!
//! During a meta election (a META.LEADER.STEPDOWN, a leader lost) every JetStream server
//! receives every request. nats-server answers 10008 from each server that sees no leader
//! (`isLeaderless`) while the new leader answers the same request: a client may take the 10008
//! first for a create that was applied. Here such a request, reaching a server that sees no
//! working meta leader ([`crate::cluster::Cluster::meta_leader_missing`]), waits aside, up to
//! [`META_LEADER_WAIT`], for it to see one, then goes back to its queue
//! ([`super::queue::ApiQueues::requeue_waited`]) to be handled as any other: answered by
//! whoever answers it now (the new leader, the stream's leader), the others silent, or
//! answered 10008 if there is still no leader (silent while the meta group has run here for
//! less than its lost-quorum interval, as before). A candidate that wins the election answers
//! what reached it while it campaigned. The wait never holds the queues: the next requests are
//! served meanwhile. Called by the dispatcher (`api/mod.rs`).

use super::queue::ApiQueues;
use super::Context;
use crate::cluster::Cluster;
use crate::transport::Message;
use std::sync::Arc;
use std::time::Duration;

/// How long a request waits for a meta leader before it is answered 10008: longer than an
/// election after a stepdown or a leader's loss takes (well under a second once a voter
/// campaigns; 3 s from the transfer at load 28, where the 2 s this was gave a 10008 beside the
/// new leader's success for the same create), as long as a leader goes without a quorum's
/// word before it answers 10008 (`META_QUORUM_LOST`), short against a client's timeout.
pub(crate) const META_LEADER_WAIT: Duration = Duration::from_secs(4);

/// Waits aside for a meta leader, then queues `message` again.
pub(crate) fn wait_for_meta_leader(
    queues: &Arc<ApiQueues>,
    context: &Arc<Context>,
    cluster: Arc<dyn Cluster>,
    message: Message,
) {
    let (queues, context) = (queues.clone(), context.clone());
    tokio::spawn(async move {
        let began = std::time::Instant::now();
        let seen = cluster.meta_leader_seen_within(META_LEADER_WAIT).await;
        super::api_debug!(
            String::from_utf8_lossy(&message.subject),
            message.reply.clone().unwrap_or_default(),
            "waited {:?} for a meta leader (seen: {seen}): requeued; meta: {}",
            began.elapsed(),
            cluster.meta_view()
        );
        queues.requeue_waited(&context, message);
    });
}
