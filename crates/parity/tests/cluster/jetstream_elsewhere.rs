//! JetStream living on the real nats-server nodes, used through a node without JetStream (the
//! last node: ours in a mixed cluster): stream add, publish with acks, message get, stream info,
//! a consumer's fetch, all through that node's routes. Runs where two real nats-servers can form
//! the JetStream quorum (three real ones, or two plus ours).

use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer, stream};
use futures::StreamExt;
use test_harness::cluster::{Cluster, ServerKind, Topology};

use crate::per_composition;
use crate::support::{connect, unique, Composition};

per_composition!(jetstream_on_go_nodes_through_another_node);

async fn jetstream_on_go_nodes_through_another_node(composition: Composition) {
    let kinds = composition.kinds();
    // JetStream on the real nats-servers among nodes 0 and 1; the client on node 2, which
    // has none.
    let jetstream_nodes: Vec<usize> = (0..2)
        .filter(|&i| kinds[i] == ServerKind::Reference)
        .collect();
    // nats-server sizes its JetStream meta group from its configured routes (here 3) and needs
    // a quorum of JetStream servers to elect a leader: one alone never does (checked with three
    // real nats-servers, JetStream on one: 10008 "temporarily unavailable" for 20 s), and one
    // without routes refuses to start a clustered JetStream.
    // nats-server answers `$JS.API` in the system account (the user account reaches it through
    // a service import); rnats routes only `$G` and has no `$SYS` service imports yet, so a
    // client on an rnats node cannot reach JetStream on Go nodes (docs/parity.md, routes).
    if kinds[2] == ServerKind::Ours {
        eprintln!("skipped [{composition:?}]: rnats does not bridge $JS.API to $SYS yet");
        return;
    }
    if jetstream_nodes.len() < 2 {
        eprintln!(
            "skipped [{composition:?}]: fewer than two real nats-servers to hold a JetStream quorum"
        );
        return;
    }
    let mut options = composition.options(Topology::FullMesh);
    options.jetstream = jetstream_nodes;
    let cluster = Cluster::start(options);
    let client = connect(&cluster, 2).await;
    let context = jetstream::new(client);

    let name = unique("S").replace('.', "_");
    let subject = format!("{name}.orders");
    // The meta group elects its leader after the mesh forms: bounded retries until then.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut created = loop {
        match context
            .create_stream(stream::Config {
                name: name.clone(),
                subjects: vec![format!("{name}.>")],
                storage: stream::StorageType::File,
                ..Default::default()
            })
            .await
        {
            Ok(stream) => break stream,
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "stream add through node 2 failed: {e}\n{}",
                    cluster.logs()
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };

    for n in 1..=5u64 {
        let ack = context
            .publish(subject.clone(), format!("order-{n}").into())
            .await
            .expect("publish")
            .await
            .expect("puback");
        assert_eq!(ack.stream, name);
        assert_eq!(ack.sequence, n);
    }

    let message = created.get_raw_message(3).await.expect("message get");
    assert_eq!(&message.payload[..], b"order-3");
    assert_eq!(message.subject.as_str(), subject);

    let info = created.info().await.expect("stream info");
    assert_eq!(info.state.messages, 5);
    assert_eq!(info.config.name, name);

    let consumer = created
        .create_consumer(consumer::pull::Config {
            durable_name: Some("reader".into()),
            ..Default::default()
        })
        .await
        .expect("consumer add");
    let mut batch = consumer
        .fetch()
        .max_messages(5)
        .expires(Duration::from_secs(2))
        .messages()
        .await
        .expect("fetch");
    let mut payloads = Vec::new();
    while let Some(message) = batch.next().await {
        let message = message.expect("fetched message");
        payloads.push(String::from_utf8_lossy(&message.payload).into_owned());
        message.ack().await.expect("ack");
    }
    let expected: Vec<String> = (1..=5).map(|n| format!("order-{n}")).collect();
    assert_eq!(payloads, expected);
}
