//! The consumer fault checker's readers: the pull, push and ordered consumer loops, each
//! recording what it was delivered and which acks the server confirmed.

use super::*;

/// The stream sequence in an ack subject:
/// `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>`, or
/// with the domain and account hash after `$JS.ACK` (12 tokens or more).
pub(super) fn ack_subject_sequence(reply: &str) -> Option<u64> {
    let tokens: Vec<&str> = reply.split('.').collect();
    let at = if tokens.len() >= 12 { 7 } else { 5 };
    tokens.get(at)?.parse().ok()
}

/// The delivery count and consumer sequence in an ack subject (see [`ack_subject_sequence`]).
pub(super) fn ack_subject_delivery(reply: &str) -> Option<(u64, u64)> {
    let tokens: Vec<&str> = reply.split('.').collect();
    let at = if tokens.len() >= 12 { 6 } else { 4 };
    Some((
        tokens.get(at)?.parse().ok()?,
        tokens.get(at + 2)?.parse().ok()?,
    ))
}

/// Records a pulled delivery and acks it (AckSync, asked again while unanswered: an ack the
/// server applied but whose answer was lost is answered the next time); counts it confirmed
/// when answered.
async fn consume_one(client: &Client, consumed: &Shared, message: async_nats::Message) {
    let Some(reply) = message.reply.map(|reply| reply.to_string()) else {
        return;
    };
    let Some(seq) = ack_subject_sequence(&reply) else {
        return;
    };
    let payload = String::from_utf8_lossy(&message.payload).into_owned();
    let via = client.server_info().server_name;
    lock(consumed).delivery(seq, payload, &reply, &via);
    let mut answered = false;
    for _ in 0..ACK_ATTEMPTS {
        let ack = client.request(reply.clone(), "+ACK".into());
        if let Ok(Ok(_)) = tokio::time::timeout(ANSWER, ack).await {
            answered = true;
            break;
        }
    }
    let mut consumed = lock(consumed);
    if answered {
        consumed.confirmed.insert(seq);
    } else {
        consumed.unconfirmed += 1;
    }
}

/// The pull consumer: a request for [`BATCH`] messages, the batch read to its end, then every
/// message of it acked (AckSync) before the next request.
async fn pull_loop(client: Client, stop: Arc<AtomicBool>, consumed: Shared) {
    let subject = format!("$JS.API.CONSUMER.MSG.NEXT.{STREAM}.{PULL}");
    let request = json!({"batch": BATCH, "expires": EXPIRES.as_nanos() as u64}).to_string();
    while !stop.load(Ordering::Relaxed) {
        let inbox = client.new_inbox();
        let subscribed = tokio::time::timeout(ANSWER, client.subscribe(inbox.clone())).await;
        let Ok(Ok(mut responses)) = subscribed else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let sent = client.publish_with_reply(subject.clone(), inbox, request.clone().into());
        if !matches!(tokio::time::timeout(ANSWER, sent).await, Ok(Ok(()))) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let deadline = tokio::time::Instant::now() + EXPIRES + ANSWER;
        let mut batch = Vec::new();
        let end = loop {
            if batch.len() == BATCH {
                break "batch".to_string();
            }
            match tokio::time::timeout_at(deadline, responses.next()).await {
                Ok(Some(message)) => match message.status {
                    Some(status) if message.reply.is_none() => {
                        break format!(
                            "{} {}",
                            status.as_u16(),
                            message.description.as_deref().unwrap_or("")
                        );
                    }
                    _ => batch.push(message),
                },
                Ok(None) => break "subscription closed".to_string(),
                Err(_) => break "silence".to_string(),
            }
        };
        let _ = tokio::time::timeout(ANSWER, responses.unsubscribe()).await;
        *lock(&consumed).pull_ends.entry(end.clone()).or_default() += 1;
        // Acked together; the next request goes once every answer came or timed out.
        futures::future::join_all(
            batch
                .into_iter()
                .map(|message| consume_one(&client, &consumed, message)),
        )
        .await;
        if end.starts_with("503") || end == "subscription closed" {
            // No responders (between leaders, or the client between servers): not a spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The push consumer: each delivery acked (AckSync) as it comes, the ack's answer asked on a
/// subject of the same subscription, so deliveries and answers are read in the order the
/// connection received them. An ack unanswered for [`ANSWER`] is sent again (its latest
/// delivery's), [`ACK_ATTEMPTS`] times in all.
async fn push_loop(client: Client, stop: Arc<AtomicBool>, consumed: Shared) {
    let Ok(mut incoming) = client.subscribe(format!("{PUSH_PREFIX}.>")).await else {
        lock(&consumed).errors += 1;
        return;
    };
    // Stream sequence -> (ack subject, when last sent, times sent).
    let mut unanswered: HashMap<u64, (String, Instant, usize)> = HashMap::new();
    while !stop.load(Ordering::Relaxed) {
        for (seq, (reply, sent, times)) in unanswered.iter_mut() {
            if sent.elapsed() >= ANSWER {
                let answer = format!("{ANSWERS}{seq}");
                let ack = client.publish_with_reply(reply.clone(), answer, "+ACK".into());
                let _ = tokio::time::timeout(ANSWER, ack).await;
                *sent = Instant::now();
                *times += 1;
            }
        }
        unanswered.retain(|_, (_, _, times)| {
            let keep = *times < ACK_ATTEMPTS;
            if !keep {
                lock(&consumed).unconfirmed += 1;
            }
            keep
        });
        let Ok(Some(message)) =
            tokio::time::timeout(Duration::from_millis(200), incoming.next()).await
        else {
            continue;
        };
        if let Some(seq) = message
            .subject
            .as_str()
            .strip_prefix(ANSWERS)
            .and_then(|seq| seq.parse::<u64>().ok())
        {
            if message.status.is_some() {
                // Not the consumer's answer: the client's server found no subscriber for the
                // ack subject (a `503` no-responders status, sent at once, both servers, to a
                // client that asked for them, as async-nats does) while no consumer ran or the
                // leader was cut off. Nothing confirmed; the ack is sent again when due. (The
                // pull consumer's `request` turns the same status into an error.)
                lock(&consumed).no_responders += 1;
                continue;
            }
            unanswered.remove(&seq);
            lock(&consumed).confirmed.insert(seq);
            continue;
        }
        let Some(reply) = message.reply.map(|reply| reply.to_string()) else {
            continue;
        };
        let Some(seq) = ack_subject_sequence(&reply) else {
            continue;
        };
        let payload = String::from_utf8_lossy(&message.payload).into_owned();
        let via = client.server_info().server_name;
        lock(&consumed).delivery(seq, payload, &reply, &via);
        let answer = format!("{ANSWERS}{seq}");
        let ack = client.publish_with_reply(reply.clone(), answer, "+ACK".into());
        let _ = tokio::time::timeout(ANSWER, ack).await;
        unanswered.insert(seq, (reply, Instant::now(), 1));
    }
}

/// The ordered consumer: created from the sequence after the last one seen, again whenever its
/// message stream ends or fails.
async fn ordered_loop(client: Client, stop: Arc<AtomicBool>, consumed: Shared) {
    let jetstream = async_nats::jetstream::ContextBuilder::new()
        .timeout(ANSWER)
        .build(client);
    while !stop.load(Ordering::Relaxed) {
        let next = lock(&consumed).last_seq + 1;
        let config = OrderedConfig {
            filter_subject: SUBJECT.into(),
            deliver_policy: DeliverPolicy::ByStartSequence {
                start_sequence: next,
            },
            ..Default::default()
        };
        let create = async {
            let stream = jetstream.get_stream_no_info(STREAM).await.ok()?;
            let consumer = stream.create_consumer(config).await.ok()?;
            consumer.messages().await.ok()
        };
        let messages = tokio::time::timeout(ANSWER * 2, create)
            .await
            .ok()
            .flatten();
        let Some(mut messages) = messages else {
            lock(&consumed).errors += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        while !stop.load(Ordering::Relaxed) {
            match tokio::time::timeout(Duration::from_millis(200), messages.next()).await {
                Err(_) => continue,
                Ok(None) => break,
                Ok(Some(Err(_))) => {
                    lock(&consumed).errors += 1;
                    break;
                }
                Ok(Some(Ok(message))) => {
                    let Ok(info) = message.info() else { continue };
                    let seq = info.stream_sequence;
                    let payload = String::from_utf8_lossy(&message.payload).into_owned();
                    let mut consumed = lock(&consumed);
                    if seq <= consumed.last_seq {
                        let last = consumed.last_seq;
                        consumed
                            .disordered
                            .push(format!("{payload} at {seq} after {last}"));
                    }
                    consumed.last_seq = consumed.last_seq.max(seq);
                    consumed.delivery(seq, payload, "", "");
                }
            }
        }
    }
}

/// The consumers' loops, each through its own roaming client.
pub(super) struct Readers {
    stop: Arc<AtomicBool>,
    tasks: Vec<(&'static str, tokio::task::JoinHandle<()>)>,
}

impl Readers {
    pub(super) async fn start(
        cluster: &Cluster,
        consumed: &HashMap<&'static str, Shared>,
    ) -> Readers {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for (at, name) in [PULL, PUSH, ORDERED].into_iter().enumerate() {
            let client = roaming_client(cluster, (at + 1) % cluster.len()).await;
            let (stop, consumed) = (stop.clone(), consumed[name].clone());
            tasks.push((
                name,
                match name {
                    PULL => tokio::spawn(pull_loop(client, stop, consumed)),
                    PUSH => tokio::spawn(push_loop(client, stop, consumed)),
                    _ => tokio::spawn(ordered_loop(client, stop, consumed)),
                },
            ));
        }
        Readers { stop, tasks }
    }

    pub(super) async fn stop(self, trail: &Trail) {
        self.stop.store(true, Ordering::Relaxed);
        for (name, task) in self.tasks {
            joined(trail, &format!("the {name} consumer loop"), task).await;
        }
    }
}
