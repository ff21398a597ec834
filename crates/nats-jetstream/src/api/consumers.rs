//! `$JS.API.CONSUMER.*`: CREATE (new style with optional filter, legacy ephemeral, legacy
//! DURABLE.CREATE), INFO, NAMES, LIST, DELETE, PAUSE, UNPIN and RESET, with nats-server's
//! checks, their order and its errors. `MSG.NEXT` is not served here: each consumer subscribes
//! its own.

use super::Context;
use super::Request;
use crate::consumer::{self, Consumer};
use crate::stream::Stream;
use jetstream_api::advisory::{self, ActionKind, Advisory, ConsumerActionAdvisory, ConsumerPause};
use jetstream_api::json::decode_request;
use jetstream_api::{
    errors, ApiError, ConsumerAction, ConsumerInfo, ConsumerInfoResponse, ConsumerListResponse,
    ConsumerNamesResponse, ConsumerPauseRequest, ConsumerPauseResponse, ConsumerResetRequest,
    ConsumerResetResponse, ConsumerUnpinRequest, ConsumerUnpinResponse, ConsumersRequest,
    CreateConsumerRequest, Nanos, Paged, RetentionPolicy, SuccessResponse, Timestamp,
    CONSUMER_CREATE_RESPONSE_TYPE, CONSUMER_DELETE_RESPONSE_TYPE, CONSUMER_INFO_RESPONSE_TYPE,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// nats-server's `JSApiNamesLimit` and `JSApiListLimit`.
const NAMES_LIMIT: usize = 1024;
const LIST_LIMIT: usize = 256;

/// Which create subject the request came on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum CreateKind {
    /// `CONSUMER.CREATE.<stream>`
    LegacyEphemeral,
    /// `CONSUMER.DURABLE.CREATE.<stream>.<durable>`
    LegacyDurable,
    /// `CONSUMER.CREATE.<stream>.<consumer>[.<filter>]`
    New,
}

/// nats-server's `isEmptyRequest`: nothing, or an empty JSON object.
fn is_empty_body(payload: &[u8]) -> bool {
    if payload.is_empty() {
        return true;
    }
    matches!(
        serde_json::from_slice::<serde_json::Value>(payload),
        Ok(serde_json::Value::Object(map)) if map.is_empty()
    )
}

/// The stream and one of its consumers, or the API error for whichever is missing.
fn stream_and_consumer(
    context: &Context,
    stream_name: &str,
    name: &str,
) -> Result<(Arc<Stream>, Arc<Consumer>), ApiError> {
    let stream = context
        .registry
        .get(stream_name)
        .ok_or_else(|| errors::STREAM_NOT_FOUND.to_error())?;
    let consumer = context
        .registry
        .consumers(&stream)
        .get(name)
        .ok_or_else(|| errors::CONSUMER_NOT_FOUND.to_error())?;
    Ok((stream, consumer))
}

pub(crate) async fn consumer_create(
    context: &Arc<Context>,
    request: &Request,
    kind: CreateKind,
    stream_name: &str,
    consumer_name: &str,
    filter: &str,
) {
    match try_consumer_create(context, request, kind, stream_name, consumer_name, filter).await {
        Ok((info, created, pending)) => {
            let request = request.clone();
            context.answer_when_durable(pending, move |context, synced| match synced {
                Ok(()) => {
                    if created {
                        advise_consumer_action(
                            context,
                            &info.stream_name,
                            &info.name,
                            ActionKind::Create,
                        );
                    }
                    context.respond(&request, &ConsumerInfoResponse::created(info), false)
                }
                Err(error) => context.respond(
                    &request,
                    &ConsumerInfoResponse::error(
                        CONSUMER_CREATE_RESPONSE_TYPE,
                        errors::CONSUMER_STORE_FAILED.with_err(error),
                    ),
                    true,
                ),
            });
        }
        Err(error) => context.respond(
            request,
            &ConsumerInfoResponse::error(CONSUMER_CREATE_RESPONSE_TYPE, error),
            true,
        ),
    }
}

/// The consumer's info, whether it is new (advised) and its creation sync while pending.
async fn try_consumer_create(
    context: &Context,
    request: &Request,
    kind: CreateKind,
    stream_name: &str,
    consumer_name: &str,
    filter: &str,
) -> Result<(ConsumerInfo, bool, Option<Arc<nats_store::CreationSync>>), ApiError> {
    let create: CreateConsumerRequest = decode_request(&request.payload)?;
    request.check_api_level()?;
    let mut config = create.config;
    if create.stream_name != stream_name {
        return Err(errors::STREAM_MISMATCH.to_error());
    }
    if consumer_name.contains(['/', '\\']) {
        return Err(errors::CONSUMER_NAME_CONTAINS_PATH_SEPARATORS.to_error());
    }
    match kind {
        CreateKind::LegacyDurable => {
            if config.durable_name.is_empty() {
                return Err(errors::CONSUMER_DURABLE_NAME_NOT_SET.to_error());
            }
            if consumer_name != config.durable_name {
                return Err(errors::CONSUMER_DURABLE_NAME_NOT_MATCH_SUBJECT.to_error());
            }
            config.name = consumer_name.to_string();
        }
        CreateKind::New => {
            if !config.durable_name.is_empty() && consumer_name != config.durable_name {
                return Err(errors::CONSUMER_DURABLE_NAME_NOT_MATCH_SUBJECT.to_error());
            }
            config.name = consumer_name.to_string();
        }
        CreateKind::LegacyEphemeral => {
            if !config.durable_name.is_empty() {
                return Err(errors::CONSUMER_EPHEMERAL_WITH_DURABLE_NAME.to_error());
            }
        }
    }
    // The name the consumer will have, whichever path set it (a legacy ephemeral's comes
    // from the body alone): a path separator is refused before any other name check.
    if config.name.contains(['/', '\\']) {
        return Err(errors::CONSUMER_NAME_CONTAINS_PATH_SEPARATORS.to_error());
    }
    if !filter.is_empty() && !config.filter_subjects.is_empty() {
        return Err(errors::CONSUMER_MULTIPLE_FILTERS_NOT_ALLOWED.to_error());
    }
    if !filter.is_empty() && config.filter_subject != filter {
        return Err(errors::CONSUMER_CREATE_FILTER_SUBJECT_MISMATCH.to_error());
    }
    let stream = context
        .registry
        .get(stream_name)
        .ok_or_else(|| errors::STREAM_NOT_FOUND.to_error())?;
    let lookup_name = if config.name.is_empty() {
        config.durable_name.clone()
    } else {
        config.name.clone()
    };
    let existing = (!lookup_name.is_empty())
        .then(|| context.registry.consumers(&stream).get(&lookup_name))
        .flatten();
    if let Some(existing) = &existing {
        config.pause_until = existing.config.read().pause_until;
    }
    set_static_metadata(&mut config);
    let stream_config = stream.config();
    let mut config = consumer::check_config(
        &config,
        &stream_config,
        context
            .registry
            .tier_limits(stream_config.replicas)?
            .0
            .max_ack_pending,
        create.pedantic,
    )?;
    let name_generated = config.name.is_empty() && config.durable_name.is_empty();
    if config.name.is_empty() {
        config.name = if config.durable_name.is_empty() {
            consumer::ephemeral_name()
        } else {
            config.durable_name.clone()
        };
    }
    jetstream_api::consumer_defaults::apply_ephemeral_inactive_default(&mut config);
    let _guard = context.registry.admin_lock.lock().await;
    // A stop began: `stream` may be stopped already (it stays registered), so nothing starts.
    context.registry.check_open_to_consumers()?;
    let consumers = context.registry.consumers(&stream);
    if let Some(existing) = consumers.get(&config.name) {
        let current = existing.config();
        if current == config {
            // An identical consumer created moments ago: answered once it is durable too.
            let mut info = existing.info(&stream);
            info.cluster = consumer_cluster_info(context, &existing);
            return Ok((info, false, existing.creation.clone()));
        }
        if create.action == ConsumerAction::Create {
            return Err(errors::CONSUMER_ALREADY_EXISTS.to_error());
        }
        consumer::check_update(&current, &config)?;
        if stream_config.retention == RetentionPolicy::WorkQueue {
            check_work_queue_unique(&consumers, &config)?;
        }
        if let Some(replicas) = consumers
            .replicated()
            .filter(|_| existing.replication.is_some())
        {
            // Committed in the stream's log before it applies here.
            consumer::replicated::update(replicas, &existing, &config).await?;
        }
        *existing.config.write() = config.clone();
        consumer::refresh_interest(&stream, &existing);
        let saved = existing.config_updated();
        let mut info = existing.info(&stream);
        info.cluster = consumer_cluster_info(context, &existing);
        // Answered once the task saved the new config (off the admin lock), and once durable
        // when that made its files (an ephemeral made durable).
        drop(_guard);
        let pending = saved.await;
        return Ok((info, false, pending));
    }
    if create.action == ConsumerAction::Update {
        return Err(errors::CONSUMER_DOES_NOT_EXIST.to_error());
    }
    // Unlimited streams get the account's limit, else the server's default, as in
    // nats-server; a stream's own limit applies below the account's.
    let account_max = context
        .registry
        .tier_limits(stream_config.replicas)?
        .0
        .max_consumers;
    let max_consumers = match (stream_config.max_consumers > 0, account_max > 0) {
        (true, true) => stream_config.max_consumers.min(account_max),
        (true, false) => stream_config.max_consumers,
        (false, true) => account_max,
        (false, false) => crate::engine::DEFAULT_MAX_CONSUMERS,
    };
    if consumers.len() as i64 >= max_consumers {
        return Err(errors::MAXIMUM_CONSUMERS_LIMIT.to_error());
    }
    if stream_config.retention == RetentionPolicy::WorkQueue {
        check_work_queue_unique(&consumers, &config)?;
    }
    let created = crate::time_format::now_nanos();
    let home = consumer::Home {
        stream: &stream,
        consumers: &consumers,
        transport: &context.transport,
        domain: context.domain.as_deref(),
    };
    if let Some(replicas) = consumers
        .replicated()
        .filter(|_| !config.durable_name.is_empty())
    {
        // A durable consumer of a replicated stream: committed in the stream's log first.
        let new = consumer::replicated::create(&home, replicas, config, created).await?;
        let mut info = new.info(&stream);
        info.cluster = consumer_cluster_info(context, &new);
        return Ok((info, true, None));
    }
    let store = consumer::open_store(&stream, &config, &config.name, created)
        .map_err(|error| errors::CONSUMER_STORE_FAILED.with_err(error))?;
    let new = consumer::start(&home, config, created, store, false);
    new.set_name_generated(name_generated);
    // Answered and advised once its files are durable (`consumer_create`).
    let pending = new.creation.clone();
    let mut info = new.info(&stream);
    info.cluster = consumer_cluster_info(context, &new);
    Ok((info, true, pending))
}

/// A consumer's `cluster` block in a cluster: a replicated consumer's is its stream group's (the
/// consumer's leader is the stream's leader, its replicas the stream's); any other (an ephemeral,
/// or a consumer of an R1 stream) runs here alone, named with the cluster and this server as
/// nats-server's `clusterInfo` of a group without a Raft node. `None` on a single server.
pub(crate) fn consumer_cluster_info(
    context: &Context,
    consumer: &Consumer,
) -> Option<jetstream_api::ClusterInfo> {
    cluster_block(
        context,
        &consumer.stream_name,
        consumer.replication.is_some(),
    )
}

/// The `cluster` block of a consumer of `stream_name`: its stream group's when `replicated`
/// (see [`consumer_cluster_info`]), else this server's alone.
pub(crate) fn cluster_block(
    context: &Context,
    stream_name: &str,
    replicated: bool,
) -> Option<jetstream_api::ClusterInfo> {
    let cluster = context.cluster.get()?;
    if replicated {
        if let Some(info) = cluster
            .stream_group(stream_name)
            .and_then(|group| group.cluster_info())
        {
            return Some(info);
        }
    }
    Some(jetstream_api::ClusterInfo {
        name: cluster.name(),
        leader: context.server_name.clone(),
        ..Default::default()
    })
}

pub(crate) async fn consumer_info(
    context: &Context,
    request: &Request,
    stream_name: &str,
    name: &str,
) {
    let result = async {
        if !is_empty_body(&request.payload) {
            return Err(errors::NOT_EMPTY_REQUEST.to_error());
        }
        request.check_api_level()?;
        let (stream, consumer) = match stream_and_consumer(context, stream_name, name) {
            Ok(found) => found,
            Err(error) if error.err_code == errors::CONSUMER_NOT_FOUND.err_code => {
                // An ephemeral another server of the stream runs (the stream's leadership
                // moved since it was created there).
                return super::ephemerals::remote_info(context, stream_name, name)
                    .await
                    .ok_or(error);
            }
            Err(error) => return Err(error),
        };
        let mut info = consumer.info_in_order(&stream).await;
        info.cluster = consumer_cluster_info(context, &consumer);
        Ok(info)
    }
    .await;
    match result {
        Ok(info) => context.respond(request, &ConsumerInfoResponse::info(info), false),
        Err(error) => context.respond(
            request,
            &ConsumerInfoResponse::error(CONSUMER_INFO_RESPONSE_TYPE, error),
            true,
        ),
    }
}

pub(crate) async fn consumer_delete(
    context: &Context,
    request: &Request,
    stream_name: &str,
    name: &str,
) {
    let result = async {
        request.check_api_level()?;
        if !is_empty_body(&request.payload) {
            return Err(errors::NOT_EMPTY_REQUEST.to_error());
        }
        let stream = context
            .registry
            .get(stream_name)
            .ok_or_else(|| errors::STREAM_NOT_FOUND.to_error())?;
        let _guard = context.registry.admin_lock.lock().await;
        let consumers = context.registry.consumers(&stream);
        let deleted = match consumers
            .replicated()
            .filter(|replicas| replicas.contains(name))
        {
            Some(replicas) => {
                consumer::replicated::delete(&stream, &consumers, replicas, name).await?
            }
            None => consumer::stop_consumer(&stream, &consumers, name, true).await,
        };
        if deleted {
            return Ok(true);
        }
        // An ephemeral another server of the stream runs: that server deletes it (and sends
        // the advisory).
        if super::ephemerals::remote_delete(context, stream_name, name).await {
            return Ok(false);
        }
        Err(errors::CONSUMER_NOT_FOUND.to_error())
    }
    .await;
    match result {
        Ok(here) => {
            if here {
                advise_consumer_deleted(context, stream_name, name);
            }
            let mut response = SuccessResponse::ok(CONSUMER_DELETE_RESPONSE_TYPE);
            response.success = true;
            context.respond(request, &response, false)
        }
        Err(error) => context.respond(
            request,
            &SuccessResponse::error(CONSUMER_DELETE_RESPONSE_TYPE, error),
            true,
        ),
    }
}

/// The names of `stream`'s consumers: those run here, the committed ones of a replicated
/// stream's group (all of them run on its leader; a replica runs none) and the ephemerals other
/// servers of the stream run.
async fn names_of(context: &Context, stream: &Arc<Stream>) -> BTreeSet<String> {
    let consumers = context.registry.consumers(stream);
    let mut names: BTreeSet<String> = consumers.names().into_iter().collect();
    if let Some(replicated) = consumers.replicated() {
        names.extend(replicated.names());
    }
    let remote = super::ephemerals::remote_list(context, &stream.name).await;
    names.extend(remote.into_iter().map(|info| info.name));
    names
}

pub(crate) async fn consumer_names(context: &Context, request: &Request, stream_name: &str) {
    let result = async {
        request.check_api_level()?;
        let offset = consumer_paging(request)?;
        let stream = context
            .registry
            .get(stream_name)
            .ok_or_else(|| errors::STREAM_NOT_FOUND.to_error())?;
        let names = names_of(context, &stream).await;
        let total = names.len();
        let page: Vec<String> = names.into_iter().skip(offset).take(NAMES_LIMIT).collect();
        Ok((page, total, offset))
    }
    .await;
    match result {
        Ok((names, total, offset)) => context.respond(
            request,
            &ConsumerNamesResponse::ok(
                names,
                Paged {
                    total,
                    offset,
                    limit: NAMES_LIMIT,
                },
            ),
            false,
        ),
        Err(error) => context.respond(request, &ConsumerNamesResponse::error(error), true),
    }
}

/// CONSUMER.LIST. On a replica whose group has no leader ([`super::clustered::leaderless_here`])
/// every consumer is listed as `missing`, with no info, as nats-server's meta leader lists those
/// whose leader did not answer its gathering.
pub(crate) async fn consumer_list(context: &Context, request: &Request, stream_name: &str) {
    let result = async {
        request.check_api_level()?;
        let offset = consumer_paging(request)?;
        let stream = context
            .registry
            .get(stream_name)
            .ok_or_else(|| errors::STREAM_NOT_FOUND.to_error())?;
        if super::clustered::leaderless_here(context, stream_name) {
            let names = names_of(context, &stream).await;
            let total = names.len();
            let missing = names.into_iter().skip(offset).take(LIST_LIMIT).collect();
            return Ok((Vec::new(), missing, total, offset));
        }
        // This server's consumers and the ephemerals other servers of the stream run, by name
        // (one run here wins).
        let mut all: BTreeMap<String, Result<Arc<Consumer>, ConsumerInfo>> = context
            .registry
            .consumers(&stream)
            .all()
            .into_iter()
            .map(|consumer| (consumer.name.clone(), Ok(consumer)))
            .collect();
        for info in super::ephemerals::remote_list(context, stream_name).await {
            all.entry(info.name.clone()).or_insert(Err(info));
        }
        let total = all.len();
        let page: Vec<ConsumerInfo> = all
            .into_values()
            .skip(offset)
            .take(LIST_LIMIT)
            .map(|consumer| {
                let mut info = match consumer {
                    Ok(consumer) => {
                        let mut info = consumer.info(&stream);
                        info.cluster = consumer_cluster_info(context, &consumer);
                        info
                    }
                    Err(remote) => remote,
                };
                // As nats-server lists them: the stored config, without the response-only keys.
                if let Some(config) = info.config.as_mut() {
                    jetstream_api::metadata::remove_dynamic(&mut config.metadata);
                }
                info
            })
            .collect();
        Ok((page, Vec::new(), total, offset))
    }
    .await;
    match result {
        Ok((consumers, missing, total, offset)) => {
            let paged = Paged {
                total,
                offset,
                limit: LIST_LIMIT,
            };
            let response = ConsumerListResponse {
                missing,
                ..ConsumerListResponse::ok(consumers, paged)
            };
            context.respond(request, &response, false)
        }
        Err(error) => context.respond(request, &ConsumerListResponse::error(error), true),
    }
}

fn consumer_paging(request: &Request) -> Result<usize, ApiError> {
    let paging: ConsumersRequest = if request.has_json_body() {
        decode_request(&request.payload)?
    } else {
        ConsumersRequest::default()
    };
    Ok(paging.offset)
}

/// Whether a consumer not found here is an ephemeral another server of the stream runs, which
/// answers the request itself (`clustered::answers_here`).
async fn answered_elsewhere(
    context: &Context,
    error: &ApiError,
    stream_name: &str,
    name: &str,
) -> bool {
    error.err_code == errors::CONSUMER_NOT_FOUND.err_code
        && super::ephemerals::runs_elsewhere(context, stream_name, name).await
}

pub(crate) async fn consumer_pause(
    context: &Context,
    request: &Request,
    stream_name: &str,
    name: &str,
) {
    let result = async {
        let pause: ConsumerPauseRequest = if is_empty_body(&request.payload) {
            ConsumerPauseRequest::default()
        } else {
            decode_request(&request.payload)?
        };
        request.check_api_level()?;
        let (_, consumer) = stream_and_consumer(context, stream_name, name)?;
        let now = crate::time_format::now_nanos();
        let until = pause.pause_until.unix_nanos();
        let paused = !pause.pause_until.is_zero() && until > now;
        {
            let mut config = consumer.config.write();
            config.pause_until = paused.then_some(pause.pause_until);
            set_static_metadata(&mut config);
        }
        let _ = consumer.config_updated().await;
        Ok::<_, ApiError>((
            consumer,
            paused,
            pause.pause_until,
            until.saturating_sub(now),
        ))
    }
    .await;
    match result {
        Ok((consumer, paused, until, remaining)) => {
            advise_consumer_pause(context, &consumer, paused, &until);
            let response = ConsumerPauseResponse::ok(
                paused,
                if paused { until } else { Timestamp::default() },
                Nanos(if paused { remaining } else { 0 }),
            );
            context.respond(request, &response, false)
        }
        Err(error) if answered_elsewhere(context, &error, stream_name, name).await => {}
        Err(error) => context.respond(request, &ConsumerPauseResponse::error(error), true),
    }
}

/// `CONSUMER.UNPIN.<stream>.<consumer>` with `{"group":...}`: the pinned client of a
/// `pinned_client` consumer loses its pin (the next pull without a pin id takes it).
pub(crate) async fn consumer_unpin(
    context: &Context,
    request: &Request,
    stream_name: &str,
    name: &str,
) {
    let result = async {
        request.check_api_level()?;
        let unpin: ConsumerUnpinRequest = decode_plain(&request.payload)?;
        if unpin.group.is_empty() {
            return Err(errors::INVALID_JSON.with_err("consumer group not specified"));
        }
        if !jetstream_api::is_valid_priority_group_name(&unpin.group) {
            return Err(errors::CONSUMER_INVALID_GROUP_NAME.to_error());
        }
        let (_, consumer) = stream_and_consumer(context, stream_name, name)?;
        if !consumer
            .config
            .read()
            .priority_groups
            .contains(&unpin.group)
        {
            return Err(errors::CONSUMER_INVALID_PRIORITY_GROUP.to_error());
        }
        let (done, unpinned) = tokio::sync::oneshot::channel();
        if consumer.send(consumer::Event::Unpin {
            group: unpin.group,
            done,
        }) {
            let _ = unpinned.await;
        }
        Ok(())
    }
    .await;
    match result {
        Ok(()) => context.respond(request, &ConsumerUnpinResponse::ok(), false),
        Err(error) if answered_elsewhere(context, &error, stream_name, name).await => {}
        Err(error) => context.respond(request, &ConsumerUnpinResponse::error(error), true),
    }
}

/// `CONSUMER.RESET.<stream>.<consumer>` with an optional `{"seq":n}`. As in nats-server the
/// consumer itself answers, so a missing stream or consumer gets no answer at all, and the
/// API counters are not touched.
pub(crate) async fn consumer_reset(
    context: &Context,
    request: &Request,
    stream_name: &str,
    name: &str,
) {
    let Some(consumer) = context
        .registry
        .get(stream_name)
        .and_then(|stream| context.registry.consumers(&stream).get(name))
    else {
        return;
    };
    if let Err(error) = request.check_api_level() {
        return context.respond_uncounted(request, &ConsumerResetResponse::error(error));
    }
    let reset: ConsumerResetRequest = if request.payload.is_empty() {
        ConsumerResetRequest::default()
    } else {
        match decode_plain(&request.payload) {
            Ok(reset) => reset,
            Err(error) => {
                return context.respond_uncounted(request, &ConsumerResetResponse::error(error))
            }
        }
    };
    let (done, answer) = tokio::sync::oneshot::channel();
    if !consumer.send(consumer::Event::Reset {
        sequence: reset.sequence,
        done,
    }) {
        return;
    }
    match answer.await {
        Ok(Ok((info, sequence))) => {
            context.respond_uncounted(request, &ConsumerResetResponse::ok(info, sequence))
        }
        Ok(Err(error)) => context.respond_uncounted(request, &ConsumerResetResponse::error(error)),
        Err(_) => {}
    }
}

/// The delete advisory of a consumer deleted here.
pub(super) fn advise_consumer_deleted(context: &Context, stream: &str, consumer: &str) {
    advise_consumer_action(context, stream, consumer, ActionKind::Delete);
}

fn advise_consumer_action(context: &Context, stream: &str, consumer: &str, action: ActionKind) {
    let subject = match action {
        ActionKind::Delete => advisory::consumer_deleted_subject(stream, consumer),
        _ => advisory::consumer_created_subject(stream, consumer),
    };
    if !context.transport.has_interest(&subject) {
        return;
    }
    let body = Advisory::new(
        crate::nuid::next_id(),
        Timestamp::now(),
        ConsumerActionAdvisory {
            stream: stream.to_string(),
            consumer: consumer.to_string(),
            action,
            domain: context.domain.clone().unwrap_or_default(),
        },
    );
    context.publish_json(subject, &body);
}

fn advise_consumer_pause(context: &Context, consumer: &Consumer, paused: bool, until: &Timestamp) {
    let subject = advisory::consumer_pause_subject(&consumer.stream_name, &consumer.name);
    if !context.transport.has_interest(&subject) {
        return;
    }
    let body = Advisory::new(
        crate::nuid::next_id(),
        Timestamp::now(),
        ConsumerPause {
            stream: consumer.stream_name.clone(),
            consumer: consumer.name.clone(),
            paused,
            pause_until: if paused { *until } else { Timestamp::default() },
            domain: context.domain.clone().unwrap_or_default(),
        },
    );
    context.publish_json(subject, &body);
}
/// `_nats.req.level` as nats-server stores it with a consumer (1 when paused or using priority
/// groups, features of API level 1).
fn set_static_metadata(config: &mut jetstream_api::ConsumerConfig) {
    jetstream_api::metadata::remove_dynamic(&mut config.metadata);
    let priority_groups = config.priority_policy != jetstream_api::PriorityPolicy::None
        || config.pinned_ttl.0 != 0
        || !config.priority_groups.is_empty();
    let level = if config.pause_until.is_some() || priority_groups {
        1
    } else {
        0
    };
    config.metadata.insert(
        jetstream_api::metadata::REQUIRED_LEVEL_KEY.to_string(),
        level.to_string(),
    );
}

/// A body decoded as nats-server's plain `json.Unmarshal` does it: unknown fields ignored, an
/// empty body refused.
fn decode_plain<T: serde::de::DeserializeOwned + Default>(payload: &[u8]) -> Result<T, ApiError> {
    if payload.trim_ascii().is_empty() {
        return Err(errors::INVALID_JSON.with_err("unexpected end of JSON input"));
    }
    jetstream_api::json::decode_request_with(payload, jetstream_api::json::Strictness::Lenient)
}

/// Work-queue streams: no two consumers may see the same message.
fn check_work_queue_unique(
    consumers: &consumer::Consumers,
    config: &jetstream_api::ConsumerConfig,
) -> Result<(), ApiError> {
    let others: Vec<Arc<Consumer>> = consumers
        .all()
        .into_iter()
        .filter(|other| other.name != config.name)
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    let filters = config.filters();
    if filters.is_empty() {
        return Err(errors::CONSUMER_WQ_MULTIPLE_UNFILTERED.to_error());
    }
    for other in others {
        let other_config = other.config();
        let other_filters = other_config.filters();
        if other_filters.is_empty()
            || filters.iter().any(|filter| {
                other_filters
                    .iter()
                    .any(|other_filter| crate::subject::overlaps(filter, other_filter))
            })
        {
            return Err(errors::CONSUMER_WQ_CONSUMER_NOT_UNIQUE.to_error());
        }
    }
    Ok(())
}
