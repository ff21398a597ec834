//! A replicated stream takes publishes once its create is answered: nats-server's stream
//! leader subscribes the stream's subjects before it answers, and the interest crosses the
//! routes ahead of the answer. Ours once answered from the leader as soon as its leadership
//! showed, while another task made the subscriptions: a publish sent on the answer through
//! another server got "no responders" (2 of 3 runs of 15 creates). nats-server itself does so
//! now and then on a loaded machine: there the publish is sent again (bounded).

use std::time::Duration;

use serde_json::{json, Value};

use crate::jetstream_assignments::{connect, error_code, leader_of};
use crate::meta::start;

const STREAMS: usize = 15;
const WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_sent_on_the_create_answer_finds_the_stream() {
    let cluster = start(3);
    leader_of(&cluster, &[0, 1, 2]);
    let client = connect(&cluster, 0).await;
    for index in 0..STREAMS {
        let name = format!("ANSWERED{index}");
        let subject = format!("answered.{index}");
        let body = json!({"name": name, "subjects": [subject], "num_replicas": 3});
        let created = tokio::time::timeout(
            WAIT,
            client.request(
                format!("$JS.API.STREAM.CREATE.{name}"),
                serde_json::to_vec(&body).expect("json").into(),
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("{name}: no answer in {WAIT:?}"))
        .unwrap_or_else(|error| panic!("{name}: {error}"));
        let created: Value = serde_json::from_slice(&created.payload).unwrap_or(Value::Null);
        assert_eq!(error_code(&created), 0, "{created}");
        let deadline = tokio::time::Instant::now() + WAIT;
        let ack = loop {
            let sent = tokio::time::timeout(WAIT, client.request(subject.clone(), "x".into()))
                .await
                .unwrap_or_else(|_| panic!("{name}: no PubAck in {WAIT:?}"));
            match sent {
                // nats-server 2.15.1 too answers a create now and then before the stream's
                // interest reached this server (the CI parity pass on 93a2dc0, ANSWERED11 of 15):
                // a client publishes again there. Ours must not.
                Err(error)
                    if test_harness::is_reference()
                        && error.kind() == async_nats::RequestErrorKind::NoResponders
                        && tokio::time::Instant::now() < deadline =>
                {
                    println!(
                        "{name}: nats-server had no responders for the publish after the create"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                sent => {
                    break sent.unwrap_or_else(|error| {
                        panic!("{name}: the publish after the create: {error:?}")
                    })
                }
            }
        };
        let ack: Value = serde_json::from_slice(&ack.payload).unwrap_or(Value::Null);
        assert_eq!(ack["seq"], 1, "{name}: {ack}");
    }
}
