//! Applying the meta group's stream assignments on this server (called by the engine,
//! `JetStream::apply_stream_assignment` and friends, from the meta group's apply thread, in log
//! order): the server a stream is placed on creates or updates it ([`apply_stream_assignment`];
//! a replicated stream's peers start its replica and Raft group, and its first leader answers),
//! removes it ([`apply_stream_removal`]) or drops its replica when the stream was placed
//! elsewhere ([`drop_replica`]), and answers the request the assignment carries. The meta
//! leader's side, checking and proposing the requests, is [`super::clustered`].

use super::streams::{build_stream_info, InfoDetail, InfoView};
use super::{Context, Request};
use crate::cluster::{StreamAssignment, StreamChange};
use bytes::Bytes;
use jetstream_api::advisory::ActionKind;
use jetstream_api::{
    errors, ApiError, StreamCreateResponse, StreamUpdateResponse, SuccessResponse,
    STREAM_DELETE_RESPONSE_TYPE,
};
use std::sync::Arc;
use std::time::Duration;

/// Creates the assigned stream and returns once its files are durable (a new file stream's
/// creation sync, `storage::sync_created`), so it is advised and answered, as the single
/// server's STREAM.CREATE, only when a power cut can no longer take it.
async fn create_durably(
    context: &Context,
    assignment: &StreamAssignment,
) -> Result<(std::sync::Arc<crate::stream::Stream>, bool), ApiError> {
    let (stream, did_create, pending) = context
        .registry
        .create_stream_at(&assignment.config, false, Some(assignment.created))
        .await?;
    crate::stream::storage::sync_created(pending)
        .await
        .map_err(|error| errors::STREAM_CREATE.with_err(error))?;
    Ok((stream, did_create))
}

/// Applies a stream assignment on the server that holds the stream: creates or updates it, and
/// answers the request when the assignment carries its reply.
pub(crate) async fn apply_stream_assignment(context: &Arc<Context>, assignment: StreamAssignment) {
    if assignment.replicated {
        return apply_replicated_assignment(context, assignment).await;
    }
    let name = assignment.config.name.clone();
    let registry = &context.registry;
    match assignment.change {
        StreamChange::Create => {
            // A stream of that name from an earlier assignment (its removal fell into a
            // snapshot this server restored) gives way to this one.
            if let Some(stale) = registry
                .get(&name)
                .filter(|stream| stream.created != assignment.created)
            {
                tracing::info!("JetStream replacing stream {name} (an earlier assignment)");
                let _ = registry.delete_stream(&stale.name).await;
            }
            let result = create_durably(context, &assignment).await;
            if let Ok((_, true)) = &result {
                context.advise_stream_action(&name, ActionKind::Create);
            }
            let Some(reply) = assignment.reply else {
                if let Err(error) = result {
                    tracing::warn!("JetStream assigned stream {name} not created: {error:?}");
                }
                return;
            };
            let request = reply_only(reply);
            match result {
                Ok((stream, did_create)) => {
                    let (info, _) = build_stream_info(
                        context,
                        &stream,
                        &InfoDetail::default(),
                        InfoView::Create,
                    );
                    let response = StreamCreateResponse::ok(info, did_create);
                    context.respond(&request, &response, false)
                }
                Err(error) => context.respond(&request, &StreamCreateResponse::error(error), true),
            }
        }
        StreamChange::Update => {
            let unchanged = registry
                .get(&name)
                .is_some_and(|stream| stream.config() == assignment.config);
            let result = match registry.get(&name) {
                Some(stream) if unchanged => Ok(stream),
                Some(_) => registry.update_stream(&assignment.config, false).await,
                None => create_durably(context, &assignment)
                    .await
                    .map(|(stream, _)| stream),
            };
            if result.is_ok() && !unchanged {
                context.advise_stream_action(&name, ActionKind::Modify);
            }
            let Some(reply) = assignment.reply else {
                return;
            };
            let request = reply_only(reply);
            match result {
                Ok(stream) => {
                    let (info, _) = build_stream_info(
                        context,
                        &stream,
                        &InfoDetail::default(),
                        InfoView::Update,
                    );
                    context.respond(&request, &StreamUpdateResponse::ok(info), false)
                }
                Err(error) => context.respond(&request, &StreamUpdateResponse::error(error), true),
            }
        }
    }
}

/// How long the servers of a new replicated stream wait for its first leader, who answers.
const LEADER_WAIT: Duration = Duration::from_secs(10);
/// How long a new stream leader's answer waits for its subject subscriptions.
const SUBSCRIBE_WAIT: Duration = Duration::from_secs(2);
/// How long the meta group's changes on this server wait for a replicated stream's update.
const UPDATE_WAIT: Duration = Duration::from_secs(5);

/// Applies the assignment of a replicated stream on one of its peers: creates the replica and
/// starts its Raft group, or updates the config (the leader through the group's log, a follower
/// in memory: the log brings it the store's part), or turns the stream of one replica held
/// here into the replicated one (a scale up). An earlier incarnation of the name is stopped
/// first. Only the stream's leader answers and advises, as on nats-server, once it is
/// elected: that wait is a task of its own, so the meta group's apply thread goes on.
async fn apply_replicated_assignment(context: &Arc<Context>, assignment: StreamAssignment) {
    let name = assignment.config.name.clone();
    let Some(cluster) = context.cluster.get().cloned() else {
        return;
    };
    let registry = &context.registry;
    if let Some(stale) = registry
        .get(&name)
        .filter(|stream| stream.created != assignment.created)
    {
        tracing::info!("JetStream replacing stream {name} (an earlier assignment)");
        cluster.close_stream_group(&name, stale.created).await;
        let _ = registry.delete_stream(&name).await;
    }
    // This incarnation held here without a group: one replica, now scaled up.
    let single = registry
        .get(&name)
        .filter(|stream| cluster.stream_group(&stream.name).is_none());
    let Some(group) = cluster.open_stream_group(&name, assignment.created).await else {
        tracing::debug!("JetStream replicated stream {name} is no longer assigned here");
        return;
    };
    let create =
        || registry.create_replicated_stream(&assignment.config, assignment.created, &group);
    let applied = match (single, assignment.change, registry.get(&name)) {
        (Some(single), _, _) => Applied::Done(
            registry
                .replicate_stream(single, &assignment.config, &group)
                .await
                .map(|stream| (stream, true)),
        ),
        (None, StreamChange::Update, Some(stream)) if stream.config() == assignment.config => {
            Applied::Done(Ok((stream, false)))
        }
        (None, StreamChange::Update, Some(_)) => {
            // The leader's update goes through the stream's log: with no quorum to commit it,
            // it waits until one returns (or the group stops). The meta group's next changes
            // on this server (the stream's removal among them) go on after UPDATE_WAIT; the
            // update carries on aside and its answer waits for it.
            let registry = registry.clone();
            let config = assignment.config.clone();
            let mut task = tokio::spawn(async move {
                registry
                    .update_assigned_stream(&config)
                    .await
                    .map(|stream| (stream, true))
            });
            match tokio::time::timeout(UPDATE_WAIT, &mut task).await {
                Ok(joined) => Applied::Done(joined_update(joined)),
                Err(_) => {
                    tracing::warn!("JetStream replicated stream {name}: update not committed within {UPDATE_WAIT:?}; going on");
                    Applied::Updating(task)
                }
            }
        }
        (None, StreamChange::Create, _) | (None, StreamChange::Update, None) => {
            Applied::Done(create().await)
        }
    };
    if let Applied::Done(Err(error)) = &applied {
        tracing::warn!("JetStream replicated stream {name} not applied: {error:?}");
    }
    let context = context.clone();
    tokio::spawn(async move {
        let result = match applied {
            Applied::Done(result) => result,
            Applied::Updating(task) => joined_update(task.await),
        };
        if group.wait_for_leader(LEADER_WAIT).await != Some(true) {
            return;
        }
        // Answered once the leader's subject subscriptions exist: their interest then reaches
        // the other servers ahead of the answer (the same routes), so a publish sent on the
        // answer finds the stream, as on nats-server, whose leader subscribes before answering.
        if let Ok((stream, _)) = &result {
            stream.subscribed_within(SUBSCRIBE_WAIT).await;
        }
        answer_replicated_assignment(&context, assignment, result);
    });
}

/// A replicated assignment carried out here: the stream and whether it changed.
type AppliedStream = Result<(Arc<crate::stream::Stream>, bool), ApiError>;

/// Where a replicated assignment's outcome is: known, or with an update still going on in a
/// task of its own (its log entry not committed within [`UPDATE_WAIT`]).
enum Applied {
    Done(AppliedStream),
    Updating(tokio::task::JoinHandle<AppliedStream>),
}

/// The outcome of an update run in a task of its own.
fn joined_update(joined: Result<AppliedStream, tokio::task::JoinError>) -> AppliedStream {
    joined.unwrap_or_else(|error| Err(errors::STREAM_UPDATE.with_err(error)))
}

/// The stream leader's answer to an applied assignment (and its advisory).
fn answer_replicated_assignment(
    context: &Context,
    assignment: StreamAssignment,
    result: AppliedStream,
) {
    let name = &assignment.config.name;
    let (kind, view) = match assignment.change {
        StreamChange::Create => (ActionKind::Create, InfoView::Create),
        StreamChange::Update => (ActionKind::Modify, InfoView::Update),
    };
    if let Ok((_, true)) = &result {
        context.advise_stream_action(name, kind);
    }
    let Some(reply) = assignment.reply else {
        return;
    };
    let request = reply_only(reply);
    match (assignment.change, result) {
        (StreamChange::Create, Ok((stream, changed))) => {
            let (info, _) = build_stream_info(context, &stream, &InfoDetail::default(), view);
            context.respond(&request, &StreamCreateResponse::ok(info, changed), false)
        }
        (StreamChange::Update, Ok((stream, _))) => {
            let (info, _) = build_stream_info(context, &stream, &InfoDetail::default(), view);
            context.respond(&request, &StreamUpdateResponse::ok(info), false)
        }
        (StreamChange::Create, Err(error)) => {
            context.respond(&request, &StreamCreateResponse::error(error), true)
        }
        (StreamChange::Update, Err(error)) => {
            context.respond(&request, &StreamUpdateResponse::error(error), true)
        }
    }
}

/// Removes a stream this server holds (its assignment was removed), answering `reply`. Only
/// the incarnation the assignment made (same `created`) is removed: a replayed removal must
/// not take a later stream of the same name.
pub(crate) async fn apply_stream_removal(
    context: &Context,
    name: &str,
    created: i64,
    reply: Option<Bytes>,
    first_peer: bool,
) {
    // Of a replicated stream's servers, its leader answers; while the group has no leader, a
    // replica that has known none for a while does (nats-server: every member of a leaderless
    // group answers its deletion), so the delete of a stream that lost its quorum is answered.
    let cluster = context.cluster.get();
    let group = cluster.and_then(|cluster| cluster.stream_group(name));
    // Neither the stream nor its group here: the removal came before its creation was carried
    // out (a delete right behind its create; the creation is skipped once its assignment is
    // gone). Every peer is in that state: the first of them answers success, the others stay
    // silent (each answered "stream not found" before).
    let unheld = group.is_none()
        && context
            .registry
            .get(name)
            .is_none_or(|stream| stream.created != created);
    let reply = match &group {
        Some(group) if !group.is_leader() && !super::clustered::leaderless(&**group) => None,
        None if unheld && !first_peer => None,
        _ => reply,
    };
    // The group stops first, as nats-server deletes the stream's Raft node before the stream:
    // what the stream waits for from it (a proposal a leader without a quorum cannot commit)
    // fails then, instead of holding this removal until a quorum returns.
    if let (Some(cluster), Some(_)) = (cluster, &group) {
        cluster.close_stream_group(name, created).await;
    }
    let result = match context.registry.get(name) {
        Some(stream) if stream.created != created => Ok(()),
        None if unheld => Ok(()),
        _ => context.registry.delete_stream(name).await,
    };
    if result.is_ok() && !unheld {
        context.advise_stream_action(name, ActionKind::Delete);
    }
    let Some(reply) = reply else {
        return;
    };
    let request = reply_only(reply);
    match result {
        Ok(()) => context.respond(
            &request,
            &SuccessResponse::ok(STREAM_DELETE_RESPONSE_TYPE),
            false,
        ),
        Err(error) => context.respond(
            &request,
            &SuccessResponse::error(STREAM_DELETE_RESPONSE_TYPE, error),
            true,
        ),
    }
}

/// Drops this server's replica of a stream it is no longer placed on (a peer removal): the
/// incarnation `created` only, without an advisory or an answer (the stream lives on
/// elsewhere).
pub(crate) async fn drop_replica(context: &Context, name: &str, created: i64) {
    if context
        .registry
        .get(name)
        .is_some_and(|stream| stream.created == created)
    {
        if let Err(error) = context.registry.delete_stream(name).await {
            tracing::warn!("JetStream replica of {name} not removed: {error:?}");
        }
    }
    if let Some(cluster) = context.cluster.get() {
        cluster.close_stream_group(name, created).await;
    }
}

fn reply_only(reply: Bytes) -> Request {
    Request {
        reply,
        payload: Bytes::new(),
        headers: None,
        arrived: std::time::Instant::now(),
    }
}
