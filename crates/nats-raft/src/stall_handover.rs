//! A leader whose own log cannot write (a full disk or a file-size limit, `log_store.rs`)
//! hands its leadership over from outside its core.
//!
//! The write that waits for space holds openraft's core, so the core's own transfer
//! (`Raft::trigger().transfer_leader`) would wait with it, and without this the group waited
//! for its followers' election timeout (4-8 s) with no leader taking work. Here the request the
//! core would broadcast is built from the last metrics it published (its vote, its followers'
//! matched log ids) and sent to every other voter: each drops this leader's lease, and the
//! follower that holds the most of the log campaigns at once. While the log is stalled this
//! node's own lease holds nothing and it does not lead for the application
//! (`leadership.rs`), so nothing reads or takes work on it as the leader meanwhile.
//!
//! Safe whatever those metrics miss: a request whose vote is no longer the voters' own is
//! ignored by them, and the election decides who may lead (a candidate behind the quorum loses
//! it). The request goes again every [`RESEND`] while the log stays stalled (a lost message, a
//! follower briefly behind); once another leader is elected the voters ignore it.

use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::watch::WatchReceiver;
use openraft::network::{RPCOption, RaftNetworkV2};
use openraft::raft::TransferLeaderRequest;
use openraft::{Raft, ServerState};
use tokio::sync::watch;

use crate::lease::LeaderLease;
use crate::network::{Network, PeerClient};
use crate::state_machine::StateMachineAdapter;
use crate::types::{NodeId, TypeConfig};

/// How often the request goes again while the log stays stalled.
const RESEND: Duration = Duration::from_secs(1);
/// How long one request may take.
const REQUEST_TTL: Duration = Duration::from_secs(1);

pub(crate) struct StallHandover {
    pub(crate) raft: Raft<TypeConfig, StateMachineAdapter>,
    pub(crate) network: Arc<dyn Network>,
    pub(crate) group: Arc<str>,
    pub(crate) node_id: NodeId,
    pub(crate) lease: Arc<LeaderLease>,
}

impl StallHandover {
    /// Watches `stalled` (the log's) until the group's core ends.
    pub(crate) fn spawn(self, mut stalled: watch::Receiver<Option<String>>) {
        tokio::spawn(async move {
            let mut server = self.raft.server_metrics();
            let core_ended = async move { while server.changed().await.is_ok() {} };
            tokio::pin!(core_ended);
            loop {
                tokio::select! {
                    stall = stalled.wait_for(Option::is_some) => if stall.is_err() { return },
                    _ = &mut core_ended => return,
                }
                if self.voters().is_empty() {
                    // A sole voter: nobody to hand over to; it refuses proposals meanwhile.
                    if self.wait_unstalled(&mut stalled, None).await.is_err() {
                        return;
                    }
                    continue;
                }
                self.lease.suspend(true);
                loop {
                    self.hand_over().await;
                    match self.wait_unstalled(&mut stalled, Some(RESEND)).await {
                        Ok(true) => break,
                        Ok(false) => {}
                        Err(()) => return,
                    }
                }
                self.lease.suspend(false);
            }
        });
    }

    /// Waits (at most `wait`) for the log to write again: `Ok(true)` once it does.
    async fn wait_unstalled(
        &self,
        stalled: &mut watch::Receiver<Option<String>>,
        wait: Option<Duration>,
    ) -> Result<bool, ()> {
        let unstalled = async {
            let result = stalled.wait_for(Option::is_none).await.map(|_| ());
            result.map_err(|_| ())
        };
        match wait {
            None => unstalled.await.map(|()| true),
            Some(wait) => match tokio::time::timeout(wait, unstalled).await {
                Ok(result) => result.map(|()| true),
                Err(_) => Ok(false),
            },
        }
    }

    /// The voters other than this node.
    fn voters(&self) -> Vec<NodeId> {
        let metrics = self.raft.metrics();
        let metrics = metrics.borrow_watched();
        metrics
            .membership_config
            .membership()
            .voter_ids()
            .filter(|node| *node != self.node_id)
            .collect()
    }

    /// Sends the transfer to every other voter if this node leads (as its core last said).
    async fn hand_over(&self) {
        let (vote, target, matched) = {
            let metrics = self.raft.metrics();
            let metrics = metrics.borrow_watched();
            if metrics.state != ServerState::Leader {
                return;
            }
            let matched = |node: &NodeId| {
                metrics
                    .replication
                    .as_ref()
                    .and_then(|replication| replication.get(node).cloned().flatten())
            };
            let Some(target) = self
                .voters()
                .into_iter()
                .max_by_key(|node| matched(node).map(|log_id| log_id.index))
            else {
                return;
            };
            (metrics.vote, target, matched(&target))
        };
        tracing::warn!(group = %self.group, to = target, "raft log cannot write: handing the leadership over");
        let request = TransferLeaderRequest::new(vote, target, matched);
        let sends = self.voters().into_iter().map(|voter| {
            let mut client = PeerClient::new(self.group.clone(), voter, self.network.clone());
            let request = request.clone();
            async move {
                let answer = client
                    .transfer_leader(request, RPCOption::new(REQUEST_TTL))
                    .await;
                if let Err(error) = answer {
                    tracing::debug!(to = voter, %error, "leadership transfer not delivered");
                }
            }
        });
        futures::future::join_all(sends).await;
    }
}
