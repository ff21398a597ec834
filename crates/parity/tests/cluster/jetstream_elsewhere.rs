//! JetStream living on the real nats-server nodes, used through a node without JetStream (the
//! last node: ours in a mixed cluster): stream add, publish with acks, message get, stream info,
//! a consumer's fetch, all through that node's routes; and our `nats` tool's `stream add`, `pub`,
//! `stream view`, `stream info` pointed at that node. Runs where two real nats-servers can form
//! the JetStream quorum (three real ones, or two plus ours).

use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer, stream};
use futures::StreamExt;
use test_harness::cluster::{Cluster, ServerKind, Topology};

use crate::per_composition;
use crate::support::{connect, request_until, unique, Composition, Reply, PROPAGATION_TIMEOUT};

per_composition!(
    jetstream_on_go_nodes_through_another_node,
    nats_cli_stream_commands_through_another_node
);

/// A full mesh with JetStream on nodes 0 and 1 when both are real nats-servers; node 2 (ours in
/// a mixed cluster) has none. `None` (skipped, with the reason) otherwise.
fn cluster_with_jetstream_on_go(composition: Composition) -> Option<Cluster> {
    let kinds = composition.kinds();
    let jetstream_nodes: Vec<usize> = (0..2)
        .filter(|&i| kinds[i] == ServerKind::Reference)
        .collect();
    // nats-server sizes its JetStream meta group from its configured routes (here 3) and needs
    // a quorum of JetStream servers to elect a leader: one alone never does (checked with three
    // real nats-servers, JetStream on one: 10008 "temporarily unavailable" for 20 s), and one
    // without routes refuses to start a clustered JetStream.
    //
    // nats-server answers `$JS.API` in the system account (the user account reaches it through
    // a service import, whose interest it does not announce on routes); node 2 reaches it the
    // same way: its own service import forwards the request in the system account.
    if jetstream_nodes.len() < 2 {
        eprintln!(
            "skipped [{composition:?}]: fewer than two real nats-servers to hold a JetStream quorum"
        );
        return None;
    }
    let mut options = composition.options(Topology::FullMesh);
    options.jetstream = jetstream_nodes;
    Some(Cluster::start(options))
}

async fn jetstream_on_go_nodes_through_another_node(composition: Composition) {
    let Some(cluster) = cluster_with_jetstream_on_go(composition) else {
        return;
    };
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

    // The stream's subscription reaches node 2 over a route shortly after the create returns:
    // until then a publish gets no responders (nothing stored), so the first is retried.
    let deadline = Instant::now() + PROPAGATION_TIMEOUT;
    for n in 1..=5u64 {
        let ack = loop {
            let result = context
                .publish(subject.clone(), format!("order-{n}").into())
                .await
                .expect("publish")
                .await;
            match result {
                Err(e)
                    if n == 1
                        && e.kind() == jetstream::context::PublishErrorKind::StreamNotFound
                        && Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                other => break other.expect("puback"),
            }
        };
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
    // The consumer's pull subscription lives on its leader (a JetStream node) and reaches node 2
    // over a route shortly after the create returns: until then a fetch gets 503 no responders
    // (seen once in CI with three nats-servers), so a fetch that got nothing is asked again.
    let deadline = Instant::now() + PROPAGATION_TIMEOUT;
    let mut payloads = Vec::new();
    let give_up = Instant::now() + Duration::from_secs(30);
    while payloads.len() < 5 {
        assert!(
            Instant::now() < give_up,
            "fetched only {payloads:?} in 30 s\n{}",
            cluster.logs()
        );
        let mut batch = consumer
            .fetch()
            .max_messages(5 - payloads.len())
            .expires(Duration::from_secs(2))
            .messages()
            .await
            .expect("fetch");
        while let Some(message) = batch.next().await {
            match message {
                Ok(message) => {
                    payloads.push(String::from_utf8_lossy(&message.payload).into_owned());
                    message.ack().await.expect("ack");
                }
                Err(e) if payloads.is_empty() && Instant::now() < deadline => {
                    eprintln!("fetch through node 2 before the consumer's interest arrived: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    break;
                }
                Err(e) => panic!("fetched message: {e}\n{}", cluster.logs()),
            }
        }
    }
    let expected: Vec<String> = (1..=5).map(|n| format!("order-{n}")).collect();
    assert_eq!(payloads, expected);
}

/// The same through our `nats` tool pointed at node 2: `stream add`, `pub`, `stream view`,
/// `stream info`.
async fn nats_cli_stream_commands_through_another_node(composition: Composition) {
    let Some(cluster) = cluster_with_jetstream_on_go(composition) else {
        return;
    };
    let home = tempfile::tempdir().expect("tempdir");
    let url = cluster.url(2);
    let nats = |args: &[&str]| cli(&url, home.path(), args);

    let name = unique("CLI").replace('.', "_");
    let subject = format!("{name}.events");
    // The meta group elects its leader after the mesh forms: bounded retries until then.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let add = nats(&[
            "stream",
            "add",
            &name,
            "--subjects",
            &format!("{name}.>"),
            "--defaults",
        ]);
        if add.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "nats stream add through node 2 failed:\n{}\n{}",
            add.1,
            cluster.logs()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // `nats pub` is fire-and-forget: first wait until node 2 routes the stream's subjects (a
    // request there is answered with a PubAck once it does; that probe is message 1).
    request_until(
        &connect(&cluster, 2).await,
        &format!("{name}.probe"),
        |reply| matches!(reply, Reply::Payload(_)),
        "the stream's interest at node 2",
    )
    .await;
    for body in ["first", "second", "third"] {
        let published = nats(&["pub", &subject, body]);
        assert!(published.0, "nats pub: {}", published.1);
    }
    let view = nats(&["stream", "view", &name]);
    assert!(view.0, "nats stream view: {}", view.1);
    for body in ["first", "second", "third"] {
        assert!(
            view.1.contains(body),
            "stream view shows {body:?}:\n{}",
            view.1
        );
    }
    let info = nats(&["stream", "info", &name, "--json"]);
    assert!(info.0, "nats stream info: {}", info.1);
    let json: serde_json::Value = serde_json::from_str(&info.1)
        .unwrap_or_else(|e| panic!("stream info --json: {e}\n{}", info.1));
    assert_eq!(json["state"]["messages"], 4, "{json}");
    assert_eq!(json["config"]["name"], name.as_str());
}

/// Run our `nats` with `-s <url>`, its own config dir and no inherited NATS_* settings, for at
/// most 30 s: (success, stdout and stderr).
pub(crate) fn cli(url: &str, home: &std::path::Path, args: &[&str]) -> (bool, String) {
    use std::process::{Command, Stdio};
    let mut command = Command::new(test_harness::cli_binary());
    command
        .arg("-s")
        .arg(url)
        .args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (variable, _) in std::env::vars().filter(|(k, _)| k.starts_with("NATS_")) {
        command.env_remove(variable);
    }
    let mut child = command.spawn().expect("spawn nats");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let output = child.wait_with_output().expect("nats output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}
