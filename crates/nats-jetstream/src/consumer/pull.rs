//! Waiting pull requests (`CONSUMER.MSG.NEXT` and `+NXT`): admission checks with nats-server's
//! status replies, the queue of requests (FIFO, or ordered by priority for `prioritized`
//! consumers), their expiry and idle heartbeats.

use bytes::Bytes;
use jetstream_api::{status, ConsumerConfig, NextRequest, PriorityPolicy};
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// One queued pull request.
pub(super) struct WaitingRequest {
    pub reply: Bytes,
    /// Messages still wanted.
    pub remaining: i64,
    /// Bytes still allowed (0: no limit was asked for).
    pub remaining_bytes: i64,
    pub expires: Option<Instant>,
    pub no_wait: bool,
    pub heartbeat: Option<Duration>,
    pub next_heartbeat: Option<Instant>,
    /// Messages delivered to it so far.
    pub delivered: i64,
    /// Present when the body was JSON (nats-server's rule), possibly with every field empty.
    pub priority_group: Option<PriorityRequest>,
}

/// The priority-group fields of a pull request (ADR-42).
pub(super) struct PriorityRequest {
    pub group: String,
    pub min_pending: i64,
    pub min_ack_pending: i64,
    /// The pin id the client holds (`pinned_client`); set by the server when it pins this one.
    pub id: String,
    /// 0 (first) to 9 for `prioritized` consumers.
    pub priority: i64,
}

impl WaitingRequest {
    /// Priority as the `prioritized` queue orders it: requests without a group go last.
    fn priority(&self) -> i64 {
        self.priority_group
            .as_ref()
            .map_or(i64::from(i32::MAX), |group| group.priority)
    }
}

/// The verdict on a new request.
pub(super) enum Admission {
    Queue(WaitingRequest),
    /// Answer at once with this status header block.
    Refuse(Vec<u8>),
}

/// The status a pull request gets when its `Nats-Required-Api-Level` is above ours.
pub(super) const REQUIRED_API_LEVEL: &[u8] = b"NATS/1.0 412 Required Api Level\r\n\r\n";

/// nats-server's checks of `processNextMsgRequest` that need no consumer state; the caller
/// does the no_wait and max_waiting checks.
/// `json_body`: the request was a JSON object, which nats-server treats as carrying a priority
/// group (possibly empty); a bare batch size or an empty body carries none.
pub(super) fn admit(
    config: &ConsumerConfig,
    reply: Bytes,
    request: Result<NextRequest, String>,
    json_body: bool,
    now: Instant,
) -> Admission {
    if !config.deliver_subject.is_empty() {
        return Admission::Refuse(status::CONSUMER_IS_PUSH_BASED.to_vec());
    }
    let request = match request {
        Ok(request) => request,
        Err(reason) => return Admission::Refuse(status::bad_request(&reason)),
    };
    let batch = request.batch.max(1);
    if config.max_request_batch > 0 && batch > config.max_request_batch {
        return Admission::Refuse(status::exceeded_max_request_batch(config.max_request_batch));
    }
    if request.expires.0 > 0
        && config.max_request_expires.0 > 0
        && request.expires.0 > config.max_request_expires.0
    {
        return Admission::Refuse(status::exceeded_max_request_expires(
            config.max_request_expires,
        ));
    }
    if request.max_bytes > 0
        && config.max_request_max_bytes > 0
        && request.max_bytes > config.max_request_max_bytes
    {
        return Admission::Refuse(status::exceeded_max_request_max_bytes(
            config.max_request_max_bytes,
        ));
    }
    if let Some(refusal) = json_body
        .then(|| check_priority_group(config, &request))
        .flatten()
    {
        return Admission::Refuse(status::bad_request(refusal));
    }
    let expires =
        (request.expires.0 > 0).then(|| now + Duration::from_nanos(request.expires.0 as u64));
    let heartbeat =
        (request.heartbeat.0 > 0).then(|| Duration::from_nanos(request.heartbeat.0 as u64));
    Admission::Queue(WaitingRequest {
        reply,
        remaining: batch,
        remaining_bytes: request.max_bytes.max(0),
        expires,
        no_wait: request.no_wait,
        heartbeat,
        next_heartbeat: heartbeat.map(|interval| now + interval),
        delivered: 0,
        priority_group: json_body.then_some(PriorityRequest {
            group: request.group,
            min_pending: request.min_pending,
            min_ack_pending: request.min_ack_pending,
            id: request.id,
            priority: request.priority,
        }),
    })
}

/// nats-server's priority-group checks of a pull request that need no consumer state (the pin
/// id check needs the current pin and is the task's); the text after `Bad Request - `.
fn check_priority_group(config: &ConsumerConfig, request: &NextRequest) -> Option<&'static str> {
    let policy = config.priority_policy;
    if (request.min_pending != 0 || request.min_ack_pending != 0)
        && policy != PriorityPolicy::Overflow
    {
        return Some("Not a Overflow Priority consumer");
    }
    if !request.id.is_empty() && policy != PriorityPolicy::PinnedClient {
        return Some("Not a Pinned Client Priority consumer");
    }
    if !(0..=9).contains(&request.priority) {
        return Some("Priority must be between 0 and 9");
    }
    if policy != PriorityPolicy::None {
        if request.group.is_empty() {
            return Some("Priority Group missing");
        }
        if !config.priority_groups.contains(&request.group) {
            return Some("Invalid Priority Group");
        }
    }
    None
}

/// Whether a pull body is a JSON object (see [`admit`]).
pub(super) fn is_json_body(body: &[u8]) -> bool {
    body.trim_ascii().first() == Some(&b'{')
}

/// The queue of waiting requests, oldest first.
#[derive(Default)]
pub(super) struct WaitQueue {
    pub requests: VecDeque<WaitingRequest>,
}

impl WaitQueue {
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Queue a new request: at the back, or for `prioritized` consumers after every request of
    /// the same or a better (lower) priority.
    pub fn add(&mut self, request: WaitingRequest, policy: PriorityPolicy) {
        if policy == PriorityPolicy::Prioritized {
            self.insert_by_priority(request);
        } else {
            self.requests.push_back(request);
        }
    }

    fn insert_by_priority(&mut self, request: WaitingRequest) {
        let priority = request.priority();
        let position = self
            .requests
            .iter()
            .position(|queued| queued.priority() > priority)
            .unwrap_or(self.requests.len());
        self.requests.insert(position, request);
    }

    /// The front request took one message: it leaves when done, otherwise it goes behind the
    /// others (nats-server spreads messages over waiting requests) — for `prioritized`
    /// consumers only behind those of its own priority.
    pub fn took_one(&mut self, policy: PriorityPolicy) {
        let Some(front) = self.requests.front() else {
            return;
        };
        if front.remaining <= 0 {
            self.requests.pop_front();
        } else if self.requests.len() > 1 {
            if let Some(front) = self.requests.pop_front() {
                if policy == PriorityPolicy::Prioritized {
                    self.insert_by_priority(front);
                } else {
                    self.requests.push_back(front);
                }
            }
        }
    }

    /// Move the front request to the back (it cannot take the message at hand).
    pub fn cycle(&mut self) {
        if let Some(front) = self.requests.pop_front() {
            self.requests.push_back(front);
        }
    }

    /// Sum of the batches still wanted.
    pub fn batch_pending(&self) -> i64 {
        self.requests.iter().map(|request| request.remaining).sum()
    }

    /// Remove expired requests, returning `(reply, status)` to send for each; send heartbeats
    /// that are due.
    pub fn expire(&mut self, now: Instant, out: &mut Vec<(Bytes, Vec<u8>)>) {
        self.requests.retain(|request| {
            if request.expires.is_some_and(|expires| expires <= now) {
                out.push((
                    request.reply.clone(),
                    status::request_timeout(request.remaining, request.remaining_bytes),
                ));
                return false;
            }
            true
        });
    }

    /// Requests whose heartbeat is due; their next heartbeat is scheduled.
    pub fn due_heartbeats(&mut self, now: Instant) -> Vec<Bytes> {
        let mut due = Vec::new();
        for request in &mut self.requests {
            if let (Some(at), Some(interval)) = (request.next_heartbeat, request.heartbeat) {
                if at <= now {
                    due.push(request.reply.clone());
                    request.next_heartbeat = Some(now + interval);
                }
            }
        }
        due
    }

    /// The earliest expiry or heartbeat.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.requests
            .iter()
            .flat_map(|request| [request.expires, request.next_heartbeat])
            .flatten()
            .min()
    }

    /// At the end of the available messages, no_wait requests are answered `404 No Messages`
    /// and dropped, as nats-server does, except one with `expires` that got nothing yet: that
    /// one waits (for a message, or until it expires with `408 Request Timeout`).
    pub fn end_no_wait(&mut self, out: &mut Vec<(Bytes, Vec<u8>)>) {
        self.requests.retain(|request| {
            if !request.no_wait || (request.expires.is_some() && request.delivered == 0) {
                return true;
            }
            out.push((request.reply.clone(), status::NO_MESSAGES.to_vec()));
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jetstream_api::Nanos;

    fn pull() -> ConsumerConfig {
        ConsumerConfig {
            durable_name: "D".into(),
            max_request_batch: 10,
            max_request_expires: Nanos::from_secs(1),
            max_request_max_bytes: 100,
            ..Default::default()
        }
    }

    fn refused(admission: Admission) -> String {
        match admission {
            Admission::Refuse(body) => String::from_utf8(body).unwrap(),
            Admission::Queue(_) => panic!("queued"),
        }
    }

    #[test]
    fn limits_are_refused_with_nats_server_statuses() {
        let now = Instant::now();
        let request = |body: &str| NextRequest::parse(body.as_bytes());
        let reply = Bytes::from_static(b"r");
        assert!(refused(admit(
            &pull(),
            reply.clone(),
            request("{\"batch\":11}"),
            true,
            now
        ))
        .starts_with("NATS/1.0 409 Exceeded MaxRequestBatch of 10"));
        assert!(refused(admit(
            &pull(),
            reply.clone(),
            request("{\"batch\":1,\"expires\":2000000000}"),
            true,
            now
        ))
        .starts_with("NATS/1.0 409 Exceeded MaxRequestExpires of 1s"));
        assert!(refused(admit(
            &pull(),
            reply.clone(),
            request("{\"batch\":1,\"max_bytes\":101}"),
            true,
            now
        ))
        .starts_with("NATS/1.0 409 Exceeded MaxRequestMaxBytes of 100"));
        let push = ConsumerConfig {
            deliver_subject: "d".into(),
            ..Default::default()
        };
        assert_eq!(
            refused(admit(&push, reply, request(""), false, now)),
            "NATS/1.0 409 Consumer is push based\r\n\r\n"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn expiry_and_heartbeats_follow_the_clock() {
        let now = Instant::now();
        let mut queue = WaitQueue::default();
        let body = "{\"batch\":5,\"expires\":3000000000,\"idle_heartbeat\":1000000000}";
        let Admission::Queue(request) = admit(
            &ConsumerConfig::default(),
            Bytes::from_static(b"r"),
            NextRequest::parse(body.as_bytes()),
            true,
            now,
        ) else {
            panic!("refused");
        };
        queue.requests.push_back(request);
        assert_eq!(queue.next_deadline(), Some(now + Duration::from_secs(1)));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(queue.due_heartbeats(Instant::now()).len(), 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        let mut out = Vec::new();
        queue.expire(Instant::now(), &mut out);
        assert_eq!(queue.len(), 0);
        assert_eq!(
            String::from_utf8(out[0].1.clone()).unwrap(),
            "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 5\r\nNats-Pending-Bytes: 0\r\n\r\n"
        );
    }
}
