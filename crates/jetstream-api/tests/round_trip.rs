//! Every public JSON type, with every field set to a non-default value, survives
//! encode -> decode unchanged; and decodes from the minimal `{}`-style input where nats-server
//! would accept that.

use std::collections::BTreeMap;

use jetstream_api::advisory::{
    ActionKind, Advisory, ApiAudit, ApiLimitReached, ClientInfo, ConsumerAckMetric,
    ConsumerActionAdvisory, ConsumerPause, DeliveryExceeded, DeliveryNak, DeliveryTerminated,
    RestoreComplete, RestoreCreate, ServerOutOfSpace, SnapshotComplete, SnapshotCreate,
    StreamAction,
};
use jetstream_api::json::encode_response;
use jetstream_api::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) {
    let bytes = encode_response(value);
    let back: T = serde_json::from_slice(&bytes).unwrap_or_else(|error| {
        panic!(
            "decode of {} failed: {error}",
            String::from_utf8_lossy(&bytes)
        )
    });
    assert_eq!(&back, value, "{}", String::from_utf8_lossy(&bytes));
}

fn time(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

fn metadata() -> BTreeMap<String, String> {
    BTreeMap::from([("a<b".to_string(), "c&d".to_string())])
}

fn full_stream_config() -> StreamConfig {
    let source = StreamSource {
        name: "UP".into(),
        opt_start_seq: 3,
        opt_start_time: Some(time("2026-01-01T00:00:00.5+02:00")),
        filter_subject: "up.>".into(),
        subject_transforms: vec![SubjectTransform {
            source: "up.*".into(),
            destination: "down.{{wildcard(1)}}".into(),
        }],
        external: Some(ExternalStream {
            api_prefix: "$JS.hub.API".into(),
            deliver_prefix: "deliver.hub".into(),
        }),
        consumer: Some(StreamConsumerSource {
            name: "src".into(),
            deliver_subject: "src.deliver".into(),
        }),
    };
    StreamConfig {
        name: "ORDERS".into(),
        description: "orders".into(),
        subjects: vec!["orders.>".into(), "returns.*".into()],
        retention: RetentionPolicy::WorkQueue,
        max_consumers: 10,
        max_msgs: 1_000,
        max_bytes: 1 << 20,
        max_age: Nanos::from_secs(3600),
        max_msgs_per_subject: 5,
        max_msg_size: 1024,
        discard: DiscardPolicy::New,
        storage: StorageType::Memory,
        replicas: 1,
        no_ack: true,
        duplicate_window: Nanos::from_secs(60),
        placement: Some(Placement {
            cluster: "c1".into(),
            tags: vec!["ssd".into()],
            preferred: "n1".into(),
        }),
        mirror: Some(source.clone()),
        sources: vec![source],
        compression: Compression::S2,
        first_seq: 100,
        subject_transform: Some(SubjectTransform {
            source: "orders.>".into(),
            destination: "o.>".into(),
        }),
        republish: Some(RePublish {
            source: ">".into(),
            destination: "rp.>".into(),
            headers_only: true,
        }),
        allow_direct: true,
        mirror_direct: true,
        discard_new_per_subject: true,
        sealed: true,
        deny_delete: true,
        deny_purge: true,
        allow_rollup: true,
        consumer_limits: StreamConsumerLimits {
            inactive_threshold: Nanos::from_secs(10),
            max_ack_pending: 100,
        },
        allow_msg_ttl: true,
        subject_delete_marker_ttl: Nanos::from_secs(1),
        allow_msg_counter: true,
        allow_atomic_publish: true,
        allow_msg_schedules: true,
        persist_mode: PersistMode::Async,
        allow_batch_publish: true,
        metadata: metadata(),
    }
}

fn full_stream_info() -> StreamInfo {
    StreamInfo {
        config: full_stream_config(),
        created: time("2026-11-29T19:15:30.79321491Z"),
        state: StreamState {
            messages: 2,
            bytes: 119,
            first_seq: 1,
            first_time: time("2026-11-29T19:15:31.012704297Z"),
            last_seq: 3,
            last_time: time("2026-11-29T19:15:31.056675061Z"),
            num_subjects: 2,
            subjects: BTreeMap::from([("orders.1".to_string(), 1), ("orders.2".to_string(), 1)]),
            num_deleted: 1,
            deleted: vec![2],
            lost: Some(LostStreamData {
                messages: vec![7],
                bytes: 10,
            }),
            consumer_count: 4,
        },
        domain: "hub".into(),
        cluster: Some(ClusterInfo {
            name: "c1".into(),
            raft_group: "S-R1F".into(),
            leader: "n1".into(),
            leader_since: Some(time("2026-11-29T19:00:00Z")),
            system_account: true,
            traffic_account: "SYS".into(),
            replicas: vec![PeerInfo {
                name: "n2".into(),
                current: true,
                offline: true,
                active: Nanos::from_millis(5),
                lag: 3,
                peer: "abc".into(),
                pending: true,
            }],
        }),
        mirror: Some(StreamSourceInfo {
            name: "UP".into(),
            external: None,
            lag: 1,
            seq: 0,
            active: Nanos(-1),
            error: Some(errors::STREAM_NOT_FOUND.to_error()),
            filter_subject: "up.>".into(),
            subject_transforms: vec![],
        }),
        sources: vec![StreamSourceInfo {
            name: "UP2".into(),
            ..Default::default()
        }],
        alternates: vec![StreamAlternate {
            name: "ORDERS".into(),
            domain: "leaf".into(),
            cluster: "c2".into(),
        }],
        timestamp: time("2026-11-29T19:15:31.188867961Z"),
    }
}

fn full_consumer_config() -> ConsumerConfig {
    ConsumerConfig {
        durable_name: "D".into(),
        name: "D".into(),
        description: "desc".into(),
        deliver_policy: DeliverPolicy::ByStartTime,
        opt_start_seq: 4,
        opt_start_time: Some(time("2026-01-01T00:00:00Z")),
        ack_policy: AckPolicy::Explicit,
        ack_wait: Nanos::from_secs(30),
        max_deliver: 5,
        backoff: vec![Nanos::from_secs(1), Nanos::from_secs(5)],
        filter_subject: "orders.*".into(),
        filter_subjects: vec!["a".into(), "b".into()],
        replay_policy: ReplayPolicy::Original,
        rate_limit: 1_000_000,
        sample_frequency: "50%".into(),
        max_waiting: 512,
        max_ack_pending: 1000,
        flow_control: true,
        headers_only: true,
        max_request_batch: 10,
        max_request_expires: Nanos::from_secs(30),
        max_request_max_bytes: 1024,
        deliver_subject: "deliver".into(),
        deliver_group: "workers".into(),
        idle_heartbeat: Nanos::from_secs(5),
        inactive_threshold: Nanos::from_secs(60),
        replicas: 1,
        memory_storage: true,
        direct: true,
        sourcing: true,
        metadata: metadata(),
        pause_until: Some(time("2099-01-01T00:00:00Z")),
        priority_groups: vec!["A".into()],
        priority_policy: PriorityPolicy::PinnedClient,
        pinned_ttl: Nanos::from_secs(120),
    }
}

fn full_consumer_info() -> ConsumerInfo {
    ConsumerInfo {
        stream_name: "ORDERS".into(),
        name: "D".into(),
        created: time("2026-11-29T19:22:18.596688599Z"),
        config: Some(full_consumer_config()),
        delivered: SequenceInfo {
            consumer_sequence: 2,
            stream_sequence: 3,
            last_active: Some(time("2026-11-29T19:22:19.408630276Z")),
        },
        ack_floor: SequenceInfo {
            consumer_sequence: 1,
            stream_sequence: 1,
            last_active: None,
        },
        num_ack_pending: 1,
        num_redelivered: 2,
        num_waiting: 3,
        num_pending: 4,
        cluster: Some(ClusterInfo {
            leader: "n1".into(),
            ..Default::default()
        }),
        push_bound: true,
        paused: true,
        pause_remaining: Nanos::from_secs(99),
        timestamp: time("2026-11-29T19:22:19.452723373Z"),
        priority_groups: vec![PriorityGroupState {
            group: "A".into(),
            pinned_client_id: "pin".into(),
            pinned_time: time("2026-11-29T19:22:19Z"),
        }],
    }
}

#[test]
fn stream_types() {
    round_trip(&full_stream_config());
    round_trip(&StreamConfig::default());
    round_trip(&full_stream_info());
    round_trip(&StreamConfigRequest {
        config: full_stream_config(),
        pedantic: true,
    });
    round_trip(&StreamCreateResponse::ok(full_stream_info(), true));
    round_trip(&StreamCreateResponse::error(
        errors::STREAM_NAME_EXIST.to_error(),
    ));
    round_trip(&StreamUpdateResponse::ok(full_stream_info()));
    round_trip(&StreamUpdateResponse::error(
        errors::STREAM_NOT_FOUND.to_error(),
    ));
    round_trip(&StreamInfoResponse::ok(
        full_stream_info(),
        Paged {
            total: 2,
            offset: 0,
            limit: 100_000,
        },
    ));
    round_trip(&StreamInfoResponse::error(
        errors::STREAM_NOT_FOUND.to_error(),
    ));
    round_trip(&StreamInfoRequest {
        offset: 3,
        deleted_details: true,
        subjects_filter: ">".into(),
    });
    round_trip(&StreamNamesRequest {
        offset: 1,
        subject: "orders.1".into(),
    });
    round_trip(&StreamNamesResponse::ok(
        Some(vec!["A".into()]),
        Paged::default(),
    ));
    round_trip(&StreamNamesResponse::ok(None, Paged::default()));
    round_trip(&StreamListResponse::ok(
        vec![full_stream_info()],
        Paged {
            total: 1,
            offset: 0,
            limit: 256,
        },
    ));
    round_trip(&StreamListResponse {
        missing: vec!["X".into()],
        offline: BTreeMap::from([("Y".to_string(), "gone".to_string())]),
        ..StreamListResponse::error(errors::BAD_REQUEST.to_error())
    });
    round_trip(&StreamPurgeRequest {
        sequence: 5,
        filter: "a.*".into(),
        keep: 2,
    });
    round_trip(&StreamPurgeResponse::ok(7));
    round_trip(&StreamPurgeResponse::error(errors::BAD_REQUEST.to_error()));
    round_trip(&SuccessResponse::ok(STREAM_DELETE_RESPONSE_TYPE));
    round_trip(&SuccessResponse::error(
        STREAM_MSG_DELETE_RESPONSE_TYPE,
        errors::STREAM_MSG_DELETE_FAILED.with_err("x"),
    ));
    round_trip(&MsgDeleteRequest {
        sequence: 3,
        no_erase: true,
    });
    round_trip(&MsgGetRequest {
        sequence: 1,
        last_by_subject: "a".into(),
        next_by_subject: "b.*".into(),
        batch: 5,
        max_bytes: 1024,
        start_time: Some(time("2026-01-01T00:00:00Z")),
        multi_last: vec!["x".into(), "y".into()],
        up_to_sequence: 9,
        up_to_time: Some(time("2026-02-01T00:00:00Z")),
        no_headers: true,
    });
    round_trip(&MsgGetResponse::ok(StoredMessage::new(
        "orders.1",
        1,
        b"NATS/1.0\r\nA: b\r\n\r\n",
        b"hello",
        time("2026-11-29T19:15:31.012704297Z"),
    )));
    round_trip(&MsgGetResponse::error(errors::NO_MESSAGE_FOUND.to_error()));
    round_trip(&StreamSnapshotRequest {
        deliver_subject: "snap".into(),
        no_consumers: true,
        chunk_size: 1024,
        window_size: 4096,
        check_messages: true,
    });
    round_trip(&ApiResponse::error(
        SYSTEM_RESPONSE_TYPE,
        errors::BAD_REQUEST.to_error(),
    ));
    round_trip(&PubAck {
        error: None,
        stream: "S".into(),
        sequence: 9,
        domain: "hub".into(),
        duplicate: true,
        value: "12".into(),
        batch_id: "b".into(),
        batch_size: 3,
    });
    round_trip(&PubAck::error(
        "S",
        errors::STREAM_WRONG_LAST_SEQUENCE.with(&[("seq", &4)]),
    ));
}

#[test]
fn consumer_types() {
    round_trip(&full_consumer_config());
    round_trip(&ConsumerConfig::default());
    round_trip(&full_consumer_info());
    round_trip(&CreateConsumerRequest {
        stream_name: "ORDERS".into(),
        config: full_consumer_config(),
        action: ConsumerAction::Update,
        pedantic: true,
    });
    round_trip(&ConsumerInfoResponse::created(full_consumer_info()));
    round_trip(&ConsumerInfoResponse::info(full_consumer_info()));
    round_trip(&ConsumerInfoResponse::error(
        CONSUMER_INFO_RESPONSE_TYPE,
        errors::CONSUMER_NOT_FOUND.to_error(),
    ));
    round_trip(&ConsumersRequest { offset: 4 });
    round_trip(&ConsumerNamesResponse::ok(
        vec!["A".into(), "B".into()],
        Paged::default(),
    ));
    round_trip(&ConsumerNamesResponse::error(
        errors::STREAM_NOT_FOUND.to_error(),
    ));
    round_trip(&ConsumerListResponse::ok(
        vec![full_consumer_info()],
        Paged::default(),
    ));
    round_trip(&ConsumerPauseRequest {
        pause_until: time("2099-01-01T00:00:00Z"),
    });
    round_trip(&ConsumerPauseResponse::ok(
        true,
        time("2099-01-01T00:00:00Z"),
        Nanos::from_secs(5),
    ));
    round_trip(&ConsumerPauseResponse::error(
        errors::CONSUMER_NOT_FOUND.to_error(),
    ));
    round_trip(&ConsumerUnpinRequest { group: "A".into() });
    round_trip(&ConsumerResetRequest { sequence: 10 });
    round_trip(&NextRequest {
        expires: Nanos::from_secs(30),
        batch: 100,
        max_bytes: 1 << 20,
        no_wait: true,
        heartbeat: Nanos::from_secs(5),
        group: "A".into(),
        min_pending: 10,
        min_ack_pending: 5,
        id: "pin".into(),
        priority: 3,
    });
    round_trip(&NakOptions {
        delay: Nanos::from_secs(2),
    });
}

#[test]
fn account_and_advisory_types() {
    let tier = AccountTier {
        memory: 1,
        storage: 2,
        reserved_memory: 3,
        reserved_storage: 4,
        streams: 5,
        consumers: 6,
        limits: AccountLimits {
            max_memory: 1 << 30,
            max_storage: 1 << 34,
            max_streams: 10,
            max_consumers: 100,
            max_ack_pending: 1000,
            memory_max_stream_bytes: 1 << 20,
            storage_max_stream_bytes: 1 << 24,
            max_bytes_required: true,
        },
    };
    round_trip(&AccountInfoResponse::ok(AccountInfo {
        totals: tier.clone(),
        domain: "hub".into(),
        api: ApiStats {
            level: 5,
            total: 10,
            errors: 2,
            inflight: 1,
        },
        tiers: BTreeMap::from([("R1".to_string(), tier)]),
    }));
    round_trip(&AccountInfoResponse::error(
        errors::NOT_ENABLED_FOR_ACCOUNT.to_error(),
    ));

    let when = time("2026-11-29T19:26:11.001604355Z");
    let client = ClientInfo {
        start: Some(when),
        host: "127.0.0.1".into(),
        id: 66,
        account: "$G".into(),
        service: "svc".into(),
        user: "u".into(),
        name: "n".into(),
        lang: "rust".into(),
        version: "0.51".into(),
        rtt: Nanos(4_035_693),
        server: "S".into(),
        cluster: "c".into(),
        alternates: vec!["alt".into()],
        stop: Some(when),
        jwt: "jwt".into(),
        issuer_key: "ik".into(),
        name_tag: "nt".into(),
        tags: vec!["t".into()],
        kind: "Client".into(),
        client_type: "nats".into(),
        mqtt_client: "m".into(),
        nonce: "nonce".into(),
        reply: "r".into(),
    };
    round_trip(&Advisory::new(
        "id",
        when,
        StreamAction {
            stream: "S".into(),
            action: ActionKind::Modify,
            domain: "hub".into(),
        },
    ));
    round_trip(&Advisory::new(
        "id",
        when,
        ConsumerActionAdvisory {
            stream: "S".into(),
            consumer: "C".into(),
            action: ActionKind::Delete,
            domain: "hub".into(),
        },
    ));
    round_trip(&Advisory::new(
        "id",
        when,
        ConsumerPause {
            stream: "S".into(),
            consumer: "C".into(),
            paused: true,
            pause_until: when,
            domain: String::new(),
        },
    ));
    round_trip(&Advisory::new(
        "id",
        when,
        ConsumerAckMetric {
            stream: "S".into(),
            consumer: "C".into(),
            consumer_sequence: 1,
            stream_sequence: 2,
            ack_time: Nanos(764_359),
            deliveries: 1,
            domain: String::new(),
        },
    ));
    round_trip(&Advisory::new(
        "id",
        when,
        DeliveryExceeded {
            stream: "S".into(),
            consumer: "C".into(),
            stream_sequence: 2,
            deliveries: 5,
            domain: String::new(),
        },
    ));
    round_trip(&Advisory::new(
        "id",
        when,
        DeliveryNak {
            stream: "S".into(),
            consumer: "C".into(),
            consumer_sequence: 3,
            stream_sequence: 2,
            deliveries: 2,
            domain: String::new(),
        },
    ));
    round_trip(&Advisory::new(
        "id",
        when,
        DeliveryTerminated {
            stream: "S".into(),
            consumer: "C".into(),
            consumer_sequence: 4,
            stream_sequence: 3,
            deliveries: 1,
            reason: "because".into(),
            domain: String::new(),
        },
    ));
    round_trip(&Advisory::new(
        "id",
        when,
        ApiAudit {
            server: "S".into(),
            client: Some(client.clone()),
            subject: "$JS.API.INFO".into(),
            request: "{}".into(),
            response: "{\"a\":\"<>\"}".into(),
            domain: "hub".into(),
        },
    ));
    round_trip(&Advisory::new(
        "id",
        when,
        SnapshotCreate {
            stream: "S".into(),
            state: StreamState::default(),
            client: None,
            domain: String::new(),
        },
    ));
    round_trip(&Advisory::new(
        "id",
        when,
        SnapshotComplete {
            stream: "S".into(),
            start: when,
            end: when,
            client: Some(client.clone()),
            domain: String::new(),
            error: "e".into(),
        },
    ));
    round_trip(&Advisory::new(
        "id",
        when,
        RestoreCreate {
            stream: "S".into(),
            client: Some(client.clone()),
            domain: String::new(),
        },
    ));
    round_trip(&Advisory::new(
        "id",
        when,
        RestoreComplete {
            stream: "S".into(),
            start: when,
            end: when,
            bytes: 100,
            client: Some(client),
            domain: String::new(),
        },
    ));
    round_trip(&Advisory::new(
        "id",
        when,
        ServerOutOfSpace {
            server: "S".into(),
            server_id: "ID".into(),
            stream: "X".into(),
            cluster: "c".into(),
            domain: String::new(),
        },
    ));
    round_trip(&Advisory::new(
        "id",
        when,
        ApiLimitReached {
            server: "S".into(),
            domain: String::new(),
            dropped: 3,
        },
    ));
}

#[test]
fn error_responses_have_no_payload() {
    // An error response must decode with `info: None`, not an info full of defaults.
    let response: StreamCreateResponse = serde_json::from_slice(&encode_response(
        &StreamCreateResponse::error(errors::STREAM_NOT_FOUND.to_error()),
    ))
    .unwrap();
    assert!(response.info.is_none());
    let response: ConsumerInfoResponse =
        serde_json::from_slice(&encode_response(&ConsumerInfoResponse::error(
            CONSUMER_CREATE_RESPONSE_TYPE,
            errors::CONSUMER_NOT_FOUND.to_error(),
        )))
        .unwrap();
    assert!(response.info.is_none());
}
