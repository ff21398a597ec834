//! Timer-driven consumer logic under paused tokio time, over the in-crate test router: ack_wait
//! redelivery with backoff, `+WPI` restarting the timer, `-NAK` with a delay, and pull request
//! expiry. Setup (stream and messages) runs in real time; the clock is paused before the
//! consumer exists, so every wait below is exact.

use crate::test_transport::TestRouter;
use crate::{JetStream, JetStreamConfig, Message, ServerIdentity, Transport};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

struct Fixture {
    router: Arc<TestRouter>,
    _jetstream: JetStream,
    _dir: tempfile::TempDir,
}

async fn request(router: &TestRouter, subject: &str, body: &str) -> Message {
    let inbox = format!("_INBOX.unit.{}", crate::nuid::next_id());
    let mut replies = router.channel(&inbox);
    router.publish(Message {
        subject: Bytes::from(subject.to_string()),
        reply: Some(Bytes::from(inbox)),
        headers: None,
        payload: Bytes::from(body.to_string()),
    });
    tokio::time::timeout(Duration::from_secs(5), replies.recv())
        .await
        .expect("reply in time")
        .expect("reply")
}

/// A memory stream `T` on `t.>` holding `count` messages, then the clock paused.
async fn fixture(count: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let router = TestRouter::new();
    let config = JetStreamConfig {
        enabled: true,
        store_dir: Some(dir.path().to_path_buf()),
        max_memory: Some(1 << 30),
        max_store: Some(1 << 30),
        ..Default::default()
    };
    let jetstream = JetStream::start(config, ServerIdentity::default(), router.clone())
        .await
        .unwrap();
    let created = request(
        &router,
        "$JS.API.STREAM.CREATE.T",
        r#"{"name":"T","subjects":["t.>"],"storage":"memory"}"#,
    )
    .await;
    assert!(!created.payload.starts_with(b"{\"error"));
    for index in 0..count {
        request(&router, &format!("t.{index}"), "x").await;
    }
    tokio::time::pause();
    Fixture {
        router,
        _jetstream: jetstream,
        _dir: dir,
    }
}

impl Fixture {
    async fn consumer(&self, config: &str) {
        let body = format!(r#"{{"stream_name":"T","config":{config}}}"#);
        let created = request(&self.router, "$JS.API.CONSUMER.CREATE.T.C", &body).await;
        let text = String::from_utf8_lossy(&created.payload).to_string();
        assert!(!text.contains("\"error\""), "{text}");
    }

    /// A pull request whose replies arrive on the returned channel.
    fn pull(&self, body: &str) -> UnboundedReceiver<Message> {
        let inbox = format!("_INBOX.pull.{}", crate::nuid::next_id());
        let replies = self.router.channel(&inbox);
        self.router.publish(Message {
            subject: Bytes::from_static(b"$JS.API.CONSUMER.MSG.NEXT.T.C"),
            reply: Some(Bytes::from(inbox)),
            headers: None,
            payload: Bytes::from(body.to_string()),
        });
        replies
    }

    fn ack(&self, delivery: &Message, body: &str) {
        self.router.publish(Message {
            subject: delivery.reply.clone().expect("ack subject"),
            reply: None,
            headers: None,
            payload: Bytes::from(body.to_string()),
        });
    }
}

/// The ack subject's (delivered count, stream sequence).
fn delivery(message: &Message) -> (u64, u64) {
    let reply = std::str::from_utf8(message.reply.as_ref().expect("reply")).unwrap();
    let ack = jetstream_api::AckSubject::parse(reply).unwrap();
    (ack.delivered, ack.stream_sequence)
}

/// Timers fire on millisecond ticks: checks are made this far before and after a deadline.
const MARGIN: u64 = 20;

/// Let every runnable task run without moving the clock.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

fn nothing(replies: &mut UnboundedReceiver<Message>) -> bool {
    match replies.try_recv() {
        Ok(message) => {
            eprintln!("unexpected: {message:?}");
            false
        }
        Err(_) => true,
    }
}

#[tokio::test]
async fn ack_wait_then_backoff_schedule_redeliveries() {
    let fixture = fixture(1).await;
    fixture
        .consumer(
            r#"{"durable_name":"C","ack_policy":"explicit","backoff":[1000000000,3000000000]}"#,
        )
        .await;
    let mut replies = fixture.pull(r#"{"batch":3}"#);
    settle().await;
    let first = replies.try_recv().expect("first delivery");
    assert_eq!(delivery(&first), (1, 1));
    // backoff[0] (1s) after the first delivery.
    tokio::time::sleep(Duration::from_millis(1000 - MARGIN)).await;
    settle().await;
    assert!(nothing(&mut replies));
    tokio::time::sleep(Duration::from_millis(2 * MARGIN)).await;
    settle().await;
    let second = replies.try_recv().expect("redelivery");
    assert_eq!(delivery(&second), (2, 1));
    // backoff[1] (3s) after the second.
    tokio::time::sleep(Duration::from_millis(3000 - 2 * MARGIN)).await;
    settle().await;
    assert!(nothing(&mut replies));
    // +WPI restarts the timer at the current backoff step.
    fixture.ack(&second, "+WPI");
    settle().await;
    tokio::time::sleep(Duration::from_millis(3000 - MARGIN)).await;
    settle().await;
    assert!(nothing(&mut replies));
    tokio::time::sleep(Duration::from_millis(2 * MARGIN)).await;
    settle().await;
    let third = replies.try_recv().expect("third delivery");
    assert_eq!(delivery(&third), (3, 1));
    fixture.ack(&third, "+ACK");
    settle().await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    settle().await;
    assert!(nothing(&mut replies));
}

#[tokio::test]
async fn nak_delay_and_request_expiry() {
    let fixture = fixture(1).await;
    fixture
        .consumer(r#"{"durable_name":"C","ack_policy":"explicit"}"#)
        .await;
    let mut replies = fixture.pull(r#"{"batch":2,"expires":10000000000}"#);
    settle().await;
    let first = replies.try_recv().expect("delivery");
    fixture.ack(&first, r#"-NAK {"delay":2000000000}"#);
    settle().await;
    tokio::time::sleep(Duration::from_millis(2000 - MARGIN)).await;
    settle().await;
    assert!(nothing(&mut replies));
    tokio::time::sleep(Duration::from_millis(2 * MARGIN)).await;
    settle().await;
    let again = replies.try_recv().expect("redelivery after the NAK delay");
    assert_eq!(delivery(&again), (2, 1));
    // The request had a batch of 2: it is done. A new one with nothing to deliver expires.
    let mut waiting = fixture.pull(r#"{"batch":1,"expires":5000000000}"#);
    settle().await;
    tokio::time::sleep(Duration::from_millis(5000 - MARGIN)).await;
    settle().await;
    assert!(nothing(&mut waiting));
    tokio::time::sleep(Duration::from_millis(2 * MARGIN)).await;
    settle().await;
    let timeout = waiting.try_recv().expect("408");
    assert_eq!(
        timeout.headers.as_deref(),
        Some(&b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 1\r\nNats-Pending-Bytes: 0\r\n\r\n"[..])
    );
}

impl Fixture {
    /// Whether consumer `C` still exists (CONSUMER.INFO answers without an error).
    async fn consumer_exists(&self) -> bool {
        let info = request(&self.router, "$JS.API.CONSUMER.INFO.T.C", "").await;
        !String::from_utf8_lossy(&info.payload).contains("\"error\"")
    }
}

#[tokio::test]
async fn push_consumer_wakes_when_its_subscriber_arrives_without_polling() {
    let fixture = fixture(2).await;
    fixture
        .consumer(r#"{"name":"C","deliver_subject":"out","ack_policy":"none","inactive_threshold":3600000000000}"#)
        .await;
    settle().await;
    // The clock never moves from here: a consumer that polled for its subscriber would never
    // see it, one woken by routing delivers at once.
    let mut deliveries = fixture.router.channel("out");
    settle().await;
    assert_eq!(delivery(&deliveries.try_recv().expect("first")), (1, 1));
    assert_eq!(delivery(&deliveries.try_recv().expect("second")), (1, 2));
    request(&fixture.router, "t.more", "x").await;
    settle().await;
    assert_eq!(delivery(&deliveries.try_recv().expect("new")), (1, 3));
}

#[tokio::test]
async fn push_consumer_without_subscriber_is_inactive() {
    let fixture = fixture(1).await;
    fixture
        .consumer(r#"{"name":"C","deliver_subject":"out","ack_policy":"none","inactive_threshold":1000000000}"#)
        .await;
    let (sender, mut deliveries) = tokio::sync::mpsc::unbounded_channel();
    let id = fixture.router.subscribe(
        "out",
        None,
        Arc::new(move |message| {
            let _ = sender.send(message);
        }),
    );
    settle().await;
    assert!(deliveries.try_recv().is_ok());
    // Bound: far past the threshold it is still there.
    tokio::time::sleep(Duration::from_secs(30)).await;
    settle().await;
    assert!(fixture.consumer_exists().await);
    // The subscriber leaves: the countdown starts then.
    fixture.router.unsubscribe(id);
    settle().await;
    tokio::time::sleep(Duration::from_millis(1000 - MARGIN)).await;
    settle().await;
    assert!(fixture.consumer_exists().await);
    tokio::time::sleep(Duration::from_millis(2 * MARGIN)).await;
    settle().await;
    assert!(!fixture.consumer_exists().await);
}
