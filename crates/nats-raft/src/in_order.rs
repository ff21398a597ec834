//! In-order delivery of one sender's appends for a transport that hands messages to the target
//! group in its own process (the in-memory networks of the tests).
//!
//! A leader keeps several appends to a follower in flight (`network.rs`, `stream_append`), so a
//! [`crate::Network`] must hand one sender's appends to the target in the order they were sent,
//! whenever the futures it returned are polled: [`InOrder::deliver`] queues the append at once
//! and one task per link submits them in that order ([`RaftGroup::submit_append`]).

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use crate::RaftGroup;

type Queued = (Arc<RaftGroup>, Bytes, oneshot::Sender<Bytes>);

/// One link's (sender, target group) queue of appends.
pub struct InOrder {
    queue: mpsc::UnboundedSender<Queued>,
}

impl Default for InOrder {
    fn default() -> Self {
        Self::new()
    }
}

impl InOrder {
    /// A link; its task runs on the current tokio runtime until the link is dropped.
    pub fn new() -> InOrder {
        let (queue, mut queued) = mpsc::unbounded_channel::<Queued>();
        tokio::spawn(async move {
            while let Some((group, message, reply)) = queued.recv().await {
                let answer = group.submit_append(message).await;
                tokio::spawn(async move {
                    let _ = reply.send(answer.await);
                });
            }
        });
        InOrder { queue }
    }

    /// Queues `message` (an append, [`crate::is_append_request`]) for `group` now; the wait for
    /// its reply (`None`: the link's task is gone).
    pub fn deliver(
        &self,
        group: Arc<RaftGroup>,
        message: Bytes,
    ) -> impl std::future::Future<Output = Option<Bytes>> + Send + 'static {
        let (reply, answer) = oneshot::channel();
        let queued = self.queue.send((group, message, reply)).is_ok();
        async move {
            if !queued {
                return None;
            }
            answer.await.ok()
        }
    }
}
