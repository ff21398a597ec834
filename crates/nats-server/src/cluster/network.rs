//! [`RouteNetwork`]: `nats_raft::Network` over the routes, as request/reply on internal subjects
//! of the system account.
//!
//! - A request to group G on the node with peer id P goes to `$RNATS.RAFT.M.<G>.<P>` with the
//!   reply subject `$RNATS.RAFT.R.<our peer id>.<sequence>`. Each node subscribes its own
//!   request subject and its own reply prefix only, so the messages cross exactly one route.
//!   The prefix is ours, not nats-server's `$NRG`: Go nodes of a mixed cluster never subscribe
//!   it and so never receive our Raft bytes (docs/parity.md).
//! - Order: a leader keeps up to `nats_raft::APPENDS_IN_FLIGHT` appends per (group, follower) on
//!   their way (other requests one at a time); a request crosses the one route between the two
//!   servers, and the receiver hands the requests of one (group, sender) to one task, in arrival
//!   order, which answers the appends in that order too (a transfer-leader request excepted: it
//!   waits for appends from the same sender, see [`serve_inbound`]).
//! - Every server publishes `$RNATS.RAFT.ALIVE` (its peer id) every 500 ms: a server heard from
//!   by nothing else for 3.5 s is hung for its peers ([`SILENT`]).
//! - No interest in the target's request subject (no route to it) is `Unreachable` at once; a
//!   reply that does not come is the caller's timeout (openraft's TTL), and the waiting entry is
//!   dropped with the caller's future.
//! - A request for a group not running here is refused at once, except a vote request: that
//!   waits for the group to start here, at most [`EARLY_VOTE_WAIT`] (a new stream group's first
//!   founder campaigns as it starts, usually before its peers applied the assignment).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use bytes::Bytes;
use nats_jetstream::Message;
use nats_raft::{Network, NetworkError, NodeId, RaftGroup, ReplyFuture};
use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};

use super::peer;
use crate::accounts::Account;
use crate::router::{Delivery, PendingFlush};

/// The subject prefix of every Raft message between rnats servers.
pub const PREFIX: &str = "$RNATS.RAFT";
/// How often the peers' routes are checked for a lost Raft leader.
const PEER_CHECK: std::time::Duration = std::time::Duration::from_millis(100);
/// A peer that sent us nothing for this long is taken as unreachable even with its route up (a
/// hung process: SIGSTOP, a stalled machine). Every server sends [`ALIVE`] every
/// [`ALIVE_EVERY`] (besides its groups' heartbeats, 1 s apart for stream groups), so a server
/// silent this long is hung for its peers: the followers of the groups it led campaign at once
/// instead of waiting out openraft's lease and election timeout (4-8 s).
///
/// A stream group's `lost_quorum` (3 s, `stream_group.rs`) plus nats-raft's `OVERRIDE_MARGIN`
/// (500 ms): the voters of a lost leader campaign, and grant each other votes within openraft's
/// lease (`Network::reachable`), only that long after they last heard from it, whichever way
/// they learnt of the loss (nats-raft's `RaftGroup::leader_unreachable`), so a leader paused or
/// cut off by a blackhole has stopped answering reads by then (its lease runs `lost_quorum`
/// after the last heartbeat a quorum acknowledged, stamped with its send time). At 2 s, with
/// no such wait, an old leader resumed or cut off read what it held while the new one took
/// writes: the KV linearizability test failed 2 to 3 runs in 6 on a stale read; the route-loss
/// path (a blackholed route closed by its pings after 1-1.5 s) still did 1 run in 6-14 until
/// the voters waited out the lease on it too.
pub(super) const SILENT: std::time::Duration = std::time::Duration::from_millis(3_500);
/// The keepalive every rnats server of the cluster subscribes (payload: the sender's peer id).
/// One message per route every [`ALIVE_EVERY`], whatever the number of groups; nats-server
/// nodes do not subscribe it, so it never reaches them.
const ALIVE: &str = "$RNATS.RAFT.ALIVE";
const ALIVE_EVERY: std::time::Duration = std::time::Duration::from_millis(500);
/// How long a vote request for a group not running here waits for it to start before it is
/// refused: below openraft's vote timeout (the election timeout's minimum, 2 s for every group),
/// so a request held to the end is still answered before its campaign gives up. A new stream
/// group's first founder campaigns as soon as it starts the group (openraft's `initialize`
/// elects), and its peers start the group when they apply the assignment, a few to a few hundred
/// ms later: refused at once, that campaign failed, the group had no leader until a founder's
/// election timer expired 2-4 s later (bench/README.md, "R3 stream creation").
const EARLY_VOTE_WAIT: std::time::Duration = std::time::Duration::from_millis(1_500);
/// Names of groups asked for before they ran here, kept at most (then forgotten at once).
const ASKED_EARLY_LIMIT: usize = 4_096;
/// A group name for probing a peer's request subject (`$RNATS.RAFT.M.*.<peer>`).
const PROBE_GROUP: &str = "_probe_";
/// Requests queued for one (group, sender) before more are dropped (the sender retries).
const INBOUND_QUEUE: usize = 1024;

type Waiting = Mutex<HashMap<u64, oneshot::Sender<Bytes>>>;
/// A queued request: its reply subject and its body.
type Request = (Bytes, Bytes);
/// The request queue of each (group, sender peer).
type Inbound = Mutex<HashMap<(String, String), mpsc::Sender<Request>>>;

/// The Raft transport of this server: one for every group it runs.
pub struct RouteNetwork {
    account: Arc<Account>,
    own_peer: String,
    next_sequence: AtomicU64,
    waiting: Arc<Waiting>,
    groups: Mutex<HashMap<String, Arc<RaftGroup>>>,
    /// Woken at every registration (the vote requests held for a group not running yet).
    registered: tokio::sync::Notify,
    inbound: Inbound,
    /// When each peer was last heard from (a request or a reply).
    last_seen: Arc<Mutex<HashMap<String, Instant>>>,
    /// Groups asked for before they ran here: peers already run them (see [`Self::take_asked`]).
    asked_early: Mutex<std::collections::HashSet<String>>,
    runtime: tokio::runtime::Handle,
    /// The request and reply subscriptions, until [`RouteNetwork::stop`] takes them.
    subscriptions: Mutex<Vec<u64>>,
}

impl RouteNetwork {
    /// Subscribes this server's request subject and reply prefix in the system account. Must
    /// run inside the server's runtime.
    pub fn start(account: Arc<Account>, own_peer: String) -> Arc<RouteNetwork> {
        let network = Arc::new(RouteNetwork {
            account,
            own_peer,
            next_sequence: AtomicU64::new(1),
            waiting: Arc::new(Mutex::new(HashMap::new())),
            groups: Mutex::new(HashMap::new()),
            registered: tokio::sync::Notify::new(),
            inbound: Mutex::new(HashMap::new()),
            last_seen: Arc::new(Mutex::new(HashMap::new())),
            asked_early: Mutex::new(std::collections::HashSet::new()),
            runtime: tokio::runtime::Handle::current(),
            subscriptions: Mutex::new(Vec::new()),
        });
        let router = &network.account.router;
        let weak = Arc::downgrade(&network);
        let requests = router.subscribe_internal(
            &format!("{PREFIX}.M.*.{}", network.own_peer),
            None,
            Arc::new(move |message: Message| {
                if let Some(network) = weak.upgrade() {
                    network.request_arrived(message);
                }
            }),
        );
        let weak: Weak<RouteNetwork> = Arc::downgrade(&network);
        let replies = router.subscribe_internal(
            &format!("{PREFIX}.R.{}.*", network.own_peer),
            None,
            Arc::new(move |message: Message| {
                if let Some(network) = weak.upgrade() {
                    network.reply_arrived(message);
                }
            }),
        );
        let weak: Weak<RouteNetwork> = Arc::downgrade(&network);
        let alive = router.subscribe_internal(
            ALIVE,
            None,
            Arc::new(move |message: Message| {
                let Some(network) = weak.upgrade() else {
                    return;
                };
                if let Ok(peer) = std::str::from_utf8(&message.payload) {
                    if peer != network.own_peer && !peer.is_empty() {
                        network.seen(peer);
                    }
                }
            }),
        );
        *network.subscriptions.lock() = vec![requests, replies, alive];
        network.runtime.spawn(watch_peers(Arc::downgrade(&network)));
        network
    }

    /// Stops this server's Raft traffic (JetStream stopped here, possibly to start again in the
    /// same process with the same peer id): its subjects unsubscribed, so peers see it
    /// unreachable at once, and no group reached through it any more.
    pub fn stop(&self) {
        for id in std::mem::take(&mut *self.subscriptions.lock()) {
            self.account.router.unsubscribe_internal(id);
        }
        self.groups.lock().clear();
        self.inbound.lock().clear();
        self.waiting.lock().clear();
    }

    /// Whether [`RouteNetwork::stop`] ran.
    fn stopped(&self) -> bool {
        self.subscriptions.lock().is_empty()
    }

    /// Whether `peer` has a route to us ([`RouteNetwork::routed`]) and has not been silent for
    /// [`SILENT`].
    fn peer_reachable(&self, peer: &str) -> bool {
        let silent = self.last_seen(peer).is_some_and(|at| at.elapsed() > SILENT);
        !silent && self.routed(peer)
    }

    /// Whether `peer` has a route to us: its request subject has interest here.
    pub fn routed(&self, peer: &str) -> bool {
        self.account
            .router
            .has_interest(&format!("{PREFIX}.M.{PROBE_GROUP}.{peer}"))
    }

    /// Delivers inbound messages for `group` to it from now on.
    pub fn register(&self, group: Arc<RaftGroup>) {
        self.groups.lock().insert(group.group().to_string(), group);
        self.registered.notify_waiters();
    }

    /// The group named `group` once it runs here, waiting at most `wait` for its registration
    /// (the request for it counts as asked early, [`Self::take_asked`], if it is not running
    /// yet). `None`: not running here by then.
    async fn running_within(
        &self,
        group: &str,
        wait: std::time::Duration,
    ) -> Option<Arc<RaftGroup>> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut marked = false;
        loop {
            // Enabled before looking, so a registration in between is not missed.
            let registered = self.registered.notified();
            tokio::pin!(registered);
            registered.as_mut().enable();
            if let Some(running) = self.groups.lock().get(group).cloned() {
                return Some(running);
            }
            if !marked {
                self.mark_asked(group);
                marked = true;
            }
            if self.stopped() {
                return None;
            }
            tokio::time::timeout_at(deadline, registered).await.ok()?;
        }
    }

    /// Whether a peer sent `group` a request before it ran here (forgotten once asked; a vote
    /// request held until the group started counts too). Such a group already runs elsewhere:
    /// starting it here with a founding membership would have it campaign at once (openraft's
    /// `initialize` elects), and in a term its leader already holds that campaign wins over the
    /// leader on this node and deposes it, leaving the group leaderless until the leases run
    /// out. Started without one, it follows the leader.
    pub fn take_asked(&self, group: &str) -> bool {
        self.asked_early.lock().remove(group)
    }

    /// Records a request for `group` before it ran here ([`Self::take_asked`]).
    fn mark_asked(&self, group: &str) {
        let mut asked = self.asked_early.lock();
        if asked.len() >= ASKED_EARLY_LIMIT {
            asked.clear();
        }
        asked.insert(group.to_string());
    }

    /// Stops delivering to `group` (it stopped; requests for it are refused from now on).
    pub fn unregister(&self, group: &str) {
        self.groups.lock().remove(group);
    }

    /// When `peer` was last heard from.
    pub fn last_seen(&self, peer: &str) -> Option<Instant> {
        self.last_seen.lock().get(peer).copied()
    }

    /// Records traffic from `peer` (also used for announcements the meta layer receives).
    pub fn seen(&self, peer: &str) {
        self.last_seen
            .lock()
            .insert(peer.to_string(), Instant::now());
    }

    fn request_arrived(self: &Arc<Self>, message: Message) {
        let Some(reply) = message.reply.clone() else {
            return;
        };
        let (Ok(subject), Ok(reply_text)) = (
            std::str::from_utf8(&message.subject),
            std::str::from_utf8(&reply),
        ) else {
            return;
        };
        // $RNATS.RAFT.M.<group>.<target> and $RNATS.RAFT.R.<sender>.<sequence>
        let (Some(group), Some(sender)) = (subject.split('.').nth(3), reply_text.split('.').nth(3))
        else {
            return;
        };
        self.seen(sender);
        let key = (group.to_string(), sender.to_string());
        let mut inbound = self.inbound.lock();
        let queue = inbound.entry(key.clone()).or_insert_with(|| {
            let (queue, receiver) = mpsc::channel(INBOUND_QUEUE);
            self.runtime
                .spawn(serve_inbound(Arc::downgrade(self), key.0.clone(), receiver));
            queue
        });
        if queue.try_send((reply.clone(), message.payload)).is_err() {
            tracing::debug!(group = %key.0, sender = %key.1, "raft inbound queue full: request dropped");
        }
    }

    fn reply_arrived(&self, message: Message) {
        let Some(sequence) = std::str::from_utf8(&message.subject)
            .ok()
            .and_then(|subject| subject.rsplit('.').next())
            .and_then(|text| text.parse::<u64>().ok())
        else {
            return;
        };
        if let Some(waiter) = self.waiting.lock().remove(&sequence) {
            let _ = waiter.send(message.payload);
        }
    }

    fn publish(&self, subject: &[u8], reply: Option<&Bytes>, payload: &Bytes) {
        let subject = Bytes::copy_from_slice(subject);
        let delivery = Delivery {
            subject: &subject,
            reply,
            headers: None,
            payload,
        };
        let mut pending = PendingFlush::default();
        self.account.router.route(None, &delivery, &mut pending);
        pending.flush();
    }
}

/// Sends this server's keepalive ([`ALIVE`]) and watches the peers heard from: when one's route
/// goes (its interest is withdrawn as the route closes: a killed server's at once) or it falls
/// silent, every group it led here is told, so the voters left campaign as soon as its lease has
/// run out (nats-raft's `RaftGroup::leader_unreachable`) without waiting out openraft's lease and
/// an election timeout.
async fn watch_peers(network: Weak<RouteNetwork>) {
    let mut reachable: HashMap<String, bool> = HashMap::new();
    let mut ticks = tokio::time::interval(PEER_CHECK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut alive_sent: Option<Instant> = None;
    loop {
        ticks.tick().await;
        let Some(network) = network.upgrade().filter(|network| !network.stopped()) else {
            return;
        };
        if alive_sent.is_none_or(|at| at.elapsed() >= ALIVE_EVERY) {
            alive_sent = Some(Instant::now());
            let own = Bytes::copy_from_slice(network.own_peer.as_bytes());
            network.publish(ALIVE.as_bytes(), None, &own);
        }
        let peers: Vec<String> = network.last_seen.lock().keys().cloned().collect();
        for peer in peers {
            let now = network.peer_reachable(&peer);
            let before = reachable.insert(peer.clone(), now).unwrap_or(true);
            if before && !now {
                let Some(node) = peer::node_id(&peer) else {
                    continue;
                };
                let groups: Vec<Arc<RaftGroup>> = network.groups.lock().values().cloned().collect();
                tracing::debug!(%peer, groups = groups.len(), "raft peer unreachable");
                for group in groups {
                    group.leader_unreachable(node);
                }
            }
        }
    }
}

/// Answers the requests of one (group, sender), one at a time, in arrival order, except a
/// transfer-leader request: that is answered beside the queue. Its target waits (openraft's
/// `handle_transfer_leader`, up to the election timeout, 2 s) until its log holds the leader's
/// last entry, and the appends that bring that entry come from the same sender: queued behind
/// the transfer, they waited out that timeout, the transfer failed and the group had no leader
/// for 2-4 s (seen at stream leader stepdowns and lame-duck handovers: the target's flushed log
/// one entry short, its "condition failed" logged 2 s after the request reached it).
///
/// Appends are pipelined: each is handed to its group as it arrives (`RaftGroup::submit_append`,
/// in arrival order) and answered once its entries are on disk, in arrival order, so that this
/// node writes and fsyncs one while the leader's next ones arrive (the leader keeps several in
/// flight). Any other request waits until the appends before it are answered.
async fn serve_inbound(
    network: Weak<RouteNetwork>,
    group: String,
    mut requests: mpsc::Receiver<Request>,
) {
    // The appends handed to the group, oldest first: answered in that order (their entries
    // are flushed in that order too, so waiting on the oldest loses nothing).
    let mut appends: VecDeque<PendingAppend> = VecDeque::new();
    loop {
        let room = appends.len() < nats_raft::APPENDS_IN_FLIGHT;
        let next = tokio::select! {
            biased;
            (reply, text) = oldest(&mut appends) => {
                appends.pop_front();
                publish_answer(&network, &reply, &text);
                continue;
            }
            next = requests.recv(), if room => next,
        };
        let Some((reply, payload)) = next else {
            break;
        };
        let Some(network) = network.upgrade() else {
            return;
        };
        if nats_raft::is_transfer_leader_request(&payload) {
            let group = group.clone();
            let runtime = network.runtime.clone();
            runtime.spawn(async move { answer(&network, &group, reply, payload).await });
        } else if nats_raft::is_append_request(&payload) {
            let target = network.groups.lock().get(&group).cloned();
            let pending: PendingAppend = match target {
                Some(target) => {
                    let text = target.submit_append(payload).await;
                    Box::pin(async move { (reply, text.await) })
                }
                None => {
                    network.mark_asked(&group);
                    let text =
                        nats_raft::refused_reply(&format!("no raft group {group} on this server"));
                    Box::pin(std::future::ready((reply, text)))
                }
            };
            appends.push_back(pending);
        } else {
            while let Some(mut pending) = appends.pop_front() {
                let (append_reply, text) = pending.as_mut().await;
                network.publish(&append_reply, None, &text);
            }
            answer(&network, &group, reply, payload).await;
        }
    }
    while let Some(mut pending) = appends.pop_front() {
        let (reply, text) = pending.as_mut().await;
        publish_answer(&network, &reply, &text);
    }
}

/// The oldest append's answer (pending for ever with none). Cancel safe: the append stays first
/// until its answer is taken.
async fn oldest(appends: &mut VecDeque<PendingAppend>) -> (Bytes, Bytes) {
    match appends.front_mut() {
        Some(pending) => pending.as_mut().await,
        None => std::future::pending().await,
    }
}

/// An append handed to its group: the reply subject and the wait for the answer.
type PendingAppend = std::pin::Pin<Box<dyn std::future::Future<Output = (Bytes, Bytes)> + Send>>;

/// Publishes an append's answer, unless the network is gone.
fn publish_answer(network: &Weak<RouteNetwork>, reply: &[u8], text: &Bytes) {
    if let Some(network) = network.upgrade() {
        network.publish(reply, None, text);
    }
}

/// Hands one request to its group and publishes the group's answer to `reply`.
async fn answer(network: &RouteNetwork, group: &str, reply: Bytes, payload: Bytes) {
    let target = if nats_raft::is_vote_request(&payload) {
        network.running_within(group, EARLY_VOTE_WAIT).await
    } else {
        network.groups.lock().get(group).cloned()
    };
    let answer = match target {
        Some(target) => target.handle_message(payload).await,
        None => {
            network.mark_asked(group);
            nats_raft::refused_reply(&format!("no raft group {group} on this server"))
        }
    };
    network.publish(&reply, None, &answer);
}

/// Removes a request's waiting entry when its caller stops waiting (reply, timeout or drop).
struct WaitingEntry {
    waiting: Arc<Waiting>,
    sequence: u64,
}

impl Drop for WaitingEntry {
    fn drop(&mut self) {
        self.waiting.lock().remove(&self.sequence);
    }
}

impl Network for RouteNetwork {
    fn reachable(&self, target: NodeId) -> bool {
        self.peer_reachable(&peer::peer_of(target))
    }

    fn last_heard(&self, target: NodeId) -> Option<tokio::time::Instant> {
        self.last_seen(&peer::peer_of(target))
            .map(tokio::time::Instant::from_std)
    }

    fn send(&self, group: &str, target: NodeId, message: Bytes) -> ReplyFuture {
        let target_peer = peer::peer_of(target);
        let subject = format!("{PREFIX}.M.{group}.{target_peer}");
        if !self.account.router.has_interest(&subject) {
            return Box::pin(async move {
                Err(NetworkError::Unreachable(format!(
                    "no route to peer {target_peer}"
                )))
            });
        }
        let sequence = self.next_sequence.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        self.waiting.lock().insert(sequence, sender);
        let entry = WaitingEntry {
            waiting: self.waiting.clone(),
            sequence,
        };
        let reply = Bytes::from(format!("{PREFIX}.R.{}.{sequence}", self.own_peer));
        self.publish(subject.as_bytes(), Some(&reply), &message);
        let last_seen = self.last_seen.clone();
        Box::pin(async move {
            let _entry = entry;
            let answer = receiver
                .await
                .map_err(|_| NetworkError::Unreachable(format!("peer {target_peer} went away")))?;
            last_seen.lock().insert(target_peer, Instant::now());
            Ok(answer)
        })
    }
}
