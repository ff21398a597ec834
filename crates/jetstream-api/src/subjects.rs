//! The `$JS.API.>` subject space: which request a subject names, with its stream/consumer
//! tokens, so the API dispatcher is one `match`. Parsing borrows from the subject.
//!
//! Subjects with trailing tokens the server does not define (e.g. `$JS.API.STREAM.INFO.A.B`)
//! parse to `None`: nats-server subscribes with exact-arity wildcards, so nothing answers them
//! (the client sees "no responders").

/// Prefix of every API subject.
pub const API_PREFIX: &str = "$JS.API.";

/// One `$JS.API` request kind and its subject tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiSubject<'a> {
    /// `$JS.API.INFO`
    AccountInfo,
    StreamCreate {
        stream: &'a str,
    },
    StreamUpdate {
        stream: &'a str,
    },
    StreamNames,
    StreamList,
    StreamInfo {
        stream: &'a str,
    },
    StreamDelete {
        stream: &'a str,
    },
    StreamPurge {
        stream: &'a str,
    },
    StreamSnapshot {
        stream: &'a str,
    },
    StreamRestore {
        stream: &'a str,
    },
    StreamMsgDelete {
        stream: &'a str,
    },
    StreamMsgGet {
        stream: &'a str,
    },
    StreamLeaderStepdown {
        stream: &'a str,
    },
    StreamPeerRemove {
        stream: &'a str,
    },
    /// `$JS.API.DIRECT.GET.<stream>` (request body) or `$JS.API.DIRECT.GET.<stream>.<subject>`
    /// (last message on that subject, which may have several tokens).
    DirectGet {
        stream: &'a str,
        last_by_subject: Option<&'a str>,
    },
    /// `CONSUMER.CREATE.<stream>` (ephemeral or name in body), `.<consumer>`, or
    /// `.<consumer>.<filter subject...>`.
    ConsumerCreate {
        stream: &'a str,
        consumer: Option<&'a str>,
        filter: Option<&'a str>,
    },
    /// Legacy `CONSUMER.DURABLE.CREATE.<stream>.<durable>`.
    ConsumerDurableCreate {
        stream: &'a str,
        consumer: &'a str,
    },
    ConsumerNames {
        stream: &'a str,
    },
    ConsumerList {
        stream: &'a str,
    },
    ConsumerInfo {
        stream: &'a str,
        consumer: &'a str,
    },
    ConsumerDelete {
        stream: &'a str,
        consumer: &'a str,
    },
    ConsumerPause {
        stream: &'a str,
        consumer: &'a str,
    },
    ConsumerUnpin {
        stream: &'a str,
        consumer: &'a str,
    },
    ConsumerReset {
        stream: &'a str,
        consumer: &'a str,
    },
    /// `CONSUMER.MSG.NEXT.<stream>.<consumer>`: a pull request.
    ConsumerMsgNext {
        stream: &'a str,
        consumer: &'a str,
    },
    ConsumerLeaderStepdown {
        stream: &'a str,
        consumer: &'a str,
    },
    MetaLeaderStepdown,
    ServerRemove,
    AccountPurge {
        account: &'a str,
    },
}

impl<'a> ApiSubject<'a> {
    /// Classifies an API subject; `None` if no nats-server handler would receive it.
    pub fn parse(subject: &'a str) -> Option<ApiSubject<'a>> {
        let rest = subject.strip_prefix(API_PREFIX)?;
        // Fixed-arity forms first; the two open-ended ones (DIRECT.GET, CONSUMER.CREATE) keep
        // their tail as one string.
        if let Some(tail) = rest.strip_prefix("DIRECT.GET.") {
            let (stream, subject) = split_first(tail);
            return non_empty(stream).map(|stream| ApiSubject::DirectGet {
                stream,
                last_by_subject: subject.filter(|s| !s.is_empty()),
            });
        }
        if let Some(tail) = rest.strip_prefix("CONSUMER.CREATE.") {
            let (stream, after_stream) = split_first(tail);
            let stream = non_empty(stream)?;
            let (consumer, filter) = match after_stream {
                None => (None, None),
                Some(after) => {
                    let (consumer, filter) = split_first(after);
                    (Some(non_empty(consumer)?), filter)
                }
            };
            if filter.is_some_and(str::is_empty) {
                return None;
            }
            return Some(ApiSubject::ConsumerCreate {
                stream,
                consumer,
                filter,
            });
        }
        let tokens: Vec<&'a str> = rest.split('.').collect();
        if tokens.iter().any(|token| token.is_empty()) {
            return None;
        }
        let parsed = match tokens.as_slice() {
            ["INFO"] => ApiSubject::AccountInfo,
            ["STREAM", "NAMES"] => ApiSubject::StreamNames,
            ["STREAM", "LIST"] => ApiSubject::StreamList,
            ["STREAM", "CREATE", stream] => ApiSubject::StreamCreate { stream },
            ["STREAM", "UPDATE", stream] => ApiSubject::StreamUpdate { stream },
            ["STREAM", "INFO", stream] => ApiSubject::StreamInfo { stream },
            ["STREAM", "DELETE", stream] => ApiSubject::StreamDelete { stream },
            ["STREAM", "PURGE", stream] => ApiSubject::StreamPurge { stream },
            ["STREAM", "SNAPSHOT", stream] => ApiSubject::StreamSnapshot { stream },
            ["STREAM", "RESTORE", stream] => ApiSubject::StreamRestore { stream },
            ["STREAM", "MSG", "DELETE", stream] => ApiSubject::StreamMsgDelete { stream },
            ["STREAM", "MSG", "GET", stream] => ApiSubject::StreamMsgGet { stream },
            ["STREAM", "LEADER", "STEPDOWN", stream] => ApiSubject::StreamLeaderStepdown { stream },
            ["STREAM", "PEER", "REMOVE", stream] => ApiSubject::StreamPeerRemove { stream },
            ["CONSUMER", "DURABLE", "CREATE", stream, consumer] => {
                ApiSubject::ConsumerDurableCreate { stream, consumer }
            }
            ["CONSUMER", "NAMES", stream] => ApiSubject::ConsumerNames { stream },
            ["CONSUMER", "LIST", stream] => ApiSubject::ConsumerList { stream },
            ["CONSUMER", "INFO", stream, consumer] => ApiSubject::ConsumerInfo { stream, consumer },
            ["CONSUMER", "DELETE", stream, consumer] => {
                ApiSubject::ConsumerDelete { stream, consumer }
            }
            ["CONSUMER", "PAUSE", stream, consumer] => {
                ApiSubject::ConsumerPause { stream, consumer }
            }
            ["CONSUMER", "UNPIN", stream, consumer] => {
                ApiSubject::ConsumerUnpin { stream, consumer }
            }
            ["CONSUMER", "RESET", stream, consumer] => {
                ApiSubject::ConsumerReset { stream, consumer }
            }
            ["CONSUMER", "MSG", "NEXT", stream, consumer] => {
                ApiSubject::ConsumerMsgNext { stream, consumer }
            }
            ["CONSUMER", "LEADER", "STEPDOWN", stream, consumer] => {
                ApiSubject::ConsumerLeaderStepdown { stream, consumer }
            }
            ["META", "LEADER", "STEPDOWN"] => ApiSubject::MetaLeaderStepdown,
            ["SERVER", "REMOVE"] => ApiSubject::ServerRemove,
            ["ACCOUNT", "PURGE", account] => ApiSubject::AccountPurge { account },
            _ => return None,
        };
        Some(parsed)
    }

    /// The `type` of the response nats-server sends for this request.
    pub fn response_type(&self) -> &'static str {
        use crate::account::ACCOUNT_INFO_RESPONSE_TYPE;
        use crate::consumer_api::*;
        use crate::stream_api::*;
        match self {
            ApiSubject::AccountInfo => ACCOUNT_INFO_RESPONSE_TYPE,
            ApiSubject::StreamCreate { .. } => STREAM_CREATE_RESPONSE_TYPE,
            ApiSubject::StreamUpdate { .. } => STREAM_UPDATE_RESPONSE_TYPE,
            ApiSubject::StreamNames => STREAM_NAMES_RESPONSE_TYPE,
            ApiSubject::StreamList => STREAM_LIST_RESPONSE_TYPE,
            ApiSubject::StreamInfo { .. } => STREAM_INFO_RESPONSE_TYPE,
            ApiSubject::StreamDelete { .. } => STREAM_DELETE_RESPONSE_TYPE,
            ApiSubject::StreamPurge { .. } => STREAM_PURGE_RESPONSE_TYPE,
            ApiSubject::StreamSnapshot { .. } => STREAM_SNAPSHOT_RESPONSE_TYPE,
            ApiSubject::StreamRestore { .. } => STREAM_RESTORE_RESPONSE_TYPE,
            ApiSubject::StreamMsgDelete { .. } => STREAM_MSG_DELETE_RESPONSE_TYPE,
            ApiSubject::StreamMsgGet { .. } | ApiSubject::DirectGet { .. } => {
                STREAM_MSG_GET_RESPONSE_TYPE
            }
            ApiSubject::StreamLeaderStepdown { .. } => STREAM_LEADER_STEPDOWN_RESPONSE_TYPE,
            ApiSubject::StreamPeerRemove { .. } => STREAM_REMOVE_PEER_RESPONSE_TYPE,
            ApiSubject::ConsumerCreate { .. } | ApiSubject::ConsumerDurableCreate { .. } => {
                CONSUMER_CREATE_RESPONSE_TYPE
            }
            ApiSubject::ConsumerNames { .. } => CONSUMER_NAMES_RESPONSE_TYPE,
            ApiSubject::ConsumerList { .. } => CONSUMER_LIST_RESPONSE_TYPE,
            // Pull requests are answered with messages and statuses, never JSON; errors that
            // need a JSON shape use the info type.
            ApiSubject::ConsumerInfo { .. } | ApiSubject::ConsumerMsgNext { .. } => {
                CONSUMER_INFO_RESPONSE_TYPE
            }
            ApiSubject::ConsumerDelete { .. } => CONSUMER_DELETE_RESPONSE_TYPE,
            ApiSubject::ConsumerPause { .. } => CONSUMER_PAUSE_RESPONSE_TYPE,
            ApiSubject::ConsumerUnpin { .. } => CONSUMER_UNPIN_RESPONSE_TYPE,
            ApiSubject::ConsumerReset { .. } => CONSUMER_RESET_RESPONSE_TYPE,
            ApiSubject::ConsumerLeaderStepdown { .. } => CONSUMER_LEADER_STEPDOWN_RESPONSE_TYPE,
            ApiSubject::MetaLeaderStepdown => {
                "io.nats.jetstream.api.v1.meta_leader_stepdown_response"
            }
            ApiSubject::ServerRemove => "io.nats.jetstream.api.v1.meta_server_remove_response",
            ApiSubject::AccountPurge { .. } => "io.nats.jetstream.api.v1.account_purge_response",
        }
    }
}

fn split_first(text: &str) -> (&str, Option<&str>) {
    match text.split_once('.') {
        Some((first, rest)) => (first, Some(rest)),
        None => (text, None),
    }
}

fn non_empty(token: &str) -> Option<&str> {
    (!token.is_empty()).then_some(token)
}

/// `$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`, the subject clients pull from.
pub fn consumer_next_subject(stream: &str, consumer: &str) -> String {
    format!("{API_PREFIX}CONSUMER.MSG.NEXT.{stream}.{consumer}")
}

/// nats-server's `isValidAssetName` for stream and consumer names: not empty, none of space,
/// `\t`, `\r`, `\n`, `\f`, `.`, `*`, `>`, `\`, `/`. The length limit ([`MAX_NAME_LENGTH`]) is a
/// separate check with its own error text.
///
/// [`MAX_NAME_LENGTH`]: crate::stream_api::MAX_NAME_LENGTH
pub fn is_valid_asset_name(name: &str) -> bool {
    !name.is_empty()
        && !name.bytes().any(|b| {
            matches!(
                b,
                b' ' | b'\t' | b'\r' | b'\n' | 0x0c | b'.' | b'*' | b'>' | b'\\' | b'/'
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        let cases: &[(&str, ApiSubject<'_>)] = &[
            ("$JS.API.INFO", ApiSubject::AccountInfo),
            ("$JS.API.STREAM.NAMES", ApiSubject::StreamNames),
            ("$JS.API.STREAM.LIST", ApiSubject::StreamList),
            (
                "$JS.API.STREAM.CREATE.S",
                ApiSubject::StreamCreate { stream: "S" },
            ),
            (
                "$JS.API.STREAM.UPDATE.S",
                ApiSubject::StreamUpdate { stream: "S" },
            ),
            (
                "$JS.API.STREAM.INFO.S",
                ApiSubject::StreamInfo { stream: "S" },
            ),
            (
                "$JS.API.STREAM.DELETE.S",
                ApiSubject::StreamDelete { stream: "S" },
            ),
            (
                "$JS.API.STREAM.PURGE.S",
                ApiSubject::StreamPurge { stream: "S" },
            ),
            (
                "$JS.API.STREAM.MSG.GET.S",
                ApiSubject::StreamMsgGet { stream: "S" },
            ),
            (
                "$JS.API.STREAM.MSG.DELETE.S",
                ApiSubject::StreamMsgDelete { stream: "S" },
            ),
            (
                "$JS.API.DIRECT.GET.S",
                ApiSubject::DirectGet {
                    stream: "S",
                    last_by_subject: None,
                },
            ),
            (
                "$JS.API.DIRECT.GET.S.orders.eu.1",
                ApiSubject::DirectGet {
                    stream: "S",
                    last_by_subject: Some("orders.eu.1"),
                },
            ),
            (
                "$JS.API.CONSUMER.CREATE.S",
                ApiSubject::ConsumerCreate {
                    stream: "S",
                    consumer: None,
                    filter: None,
                },
            ),
            (
                "$JS.API.CONSUMER.CREATE.S.C",
                ApiSubject::ConsumerCreate {
                    stream: "S",
                    consumer: Some("C"),
                    filter: None,
                },
            ),
            (
                "$JS.API.CONSUMER.CREATE.S.C.orders.>",
                ApiSubject::ConsumerCreate {
                    stream: "S",
                    consumer: Some("C"),
                    filter: Some("orders.>"),
                },
            ),
            (
                "$JS.API.CONSUMER.DURABLE.CREATE.S.D",
                ApiSubject::ConsumerDurableCreate {
                    stream: "S",
                    consumer: "D",
                },
            ),
            (
                "$JS.API.CONSUMER.NAMES.S",
                ApiSubject::ConsumerNames { stream: "S" },
            ),
            (
                "$JS.API.CONSUMER.LIST.S",
                ApiSubject::ConsumerList { stream: "S" },
            ),
            (
                "$JS.API.CONSUMER.INFO.S.C",
                ApiSubject::ConsumerInfo {
                    stream: "S",
                    consumer: "C",
                },
            ),
            (
                "$JS.API.CONSUMER.DELETE.S.C",
                ApiSubject::ConsumerDelete {
                    stream: "S",
                    consumer: "C",
                },
            ),
            (
                "$JS.API.CONSUMER.PAUSE.S.C",
                ApiSubject::ConsumerPause {
                    stream: "S",
                    consumer: "C",
                },
            ),
            (
                "$JS.API.CONSUMER.MSG.NEXT.S.C",
                ApiSubject::ConsumerMsgNext {
                    stream: "S",
                    consumer: "C",
                },
            ),
            (
                "$JS.API.META.LEADER.STEPDOWN",
                ApiSubject::MetaLeaderStepdown,
            ),
            (
                "$JS.API.ACCOUNT.PURGE.A",
                ApiSubject::AccountPurge { account: "A" },
            ),
        ];
        for (subject, expected) in cases {
            assert_eq!(ApiSubject::parse(subject), Some(*expected), "{subject}");
        }
    }

    #[test]
    fn rejects_unknown_and_wrong_arity() {
        for subject in [
            "$JS.API",
            "$JS.API.",
            "$JS.API.STREAM.INFO",
            "$JS.API.STREAM.INFO.A.B",
            "$JS.API.STREAM.CREATE.",
            "$JS.API.CONSUMER.INFO.S",
            "$JS.API.CONSUMER.CREATE.S..x",
            "$JS.API.CONSUMER.CREATE.S.C.",
            "$JS.API.DIRECT.GET.",
            "$JS.API.NOPE",
            "$JS.ACK.S.C.1.1.1.1.1",
        ] {
            assert_eq!(ApiSubject::parse(subject), None, "{subject}");
        }
    }

    #[test]
    fn response_types() {
        assert_eq!(
            ApiSubject::parse("$JS.API.STREAM.INFO.S")
                .unwrap()
                .response_type(),
            "io.nats.jetstream.api.v1.stream_info_response"
        );
        assert_eq!(
            ApiSubject::parse("$JS.API.CONSUMER.DURABLE.CREATE.S.D")
                .unwrap()
                .response_type(),
            "io.nats.jetstream.api.v1.consumer_create_response"
        );
    }

    #[test]
    fn names() {
        assert!(is_valid_asset_name("ORDERS"));
        assert!(is_valid_asset_name("orders-2_x"));
        assert!(is_valid_asset_name("caf\u{e9}\u{b}"));
        for bad in ["", "a.b", "a*", "a>", "a b", "a\tb", "a/b", "a\\b"] {
            assert!(!is_valid_asset_name(bad), "{bad}");
        }
    }
}
