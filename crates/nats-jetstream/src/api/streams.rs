//! `STREAM.CREATE`, `UPDATE`, `INFO`, `DELETE`, `PURGE`, `NAMES` and `LIST`.

use super::Context;
use super::Request;
use crate::registry::beside::{Admitted, Beside};
use crate::stream::{ConfigForm, Stream, StreamCommand};
use jetstream_api::advisory::ActionKind;
use jetstream_api::json::decode_request;
use jetstream_api::{
    errors, metadata, ApiError, ClusterInfo, Nanos, Paged, StreamConfig, StreamConfigRequest,
    StreamCreateResponse, StreamInfo, StreamInfoRequest, StreamInfoResponse, StreamListPage,
    StreamListResponse, StreamNamesRequest, StreamNamesResponse, StreamPurgeRequest,
    StreamPurgeResponse, StreamSourceInfo, StreamState, StreamUpdateResponse, SuccessResponse,
    Timestamp, STREAM_DELETE_RESPONSE_TYPE, STREAM_INFO_RESPONSE_TYPE, STREAM_LIST_RESPONSE_TYPE,
    STREAM_NAMES_RESPONSE_TYPE,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::oneshot;

/// nats-server's `JSApiNamesLimit` and `JSApiListLimit`.
const NAMES_LIMIT: usize = 1024;
const LIST_LIMIT: usize = 256;
const MAX_SUBJECT_DETAILS: usize = 100_000;

/// Which response a stream info is built for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum InfoView {
    Info,
    Create,
    Update,
    List,
}

/// What STREAM.INFO may add to the state.
#[derive(Default)]
pub(crate) struct InfoDetail<'a> {
    pub deleted_details: bool,
    pub subjects_filter: Option<&'a str>,
}

/// A stream's info as nats-server builds it. `view` decides the extras: INFO reports the
/// leader and the dynamic metadata, CREATE/UPDATE only the metadata, LIST neither; all but
/// CREATE carry the domain.
pub(crate) fn build_stream_info(
    context: &Context,
    stream: &Stream,
    detail: &InfoDetail<'_>,
    view: InfoView,
) -> (StreamInfo, usize) {
    let (mut info, subjects_total) = stream_info_but_config(context, stream, detail, view);
    let config = stream.config();
    info.config = if view == InfoView::List {
        config
    } else {
        metadata::stream_config_for_response(&config)
    };
    (info, subjects_total)
}

/// The form of the config `view` shows.
fn config_form(view: InfoView) -> ConfigForm {
    if view == InfoView::List {
        ConfigForm::Stored
    } else {
        ConfigForm::Shown
    }
}

/// [`build_stream_info`] with a default `config`: the answers that write the stream's kept
/// encoding of it ([`crate::stream::ConfigCell::encoded`]) in its place.
fn stream_info_but_config(
    context: &Context,
    stream: &Stream,
    detail: &InfoDetail<'_>,
    view: InfoView,
) -> (StreamInfo, usize) {
    // A clustered server shows the cluster in every view, as nats-server does.
    let cluster_name = context.cluster.get().map(|cluster| cluster.name());
    let with_cluster = view == InfoView::Info || cluster_name.is_some();
    let mirror_source = stream.config.read().mirror.clone();
    // Sources first, the message counts after: a source position reported here has its message
    // in the counts below (a message stored in between only makes the lag look higher for one
    // answer). A mirror's lag is taken after the counts, from the same last sequence, with the
    // origin read last: never lower than the truth, and 0 whenever the answer's own state has
    // caught up with the origin.
    let mut mirror = mirror_source.as_ref().map(|source| {
        let origin_missing = stream
            .mirror_origin_missing
            .load(std::sync::atomic::Ordering::Relaxed);
        let contact = stream
            .mirror_contact
            .load(std::sync::atomic::Ordering::Relaxed);
        StreamSourceInfo {
            name: source.name.clone(),
            external: source.external.clone(),
            error: origin_missing.then(|| errors::STREAM_NOT_FOUND.to_error()),
            active: if contact == 0 {
                Nanos(-1)
            } else {
                Nanos((crate::time_format::now_nanos() - contact).max(0))
            },
            filter_subject: source.filter_subject.clone(),
            subject_transforms: source.subject_transforms.clone(),
            ..Default::default()
        }
    });
    let sources = crate::stream::sources_info(stream, &*context.registry);
    let (state, subjects_total) = {
        let mut store = stream.store.read();
        let raw = store.state();
        let mut state = StreamState {
            messages: raw.msgs,
            bytes: raw.bytes,
            first_seq: if raw.last_seq == 0 && raw.first_seq <= 1 {
                0
            } else {
                raw.first_seq
            },
            first_time: timestamp_or_zero(raw.first_timestamp, raw.msgs > 0),
            last_seq: raw.last_seq,
            last_time: timestamp_or_zero(raw.last_timestamp, raw.last_timestamp != 0),
            num_subjects: raw.num_subjects,
            num_deleted: raw.num_deleted,
            consumer_count: stream.interest.count() as u64,
            ..Default::default()
        };
        if detail.deleted_details {
            state.deleted = store.deleted_seqs();
        }
        let mut subjects_total = 0;
        if let Some(filter) = detail.subjects_filter.filter(|filter| !filter.is_empty()) {
            let subjects: BTreeMap<String, u64> = store
                .subjects_state(filter)
                .into_iter()
                .map(|(subject, counts)| (subject, counts.msgs))
                .collect();
            subjects_total = subjects.len();
            state.subjects = subjects;
        }
        (state, subjects_total)
    };
    if let (Some(info), Some(source)) = (mirror.as_mut(), mirror_source.as_ref()) {
        let origin_last = context
            .registry
            .get(&source.name)
            .filter(|_| source.external.is_none())
            .map(|origin| *origin.last_sequence.borrow())
            .unwrap_or(state.last_seq);
        info.lag = origin_last.saturating_sub(state.last_seq);
    }
    let info = StreamInfo {
        mirror,
        sources,
        created: Timestamp::from_unix_nanos(stream.created),
        state,
        // nats-server leaves the domain out of CREATE responses only.
        domain: if view == InfoView::Create {
            String::new()
        } else {
            context.domain.clone().unwrap_or_default()
        },
        cluster: with_cluster.then(|| {
            // A replicated stream's block comes from its group (leader, replicas).
            context
                .cluster
                .get()
                .and_then(|cluster| cluster.stream_group(&stream.name))
                .and_then(|group| group.cluster_info())
                .unwrap_or_else(|| ClusterInfo {
                    name: cluster_name.unwrap_or_default(),
                    leader: context.server_name.clone(),
                    ..Default::default()
                })
        }),
        timestamp: Timestamp::now(),
        ..Default::default()
    };
    (info, subjects_total)
}

pub(crate) async fn stream_create(context: &Arc<Context>, request: &Request, name: &str) {
    // A plain file stream is created beside the others in flight (`registry/beside.rs`);
    // anything else, or a request these checks refuse, takes the serial path below (with the
    // request decoded once for both).
    let decoded = decode_request::<StreamConfigRequest>(&request.payload);
    let requested = decoded
        .as_ref()
        .ok()
        .filter(|requested| check_create_request(&requested.config, name).is_ok());
    if let Some(requested) = requested {
        loop {
            match context
                .registry
                .admit_beside(&requested.config, requested.pedantic, &context.creations)
                .await
            {
                Beside::Serial => break,
                // The sender lives in the context: it cannot be dropped meanwhile.
                Beside::Wait(mut changes) => {
                    let _ = changes.changed().await;
                }
                Beside::Admitted(admitted) => {
                    let (context, request) = (context.clone(), request.clone());
                    tokio::spawn(async move { create_beside(&context, &request, admitted).await });
                    return;
                }
            }
        }
    }
    let result = try_stream_create(context, decoded, name).await;
    answer_created(context, request, name, result);
}

/// An admitted creation's store made on a blocking thread, the stream started and registered,
/// then answered as the serial path answers.
async fn create_beside(context: &Arc<Context>, request: &Request, admitted: Box<Admitted>) {
    let registry = context.registry.clone();
    let (config, created) = (admitted.config.clone(), admitted.created);
    let store = tokio::task::spawn_blocking(move || registry.open_admitted(&config, created))
        .await
        .unwrap_or_else(|_| Err(errors::STREAM_CREATE.with_err("stream creation stopped")));
    let name = admitted.config.name.clone();
    let result =
        context
            .registry
            .finish_admitted(admitted, store)
            .await
            .map(|(stream, pending)| {
                let (info, _) =
                    build_stream_info(context, &stream, &InfoDetail::default(), InfoView::Create);
                (info, true, pending)
            });
    answer_created(context, request, &name, result);
}

/// Answer a STREAM.CREATE once what it created is durable.
fn answer_created(
    context: &Arc<Context>,
    request: &Request,
    name: &str,
    result: Result<(StreamInfo, bool, Option<Arc<nats_store::CreationSync>>), ApiError>,
) {
    match result {
        Ok((info, did_create, pending)) => {
            let (request, name) = (request.clone(), name.to_string());
            context.answer_when_durable(pending, move |context, synced| match synced {
                Ok(()) => {
                    if did_create {
                        context.advise_stream_action(&name, ActionKind::Create);
                    }
                    // nats-server answers `did_create: true` for an identical existing stream too.
                    context.respond(&request, &StreamCreateResponse::ok(info, true), false)
                }
                Err(error) => context.respond(
                    &request,
                    &StreamCreateResponse::error(errors::STREAM_CREATE.with_err(error)),
                    true,
                ),
            });
        }
        Err(error) => context.respond(request, &StreamCreateResponse::error(error), true),
    }
}

/// STREAM.CREATE's checks of the request itself, before any look at other streams (the
/// single server's and the meta leader's).
pub(crate) fn check_create_request(config: &StreamConfig, name: &str) -> Result<(), ApiError> {
    if config.name != name {
        return Err(errors::STREAM_MISMATCH.to_error());
    }
    if name.contains(['/', '\\']) {
        return Err(errors::STREAM_NAME_CONTAINS_PATH_SEPARATORS.to_error());
    }
    if config.sealed {
        return Err(errors::STREAM_INVALID_CONFIG
            .with_err("stream configuration for create can not be sealed"));
    }
    if config.mirror_direct && config.mirror.is_none() {
        return Err(errors::STREAM_INVALID_CONFIG
            .with_err("stream has no mirror but does have mirror direct"));
    }
    Ok(())
}

async fn try_stream_create(
    context: &Context,
    decoded: Result<StreamConfigRequest, ApiError>,
    name: &str,
) -> Result<(StreamInfo, bool, Option<Arc<nats_store::CreationSync>>), ApiError> {
    let config_request = decoded?;
    let config = config_request.config;
    check_create_request(&config, name)?;
    let (stream, did_create, pending) = context
        .registry
        .create_stream(&config, config_request.pedantic)
        .await
        .map_err(wrap_create_error)?;
    let (mut info, _) =
        build_stream_info(context, &stream, &InfoDetail::default(), InfoView::Create);
    if did_create {
        // nats-server answers before its mirror or sources start: none has had contact.
        // Ours start on the runtime while this thread builds the answer, so say the same.
        if let Some(mirror) = info.mirror.as_mut() {
            mirror.active = Nanos(-1);
        }
        for source in &mut info.sources {
            source.active = Nanos(-1);
        }
    }
    Ok((info, did_create, pending))
}

pub(crate) async fn stream_update(context: &Context, request: &Request, name: &str) {
    let result = async {
        let config_request: StreamConfigRequest = decode_request(&request.payload)?;
        let config = config_request.config;
        if config.name != name {
            return Err(errors::STREAM_MISMATCH.to_error());
        }
        let stream = context
            .registry
            .update_stream(&config, config_request.pedantic)
            .await
            .map_err(|error| {
                if error.err_code == 0 {
                    errors::STREAM_UPDATE.with_err(error.description)
                } else {
                    error
                }
            })?;
        let (info, _) =
            build_stream_info(context, &stream, &InfoDetail::default(), InfoView::Update);
        Ok::<_, ApiError>(info)
    }
    .await;
    match result {
        Ok(info) => {
            context.advise_stream_action(name, ActionKind::Modify);
            context.respond(request, &StreamUpdateResponse::ok(info), false)
        }
        Err(error) => context.respond(request, &StreamUpdateResponse::error(error), true),
    }
}

pub(crate) fn stream_info(context: &Context, request: &Request, name: &str) {
    let info_request: StreamInfoRequest = if request.has_json_body() {
        match decode_request(&request.payload) {
            Ok(parsed) => parsed,
            Err(error) => return context.respond(request, &StreamInfoResponse::error(error), true),
        }
    } else {
        StreamInfoRequest::default()
    };
    let Some(stream) = context.registry.get(name) else {
        return context.respond(
            request,
            &StreamInfoResponse::error(errors::STREAM_NOT_FOUND.to_error()),
            true,
        );
    };
    let detail = InfoDetail {
        deleted_details: info_request.deleted_details,
        subjects_filter: Some(info_request.subjects_filter.as_str()),
    };
    let (mut info, subjects_total) =
        stream_info_but_config(context, &stream, &detail, InfoView::Info);
    let mut paged = Paged::default();
    if subjects_total > 0 {
        let offset = info_request.offset.min(subjects_total);
        paged = Paged {
            total: subjects_total,
            offset,
            limit: MAX_SUBJECT_DETAILS,
        };
        if offset > 0 || subjects_total > MAX_SUBJECT_DETAILS {
            info.state.subjects = std::mem::take(&mut info.state.subjects)
                .into_iter()
                .skip(offset)
                .take(MAX_SUBJECT_DETAILS)
                .collect();
        }
    }
    let _ = STREAM_INFO_RESPONSE_TYPE;
    // `StreamInfoResponse::ok(info, paged)` with the config as the stream keeps it encoded.
    let config = stream.config.encoded(config_form(InfoView::Info));
    let body = StreamInfoResponse::encode_ok(&info, &config, &paged);
    context.respond_encoded(request, body, false);
}

pub(crate) async fn stream_delete(context: &Context, request: &Request, name: &str) {
    match context.registry.delete_stream(name).await {
        Ok(()) => {
            context.advise_stream_action(name, ActionKind::Delete);
            context.respond(
                request,
                &SuccessResponse::ok(STREAM_DELETE_RESPONSE_TYPE),
                false,
            )
        }
        Err(error) => context.respond(
            request,
            &SuccessResponse::error(STREAM_DELETE_RESPONSE_TYPE, error),
            true,
        ),
    }
}

/// Stream `name` and its config, for a request that removes messages: 10059 when there is no
/// such stream, 10109 when it is sealed (purge, message delete).
pub(crate) fn unsealed_stream(
    context: &Context,
    name: &str,
) -> Result<(Arc<Stream>, jetstream_api::StreamConfig), jetstream_api::ApiError> {
    let stream = context
        .registry
        .get(name)
        .ok_or_else(|| errors::STREAM_NOT_FOUND.to_error())?;
    let config = stream.config();
    if config.sealed {
        return Err(errors::STREAM_SEALED.to_error());
    }
    Ok((stream, config))
}

pub(crate) async fn stream_purge(context: &Context, request: &Request, name: &str) {
    let result = async {
        let purge: StreamPurgeRequest = if request.has_json_body() {
            decode_request(&request.payload)?
        } else {
            StreamPurgeRequest::default()
        };
        if purge.sequence > 0 && purge.keep > 0 {
            return Err(errors::BAD_REQUEST.to_error());
        }
        let (stream, config) = unsealed_stream(context, name)?;
        if config.deny_purge {
            return Err(errors::STREAM_PURGE_FAILED.with_err("stream purge not permitted"));
        }
        let (reply, done) = oneshot::channel();
        stream.send(StreamCommand::Purge {
            filter: purge.filter,
            up_to_seq: purge.sequence,
            keep: purge.keep,
            reply,
        });
        done.await
            .unwrap_or_else(|_| Err(errors::STREAM_PURGE_FAILED.with_err("stream stopped")))
    }
    .await;
    match result {
        Ok(purged) => context.respond(request, &StreamPurgeResponse::ok(purged), false),
        Err(error) => context.respond(request, &StreamPurgeResponse::error(error), true),
    }
}

/// Streams (sorted by name) whose subjects overlap `filter` (all when empty).
fn filtered_streams(context: &Context, filter: &str) -> Vec<Arc<Stream>> {
    context
        .registry
        .all()
        .into_iter()
        .filter(|stream| {
            filter.is_empty()
                || stream
                    .config
                    .read()
                    .subjects
                    .iter()
                    .any(|subject| crate::subject::overlaps(filter, subject))
        })
        .collect()
}

pub(crate) fn stream_names(context: &Context, request: &Request) {
    let names_request: StreamNamesRequest = if request.has_json_body() {
        match decode_request(&request.payload) {
            Ok(parsed) => parsed,
            Err(error) => {
                return context.respond(request, &StreamNamesResponse::error(error), true)
            }
        }
    } else {
        StreamNamesRequest::default()
    };
    let (total, offset, names) = if names_request.subject.is_empty() {
        let (total, names) = context
            .registry
            .names_page(names_request.offset, NAMES_LIMIT);
        (total, names_request.offset.min(total), names)
    } else {
        let streams = filtered_streams(context, &names_request.subject);
        let total = streams.len();
        let offset = names_request.offset.min(total);
        let names = streams
            .iter()
            .skip(offset)
            .take(NAMES_LIMIT)
            .map(|stream| stream.name.clone())
            .collect();
        (total, offset, names)
    };
    // nats-server leaves the slice nil (JSON null) when nothing was appended.
    let names = (!names.is_empty()).then_some(names);
    let paged = Paged {
        total,
        offset,
        limit: NAMES_LIMIT,
    };
    let _ = STREAM_NAMES_RESPONSE_TYPE;
    context.respond(request, &StreamNamesResponse::ok(names, paged), false);
}

pub(crate) fn stream_list(context: &Context, request: &Request) {
    let list_request: StreamNamesRequest = if request.has_json_body() {
        match decode_request(&request.payload) {
            Ok(parsed) => parsed,
            Err(error) => return context.respond(request, &StreamListResponse::error(error), true),
        }
    } else {
        StreamNamesRequest::default()
    };
    let (total, page) = if list_request.subject.is_empty() {
        context
            .registry
            .streams_page(list_request.offset, LIST_LIMIT)
    } else {
        let streams = filtered_streams(context, &list_request.subject);
        let total = streams.len();
        let page = streams
            .into_iter()
            .skip(list_request.offset)
            .take(LIST_LIMIT)
            .collect();
        (total, page)
    };
    let offset = list_request.offset.min(total);
    let paged = Paged {
        total,
        offset,
        limit: LIST_LIMIT,
    };
    // `StreamListResponse::ok(infos, paged)`, written as the streams are visited, each
    // config as the stream keeps it encoded.
    let _ = STREAM_LIST_RESPONSE_TYPE;
    let mut body = StreamListPage::new(&paged, page.len());
    for stream in &page {
        let (info, _) =
            stream_info_but_config(context, stream, &InfoDetail::default(), InfoView::List);
        body.push(&stream.config.encoded(config_form(InfoView::List)), &info);
    }
    context.respond_encoded(request, body.finish(), false);
}

fn timestamp_or_zero(nanos: i64, present: bool) -> Timestamp {
    if present {
        Timestamp::from_unix_nanos(nanos)
    } else {
        Timestamp::ZERO
    }
}

/// nats-server's `NewJSStreamCreateError(err, Unless(err))`: API errors pass through.
fn wrap_create_error(error: ApiError) -> ApiError {
    error
}
