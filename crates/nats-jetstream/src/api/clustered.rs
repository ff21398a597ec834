//! `$JS.API` in a cluster, as nats-server answers it: every JetStream server receives every
//! request, and exactly one answers.
//!
//! - STREAM.CREATE / UPDATE / DELETE: the meta leader checks the request (the single server's
//!   checks, against the assigned streams of the whole cluster), places the stream and
//!   proposes the change; the server holding the stream applies it and answers
//!   ([`super::clustered_apply`]). Errors found by the leader are answered by the leader.
//! - STREAM.NAMES / LIST and ACCOUNT.INFO: the meta leader (LIST gathers the infos of streams
//!   held elsewhere with STREAM.INFO requests).
//! - Requests about one stream (INFO, message get/delete, purge, consumers): the server that
//!   holds it; the meta leader answers "stream not found" when no stream is assigned.
//!
//! Called by the dispatcher (`api/mod.rs`) when a [`Cluster`] is installed, and by the engine
//! for applied assignments. Knows the meta group only through [`Cluster`].

use super::creations::{Admission, Plainness};
use super::streams::{build_stream_info, check_create_request, InfoDetail, InfoView};
use super::{Context, Request};
use crate::cluster::{Cluster, StreamChange, StreamProposal};
use crate::transport::Message;
use bytes::Bytes;
use jetstream_api::json::decode_request;
use jetstream_api::{
    errors, ApiError, ApiSubject, Paged, StreamConfig, StreamConfigRequest, StreamCreateResponse,
    StreamInfo, StreamInfoResponse, StreamListResponse, StreamNamesRequest, StreamNamesResponse,
    StreamUpdateResponse, SuccessResponse, CONSUMER_LEADER_STEPDOWN_RESPONSE_TYPE,
    STREAM_DELETE_RESPONSE_TYPE, STREAM_LEADER_STEPDOWN_RESPONSE_TYPE,
    STREAM_REMOVE_PEER_RESPONSE_TYPE,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// nats-server's `JSApiNamesLimit` and `JSApiListLimit`.
const NAMES_LIMIT: usize = 1024;
const LIST_LIMIT: usize = 256;
/// How long the leader waits for the infos of streams held elsewhere (STREAM.LIST).
const GATHER_TIMEOUT: Duration = Duration::from_secs(2);

/// The stream a request is about, for the requests its holder answers.
pub(crate) fn stream_of<'a>(api: &ApiSubject<'a>) -> Option<&'a str> {
    match api {
        ApiSubject::StreamInfo { stream }
        | ApiSubject::StreamPurge { stream }
        | ApiSubject::StreamMsgGet { stream }
        | ApiSubject::StreamMsgDelete { stream }
        | ApiSubject::ConsumerCreate { stream, .. }
        | ApiSubject::ConsumerDurableCreate { stream, .. }
        | ApiSubject::ConsumerInfo { stream, .. }
        | ApiSubject::ConsumerDelete { stream, .. }
        | ApiSubject::ConsumerNames { stream }
        | ApiSubject::ConsumerList { stream }
        | ApiSubject::ConsumerPause { stream, .. }
        | ApiSubject::ConsumerUnpin { stream, .. }
        | ApiSubject::ConsumerReset { stream, .. }
        | ApiSubject::ConsumerLeaderStepdown { stream, .. }
        | ApiSubject::StreamLeaderStepdown { stream } => Some(stream),
        _ => None,
    }
}

/// The requests every server answers with 10008 "JetStream system temporarily unavailable"
/// while the meta group has no working leader from there, as nats-server 2.15.1 does (checked
/// with two of three servers killed): all but STREAM.INFO of a stream held here, which the
/// replica answers itself once its group has been leaderless for a while.
pub(crate) fn unavailable_without_meta(context: &Context, api: &ApiSubject<'_>) -> bool {
    match api {
        ApiSubject::StreamInfo { stream } => context.registry.get(stream).is_none(),
        ApiSubject::StreamCreate { .. }
        | ApiSubject::StreamUpdate { .. }
        | ApiSubject::StreamDelete { .. }
        | ApiSubject::StreamNames
        | ApiSubject::StreamList
        | ApiSubject::StreamPurge { .. }
        | ApiSubject::AccountInfo
        | ApiSubject::StreamMsgGet { .. }
        | ApiSubject::StreamMsgDelete { .. }
        | ApiSubject::ConsumerCreate { .. }
        | ApiSubject::ConsumerDurableCreate { .. }
        | ApiSubject::ConsumerInfo { .. }
        | ApiSubject::ConsumerNames { .. }
        | ApiSubject::ConsumerList { .. }
        | ApiSubject::ConsumerDelete { .. }
        | ApiSubject::StreamPeerRemove { .. } => true,
        _ => false,
    }
}

/// Whether this server answers the request at all (the others stay silent).
pub(crate) fn answers_here(context: &Context, cluster: &dyn Cluster, api: &ApiSubject<'_>) -> bool {
    if meta_leader_answers(context, cluster, api) {
        return cluster.is_meta_leader();
    }
    // A replicated stream is answered by its leader only; STREAM.INFO, CONSUMER.NAMES and
    // CONSUMER.LIST also by a replica whose group has had no leader for a while (nats-server:
    // the replica, then the meta leader from its assignments). One held elsewhere: not here.
    match stream_of(api) {
        Some(stream) => {
            context.registry.get(stream).is_some()
                && cluster.stream_group(stream).is_none_or(|group| {
                    group.is_leader()
                        || ((answered_without_leader(api) || names_unknown_consumer(context, api))
                            && leaderless(&*group))
                        || runs_ephemeral(context, api)
                        || stepdown_of_elected(api, &*group)
                })
        }
        None => true,
    }
}

/// The requests about a replicated stream a replica answers itself while its group is
/// [`leaderless`].
fn answered_without_leader(api: &ApiSubject<'_>) -> bool {
    matches!(
        api,
        ApiSubject::StreamInfo { .. }
            | ApiSubject::ConsumerNames { .. }
            | ApiSubject::ConsumerList { .. }
    )
}

/// Whether `api` is a LEADER.STEPDOWN of the stream (or of one of its consumers) reaching the
/// group's elected leader while it does not lead for the stream (its lease lapsed: no quorum's
/// word for the lost-quorum interval, as at load 27-30 or with its followers paused) and no
/// handover runs: it still leads the term and steps down, as nats-server's raft leader steps
/// down whatever its followers' state. Before, nobody answered (the followers follow it).
fn stepdown_of_elected(api: &ApiSubject<'_>, group: &dyn crate::cluster::StreamGroup) -> bool {
    matches!(
        api,
        ApiSubject::StreamLeaderStepdown { .. } | ApiSubject::ConsumerLeaderStepdown { .. }
    ) && group.is_elected()
        && group.handover().is_none()
}

/// Whether `api` is a CONSUMER.INFO, DELETE, PAUSE, UNPIN or LEADER.STEPDOWN naming a consumer
/// of a stream held here that this server neither runs nor holds among the stream's committed
/// consumers. A replica whose group is [`leaderless`] answers it itself, as for any stream
/// (10014 "consumer not found" unless another server of the stream runs such an ephemeral,
/// `ephemerals.rs`), where nats-server's meta leader answers 10014 from its assignments (checked
/// with nats-server 2.15.1, `leaderless_requests`). RESET of such a consumer has no answer on
/// either (nats-server's consumer answers it itself).
fn names_unknown_consumer(context: &Context, api: &ApiSubject<'_>) -> bool {
    let (ApiSubject::ConsumerInfo { stream, consumer }
    | ApiSubject::ConsumerDelete { stream, consumer }
    | ApiSubject::ConsumerPause { stream, consumer }
    | ApiSubject::ConsumerUnpin { stream, consumer }
    | ApiSubject::ConsumerLeaderStepdown { stream, consumer }) = api
    else {
        return false;
    };
    context.registry.get(stream).is_some_and(|stream| {
        let consumers = context.registry.consumers(&stream);
        consumers.get(consumer).is_none()
            && !consumers
                .replicated()
                .is_some_and(|replicated| replicated.contains(consumer))
    })
}

/// Whether the replicated stream `name` is held here and its group is [`leaderless`].
pub(crate) fn leaderless_here(context: &Context, name: &str) -> bool {
    context.registry.get(name).is_some()
        && context
            .cluster
            .get()
            .and_then(|cluster| cluster.stream_group(name))
            .is_some_and(|group| leaderless(&*group))
}

/// Whether this replica's group has had no working leader for
/// [`LEADERLESS_ANSWER`](crate::cluster::LEADERLESS_ANSWER): it then answers some of the
/// stream's requests itself, as a member of a leaderless group does on nats-server.
pub(crate) fn leaderless(group: &dyn crate::cluster::StreamGroup) -> bool {
    !group.is_leader()
        && group
            .leaderless_for()
            .is_some_and(|age| age >= crate::cluster::LEADERLESS_ANSWER)
}

/// The requests about a replicated stream held here that this replica answers with 10008
/// "JetStream system temporarily unavailable" while its group is [`leaderless`]: MSG.GET,
/// MSG.DELETE, PURGE and STREAM.LEADER.STEPDOWN, CONSUMER.INFO and CONSUMER.LEADER.STEPDOWN, as
/// nats-server's member of a leaderless stream or consumer group (`isGroupLeaderless`);
/// CONSUMER.CREATE, DELETE and PAUSE too, which nats-server carries out through its meta group
/// (an ephemeral created on a replica, a durable or a deletion left unanswered, a pause answered
/// success) and ours only through the stream's group (docs/parity.md). A PAUSE or STEPDOWN of
/// an ephemeral this server runs is its own to answer. A consumer request naming a consumer
/// unknown here is answered "consumer not found" instead ([`names_unknown_consumer`]).
pub(crate) fn unavailable_without_stream_leader(
    context: &Context,
    cluster: &dyn Cluster,
    api: &ApiSubject<'_>,
) -> bool {
    let (ApiSubject::StreamMsgGet { stream }
    | ApiSubject::StreamMsgDelete { stream }
    | ApiSubject::StreamPurge { stream }
    | ApiSubject::StreamLeaderStepdown { stream }
    | ApiSubject::ConsumerCreate { stream, .. }
    | ApiSubject::ConsumerDurableCreate { stream, .. }
    | ApiSubject::ConsumerInfo { stream, .. }
    | ApiSubject::ConsumerDelete { stream, .. }
    | ApiSubject::ConsumerPause { stream, .. }
    | ApiSubject::ConsumerLeaderStepdown { stream, .. }) = api
    else {
        return false;
    };
    context.registry.get(stream).is_some()
        && cluster
            .stream_group(stream)
            .is_some_and(|group| leaderless(&*group))
        && !runs_ephemeral(context, api)
        && !names_unknown_consumer(context, api)
}

/// Whether `api` acts on an ephemeral consumer this server runs (created here while it led the
/// stream): its PAUSE, UNPIN, RESET and LEADER.STEPDOWN are answered by this server, as by
/// nats-server's host of the consumer; the stream's leader, which does not run it, stays
/// silent for it (`ephemerals.rs`). INFO, DELETE and the lists stay the leader's.
fn runs_ephemeral(context: &Context, api: &ApiSubject<'_>) -> bool {
    let (ApiSubject::ConsumerPause { stream, consumer }
    | ApiSubject::ConsumerUnpin { stream, consumer }
    | ApiSubject::ConsumerReset { stream, consumer }
    | ApiSubject::ConsumerLeaderStepdown { stream, consumer }) = api
    else {
        return false;
    };
    context.registry.get(stream).is_some_and(|stream| {
        context
            .registry
            .consumers(&stream)
            .get(consumer)
            .is_some_and(|found| found.replication.is_none())
    })
}

/// Whether the meta leader is the one to answer the request: the meta group's requests, and
/// those naming a stream neither held here nor assigned anywhere (a stream held here is its
/// group's business).
pub(crate) fn meta_leader_answers(
    context: &Context,
    cluster: &dyn Cluster,
    api: &ApiSubject<'_>,
) -> bool {
    match api {
        ApiSubject::StreamCreate { .. }
        | ApiSubject::StreamUpdate { .. }
        | ApiSubject::StreamDelete { .. }
        | ApiSubject::StreamNames
        | ApiSubject::StreamList
        | ApiSubject::StreamPeerRemove { .. }
        | ApiSubject::AccountInfo => true,
        _ => stream_of(api).is_some_and(|stream| {
            context.registry.get(stream).is_none() && cluster.stream(stream).is_none()
        }),
    }
}

/// Answers the requests the meta leader handles differently in a cluster; false when the
/// single server's handler applies.
pub(crate) async fn handle(
    context: &Arc<Context>,
    cluster: &dyn Cluster,
    request: &Request,
    api: &ApiSubject<'_>,
) -> bool {
    match api {
        ApiSubject::StreamCreate { stream } => {
            stream_create(context, cluster, request, stream).await
        }
        ApiSubject::StreamUpdate { stream } => {
            stream_update(context, cluster, request, stream).await
        }
        ApiSubject::StreamDelete { stream } => {
            stream_delete(context, cluster, request, stream).await
        }
        ApiSubject::StreamNames => stream_names(context, cluster, request),
        ApiSubject::StreamList => stream_list(context, cluster, request).await,
        ApiSubject::StreamLeaderStepdown { stream } => {
            leader_stepdown(context, cluster, request, stream, None).await
        }
        ApiSubject::ConsumerLeaderStepdown { stream, consumer } => {
            leader_stepdown(context, cluster, request, stream, Some(consumer)).await
        }
        ApiSubject::StreamPeerRemove { stream } => {
            stream_peer_remove(context, cluster, request, stream).await
        }
        _ => return false,
    }
    true
}

/// Whether two streams' subjects overlap (a stream without subjects listens on its name).
fn overlaps_assigned(cluster: &dyn Cluster, config: &StreamConfig) -> bool {
    cluster
        .streams()
        .iter()
        .filter(|other| other.config.name != config.name)
        .any(|other| {
            other.config.subjects.iter().any(|theirs| {
                config
                    .subjects
                    .iter()
                    .any(|ours| crate::subject::overlaps(ours, theirs))
            })
        })
}

/// A STREAM.CREATE checked against the committed assignments: the proposal and what makes it
/// plain ([`super::creations`]), or the error to answer.
fn check_stream_create(
    context: &Context,
    cluster: &dyn Cluster,
    request: &Request,
    name: &str,
) -> Result<(StreamProposal, Plainness), ApiError> {
    let config_request: StreamConfigRequest = decode_request(&request.payload)?;
    check_create_request(&config_request.config, name)?;
    let config = crate::stream::check_and_fill(&config_request.config, config_request.pedantic)?;
    let mut config = crate::stream::with_static_metadata(config);
    if let Some(origin) = config
        .mirror
        .as_ref()
        .and_then(|mirror| cluster.stream(&mirror.name))
    {
        config.mirror_direct = origin.config.allow_direct;
    }
    if let Some(existing) = cluster.stream(name) {
        if existing.config != config {
            return Err(errors::STREAM_NAME_EXIST.to_error());
        }
        // The same stream again: its holder answers with its info, as for a new one.
        let proposal = StreamProposal {
            config,
            change: StreamChange::Create,
            servers: existing.servers,
            reply: request.reply.clone(),
        };
        let plain = Plainness {
            depends: true,
            headroom: None,
        };
        return Ok((proposal, plain));
    }
    if overlaps_assigned(cluster, &config) {
        return Err(errors::STREAM_SUBJECT_OVERLAP.to_error());
    }
    // The account's streams across the cluster (of the stream's tier when its limits are
    // tiered), as nats-server's `jsClusteredStreamLimitsCheck` counts them (each holder
    // checks its own too).
    let (limits, tiered) = context.registry.tier_limits(config.replicas)?;
    let tier = crate::registry::tier_name(config.replicas);
    let streams = cluster
        .streams()
        .iter()
        .filter(|stream| !tiered || crate::registry::tier_name(stream.config.replicas) == tier)
        .count();
    if limits.max_streams > 0 && i64::try_from(streams).unwrap_or(i64::MAX) >= limits.max_streams {
        return Err(errors::MAXIMUM_STREAMS_LIMIT.to_error());
    }
    let headroom = (limits.max_streams > 0).then(|| {
        usize::try_from(limits.max_streams)
            .unwrap_or(usize::MAX)
            .saturating_sub(streams + 1)
    });
    let servers = cluster.place(&config)?;
    let plain = Plainness {
        depends: config.mirror.is_some() || !config.sources.is_empty(),
        headroom,
    };
    let proposal = StreamProposal {
        config,
        change: StreamChange::Create,
        servers,
        reply: request.reply.clone(),
    };
    Ok((proposal, plain))
}

/// STREAM.CREATE on the meta leader: checked against the committed assignments (an error is
/// answered at once), then proposed beside the account's creations in flight when it is plain
/// and conflicts with none of them, else once they are done ([`super::creations`]). The holder
/// answers once the assignment is applied; a failed proposal is answered here.
async fn stream_create(
    context: &Arc<Context>,
    cluster: &dyn Cluster,
    request: &Request,
    name: &str,
) {
    let result = loop {
        let (proposal, plain) = match check_stream_create(context, cluster, request, name) {
            Ok(checked) => checked,
            Err(error) => break Err(error),
        };
        match context.creations.admit(&proposal.config, &plain) {
            Admission::Serial => break cluster.propose_stream(proposal).await,
            Admission::Wait(mut changes) => {
                super::api_debug!(
                    format_args!("STREAM.CREATE.{name}"),
                    request.reply,
                    "waits for the creations in flight"
                );
                // The sender lives in the context: it cannot be dropped meanwhile.
                let _ = changes.changed().await;
            }
            Admission::InFlight(ticket) => {
                let proposed = cluster.propose_stream(proposal);
                let (context, request, name) = (context.clone(), request.clone(), name.to_string());
                tokio::spawn(async move {
                    let result = proposed.await;
                    created(&context, &request, &name, result, " (in flight)");
                    drop(ticket);
                });
                return;
            }
        }
    };
    created(context, request, name, result, "");
}

/// The end of a STREAM.CREATE's proposal: an error is answered here (the holder answers a
/// success once the assignment is applied).
fn created(
    context: &Context,
    request: &Request,
    name: &str,
    result: Result<(), ApiError>,
    how: &str,
) {
    super::api_debug!(
        format_args!("STREAM.CREATE.{name}"),
        request.reply,
        "proposed{how}: {:?} (answered by the holder once applied when Ok)",
        result.as_ref().map_err(|error| error.err_code)
    );
    if let Err(error) = result {
        context.respond(request, &StreamCreateResponse::error(error), true);
    }
}

async fn stream_update(context: &Context, cluster: &dyn Cluster, request: &Request, name: &str) {
    let proposal = (|| {
        let config_request: StreamConfigRequest = decode_request(&request.payload)?;
        let mut requested = config_request.config;
        if requested.name != name {
            return Err(errors::STREAM_MISMATCH.to_error());
        }
        let existing = cluster
            .stream(name)
            .ok_or_else(|| errors::STREAM_NOT_FOUND.to_error())?;
        jetstream_api::metadata::set_static_stream_metadata(&mut requested);
        // The single server's checks, with the replica count as it is (a changed count is a
        // rescale, checked here).
        let replicas = requested.replicas.max(1);
        requested.replicas = existing.config.replicas;
        let mut config =
            crate::stream::check_update(&existing.config, &requested, config_request.pedantic)
                .map_err(|error| {
                    if error.err_code == 0 {
                        errors::STREAM_UPDATE.with_err(error.description)
                    } else {
                        error
                    }
                })?;
        if replicas > 5 {
            return Err(errors::STREAM_INVALID_CONFIG.with_err("maximum replicas is 5"));
        }
        config.replicas = replicas;
        if overlaps_assigned(cluster, &config) {
            return Err(errors::STREAM_SUBJECT_OVERLAP.to_error());
        }
        let servers = if replicas != existing.config.replicas.max(1) {
            cluster.rescale(name, usize::try_from(replicas).unwrap_or(1))?
        } else {
            existing.servers
        };
        Ok(StreamProposal {
            config,
            change: StreamChange::Update,
            servers,
            reply: request.reply.clone(),
        })
    })();
    let result = match proposal {
        Ok(proposal) => cluster.propose_stream(proposal).await,
        Err(error) => Err(error),
    };
    if let Err(error) = result {
        context.respond(request, &StreamUpdateResponse::error(error), true);
    }
}

async fn stream_delete(context: &Context, cluster: &dyn Cluster, request: &Request, name: &str) {
    let result = match cluster.stream(name) {
        None => Err(errors::STREAM_NOT_FOUND.to_error()),
        Some(_) => {
            cluster
                .propose_stream_removal(name, request.reply.clone())
                .await
        }
    };
    if let Err(error) = result {
        context.respond(
            request,
            &SuccessResponse::error(STREAM_DELETE_RESPONSE_TYPE, error),
            true,
        );
    }
}

/// The body of a peer removal request (nats-server's `JSApiStreamRemovePeerRequest`).
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct PeerRemoveRequest {
    peer: String,
}

/// `$JS.API.STREAM.PEER.REMOVE.<stream>`, answered by the meta leader in nats-server's order of
/// checks: a body naming a peer, the stream, the peer one of its servers; success once the
/// meta group applied the change (the stream's group then brings the replacement in and lets
/// the removed server go), 10075 when no server was free to take its place.
async fn stream_peer_remove(
    context: &Context,
    cluster: &dyn Cluster,
    request: &Request,
    name: &str,
) {
    let result = async {
        if request.payload.iter().all(u8::is_ascii_whitespace) {
            return Err(errors::BAD_REQUEST.to_error());
        }
        let body: PeerRemoveRequest = decode_request(&request.payload)?;
        if body.peer.is_empty() {
            return Err(errors::BAD_REQUEST.to_error());
        }
        if cluster.stream(name).is_none() {
            return Err(errors::STREAM_NOT_FOUND.to_error());
        }
        cluster.remove_stream_peer(name, &body.peer).await
    }
    .await;
    let response = match result {
        Ok(()) => SuccessResponse::ok(STREAM_REMOVE_PEER_RESPONSE_TYPE),
        Err(error) => SuccessResponse::error(STREAM_REMOVE_PEER_RESPONSE_TYPE, error),
    };
    let failed = response.error.is_some();
    context.respond(request, &response, failed);
}

/// The body of a leader stepdown request (nats-server's `JSApiLeaderStepdownRequest`).
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct StepdownRequest {
    placement: Option<jetstream_api::Placement>,
}

/// `$JS.API.STREAM.LEADER.STEPDOWN.<stream>` and `$JS.API.CONSUMER.LEADER.STEPDOWN.<stream>.
/// <consumer>`, answered by the stream's leader (an R1 stream's server, or an R1 consumer's,
/// answers success and stays leader, as nats-server does): leadership goes to the
/// `placement.preferred` server when the body names one, else to a caught-up replica. A
/// replicated consumer's leader is its stream's, so its stepdown steps the stream down.
async fn leader_stepdown(
    context: &Context,
    cluster: &dyn Cluster,
    request: &Request,
    name: &str,
    consumer: Option<&str>,
) {
    let response_type = match consumer {
        Some(_) => CONSUMER_LEADER_STEPDOWN_RESPONSE_TYPE,
        None => STREAM_LEADER_STEPDOWN_RESPONSE_TYPE,
    };
    let result = async {
        let Some(stream) = context.registry.get(name) else {
            return Err(errors::STREAM_NOT_FOUND.to_error());
        };
        // An ephemeral run here is this server's to answer whoever leads the stream.
        let runs_here = consumer.is_some_and(|consumer| {
            context
                .registry
                .consumers(&stream)
                .get(consumer)
                .is_some_and(|found| found.replication.is_none())
        });
        if !runs_here && arrived_before_leading(cluster, name, request) {
            tracing::info!(
                stream = name,
                "leader stepdown that arrived before this leadership left to its predecessor"
            );
            return Ok(false);
        }
        if let Some(consumer) = consumer {
            request.check_api_level()?;
            let consumers = context.registry.consumers(&stream);
            match consumers.get(consumer) {
                Some(found) if found.replication.is_none() => return Ok(true),
                Some(_) => {}
                // A replicated consumer runs only while its stream leads here: an elected
                // leader whose lease lapsed (`stepdown_of_elected`) knows it from the stream's
                // committed consumers, and steps the stream down for it.
                None if consumers
                    .replicated()
                    .is_some_and(|replicated| replicated.contains(consumer)) => {}
                None => {
                    // An ephemeral another server runs: that server answers.
                    if super::ephemerals::runs_elsewhere(context, name, consumer).await {
                        return Ok(false);
                    }
                    return Err(errors::CONSUMER_NOT_FOUND.to_error());
                }
            }
        }
        let preferred = if request.has_json_body() {
            let body: StepdownRequest = decode_request(&request.payload)?;
            body.placement
                .map(|placement| placement.preferred)
                .filter(|preferred| !preferred.is_empty())
        } else {
            None
        };
        match cluster.stream_group(name) {
            Some(group) => group.step_down(preferred).await.map(|()| true),
            None => Ok(true),
        }
    }
    .await;
    let response = match result {
        Ok(false) => return,
        Ok(true) => SuccessResponse::ok(response_type),
        Err(error) => SuccessResponse::error(response_type, error),
    };
    let failed = response.error.is_some();
    context.respond(request, &response, failed);
}

/// Whether `request` reached this server before its current leadership of the stream began.
/// Every server receives every stepdown and each decides whether it leads only when its API
/// queue reaches the request: a server busy behind other requests reached a stepdown after it
/// had become leader through that very stepdown, and handed the leadership straight back
/// (issue 20: `nats consumer cluster step-down` then saw no new leader). Such a stepdown was
/// its predecessor's, which answered it and acted on it (nats-server's API workers reach a
/// request almost at once, so there too it is the server leading on its arrival that acts).
fn arrived_before_leading(cluster: &dyn Cluster, name: &str, request: &Request) -> bool {
    cluster
        .stream_group(name)
        .and_then(|group| group.leading_since())
        .is_some_and(|since| since > request.arrived)
}

/// The names/list request (the same body for both), or the error to answer.
fn names_request(request: &Request) -> Result<StreamNamesRequest, ApiError> {
    if request.has_json_body() {
        decode_request(&request.payload)
    } else {
        Ok(StreamNamesRequest::default())
    }
}

/// The assigned streams whose subjects overlap `filter` (all when empty), sorted by name.
fn filtered(cluster: &dyn Cluster, filter: &str) -> Vec<StreamConfig> {
    cluster
        .streams()
        .into_iter()
        .map(|assigned| assigned.config)
        .filter(|config| {
            filter.is_empty()
                || config
                    .subjects
                    .iter()
                    .any(|subject| crate::subject::overlaps(filter, subject))
        })
        .collect()
}

fn stream_names(context: &Context, cluster: &dyn Cluster, request: &Request) {
    let names_request = match names_request(request) {
        Ok(parsed) => parsed,
        Err(error) => return context.respond(request, &StreamNamesResponse::error(error), true),
    };
    let streams = filtered(cluster, &names_request.subject);
    let total = streams.len();
    let offset = names_request.offset.min(total);
    let names: Vec<String> = streams
        .into_iter()
        .skip(offset)
        .take(NAMES_LIMIT)
        .map(|config| config.name)
        .collect();
    let names = (!names.is_empty()).then_some(names);
    let paged = Paged {
        total,
        offset,
        limit: NAMES_LIMIT,
    };
    context.respond(request, &StreamNamesResponse::ok(names, paged), false);
}

async fn stream_list(context: &Context, cluster: &dyn Cluster, request: &Request) {
    let list_request = match names_request(request) {
        Ok(parsed) => parsed,
        Err(error) => return context.respond(request, &StreamListResponse::error(error), true),
    };
    let streams = filtered(cluster, &list_request.subject);
    let total = streams.len();
    let offset = list_request.offset.min(total);
    let page: Vec<String> = streams
        .into_iter()
        .skip(offset)
        .take(LIST_LIMIT)
        .map(|config| config.name)
        .collect();
    // A stream this server leads (or holds alone) is listed from here; any other is asked of its
    // leader, as nats-server does: a follower's own view has no `replicas` or `leader_since`.
    let mut infos: BTreeMap<String, StreamInfo> = BTreeMap::new();
    let mut followed = BTreeMap::new();
    let mut remote = Vec::new();
    for name in &page {
        match context.registry.get(name) {
            Some(stream)
                if cluster
                    .stream_group(name)
                    .is_none_or(|group| group.is_leader()) =>
            {
                let detail = InfoDetail::default();
                let (info, _) = build_stream_info(context, &stream, &detail, InfoView::List);
                infos.insert(name.clone(), info);
            }
            Some(stream) => {
                followed.insert(name.clone(), stream);
                remote.push(name.clone());
            }
            None => remote.push(name.clone()),
        }
    }
    infos.extend(gather_infos(context, &remote).await);
    // A followed stream whose leader did not answer in time is listed as this replica sees it.
    for (name, stream) in followed {
        infos.entry(name).or_insert_with(|| {
            let detail = InfoDetail::default();
            build_stream_info(context, &stream, &detail, InfoView::List).0
        });
    }
    let paged = Paged {
        total,
        offset,
        limit: LIST_LIMIT,
    };
    let infos: Vec<StreamInfo> = page.iter().filter_map(|name| infos.remove(name)).collect();
    context.respond(request, &StreamListResponse::ok(infos, paged), false);
}

/// Asks the servers holding `names` for their infos (STREAM.INFO through routing, each
/// answered by its holder); the answers that arrive within [`GATHER_TIMEOUT`], by name.
async fn gather_infos(context: &Context, names: &[String]) -> BTreeMap<String, StreamInfo> {
    let mut infos = BTreeMap::new();
    if names.is_empty() {
        return infos;
    }
    let inbox = format!("_INBOX.{}", crate::nuid::next_id());
    let (sender, mut answers) = tokio::sync::mpsc::unbounded_channel::<Message>();
    let id = context.transport.subscribe(
        &format!("{inbox}.*"),
        None,
        std::sync::Arc::new(move |message: Message| {
            let _ = sender.send(message);
        }),
    );
    for (index, name) in names.iter().enumerate() {
        context.transport.publish(Message {
            subject: Bytes::from(format!("$JS.API.STREAM.INFO.{name}")),
            reply: Some(Bytes::from(format!("{inbox}.{index}"))),
            headers: None,
            payload: Bytes::new(),
        });
    }
    let deadline = tokio::time::Instant::now() + GATHER_TIMEOUT;
    while infos.len() < names.len() {
        let Ok(Some(answer)) = tokio::time::timeout_at(deadline, answers.recv()).await else {
            break;
        };
        let Ok(response) = serde_json::from_slice::<StreamInfoResponse>(&answer.payload) else {
            continue;
        };
        if let Some(mut info) = response.info {
            // Listed as nats-server lists: the stored config, without the response-only keys
            // its holder's STREAM.INFO adds.
            jetstream_api::metadata::remove_dynamic(&mut info.config.metadata);
            infos.insert(info.config.name.clone(), info);
        }
    }
    context.transport.unsubscribe(id);
    infos
}
