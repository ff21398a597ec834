//! Each account's JetStream usage summed over the cluster (nats-server's `jsAccount` remote
//! usage): every server reports what it stores of each account (every replica it holds) and
//! how many API requests of the account it answered (and with an error) to the others on
//! `$JSC.ARU.<account>.<peer>` in the system account, in nats-server's binary form, followed
//! by a trailer of ours that nats-server's reader skips: the consumers of the streams the
//! server leads, in all and per tier. Each server keeps the others' last reports per server
//! and account; their sum goes to the account's usage in JetStream
//! (`JetStream::set_remote_usage`), where `$JS.API.INFO` reports it (bytes, `api` counters
//! and `consumers`, as nats-server's meta leader: its consumer count comes from the meta
//! group's assignments, which here do not hold consumers) and the publish checks hold it to
//! the account's (and tier's) `max_memory`/`max_file`.
//!
//! Cheap by design: a report leaves every [`TICK`] (nats-server's `usageTick`) only for an
//! account whose bytes changed since its last report, and every [`HEARTBEAT_TICKS`] ticks
//! otherwise, so the others know this server is still there. A stopped or cut-off server's
//! last reports keep counting while it is a member of the meta group, as nats-server keeps
//! every server's last report; once it is no longer one (removed, or a wiped server's earlier
//! incarnation replaced) and silent for [`FORGOTTEN_AFTER`], they are forgotten. Started by
//! `cluster::start` beside the meta group; ends when that meta group is no longer the server's.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use nats_jetstream::{
    AccountUsage, ApiCounts, ConsumerCounts, JetStream, Message, RemoteUsage, StoredBytes, TIERS,
};

use super::Meta;
use crate::accounts::Account;
use crate::router::{Delivery, PendingFlush};
use crate::server::Server;

/// nats-server's subject prefix: `$JSC.ARU.<account>.<node>`.
const PREFIX: &str = "$JSC.ARU.";
/// How often changed accounts are reported (nats-server's `usageTick`).
const TICK: Duration = Duration::from_millis(1500);
/// An unchanged account is reported again every this many ticks.
const HEARTBEAT_TICKS: u32 = 4;
/// A server no longer in the meta group whose reports stopped this long ago no longer counts.
const FORGOTTEN_AFTER: Duration = Duration::from_secs(20);
/// Reports waiting for the task; more are dropped (the next report replaces them anyway).
const QUEUE: usize = 1024;

/// nats-server's record sizes: the first record (memory, storage, API total and errors, the
/// count of further records, the tier name's length) and each further one (memory, storage,
/// the name's length), every number little-endian, each followed by its tier name.
const MIN_LEN: usize = 32;
const FIRST_RECORD: usize = 44;
const RECORD: usize = 24;
/// Our trailer after nats-server's records: this tag, then the consumer count in all and per
/// tier (`R1` first), each a little-endian u64.
const CONSUMERS_TAG: &[u8; 4] = b"RNC1";
const CONSUMERS_LEN: usize = CONSUMERS_TAG.len() + 8 * (1 + TIERS);

/// Starts the exchange for `meta` (this server's peer id `own_peer`) over the system account.
pub(super) fn spawn(
    server: &Arc<Server>,
    meta: &Arc<Meta>,
    jetstream: JetStream,
    own_peer: String,
) {
    let system = server.accounts.system().clone();
    let (sender, reports) = tokio::sync::mpsc::channel::<Message>(QUEUE);
    let subscription = system.router.subscribe_internal(
        &format!("{PREFIX}>"),
        None,
        Arc::new(move |message: Message| {
            let _ = sender.try_send(message);
        }),
    );
    let exchange = Exchange {
        system,
        jetstream,
        own_peer,
        sent: HashMap::new(),
        heard: HashMap::new(),
        resend: false,
    };
    tokio::spawn(exchange.run(
        Arc::downgrade(server),
        Arc::downgrade(meta),
        reports,
        subscription,
    ));
}

/// What one server last reported of one account.
struct Report {
    usage: RemoteUsage,
    at: Instant,
}

struct Exchange {
    system: Arc<Account>,
    jetstream: JetStream,
    own_peer: String,
    /// Per account: what was last reported and how many ticks ago.
    sent: HashMap<String, (AccountUsage, u32)>,
    /// Per account, per peer: the others' last reports.
    heard: HashMap<String, BTreeMap<String, Report>>,
    /// A server was heard from for the first time: report everything at the next tick.
    resend: bool,
}

impl Exchange {
    async fn run(
        mut self,
        server: Weak<Server>,
        meta: Weak<Meta>,
        mut reports: tokio::sync::mpsc::Receiver<Message>,
        subscription: u64,
    ) {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + TICK, TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The server's meta slot is set only after `cluster::start` returns: until it held
        // this meta group once, an empty slot is not a stop.
        let mut installed = false;
        loop {
            tokio::select! {
                _ = ticks.tick() => {
                    let (Some(server), Some(meta)) = (server.upgrade(), meta.upgrade()) else {
                        break;
                    };
                    match server.meta.get() {
                        Some(running) if Arc::ptr_eq(&running, &meta) => installed = true,
                        None if !installed => {}
                        _ => break,
                    }
                    self.forget_silent(&meta);
                    self.report();
                }
                report = reports.recv() => match report {
                    Some(report) => self.receive(&report),
                    None => break,
                },
            }
        }
        self.system.router.unsubscribe_internal(subscription);
    }

    /// Reports every account that changed (or is due a heartbeat, or every account when a new
    /// server appeared); an account no longer served here is reported empty once.
    fn report(&mut self) {
        let resend = std::mem::take(&mut self.resend);
        let mut served = Vec::new();
        for usage in self.jetstream.local_usage() {
            served.push(usage.account.clone());
            let due = match self.sent.get_mut(&usage.account) {
                Some((sent, ticks)) => {
                    *ticks += 1;
                    resend || *sent != usage || *ticks >= HEARTBEAT_TICKS
                }
                None => true,
            };
            if due {
                self.publish(&usage);
                self.sent.insert(usage.account.clone(), (usage, 0));
            }
        }
        let gone: Vec<String> = self
            .sent
            .keys()
            .filter(|account| !served.contains(account))
            .cloned()
            .collect();
        for account in gone {
            if let Some((sent, _)) = self.sent.remove(&account) {
                let empty = AccountUsage {
                    total: StoredBytes::default(),
                    tiers: [StoredBytes::default(); TIERS],
                    api: ApiCounts::default(),
                    consumers: ConsumerCounts::default(),
                    ..sent
                };
                self.publish(&empty);
            }
        }
    }

    fn publish(&self, usage: &AccountUsage) {
        let subject = Bytes::from(format!("{PREFIX}{}.{}", usage.account, self.own_peer));
        let payload = Bytes::from(encode(usage));
        let delivery = Delivery {
            subject: &subject,
            reply: None,
            headers: None,
            payload: &payload,
        };
        let mut pending = PendingFlush::default();
        self.system.router.route(None, &delivery, &mut pending);
        pending.flush();
    }

    fn receive(&mut self, message: &Message) {
        let Some((account, peer)) = std::str::from_utf8(&message.subject)
            .ok()
            .and_then(|subject| subject.strip_prefix(PREFIX))
            .and_then(|rest| rest.rsplit_once('.'))
        else {
            return;
        };
        if peer == self.own_peer || account.is_empty() || peer.is_empty() {
            return;
        }
        let Some(usage) = decode(&message.payload) else {
            tracing::warn!("Received corrupt remote usage update");
            return;
        };
        let known = self
            .heard
            .values()
            .any(|reports| reports.contains_key(peer));
        self.resend |= !known;
        let report = Report {
            usage,
            at: Instant::now(),
        };
        let account = account.to_string();
        self.heard
            .entry(account.clone())
            .or_default()
            .insert(peer.to_string(), report);
        self.apply(&account);
    }

    /// Drops the reports of servers not heard from for [`FORGOTTEN_AFTER`] that are no longer
    /// voters or learners of the meta group.
    fn forget_silent(&mut self, meta: &Meta) {
        let status = meta.group().status();
        let member = |peer: &str| {
            super::peer::node_id(peer).is_some_and(|node| {
                status.voters.contains(&node) || status.learners.contains(&node)
            })
        };
        let mut changed = Vec::new();
        for (account, reports) in &mut self.heard {
            let before = reports.len();
            reports.retain(|peer, report| report.at.elapsed() < FORGOTTEN_AFTER || member(peer));
            if reports.len() != before {
                changed.push(account.clone());
            }
        }
        for account in changed {
            self.apply(&account);
        }
        self.heard.retain(|_, reports| !reports.is_empty());
    }

    /// Hands the sum of the others' reports of `account` to JetStream.
    fn apply(&self, account: &str) {
        let mut sum = RemoteUsage::default();
        for report in self.heard.get(account).into_iter().flat_map(|r| r.values()) {
            sum.add(&report.usage);
        }
        self.jetstream.set_remote_usage(account, &sum);
    }
}

fn add(sum: &mut StoredBytes, bytes: StoredBytes) {
    sum.memory = sum.memory.saturating_add(bytes.memory);
    sum.storage = sum.storage.saturating_add(bytes.storage);
}

/// nats-server's usage update: one record for an untiered account (tier name empty), one per
/// tier (`R1`..`R5`) otherwise, the first carrying the API counters; then our consumer
/// trailer.
fn encode(usage: &AccountUsage) -> Vec<u8> {
    let records: Vec<(String, StoredBytes)> = if usage.tiered {
        (0..TIERS)
            .map(|index| (format!("R{}", index + 1), usage.tiers[index]))
            .collect()
    } else {
        vec![(String::new(), usage.total)]
    };
    let mut out = Vec::with_capacity(FIRST_RECORD + records.len() * (RECORD + 2) + CONSUMERS_LEN);
    for (index, (tier, bytes)) in records.iter().enumerate() {
        out.extend_from_slice(&(bytes.memory as u64).to_le_bytes());
        out.extend_from_slice(&(bytes.storage as u64).to_le_bytes());
        if index == 0 {
            out.extend_from_slice(&usage.api.total.to_le_bytes());
            out.extend_from_slice(&usage.api.errors.to_le_bytes());
            out.extend_from_slice(&((records.len() - 1) as u32).to_le_bytes());
        }
        out.extend_from_slice(&(tier.len() as u64).to_le_bytes());
        out.extend_from_slice(tier.as_bytes());
    }
    out.extend_from_slice(CONSUMERS_TAG);
    out.extend_from_slice(&usage.consumers.total.to_le_bytes());
    for count in usage.consumers.tiers {
        out.extend_from_slice(&count.to_le_bytes());
    }
    out
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let field = bytes.get(at..at + 8)?;
    Some(u64::from_le_bytes(field.try_into().ok()?))
}

/// Reads a usage update into the account's total and its tiers (`R1` first), its API counters
/// and (from our trailer; none in nats-server's) its consumers; a record of no tier (an
/// untiered account) counts in the total only, one of a tier in both. `None` for a malformed
/// update.
fn decode(message: &[u8]) -> Option<RemoteUsage> {
    if message.len() < MIN_LEN {
        return None;
    }
    let mut usage = RemoteUsage {
        api: ApiCounts {
            total: u64_at(message, 16)?,
            errors: u64_at(message, 24)?,
        },
        ..RemoteUsage::default()
    };
    let (total, tiers) = (&mut usage.total, &mut usage.tiers);
    let mut count = |tier: &[u8], memory: u64, storage: u64| {
        let bytes = StoredBytes {
            memory: memory as i64,
            storage: storage as i64,
        };
        add(total, bytes);
        let index = std::str::from_utf8(tier)
            .ok()
            .and_then(|tier| tier.strip_prefix('R'))
            .and_then(|replicas| replicas.parse::<usize>().ok())
            .filter(|replicas| (1..=TIERS).contains(replicas));
        if let Some(index) = index {
            add(&mut tiers[index - 1], bytes);
        }
    };
    let (memory, storage) = (u64_at(message, 0)?, u64_at(message, 8)?);
    if message.len() < FIRST_RECORD {
        count(b"", memory, storage);
        return Some(usage);
    }
    let further = u32::from_le_bytes(message.get(32..36)?.try_into().ok()?);
    let length = usize::try_from(u64_at(message, 36)?).ok()?;
    let tier = message.get(FIRST_RECORD..FIRST_RECORD.checked_add(length)?)?;
    count(tier, memory, storage);
    let mut rest = &message[FIRST_RECORD + length..];
    for _ in 0..further {
        let (memory, storage) = (u64_at(rest, 0)?, u64_at(rest, 8)?);
        let length = usize::try_from(u64_at(rest, 16)?).ok()?;
        let tier = rest.get(RECORD..RECORD.checked_add(length)?)?;
        count(tier, memory, storage);
        rest = &rest[RECORD + length..];
    }
    if let Some(trailer) = rest
        .strip_prefix(CONSUMERS_TAG.as_slice())
        .filter(|trailer| trailer.len() >= CONSUMERS_LEN - CONSUMERS_TAG.len())
    {
        usage.consumers.total = u64_at(trailer, 0)?;
        for (index, count) in usage.consumers.tiers.iter_mut().enumerate() {
            *count = u64_at(trailer, 8 * (index + 1))?;
        }
    }
    Some(usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(memory: i64, storage: i64) -> StoredBytes {
        StoredBytes { memory, storage }
    }

    #[test]
    fn an_update_reads_back_as_written() {
        let mut tiers = [StoredBytes::default(); TIERS];
        tiers[0] = bytes(10, 200);
        tiers[2] = bytes(0, 3000);
        let consumers = ConsumerCounts {
            total: 3,
            tiers: [2, 0, 1, 0, 0],
        };
        let api = ApiCounts {
            total: 17,
            errors: 4,
        };
        let tiered = AccountUsage {
            account: "A".into(),
            tiered: true,
            total: bytes(10, 3200),
            tiers,
            api,
            consumers,
        };
        let expected = RemoteUsage {
            total: bytes(10, 3200),
            tiers,
            api,
            consumers,
        };
        assert_eq!(decode(&encode(&tiered)), Some(expected));
        let flat = AccountUsage {
            tiered: false,
            ..tiered
        };
        let encoded = encode(&flat);
        // nats-server's layout: 44 bytes and the empty tier name, then our trailer (which
        // nats-server's reader leaves unread).
        assert_eq!(encoded.len(), FIRST_RECORD + CONSUMERS_LEN);
        assert_eq!(u64_at(&encoded, 16), Some(17));
        assert_eq!(u64_at(&encoded, 24), Some(4));
        let none = [StoredBytes::default(); TIERS];
        let flat_expected = RemoteUsage {
            tiers: none,
            ..expected
        };
        assert_eq!(decode(&encoded), Some(flat_expected));
        // nats-server's own update (no trailer): no consumers.
        let theirs = decode(&encoded[..FIRST_RECORD]);
        assert_eq!(
            theirs.map(|usage| usage.consumers),
            Some(ConsumerCounts::default())
        );
        assert_eq!(theirs.map(|usage| usage.api), Some(api));
    }

    #[test]
    fn a_short_or_overlong_update_is_refused() {
        assert_eq!(decode(&[0; 31]), None);
        assert_eq!(decode(&[0; 32]).map(|usage| usage.total), Some(bytes(0, 0)));
        let mut lying = vec![0u8; FIRST_RECORD];
        lying[36] = 200;
        assert_eq!(decode(&lying), None);
        let mut further = vec![0u8; FIRST_RECORD];
        further[32] = 1;
        assert_eq!(decode(&further), None);
    }
}
