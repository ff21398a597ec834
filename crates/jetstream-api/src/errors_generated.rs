//! The JetStream API error table: every entry of nats-server's `server/errors.json`.
//!
//! GENERATED from nats-io/nats-server `server/errors.json` at commit 1787eee035cf (the 2.15
//! development line) by a one-off script; all 226 descriptions were checked to occur verbatim in
//! the nats-server v2.15.1 binary. Do not edit entries by hand: regenerate, so codes and texts
//! never drift. Each constant keeps the Go constant name in `name`; `{placeholder}` tokens in
//! `description` are filled by [`ErrorEntry::with`]. Rust names drop Go's `JS` prefix and
//! `Err`/`ErrF`/`F` suffix (`JSStreamNotFoundErr` is `STREAM_NOT_FOUND`).

use crate::api_error::ErrorEntry;

/// 400 / 10002: "resource limits exceeded for account"
pub const ACCOUNT_RESOURCES_EXCEEDED: ErrorEntry = ErrorEntry {
    name: "JSAccountResourcesExceededErr",
    code: 400,
    err_code: 10002,
    description: "resource limits exceeded for account",
};
/// 400 / 10003: "bad request"
pub const BAD_REQUEST: ErrorEntry = ErrorEntry {
    name: "JSBadRequestErr",
    code: 400,
    err_code: 10003,
    description: "bad request",
};
/// 503 / 10004: "incomplete results"
pub const CLUSTER_INCOMPLETE: ErrorEntry = ErrorEntry {
    name: "JSClusterIncompleteErr",
    code: 503,
    err_code: 10004,
    description: "incomplete results",
};
/// 400 / 10005: "{err}"
pub const CLUSTER_NO_PEERS: ErrorEntry = ErrorEntry {
    name: "JSClusterNoPeersErrF",
    code: 400,
    err_code: 10005,
    description: "{err}",
};
/// 500 / 10006: "JetStream not in clustered mode" (was Go `ErrJetStreamNotClustered`)
pub const CLUSTER_NOT_ACTIVE: ErrorEntry = ErrorEntry {
    name: "JSClusterNotActiveErr",
    code: 500,
    err_code: 10006,
    description: "JetStream not in clustered mode",
};
/// 500 / 10007: "JetStream cluster not assigned to this server" (was Go `ErrJetStreamNotAssigned`)
pub const CLUSTER_NOT_ASSIGNED: ErrorEntry = ErrorEntry {
    name: "JSClusterNotAssignedErr",
    code: 500,
    err_code: 10007,
    description: "JetStream cluster not assigned to this server",
};
/// 503 / 10008: "JetStream system temporarily unavailable"
pub const CLUSTER_NOT_AVAIL: ErrorEntry = ErrorEntry {
    name: "JSClusterNotAvailErr",
    code: 503,
    err_code: 10008,
    description: "JetStream system temporarily unavailable",
};
/// 500 / 10009: "JetStream cluster can not handle request" (was Go `ErrJetStreamNotLeader`)
pub const CLUSTER_NOT_LEADER: ErrorEntry = ErrorEntry {
    name: "JSClusterNotLeaderErr",
    code: 500,
    err_code: 10009,
    description: "JetStream cluster can not handle request",
};
/// 503 / 10010: "JetStream clustering support required"
pub const CLUSTER_REQUIRED: ErrorEntry = ErrorEntry {
    name: "JSClusterRequiredErr",
    code: 503,
    err_code: 10010,
    description: "JetStream clustering support required",
};
/// 400 / 10011: "tags placement not supported for operation"
pub const CLUSTER_TAGS: ErrorEntry = ErrorEntry {
    name: "JSClusterTagsErr",
    code: 400,
    err_code: 10011,
    description: "tags placement not supported for operation",
};
/// 500 / 10012: "{err}"
pub const CONSUMER_CREATE: ErrorEntry = ErrorEntry {
    name: "JSConsumerCreateErrF",
    code: 500,
    err_code: 10012,
    description: "{err}",
};
/// 400 / 10013: "consumer name already in use" (was Go `ErrJetStreamConsumerAlreadyUsed`)
pub const CONSUMER_NAME_EXIST: ErrorEntry = ErrorEntry {
    name: "JSConsumerNameExistErr",
    code: 400,
    err_code: 10013,
    description: "consumer name already in use",
};
/// 404 / 10014: "consumer not found"
pub const CONSUMER_NOT_FOUND: ErrorEntry = ErrorEntry {
    name: "JSConsumerNotFoundErr",
    code: 404,
    err_code: 10014,
    description: "consumer not found",
};
/// 400 / 10015: "deliver subject not valid"
pub const SNAPSHOT_DELIVER_SUBJECT_INVALID: ErrorEntry = ErrorEntry {
    name: "JSSnapshotDeliverSubjectInvalidErr",
    code: 400,
    err_code: 10015,
    description: "deliver subject not valid",
};
/// 400 / 10016: "consumer expected to be durable but no durable name set in subject"
pub const CONSUMER_DURABLE_NAME_NOT_IN_SUBJECT: ErrorEntry = ErrorEntry {
    name: "JSConsumerDurableNameNotInSubjectErr",
    code: 400,
    err_code: 10016,
    description: "consumer expected to be durable but no durable name set in subject",
};
/// 400 / 10017: "consumer name in subject does not match durable name in request"
pub const CONSUMER_DURABLE_NAME_NOT_MATCH_SUBJECT: ErrorEntry = ErrorEntry {
    name: "JSConsumerDurableNameNotMatchSubjectErr",
    code: 400,
    err_code: 10017,
    description: "consumer name in subject does not match durable name in request",
};
/// 400 / 10018: "consumer expected to be durable but a durable name was not set"
pub const CONSUMER_DURABLE_NAME_NOT_SET: ErrorEntry = ErrorEntry {
    name: "JSConsumerDurableNameNotSetErr",
    code: 400,
    err_code: 10018,
    description: "consumer expected to be durable but a durable name was not set",
};
/// 400 / 10019: "consumer expected to be ephemeral but detected a durable name set in subject"
pub const CONSUMER_EPHEMERAL_WITH_DURABLE_IN_SUBJECT: ErrorEntry = ErrorEntry {
    name: "JSConsumerEphemeralWithDurableInSubjectErr",
    code: 400,
    err_code: 10019,
    description: "consumer expected to be ephemeral but detected a durable name set in subject",
};
/// 400 / 10020: "consumer expected to be ephemeral but a durable name was set in request"
pub const CONSUMER_EPHEMERAL_WITH_DURABLE_NAME: ErrorEntry = ErrorEntry {
    name: "JSConsumerEphemeralWithDurableNameErr",
    code: 400,
    err_code: 10020,
    description: "consumer expected to be ephemeral but a durable name was set in request",
};
/// 400 / 10021: "stream external api prefix {prefix} must not overlap with {subject}"
pub const STREAM_EXTERNAL_API_OVERLAP: ErrorEntry = ErrorEntry {
    name: "JSStreamExternalApiOverlapErrF",
    code: 400,
    err_code: 10021,
    description: "stream external api prefix {prefix} must not overlap with {subject}",
};
/// 400 / 10022: "stream external delivery prefix {prefix} overlaps with stream subject {subject}"
pub const STREAM_EXTERNAL_DEL_PREFIX_OVERLAPS: ErrorEntry = ErrorEntry {
    name: "JSStreamExternalDelPrefixOverlapsErrF",
    code: 400,
    err_code: 10022,
    description: "stream external delivery prefix {prefix} overlaps with stream subject {subject}",
};
/// 503 / 10023: "insufficient resources" (was Go `ErrJetStreamResourcesExceeded`)
pub const INSUFFICIENT_RESOURCES: ErrorEntry = ErrorEntry {
    name: "JSInsufficientResourcesErr",
    code: 503,
    err_code: 10023,
    description: "insufficient resources",
};
/// 400 / 10024: "stream external delivery prefix {prefix} must not contain wildcards"
pub const STREAM_INVALID_EXTERNAL_DELIVERY_SUBJ: ErrorEntry = ErrorEntry {
    name: "JSStreamInvalidExternalDeliverySubjErrF",
    code: 400,
    err_code: 10024,
    description: "stream external delivery prefix {prefix} must not contain wildcards",
};
/// 400 / 10025: "invalid JSON: {err}"
pub const INVALID_JSON: ErrorEntry = ErrorEntry {
    name: "JSInvalidJSONErr",
    code: 400,
    err_code: 10025,
    description: "invalid JSON: {err}",
};
/// 400 / 10026: "maximum consumers limit reached"
pub const MAXIMUM_CONSUMERS_LIMIT: ErrorEntry = ErrorEntry {
    name: "JSMaximumConsumersLimitErr",
    code: 400,
    err_code: 10026,
    description: "maximum consumers limit reached",
};
/// 400 / 10027: "maximum number of streams reached"
pub const MAXIMUM_STREAMS_LIMIT: ErrorEntry = ErrorEntry {
    name: "JSMaximumStreamsLimitErr",
    code: 400,
    err_code: 10027,
    description: "maximum number of streams reached",
};
/// 500 / 10028: "insufficient memory resources available" (was Go `ErrMemoryResourcesExceeded`)
pub const MEMORY_RESOURCES_EXCEEDED: ErrorEntry = ErrorEntry {
    name: "JSMemoryResourcesExceededErr",
    code: 500,
    err_code: 10028,
    description: "insufficient memory resources available",
};
/// 500 / 10029: "{err}"
pub const MIRROR_CONSUMER_SETUP_FAILED: ErrorEntry = ErrorEntry {
    name: "JSMirrorConsumerSetupFailedErrF",
    code: 500,
    err_code: 10029,
    description: "{err}",
};
/// 400 / 10030: "stream mirror must have max message size >= source"
pub const MIRROR_MAX_MESSAGE_SIZE_TOO_BIG: ErrorEntry = ErrorEntry {
    name: "JSMirrorMaxMessageSizeTooBigErr",
    code: 400,
    err_code: 10030,
    description: "stream mirror must have max message size >= source",
};
/// 400 / 10031: "stream mirrors can not also contain other sources"
pub const MIRROR_WITH_SOURCES: ErrorEntry = ErrorEntry {
    name: "JSMirrorWithSourcesErr",
    code: 400,
    err_code: 10031,
    description: "stream mirrors can not also contain other sources",
};
/// 400 / 10032: "stream mirrors can not have both start seq and start time configured"
pub const MIRROR_WITH_START_SEQ_AND_TIME: ErrorEntry = ErrorEntry {
    name: "JSMirrorWithStartSeqAndTimeErr",
    code: 400,
    err_code: 10032,
    description: "stream mirrors can not have both start seq and start time configured",
};
/// 400 / 10033: "stream mirrors can not contain filtered subjects"
pub const MIRROR_WITH_SUBJECT_FILTERS: ErrorEntry = ErrorEntry {
    name: "JSMirrorWithSubjectFiltersErr",
    code: 400,
    err_code: 10033,
    description: "stream mirrors can not contain filtered subjects",
};
/// 400 / 10034: "stream mirrors can not contain subjects"
pub const MIRROR_WITH_SUBJECTS: ErrorEntry = ErrorEntry {
    name: "JSMirrorWithSubjectsErr",
    code: 400,
    err_code: 10034,
    description: "stream mirrors can not contain subjects",
};
/// 503 / 10035: "account not found"
pub const NO_ACCOUNT: ErrorEntry = ErrorEntry {
    name: "JSNoAccountErr",
    code: 503,
    err_code: 10035,
    description: "account not found",
};
/// 503 / 10036: "not currently supported in clustered mode"
pub const CLUSTER_UN_SUPPORT_FEATURE: ErrorEntry = ErrorEntry {
    name: "JSClusterUnSupportFeatureErr",
    code: 503,
    err_code: 10036,
    description: "not currently supported in clustered mode",
};
/// 404 / 10037: "no message found"
pub const NO_MESSAGE_FOUND: ErrorEntry = ErrorEntry {
    name: "JSNoMessageFoundErr",
    code: 404,
    err_code: 10037,
    description: "no message found",
};
/// 400 / 10038: "expected an empty request payload"
pub const NOT_EMPTY_REQUEST: ErrorEntry = ErrorEntry {
    name: "JSNotEmptyRequestErr",
    code: 400,
    err_code: 10038,
    description: "expected an empty request payload",
};
/// 503 / 10039: "JetStream not enabled for account"
pub const NOT_ENABLED_FOR_ACCOUNT: ErrorEntry = ErrorEntry {
    name: "JSNotEnabledForAccountErr",
    code: 503,
    err_code: 10039,
    description: "JetStream not enabled for account",
};
/// 400 / 10040: "peer not a member"
pub const CLUSTER_PEER_NOT_MEMBER: ErrorEntry = ErrorEntry {
    name: "JSClusterPeerNotMemberErr",
    code: 400,
    err_code: 10040,
    description: "peer not a member",
};
/// 500 / 10041: "{err}"
pub const RAFT_GENERAL: ErrorEntry = ErrorEntry {
    name: "JSRaftGeneralErrF",
    code: 500,
    err_code: 10041,
    description: "{err}",
};
/// 500 / 10042: "JetStream unable to subscribe to restore snapshot {subject}: {err}"
pub const RESTORE_SUBSCRIBE_FAILED: ErrorEntry = ErrorEntry {
    name: "JSRestoreSubscribeFailedErrF",
    code: 500,
    err_code: 10042,
    description: "JetStream unable to subscribe to restore snapshot {subject}: {err}",
};
/// 400 / 10043: "sequence {seq} not found"
pub const SEQUENCE_NOT_FOUND: ErrorEntry = ErrorEntry {
    name: "JSSequenceNotFoundErrF",
    code: 400,
    err_code: 10043,
    description: "sequence {seq} not found",
};
/// 400 / 10044: "server is not a member of the cluster"
pub const CLUSTER_SERVER_NOT_MEMBER: ErrorEntry = ErrorEntry {
    name: "JSClusterServerNotMemberErr",
    code: 400,
    err_code: 10044,
    description: "server is not a member of the cluster",
};
/// 500 / 10045: "{err}"
pub const SOURCE_CONSUMER_SETUP_FAILED: ErrorEntry = ErrorEntry {
    name: "JSSourceConsumerSetupFailedErrF",
    code: 500,
    err_code: 10045,
    description: "{err}",
};
/// 400 / 10046: "stream source must have max message size >= target"
pub const SOURCE_MAX_MESSAGE_SIZE_TOO_BIG: ErrorEntry = ErrorEntry {
    name: "JSSourceMaxMessageSizeTooBigErr",
    code: 400,
    err_code: 10046,
    description: "stream source must have max message size >= target",
};
/// 500 / 10047: "insufficient storage resources available" (was Go `ErrStorageResourcesExceeded`)
pub const STORAGE_RESOURCES_EXCEEDED: ErrorEntry = ErrorEntry {
    name: "JSStorageResourcesExceededErr",
    code: 500,
    err_code: 10047,
    description: "insufficient storage resources available",
};
/// 500 / 10048: "{err}"
pub const STREAM_ASSIGNMENT: ErrorEntry = ErrorEntry {
    name: "JSStreamAssignmentErrF",
    code: 500,
    err_code: 10048,
    description: "{err}",
};
/// 500 / 10049: "{err}"
pub const STREAM_CREATE: ErrorEntry = ErrorEntry {
    name: "JSStreamCreateErrF",
    code: 500,
    err_code: 10049,
    description: "{err}",
};
/// 500 / 10050: "{err}"
pub const STREAM_DELETE: ErrorEntry = ErrorEntry {
    name: "JSStreamDeleteErrF",
    code: 500,
    err_code: 10050,
    description: "{err}",
};
/// 500 / 10051: "{err}"
pub const STREAM_GENERAL: ErrorEntry = ErrorEntry {
    name: "JSStreamGeneralErrorF",
    code: 500,
    err_code: 10051,
    description: "{err}",
};
/// 500 / 10052: "{err}"
pub const STREAM_INVALID_CONFIG: ErrorEntry = ErrorEntry {
    name: "JSStreamInvalidConfigF",
    code: 500,
    err_code: 10052,
    description: "{err}",
};
/// 500 / 10053: "{err}"
pub const STREAM_LIMITS: ErrorEntry = ErrorEntry {
    name: "JSStreamLimitsErrF",
    code: 500,
    err_code: 10053,
    description: "{err}",
};
/// 400 / 10054: "message size exceeds maximum allowed"
pub const STREAM_MESSAGE_EXCEEDS_MAXIMUM: ErrorEntry = ErrorEntry {
    name: "JSStreamMessageExceedsMaximumErr",
    code: 400,
    err_code: 10054,
    description: "message size exceeds maximum allowed",
};
/// 400 / 10055: "stream mirror configuration can not be updated"
pub const STREAM_MIRROR_NOT_UPDATABLE: ErrorEntry = ErrorEntry {
    name: "JSStreamMirrorNotUpdatableErr",
    code: 400,
    err_code: 10055,
    description: "stream mirror configuration can not be updated",
};
/// 400 / 10056: "stream name in subject does not match request"
pub const STREAM_MISMATCH: ErrorEntry = ErrorEntry {
    name: "JSStreamMismatchErr",
    code: 400,
    err_code: 10056,
    description: "stream name in subject does not match request",
};
/// 500 / 10057: "{err}"
pub const STREAM_MSG_DELETE_FAILED: ErrorEntry = ErrorEntry {
    name: "JSStreamMsgDeleteFailedF",
    code: 500,
    err_code: 10057,
    description: "{err}",
};
/// 400 / 10058: "stream name already in use with a different configuration" (was Go `ErrJetStreamStreamAlreadyUsed`)
pub const STREAM_NAME_EXIST: ErrorEntry = ErrorEntry {
    name: "JSStreamNameExistErr",
    code: 400,
    err_code: 10058,
    description: "stream name already in use with a different configuration",
};
/// 404 / 10059: "stream not found" (was Go `ErrJetStreamStreamNotFound`)
pub const STREAM_NOT_FOUND: ErrorEntry = ErrorEntry {
    name: "JSStreamNotFoundErr",
    code: 404,
    err_code: 10059,
    description: "stream not found",
};
/// 400 / 10060: "expected stream does not match"
pub const STREAM_NOT_MATCH: ErrorEntry = ErrorEntry {
    name: "JSStreamNotMatchErr",
    code: 400,
    err_code: 10060,
    description: "expected stream does not match",
};
/// 400 / 10061: "Replicas configuration can not be updated"
pub const STREAM_REPLICAS_NOT_UPDATABLE: ErrorEntry = ErrorEntry {
    name: "JSStreamReplicasNotUpdatableErr",
    code: 400,
    err_code: 10061,
    description: "Replicas configuration can not be updated",
};
/// 500 / 10062: "restore failed: {err}"
pub const STREAM_RESTORE: ErrorEntry = ErrorEntry {
    name: "JSStreamRestoreErrF",
    code: 500,
    err_code: 10062,
    description: "restore failed: {err}",
};
/// 503 / 10063: "expected stream sequence does not match"
pub const STREAM_SEQUENCE_NOT_MATCH: ErrorEntry = ErrorEntry {
    name: "JSStreamSequenceNotMatchErr",
    code: 503,
    err_code: 10063,
    description: "expected stream sequence does not match",
};
/// 500 / 10064: "snapshot failed: {err}"
pub const STREAM_SNAPSHOT: ErrorEntry = ErrorEntry {
    name: "JSStreamSnapshotErrF",
    code: 500,
    err_code: 10064,
    description: "snapshot failed: {err}",
};
/// 400 / 10065: "subjects overlap with an existing stream"
pub const STREAM_SUBJECT_OVERLAP: ErrorEntry = ErrorEntry {
    name: "JSStreamSubjectOverlapErr",
    code: 400,
    err_code: 10065,
    description: "subjects overlap with an existing stream",
};
/// 500 / 10066: "{err}"
pub const STREAM_TEMPLATE_CREATE: ErrorEntry = ErrorEntry {
    name: "JSStreamTemplateCreateErrF",
    code: 500,
    err_code: 10066,
    description: "{err}",
};
/// 500 / 10067: "{err}"
pub const STREAM_TEMPLATE_DELETE: ErrorEntry = ErrorEntry {
    name: "JSStreamTemplateDeleteErrF",
    code: 500,
    err_code: 10067,
    description: "{err}",
};
/// 404 / 10068: "template not found"
pub const STREAM_TEMPLATE_NOT_FOUND: ErrorEntry = ErrorEntry {
    name: "JSStreamTemplateNotFoundErr",
    code: 404,
    err_code: 10068,
    description: "template not found",
};
/// 500 / 10069: "{err}"
pub const STREAM_UPDATE: ErrorEntry = ErrorEntry {
    name: "JSStreamUpdateErrF",
    code: 500,
    err_code: 10069,
    description: "{err}",
};
/// 400 / 10070: "wrong last msg ID: {id}"
pub const STREAM_WRONG_LAST_MSG_ID: ErrorEntry = ErrorEntry {
    name: "JSStreamWrongLastMsgIDErrF",
    code: 400,
    err_code: 10070,
    description: "wrong last msg ID: {id}",
};
/// 400 / 10071: "wrong last sequence: {seq}"
pub const STREAM_WRONG_LAST_SEQUENCE: ErrorEntry = ErrorEntry {
    name: "JSStreamWrongLastSequenceErrF",
    code: 400,
    err_code: 10071,
    description: "wrong last sequence: {seq}",
};
/// 500 / 10072: "JetStream unable to open temp storage for restore"
pub const TEMP_STORAGE_FAILED: ErrorEntry = ErrorEntry {
    name: "JSTempStorageFailedErr",
    code: 500,
    err_code: 10072,
    description: "JetStream unable to open temp storage for restore",
};
/// 400 / 10073: "template name in subject does not match request"
pub const TEMPLATE_NAME_NOT_MATCH_SUBJECT: ErrorEntry = ErrorEntry {
    name: "JSTemplateNameNotMatchSubjectErr",
    code: 400,
    err_code: 10073,
    description: "template name in subject does not match request",
};
/// 500 / 10074: "replicas > 1 not supported in non-clustered mode" (was Go `ErrReplicasNotSupported`)
pub const STREAM_REPLICAS_NOT_SUPPORTED: ErrorEntry = ErrorEntry {
    name: "JSStreamReplicasNotSupportedErr",
    code: 500,
    err_code: 10074,
    description: "replicas > 1 not supported in non-clustered mode",
};
/// 503 / 10075: "peer remap failed"
pub const PEER_REMAP: ErrorEntry = ErrorEntry {
    name: "JSPeerRemapErr",
    code: 503,
    err_code: 10075,
    description: "peer remap failed",
};
/// 503 / 10076: "JetStream not enabled" (was Go `ErrJetStreamNotEnabled`)
pub const NOT_ENABLED: ErrorEntry = ErrorEntry {
    name: "JSNotEnabledErr",
    code: 503,
    err_code: 10076,
    description: "JetStream not enabled",
};
/// 503 / 10077: "{err}"
pub const STREAM_STORE_FAILED: ErrorEntry = ErrorEntry {
    name: "JSStreamStoreFailedF",
    code: 503,
    err_code: 10077,
    description: "{err}",
};
/// 400 / 10078: "consumer config required"
pub const CONSUMER_CONFIG_REQUIRED: ErrorEntry = ErrorEntry {
    name: "JSConsumerConfigRequiredErr",
    code: 400,
    err_code: 10078,
    description: "consumer config required",
};
/// 400 / 10079: "consumer deliver subject has wildcards"
pub const CONSUMER_DELIVER_TO_WILDCARDS: ErrorEntry = ErrorEntry {
    name: "JSConsumerDeliverToWildcardsErr",
    code: 400,
    err_code: 10079,
    description: "consumer deliver subject has wildcards",
};
/// 400 / 10080: "consumer in push mode can not set max waiting"
pub const CONSUMER_PUSH_MAX_WAITING: ErrorEntry = ErrorEntry {
    name: "JSConsumerPushMaxWaitingErr",
    code: 400,
    err_code: 10080,
    description: "consumer in push mode can not set max waiting",
};
/// 400 / 10081: "consumer deliver subject forms a cycle"
pub const CONSUMER_DELIVER_CYCLE: ErrorEntry = ErrorEntry {
    name: "JSConsumerDeliverCycleErr",
    code: 400,
    err_code: 10081,
    description: "consumer deliver subject forms a cycle",
};
/// 400 / 10082: "consumer requires ack policy for max ack pending"
pub const CONSUMER_MAX_PENDING_ACK_POLICY_REQUIRED: ErrorEntry = ErrorEntry {
    name: "JSConsumerMaxPendingAckPolicyRequiredErr",
    code: 400,
    err_code: 10082,
    description: "consumer requires ack policy for max ack pending",
};
/// 400 / 10083: "consumer idle heartbeat needs to be >= 100ms"
pub const CONSUMER_SMALL_HEARTBEAT: ErrorEntry = ErrorEntry {
    name: "JSConsumerSmallHeartbeatErr",
    code: 400,
    err_code: 10083,
    description: "consumer idle heartbeat needs to be >= 100ms",
};
/// 400 / 10084: "consumer in pull mode requires explicit ack policy on workqueue stream"
pub const CONSUMER_PULL_REQUIRES_ACK: ErrorEntry = ErrorEntry {
    name: "JSConsumerPullRequiresAckErr",
    code: 400,
    err_code: 10084,
    description: "consumer in pull mode requires explicit ack policy on workqueue stream",
};
/// 400 / 10085: "consumer in pull mode requires a durable name"
pub const CONSUMER_PULL_NOT_DURABLE: ErrorEntry = ErrorEntry {
    name: "JSConsumerPullNotDurableErr",
    code: 400,
    err_code: 10085,
    description: "consumer in pull mode requires a durable name",
};
/// 400 / 10086: "consumer in pull mode can not have rate limit set"
pub const CONSUMER_PULL_WITH_RATE_LIMIT: ErrorEntry = ErrorEntry {
    name: "JSConsumerPullWithRateLimitErr",
    code: 400,
    err_code: 10086,
    description: "consumer in pull mode can not have rate limit set",
};
/// 400 / 10087: "consumer max waiting needs to be positive"
pub const CONSUMER_MAX_WAITING_NEGATIVE: ErrorEntry = ErrorEntry {
    name: "JSConsumerMaxWaitingNegativeErr",
    code: 400,
    err_code: 10087,
    description: "consumer max waiting needs to be positive",
};
/// 400 / 10088: "consumer idle heartbeat requires a push based consumer"
pub const CONSUMER_HB_REQUIRES_PUSH: ErrorEntry = ErrorEntry {
    name: "JSConsumerHBRequiresPushErr",
    code: 400,
    err_code: 10088,
    description: "consumer idle heartbeat requires a push based consumer",
};
/// 400 / 10089: "consumer flow control requires a push based consumer"
pub const CONSUMER_FC_REQUIRES_PUSH: ErrorEntry = ErrorEntry {
    name: "JSConsumerFCRequiresPushErr",
    code: 400,
    err_code: 10089,
    description: "consumer flow control requires a push based consumer",
};
/// 400 / 10090: "consumer direct requires a push based consumer"
pub const CONSUMER_DIRECT_REQUIRES_PUSH: ErrorEntry = ErrorEntry {
    name: "JSConsumerDirectRequiresPushErr",
    code: 400,
    err_code: 10090,
    description: "consumer direct requires a push based consumer",
};
/// 400 / 10091: "consumer direct requires an ephemeral consumer"
pub const CONSUMER_DIRECT_REQUIRES_EPHEMERAL: ErrorEntry = ErrorEntry {
    name: "JSConsumerDirectRequiresEphemeralErr",
    code: 400,
    err_code: 10091,
    description: "consumer direct requires an ephemeral consumer",
};
/// 400 / 10092: "consumer direct on a mapped consumer"
pub const CONSUMER_ON_MAPPED: ErrorEntry = ErrorEntry {
    name: "JSConsumerOnMappedErr",
    code: 400,
    err_code: 10092,
    description: "consumer direct on a mapped consumer",
};
/// 400 / 10093: "consumer filter subject is not a valid subset of the interest subjects"
pub const CONSUMER_FILTER_NOT_SUBSET: ErrorEntry = ErrorEntry {
    name: "JSConsumerFilterNotSubsetErr",
    code: 400,
    err_code: 10093,
    description: "consumer filter subject is not a valid subset of the interest subjects",
};
/// 400 / 10094: "{err}"
pub const CONSUMER_INVALID_POLICY: ErrorEntry = ErrorEntry {
    name: "JSConsumerInvalidPolicyErrF",
    code: 400,
    err_code: 10094,
    description: "{err}",
};
/// 400 / 10095: "failed to parse consumer sampling configuration: {err}"
pub const CONSUMER_INVALID_SAMPLING: ErrorEntry = ErrorEntry {
    name: "JSConsumerInvalidSamplingErrF",
    code: 400,
    err_code: 10095,
    description: "failed to parse consumer sampling configuration: {err}",
};
/// 500 / 10096: "stream not valid"
pub const STREAM_INVALID: ErrorEntry = ErrorEntry {
    name: "JSStreamInvalidErr",
    code: 500,
    err_code: 10096,
    description: "stream not valid",
};
/// 400 / 10097: "header size exceeds maximum allowed of 64k"
pub const STREAM_HEADER_EXCEEDS_MAXIMUM: ErrorEntry = ErrorEntry {
    name: "JSStreamHeaderExceedsMaximumErr",
    code: 400,
    err_code: 10097,
    description: "header size exceeds maximum allowed of 64k",
};
/// 400 / 10098: "workqueue stream requires explicit ack"
pub const CONSUMER_WQ_REQUIRES_EXPLICIT_ACK: ErrorEntry = ErrorEntry {
    name: "JSConsumerWQRequiresExplicitAckErr",
    code: 400,
    err_code: 10098,
    description: "workqueue stream requires explicit ack",
};
/// 400 / 10099: "multiple non-filtered consumers not allowed on workqueue stream"
pub const CONSUMER_WQ_MULTIPLE_UNFILTERED: ErrorEntry = ErrorEntry {
    name: "JSConsumerWQMultipleUnfilteredErr",
    code: 400,
    err_code: 10099,
    description: "multiple non-filtered consumers not allowed on workqueue stream",
};
/// 400 / 10100: "filtered consumer not unique on workqueue stream"
pub const CONSUMER_WQ_CONSUMER_NOT_UNIQUE: ErrorEntry = ErrorEntry {
    name: "JSConsumerWQConsumerNotUniqueErr",
    code: 400,
    err_code: 10100,
    description: "filtered consumer not unique on workqueue stream",
};
/// 400 / 10101: "consumer must be deliver all on workqueue stream"
pub const CONSUMER_WQ_CONSUMER_NOT_DELIVER_ALL: ErrorEntry = ErrorEntry {
    name: "JSConsumerWQConsumerNotDeliverAllErr",
    code: 400,
    err_code: 10101,
    description: "consumer must be deliver all on workqueue stream",
};
/// 400 / 10102: "consumer name is too long, maximum allowed is {max}"
pub const CONSUMER_NAME_TOO_LONG: ErrorEntry = ErrorEntry {
    name: "JSConsumerNameTooLongErrF",
    code: 400,
    err_code: 10102,
    description: "consumer name is too long, maximum allowed is {max}",
};
/// 400 / 10103: "durable name can not contain '.', '*', '>'"
pub const CONSUMER_BAD_DURABLE_NAME: ErrorEntry = ErrorEntry {
    name: "JSConsumerBadDurableNameErr",
    code: 400,
    err_code: 10103,
    description: "durable name can not contain '.', '*', '>'",
};
/// 500 / 10104: "error creating store for consumer: {err}"
pub const CONSUMER_STORE_FAILED: ErrorEntry = ErrorEntry {
    name: "JSConsumerStoreFailedErrF",
    code: 500,
    err_code: 10104,
    description: "error creating store for consumer: {err}",
};
/// 400 / 10105: "consumer already exists and is still active"
pub const CONSUMER_EXISTING_ACTIVE: ErrorEntry = ErrorEntry {
    name: "JSConsumerExistingActiveErr",
    code: 400,
    err_code: 10105,
    description: "consumer already exists and is still active",
};
/// 400 / 10106: "consumer replacement durable config not the same"
pub const CONSUMER_REPLACEMENT_WITH_DIFFERENT_NAME: ErrorEntry = ErrorEntry {
    name: "JSConsumerReplacementWithDifferentNameErr",
    code: 400,
    err_code: 10106,
    description: "consumer replacement durable config not the same",
};
/// 400 / 10107: "consumer description is too long, maximum allowed is {max}"
pub const CONSUMER_DESCRIPTION_TOO_LONG: ErrorEntry = ErrorEntry {
    name: "JSConsumerDescriptionTooLongErrF",
    code: 400,
    err_code: 10107,
    description: "consumer description is too long, maximum allowed is {max}",
};
/// 400 / 10108: "consumer with flow control also needs heartbeats"
pub const CONSUMER_WITH_FLOW_CONTROL_NEEDS_HEARTBEATS: ErrorEntry = ErrorEntry {
    name: "JSConsumerWithFlowControlNeedsHeartbeats",
    code: 400,
    err_code: 10108,
    description: "consumer with flow control also needs heartbeats",
};
/// 400 / 10109: "invalid operation on sealed stream"
pub const STREAM_SEALED: ErrorEntry = ErrorEntry {
    name: "JSStreamSealedErr",
    code: 400,
    err_code: 10109,
    description: "invalid operation on sealed stream",
};
/// 500 / 10110: "{err}"
pub const STREAM_PURGE_FAILED: ErrorEntry = ErrorEntry {
    name: "JSStreamPurgeFailedF",
    code: 500,
    err_code: 10110,
    description: "{err}",
};
/// 500 / 10111: "{err}"
pub const STREAM_ROLLUP_FAILED: ErrorEntry = ErrorEntry {
    name: "JSStreamRollupFailedF",
    code: 500,
    err_code: 10111,
    description: "{err}",
};
/// 400 / 10112: "invalid push consumer deliver subject"
pub const CONSUMER_INVALID_DELIVER_SUBJECT: ErrorEntry = ErrorEntry {
    name: "JSConsumerInvalidDeliverSubject",
    code: 400,
    err_code: 10112,
    description: "invalid push consumer deliver subject",
};
/// 400 / 10113: "account requires a stream config to have max bytes set"
pub const STREAM_MAX_BYTES_REQUIRED: ErrorEntry = ErrorEntry {
    name: "JSStreamMaxBytesRequired",
    code: 400,
    err_code: 10113,
    description: "account requires a stream config to have max bytes set",
};
/// 400 / 10114: "consumer max request batch needs to be > 0"
pub const CONSUMER_MAX_REQUEST_BATCH_NEGATIVE: ErrorEntry = ErrorEntry {
    name: "JSConsumerMaxRequestBatchNegativeErr",
    code: 400,
    err_code: 10114,
    description: "consumer max request batch needs to be > 0",
};
/// 400 / 10115: "consumer max request expires needs to be >= 1ms"
pub const CONSUMER_MAX_REQUEST_EXPIRES_TOO_SMALL: ErrorEntry = ErrorEntry {
    name: "JSConsumerMaxRequestExpiresTooSmall",
    code: 400,
    err_code: 10115,
    description: "consumer max request expires needs to be >= 1ms",
};
/// 400 / 10116: "max deliver is required to be > length of backoff values"
pub const CONSUMER_MAX_DELIVER_BACKOFF: ErrorEntry = ErrorEntry {
    name: "JSConsumerMaxDeliverBackoffErr",
    code: 400,
    err_code: 10116,
    description: "max deliver is required to be > length of backoff values",
};
/// 500 / 10117: "subject details would exceed maximum allowed"
pub const STREAM_INFO_MAX_SUBJECTS: ErrorEntry = ErrorEntry {
    name: "JSStreamInfoMaxSubjectsErr",
    code: 500,
    err_code: 10117,
    description: "subject details would exceed maximum allowed",
};
/// 500 / 10118: "stream is offline"
pub const STREAM_OFFLINE: ErrorEntry = ErrorEntry {
    name: "JSStreamOfflineErr",
    code: 500,
    err_code: 10118,
    description: "stream is offline",
};
/// 500 / 10119: "consumer is offline"
pub const CONSUMER_OFFLINE: ErrorEntry = ErrorEntry {
    name: "JSConsumerOfflineErr",
    code: 500,
    err_code: 10119,
    description: "consumer is offline",
};
/// 400 / 10120: "no JetStream default or applicable tiered limit present"
pub const NO_LIMITS: ErrorEntry = ErrorEntry {
    name: "JSNoLimitsErr",
    code: 400,
    err_code: 10120,
    description: "no JetStream default or applicable tiered limit present",
};
/// 400 / 10121: "consumer max ack pending exceeds system limit of {limit}"
pub const CONSUMER_MAX_PENDING_ACK_EXCESS: ErrorEntry = ErrorEntry {
    name: "JSConsumerMaxPendingAckExcessErrF",
    code: 400,
    err_code: 10121,
    description: "consumer max ack pending exceeds system limit of {limit}",
};
/// 400 / 10122: "stream max bytes exceeds account limit max stream bytes"
pub const STREAM_MAX_STREAM_BYTES_EXCEEDED: ErrorEntry = ErrorEntry {
    name: "JSStreamMaxStreamBytesExceeded",
    code: 400,
    err_code: 10122,
    description: "stream max bytes exceeds account limit max stream bytes",
};
/// 400 / 10123: "can not move and scale a stream in a single update"
pub const STREAM_MOVE_AND_SCALE: ErrorEntry = ErrorEntry {
    name: "JSStreamMoveAndScaleErr",
    code: 400,
    err_code: 10123,
    description: "can not move and scale a stream in a single update",
};
/// 400 / 10124: "stream move already in progress"
pub const STREAM_MOVE_IN_PROGRESS: ErrorEntry = ErrorEntry {
    name: "JSStreamMoveInProgressErr",
    code: 400,
    err_code: 10124,
    description: "stream move already in progress",
};
/// 400 / 10125: "consumer max request batch exceeds server limit of {limit}"
pub const CONSUMER_MAX_REQUEST_BATCH_EXCEEDED: ErrorEntry = ErrorEntry {
    name: "JSConsumerMaxRequestBatchExceededF",
    code: 400,
    err_code: 10125,
    description: "consumer max request batch exceeds server limit of {limit}",
};
/// 400 / 10126: "consumer config replica count exceeds parent stream"
pub const CONSUMER_REPLICAS_EXCEEDS_STREAM: ErrorEntry = ErrorEntry {
    name: "JSConsumerReplicasExceedsStream",
    code: 400,
    err_code: 10126,
    description: "consumer config replica count exceeds parent stream",
};
/// 400 / 10127: "Consumer name can not contain path separators"
pub const CONSUMER_NAME_CONTAINS_PATH_SEPARATORS: ErrorEntry = ErrorEntry {
    name: "JSConsumerNameContainsPathSeparatorsErr",
    code: 400,
    err_code: 10127,
    description: "Consumer name can not contain path separators",
};
/// 400 / 10128: "Stream name can not contain path separators"
pub const STREAM_NAME_CONTAINS_PATH_SEPARATORS: ErrorEntry = ErrorEntry {
    name: "JSStreamNameContainsPathSeparatorsErr",
    code: 400,
    err_code: 10128,
    description: "Stream name can not contain path separators",
};
/// 400 / 10129: "stream reconfiguration not in progress"
pub const STREAM_RECONFIGURE_NOT_IN_PROGRESS: ErrorEntry = ErrorEntry {
    name: "JSStreamReconfigureNotInProgressErr",
    code: 400,
    err_code: 10129,
    description: "stream reconfiguration not in progress",
};
/// 400 / 10130: "stream name already in use, cannot restore"
pub const STREAM_NAME_EXIST_RESTORE_FAILED: ErrorEntry = ErrorEntry {
    name: "JSStreamNameExistRestoreFailedErr",
    code: 400,
    err_code: 10130,
    description: "stream name already in use, cannot restore",
};
/// 400 / 10131: "Consumer create request did not match filtered subject from create subject"
pub const CONSUMER_CREATE_FILTER_SUBJECT_MISMATCH: ErrorEntry = ErrorEntry {
    name: "JSConsumerCreateFilterSubjectMismatchErr",
    code: 400,
    err_code: 10131,
    description: "Consumer create request did not match filtered subject from create subject",
};
/// 400 / 10132: "Consumer Durable and Name have to be equal if both are provided"
pub const CONSUMER_CREATE_DURABLE_AND_NAME_MISMATCH: ErrorEntry = ErrorEntry {
    name: "JSConsumerCreateDurableAndNameMismatch",
    code: 400,
    err_code: 10132,
    description: "Consumer Durable and Name have to be equal if both are provided",
};
/// 400 / 10133: "replicas count cannot be negative"
pub const REPLICAS_COUNT_CANNOT_BE_NEGATIVE: ErrorEntry = ErrorEntry {
    name: "JSReplicasCountCannotBeNegative",
    code: 400,
    err_code: 10133,
    description: "replicas count cannot be negative",
};
/// 400 / 10134: "consumer config replicas must match interest retention stream's replicas"
pub const CONSUMER_REPLICAS_SHOULD_MATCH_STREAM: ErrorEntry = ErrorEntry {
    name: "JSConsumerReplicasShouldMatchStream",
    code: 400,
    err_code: 10134,
    description: "consumer config replicas must match interest retention stream's replicas",
};
/// 400 / 10135: "consumer metadata exceeds maximum size of {limit}"
pub const CONSUMER_METADATA_LENGTH: ErrorEntry = ErrorEntry {
    name: "JSConsumerMetadataLengthErrF",
    code: 400,
    err_code: 10135,
    description: "consumer metadata exceeds maximum size of {limit}",
};
/// 400 / 10136: "consumer cannot have both FilterSubject and FilterSubjects specified"
pub const CONSUMER_DUPLICATE_FILTER_SUBJECTS: ErrorEntry = ErrorEntry {
    name: "JSConsumerDuplicateFilterSubjects",
    code: 400,
    err_code: 10136,
    description: "consumer cannot have both FilterSubject and FilterSubjects specified",
};
/// 400 / 10137: "consumer with multiple subject filters cannot use subject based API"
pub const CONSUMER_MULTIPLE_FILTERS_NOT_ALLOWED: ErrorEntry = ErrorEntry {
    name: "JSConsumerMultipleFiltersNotAllowed",
    code: 400,
    err_code: 10137,
    description: "consumer with multiple subject filters cannot use subject based API",
};
/// 400 / 10138: "consumer subject filters cannot overlap"
pub const CONSUMER_OVERLAPPING_SUBJECT_FILTERS: ErrorEntry = ErrorEntry {
    name: "JSConsumerOverlappingSubjectFilters",
    code: 400,
    err_code: 10138,
    description: "consumer subject filters cannot overlap",
};
/// 400 / 10139: "consumer filter in FilterSubjects cannot be empty"
pub const CONSUMER_EMPTY_FILTER: ErrorEntry = ErrorEntry {
    name: "JSConsumerEmptyFilter",
    code: 400,
    err_code: 10139,
    description: "consumer filter in FilterSubjects cannot be empty",
};
/// 400 / 10140: "duplicate source configuration detected"
pub const SOURCE_DUPLICATE_DETECTED: ErrorEntry = ErrorEntry {
    name: "JSSourceDuplicateDetected",
    code: 400,
    err_code: 10140,
    description: "duplicate source configuration detected",
};
/// 400 / 10141: "sourced stream name is invalid"
pub const SOURCE_INVALID_STREAM_NAME: ErrorEntry = ErrorEntry {
    name: "JSSourceInvalidStreamName",
    code: 400,
    err_code: 10141,
    description: "sourced stream name is invalid",
};
/// 400 / 10142: "mirrored stream name is invalid"
pub const MIRROR_INVALID_STREAM_NAME: ErrorEntry = ErrorEntry {
    name: "JSMirrorInvalidStreamName",
    code: 400,
    err_code: 10142,
    description: "mirrored stream name is invalid",
};
/// 400 / 10143: "stream mirrors can not have first sequence configured"
pub const MIRROR_WITH_FIRST_SEQ: ErrorEntry = ErrorEntry {
    name: "JSMirrorWithFirstSeqErr",
    code: 400,
    err_code: 10143,
    description: "stream mirrors can not have first sequence configured",
};
/// 400 / 10144: "source with multiple subject transforms cannot also have a single subject filter"
pub const SOURCE_MULTIPLE_FILTERS_NOT_ALLOWED: ErrorEntry = ErrorEntry {
    name: "JSSourceMultipleFiltersNotAllowed",
    code: 400,
    err_code: 10144,
    description: "source with multiple subject transforms cannot also have a single subject filter",
};
/// 400 / 10145: "source transform source: {err}"
pub const SOURCE_INVALID_SUBJECT_FILTER: ErrorEntry = ErrorEntry {
    name: "JSSourceInvalidSubjectFilter",
    code: 400,
    err_code: 10145,
    description: "source transform source: {err}",
};
/// 400 / 10146: "source transform: {err}"
pub const SOURCE_INVALID_TRANSFORM_DESTINATION: ErrorEntry = ErrorEntry {
    name: "JSSourceInvalidTransformDestination",
    code: 400,
    err_code: 10146,
    description: "source transform: {err}",
};
/// 400 / 10147: "source filters can not overlap"
pub const SOURCE_OVERLAPPING_SUBJECT_FILTERS: ErrorEntry = ErrorEntry {
    name: "JSSourceOverlappingSubjectFilters",
    code: 400,
    err_code: 10147,
    description: "source filters can not overlap",
};
/// 400 / 10148: "consumer already exists"
pub const CONSUMER_ALREADY_EXISTS: ErrorEntry = ErrorEntry {
    name: "JSConsumerAlreadyExists",
    code: 400,
    err_code: 10148,
    description: "consumer already exists",
};
/// 400 / 10149: "consumer does not exist"
pub const CONSUMER_DOES_NOT_EXIST: ErrorEntry = ErrorEntry {
    name: "JSConsumerDoesNotExist",
    code: 400,
    err_code: 10149,
    description: "consumer does not exist",
};
/// 400 / 10150: "mirror with multiple subject transforms cannot also have a single subject filter"
pub const MIRROR_MULTIPLE_FILTERS_NOT_ALLOWED: ErrorEntry = ErrorEntry {
    name: "JSMirrorMultipleFiltersNotAllowed",
    code: 400,
    err_code: 10150,
    description: "mirror with multiple subject transforms cannot also have a single subject filter",
};
/// 400 / 10151: "mirror transform source: {err}"
pub const MIRROR_INVALID_SUBJECT_FILTER: ErrorEntry = ErrorEntry {
    name: "JSMirrorInvalidSubjectFilter",
    code: 400,
    err_code: 10151,
    description: "mirror transform source: {err}",
};
/// 400 / 10152: "mirror subject filters can not overlap"
pub const MIRROR_OVERLAPPING_SUBJECT_FILTERS: ErrorEntry = ErrorEntry {
    name: "JSMirrorOverlappingSubjectFilters",
    code: 400,
    err_code: 10152,
    description: "mirror subject filters can not overlap",
};
/// 400 / 10153: "consumer inactive threshold exceeds system limit of {limit}"
pub const CONSUMER_INACTIVE_THRESHOLD_EXCESS: ErrorEntry = ErrorEntry {
    name: "JSConsumerInactiveThresholdExcess",
    code: 400,
    err_code: 10153,
    description: "consumer inactive threshold exceeds system limit of {limit}",
};
/// 400 / 10154: "mirror transform: {err}"
pub const MIRROR_INVALID_TRANSFORM_DESTINATION: ErrorEntry = ErrorEntry {
    name: "JSMirrorInvalidTransformDestination",
    code: 400,
    err_code: 10154,
    description: "mirror transform: {err}",
};
/// 400 / 10155: "stream transform source: {err}"
pub const STREAM_TRANSFORM_INVALID_SOURCE: ErrorEntry = ErrorEntry {
    name: "JSStreamTransformInvalidSource",
    code: 400,
    err_code: 10155,
    description: "stream transform source: {err}",
};
/// 400 / 10156: "stream transform: {err}"
pub const STREAM_TRANSFORM_INVALID_DESTINATION: ErrorEntry = ErrorEntry {
    name: "JSStreamTransformInvalidDestination",
    code: 400,
    err_code: 10156,
    description: "stream transform: {err}",
};
/// 400 / 10157: "pedantic mode: {err}"
pub const PEDANTIC: ErrorEntry = ErrorEntry {
    name: "JSPedanticErrF",
    code: 400,
    err_code: 10157,
    description: "pedantic mode: {err}",
};
/// 409 / 10158: "duplicate message id is in process"
pub const STREAM_DUPLICATE_MESSAGE_CONFLICT: ErrorEntry = ErrorEntry {
    name: "JSStreamDuplicateMessageConflict",
    code: 409,
    err_code: 10158,
    description: "duplicate message id is in process",
};
/// 400 / 10159: "Setting PriorityPolicy requires at least one PriorityGroup to be set"
pub const CONSUMER_PRIORITY_POLICY_WITHOUT_GROUP: ErrorEntry = ErrorEntry {
    name: "JSConsumerPriorityPolicyWithoutGroup",
    code: 400,
    err_code: 10159,
    description: "Setting PriorityPolicy requires at least one PriorityGroup to be set",
};
/// 400 / 10160: "Provided priority group does not exist for this consumer"
pub const CONSUMER_INVALID_PRIORITY_GROUP: ErrorEntry = ErrorEntry {
    name: "JSConsumerInvalidPriorityGroupErr",
    code: 400,
    err_code: 10160,
    description: "Provided priority group does not exist for this consumer",
};
/// 400 / 10161: "Group name cannot be an empty string"
pub const CONSUMER_EMPTY_GROUP_NAME: ErrorEntry = ErrorEntry {
    name: "JSConsumerEmptyGroupName",
    code: 400,
    err_code: 10161,
    description: "Group name cannot be an empty string",
};
/// 400 / 10162: "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters"
pub const CONSUMER_INVALID_GROUP_NAME: ErrorEntry = ErrorEntry { name: "JSConsumerInvalidGroupNameErr", code: 400, err_code: 10162, description: "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters" };
/// 503 / 10163: "expected last sequence per subject temporarily unavailable"
pub const STREAM_EXPECTED_LAST_SEQ_PER_SUBJECT_NOT_READY: ErrorEntry = ErrorEntry {
    name: "JSStreamExpectedLastSeqPerSubjectNotReady",
    code: 503,
    err_code: 10163,
    description: "expected last sequence per subject temporarily unavailable",
};
/// 400 / 10164: "wrong last sequence"
pub const STREAM_WRONG_LAST_SEQUENCE_CONSTANT: ErrorEntry = ErrorEntry {
    name: "JSStreamWrongLastSequenceConstantErr",
    code: 400,
    err_code: 10164,
    description: "wrong last sequence",
};
/// 400 / 10165: "invalid per-message TTL"
pub const MESSAGE_TTL_INVALID: ErrorEntry = ErrorEntry {
    name: "JSMessageTTLInvalidErr",
    code: 400,
    err_code: 10165,
    description: "invalid per-message TTL",
};
/// 400 / 10166: "per-message TTL is disabled"
pub const MESSAGE_TTL_DISABLED: ErrorEntry = ErrorEntry {
    name: "JSMessageTTLDisabledErr",
    code: 400,
    err_code: 10166,
    description: "per-message TTL is disabled",
};
/// 429 / 10167: "too many requests"
pub const STREAM_TOO_MANY_REQUESTS: ErrorEntry = ErrorEntry {
    name: "JSStreamTooManyRequests",
    code: 429,
    err_code: 10167,
    description: "too many requests",
};
/// 400 / 10168: "message counters is disabled"
pub const MESSAGE_INCR_DISABLED: ErrorEntry = ErrorEntry {
    name: "JSMessageIncrDisabledErr",
    code: 400,
    err_code: 10168,
    description: "message counters is disabled",
};
/// 400 / 10169: "message counter increment is missing"
pub const MESSAGE_INCR_MISSING: ErrorEntry = ErrorEntry {
    name: "JSMessageIncrMissingErr",
    code: 400,
    err_code: 10169,
    description: "message counter increment is missing",
};
/// 400 / 10170: "message counter has payload"
pub const MESSAGE_INCR_PAYLOAD: ErrorEntry = ErrorEntry {
    name: "JSMessageIncrPayloadErr",
    code: 400,
    err_code: 10170,
    description: "message counter has payload",
};
/// 400 / 10171: "message counter increment is invalid"
pub const MESSAGE_INCR_INVALID: ErrorEntry = ErrorEntry {
    name: "JSMessageIncrInvalidErr",
    code: 400,
    err_code: 10171,
    description: "message counter increment is invalid",
};
/// 400 / 10172: "message counter is broken"
pub const MESSAGE_COUNTER_BROKEN: ErrorEntry = ErrorEntry {
    name: "JSMessageCounterBrokenErr",
    code: 400,
    err_code: 10172,
    description: "message counter is broken",
};
/// 400 / 10173: "stream mirrors can not also calculate counters"
pub const MIRROR_WITH_COUNTERS: ErrorEntry = ErrorEntry {
    name: "JSMirrorWithCountersErr",
    code: 400,
    err_code: 10173,
    description: "stream mirrors can not also calculate counters",
};
/// 400 / 10174: "atomic publish is disabled"
pub const ATOMIC_PUBLISH_DISABLED: ErrorEntry = ErrorEntry {
    name: "JSAtomicPublishDisabledErr",
    code: 400,
    err_code: 10174,
    description: "atomic publish is disabled",
};
/// 400 / 10175: "atomic publish sequence is missing"
pub const ATOMIC_PUBLISH_MISSING_SEQ: ErrorEntry = ErrorEntry {
    name: "JSAtomicPublishMissingSeqErr",
    code: 400,
    err_code: 10175,
    description: "atomic publish sequence is missing",
};
/// 400 / 10176: "atomic publish batch is incomplete"
pub const ATOMIC_PUBLISH_INCOMPLETE_BATCH: ErrorEntry = ErrorEntry {
    name: "JSAtomicPublishIncompleteBatchErr",
    code: 400,
    err_code: 10176,
    description: "atomic publish batch is incomplete",
};
/// 400 / 10177: "atomic publish unsupported header used: {header}"
pub const ATOMIC_PUBLISH_UNSUPPORTED_HEADER_BATCH: ErrorEntry = ErrorEntry {
    name: "JSAtomicPublishUnsupportedHeaderBatchErr",
    code: 400,
    err_code: 10177,
    description: "atomic publish unsupported header used: {header}",
};
/// 400 / 10178: "priority groups can not be used with push consumers"
pub const CONSUMER_PUSH_WITH_PRIORITY_GROUP: ErrorEntry = ErrorEntry {
    name: "JSConsumerPushWithPriorityGroupErr",
    code: 400,
    err_code: 10178,
    description: "priority groups can not be used with push consumers",
};
/// 400 / 10179: "atomic publish batch ID is invalid"
pub const ATOMIC_PUBLISH_INVALID_BATCH_ID: ErrorEntry = ErrorEntry {
    name: "JSAtomicPublishInvalidBatchIDErr",
    code: 400,
    err_code: 10179,
    description: "atomic publish batch ID is invalid",
};
/// 412 / 10180: "min last sequence"
pub const STREAM_MIN_LAST_SEQ: ErrorEntry = ErrorEntry {
    name: "JSStreamMinLastSeqErr",
    code: 412,
    err_code: 10180,
    description: "min last sequence",
};
/// 400 / 10181: "consumer ack policy invalid"
pub const CONSUMER_ACK_POLICY_INVALID: ErrorEntry = ErrorEntry {
    name: "JSConsumerAckPolicyInvalidErr",
    code: 400,
    err_code: 10181,
    description: "consumer ack policy invalid",
};
/// 400 / 10182: "consumer replay policy invalid"
pub const CONSUMER_REPLAY_POLICY_INVALID: ErrorEntry = ErrorEntry {
    name: "JSConsumerReplayPolicyInvalidErr",
    code: 400,
    err_code: 10182,
    description: "consumer replay policy invalid",
};
/// 400 / 10183: "consumer ack wait needs to be positive"
pub const CONSUMER_ACK_WAIT_NEGATIVE: ErrorEntry = ErrorEntry {
    name: "JSConsumerAckWaitNegativeErr",
    code: 400,
    err_code: 10183,
    description: "consumer ack wait needs to be positive",
};
/// 400 / 10184: "consumer backoff needs to be positive"
pub const CONSUMER_BACK_OFF_NEGATIVE: ErrorEntry = ErrorEntry {
    name: "JSConsumerBackOffNegativeErr",
    code: 400,
    err_code: 10184,
    description: "consumer backoff needs to be positive",
};
/// 412 / 10185: "JetStream minimum api level required"
pub const REQUIRED_API_LEVEL: ErrorEntry = ErrorEntry {
    name: "JSRequiredApiLevelErr",
    code: 412,
    err_code: 10185,
    description: "JetStream minimum api level required",
};
/// 400 / 10186: "stream mirrors can not also schedule messages"
pub const MIRROR_WITH_MSG_SCHEDULES: ErrorEntry = ErrorEntry {
    name: "JSMirrorWithMsgSchedulesErr",
    code: 400,
    err_code: 10186,
    description: "stream mirrors can not also schedule messages",
};
/// 400 / 10187: "stream source can not also schedule messages"
pub const SOURCE_WITH_MSG_SCHEDULES: ErrorEntry = ErrorEntry {
    name: "JSSourceWithMsgSchedulesErr",
    code: 400,
    err_code: 10187,
    description: "stream source can not also schedule messages",
};
/// 400 / 10188: "message schedules is disabled"
pub const MESSAGE_SCHEDULES_DISABLED: ErrorEntry = ErrorEntry {
    name: "JSMessageSchedulesDisabledErr",
    code: 400,
    err_code: 10188,
    description: "message schedules is disabled",
};
/// 400 / 10189: "message schedules pattern is invalid"
pub const MESSAGE_SCHEDULES_PATTERN_INVALID: ErrorEntry = ErrorEntry {
    name: "JSMessageSchedulesPatternInvalidErr",
    code: 400,
    err_code: 10189,
    description: "message schedules pattern is invalid",
};
/// 400 / 10190: "message schedules target is invalid"
pub const MESSAGE_SCHEDULES_TARGET_INVALID: ErrorEntry = ErrorEntry {
    name: "JSMessageSchedulesTargetInvalidErr",
    code: 400,
    err_code: 10190,
    description: "message schedules target is invalid",
};
/// 400 / 10191: "message schedules invalid per-message TTL"
pub const MESSAGE_SCHEDULES_TTL_INVALID: ErrorEntry = ErrorEntry {
    name: "JSMessageSchedulesTTLInvalidErr",
    code: 400,
    err_code: 10191,
    description: "message schedules invalid per-message TTL",
};
/// 400 / 10192: "message schedules invalid rollup"
pub const MESSAGE_SCHEDULES_ROLLUP_INVALID: ErrorEntry = ErrorEntry {
    name: "JSMessageSchedulesRollupInvalidErr",
    code: 400,
    err_code: 10192,
    description: "message schedules invalid rollup",
};
/// 400 / 10193: "missing sequence for expected last sequence per subject"
pub const STREAM_EXPECTED_LAST_SEQ_PER_SUBJECT_INVALID: ErrorEntry = ErrorEntry {
    name: "JSStreamExpectedLastSeqPerSubjectInvalid",
    code: 400,
    err_code: 10193,
    description: "missing sequence for expected last sequence per subject",
};
/// 500 / 10194: "stream is offline: {err}"
pub const STREAM_OFFLINE_REASON: ErrorEntry = ErrorEntry {
    name: "JSStreamOfflineReasonErrF",
    code: 500,
    err_code: 10194,
    description: "stream is offline: {err}",
};
/// 500 / 10195: "consumer is offline: {err}"
pub const CONSUMER_OFFLINE_REASON: ErrorEntry = ErrorEntry {
    name: "JSConsumerOfflineReasonErrF",
    code: 500,
    err_code: 10195,
    description: "consumer is offline: {err}",
};
/// 400 / 10196: "consumer can not have priority groups when policy is none"
pub const CONSUMER_PRIORITY_GROUP_WITH_POLICY_NONE: ErrorEntry = ErrorEntry {
    name: "JSConsumerPriorityGroupWithPolicyNone",
    code: 400,
    err_code: 10196,
    description: "consumer can not have priority groups when policy is none",
};
/// 400 / 10197: "PinnedTTL cannot be set when PriorityPolicy is none"
pub const CONSUMER_PINNED_TTL_WITHOUT_PRIORITY_POLICY_NONE: ErrorEntry = ErrorEntry {
    name: "JSConsumerPinnedTTLWithoutPriorityPolicyNone",
    code: 400,
    err_code: 10197,
    description: "PinnedTTL cannot be set when PriorityPolicy is none",
};
/// 400 / 10198: "stream mirrors can not also use atomic publishing"
pub const MIRROR_WITH_ATOMIC_PUBLISH: ErrorEntry = ErrorEntry {
    name: "JSMirrorWithAtomicPublishErr",
    code: 400,
    err_code: 10198,
    description: "stream mirrors can not also use atomic publishing",
};
/// 400 / 10199: "atomic publish batch is too large: {size}"
pub const ATOMIC_PUBLISH_TOO_LARGE_BATCH: ErrorEntry = ErrorEntry {
    name: "JSAtomicPublishTooLargeBatchErrF",
    code: 400,
    err_code: 10199,
    description: "atomic publish batch is too large: {size}",
};
/// 400 / 10200: "atomic publish batch commit is invalid"
pub const ATOMIC_PUBLISH_INVALID_BATCH_COMMIT: ErrorEntry = ErrorEntry {
    name: "JSAtomicPublishInvalidBatchCommitErr",
    code: 400,
    err_code: 10200,
    description: "atomic publish batch commit is invalid",
};
/// 400 / 10201: "atomic publish batch contains duplicate message id"
pub const ATOMIC_PUBLISH_CONTAINS_DUPLICATE_MESSAGE: ErrorEntry = ErrorEntry {
    name: "JSAtomicPublishContainsDuplicateMessageErr",
    code: 400,
    err_code: 10201,
    description: "atomic publish batch contains duplicate message id",
};
/// 400 / 10202: "cluster member change is in progress"
pub const CLUSTER_SERVER_MEMBER_CHANGE_INFLIGHT: ErrorEntry = ErrorEntry {
    name: "JSClusterServerMemberChangeInflightErr",
    code: 400,
    err_code: 10202,
    description: "cluster member change is in progress",
};
/// 400 / 10203: "message schedules source is invalid"
pub const MESSAGE_SCHEDULES_SOURCE_INVALID: ErrorEntry = ErrorEntry {
    name: "JSMessageSchedulesSourceInvalidErr",
    code: 400,
    err_code: 10203,
    description: "message schedules source is invalid",
};
/// 400 / 10204: "invalid reset: {err}"
pub const CONSUMER_INVALID_RESET: ErrorEntry = ErrorEntry {
    name: "JSConsumerInvalidResetErr",
    code: 400,
    err_code: 10204,
    description: "invalid reset: {err}",
};
/// 400 / 10205: "batch publish is disabled"
pub const BATCH_PUBLISH_DISABLED: ErrorEntry = ErrorEntry {
    name: "JSBatchPublishDisabledErr",
    code: 400,
    err_code: 10205,
    description: "batch publish is disabled",
};
/// 400 / 10206: "batch publish pattern is invalid"
pub const BATCH_PUBLISH_INVALID_PATTERN: ErrorEntry = ErrorEntry {
    name: "JSBatchPublishInvalidPatternErr",
    code: 400,
    err_code: 10206,
    description: "batch publish pattern is invalid",
};
/// 400 / 10207: "batch publish ID is invalid"
pub const BATCH_PUBLISH_INVALID_BATCH_ID: ErrorEntry = ErrorEntry {
    name: "JSBatchPublishInvalidBatchIDErr",
    code: 400,
    err_code: 10207,
    description: "batch publish ID is invalid",
};
/// 400 / 10208: "batch publish ID unknown"
pub const BATCH_PUBLISH_UNKNOWN_BATCH_ID: ErrorEntry = ErrorEntry {
    name: "JSBatchPublishUnknownBatchIDErr",
    code: 400,
    err_code: 10208,
    description: "batch publish ID unknown",
};
/// 400 / 10209: "stream mirrors can not also use batch publishing"
pub const MIRROR_WITH_BATCH_PUBLISH: ErrorEntry = ErrorEntry {
    name: "JSMirrorWithBatchPublishErr",
    code: 400,
    err_code: 10209,
    description: "stream mirrors can not also use batch publishing",
};
/// 429 / 10210: "atomic publish too many inflight"
pub const ATOMIC_PUBLISH_TOO_MANY_INFLIGHT: ErrorEntry = ErrorEntry {
    name: "JSAtomicPublishTooManyInflight",
    code: 429,
    err_code: 10210,
    description: "atomic publish too many inflight",
};
/// 429 / 10211: "batch publish too many inflight"
pub const BATCH_PUBLISH_TOO_MANY_INFLIGHT: ErrorEntry = ErrorEntry {
    name: "JSBatchPublishTooManyInflight",
    code: 429,
    err_code: 10211,
    description: "batch publish too many inflight",
};
/// 400 / 10212: "message schedules invalid scheduler"
pub const MESSAGE_SCHEDULES_SCHEDULER_INVALID: ErrorEntry = ErrorEntry {
    name: "JSMessageSchedulesSchedulerInvalidErr",
    code: 400,
    err_code: 10212,
    description: "message schedules invalid scheduler",
};
/// 400 / 10213: "stream mirror consumer config is invalid"
pub const MIRROR_DURABLE_CONSUMER_CFG_INVALID: ErrorEntry = ErrorEntry {
    name: "JSMirrorDurableConsumerCfgInvalid",
    code: 400,
    err_code: 10213,
    description: "stream mirror consumer config is invalid",
};
/// 400 / 10214: "stream mirror consumer requires flow control ack policy"
pub const MIRROR_CONSUMER_REQUIRES_ACK_FC: ErrorEntry = ErrorEntry {
    name: "JSMirrorConsumerRequiresAckFCErr",
    code: 400,
    err_code: 10214,
    description: "stream mirror consumer requires flow control ack policy",
};
/// 400 / 10215: "stream source consumer config is invalid"
pub const SOURCE_DURABLE_CONSUMER_CFG_INVALID: ErrorEntry = ErrorEntry {
    name: "JSSourceDurableConsumerCfgInvalid",
    code: 400,
    err_code: 10215,
    description: "stream source consumer config is invalid",
};
/// 400 / 10216: "duplicate stream source consumer detected"
pub const SOURCE_DURABLE_CONSUMER_DUPLICATE_DETECTED: ErrorEntry = ErrorEntry {
    name: "JSSourceDurableConsumerDuplicateDetected",
    code: 400,
    err_code: 10216,
    description: "duplicate stream source consumer detected",
};
/// 400 / 10217: "stream source consumer requires flow control ack policy"
pub const SOURCE_CONSUMER_REQUIRES_ACK_FC: ErrorEntry = ErrorEntry {
    name: "JSSourceConsumerRequiresAckFCErr",
    code: 400,
    err_code: 10217,
    description: "stream source consumer requires flow control ack policy",
};
/// 400 / 10218: "flow control ack policy requires a push based consumer"
pub const CONSUMER_ACK_FC_REQUIRES_PUSH: ErrorEntry = ErrorEntry {
    name: "JSConsumerAckFCRequiresPushErr",
    code: 400,
    err_code: 10218,
    description: "flow control ack policy requires a push based consumer",
};
/// 400 / 10219: "flow control ack policy requires flow control"
pub const CONSUMER_ACK_FC_REQUIRES_FC: ErrorEntry = ErrorEntry {
    name: "JSConsumerAckFCRequiresFCErr",
    code: 400,
    err_code: 10219,
    description: "flow control ack policy requires flow control",
};
/// 400 / 10220: "flow control ack policy requires max ack pending"
pub const CONSUMER_ACK_FC_REQUIRES_MAX_ACK_PENDING: ErrorEntry = ErrorEntry {
    name: "JSConsumerAckFCRequiresMaxAckPendingErr",
    code: 400,
    err_code: 10220,
    description: "flow control ack policy requires max ack pending",
};
/// 400 / 10221: "flow control ack policy requires unset ack wait"
pub const CONSUMER_ACK_FC_REQUIRES_NO_ACK_WAIT: ErrorEntry = ErrorEntry {
    name: "JSConsumerAckFCRequiresNoAckWaitErr",
    code: 400,
    err_code: 10221,
    description: "flow control ack policy requires unset ack wait",
};
/// 400 / 10222: "flow control ack policy requires unset max deliver"
pub const CONSUMER_ACK_FC_REQUIRES_NO_MAX_DELIVER: ErrorEntry = ErrorEntry {
    name: "JSConsumerAckFCRequiresNoMaxDeliverErr",
    code: 400,
    err_code: 10222,
    description: "flow control ack policy requires unset max deliver",
};
/// 400 / 10223: "message schedules time zone is invalid"
pub const MESSAGE_SCHEDULES_TIME_ZONE_INVALID: ErrorEntry = ErrorEntry {
    name: "JSMessageSchedulesTimeZoneInvalidErr",
    code: 400,
    err_code: 10223,
    description: "message schedules time zone is invalid",
};
/// 400 / 10224: "JetStream system rescue not applied: {err}"
pub const CLUSTER_RESCUE: ErrorEntry = ErrorEntry {
    name: "JSClusterRescueErr",
    code: 400,
    err_code: 10224,
    description: "JetStream system rescue not applied: {err}",
};
/// 400 / 10225: "consumer's stream identity does not match: {msg}"
pub const CONSUMER_STREAM_IDENTITY_MISMATCH: ErrorEntry = ErrorEntry {
    name: "JSConsumerStreamIdentityMismatchF",
    code: 400,
    err_code: 10225,
    description: "consumer's stream identity does not match: {msg}",
};
/// 400 / 10226: "stream reconfiguration already in progress"
pub const STREAM_RECONFIGURE_IN_PROGRESS: ErrorEntry = ErrorEntry {
    name: "JSStreamReconfigureInProgressErr",
    code: 400,
    err_code: 10226,
    description: "stream reconfiguration already in progress",
};
/// 400 / 10227: "message stream source header is not allowed"
pub const MESSAGE_SOURCE_HDR_NOT_ALLOWED: ErrorEntry = ErrorEntry {
    name: "JSMessageSourceHdrNotAllowedErr",
    code: 400,
    err_code: 10227,
    description: "message stream source header is not allowed",
};

/// Every entry, sorted by `err_code` (binary-searched by [`crate::api_error::lookup`]).
pub const ALL: &[ErrorEntry] = &[
    ACCOUNT_RESOURCES_EXCEEDED,
    BAD_REQUEST,
    CLUSTER_INCOMPLETE,
    CLUSTER_NO_PEERS,
    CLUSTER_NOT_ACTIVE,
    CLUSTER_NOT_ASSIGNED,
    CLUSTER_NOT_AVAIL,
    CLUSTER_NOT_LEADER,
    CLUSTER_REQUIRED,
    CLUSTER_TAGS,
    CONSUMER_CREATE,
    CONSUMER_NAME_EXIST,
    CONSUMER_NOT_FOUND,
    SNAPSHOT_DELIVER_SUBJECT_INVALID,
    CONSUMER_DURABLE_NAME_NOT_IN_SUBJECT,
    CONSUMER_DURABLE_NAME_NOT_MATCH_SUBJECT,
    CONSUMER_DURABLE_NAME_NOT_SET,
    CONSUMER_EPHEMERAL_WITH_DURABLE_IN_SUBJECT,
    CONSUMER_EPHEMERAL_WITH_DURABLE_NAME,
    STREAM_EXTERNAL_API_OVERLAP,
    STREAM_EXTERNAL_DEL_PREFIX_OVERLAPS,
    INSUFFICIENT_RESOURCES,
    STREAM_INVALID_EXTERNAL_DELIVERY_SUBJ,
    INVALID_JSON,
    MAXIMUM_CONSUMERS_LIMIT,
    MAXIMUM_STREAMS_LIMIT,
    MEMORY_RESOURCES_EXCEEDED,
    MIRROR_CONSUMER_SETUP_FAILED,
    MIRROR_MAX_MESSAGE_SIZE_TOO_BIG,
    MIRROR_WITH_SOURCES,
    MIRROR_WITH_START_SEQ_AND_TIME,
    MIRROR_WITH_SUBJECT_FILTERS,
    MIRROR_WITH_SUBJECTS,
    NO_ACCOUNT,
    CLUSTER_UN_SUPPORT_FEATURE,
    NO_MESSAGE_FOUND,
    NOT_EMPTY_REQUEST,
    NOT_ENABLED_FOR_ACCOUNT,
    CLUSTER_PEER_NOT_MEMBER,
    RAFT_GENERAL,
    RESTORE_SUBSCRIBE_FAILED,
    SEQUENCE_NOT_FOUND,
    CLUSTER_SERVER_NOT_MEMBER,
    SOURCE_CONSUMER_SETUP_FAILED,
    SOURCE_MAX_MESSAGE_SIZE_TOO_BIG,
    STORAGE_RESOURCES_EXCEEDED,
    STREAM_ASSIGNMENT,
    STREAM_CREATE,
    STREAM_DELETE,
    STREAM_GENERAL,
    STREAM_INVALID_CONFIG,
    STREAM_LIMITS,
    STREAM_MESSAGE_EXCEEDS_MAXIMUM,
    STREAM_MIRROR_NOT_UPDATABLE,
    STREAM_MISMATCH,
    STREAM_MSG_DELETE_FAILED,
    STREAM_NAME_EXIST,
    STREAM_NOT_FOUND,
    STREAM_NOT_MATCH,
    STREAM_REPLICAS_NOT_UPDATABLE,
    STREAM_RESTORE,
    STREAM_SEQUENCE_NOT_MATCH,
    STREAM_SNAPSHOT,
    STREAM_SUBJECT_OVERLAP,
    STREAM_TEMPLATE_CREATE,
    STREAM_TEMPLATE_DELETE,
    STREAM_TEMPLATE_NOT_FOUND,
    STREAM_UPDATE,
    STREAM_WRONG_LAST_MSG_ID,
    STREAM_WRONG_LAST_SEQUENCE,
    TEMP_STORAGE_FAILED,
    TEMPLATE_NAME_NOT_MATCH_SUBJECT,
    STREAM_REPLICAS_NOT_SUPPORTED,
    PEER_REMAP,
    NOT_ENABLED,
    STREAM_STORE_FAILED,
    CONSUMER_CONFIG_REQUIRED,
    CONSUMER_DELIVER_TO_WILDCARDS,
    CONSUMER_PUSH_MAX_WAITING,
    CONSUMER_DELIVER_CYCLE,
    CONSUMER_MAX_PENDING_ACK_POLICY_REQUIRED,
    CONSUMER_SMALL_HEARTBEAT,
    CONSUMER_PULL_REQUIRES_ACK,
    CONSUMER_PULL_NOT_DURABLE,
    CONSUMER_PULL_WITH_RATE_LIMIT,
    CONSUMER_MAX_WAITING_NEGATIVE,
    CONSUMER_HB_REQUIRES_PUSH,
    CONSUMER_FC_REQUIRES_PUSH,
    CONSUMER_DIRECT_REQUIRES_PUSH,
    CONSUMER_DIRECT_REQUIRES_EPHEMERAL,
    CONSUMER_ON_MAPPED,
    CONSUMER_FILTER_NOT_SUBSET,
    CONSUMER_INVALID_POLICY,
    CONSUMER_INVALID_SAMPLING,
    STREAM_INVALID,
    STREAM_HEADER_EXCEEDS_MAXIMUM,
    CONSUMER_WQ_REQUIRES_EXPLICIT_ACK,
    CONSUMER_WQ_MULTIPLE_UNFILTERED,
    CONSUMER_WQ_CONSUMER_NOT_UNIQUE,
    CONSUMER_WQ_CONSUMER_NOT_DELIVER_ALL,
    CONSUMER_NAME_TOO_LONG,
    CONSUMER_BAD_DURABLE_NAME,
    CONSUMER_STORE_FAILED,
    CONSUMER_EXISTING_ACTIVE,
    CONSUMER_REPLACEMENT_WITH_DIFFERENT_NAME,
    CONSUMER_DESCRIPTION_TOO_LONG,
    CONSUMER_WITH_FLOW_CONTROL_NEEDS_HEARTBEATS,
    STREAM_SEALED,
    STREAM_PURGE_FAILED,
    STREAM_ROLLUP_FAILED,
    CONSUMER_INVALID_DELIVER_SUBJECT,
    STREAM_MAX_BYTES_REQUIRED,
    CONSUMER_MAX_REQUEST_BATCH_NEGATIVE,
    CONSUMER_MAX_REQUEST_EXPIRES_TOO_SMALL,
    CONSUMER_MAX_DELIVER_BACKOFF,
    STREAM_INFO_MAX_SUBJECTS,
    STREAM_OFFLINE,
    CONSUMER_OFFLINE,
    NO_LIMITS,
    CONSUMER_MAX_PENDING_ACK_EXCESS,
    STREAM_MAX_STREAM_BYTES_EXCEEDED,
    STREAM_MOVE_AND_SCALE,
    STREAM_MOVE_IN_PROGRESS,
    CONSUMER_MAX_REQUEST_BATCH_EXCEEDED,
    CONSUMER_REPLICAS_EXCEEDS_STREAM,
    CONSUMER_NAME_CONTAINS_PATH_SEPARATORS,
    STREAM_NAME_CONTAINS_PATH_SEPARATORS,
    STREAM_RECONFIGURE_NOT_IN_PROGRESS,
    STREAM_NAME_EXIST_RESTORE_FAILED,
    CONSUMER_CREATE_FILTER_SUBJECT_MISMATCH,
    CONSUMER_CREATE_DURABLE_AND_NAME_MISMATCH,
    REPLICAS_COUNT_CANNOT_BE_NEGATIVE,
    CONSUMER_REPLICAS_SHOULD_MATCH_STREAM,
    CONSUMER_METADATA_LENGTH,
    CONSUMER_DUPLICATE_FILTER_SUBJECTS,
    CONSUMER_MULTIPLE_FILTERS_NOT_ALLOWED,
    CONSUMER_OVERLAPPING_SUBJECT_FILTERS,
    CONSUMER_EMPTY_FILTER,
    SOURCE_DUPLICATE_DETECTED,
    SOURCE_INVALID_STREAM_NAME,
    MIRROR_INVALID_STREAM_NAME,
    MIRROR_WITH_FIRST_SEQ,
    SOURCE_MULTIPLE_FILTERS_NOT_ALLOWED,
    SOURCE_INVALID_SUBJECT_FILTER,
    SOURCE_INVALID_TRANSFORM_DESTINATION,
    SOURCE_OVERLAPPING_SUBJECT_FILTERS,
    CONSUMER_ALREADY_EXISTS,
    CONSUMER_DOES_NOT_EXIST,
    MIRROR_MULTIPLE_FILTERS_NOT_ALLOWED,
    MIRROR_INVALID_SUBJECT_FILTER,
    MIRROR_OVERLAPPING_SUBJECT_FILTERS,
    CONSUMER_INACTIVE_THRESHOLD_EXCESS,
    MIRROR_INVALID_TRANSFORM_DESTINATION,
    STREAM_TRANSFORM_INVALID_SOURCE,
    STREAM_TRANSFORM_INVALID_DESTINATION,
    PEDANTIC,
    STREAM_DUPLICATE_MESSAGE_CONFLICT,
    CONSUMER_PRIORITY_POLICY_WITHOUT_GROUP,
    CONSUMER_INVALID_PRIORITY_GROUP,
    CONSUMER_EMPTY_GROUP_NAME,
    CONSUMER_INVALID_GROUP_NAME,
    STREAM_EXPECTED_LAST_SEQ_PER_SUBJECT_NOT_READY,
    STREAM_WRONG_LAST_SEQUENCE_CONSTANT,
    MESSAGE_TTL_INVALID,
    MESSAGE_TTL_DISABLED,
    STREAM_TOO_MANY_REQUESTS,
    MESSAGE_INCR_DISABLED,
    MESSAGE_INCR_MISSING,
    MESSAGE_INCR_PAYLOAD,
    MESSAGE_INCR_INVALID,
    MESSAGE_COUNTER_BROKEN,
    MIRROR_WITH_COUNTERS,
    ATOMIC_PUBLISH_DISABLED,
    ATOMIC_PUBLISH_MISSING_SEQ,
    ATOMIC_PUBLISH_INCOMPLETE_BATCH,
    ATOMIC_PUBLISH_UNSUPPORTED_HEADER_BATCH,
    CONSUMER_PUSH_WITH_PRIORITY_GROUP,
    ATOMIC_PUBLISH_INVALID_BATCH_ID,
    STREAM_MIN_LAST_SEQ,
    CONSUMER_ACK_POLICY_INVALID,
    CONSUMER_REPLAY_POLICY_INVALID,
    CONSUMER_ACK_WAIT_NEGATIVE,
    CONSUMER_BACK_OFF_NEGATIVE,
    REQUIRED_API_LEVEL,
    MIRROR_WITH_MSG_SCHEDULES,
    SOURCE_WITH_MSG_SCHEDULES,
    MESSAGE_SCHEDULES_DISABLED,
    MESSAGE_SCHEDULES_PATTERN_INVALID,
    MESSAGE_SCHEDULES_TARGET_INVALID,
    MESSAGE_SCHEDULES_TTL_INVALID,
    MESSAGE_SCHEDULES_ROLLUP_INVALID,
    STREAM_EXPECTED_LAST_SEQ_PER_SUBJECT_INVALID,
    STREAM_OFFLINE_REASON,
    CONSUMER_OFFLINE_REASON,
    CONSUMER_PRIORITY_GROUP_WITH_POLICY_NONE,
    CONSUMER_PINNED_TTL_WITHOUT_PRIORITY_POLICY_NONE,
    MIRROR_WITH_ATOMIC_PUBLISH,
    ATOMIC_PUBLISH_TOO_LARGE_BATCH,
    ATOMIC_PUBLISH_INVALID_BATCH_COMMIT,
    ATOMIC_PUBLISH_CONTAINS_DUPLICATE_MESSAGE,
    CLUSTER_SERVER_MEMBER_CHANGE_INFLIGHT,
    MESSAGE_SCHEDULES_SOURCE_INVALID,
    CONSUMER_INVALID_RESET,
    BATCH_PUBLISH_DISABLED,
    BATCH_PUBLISH_INVALID_PATTERN,
    BATCH_PUBLISH_INVALID_BATCH_ID,
    BATCH_PUBLISH_UNKNOWN_BATCH_ID,
    MIRROR_WITH_BATCH_PUBLISH,
    ATOMIC_PUBLISH_TOO_MANY_INFLIGHT,
    BATCH_PUBLISH_TOO_MANY_INFLIGHT,
    MESSAGE_SCHEDULES_SCHEDULER_INVALID,
    MIRROR_DURABLE_CONSUMER_CFG_INVALID,
    MIRROR_CONSUMER_REQUIRES_ACK_FC,
    SOURCE_DURABLE_CONSUMER_CFG_INVALID,
    SOURCE_DURABLE_CONSUMER_DUPLICATE_DETECTED,
    SOURCE_CONSUMER_REQUIRES_ACK_FC,
    CONSUMER_ACK_FC_REQUIRES_PUSH,
    CONSUMER_ACK_FC_REQUIRES_FC,
    CONSUMER_ACK_FC_REQUIRES_MAX_ACK_PENDING,
    CONSUMER_ACK_FC_REQUIRES_NO_ACK_WAIT,
    CONSUMER_ACK_FC_REQUIRES_NO_MAX_DELIVER,
    MESSAGE_SCHEDULES_TIME_ZONE_INVALID,
    CLUSTER_RESCUE,
    CONSUMER_STREAM_IDENTITY_MISMATCH,
    STREAM_RECONFIGURE_IN_PROGRESS,
    MESSAGE_SOURCE_HDR_NOT_ALLOWED,
];
