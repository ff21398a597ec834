//! JetStream advisories published through core routing: `$JS.EVENT.ADVISORY.STREAM.CREATED`,
//! `.UPDATED` and `.DELETED.<stream>` with nats-server's `stream_action` body. Published only
//! when someone listens, as nats-server does.

use crate::engine::Engine;
use crate::transport::Message;
use bytes::Bytes;
use jetstream_api::advisory::{self, ActionKind, Advisory, StreamAction};
use jetstream_api::Timestamp;

impl Engine {
    pub(crate) fn advise_stream_action(&self, stream: &str, action: ActionKind) {
        let subject = match action {
            ActionKind::Create => advisory::stream_created_subject(stream),
            ActionKind::Delete => advisory::stream_deleted_subject(stream),
            ActionKind::Modify => advisory::stream_updated_subject(stream),
        };
        if !self.transport.has_interest(&subject) {
            return;
        }
        let body = Advisory::new(
            crate::nuid::next_id(),
            Timestamp::now(),
            StreamAction {
                stream: stream.to_string(),
                action,
                domain: self.config.domain.clone().unwrap_or_default(),
            },
        );
        self.transport.publish(Message {
            subject: Bytes::from(subject),
            reply: None,
            headers: None,
            payload: Bytes::from(jetstream_api::json::encode_response(&body)),
        });
    }
}
