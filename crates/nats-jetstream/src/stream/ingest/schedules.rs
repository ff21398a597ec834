//! Message schedules (ADR-51, `allow_msg_schedules`): the publish checks on `Nats-Schedule*`
//! headers, the table of live schedules and their firing.
//!
//! A schedule is a message in the stream (its subject names the schedule; the newest message on
//! it is the schedule), so it survives a restart: the task rebuilds the table by scanning the
//! stream when it starts. When a schedule is due the task stores a new message on its
//! `Nats-Schedule-Target` (the schedule's body and headers, or the last message of
//! `Nats-Schedule-Source`), marked `Nats-Scheduler: <schedule subject>` and
//! `Nats-Schedule-Next: purge` (once: the schedule is purged) or the next time (repeating).
//! Fired messages skip the client checks, as nats-server passes them in as sourced messages.

use super::super::headers::{self, PublishHeaders};
use super::{Ingest, Origin};
use crate::transport::Message;
use bytes::Bytes;
use jetstream_api::{errors, ApiError};
use nats_schedule::{self as schedule, ScheduleError};
use nats_store::{StoredMessage, StreamStore};
use std::collections::HashMap;

/// `Nats-Schedule-Next` of a schedule that fires once: purge the schedule.
const NEXT_PURGE: &str = "purge";
/// A schedule already due when stored (or recovered) fires this long after.
const MINIMUM_DELAY_NANOS: i64 = 250_000_000;

/// Live schedules by subject: the sequence of the schedule message and when it fires next.
#[derive(Default)]
pub(super) struct Schedules {
    by_subject: HashMap<String, (u64, i64)>,
}

impl Schedules {
    /// When the earliest schedule is due (unix nanoseconds).
    pub(super) fn next_due(&self) -> Option<i64> {
        self.by_subject.values().map(|(_, at)| *at).min()
    }

    /// The due schedules, in stream order.
    fn due(&self, now: i64) -> Vec<(String, u64, i64)> {
        let mut due: Vec<(String, u64, i64)> = self
            .by_subject
            .iter()
            .filter(|(_, (_, at))| *at <= now)
            .map(|(subject, (seq, at))| (subject.clone(), *seq, *at))
            .collect();
        due.sort_by_key(|(_, seq, _)| *seq);
        due
    }
}

/// What the schedule checks decided for one publish.
#[derive(Default)]
pub(super) struct ScheduleCheck {
    /// The header block with the `Nats-Rollup: sub` a schedule needs added.
    pub rewritten: Option<Vec<u8>>,
    /// The message is a schedule.
    pub is_schedule: bool,
}

fn is_publish_subject(subject: &str) -> bool {
    nats_subject::is_valid_literal_subject(subject)
}

fn pattern_error(error: ScheduleError) -> ApiError {
    match error {
        ScheduleError::Pattern => errors::MESSAGE_SCHEDULES_PATTERN_INVALID.to_error(),
        ScheduleError::TimeZone => errors::MESSAGE_SCHEDULES_TIME_ZONE_INVALID.to_error(),
    }
}

impl Ingest {
    /// nats-server's checks of `Nats-Schedule*` and `Nats-Scheduler` on a client publish.
    /// `staged_schedule`: inside an atomic batch, whether the batch already writes the subject
    /// a `Nats-Scheduler` names (`Some(true)` when it writes a schedule there).
    pub(super) fn check_schedule(
        &self,
        store: &mut dyn StreamStore,
        subject: &str,
        header_block: &[u8],
        publish_headers: &PublishHeaders<'_>,
        staged_schedule: Option<bool>,
    ) -> Result<ScheduleCheck, ApiError> {
        let allowed = self.config.allow_msg_schedules;
        let mut check = ScheduleCheck::default();
        let time_zone = publish_headers.schedule_time_zone;
        let fire = match (publish_headers.schedule, time_zone) {
            (None, None) => Ok(None),
            (pattern, _) => {
                let now = crate::time_format::now_nanos();
                schedule::next_fire(pattern.unwrap_or(""), time_zone, now, now)
            }
        };
        match fire {
            Err(_) if !allowed => return Err(errors::MESSAGE_SCHEDULES_DISABLED.to_error()),
            Err(error) => return Err(pattern_error(error)),
            Ok(None) => {}
            Ok(Some(_)) => {
                check.is_schedule = true;
                check.rewritten =
                    self.check_schedule_headers(subject, header_block, publish_headers)?;
            }
        }
        if let Some(next) = publish_headers.schedule_next {
            if next != NEXT_PURGE {
                return Err(errors::MESSAGE_SCHEDULES_SCHEDULER_INVALID.to_error());
            }
            let scheduler = publish_headers.scheduler.unwrap_or("");
            if scheduler.is_empty() || scheduler == subject || !is_publish_subject(scheduler) {
                return Err(errors::MESSAGE_SCHEDULES_SCHEDULER_INVALID.to_error());
            }
            if !allowed {
                return Err(errors::MESSAGE_SCHEDULES_DISABLED.to_error());
            }
            // Only a schedule may be purged this way; a subject without messages is let through.
            let invalid = match staged_schedule {
                Some(is_schedule) => !is_schedule,
                None => match store.load_last(scheduler) {
                    Ok(Some(last)) => PublishHeaders::parse(&last.headers).schedule.is_none(),
                    _ => false,
                },
            };
            if invalid {
                return Err(errors::MESSAGE_SCHEDULES_SCHEDULER_INVALID.to_error());
            }
        } else if publish_headers.scheduler.is_some() {
            return Err(errors::MESSAGE_SCHEDULES_SCHEDULER_INVALID.to_error());
        }
        Ok(check)
    }

    /// The headers that come with a valid `Nats-Schedule`; the block with `Nats-Rollup: sub`
    /// added when it has no rollup.
    fn check_schedule_headers(
        &self,
        subject: &str,
        header_block: &[u8],
        publish_headers: &PublishHeaders<'_>,
    ) -> Result<Option<Vec<u8>>, ApiError> {
        if !self.config.allow_msg_schedules {
            return Err(errors::MESSAGE_SCHEDULES_DISABLED.to_error());
        }
        let ttl = publish_headers.schedule_ttl;
        if ttl.is_some_and(|ttl| headers::parse_ttl(ttl).is_err()) {
            return Err(errors::MESSAGE_SCHEDULES_TTL_INVALID.to_error());
        }
        if publish_headers
            .schedule_rollup
            .is_some_and(|rollup| rollup != "sub")
        {
            return Err(errors::MESSAGE_SCHEDULES_ROLLUP_INVALID.to_error());
        }
        if ttl.is_some() && !self.config.allow_msg_ttl {
            return Err(errors::MESSAGE_TTL_DISABLED.to_error());
        }
        let target = publish_headers.schedule_target.unwrap_or("");
        if target.is_empty() || !is_publish_subject(target) || target == subject {
            return Err(errors::MESSAGE_SCHEDULES_TARGET_INVALID.to_error());
        }
        let source = publish_headers.schedule_source;
        if let Some(source) = source {
            if source == target || source == subject || !is_publish_subject(source) {
                return Err(errors::MESSAGE_SCHEDULES_SOURCE_INVALID.to_error());
            }
        }
        let in_stream = |candidate: &str| {
            self.config
                .subjects
                .iter()
                .any(|stream_subject| crate::subject::overlaps(stream_subject, candidate))
        };
        if !in_stream(target) {
            return Err(errors::MESSAGE_SCHEDULES_TARGET_INVALID.to_error());
        }
        if source.is_some_and(|source| !in_stream(source)) {
            return Err(errors::MESSAGE_SCHEDULES_SOURCE_INVALID.to_error());
        }
        match publish_headers.rollup {
            None => Ok(Some(headers::append_header(
                header_block,
                "Nats-Rollup",
                "sub",
            ))),
            Some("sub") => Ok(None),
            Some(_) => Err(errors::MESSAGE_SCHEDULES_ROLLUP_INVALID.to_error()),
        }
    }

    /// Keep the table in step with a stored message (nats-server does this in its store).
    pub(super) fn track_schedule(
        &mut self,
        subject: &str,
        publish_headers: &PublishHeaders<'_>,
        seq: u64,
        timestamp: i64,
    ) {
        if !self.config.allow_msg_schedules {
            return;
        }
        let now = crate::time_format::now_nanos();
        let fire = publish_headers.schedule.and_then(|pattern| {
            schedule::next_fire(pattern, publish_headers.schedule_time_zone, timestamp, now)
                .ok()
                .flatten()
        });
        let table = &mut self.schedules.by_subject;
        match fire {
            Some(fire) => {
                // As nats-server's timer: never sooner than 250 ms after the schedule arrives.
                let at = fire.at.max(now + MINIMUM_DELAY_NANOS);
                table.insert(subject.to_string(), (seq, at));
            }
            None if publish_headers.scheduler.is_none() => {
                table.remove(subject);
            }
            None => {}
        }
        if let (Some(next), Some(scheduler)) =
            (publish_headers.schedule_next, publish_headers.scheduler)
        {
            if let Some(at) = schedule::parse_next(next) {
                if let Some(entry) = table.get_mut(scheduler) {
                    entry.1 = at;
                }
            }
        }
    }

    /// Rebuild the table from the stream (start, or schedules turned on by an update).
    pub(super) fn recover_schedules(&mut self, store: &mut dyn StreamStore) {
        self.schedules.by_subject.clear();
        if !self.config.allow_msg_schedules {
            return;
        }
        let state = store.state();
        let mut seq = state.first_seq.max(1);
        while seq <= state.last_seq {
            let Ok(Some(message)) = store.load_next(">", seq) else {
                break;
            };
            self.track_stored_schedule(&message);
            seq = message.seq + 1;
        }
    }

    /// The schedule table at start: like `recover_schedules`, but on the ingest task's blocking
    /// thread before it takes its first command, with the store lock taken per message, so a
    /// long stream neither delays the listener nor blocks readers while it is scanned.
    pub(super) fn load_schedules(&mut self) {
        self.schedules.by_subject.clear();
        if !self.config.allow_msg_schedules {
            return;
        }
        let (seq, last_seq) = {
            let state = self.stream.store.raw_state();
            (state.first_seq.max(1), state.last_seq)
        };
        let stream = self.stream.clone();
        super::scan_stored(&stream, seq, last_seq, |message| {
            self.track_stored_schedule(&message)
        });
    }

    fn track_stored_schedule(&mut self, message: &StoredMessage) {
        if !message.headers.is_empty() {
            let publish_headers = PublishHeaders::parse(&message.headers);
            self.track_schedule(
                &message.subject,
                &publish_headers,
                message.seq,
                message.timestamp,
            );
        }
    }

    /// Store a message for every schedule that is due.
    pub(super) fn fire_schedules(&mut self, store: &mut dyn StreamStore, now: i64) {
        if self.schedules.next_due().is_none_or(|due| due > now) {
            return;
        }
        for (subject, seq, at) in self.schedules.due(now) {
            match self.scheduled_message(store, &subject, seq, at, now) {
                Some((message, next)) => {
                    match next {
                        Some(next) => {
                            self.schedules.by_subject.insert(subject, (seq, next));
                        }
                        None => {
                            self.schedules.by_subject.remove(&subject);
                        }
                    }
                    let publish_headers = message
                        .headers
                        .as_deref()
                        .map(PublishHeaders::parse)
                        .unwrap_or_default();
                    let _ = self.publish(store, &message, &publish_headers, Origin::Source);
                }
                None => {
                    self.schedules.by_subject.remove(&subject);
                }
            }
        }
    }

    /// The message a due schedule produces and when it fires again (None: it was the last
    /// time). None overall: the schedule is gone or no longer valid.
    fn scheduled_message(
        &self,
        store: &mut dyn StreamStore,
        subject: &str,
        seq: u64,
        at: i64,
        now: i64,
    ) -> Option<(Message, Option<i64>)> {
        let stored = store.load(seq).ok()?;
        let publish_headers = PublishHeaders::parse(&stored.headers);
        let pattern = publish_headers.schedule?;
        let fire =
            schedule::next_fire(pattern, publish_headers.schedule_time_zone, at, now).ok()??;
        let ttl = publish_headers.schedule_ttl;
        if ttl.is_some_and(|ttl| headers::parse_ttl(ttl).is_err()) {
            return None;
        }
        let target = publish_headers.schedule_target?;
        let rollup = publish_headers.schedule_rollup;
        let (mut block, payload) = match publish_headers
            .schedule_source
            .and_then(|source| store.load_last(source).ok().flatten())
        {
            Some(source) => (source.headers.to_vec(), source.payload),
            None => (stored.headers.to_vec(), stored.payload),
        };
        block = headers::remove_headers(&block, |name| {
            name.starts_with(b"Nats-Schedule")
                || name.starts_with(b"Nats-Expected-")
                || name == b"Nats-Msg-Id"
                || name == b"Nats-TTL"
                || name == b"Nats-Rollup"
        });
        block = headers::append_header(&block, "Nats-Scheduler", subject);
        let next = if fire.repeats {
            block = headers::append_header(
                &block,
                "Nats-Schedule-Next",
                &crate::time_format::rfc3339_from_nanos(fire.at),
            );
            Some(fire.at)
        } else {
            block = headers::append_header(&block, "Nats-Schedule-Next", NEXT_PURGE);
            None
        };
        if let Some(ttl) = ttl {
            block = headers::append_header(&block, "Nats-TTL", ttl);
        }
        if let Some(rollup) = rollup {
            block = headers::append_header(&block, "Nats-Rollup", rollup);
        }
        let message = Message {
            subject: Bytes::copy_from_slice(target.as_bytes()),
            reply: None,
            headers: Some(Bytes::from(block)),
            payload,
        };
        Some((message, next))
    }
}
