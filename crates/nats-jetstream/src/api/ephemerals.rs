//! Ephemeral consumers of a replicated stream, found where they run. An ephemeral is R1 and is
//! not recorded in its stream's group: it runs on the server that led the stream when it was
//! created, and keeps running there when the stream's leadership moves. The stream's leader,
//! which answers every consumer request, asks the stream's other servers for the ephemerals
//! it does not run itself ("probes"), as nats-server's stream leader asks the consumers' hosts:
//!
//! - CONSUMER.INFO of a consumer unknown here: the host answers with its info (its `cluster`
//!   naming the host), the leader passes it on; nobody has it: 10014.
//! - CONSUMER.DELETE of a consumer unknown here: the host deletes it (its delete advisory
//!   included) and says so, the leader answers success.
//! - CONSUMER.NAMES / LIST: the hosts' ephemerals are added to the leader's own, once each.
//! - PAUSE, UNPIN, RESET, LEADER.STEPDOWN: the host answers them itself
//!   (`clustered::answers_here`); the leader, asked about a consumer it does not run, stays
//!   silent when a host says it runs it (an INFO probe) and answers 10014 otherwise.
//!
//! A probe is the API request itself (`$JS.API.CONSUMER.INFO|DELETE.<stream>.<consumer>`, or
//! `CONSUMER.LIST.<stream>`: a client's permissions for the request cover its probe too)
//! carrying the header [`PROBE_HEADER`] (`<what> <asking server>`) and the asker's inbox; every
//! server of the stream but the asker answers it, each with what it runs (often nothing), so
//! the asker waits for as many answers as the stream has other servers online, bounded by
//! [`PROBE_WAIT`] (a dead server never answers). Probes are answered on a task of their own
//! ([`super::queue`]), never behind the API queues, so two leaders probing each other never
//! wait on each other. An R1 stream has no group and is never probed: its server runs all its
//! consumers. Used by `consumers.rs`; knows the cluster only through
//! [`crate::cluster::Cluster`].

use super::Context;
use crate::transport::Message;
use bytes::Bytes;
use jetstream_api::{ApiSubject, ConsumerInfo};
use std::time::Duration;

/// The header that makes a consumer request a probe.
pub(crate) const PROBE_HEADER: &str = "Rnats-Ephemeral-Probe";
/// How long the leader waits for the other servers' answers.
const PROBE_WAIT: Duration = Duration::from_secs(1);

/// What a probe asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ask {
    Info,
    Delete,
    List,
}

impl Ask {
    fn word(self) -> &'static str {
        match self {
            Ask::Info => "info",
            Ask::Delete => "delete",
            Ask::List => "list",
        }
    }

    fn parse(word: &str) -> Option<Ask> {
        match word {
            "info" => Some(Ask::Info),
            "delete" => Some(Ask::Delete),
            "list" => Some(Ask::List),
            _ => None,
        }
    }
}

/// One server's answer to a probe: the ephemerals it runs that were asked for, and whether it
/// deleted the one a delete probe named.
#[derive(serde::Serialize, serde::Deserialize, Default)]
#[serde(default)]
struct ProbeAnswer {
    consumers: Vec<ConsumerInfo>,
    deleted: bool,
}

/// What a probe asks and the server asking, when `headers` make the request one.
fn probe_of(headers: Option<&[u8]>) -> Option<(Ask, &str)> {
    let value = nats_proto::header_value(headers?, PROBE_HEADER)?;
    let (word, asker) = std::str::from_utf8(value).ok()?.trim().split_once(' ')?;
    Some((Ask::parse(word)?, asker))
}

/// Whether `message` is a probe (the API queues hand it to [`answer_probe`] instead of queuing).
pub(crate) fn is_probe(message: &Message) -> bool {
    probe_of(message.headers.as_deref()).is_some()
}

/// Answers a probe with the ephemerals (consumers not in the stream's group) this server runs:
/// their infos, or the deletion of the one named. The asker's own probe is not answered.
pub(crate) async fn answer_probe(context: &Context, message: Message) {
    let Some((ask, asker)) = probe_of(message.headers.as_deref()) else {
        return;
    };
    let Some(reply) = message.reply.clone().filter(|reply| !reply.is_empty()) else {
        return;
    };
    if asker == context.server_name || !context.enabled {
        return;
    }
    let Ok(subject) = std::str::from_utf8(&message.subject) else {
        return;
    };
    let (stream_name, name) = match ApiSubject::parse(subject) {
        Some(ApiSubject::ConsumerInfo { stream, consumer }) if ask == Ask::Info => {
            (stream, Some(consumer))
        }
        Some(ApiSubject::ConsumerDelete { stream, consumer }) if ask == Ask::Delete => {
            (stream, Some(consumer))
        }
        Some(ApiSubject::ConsumerList { stream }) if ask == Ask::List => (stream, None),
        _ => return,
    };
    let mut answer = ProbeAnswer::default();
    if let Some(stream) = context.registry.get(stream_name) {
        let consumers = context.registry.consumers(&stream);
        let hosted = |name: &str| {
            consumers
                .get(name)
                .filter(|consumer| consumer.replication.is_none())
        };
        match (ask, name) {
            (Ask::Info, Some(name)) => {
                if let Some(consumer) = hosted(name) {
                    let mut info = consumer.info_in_order(&stream).await;
                    info.cluster = super::consumers::consumer_cluster_info(context, &consumer);
                    answer.consumers.push(info);
                }
            }
            (Ask::Delete, Some(name)) => {
                let _guard = context.registry.admin_lock.lock().await;
                if hosted(name).is_some()
                    && crate::consumer::stop_consumer(&stream, &consumers, name, true).await
                {
                    super::consumers::advise_consumer_deleted(context, stream_name, name);
                    answer.deleted = true;
                }
            }
            _ => {
                for consumer in consumers.all() {
                    if consumer.replication.is_none() {
                        let mut info = consumer.info(&stream);
                        info.cluster = super::consumers::consumer_cluster_info(context, &consumer);
                        answer.consumers.push(info);
                    }
                }
            }
        }
    }
    context.publish_json(reply, &answer);
}

/// Asks the stream's other servers (none for a stream without a group) and gathers their
/// answers: all of them, or up to the first that has what `enough` looks for, within
/// [`PROBE_WAIT`].
async fn ask(
    context: &Context,
    stream: &str,
    subject: String,
    ask: Ask,
    enough: impl Fn(&ProbeAnswer) -> bool,
) -> Vec<ProbeAnswer> {
    let mut gathered = Vec::new();
    let Some(cluster) = context.cluster.get() else {
        return gathered;
    };
    let Some(group) = cluster.stream_group(stream) else {
        return gathered;
    };
    // The servers expected to answer: the group's replicas not known to be offline (a server
    // killed does not hold the asker for the whole wait), else every other server of the stream.
    let others = match group.cluster_info() {
        Some(info) => info
            .replicas
            .iter()
            .filter(|replica| !replica.offline)
            .count(),
        None => cluster
            .stream(stream)
            .map_or(0, |assigned| assigned.servers.len().saturating_sub(1)),
    };
    if others == 0 {
        return gathered;
    }
    let inbox = format!("_INBOX.{}", crate::nuid::next_id());
    let (sender, mut answers) = tokio::sync::mpsc::unbounded_channel::<Message>();
    let id = context.transport.subscribe(
        &inbox,
        None,
        std::sync::Arc::new(move |message: Message| {
            let _ = sender.send(message);
        }),
    );
    let headers = format!(
        "NATS/1.0\r\n{PROBE_HEADER}: {} {}\r\n\r\n",
        ask.word(),
        context.server_name
    );
    context.transport.publish(Message {
        subject: Bytes::from(subject),
        reply: Some(Bytes::from(inbox)),
        headers: Some(Bytes::from(headers)),
        payload: Bytes::new(),
    });
    let deadline = tokio::time::Instant::now() + PROBE_WAIT;
    let mut heard = 0;
    while heard < others {
        let Ok(Some(message)) = tokio::time::timeout_at(deadline, answers.recv()).await else {
            break;
        };
        heard += 1;
        let Ok(answer) = serde_json::from_slice::<ProbeAnswer>(&message.payload) else {
            continue;
        };
        let done = enough(&answer);
        gathered.push(answer);
        if done {
            break;
        }
    }
    context.transport.unsubscribe(id);
    gathered
}

/// The info of the ephemeral `name` of `stream` from the server running it, if another does.
pub(crate) async fn remote_info(
    context: &Context,
    stream: &str,
    name: &str,
) -> Option<ConsumerInfo> {
    let subject = format!("$JS.API.CONSUMER.INFO.{stream}.{name}");
    let found = |answer: &ProbeAnswer| answer.consumers.iter().any(|info| info.name == name);
    ask(context, stream, subject, Ask::Info, found)
        .await
        .into_iter()
        .flat_map(|answer| answer.consumers)
        .find(|info| info.name == name)
}

/// Whether another server of `stream` runs the ephemeral `name` (it answers the requests
/// `clustered::answers_here` leaves to it: PAUSE, UNPIN, RESET, LEADER.STEPDOWN).
pub(crate) async fn runs_elsewhere(context: &Context, stream: &str, name: &str) -> bool {
    remote_info(context, stream, name).await.is_some()
}

/// Has the server running the ephemeral `name` of `stream` delete it; whether one did.
pub(crate) async fn remote_delete(context: &Context, stream: &str, name: &str) -> bool {
    let subject = format!("$JS.API.CONSUMER.DELETE.{stream}.{name}");
    ask(context, stream, subject, Ask::Delete, |answer| {
        answer.deleted
    })
    .await
    .iter()
    .any(|answer| answer.deleted)
}

/// The infos of the ephemerals of `stream` the other servers run.
pub(crate) async fn remote_list(context: &Context, stream: &str) -> Vec<ConsumerInfo> {
    let subject = format!("$JS.API.CONSUMER.LIST.{stream}");
    ask(context, stream, subject, Ask::List, |_| false)
        .await
        .into_iter()
        .flat_map(|answer| answer.consumers)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_is_told_by_its_header() {
        let block = format!("NATS/1.0\r\n{PROBE_HEADER}: delete n-1\r\n\r\n");
        assert_eq!(probe_of(Some(block.as_bytes())), Some((Ask::Delete, "n-1")));
        assert_eq!(probe_of(None), None);
        assert_eq!(probe_of(Some(b"NATS/1.0\r\nOther: x\r\n\r\n")), None);
        let unknown = format!("NATS/1.0\r\n{PROBE_HEADER}: pause n-1\r\n\r\n");
        assert_eq!(probe_of(Some(unknown.as_bytes())), None);
    }
}
